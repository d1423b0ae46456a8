//! Adapter and platform entry points.
//!
//! # Safety (all entry points of this module)
//!
//! The caller keeps UR's pointer contract: every pointer argument is null
//! or valid for the reads and writes the UR specification describes for
//! that argument (arrays of the given counts, info outputs of `propSize`
//! bytes). Handles need no promise: they are looked up, never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::c_void;

use ur_api::Backend;

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count};
use crate::info::{entry, put, Out};
use crate::objects::Kind;
use crate::state::{platform_of, state};
use crate::sys::*;

/// `urAdapterGet`: our one adapter.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterGet(n: u32, out: *mut ur_adapter_handle_t, count: *mut u32) -> ur_result_t {
    entry(|| {
        if out.is_null() && count.is_null() || !out.is_null() && n == 0 {
            return Err(CapiError::InvalidSize);
        }
        let a = state().adapter as ur_adapter_handle_t;
        if !out.is_null() {
            handles::retain(a, Kind::Adapter)?;
            // SAFETY: `out` holds at least `n >= 1` handles (module contract).
            unsafe { out.write(a) };
        }
        // SAFETY: null or writable (module contract).
        unsafe { put(count, 1) };
        Ok(())
    })
}

/// `urAdapterRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterRetain(a: ur_adapter_handle_t) -> ur_result_t {
    entry(|| handles::retain(a, Kind::Adapter))
}

/// `urAdapterRelease`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterRelease(a: ur_adapter_handle_t) -> ur_result_t {
    entry(|| handles::release(a, Kind::Adapter).map(drop))
}

/// `urAdapterGetLastError`: we have no adapter-specific errors.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterGetLastError(
    a: ur_adapter_handle_t,
    message: *mut *const std::os::raw::c_char,
    error: *mut i32,
) -> ur_result_t {
    entry(|| {
        handles::lookup(a, Kind::Adapter)?;
        // SAFETY: null or writable (module contract).
        unsafe { put(message, c"no adapter-specific error".as_ptr()) };
        // SAFETY: as above.
        unsafe { put(error, 0) };
        Ok(())
    })
}

/// `urAdapterGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterGetInfo(
    a: ur_adapter_handle_t,
    prop: ur_adapter_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        handles::lookup(a, Kind::Adapter)?;
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        match prop {
            UR_ADAPTER_INFO_BACKEND => out.value(state().backend),
            UR_ADAPTER_INFO_REFERENCE_COUNT => out.value(ref_count(a, Kind::Adapter)?),
            UR_ADAPTER_INFO_VERSION => out.value(1u32),
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// `urAdapterSetLoggerCallback`: accepted; we log through `tracing`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterSetLoggerCallback(
    a: ur_adapter_handle_t,
    _cb: ur_logger_callback_t,
    _user: *mut c_void,
    _level: ur_logger_level_t,
) -> ur_result_t {
    entry(|| handles::lookup(a, Kind::Adapter).map(drop))
}

/// `urAdapterSetLoggerCallbackLevel`: accepted, as above.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urAdapterSetLoggerCallbackLevel(
    a: ur_adapter_handle_t,
    _level: ur_logger_level_t,
) -> ur_result_t {
    entry(|| handles::lookup(a, Kind::Adapter).map(drop))
}

/// `urPlatformGet`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformGet(
    a: ur_adapter_handle_t,
    n: u32,
    out: *mut ur_platform_handle_t,
    count: *mut u32,
) -> ur_result_t {
    entry(|| {
        handles::lookup(a, Kind::Adapter)?;
        if out.is_null() && count.is_null() || !out.is_null() && n == 0 {
            return Err(CapiError::InvalidSize);
        }
        let ps = &state().platforms;
        if !out.is_null() {
            for (i, p) in ps.iter().take(n as usize).enumerate() {
                // SAFETY: `out` holds `n` handles (module contract), i < n.
                unsafe { out.add(i).write(p.handle as ur_platform_handle_t) };
            }
        }
        // SAFETY: null or writable (module contract).
        unsafe { put(count, ps.len() as u32) };
        Ok(())
    })
}

/// `urPlatformGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformGetInfo(
    p: ur_platform_handle_t,
    prop: ur_platform_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        let id = get::<ur_api::PlatformId, _>(p)?;
        let mut info = state().rt.platform_info(id)?;
        let listed = platform_of(id);
        let backend = listed.map_or(UR_BACKEND_NATIVE_CPU, |p| p.backend);
        if let Some(union) = listed.filter(|p| p.is_union()) {
            let names: Vec<String> = union
                .members
                .iter()
                .filter_map(|m| state().rt.platform_info(*m).ok().map(|i| i.name))
                .collect();
            info.name = format!("{ONE_PLATFORM_NAME} ({})", names.join(", "));
            info.vendor = "Unified Runtime (Rust)".to_owned();
        }
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        match prop {
            UR_PLATFORM_INFO_NAME => out.string(&info.name),
            UR_PLATFORM_INFO_VENDOR_NAME => out.string(&info.vendor),
            UR_PLATFORM_INFO_VERSION => out.string(&info.version),
            UR_PLATFORM_INFO_EXTENSIONS => out.string(""),
            UR_PLATFORM_INFO_PROFILE => out.string("FULL_PROFILE"),
            UR_PLATFORM_INFO_BACKEND => out.value(backend),
            UR_PLATFORM_INFO_ADAPTER => out.value(state().adapter as ur_adapter_handle_t),
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// The name of the one platform over every runtime
/// ([`crate::state::ONE_PLATFORM_ENV`]); its runtimes' names follow in
/// parentheses.
pub const ONE_PLATFORM_NAME: &str = "Every runtime";

/// `urPlatformGetApiVersion`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformGetApiVersion(
    p: ur_platform_handle_t,
    version: *mut ur_api_version_t,
) -> ur_result_t {
    entry(|| {
        get::<ur_api::PlatformId, _>(p)?;
        // SAFETY: as the module contract says.
        unsafe { crate::info::put_required(version, UR_API_VERSION_CURRENT) }
    })
}

/// `urPlatformGetBackendOption`: the backend spelling of a SYCL frontend
/// option (libsycl asks for `-O0`..`-O3` before every build). The programs
/// built here are OpenCL's (SPIR-V through `clBuildProgram`), so the answers
/// are OpenCL build options: `-O0` disables optimisation, the others are
/// the backend's default; an option with no meaning is `INVALID_VALUE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformGetBackendOption(
    p: ur_platform_handle_t,
    frontend: *const std::os::raw::c_char,
    backend: *mut *const std::os::raw::c_char,
) -> ur_result_t {
    entry(|| {
        get::<ur_api::PlatformId, _>(p)?;
        if frontend.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: NUL-terminated by the module contract.
        let option = unsafe { std::ffi::CStr::from_ptr(frontend) };
        let answer = backend_option(option.to_bytes()).ok_or(CapiError::InvalidValue)?;
        // SAFETY: as the module contract says.
        unsafe { crate::info::put_required(backend, answer.as_ptr()) }
    })
}

/// The backend option for a frontend option, or `None` for one with no
/// meaning here.
pub fn backend_option(frontend: &[u8]) -> Option<&'static std::ffi::CStr> {
    match frontend {
        b"-O0" => Some(c"-cl-opt-disable"),
        b"-O1"
        | b"-O2"
        | b"-O3"
        | b"-ftarget-compile-fast"
        | b"-foffload-fp32-prec-div"
        | b"-foffload-fp32-prec-sqrt" => Some(c""),
        _ => None,
    }
}

/// The project backend serving a platform, for messages.
pub fn backend_of(id: ur_api::PlatformId) -> Option<Backend> {
    platform_of(id).and_then(|p| state().rt.backend_of(p.id).ok())
}
