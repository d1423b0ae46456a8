//! [`Commands`]: queues, events, waits and barriers; the optional
//! [`Profiling`] group.

use super::Api;
use crate::error::{Error, Result};
use crate::types::{EventStatus, NativeHandle, ProfilingInfo, QueueProps};

/// Waits for every event with `wait_one`, in order, and reports the first
/// failure only after the last wait: [`Commands::wait`]'s contract for
/// adapters whose backend waits one event at a time (one failure never
/// cuts the waiting short).
///
/// ```
/// let waited = std::cell::Cell::new(0);
/// let r = ur_api::adapter::wait_each(&[1, 2, 3], |e| {
///     waited.set(waited.get() + 1);
///     if *e == 2 { Err(ur_api::Error::invalid("event 2 failed")) } else { Ok(()) }
/// });
/// assert!(r.is_err());
/// assert_eq!(waited.get(), 3);
/// ```
pub fn wait_each<E>(events: &[E], mut wait_one: impl FnMut(&E) -> Result<()>) -> Result<()> {
    let mut first = Ok(());
    for e in events {
        let r = wait_one(e);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// Queues and events: what every adapter implements, in its `queue.rs`.
pub trait Commands: Api {
    /// Creates an in-order queue on `device` of `ctx`. `props.profiling`
    /// is set only on devices with [`DeviceCaps::PROFILING`](crate::DeviceCaps::PROFILING).
    fn create_queue(&self, ctx: &Self::Context, device: &Self::Device, props: &QueueProps) -> Result<Self::Queue>;
    /// Submits pending work without waiting.
    fn flush(&self, queue: &Self::Queue) -> Result<()>;
    /// Waits for all work on the queue. Like [`Commands::wait`], returns
    /// only when every command enqueued before it has ended (completed or
    /// failed) or the device is lost; an error does not end the wait early.
    fn finish(&self, queue: &Self::Queue) -> Result<()>;

    /// Current status of an event.
    fn event_status(&self, event: &Self::Event) -> Result<EventStatus>;
    /// Waits for all events (at least one); returns the first failure.
    ///
    /// **The contract**: it returns, `Ok` or `Err`, only when every one of
    /// `events` has ended, completed or failed (its command will touch no
    /// memory any more), or when the device is lost. A failed command, a
    /// failed flush or any other error on the way is reported after the
    /// waiting is done, never instead of it: callers lend memory to
    /// commands until their wait returns (the `Runtime`'s safe blocking
    /// `read`, `write`, `read_rect`, `write_rect`, `usm_read`,
    /// `usm_write`), so a wait that returns early lets a device write into
    /// memory that is no longer the command's. Where the backend's own
    /// wait gives up early, fall back to a stronger one (a wait per event,
    /// then finishing the events' queues) before returning the error.
    fn wait(&self, events: &[&Self::Event]) -> Result<()>;

    /// An event that completes when everything before it (and `wait`) has.
    fn enqueue_barrier(&self, queue: &Self::Queue, wait: &[&Self::Event]) -> Result<Self::Event>;

    /// Whether every command enqueued on the queue so far has ended
    /// (completed or failed): a snapshot, which a command enqueued
    /// meanwhile makes stale. Default: a barrier is enqueued and flushed,
    /// and the answer is whether it has already ended (the queue is in
    /// order, so it ends after everything before it); a backend that has
    /// not run the barrier yet makes the answer `false`. An adapter that
    /// knows its queue is idle answers without one.
    fn queue_empty(&self, queue: &Self::Queue) -> Result<bool> {
        let probe = self.enqueue_barrier(queue, &[])?;
        self.flush(queue)?;
        Ok(matches!(
            self.event_status(&probe)?,
            EventStatus::Complete | EventStatus::Failed(_)
        ))
    }

    /// An event of `ctx` over an event the caller got from the backend
    /// itself (`handle`, e.g. an OpenCL `cl_event`): it is waited for,
    /// queried and put in wait lists like the adapter's own events. The
    /// adapter takes a reference of its own unless `owned` (the caller's
    /// reference then passes to the event, released when it is dropped).
    /// An event of another backend context is refused
    /// ([`Error::WrongContext`]). Default: backend events cannot be adopted.
    fn event_from_native(&self, ctx: &Self::Context, handle: NativeHandle, owned: bool) -> Result<Self::Event> {
        let _ = (ctx, handle, owned);
        Err(Error::unsupported("events from native handles"))
    }

    /// A queue of `ctx` on `device` over a queue the caller got from the
    /// backend itself (`handle`, e.g. an OpenCL `cl_command_queue`): commands
    /// run on it in order, as on the adapter's own queues. The adapter takes
    /// a reference of its own unless `owned`. A queue of another backend
    /// context is refused ([`Error::WrongContext`]), one of another device
    /// or one that does not run its commands in order is invalid. Default:
    /// backend queues cannot be adopted.
    fn queue_from_native(
        &self,
        ctx: &Self::Context,
        device: &Self::Device,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<Self::Queue> {
        let _ = (ctx, device, handle, owned);
        Err(Error::unsupported("queues from native handles"))
    }
}

/// Optional group: event profiling
/// ([`DeviceCaps::PROFILING`](crate::DeviceCaps::PROFILING)). Without it,
/// `impl Profiling for MyAdapter {}`.
pub trait Profiling: Api {
    /// Profiling timestamps of an event of a profiling queue. Default
    /// (never reached without the flag): `Unsupported`.
    fn event_profiling(&self, event: &Self::Event) -> Result<ProfilingInfo> {
        let _ = event;
        Err(Error::unsupported("profiling"))
    }
}
