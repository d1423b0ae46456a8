//! Behaviours UR's conformance suite checks, called through this library's
//! dispatch table on the first device of every platform (the host-only
//! native platform is listed too, `UR_RUST_HOST_PLATFORMS=1`, so the
//! native adapter and each OpenCL runtime present answer alike):
//! placeholder events from native handle 0, event callbacks, fills with
//! any power-of-two pattern and their size checks, partitions of read-only
//! buffers and out-of-range regions, USM pointer queries, memory objects
//! of another context, oversized buffers of multi-device contexts, and
//! out-of-order queues.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ur_adapter_rust::sys::*;

mod capi;
use capi::{ok, Plat};

fn t() -> &'static ur_dditable_t {
    capi::table()
}

/// Every platform with a device, host-only ones included (every test of
/// this binary comes through here).
fn platforms() -> Vec<Plat> {
    let out = capi::platforms_with_host();
    assert!(
        out.iter().any(|p| p.backend == UR_BACKEND_NATIVE_CPU),
        "the native platform is listed with UR_RUST_HOST_PLATFORMS=1"
    );
    let names: Vec<_> = out
        .iter()
        .map(|p| format!("{} ({} devices)", p.name, p.devices.len()))
        .collect();
    eprintln!("platforms: {names:?}");
    out
}

/// A context over `devices` and a queue on the first.
fn context_queue(devices: &[ur_device_handle_t]) -> (ur_context_handle_t, ur_queue_handle_t) {
    let t = t();
    let (mut c, mut q) = (null_mut(), null_mut());
    // SAFETY: live out-pointers, handles the library returned.
    unsafe {
        ok(
            t.Context.pfnCreate.unwrap()(devices.len() as u32, devices.as_ptr(), null(), &mut c),
            "urContextCreate",
        );
        ok(
            t.Queue.pfnCreate.unwrap()(c, devices[0], null(), &mut q),
            "urQueueCreate",
        );
    }
    (c, q)
}

fn buffer(c: ur_context_handle_t, flags: ur_mem_flags_t, size: usize) -> ur_mem_handle_t {
    let mut b = null_mut();
    // SAFETY: a live out-pointer, a live context.
    ok(
        unsafe { t().Mem.pfnBufferCreate.unwrap()(c, flags, size, null(), &mut b) },
        "urMemBufferCreate",
    );
    b
}

fn release(c: ur_context_handle_t, q: ur_queue_handle_t) {
    // SAFETY: handles the library returned, released once.
    unsafe {
        ok(t().Queue.pfnRelease.unwrap()(q), "urQueueRelease");
        ok(t().Context.pfnRelease.unwrap()(c), "urContextRelease");
    }
}

fn event_u32(e: ur_event_handle_t, prop: ur_event_info_t) -> (ur_result_t, u32) {
    let mut v = 0u32;
    // SAFETY: a 4-byte output for a 4-byte property.
    let r = unsafe { t().Event.pfnGetInfo.unwrap()(e, prop, 4, (&mut v as *mut u32).cast(), null_mut()) };
    (r, v)
}

#[test]
fn native_handle_zero_makes_a_complete_event() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        // SAFETY: live out-pointers and host arrays of the sizes given;
        // handles the library returned.
        unsafe {
            let mut e = null_mut();
            ok(
                t.Event.pfnCreateWithNativeHandle.unwrap()(0, c, null(), &mut e),
                &format!("{}: urEventCreateWithNativeHandle(0)", p.name),
            );
            assert_eq!(
                event_u32(e, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS),
                (UR_RESULT_SUCCESS, UR_EVENT_STATUS_COMPLETE)
            );
            let mut ctx = null_mut::<ur_context_handle_t_>();
            ok(
                t.Event.pfnGetInfo.unwrap()(
                    e,
                    UR_EVENT_INFO_CONTEXT,
                    size_of::<ur_context_handle_t>(),
                    (&mut ctx as *mut ur_context_handle_t).cast(),
                    null_mut(),
                ),
                "event context",
            );
            assert_eq!(ctx, c, "{}", p.name);
            ok(t.Event.pfnRetain.unwrap()(e), "urEventRetain");
            assert_eq!(event_u32(e, UR_EVENT_INFO_REFERENCE_COUNT), (UR_RESULT_SUCCESS, 2));
            ok(t.Event.pfnRelease.unwrap()(e), "urEventRelease");
            ok(t.Event.pfnWait.unwrap()(1, &e), "urEventWait on a native-0 event");
            // In a command's wait list it orders nothing.
            let b = buffer(c, UR_MEM_FLAG_READ_WRITE, 64);
            let data = [7u8; 64];
            ok(
                t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, true, 0, 64, data.as_ptr().cast(), 1, &e, null_mut()),
                &format!("{}: a write after a native-0 event", p.name),
            );
            let mut ts = 0u64;
            assert_eq!(
                t.Event.pfnGetProfilingInfo.unwrap()(
                    e,
                    UR_PROFILING_INFO_COMMAND_END,
                    8,
                    (&mut ts as *mut u64).cast(),
                    null_mut()
                ),
                UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE
            );
            ok(t.Event.pfnRelease.unwrap()(e), "last urEventRelease");
            assert_eq!(
                event_u32(e, UR_EVENT_INFO_REFERENCE_COUNT).0,
                UR_RESULT_ERROR_INVALID_EVENT
            );
            // Other native handles name backend events: the native adapter
            // has none to adopt (OpenCL's are adopted: tests/native_events.rs).
            let mut other = null_mut();
            if p.backend != UR_BACKEND_OPENCL {
                assert_eq!(
                    t.Event.pfnCreateWithNativeHandle.unwrap()(0x1000, c, null(), &mut other),
                    UR_RESULT_ERROR_UNSUPPORTED_FEATURE
                );
            }
            assert_eq!(
                t.Event.pfnCreateWithNativeHandle.unwrap()(0, c, null(), null_mut()),
                UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            assert_eq!(
                t.Event.pfnCreateWithNativeHandle.unwrap()(0, null_mut(), null(), &mut other),
                UR_RESULT_ERROR_INVALID_NULL_HANDLE
            );
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
        }
        release(c, q);
    }
}

/// What a callback saw: how often it ran, and the status it read of its
/// event from inside the callback.
#[derive(Default)]
struct Seen {
    calls: AtomicU32,
    status: AtomicU32,
    given: AtomicU32,
}

unsafe extern "C" fn on_event(e: ur_event_handle_t, status: ur_execution_info_t, data: *mut c_void) {
    // SAFETY: `data` is the test's `Seen`, alive until the test saw the call.
    let seen = unsafe { &*data.cast::<Seen>() };
    seen.given.store(status, Ordering::SeqCst);
    seen.status
        .store(event_u32(e, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS).1, Ordering::SeqCst);
    seen.calls.fetch_add(1, Ordering::SeqCst);
}

fn wait_for(seen: &Seen, calls: u32, platform: &str) {
    let start = Instant::now();
    while seen.calls.load(Ordering::SeqCst) < calls {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{platform}: the callback did not run"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn event_callbacks_run_once_the_event_is_complete() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        let b = buffer(c, UR_MEM_FLAG_READ_WRITE, 1 << 20);
        let data = vec![3u8; 1 << 20];
        // SAFETY: live out-pointers; `data` outlives the write (waited for
        // through the callback and the queue finish); the `Seen`s outlive
        // their callbacks (waited for below).
        unsafe {
            let mut e = null_mut();
            ok(
                t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, false, 0, 1 << 20, data.as_ptr().cast(), 0, null(), &mut e),
                "write",
            );
            let (done, running, submitted) = (Seen::default(), Seen::default(), Seen::default());
            let done_p = (&done as *const Seen).cast_mut().cast();
            let running_p = (&running as *const Seen).cast_mut().cast();
            let submitted_p = (&submitted as *const Seen).cast_mut().cast();
            ok(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_COMPLETE, Some(on_event), done_p),
                &format!("{}: urEventSetCallback(COMPLETE)", p.name),
            );
            ok(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_RUNNING, Some(on_event), running_p),
                "urEventSetCallback(RUNNING)",
            );
            ok(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_SUBMITTED, Some(on_event), submitted_p),
                "urEventSetCallback(SUBMITTED)",
            );
            assert_eq!(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_QUEUED, Some(on_event), done_p),
                UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION
            );
            assert_eq!(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_QUEUED + 1, Some(on_event), done_p),
                UR_RESULT_ERROR_INVALID_ENUMERATION
            );
            assert_eq!(
                t.Event.pfnSetCallback.unwrap()(e, UR_EXECUTION_INFO_COMPLETE, None, done_p),
                UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            // Released by the caller before completion: the callbacks still
            // get a live handle.
            ok(t.Event.pfnRelease.unwrap()(e), "urEventRelease");
            // Each callback is told the status it was registered for (UR's
            // suite tells them apart by it), once the command is past it.
            for (s, asked) in [
                (&done, UR_EXECUTION_INFO_COMPLETE),
                (&running, UR_EXECUTION_INFO_RUNNING),
                (&submitted, UR_EXECUTION_INFO_SUBMITTED),
            ] {
                wait_for(s, 1, &p.name);
                assert_eq!(s.given.load(Ordering::SeqCst), asked, "{}", p.name);
                assert_eq!(s.status.load(Ordering::SeqCst), UR_EVENT_STATUS_COMPLETE, "{}", p.name);
            }
            // A placeholder event's callback runs too.
            let mut z = null_mut();
            ok(
                t.Event.pfnCreateWithNativeHandle.unwrap()(0, c, null(), &mut z),
                "native 0",
            );
            let zs = Seen::default();
            ok(
                t.Event.pfnSetCallback.unwrap()(
                    z,
                    UR_EXECUTION_INFO_COMPLETE,
                    Some(on_event),
                    (&zs as *const Seen).cast_mut().cast(),
                ),
                "callback on a native-0 event",
            );
            ok(t.Event.pfnRelease.unwrap()(z), "release");
            wait_for(&zs, 1, &p.name);
            // Each ran exactly once.
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(done.calls.load(Ordering::SeqCst), 1);
            assert_eq!(zs.calls.load(Ordering::SeqCst), 1);
            // The callbacks' references are given back: the handle is gone.
            assert_eq!(
                event_u32(e, UR_EVENT_INFO_REFERENCE_COUNT).0,
                UR_RESULT_ERROR_INVALID_EVENT
            );
            ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
        }
        release(c, q);
    }
}

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 1) as u8).collect()
}

#[test]
fn fills_replicate_their_pattern_exactly() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        // Large enough for several replicated pieces (1 MiB each).
        const N: usize = 3 << 20;
        let b = buffer(c, UR_MEM_FLAG_READ_WRITE, N);
        let mut back = vec![0u8; N];
        // SAFETY: live host arrays of the sizes given; handles the library
        // returned; blocking reads after the fills.
        unsafe {
            let zeros = vec![0u8; N];
            ok(
                t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, true, 0, N, zeros.as_ptr().cast(), 0, null(), null_mut()),
                "clear",
            );
            for (size, offset, len) in [(256usize, 512usize, 1024usize), (512, 4096, N - 8192), (4, 0, 64)] {
                let pat = pattern(size);
                let mut e = null_mut();
                ok(
                    t.Enqueue.pfnMemBufferFill.unwrap()(
                        q,
                        b,
                        pat.as_ptr().cast(),
                        size,
                        offset,
                        len,
                        0,
                        null(),
                        &mut e,
                    ),
                    &format!("{}: fill with a {size}-byte pattern", p.name),
                );
                drop(pat); // the library keeps its own copy
                ok(
                    t.Enqueue.pfnMemBufferRead.unwrap()(q, b, true, 0, N, back.as_mut_ptr().cast(), 1, &e, null_mut()),
                    "read back",
                );
                ok(t.Event.pfnRelease.unwrap()(e), "urEventRelease");
                let pat = pattern(size);
                for (i, v) in back[offset..offset + len].iter().enumerate() {
                    assert_eq!(
                        *v,
                        pat[i % size],
                        "{}: byte {} of a {size}-byte fill",
                        p.name,
                        offset + i
                    );
                }
                if size == 256 {
                    assert!(back[..offset].iter().all(|&v| v == 0));
                    assert!(back[offset + len..].iter().all(|&v| v == 0));
                }
            }
            // USM, where the device has it.
            let mut m = null_mut();
            let r = t.USM.pfnDeviceAlloc.unwrap()(c, p.devices[0], null(), null_mut(), 8192, &mut m);
            if r != UR_RESULT_SUCCESS {
                eprintln!("{}: no USM device allocation ({r}): USM fill not checked", p.name);
            } else {
                // 8190 = 819 x 10: a pattern that is not a power of two (UR's
                // suite fills 1000 bytes with a 10-byte one).
                for (size, len) in [(256usize, 8192usize), (1024, 8192), (10, 8190), (3, 8190)] {
                    let pat = pattern(size);
                    ok(
                        t.Enqueue.pfnUSMFill.unwrap()(q, m, size, pat.as_ptr().cast(), len, 0, null(), null_mut()),
                        &format!("{}: USM fill with a {size}-byte pattern", p.name),
                    );
                    let mut host = vec![0u8; 8192];
                    ok(
                        t.Enqueue.pfnUSMMemcpy.unwrap()(
                            q,
                            true,
                            host.as_mut_ptr().cast(),
                            m,
                            8192,
                            0,
                            null(),
                            null_mut(),
                        ),
                        "USM read back",
                    );
                    for (i, v) in host[..len].iter().enumerate() {
                        assert_eq!(*v, pat[i % size], "{}: USM byte {i}", p.name);
                    }
                }
                // A 10-byte pattern over several replicated pieces (1 MiB
                // each): every piece starts on a pattern boundary.
                let big = (3 << 20) / 10 * 10;
                let mut mb = null_mut();
                ok(
                    t.USM.pfnDeviceAlloc.unwrap()(c, p.devices[0], null(), null_mut(), big, &mut mb),
                    "a 3 MiB USM allocation",
                );
                let pat = pattern(10);
                ok(
                    t.Enqueue.pfnUSMFill.unwrap()(q, mb, 10, pat.as_ptr().cast(), big, 0, null(), null_mut()),
                    &format!("{}: a {big}-byte USM fill with a 10-byte pattern", p.name),
                );
                let mut host = vec![0u8; big];
                ok(
                    t.Enqueue.pfnUSMMemcpy.unwrap()(q, true, host.as_mut_ptr().cast(), mb, big, 0, null(), null_mut()),
                    "USM read back",
                );
                if let Some(i) = (0..big).find(|&i| host[i] != pat[i % 10]) {
                    panic!("{}: byte {i} of a {big}-byte fill with a 10-byte pattern", p.name);
                }
                ok(t.USM.pfnFree.unwrap()(c, mb), "urUSMFree");
                // Past the allocation: refused before anything is written.
                let pat = pattern(256);
                assert_eq!(
                    t.Enqueue.pfnUSMFill.unwrap()(q, m, 256, pat.as_ptr().cast(), 16384, 0, null(), null_mut()),
                    UR_RESULT_ERROR_INVALID_SIZE
                );
                ok(t.USM.pfnFree.unwrap()(c, m), "urUSMFree");
            }
            ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
        }
        release(c, q);
    }
}

#[test]
fn fill_sizes_are_checked() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        let b = buffer(c, UR_MEM_FLAG_READ_WRITE, 4096);
        let pat = [1u8; 512];
        // SAFETY: the pattern holds 512 bytes; handles the library returned.
        unsafe {
            let fill = |size, offset, len| {
                t.Enqueue.pfnMemBufferFill.unwrap()(q, b, pat.as_ptr().cast(), size, offset, len, 0, null(), null_mut())
            };
            for (size, offset, len, why) in [
                (3, 0, 12, "a 3-byte pattern"),
                (0, 0, 16, "an empty pattern"),
                (24, 0, 48, "a 24-byte pattern"),
                (8, 0, 12, "a size not a multiple of the pattern"),
                (8, 4, 16, "an offset not a multiple of the pattern"),
                (8, 0, 0, "an empty fill"),
                (8, 4096, 8, "a fill past the buffer"),
                (256, 0, 8192, "a long pattern past the buffer"),
            ] {
                assert_eq!(
                    fill(size, offset, len),
                    UR_RESULT_ERROR_INVALID_SIZE,
                    "{}: {why}",
                    p.name
                );
            }
            ok(fill(8, 8, 16), "a valid fill");
            let mut m = null_mut();
            if t.USM.pfnDeviceAlloc.unwrap()(c, p.devices[0], null(), null_mut(), 4096, &mut m) == UR_RESULT_SUCCESS {
                let usm = |size, len| {
                    t.Enqueue.pfnUSMFill.unwrap()(q, m, size, pat.as_ptr().cast(), len, 0, null(), null_mut())
                };
                for (size, len, why) in [
                    (3, 14, "a size not a multiple of a 3-byte pattern"),
                    (0, 16, "an empty pattern"),
                    (8, 12, "a size not a multiple of the pattern"),
                    (16, 8, "a pattern longer than the fill"),
                    (8, 0, "an empty fill"),
                ] {
                    assert_eq!(usm(size, len), UR_RESULT_ERROR_INVALID_SIZE, "{}: USM {why}", p.name);
                }
                ok(usm(4, 64), "a valid USM fill");
                ok(usm(3, 12), "a USM fill with a 3-byte pattern (any length divides)");
                ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
                ok(t.USM.pfnFree.unwrap()(c, m), "urUSMFree");
            }
            ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
        }
        release(c, q);
    }
}

#[test]
fn partitions_keep_their_parents_access_and_bounds() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        let ro = buffer(c, UR_MEM_FLAG_READ_ONLY, 4096);
        let region = |origin, size| ur_buffer_region_t {
            stype: UR_STRUCTURE_TYPE_BUFFER_REGION,
            pNext: null(),
            origin,
            size,
        };
        // SAFETY: live regions and out-pointers; handles the library returned.
        unsafe {
            let part = |b, flags, r: ur_buffer_region_t, out: &mut ur_mem_handle_t| {
                t.Mem.pfnBufferPartition.unwrap()(b, flags, UR_BUFFER_CREATE_TYPE_REGION, &r, out)
            };
            let mut s = null_mut();
            for flags in [
                UR_MEM_FLAG_READ_WRITE,
                UR_MEM_FLAG_WRITE_ONLY,
                UR_MEM_FLAG_USE_HOST_POINTER,
            ] {
                assert_eq!(
                    part(ro, flags, region(0, 1024), &mut s),
                    UR_RESULT_ERROR_INVALID_VALUE,
                    "{}: flags {flags} on a read-only parent",
                    p.name
                );
            }
            let rw = buffer(c, UR_MEM_FLAG_READ_WRITE, 4096);
            assert_eq!(
                part(rw, UR_MEM_FLAG_READ_WRITE, region(0, 0), &mut s),
                UR_RESULT_ERROR_INVALID_BUFFER_SIZE
            );
            assert_eq!(
                part(rw, UR_MEM_FLAG_READ_WRITE, region(0, 4097), &mut s),
                UR_RESULT_ERROR_INVALID_BUFFER_SIZE
            );
            assert_eq!(
                part(rw, UR_MEM_FLAG_READ_WRITE, region(4096, 1), &mut s),
                UR_RESULT_ERROR_INVALID_BUFFER_SIZE
            );
            assert_eq!(
                part(rw, UR_MEM_FLAG_READ_WRITE, region(usize::MAX, 2), &mut s),
                UR_RESULT_ERROR_INVALID_BUFFER_SIZE
            );
            let r = region(0, 1024);
            assert_eq!(
                t.Mem.pfnBufferPartition.unwrap()(
                    rw,
                    UR_MEM_FLAG_READ_WRITE,
                    UR_BUFFER_CREATE_TYPE_FORCE_UINT32,
                    &r,
                    &mut s
                ),
                UR_RESULT_ERROR_INVALID_ENUMERATION
            );
            // Narrowing is allowed, where the device makes sub-buffers.
            for (b, flags) in [(ro, UR_MEM_FLAG_READ_ONLY), (ro, 0), (rw, UR_MEM_FLAG_READ_ONLY)] {
                let r = part(b, flags, region(0, 1024), &mut s);
                if r == UR_RESULT_ERROR_UNSUPPORTED_FEATURE {
                    eprintln!("{}: no sub-buffers", p.name);
                    continue;
                }
                ok(r, &format!("{}: partition with flags {flags}", p.name));
                ok(t.Mem.pfnRelease.unwrap()(s), "release the partition");
            }
            ok(t.Mem.pfnRelease.unwrap()(rw), "urMemRelease");
            ok(t.Mem.pfnRelease.unwrap()(ro), "urMemRelease");
        }
        release(c, q);
    }
}

#[test]
fn usm_queries_refuse_null_and_name_the_pool() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        // SAFETY: live out-pointers of the sizes given; handles the library
        // returned.
        unsafe {
            let mut ty: ur_usm_type_t = 0;
            assert_eq!(
                t.USM.pfnGetMemAllocInfo.unwrap()(
                    c,
                    null(),
                    UR_USM_ALLOC_INFO_TYPE,
                    4,
                    (&mut ty as *mut u32).cast(),
                    null_mut()
                ),
                UR_RESULT_ERROR_INVALID_NULL_POINTER,
                "{}",
                p.name
            );
            let desc = ur_usm_pool_desc_t {
                stype: UR_STRUCTURE_TYPE_USM_POOL_DESC,
                pNext: null(),
                flags: 0,
            };
            let mut pool = null_mut();
            ok(
                t.USM.pfnPoolCreate.unwrap()(c, (&desc as *const ur_usm_pool_desc_t).cast_mut(), &mut pool),
                "urUSMPoolCreate",
            );
            let (mut pooled, mut plain) = (null_mut(), null_mut());
            let r = t.USM.pfnDeviceAlloc.unwrap()(c, p.devices[0], null(), pool, 256, &mut pooled);
            if r != UR_RESULT_SUCCESS {
                eprintln!("{}: no USM device allocation ({r})", p.name);
            } else {
                ok(
                    t.USM.pfnDeviceAlloc.unwrap()(c, p.devices[0], null(), null_mut(), 256, &mut plain),
                    "a plain allocation",
                );
                let pool_of = |m: *mut c_void| {
                    let mut h: ur_usm_pool_handle_t = null_mut();
                    ok(
                        t.USM.pfnGetMemAllocInfo.unwrap()(
                            c,
                            m,
                            UR_USM_ALLOC_INFO_POOL,
                            size_of::<ur_usm_pool_handle_t>(),
                            (&mut h as *mut ur_usm_pool_handle_t).cast(),
                            null_mut(),
                        ),
                        "UR_USM_ALLOC_INFO_POOL",
                    );
                    h
                };
                assert_eq!(pool_of(pooled), pool, "{}", p.name);
                assert_eq!(pool_of(plain), null_mut());
                ok(t.USM.pfnFree.unwrap()(c, pooled), "urUSMFree");
                ok(t.USM.pfnFree.unwrap()(c, plain), "urUSMFree");
            }
            ok(t.USM.pfnPoolRelease.unwrap()(pool), "urUSMPoolRelease");
        }
        release(c, q);
    }
}

#[test]
fn memory_objects_are_used_in_their_own_context_only() {
    let t = t();
    for p in platforms() {
        let (a, qa) = context_queue(&p.devices[..1]);
        let (b_ctx, qb) = context_queue(&p.devices[..1]);
        let mine = buffer(a, UR_MEM_FLAG_READ_WRITE, 256);
        let theirs = buffer(b_ctx, UR_MEM_FLAG_READ_WRITE, 256);
        let mut host = [0u8; 256];
        let h = host.as_mut_ptr().cast::<c_void>();
        let pat = 0u32;
        // SAFETY: live host arrays of the sizes given; handles the library
        // returned.
        unsafe {
            let n = &t.Enqueue;
            let wrong = [
                (
                    "read",
                    n.pfnMemBufferRead.unwrap()(qa, theirs, true, 0, 256, h, 0, null(), null_mut()),
                ),
                (
                    "write",
                    n.pfnMemBufferWrite.unwrap()(qa, theirs, true, 0, 256, h, 0, null(), null_mut()),
                ),
                (
                    "copy from",
                    n.pfnMemBufferCopy.unwrap()(qa, theirs, mine, 0, 0, 256, 0, null(), null_mut()),
                ),
                (
                    "copy to",
                    n.pfnMemBufferCopy.unwrap()(qa, mine, theirs, 0, 0, 256, 0, null(), null_mut()),
                ),
                (
                    "fill",
                    n.pfnMemBufferFill.unwrap()(
                        qa,
                        theirs,
                        (&pat as *const u32).cast(),
                        4,
                        0,
                        256,
                        0,
                        null(),
                        null_mut(),
                    ),
                ),
            ];
            for (what, r) in wrong {
                assert_eq!(
                    r, UR_RESULT_ERROR_INVALID_CONTEXT,
                    "{}: {what} another context's buffer",
                    p.name
                );
            }
            let mut mapped = null_mut();
            assert_eq!(
                n.pfnMemBufferMap.unwrap()(
                    qa,
                    theirs,
                    true,
                    UR_MAP_FLAG_READ,
                    0,
                    256,
                    0,
                    null(),
                    null_mut(),
                    &mut mapped
                ),
                UR_RESULT_ERROR_INVALID_CONTEXT
            );
            // Each through its own context's queue works.
            ok(
                n.pfnMemBufferWrite.unwrap()(qb, theirs, true, 0, 256, h, 0, null(), null_mut()),
                "own write",
            );
            ok(
                n.pfnMemBufferRead.unwrap()(qa, mine, true, 0, 256, h, 0, null(), null_mut()),
                "own read",
            );
            ok(t.Mem.pfnRelease.unwrap()(mine), "urMemRelease");
            ok(t.Mem.pfnRelease.unwrap()(theirs), "urMemRelease");
        }
        release(a, qa);
        release(b_ctx, qb);
    }
}

#[test]
fn oversized_buffers_are_refused_at_creation() {
    let t = t();
    for p in platforms() {
        let mut contexts = vec![&p.devices[..1]];
        if p.devices.len() > 1 {
            contexts.push(&p.devices[..]);
        }
        for devices in contexts {
            let (c, q) = context_queue(devices);
            for size in [usize::MAX, 1usize << 60, 0] {
                let mut b = null_mut();
                // SAFETY: a live out-pointer; a live context.
                let r = unsafe { t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, size, null(), &mut b) };
                assert_eq!(
                    r,
                    UR_RESULT_ERROR_INVALID_BUFFER_SIZE,
                    "{}: a buffer of {size} bytes in a context of {} device(s)",
                    p.name,
                    devices.len()
                );
            }
            release(c, q);
        }
    }
}

/// Every device answers at least one sub-group and one sub-group size
/// (SYCL 2020's minimum; OpenCL devices without sub-groups answer 0 and no
/// sizes, which SYCL clients reject).
#[test]
fn every_device_has_at_least_one_sub_group() {
    let t = t();
    for p in platforms() {
        for &d in &p.devices {
            // SAFETY: a device handle of this library, u32 / size_t outputs.
            let (n, sizes) = unsafe {
                (
                    capi::device_value::<u32>(t, d, UR_DEVICE_INFO_MAX_NUM_SUB_GROUPS),
                    capi::device_array::<u32>(t, d, UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL),
                )
            };
            assert!(n >= 1, "{}: MAX_NUM_SUB_GROUPS {n}", p.name);
            assert!(
                !sizes.is_empty() && sizes.iter().all(|&s| s >= 1),
                "{}: sizes {sizes:?}",
                p.name
            );
        }
    }
}

/// Every device answers its work-group limits: per dimension, and in all
/// (`MAX_WORK_GROUPS`, a `size_t` UR's suite requires), the total no
/// smaller than any one dimension.
#[test]
fn every_device_reports_its_work_group_limits() {
    let t = t();
    for p in platforms() {
        for &d in &p.devices {
            // SAFETY: a device handle of this library, size_t outputs.
            let (total, dims) = unsafe {
                (
                    capi::device_array::<usize>(t, d, UR_DEVICE_INFO_MAX_WORK_GROUPS),
                    capi::device_array::<usize>(t, d, UR_DEVICE_INFO_MAX_WORK_GROUPS_3D),
                )
            };
            assert_eq!(total.len(), 1, "{}: MAX_WORK_GROUPS is one size_t", p.name);
            assert_eq!(dims.len(), 3, "{}", p.name);
            assert!(
                total[0] > 0 && dims.iter().all(|&g| g > 0 && g <= total[0]),
                "{}: total {} per dimension {dims:?}",
                p.name,
                total[0]
            );
        }
    }
}

/// Image features beyond plain images (bindless images, mipmaps, cubemaps,
/// external memory) are answered as absent on every device, a `ur_bool_t`
/// false each, and the command-buffer update and 2D block array
/// capabilities as none (UR's suite checks each answer's size and value).
#[test]
fn every_device_answers_unmodelled_image_features_as_absent() {
    let t = t();
    for p in platforms() {
        for &d in &p.devices {
            for prop in [
                UR_DEVICE_INFO_BINDLESS_IMAGES_SHARED_USM_SUPPORT_EXP,
                UR_DEVICE_INFO_MIPMAP_SUPPORT_EXP,
                UR_DEVICE_INFO_MIPMAP_LEVEL_REFERENCE_SUPPORT_EXP,
                UR_DEVICE_INFO_EXTERNAL_MEMORY_IMPORT_SUPPORT_EXP,
                UR_DEVICE_INFO_CUBEMAP_SUPPORT_EXP,
                UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_3D_SUPPORT_EXP,
                UR_DEVICE_INFO_IMAGE_ARRAY_SUPPORT_EXP,
                UR_DEVICE_INFO_BINDLESS_IMAGES_GATHER_SUPPORT_EXP,
            ] {
                // SAFETY: a device handle of this library, ur_bool_t output.
                let v = unsafe { capi::device_array::<u8>(t, d, prop) };
                assert_eq!(v, [0], "{}: property {prop}", p.name);
            }
            for prop in [
                UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP,
                UR_DEVICE_INFO_2D_BLOCK_ARRAY_CAPABILITIES_EXP,
            ] {
                // SAFETY: as above, a uint32_t bit field.
                let v = unsafe { capi::device_array::<u32>(t, d, prop) };
                assert_eq!(v, [0], "{}: property {prop}", p.name);
            }
        }
    }
}

/// `urEnqueueUSMMemcpy` between two host spans copies on every device,
/// those without USM included (SYCL's `queue::memcpy` host to host; dpctl
/// tests it on rusticl, which has no USM).
#[test]
fn host_to_host_memcpy_needs_no_usm() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        let src: Vec<u8> = (0..4096u32).map(|i| (i * 31 % 253) as u8).collect();
        let mut dst = vec![0u8; 4096];
        // SAFETY: live host spans of 4096 bytes; a blocking copy.
        unsafe {
            ok(
                t.Enqueue.pfnUSMMemcpy.unwrap()(
                    q,
                    true,
                    dst.as_mut_ptr().cast(),
                    src.as_ptr().cast(),
                    4096,
                    0,
                    null(),
                    null_mut(),
                ),
                &format!("{}: host-to-host urEnqueueUSMMemcpy", p.name),
            );
        }
        assert_eq!(dst, src, "{}", p.name);
        release(c, q);
    }
}

/// `UR_QUEUE_INFO_EMPTY` (UR's `urQueueGetInfoTest.SuccessEmptyQueue`
/// asks for its size): a `ur_bool_t`, true on a new queue and on one whose
/// commands were finished, on every device.
#[test]
fn queues_answer_whether_they_are_empty() {
    let t = t();
    for p in platforms() {
        let (c, q) = context_queue(&p.devices[..1]);
        let empty = |what: &str| {
            let (mut v, mut size): (ur_bool_t, usize) = (0, 0);
            // SAFETY: a live queue; a `ur_bool_t` output of its size.
            let r = unsafe {
                t.Queue.pfnGetInfo.unwrap()(
                    q,
                    UR_QUEUE_INFO_EMPTY,
                    size_of::<ur_bool_t>(),
                    (&raw mut v).cast(),
                    &mut size,
                )
            };
            ok(r, &format!("{}: urQueueGetInfo(EMPTY) {what}", p.name));
            assert_eq!(size, size_of::<ur_bool_t>(), "{}", p.name);
            v == 1
        };
        assert!(empty("on a new queue"), "{}: a new queue is empty", p.name);
        let b = buffer(c, UR_MEM_FLAG_READ_WRITE, 4096);
        let data = [7u8; 4096];
        // SAFETY: live handles; `data` outlives the blocking write.
        unsafe {
            ok(
                t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, false, 0, 4096, data.as_ptr().cast(), 0, null(), null_mut()),
                "urEnqueueMemBufferWrite",
            );
            ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
        }
        assert!(empty("after a finish"), "{}: finished work leaves it empty", p.name);
        // SAFETY: a buffer of this test, released once.
        ok(unsafe { t.Mem.pfnRelease.unwrap()(b) }, "urMemRelease");
        release(c, q);
    }
}

/// Out-of-order queues (UR's `urQueueCreateWithParamTest` with
/// `OUT_OF_ORDER_EXEC_MODE_ENABLE`): every device lists the flag among its
/// host-queue properties, a queue made with it reports exactly that flag,
/// and its commands still run in submission order (the one schedule this
/// library gives any queue): a write and then a read of the same buffer,
/// neither waiting on the other, read what was written.
#[test]
fn every_device_takes_out_of_order_queues_and_runs_them_in_order() {
    let t = t();
    for p in platforms() {
        let d = p.devices[0];
        for prop in [UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES, UR_DEVICE_INFO_QUEUE_PROPERTIES] {
            // SAFETY: a device handle of this library, a flags output.
            let flags = unsafe { capi::device_value::<ur_queue_flags_t>(t, d, prop) };
            assert_ne!(
                flags & UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                0,
                "{}: property {prop} is {flags:#x}",
                p.name
            );
        }
        let (c, plain) = context_queue(&p.devices[..1]);
        let props = ur_queue_properties_t {
            stype: UR_STRUCTURE_TYPE_QUEUE_PROPERTIES,
            pNext: null_mut(),
            flags: UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE,
        };
        let mut q = null_mut();
        // SAFETY: a live context and device, a properties struct and an
        // out-pointer that outlive the call.
        ok(
            unsafe { t.Queue.pfnCreate.unwrap()(c, d, &props, &mut q) },
            &format!("{}: urQueueCreate(OUT_OF_ORDER)", p.name),
        );
        let mut flags: ur_queue_flags_t = 0;
        // SAFETY: a live queue; a flags output of its size.
        ok(
            unsafe {
                t.Queue.pfnGetInfo.unwrap()(
                    q,
                    UR_QUEUE_INFO_FLAGS,
                    size_of::<ur_queue_flags_t>(),
                    (&raw mut flags).cast(),
                    null_mut(),
                )
            },
            "urQueueGetInfo(FLAGS)",
        );
        assert_eq!(flags, UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE, "{}", p.name);
        let b = buffer(c, UR_MEM_FLAG_READ_WRITE, 4096);
        let data = pattern(4096);
        let mut back = vec![0u8; 4096];
        // SAFETY: live handles; `data` and `back` outlive the finish that
        // ends both commands.
        unsafe {
            let write = t.Enqueue.pfnMemBufferWrite.unwrap();
            let read = t.Enqueue.pfnMemBufferRead.unwrap();
            ok(
                write(q, b, false, 0, 4096, data.as_ptr().cast(), 0, null(), null_mut()),
                "urEnqueueMemBufferWrite",
            );
            ok(
                read(q, b, false, 0, 4096, back.as_mut_ptr().cast(), 0, null(), null_mut()),
                "urEnqueueMemBufferRead",
            );
            ok(t.Queue.pfnFinish.unwrap()(q), "urQueueFinish");
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
            ok(t.Queue.pfnRelease.unwrap()(q), "urQueueRelease");
        }
        assert!(back == data, "{}: the read ran before the write", p.name);
        release(c, plain);
    }
}
