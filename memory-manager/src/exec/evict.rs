//! Making room at a device: evict the least recently used allocation,
//! writing back to the host first whatever of it the host lacks (so sole
//! copies are never lost, even when another copy sits on a device that was
//! lost unnoticed). Victims come from the per-device LRU order
//! ([`crate::state::LruIndex`]), oldest first, so finding one does not scan
//! every buffer.

use std::sync::atomic::Ordering::Relaxed;

use super::{allocate, run_step, Exec};
use crate::plan::{Route, Step};
use crate::residency::{Mem, Residency};
use crate::route::HOST;
use crate::state::ManagerState;

/// What one eviction attempt achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evicted {
    /// One allocation was freed.
    One,
    /// Nothing now, but some allocations were in use (locked by another
    /// thread's access, held by a live guard or by pending work): waiting
    /// may help.
    Busy,
    /// Nothing on the device can be evicted.
    Nothing,
}

/// Entries of the LRU order looked at per lock of it.
const BATCH: usize = 32;

/// Evicts one allocation on the device of `place` (any of its contexts).
/// The caller holds `me`'s lock; other buffers are only `try_lock`ed, so
/// two threads evicting for each other cannot deadlock.
pub(crate) fn evict_one(inner: &ManagerState, me: &mut Residency, place: usize) -> Evicted {
    let group = inner.places[place].device_group;
    let mut busy = false;
    // The logical clock starts at 1: (0, 0, 0) precedes every entry.
    let mut cursor = (0u64, 0u64, 0usize);
    loop {
        let batch = inner.lru.after(group, cursor, BATCH);
        if batch.is_empty() {
            break;
        }
        for (t, id, p) in batch {
            cursor = (t, id, p);
            inner.counters.eviction_probes.fetch_add(1, Relaxed);
            // Allocations at lost places are kept: their bytes cannot be written back.
            if inner.is_lost(p) {
                continue;
            }
            if id == me.id {
                match evict_slot(inner, me, p) {
                    Some(true) => return Evicted::One,
                    Some(false) => {}
                    None => busy = true,
                }
                continue;
            }
            let Some(cell) = inner.buffers.lock().get(&id).cloned() else {
                continue;
            };
            let Some(mut other) = cell.try_lock() else {
                busy = true;
                continue;
            };
            if other.released {
                continue;
            }
            match evict_slot(inner, &mut other, p) {
                Some(true) => return Evicted::One,
                Some(false) => {}
                None => busy = true,
            }
        }
    }
    if busy {
        Evicted::Busy
    } else {
        Evicted::Nothing
    }
}

/// Frees the allocation of `res` at `place` after writing back to the host
/// every byte current there that the host lacks (sole copies included).
/// `Some(false)`, changing nothing that loses data, when the write-back
/// cannot be done; `None` when the allocation is pinned.
fn evict_slot(inner: &ManagerState, res: &mut Residency, place: usize) -> Option<bool> {
    match res.slots[place].as_mut().map(|s| s.pinned()) {
        Some(false) => {}
        Some(true) => return None,
        None => return Some(false),
    }
    let only = res.missing_on_host(place);
    if !only.is_empty() {
        if res.slots[HOST].is_none() && allocate(inner, res, HOST).is_err() {
            return Some(false);
        }
        for range in only.ranges() {
            let step = Step::Copy {
                from: place,
                to: HOST,
                range,
                route: Route::HostRead,
            };
            if let Err(e) = run_step(inner, res, &step, &mut Exec::blocking()) {
                tracing::debug!(error = %e, "write-back before eviction failed; keeping the allocation");
                return Some(false);
            }
        }
    }
    res.evictions += 1;
    inner.untrack(res, place);
    if let Some(slot) = res.slots[place].take() {
        if let Mem::Device(b) = slot.mem {
            if let Err(e) = inner.rt.release_buffer(b) {
                tracing::warn!(error = %e, "releasing an evicted allocation failed");
            }
        }
    }
    let c = &inner.counters;
    c.evictions.fetch_add(1, Relaxed);
    c.written_back.fetch_add(only.len() as u64, Relaxed);
    tracing::debug!(buffer = %res.name, place = %inner.places[place].name, wrote_back = only.len(), "evicted");
    Some(true)
}
