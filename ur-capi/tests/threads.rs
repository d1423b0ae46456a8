//! Several host threads use the C ABI at once, as SYCL applications do:
//! each creates its own queue and buffer on the first device (the native
//! host device), writes and reads back through events it releases, and
//! retains and releases a context shared by all; meanwhile other threads
//! hammer handles the workers released (stale) and the shared context
//! with lookups and reference counting. Every call must answer success or
//! the `INVALID_*` code of its kind, and data must round-trip.

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ur_adapter_rust::context::{urContextCreate, urContextGetInfo, urContextRelease, urContextRetain};
use ur_adapter_rust::device::urDeviceGet;
use ur_adapter_rust::enqueue::{urEnqueueMemBufferRead, urEnqueueMemBufferWrite};
use ur_adapter_rust::memory::{urMemBufferCreate, urMemRelease};
use ur_adapter_rust::platform::{urAdapterGet, urPlatformGet};
use ur_adapter_rust::queue::{urEventGetInfo, urEventRelease, urEventWait, urQueueCreate, urQueueRelease};
use ur_adapter_rust::sys::*;

const WORKERS: usize = 4;
const ROUNDS: usize = 300;
const SIZE: usize = 64;

fn ok(r: ur_result_t, what: &str) {
    assert_eq!(r, UR_RESULT_SUCCESS, "{what}");
}

#[test]
fn threads_create_use_and_release_handles_concurrently() {
    let (mut adapter, mut platform, mut device, mut context) = (null_mut(), null_mut(), null_mut(), null_mut());
    // SAFETY: live out-pointers of the right types, handles just returned.
    unsafe {
        ok(urAdapterGet(1, &mut adapter, null_mut()), "urAdapterGet");
        ok(urPlatformGet(adapter, 1, &mut platform, null_mut()), "urPlatformGet");
        ok(
            urDeviceGet(platform, UR_DEVICE_TYPE_ALL, 1, &mut device, null_mut()),
            "urDeviceGet",
        );
        ok(urContextCreate(1, &device, null(), &mut context), "urContextCreate");
    }
    let (device, context) = (device as usize, context as usize);
    // Released event handles, published for the hammering threads.
    let stale = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..WORKERS {
            let (stale, finished) = (&stale, &finished);
            s.spawn(move || {
                let (d, c) = (device as ur_device_handle_t, context as ur_context_handle_t);
                // SAFETY: as above; host buffers are live arrays of `SIZE`
                // bytes that outlive the blocking reads and waited writes.
                unsafe {
                    let (mut q, mut b) = (null_mut(), null_mut());
                    ok(urQueueCreate(c, d, null(), &mut q), "urQueueCreate");
                    ok(
                        urMemBufferCreate(c, UR_MEM_FLAG_READ_WRITE, SIZE, null_mut(), &mut b),
                        "urMemBufferCreate",
                    );
                    for i in 0..ROUNDS {
                        ok(urContextRetain(c), "urContextRetain");
                        let data = [(w * 31 + i) as u8; SIZE];
                        let mut ev = null_mut();
                        let src = data.as_ptr().cast::<c_void>();
                        ok(
                            urEnqueueMemBufferWrite(q, b, false, 0, SIZE, src, 0, null(), &mut ev),
                            "write",
                        );
                        ok(urEventWait(1, &ev), "urEventWait");
                        ok(urEventRelease(ev), "urEventRelease");
                        stale.store(ev as usize, Ordering::Relaxed);
                        let mut back = [0u8; SIZE];
                        let dst = back.as_mut_ptr().cast::<c_void>();
                        ok(
                            urEnqueueMemBufferRead(q, b, true, 0, SIZE, dst, 0, null(), null_mut()),
                            "read",
                        );
                        assert_eq!(back, data, "worker {w} round {i}");
                        ok(urContextRelease(c), "urContextRelease");
                    }
                    ok(urMemRelease(b), "urMemRelease");
                    ok(urQueueRelease(q), "urQueueRelease");
                }
                finished.fetch_add(1, Ordering::Release);
            });
        }
        for _ in 0..2 {
            let (stale, done) = (&stale, &done);
            s.spawn(move || {
                let mut calls = 0usize;
                while !done.load(Ordering::Relaxed) || calls == 0 {
                    let e = stale.load(Ordering::Relaxed) as ur_event_handle_t;
                    let mut status = 0u32;
                    // SAFETY: a handle this library handed out (possibly
                    // released, which must be answered, never read through)
                    // and a live out-pointer of the property's size.
                    let r = unsafe {
                        urEventGetInfo(
                            e,
                            UR_EVENT_INFO_COMMAND_EXECUTION_STATUS,
                            4,
                            (&mut status as *mut u32).cast(),
                            null_mut(),
                        )
                    };
                    assert!(
                        [
                            UR_RESULT_SUCCESS,
                            UR_RESULT_ERROR_INVALID_EVENT,
                            UR_RESULT_ERROR_INVALID_NULL_HANDLE
                        ]
                        .contains(&r),
                        "stale event answered {r}"
                    );
                    let mut refs = 0u32;
                    // SAFETY: the shared context is live until the end.
                    let r = unsafe {
                        urContextGetInfo(
                            context as ur_context_handle_t,
                            UR_CONTEXT_INFO_REFERENCE_COUNT,
                            4,
                            (&mut refs as *mut u32).cast(),
                            null_mut(),
                        )
                    };
                    ok(r, "urContextGetInfo");
                    assert!((1..=1 + WORKERS as u32).contains(&refs), "context count {refs}");
                    calls += 1;
                }
            });
        }
        // The hammering goes on until every worker is done.
        while finished.load(Ordering::Acquire) < WORKERS {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        done.store(true, Ordering::Relaxed);
    });
    let mut refs = 0u32;
    // SAFETY: the context is still live (one reference).
    unsafe {
        ok(
            urContextGetInfo(
                context as ur_context_handle_t,
                UR_CONTEXT_INFO_REFERENCE_COUNT,
                4,
                (&mut refs as *mut u32).cast(),
                null_mut(),
            ),
            "urContextGetInfo",
        );
        assert_eq!(refs, 1, "every retain was released");
        ok(urContextRelease(context as ur_context_handle_t), "urContextRelease");
        assert_eq!(
            urContextRelease(context as ur_context_handle_t),
            UR_RESULT_ERROR_INVALID_CONTEXT
        );
    }
}
