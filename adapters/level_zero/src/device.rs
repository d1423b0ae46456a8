//! Drivers (platforms), devices and sub-devices, contexts, and the memory
//! connection between locations.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use level_zero_sys::result::{self, c_string, check, query, Described};
use level_zero_sys::sys;
use level_zero_sys::{ext, Loader};
use parking_lot::Mutex;
use ur_api::{
    Backend, DeviceCaps, DeviceInfo, DeviceType, MemoryConnection, PlatformInfo, ProgramFormats, Result, UsmCaps,
};

use crate::conv;
use crate::queue::EventPools;
use ur_api::Loc;

/// A raw Level Zero handle that may cross threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Raw<T>(pub T);

// SAFETY: Level Zero handles are opaque pointers that the specification
// lets any thread use; the objects that need external synchronisation
// (command lists while appending, kernels while setting arguments) are
// used under a lock in this crate.
unsafe impl<T> Send for Raw<T> {}
// SAFETY: as above; sharing a handle does not touch the object.
unsafe impl<T> Sync for Raw<T> {}

static LOADER: OnceLock<std::result::Result<Loader, String>> = OnceLock::new();

/// The loader after `zeInit`, or why there is none. Opened once per process.
pub(crate) fn ze() -> std::result::Result<&'static Loader, &'static str> {
    LOADER
        .get_or_init(|| {
            let loader = Loader::open().map_err(|e| e.to_string())?;
            // SAFETY: zeInit takes only flags (0: every driver type).
            check(unsafe { loader.zeInit(0) })
                .map_err(|e| format!("zeInit failed: {e} (no Level Zero driver on this machine)"))?;
            tracing::debug!(loader = loader.name(), "Level Zero initialised");
            Ok(loader)
        })
        .as_ref()
        .map_err(String::as_str)
}

/// Host-pointer import entry points of a driver that has them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Import {
    pub import: ext::PfnImportExternalPointer,
    pub release: ext::PfnReleaseImportedPointer,
}

/// One driver, shared by its devices and contexts.
#[derive(Debug)]
pub(crate) struct Driver {
    pub ze: &'static Loader,
    pub handle: Raw<sys::ze_driver_handle_t>,
    pub index: usize,
    pub version: String,
    pub api: String,
    pub extensions: Vec<String>,
    pub import: Option<Import>,
}

impl Driver {
    pub(crate) fn has_extension(&self, name: &[u8]) -> bool {
        let name = std::str::from_utf8(name).unwrap_or("").trim_end_matches('\0');
        self.extensions.iter().any(|e| e == name)
    }

    /// An extension function's address, if the driver has it.
    fn extension_fn(&self, name: &std::ffi::CStr) -> Option<*mut std::ffi::c_void> {
        let mut f = std::ptr::null_mut();
        // SAFETY: a live driver handle, a NUL-terminated name, and an out
        // pointer the driver writes (or leaves null).
        let r = unsafe {
            self.ze
                .zeDriverGetExtensionFunctionAddress(self.handle.0, name.as_ptr(), &mut f)
        };
        (check(r).is_ok() && !f.is_null()).then_some(f)
    }
}

/// A platform: one Level Zero driver.
#[derive(Debug, Clone)]
pub struct LevelZeroPlatform(pub(crate) Arc<Driver>);

/// A device or sub-device of a driver.
#[derive(Debug)]
pub struct LevelZeroDevice {
    pub(crate) driver: Arc<Driver>,
    pub(crate) handle: Raw<sys::ze_device_handle_t>,
    pub(crate) info: DeviceInfo,
    /// Ordinal of the first queue group that computes.
    pub(crate) compute_ordinal: u32,
    /// Longest native fill pattern of that group.
    pub(crate) max_fill_pattern: usize,
    /// Nanoseconds per timestamp tick, and the valid bits of kernel timestamps.
    pub(crate) timer: (u64, u32),
}

/// Lists the drivers after `zeInit`.
pub(crate) fn drivers() -> Result<Vec<LevelZeroPlatform>> {
    let ze = match ze() {
        Ok(ze) => ze,
        Err(why) => {
            tracing::info!(%why, "Level Zero absent: zero platforms");
            return Ok(Vec::new());
        }
    };
    let handles = result::drivers(ze).map_err(conv::error)?;
    let mut out = Vec::with_capacity(handles.len());
    for (index, h) in handles.into_iter().enumerate() {
        // SAFETY: `h` was just listed by zeDriverGet.
        let props = query(|p| unsafe { ze.zeDriverGetProperties(h, p) }).map_err(conv::error)?;
        let mut api = 0;
        // SAFETY: a live driver and an out pointer.
        check(unsafe { ze.zeDriverGetApiVersion(h, &mut api) }).map_err(conv::error)?;
        // SAFETY: a live driver.
        let extensions = unsafe { result::extensions(ze, h) }
            .map_err(conv::error)?
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let mut driver = Driver {
            ze,
            handle: Raw(h),
            index,
            version: props.driverVersion.to_string(),
            api: format!("{}.{}", api >> 16, api & 0xffff),
            extensions,
            import: None,
        };
        let import = driver.extension_fn(ext::IMPORT_EXTERNAL_POINTER);
        let release = driver.extension_fn(ext::RELEASE_IMPORTED_POINTER);
        if let (Some(i), Some(r)) = (import, release) {
            // SAFETY: the driver returned these addresses for these names,
            // whose signatures `ext` declares.
            driver.import = Some(unsafe {
                Import {
                    import: std::mem::transmute::<*mut std::ffi::c_void, ext::PfnImportExternalPointer>(i),
                    release: std::mem::transmute::<*mut std::ffi::c_void, ext::PfnReleaseImportedPointer>(r),
                }
            });
        }
        out.push(LevelZeroPlatform(Arc::new(driver)));
    }
    Ok(out)
}

pub(crate) fn platform_info(p: &LevelZeroPlatform) -> PlatformInfo {
    PlatformInfo {
        name: format!("Level Zero driver {}", p.0.index),
        vendor: "oneAPI Level Zero".to_owned(),
        version: format!("Level Zero {}, driver {}", p.0.api, p.0.version),
        backend: Backend::LevelZero,
    }
}

/// The root devices of a driver, each followed by its sub-devices.
pub(crate) fn devices(p: &LevelZeroPlatform) -> Result<Vec<LevelZeroDevice>> {
    let d = &p.0;
    // SAFETY: a live driver handle of this loader.
    let roots = unsafe { result::devices(d.ze, d.handle.0) }.map_err(conv::error)?;
    let mut out = Vec::new();
    for root in roots {
        out.push(describe(d, root, None)?);
        // SAFETY: a live device handle just listed.
        let subs = unsafe { result::sub_devices(d.ze, root) }.map_err(conv::error)?;
        for (i, sub) in subs.into_iter().enumerate() {
            out.push(describe(d, sub, Some(i))?);
        }
    }
    Ok(out)
}

fn describe(d: &Arc<Driver>, h: sys::ze_device_handle_t, tile: Option<usize>) -> Result<LevelZeroDevice> {
    let ze = d.ze;
    let e = conv::error;
    // SAFETY: `h` is a live device of this driver and the struct carries
    // its stype (so for every query below).
    let props = query(|p| unsafe { ze.zeDeviceGetProperties(h, p) }).map_err(e)?;
    // SAFETY: as above.
    let compute = query(|p| unsafe { ze.zeDeviceGetComputeProperties(h, p) }).map_err(e)?;
    // SAFETY: as above.
    let access = query(|p| unsafe { ze.zeDeviceGetMemoryAccessProperties(h, p) }).map_err(e)?;
    // SAFETY: as above.
    let module = query(|p| unsafe { ze.zeDeviceGetModuleProperties(h, p) }).map_err(e)?;
    // SAFETY: as above.
    let memories = unsafe { result::memory_properties(ze, h) }.map_err(e)?;
    // SAFETY: as above.
    let groups = unsafe { result::queue_groups(ze, h) }.map_err(e)?;
    let compute_flag = sys::ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE;
    let (ordinal, group) = groups
        .iter()
        .enumerate()
        .find(|(_, g)| g.flags & compute_flag != 0)
        .ok_or_else(|| ur_api::Error::unsupported("a Level Zero device without a compute queue group"))?;

    let total: u64 = memories.iter().map(|m| m.totalSize).sum();
    let (global, max_alloc) = conv::memory_limits(props.maxMemAllocSize, total);
    let integrated = props.flags & sys::ZE_DEVICE_PROPERTY_FLAG_INTEGRATED != 0;
    let mut usm = UsmCaps::empty();
    let has = |caps: u32| caps & sys::ZE_MEMORY_ACCESS_CAP_FLAG_RW != 0;
    let null_driver = access.hostAllocCapabilities == 0 && access.deviceAllocCapabilities == 0;
    // A driver that reports no access capabilities at all (the null driver)
    // still allocates every kind; read them as "all three".
    if null_driver || has(access.deviceAllocCapabilities) {
        usm |= UsmCaps::DEVICE;
    }
    if null_driver || has(access.hostAllocCapabilities) {
        usm |= UsmCaps::HOST;
    }
    if null_driver || has(access.sharedSingleDeviceAllocCapabilities) {
        usm |= UsmCaps::SHARED;
    }
    let mut caps =
        DeviceCaps::PROFILING | DeviceCaps::SUB_BUFFERS | DeviceCaps::KERNELS | DeviceCaps::LOCAL_MEMORY_ARGS;
    if d.import.is_some() {
        caps |= DeviceCaps::HOST_REGISTER;
    }
    if d.has_extension(sys::ZE_GLOBAL_OFFSET_EXP_NAME) {
        caps |= DeviceCaps::GLOBAL_OFFSET;
    }
    let name = c_string(&props.name);
    let name = match tile {
        Some(i) => format!("{name} (sub-device {i})"),
        None => name,
    };
    let device_type = match props.type_ {
        sys::ZE_DEVICE_TYPE_GPU => DeviceType::Gpu,
        sys::ZE_DEVICE_TYPE_CPU => DeviceType::Cpu,
        sys::ZE_DEVICE_TYPE_FPGA | sys::ZE_DEVICE_TYPE_VPU => DeviceType::Accelerator,
        _ => DeviceType::Custom,
    };
    let units = props.numSlices * props.numSubslicesPerSlice * props.numEUsPerSubslice;
    let info = DeviceInfo::new(name, device_type)
        .vendor(match props.vendorId {
            0x8086 => "Intel".to_owned(),
            v => format!("PCI vendor {v:#06x}"),
        })
        .memory(global, max_alloc)
        .host_unified_memory(integrated)
        .usm(usm)
        .caps(caps)
        .program_formats(ProgramFormats::SPIRV)
        .compute(
            conv::or_default(units, 1),
            conv::or_default(compute.maxTotalGroupSize, 256) as usize,
        )
        .sub_buffer_align(crate::memory::SUB_BUFFER_ALIGN)
        // Per dimension (0 from a driver that reports none: not checked).
        .launch_limits(
            [compute.maxGroupSizeX, compute.maxGroupSizeY, compute.maxGroupSizeZ].map(|v| v as usize),
            [compute.maxGroupCountX, compute.maxGroupCountY, compute.maxGroupCountZ].map(|v| v as usize),
        )
        // ze_device_compute_properties_t::maxSharedLocalMemory; a driver that
        // reports 0 (the null driver) bounds nothing.
        .local_mem(u64::from(compute.maxSharedLocalMemory))
        .versions(
            d.version.clone(),
            format!(
                "Level Zero {} (SPIR-V {}.{})",
                d.api,
                module.spirvVersionSupported >> 16,
                module.spirvVersionSupported & 0xffff
            ),
        );
    Ok(LevelZeroDevice {
        driver: d.clone(),
        handle: Raw(h),
        info,
        compute_ordinal: ordinal as u32,
        max_fill_pattern: conv::or_default(group.maxMemoryFillPatternSize, 128),
        timer: (props.timerResolution, props.kernelTimestampValidBits),
    })
}

static CONTEXT_IDS: AtomicU64 = AtomicU64::new(1);

/// The shared part of a context: its handle and its event pools. Buffers,
/// USM, queues and events hold it, so it is destroyed after all of them.
#[derive(Debug)]
pub(crate) struct ContextInner {
    pub driver: Arc<Driver>,
    pub handle: Raw<sys::ze_context_handle_t>,
    pub id: u64,
    pub devices: Vec<Raw<sys::ze_device_handle_t>>,
    pub events: EventPools,
    /// One synchronous immediate command list per device, created on first
    /// use, for initial buffer contents.
    pub init_lists: Mutex<Vec<(Raw<sys::ze_device_handle_t>, Raw<sys::ze_command_list_handle_t>)>>,
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        let ze = self.driver.ze;
        for (_, list) in self.init_lists.get_mut().drain(..) {
            // SAFETY: our list; synchronous, so nothing is pending on it.
            let _ = unsafe { ze.zeCommandListDestroy(list.0) };
        }
        self.events.destroy(ze);
        // SAFETY: every object of the context held this struct; none is left.
        if let Err(e) = check(unsafe { ze.zeContextDestroy(self.handle.0) }) {
            tracing::warn!(error = %e, "zeContextDestroy failed");
        }
    }
}

/// A context over devices of one driver.
#[derive(Debug)]
pub struct LevelZeroContext(pub(crate) Arc<ContextInner>);

impl Drop for LevelZeroContext {
    fn drop(&mut self) {
        // Events dropped before their commands finished wait in the pools
        // holding what they used; waiting for them now breaks the cycle
        // (they hold this context) so it can be destroyed.
        self.0.events.drain(self.0.driver.ze);
    }
}

pub(crate) fn create_context(devices: &[&LevelZeroDevice]) -> Result<LevelZeroContext> {
    let driver = devices[0].driver.clone();
    let ze = driver.ze;
    let desc = sys::ze_context_desc_t::described();
    let mut handles: Vec<sys::ze_device_handle_t> = devices.iter().map(|d| d.handle.0).collect();
    let mut ctx = std::ptr::null_mut();
    // SAFETY: a live driver, a described desc, device handles of that
    // driver (the dyn layer gives devices of one platform), an out pointer.
    check(unsafe {
        ze.zeContextCreateEx(
            driver.handle.0,
            &desc,
            handles.len() as u32,
            handles.as_mut_ptr(),
            &mut ctx,
        )
    })
    .map_err(conv::error)?;
    Ok(LevelZeroContext(Arc::new(ContextInner {
        driver,
        handle: Raw(ctx),
        id: CONTEXT_IDS.fetch_add(1, Ordering::Relaxed),
        devices: handles.into_iter().map(Raw).collect(),
        events: EventPools::default(),
        init_lists: Mutex::new(Vec::new()),
    })))
}

pub(crate) fn memory_connection(
    src: (&LevelZeroContext, &LevelZeroDevice),
    dst: (&LevelZeroContext, &LevelZeroDevice),
) -> MemoryConnection {
    let between = conv::Between {
        same_driver: Arc::ptr_eq(&src.1.driver, &dst.1.driver),
        same_context: src.0 .0.id == dst.0 .0.id,
        same_device: src.1.handle == dst.1.handle,
    };
    conv::memory_connection(between, || {
        let mut can = 0;
        // SAFETY: two live devices of one driver and an out pointer.
        let r = unsafe {
            dst.1
                .driver
                .ze
                .zeDeviceCanAccessPeer(dst.1.handle.0, src.1.handle.0, &mut can)
        };
        check(r).is_ok() && can != 0
    })
}

impl ur_api::adapter::Devices for crate::LevelZeroAdapter {
    fn backend(&self) -> Backend {
        Backend::LevelZero
    }

    fn platforms(&self) -> Result<Vec<LevelZeroPlatform>> {
        drivers()
    }

    fn platform_info(&self, platform: &LevelZeroPlatform) -> Result<PlatformInfo> {
        Ok(platform_info(platform))
    }

    fn devices(&self, platform: &LevelZeroPlatform) -> Result<Vec<LevelZeroDevice>> {
        devices(platform)
    }

    fn device_info(&self, device: &LevelZeroDevice) -> Result<DeviceInfo> {
        Ok(device.info.clone())
    }

    fn create_context(&self, devices: &[&LevelZeroDevice]) -> Result<LevelZeroContext> {
        create_context(devices)
    }

    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection {
        memory_connection(src, dst)
    }
}
