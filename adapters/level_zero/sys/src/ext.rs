//! Driver extensions that the 1.4 headers do not declare, written by hand
//! from Intel's driver documentation (`ze_intel_gpu.h` of the compute
//! runtime). They are fetched per driver with
//! `zeDriverGetExtensionFunctionAddress`; a driver without them (the null
//! driver, older GPU drivers) answers no address, and the feature is absent.

use std::ffi::c_void;

use crate::sys::{ze_driver_handle_t, ze_result_t};

/// Name of the host-pointer import entry point.
pub const IMPORT_EXTERNAL_POINTER: &std::ffi::CStr = c"zexDriverImportExternalPointer";
/// Name of its inverse.
pub const RELEASE_IMPORTED_POINTER: &std::ffi::CStr = c"zexDriverReleaseImportedPointer";

/// `zexDriverImportExternalPointer(driver, ptr, size)`: makes existing host
/// memory usable by the driver's devices (pins it).
pub type PfnImportExternalPointer =
    unsafe extern "C" fn(driver: ze_driver_handle_t, ptr: *mut c_void, size: usize) -> ze_result_t;

/// `zexDriverReleaseImportedPointer(driver, ptr)`: undoes the import.
pub type PfnReleaseImportedPointer = unsafe extern "C" fn(driver: ze_driver_handle_t, ptr: *mut c_void) -> ze_result_t;
