//! What the in-process tests of the C ABI share: result checks, the
//! platform and device walk, device queries.

#![allow(dead_code)] // reason: each test binary uses a part.

use std::ptr::null_mut;

use ur_adapter_rust::sys::*;

/// This library's dispatch table.
pub fn table() -> &'static ur_dditable_t {
    // SAFETY: the table is this library's, built once and never written.
    unsafe { &*ur_adapter_rust::ddi::table() }
}

/// Every platform with a device, the host-only native one included
/// (`UR_RUST_HOST_PLATFORMS=1`, set before the library's first call: a
/// test binary that uses this makes every test come through here first).
pub fn platforms_with_host() -> Vec<Plat> {
    static ENV: std::sync::Once = std::sync::Once::new();
    ENV.call_once(|| std::env::set_var("UR_RUST_HOST_PLATFORMS", "1"));
    // SAFETY: this library's table.
    let out: Vec<Plat> = unsafe { platforms(table()) }
        .into_iter()
        .filter(|p| !p.devices.is_empty())
        .collect();
    if !out.iter().any(|p| p.backend == UR_BACKEND_OPENCL) {
        eprintln!("note: no OpenCL platform (set OCL_ICD_VENDORS as `cargo xtask ci` does): native only");
    }
    out
}

pub fn ok(r: ur_result_t, what: &str) {
    assert_eq!(r, UR_RESULT_SUCCESS, "{what}");
}

/// A platform of this library: handle, name, UR backend and devices.
#[derive(Debug)]
pub struct Plat {
    pub handle: ur_platform_handle_t,
    pub name: String,
    pub backend: ur_backend_t,
    pub devices: Vec<ur_device_handle_t>,
}

/// This library's adapter handle.
///
/// # Safety
///
/// `t` is this library's table.
pub unsafe fn adapter(t: &ur_dditable_t) -> ur_adapter_handle_t {
    let mut a = null_mut();
    // SAFETY: a live out-pointer (function contract for `t`).
    ok(
        unsafe { t.Adapter.pfnGet.unwrap()(1, &mut a, null_mut()) },
        "urAdapterGet",
    );
    a
}

/// Every platform the library lists, with its devices (platforms without
/// a device included, with none).
///
/// # Safety
///
/// `t` is this library's table.
pub unsafe fn platforms(t: &ur_dditable_t) -> Vec<Plat> {
    let mut out = Vec::new();
    // SAFETY: live out-pointers of the right types and counts; handles the
    // library returned.
    unsafe {
        let a = adapter(t);
        let mut np = 0;
        ok(t.Platform.pfnGet.unwrap()(a, 0, null_mut(), &mut np), "urPlatformGet");
        let mut ps = vec![null_mut(); np as usize];
        ok(
            t.Platform.pfnGet.unwrap()(a, np, ps.as_mut_ptr(), null_mut()),
            "urPlatformGet",
        );
        for p in ps {
            let mut backend: ur_backend_t = 0;
            ok(
                t.Platform.pfnGetInfo.unwrap()(
                    p,
                    UR_PLATFORM_INFO_BACKEND,
                    size_of::<ur_backend_t>(),
                    (&raw mut backend).cast(),
                    null_mut(),
                ),
                "platform backend",
            );
            let mut name = [0u8; 256];
            let mut len = 0;
            ok(
                t.Platform.pfnGetInfo.unwrap()(p, UR_PLATFORM_INFO_NAME, 256, name.as_mut_ptr().cast(), &mut len),
                "platform name",
            );
            let name = String::from_utf8_lossy(&name[..len.saturating_sub(1)]).into_owned();
            let mut nd = 0;
            let mut devices = Vec::new();
            if t.Device.pfnGet.unwrap()(p, UR_DEVICE_TYPE_ALL, 0, null_mut(), &mut nd) == UR_RESULT_SUCCESS && nd > 0 {
                devices = vec![null_mut(); nd as usize];
                ok(
                    t.Device.pfnGet.unwrap()(p, UR_DEVICE_TYPE_ALL, nd, devices.as_mut_ptr(), null_mut()),
                    "urDeviceGet",
                );
            }
            out.push(Plat {
                handle: p,
                name,
                backend,
                devices,
            });
        }
    }
    out
}

/// Every device of every platform, with its platform's backend.
///
/// # Safety
///
/// `t` is this library's table.
pub unsafe fn devices(t: &ur_dditable_t) -> Vec<(ur_device_handle_t, ur_backend_t)> {
    // SAFETY: function contract.
    let plats = unsafe { platforms(t) };
    plats
        .into_iter()
        .flat_map(|p| p.devices.into_iter().map(move |d| (d, p.backend)))
        .collect()
}

/// A plain-data device property.
///
/// # Safety
///
/// `t` is this library's table, `d` a device of it, and `T` the type the
/// property holds.
pub unsafe fn device_value<T: Copy + Default>(t: &ur_dditable_t, d: ur_device_handle_t, prop: ur_device_info_t) -> T {
    let mut v = T::default();
    // SAFETY: `v` is writable for `size_of::<T>()` bytes (function contract).
    let r = unsafe { t.Device.pfnGetInfo.unwrap()(d, prop, size_of::<T>(), (&raw mut v).cast(), null_mut()) };
    assert_eq!(r, UR_RESULT_SUCCESS, "device property {prop}");
    v
}

/// An array device property of `T` entries.
///
/// # Safety
///
/// As [`device_value`].
pub unsafe fn device_array<T: Copy + Default>(
    t: &ur_dditable_t,
    d: ur_device_handle_t,
    prop: ur_device_info_t,
) -> Vec<T> {
    let mut size = 0usize;
    // SAFETY: size query (function contract).
    let r = unsafe { t.Device.pfnGetInfo.unwrap()(d, prop, 0, null_mut(), &mut size) };
    assert_eq!(r, UR_RESULT_SUCCESS, "size of device property {prop}");
    let mut v = vec![T::default(); size / size_of::<T>()];
    if size > 0 {
        // SAFETY: `v` holds `size` bytes.
        let r = unsafe { t.Device.pfnGetInfo.unwrap()(d, prop, size, v.as_mut_ptr().cast(), null_mut()) };
        assert_eq!(r, UR_RESULT_SUCCESS, "device property {prop}");
    }
    v
}

/// A kernel argument of buffer `b` (read-write) at `index`.
pub fn mem_arg(index: u32, b: ur_mem_handle_t) -> ur_exp_kernel_arg_properties_t {
    ur_exp_kernel_arg_properties_t {
        stype: UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES,
        pNext: null_mut(),
        type_: UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ,
        index,
        size: 8,
        value: ur_exp_kernel_arg_value_t {
            memObjTuple: ur_exp_kernel_arg_mem_obj_tuple_t {
                hMem: b,
                flags: UR_MEM_FLAG_READ_WRITE,
            },
        },
    }
}

/// Writes `src` into a new buffer of context `c` through `qa`, reads it
/// back through `qb` and checks every byte; returns the buffer.
///
/// # Safety
///
/// `t` is this library's table; the handles are its, `qa` and `qb` queues
/// of `c`.
pub unsafe fn write_here_read_there(
    t: &ur_dditable_t,
    c: ur_context_handle_t,
    qa: ur_queue_handle_t,
    qb: ur_queue_handle_t,
    src: &[u8],
) -> ur_mem_handle_t {
    let n = src.len();
    let mut buf = null_mut();
    // SAFETY: live out-pointers and host memory of `n` bytes; the caller's
    // handles.
    unsafe {
        ok(
            t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, n, std::ptr::null(), &mut buf),
            "buffer",
        );
        ok(
            t.Enqueue.pfnMemBufferWrite.unwrap()(
                qa,
                buf,
                true,
                0,
                n,
                src.as_ptr().cast(),
                0,
                std::ptr::null(),
                null_mut(),
            ),
            "write through the first queue",
        );
        let mut back = vec![0u8; n];
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(
                qb,
                buf,
                true,
                0,
                n,
                back.as_mut_ptr().cast(),
                0,
                std::ptr::null(),
                null_mut(),
            ),
            "read through the second",
        );
        assert!(back == src, "every byte read back through the other queue");
    }
    buf
}
