//! Platforms and devices from their native handles
//! (`urPlatformCreateWithNativeHandle`, `urDeviceCreateWithNativeHandle`):
//! on every OpenCL platform, the `cl_platform_id` / `cl_device_id` our
//! handles answer come back as the same handles (a backend object is never
//! wrapped twice), a sub-device's with one more reference; unknown native
//! handles, a null adapter or a null out-pointer are refused; the native
//! device has no native handle to give.

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
