//! Per logical buffer, per place: the allocation (if any) and which bytes
//! of it are current.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ur_api::BufferId;

use crate::events::OwnedEvent;
use crate::interval::IntervalSet;
use crate::slab::HostStore;

/// The memory of one place.
pub(crate) enum Mem {
    /// The host place's store.
    Host(HostStore),
    /// A runtime buffer at a device location.
    Device(BufferId),
}

/// A logical buffer's allocation at one place.
pub(crate) struct Slot {
    pub mem: Mem,
    /// Bytes that hold the buffer's current contents here.
    pub valid: IntervalSet,
    /// Logical clock of the last access that used this allocation (LRU).
    pub last_use: u64,
    /// Live [`crate::Acquired`] guards on this allocation; never evicted while non-zero.
    pub pins: Arc<AtomicUsize>,
    /// Operations that use this allocation and may still run: the
    /// manager's asynchronous copies and fills, and callers' work handed
    /// over with [`crate::Acquired::release_after`]. Every later operation
    /// of the manager on this allocation waits for them; the allocation is
    /// not evicted or freed before they complete.
    pub busy: Vec<Arc<OwnedEvent>>,
}

impl Slot {
    pub(crate) fn new(mem: Mem, now: u64) -> Self {
        Slot {
            mem,
            valid: IntervalSet::new(),
            last_use: now,
            pins: Arc::new(AtomicUsize::new(0)),
            busy: Vec::new(),
        }
    }

    /// Drops the events of `busy` that have completed.
    pub(crate) fn reap(&mut self) {
        self.busy.retain(|e| !e.done());
    }

    /// Held by a live guard or by pending work: not evictable.
    pub(crate) fn pinned(&mut self) -> bool {
        if self.pins.load(Ordering::Acquire) > 0 {
            return true;
        }
        self.reap();
        !self.busy.is_empty()
    }

    /// The ids of the pending operations on this allocation.
    pub(crate) fn busy_ids(&self) -> impl Iterator<Item = ur_api::EventId> + '_ {
        self.busy.iter().map(|e| e.id)
    }

    pub(crate) fn device_buffer(&self) -> Option<BufferId> {
        match self.mem {
            Mem::Device(b) => Some(b),
            Mem::Host(_) => None,
        }
    }
}

/// The state of one logical buffer.
pub(crate) struct Residency {
    /// The manager's id of the buffer.
    pub id: u64,
    /// Stable name: `b0`, `b1`, ... in creation order.
    pub name: String,
    pub size: usize,
    /// One entry per place (index 0: the host).
    pub slots: Vec<Option<Slot>>,
    /// Set once released; later lookups fail.
    pub released: bool,
    /// Bumped whenever one of this buffer's allocations is evicted (a
    /// running plan that may use it must be recomputed).
    pub evictions: u64,
    /// Asynchronous copies not yet known to have succeeded: the event, the
    /// destination place and range. One that failed makes its range stale
    /// at the destination again (the source kept it).
    pub unconfirmed: Vec<(Arc<OwnedEvent>, usize, Range<usize>)>,
}

impl Residency {
    pub(crate) fn new(id: u64, size: usize, places: usize) -> Self {
        Residency {
            id,
            name: format!("b{id}"),
            size,
            slots: (0..places).map(|_| None).collect(),
            released: false,
            evictions: 0,
            unconfirmed: Vec::new(),
        }
    }

    /// Per place, the valid bytes of its allocation (`None`: no allocation).
    #[cfg(test)]
    pub(crate) fn view(&self) -> Vec<Option<&IntervalSet>> {
        self.slots.iter().map(|s| s.as_ref().map(|s| &s.valid)).collect()
    }

    /// As [`Residency::view`], with the places of lost devices hidden.
    pub(crate) fn masked_view(&self, lost: &[bool]) -> Vec<Option<&IntervalSet>> {
        self.slots
            .iter()
            .zip(lost)
            .map(|(s, &l)| if l { None } else { s.as_ref().map(|s| &s.valid) })
            .collect()
    }

    /// Bytes of `range` current only at places of lost devices.
    pub(crate) fn stranded(&self, lost: &[bool], range: Range<usize>) -> IntervalSet {
        let mut at_lost = IntervalSet::new();
        let mut alive = IntervalSet::new();
        for (s, &l) in self.slots.iter().zip(lost) {
            if let Some(s) = s {
                for r in s.valid.intersect(range.clone()) {
                    if l {
                        at_lost.insert(r);
                    } else {
                        alive.insert(r);
                    }
                }
            }
        }
        at_lost.subtract(&alive);
        at_lost
    }

    /// Bytes valid at `place` that the host place lacks: what eviction
    /// writes back. Deliberately more than the sole copies: a copy on
    /// another device may sit on a device that is lost without the manager
    /// knowing yet, and the host is the one place that cannot be lost.
    pub(crate) fn missing_on_host(&self, place: usize) -> IntervalSet {
        let Some(slot) = &self.slots[place] else {
            return IntervalSet::new();
        };
        let mut out = slot.valid.clone();
        if let Some(h) = &self.slots[0] {
            out.subtract(&h.valid);
        }
        out
    }

    /// Bytes valid at `place` and nowhere else.
    #[cfg(test)]
    pub(crate) fn only_copy(&self, place: usize) -> IntervalSet {
        let Some(slot) = &self.slots[place] else {
            return IntervalSet::new();
        };
        let mut only = slot.valid.clone();
        for (i, other) in self.slots.iter().enumerate() {
            if i != place {
                if let Some(o) = other {
                    only.subtract(&o.valid);
                }
            }
        }
        only
    }

    /// Marks `range` valid at `place`.
    pub(crate) fn mark_valid(&mut self, place: usize, range: Range<usize>) {
        if let Some(s) = &mut self.slots[place] {
            s.valid.insert(range);
        }
    }

    /// After a write at `place`: current there, stale everywhere else.
    pub(crate) fn mark_written(&mut self, place: usize, range: Range<usize>) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if let Some(s) = s {
                if i == place {
                    s.valid.insert(range.clone());
                } else {
                    s.valid.remove(range.clone());
                }
            }
        }
    }

    /// Learns the outcome of finished asynchronous copies: a failed one's
    /// range is stale at its destination again. Returns how many failed.
    pub(crate) fn confirm(&mut self) -> u64 {
        let mut failed = 0;
        let pending = std::mem::take(&mut self.unconfirmed);
        for (e, place, range) in pending {
            if !e.done() {
                self.unconfirmed.push((e, place, range));
            } else if e.failed() {
                failed += 1;
                tracing::warn!(buffer = %self.name, ?range, place, "an asynchronous copy failed; the range is stale there");
                if let Some(s) = &mut self.slots[place] {
                    s.valid.remove(range);
                }
            }
        }
        failed
    }

    /// Live guards over all places.
    pub(crate) fn pins(&self) -> usize {
        self.slots
            .iter()
            .flatten()
            .map(|s| s.pins.load(Ordering::Acquire))
            .sum()
    }

    /// Every byte is valid somewhere or was never written (reads as zero):
    /// the union of all valid sets.
    #[cfg(test)]
    pub(crate) fn valid_anywhere(&self) -> IntervalSet {
        let mut all = IntervalSet::new();
        for s in self.slots.iter().flatten() {
            all.union_with(&s.valid);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_slot() -> Slot {
        let pool = Arc::new(crate::slab::SlabPool::default());
        let store = pool.store(&Arc::new(ur_api::Runtime::new()), &[], 16).unwrap();
        Slot::new(Mem::Host(store), 0)
    }

    #[test]
    fn write_makes_one_place_current() {
        let mut r = Residency::new(0, 16, 3);
        r.slots[0] = Some(host_slot());
        r.slots[2] = Some(host_slot());
        r.mark_valid(0, 0..16);
        r.mark_valid(2, 0..16);
        assert!(r.only_copy(0).is_empty());
        r.mark_written(2, 4..8);
        assert_eq!(r.slots[0].as_ref().unwrap().valid.to_string(), "{[0, 4), [8, 16)}");
        assert_eq!(r.only_copy(2), IntervalSet::from_range(4..8));
        assert_eq!(r.missing_on_host(2), IntervalSet::from_range(4..8));
        assert!(r.missing_on_host(0).is_empty());
        assert_eq!(r.valid_anywhere(), IntervalSet::from_range(0..16));
        assert_eq!(r.view().iter().filter(|v| v.is_some()).count(), 2);
        assert_eq!(r.pins(), 0);
    }
}
