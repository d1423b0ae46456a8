//! Loading the driver, the platform and its devices, contexts, and the
//! memory-connection answer.

use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use ur_api::{
    Backend, DeviceCaps, DeviceInfo, DeviceType, MemoryConnection, PlatformInfo, ProgramFormats, Result, UsmCaps,
};

use crate::conv;
use crate::driver::{self, Attr, Device, Event, PrimaryCtx};
use ur_api::Loc;

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
    pub dev: Device,
    pub ctx: PrimaryCtx,
    pub name: String,
    pub total_mem: usize,
    pub sm_count: u32,
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
    pub peers: Vec<Device>,
    /// What the driver reports of the device's limits (compute capability,
    /// block size per dimension and in all, warp, caches, ...).
    pub limits: conv::LimitAttrs,
    pub driver_version: i32,
    pub siblings: Arc<Siblings>,
    /// Timing-free events kept for reuse (creating one per command costs).
    pub event_pool: Mutex<Vec<Event>>,
}

impl Drop for DevInner {
    fn drop(&mut self) {
        // Pooled events are destroyed in their context; where it cannot be
        // bound they are left to the driver. The primary context (a field)
        // is released after this.
        let pooled = std::mem::take(&mut *self.event_pool.lock());
        if !pooled.is_empty() && self.bind().is_err() {
            std::mem::forget(pooled);
        }
    }
}

impl DevInner {
    /// Makes this device's primary context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.ctx.bind()
    }

    /// Waits for all work of every device of this enumeration (before memory
    /// that any of them might use is freed). Failures are logged: a sticky
    /// error of an earlier command must not keep memory from being freed.
    pub fn sync_all(&self) {
        let all = self.siblings.0.get().map(|v| v.as_slice()).unwrap_or_default();
        for d in all.iter().filter_map(Weak::upgrade) {
            let r = d.bind().and_then(|()| driver::ctx_synchronize());
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
    pub peer_enabled: Vec<(Device, Device)>,
}

impl CtxInner {
    pub fn first(&self) -> &Arc<DevInner> {
        &self.devices[0]
    }
}

pub(crate) fn platform_info(p: &CudaPlatform) -> PlatformInfo {
    PlatformInfo {
        name: "NVIDIA CUDA".into(),
        vendor: "NVIDIA Corporation".into(),
        version: format!("CUDA {}", conv::cuda_version(p.driver_version)),
        backend: Backend::Cuda,
    }
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
    if driver::has_symbol("cuFuncGetParamInfo") {
        caps |= DeviceCaps::KERNELS;
    }
    if d.host_register {
        caps |= DeviceCaps::HOST_REGISTER;
        if d.map_host {
            caps |= DeviceCaps::USE_HOST_PTR;
        }
    }
    let mut program_formats = ProgramFormats::PTX;
    if driver::nvrtc_present() {
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
        .compute(d.sm_count, d.limits.max_threads)
        // Block and grid limits: the dyn layer checks explicit block sizes
        // against them, `conv::launch_dims` the blocks it chooses.
        .launch_limits(d.limits.max_block, d.max_grid)
        .limits(conv::limits(&d.limits))
        .sub_buffer_align(crate::memory::SUB_BUFFER_ALIGN)
        // Reported although no launch takes local-memory arguments: it is
        // what a kernel's `__shared__` declarations may use per block.
        .local_mem(d.shared_mem)
        .versions(
            conv::cuda_version(d.driver_version),
            format!("compute capability {}.{}", d.limits.cc.0, d.limits.cc.1),
        )
}

/// The connection answer for two locations (see `conv::connection`).
pub(crate) fn memory_connection(src: (&CtxInner, &DevInner), dst: (&CtxInner, &DevInner)) -> MemoryConnection {
    let ((sc, sd), (dc, dd)) = (src, dst);
    conv::connection(
        sd.dev == dd.dev,
        std::ptr::eq(sc, dc) && sc.peer_enabled.contains(&(sd.dev, dd.dev)),
        dd.peers.contains(&sd.dev),
    )
}

impl ur_api::adapter::Devices for crate::CudaAdapter {
    fn backend(&self) -> Backend {
        Backend::Cuda
    }

    fn platforms(&self) -> Result<Vec<CudaPlatform>> {
        if let Err(reason) = driver::load() {
            tracing::info!(%reason, "CUDA absent: no platforms");
            return Ok(Vec::new());
        }
        let count = driver::device_count()?;
        let version = driver::driver_version()?;
        if count == 0 {
            return Ok(Vec::new());
        }
        Ok(vec![CudaPlatform {
            driver_version: version,
            count,
        }])
    }

    fn platform_info(&self, platform: &CudaPlatform) -> Result<PlatformInfo> {
        Ok(platform_info(platform))
    }

    fn devices(&self, p: &CudaPlatform) -> Result<Vec<CudaDevice>> {
        let siblings = Arc::new(Siblings::default());
        let handles = (0..p.count).map(driver::device).collect::<Result<Vec<_>>>()?;
        let mut out = Vec::new();
        for &dev in &handles {
            let name = driver::device_name(dev)?;
            let total = driver::device_total_mem(dev)?;
            let mut peers = Vec::new();
            for &other in handles.iter().filter(|&&o| o != dev) {
                if driver::can_access_peer(dev, other)? {
                    peers.push(other);
                }
            }
            let a = |x| driver::device_attribute(dev, x);
            // Limits a driver may no longer report (the clock rate, deprecated
            // in CUDA 13) read as 0, never as a failed enumeration.
            let opt = |x| driver::device_attribute(dev, x).map_or(0, |v| v.max(0));
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
            let ctx = PrimaryCtx::retain(dev)?;
            let inner = DevInner {
                dev,
                ctx,
                name,
                total_mem: total,
                sm_count: a(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
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

    fn device_info(&self, device: &CudaDevice) -> Result<DeviceInfo> {
        Ok(device_info(&device.0))
    }

    /// A context over `devices`; enables peer access between every pair of its
    /// devices that supports it (in both directions where possible).
    fn create_context(&self, devices: &[&CudaDevice]) -> Result<CudaContext> {
        let devs: Vec<Arc<DevInner>> = devices.iter().map(|d| d.0.clone()).collect();
        let mut peer_enabled = Vec::new();
        for dst in &devs {
            for src in devs.iter().filter(|s| dst.peers.contains(&s.dev)) {
                dst.bind()?;
                match src.ctx.enable_access_from_current() {
                    Ok(()) => peer_enabled.push((src.dev, dst.dev)),
                    // E.g. too many peers: the pair stays Migratable.
                    Err(e) => tracing::warn!(
                        src = %src.name,
                        dst = %dst.name,
                        error = %e,
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

    /// The connection answer for two locations (see `conv::connection`).
    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection {
        memory_connection((&src.0 .0, &src.1 .0), (&dst.0 .0, &dst.1 .0))
    }
}
