//! The manager's shared state ([`ManagerState`]): places, connections,
//! route costs, the buffers, the per-device LRU order of their allocations,
//! host memory pools and counters. The planner sees it as a [`Topology`];
//! it never runs anything itself.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{ContextId, MemoryConnection, QueueId, Runtime};

use crate::config::{Config, ZeroCopy};
use crate::plan::{MapEnd, Route};
use crate::residency::Residency;
use crate::route::{LinkCost, Topology};
use crate::slab::SlabPool;
use crate::staging::StagingPool;
use crate::transfer::HostTransfer;

/// One logical buffer's state behind its lock.
pub(crate) type BufferCell = Arc<Mutex<Residency>>;

#[derive(Default)]
pub(crate) struct Counters {
    pub copies: AtomicU64,
    pub staged_copies: AtomicU64,
    pub mapped_copies: AtomicU64,
    pub bytes_moved: AtomicU64,
    pub evictions: AtomicU64,
    pub written_back: AtomicU64,
    pub failed_copies: AtomicU64,
    pub pinned_host_stores: AtomicU64,
    pub eviction_probes: AtomicU64,
    /// Caller-memory transfers by path: direct, locked in place, staged.
    pub caller_direct: AtomicU64,
    pub caller_locked: AtomicU64,
    pub caller_staged: AtomicU64,
}

impl Counters {
    /// Counts one caller-memory transfer that took `path`.
    pub(crate) fn count_transfer(&self, path: crate::transfer::TransferPath) {
        use crate::transfer::TransferPath;
        let c = match path {
            TransferPath::Direct => &self.caller_direct,
            TransferPath::LockInPlace => &self.caller_locked,
            TransferPath::Staged => &self.caller_staged,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) struct PlaceInfo {
    pub location: Option<ur_api::Location>,
    pub queue: Option<QueueId>,
    pub name: String,
    /// The context can allocate pinned (USM host) memory.
    pub usm_host: bool,
    /// The device can map buffers.
    pub map: bool,
    /// The device's memory is the host's.
    pub host_unified: bool,
    /// The first place on the same device (eviction frees memory per
    /// device, whatever the context); 0 for the host.
    pub device_group: usize,
}

/// Key of the LRU order: (device group, last use, buffer id, place).
type LruKey = (usize, u64, u64, usize);

/// Per device, the allocations in least-recently-used order, so that
/// eviction finds a victim without scanning every buffer.
#[derive(Default)]
pub(crate) struct LruIndex {
    order: Mutex<BTreeMap<LruKey, ()>>,
}

impl LruIndex {
    /// Moves (or inserts) an allocation's entry.
    pub(crate) fn update(&self, group: usize, buffer: u64, place: usize, old: Option<u64>, new: u64) {
        let mut o = self.order.lock();
        if let Some(old) = old {
            o.remove(&(group, old, buffer, place));
        }
        o.insert((group, new, buffer, place), ());
    }

    pub(crate) fn remove(&self, group: usize, buffer: u64, place: usize, last_use: u64) {
        self.order.lock().remove(&(group, last_use, buffer, place));
    }

    /// Up to `n` entries of `group` after `from` (exclusive), oldest first:
    /// (last use, buffer, place).
    pub(crate) fn after(&self, group: usize, from: (u64, u64, usize), n: usize) -> Vec<(u64, u64, usize)> {
        use std::ops::Bound::{Excluded, Included};
        self.order
            .lock()
            .range((
                Excluded((group, from.0, from.1, from.2)),
                Included((group, u64::MAX, u64::MAX, usize::MAX)),
            ))
            .take(n)
            .map(|(k, _)| (k.1, k.2, k.3))
            .collect()
    }
}

pub(crate) struct ManagerState {
    /// Tags this manager's [`crate::LogicalBuffer`]s.
    pub id: u64,
    pub rt: Arc<Runtime>,
    pub places: Vec<PlaceInfo>,
    /// conn[a][b] for device places a, b (index 0 row/column unused).
    pub conn: Vec<Vec<MemoryConnection>>,
    pub costs: Mutex<HashMap<(usize, usize), LinkCost>>,
    pub config: Config,
    pub buffers: Mutex<BTreeMap<u64, BufferCell>>,
    pub next_buffer: AtomicU64,
    clock: AtomicU64,
    pub lru: LruIndex,
    pub staging: StagingPool,
    pub slabs: Arc<SlabPool>,
    pub counters: Counters,
    /// Per place: its device was found lost.
    pub lost: Vec<AtomicBool>,
    /// Per device place (shared by the places of one context): the
    /// decision tree for transfers between caller memory and the place.
    pub transfers: Vec<Option<Arc<HostTransfer>>>,
}

/// Ids of managers, so that a buffer handle names its manager.
static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

impl ManagerState {
    pub(crate) fn new(
        rt: Arc<Runtime>,
        places: Vec<PlaceInfo>,
        conn: Vec<Vec<MemoryConnection>>,
        config: Config,
        transfers: Vec<Option<Arc<HostTransfer>>>,
    ) -> Self {
        let n = places.len();
        ManagerState {
            id: NEXT_MANAGER.fetch_add(1, Ordering::Relaxed),
            rt,
            places,
            conn,
            costs: Mutex::new(HashMap::new()),
            config,
            buffers: Mutex::new(BTreeMap::new()),
            next_buffer: AtomicU64::new(0),
            clock: AtomicU64::new(1),
            lru: LruIndex::default(),
            staging: StagingPool::default(),
            slabs: Arc::new(SlabPool::default()),
            counters: Counters::default(),
            lost: (0..n).map(|_| AtomicBool::new(false)).collect(),
            transfers,
        }
    }

    pub(crate) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// Records a use of `res`'s allocation at `place` now (LRU order).
    pub(crate) fn touch(&self, res: &mut Residency, place: usize) {
        let now = self.tick();
        let group = self.places[place].device_group;
        let id = res.id;
        if let Some(s) = res.slots[place].as_mut() {
            let old = s.last_use;
            s.last_use = now;
            if place != crate::route::HOST {
                self.lru.update(group, id, place, Some(old), now);
            }
        }
    }

    /// Enters a new allocation of `res` at `place` into the LRU order.
    pub(crate) fn track(&self, res: &Residency, place: usize) {
        if let (true, Some(s)) = (place != crate::route::HOST, res.slots[place].as_ref()) {
            self.lru
                .update(self.places[place].device_group, res.id, place, None, s.last_use);
        }
    }

    /// Removes an allocation about to be freed from the LRU order.
    pub(crate) fn untrack(&self, res: &Residency, place: usize) {
        if let (true, Some(s)) = (place != crate::route::HOST, res.slots[place].as_ref()) {
            self.lru
                .remove(self.places[place].device_group, res.id, place, s.last_use);
        }
    }

    /// Releases every allocation of a buffer, after the work pending on
    /// them (waited for on the host: the memory must be idle when freed).
    pub(crate) fn free_all(&self, res: &mut Residency) {
        res.unconfirmed.clear();
        for place in 0..res.slots.len() {
            self.untrack(res, place);
            let Some(mut slot) = res.slots[place].take() else {
                continue;
            };
            let busy: Vec<ur_api::EventId> = slot.busy_ids().collect();
            if !busy.is_empty() {
                if let Err(e) = self.rt.wait(&busy) {
                    tracing::debug!(error = %e, "pending work on a freed allocation failed");
                }
            }
            slot.busy.clear();
            if let crate::residency::Mem::Device(b) = slot.mem {
                if let Err(e) = self.rt.release_buffer(b) {
                    tracing::warn!(error = %e, "releasing an allocation failed");
                }
            }
        }
    }

    pub(crate) fn context_of(&self, place: usize) -> Option<ContextId> {
        self.places[place].location.map(|l| l.context)
    }

    /// Staging memory preference for a copy `from -> to`: pinned for the
    /// source's context, else the destination's.
    pub(crate) fn staging_preference(&self, from: usize, to: usize) -> Vec<ContextId> {
        [from, to]
            .into_iter()
            .filter(|&p| self.places[p].usm_host)
            .filter_map(|p| self.context_of(p))
            .collect()
    }

    /// Contexts the host store may be pinned for, in place order.
    pub(crate) fn host_store_preference(&self) -> Vec<ContextId> {
        let mut v: Vec<ContextId> = Vec::new();
        for p in &self.places {
            if let (true, Some(l)) = (p.usm_host, p.location) {
                if !v.contains(&l.context) {
                    v.push(l.context);
                }
            }
        }
        v
    }

    pub(crate) fn is_lost(&self, place: usize) -> bool {
        self.lost[place].load(Ordering::Acquire)
    }

    pub(crate) fn lost_flags(&self) -> Vec<bool> {
        self.lost.iter().map(|l| l.load(Ordering::Acquire)).collect()
    }

    /// Asks the place's queue whether its device is lost; remembers a yes
    /// for every place on that device. Returns the answer.
    pub(crate) fn check_lost(&self, place: usize) -> bool {
        let Some(q) = self.places[place].queue else {
            return false;
        };
        if self.rt.finish(q) != Err(ur_api::Error::DeviceLost) {
            return false;
        }
        let dev = self.places[place].location.map(|l| l.device);
        for (i, p) in self.places.iter().enumerate() {
            if p.location.is_some() && p.location.map(|l| l.device) == dev {
                tracing::warn!(place = %p.name, "device lost; its copies are no longer used");
                self.lost[i].store(true, Ordering::Release);
            }
        }
        true
    }

    pub(crate) fn queue(&self, place: usize) -> QueueId {
        self.places[place].queue.expect("device places have a queue")
    }
}

impl Topology for ManagerState {
    fn connection(&self, from: usize, to: usize) -> MemoryConnection {
        self.conn[from][to]
    }

    /// The cached cost, else the estimate: planning never measures (that
    /// happens in `exec::measure_for` before an access runs, and in
    /// `calibrate`), so a plan has no side effects.
    fn cost(&self, from: usize, to: usize, route: Route) -> LinkCost {
        self.costs
            .lock()
            .get(&(from, to))
            .copied()
            .unwrap_or_else(|| LinkCost::estimate(route))
    }

    fn staging(&self) -> (usize, usize) {
        (self.config.staging_chunk, self.config.staging_depth)
    }

    fn zero_copy(&self, from: usize, to: usize) -> Option<MapEnd> {
        let (a, b) = (&self.places[from], &self.places[to]);
        match self.config.zero_copy {
            ZeroCopy::Off => None,
            ZeroCopy::Auto => (a.map && a.host_unified && b.map && b.host_unified).then_some(MapEnd::Source),
            ZeroCopy::MapSource => a.map.then_some(MapEnd::Source),
            ZeroCopy::MapDestination => b.map.then_some(MapEnd::Destination),
            ZeroCopy::MapBoth => (a.map && b.map).then_some(MapEnd::Both),
        }
    }

    fn mapped_chunk(&self) -> usize {
        self.config.mapped_chunk
    }

    fn names(&self) -> Vec<String> {
        self.places.iter().map(|p| p.name.clone()).collect()
    }
}

impl Drop for ManagerState {
    fn drop(&mut self) {
        for (_, b) in std::mem::take(&mut *self.buffers.lock()) {
            self.free_all(&mut b.lock());
        }
        self.staging.clear();
        for p in &self.places {
            if let Some(q) = p.queue {
                if let Err(e) = self.rt.release_queue(q) {
                    tracing::warn!(error = %e, "releasing a queue failed");
                }
            }
        }
    }
}
