//! Platforms, devices, contexts and the memory-connection answer.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use opencl3::command_queue::CommandQueue;
use opencl3::device::{Device as ClDevice, CL_DEVICE_TYPE_ALL};
use opencl3::platform::Platform as ClPlatform;
use opencl3::types::{cl_context, cl_device_id};
use parking_lot::Mutex;
use ur_api::{
    AffinityDomains, Backend, DeviceCaps, DeviceInfo, DeviceLimits, DeviceType, FpCaps, MemoryConnection, Partition,
    PartitionCaps, PlatformInfo, ProgramFormats, Result, UsmCaps, UsmKind, VectorWidths,
};

use crate::conv::{self, check, check3};
use crate::ext::{self, IntelUsm};
use crate::queue::QueueShared;
use crate::spirv::Translator;
use ur_api::{Loc, NativeHandle, NativeObj};

/// An OpenCL object handle that may cross threads.
///
/// OpenCL API calls are thread-safe since OpenCL 1.1 (the one exception,
/// `clSetKernelArg` on one kernel from two threads, is serialised in
/// `program.rs`), so a handle may be sent and shared freely; the objects'
/// lifetimes are held by the owning RAII wrappers, not by this type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Handle<T>(pub(crate) T);

// SAFETY: see the type's docs: OpenCL handles are thread-safe references.
unsafe impl<T> Send for Handle<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Handle<T> {}

/// An OpenCL platform.
#[derive(Debug)]
pub struct Platform {
    pub(crate) cl: ClPlatform,
}

/// An OpenCL device, with what was learnt about it once at discovery.
#[derive(Debug)]
pub struct Device {
    pub(crate) id: Handle<cl_device_id>,
    pub(crate) info: DeviceInfo,
    /// OpenCL version of the device, `(major, minor)`.
    pub(crate) version: (u32, u32),
    /// The platform's `cl_intel_unified_shared_memory` entry points, where
    /// the device has the extension (USM then goes through it, not SVM).
    pub(crate) intel: Option<IntelUsm>,
    /// The SPIR-V translator, where the device takes SPIR-V only as SPIR
    /// bitcode (`spirv/mod.rs`).
    pub(crate) translator: Option<Arc<Translator>>,
    /// Its SPIR-V programs get the translator's group builtins: sub-groups
    /// of one work-item, work-group collectives and generic-address-space
    /// atomics and math, which the device's kernel library lacks
    /// (`spirv/builtins.rs`).
    pub(crate) group_builtins: bool,
}

/// An OpenCL context. Its state is shared (`ContextInner`) with the USM
/// allocations made in it, which need the context, its queues and its
/// devices to drain and free themselves.
pub struct Context(Arc<ContextInner>);

impl std::ops::Deref for Context {
    type Target = ContextInner;

    fn deref(&self) -> &ContextInner {
        &self.0
    }
}

impl Context {
    /// The shared state, for objects that must keep the context alive.
    pub(crate) fn shared(&self) -> &Arc<ContextInner> {
        &self.0
    }
}

/// The state of a [`Context`].
pub struct ContextInner {
    pub(crate) cl: opencl3::context::Context,
    pub(crate) devices: Vec<Handle<cl_device_id>>,
    /// Internal in-order queues per device (placement migrations).
    helpers: Mutex<HashMap<Handle<cl_device_id>, Arc<CommandQueue>>>,
    /// Live user queues, finished before USM memory is freed.
    queues: Mutex<Vec<Weak<QueueShared>>>,
    /// Version of each device, in `devices` order.
    versions: Vec<(u32, u32)>,
    /// The Intel USM entry points, where every device of the context has
    /// the extension; `None`: USM is SVM (or absent).
    pub(crate) intel: Option<IntelUsm>,
    /// The runtime refused the Intel allocation placement flags once
    /// (`CL_INVALID_PROPERTY`: Intel's CPU runtime, whose memory is all host
    /// memory): later allocations go without them, in one call, instead of
    /// a refused call and a retry each.
    pub(crate) placement_refused: std::sync::atomic::AtomicBool,
    /// The SPIR-V translator, where every device of the context takes
    /// SPIR-V only through it.
    pub(crate) translator: Option<Arc<Translator>>,
    /// Where every device of the context gets the group builtins: the
    /// largest work-group size among them, which sizes their scratch array.
    pub(crate) group_builtins: Option<usize>,
    /// Programs whose build failed in this context, answered again without
    /// the runtime.
    pub(crate) failed_builds: crate::program::FailedBuilds,
    /// Every device is a CPU device whose memory is the host's
    /// (`CL_DEVICE_HOST_UNIFIED_MEMORY`): every USM or SVM allocation of
    /// the context is host memory the calling thread can copy itself
    /// (`queue::run_on_idle`).
    pub(crate) host_memory: bool,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Debug for ContextInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("context", &self.cl.get())
            .field("devices", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl ContextInner {
    /// The raw context, for identity comparisons.
    pub(crate) fn raw(&self) -> Handle<cl_context> {
        Handle(self.cl.get())
    }

    /// The internal queue of `device` (created on first use).
    pub(crate) fn helper_queue(&self, device: Handle<cl_device_id>) -> Result<Arc<CommandQueue>> {
        let mut helpers = self.helpers.lock();
        if let Some(q) = helpers.get(&device) {
            return Ok(q.clone());
        }
        let q = Arc::new(crate::queue::create_raw_queue(self, device, false)?);
        helpers.insert(device, q.clone());
        Ok(q)
    }

    /// The OpenCL version of a device of this context.
    pub(crate) fn version_of(&self, device: Handle<cl_device_id>) -> (u32, u32) {
        self.devices
            .iter()
            .position(|&d| d == device)
            .map_or((1, 2), |i| self.versions[i])
    }

    /// Remembers a user queue so [`Context::finish_all`] can drain it.
    pub(crate) fn track_queue(&self, q: &Arc<QueueShared>) {
        let mut queues = self.queues.lock();
        queues.retain(|w| w.strong_count() > 0);
        queues.push(Arc::downgrade(q));
    }

    /// Waits for all work on every live queue of the context.
    pub(crate) fn finish_all(&self) -> Result<()> {
        let live: Vec<Arc<QueueShared>> = self.queues.lock().iter().filter_map(Weak::upgrade).collect();
        for q in &live {
            q.finish()?;
        }
        let helpers: Vec<Arc<CommandQueue>> = self.helpers.lock().values().cloned().collect();
        for q in helpers {
            check3(q.finish())?;
        }
        Ok(())
    }
}

/// A device capability of the Intel USM extension (a `cl_bitfield`).
fn intel_caps(d: &ClDevice, param: u32) -> u64 {
    d.get_data(param)
        .ok()
        .and_then(|b| b.get(..8).map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default())))
        .unwrap_or(0)
}

fn describe(id: cl_device_id, intel: Option<IntelUsm>, translator: Option<&Arc<Translator>>) -> Result<Device> {
    let d = ClDevice::new(id);
    let version_text = check3(d.version())?;
    let version = conv::cl_version(&version_text).unwrap_or((1, 2));
    let svm = if version.0 >= 2 {
        d.svm_capabilities().unwrap_or(0)
    } else {
        0
    };
    let compiler = check3(d.compiler_available())?;
    let il = if version >= (2, 1) {
        d.il_version().unwrap_or_default()
    } else {
        String::new()
    };
    let il = il.trim_end_matches('\0').trim().to_owned();
    let mut formats = ProgramFormats::empty();
    if compiler {
        formats |= ProgramFormats::OPENCL_C;
    }
    // Without IL, SPIR-V goes in as SPIR bitcode where the device builds
    // SPIR and the translator is installed (`spirv/mod.rs`).
    let translator = if il.contains("SPIR-V") {
        formats |= ProgramFormats::SPIRV;
        None
    } else if compiler && check3(d.extensions())?.split_whitespace().any(|e| e == "cl_khr_spir") {
        translator.cloned()
    } else {
        None
    };
    if translator.is_some() {
        formats |= ProgramFormats::SPIRV;
    }
    // HOST_REGISTER (`lock_host`) is not claimed, per device type:
    // - CPU devices (PoCL pthread, rusticl llvmpipe, Intel's CPU runtime):
    //   device memory is host memory and every transfer is a memcpy by the
    //   runtime's threads; a `USE_HOST_PTR` buffer over the caller's range
    //   pins nothing and makes no transfer faster (the memory manager's
    //   tree sends CPU devices direct anyway). Zero-copy access to caller
    //   memory is what `USE_HOST_PTR` buffers already give (file-io's
    //   direct path); a lock would add nothing to it.
    // - GPUs: whether a `USE_HOST_PTR` buffer pins the range is up to the
    //   driver (AMD and Intel GPU runtimes use page-aligned host memory in
    //   place; NVIDIA's copies it and pins only `ALLOC_HOST_PTR`), and
    //   OpenCL 1.2 hands out no device address for it: a lock would have to
    //   redirect later `enqueue_write`s from the range to
    //   `clEnqueueCopyBuffer` from that buffer. Not built: no OpenCL GPU
    //   here to measure that it beats a pageable write.
    let mut caps = DeviceCaps::SUB_BUFFERS | DeviceCaps::MAP | DeviceCaps::USE_HOST_PTR | DeviceCaps::FILL_ANY_PATTERN;
    if !formats.is_empty() {
        // Local-memory arguments (`__local` pointers set with a size and a
        // null value) are core OpenCL; global offsets are from 1.1 on.
        caps |= DeviceCaps::KERNELS | DeviceCaps::LOCAL_MEMORY_ARGS;
        if version >= (1, 1) {
            caps |= DeviceCaps::GLOBAL_OFFSET;
        }
    }
    // Every OpenCL device accepts CL_QUEUE_PROFILING_ENABLE (a required
    // host-queue property since 1.0); check anyway rather than assume.
    let queue_props = d.queue_on_host_properties().unwrap_or(0);
    if queue_props & opencl3::command_queue::CL_QUEUE_PROFILING_ENABLE != 0 {
        caps |= DeviceCaps::PROFILING;
    }
    let has_ext = check3(d.extensions())?.split_whitespace().any(|e| e == ext::EXTENSION);
    let intel = intel.filter(|_| has_ext);
    let usm: UsmCaps = if intel.is_some() {
        conv::usm_caps_from_intel(
            intel_caps(&d, ext::DEVICE_HOST_MEM_CAPABILITIES),
            intel_caps(&d, ext::DEVICE_DEVICE_MEM_CAPABILITIES),
            intel_caps(&d, ext::DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES),
        )
    } else {
        conv::usm_caps_from_svm(svm)
    };
    let mut info = DeviceInfo::new(check3(d.name())?, conv::device_type(check3(d.dev_type())?))
        .vendor(check3(d.vendor())?)
        .memory(check3(d.global_mem_size())?, check3(d.max_mem_alloc_size())?)
        .host_unified_memory(d.host_unified_memory().unwrap_or(false))
        .usm(usm)
        .caps(caps)
        .program_formats(formats)
        .compute(check3(d.max_compute_units())?, check3(d.max_work_group_size())?)
        .sub_buffer_align((check3(d.mem_base_addr_align())? as usize / 8).max(1))
        // CL_DEVICE_LOCAL_MEM_SIZE: the bound of a launch's `__local` arguments.
        .local_mem(check3(d.local_mem_size())?)
        .versions(check3(d.driver_version())?, version_text)
        .limits(limits(&d, version, intel.is_some(), svm, il));
    let group_builtins = translator.as_ref().is_some_and(|t| t.has_builtins()) && lacks_groups(&d, &info);
    if group_builtins {
        // What the builtins give its SPIR-V kernels: a sub-group is a row
        // of the work-group (one work-item wide at the least, so as many
        // sub-groups as work-items at the most).
        info.limits.sub_group_sizes = crate::spirv::builtins::SUB_GROUP_SIZES.to_vec();
        info.limits.max_num_sub_groups = u32::try_from(info.max_work_group_size).unwrap_or(u32::MAX);
        // Their scratch arrays are local memory the kernel's own cannot use.
        let scratch = crate::spirv::builtins::scratch_bytes(info.max_work_group_size);
        info.local_mem_size = info.local_mem_size.saturating_sub(scratch);
    }
    Ok(Device {
        id: Handle(id),
        info,
        version,
        intel,
        translator,
        group_builtins,
    })
}

/// Does the device lack both sub-groups (none reported) and work-group
/// collectives (OpenCL C below 2.0), so that the translator's group
/// builtins define them without clashing with its own?
fn lacks_groups(d: &ClDevice, info: &DeviceInfo) -> bool {
    let c = d.opencl_c_version().ok().and_then(|v| conv::cl_version(&v));
    info.limits.max_num_sub_groups == 0 && info.limits.sub_group_sizes.is_empty() && c.is_some_and(|c| c < (2, 0))
}

/// `value` where the device answered it; a CPU device that answers 0
/// (rusticl's llvmpipe) runs on the host's cores, so its cache is the
/// host's last-level cache, read from sysfs (0 where sysfs has none).
fn or_host_cache(d: &ClDevice, value: u64, field: impl Fn(&conv::HostCache) -> u64) -> u64 {
    let cpu = d.dev_type().is_ok_and(|t| t & opencl3::device::CL_DEVICE_TYPE_CPU != 0);
    if value != 0 || !cpu {
        return value;
    }
    static HOST: std::sync::OnceLock<Option<conv::HostCache>> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
        let entries = std::fs::read_dir(dir).ok()?;
        let read = |p: std::path::PathBuf| std::fs::read_to_string(p).unwrap_or_default();
        let caches = entries.flatten().map(|e| {
            let p = e.path();
            (
                read(p.join("level")),
                read(p.join("type")),
                read(p.join("size")),
                read(p.join("coherency_line_size")),
            )
        });
        conv::last_level_cache(caches)
    })
    .as_ref()
    .map_or(0, field)
}

/// `CL_DEVICE_SUB_GROUP_SIZES_INTEL` (`cl_intel_required_subgroup_size`).
const SUB_GROUP_SIZES_INTEL: u32 = 0x4108;

/// What the device answers beyond the core fields. A query a device does
/// not answer (an older OpenCL version, a missing extension) is "not
/// reported", never an error: these only inform the caller.
fn limits(d: &ClDevice, version: (u32, u32), intel: bool, svm: u64, il_version: String) -> DeviceLimits {
    let extensions = d
        .extensions()
        .unwrap_or_default()
        .trim_end_matches('\0')
        .trim()
        .to_owned();
    let has = |e: &str| extensions.split_whitespace().any(|x| x == e);
    let fp = |r: opencl3::Result<u64>| FpCaps::from_bits_truncate(r.unwrap_or(0) as u32);
    let fp16 = if has("cl_khr_fp16") {
        fp(d.half_fp_config())
    } else {
        FpCaps::empty()
    };
    let fp64 = if version >= (1, 2) || has("cl_khr_fp64") {
        fp(d.double_fp_config())
    } else {
        FpCaps::empty()
    };
    let uuid = has("cl_khr_device_uuid").then(|| d.uuid_khr().ok()).flatten();
    let intel_attributes = has("cl_intel_device_attribute_query")
        .then(|| intel_attributes(d))
        .flatten();
    let v3 = version >= (3, 0);
    let (atomic_orders, atomic_scopes) = conv::atomic_caps(v3.then(|| d.atomic_memory_capabilities().ok()).flatten());
    let (fence_orders, fence_scopes) = conv::atomic_caps(v3.then(|| d.atomic_fence_capabilities().ok()).flatten());
    let usm = |param, kind| conv::usm_access(intel.then(|| intel_caps(d, param)), svm, kind);
    let mut sizes = [0usize; 3];
    for (s, v) in sizes.iter_mut().zip(d.max_work_item_sizes().unwrap_or_default()) {
        *s = v;
    }
    let sub_group_sizes = d
        .get_data(SUB_GROUP_SIZES_INTEL)
        .map(|b| {
            b.chunks_exact(size_of::<usize>())
                .map(|c| usize::from_ne_bytes(c.try_into().unwrap_or_default()) as u32)
                .collect()
        })
        .unwrap_or_default();
    let widths = |f: [fn(&ClDevice) -> opencl3::Result<u32>; 7]| {
        let w = f.map(|q| q(d).unwrap_or(0));
        VectorWidths {
            char: w[0],
            short: w[1],
            int: w[2],
            long: w[3],
            float: w[4],
            double: w[5],
            half: w[6],
        }
    };
    DeviceLimits {
        vendor_id: d.vendor_id().unwrap_or(0),
        max_work_item_sizes: sizes,
        // OpenCL bounds only the work-group size, not the number of groups.
        max_work_groups: [usize::MAX; 3],
        max_clock_frequency: d.max_clock_frequency().unwrap_or(0),
        address_bits: d.address_bits().unwrap_or(0),
        global_mem_cache_size: or_host_cache(d, d.global_mem_cache_size().unwrap_or(0), |c| c.size),
        global_mem_cacheline_size: or_host_cache(d, d.global_mem_cacheline_size().unwrap_or(0).into(), |c| c.line)
            .try_into()
            .unwrap_or(u32::MAX),
        max_constant_buffer_size: d.max_constant_buffer_size().unwrap_or(0),
        max_constant_args: d.max_constant_args().unwrap_or(0),
        max_parameter_size: d.max_parameter_size().unwrap_or(0),
        preferred_vector_width: widths([
            ClDevice::max_preferred_vector_width_char,
            ClDevice::max_preferred_vector_width_short,
            ClDevice::max_preferred_vector_width_int,
            ClDevice::max_preferred_vector_width_long,
            ClDevice::max_preferred_vector_width_float,
            ClDevice::max_preferred_vector_width_double,
            ClDevice::preferred_vector_width_half,
        ]),
        native_vector_width: widths([
            ClDevice::native_vector_width_char,
            ClDevice::native_vector_width_short,
            ClDevice::native_vector_width_int,
            ClDevice::native_vector_width_long,
            ClDevice::native_vector_width_float,
            ClDevice::native_vector_width_double,
            ClDevice::native_vector_width_half,
        ]),
        fp16,
        fp32: fp(d.single_fp_config()),
        fp64,
        atomic64: has("cl_khr_int64_base_atomics") && has("cl_khr_int64_extended_atomics"),
        atomic_orders,
        atomic_scopes,
        fence_orders,
        fence_scopes,
        usm_access: [
            usm(ext::DEVICE_HOST_MEM_CAPABILITIES, UsmKind::Host),
            usm(ext::DEVICE_DEVICE_MEM_CAPABILITIES, UsmKind::Device),
            usm(ext::DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES, UsmKind::Shared),
        ],
        sub_group_sizes,
        max_num_sub_groups: if version >= (2, 1) {
            d.max_num_sub_groups().unwrap_or(0)
        } else {
            0
        },
        sub_group_independent_forward_progress: version >= (2, 1)
            && d.sub_group_independent_forward_progress().unwrap_or(false),
        extensions,
        il_version,
        profiling_timer_resolution: d.profiling_timer_resolution().unwrap_or(0),
        printf_buffer_size: if version >= (1, 2) {
            d.printf_buffer_size().unwrap_or(0)
        } else {
            0
        },
        partition: partition_caps(d, version),
        uuid,
        intel_attributes,
    }
}

/// Intel's device attribute query, all five figures or none (a runtime
/// that lists the extension but refuses one of them reports none).
fn intel_attributes(d: &ClDevice) -> Option<ur_api::IntelDeviceAttributes> {
    Some(ur_api::IntelDeviceAttributes {
        ip_version: d.device_ip_version_intel().ok()?,
        slices: d.device_num_slices_intel().ok()?,
        sub_slices_per_slice: d.device_num_sub_slices_per_slice_intel().ok()?,
        eus_per_sub_slice: d.device_num_eus_per_sub_slice_intel().ok()?,
        threads_per_eu: d.device_num_threads_per_eu_intel().ok()?,
    })
}

/// How the device can be partitioned (OpenCL 1.2's sub-devices).
fn partition_caps(d: &ClDevice, version: (u32, u32)) -> PartitionCaps {
    if version < (1, 2) {
        return PartitionCaps::default();
    }
    let kinds = conv::partition_kinds(&d.partition_properties().unwrap_or_default());
    if kinds.is_empty() {
        return PartitionCaps::default();
    }
    let domains = d.partition_affinity_domain().unwrap_or_default();
    PartitionCaps {
        kinds,
        max_sub_devices: d.partition_max_sub_devices().unwrap_or(0),
        affinity_domains: AffinityDomains::from_bits_truncate(domains.first().copied().unwrap_or(0) as u32),
    }
}

/// Splits a device with `clCreateSubDevices`. Each sub-device is a device
/// of the parent's platform with its own description. The adapter keeps
/// the sub-device's reference for the process's life (the dyn layer never
/// forgets a device it handed out).
pub(crate) fn partition(device: &Device, how: &Partition) -> Result<Vec<Device>> {
    let props = conv::partition_properties(how);
    let ids = opencl3::device::create_sub_devices(device.id.0, &props).map_err(conv::error)?;
    ids.into_iter()
        .map(|id| describe(id, device.intel, device.translator.as_ref()))
        .collect()
}

/// The connection between two (context, device) locations.
///
/// - Same context and device: `Unified`.
/// - Same context, another device: `Migratable`. OpenCL would let the
///   buffer be used there as it is, but the runtime would then move the data
///   implicitly and invisibly, the hidden migration the memory manager exists
///   to replace; answering `Migratable` makes it keep one allocation per
///   device and copy with `clEnqueueCopyBuffer`, visible in its plans. The
///   dyn layer holds every command to this answer, inside one context too:
///   a buffer placed for one device is only copied from or to on another
///   device's queue, never read, written, mapped or given to a kernel there
///   (where OpenCL would migrate it behind everyone's back). This
///   holds for CPU devices whose memory is host memory too (PoCL's pthread
///   devices): that is an implementation detail the spec does not promise,
///   and a copy between them costs one memcpy.
/// - Different contexts (same platform or not): `None`. An OpenCL object is
///   only valid in its own context, so no OpenCL command can touch memory of
///   another context, not even on a host-unified CPU device; the dyn layer
///   would let a buffer cross contexts if we answered `Unified`, which would
///   be invalid here.
pub(crate) fn memory_connection(src: (&Context, &Device), dst: (&Context, &Device)) -> MemoryConnection {
    if src.0.raw() != dst.0.raw() {
        MemoryConnection::None
    } else if src.1.id == dst.1.id {
        MemoryConnection::Unified
    } else {
        MemoryConnection::Migratable
    }
}

/// The adapter's context over an OpenCL context of `devices`.
fn context_over(cl: opencl3::context::Context, devices: &[&Device]) -> Context {
    Context(Arc::new(ContextInner {
        cl,
        devices: devices.iter().map(|d| d.id).collect(),
        helpers: Mutex::new(HashMap::new()),
        queues: Mutex::new(Vec::new()),
        versions: devices.iter().map(|d| d.version).collect(),
        intel: devices.iter().map(|d| d.intel).reduce(|a, b| a.and(b)).flatten(),
        placement_refused: std::sync::atomic::AtomicBool::new(false),
        translator: devices
            .iter()
            .map(|d| d.translator.clone())
            .reduce(|a, b| a.and(b))
            .flatten(),
        group_builtins: devices
            .iter()
            .all(|d| d.group_builtins)
            .then(|| devices.iter().map(|d| d.info.max_work_group_size).max())
            .flatten(),
        failed_builds: crate::program::FailedBuilds::default(),
        host_memory: devices
            .iter()
            .all(|d| d.info.device_type == DeviceType::Cpu && d.info.host_unified_memory),
    }))
}

impl ur_api::adapter::Devices for crate::OpenClAdapter {
    fn backend(&self) -> Backend {
        Backend::OpenCl
    }

    /// All platforms; no library or no ICD is an empty list.
    fn platforms(&self) -> Result<Vec<Platform>> {
        match opencl3::platform::platform::get_platform_ids() {
            Ok(ids) => Ok(ids
                .into_iter()
                .map(|id| Platform {
                    cl: ClPlatform::new(id),
                })
                .collect()),
            Err(code) if conv::means_none(code) => {
                tracing::debug!(code, "no OpenCL platforms: {}", conv::error(code));
                Ok(Vec::new())
            }
            Err(code) => Err(conv::error(code)),
        }
    }

    fn platform_info(&self, p: &Platform) -> Result<PlatformInfo> {
        Ok(PlatformInfo {
            name: check3(p.cl.name())?,
            vendor: check3(p.cl.vendor())?,
            version: check3(p.cl.version())?,
            backend: Backend::OpenCl,
        })
    }

    /// The devices of a platform; a platform without devices (Clover with no
    /// supported GPU answers `CL_DEVICE_NOT_FOUND`) gives an empty list.
    fn devices(&self, p: &Platform) -> Result<Vec<Device>> {
        let ids = match opencl3::device::get_device_ids(p.cl.id(), CL_DEVICE_TYPE_ALL) {
            Ok(ids) => ids,
            Err(code) if conv::means_none(code) => return Ok(Vec::new()),
            Err(code) => return Err(conv::error(code)),
        };
        let intel = IntelUsm::load(p.cl.id());
        let translator = p.cl.version().ok().and_then(|v| Translator::find(&v));
        ids.into_iter()
            .map(|id| describe(id, intel, translator.as_ref()))
            .collect()
    }

    fn device_info(&self, device: &Device) -> Result<DeviceInfo> {
        Ok(device.info.clone())
    }

    fn partition_device(&self, device: &Device, how: &Partition) -> Result<Vec<Device>> {
        partition(device, how)
    }

    fn create_context(&self, devices: &[&Device]) -> Result<Context> {
        let ids: Vec<cl_device_id> = devices.iter().map(|d| d.id.0).collect();
        let cl = check3(opencl3::context::Context::from_devices(
            &ids,
            &[],
            None,
            std::ptr::null_mut(),
        ))?;
        Ok(context_over(cl, devices))
    }

    /// A `cl_context` the caller made: every device given must be one of
    /// its devices (`CL_CONTEXT_DEVICES`); retained unless `owned`.
    fn context_from_native(&self, devices: &[&Device], handle: ur_api::NativeHandle, owned: bool) -> Result<Context> {
        let raw = handle.raw() as cl_context;
        if raw.is_null() {
            return Err(ur_api::Error::invalid("a null context handle"));
        }
        let theirs = check(cl3::context::get_context_info(raw, cl3::context::CL_CONTEXT_DEVICES))?;
        let theirs: Vec<isize> = theirs.into();
        if let Some(d) = devices.iter().find(|d| !theirs.contains(&(d.id.0 as isize))) {
            return Err(ur_api::Error::invalid(format!(
                "{} is not a device of the native context",
                d.info.name
            )));
        }
        if !owned {
            // SAFETY: a live context (the handle's contract).
            check(unsafe { cl3::context::retain_context(raw) })?;
        }
        let ids: Vec<cl_device_id> = devices.iter().map(|d| d.id.0).collect();
        Ok(context_over(opencl3::context::Context::new(raw, &ids), devices))
    }

    /// The connection between two (context, device) locations.
    ///
    /// - Same context and device: `Unified`.
    /// - Same context, another device: `Migratable`. OpenCL would let the
    ///   buffer be used there as it is, but the runtime would then move the data
    ///   implicitly and invisibly, the hidden migration the memory manager exists
    ///   to replace; answering `Migratable` makes it keep one allocation per
    ///   device and copy with `clEnqueueCopyBuffer`, visible in its plans. The
    ///   dyn layer holds every command to this answer, inside one context too:
    ///   a buffer placed for one device is only copied from or to on another
    ///   device's queue, never read, written, mapped or given to a kernel there
    ///   (where OpenCL would migrate it behind everyone's back). This
    ///   holds for CPU devices whose memory is host memory too (PoCL's pthread
    ///   devices): that is an implementation detail the spec does not promise,
    ///   and a copy between them costs one memcpy.
    /// - Different contexts (same platform or not): `None`. An OpenCL object is
    ///   only valid in its own context, so no OpenCL command can touch memory of
    ///   another context, not even on a host-unified CPU device; the dyn layer
    ///   would let a buffer cross contexts if we answered `Unified`, which would
    ///   be invalid here.
    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection {
        memory_connection(src, dst)
    }

    fn native_handle(&self, obj: NativeObj<'_, Self>) -> Result<NativeHandle> {
        crate::program::native_handle(obj)
    }
}
