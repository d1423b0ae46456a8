//! Guards and asynchronous access: [`Acquired`] (with [`DeviceView`] and
//! [`Acquired::release_after`]), [`MemoryManager::acquire_async`] and
//! [`MemoryManager::acquire_all`].

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ur_api::{BufferId, EventId, QueueId};

use crate::error::{MmError, Result};
use crate::events::{enqueue_after, OwnedEvent};
use crate::exec::{self, Exec};
use crate::manager::{LogicalBuffer, MemoryManager, Place};
use crate::plan::Access;
use crate::residency::Residency;
use crate::route::HOST;
use crate::state::{BufferCell, ManagerState};

/// An access in progress: where to find the bytes. While it lives, the
/// allocation it names is never evicted (and the manager stays alive).
///
/// The manager does not order accesses against each other: a write at
/// another place while this guard lives makes these bytes stale. Callers
/// order conflicting accesses of one range themselves (accesses to
/// disjoint ranges of one buffer need no ordering).
pub struct Acquired {
    place: Place,
    target: Place,
    target_index: usize,
    buffer: Option<BufferId>,
    queue: Option<QueueId>,
    range: Range<usize>,
    pin: Arc<AtomicUsize>,
    cell: BufferCell,
    manager: Arc<ManagerState>,
}

impl fmt::Debug for Acquired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquired")
            .field("place", &self.place)
            .field("target", &self.target)
            .field("buffer", &self.buffer)
            .field("queue", &self.queue)
            .field("range", &self.range)
            .finish_non_exhaustive()
    }
}

/// What a kernel at a device needs: the manager's queue at the place asked
/// for and the runtime buffer to use (offsets are the logical buffer's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceView {
    queue: QueueId,
    buffer: BufferId,
}

impl DeviceView {
    /// The manager's in-order queue at the place asked for.
    pub fn queue(&self) -> QueueId {
        self.queue
    }

    /// The runtime buffer holding the bytes.
    pub fn buffer(&self) -> BufferId {
        self.buffer
    }
}

impl Acquired {
    /// The place asked for.
    pub fn place(&self) -> Place {
        self.place
    }

    /// The place whose allocation holds the bytes: the place asked for, or
    /// one whose memory is `Unified` with it (used in place).
    pub fn target(&self) -> Place {
        self.target
    }

    /// The queue and buffer of a device access; [`MmError::NotADevice`]
    /// for an access at the host place.
    pub fn device(&self) -> Result<DeviceView> {
        match (self.queue, self.buffer) {
            (Some(queue), Some(buffer)) => Ok(DeviceView { queue, buffer }),
            _ => Err(MmError::NotADevice),
        }
    }

    /// The runtime buffer to use (`None` for the host place). Its offsets
    /// are the logical buffer's offsets. See [`Acquired::device`].
    pub fn buffer(&self) -> Option<BufferId> {
        self.buffer
    }

    /// The manager's queue at the place asked for (`None` for the host).
    pub fn queue(&self) -> Option<QueueId> {
        self.queue
    }

    /// The byte range the access covers.
    pub fn range(&self) -> Range<usize> {
        self.range.clone()
    }

    /// Ends the access once `event` completes, without blocking: typically
    /// the event of the kernel that uses the bytes. Until it completes the
    /// allocation stays pinned (never evicted), and every later operation
    /// of the manager on it (a copy from it or into it, a host read, its
    /// release) waits for it.
    ///
    /// `event` stays the caller's (the crate's event rule: events passed
    /// in are borrowed, events returned are the caller's to release): the
    /// manager enqueues its own marker after it, a barrier on its queue at
    /// the place (for an access at the host place, on its queue of the
    /// event's context), and keeps that. The caller may wait on `event` or
    /// release it at once. An event the marker's queue cannot wait on
    /// (another adapter's or context's), or one with no manager queue to
    /// follow it, is waited for on the host instead.
    pub fn release_after(self, event: EventId) {
        let marker = self.marker_after(event);
        let mut g = self.cell.lock();
        match marker {
            Ok(Some(m)) => {
                let m = OwnedEvent::new(&self.manager.rt, m);
                // The slot is there while the guard pins it; else `m` drops (released).
                if let Some(slot) = g.slots[self.target_index].as_mut() {
                    slot.busy.push(m);
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %e, "no marker after the caller's event: waiting on the host");
                if let Err(e) = self.manager.rt.wait(&[event]) {
                    tracing::debug!(error = %e, "the caller's event failed");
                }
            }
        }
        drop(g);
        // Dropping `self` unpins: `busy` keeps it from eviction now.
    }

    /// The manager's own event after `event`: a barrier on the guard's
    /// queue, or for the host place on a manager queue of the event's
    /// context; `None` after a host wait when there is no such queue.
    fn marker_after(&self, event: EventId) -> ur_api::Result<Option<EventId>> {
        let rt = &self.manager.rt;
        let queue = match self.queue {
            Some(q) => Some(q),
            None => {
                let ctx = rt.event_context(event)?;
                self.manager
                    .places
                    .iter()
                    .find(|p| p.location.is_some_and(|l| l.context == ctx))
                    .and_then(|p| p.queue)
            }
        };
        let Some(q) = queue else {
            rt.wait(&[event])?;
            return Ok(None);
        };
        let m = enqueue_after(rt, q, &[event], |w| rt.enqueue_barrier(q, w))?;
        if let Err(e) = rt.flush(q) {
            tracing::debug!(error = %e, "flushing after a marker failed");
        }
        Ok(Some(m))
    }
}

impl Drop for Acquired {
    fn drop(&mut self) {
        self.pin.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One access of [`MemoryManager::acquire_all`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRequest {
    /// The logical buffer.
    pub buffer: LogicalBuffer,
    /// Where.
    pub place: Place,
    /// How.
    pub access: Access,
    /// Which bytes.
    pub range: Range<usize>,
}

impl AccessRequest {
    /// A request.
    pub fn new(buffer: LogicalBuffer, place: Place, access: Access, range: Range<usize>) -> Self {
        AccessRequest {
            buffer,
            place,
            access,
            range,
        }
    }
}

/// A guard and the event after which its range is current at its place
/// (`None`: current now). The event is the caller's to release (events
/// returned are the caller's; see [`Acquired::release_after`] for events
/// passed in).
pub type Ready = (Acquired, Option<EventId>);

impl MemoryManager {
    /// A guard on `res`'s allocation at `target` (pins it).
    pub(crate) fn guard(
        &self,
        cell: &BufferCell,
        res: &mut Residency,
        place: Place,
        p: usize,
        target: usize,
        range: Range<usize>,
    ) -> Acquired {
        let slot = res.slots[target].as_mut().expect("the target was allocated");
        slot.pins.fetch_add(1, Ordering::AcqRel);
        Acquired {
            place,
            target: self.place_at(target),
            target_index: target,
            buffer: slot.device_buffer(),
            queue: self.inner.places[p].queue,
            range,
            pin: slot.pins.clone(),
            cell: cell.clone(),
            manager: self.inner.clone(),
        }
    }

    /// As [`MemoryManager::acquire`], without blocking the host where it
    /// need not: the copies wait for `wait` (events of the caller's earlier
    /// work) and for work pending on the allocations involved, chained on
    /// events. Returns the guard and the event after which the range is
    /// current at `place` (`None`: current now), an event of the manager's
    /// queue at `place`, which the caller waits for or puts in its kernel's
    /// wait list, and then releases (it is the caller's, as every event the
    /// manager returns; the events of `wait` stay the caller's too, as
    /// every event passed in).
    ///
    /// The host blocks only where it does the work: host-staged routes
    /// (pinned ring or zero-copy) wait for their inputs on the host and run
    /// to completion before this returns, as do accesses at the host place
    /// and allocations (with eviction). Wait-list events the queue doing a
    /// copy cannot wait on (another adapter's, another context's) are
    /// waited for on the host. A copy that fails asynchronously shows at
    /// its event; the manager learns it at the buffer's next access and
    /// plans the range again (its source kept it).
    pub fn acquire_async(
        &self,
        buf: LogicalBuffer,
        place: Place,
        access: Access,
        range: Range<usize>,
        wait: &[EventId],
    ) -> Result<Ready> {
        let p = self.index(place)?;
        let (cell, mut g) = self.locked(buf)?;
        self.acquire_locked(&cell, &mut g, place, p, access, range, wait)
    }

    #[allow(clippy::too_many_arguments)]
    fn acquire_locked(
        &self,
        cell: &BufferCell,
        res: &mut Residency,
        place: Place,
        p: usize,
        access: Access,
        range: Range<usize>,
        wait: &[EventId],
    ) -> Result<Ready> {
        Self::check_range(res, &range)?;
        let mut ex = Exec::chained(wait);
        let target = exec::run_access(&self.inner, res, access, p, range.clone(), &mut ex)?;
        let ready = self.ready_event(res, p, target, wait)?;
        Ok((self.guard(cell, res, place, p, target, range), ready))
    }

    /// An event of the place's queue after the work pending on the target
    /// allocation (the copies just enqueued and earlier handed-over work);
    /// for the host place, a host wait instead.
    fn ready_event(&self, res: &mut Residency, p: usize, target: usize, wait: &[EventId]) -> Result<Option<EventId>> {
        let slot = res.slots[target].as_mut().expect("the target was allocated");
        slot.reap();
        let busy: Vec<EventId> = slot.busy_ids().collect();
        if p == HOST {
            self.inner.rt.wait(&busy)?;
            self.inner.rt.wait(wait)?;
            slot.reap();
            return Ok(None);
        }
        if busy.is_empty() {
            return Ok(None);
        }
        let rt = &self.inner.rt;
        let q = self.inner.queue(p);
        let ev = enqueue_after(rt, q, &busy, |w| rt.enqueue_barrier(q, w))?;
        rt.flush(q)?;
        Ok(Some(ev))
    }

    /// Several accesses at once, for one command group: all or none. The
    /// buffers are locked in one global order (by id), so threads acquiring
    /// overlapping sets in any order cannot deadlock; a buffer named twice
    /// is [`MmError::DuplicateBuffer`]. Each access runs as
    /// [`MemoryManager::acquire_async`] after `wait`; the results come in
    /// the order of `requests`. On error every guard made so far is dropped
    /// and every ready event released.
    pub fn acquire_all(&self, requests: &[AccessRequest], wait: &[EventId]) -> Result<Vec<Ready>> {
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_by_key(|&i| requests[i].buffer);
        for w in order.windows(2) {
            if requests[w[0]].buffer == requests[w[1]].buffer {
                return Err(MmError::DuplicateBuffer {
                    buffer: requests[w[0]].buffer.to_string(),
                });
            }
        }
        let mut places = Vec::with_capacity(requests.len());
        for r in requests {
            places.push(self.index(r.place)?);
        }
        // Lock in id order; keep the guards by request index.
        let mut locks: Vec<Option<(BufferCell, parking_lot::ArcMutexGuard<parking_lot::RawMutex, Residency>)>> =
            (0..requests.len()).map(|_| None).collect();
        for &i in &order {
            locks[i] = Some(self.locked(requests[i].buffer)?);
        }
        let mut out: Vec<Ready> = Vec::with_capacity(requests.len());
        for (i, r) in requests.iter().enumerate() {
            let (cell, g) = locks[i].as_mut().expect("locked above");
            match self.acquire_locked(cell, g, r.place, places[i], r.access, r.range.clone(), wait) {
                Ok(ready) => out.push(ready),
                Err(e) => {
                    for (_, ev) in out.drain(..) {
                        if let Some(ev) = ev {
                            let _ = self.inner.rt.release_event(ev);
                        }
                    }
                    return Err(e);
                }
            }
        }
        Ok(out)
    }
}
