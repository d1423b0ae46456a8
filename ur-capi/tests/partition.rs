//! Sub-devices through `urDevicePartition`, as dpctl makes them
//! (`create_sub_devices(partition=n)`, `[counts]`, `"next_partitionable"`):
//! the count query and the handle query agree and answer the same handles,
//! sub-devices report their parent, partition and compute units, a context
//! over them moves bytes, and requests that do not fit are refused. Root
//! devices keep a reference count of 1. Runs on every device that reports
//! a partition kind (Intel's CPU OpenCL here); skips, saying why, where
//! none does (`UR_REQUIRE_OPENCL=1`, CI, makes that a failure).

#![allow(missing_docs)]

use std::ptr::{null, null_mut};

use ur_adapter_rust::ddi;
use ur_adapter_rust::sys::*;

mod capi;
use capi::{device_array, device_value, devices, ok};

fn props(list: &[ur_device_partition_property_t]) -> ur_device_partition_properties_t {
    ur_device_partition_properties_t {
        stype: UR_STRUCTURE_TYPE_DEVICE_PARTITION_PROPERTIES,
        pNext: null_mut(),
        pProperties: list.as_ptr(),
        PropCount: list.len(),
    }
}

fn equally(n: u32) -> ur_device_partition_property_t {
    ur_device_partition_property_t {
        type_: UR_DEVICE_PARTITION_EQUALLY,
        value: ur_device_partition_value_t { equally: n },
    }
}

fn count(n: u32) -> ur_device_partition_property_t {
    ur_device_partition_property_t {
        type_: UR_DEVICE_PARTITION_BY_COUNTS,
        value: ur_device_partition_value_t { count: n },
    }
}

/// Partitions `d`; the sub-devices, or the result code.
///
/// # Safety
///
/// `t` is this library's table and `d` a device of it.
unsafe fn partition(
    t: &ur_dditable_t,
    d: ur_device_handle_t,
    list: &[ur_device_partition_property_t],
) -> Result<Vec<ur_device_handle_t>, ur_result_t> {
    let p = props(list);
    let mut n = 0u32;
    // SAFETY: as the function's contract says; `p` lists `list`.
    unsafe {
        match t.Device.pfnPartition.unwrap()(d, &p, 0, null_mut(), &mut n) {
            UR_RESULT_SUCCESS => {}
            e => return Err(e),
        }
        let mut subs = vec![null_mut(); n as usize];
        ok(
            t.Device.pfnPartition.unwrap()(d, &p, n, subs.as_mut_ptr(), null_mut()),
            "urDevicePartition",
        );
        Ok(subs)
    }
}

#[test]
fn partitionable_devices_split_into_working_sub_devices() {
    // SAFETY: the table is this library's, built once and never written.
    let t = unsafe { &*ddi::table() };
    // SAFETY: every call passes live out-pointers, buffers of the sizes
    // given and handles this library returned, as the UR specification asks.
    unsafe {
        let mut ran = 0;
        for (d, _) in devices(t) {
            // Root devices are not reference counted.
            ok(t.Device.pfnRetain.unwrap()(d), "urDeviceRetain");
            assert_eq!(device_value::<u32>(t, d, UR_DEVICE_INFO_REFERENCE_COUNT), 1);
            ok(t.Device.pfnRelease.unwrap()(d), "urDeviceRelease");
            assert!(device_value::<ur_device_handle_t>(t, d, UR_DEVICE_INFO_PARENT_DEVICE).is_null());

            let kinds: Vec<ur_device_partition_t> = device_array(t, d, UR_DEVICE_INFO_SUPPORTED_PARTITIONS);
            if !kinds.contains(&UR_DEVICE_PARTITION_EQUALLY) {
                assert_eq!(
                    partition(t, d, &[equally(1)]).unwrap_err(),
                    UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
                    "a device that lists no equal partition refuses one"
                );
                continue;
            }
            check_sub_devices(t, d, &kinds);
            ran += 1;
        }
        if ran == 0 {
            assert!(
                std::env::var("UR_REQUIRE_OPENCL").as_deref() != Ok("1"),
                "no device can be partitioned (Intel's CPU OpenCL: cargo xtask setup)"
            );
            eprintln!("skipped: no device can be partitioned (Intel's CPU OpenCL: cargo xtask setup)");
        }
    }
}

/// # Safety
///
/// `t` is this library's table and `d` a device of it that partitions equally.
unsafe fn check_sub_devices(t: &ur_dditable_t, d: ur_device_handle_t, kinds: &[ur_device_partition_t]) {
    // SAFETY: as the test's contract says.
    unsafe {
        let units: u32 = device_value(t, d, UR_DEVICE_INFO_MAX_COMPUTE_UNITS);
        assert!(units >= 1);
        let subs = partition(t, d, &[equally(1)]).expect("equal partition");
        assert_eq!(subs.len() as u32, units, "one sub-device per compute unit");
        assert_eq!(
            partition(t, d, &[equally(1)]).unwrap(),
            subs,
            "the same partition answers the same sub-devices"
        );
        for &s in &subs {
            assert_eq!(
                device_value::<ur_device_handle_t>(t, s, UR_DEVICE_INFO_PARENT_DEVICE),
                d
            );
            assert_eq!(device_value::<u32>(t, s, UR_DEVICE_INFO_MAX_COMPUTE_UNITS), 1);
            let how: Vec<ur_device_partition_property_t> = device_array(t, s, UR_DEVICE_INFO_PARTITION_TYPE);
            assert_eq!(how.len(), 1);
            assert_eq!((how[0].type_, how[0].value.equally), (UR_DEVICE_PARTITION_EQUALLY, 1));
            assert_eq!(
                device_value::<ur_platform_handle_t>(t, s, UR_DEVICE_INFO_PLATFORM),
                device_value::<ur_platform_handle_t>(t, d, UR_DEVICE_INFO_PLATFORM)
            );
            // Sub-devices are reference counted.
            let before: u32 = device_value(t, s, UR_DEVICE_INFO_REFERENCE_COUNT);
            ok(t.Device.pfnRetain.unwrap()(s), "retain sub-device");
            assert_eq!(device_value::<u32>(t, s, UR_DEVICE_INFO_REFERENCE_COUNT), before + 1);
            ok(t.Device.pfnRelease.unwrap()(s), "release sub-device");
        }
        if kinds.contains(&UR_DEVICE_PARTITION_BY_COUNTS) && units >= 2 {
            let two = partition(t, d, &[count(1), count(units - 1)]).expect("partition by counts");
            assert_eq!(two.len(), 2);
            assert_eq!(
                device_value::<u32>(t, two[1], UR_DEVICE_INFO_MAX_COMPUTE_UNITS),
                units - 1
            );
        }

        // Requests that do not fit: refused, nothing made.
        for bad in [
            vec![equally(0)],
            vec![equally(units + 1)],
            vec![count(units), count(1)],
            vec![],
        ] {
            assert_eq!(
                partition(t, d, &bad).unwrap_err(),
                UR_RESULT_ERROR_INVALID_VALUE,
                "{} properties",
                bad.len()
            );
        }
        // The property list outlives every use of `p`, which points into it.
        let one_each = [equally(1)];
        let p = props(&one_each);
        // Room for fewer handles than sub-devices: the first ones (UR: "only
        // retrieve that number"), each retained once, as the full list is.
        let mut one = [null_mut(); 1];
        let before: u32 = device_value(t, subs[0], UR_DEVICE_INFO_REFERENCE_COUNT);
        let mut made = 0u32;
        ok(
            t.Device.pfnPartition.unwrap()(d, &p, 1, one.as_mut_ptr(), &mut made),
            "room for fewer handles than sub-devices",
        );
        assert_eq!((one[0], made as usize), (subs[0], subs.len()));
        assert_eq!(
            device_value::<u32>(t, subs[0], UR_DEVICE_INFO_REFERENCE_COUNT),
            before + 1
        );
        ok(t.Device.pfnRelease.unwrap()(one[0]), "release sub-device");
        if subs.len() > 1 {
            assert_eq!(
                device_value::<u32>(t, subs[1], UR_DEVICE_INFO_REFERENCE_COUNT),
                device_value::<u32>(t, subs[0], UR_DEVICE_INFO_REFERENCE_COUNT),
                "a sub-device not handed out is not retained"
            );
        }

        // A context over every sub-device: bytes written through one
        // sub-device's queue read back through another's.
        let mut c = null_mut();
        ok(
            t.Context.pfnCreate.unwrap()(subs.len() as u32, subs.as_ptr(), null(), &mut c),
            "context over sub-devices",
        );
        let (first, last) = (subs[0], subs[subs.len() - 1]);
        let (mut q0, mut q1) = (null_mut(), null_mut());
        ok(
            t.Queue.pfnCreate.unwrap()(c, first, null(), &mut q0),
            "queue on a sub-device",
        );
        ok(t.Queue.pfnCreate.unwrap()(c, last, null(), &mut q1), "queue on another");
        const N: usize = 1 << 16;
        let src: Vec<u8> = (0..N).map(|i| (i * 7 % 251) as u8).collect();
        let buf = capi::write_here_read_there(t, c, q0, q1, &src);
        ok(t.Mem.pfnRelease.unwrap()(buf), "release buffer");
        ok(t.Queue.pfnRelease.unwrap()(q0), "release queue");
        ok(t.Queue.pfnRelease.unwrap()(q1), "release queue");
        ok(t.Context.pfnRelease.unwrap()(c), "release context");
    }
}
