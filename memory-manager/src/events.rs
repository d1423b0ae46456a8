//! Events the manager owns, and enqueueing with a caller's wait list.

use std::sync::Arc;

use ur_api::{EventId, EventStatus, QueueId, Runtime};

/// An event the manager owns: released when the last reference goes.
/// Recorded on every allocation the operation uses (`Slot::busy`), so one
/// event may sit on two allocations (source and destination of a copy).
pub(crate) struct OwnedEvent {
    rt: Arc<Runtime>,
    pub id: EventId,
}

impl OwnedEvent {
    pub(crate) fn new(rt: &Arc<Runtime>, id: EventId) -> Arc<Self> {
        Arc::new(OwnedEvent { rt: rt.clone(), id })
    }

    /// Finished (successfully or not), or no longer known to the runtime.
    pub(crate) fn done(&self) -> bool {
        !matches!(
            self.rt.event_status(self.id),
            Ok(EventStatus::Queued | EventStatus::Submitted | EventStatus::Running)
        )
    }

    /// Finished with an error.
    pub(crate) fn failed(&self) -> bool {
        matches!(self.rt.event_status(self.id), Ok(EventStatus::Failed(_)))
    }
}

impl Drop for OwnedEvent {
    fn drop(&mut self) {
        if let Err(e) = self.rt.release_event(self.id) {
            tracing::debug!(error = %e, "releasing an event failed");
        }
    }
}

impl std::fmt::Debug for OwnedEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedEvent({:?})", self.id)
    }
}

/// Enqueues `op` on `queue` after `wait`. An adapter's queue can wait only
/// on events of its own context: the others (of other contexts or other
/// adapters) are waited for on the host first.
pub(crate) fn enqueue_after(
    rt: &Runtime,
    queue: QueueId,
    wait: &[EventId],
    mut op: impl FnMut(&[EventId]) -> ur_api::Result<EventId>,
) -> ur_api::Result<EventId> {
    let ctx = rt.queue_location(queue)?.context;
    let mut mine = Vec::with_capacity(wait.len());
    let mut foreign = Vec::new();
    for &e in wait {
        if rt.event_context(e)? == ctx {
            mine.push(e);
        } else {
            foreign.push(e);
        }
    }
    if !foreign.is_empty() {
        tracing::trace!(
            events = foreign.len(),
            "wait-list events of other contexts; waiting on the host"
        );
        rt.wait(&foreign)?;
    }
    op(&mine)
}
