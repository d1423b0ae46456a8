//! Loading the driver, the platform and its devices, contexts, and the
//! memory-connection answer.

use std::ffi::{c_char, c_int, CStr};
use std::sync::{Arc, OnceLock, Weak};

use cudarc::driver::sys::{self, CUdevice_attribute as Attr};
use parking_lot::Mutex;
use ur_api::{
    Backend, DeviceCaps, DeviceInfo, DeviceType, MemoryConnection, PlatformInfo, ProgramFormats, Result, UsmCaps,
};

use crate::conv::{self, check};

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
pub(crate) fn driver() -> std::result::Result<(), String> {
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
        use cudarc::nvrtc::sys as nv;
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
    // SAFETY: only called after `driver()` succeeded, so the library is loaded;
    // looking a symbol up does not call it.
    let f = driver().is_ok() && unsafe { sys::culib().get::<unsafe extern "C" fn()>(name.as_bytes()) }.is_ok();
    found.push((name, f));
    f
}

/// The one CUDA platform.
#[derive(Debug)]
pub struct CudaPlatform {
    pub(crate) driver_version: i32,
    pub(crate) count: i32,
}

/// The devices of one enumeration, so that freeing memory can wait for
/// every device that might still use it.
#[derive(Debug, Default)]
pub(crate) struct Siblings(OnceLock<Vec<Weak<DevInner>>>);

/// One device and its retained primary context.
#[derive(Debug)]
pub(crate) struct DevInner {
    pub dev: sys::CUdevice,
    pub ctx: sys::CUcontext,
    pub name: String,
    pub cc: (i32, i32),
    pub total_mem: usize,
    pub sm_count: u32,
    pub max_threads: usize,
    pub max_block: [usize; 3],
    pub max_grid: [usize; 3],
    pub max_pitch: usize,
    /// Shared memory per block in bytes (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`).
    pub shared_mem: u64,
    pub integrated: bool,
    pub managed: bool,
    pub host_register: bool,
    /// Registered host memory can be mapped into the device's address space.
    pub map_host: bool,
    /// Devices whose memory this device can access directly (peer capable).
    pub peers: Vec<sys::CUdevice>,
    /// What the driver reports of the device's limits.
    pub limits: conv::LimitAttrs,
    pub driver_version: i32,
    pub siblings: Arc<Siblings>,
    /// Timing-free events kept for reuse (creating one per command costs).
    pub event_pool: Mutex<Vec<sys::CUevent>>,
}

// SAFETY: a CUcontext is a handle the driver lets any thread use; the
// driver API is thread-safe.
unsafe impl Send for DevInner {}
// SAFETY: as above; the struct is otherwise plain data.
unsafe impl Sync for DevInner {}

impl Drop for DevInner {
    fn drop(&mut self) {
        let pooled = std::mem::take(&mut *self.event_pool.lock());
        if !pooled.is_empty() && self.bind().is_ok() {
            for ev in pooled {
                // SAFETY: pooled events are owned by the pool and unused.
                unsafe { sys::cuEventDestroy_v2(ev) };
            }
        }
        // SAFETY: the primary context was retained once for this object.
        if let Err(e) = check(unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.dev) }) {
            tracing::warn!(error = %e, "releasing a primary context failed");
        }
    }
}

impl DevInner {
    /// Makes this device's primary context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        // SAFETY: the context is retained for as long as `self` lives.
        check(unsafe { sys::cuCtxSetCurrent(self.ctx) })
    }

    /// Waits for all work of every device of this enumeration (before memory
    /// that any of them might use is freed). Failures are logged: a sticky
    /// error of an earlier command must not keep memory from being freed.
    pub fn sync_all(&self) {
        let all = self.siblings.0.get().map(|v| v.as_slice()).unwrap_or_default();
        for d in all.iter().filter_map(Weak::upgrade) {
            // SAFETY: `d` is alive and its context retained.
            let r = d.bind().and_then(|()| check(unsafe { sys::cuCtxSynchronize() }));
            if let Err(e) = r {
                tracing::warn!(device = %d.name, error = %e, "synchronising before a free failed");
            }
        }
        if let Err(e) = self.bind() {
            tracing::warn!(error = %e, "binding a context failed");
        }
    }
}

/// A CUDA device.
#[derive(Debug, Clone)]
pub struct CudaDevice(pub(crate) Arc<DevInner>);

/// A context: a set of devices, each used through its primary context.
#[derive(Debug, Clone)]
pub struct CudaContext(pub(crate) Arc<CtxInner>);

#[derive(Debug)]
pub(crate) struct CtxInner {
    pub devices: Vec<Arc<DevInner>>,
    /// (source, destination) device pairs of this context with peer access
    /// enabled: the destination reads the source's memory in place.
    pub peer_enabled: Vec<(sys::CUdevice, sys::CUdevice)>,
}

impl CtxInner {
    pub fn first(&self) -> &Arc<DevInner> {
        &self.devices[0]
    }
}

fn attr(dev: sys::CUdevice, a: Attr) -> Result<i32> {
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer and `dev` a device of the driver.
    check(unsafe { sys::cuDeviceGetAttribute(&mut v, a, dev) })?;
    Ok(v)
}

pub(crate) fn platforms() -> Result<Vec<CudaPlatform>> {
    if let Err(reason) = driver() {
        tracing::info!(%reason, "CUDA absent: no platforms");
        return Ok(Vec::new());
    }
    let mut count: c_int = 0;
    let mut version: c_int = 0;
    // SAFETY: the driver is initialised and the out-pointers are valid.
    check(unsafe { sys::cuDeviceGetCount(&mut count) })?;
    // SAFETY: as above.
    check(unsafe { sys::cuDriverGetVersion(&mut version) })?;
    if count == 0 {
        return Ok(Vec::new());
    }
    Ok(vec![CudaPlatform {
        driver_version: version,
        count,
    }])
}

pub(crate) fn platform_info(p: &CudaPlatform) -> PlatformInfo {
    PlatformInfo {
        name: "NVIDIA CUDA".into(),
        vendor: "NVIDIA Corporation".into(),
        version: format!("CUDA {}", conv::cuda_version(p.driver_version)),
        backend: Backend::Cuda,
    }
}

pub(crate) fn devices(p: &CudaPlatform) -> Result<Vec<CudaDevice>> {
    let siblings = Arc::new(Siblings::default());
    let mut handles = Vec::new();
    for ordinal in 0..p.count {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: valid out-pointer; the ordinal is below the device count.
        check(unsafe { sys::cuDeviceGet(&mut dev, ordinal) })?;
        handles.push(dev);
    }
    let mut out = Vec::new();
    for &dev in &handles {
        let mut name = [0 as c_char; 256];
        // SAFETY: the buffer holds 256 bytes, as passed.
        check(unsafe { sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, dev) })?;
        // SAFETY: the driver wrote a NUL-terminated string into the buffer.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let mut total = 0usize;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuDeviceTotalMem_v2(&mut total, dev) })?;
        let mut peers = Vec::new();
        for &other in handles.iter().filter(|&&o| o != dev) {
            let mut can: c_int = 0;
            // SAFETY: valid out-pointer and devices.
            check(unsafe { sys::cuDeviceCanAccessPeer(&mut can, dev, other) })?;
            if can != 0 {
                peers.push(other);
            }
        }
        let a = |x| attr(dev, x);
        // Limits a driver may no longer report (the clock rate, deprecated
        // in CUDA 13) read as 0, never as a failed enumeration.
        let opt = |x| attr(dev, x).map_or(0, |v| v.max(0));
        let limits = conv::LimitAttrs {
            cc: (
                a(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            ),
            max_block: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)? as usize,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)? as usize,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)? as usize,
            ],
            max_threads: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as usize,
            warp: opt(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE) as u32,
            clock_khz: opt(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE) as u32,
            l2_bytes: opt(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as u64,
            const_bytes: opt(Attr::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY) as u64,
            concurrent_managed: opt(Attr::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS) != 0,
        };
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: valid out-pointer; released in `DevInner::drop`.
        check(unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) })?;
        let inner = DevInner {
            dev,
            ctx,
            name,
            cc: limits.cc,
            total_mem: total,
            sm_count: a(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_threads: limits.max_threads,
            max_block: limits.max_block,
            max_grid: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)? as usize,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)? as usize,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)? as usize,
            ],
            max_pitch: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_PITCH)? as usize,
            shared_mem: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)? as u64,
            integrated: a(Attr::CU_DEVICE_ATTRIBUTE_INTEGRATED)? != 0,
            // Shared USM needs managed memory the host may touch while kernels run.
            managed: a(Attr::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)? != 0
                && a(Attr::CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)? != 0,
            host_register: a(Attr::CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED)? != 0,
            map_host: a(Attr::CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)? != 0
                && a(Attr::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)? != 0,
            peers,
            limits,
            driver_version: p.driver_version,
            siblings: siblings.clone(),
            event_pool: Mutex::new(Vec::new()),
        };
        out.push(CudaDevice(Arc::new(inner)));
    }
    let _ = siblings.0.set(out.iter().map(|d| Arc::downgrade(&d.0)).collect());
    Ok(out)
}

pub(crate) fn device_info(d: &DevInner) -> DeviceInfo {
    let mut usm = UsmCaps::HOST | UsmCaps::DEVICE;
    if d.managed {
        usm |= UsmCaps::SHARED;
    }
    let mut caps = DeviceCaps::PROFILING | DeviceCaps::SUB_BUFFERS | DeviceCaps::MAP | DeviceCaps::FILL_ANY_PATTERN;
    // Kernels only where the driver reports parameter sizes
    // (`cuFuncGetParamInfo`, CUDA 12.4+): `cuLaunchKernel` reads as many
    // arguments as the kernel declares, so a launch with too few would read
    // past the argument array. With the sizes, the dyn layer checks every
    // launch; without them, no safe call could be made sound.
    if has_symbol("cuFuncGetParamInfo") {
        caps |= DeviceCaps::KERNELS;
    }
    if d.host_register {
        caps |= DeviceCaps::HOST_REGISTER;
        if d.map_host {
            caps |= DeviceCaps::USE_HOST_PTR;
        }
    }
    let mut program_formats = ProgramFormats::PTX;
    if nvrtc_present() {
        program_formats |= ProgramFormats::CUDA_C;
    }
    // No GLOBAL_OFFSET and no LOCAL_MEMORY_ARGS: CUDA launches have no
    // global offset, and kernels declare `__shared__` memory themselves.
    DeviceInfo::new(d.name.clone(), DeviceType::Gpu)
        .vendor("NVIDIA Corporation")
        .memory(d.total_mem as u64, d.total_mem as u64)
        .host_unified_memory(d.integrated)
        .usm(usm)
        .caps(caps)
        .program_formats(program_formats)
        .compute(d.sm_count, d.max_threads)
        .sub_buffer_align(crate::memory::SUB_BUFFER_ALIGN)
        // Reported although no launch takes local-memory arguments: it is
        // what a kernel's `__shared__` declarations may use per block.
        .local_mem(d.shared_mem)
        .limits(conv::limits(&d.limits))
        .versions(
            conv::cuda_version(d.driver_version),
            format!("compute capability {}.{}", d.cc.0, d.cc.1),
        )
}

/// A context over `devices`; enables peer access between every pair of its
/// devices that supports it (in both directions where possible).
pub(crate) fn create_context(devices: &[&CudaDevice]) -> Result<CudaContext> {
    let devs: Vec<Arc<DevInner>> = devices.iter().map(|d| d.0.clone()).collect();
    let mut peer_enabled = Vec::new();
    for dst in &devs {
        for src in devs.iter().filter(|s| dst.peers.contains(&s.dev)) {
            dst.bind()?;
            // SAFETY: both primary contexts are retained; the destination's is current.
            match unsafe { sys::cuCtxEnablePeerAccess(src.ctx, 0) } {
                sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                    peer_enabled.push((src.dev, dst.dev));
                }
                // E.g. too many peers: the pair stays Migratable.
                other => tracing::warn!(
                    src = %src.name,
                    dst = %dst.name,
                    error = conv::name(other),
                    "peer access not enabled"
                ),
            }
        }
    }
    Ok(CudaContext(Arc::new(CtxInner {
        devices: devs,
        peer_enabled,
    })))
}

/// The connection answer for two locations (see [`conv::connection`]).
pub(crate) fn memory_connection(src: (&CtxInner, &DevInner), dst: (&CtxInner, &DevInner)) -> MemoryConnection {
    let ((sc, sd), (dc, dd)) = (src, dst);
    conv::connection(
        sd.dev == dd.dev,
        std::ptr::eq(sc, dc) && sc.peer_enabled.contains(&(sd.dev, dd.dev)),
        dd.peers.contains(&sd.dev),
    )
}
