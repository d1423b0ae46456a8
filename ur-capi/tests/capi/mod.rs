//! What the in-process tests of the C ABI share: result checks, the
//! platform and device walk, device queries.

#![allow(dead_code)] // reason: each test binary uses a part.

use std::ptr::null_mut;

use ur_adapter_rust::sys::*;

pub fn ok(r: ur_result_t, what: &str) {
    assert_eq!(r, UR_RESULT_SUCCESS, "{what}");
}

/// Every device of every platform, with its platform's backend.
///
/// # Safety
///
/// `t` is this library's table.
pub unsafe fn devices(t: &ur_dditable_t) -> Vec<(ur_device_handle_t, ur_backend_t)> {
    let mut a = null_mut();
    let mut out = Vec::new();
    // SAFETY: live out-pointers of the right types and counts.
    unsafe {
        ok(t.Adapter.pfnGet.unwrap()(1, &mut a, null_mut()), "urAdapterGet");
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
            let mut nd = 0;
            t.Device.pfnGet.unwrap()(p, UR_DEVICE_TYPE_ALL, 0, null_mut(), &mut nd);
            let mut ds = vec![null_mut(); nd as usize];
            if nd > 0 {
                ok(
                    t.Device.pfnGet.unwrap()(p, UR_DEVICE_TYPE_ALL, nd, ds.as_mut_ptr(), null_mut()),
                    "urDeviceGet",
                );
            }
            out.extend(ds.into_iter().map(|d| (d, backend)));
        }
    }
    out
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
