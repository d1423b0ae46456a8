//! Queues and events: creation, submission, flush/finish, waits, status,
//! profiling, barriers.
//!
//! ## What the adapter knows about completion
//!
//! Two rules of OpenCL are enforced here rather than left to callers:
//!
//! - A command that waits on an event of another queue deadlocks if that
//!   queue was never flushed (the spec requires the application to flush
//!   it; rusticl hangs otherwise). [`submit`] and [`wait`] flush the queues
//!   of foreign events that were not flushed since they were enqueued.
//! - Some runtimes (rusticl 22.3) update an event's status lazily: after
//!   `clFinish`, or after a later command of the same in-order queue was
//!   waited for, an event may still read `CL_QUEUED`. Each queue therefore
//!   numbers its commands and remembers up to which number everything is
//!   known complete (through `finish`, completed waits, in-order position
//!   and wait-list edges); [`event_status`] waits on such an event, which
//!   returns at once, before reading its status.

use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use opencl3::command_queue::{self as cq, CommandQueue, CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROPERTIES};
use opencl3::error_codes::{CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, CL_INVALID_CONTEXT};
use opencl3::event::Event as ClEvent;
use opencl3::types::{
    cl_command_queue, cl_command_queue_properties, cl_context, cl_device_id, cl_event, cl_int, cl_queue_properties,
    cl_uint,
};
use parking_lot::Mutex;
use ur_api::{EventStatus, ProfilingInfo, QueueProps, Result, ShortList};

use crate::conv::{self, check, check3};
use crate::device::{Context, ContextInner, Handle};
use crate::ext::IntelUsm;
use crate::Device;

/// What the adapter knows about the commands of one queue.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Number of the last command enqueued.
    enqueued: AtomicU64,
    /// Commands up to this number were submitted with `clFlush`.
    flushed: AtomicU64,
    /// Commands up to this number are known complete.
    done: AtomicU64,
    /// Wait-list edges: (command here, queue waited on, its command).
    deps: Mutex<Vec<(u64, Arc<Progress>, u64)>>,
}

impl Progress {
    /// Whether commands up to number `seq` are known complete.
    fn completed(&self, seq: u64) -> bool {
        self.done.load(Ordering::Acquire) >= seq
    }
}

/// Records that command `seq` of a queue completed: so did every earlier
/// command of that (in-order) queue, and every command they waited on.
fn mark_done(progress: &Arc<Progress>, seq: u64) {
    // The common case, nothing new or no edges to follow, allocates nothing.
    let mut todo = Vec::new();
    follow(progress, seq, &mut todo);
    while let Some((p, s)) = todo.pop() {
        follow(&p, s, &mut todo);
    }
}

/// Raises `p`'s known-complete mark to `s` and queues the edges it settles.
fn follow(p: &Progress, s: u64, todo: &mut Vec<(Arc<Progress>, u64)>) {
    // A plain load first: a wait marks each of its events, most already
    // covered by a later one of the same queue (no read-modify-write then).
    if p.completed(s) || p.done.fetch_max(s, Ordering::AcqRel) >= s {
        return;
    }
    let mut deps = p.deps.lock();
    if deps.is_empty() {
        return;
    }
    deps.retain(|(here, other, there)| {
        if *here <= s {
            todo.push((other.clone(), *there));
            false
        } else {
            true
        }
    });
}

/// A queue and its progress.
#[derive(Debug)]
pub(crate) struct QueueShared {
    pub(crate) cl: CommandQueue,
    progress: Arc<Progress>,
    /// The adapter made the OpenCL queue, so every command on it went
    /// through [`submit`] and `progress` counts them all; an adopted
    /// native queue may hold commands the caller enqueued directly.
    own: bool,
}

impl QueueShared {
    fn new(cl: CommandQueue, own: bool) -> Self {
        QueueShared {
            cl,
            progress: Arc::default(),
            own,
        }
    }

    /// `clFlush`, recording what it covered.
    fn flush(&self) -> Result<()> {
        let upto = self.progress.enqueued.load(Ordering::Acquire);
        check3(self.cl.flush())?;
        self.progress.flushed.fetch_max(upto, Ordering::AcqRel);
        Ok(())
    }

    /// A marker: complete once every command before it is (in order).
    fn marker(&self) -> Result<ClEvent> {
        // SAFETY: a marker with no wait list on a live queue.
        raw_event(unsafe { cq::enqueue_marker_with_wait_list(self.cl.get(), 0, ptr::null()) })
    }

    /// Whether every command of the queue has ended: at once where the
    /// adapter made the queue and knows them all complete, else whether a
    /// marker enqueued now (and flushed) is already complete, as UR's own
    /// OpenCL adapter answers.
    fn empty(&self) -> Result<bool> {
        let upto = self.progress.enqueued.load(Ordering::Acquire);
        if self.own && self.progress.completed(upto) {
            return Ok(true);
        }
        let marker = self.marker()?;
        self.flush()?;
        let status = check3(marker.command_execution_status())?.0;
        if status == cl3::event::CL_COMPLETE {
            mark_done(&self.progress, upto);
        }
        // A negative status: a command failed, which also ended it.
        Ok(status == cl3::event::CL_COMPLETE || status < 0)
    }

    /// `clFinish`, recording that everything before it is complete; none
    /// on the adapter's own queue whose every command is known complete
    /// (the dyn layer finishes every queue of a context on each cached USM
    /// free: dpctl frees after its commands were waited for).
    pub(crate) fn finish(&self) -> Result<()> {
        let upto = self.progress.enqueued.load(Ordering::Acquire);
        if self.own && self.progress.completed(upto) {
            return Ok(());
        }
        // A marker waited for, not `clFinish`: rusticl 22.3's `clFinish`
        // returns before a non-blocking read's bytes reach host memory
        // (tests/finish.rs); the queue is in order, so the marker ends
        // after every command before it. Where no marker can be made,
        // `clFinish`.
        match self.marker() {
            Ok(marker) => check3(marker.wait())?,
            Err(_) => check3(self.cl.finish())?,
        }
        self.progress.flushed.fetch_max(upto, Ordering::AcqRel);
        mark_done(&self.progress, upto);
        Ok(())
    }
}

/// An in-order queue on one device of a context.
#[derive(Debug)]
pub struct Queue {
    pub(crate) shared: Arc<QueueShared>,
    /// The device's OpenCL version.
    pub(crate) version: (u32, u32),
    /// The context's Intel USM entry points (`None`: USM is SVM).
    pub(crate) intel: Option<IntelUsm>,
    /// The queue's context where small copies may run on the calling
    /// thread ([`run_on_idle`]): its memory is all host memory and the
    /// queue does not profile (an event of no command has no profiling
    /// times). The raw context lives as long as the queue (which retains it).
    pub(crate) host_copies: Option<Handle<cl_context>>,
}

impl Queue {
    /// The raw queue.
    pub(crate) fn raw(&self) -> cl_command_queue {
        self.shared.cl.get()
    }
}

/// The completion of one command.
#[derive(Debug)]
pub struct Event {
    pub(crate) cl: ClEvent,
    /// The queue it was enqueued on, as this adapter tracks it; for an
    /// event adopted from the caller ([`event_from_native`]), a queue of
    /// its own over the event's OpenCL queue (flushed and finished as any
    /// other), or `None` for an event of no queue (a user event).
    queue: Option<Arc<QueueShared>>,
    /// Its number in `queue`'s order.
    seq: u64,
}

impl Event {
    /// The OpenCL queue its command was enqueued on: the queue it was
    /// recorded on, or for an adopted event the one OpenCL reports for it
    /// (`CL_EVENT_COMMAND_QUEUE`); `None` for a user event.
    pub(crate) fn native_queue(&self) -> Option<cl_command_queue> {
        self.queue.as_ref().map(|q| q.cl.get())
    }
}

/// Creates an in-order queue, with the 2.0 entry point where the device has it.
pub(crate) fn create_raw_queue(
    ctx: &ContextInner,
    device: Handle<cl_device_id>,
    profiling: bool,
) -> Result<CommandQueue> {
    let props: cl_command_queue_properties = if profiling { CL_QUEUE_PROFILING_ENABLE } else { 0 };
    let raw = if ctx.version_of(device).0 >= 2 {
        let list: [cl_queue_properties; 3] = [CL_QUEUE_PROPERTIES as cl_queue_properties, props, 0];
        // SAFETY: the device is a member of the context (the dyn layer checked
        // it, helper queues use the context's own devices); `list` is a
        // zero-terminated property list living across the call.
        check(unsafe { cq::create_command_queue_with_properties(ctx.cl.get(), device.0, list.as_ptr()) })?
    } else {
        #[allow(deprecated)] // reason: the only entry point OpenCL 1.x devices have.
        // SAFETY: as above; the 1.x entry point takes the properties by value.
        let q = unsafe { cq::create_command_queue(ctx.cl.get(), device.0, props) };
        check(q)?
    };
    Ok(CommandQueue::new(raw, 3))
}

pub(crate) fn create_queue(ctx: &Context, device: Handle<cl_device_id>, props: &QueueProps) -> Result<Queue> {
    Ok(track_queue(
        ctx,
        device,
        create_raw_queue(ctx, device, props.profiling)?,
        props.profiling,
        true,
    ))
}

/// The adapter's queue over `cl` (its reference), on `device` of `ctx`,
/// tracked by the context.
fn track_queue(ctx: &Context, device: Handle<cl_device_id>, cl: CommandQueue, profiling: bool, own: bool) -> Queue {
    let shared = Arc::new(QueueShared::new(cl, own));
    ctx.track_queue(&shared);
    Queue {
        shared,
        version: ctx.version_of(device),
        intel: ctx.intel,
        host_copies: (ctx.host_memory && !profiling).then(|| ctx.raw()),
    }
}

/// A queue over `raw`, a `cl_command_queue` the caller got from OpenCL
/// itself: of `ctx` (else [`ur_api::Error::WrongContext`]), on `device`, in
/// order (this adapter's commands rely on it; an out-of-order queue is
/// refused). Retained unless `owned`; tracked like the adapter's own.
fn queue_from_native(ctx: &Context, device: Handle<cl_device_id>, raw: cl_command_queue, owned: bool) -> Result<Queue> {
    if raw.is_null() {
        return Err(ur_api::Error::invalid("a null queue handle"));
    }
    let its_ctx = isize::from(check(cq::get_command_queue_info(raw, cq::CL_QUEUE_CONTEXT))?) as usize;
    if its_ctx != ctx.cl.get() as usize {
        return Err(ur_api::Error::WrongContext { what: "native queue" });
    }
    let its_device = isize::from(check(cq::get_command_queue_info(raw, cq::CL_QUEUE_DEVICE))?) as usize;
    if its_device != device.0 as usize {
        return Err(ur_api::Error::invalid("a native queue of another device"));
    }
    let props = u64::from(check(cq::get_command_queue_info(raw, CL_QUEUE_PROPERTIES))?);
    if props & cq::CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE != 0 {
        return Err(ur_api::Error::unsupported("out-of-order native queues"));
    }
    if !owned {
        // SAFETY: a live queue (the handle's contract).
        check(unsafe { cq::retain_command_queue(raw) })?;
    }
    let profiling = props & CL_QUEUE_PROFILING_ENABLE != 0;
    Ok(track_queue(ctx, device, CommandQueue::new(raw, 3), profiling, false))
}

/// Wraps a raw event an OpenCL call returned (owning it).
pub(crate) fn raw_event(r: std::result::Result<cl_event, cl_int>) -> Result<ClEvent> {
    Ok(ClEvent::new(check(r)?))
}

/// Enqueues one command (or a chain ending in one event) on `q`: flushes
/// the queues of foreign wait-list events that were never flushed, runs
/// `f(queue, wait count, wait list)`, and numbers the event it returns.
/// `f` must only make OpenCL calls (it runs under the queue's lock).
pub(crate) fn submit(
    q: &Queue,
    wait: &[&Event],
    f: impl FnOnce(cl_command_queue, cl_uint, *const cl_event) -> Result<ClEvent>,
) -> Result<Event> {
    let mut ids = ShortList::with_capacity(wait.len());
    for e in wait {
        if let Some(eq) = &e.queue {
            if !Arc::ptr_eq(eq, &q.shared) && eq.progress.flushed.load(Ordering::Acquire) < e.seq {
                eq.flush()?;
            }
        }
        ids.push(e.cl.get());
    }
    let (n, w) = if ids.is_empty() {
        (0, ptr::null())
    } else {
        (ids.len() as cl_uint, ids.as_ptr())
    };
    // Numbers must follow queue order, so enqueue and count under the lock.
    let mut deps = q.shared.progress.deps.lock();
    let cl = f(q.raw(), n, w)?;
    // Only written under `deps`: a load and a store, no read-modify-write.
    let seq = q.shared.progress.enqueued.load(Ordering::Relaxed) + 1;
    q.shared.progress.enqueued.store(seq, Ordering::Release);
    for e in wait {
        if let Some(eq) = &e.queue {
            if !Arc::ptr_eq(eq, &q.shared) && !eq.progress.completed(e.seq) {
                deps.push((seq, eq.progress.clone(), e.seq));
            }
        }
    }
    drop(deps);
    Ok(Event {
        cl,
        queue: Some(q.shared.clone()),
        seq,
    })
}

/// Runs `copy` on the calling thread in place of enqueuing it, where that
/// gives the command's result (the queue must have [`Queue::host_copies`],
/// its context): every command of the queue is known complete (waited for,
/// or found complete) and so is every event in `wait`. The queue's lock is
/// held across the copy, so a command another thread enqueues meanwhile is
/// ordered after it. Returns an event already complete (an OpenCL user
/// event set to `CL_COMPLETE`, numbered as the queue's last command, known
/// complete, so waiting on it settles nothing new), or `None` where the
/// command must be enqueued. The one difference a caller can see: the
/// event's native handle is a user event (`CL_COMMAND_USER`, no queue).
///
/// Why: on a CPU runtime an enqueued copy is handed to a worker thread and
/// its wait to the caller; for a few bytes that hand-off (~5-10 µs on
/// Intel's CPU runtime) is all the cost, and SYCL programs make such copies
/// synchronously (a scalar read, `queue.memcpy(...).wait()`).
pub(crate) fn run_on_idle(
    q: &Queue,
    ctx: Handle<cl_context>,
    wait: &[&Event],
    copy: impl FnOnce(),
) -> Result<Option<Event>> {
    let known_done = |e: &&Event| e.queue.as_ref().is_some_and(|eq| eq.progress.completed(e.seq));
    if !wait.iter().all(known_done) {
        return Ok(None);
    }
    let progress = &q.shared.progress;
    let deps = progress.deps.lock();
    // Under `deps`, no command can be added meanwhile.
    let last = progress.enqueued.load(Ordering::Acquire);
    if !progress.completed(last) {
        return Ok(None);
    }
    // A runtime that cannot make the event gets the command instead.
    let Ok(raw) = cl3::event::create_user_event(ctx.0) else {
        return Ok(None);
    };
    let cl = ClEvent::new(raw);
    copy();
    check(cl3::event::set_user_event_status(raw, cl3::event::CL_COMPLETE))?;
    drop(deps);
    Ok(Some(Event {
        cl,
        queue: Some(q.shared.clone()),
        seq: last,
    }))
}

/// An event's status, also for [`wait_one`]: a runtime that updates the
/// status lazily is made to do so where the event is known complete.
fn event_status(e: &Event) -> Result<EventStatus> {
    let raw = check3(e.cl.command_execution_status())?.0;
    let status = conv::event_status(raw);
    let Some(queue) = &e.queue else {
        return Ok(status);
    };
    match status {
        EventStatus::Complete => mark_done(&queue.progress, e.seq),
        EventStatus::Failed(_) => {}
        // Known complete, but the runtime has not updated the status yet:
        // waiting returns at once and makes it do so.
        _ if queue.progress.completed(e.seq) => {
            check3(e.cl.wait())?;
            return Ok(conv::event_status(check3(e.cl.command_execution_status())?.0));
        }
        _ => {}
    }
    Ok(status)
}

/// Waits for one event: its command's error once it failed; where the
/// wait or the status query fails so that the event is not known to have
/// ended, its queue is finished (`clFinish`: every command before it has
/// ended then, or the device is lost) and the error reported all the same
/// (an event of no queue has nothing to finish).
fn wait_one(e: &Event) -> Result<()> {
    let waited = check3(e.cl.wait());
    match event_status(e) {
        Ok(EventStatus::Complete) => waited,
        Ok(EventStatus::Failed(err)) => Err(err),
        status => {
            tracing::debug!(
                ?status,
                ?waited,
                "an event not known to have ended after its wait: clFinish"
            );
            let finished = e.queue.as_ref().map_or(Ok(()), |q| q.finish());
            waited.and(status.map(drop)).and(finished)
        }
    }
}

/// An event over `raw`, a `cl_event` the caller got from OpenCL in `ctx`'s
/// OpenCL context: retained unless `owned`. Its queue (none for a user
/// event) is retained too and given a [`QueueShared`] of its own, whose
/// one command is the event, not yet known flushed: a command of another
/// queue waiting on it, or a wait, flushes that queue first, as for the
/// adapter's own events.
fn event_from_native(ctx: &Context, raw: cl_event, owned: bool) -> Result<Event> {
    if raw.is_null() {
        return Err(ur_api::Error::invalid("a null event handle"));
    }
    let its_ctx = check(cl3::event::get_event_info(raw, cl3::event::CL_EVENT_CONTEXT))?;
    if isize::from(its_ctx) as usize != ctx.cl.get() as usize {
        return Err(ur_api::Error::WrongContext { what: "native event" });
    }
    let its_queue = isize::from(check(cl3::event::get_event_info(
        raw,
        cl3::event::CL_EVENT_COMMAND_QUEUE,
    ))?) as cl_command_queue;
    let queue = if its_queue.is_null() {
        None
    } else {
        // SAFETY: the live event's own queue (OpenCL keeps it alive while
        // the event is); the reference taken here is the `CommandQueue`'s.
        check(unsafe { cq::retain_command_queue(its_queue) })?;
        let shared = QueueShared::new(CommandQueue::new(its_queue, 3), false);
        shared.progress.enqueued.store(1, Ordering::Release);
        Some(Arc::new(shared))
    };
    if !owned {
        // SAFETY: a live event (the handle's contract).
        check(unsafe { cl3::event::retain_event(raw) })?;
    }
    Ok(Event {
        cl: ClEvent::new(raw),
        queue,
        seq: 1,
    })
}

impl ur_api::adapter::Commands for crate::OpenClAdapter {
    fn create_queue(&self, ctx: &Context, device: &Device, props: &QueueProps) -> Result<Queue> {
        create_queue(ctx, device.id, props)
    }

    fn flush(&self, q: &Queue) -> Result<()> {
        q.shared.flush()
    }

    fn queue_empty(&self, q: &Queue) -> Result<bool> {
        q.shared.empty()
    }

    fn finish(&self, q: &Queue) -> Result<()> {
        q.shared.finish()
    }

    fn event_status(&self, e: &Event) -> Result<EventStatus> {
        event_status(e)
    }

    /// Waits for every event with one `clWaitForEvents` (after flushing their
    /// queues where needed), keeping `Adapter::wait`'s promise: it returns only
    /// when every event has ended (completed or failed) or the device is lost,
    /// whatever goes wrong on the way. A failed flush is reported after the
    /// waiting, not instead of it (`clWaitForEvents` flushes by itself).
    /// Events of different contexts cannot share that call
    /// (`CL_INVALID_CONTEXT`), and a failed command or any other error makes it
    /// return early: then each event is waited for on its own (`wait_one`).
    /// The first failure is reported.
    fn wait(&self, events: &[&Event]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut first = None;
        for e in events {
            let Some(queue) = &e.queue else { continue };
            if queue.progress.flushed.load(Ordering::Acquire) < e.seq {
                if let Err(err) = queue.flush() {
                    tracing::debug!(error = %err, "clFlush before a wait failed: waiting all the same");
                    first.get_or_insert(err);
                }
            }
        }
        let ids: ShortList<cl_event> = events.iter().map(|e| e.cl.get()).collect();
        match opencl3::event::wait_for_events(&ids) {
            Ok(()) => {
                // Latest first: the earlier events of a queue then settle at once.
                for e in events.iter().rev() {
                    if let Some(queue) = &e.queue {
                        mark_done(&queue.progress, e.seq);
                    }
                }
                return first.map_or(Ok(()), Err);
            }
            Err(code) if code == CL_INVALID_CONTEXT || code == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST => {}
            Err(code) => {
                tracing::debug!(code, "clWaitForEvents failed: waiting for each event on its own");
                first.get_or_insert(conv::error(code));
            }
        }
        for e in events {
            if let Err(err) = wait_one(e) {
                first.get_or_insert(err);
            }
        }
        first.map_or(Ok(()), Err)
    }

    fn enqueue_barrier(&self, q: &Queue, wait: &[&Event]) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            // SAFETY: the wait list holds live events of the queue's context.
            raw_event(unsafe { cq::enqueue_barrier_with_wait_list(q, n, w) })
        })
    }

    /// A `cl_event` of `ctx`'s OpenCL context (`CL_EVENT_CONTEXT` is
    /// checked: another context's event is [`ur_api::Error::WrongContext`]),
    /// retained unless `owned`.
    fn event_from_native(&self, ctx: &Context, handle: ur_api::NativeHandle, owned: bool) -> Result<Event> {
        event_from_native(ctx, handle.raw() as cl_event, owned)
    }

    fn queue_from_native(
        &self,
        ctx: &Context,
        device: &Device,
        handle: ur_api::NativeHandle,
        owned: bool,
    ) -> Result<Queue> {
        queue_from_native(ctx, device.id, handle.raw() as cl_command_queue, owned)
    }
}

impl ur_api::adapter::Profiling for crate::OpenClAdapter {
    fn event_profiling(&self, e: &Event) -> Result<ProfilingInfo> {
        Ok(ProfilingInfo {
            queued: check3(e.cl.profiling_command_queued())?,
            submit: check3(e.cl.profiling_command_submit())?,
            start: check3(e.cl.profiling_command_start())?,
            end: check3(e.cl.profiling_command_end())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_propagates_along_queue_order_and_wait_edges() {
        let (a, b, c) = (
            Arc::<Progress>::default(),
            Arc::<Progress>::default(),
            Arc::<Progress>::default(),
        );
        // b#2 waited on a#5; c#1 waited on b#1.
        b.deps.lock().push((2, a.clone(), 5));
        c.deps.lock().push((1, b.clone(), 1));
        mark_done(&c, 1);
        assert_eq!(b.done.load(Ordering::Relaxed), 1);
        assert_eq!(a.done.load(Ordering::Relaxed), 0, "b#1 did not wait on a");
        assert_eq!(b.deps.lock().len(), 1, "the edge of b#2 stays");
        mark_done(&b, 3);
        assert_eq!(a.done.load(Ordering::Relaxed), 5);
        assert!(b.deps.lock().is_empty());
        // Knowing less never lowers what is known.
        mark_done(&b, 1);
        assert_eq!(b.done.load(Ordering::Relaxed), 3);
    }
}
