//! Buffers (device allocations and sub-buffers), USM allocations, pinned
//! staging memory, and registration of existing host memory.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys::CUresult;
use parking_lot::Mutex;
use ur_api::{BufferDesc, DeviceAddr, Error, HostPtr, MapFlags, MemFlags, Result, UsmAdvice, UsmDesc, UsmKind, UsmPtr};

use crate::conv;
use crate::device::{CtxInner, CudaDevice, DevInner};
use crate::driver::{self, DeviceMem, DevicePtr, HostMem, Registration};
use crate::CudaContext;
use crate::CudaEvent;
use crate::CudaQueue;
use ur_api::{MemArg, RectCopy, UsmRef};

/// Sub-buffer offsets must be multiples of this: `cuMemAlloc`'s guaranteed
/// alignment, so a sub-buffer is as aligned for kernels as a buffer.
pub(crate) const SUB_BUFFER_ALIGN: usize = 256;

/// What backs a buffer's memory (freed or unregistered when dropped).
#[derive(Debug)]
pub(crate) enum Backing {
    /// A `cuMemAlloc` allocation.
    Device { _mem: DeviceMem },
    /// Caller memory (`USE_HOST_PTR`) pinned with `cuMemHostRegister`:
    /// `Some` where registered by this buffer (and unregistered with it),
    /// `None` where someone else registered it before.
    Registered { _reg: Option<Registration> },
}

/// A buffer's memory: a device address and what backs it. Dropping it
/// waits for the devices (work in flight may still use it), then frees or
/// unregisters it (the `_backing` field, dropped before `dev`).
#[derive(Debug)]
pub(crate) struct DevAlloc {
    pub ptr: DevicePtr,
    pub _backing: Backing,
    pub dev: Arc<DevInner>,
}

impl Drop for DevAlloc {
    fn drop(&mut self) {
        // The backing is freed after this, in the context sync_all binds,
        // once no command uses it any more.
        self.dev.sync_all();
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
    pub(crate) fn ptr(&self) -> DevicePtr {
        self.mem.ptr + self.offset as u64
    }

    pub(crate) fn dev(&self) -> &Arc<DevInner> {
        &self.mem.dev
    }
}

/// Pinned staging memory ([`HostMem`]) of `len` bytes, freed (after its
/// device's context is bound) when the last reference drops; the owner of
/// that reference (see `CudaEvent`) made sure no copy still uses it.
#[derive(Debug)]
pub(crate) struct Pinned {
    mem: HostMem,
    pub len: usize,
    dev: Arc<DevInner>,
}

impl Pinned {
    pub(crate) fn alloc(dev: &Arc<DevInner>, len: usize) -> Result<Pinned> {
        dev.bind()?;
        Ok(Pinned {
            mem: HostMem::alloc(len.max(1))?,
            len,
            dev: dev.clone(),
        })
    }

    pub(crate) fn ptr(&self) -> *mut c_void {
        self.mem.ptr()
    }

    pub(crate) fn host_ptr(&self) -> HostPtr {
        // SAFETY: the memory lives as long as `self`; callers keep `self`
        // alive until every operation on the span has completed.
        unsafe { HostPtr::new(self.ptr().cast(), self.len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // The memory (a field) is freed after this, in the bound context.
        if let Err(e) = self.dev.bind() {
            tracing::warn!(error = %e, "binding a context failed");
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
/// The contract of [`ur_api::adapter::Memory::create_buffer`].
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
            let mem = DeviceMem::alloc(desc.size)?;
            Arc::new(DevAlloc {
                ptr: mem.ptr(),
                _backing: Backing::Device { _mem: mem },
                dev: dev.clone(),
            })
        }
    };
    if let (true, Some(src)) = (desc.flags.contains(MemFlags::COPY_HOST_PTR), init) {
        // SAFETY: the caller guarantees (create_buffer's contract) `src` holds
        // exactly `size` bytes, readable during this call; the allocation is
        // `size` bytes.
        unsafe { driver::memcpy_htod(mem.ptr, src.as_ptr().cast(), desc.size) }?;
    }
    Ok(CudaBuffer {
        mem,
        offset: 0,
        maps: Mutex::new(Vec::new()),
    })
}

fn register_buffer(dev: &Arc<DevInner>, host: HostPtr) -> Result<DevAlloc> {
    let p: *mut c_void = host.as_ptr().cast();
    // SAFETY: the HostPtr promise keeps the span valid for the buffer's life,
    // which the registration (owned by the buffer) does not outlive.
    let reg = unsafe { Registration::register(p, host.len()) }?;
    // SAFETY: the memory is registered (by us, or before); a failure drops
    // (unregisters) a registration of ours unused.
    let ptr = unsafe { driver::host_device_pointer(p) }?;
    Ok(DevAlloc {
        ptr,
        _backing: Backing::Registered { _reg: reg },
        dev: dev.clone(),
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
    /// What the driver returned (the handed-out address may be aligned up);
    /// freed after `Drop::drop` synchronised, before `dev` is released.
    _mem: RawUsm,
    dev: Arc<DevInner>,
}

/// The driver's allocation behind a USM allocation, freed on drop.
#[derive(Debug)]
enum RawUsm {
    /// Device or managed memory.
    Device(DeviceMem),
    /// Pinned host memory.
    Host(HostMem),
}

impl RawUsm {
    fn addr(&self) -> u64 {
        match self {
            RawUsm::Device(m) => m.ptr(),
            RawUsm::Host(m) => m.ptr() as u64,
        }
    }
}

impl CudaUsm {
    /// Managed (shared USM) memory, the only kind advice and prefetch act on.
    pub(crate) fn is_managed(&self) -> bool {
        self.kind == UsmKind::Shared
    }
}

impl Drop for CudaUsm {
    fn drop(&mut self) {
        // Every device finishes its work first, so nothing uses the memory
        // when the `_mem` field frees it after this.
        self.dev.sync_all();
    }
}

/// One raw allocation of `kind` and `bytes` on `dev` (its context bound).
fn raw_alloc(kind: UsmKind, bytes: usize) -> Result<RawUsm> {
    Ok(match kind {
        UsmKind::Device => RawUsm::Device(DeviceMem::alloc(bytes)?),
        UsmKind::Host => RawUsm::Host(HostMem::alloc(bytes)?),
        UsmKind::Shared => {
            let (free, _total) = driver::mem_get_info()?;
            if bytes > free {
                tracing::info!(
                    bytes,
                    free,
                    "refusing a managed allocation larger than the free device memory"
                );
                return Err(Error::OutOfDeviceMemory);
            }
            RawUsm::Device(DeviceMem::alloc_managed(bytes)?)
        }
    })
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
    let mut mem = raw_alloc(desc.kind, desc.size)?;
    if mem.addr() % align != 0 {
        // Freed unused (no command has seen it) before the larger one.
        drop(mem);
        let bytes = desc.size.checked_add(desc.align).ok_or(Error::InvalidSize {
            what: "USM allocation",
            size: desc.size,
        })?;
        mem = raw_alloc(desc.kind, bytes)?;
    }
    let addr = mem.addr().next_multiple_of(align);
    let alloc = CudaUsm {
        kind: desc.kind,
        _mem: mem,
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
        unsafe { driver::mem_advise(addr, size, a, device) }?;
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
/// The contract of [`ur_api::adapter::HostLocking::lock_host`].
pub(crate) unsafe fn lock_host(ctx: &CtxInner, mem: HostPtr) -> Result<DeviceAddr> {
    ctx.first().bind()?;
    let p: *mut c_void = mem.as_ptr().cast();
    // SAFETY: the caller guarantees (lock_host's contract) a non-empty,
    // non-null, mapped span that overlaps no lock and stays valid until it
    // is unlocked; registering does not access its contents.
    let reg = unsafe { Registration::register(p, mem.len()) }?
        .ok_or_else(|| conv::error(CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED))?;
    // SAFETY: the memory was registered just above; a failure drops
    // (unregisters) the registration, never handed out.
    let dptr = unsafe { driver::host_device_pointer(p) }?;
    // Unregistered by `unlock_host`.
    reg.keep();
    Ok(DeviceAddr(dptr))
}

/// Undoes [`lock_host`] (by the start address, as CUDA does).
///
/// # Safety
///
/// The contract of [`ur_api::adapter::HostLocking::unlock_host`].
pub(crate) unsafe fn unlock_host(ctx: &CtxInner, mem: HostPtr) -> Result<()> {
    ctx.first().bind()?;
    // SAFETY: the caller guarantees (unlock_host's contract) exactly a
    // locked range; unregistering does not access the memory.
    unsafe { driver::host_unregister(mem.as_ptr().cast()) }
}

impl ur_api::adapter::Memory for crate::CudaAdapter {
    unsafe fn create_buffer(
        &self,
        ctx: &CudaContext,
        desc: &BufferDesc<&CudaDevice>,
        init: Option<HostPtr>,
    ) -> Result<CudaBuffer> {
        // SAFETY: the caller keeps create_buffer's contract, forwarded as is.
        unsafe { create_buffer(&ctx.0, desc, init) }
    }

    unsafe fn enqueue_read(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        offset: usize,
        dst: HostPtr,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::read(q, b, offset, dst, w) }
    }

    unsafe fn enqueue_write(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        offset: usize,
        src: HostPtr,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::write(q, b, offset, src, w) }
    }

    unsafe fn enqueue_copy(
        &self,
        q: &CudaQueue,
        src: &CudaBuffer,
        src_offset: usize,
        dst: &CudaBuffer,
        dst_offset: usize,
        size: usize,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::copy(q, src, src_offset, dst, dst_offset, size, w) }
    }

    unsafe fn enqueue_copy_rect(
        &self,
        q: &CudaQueue,
        src: &CudaBuffer,
        dst: &CudaBuffer,
        rect: &RectCopy,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::copy_rect(q, src, dst, rect, w) }
    }

    unsafe fn enqueue_read_rect(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::read_rect(q, b, rect, dst, w) }
    }

    unsafe fn enqueue_write_rect(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        rect: &RectCopy,
        src: HostPtr,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::write_rect(q, b, rect, src, w) }
    }

    unsafe fn enqueue_fill(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::fill(q, b, offset, size, pattern, w) }
    }
}

impl ur_api::adapter::SubBuffers for crate::CudaAdapter {
    unsafe fn create_sub_buffer(&self, parent: &CudaBuffer, offset: usize, size: usize) -> Result<CudaBuffer> {
        // The caller guarantees the window lies inside the parent; the
        // commands on it carry their own ranges.
        let _ = size;
        Ok(create_sub_buffer(parent, offset))
    }
}

impl ur_api::adapter::Mapping for crate::CudaAdapter {
    unsafe fn enqueue_map(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        w: &[&CudaEvent],
    ) -> Result<(CudaEvent, HostPtr)> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::map(q, b, flags, offset, size, w) }
    }

    unsafe fn enqueue_unmap(
        &self,
        q: &CudaQueue,
        b: &CudaBuffer,
        mapped: HostPtr,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps enqueue_unmap's contract, forwarded as is.
        unsafe { crate::queue::unmap(q, b, mapped, w) }
    }
}

impl ur_api::adapter::HostLocking for crate::CudaAdapter {
    // `usm_free` is the trait's default: dropping a `CudaUsm` waits for the
    // devices and frees it.

    unsafe fn lock_host(&self, ctx: &CudaContext, mem: HostPtr) -> Result<DeviceAddr> {
        // SAFETY: the caller keeps lock_host's contract, forwarded as is.
        unsafe { lock_host(&ctx.0, mem) }
    }

    unsafe fn unlock_host(&self, ctx: &CudaContext, mem: HostPtr) -> Result<()> {
        // SAFETY: the caller keeps unlock_host's contract, forwarded as is.
        unsafe { unlock_host(&ctx.0, mem) }
    }
}

impl ur_api::adapter::UnifiedMemory for crate::CudaAdapter {
    fn usm_alloc(&self, ctx: &CudaContext, desc: &UsmDesc<&CudaDevice>) -> Result<(CudaUsm, UsmPtr)> {
        usm_alloc(&ctx.0, desc)
    }

    unsafe fn enqueue_usm_copy(
        &self,
        q: &CudaQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::usm_copy(q, dst, src, size, w) }
    }

    unsafe fn enqueue_usm_fill(
        &self,
        q: &CudaQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::usm_fill(q, ptr, size, pattern, w) }
    }

    unsafe fn enqueue_usm_prefetch(
        &self,
        q: &CudaQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the command contract, forwarded as is.
        unsafe { crate::queue::usm_prefetch(q, ptr, size, w) }
    }

    unsafe fn usm_advise(&self, q: &CudaQueue, ptr: UsmRef<'_, Self>, size: usize, advice: UsmAdvice) -> Result<()> {
        // SAFETY: the caller keeps usm_advise's contract, forwarded as is.
        unsafe { crate::queue::usm_advise(q, ptr, size, advice) }
    }
}
