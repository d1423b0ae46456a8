//! Queue and event entry points, and the plumbing every enqueue shares
//! (wait lists, the returned event, blocking).
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::c_void;
use std::sync::Arc;

use ur_api::{DeviceId, EventId, EventStatus, QueueProps};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count, register};
use crate::info::{entry, put_required, query, wait_list};
use crate::managed::WaitIds;
use crate::objects::{Context, Event, Kind, Object, Queue};
use crate::state::state;
use crate::sys::*;

/// The events of a wait list, for a command on `q`: events of the queue's
/// context are handed to the command; any other (another context or
/// adapter) is waited for on the host first, which is what UR requires of
/// cross-context dependencies.
///
/// # Safety
///
/// `list` is null or valid for reads of `n` handles.
#[inline]
pub unsafe fn deps(q: &Queue, n: u32, list: *const ur_event_handle_t) -> Result<WaitIds, CapiError> {
    // The common command waits for nothing: no call, no list.
    if n == 0 && list.is_null() {
        return Ok(WaitIds::new());
    }
    // SAFETY: forwarded contract.
    unsafe { deps_some(q, n, list) }
}

/// [`deps`] of a wait list that is not empty (or is malformed).
///
/// # Safety
///
/// As [`deps`].
#[inline(never)]
unsafe fn deps_some(q: &Queue, n: u32, list: *const ur_event_handle_t) -> Result<WaitIds, CapiError> {
    // SAFETY: forwarded contract.
    let hs = unsafe { wait_list(n, list) }?;
    let mut mine = WaitIds::with_capacity(hs.len());
    for h in hs {
        let e = get::<Event, _>(*h)?;
        // An event without a runtime event (native handle 0) is complete:
        // nothing to wait for.
        let Some(id) = e.id else { continue };
        if e.context.1 == q.context.1 {
            mine.push(id);
        } else {
            state().rt.wait(&[id])?;
        }
    }
    Ok(mine)
}

/// Hands a command's event back: registered in `out`, or released at once
/// when the caller wants none; waited for first when `blocking`.
///
/// # Safety
///
/// `out` is null or valid for a write of one handle.
pub unsafe fn done(
    qh: ur_queue_handle_t,
    q: &Queue,
    id: EventId,
    command: ur_command_t,
    blocking: bool,
    out: *mut ur_event_handle_t,
) -> Result<(), CapiError> {
    let rt = &state().rt;
    if blocking {
        if let Err(e) = rt.wait(&[id]) {
            let _ = rt.release_event(id);
            return Err(e.into());
        }
    }
    if out.is_null() {
        rt.release_event(id)?;
        return Ok(());
    }
    // The clock is read only where profiling times will need the anchor:
    // it is a measurable part of a small command's cost.
    let host_ts = if q.flags & UR_QUEUE_FLAG_PROFILING_ENABLE != 0 {
        crate::device::now_ns()
    } else {
        0
    };
    let h = register(Object::Event(Event {
        id: Some(id),
        context: q.context,
        queue: qh,
        command,
        holds_queue: false,
        host_ts,
    }));
    // SAFETY: non-null and writable by the caller's promise.
    unsafe { out.write(h) };
    Ok(())
}

/// `urQueueCreate`: every queue is in order (a valid schedule for an
/// out-of-order request too); `PROFILING_ENABLE` is honoured.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueCreate(
    c: ur_context_handle_t,
    d: ur_device_handle_t,
    props: *const ur_queue_properties_t,
    out: *mut ur_queue_handle_t,
) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        let dev = get::<DeviceId, _>(d)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: null or a valid properties struct (module contract).
        let flags = unsafe { props.as_ref() }.map_or(0, |p| p.flags);
        let qp = QueueProps {
            profiling: flags & UR_QUEUE_FLAG_PROFILING_ENABLE != 0,
        };
        let part = ctx.part_of(dev);
        let id = state().rt.create_queue(part, dev, &qp)?;
        let h = register(Object::Queue(Queue {
            id,
            context: (c, part),
            device: d,
            flags,
        }));
        // SAFETY: checked non-null above.
        unsafe { put_required(out, h) }
    })
}

/// `urQueueRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueRetain(q: ur_queue_handle_t) -> ur_result_t {
    entry(|| handles::retain(q, Kind::Queue))
}

/// `urQueueRelease`: the last release finishes the queue's work and
/// releases it.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueRelease(q: ur_queue_handle_t) -> ur_result_t {
    entry(|| release_queue(q, true))
}

/// Gives back one reference of queue handle `q`; the last releases the
/// queue (its pending commands still run), first finishing it if `finish`.
fn release_queue(q: ur_queue_handle_t, finish: bool) -> Result<(), CapiError> {
    if let Some(Object::Queue(queue)) = handles::release(q, Kind::Queue)? {
        let rt = &state().rt;
        let finished = if finish { rt.finish(queue.id) } else { Ok(()) };
        rt.release_queue(queue.id)?;
        finished?;
    }
    Ok(())
}

/// `urQueueGetInfo`. `UR_QUEUE_INFO_EMPTY` is a snapshot: whether every
/// command enqueued so far has ended (`Runtime::queue_empty`: exact on the
/// native and OpenCL adapters' own idle queues, else a marker is enqueued
/// and whether it already completed is the answer, as UR's OpenCL adapter
/// does); asking only its size enqueues nothing.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueGetInfo(
    qh: ur_queue_handle_t,
    prop: ur_queue_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(qh, (size, value, size_ret), |q: Queue, out| match prop {
            UR_QUEUE_INFO_CONTEXT => out.value(q.context.0),
            UR_QUEUE_INFO_DEVICE => out.value(q.device),
            UR_QUEUE_INFO_FLAGS => out.value(q.flags),
            UR_QUEUE_INFO_REFERENCE_COUNT => out.value(ref_count(qh, Kind::Queue)?),
            // Only the size asked: no probe of the queue.
            UR_QUEUE_INFO_EMPTY if !out.wants_value() => out.boolean(false),
            UR_QUEUE_INFO_EMPTY => out.boolean(state().rt.queue_empty(q.id)?),
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}

/// `urQueueFinish`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueFinish(q: ur_queue_handle_t) -> ur_result_t {
    entry(|| Ok(state().rt.finish(get::<Queue, _>(q)?.id)?))
}

/// `urQueueFlush`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueFlush(q: ur_queue_handle_t) -> ur_result_t {
    entry(|| Ok(state().rt.flush(get::<Queue, _>(q)?.id)?))
}

/// `urEventWait`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventWait(n: u32, list: *const ur_event_handle_t) -> ur_result_t {
    entry(|| {
        // SAFETY: forwarded module contract.
        let hs = unsafe { wait_list(n, list) }?;
        if hs.is_empty() {
            return Err(CapiError::InvalidSize);
        }
        let mut ids = WaitIds::with_capacity(hs.len());
        for h in hs {
            // Events without a runtime event are complete (native handle 0).
            ids.extend(get::<Event, _>(*h)?.id);
        }
        if ids.is_empty() {
            return Ok(());
        }
        Ok(state().rt.wait(&ids)?)
    })
}

/// `urEventRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventRetain(e: ur_event_handle_t) -> ur_result_t {
    entry(|| handles::retain(e, Kind::Event))
}

/// `urEventRelease`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventRelease(e: ur_event_handle_t) -> ur_result_t {
    entry(|| {
        if let Some(Object::Event(ev)) = handles::release_inline(e, Kind::Event)? {
            let released = ev.id.map_or(Ok(()), |id| state().rt.release_event(id));
            // Not finished: the queue is the program's own backend queue,
            // whose commands are none of this release's business.
            if ev.holds_queue {
                if let Err(err) = release_queue(ev.queue, false) {
                    tracing::warn!(error = ?err, "releasing an adopted event's queue");
                }
            }
            released?;
        }
        Ok(())
    })
}

/// `urEventSetCallback`: `notify` runs on the library's completion thread
/// ([`crate::completion`]) once the event is complete (or failed), with
/// the status it was registered for. A callback asked for `SUBMITTED` or
/// `RUNNING` runs then too, with that status (as OpenCL passes the
/// registered status): UR calls it at the status asked "or past it", and
/// the runtime reports completion, not each step before it. The event
/// handle holds one more reference until the callback has returned, so
/// the callback may use it even if the caller released it meanwhile. The
/// event's queue is flushed, so the callback comes without a further call.
///
/// # Safety
///
/// See the module docs; `notify` may be called from another thread with
/// `data` until the event completes.
pub unsafe extern "C" fn urEventSetCallback(
    e: ur_event_handle_t,
    status: ur_execution_info_t,
    notify: ur_event_callback_t,
    data: *mut c_void,
) -> ur_result_t {
    entry(|| {
        let ev = get::<Event, _>(e)?;
        let notify = notify.ok_or(CapiError::NullPointer)?;
        if status > UR_EXECUTION_INFO_QUEUED {
            return Err(CapiError::InvalidEnumeration);
        }
        if status == UR_EXECUTION_INFO_QUEUED {
            return Err(CapiError::UnsupportedEnumeration);
        }
        handles::retain(e, Kind::Event)?;
        // The command must make progress without a further call from the
        // caller (OpenCL runs nothing unflushed): its queue is flushed.
        if let Ok(q) = get::<Queue, _>(ev.queue) {
            if let Err(err) = state().rt.flush(q.id) {
                tracing::debug!(error = %err, "flush before an event callback");
            }
        }
        let (handle, data) = (e as usize, data as usize);
        crate::completion::after(
            ev.id,
            Box::new(move || {
                let h = handle as ur_event_handle_t;
                tracing::trace!(event = handle, "event callback");
                // SAFETY: the caller's callback with its own data, called
                // once, as `urEventSetCallback` promises; the handle is
                // live (the reference taken above).
                unsafe { notify(h, status, data as *mut c_void) };
                // SAFETY: the reference taken above, given back once.
                let r = unsafe { urEventRelease(h) };
                if r != UR_RESULT_SUCCESS {
                    tracing::warn!(result = r, "releasing an event after its callback");
                }
            }),
        );
        Ok(())
    })
}

/// `urEventGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventGetInfo(
    e: ur_event_handle_t,
    prop: ur_event_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(e, (size, value, size_ret), |ev: Event, out| match prop {
            UR_EVENT_INFO_COMMAND_QUEUE => out.value(ev.queue),
            UR_EVENT_INFO_CONTEXT => out.value(ev.context.0),
            UR_EVENT_INFO_COMMAND_TYPE => out.value(ev.command),
            UR_EVENT_INFO_REFERENCE_COUNT => out.value(ref_count(e, Kind::Event)?),
            UR_EVENT_INFO_COMMAND_EXECUTION_STATUS => {
                let status = match ev.id {
                    Some(id) => state().rt.event_status(id)?,
                    None => EventStatus::Complete,
                };
                let s = match status {
                    EventStatus::Queued => UR_EVENT_STATUS_QUEUED,
                    EventStatus::Submitted => UR_EVENT_STATUS_SUBMITTED,
                    EventStatus::Running => UR_EVENT_STATUS_RUNNING,
                    EventStatus::Complete => UR_EVENT_STATUS_COMPLETE,
                    EventStatus::Failed(_) => UR_EVENT_STATUS_ERROR,
                };
                out.value(s)
            }
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}

/// `urEventGetProfilingInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventGetProfilingInfo(
    e: ur_event_handle_t,
    prop: ur_profiling_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(e, (size, value, size_ret), |ev: Event, out| {
            let id = ev.id.ok_or(CapiError::Api(ur_api::Error::ProfilingUnavailable(
                "an event made from a native handle has no profiling information",
            )))?;
            let p = state().rt.event_profiling(id)?;
            // The device's clock, through the event's queue; a released
            // queue leaves only the event's own anchor.
            let p = match get::<Queue, _>(ev.queue) {
                Ok(q) => DEVICE_CLOCKS.on_host_clock(q.device as usize, p, ev.host_ts),
                Err(_) => on_host_clock(p, ev.host_ts),
            };
            match prop {
                UR_PROFILING_INFO_COMMAND_QUEUED => out.value(p.queued),
                UR_PROFILING_INFO_COMMAND_SUBMIT => out.value(p.submit),
                UR_PROFILING_INFO_COMMAND_START => out.value(p.start),
                UR_PROFILING_INFO_COMMAND_END | UR_PROFILING_INFO_COMMAND_COMPLETE => out.value(p.end),
                _ => Err(CapiError::UnsupportedEnumeration),
            }
        })
    }
}

/// Each device's profiling clock against the host clock of
/// `urDeviceGetGlobalTimestamps`, for [`urEventGetProfilingInfo`].
static DEVICE_CLOCKS: DeviceClocks = DeviceClocks::new();

/// Per device, the offset that moves its profiling times onto the host
/// clock, fixed by the first event whose profiling times are asked for.
///
/// One offset per device, not one per event: every event's own anchor
/// (its earliest time at the host time it was handed out,
/// [`on_host_clock`]) is late by however long the thread was preempted
/// between the backend's stamp and ours, which differs between events, so
/// two events of one queue could come out in the wrong order (dpctl's
/// `SyclTimer`, reading a barrier's end and a later barrier's start, saw
/// -2 ms on a loaded machine). The first event's anchor is still an upper
/// bound of the true offset (its stamp was taken before the event was
/// handed out), so every time lands at or after the true host time: after
/// the submit time libsycl took before the enqueue.
struct DeviceClocks(parking_lot::Mutex<Vec<(usize, i128)>>);

impl DeviceClocks {
    const fn new() -> Self {
        DeviceClocks(parking_lot::Mutex::new(Vec::new()))
    }

    /// `p` of an event of `device` handed out at host time `host_ts`, on
    /// the host clock.
    fn on_host_clock(&self, device: usize, p: ur_api::ProfilingInfo, host_ts: u64) -> ur_api::ProfilingInfo {
        let offset = {
            let mut clocks = self.0.lock();
            match clocks.iter().find(|(d, _)| *d == device) {
                Some((_, o)) => *o,
                None => {
                    let o = anchor_offset(&p, host_ts);
                    clocks.push((device, o));
                    o
                }
            }
        };
        shifted(p, offset)
    }
}

/// The offset that puts the earliest of `p`'s times at `host_ts`.
fn anchor_offset(p: &ur_api::ProfilingInfo, host_ts: u64) -> i128 {
    i128::from(host_ts) - i128::from(p.queued.min(p.submit).min(p.start).min(p.end))
}

/// `p`'s times moved by `offset` nanoseconds, kept within `u64`.
fn shifted(p: ur_api::ProfilingInfo, offset: i128) -> ur_api::ProfilingInfo {
    let at = |v: u64| u64::try_from((i128::from(v) + offset).max(0)).unwrap_or(u64::MAX);
    ur_api::ProfilingInfo {
        queued: at(p.queued),
        submit: at(p.submit),
        start: at(p.start),
        end: at(p.end),
    }
}

/// Moves a command's profiling times onto the host clock that
/// `urDeviceGetGlobalTimestamps` reports: each backend counts from its own
/// origin (OpenCL device timers, the native adapter's start), so libsycl's
/// `command_submit` (a global timestamp taken before the enqueue) could
/// not be compared with them. The device-measured intervals are kept; the
/// earliest of them is anchored at `host_ts`, the host time the event was
/// handed out, which is after libsycl's submit time, so
/// `submit <= start <= end` holds on the one clock.
pub fn on_host_clock(p: ur_api::ProfilingInfo, host_ts: u64) -> ur_api::ProfilingInfo {
    shifted(p, anchor_offset(&p, host_ts))
}

/// The device of a queue, for the extension.
pub fn queue_device(q: &Queue) -> Result<DeviceId, CapiError> {
    get::<DeviceId, _>(q.device)
}

/// `urQueueIsGraphCaptureEnabledExp`: graphs are not supported, so no
/// queue is ever capturing.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueIsGraphCaptureEnabledExp(q: ur_queue_handle_t, out: *mut bool) -> ur_result_t {
    entry(|| {
        get::<Queue, _>(q)?;
        // SAFETY: module contract.
        unsafe { crate::info::put_required(out, false) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiling_times_keep_their_intervals_on_the_host_clock() {
        let p = ur_api::ProfilingInfo {
            queued: 1_000,
            submit: 1_010,
            start: 1_100,
            end: 1_600,
        };
        let h = on_host_clock(p, 50_000);
        assert_eq!((h.queued, h.submit, h.start, h.end), (50_000, 50_010, 50_100, 50_600));
        // A backend whose times start at zero (no queued/submit) still
        // lands after the anchor, in order.
        let z = on_host_clock(
            ur_api::ProfilingInfo {
                queued: 0,
                submit: 0,
                start: 2,
                end: 3,
            },
            7,
        );
        assert!(z.submit >= 7 && z.start <= z.end);
    }

    /// Two events of one device: the first handed out 5 ms late (its
    /// thread preempted after the backend stamped it), the second on time.
    /// Each on its own anchor, the second's start would land before the
    /// first's end; on the device's one offset they keep the device's
    /// order, the interval between them included.
    #[test]
    fn events_of_one_device_keep_their_order_on_the_host_clock() {
        let first = ur_api::ProfilingInfo {
            queued: 1_000_000,
            submit: 1_000_100,
            start: 1_000_200,
            end: 9_000_000,
        };
        let second = ur_api::ProfilingInfo {
            queued: 1_000_300,
            submit: 1_000_400,
            start: 9_000_100,
            end: 9_000_200,
        };
        let (host_first, host_second) = (50_000_000 + 5_000_000, 50_000_300);
        let alone = (on_host_clock(first, host_first), on_host_clock(second, host_second));
        assert!(
            alone.1.start < alone.0.end,
            "the per-event anchors reorder them: {alone:?}"
        );
        let clocks = DeviceClocks::new();
        let a = clocks.on_host_clock(1, first, host_first);
        let b = clocks.on_host_clock(1, second, host_second);
        assert_eq!(b.start - a.end, 100, "{a:?} {b:?}");
        assert_eq!((a.queued, a.end), (host_first, host_first + 8_000_000));
        // Another device has its own offset.
        let c = clocks.on_host_clock(2, second, host_second);
        assert_eq!(c.queued, host_second);
        // A backend clock far ahead of the host's (a device timer since
        // boot) moves back without wrapping.
        let far = ur_api::ProfilingInfo {
            queued: u64::MAX - 10,
            submit: u64::MAX - 10,
            start: u64::MAX - 5,
            end: u64::MAX,
        };
        let f = clocks.on_host_clock(3, far, 100);
        assert_eq!((f.queued, f.start, f.end), (100, 105, 110));
    }
}
