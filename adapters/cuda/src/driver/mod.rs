//! The driver layer: the one module that calls the CUDA driver and NVRTC.
//!
//! It loads them (the presence check that must come before cudarc can
//! panic, and the lists of entry points checked at load), wraps each call
//! as a function returning [`Result`] (driver codes mapped by
//! [`conv::error`]), and owns the driver's objects as handles that release
//! themselves on drop: primary contexts, streams, events, modules, device,
//! managed and pinned allocations, host registrations, NVRTC programs. The
//! rest of the adapter speaks `Result` and these types.
//!
//! Every function here may be called only after [`load`] succeeded
//! (cudarc panics on a call into a library it could not load); the
//! adapter creates no object before that. Functions taking raw addresses or
//! handles the driver cannot check are `unsafe`.
//!
//! Split by what the calls touch: this file loads the libraries and holds
//! devices and primary contexts; [`memory`] allocations, registrations and
//! synchronous copies; [`stream`] streams, events and the enqueued memory
//! operations; [`module`] modules, launches and NVRTC. Every item is
//! re-exported here, so the adapter names them `driver::…`.

mod memory;
mod module;
mod stream;

pub(crate) use memory::*;
pub(crate) use module::*;
pub(crate) use stream::*;

use std::ffi::{c_char, c_int, CStr};
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUresult};
use cudarc::nvrtc::sys::{self as nv};
use parking_lot::Mutex;
use ur_api::Result;

use crate::conv::{self, check};

pub(crate) use sys::{CUdevice as Device, CUdevice_attribute as Attr, CUdeviceptr as DevicePtr, CUmem_advise};

// ---- loading ----

/// Every driver entry point this adapter calls. cudarc resolves symbols
/// lazily and panics on a missing one, so all are looked up once before the
/// first call; a driver lacking any of them counts as absent.
const DRIVER_SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceCanAccessPeer",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuCtxEnablePeerAccess",
    "cuMemGetInfo_v2",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemHostAlloc",
    "cuMemFreeHost",
    "cuMemAllocManaged",
    "cuMemHostRegister_v2",
    "cuMemHostUnregister",
    "cuMemHostGetDevicePointer_v2",
    "cuMemAdvise",
    "cuMemPrefetchAsync",
    "cuMemcpyHtoD_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemcpyPeerAsync",
    "cuMemcpyAsync",
    "cuMemcpy2DAsync_v2",
    "cuMemsetD8Async",
    "cuMemsetD16Async",
    "cuMemsetD32Async",
    "cuMemsetD2D8Async",
    "cuMemsetD2D16Async",
    "cuMemsetD2D32Async",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventQuery",
    "cuEventSynchronize",
    "cuEventElapsedTime",
    "cuEventDestroy_v2",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuLaunchKernel",
];

/// NVRTC entry points used to build CUDA C programs.
const NVRTC_SYMBOLS: &[&str] = &[
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcDestroyProgram",
];

/// Loads and initialises the driver once. `Err` says why CUDA is absent.
///
/// Order matters: the presence check comes before anything that would make
/// cudarc load the library (its loader panics when libcuda is missing).
pub(crate) fn load() -> std::result::Result<(), String> {
    static STATE: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    STATE
        .get_or_init(|| {
            // SAFETY: only tries to open the library under its candidate names.
            if !unsafe { sys::is_culib_present() } {
                return Err("the CUDA driver library (libcuda) was not found".into());
            }
            // SAFETY: the library was just found, so cudarc's loader finds it too
            // and does not panic.
            let lib = unsafe { sys::culib() };
            if let Some(missing) = DRIVER_SYMBOLS
                .iter()
                // SAFETY: looking a symbol up does not call it.
                .find(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_err())
            {
                return Err(format!("the CUDA driver is too old: it lacks {missing}"));
            }
            // SAFETY: the library and the symbol are present.
            check(unsafe { sys::cuInit(0) }).map_err(|e| format!("cuInit failed: {e}"))
        })
        .clone()
}

/// Whether NVRTC is present with every entry point this adapter uses.
pub(crate) fn nvrtc_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: only tries to open the library under its candidate names.
        if !unsafe { nv::is_culib_present() } {
            tracing::info!("NVRTC not found: CUDA C programs are unsupported, PTX still works");
            return false;
        }
        // SAFETY: present (checked above), so the loader does not panic.
        let lib = unsafe { nv::culib() };
        // SAFETY: looking symbols up does not call them.
        NVRTC_SYMBOLS
            .iter()
            .all(|s| unsafe { lib.get::<unsafe extern "C" fn()>(s.as_bytes()) }.is_ok())
    })
}

/// Whether the driver has an optional entry point (looked up once per name).
pub(crate) fn has_symbol(name: &'static str) -> bool {
    static FOUND: Mutex<Vec<(&'static str, bool)>> = Mutex::new(Vec::new());
    let mut found = FOUND.lock();
    if let Some(&(_, f)) = found.iter().find(|(n, _)| *n == name) {
        return f;
    }
    // SAFETY: `load()` succeeded before the library is touched, so it is
    // loaded; looking a symbol up does not call it.
    let f = load().is_ok() && unsafe { sys::culib().get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok();
    found.push((name, f));
    f
}

// ---- devices and contexts ----

/// The driver's version (`12080` for 12.8).
pub(crate) fn driver_version() -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { sys::cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

/// The number of devices.
pub(crate) fn device_count() -> Result<i32> {
    let mut n: c_int = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n)
}

/// The device of an ordinal below [`device_count`].
pub(crate) fn device(ordinal: i32) -> Result<Device> {
    let mut dev: Device = 0;
    // SAFETY: valid out-pointer; a bad ordinal is an error code.
    check(unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
    Ok(dev)
}

/// A device's name.
pub(crate) fn device_name(dev: Device) -> Result<String> {
    let mut name = [0 as c_char; 256];
    // SAFETY: the buffer holds 256 bytes, as passed.
    check(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev) })?;
    // The driver NUL-terminates within the buffer; the last byte stays 0
    // in any case.
    name[name.len() - 1] = 0;
    // SAFETY: the buffer is NUL-terminated (its last byte at the latest).
    Ok(unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned())
}

/// A device's memory in bytes.
pub(crate) fn device_total_mem(dev: Device) -> Result<usize> {
    let mut total = 0usize;
    // SAFETY: valid out-pointer.
    check(unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) })?;
    Ok(total)
}

/// One device attribute.
pub(crate) fn device_attribute(dev: Device, a: Attr) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: valid out-pointer; a bad device or attribute is an error code.
    check(unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) })?;
    Ok(v)
}

/// Whether `dev` can access `peer`'s memory directly.
pub(crate) fn can_access_peer(dev: Device, peer: Device) -> Result<bool> {
    let mut can: c_int = 0;
    // SAFETY: valid out-pointer.
    check(unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, peer) })?;
    Ok(can != 0)
}

/// A device's primary context, retained; released on drop.
#[derive(Debug)]
pub(crate) struct PrimaryCtx {
    ctx: sys::CUcontext,
    dev: Device,
}

// SAFETY: a CUcontext is a handle the driver lets any thread use; the
// driver API is thread-safe.
unsafe impl Send for PrimaryCtx {}
// SAFETY: as above.
unsafe impl Sync for PrimaryCtx {}

impl PrimaryCtx {
    /// Retains `dev`'s primary context.
    pub(crate) fn retain(dev: Device) -> Result<PrimaryCtx> {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer; released once in `drop`.
        check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
        Ok(PrimaryCtx { ctx, dev })
    }

    /// Makes the context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: the context is retained for as long as `self` lives.
        check(unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    /// Lets the current context access this context's memory in place;
    /// already enabled counts as success.
    pub(crate) fn enable_access_from_current(&self) -> Result<()> {
        // SAFETY: the context is retained for as long as `self` lives.
        match unsafe { sys::cuCtxEnablePeerAccess(self.ctx, 0) } {
            CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            other => Err(conv::error(other)),
        }
    }
}

impl Drop for PrimaryCtx {
    fn drop(&mut self) {
        // SAFETY: the primary context was retained once for this object.
        if let Err(e) = check(unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) }) {
            tracing::warn!(error = %e, "releasing a primary context failed");
        }
    }
}

/// Waits for all work of the current context.
pub(crate) fn ctx_synchronize() -> Result<()> {
    // SAFETY: acts on the current context; none current is an error code.
    check(unsafe { sys::cuCtxSynchronize() })
}
