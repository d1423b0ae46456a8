//! Events adopted from native `cl_event`s through the dyn layer
//! (`Runtime::create_event_from_native`): on every OpenCL device, a
//! command's event of one queue, adopted unflushed, orders a copy on
//! another queue, is waited for, reports its status and context, and is
//! released on its own; its backend queue (`NativeOf::EventQueue`) is the
//! command's, as is the command event's; another context's event is
//! refused. A user event (no queue), adopted owned, gates a command until
//! it is set, and has no backend queue to report.

mod common;

use common::{pattern, runtime};
use ur_api::{BufferDesc, Error, EventStatus, HostPtr, NativeHandle, NativeOf, QueueProps};

#[test]
fn adopted_events_order_wait_and_release() {
    let Some(rt) = runtime("native_events") else { return };
    for d in rt.all_devices() {
        let ctx = rt.create_context(&[d]).unwrap();
        let q1 = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let q2 = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let n = 1 << 16;
        let data = pattern(n, 3);
        let a = rt.create_buffer(ctx, &BufferDesc::new(n), None).unwrap();
        let b = rt.create_buffer(ctx, &BufferDesc::new(n), None).unwrap();
        // SAFETY: `data` outlives the write, waited for below.
        let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), n) };
        let w = rt.enqueue_write(q1, a, 0, src, &[]).unwrap();
        let native = rt.native_handle(NativeOf::Event(w)).unwrap();
        let adopted = rt.create_event_from_native(ctx, native, false).unwrap();
        assert_ne!(adopted, w);
        assert_eq!(rt.event_context(adopted).unwrap(), ctx);
        assert_eq!(rt.native_handle(NativeOf::Event(adopted)).unwrap(), native);
        let q1_native = rt.native_handle(NativeOf::Queue(q1)).unwrap();
        assert_eq!(rt.native_handle(NativeOf::EventQueue(w)).unwrap(), q1_native);
        assert_eq!(rt.native_handle(NativeOf::EventQueue(adopted)).unwrap(), q1_native);
        assert!(matches!(
            rt.event_profiling(adopted),
            Err(Error::ProfilingUnavailable(_))
        ));
        // q1 was never flushed: the adopted event's queue is flushed first.
        let c = rt.enqueue_copy(q2, a, 0, b, 0, n, &[adopted]).unwrap();
        rt.wait(&[adopted, c]).unwrap();
        assert_eq!(rt.event_status(adopted).unwrap(), EventStatus::Complete);
        // The command's own event is released first: the adopted one holds
        // its own reference.
        rt.release_event(w).unwrap();
        assert_eq!(rt.event_status(adopted).unwrap(), EventStatus::Complete);
        let other = rt.create_context(&[d]).unwrap();
        assert!(matches!(
            rt.create_event_from_native(other, native, false),
            Err(Error::WrongContext { .. })
        ));
        rt.release_event(adopted).unwrap();
        assert!(matches!(rt.event_status(adopted), Err(Error::InvalidHandle { .. })));
        rt.release_event(c).unwrap();
        let mut back = vec![0u8; n];
        rt.read(q2, b, 0, &mut back).unwrap();
        assert!(back == data);
        for q in [q1, q2] {
            rt.release_queue(q).unwrap();
        }
        for buf in [a, b] {
            rt.release_buffer(buf).unwrap();
        }
        rt.release_context(other).unwrap();
        rt.release_context(ctx).unwrap();
    }
}

#[test]
fn adopted_user_events_have_no_queue_and_gate_commands() {
    let Some(rt) = runtime("native_user_events") else {
        return;
    };
    for d in rt.all_devices() {
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let raw_ctx = rt.native_handle(NativeOf::Context(ctx)).unwrap().raw();
        let user = cl3::event::create_user_event(raw_ctx as cl3::types::cl_context).unwrap();
        // Owned: the reference `create_user_event` gave passes to the event.
        // SAFETY: a live event of that context.
        let adopted = rt
            .create_event_from_native(ctx, unsafe { NativeHandle::new(user as u64) }, true)
            .unwrap();
        assert_ne!(rt.event_status(adopted).unwrap(), EventStatus::Complete);
        assert!(matches!(
            rt.native_handle(NativeOf::EventQueue(adopted)),
            Err(Error::Unsupported { .. })
        ));
        let n = 4096;
        let data = pattern(n, 9);
        let b = rt.create_buffer(ctx, &BufferDesc::new(n), None).unwrap();
        // SAFETY: `data` outlives the write, waited for below.
        let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), n) };
        let w = rt.enqueue_write(q, b, 0, src, &[adopted]).unwrap();
        rt.flush(q).unwrap();
        assert_ne!(
            rt.event_status(w).unwrap(),
            EventStatus::Complete,
            "gated by the user event"
        );
        cl3::event::set_user_event_status(user, cl3::event::CL_COMPLETE).unwrap();
        rt.wait(&[adopted, w]).unwrap();
        assert_eq!(rt.event_status(adopted).unwrap(), EventStatus::Complete);
        for e in [adopted, w] {
            rt.release_event(e).unwrap();
        }
        let mut back = vec![0u8; n];
        rt.read(q, b, 0, &mut back).unwrap();
        assert!(back == data);
        rt.release_buffer(b).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
    }
}
