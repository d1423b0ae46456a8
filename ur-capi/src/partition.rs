//! `urDevicePartition`: sub-devices, and the partition properties device
//! queries report.
//!
//! A partition asks the runtime (`Runtime::partition_device`, which checks
//! it against the device's [`ur_api::PartitionCaps`] and has the adapter
//! split the device: `clCreateSubDevices` on OpenCL). The sub-devices get
//! handles and device records ([`crate::state::Device`]) like root devices.
//! The same partition of the same device answers the same sub-devices
//! again, as Level Zero's do: libsycl asks twice (count, then handles), and
//! a program that partitions in a loop does not grow the process.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use ur_api::{AffinityDomains, DeviceId, Partition, PartitionKinds};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, register};
use crate::info::{entry, put};
use crate::objects::{Kind, Object};
use crate::state::{self, platform_of, state};
use crate::sys::*;

/// Partitions made so far: (device, partition) -> the sub-devices' handles.
fn made() -> &'static Mutex<HashMap<(DeviceId, Partition), Vec<usize>>> {
    static MADE: OnceLock<Mutex<HashMap<(DeviceId, Partition), Vec<usize>>>> = OnceLock::new();
    MADE.get_or_init(Default::default)
}

/// The partition a UR property list asks for.
///
/// # Safety
///
/// `props` is null or a valid `ur_device_partition_properties_t` whose
/// `pProperties` holds `PropCount` entries.
unsafe fn requested(props: *const ur_device_partition_properties_t) -> Result<Partition, CapiError> {
    // SAFETY: null or valid (function contract).
    let props = unsafe { props.as_ref() }.ok_or(CapiError::NullPointer)?;
    if props.pProperties.is_null() {
        return Err(CapiError::NullPointer);
    }
    if props.PropCount == 0 {
        return Err(CapiError::InvalidValue);
    }
    // SAFETY: `PropCount` entries (function contract).
    let list = unsafe { std::slice::from_raw_parts(props.pProperties, props.PropCount) };
    match list[0].type_ {
        UR_DEVICE_PARTITION_EQUALLY if list.len() == 1 => {
            // SAFETY: the member `type_` names; every member is a plain `u32`.
            Ok(Partition::Equally(unsafe { list[0].value.equally }))
        }
        UR_DEVICE_PARTITION_BY_COUNTS => list
            .iter()
            .map(|p| match p.type_ {
                // SAFETY: as above.
                UR_DEVICE_PARTITION_BY_COUNTS => Ok(unsafe { p.value.count }),
                _ => Err(CapiError::InvalidValue),
            })
            .collect::<Result<Vec<u32>, _>>()
            .map(Partition::ByCounts),
        UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN if list.len() == 1 => {
            // SAFETY: as above.
            let bits = unsafe { list[0].value.affinity_domain };
            AffinityDomains::from_bits(bits)
                .map(Partition::ByAffinityDomain)
                .ok_or(CapiError::InvalidValue)
        }
        UR_DEVICE_PARTITION_EQUALLY | UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN => Err(CapiError::InvalidValue),
        UR_DEVICE_PARTITION_BY_CSLICE => Err(CapiError::Unsupported),
        _ => Err(CapiError::UnsupportedEnumeration),
    }
}

/// The sub-devices of a partition: made once, then the same handles.
fn sub_devices(parent: &state::Device, how: Partition) -> Result<Vec<usize>, CapiError> {
    let mut made = made().lock();
    if let Some(h) = made.get(&(parent.id, how.clone())) {
        return Ok(h.clone());
    }
    let st = state();
    let ids = st.rt.partition_device(parent.id, &how)?;
    let plat = platform_of(st.rt.device_platform(parent.id)?).ok_or(CapiError::Invalid(Kind::Platform))?;
    let mut handles = Vec::with_capacity(ids.len());
    for id in ids {
        let h = register::<ur_device_handle_t_>(Object::Device(id)) as usize;
        let rec = state::Device::new(&st.rt, h, id, plat, Some((parent.handle, how.clone())))?;
        st.sub_devices.write().insert(id, Arc::new(rec));
        handles.push(h);
    }
    made.insert((parent.id, how), handles.clone());
    Ok(handles)
}

/// `urDevicePartition`: the sub-devices of `d` the properties ask for
/// (equally, by counts, by affinity domain; by compute slice is a GPU
/// partition no backend here offers: `UNSUPPORTED_FEATURE`). A device
/// that cannot be split that way answers `UNSUPPORTED_FEATURE`, a request
/// that does not fit it `INVALID_VALUE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDevicePartition(
    d: ur_device_handle_t,
    props: *const ur_device_partition_properties_t,
    n: u32,
    out: *mut ur_device_handle_t,
    count: *mut u32,
) -> ur_result_t {
    entry(|| {
        let id = get::<DeviceId, _>(d)?;
        // SAFETY: module contract.
        let how = unsafe { requested(props) }?;
        if !out.is_null() && n == 0 {
            return Err(CapiError::InvalidValue);
        }
        let parent = state::device(id)?;
        let subs = sub_devices(&parent, how)?;
        if !out.is_null() {
            // Room for fewer than the partition makes: the first `n` (UR:
            // "shall only retrieve that number of sub-devices").
            for (i, h) in subs.iter().take(n as usize).enumerate() {
                handles::retain(*h as ur_device_handle_t, Kind::Device)?;
                // SAFETY: `out` holds `n` handles (module contract) and
                // `i < n`.
                unsafe { out.add(i).write(*h as ur_device_handle_t) };
            }
        }
        // SAFETY: null or writable (module contract).
        unsafe { put(count, subs.len() as u32) };
        Ok(())
    })
}

/// `UR_DEVICE_INFO_SUPPORTED_PARTITIONS`: the partition kinds, as UR names them.
pub fn supported(kinds: PartitionKinds) -> Vec<ur_device_partition_t> {
    [
        (PartitionKinds::EQUALLY, UR_DEVICE_PARTITION_EQUALLY),
        (PartitionKinds::BY_COUNTS, UR_DEVICE_PARTITION_BY_COUNTS),
        (
            PartitionKinds::BY_AFFINITY_DOMAIN,
            UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
        ),
    ]
    .into_iter()
    .filter(|(k, _)| kinds.contains(*k))
    .map(|(_, t)| t)
    .collect()
}

/// `UR_DEVICE_INFO_PARTITION_TYPE` of a sub-device: the property list
/// that made it (an affinity-domain partition reports the domain given,
/// as OpenCL's `CL_DEVICE_PARTITION_TYPE` does).
pub fn properties(how: &Partition) -> Vec<ur_device_partition_property_t> {
    let prop = |type_, value| ur_device_partition_property_t { type_, value };
    match how {
        Partition::Equally(n) => vec![prop(
            UR_DEVICE_PARTITION_EQUALLY,
            ur_device_partition_value_t { equally: *n },
        )],
        Partition::ByCounts(c) => c
            .iter()
            .map(|&count| prop(UR_DEVICE_PARTITION_BY_COUNTS, ur_device_partition_value_t { count }))
            .collect(),
        Partition::ByAffinityDomain(dom) => vec![prop(
            UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
            ur_device_partition_value_t {
                affinity_domain: dom.bits(),
            },
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(props: &[ur_device_partition_property_t]) -> Result<Partition, CapiError> {
        let p = ur_device_partition_properties_t {
            stype: UR_STRUCTURE_TYPE_DEVICE_PARTITION_PROPERTIES,
            pNext: std::ptr::null_mut(),
            pProperties: props.as_ptr(),
            PropCount: props.len(),
        };
        // SAFETY: a valid list of `props.len()` entries.
        unsafe { requested(&p) }
    }

    #[test]
    fn property_lists_round_trip() {
        for how in [
            Partition::Equally(2),
            Partition::ByCounts(vec![1, 3]),
            Partition::ByAffinityDomain(AffinityDomains::NUMA),
        ] {
            assert_eq!(list(&properties(&how)).unwrap(), how);
        }
    }

    #[test]
    fn malformed_lists_are_refused() {
        let eq = properties(&Partition::Equally(2))[0];
        let cnt = properties(&Partition::ByCounts(vec![1]))[0];
        assert_eq!(list(&[]).unwrap_err(), CapiError::InvalidValue);
        assert_eq!(list(&[eq, eq]).unwrap_err(), CapiError::InvalidValue);
        assert_eq!(list(&[cnt, eq]).unwrap_err(), CapiError::InvalidValue);
        let dom = |bits| ur_device_partition_property_t {
            type_: UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN,
            value: ur_device_partition_value_t { affinity_domain: bits },
        };
        assert_eq!(list(&[dom(1 << 9)]).unwrap_err(), CapiError::InvalidValue);
        let slice = ur_device_partition_property_t {
            type_: UR_DEVICE_PARTITION_BY_CSLICE,
            value: ur_device_partition_value_t { count: 0 },
        };
        assert_eq!(list(&[slice]).unwrap_err(), CapiError::Unsupported);
        // SAFETY: null is allowed by the contract.
        let null = unsafe { requested(std::ptr::null()) };
        assert_eq!(null.unwrap_err(), CapiError::NullPointer);
    }

    #[test]
    fn supported_kinds_are_listed_in_ur_order() {
        assert_eq!(
            supported(PartitionKinds::BY_AFFINITY_DOMAIN | PartitionKinds::EQUALLY),
            [UR_DEVICE_PARTITION_EQUALLY, UR_DEVICE_PARTITION_BY_AFFINITY_DOMAIN]
        );
        assert!(supported(PartitionKinds::empty()).is_empty());
    }
}
