//! `finish` on every OpenCL device: it skips `clFinish` only on a queue
//! the adapter made and whose every command is known complete; a queue
//! adopted from a native handle may hold commands the caller enqueued
//! directly, and finishing it waits for them, on rusticl too (whose own
//! `clFinish` returns before a non-blocking read's bytes arrive: replace
//! `rt.finish(aq)` below with `clFinish` on the raw queue and rusticl fails).
//! `queue_empty` tells a queue holding a command gated by an unset user
//! event from one whose commands have all ended.

mod common;

use common::{pattern, runtime};
use ur_api::{BufferDesc, EventStatus, HostPtr, NativeHandle, NativeOf, QueueProps};

/// Large enough that a copy is still running when `finish` is called.
const SIZE: usize = 64 << 20;

#[test]
fn finish_waits_for_every_command_of_the_queue() {
    let Some(rt) = runtime("finish") else { return };
    let data = pattern(SIZE, 7);
    for d in rt.all_devices() {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(&[d]).unwrap();

        // The adapter's own queue: a write not yet waited for is finished.
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let b = rt.create_buffer(ctx, &BufferDesc::new(SIZE), None).unwrap();
        // SAFETY: `data` outlives the write, finished below.
        let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), SIZE) };
        let w = rt.enqueue_write(q, b, 0, src, &[]).unwrap();
        rt.finish(q).unwrap();
        assert_eq!(rt.event_status(w).unwrap(), EventStatus::Complete, "{name}");
        // Everything known complete now: finishing again is immediate.
        rt.finish(q).unwrap();

        // An adopted queue: a read enqueued on it directly is finished too.
        let raw_ctx = rt.native_handle(NativeOf::Context(ctx)).unwrap().raw() as cl3::types::cl_context;
        let raw_dev = rt.native_handle(NativeOf::Device(d)).unwrap().raw() as cl3::types::cl_device_id;
        #[allow(deprecated)] // reason: the 1.x entry point every device has; enough for a test queue.
        // SAFETY: a live context and one of its devices.
        let raw_q = unsafe { cl3::command_queue::create_command_queue(raw_ctx, raw_dev, 0) }.unwrap();
        // SAFETY: a live queue of the context; owned: its reference passes on.
        let aq = rt
            .create_queue_from_native(ctx, d, unsafe { NativeHandle::new(raw_q as u64) }, true)
            .unwrap();
        // SAFETY: a live context; no host pointer.
        let mem =
            unsafe { cl3::memory::create_buffer(raw_ctx, cl3::memory::CL_MEM_READ_WRITE, SIZE, std::ptr::null_mut()) }
                .unwrap();
        // SAFETY: `data` outlives the blocking write; `mem` holds SIZE bytes.
        let w0 = unsafe {
            cl3::command_queue::enqueue_write_buffer(raw_q, mem, 1, 0, SIZE, data.as_ptr().cast(), 0, std::ptr::null())
        }
        .unwrap();
        let mut out = vec![0u8; SIZE];
        // SAFETY: `out` holds SIZE bytes and outlives the read (waited for
        // below, before anything else looks at the outcome).
        let ev = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                raw_q,
                mem,
                0,
                0,
                SIZE,
                out.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
            )
        }
        .unwrap();
        cl3::command_queue::flush(raw_q).unwrap();
        rt.finish(aq).unwrap();
        // The bytes, not the event's status: rusticl updates that lazily.
        let arrived = out == data;
        cl3::event::wait_for_events(&[ev]).unwrap();
        assert!(arrived, "{name}: a native read on an adopted queue ended with finish");

        for e in [w0, ev] {
            // SAFETY: events the commands returned, released once.
            unsafe { cl3::event::release_event(e) }.unwrap();
        }
        // SAFETY: made above, no command uses it any more.
        unsafe { cl3::memory::release_mem_object(mem) }.unwrap();
        rt.release_event(w).unwrap();
        rt.release_buffer(b).unwrap();
        rt.release_queue(aq).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
    }
}

#[test]
fn queue_empty_tells_pending_from_ended_commands() {
    let Some(rt) = runtime("queue_empty") else { return };
    for d in rt.all_devices() {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        assert!(rt.queue_empty(q).unwrap(), "{name}: a new queue");
        // A write gated by a user event that is not set yet.
        let raw_ctx = rt.native_handle(NativeOf::Context(ctx)).unwrap().raw();
        let user = cl3::event::create_user_event(raw_ctx as cl3::types::cl_context).unwrap();
        // SAFETY: a live event of the context; owned: its reference passes on.
        let gate = rt
            .create_event_from_native(ctx, unsafe { NativeHandle::new(user as u64) }, true)
            .unwrap();
        let data = pattern(4096, 3);
        let b = rt.create_buffer(ctx, &BufferDesc::new(data.len()), None).unwrap();
        // SAFETY: `data` outlives the write, waited for below.
        let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
        let w = rt.enqueue_write(q, b, 0, src, &[gate]).unwrap();
        assert!(!rt.queue_empty(q).unwrap(), "{name}: a command waits for the gate");
        assert!(!rt.queue_empty(q).unwrap(), "{name}: and still does");
        cl3::event::set_user_event_status(user, cl3::event::CL_COMPLETE).unwrap();
        rt.wait(&[w]).unwrap();
        assert!(rt.queue_empty(q).unwrap(), "{name}: every command ended");
        for e in [gate, w] {
            rt.release_event(e).unwrap();
        }
        rt.release_buffer(b).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
    }
}
