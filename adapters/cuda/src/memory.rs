//! Buffers (device allocations and sub-buffers), USM allocations, pinned
//! staging memory, and registration of existing host memory.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::{self, CUresult};
use parking_lot::Mutex;
use ur_api::{BufferDesc, DeviceAddr, Error, HostPtr, MapFlags, MemFlags, Result, UsmAdvice, UsmDesc, UsmKind, UsmPtr};

use crate::conv::{self, check};
use crate::device::{CtxInner, CudaDevice, DevInner};

/// Sub-buffer offsets must be multiples of this: `cuMemAlloc`'s guaranteed
/// alignment, so a sub-buffer is as aligned for kernels as a buffer.
pub(crate) const SUB_BUFFER_ALIGN: usize = 256;

/// What backs a buffer's memory.
#[derive(Debug)]
pub(crate) enum Backing {
    /// A `cuMemAlloc` allocation.
    Device,
    /// Caller memory (`USE_HOST_PTR`) pinned with `cuMemHostRegister`;
    /// `owned`: registered by this buffer (and unregistered with it), not
    /// by someone else before.
    Registered { host: usize, owned: bool },
}

/// A buffer's memory: a device address and what backs it. Dropping it
/// waits for the devices (work in flight may still use it), then frees or
/// unregisters it.
#[derive(Debug)]
pub(crate) struct DevAlloc {
    pub ptr: sys::CUdeviceptr,
    pub dev: Arc<DevInner>,
    pub backing: Backing,
}

impl Drop for DevAlloc {
    fn drop(&mut self) {
        self.dev.sync_all();
        // SAFETY: the memory came from cuMemAlloc (or was registered by this
        // object) in this device's primary context, bound by sync_all, and
        // no command uses it any more.
        let r = unsafe {
            match self.backing {
                Backing::Device => sys::cuMemFree_v2(self.ptr),
                Backing::Registered { host, owned: true } => sys::cuMemHostUnregister(host as *mut c_void),
                Backing::Registered { owned: false, .. } => CUresult::CUDA_SUCCESS,
            }
        };
        if let Err(e) = check(r) {
            tracing::warn!(error = %e, "freeing a buffer's memory failed");
        }
    }
}

/// A live mapping of a buffer: pinned staging memory and how it is used.
#[derive(Debug)]
pub(crate) struct Mapping {
    pub staging: Arc<Pinned>,
    pub offset: usize,
    pub flags: MapFlags,
}

/// A buffer or sub-buffer: a device allocation and a window on it.
#[derive(Debug)]
pub struct CudaBuffer {
    pub(crate) mem: Arc<DevAlloc>,
    pub(crate) offset: usize,
    /// Live mappings by host address.
    pub(crate) maps: Mutex<Vec<(usize, Mapping)>>,
}

impl CudaBuffer {
    /// The device address of the buffer's first byte.
    pub(crate) fn ptr(&self) -> sys::CUdeviceptr {
        self.mem.ptr + self.offset as u64
    }

    pub(crate) fn dev(&self) -> &Arc<DevInner> {
        &self.mem.dev
    }
}

/// Page-locked host memory from `cuMemHostAlloc` (portable: pinned for
/// every context; device-mapped: its address is valid on the devices).
#[derive(Debug)]
pub(crate) struct Pinned {
    pub ptr: *mut c_void,
    pub len: usize,
    dev: Arc<DevInner>,
}

// SAFETY: the memory is owned by this object and only addressed through
// HostPtr promises or the driver; the pointer is just an address.
unsafe impl Send for Pinned {}
// SAFETY: as above.
unsafe impl Sync for Pinned {}

impl Pinned {
    pub(crate) fn alloc(dev: &Arc<DevInner>, len: usize) -> Result<Pinned> {
        dev.bind()?;
        let mut ptr = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: valid out-pointer, a context is current.
        check(unsafe { sys::cuMemHostAlloc(&mut ptr, len.max(1), flags) }).map_err(|e| match e {
            Error::OutOfDeviceMemory => Error::OutOfHostMemory,
            e => e,
        })?;
        Ok(Pinned {
            ptr,
            len,
            dev: dev.clone(),
        })
    }

    pub(crate) fn host_ptr(&self) -> HostPtr {
        // SAFETY: the memory lives as long as `self`; callers keep `self`
        // alive until every operation on the span has completed.
        unsafe { HostPtr::new(self.ptr.cast(), self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Err(e) = self.dev.bind() {
            tracing::warn!(error = %e, "binding a context failed");
        }
        // SAFETY: the pointer came from cuMemHostAlloc; the owner of the last
        // reference (see `EventInner`) made sure no copy still uses it.
        if let Err(e) = check(unsafe { sys::cuMemFreeHost(self.ptr) }) {
            tracing::warn!(error = %e, "cuMemFreeHost failed");
        }
    }
}

/// The device a buffer or USM allocation goes to: the hint, else the
/// context's first device.
fn target<'a>(ctx: &'a CtxInner, hint: Option<&'a CudaDevice>) -> &'a Arc<DevInner> {
    hint.map(|d| &d.0).unwrap_or_else(|| ctx.first())
}

/// A buffer on the hinted device: `cuMemAlloc`, or with `USE_HOST_PTR` the
/// caller's memory itself, pinned and mapped (`cuMemHostRegister`, or as it
/// is where it was registered already): the device then reads and writes
/// host memory over the bus, with no copy.
///
/// # Safety
///
/// The contract of [`ur_api::Adapter::create_buffer`].
pub(crate) unsafe fn create_buffer(
    ctx: &CtxInner,
    desc: &BufferDesc<&CudaDevice>,
    init: Option<HostPtr>,
) -> Result<CudaBuffer> {
    let dev = target(ctx, desc.device_hint);
    dev.bind()?;
    let mem = match (desc.flags.contains(MemFlags::USE_HOST_PTR), init) {
        (true, Some(host)) => Arc::new(register_buffer(dev, host)?),
        _ => {
            let mut ptr = 0;
            // SAFETY: valid out-pointer, the device's context is current.
            check(unsafe { sys::cuMemAlloc_v2(&mut ptr, desc.size) })?;
            Arc::new(DevAlloc {
                ptr,
                dev: dev.clone(),
                backing: Backing::Device,
            })
        }
    };
    if let (true, Some(src)) = (desc.flags.contains(MemFlags::COPY_HOST_PTR), init) {
        // SAFETY: the caller guarantees (create_buffer's contract) `src` holds
        // exactly `size` bytes, readable during this call; the allocation is
        // `size` bytes.
        check(unsafe { sys::cuMemcpyHtoD_v2(mem.ptr, src.as_ptr().cast(), desc.size) })?;
    }
    Ok(CudaBuffer {
        mem,
        offset: 0,
        maps: Mutex::new(Vec::new()),
    })
}

fn register_buffer(dev: &Arc<DevInner>, host: HostPtr) -> Result<DevAlloc> {
    let p: *mut c_void = host.as_ptr().cast();
    let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
    // SAFETY: the HostPtr promise keeps the span valid for the buffer's life;
    // registering does not access its contents.
    let owned = match unsafe { sys::cuMemHostRegister_v2(p, host.len(), flags) } {
        CUresult::CUDA_SUCCESS => true,
        CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => false,
        other => return Err(conv::error(other)),
    };
    let mut ptr = 0;
    // SAFETY: the memory is registered; valid out-pointer.
    let r = check(unsafe { sys::cuMemHostGetDevicePointer_v2(&mut ptr, p, 0) });
    if let Err(e) = r {
        if owned {
            // SAFETY: registered just above and not used yet.
            unsafe { sys::cuMemHostUnregister(p) };
        }
        return Err(e);
    }
    Ok(DevAlloc {
        ptr,
        dev: dev.clone(),
        backing: Backing::Registered {
            host: p as usize,
            owned,
        },
    })
}

/// A window on the parent's allocation (the dyn layer keeps the size).
pub(crate) fn create_sub_buffer(parent: &CudaBuffer, offset: usize) -> CudaBuffer {
    CudaBuffer {
        mem: parent.mem.clone(),
        offset: parent.offset + offset,
        maps: Mutex::new(Vec::new()),
    }
}

/// A USM allocation: what the driver returned, of which kind, on which
/// device. Commands receive it resolved (no table of addresses in the
/// adapter). Dropping it (the trait's default `usm_free`) waits for every
/// device, so no command in flight sees the memory freed, then frees it
/// with the call matching its kind.
#[derive(Debug)]
pub struct CudaUsm {
    kind: UsmKind,
    /// What the driver returned (the handed-out address may be aligned up).
    real: u64,
    dev: Arc<DevInner>,
}

impl CudaUsm {
    /// Managed (shared USM) memory, the only kind advice and prefetch act on.
    pub(crate) fn is_managed(&self) -> bool {
        self.kind == UsmKind::Shared
    }
}

impl Drop for CudaUsm {
    fn drop(&mut self) {
        self.dev.sync_all();
        // SAFETY: `real` came from the allocation call of `kind`; every device
        // finished its work (sync_all), so nothing uses the memory.
        let r = unsafe {
            match self.kind {
                UsmKind::Host => sys::cuMemFreeHost(self.real as *mut c_void),
                UsmKind::Device | UsmKind::Shared => sys::cuMemFree_v2(self.real),
            }
        };
        if let Err(e) = check(r) {
            tracing::warn!(error = %e, "freeing USM memory failed");
        }
    }
}

/// One raw allocation of `kind` and `bytes` on `dev` (its context bound).
fn raw_alloc(kind: UsmKind, bytes: usize) -> Result<u64> {
    Ok(match kind {
        UsmKind::Device => {
            let mut p = 0;
            // SAFETY: valid out-pointer, the device's context is current.
            check(unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
            p
        }
        UsmKind::Host => {
            let mut p = std::ptr::null_mut();
            let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
            // SAFETY: valid out-pointer, a context is current.
            check(unsafe { sys::cuMemHostAlloc(&mut p, bytes, flags) }).map_err(|e| match e {
                Error::OutOfDeviceMemory => Error::OutOfHostMemory,
                e => e,
            })?;
            p as u64
        }
        UsmKind::Shared => {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: valid out-pointers, the device's context is current.
            check(unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
            if bytes > free {
                tracing::info!(
                    bytes,
                    free,
                    "refusing a managed allocation larger than the free device memory"
                );
                return Err(Error::OutOfDeviceMemory);
            }
            let mut p = 0;
            let flags = sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32;
            // SAFETY: valid out-pointer, the device's context is current.
            check(unsafe { sys::cuMemAllocManaged(&mut p, bytes, flags) })?;
            p
        }
    })
}

/// Frees an allocation no command has seen yet.
fn raw_free(kind: UsmKind, real: u64) {
    // SAFETY: `real` came from `raw_alloc` of `kind` and was never handed out.
    let r = unsafe {
        match kind {
            UsmKind::Host => sys::cuMemFreeHost(real as *mut c_void),
            UsmKind::Device | UsmKind::Shared => sys::cuMemFree_v2(real),
        }
    };
    if let Err(e) = check(r) {
        tracing::warn!(error = %e, "freeing an unused allocation failed");
    }
}

/// Allocates USM memory: device memory with `cuMemAlloc` on the named
/// device; host memory with `cuMemHostAlloc` (portable, device-mapped: with
/// unified addressing the same address works on host and devices); shared
/// memory with `cuMemAllocManaged`, refused with `OutOfDeviceMemory` where
/// the target device has less free memory than asked for (over-subscribing
/// managed memory can hang the GPU).
///
/// The driver promises no alignment beyond 256 bytes (small pinned host
/// allocations came back 2048-aligned on an H100): where the first
/// allocation misses the asked alignment, it is freed and replaced by one
/// `align` bytes larger, and the address handed out is aligned up inside it.
pub(crate) fn usm_alloc(ctx: &CtxInner, desc: &UsmDesc<&CudaDevice>) -> Result<(CudaUsm, UsmPtr)> {
    let dev = target(ctx, desc.device);
    dev.bind()?;
    let align = desc.align.max(1) as u64;
    let mut real = raw_alloc(desc.kind, desc.size)?;
    if real % align != 0 {
        raw_free(desc.kind, real);
        let bytes = desc.size.checked_add(desc.align).ok_or(Error::InvalidSize {
            what: "USM allocation",
            size: desc.size,
        })?;
        real = raw_alloc(desc.kind, bytes)?;
    }
    let addr = real.next_multiple_of(align);
    let alloc = CudaUsm {
        kind: desc.kind,
        real,
        dev: dev.clone(),
    };
    if alloc.is_managed() && !desc.advice.is_empty() {
        // SAFETY: `size` bytes at `addr` lie in the managed allocation just
        // made (`addr` is aligned up inside it, which has room for that).
        unsafe { advise(dev, addr, desc.size, desc.advice)? };
    }
    Ok((alloc, UsmPtr(addr)))
}

/// Applies advice to managed memory; `dev` is "the device" of the advice.
///
/// # Safety
///
/// `[addr, addr + size)` lies in one live managed allocation.
pub(crate) unsafe fn advise(dev: &DevInner, addr: u64, size: usize, advice: UsmAdvice) -> Result<()> {
    for (a, target) in conv::advice(advice) {
        let device = match target {
            conv::AdviseTarget::Device => dev.dev,
            conv::AdviseTarget::Host => conv::CU_DEVICE_CPU,
        };
        // SAFETY: the caller guarantees the range lies in one live managed
        // allocation.
        check(unsafe { sys::cuMemAdvise(addr, size, a, device) })?;
    }
    Ok(())
}

/// Pins existing host memory (`cuMemHostRegister`, portable: every context,
/// and mapped: devices reach it) and answers the device pointer
/// (`cuMemHostGetDevicePointer`; equal to the host address under unified
/// addressing, which every 64-bit CUDA device has).
///
/// # Safety
///
/// The contract of [`ur_api::Adapter::lock_host`].
pub(crate) unsafe fn lock_host(ctx: &CtxInner, mem: HostPtr) -> Result<DeviceAddr> {
    ctx.first().bind()?;
    let p: *mut c_void = mem.as_ptr().cast();
    let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
    // SAFETY: the caller guarantees (lock_host's contract) a non-empty,
    // non-null, mapped span that overlaps no lock and stays valid until it
    // is unlocked; registering does not access its contents.
    check(unsafe { sys::cuMemHostRegister_v2(p, mem.len(), flags) })?;
    let mut dptr = 0;
    // SAFETY: the memory was registered just above; valid out-pointer.
    if let Err(e) = check(unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, p, 0) }) {
        // SAFETY: registered above, never handed out.
        let _ = unsafe { sys::cuMemHostUnregister(p) };
        return Err(e);
    }
    Ok(DeviceAddr(dptr))
}

/// Undoes [`lock_host`] (by the start address, as CUDA does).
///
/// # Safety
///
/// The contract of [`ur_api::Adapter::unlock_host`].
pub(crate) unsafe fn unlock_host(ctx: &CtxInner, mem: HostPtr) -> Result<()> {
    ctx.first().bind()?;
    // SAFETY: the caller guarantees (unlock_host's contract) exactly a
    // locked range; unregistering does not access the memory.
    check(unsafe { sys::cuMemHostUnregister(mem.as_ptr().cast()) })
}
