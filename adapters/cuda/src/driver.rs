//! The driver layer: the one file that calls the CUDA driver and NVRTC.
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

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUresult};
use cudarc::nvrtc::result as nvrtc;
use cudarc::nvrtc::sys::{self as nv, nvrtcResult};
use parking_lot::Mutex;
use ur_api::{Error, Result};

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

// ---- streams and events ----

/// A non-blocking stream, destroyed on drop (pending work still completes;
/// the driver frees the stream afterwards).
#[derive(Debug)]
pub(crate) struct Stream(sys::CUstream);

// SAFETY: streams may be used from any thread; the driver serialises.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A non-blocking stream in the current context.
    pub(crate) fn new() -> Result<Stream> {
        let mut s = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuStreamCreate(&mut s, flags) })?;
        Ok(Stream(s))
    }

    /// Waits for everything enqueued so far.
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is alive.
        check(unsafe { sys::cuStreamSynchronize(self.0) })
    }

    /// Makes later work wait for `e` (an event of any device).
    pub(crate) fn wait_event(&self, e: &Event) -> Result<()> {
        // SAFETY: both handles are alive.
        check(unsafe { sys::cuStreamWaitEvent(self.0, e.0, 0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is owned and destroyed once.
        unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// An event, destroyed on drop (destroying a pending event is allowed:
/// its resources are released once it completes).
#[derive(Debug)]
pub(crate) struct Event(sys::CUevent);

// SAFETY: CUDA events may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// An event with timing or without, in the current context.
    pub(crate) fn new(timing: bool) -> Result<Event> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut ev = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuEventCreate(&mut ev, flags as u32) })?;
        Ok(Event(ev))
    }

    /// Records the event after the work enqueued on `s` so far.
    pub(crate) fn record(&self, s: &Stream) -> Result<()> {
        // SAFETY: both handles are alive.
        check(unsafe { sys::cuEventRecord(self.0, s.0) })
    }

    /// `true` once complete, `false` while pending.
    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: the event is alive.
        match unsafe { sys::cuEventQuery(self.0) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(conv::error(other)),
        }
    }

    /// Waits until the event completed (or the context failed).
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the event is alive.
        check(unsafe { sys::cuEventSynchronize(self.0) })
    }

    /// Milliseconds from this event to `later` (both with timing and
    /// complete; otherwise an error code).
    pub(crate) fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events are alive; valid out-pointer.
        check(unsafe { sys::cuEventElapsedTime(&mut ms, self.0, later.0) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event is owned and destroyed once.
        unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

// ---- enqueued memory operations ----

/// An asynchronous device-to-host copy.
///
/// # Safety
///
/// `len` bytes at `src` are live device memory, and at `dst` host memory
/// writable until the copy completes.
pub(crate) unsafe fn memcpy_dtoh_async(dst: *mut c_void, src: DevicePtr, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous host-to-device copy.
///
/// # Safety
///
/// `len` bytes at `src` are host memory readable until the copy completes,
/// and at `dst` live device memory.
pub(crate) unsafe fn memcpy_htod_async(dst: DevicePtr, src: *const c_void, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous copy within one device.
///
/// # Safety
///
/// `len` bytes at `src` and at `dst` are live memory of the stream's device
/// and do not overlap.
pub(crate) unsafe fn memcpy_dtod_async(dst: DevicePtr, src: DevicePtr, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous copy between devices.
///
/// # Safety
///
/// `len` bytes at `dst` (memory of `dst_ctx`'s device) and at `src` (of
/// `src_ctx`'s) are live and do not overlap.
pub(crate) unsafe fn memcpy_peer_async(
    dst: DevicePtr,
    dst_ctx: &PrimaryCtx,
    src: DevicePtr,
    src_ctx: &PrimaryCtx,
    len: usize,
    s: &Stream,
) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; contexts and stream are alive.
    check(unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx.ctx, src, src_ctx.ctx, len, s.0) })
}

/// An asynchronous copy between unified addresses (the driver infers each
/// side's kind).
///
/// # Safety
///
/// `len` bytes at each side are live memory (host sides valid until the
/// copy completes) and do not overlap.
pub(crate) unsafe fn memcpy_async(dst: u64, src: u64, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyAsync(dst, src, len, s.0) })
}

/// One side of a 2-D copy: host memory or a device address, with its row
/// pitch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mem2d {
    Host(*mut u8),
    Device(DevicePtr),
}

impl Mem2d {
    fn parts(self) -> (sys::CUmemorytype, *mut u8, DevicePtr) {
        match self {
            Mem2d::Device(p) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), p),
            Mem2d::Host(h) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, h, 0),
        }
    }
}

/// An asynchronous 2-D copy of `height` rows of `width` bytes, rows
/// `src_pitch` and `dst_pitch` bytes apart.
///
/// # Safety
///
/// Both boxes lie inside live memory of their sides (host sides valid until
/// the copy completes, the destination writable) and do not overlap; the
/// pitches are within the device's limit.
pub(crate) unsafe fn memcpy_2d_async(
    dst: Mem2d,
    dst_pitch: usize,
    src: Mem2d,
    src_pitch: usize,
    width: usize,
    height: usize,
    s: &Stream,
) -> Result<()> {
    let (src_type, src_host, src_dev) = src.parts();
    let (dst_type, dst_host, dst_dev) = dst.parts();
    let m = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host.cast_const().cast(),
        srcDevice: src_dev,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host.cast(),
        dstDevice: dst_dev,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width,
        Height: height,
    };
    // SAFETY: the caller guarantees both boxes; the descriptor is complete
    // and the stream alive.
    check(unsafe { sys::cuMemcpy2DAsync_v2(&m, s.0) })
}

/// An asynchronous memset of `count` elements of `width` (1, 2 or 4) bytes
/// with `value` at `p`: contiguous where `pitch` is 0, otherwise one
/// element every `pitch` bytes.
///
/// # Safety
///
/// Every element lies in live device-accessible memory and is aligned to
/// its width.
pub(crate) unsafe fn memset_async(
    p: DevicePtr,
    width: usize,
    pitch: usize,
    value: u32,
    count: usize,
    s: &Stream,
) -> Result<()> {
    let s = s.0;
    // SAFETY: the caller guarantees the elements; the stream is alive.
    check(unsafe {
        match (width, pitch) {
            (1, 0) => sys::cuMemsetD8Async(p, value as u8, count, s),
            (2, 0) => sys::cuMemsetD16Async(p, value as u16, count, s),
            (4, 0) => sys::cuMemsetD32Async(p, value, count, s),
            (1, pitch) => sys::cuMemsetD2D8Async(p, pitch, value as u8, 1, count, s),
            (2, pitch) => sys::cuMemsetD2D16Async(p, pitch, value as u16, 1, count, s),
            (_, pitch) => sys::cuMemsetD2D32Async(p, pitch, value, 1, count, s),
        }
    })
}

/// An asynchronous prefetch of managed memory to `dev`.
///
/// # Safety
///
/// `[p, p + len)` lies in one live managed allocation.
pub(crate) unsafe fn mem_prefetch_async(p: DevicePtr, len: usize, dev: Device, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees the range; the stream is alive.
    check(unsafe { sys::cuMemPrefetchAsync(p, len, dev, s.0) })
}

// ---- modules and launches ----

/// A loaded module, unloaded on drop (its context must be current then).
#[derive(Debug)]
pub(crate) struct Module(sys::CUmodule);

// SAFETY: modules may be used from any thread; the driver serialises.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// Loads a module image in the current context; a JIT failure is a
    /// [`Error::ProgramBuild`] carrying the JIT's log.
    ///
    /// # Safety
    ///
    /// `image` is a complete cubin or NUL-terminated PTX.
    pub(crate) unsafe fn load(image: &[u8]) -> Result<Module> {
        let mut log = vec![0u8; 16 * 1024];
        let mut opts = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut vals: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module = std::ptr::null_mut();
        // SAFETY: the caller guarantees the image; the option arrays have two
        // entries each and the log buffer its stated size.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr().cast(),
                2,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        if r == CUresult::CUDA_SUCCESS {
            return Ok(Module(module));
        }
        let jit = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
        Err(match conv::error(r) {
            Error::ProgramBuild { log } => Error::ProgramBuild {
                log: if jit.is_empty() { log } else { format!("{log}\n{jit}") },
            },
            other => other,
        })
    }

    /// The function named `name`; `None` where the module has none.
    pub(crate) fn function(&self, name: &CStr) -> Result<Option<Function>> {
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is loaded; valid out-pointer and C string.
        match unsafe { sys::cuModuleGetFunction(&mut f, self.0, name.as_ptr()) } {
            CUresult::CUDA_SUCCESS => Ok(Some(Function(f))),
            CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            other => Err(conv::error(other)),
        }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module is owned and unloaded once.
        if let Err(e) = check(unsafe { sys::cuModuleUnload(self.0) }) {
            tracing::warn!(error = %e, "cuModuleUnload failed");
        }
    }
}

/// A kernel function of a [`Module`]; valid while the module is loaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Function(sys::CUfunction);

// SAFETY: functions may be used from any thread; the driver serialises.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Function {
    /// The parameter sizes (`cuFuncGetParamInfo`, CUDA 12.4+); `None` where
    /// the driver cannot report them.
    ///
    /// # Safety
    ///
    /// The function's module is still loaded.
    pub(crate) unsafe fn param_sizes(self) -> Option<Vec<usize>> {
        if !has_symbol("cuFuncGetParamInfo") {
            return None;
        }
        let mut sizes = Vec::new();
        for i in 0.. {
            let (mut off, mut size) = (0usize, 0usize);
            // SAFETY: the symbol exists (checked); the caller guarantees a
            // live function; valid out-pointers; an index past the last
            // parameter returns CUDA_ERROR_INVALID_VALUE.
            match unsafe { sys::cuFuncGetParamInfo(self.0, i, &mut off, &mut size) } {
                CUresult::CUDA_SUCCESS => sizes.push(size),
                CUresult::CUDA_ERROR_INVALID_VALUE => break,
                _ => return None,
            }
        }
        Some(sizes)
    }
}

/// Launches `f` with `grid` × `block` threads and no dynamic shared memory.
///
/// # Safety
///
/// The function's module is loaded in the stream's context; `params` holds
/// one pointer per kernel parameter, each to storage of at least the
/// parameter's size (the driver copies the values during the call); every
/// address passed in them is usable in place on the stream's device.
pub(crate) unsafe fn launch_kernel(
    f: Function,
    grid: [u32; 3],
    block: [u32; 3],
    params: &mut [*mut c_void],
    s: &Stream,
) -> Result<()> {
    // SAFETY: the caller guarantees the function and the parameters; the
    // stream is alive.
    check(unsafe {
        sys::cuLaunchKernel(
            f.0,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            0,
            s.0,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

// ---- NVRTC ----

/// An NVRTC program, destroyed on drop.
struct NvrtcProgram(nv::nvrtcProgram);

impl Drop for NvrtcProgram {
    fn drop(&mut self) {
        // SAFETY: created by `nvrtc_compile`, destroyed once here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// Compiles CUDA C with NVRTC under `opts`: a cubin where the options name
/// a real architecture, PTX (NUL-terminated) where a virtual one. A failed
/// compilation is [`Error::ProgramBuild`] with NVRTC's log.
///
/// # Safety
///
/// NVRTC is present ([`nvrtc_present`]), and no option contains a NUL byte.
pub(crate) unsafe fn nvrtc_compile(src: &CStr, opts: &[String]) -> Result<Vec<u8>> {
    let prog = NvrtcProgram(nvrtc::create_program(src, Some(c"program.cu")).map_err(|e| conv::nvrtc_error(e.0))?);
    // SAFETY: the program is alive; the caller guarantees NUL-free options.
    let compiled = unsafe { nvrtc::compile_program(prog.0, opts) };
    // SAFETY: the program is alive.
    let log = unsafe { nvrtc::get_program_log(prog.0) }
        .map(|l| {
            let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        return Err(match e.0 {
            nvrtcResult::NVRTC_ERROR_COMPILATION | nvrtcResult::NVRTC_ERROR_INVALID_OPTION => Error::ProgramBuild {
                log: if log.is_empty() { format!("{:?}", e.0) } else { log },
            },
            other => conv::nvrtc_error(other),
        });
    }
    if !log.trim().is_empty() {
        tracing::debug!(%log, "NVRTC build log");
    }
    let mut size = 0usize;
    // SAFETY: the program is alive and compiled; valid out-pointer.
    let cubin = unsafe { nv::nvrtcGetCUBINSize(prog.0, &mut size) };
    if cubin == nvrtcResult::NVRTC_SUCCESS && size > 0 {
        let mut out = vec![0u8; size];
        // SAFETY: `out` holds the size NVRTC reported.
        let r = unsafe { nv::nvrtcGetCUBIN(prog.0, out.as_mut_ptr().cast()) };
        if r != nvrtcResult::NVRTC_SUCCESS {
            return Err(conv::nvrtc_error(r));
        }
        return Ok(out);
    }
    // A virtual architecture was asked for: PTX, JIT-compiled at load.
    // SAFETY: the program is alive and compiled.
    let ptx = unsafe { nvrtc::get_ptx(prog.0) }.map_err(|e| conv::nvrtc_error(e.0))?;
    Ok(ptx.iter().map(|&c| c as u8).collect())
}
