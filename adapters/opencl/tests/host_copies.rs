//! Small USM copies made on the calling thread (`queue::run_on_idle`), on
//! every OpenCL device with device USM: where the context's memory is the
//! host's (CPU devices with host-unified memory) and the queue is idle, a
//! small copy's event is an OpenCL user event, already complete, and the
//! bytes are there; a copy behind a pending command, behind an event not
//! yet complete, larger than the limit, or on a profiling queue is an
//! enqueued command, ordered as one.

mod common;

use common::{pattern, runtime};
use ur_api::{
    DeviceCaps, DeviceType, EventId, EventStatus, HostPtr, MemRef, NativeHandle, NativeOf, QueueProps, Runtime,
    UsmCaps, UsmDesc, UsmKind,
};

/// `CL_COMMAND_USER`: the command type of a user event.
const CL_COMMAND_USER: u32 = 0x1204;

/// The OpenCL command type of an event.
fn command_type(rt: &Runtime, e: EventId) -> u32 {
    let raw = rt.native_handle(NativeOf::Event(e)).unwrap().raw();
    let info = cl3::event::get_event_info(raw as cl3::types::cl_event, cl3::event::CL_EVENT_COMMAND_TYPE).unwrap();
    u32::from(info)
}

#[test]
fn small_copies_on_idle_host_memory_queues_run_on_the_caller() {
    let Some(rt) = runtime("host_copies") else { return };
    let mut tested = 0;
    for d in rt.all_devices() {
        let info = rt.device_info(d).unwrap();
        if !info.usm.contains(UsmCaps::DEVICE) {
            eprintln!("{}: no device USM, not tested", info.name);
            continue;
        }
        tested += 1;
        let host_memory = info.device_type == DeviceType::Cpu && info.host_unified_memory;
        eprintln!("{}: host memory {host_memory}", info.name);
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let n = 1 << 20;
        let (a, b) = (
            rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, n).on(d)).unwrap(),
            rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, n).on(d)).unwrap(),
        );
        let data = pattern(n, 5);
        // SAFETY: `data` outlives the copy, waited for below.
        let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), n) };

        // Behind a pending 1 MiB copy: enqueued, and it sees that copy's bytes.
        let big = rt
            .enqueue_usm_copy(q, MemRef::Usm(a), MemRef::Host(src), n, &[])
            .unwrap();
        let small = rt.enqueue_usm_copy(q, MemRef::Usm(b), MemRef::Usm(a), 8, &[]).unwrap();
        assert_ne!(
            command_type(&rt, small),
            CL_COMMAND_USER,
            "{}: queue not idle",
            info.name
        );
        rt.wait(&[small]).unwrap();
        let mut back = vec![0u8; 8];
        rt.usm_read(q, b, &mut back).unwrap();
        assert_eq!(back, data[..8], "{}: ordered after the pending copy", info.name);

        // Idle now (everything waited for): on the caller where memory is the host's.
        let idle = rt
            .enqueue_usm_copy(
                q,
                MemRef::Usm(b.offset(64)),
                MemRef::Usm(a.offset(100)),
                16,
                &[big, small],
            )
            .unwrap();
        let on_caller = command_type(&rt, idle) == CL_COMMAND_USER;
        assert_eq!(on_caller, host_memory, "{}: idle copy on the caller", info.name);
        if on_caller {
            assert_eq!(rt.event_status(idle).unwrap(), EventStatus::Complete);
        }
        rt.wait(&[idle]).unwrap();
        let mut back = vec![0u8; 16];
        rt.usm_read(q, b.offset(64), &mut back).unwrap();
        assert_eq!(back, data[100..116], "{}", info.name);

        // Over the limit: a command.
        let large = rt.enqueue_usm_copy(q, MemRef::Usm(b), MemRef::Usm(a), n, &[]).unwrap();
        assert_ne!(command_type(&rt, large), CL_COMMAND_USER, "{}: 1 MiB", info.name);
        rt.wait(&[large]).unwrap();

        // Behind a user event not yet complete: a command it gates.
        let raw_ctx = rt.native_handle(NativeOf::Context(ctx)).unwrap().raw();
        let user = cl3::event::create_user_event(raw_ctx as cl3::types::cl_context).unwrap();
        // SAFETY: a live event of that context; owned: its reference passes on.
        let gate = rt
            .create_event_from_native(ctx, unsafe { NativeHandle::new(user as u64) }, true)
            .unwrap();
        let gated = rt
            .enqueue_usm_copy(q, MemRef::Usm(b), MemRef::Usm(a.offset(8)), 4, &[gate])
            .unwrap();
        assert_ne!(command_type(&rt, gated), CL_COMMAND_USER, "{}: gated", info.name);
        rt.flush(q).unwrap();
        assert_ne!(rt.event_status(gated).unwrap(), EventStatus::Complete);
        cl3::event::set_user_event_status(user, cl3::event::CL_COMPLETE).unwrap();
        rt.wait(&[gated]).unwrap();
        let mut back = vec![0u8; 4];
        rt.usm_read(q, b, &mut back).unwrap();
        assert_eq!(back, data[8..12], "{}", info.name);

        // A profiling queue's copies have profiling times: commands.
        if info.caps.contains(DeviceCaps::PROFILING) {
            let pq = rt.create_queue(ctx, d, &QueueProps { profiling: true }).unwrap();
            let p = rt.enqueue_usm_copy(pq, MemRef::Usm(b), MemRef::Usm(a), 4, &[]).unwrap();
            assert_ne!(command_type(&rt, p), CL_COMMAND_USER, "{}: profiling", info.name);
            rt.wait(&[p]).unwrap();
            rt.event_profiling(p).unwrap();
            rt.release_event(p).unwrap();
            rt.release_queue(pq).unwrap();
        }

        for e in [big, small, idle, large, gate, gated] {
            rt.release_event(e).unwrap();
        }
        rt.usm_free(ctx, a).unwrap();
        rt.usm_free(ctx, b).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
    }
    if tested == 0 {
        common::skip("host_copies", "no OpenCL device with device USM");
    }
}
