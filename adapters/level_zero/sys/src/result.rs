//! The result layer: `ze_result_t` as `Result`, and the thin, still raw
//! helpers every caller would otherwise repeat (count-then-fill
//! enumerations, property structs with their `stype` set, C strings).
//!
//! Functions taking raw handles are `unsafe`: the handles must be live
//! objects of the loader they are passed with.

use std::ffi::c_char;

use crate::sys::{self, ze_result_t, ZeLoader};

/// A failed Level Zero call: the raw result code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{} ({:#x})", name(self.0), self.0)]
pub struct ZeError(pub ze_result_t);

/// Result of a Level Zero call.
pub type ZeResult<T> = Result<T, ZeError>;

/// `ZE_RESULT_SUCCESS` as `Ok(())`, anything else as the error.
pub fn check(r: ze_result_t) -> ZeResult<()> {
    if r == sys::ZE_RESULT_SUCCESS {
        Ok(())
    } else {
        Err(ZeError(r))
    }
}

/// The symbolic name of a result code (from the header, so it works with no
/// driver).
pub fn name(r: ze_result_t) -> &'static str {
    use crate::sys::*;
    match r {
        ZE_RESULT_SUCCESS => "ZE_RESULT_SUCCESS",
        ZE_RESULT_NOT_READY => "ZE_RESULT_NOT_READY",
        ZE_RESULT_ERROR_DEVICE_LOST => "ZE_RESULT_ERROR_DEVICE_LOST",
        ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY => "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
        ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY => "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
        ZE_RESULT_ERROR_MODULE_BUILD_FAILURE => "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE",
        ZE_RESULT_ERROR_MODULE_LINK_FAILURE => "ZE_RESULT_ERROR_MODULE_LINK_FAILURE",
        ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET => "ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET",
        ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE => "ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE",
        ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS => "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS",
        ZE_RESULT_ERROR_NOT_AVAILABLE => "ZE_RESULT_ERROR_NOT_AVAILABLE",
        ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE => "ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE",
        ZE_RESULT_WARNING_DROPPED_DATA => "ZE_RESULT_WARNING_DROPPED_DATA",
        ZE_RESULT_ERROR_UNINITIALIZED => "ZE_RESULT_ERROR_UNINITIALIZED",
        ZE_RESULT_ERROR_UNSUPPORTED_VERSION => "ZE_RESULT_ERROR_UNSUPPORTED_VERSION",
        ZE_RESULT_ERROR_UNSUPPORTED_FEATURE => "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE",
        ZE_RESULT_ERROR_INVALID_ARGUMENT => "ZE_RESULT_ERROR_INVALID_ARGUMENT",
        ZE_RESULT_ERROR_INVALID_NULL_HANDLE => "ZE_RESULT_ERROR_INVALID_NULL_HANDLE",
        ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE => "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE",
        ZE_RESULT_ERROR_INVALID_NULL_POINTER => "ZE_RESULT_ERROR_INVALID_NULL_POINTER",
        ZE_RESULT_ERROR_INVALID_SIZE => "ZE_RESULT_ERROR_INVALID_SIZE",
        ZE_RESULT_ERROR_UNSUPPORTED_SIZE => "ZE_RESULT_ERROR_UNSUPPORTED_SIZE",
        ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT => "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT",
        ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT => "ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT",
        ZE_RESULT_ERROR_INVALID_ENUMERATION => "ZE_RESULT_ERROR_INVALID_ENUMERATION",
        ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION => "ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION",
        ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT => "ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT",
        ZE_RESULT_ERROR_INVALID_NATIVE_BINARY => "ZE_RESULT_ERROR_INVALID_NATIVE_BINARY",
        ZE_RESULT_ERROR_INVALID_GLOBAL_NAME => "ZE_RESULT_ERROR_INVALID_GLOBAL_NAME",
        ZE_RESULT_ERROR_INVALID_KERNEL_NAME => "ZE_RESULT_ERROR_INVALID_KERNEL_NAME",
        ZE_RESULT_ERROR_INVALID_FUNCTION_NAME => "ZE_RESULT_ERROR_INVALID_FUNCTION_NAME",
        ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION => "ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION",
        ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION => "ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION",
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX => "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX",
        ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE => "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE",
        ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE => "ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE",
        ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED => "ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED",
        ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE => "ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE",
        ZE_RESULT_ERROR_OVERLAPPING_REGIONS => "ZE_RESULT_ERROR_OVERLAPPING_REGIONS",
        ZE_RESULT_WARNING_ACTION_REQUIRED => "ZE_RESULT_WARNING_ACTION_REQUIRED",
        ZE_RESULT_ERROR_UNKNOWN => "ZE_RESULT_ERROR_UNKNOWN",
        _ => "unknown ze_result_t",
    }
}

/// Runs a count-then-fill query (`f(&mut count, null)` then
/// `f(&mut count, buf)`), the shape of every Level Zero enumeration.
///
/// # Safety
///
/// `f` must be such a query: with a null array it only writes the count;
/// with an array of `count` elements it writes at most `count` of them
/// and updates the count to the number written.
pub unsafe fn enumerate<T: Copy>(mut f: impl FnMut(*mut u32, *mut T) -> ze_result_t, zeroed: T) -> ZeResult<Vec<T>> {
    let mut count = 0u32;
    check(f(&mut count, std::ptr::null_mut()))?;
    let mut out = vec![zeroed; count as usize];
    if count > 0 {
        check(f(&mut count, out.as_mut_ptr()))?;
        out.truncate(count as usize);
    }
    Ok(out)
}

/// A property struct zero-initialised with its `stype`.
pub trait Described: Default {
    /// The structure type tag of this struct.
    const STYPE: sys::ze_structure_type_t;
    /// `Default` (all zero) with `stype` set.
    fn described() -> Self;
}

macro_rules! described {
    ($($t:ty => $s:ident),* $(,)?) => {$(
        impl Described for $t {
            const STYPE: sys::ze_structure_type_t = sys::$s;
            fn described() -> Self {
                Self { stype: sys::$s, ..Default::default() }
            }
        }
    )*};
}

described! {
    sys::ze_driver_properties_t => ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES,
    sys::ze_device_properties_t => ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES,
    sys::ze_device_compute_properties_t => ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES,
    sys::ze_device_module_properties_t => ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES,
    sys::ze_device_memory_properties_t => ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES,
    sys::ze_device_memory_access_properties_t => ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES,
    sys::ze_command_queue_group_properties_t => ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES,
    sys::ze_kernel_properties_t => ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES,
    sys::ze_context_desc_t => ZE_STRUCTURE_TYPE_CONTEXT_DESC,
    sys::ze_device_mem_alloc_desc_t => ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
    sys::ze_host_mem_alloc_desc_t => ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
    sys::ze_command_queue_desc_t => ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
    sys::ze_event_pool_desc_t => ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
    sys::ze_event_desc_t => ZE_STRUCTURE_TYPE_EVENT_DESC,
    sys::ze_module_desc_t => ZE_STRUCTURE_TYPE_MODULE_DESC,
    sys::ze_kernel_desc_t => ZE_STRUCTURE_TYPE_KERNEL_DESC,
}

/// Calls a property query `f(&mut props)` on a described struct.
pub fn query<T: Described>(f: impl FnOnce(*mut T) -> ze_result_t) -> ZeResult<T> {
    let mut props = T::described();
    check(f(&mut props))?;
    Ok(props)
}

/// A NUL-terminated C char array as a `String` (lossy; stops at the end of
/// the array when no NUL is there).
pub fn c_string(chars: &[c_char]) -> String {
    // `c_char` is `i8` or `u8` by platform; the cast keeps the bits.
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The drivers `zeDriverGet` lists (after `zeInit`).
pub fn drivers(ze: &ZeLoader) -> ZeResult<Vec<sys::ze_driver_handle_t>> {
    // SAFETY: zeDriverGet is a count-then-fill query with no other input.
    unsafe { enumerate(|n, p| ze.zeDriverGet(n, p), std::ptr::null_mut()) }
}

/// The root devices of a driver.
///
/// # Safety
///
/// `driver` is a driver handle of `ze`.
pub unsafe fn devices(ze: &ZeLoader, driver: sys::ze_driver_handle_t) -> ZeResult<Vec<sys::ze_device_handle_t>> {
    // SAFETY: zeDeviceGet is a count-then-fill query on a live driver.
    unsafe { enumerate(|n, p| ze.zeDeviceGet(driver, n, p), std::ptr::null_mut()) }
}

/// The sub-devices of a device (empty for a device with none).
///
/// # Safety
///
/// `device` is a device handle of `ze`.
pub unsafe fn sub_devices(ze: &ZeLoader, device: sys::ze_device_handle_t) -> ZeResult<Vec<sys::ze_device_handle_t>> {
    // SAFETY: zeDeviceGetSubDevices is a count-then-fill query on a live device.
    unsafe { enumerate(|n, p| ze.zeDeviceGetSubDevices(device, n, p), std::ptr::null_mut()) }
}

/// The extension names (and versions) a driver reports.
///
/// # Safety
///
/// `driver` is a driver handle of `ze`.
pub unsafe fn extensions(ze: &ZeLoader, driver: sys::ze_driver_handle_t) -> ZeResult<Vec<(String, u32)>> {
    // SAFETY: a count-then-fill query on a live driver.
    let props = unsafe {
        enumerate(
            |n, p| ze.zeDriverGetExtensionProperties(driver, n, p),
            sys::ze_driver_extension_properties_t::default(),
        )?
    };
    Ok(props.iter().map(|e| (c_string(&e.name), e.version)).collect())
}

/// The command queue groups of a device, in ordinal order.
///
/// # Safety
///
/// `device` is a device handle of `ze`.
pub unsafe fn queue_groups(
    ze: &ZeLoader,
    device: sys::ze_device_handle_t,
) -> ZeResult<Vec<sys::ze_command_queue_group_properties_t>> {
    // SAFETY: a count-then-fill query on a live device; every element
    // carries its stype.
    unsafe {
        enumerate(
            |n, p| ze.zeDeviceGetCommandQueueGroupProperties(device, n, p),
            sys::ze_command_queue_group_properties_t::described(),
        )
    }
}

/// The memory properties (one per memory of the device).
///
/// # Safety
///
/// `device` is a device handle of `ze`.
pub unsafe fn memory_properties(
    ze: &ZeLoader,
    device: sys::ze_device_handle_t,
) -> ZeResult<Vec<sys::ze_device_memory_properties_t>> {
    // SAFETY: a count-then-fill query on a live device.
    unsafe {
        enumerate(
            |n, p| ze.zeDeviceGetMemoryProperties(device, n, p),
            sys::ze_device_memory_properties_t::described(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_ok_and_errors_keep_their_code() {
        assert_eq!(check(sys::ZE_RESULT_SUCCESS), Ok(()));
        let e = check(sys::ZE_RESULT_ERROR_UNINITIALIZED).unwrap_err();
        assert_eq!(e, ZeError(sys::ZE_RESULT_ERROR_UNINITIALIZED));
        assert_eq!(e.to_string(), "ZE_RESULT_ERROR_UNINITIALIZED (0x78000001)");
        assert_eq!(name(0x1234), "unknown ze_result_t");
    }

    #[test]
    fn enumerate_counts_then_fills() {
        let data = [7u32, 8, 9];
        // SAFETY: the closure behaves as a count-then-fill query.
        let got = unsafe {
            enumerate(
                |n, p: *mut u32| {
                    if p.is_null() {
                        *n = 3;
                    } else {
                        let k = (*n).min(3) as usize;
                        std::ptr::copy_nonoverlapping(data.as_ptr(), p, k);
                        *n = k as u32;
                    }
                    sys::ZE_RESULT_SUCCESS
                },
                0,
            )
        };
        assert_eq!(got, Ok(vec![7, 8, 9]));
    }

    #[test]
    fn described_structs_carry_their_stype() {
        let p = sys::ze_device_properties_t::described();
        assert_eq!(p.stype, sys::ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES);
        assert!(p.pNext.is_null());
        assert_eq!(p.maxMemAllocSize, 0);
    }

    #[test]
    fn c_strings_stop_at_nul() {
        let mut a = [0 as c_char; 8];
        for (d, s) in a.iter_mut().zip(b"Null") {
            *d = *s as c_char;
        }
        assert_eq!(c_string(&a), "Null");
        assert_eq!(c_string(&[b'a' as c_char; 3]), "aaa");
    }
}
