//! The dyn layer's tables: one entry type per object kind, and the lookups
//! and location checks every [`AdapterHost`] method shares.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use slotmap::{Key, KeyData, SlotMap};

use super::check;
pub(super) use super::grace::{Grace, Held, Ticket};
use super::slab::Slab;
use super::sub_devices::SubDevices;
use super::table_lock::{TableLock, TablesWrite};
use super::usm_cache::{CacheKey, UsmCache};
use crate::adapter::{Adapter, UsmRef};
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;
use crate::ShortList;

pub(super) struct PlatformEntry<A: Adapter> {
    /// Kept so the adapter's platform outlives its devices; asked for its
    /// native handle.
    pub(super) obj: A::Platform,
    pub(super) info: PlatformInfo,
    pub(super) devices: Vec<DeviceKey>,
}

pub(super) struct DeviceEntry<A: Adapter> {
    pub(super) obj: A::Device,
    pub(super) info: DeviceInfo,
    pub(super) platform: PlatformKey,
}

pub(super) struct ContextEntry<A: Adapter> {
    pub(super) obj: A::Context,
    pub(super) devices: Vec<DeviceKey>,
    /// Host ranges registered with the context: start address -> length.
    pub(super) registered: Mutex<BTreeMap<usize, usize>>,
    /// Its freed USM allocations kept for reuse.
    pub(super) usm_cache: UsmCache<A::Usm>,
}

pub(super) struct BufferEntry<A: Adapter> {
    pub(super) obj: A::Buffer,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) size: usize,
    pub(super) flags: MemFlags,
    /// The device the memory was placed for: its location is (ctx, device).
    pub(super) device: DeviceKey,
    /// Parent key, offset in it, and the parent kept alive.
    pub(super) parent: Option<(BufferKey, usize, Arc<BufferEntry<A>>)>,
    /// Live mappings: (address, length).
    pub(super) maps: Mutex<Vec<(usize, usize)>>,
}

pub(super) struct QueueEntry<A: Adapter> {
    pub(super) obj: A::Queue,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) device: DeviceKey,
    pub(super) profiling: bool,
    /// The device's capabilities, read by every command (fixed for a queue).
    pub(super) caps: DeviceCaps,
    /// The [`Lane`] its commands' events and operations live in (the one
    /// of its slot, [`queue_lane`]).
    pub(super) lane: usize,
}

/// An event's entry, inserted once the adapter returned its event, in a
/// [`Slab`] slot that never moves (so a [`Held`] borrow of it stays valid).
pub(super) struct EventEntry<A: Adapter> {
    /// The adapter's event.
    obj: A::Event,
    pub(super) ctx: ContextKey,
    pub(super) profiling: bool,
}

impl<A: Adapter> EventEntry<A> {
    /// The adapter's event.
    pub(super) fn event(&self) -> &A::Event {
        &self.obj
    }
}

/// An entry removed from its table while operations may still borrow it.
pub(super) enum Retired<A: Adapter> {
    Queue(#[allow(dead_code)] Arc<QueueEntry<A>>), // reason: held only to be dropped later.
    Buffer(#[allow(dead_code)] Arc<BufferEntry<A>>), // reason: as above.
    Event(#[allow(dead_code)] EventEntry<A>),      // reason: as above.
    /// A removed event's slot, its entry still in place: reclaimed (its
    /// entry taken out, then dropped) when its grace period ends.
    EventSlot(u32),
}

/// An entry every lane's operations may borrow (a queue or a buffer, read
/// in the tables under any lane's lock), removed from its table: retired in
/// every lane.
pub(super) enum SharedEntry<A: Adapter> {
    Queue(Arc<QueueEntry<A>>),
    Buffer(Arc<BufferEntry<A>>),
}

impl<A: Adapter> SharedEntry<A> {
    /// One lane's reference to it.
    fn retired(&self) -> Retired<A> {
        match self {
            SharedEntry::Queue(q) => Retired::Queue(q.clone()),
            SharedEntry::Buffer(b) => Retired::Buffer(b.clone()),
        }
    }
}

impl<A: Adapter> From<Arc<QueueEntry<A>>> for SharedEntry<A> {
    fn from(q: Arc<QueueEntry<A>>) -> Self {
        SharedEntry::Queue(q)
    }
}

impl<A: Adapter> From<Arc<BufferEntry<A>>> for SharedEntry<A> {
    fn from(b: Arc<BufferEntry<A>>) -> Self {
        SharedEntry::Buffer(b)
    }
}

pub(super) struct ProgramEntry<A: Adapter> {
    pub(super) obj: A::Program,
    pub(super) ctx: ContextKey,
    /// Keeps the context alive while the program lives; its device list
    /// answers which devices a kernel may be asked about.
    pub(super) context: Arc<ContextEntry<A>>,
}

pub(super) struct KernelEntry<A: Adapter> {
    pub(super) obj: A::Kernel,
    pub(super) ctx: ContextKey,
    /// Argument count and sizes, as the adapter reported them.
    pub(super) info: KernelInfo,
    /// Keeps the program (and its context) alive while the kernel lives.
    pub(super) program: Arc<ProgramEntry<A>>,
}

pub(super) struct UsmEntry<A: Adapter> {
    pub(super) obj: A::Usm,
    pub(super) base: u64,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) kind: UsmKind,
    pub(super) size: usize,
    pub(super) device: Option<DeviceKey>,
    /// The rest of the shape it was allocated with (see [`UsmEntry::cache_key`]).
    pub(super) align: usize,
    pub(super) advice: UsmAdvice,
}

impl<A: Adapter> UsmEntry<A> {
    /// The shape it was allocated with: what a cached block must match.
    pub(super) fn cache_key(&self) -> CacheKey {
        CacheKey {
            kind: self.kind,
            device: self.device,
            size: self.size,
            align: self.align,
            advice: self.advice,
        }
    }
}

/// The objects of an adapter, read by every command (under its queue's
/// lane's lock) and written only when objects are made or released (under
/// every lane's lock, see `table_lock.rs`).
pub(super) struct Tables<A: Adapter> {
    pub(super) contexts: SlotMap<ContextKey, Arc<ContextEntry<A>>>,
    pub(super) buffers: SlotMap<BufferKey, Arc<BufferEntry<A>>>,
    pub(super) queues: SlotMap<QueueKey, Arc<QueueEntry<A>>>,
    pub(super) programs: SlotMap<ProgramKey, Arc<ProgramEntry<A>>>,
    pub(super) kernels: SlotMap<KernelKey, Arc<KernelEntry<A>>>,
    /// USM allocations by base address. Commands hold an entry only while
    /// the adapter's enqueue call runs.
    pub(super) usm: BTreeMap<u64, Arc<UsmEntry<A>>>,
}

/// How many lanes an adapter host has (a power of two, at most
/// `1 << LANE_BITS`).
pub(super) const LANES: usize = 8;

/// Bits of an event key's index that name its lane (the top ones).
const LANE_BITS: u32 = 4;

/// Bits of an event key's index left for the slot in its lane.
const SLOT_BITS: u32 = 32 - LANE_BITS;

/// The lane of a queue: the one of its key's slot index, so a command
/// finds it from the handle before the lookup, and a forged key names a
/// lane whose lock lets the lookup (which refuses it) read the tables.
/// Queues made one after another get consecutive slots, so lanes round robin.
#[inline]
pub(super) fn queue_lane(key: QueueKey) -> usize {
    (key.data().as_ffi() & 0xffff_ffff) as usize % LANES
}

/// The events and operations of the queues assigned to one lane: a command
/// takes its operation's ticket and records its event in its queue's lane,
/// and an event is released in the lane it lives in, so threads submitting
/// to queues of different lanes share no lock: a lane's lock also lets a
/// command read the tables (see `table_lock.rs`).
pub(super) struct Lane<A: Adapter> {
    /// Events recorded by this lane's queues (keys carry the lane, see [`unlane`]).
    pub(super) events: Slab<EventEntry<A>>,
    /// Operations of this lane borrowing entries, and entries retired
    /// under them. A removed queue or buffer is retired in every lane; an
    /// event slot in its own.
    pub(super) grace: Grace<Retired<A>>,
}

/// An event key as handed out: the lane in the top [`LANE_BITS`] of its
/// index.
#[inline]
fn with_lane(lane: usize, key: EventKey) -> EventKey {
    let raw = key.data().as_ffi();
    let index = raw & 0xffff_ffff;
    assert!(index < 1 << SLOT_BITS, "more than 2^28 live events in one lane");
    EventKey::from(KeyData::from_ffi(raw | ((lane as u64) << SLOT_BITS)))
}

/// The lane of an event key and the key within the lane's slab. Keys this
/// host never made name a lane by their bits alone; a lane that does not
/// exist is folded onto one that does, whose slab then refuses the key.
pub(super) fn unlane(key: EventKey) -> (usize, EventKey) {
    let raw = key.data().as_ffi();
    let lane = ((raw >> SLOT_BITS) & ((1 << LANE_BITS) - 1)) as usize;
    let mask = !(((1u64 << LANE_BITS) - 1) << SLOT_BITS);
    (lane % LANES, EventKey::from(KeyData::from_ffi(raw & mask)))
}

impl<A: Adapter> Lane<A> {
    /// Ends an operation; what may be dropped now (outside the lock).
    #[inline]
    pub(super) fn end(&mut self, ticket: Ticket) -> Option<Vec<Retired<A>>> {
        let free = self.grace.end(ticket)?;
        Some(self.settle(free))
    }

    /// Takes the entries of event slots whose grace period ended out of
    /// their slots (freeing the slots), to be dropped outside the lock.
    fn settle(&mut self, mut free: Vec<Retired<A>>) -> Vec<Retired<A>> {
        for r in &mut free {
            if let Retired::EventSlot(slot) = *r {
                *r = Retired::Event(self.events.reclaim(slot));
            }
        }
        free
    }
}

pub(super) fn lookup<K: slotmap::Key, V: Clone>(map: &SlotMap<K, V>, key: K, kind: HandleKind) -> Result<V> {
    map.get(key).cloned().ok_or(Error::InvalidHandle { kind })
}

/// Runs `f` on the adapter's events of borrowed entries. An empty list (a
/// command with no wait list, the usual case) builds nothing: collecting
/// even no events into a [`ShortList`] cost about 68 instructions per
/// command (callgrind, `dispatch.native`), an eighth of the dyn layer's.
#[inline(always)]
pub(super) fn with_refs<A: Adapter, R>(events: &[Held<EventEntry<A>>], f: impl FnOnce(&[&A::Event]) -> R) -> R {
    if events.is_empty() {
        return f(&[]);
    }
    let refs: ShortList<&A::Event> = events.iter().map(|e| e.event()).collect();
    f(&refs)
}

/// How memory is used by a command: in place (reads, writes, fills, maps,
/// kernel arguments), or as a side of a copy between two memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// Touched by the command at the queue's location: needs `Unified`.
    InPlace,
    /// Copied from or to by the adapter: `Unified` or `Migratable`.
    Copy,
}

/// A USM range resolved to its allocation (held while the command is enqueued).
pub(super) struct UsmSpan<A: Adapter> {
    pub(super) entry: Arc<UsmEntry<A>>,
    pub(super) offset: usize,
}

impl<A: Adapter> UsmSpan<A> {
    pub(super) fn as_ref(&self) -> UsmRef<'_, A> {
        UsmRef {
            alloc: &self.entry.obj,
            offset: self.offset,
            ptr: UsmPtr(self.entry.base + self.offset as u64),
        }
    }
}

/// Wraps an [`Adapter`] as a [`DynAdapter`](super::DynAdapter): handle tables and every check.
///
/// ```
/// # fn demo<A: ur_api::Adapter>(adapter: A) -> ur_api::Result<()> {
/// use ur_api::{AdapterHost, DynAdapter};
/// let host = AdapterHost::new(adapter)?;
/// for p in host.platforms() {
///     println!("{} devices", host.devices(p)?.len());
/// }
/// # Ok(()) }
/// ```
pub struct AdapterHost<A: Adapter> {
    pub(super) id: u32,
    pub(super) adapter: A,
    pub(super) platforms: SlotMap<PlatformKey, PlatformEntry<A>>,
    pub(super) platform_order: Vec<PlatformKey>,
    pub(super) devices: SlotMap<DeviceKey, DeviceEntry<A>>,
    pub(super) subs: SubDevices<A>,
    /// The tables, and the lanes whose locks let commands read them.
    pub(super) tables: TableLock<Tables<A>, Lane<A>, LANES>,
    /// The lane the next queue is given (round robin).
    pub(super) next_lane: std::sync::atomic::AtomicUsize,
}

impl<A: Adapter> std::fmt::Debug for AdapterHost<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterHost")
            .field("id", &self.id)
            .field("backend", &self.adapter.backend())
            .field("devices", &self.devices.len())
            .field("sub_devices", &self.subs.len())
            .finish_non_exhaustive()
    }
}

impl<A: Adapter> AdapterHost<A> {
    /// Enumerates the adapter's platforms and devices once; platforms with
    /// no devices are skipped.
    pub fn new(adapter: A) -> Result<Self> {
        let mut platforms = SlotMap::with_key();
        let mut platform_order = Vec::new();
        let mut devices = SlotMap::with_key();
        for p in adapter.platforms()? {
            let info = adapter.platform_info(&p)?;
            let devs = adapter.devices(&p)?;
            if devs.is_empty() {
                tracing::debug!(platform = %info.name, "skipping platform with no devices");
                continue;
            }
            let pkey = platforms.insert_with_key(|_| PlatformEntry {
                obj: p,
                info,
                devices: Vec::new(),
            });
            let mut keys = Vec::new();
            for d in devs {
                let dinfo = adapter.device_info(&d)?;
                keys.push(devices.insert(DeviceEntry {
                    obj: d,
                    info: dinfo,
                    platform: pkey,
                }));
            }
            platforms[pkey].devices = keys;
            platform_order.push(pkey);
        }
        Ok(AdapterHost {
            id: next_host_id(),
            adapter,
            platforms,
            platform_order,
            devices,
            subs: SubDevices::default(),
            tables: TableLock::new(
                Tables {
                    contexts: SlotMap::with_key(),
                    buffers: SlotMap::with_key(),
                    queues: SlotMap::with_key(),
                    programs: SlotMap::with_key(),
                    kernels: SlotMap::with_key(),
                    usm: BTreeMap::new(),
                },
                |_| Lane {
                    events: Slab::default(),
                    grace: Grace::default(),
                },
            ),
            next_lane: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// The wrapped adapter (for benchmarks and adapter-specific extras).
    pub fn adapter(&self) -> &A {
        &self.adapter
    }
}

impl<A: Adapter> AdapterHost<A> {
    #[inline]
    pub(super) fn own<H: Handle>(&self, h: H) -> Result<()> {
        if h.adapter_id() == self.id {
            Ok(())
        } else {
            Err(Error::InvalidHandle { kind: H::KIND })
        }
    }

    pub(super) fn device(&self, id: DeviceId) -> Result<&DeviceEntry<A>> {
        self.own(id)?;
        self.devices
            .get(id.key)
            .or_else(|| self.subs.get(id.key))
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Device,
            })
    }

    /// The entry of a device key this host handed out (root or sub-device).
    pub(super) fn dev(&self, key: DeviceKey) -> &DeviceEntry<A> {
        match self.devices.get(key) {
            Some(e) => e,
            None => self
                .subs
                .get(key)
                .expect("device keys in the tables are ones this host made"),
        }
    }

    pub(super) fn context(&self, t: &Tables<A>, id: ContextId) -> Result<Arc<ContextEntry<A>>> {
        self.own(id)?;
        lookup(&t.contexts, id.key, HandleKind::Context)
    }

    pub(super) fn buffer(&self, t: &Tables<A>, id: BufferId) -> Result<Arc<BufferEntry<A>>> {
        self.own(id)?;
        lookup(&t.buffers, id.key, HandleKind::Buffer)
    }

    pub(super) fn queue(&self, t: &Tables<A>, id: QueueId) -> Result<Arc<QueueEntry<A>>> {
        self.own(id)?;
        lookup(&t.queues, id.key, HandleKind::Queue)
    }

    /// Runs `f` on an event's entry under its lane's lock.
    pub(super) fn with_event<T>(&self, id: EventId, f: impl FnOnce(&EventEntry<A>) -> T) -> Result<T> {
        self.own(id)?;
        let (lane, key) = unlane(id.key);
        let l = self.tables.lane(lane).lock();
        l.events.get(key).map(f).ok_or(Error::InvalidHandle {
            kind: HandleKind::Event,
        })
    }

    pub(super) fn kernel(&self, t: &Tables<A>, id: KernelId) -> Result<Arc<KernelEntry<A>>> {
        self.own(id)?;
        lookup(&t.kernels, id.key, HandleKind::Kernel)
    }

    /// A context and one of its devices.
    pub(super) fn location(&self, t: &Tables<A>, loc: Location) -> Result<(Arc<ContextEntry<A>>, &DeviceEntry<A>)> {
        let c = self.context(t, loc.context)?;
        let d = self.device(loc.device)?;
        if !c.devices.contains(&loc.device.key) {
            return Err(Error::DeviceNotInContext);
        }
        Ok((c, d))
    }

    /// Memory allocated at (`ctx`, `dev`) may be used on queue `q`: at its
    /// own location, or where the adapter answers `Unified` (or, for a
    /// copy, `Migratable`). `dev == None` is memory every device of its
    /// context reaches (host and shared USM).
    ///
    /// This is the central invariant's check: a command never makes an
    /// adapter or driver move data between locations behind the memory
    /// manager's back (OpenCL's implicit migration, CUDA's peer copies).
    #[inline]
    pub(super) fn usable_at(
        &self,
        what: &'static str,
        ctx: &ContextEntry<A>,
        ctx_key: ContextKey,
        dev: Option<DeviceKey>,
        q: &QueueEntry<A>,
        how: Use,
    ) -> Result<()> {
        if ctx_key == q.ctx && dev.is_none_or(|d| d == q.device) {
            return Ok(());
        }
        self.usable_elsewhere(what, ctx, dev, q, how)
    }

    /// [`AdapterHost::usable_at`] for memory of another location: asks the adapter.
    #[inline(never)]
    fn usable_elsewhere(
        &self,
        what: &'static str,
        ctx: &ContextEntry<A>,
        dev: Option<DeviceKey>,
        q: &QueueEntry<A>,
        how: Use,
    ) -> Result<()> {
        let src_dev = dev.unwrap_or(ctx.devices[0]);
        let connection = self.adapter.memory_connection(
            (&ctx.obj, &self.dev(src_dev).obj),
            (&q.context.obj, &self.dev(q.device).obj),
        );
        match (connection, how) {
            (MemoryConnection::Unified, _) | (MemoryConnection::Migratable, Use::Copy) => Ok(()),
            _ => Err(Error::NotAccessible {
                what,
                connection,
                copy: how == Use::Copy,
            }),
        }
    }

    /// A buffer usable on `q` for `how`, borrowed for an operation (see [`Held`]).
    #[inline]
    pub(super) fn buffer_at(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        id: BufferId,
        what: &'static str,
        how: Use,
    ) -> Result<Held<BufferEntry<A>>> {
        self.own(id)?;
        let b = t.buffers.get(id.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Buffer,
        })?;
        self.usable_at(what, &b.context, b.ctx, Some(b.device), q, how)?;
        // SAFETY: a live entry in its own `Arc` allocation, found in `t`
        // read under the queue's lane's lock; the caller (`command`'s
        // resolve step) began its operation in that lane under the same
        // lock hold and drops the `Held` before ending it.
        Ok(unsafe { Held::new(&**b) })
    }

    pub(super) fn queue_caps(&self, q: &QueueEntry<A>) -> &DeviceInfo {
        &self.dev(q.device).info
    }

    /// Records the adapter's event of a command in its queue's lane and
    /// ends its operation there (one critical section); the handle is
    /// handed out after it.
    #[inline(always)]
    pub(super) fn record_event(&self, ticket: Ticket, q: &QueueEntry<A>, obj: A::Event) -> EventId {
        let entry = EventEntry {
            obj,
            ctx: q.ctx,
            profiling: q.profiling,
        };
        let mut l = self.tables.lane(q.lane).lock();
        let key = l.events.insert(entry);
        let free = l.end(ticket);
        drop(l);
        drop(free);
        EventId {
            host: self.id,
            key: with_lane(q.lane, key),
        }
    }

    /// Inserts an event that no queue recorded (one adopted from the
    /// backend, [`AdapterHost::create_event_from_native`]): of context
    /// `ctx`, without profiling, in the lane the queue counter gives next.
    /// Any lane would do (no operation of this host is borrowing it yet,
    /// so no ticket is needed); the queues' round robin spreads adopted
    /// events like queues, where always lane 0 would make its lock the one
    /// every adoption and release of such events takes.
    pub(super) fn insert_event(&self, ctx: ContextKey, obj: A::Event) -> EventId {
        let lane = self.assign_lane();
        let entry = EventEntry {
            obj,
            ctx,
            profiling: false,
        };
        let key = self.tables.lane(lane).lock().events.insert(entry);
        EventId {
            host: self.id,
            key: with_lane(lane, key),
        }
    }

    /// Ends an operation's ticket in `lane` without recording an event.
    pub(super) fn end_op(&self, lane: usize, ticket: Ticket) {
        let free = self.tables.lane(lane).lock().end(ticket);
        drop(free);
    }

    /// The tables for writing: every lane's lock held (see `table_lock.rs`),
    /// so no lane lock may be taken while the guard lives.
    pub(super) fn write_tables(&self) -> TablesWrite<'_, Tables<A>, Lane<A>, LANES> {
        self.tables.write()
    }

    /// The lane for an event adopted from the backend (round robin).
    pub(super) fn assign_lane(&self) -> usize {
        self.next_lane.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % LANES
    }

    /// Retires a removed queue or buffer in every lane: dropped once no
    /// operation of any lane may still borrow it (each lane holds a
    /// reference until its operations of the time have ended). Events are
    /// retired in their own lane ([`AdapterHost::remove_event`]).
    pub(super) fn retire_everywhere(&self, entry: impl Into<SharedEntry<A>>) {
        let entry = entry.into();
        for lane in self.tables.lanes() {
            let mut l = lane.lock();
            let free = l.grace.retire(entry.retired());
            let free = l.settle(free);
            drop(l);
            drop(free);
        }
    }

    /// Releases an event: its slot is free at once when no operation of its
    /// lane may borrow it, else its entry stays until they end. The
    /// adapter's event is dropped outside the lane's lock.
    pub(super) fn remove_event(&self, id: EventId) -> Result<()> {
        self.own(id)?;
        let (lane, key) = unlane(id.key);
        let mut l = self.tables.lane(lane).lock();
        if l.grace.idle() {
            let entry = l.events.take(key);
            drop(l);
            return entry.map(drop).ok_or(Error::InvalidHandle {
                kind: HandleKind::Event,
            });
        }
        let slot = l.events.remove(key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Event,
        })?;
        let free = l.grace.retire(Retired::EventSlot(slot));
        let free = l.settle(free);
        drop(l);
        drop(free);
        Ok(())
    }

    /// The USM allocation containing `[ptr, ptr + len)`, usable on `q` for `how`.
    pub(super) fn usm_at(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        ptr: UsmPtr,
        len: usize,
        how: Use,
    ) -> Result<UsmSpan<A>> {
        let entry = t
            .usm
            .range(..=ptr.0)
            .next_back()
            .filter(|(b, e)| ptr.0 - **b < e.size as u64)
            .map(|(_, e)| e.clone())
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            })?;
        let offset = (ptr.0 - entry.base) as usize;
        check::range("USM allocation", offset, len, entry.size)?;
        let dev = match entry.kind {
            // Device memory lives on its device; host and shared memory is
            // reached by every device of its context.
            UsmKind::Device => entry.device,
            UsmKind::Host | UsmKind::Shared => None,
        };
        self.usable_at("USM pointer", &entry.context, entry.ctx, dev, q, how)?;
        Ok(UsmSpan { entry, offset })
    }
}

/// The root buffer of a buffer or sub-buffer.
pub(super) fn root<A: Adapter>(b: &BufferEntry<A>) -> *const BufferEntry<A> {
    match &b.parent {
        Some((_, _, p)) => Arc::as_ptr(p),
        None => b,
    }
}

/// A buffer's offset in its root buffer.
pub(super) fn abs_offset<A: Adapter>(b: &BufferEntry<A>) -> usize {
    b.parent.as_ref().map_or(0, |(_, off, _)| *off)
}

/// Two buffers are views of the same memory.
pub(super) fn same_memory<A: Adapter>(a: &BufferEntry<A>, b: &BufferEntry<A>) -> bool {
    std::ptr::eq(root(a), root(b))
}

/// Takes the value out of an `Arc` whose other holders are transient (an
/// enqueue call in another thread that resolved the entry just before it
/// was removed from its table): yields until they are done.
pub(super) fn into_unique<T>(mut arc: Arc<T>) -> T {
    loop {
        match Arc::try_unwrap(arc) {
            Ok(v) => return v,
            Err(shared) => {
                arc = shared;
                std::thread::yield_now();
            }
        }
    }
}
