//! Queues, events and the buffer commands (read, write, copy, rect, fill,
//! map/unmap, barrier).

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use opencl3::command_queue::{self as cq, CommandQueue, CL_QUEUE_PROFILING_ENABLE, CL_QUEUE_PROPERTIES};
use opencl3::error_codes::{CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, CL_INVALID_CONTEXT};
use opencl3::event::Event as ClEvent;
use opencl3::memory::{self as clmem, Buffer as ClBuffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY};
use opencl3::types::{
    cl_bool, cl_command_queue_properties, cl_device_id, cl_event, cl_int, cl_mem, cl_queue_properties, cl_uint,
    CL_FALSE,
};
use ur_api::{Error, EventStatus, HostPtr, MapFlags, ProfilingInfo, QueueProps, RectCopy, Result};

use crate::conv::{self, check, check3};
use crate::device::{Context, Handle};
use crate::memory::Buffer;

/// An in-order queue on one device of a context.
#[derive(Debug)]
pub struct Queue {
    pub(crate) cl: Arc<CommandQueue>,
    /// The device's OpenCL version.
    pub(crate) version: (u32, u32),
}

/// The completion of one command.
#[derive(Debug)]
pub struct Event {
    pub(crate) cl: ClEvent,
}

/// Creates an in-order queue, with the 2.0 entry point where the device has it.
pub(crate) fn create_raw_queue(ctx: &Context, device: Handle<cl_device_id>, profiling: bool) -> Result<CommandQueue> {
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
    let cl = Arc::new(create_raw_queue(ctx, device, props.profiling)?);
    ctx.track_queue(&cl);
    Ok(Queue {
        cl,
        version: ctx.version_of(device),
    })
}

/// Raw events of a wait list.
pub(crate) fn wait_ids(wait: &[&Event]) -> Vec<cl_event> {
    wait.iter().map(|e| e.cl.get()).collect()
}

/// `(count, pointer)` as the OpenCL calls take a wait list.
pub(crate) fn wl(ids: &[cl_event]) -> (cl_uint, *const cl_event) {
    if ids.is_empty() {
        (0, ptr::null())
    } else {
        (ids.len() as cl_uint, ids.as_ptr())
    }
}

/// Wraps the event an enqueue returned.
pub(crate) fn event(r: std::result::Result<cl_event, cl_int>) -> Result<Event> {
    Ok(Event {
        cl: ClEvent::new(check(r)?),
    })
}

fn mem(b: &Buffer) -> cl_mem {
    b.cl.get()
}

pub(crate) fn flush(q: &Queue) -> Result<()> {
    check3(q.cl.flush())
}

pub(crate) fn finish(q: &Queue) -> Result<()> {
    check3(q.cl.finish())
}

pub(crate) fn event_status(e: &Event) -> Result<EventStatus> {
    let s = check3(e.cl.command_execution_status())?;
    Ok(conv::event_status(s.0))
}

/// Waits for every event with one `clWaitForEvents`. Events of different
/// contexts cannot share that call (`CL_INVALID_CONTEXT`), and a failed
/// command makes it return early: then each event is waited for on its own
/// and the first failure is reported.
pub(crate) fn wait(events: &[&Event]) -> Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let ids = wait_ids(events);
    match opencl3::event::wait_for_events(&ids) {
        Ok(()) => return Ok(()),
        Err(code) if code == CL_INVALID_CONTEXT || code == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST => {}
        Err(code) => return Err(conv::error(code)),
    }
    let mut first = None;
    for e in events {
        let r = check3(e.cl.wait()).and_then(|()| match event_status(e)? {
            EventStatus::Failed(err) => Err(err),
            _ => Ok(()),
        });
        if let Err(err) = r {
            first.get_or_insert(err);
        }
    }
    first.map_or(Ok(()), Err)
}

pub(crate) fn event_profiling(e: &Event) -> Result<ProfilingInfo> {
    Ok(ProfilingInfo {
        queued: check3(e.cl.profiling_command_queued())?,
        submit: check3(e.cl.profiling_command_submit())?,
        start: check3(e.cl.profiling_command_start())?,
        end: check3(e.cl.profiling_command_end())?,
    })
}

pub(crate) fn enqueue_read(q: &Queue, b: &Buffer, offset: usize, dst: HostPtr, wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: the dyn layer checked the range against the buffer; `dst` is
    // valid for the whole command by the promise of `HostPtr::new`.
    event(unsafe {
        cq::enqueue_read_buffer(
            q.cl.get(),
            mem(b),
            CL_FALSE,
            offset,
            dst.len(),
            dst.as_ptr().cast(),
            n,
            w,
        )
    })
}

pub(crate) fn enqueue_write(q: &Queue, b: &Buffer, offset: usize, src: HostPtr, wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: as in `enqueue_read`; the source is only read.
    event(unsafe {
        cq::enqueue_write_buffer(
            q.cl.get(),
            mem(b),
            CL_FALSE,
            offset,
            src.len(),
            src.as_ptr().cast(),
            n,
            w,
        )
    })
}

pub(crate) fn enqueue_copy(
    q: &Queue,
    src: &Buffer,
    src_offset: usize,
    dst: &Buffer,
    dst_offset: usize,
    size: usize,
    wait: &[&Event],
) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: both ranges were checked by the dyn layer and do not overlap.
    event(unsafe { cq::enqueue_copy_buffer(q.cl.get(), mem(src), mem(dst), src_offset, dst_offset, size, n, w) })
}

pub(crate) fn enqueue_copy_rect(
    q: &Queue,
    src: &Buffer,
    dst: &Buffer,
    rect: &RectCopy,
    wait: &[&Event],
) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: the dyn layer made the pitches explicit and checked both boxes
    // against their buffers; the arrays live across the call.
    event(unsafe {
        cq::enqueue_copy_buffer_rect(
            q.cl.get(),
            mem(src),
            mem(dst),
            rect.src.origin.as_ptr(),
            rect.dst.origin.as_ptr(),
            rect.extent.as_ptr(),
            rect.src.row_pitch,
            rect.src.slice_pitch,
            rect.dst.row_pitch,
            rect.dst.slice_pitch,
            n,
            w,
        )
    })
}

pub(crate) fn enqueue_read_rect(
    q: &Queue,
    b: &Buffer,
    rect: &RectCopy,
    dst: HostPtr,
    wait: &[&Event],
) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: the boxes were checked against the buffer and `dst`, which is
    // valid for the command by the promise of `HostPtr::new`.
    event(unsafe {
        cq::enqueue_read_buffer_rect(
            q.cl.get(),
            mem(b),
            CL_FALSE,
            rect.src.origin.as_ptr(),
            rect.dst.origin.as_ptr(),
            rect.extent.as_ptr(),
            rect.src.row_pitch,
            rect.src.slice_pitch,
            rect.dst.row_pitch,
            rect.dst.slice_pitch,
            dst.as_ptr().cast(),
            n,
            w,
        )
    })
}

pub(crate) fn enqueue_write_rect(
    q: &Queue,
    b: &Buffer,
    rect: &RectCopy,
    src: HostPtr,
    wait: &[&Event],
) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: as in `enqueue_read_rect`; the host side is the source here.
    event(unsafe {
        cq::enqueue_write_buffer_rect(
            q.cl.get(),
            mem(b),
            CL_FALSE,
            rect.dst.origin.as_ptr(),
            rect.src.origin.as_ptr(),
            rect.extent.as_ptr(),
            rect.dst.row_pitch,
            rect.dst.slice_pitch,
            rect.src.row_pitch,
            rect.src.slice_pitch,
            src.as_ptr().cast(),
            n,
            w,
        )
    })
}

/// The pattern repeated to fill at most `cap` bytes (a whole number of
/// repetitions, at least one).
pub(crate) fn repeat_pattern(pattern: &[u8], size: usize, cap: usize) -> Vec<u8> {
    let reps = (cap / pattern.len()).clamp(1, size / pattern.len());
    pattern.repeat(reps)
}

/// Bytes of the pattern seed for fills whose pattern OpenCL cannot take.
const FILL_SEED: usize = 64 * 1024;

/// Fills a buffer range. Powers of two up to 128 bytes go to
/// `clEnqueueFillBuffer`; other lengths (`FILL_ANY_PATTERN`) are built from
/// a seed buffer holding whole repetitions, copied in, then doubled in place
/// with non-overlapping `clEnqueueCopyBuffer`s on the same in-order queue.
pub(crate) fn enqueue_fill(
    q: &Queue,
    b: &Buffer,
    offset: usize,
    size: usize,
    pattern: &[u8],
    wait: &[&Event],
) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    if pattern.len().is_power_of_two() {
        // SAFETY: range and pattern were checked by the dyn layer; OpenCL
        // copies the pattern before the call returns.
        return event(unsafe {
            cq::enqueue_fill_buffer(
                q.cl.get(),
                mem(b),
                pattern.as_ptr().cast(),
                pattern.len(),
                offset,
                size,
                n,
                w,
            )
        });
    }
    let seed = repeat_pattern(pattern, size, FILL_SEED);
    // SAFETY: COPY_HOST_PTR reads `seed` during the call only.
    let raw = check(unsafe {
        clmem::create_buffer(
            check3(q.cl.context())?,
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
            seed.len(),
            seed.as_ptr() as *mut c_void,
        )
    })?;
    let tmp = ClBuffer::<u8>::new(raw);
    // SAFETY: `seed.len() <= size`, inside the checked range; the temporary
    // buffer stays alive in OpenCL until the copy using it completes.
    let mut last =
        event(unsafe { cq::enqueue_copy_buffer(q.cl.get(), tmp.get(), mem(b), 0, offset, seed.len(), n, w) })?;
    let mut done = seed.len();
    while done < size {
        let len = done.min(size - done);
        // SAFETY: `[offset, offset + done)` and `[offset + done, offset +
        // done + len)` are disjoint and inside the checked range; the
        // in-order queue runs the copies after the ones before.
        last = event(unsafe {
            cq::enqueue_copy_buffer(q.cl.get(), mem(b), mem(b), offset, offset + done, len, 0, ptr::null())
        })?;
        done += len;
    }
    Ok(last)
}

pub(crate) fn enqueue_map(
    q: &Queue,
    b: &Buffer,
    flags: MapFlags,
    offset: usize,
    size: usize,
    wait: &[&Event],
) -> Result<(Event, HostPtr)> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    let mut out: cl_mem = ptr::null_mut();
    // SAFETY: range checked by the dyn layer; the mapped pointer is written
    // into `out` before the call returns.
    let ev = event(unsafe {
        cq::enqueue_map_buffer(
            q.cl.get(),
            mem(b),
            CL_FALSE as cl_bool,
            conv::map_flags(flags),
            offset,
            size,
            &mut out,
            n,
            w,
        )
    })?;
    if out.is_null() {
        return Err(Error::CommandFailed("clEnqueueMapBuffer returned no pointer".into()));
    }
    // SAFETY: OpenCL keeps the mapped region valid until it is unmapped, and
    // the caller may use it only after the map event completes.
    Ok((ev, unsafe { HostPtr::new(out.cast(), size) }))
}

pub(crate) fn enqueue_unmap(q: &Queue, b: &Buffer, mapped: HostPtr, wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: the dyn layer checked that `mapped` is a live mapping of `b`.
    event(unsafe { cq::enqueue_unmap_mem_object(q.cl.get(), mem(b), mapped.as_ptr().cast(), n, w) })
}

pub(crate) fn enqueue_barrier(q: &Queue, wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: the wait list holds live events of the queue's context.
    event(unsafe { cq::enqueue_barrier_with_wait_list(q.cl.get(), n, w) })
}

/// A marker: completes when everything before it on the queue (and `wait`) has.
pub(crate) fn enqueue_marker(q: &Queue, wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    // SAFETY: as in `enqueue_barrier`.
    event(unsafe { cq::enqueue_marker_with_wait_list(q.cl.get(), n, w) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_is_whole_repetitions_within_bounds() {
        let s = repeat_pattern(&[1, 2, 3], 30, 8);
        assert_eq!(s, vec![1, 2, 3, 1, 2, 3]);
        let s = repeat_pattern(&[1, 2, 3], 6, 1 << 20);
        assert_eq!(s.len(), 6);
        let s = repeat_pattern(&[9; 5], 5, 2);
        assert_eq!(s.len(), 5, "at least one repetition");
    }
}
