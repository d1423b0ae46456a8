//! Driver allocations (device, pinned host, managed), host registrations
//! and synchronous copies.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUresult};
use ur_api::{Error, Result};

use crate::conv::{self, check};

use super::*;

// ---- memory ----

/// Device or managed memory (`cuMemAlloc`, `cuMemAllocManaged`), freed on
/// drop. Its owner makes sure no command still uses it by then.
#[derive(Debug)]
pub(crate) struct DeviceMem(DevicePtr);

impl DeviceMem {
    /// Device memory in the current context.
    pub(crate) fn alloc(bytes: usize) -> Result<DeviceMem> {
        let mut p = 0;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
        Ok(DeviceMem(p))
    }

    /// Managed memory attached globally, in the current context.
    pub(crate) fn alloc_managed(bytes: usize) -> Result<DeviceMem> {
        let mut p = 0;
        let flags = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuMemAllocManaged(&mut p, bytes, flags) })?;
        Ok(DeviceMem(p))
    }

    pub(crate) fn ptr(&self) -> DevicePtr {
        self.0
    }
}

impl Drop for DeviceMem {
    fn drop(&mut self) {
        // SAFETY: the address came from cuMemAlloc or cuMemAllocManaged and is
        // freed once; the owner made sure no command uses it any more.
        if let Err(e) = check(unsafe { sys::cuMemFree_v2(self.0) }) {
            tracing::warn!(error = %e, "cuMemFree failed");
        }
    }
}

/// Page-locked host memory from `cuMemHostAlloc` (portable: pinned for
/// every context; device-mapped: with unified addressing its address is
/// valid on the devices), freed on drop. Its owner makes sure no command
/// still uses it by then.
#[derive(Debug)]
pub(crate) struct HostMem(*mut c_void);

// SAFETY: the memory is owned by this object and only addressed through
// HostPtr promises or the driver; the pointer is just an address.
unsafe impl Send for HostMem {}
// SAFETY: as above.
unsafe impl Sync for HostMem {}

impl HostMem {
    /// `bytes` of pinned host memory (a context must be current); the
    /// driver's out-of-memory is [`Error::OutOfHostMemory`] here.
    pub(crate) fn alloc(bytes: usize) -> Result<HostMem> {
        let mut p = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags) }).map_err(|e| match e {
            Error::OutOfDeviceMemory => Error::OutOfHostMemory,
            e => e,
        })?;
        Ok(HostMem(p))
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.0
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        // SAFETY: the pointer came from cuMemHostAlloc and is freed once; the
        // owner made sure no command uses it any more.
        if let Err(e) = check(unsafe { sys::cuMemFreeHost(self.0) }) {
            tracing::warn!(error = %e, "cuMemFreeHost failed");
        }
    }
}

/// Host memory registered (pinned and device-mapped, for every context)
/// by this object; unregistered on drop unless [`Registration::keep`]
/// hands that duty on.
#[derive(Debug)]
pub(crate) struct Registration(*mut c_void);

// SAFETY: only the address is kept; registration state lives in the driver.
unsafe impl Send for Registration {}
// SAFETY: as above.
unsafe impl Sync for Registration {}

impl Registration {
    /// Registers `len` bytes at `p`; `None` where the memory was registered
    /// already (by someone else, who keeps unregistering it).
    ///
    /// # Safety
    ///
    /// `len` bytes at `p` are mapped host memory that stays valid while it
    /// is registered (until this object drops, or until
    /// [`host_unregister`] after [`Registration::keep`]).
    pub(crate) unsafe fn register(p: *mut c_void, len: usize) -> Result<Option<Registration>> {
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: the caller guarantees the span; registering does not access
        // its contents.
        match unsafe { sys::cuMemHostRegister_v2(p, len, flags) } {
            CUresult::CUDA_SUCCESS => Ok(Some(Registration(p))),
            CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => Ok(None),
            other => Err(conv::error(other)),
        }
    }

    /// Leaves the memory registered: whoever calls [`host_unregister`] on
    /// it later undoes the registration.
    pub(crate) fn keep(self) {
        std::mem::forget(self);
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // SAFETY: registered by this object, unregistered once.
        if let Err(e) = check(unsafe { sys::cuMemHostUnregister(self.0) }) {
            tracing::warn!(error = %e, "cuMemHostUnregister failed");
        }
    }
}

/// Undoes a registration kept with [`Registration::keep`].
///
/// # Safety
///
/// `p` is the start of a registered range, and no command uses the range
/// through its device address any more.
pub(crate) unsafe fn host_unregister(p: *mut c_void) -> Result<()> {
    // SAFETY: the caller guarantees a registered range no command uses;
    // unregistering does not access the memory.
    check(unsafe { sys::cuMemHostUnregister(p) })
}

/// The device address of registered or pinned host memory.
///
/// # Safety
///
/// `p` lies in registered or pinned host memory.
pub(crate) unsafe fn host_device_pointer(p: *mut c_void) -> Result<DevicePtr> {
    let mut d = 0;
    // SAFETY: the caller guarantees registered memory; valid out-pointer.
    check(unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, p, 0) })?;
    Ok(d)
}

/// Free and total memory of the current context's device.
pub(crate) fn mem_get_info() -> Result<(usize, usize)> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: valid out-pointers.
    check(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
    Ok((free, total))
}

/// Advice on managed memory (`dev` may be `CU_DEVICE_CPU`).
///
/// # Safety
///
/// `[addr, addr + size)` lies in one live managed allocation.
pub(crate) unsafe fn mem_advise(addr: DevicePtr, size: usize, advice: CUmem_advise, dev: Device) -> Result<()> {
    // SAFETY: the caller guarantees the range; advice does not move data.
    check(unsafe { sys::cuMemAdvise(addr, size, advice, dev) })
}

/// A blocking host-to-device copy.
///
/// # Safety
///
/// `len` bytes at `src` are readable and at `dst` live device memory.
pub(crate) unsafe fn memcpy_htod(dst: DevicePtr, src: *const c_void, len: usize) -> Result<()> {
    // SAFETY: the caller guarantees both ranges.
    check(unsafe { sys::cuMemcpyHtoD_v2(dst, src, len) })
}
