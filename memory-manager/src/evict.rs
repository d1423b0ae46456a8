//! Making room at a device: evict the least recently used allocation,
//! writing back to the host first whatever of it the host lacks (so sole
//! copies are never lost, even when another copy sits on a device that was
//! lost unnoticed).

use std::sync::Arc;

use crate::exec::{allocate, run_step};
use crate::manager::Inner;
use crate::plan::{Route, Step};
use crate::residency::{Mem, Residency};
use crate::route::HOST;

/// Which buffer a candidate belongs to.
enum Owner {
    /// The buffer being served (already locked by the caller).
    Me,
    /// Another buffer, to be locked with `try_lock` (never blocks: the caller
    /// holds its own buffer's lock).
    Other(crate::manager::Shared),
}

/// What one eviction attempt achieved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evicted {
    /// One allocation was freed.
    One,
    /// Nothing now, but some allocations were in use (locked by another
    /// thread's access or held by a live guard): waiting may help.
    Busy,
    /// Nothing on the device can be evicted.
    Nothing,
}

/// Evicts one allocation on the device of `place` (any of its contexts).
pub(crate) fn evict_one(inner: &Inner, me: &mut Residency, place: usize) -> Evicted {
    let mut busy = false;
    let device = inner.places[place].location.map(|l| l.device);
    // Allocations at lost places are kept: their bytes cannot be written back.
    let on_device: Vec<usize> = (1..inner.places.len())
        .filter(|&p| inner.places[p].location.map(|l| l.device) == device && !inner.is_lost(p))
        .collect();
    let mut cands: Vec<(u64, usize, Owner)> = Vec::new();
    for &p in &on_device {
        if let Some(s) = &me.slots[p] {
            if !s.pinned() {
                cands.push((s.last_use, p, Owner::Me));
            } else {
                busy = true;
            }
        }
    }
    let others: Vec<crate::manager::Shared> = inner.buffers.lock().values().cloned().collect();
    for other in others {
        // The caller holds `me`'s lock: skip it rather than count it busy.
        if std::ptr::eq(other.data_ptr().cast_const(), &*me) {
            continue;
        }
        let Some(g) = other.try_lock() else {
            busy = true;
            continue;
        };
        if g.released {
            continue;
        }
        for &p in &on_device {
            if let Some(s) = &g.slots[p] {
                if !s.pinned() {
                    cands.push((s.last_use, p, Owner::Other(Arc::clone(&other))));
                } else {
                    busy = true;
                }
            }
        }
    }
    cands.sort_by_key(|(t, p, _)| (*t, *p));
    for (_, p, owner) in cands {
        let done = match owner {
            Owner::Me => evict_slot(inner, me, p),
            Owner::Other(o) => match o.try_lock() {
                Some(mut g) if !g.released => evict_slot(inner, &mut g, p),
                _ => {
                    busy = true;
                    false
                }
            },
        };
        if done {
            return Evicted::One;
        }
    }
    if busy {
        Evicted::Busy
    } else {
        Evicted::Nothing
    }
}

/// Frees the allocation of `res` at `place` after writing back to the host
/// every byte current there that the host lacks (sole copies included). Returns false (changing nothing that loses data) when
/// the write-back cannot be done.
fn evict_slot(inner: &Inner, res: &mut Residency, place: usize) -> bool {
    match &res.slots[place] {
        Some(s) if !s.pinned() => {}
        _ => return false,
    }
    let only = res.missing_on_host(place);
    if !only.is_empty() {
        if res.slots[HOST].is_none() && allocate(inner, res, HOST).is_err() {
            return false;
        }
        for range in only.ranges() {
            let step = Step::Copy {
                from: place,
                to: HOST,
                range,
                route: Route::HostRead,
            };
            if let Err(e) = run_step(inner, res, &step) {
                tracing::debug!(error = %e, "write-back before eviction failed; keeping the allocation");
                return false;
            }
        }
    }
    res.evictions += 1;
    if let Some(slot) = res.slots[place].take() {
        if let Mem::Device(b) = slot.mem {
            if let Err(e) = inner.rt.release_buffer(b) {
                tracing::warn!(error = %e, "releasing an evicted allocation failed");
            }
        }
    }
    let c = &inner.counters;
    c.evictions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    c.written_back
        .fetch_add(only.len() as u64, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(buffer = %res.name, place = %inner.places[place].name, wrote_back = only.len(), "evicted");
    true
}
