//! A synchronous queue and its events.
//!
//! Every command runs inside its enqueue call, so the queue is trivially in
//! order, `flush` and `finish` have nothing to do, and an event is born
//! complete with the command's outcome recorded in it. An asynchronous
//! backend replaces [`TemplateQueue::run`] with a submission and makes
//! [`TemplateEvent`] wait for the device.

use crate::TemplateContext;
use crate::TemplateDevice;
use ur_api::QueueProps;
use ur_api::{Error, EventStatus, Result};

/// An in-order queue. It holds nothing: commands finish before their
/// enqueue call returns.
#[derive(Debug, Default)]
pub struct TemplateQueue {
    _private: (),
}

/// The completion of one command, already final when it is created.
#[derive(Debug, Clone)]
pub struct TemplateEvent {
    outcome: std::result::Result<(), Error>,
}

impl TemplateEvent {
    /// `Complete` or `Failed`, never anything in between.
    pub fn status(&self) -> EventStatus {
        match &self.outcome {
            Ok(()) => EventStatus::Complete,
            Err(e) => EventStatus::Failed(e.clone()),
        }
    }

    /// The command's outcome (waiting has nothing to wait for).
    pub fn outcome(&self) -> Result<()> {
        self.outcome.clone()
    }
}

impl TemplateQueue {
    /// Runs `command` now, after its wait list, and records the outcome.
    ///
    /// A failed wait-list event fails the command without running it, as
    /// an asynchronous queue would; the failure is the event's, not the
    /// enqueue call's (the command was accepted).
    pub(crate) fn run(&self, wait: &[&TemplateEvent], command: impl FnOnce() -> Result<()>) -> Result<TemplateEvent> {
        let outcome = match wait.iter().find_map(|e| e.outcome().err()) {
            Some(cause) => Err(Error::CommandFailed(format!("a wait-list event failed: {cause}"))),
            None => command(),
        };
        if let Err(e) = &outcome {
            tracing::debug!(error = %e, "template command failed");
        }
        Ok(TemplateEvent { outcome })
    }
}

impl ur_api::adapter::Commands for crate::TemplateAdapter {
    fn create_queue(&self, _: &TemplateContext, _: &TemplateDevice, _: &QueueProps) -> Result<TemplateQueue> {
        Ok(TemplateQueue::default())
    }

    fn flush(&self, _: &TemplateQueue) -> Result<()> {
        Ok(()) // Every command already ran.
    }

    fn finish(&self, _: &TemplateQueue) -> Result<()> {
        Ok(()) // Every command already finished.
    }

    fn event_status(&self, event: &TemplateEvent) -> Result<EventStatus> {
        Ok(event.status())
    }

    fn wait(&self, events: &[&TemplateEvent]) -> Result<()> {
        events.iter().try_for_each(|e| e.outcome())
    }

    fn enqueue_barrier(&self, q: &TemplateQueue, wait: &[&TemplateEvent]) -> Result<TemplateEvent> {
        q.run(wait, || Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_born_final_and_failures_propagate() {
        let q = TemplateQueue::default();
        let ok = q.run(&[], || Ok(())).unwrap();
        assert_eq!(ok.status(), EventStatus::Complete);
        let bad = q.run(&[], || Err(Error::DeviceLost)).unwrap();
        assert_eq!(bad.status(), EventStatus::Failed(Error::DeviceLost));
        let mut ran = false;
        let dependent = q
            .run(&[&ok, &bad], || {
                ran = true;
                Ok(())
            })
            .unwrap();
        assert!(!ran, "a command after a failed event must not run");
        assert!(matches!(dependent.outcome(), Err(Error::CommandFailed(m)) if m.contains("wait-list")));
    }
}
