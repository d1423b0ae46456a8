//! [`MemoryManager`]: logical buffers over the places of a [`Runtime`].

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ur_api::{ContextId, DeviceCaps, Location, MemoryConnection, QueueProps, Runtime, UsmCaps};

pub use crate::config::{Config, ZeroCopy};
use crate::error::{MmError, Result};
use crate::exec::{self, Exec};
use crate::interval::IntervalSet;
use crate::plan::{Access, Plan};
use crate::residency::{Mem, Residency};
use crate::route::{self, LinkCost, Topology, HOST};
use crate::state::{BufferCell, ManagerState, PlaceInfo};
use crate::transfer::HostTransfer;

/// A place data can live: plain host memory the manager owns, or a device
/// location (context, device) of the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Place {
    /// Host memory owned by the manager.
    Host,
    /// A (context, device) location.
    Device(Location),
}

impl From<Location> for Place {
    fn from(l: Location) -> Self {
        Place::Device(l)
    }
}

/// Counters of what the manager did (since it was created).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Copy steps run (all routes).
    pub copies: u64,
    /// Of those, host-staged copies (pinned ring or zero-copy).
    pub staged_copies: u64,
    /// Of those, zero-copy staged copies ([`Route::Mapped`](crate::Route::Mapped)).
    pub mapped_copies: u64,
    /// Bytes moved by copy steps.
    pub bytes_moved: u64,
    /// Allocations evicted to make room.
    pub evictions: u64,
    /// Bytes written back to the host before evicting their only copy.
    pub written_back: u64,
    /// Copy steps that failed.
    pub failed_copies: u64,
    /// Staging buffers allocated pinned (USM host of a context).
    pub pinned_staging_buffers: u64,
    /// Staging buffers allocated as plain host memory (no adapter offered USM host).
    pub plain_staging_buffers: u64,
    /// Host stores (the host place's allocations) that are pinned.
    pub pinned_host_stores: u64,
    /// Bytes of host memory the host stores hold now: a store above
    /// 1 KiB its own page-rounded block, smaller ones whole 64 KiB slabs
    /// shared by stores of one size class.
    pub host_store_bytes: u64,
    /// Slabs allocated for small host stores.
    pub host_slabs: u64,
    /// Transfers between caller memory and a device allocation
    /// ([`MemoryManager::read`] from a device, initial data to a hinted
    /// device; see [`MemoryManager::host_transfer`]) that went direct:
    /// caller memory already locked or USM host, a CPU device, or a large
    /// range on a device that does not lock.
    pub caller_direct: u64,
    /// Of those transfers, the ones that locked the caller's range in place.
    pub caller_locked: u64,
    /// Of those transfers, the ones staged through the pinned ring.
    pub caller_staged: u64,
    /// LRU entries eviction looked at (a victim is found without scanning
    /// every buffer: this stays near `evictions`).
    pub eviction_probes: u64,
}

/// A logical buffer of a [`MemoryManager`]. Cheap to copy; released with
/// [`MemoryManager::release`]. It names its manager: used with another one
/// it is [`MmError::ForeignBuffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalBuffer {
    pub(crate) manager: u64,
    pub(crate) id: u64,
}

impl fmt::Display for LogicalBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "b{}", self.id)
    }
}

/// Logical buffers whose bytes live wherever they are needed.
///
/// The manager owns one allocation per place per logical buffer, made on
/// first use, tracks which byte ranges of each are current, and before an
/// access moves exactly the missing bytes by the cheapest route the
/// adapters' connection answers allow. See the crate documentation.
///
/// ```
/// use std::sync::Arc;
/// use ur_api::{Location, Runtime};
/// use ur_memory_manager::{Access, MemoryManager, Place};
///
/// let mut rt = Runtime::new();
/// rt.add(ur_native::NativeAdapter::new())?;
/// let dev = rt.all_devices()[0];
/// let ctx = rt.create_context(&[dev])?;
/// let rt = Arc::new(rt);
/// let mm = MemoryManager::new(rt.clone(), &[Location::new(ctx, dev)])?;
///
/// let buf = mm.create_buffer(1024)?;
/// mm.write(buf, 0, &[5u8; 1024])?;
/// // Make the first half valid on the device and use it there.
/// let at = Place::Device(Location::new(ctx, dev));
/// let view = mm.acquire(buf, at, Access::ReadWrite, 0..512)?;
/// let d = view.device()?;
/// rt.write(d.queue(), d.buffer(), 0, &[9u8; 16])?;
/// drop(view);
/// let mut back = vec![0u8; 1024];
/// mm.read(buf, 0, &mut back)?;
/// assert_eq!(&back[..16], &[9u8; 16]);
/// assert!(back[16..].iter().all(|b| *b == 5));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MemoryManager {
    pub(crate) inner: Arc<ManagerState>,
}

impl fmt::Debug for MemoryManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryManager")
            .field("places", &self.inner.names())
            .field("buffers", &self.inner.buffers.lock().len())
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl MemoryManager {
    /// A manager over the host and these device locations, with defaults.
    pub fn new(rt: Arc<Runtime>, locations: &[Location]) -> Result<Self> {
        Self::with_config(rt, locations, Config::default())
    }

    /// A manager over the host and these device locations.
    ///
    /// Creates one in-order queue per location and asks the runtime for the
    /// connection between every ordered pair once.
    pub fn with_config(rt: Arc<Runtime>, locations: &[Location], config: Config) -> Result<Self> {
        let mut places = vec![PlaceInfo {
            location: None,
            queue: None,
            name: "host".into(),
            usm_host: false,
            map: false,
            host_unified: false,
            device_group: HOST,
        }];
        let mut ctx_order: Vec<ContextId> = Vec::new();
        for (i, &loc) in locations.iter().enumerate() {
            if locations[..i].contains(&loc) {
                return Err(MmError::Runtime(ur_api::Error::invalid(format!(
                    "location {loc} listed twice"
                ))));
            }
            let info = rt.device_info(loc.device)?;
            let c = match ctx_order.iter().position(|c| *c == loc.context) {
                Some(c) => c,
                None => {
                    ctx_order.push(loc.context);
                    ctx_order.len() - 1
                }
            };
            let usm_host = rt
                .context_devices(loc.context)?
                .iter()
                .all(|d| rt.device_info(*d).is_ok_and(|i| i.usm.contains(UsmCaps::HOST)));
            let queue = rt.create_queue(loc.context, loc.device, &QueueProps::default())?;
            let device_group = locations[..i]
                .iter()
                .position(|l| l.device == loc.device)
                .map_or(i + 1, |k| k + 1);
            places.push(PlaceInfo {
                device_group,
                location: Some(loc),
                queue: Some(queue),
                name: format!("L{} {}/c{c}", i + 1, info.name),
                usm_host,
                map: info.caps.contains(DeviceCaps::MAP),
                host_unified: info.host_unified_memory,
            });
        }
        let n = places.len();
        let mut conn = vec![vec![MemoryConnection::None; n]; n];
        for a in 1..n {
            for b in 1..n {
                let (la, lb) = (places[a].location.unwrap(), places[b].location.unwrap());
                conn[a][b] = if a == b {
                    MemoryConnection::Unified
                } else {
                    rt.memory_connection(la, lb)?
                };
            }
        }
        let config = Config {
            staging_depth: config.staging_depth.max(2),
            staging_chunk: config.staging_chunk.max(64),
            mapped_chunk: config.mapped_chunk.max(64),
            ..config
        };
        let mut by_context: Vec<(ContextId, Arc<HostTransfer>)> = Vec::new();
        let mut transfers = vec![None];
        for p in &places[1..] {
            let ctx = p.location.expect("device place").context;
            let x = match by_context.iter().find(|(c, _)| *c == ctx) {
                Some((_, x)) => x.clone(),
                None => {
                    let x = Arc::new(HostTransfer::new(rt.clone(), ctx)?);
                    by_context.push((ctx, x.clone()));
                    x
                }
            };
            transfers.push(Some(x));
        }
        Ok(MemoryManager {
            inner: Arc::new(ManagerState::new(rt, places, conn, config, transfers)),
        })
    }

    /// The runtime below.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.inner.rt
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.inner.config
    }

    /// The places, host first, then the locations in the order given.
    pub fn places(&self) -> Vec<Place> {
        self.inner
            .places
            .iter()
            .map(|p| p.location.map_or(Place::Host, Place::Device))
            .collect()
    }

    /// A place's stable name as plans print it: `host`, or
    /// `L<n> <device name>/c<k>` (n: 1-based position in the list given,
    /// k: the context's position among the contexts given).
    pub fn place_name(&self, place: Place) -> Result<String> {
        Ok(self.inner.places[self.index(place)?].name.clone())
    }

    /// The connection answer between two places (`None` with the host).
    pub fn connection(&self, from: Place, to: Place) -> Result<MemoryConnection> {
        let (a, b) = (self.index(from)?, self.index(to)?);
        Ok(if a == HOST || b == HOST {
            MemoryConnection::None
        } else {
            self.inner.conn[a][b]
        })
    }

    pub(crate) fn index(&self, place: Place) -> Result<usize> {
        match place {
            Place::Host => Ok(HOST),
            Place::Device(l) => self
                .inner
                .places
                .iter()
                .position(|p| p.location == Some(l))
                .ok_or_else(|| MmError::UnknownPlace(l.to_string())),
        }
    }

    pub(crate) fn place_at(&self, i: usize) -> Place {
        self.inner.places[i].location.map_or(Place::Host, Place::Device)
    }

    /// The buffer's cell, if it is a live buffer of this manager.
    pub(crate) fn cell(&self, buf: LogicalBuffer) -> Result<BufferCell> {
        if buf.manager != self.inner.id {
            return Err(MmError::ForeignBuffer {
                buffer: buf.to_string(),
            });
        }
        self.inner
            .buffers
            .lock()
            .get(&buf.id)
            .cloned()
            .ok_or(MmError::UnknownBuffer)
    }

    pub(crate) fn locked(
        &self,
        buf: LogicalBuffer,
    ) -> Result<(BufferCell, parking_lot::ArcMutexGuard<parking_lot::RawMutex, Residency>)> {
        let s = self.cell(buf)?;
        let g = s.lock_arc();
        if g.released {
            return Err(MmError::UnknownBuffer);
        }
        Ok((s, g))
    }

    pub(crate) fn check_range(r: &Residency, range: &Range<usize>) -> Result<()> {
        if range.start > range.end || range.end > r.size || range.start == range.end {
            return Err(MmError::OutOfBounds {
                buffer: r.name.clone(),
                range: range.clone(),
                size: r.size,
            });
        }
        Ok(())
    }

    /// `offset..offset + len`, or [`MmError::RangeOverflow`].
    pub(crate) fn span(offset: usize, len: usize) -> Result<Range<usize>> {
        let end = offset.checked_add(len).ok_or(MmError::RangeOverflow { offset, len })?;
        Ok(offset..end)
    }

    /// A new logical buffer of `size` bytes. Nothing is allocated until
    /// first use; bytes never written read as zero. See
    /// [`MemoryManager::create_buffer_with`] for placement hints and
    /// initial data.
    pub fn create_buffer(&self, size: usize) -> Result<LogicalBuffer> {
        self.create_buffer_with(&crate::BufferSpec::new(size))
    }

    /// Registers a new buffer's state; returns its handle and cell.
    pub(crate) fn new_buffer(&self, size: usize) -> Result<(LogicalBuffer, BufferCell)> {
        if size == 0 {
            return Err(MmError::Runtime(ur_api::Error::InvalidSize {
                what: "logical buffer",
                size,
            }));
        }
        let id = self.inner.next_buffer.fetch_add(1, Ordering::Relaxed);
        let r = Residency::new(id, size, self.inner.places.len());
        let cell = Arc::new(parking_lot::Mutex::new(r));
        self.inner.buffers.lock().insert(id, cell.clone());
        Ok((
            LogicalBuffer {
                manager: self.inner.id,
                id,
            },
            cell,
        ))
    }

    /// Releases a logical buffer and all its allocations, after the work
    /// still pending on them (callers' [`crate::Acquired::release_after`]
    /// events included) completes.
    pub fn release(&self, buf: LogicalBuffer) -> Result<()> {
        let (_, mut g) = self.locked(buf)?;
        let pins = g.pins();
        if pins > 0 {
            return Err(MmError::InUse {
                buffer: g.name.clone(),
                pins,
            });
        }
        g.released = true;
        self.inner.free_all(&mut g);
        drop(g);
        self.inner.buffers.lock().remove(&buf.id);
        Ok(())
    }

    /// The size of a logical buffer.
    pub fn size(&self, buf: LogicalBuffer) -> Result<usize> {
        Ok(self.locked(buf)?.1.size)
    }

    /// What [`MemoryManager::acquire`] would do now, without doing it.
    /// Planning has no side effects: it weighs routes by cached costs or
    /// estimates and never measures (see [`MemoryManager::calibrate`]).
    ///
    /// With the native adapter every location is `Unified` with every other,
    /// so a second location uses the first one's allocation in place:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ur_api::{Location, Runtime};
    /// use ur_memory_manager::{Access, MemoryManager, Place};
    ///
    /// let mut rt = Runtime::new();
    /// rt.add(ur_native::NativeAdapter::new())?;
    /// let dev = rt.all_devices()[0];
    /// let (c0, c1) = (rt.create_context(&[dev])?, rt.create_context(&[dev])?);
    /// let (l0, l1) = (Place::Device(Location::new(c0, dev)), Place::Device(Location::new(c1, dev)));
    /// let mm = MemoryManager::new(Arc::new(rt), &[Location::new(c0, dev), Location::new(c1, dev)])?;
    /// let buf = mm.create_buffer(4096)?;
    /// drop(mm.acquire(buf, l0, Access::DiscardWrite, 0..4096)?);
    /// let plan = mm.plan(buf, l1, Access::ReadWrite, 0..4096)?;
    /// assert!(plan.steps.is_empty());
    /// assert_eq!(plan.places[plan.target], mm.place_name(l0)?);
    /// assert!(plan.explain().contains("in place (unified)"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn plan(&self, buf: LogicalBuffer, place: Place, access: Access, range: Range<usize>) -> Result<Plan> {
        let p = self.index(place)?;
        let (_, g) = self.locked(buf)?;
        Self::check_range(&g, &range)?;
        let lost = self.inner.lost_flags();
        Ok(route::plan_access(
            &*self.inner,
            &g.masked_view(&lost),
            &g.name,
            g.size,
            access,
            p,
            range,
        ))
    }

    /// Makes `range` current at `place` for `access` and returns where the
    /// bytes are; blocks until they are there (and until work handed over
    /// with [`crate::Acquired::release_after`] on that allocation is done).
    /// For writes, every other place's copy of the range is stale from now
    /// on. On error nothing is lost: ranges already copied stay valid, a
    /// failed copy leaves its source valid and its destination stale, and
    /// the next access tries again. See [`MemoryManager::acquire_async`]
    /// for the variant that does not block.
    pub fn acquire(
        &self,
        buf: LogicalBuffer,
        place: Place,
        access: Access,
        range: Range<usize>,
    ) -> Result<crate::Acquired> {
        let p = self.index(place)?;
        let (cell, mut g) = self.locked(buf)?;
        Self::check_range(&g, &range)?;
        let target = exec::run_access(&self.inner, &mut g, access, p, range.clone(), &mut Exec::blocking())?;
        let slot = g.slots[target].as_mut().expect("the target was allocated");
        let busy: Vec<ur_api::EventId> = slot.busy_ids().collect();
        if !busy.is_empty() {
            self.inner.rt.wait(&busy)?;
            slot.reap();
        }
        Ok(self.guard(&cell, &mut g, place, p, target, range))
    }

    /// Copies `dst.len()` bytes at `offset` into `dst`: from the host place
    /// when it holds them all; else, when one device allocation holds them
    /// all, straight from there into `dst` through the context's
    /// [`HostTransfer`] decision tree (locked or USM host `dst`: direct;
    /// large: locked in place; small: the pinned staging ring), leaving the
    /// host place as it was; otherwise through the host place.
    pub fn read(&self, buf: LogicalBuffer, offset: usize, dst: &mut [u8]) -> Result<()> {
        let range = Self::span(offset, dst.len())?;
        if !dst.is_empty() && self.read_from_device(buf, range.clone(), dst)? {
            return Ok(());
        }
        self.with_host(buf, Access::Read, range, |s| dst.copy_from_slice(s))
    }

    /// Writes `src` at `offset` (at the host place; other copies become stale).
    pub fn write(&self, buf: LogicalBuffer, offset: usize, src: &[u8]) -> Result<()> {
        let range = Self::span(offset, src.len())?;
        self.with_host(buf, Access::DiscardWrite, range, |s| s.copy_from_slice(src))
    }

    /// Runs `f` on the host copy of `range`, made current for `access`,
    /// while holding the buffer (other threads' accesses to it wait).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ur_memory_manager::{Access, IntervalSet, MemoryManager, Place};
    ///
    /// // A manager with no device location: only the host place.
    /// let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[])?;
    /// let buf = mm.create_buffer(100)?;
    /// mm.with_host(buf, Access::ReadWrite, 10..20, |bytes| bytes.fill(3))?;
    /// let sum: u32 = mm.with_host(buf, Access::Read, 0..100, |b| b.iter().map(|x| *x as u32).sum())?;
    /// assert_eq!(sum, 30);
    /// assert_eq!(mm.residency(buf)?, vec![(Place::Host, IntervalSet::from_range(0..100))]);
    /// # Ok::<(), ur_memory_manager::MmError>(())
    /// ```
    pub fn with_host<R>(
        &self,
        buf: LogicalBuffer,
        access: Access,
        range: Range<usize>,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R> {
        let (_, mut g) = self.locked(buf)?;
        Self::check_range(&g, &range)?;
        exec::run_access(&self.inner, &mut g, access, HOST, range.clone(), &mut Exec::blocking())?;
        let slot = g.slots[HOST].as_mut().expect("a host access allocates the host store");
        // Devices may still read or write the store (asynchronous copies).
        let busy: Vec<ur_api::EventId> = slot.busy_ids().collect();
        if !busy.is_empty() {
            self.inner.rt.wait(&busy)?;
            slot.reap();
        }
        match &mut slot.mem {
            Mem::Host(m) => Ok(f(&mut m.as_mut_slice()[range])),
            Mem::Device(_) => unreachable!("the host place holds a host store"),
        }
    }

    /// Per place with an allocation: the byte ranges current there.
    pub fn residency(&self, buf: LogicalBuffer) -> Result<Vec<(Place, IntervalSet)>> {
        let (_, g) = self.locked(buf)?;
        Ok(g.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.as_ref().map(|s| (self.place_at(i), s.valid.clone())))
            .collect())
    }

    /// Is every byte of `range` current at `place`? (One place's valid
    /// set looked at under the buffer's lock; [`MemoryManager::residency`]
    /// copies every place's.)
    pub fn is_current(&self, buf: LogicalBuffer, place: Place, range: Range<usize>) -> Result<bool> {
        let p = self.index(place)?;
        let (_, g) = self.locked(buf)?;
        Ok(g.slots[p].as_ref().is_some_and(|s| s.valid.contains(range)))
    }

    /// Reads every current range at every place whose device is not lost,
    /// without changing anything
    /// (for checks: every copy of a byte must agree).
    pub fn valid_copies(&self, buf: LogicalBuffer) -> Result<Vec<(Place, Range<usize>, Vec<u8>)>> {
        let (_, mut g) = self.locked(buf)?;
        let mut out = Vec::new();
        for i in 0..g.slots.len() {
            if self.inner.is_lost(i) {
                continue;
            }
            let Some(slot) = g.slots[i].as_mut() else { continue };
            let busy: Vec<ur_api::EventId> = slot.busy_ids().collect();
            self.inner.rt.wait(&busy)?;
            let ranges: Vec<Range<usize>> = slot.valid.ranges().collect();
            let mut here = Vec::new();
            for r in ranges {
                let mut data = vec![0u8; r.len()];
                match &slot.mem {
                    Mem::Host(m) => data.copy_from_slice(&m.as_slice()[r.clone()]),
                    Mem::Device(b) => match self.inner.rt.read(self.inner.queue(i), *b, r.start, &mut data) {
                        Ok(()) => {}
                        // A device found lost here is skipped (and remembered).
                        Err(ur_api::Error::DeviceLost) if self.inner.check_lost(i) => {
                            here.clear();
                            break;
                        }
                        Err(e) => return Err(e.into()),
                    },
                }
                here.push((self.place_at(i), r, data));
            }
            out.extend(here);
        }
        Ok(out)
    }

    /// Measures every route between every ordered pair of places now (when
    /// `measure_routes` is on; otherwise fills the cache with estimates).
    pub fn calibrate(&self) {
        exec::calibrate(&self.inner);
    }

    /// What the manager did so far.
    pub fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Stats {
            copies: l(&c.copies),
            staged_copies: l(&c.staged_copies),
            mapped_copies: l(&c.mapped_copies),
            bytes_moved: l(&c.bytes_moved),
            evictions: l(&c.evictions),
            written_back: l(&c.written_back),
            failed_copies: l(&c.failed_copies),
            pinned_staging_buffers: l(&self.inner.staging.allocated.0),
            plain_staging_buffers: l(&self.inner.staging.allocated.1),
            pinned_host_stores: l(&c.pinned_host_stores),
            host_store_bytes: l(&self.inner.slabs.host_bytes),
            host_slabs: l(&self.inner.slabs.slabs),
            eviction_probes: l(&c.eviction_probes),
            caller_direct: l(&c.caller_direct),
            caller_locked: l(&c.caller_locked),
            caller_staged: l(&c.caller_staged),
        }
    }

    /// The cached cost of the route between two places, if weighed yet.
    pub fn route_cost(&self, from: Place, to: Place) -> Result<Option<LinkCost>> {
        let (a, b) = (self.index(from)?, self.index(to)?);
        Ok(self.inner.costs.lock().get(&(a, b)).copied())
    }
}
