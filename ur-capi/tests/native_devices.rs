//! Platforms, devices, contexts, buffers and queues from their native
//! handles (`urPlatformCreateWithNativeHandle`,
//! `urDeviceCreateWithNativeHandle`, `urContextCreateWithNativeHandle`,
//! `urMemBufferCreateWithNativeHandle`, `urQueueCreateWithNativeHandle`):
//! on every OpenCL platform, the `cl_platform_id` / `cl_device_id` our
//! handles answer come back as the same handles (a backend object is never
//! wrapped twice), a sub-device's with one more reference; unknown native
//! handles, a null adapter or a null out-pointer are refused; the native
//! device has no native handle to give. A backend context becomes a context
//! of ours over the devices given, a backend queue a queue of ours; both run
//! commands (a queue in its own context only). A device's UUID, IP
//! version and execution-unit topology are the ones its OpenCL runtime
//! reports, where it reports them.

#![allow(missing_docs)]

use std::ptr::{null, null_mut};

use ur_adapter_rust::sys::*;

mod capi;
use capi::ok;

/// The native handle of a device, if it has one.
///
/// # Safety
///
/// `d` is a device of this library.
unsafe fn native_of_device(t: &ur_dditable_t, d: ur_device_handle_t) -> Option<ur_native_handle_t> {
    let mut n = 0;
    // SAFETY: a live out-pointer (function contract for `d`).
    let r = unsafe { t.Device.pfnGetNativeHandle.unwrap()(d, &mut n) };
    match r {
        UR_RESULT_SUCCESS => Some(n),
        UR_RESULT_ERROR_UNSUPPORTED_FEATURE => None,
        other => panic!("urDeviceGetNativeHandle: {other}"),
    }
}

#[test]
fn platforms_and_devices_come_back_from_their_native_handles() {
    let t = capi::table();
    // SAFETY: this library's table.
    let adapter = unsafe { capi::adapter(t) };
    let mut round_trips = 0;
    for p in capi::platforms_with_host() {
        // SAFETY: handles of this library and live out-pointers throughout.
        unsafe {
            let mut native = 0;
            let r = t.Platform.pfnGetNativeHandle.unwrap()(p.handle, &mut native);
            if p.backend != UR_BACKEND_OPENCL {
                assert_eq!(r, UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "{}", p.name);
                for &d in &p.devices {
                    assert_eq!(
                        native_of_device(t, d),
                        None,
                        "{}: a device without a native handle",
                        p.name
                    );
                }
                continue;
            }
            ok(r, "urPlatformGetNativeHandle");
            let mut back = null_mut();
            ok(
                t.Platform.pfnCreateWithNativeHandle.unwrap()(native, adapter, null(), &mut back),
                &format!("{}: urPlatformCreateWithNativeHandle", p.name),
            );
            assert_eq!(back, p.handle, "{}: the platform we list", p.name);
            for &d in &p.devices {
                let native = native_of_device(t, d).expect("an OpenCL device has a cl_device_id");
                let mut back = null_mut();
                ok(
                    t.Device.pfnCreateWithNativeHandle.unwrap()(native, adapter, null(), &mut back),
                    &format!("{}: urDeviceCreateWithNativeHandle", p.name),
                );
                assert_eq!(back, d, "{}: the device we list", p.name);
                round_trips += 1;
            }
            // A sub-device: its own handle back, with one more reference.
            let d = p.devices[0];
            let prop = ur_device_partition_property_t {
                type_: UR_DEVICE_PARTITION_EQUALLY,
                value: ur_device_partition_value_t { equally: 1 },
            };
            let props = ur_device_partition_properties_t {
                stype: UR_STRUCTURE_TYPE_DEVICE_PARTITION_PROPERTIES,
                pNext: null_mut(),
                pProperties: &prop,
                PropCount: 1,
            };
            let mut sub = null_mut();
            if t.Device.pfnPartition.unwrap()(d, &props, 1, &mut sub, null_mut()) == UR_RESULT_SUCCESS {
                let native = native_of_device(t, sub).expect("an OpenCL sub-device has a cl_device_id");
                let before: u32 = capi::device_value(t, sub, UR_DEVICE_INFO_REFERENCE_COUNT);
                let mut back = null_mut();
                ok(
                    t.Device.pfnCreateWithNativeHandle.unwrap()(native, adapter, null(), &mut back),
                    "urDeviceCreateWithNativeHandle(sub-device)",
                );
                assert_eq!(back, sub, "{}: the sub-device urDevicePartition made", p.name);
                assert_eq!(
                    capi::device_value::<u32>(t, sub, UR_DEVICE_INFO_REFERENCE_COUNT),
                    before + 1
                );
                ok(t.Device.pfnRelease.unwrap()(back), "release");
                ok(t.Device.pfnRelease.unwrap()(sub), "release");
            }
            // Refusals.
            let mut out = null_mut();
            assert_eq!(
                t.Device.pfnCreateWithNativeHandle.unwrap()(native, null_mut(), null(), &mut out),
                UR_RESULT_ERROR_INVALID_NULL_HANDLE
            );
            assert_eq!(
                t.Device.pfnCreateWithNativeHandle.unwrap()(native, adapter, null(), null_mut()),
                UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            assert_eq!(
                t.Platform.pfnCreateWithNativeHandle.unwrap()(native, adapter, null(), null_mut()),
                UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
        }
    }
    // SAFETY: an address that is no backend object: compared, never used.
    unsafe {
        let mut out = null_mut();
        assert_eq!(
            t.Device.pfnCreateWithNativeHandle.unwrap()(0x10, adapter, null(), &mut out),
            UR_RESULT_ERROR_INVALID_VALUE
        );
        let mut out = null_mut();
        assert_eq!(
            t.Platform.pfnCreateWithNativeHandle.unwrap()(0x10, adapter, null(), &mut out),
            UR_RESULT_ERROR_INVALID_VALUE
        );
    }
    if std::env::var_os("UR_REQUIRE_OPENCL").is_some() {
        assert!(
            round_trips > 0,
            "UR_REQUIRE_OPENCL is set but no OpenCL device was checked"
        );
    }
    eprintln!("{round_trips} devices came back from their native handles");
}

/// A context over `d` and a queue on it.
///
/// # Safety
///
/// `d` is a device of this library.
unsafe fn context_queue(t: &ur_dditable_t, d: ur_device_handle_t) -> (ur_context_handle_t, ur_queue_handle_t) {
    let (mut c, mut q) = (null_mut(), null_mut());
    // SAFETY: live out-pointers (function contract for `d`).
    unsafe {
        ok(t.Context.pfnCreate.unwrap()(1, &d, null(), &mut c), "urContextCreate");
        ok(t.Queue.pfnCreate.unwrap()(c, d, null(), &mut q), "urQueueCreate");
    }
    (c, q)
}

#[test]
fn queues_come_back_from_their_native_handles() {
    let t = capi::table();
    let mut adopted = 0;
    for p in capi::platforms_with_host() {
        let d = p.devices[0];
        // SAFETY: handles of this library and live out-pointers and host
        // memory throughout.
        unsafe {
            let (c, q) = context_queue(t, d);
            let mut native = 0;
            let r = t.Queue.pfnGetNativeHandle.unwrap()(q, null_mut(), &mut native);
            if p.backend != UR_BACKEND_OPENCL {
                assert_eq!(r, UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "{}", p.name);
                let mut out = null_mut();
                assert_eq!(
                    t.Queue.pfnCreateWithNativeHandle.unwrap()(0x10, c, d, null(), &mut out),
                    UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                    "{}: no backend queues to adopt",
                    p.name
                );
                ok(t.Queue.pfnRelease.unwrap()(q), "release");
                ok(t.Context.pfnRelease.unwrap()(c), "release");
                continue;
            }
            ok(r, "urQueueGetNativeHandle");
            // With the device named, and with none (the context's device the
            // backend queue runs on).
            for dev in [d, null_mut()] {
                let mut aq = null_mut();
                ok(
                    t.Queue.pfnCreateWithNativeHandle.unwrap()(native, c, dev, null(), &mut aq),
                    &format!("{}: urQueueCreateWithNativeHandle", p.name),
                );
                assert_ne!(aq, q, "a queue handle of its own");
                let mut qc: ur_context_handle_t = null_mut();
                ok(
                    t.Queue.pfnGetInfo.unwrap()(
                        aq,
                        UR_QUEUE_INFO_CONTEXT,
                        size_of::<ur_context_handle_t>(),
                        (&raw mut qc).cast(),
                        null_mut(),
                    ),
                    "UR_QUEUE_INFO_CONTEXT",
                );
                assert_eq!(qc, c);
                let mut qd: ur_device_handle_t = null_mut();
                ok(
                    t.Queue.pfnGetInfo.unwrap()(
                        aq,
                        UR_QUEUE_INFO_DEVICE,
                        size_of::<ur_device_handle_t>(),
                        (&raw mut qd).cast(),
                        null_mut(),
                    ),
                    "UR_QUEUE_INFO_DEVICE",
                );
                assert_eq!(qd, d);
                // Commands run on it: written through the adopted queue, read
                // back through the original.
                let src: Vec<u8> = (0..4096u32).map(|i| (i * 13 % 251) as u8).collect();
                let buf = capi::write_here_read_there(t, c, aq, q, &src);
                ok(t.Mem.pfnRelease.unwrap()(buf), "release buffer");
                ok(t.Queue.pfnRelease.unwrap()(aq), "release adopted queue");
                adopted += 1;
            }
            // The original queue lives on after the adopted one is gone (the
            // adoption took a reference of its own).
            let src = vec![5u8; 256];
            let buf = capi::write_here_read_there(t, c, q, q, &src);
            ok(t.Mem.pfnRelease.unwrap()(buf), "release buffer");
            // A queue of another context is refused.
            let (c2, q2) = context_queue(t, d);
            let mut out = null_mut();
            assert_eq!(
                t.Queue.pfnCreateWithNativeHandle.unwrap()(native, c2, d, null(), &mut out),
                UR_RESULT_ERROR_INVALID_CONTEXT,
                "{}: a backend queue of another context",
                p.name
            );
            assert_eq!(
                t.Queue.pfnCreateWithNativeHandle.unwrap()(native, null_mut(), d, null(), &mut out),
                UR_RESULT_ERROR_INVALID_NULL_HANDLE
            );
            assert_eq!(
                t.Queue.pfnCreateWithNativeHandle.unwrap()(native, c, d, null(), null_mut()),
                UR_RESULT_ERROR_INVALID_NULL_POINTER
            );
            for (qq, cc) in [(q2, c2), (q, c)] {
                ok(t.Queue.pfnRelease.unwrap()(qq), "release queue");
                ok(t.Context.pfnRelease.unwrap()(cc), "release context");
            }
        }
    }
    if std::env::var_os("UR_REQUIRE_OPENCL").is_some() {
        assert!(adopted > 0, "UR_REQUIRE_OPENCL is set but no OpenCL queue was adopted");
    }
    eprintln!("{adopted} backend queues adopted");
}

/// `clGetDeviceInfo(native, param)` into `N` bytes, through the OpenCL ICD
/// loader the adapter uses, if it opens here.
fn cl_device_info<const N: usize>(native: ur_native_handle_t, param: u32) -> Option<[u8; N]> {
    type GetDeviceInfo =
        unsafe extern "C" fn(*mut std::ffi::c_void, u32, usize, *mut std::ffi::c_void, *mut usize) -> i32;
    for name in ["libOpenCL.so.1", "libOpenCL.so"] {
        // SAFETY: the system's OpenCL ICD loader, whose initialisers are
        // the ones the adapter runs when it opens it.
        let Ok(lib) = (unsafe { libloading::Library::new(name) }) else {
            continue;
        };
        // SAFETY: the OpenCL 1.0 signature of `clGetDeviceInfo`.
        let get: libloading::Symbol<'_, GetDeviceInfo> = unsafe { lib.get(b"clGetDeviceInfo\0") }.ok()?;
        let mut value = [0u8; N];
        // SAFETY: a live device; an `N`-byte output, the size of `param`'s value.
        let r = unsafe { get(native as *mut _, param, N, value.as_mut_ptr().cast(), null_mut()) };
        assert_eq!(r, 0, "clGetDeviceInfo({param:#x})");
        return Some(value);
    }
    None
}

/// Does device `d` list OpenCL extension `name`?
fn lists_extension(t: &ur_dditable_t, d: ur_device_handle_t, name: &str) -> bool {
    // SAFETY: a device of this library; the property is a string.
    let ext = unsafe { capi::device_array::<u8>(t, d, UR_DEVICE_INFO_EXTENSIONS) };
    String::from_utf8_lossy(&ext).split([' ', '\0']).any(|e| e == name)
}

/// `UR_DEVICE_INFO_UUID`: a device whose OpenCL runtime has
/// `cl_khr_device_uuid` answers the 16 bytes OpenCL reports for it; one
/// without (PoCL, rusticl, the native device) answers the query as
/// unsupported (UR lists it as optional), never made-up bytes.
#[test]
fn device_uuids_are_the_backends_own() {
    let t = capi::table();
    let mut with_uuid = 0;
    for p in capi::platforms_with_host() {
        for &d in &p.devices {
            let listed = lists_extension(t, d, "cl_khr_device_uuid");
            let mut uuid = [0u8; 16];
            let mut size = 0usize;
            // SAFETY: a live device; a 16-byte output and a size out-pointer.
            let r = unsafe {
                t.Device.pfnGetInfo.unwrap()(d, UR_DEVICE_INFO_UUID, 16, uuid.as_mut_ptr().cast(), &mut size)
            };
            if !listed {
                assert_eq!(
                    r, UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
                    "{}: no UUID to report",
                    p.name
                );
                continue;
            }
            ok(r, &format!("{}: urDeviceGetInfo(UUID)", p.name));
            assert_eq!(size, 16, "{}", p.name);
            // SAFETY: a device of this library.
            let native = unsafe { native_of_device(t, d) }.expect("an OpenCL device has a native handle");
            const CL_DEVICE_UUID_KHR: u32 = 0x106A;
            if let Some(theirs) = cl_device_info::<16>(native, CL_DEVICE_UUID_KHR) {
                assert_eq!(uuid, theirs, "{}: the UUID OpenCL reports", p.name);
            }
            with_uuid += 1;
        }
    }
    eprintln!("{with_uuid} devices with a UUID");
}

/// The IP version and execution-unit topology queries: a device whose
/// OpenCL runtime has `cl_intel_device_attribute_query` (Intel's) answers
/// each with the `uint32_t` OpenCL reports for it; one without (PoCL,
/// rusticl, the native device) answers them as unsupported (optional
/// queries), never made-up figures.
#[test]
fn intel_device_attributes_are_the_backends_own() {
    // Each UR query and the OpenCL parameter it answers from.
    const QUERIES: [(ur_device_info_t, u32); 5] = [
        (UR_DEVICE_INFO_IP_VERSION, 0x4250),
        (UR_DEVICE_INFO_GPU_EU_SLICES, 0x4252),
        (UR_DEVICE_INFO_GPU_SUBSLICES_PER_SLICE, 0x4253),
        (UR_DEVICE_INFO_GPU_EU_COUNT_PER_SUBSLICE, 0x4254),
        (UR_DEVICE_INFO_GPU_HW_THREADS_PER_EU, 0x4255),
    ];
    let t = capi::table();
    let mut with = 0;
    for p in capi::platforms_with_host() {
        for &d in &p.devices {
            let listed = lists_extension(t, d, "cl_intel_device_attribute_query");
            for (query, param) in QUERIES {
                let (mut value, mut size) = (0u32, 0usize);
                // SAFETY: a live device; a 4-byte output and a size out-pointer.
                let r = unsafe { t.Device.pfnGetInfo.unwrap()(d, query, 4, (&raw mut value).cast(), &mut size) };
                if !listed {
                    assert_eq!(r, UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION, "{}: query {query}", p.name);
                    continue;
                }
                ok(r, &format!("{}: urDeviceGetInfo({query})", p.name));
                assert_eq!(size, 4, "{}: query {query}", p.name);
                // SAFETY: a device of this library.
                let native = unsafe { native_of_device(t, d) }.expect("an OpenCL device has a native handle");
                if let Some(theirs) = cl_device_info::<4>(native, param) {
                    assert_eq!(value, u32::from_ne_bytes(theirs), "{}: query {query}", p.name);
                }
            }
            with += usize::from(listed);
        }
    }
    eprintln!("{with} devices with Intel's device attributes");
}

/// A blocking write of `data` at the start of buffer `b` on `q`.
///
/// # Safety
///
/// `q` and `b` are live handles of this library, `b` at least `data.len()` bytes.
unsafe fn write_all(t: &ur_dditable_t, q: ur_queue_handle_t, b: ur_mem_handle_t, data: &[u8]) {
    // SAFETY: live handles (function contract); `data` outlives the blocking call.
    let r = unsafe {
        t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, true, 0, data.len(), data.as_ptr().cast(), 0, null(), null_mut())
    };
    ok(r, "urEnqueueMemBufferWrite");
}

/// A blocking read of the first `len` bytes of buffer `b` on `q`.
///
/// # Safety
///
/// As [`write_all`], for `len` bytes.
unsafe fn read_all(t: &ur_dditable_t, q: ur_queue_handle_t, b: ur_mem_handle_t, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: live handles (function contract); `out` holds `len` bytes and
    // outlives the blocking call.
    let r = unsafe {
        t.Enqueue.pfnMemBufferRead.unwrap()(q, b, true, 0, len, out.as_mut_ptr().cast(), 0, null(), null_mut())
    };
    ok(r, "urEnqueueMemBufferRead");
    out
}

/// `urContextCreateWithNativeHandle`: on every OpenCL device, our
/// context's `cl_context` becomes a second context handle over the same
/// backend context and the device given, which answers that device and
/// that native handle and runs a queue; no device or a null out-pointer is
/// refused; the native device has no backend context to adopt.
#[test]
fn contexts_come_back_from_their_native_handles() {
    let t = capi::table();
    // SAFETY: this library's table.
    let adapter = unsafe { capi::adapter(t) };
    let mut adopted = 0;
    for p in capi::platforms_with_host() {
        let d = p.devices[0];
        // SAFETY: handles of this library and live out-pointers throughout.
        unsafe {
            let (c, q) = context_queue(t, d);
            let mut native = 0;
            let r = t.Context.pfnGetNativeHandle.unwrap()(c, &mut native);
            let mut out = null_mut();
            if p.backend != UR_BACKEND_OPENCL {
                assert_eq!(r, UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "{}", p.name);
                assert_eq!(
                    t.Context.pfnCreateWithNativeHandle.unwrap()(0x10, adapter, 1, &d, null(), &mut out),
                    UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                    "{}: no backend contexts to adopt",
                    p.name
                );
            } else {
                ok(r, "urContextGetNativeHandle");
                assert_eq!(
                    t.Context.pfnCreateWithNativeHandle.unwrap()(native, adapter, 0, null(), null(), &mut out),
                    UR_RESULT_ERROR_INVALID_VALUE,
                    "{}: the devices are not guessed",
                    p.name
                );
                assert_eq!(
                    t.Context.pfnCreateWithNativeHandle.unwrap()(native, adapter, 1, &d, null(), null_mut()),
                    UR_RESULT_ERROR_INVALID_NULL_POINTER,
                    "{}",
                    p.name
                );
                let mut ac = null_mut();
                ok(
                    t.Context.pfnCreateWithNativeHandle.unwrap()(native, adapter, 1, &d, null(), &mut ac),
                    &format!("{}: urContextCreateWithNativeHandle", p.name),
                );
                assert_ne!(ac, c, "a context handle of its own");
                let mut devs = [null_mut::<ur_device_handle_t_>(); 2];
                let mut size = 0usize;
                ok(
                    t.Context.pfnGetInfo.unwrap()(
                        ac,
                        UR_CONTEXT_INFO_DEVICES,
                        size_of_val(&devs),
                        devs.as_mut_ptr().cast(),
                        &mut size,
                    ),
                    "urContextGetInfo(DEVICES)",
                );
                assert_eq!((size, devs[0]), (size_of::<ur_device_handle_t>(), d), "{}", p.name);
                let mut back = 0;
                ok(
                    t.Context.pfnGetNativeHandle.unwrap()(ac, &mut back),
                    "urContextGetNativeHandle",
                );
                assert_eq!(back, native, "{}: the same cl_context", p.name);
                // It runs commands: a queue of it writes and reads back.
                let mut aq = null_mut();
                ok(
                    t.Queue.pfnCreate.unwrap()(ac, d, null(), &mut aq),
                    "urQueueCreate(adopted)",
                );
                let mut b = null_mut();
                ok(
                    t.Mem.pfnBufferCreate.unwrap()(ac, UR_MEM_FLAG_READ_WRITE, 64, null(), &mut b),
                    "urMemBufferCreate",
                );
                let data = [9u8; 64];
                write_all(t, aq, b, &data);
                assert_eq!(read_all(t, aq, b, 64), data, "{}", p.name);
                ok(t.Mem.pfnRelease.unwrap()(b), "release");
                ok(t.Queue.pfnRelease.unwrap()(aq), "release");
                ok(t.Context.pfnRelease.unwrap()(ac), "release");
                adopted += 1;
            }
            ok(t.Queue.pfnRelease.unwrap()(q), "release");
            ok(t.Context.pfnRelease.unwrap()(c), "release");
        }
    }
    eprintln!("{adopted} contexts adopted");
}

/// `urMemGetNativeHandle` and `urMemBufferCreateWithNativeHandle`: on every
/// OpenCL device, a buffer's `cl_mem` becomes a second buffer handle of the
/// context with the same size and bytes; a buffer of a context of several
/// devices (the memory manager's) has no one native object; the native
/// device has no backend memory.
#[test]
fn buffers_come_back_from_their_native_handles() {
    let t = capi::table();
    let mut adopted = 0;
    for p in capi::platforms_with_host() {
        let d = p.devices[0];
        // SAFETY: handles of this library and live out-pointers and host
        // memory throughout.
        unsafe {
            let (c, q) = context_queue(t, d);
            let mut b = null_mut();
            ok(
                t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, 256, null(), &mut b),
                "urMemBufferCreate",
            );
            let data = [3u8; 256];
            write_all(t, q, b, &data);
            let mut native = 0;
            let r = t.Mem.pfnGetNativeHandle.unwrap()(b, d, &mut native);
            let mut out = null_mut();
            if p.backend != UR_BACKEND_OPENCL {
                assert_eq!(r, UR_RESULT_ERROR_UNSUPPORTED_FEATURE, "{}", p.name);
                assert_eq!(
                    t.Mem.pfnBufferCreateWithNativeHandle.unwrap()(0x10, c, null(), &mut out),
                    UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                    "{}: no backend memory to adopt",
                    p.name
                );
            } else {
                ok(r, "urMemGetNativeHandle");
                assert_eq!(
                    t.Mem.pfnBufferCreateWithNativeHandle.unwrap()(native, c, null(), null_mut()),
                    UR_RESULT_ERROR_INVALID_NULL_POINTER,
                    "{}",
                    p.name
                );
                ok(
                    t.Mem.pfnBufferCreateWithNativeHandle.unwrap()(native, c, null(), &mut out),
                    &format!("{}: urMemBufferCreateWithNativeHandle", p.name),
                );
                assert_ne!(out, b, "a buffer handle of its own");
                let (mut size, mut ctx) = (0usize, null_mut::<ur_context_handle_t_>());
                ok(
                    t.Mem.pfnGetInfo.unwrap()(
                        out,
                        UR_MEM_INFO_SIZE,
                        size_of::<usize>(),
                        (&raw mut size).cast(),
                        null_mut(),
                    ),
                    "urMemGetInfo(SIZE)",
                );
                ok(
                    t.Mem.pfnGetInfo.unwrap()(
                        out,
                        UR_MEM_INFO_CONTEXT,
                        size_of::<ur_context_handle_t>(),
                        (&raw mut ctx).cast(),
                        null_mut(),
                    ),
                    "urMemGetInfo(CONTEXT)",
                );
                assert_eq!((size, ctx), (256, c), "{}", p.name);
                let mut back = 0;
                ok(
                    t.Mem.pfnGetNativeHandle.unwrap()(out, d, &mut back),
                    "urMemGetNativeHandle(adopted)",
                );
                assert_eq!(back, native, "{}: the same cl_mem", p.name);
                assert_eq!(
                    read_all(t, q, out, 256),
                    data,
                    "{}: read through the adopted buffer",
                    p.name
                );
                ok(t.Mem.pfnRelease.unwrap()(out), "release");
                adopted += 1;
                // A context of several devices: its buffers are the manager's.
                if p.devices.len() > 1 {
                    let mut c2 = null_mut();
                    ok(
                        t.Context.pfnCreate.unwrap()(2, p.devices.as_ptr(), null(), &mut c2),
                        "urContextCreate(two devices)",
                    );
                    let mut b2 = null_mut();
                    ok(
                        t.Mem.pfnBufferCreate.unwrap()(c2, UR_MEM_FLAG_READ_WRITE, 256, null(), &mut b2),
                        "urMemBufferCreate",
                    );
                    let mut n2 = 0;
                    assert_eq!(
                        t.Mem.pfnGetNativeHandle.unwrap()(b2, d, &mut n2),
                        UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                        "{}: a managed buffer",
                        p.name
                    );
                    assert_eq!(
                        t.Mem.pfnBufferCreateWithNativeHandle.unwrap()(native, c2, null(), &mut out),
                        UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                        "{}: into a context of several devices",
                        p.name
                    );
                    ok(t.Mem.pfnRelease.unwrap()(b2), "release");
                    ok(t.Context.pfnRelease.unwrap()(c2), "release");
                }
            }
            ok(t.Mem.pfnRelease.unwrap()(b), "release");
            ok(t.Queue.pfnRelease.unwrap()(q), "release");
            ok(t.Context.pfnRelease.unwrap()(c), "release");
        }
    }
    eprintln!("{adopted} buffers adopted");
}
