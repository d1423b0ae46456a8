//! Backend events adopted through `urEventCreateWithNativeHandle`: on
//! every OpenCL device, a command's `cl_event` (from
//! `urEventGetNativeHandle`) becomes a second UR event that is waited for,
//! queried and put in a wait list, and whose release gives back exactly
//! the reference it took (checked with `clGetEventInfo` where the OpenCL
//! loader can be opened here); its queue is a queue handle over the
//! command's `cl_command_queue`, held by the adopted event and given back
//! with it; an event of another context is refused; the native device
//! cannot adopt events.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ur_adapter_rust::sys::*;

mod capi;
use capi::{ok, Plat};

fn t() -> &'static ur_dditable_t {
    capi::table()
}

/// Every platform with a device, the native one included.
fn platforms() -> Vec<Plat> {
    capi::platforms_with_host()
}

/// The OpenCL calls the test makes itself, through the ICD loader the
/// adapter uses.
struct Cl {
    _lib: libloading::Library,
    get_event_info: unsafe extern "C" fn(*mut c_void, u32, usize, *mut c_void, *mut usize) -> i32,
    get_queue_info: unsafe extern "C" fn(*mut c_void, u32, usize, *mut c_void, *mut usize) -> i32,
    retain_event: unsafe extern "C" fn(*mut c_void) -> i32,
}

const CL_EVENT_REFERENCE_COUNT: u32 = 0x11D2;
const CL_QUEUE_REFERENCE_COUNT: u32 = 0x1092;

impl Cl {
    fn open() -> Option<Cl> {
        for name in ["libOpenCL.so.1", "libOpenCL.so"] {
            // SAFETY: the system's OpenCL ICD loader, whose initialisers
            // are the ones the adapter runs when it opens it.
            let Ok(lib) = (unsafe { libloading::Library::new(name) }) else {
                continue;
            };
            // SAFETY: the OpenCL 1.0 signatures of these entry points.
            unsafe {
                let get_event_info = *lib.get(b"clGetEventInfo\0").ok()?;
                let get_queue_info = *lib.get(b"clGetCommandQueueInfo\0").ok()?;
                let retain_event = *lib.get(b"clRetainEvent\0").ok()?;
                return Some(Cl {
                    _lib: lib,
                    get_event_info,
                    get_queue_info,
                    retain_event,
                });
            }
        }
        None
    }

    /// `CL_EVENT_REFERENCE_COUNT` of a live `cl_event`.
    fn refcount(&self, e: ur_native_handle_t) -> u32 {
        let mut n = 0u32;
        // SAFETY: a live event; a 4-byte output for a `cl_uint` property.
        let r = unsafe {
            (self.get_event_info)(
                e as *mut c_void,
                CL_EVENT_REFERENCE_COUNT,
                4,
                (&mut n as *mut u32).cast(),
                null_mut(),
            )
        };
        assert_eq!(r, 0, "clGetEventInfo(CL_EVENT_REFERENCE_COUNT)");
        n
    }

    /// `CL_QUEUE_REFERENCE_COUNT` of a live `cl_command_queue`.
    fn queue_refcount(&self, q: ur_native_handle_t) -> u32 {
        let mut n = 0u32;
        // SAFETY: a live queue; a 4-byte output for a `cl_uint` property.
        let r = unsafe {
            (self.get_queue_info)(
                q as *mut c_void,
                CL_QUEUE_REFERENCE_COUNT,
                4,
                (&mut n as *mut u32).cast(),
                null_mut(),
            )
        };
        assert_eq!(r, 0, "clGetCommandQueueInfo(CL_QUEUE_REFERENCE_COUNT)");
        n
    }
}

fn context(device: ur_device_handle_t) -> ur_context_handle_t {
    let mut c = null_mut();
    // SAFETY: a live out-pointer and device.
    ok(
        unsafe { t().Context.pfnCreate.unwrap()(1, &device, null(), &mut c) },
        "urContextCreate",
    );
    c
}

fn queue(c: ur_context_handle_t, device: ur_device_handle_t) -> ur_queue_handle_t {
    let mut q = null_mut();
    // SAFETY: a live out-pointer, context and device.
    ok(
        unsafe { t().Queue.pfnCreate.unwrap()(c, device, null(), &mut q) },
        "urQueueCreate",
    );
    q
}

fn event_u32(e: ur_event_handle_t, prop: ur_event_info_t) -> (ur_result_t, u32) {
    let mut v = 0u32;
    // SAFETY: a 4-byte output for a 4-byte property.
    let r = unsafe { t().Event.pfnGetInfo.unwrap()(e, prop, 4, (&mut v as *mut u32).cast(), null_mut()) };
    (r, v)
}

fn native_of(e: ur_event_handle_t) -> ur_native_handle_t {
    let mut h = 0;
    // SAFETY: a live event and out-pointer.
    ok(
        unsafe { t().Event.pfnGetNativeHandle.unwrap()(e, &mut h) },
        "urEventGetNativeHandle",
    );
    h
}

fn adopt(native: ur_native_handle_t, c: ur_context_handle_t, owned: Option<bool>) -> (ur_result_t, ur_event_handle_t) {
    let props = ur_event_native_properties_t {
        stype: UR_STRUCTURE_TYPE_EVENT_NATIVE_PROPERTIES,
        pNext: null_mut(),
        isNativeHandleOwned: owned.unwrap_or(false),
    };
    let p = if owned.is_some() { &props as *const _ } else { null() };
    let mut e = null_mut();
    // SAFETY: a live event handle of the backend (the test's own), a live
    // context, properties and out-pointer.
    let r = unsafe { t().Event.pfnCreateWithNativeHandle.unwrap()(native, c, p, &mut e) };
    (r, e)
}

fn queue_native(q: ur_queue_handle_t) -> ur_native_handle_t {
    let mut h = 0;
    // SAFETY: a live queue and out-pointer; no properties.
    ok(
        unsafe { t().Queue.pfnGetNativeHandle.unwrap()(q, null_mut(), &mut h) },
        "urQueueGetNativeHandle",
    );
    h
}

fn event_queue(e: ur_event_handle_t) -> ur_queue_handle_t {
    let mut q = null_mut::<ur_queue_handle_t_>();
    // SAFETY: a live event; an output of the property's size.
    ok(
        unsafe {
            t().Event.pfnGetInfo.unwrap()(
                e,
                UR_EVENT_INFO_COMMAND_QUEUE,
                size_of::<ur_queue_handle_t>(),
                (&mut q as *mut ur_queue_handle_t).cast(),
                null_mut(),
            )
        },
        "urEventGetInfo(COMMAND_QUEUE)",
    );
    q
}

fn release_event(e: ur_event_handle_t) {
    // SAFETY: a live event, released once here.
    ok(unsafe { t().Event.pfnRelease.unwrap()(e) }, "urEventRelease");
}

#[test]
fn opencl_events_are_adopted_from_their_native_handles() {
    let t = t();
    let cl = Cl::open();
    if cl.is_none() {
        eprintln!("note: the OpenCL loader did not open here: reference counts not checked");
    }
    let mut checked = 0;
    for p in platforms().into_iter().filter(|p| p.backend == UR_BACKEND_OPENCL) {
        for &d in &p.devices {
            let what = |s: &str| format!("{}: {s}", p.name);
            let c = context(d);
            let q = queue(c, d);
            let mut b = null_mut();
            let data = [5u8; 64];
            let mut back = [0u8; 64];
            // SAFETY: live handles and out-pointers; host arrays of the
            // sizes given, alive until the blocking calls return.
            unsafe {
                ok(
                    t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, 64, null(), &mut b),
                    "urMemBufferCreate",
                );
                let mut write = null_mut();
                ok(
                    t.Enqueue.pfnMemBufferWrite.unwrap()(
                        q,
                        b,
                        false,
                        0,
                        64,
                        data.as_ptr().cast(),
                        0,
                        null(),
                        &mut write,
                    ),
                    &what("a write with an event"),
                );
                let native = native_of(write);
                assert_ne!(native, 0, "{}", what("a command's cl_event"));
                // Its queue: a handle of ours over the command's
                // cl_command_queue, held by the adopted event and given back
                // with it (counted with the write complete and nothing else
                // enqueued meanwhile, so the OpenCL runtime's own
                // references do not change).
                ok(t.Event.pfnWait.unwrap()(1, &write), &what("urEventWait(write)"));
                let cl_queue = queue_native(q);
                let queue_refs = cl.as_ref().map(|cl| cl.queue_refcount(cl_queue));
                let (r, first) = adopt(native, c, None);
                ok(r, &what("urEventCreateWithNativeHandle(cl_event)"));
                let its_queue = event_queue(first);
                assert!(!its_queue.is_null(), "{}", what("an adopted event's queue"));
                assert_ne!(its_queue, q, "{}", what("a queue handle of its own"));
                assert_eq!(
                    queue_native(its_queue),
                    cl_queue,
                    "{}",
                    what("the same cl_command_queue")
                );
                assert_eq!(
                    event_queue(first),
                    its_queue,
                    "{}",
                    what("the same queue handle each time")
                );
                release_event(first);
                let mut refs = 0u32;
                assert_eq!(
                    t.Queue.pfnGetInfo.unwrap()(
                        its_queue,
                        UR_QUEUE_INFO_REFERENCE_COUNT,
                        4,
                        (&mut refs as *mut u32).cast(),
                        null_mut()
                    ),
                    UR_RESULT_ERROR_INVALID_QUEUE,
                    "{}",
                    what("the adopted event's queue after its release")
                );
                if let (Some(cl), Some(n)) = (&cl, queue_refs) {
                    assert_eq!(
                        cl.queue_refcount(cl_queue),
                        n,
                        "{}",
                        what("queue references given back")
                    );
                }
                // Not owned (no properties): the runtime takes its own
                // reference (counted below, once the command is complete and
                // the OpenCL runtime holds none of its own any more).
                let (r, adopted) = adopt(native, c, None);
                ok(r, &what("urEventCreateWithNativeHandle(cl_event)"));
                assert_eq!(native_of(adopted), native, "{}", what("the same cl_event behind it"));
                ok(t.Event.pfnWait.unwrap()(1, &adopted), &what("urEventWait(adopted)"));
                assert_eq!(
                    event_u32(adopted, UR_EVENT_INFO_COMMAND_EXECUTION_STATUS),
                    (UR_RESULT_SUCCESS, UR_EVENT_STATUS_COMPLETE),
                    "{}",
                    what("adopted event status")
                );
                let mut ctx = null_mut::<ur_context_handle_t_>();
                ok(
                    t.Event.pfnGetInfo.unwrap()(
                        adopted,
                        UR_EVENT_INFO_CONTEXT,
                        size_of::<ur_context_handle_t>(),
                        (&mut ctx as *mut ur_context_handle_t).cast(),
                        null_mut(),
                    ),
                    "event context",
                );
                assert_eq!(ctx, c, "{}", what("adopted event's context"));
                // In a wait list.
                ok(
                    t.Enqueue.pfnMemBufferRead.unwrap()(
                        q,
                        b,
                        true,
                        0,
                        64,
                        back.as_mut_ptr().cast(),
                        1,
                        &adopted,
                        null_mut(),
                    ),
                    &what("a read waiting on the adopted event"),
                );
                assert_eq!(back, data, "{}", what("read back"));
                // Ours: the command's event and the adopted one.
                let held = cl.as_ref().map(|cl| cl.refcount(native));

                // Another context's cl_context refuses it, taking no reference.
                let other = context(d);
                let (r, _) = adopt(native, other, Some(false));
                assert_eq!(
                    r,
                    UR_RESULT_ERROR_INVALID_CONTEXT,
                    "{}",
                    what("an event of another context")
                );

                release_event(adopted);
                if let (Some(cl), Some(n)) = (&cl, held) {
                    assert_eq!(
                        cl.refcount(native),
                        n - 1,
                        "{}",
                        what("release gives back the reference")
                    );
                    // Owned: the caller's reference passes to the event.
                    assert_eq!((cl.retain_event)(native as *mut c_void), 0, "clRetainEvent");
                    let (r, owned) = adopt(native, c, Some(true));
                    ok(r, &what("an owned adoption"));
                    assert_eq!(cl.refcount(native), n, "{}", what("owned adoption takes none"));
                    ok(t.Event.pfnWait.unwrap()(1, &owned), &what("urEventWait(owned)"));
                    release_event(owned);
                    assert_eq!(cl.refcount(native), n - 1, "{}", what("owned release"));
                }
                release_event(write);
                ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
                ok(t.Queue.pfnRelease.unwrap()(q), "urQueueRelease");
                ok(t.Context.pfnRelease.unwrap()(other), "urContextRelease");
                ok(t.Context.pfnRelease.unwrap()(c), "urContextRelease");
            }
            checked += 1;
        }
    }
    eprintln!("{checked} OpenCL devices checked");
}

#[test]
fn the_native_device_cannot_adopt_events() {
    for p in platforms().into_iter().filter(|p| p.backend != UR_BACKEND_OPENCL) {
        let c = context(p.devices[0]);
        // Never dereferenced: the native adapter has no backend events.
        assert_eq!(
            adopt(0x1000, c, None).0,
            UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
            "{}",
            p.name
        );
        // Its events have no native handle.
        let q = queue(c, p.devices[0]);
        let mut e = null_mut();
        let mut h = 0;
        // SAFETY: live handles and out-pointers.
        unsafe {
            ok(
                t().Enqueue.pfnEventsWait.unwrap()(q, 0, null(), &mut e),
                "urEnqueueEventsWait",
            );
            assert_eq!(
                t().Event.pfnGetNativeHandle.unwrap()(e, &mut h),
                UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                "{}",
                p.name
            );
            release_event(e);
            ok(t().Queue.pfnRelease.unwrap()(q), "urQueueRelease");
            ok(t().Context.pfnRelease.unwrap()(c), "urContextRelease");
        }
    }
}
