//! Device entry points: enumeration, the properties libsycl asks for,
//! reference counts and timestamps.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::c_void;
use std::time::Instant;

use ur_api::{DeviceCaps, DeviceId, DeviceInfo, UsmCaps};

use crate::conv::{device_type, type_selects, CapiError};
use crate::handles::get;
use crate::handles::{self, ref_count};
use crate::info::{entry, put, query, Out};
use crate::objects::Kind;
use crate::partition;
use crate::state::{self, platform_of};
use crate::sys::*;

/// `urDeviceGet`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceGet(
    p: ur_platform_handle_t,
    ty: ur_device_type_t,
    n: u32,
    out: *mut ur_device_handle_t,
    count: *mut u32,
) -> ur_result_t {
    entry(|| {
        let id = get::<ur_api::PlatformId, _>(p)?;
        if out.is_null() && count.is_null() || !out.is_null() && n == 0 {
            return Err(CapiError::InvalidSize);
        }
        if ty == 0 || ty > UR_DEVICE_TYPE_CUSTOM {
            return Err(CapiError::InvalidValue);
        }
        let plat = platform_of(id).ok_or(CapiError::Invalid(Kind::Platform))?;
        let picked: Vec<usize> = plat
            .devices
            .iter()
            .filter(|(_, d)| state::device(*d).is_ok_and(|r| type_selects(ty, r.info.device_type)))
            .map(|(h, _)| *h)
            .collect();
        if !out.is_null() {
            // Root devices: no reference to take (urDeviceRetain).
            for (i, h) in picked.iter().take(n as usize).enumerate() {
                // SAFETY: `out` holds `n` handles (module contract), i < n.
                unsafe { out.add(i).write(*h as ur_device_handle_t) };
            }
        }
        // SAFETY: null or writable (module contract).
        unsafe { put(count, picked.len() as u32) };
        Ok(())
    })
}

/// `urDeviceRetain`: root devices are not reference counted (their count
/// stays 1, as the specification says); sub-devices are.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceRetain(d: ur_device_handle_t) -> ur_result_t {
    entry(|| {
        if state::device(get::<DeviceId, _>(d)?)?.is_root() {
            return Ok(());
        }
        handles::retain(d, Kind::Device)
    })
}

/// `urDeviceRelease`: as [`urDeviceRetain`]. A sub-device's handle stays
/// valid after its last release (the same partition hands it out again).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceRelease(d: ur_device_handle_t) -> ur_result_t {
    entry(|| {
        if state::device(get::<DeviceId, _>(d)?)?.is_root() {
            return Ok(());
        }
        handles::release(d, Kind::Device).map(drop)
    })
}

/// How the device accesses one USM kind: the backend's answer where it
/// gave one, else plain and concurrent access to the kinds it offers.
fn usm_access(info: &DeviceInfo, kind: UsmCaps, i: usize) -> ur_device_usm_access_capability_flags_t {
    if !info.usm.contains(kind) {
        return 0;
    }
    match info.limits.usm_access[i].bits() {
        0 => UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_ACCESS | UR_DEVICE_USM_ACCESS_CAPABILITY_FLAG_CONCURRENT_ACCESS,
        bits => bits,
    }
}

/// A reported figure, or `fallback` where the backend reported none (0).
fn or<T: PartialEq + Default>(v: T, fallback: T) -> T {
    if v == T::default() {
        fallback
    } else {
        v
    }
}

/// The queue flags every queue of the device honours: out-of-order
/// execution on every device (`urQueueCreate` accepts it and runs the
/// queue's commands in submission order, one valid out-of-order schedule,
/// as UR's native CPU adapter does), profiling where the device has it.
fn queue_flags(info: &DeviceInfo) -> ur_queue_flags_t {
    let profiling = if info.caps.contains(DeviceCaps::PROFILING) {
        UR_QUEUE_FLAG_PROFILING_ENABLE
    } else {
        0
    };
    UR_QUEUE_FLAG_OUT_OF_ORDER_EXEC_MODE_ENABLE | profiling
}

/// Answers one device property. Properties the project has no truthful
/// answer for are `UNSUPPORTED_ENUMERATION` (libsycl treats that as "not
/// available").
fn device_info(d: ur_device_handle_t, id: DeviceId, prop: ur_device_info_t, out: &Out) -> Result<(), CapiError> {
    let dev = state::device(id)?;
    let info = &dev.info;
    let wg = info.max_work_group_size;
    let kernels = info.caps.contains(DeviceCaps::KERNELS);
    let l = &info.limits;
    let pv = &l.preferred_vector_width;
    let nv = &l.native_vector_width;
    let intel = || l.intel_attributes.ok_or(CapiError::UnsupportedEnumeration);
    match prop {
        UR_DEVICE_INFO_TYPE => out.value(device_type(info.device_type)),
        UR_DEVICE_INFO_VENDOR_ID => out.value(l.vendor_id),
        UR_DEVICE_INFO_DEVICE_ID => out.value(0u32),
        UR_DEVICE_INFO_MAX_COMPUTE_UNITS | UR_DEVICE_INFO_NUM_COMPUTE_UNITS => out.value(info.max_compute_units),
        UR_DEVICE_INFO_MAX_WORK_ITEM_DIMENSIONS => out.value(3u32),
        UR_DEVICE_INFO_MAX_WORK_ITEM_SIZES => out.array(&or(l.max_work_item_sizes, [wg, wg, wg])),
        // No limit (or none reported) reads as half the address space, as
        // callers add to and multiply these.
        UR_DEVICE_INFO_MAX_WORK_GROUPS_3D => {
            out.array(&or(l.max_work_groups, [usize::MAX >> 1; 3]).map(|g| g.min(usize::MAX >> 1)))
        }
        // Work-groups of one launch in all: the product of the 3D limits,
        // with the same cap.
        UR_DEVICE_INFO_MAX_WORK_GROUPS => out.value(
            or(l.max_work_groups, [usize::MAX >> 1; 3])
                .iter()
                .fold(1usize, |n, &g| n.saturating_mul(g.max(1)))
                .min(usize::MAX >> 1),
        ),
        UR_DEVICE_INFO_MAX_WORK_GROUP_SIZE => out.value(wg),
        UR_DEVICE_INFO_SINGLE_FP_CONFIG => out.value(l.fp32.bits()),
        UR_DEVICE_INFO_HALF_FP_CONFIG => out.value(l.fp16.bits()),
        UR_DEVICE_INFO_DOUBLE_FP_CONFIG => out.value(l.fp64.bits()),
        UR_DEVICE_INFO_QUEUE_PROPERTIES | UR_DEVICE_INFO_QUEUE_ON_HOST_PROPERTIES => out.value(queue_flags(info)),
        UR_DEVICE_INFO_QUEUE_ON_DEVICE_PROPERTIES => out.value::<ur_queue_flags_t>(0),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_CHAR => out.value(or(pv.char, 1)),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_SHORT => out.value(or(pv.short, 1)),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_INT => out.value(or(pv.int, 1)),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG => out.value(or(pv.long, 1)),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_FLOAT => out.value(or(pv.float, 1)),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_DOUBLE => out.value(pv.double),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_HALF => out.value(pv.half),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_CHAR => out.value(or(nv.char, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_SHORT => out.value(or(nv.short, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_INT => out.value(or(nv.int, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG => out.value(or(nv.long, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_FLOAT => out.value(or(nv.float, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_DOUBLE => out.value(nv.double),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_HALF => out.value(nv.half),
        UR_DEVICE_INFO_PREFERRED_VECTOR_WIDTH_LONG_LONG => out.value(or(pv.long, 1)),
        UR_DEVICE_INFO_NATIVE_VECTOR_WIDTH_LONG_LONG => out.value(or(nv.long, 1)),
        UR_DEVICE_INFO_MAX_CLOCK_FREQUENCY => out.value(l.max_clock_frequency),
        UR_DEVICE_INFO_ADDRESS_BITS => out.value(or(l.address_bits, 64)),
        UR_DEVICE_INFO_MAX_MEM_ALLOC_SIZE => out.value(info.max_alloc_size),
        UR_DEVICE_INFO_GLOBAL_MEM_SIZE => out.value(info.global_mem_size),
        UR_DEVICE_INFO_IMAGE_SUPPORT => out.boolean(false),
        UR_DEVICE_INFO_MAX_READ_IMAGE_ARGS
        | UR_DEVICE_INFO_MAX_WRITE_IMAGE_ARGS
        | UR_DEVICE_INFO_MAX_READ_WRITE_IMAGE_ARGS
        | UR_DEVICE_INFO_MAX_SAMPLERS => out.value(0u32),
        UR_DEVICE_INFO_IMAGE2D_MAX_WIDTH..=UR_DEVICE_INFO_IMAGE_MAX_ARRAY_SIZE => out.value(0usize),
        UR_DEVICE_INFO_MAX_PARAMETER_SIZE => out.value(or(l.max_parameter_size, 1024)),
        UR_DEVICE_INFO_MEM_BASE_ADDR_ALIGN => out.value((info.sub_buffer_align.max(1) * 8) as u32),
        UR_DEVICE_INFO_GLOBAL_MEM_CACHE_TYPE => out.value(if l.global_mem_cache_size > 0 {
            UR_DEVICE_MEM_CACHE_TYPE_READ_WRITE_CACHE
        } else {
            UR_DEVICE_MEM_CACHE_TYPE_NONE
        }),
        UR_DEVICE_INFO_GLOBAL_MEM_CACHELINE_SIZE => out.value(l.global_mem_cacheline_size),
        UR_DEVICE_INFO_GLOBAL_MEM_CACHE_SIZE => out.value(l.global_mem_cache_size),
        UR_DEVICE_INFO_MAX_CONSTANT_BUFFER_SIZE => out.value(l.max_constant_buffer_size),
        UR_DEVICE_INFO_MAX_CONSTANT_ARGS => out.value(l.max_constant_args),
        UR_DEVICE_INFO_LOCAL_MEM_TYPE => out.value(if info.caps.contains(DeviceCaps::LOCAL_MEMORY_ARGS) {
            UR_DEVICE_LOCAL_MEM_TYPE_LOCAL
        } else {
            UR_DEVICE_LOCAL_MEM_TYPE_NONE
        }),
        UR_DEVICE_INFO_LOCAL_MEM_SIZE => out.value(info.local_mem_size),
        UR_DEVICE_INFO_HOST_UNIFIED_MEMORY => out.boolean(info.host_unified_memory),
        UR_DEVICE_INFO_PROFILING_TIMER_RESOLUTION => out.value(or(l.profiling_timer_resolution, 1)),
        UR_DEVICE_INFO_ENDIAN_LITTLE | UR_DEVICE_INFO_AVAILABLE | UR_DEVICE_INFO_PREFERRED_INTEROP_USER_SYNC => {
            out.boolean(true)
        }
        // Programs build here from SPIR-V: a compiler where a device image fits.
        UR_DEVICE_INFO_COMPILER_AVAILABLE | UR_DEVICE_INFO_LINKER_AVAILABLE => out.boolean(!dev.targets.is_empty()),
        UR_DEVICE_INFO_EXECUTION_CAPABILITIES => out.value::<u32>(if kernels {
            UR_DEVICE_EXEC_CAPABILITY_FLAG_KERNEL
        } else {
            0
        }),
        UR_DEVICE_INFO_BUILT_IN_KERNELS => out.string(""),
        UR_DEVICE_INFO_IL_VERSION => out.string(&l.il_version),
        UR_DEVICE_INFO_EXTENSIONS => out.string(&l.extensions),
        UR_DEVICE_INFO_PLATFORM => out.value(dev.platform as ur_platform_handle_t),
        UR_DEVICE_INFO_REFERENCE_COUNT if dev.is_root() => out.value(1u32),
        UR_DEVICE_INFO_REFERENCE_COUNT => out.value(ref_count(d, Kind::Device)?),
        UR_DEVICE_INFO_NAME => out.string(&info.name),
        UR_DEVICE_INFO_VENDOR => out.string(&info.vendor),
        UR_DEVICE_INFO_DRIVER_VERSION => out.string(&info.driver_version),
        UR_DEVICE_INFO_PROFILE => out.string("FULL_PROFILE"),
        UR_DEVICE_INFO_VERSION | UR_DEVICE_INFO_BACKEND_RUNTIME_VERSION => out.string(&info.backend_version),
        UR_DEVICE_INFO_PRINTF_BUFFER_SIZE => out.value(l.printf_buffer_size),
        UR_DEVICE_INFO_PARENT_DEVICE => out.value(dev.parent.as_ref().map_or(0, |p| p.0) as ur_device_handle_t),
        UR_DEVICE_INFO_COMPOSITE_DEVICE => out.value::<ur_device_handle_t>(std::ptr::null_mut()),
        // An optional query: answered where the backend reports the id.
        UR_DEVICE_INFO_UUID => match &l.uuid {
            Some(uuid) => out.bytes(uuid),
            None => Err(CapiError::UnsupportedEnumeration),
        },
        // Optional queries: answered where the backend has Intel's device
        // attribute query (as UR's OpenCL adapter answers them).
        UR_DEVICE_INFO_IP_VERSION => out.value(intel()?.ip_version),
        UR_DEVICE_INFO_GPU_EU_SLICES => out.value(intel()?.slices),
        UR_DEVICE_INFO_GPU_SUBSLICES_PER_SLICE => out.value(intel()?.sub_slices_per_slice),
        UR_DEVICE_INFO_GPU_EU_COUNT_PER_SUBSLICE => out.value(intel()?.eus_per_sub_slice),
        UR_DEVICE_INFO_GPU_HW_THREADS_PER_EU => out.value(intel()?.threads_per_eu),
        UR_DEVICE_INFO_SUPPORTED_PARTITIONS => out.array(&partition::supported(l.partition.kinds)),
        UR_DEVICE_INFO_PARTITION_TYPE => match &dev.parent {
            Some((_, how)) => out.array(&partition::properties(how)),
            None => out.bytes(&[]),
        },
        UR_DEVICE_INFO_COMPONENT_DEVICES => out.bytes(&[]),
        UR_DEVICE_INFO_PARTITION_MAX_SUB_DEVICES => out.value(l.partition.max_sub_devices),
        // OpenCL answers 0 without sub-groups (PoCL); SYCL 2020's minimum
        // is 1: every work-item is then a sub-group of its own, as
        // `SUB_GROUP_SIZES_INTEL` answers [1] below.
        UR_DEVICE_INFO_MAX_NUM_SUB_GROUPS => out.value(l.max_num_sub_groups.max(1)),
        UR_DEVICE_INFO_PARTITION_AFFINITY_DOMAIN => out.value(l.partition.affinity_domains.bits()),
        // No cooperative, cluster or work-group-memory launch properties.
        UR_DEVICE_INFO_KERNEL_LAUNCH_CAPABILITIES => out.value::<ur_kernel_launch_properties_flag_t>(0),
        UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL if l.sub_group_sizes.is_empty() => out.array(&[1u32]),
        UR_DEVICE_INFO_SUB_GROUP_SIZES_INTEL => out.array(&l.sub_group_sizes),
        UR_DEVICE_INFO_SUB_GROUP_INDEPENDENT_FORWARD_PROGRESS => out.boolean(l.sub_group_independent_forward_progress),
        UR_DEVICE_INFO_ATOMIC_64 => out.boolean(l.atomic64),
        UR_DEVICE_INFO_USM_HOST_SUPPORT => out.value(usm_access(info, UsmCaps::HOST, 0)),
        UR_DEVICE_INFO_USM_DEVICE_SUPPORT => out.value(usm_access(info, UsmCaps::DEVICE, 1)),
        UR_DEVICE_INFO_USM_SINGLE_SHARED_SUPPORT => out.value(usm_access(info, UsmCaps::SHARED, 2)),
        UR_DEVICE_INFO_USM_CROSS_SHARED_SUPPORT | UR_DEVICE_INFO_USM_SYSTEM_SHARED_SUPPORT => {
            out.value::<ur_device_usm_access_capability_flags_t>(0)
        }
        UR_DEVICE_INFO_ATOMIC_MEMORY_ORDER_CAPABILITIES => {
            out.value(or(l.atomic_orders.bits(), UR_MEMORY_ORDER_CAPABILITY_FLAG_RELAXED))
        }
        UR_DEVICE_INFO_ATOMIC_FENCE_ORDER_CAPABILITIES => {
            out.value(or(l.fence_orders.bits(), UR_MEMORY_ORDER_CAPABILITY_FLAG_RELAXED))
        }
        UR_DEVICE_INFO_ATOMIC_MEMORY_SCOPE_CAPABILITIES => {
            out.value(or(l.atomic_scopes.bits(), UR_MEMORY_SCOPE_CAPABILITY_FLAG_WORK_ITEM))
        }
        UR_DEVICE_INFO_ATOMIC_FENCE_SCOPE_CAPABILITIES => {
            out.value(or(l.fence_scopes.bits(), UR_MEMORY_SCOPE_CAPABILITY_FLAG_WORK_ITEM))
        }
        UR_DEVICE_INFO_MAX_COMPUTE_QUEUE_INDICES => out.value(1u32),
        UR_DEVICE_INFO_USM_POOL_SUPPORT => out.boolean(!info.usm.is_empty()),
        // Features this library does not offer: a truthful "no".
        UR_DEVICE_INFO_ERROR_CORRECTION_SUPPORT
        | UR_DEVICE_INFO_IMAGE_SRGB
        | UR_DEVICE_INFO_BUILD_ON_SUBDEVICE
        | UR_DEVICE_INFO_BFLOAT16
        | UR_DEVICE_INFO_BFLOAT16_CONVERSIONS_NATIVE
        | UR_DEVICE_INFO_KERNEL_SET_SPECIALIZATION_CONSTANTS
        | UR_DEVICE_INFO_PROGRAM_SET_SPECIALIZATION_CONSTANTS
        | UR_DEVICE_INFO_ASYNC_BARRIER
        | UR_DEVICE_INFO_MEM_CHANNEL_SUPPORT
        | UR_DEVICE_INFO_HOST_PIPE_READ_WRITE_SUPPORT
        | UR_DEVICE_INFO_VIRTUAL_MEMORY_SUPPORT
        | UR_DEVICE_INFO_ESIMD_SUPPORT
        | UR_DEVICE_INFO_GLOBAL_VARIABLE_SUPPORT
        | UR_DEVICE_INFO_USE_NATIVE_ASSERT
        | UR_DEVICE_INFO_IS_INTEGRATED_GPU
        | UR_DEVICE_INFO_COMMAND_BUFFER_SUPPORT_EXP
        | UR_DEVICE_INFO_COMMAND_BUFFER_EVENT_SUPPORT_EXP
        | UR_DEVICE_INFO_COMMAND_BUFFER_SUBGRAPH_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_IMAGES_SUPPORT_EXP
        // Image features beyond plain images, none of which are modelled.
        | UR_DEVICE_INFO_BINDLESS_IMAGES_SHARED_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_IMAGES_1D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_IMAGES_2D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_MIPMAP_SUPPORT_EXP
        | UR_DEVICE_INFO_MIPMAP_ANISOTROPY_SUPPORT_EXP
        | UR_DEVICE_INFO_MIPMAP_LEVEL_REFERENCE_SUPPORT_EXP
        | UR_DEVICE_INFO_EXTERNAL_MEMORY_IMPORT_SUPPORT_EXP
        | UR_DEVICE_INFO_EXTERNAL_SEMAPHORE_IMPORT_SUPPORT_EXP
        | UR_DEVICE_INFO_CUBEMAP_SUPPORT_EXP
        | UR_DEVICE_INFO_CUBEMAP_SEAMLESS_FILTERING_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_1D_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_2D_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLED_IMAGE_FETCH_3D_SUPPORT_EXP
        | UR_DEVICE_INFO_IMAGE_ARRAY_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_UNIQUE_ADDRESSING_PER_DIM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLE_1D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_SAMPLE_2D_USM_SUPPORT_EXP
        | UR_DEVICE_INFO_BINDLESS_IMAGES_GATHER_SUPPORT_EXP
        | UR_DEVICE_INFO_TIMESTAMP_RECORDING_SUPPORT_EXP
        | UR_DEVICE_INFO_ENQUEUE_NATIVE_COMMAND_SUPPORT_EXP
        | UR_DEVICE_INFO_LOW_POWER_EVENTS_SUPPORT_EXP
        | UR_DEVICE_INFO_IPC_MEMORY_SUPPORT_EXP
        | UR_DEVICE_INFO_IPC_PHYSICAL_MEMORY_SUPPORT_EXP
        | UR_DEVICE_INFO_REUSABLE_EVENTS_SUPPORT_EXP
        | UR_DEVICE_INFO_IPC_EVENT_SUPPORT_EXP
        | UR_DEVICE_INFO_ASYNC_USM_ALLOCATIONS_SUPPORT_EXP
        | UR_DEVICE_INFO_GRAPH_RECORD_AND_REPLAY_SUPPORT_EXP
        | UR_DEVICE_INFO_USM_HOST_ALLOC_REGISTER_SUPPORT_EXP
        | UR_DEVICE_INFO_USM_P2P_SUPPORT_EXP
        | UR_DEVICE_INFO_MULTI_DEVICE_COMPILE_SUPPORT_EXP
        | UR_DEVICE_INFO_DEVICE_WAIT_SUPPORT_EXP
        | UR_DEVICE_INFO_DYNAMIC_LINK_SUPPORT_EXP
        | UR_DEVICE_INFO_USM_CONTEXT_MEMCPY_SUPPORT_EXP
        | UR_DEVICE_INFO_ENQUEUE_HOST_TASK_SUPPORT_EXP
        | UR_DEVICE_INFO_CLOCK_SUB_GROUP_SUPPORT_EXP
        | UR_DEVICE_INFO_CLOCK_WORK_GROUP_SUPPORT_EXP
        | UR_DEVICE_INFO_CLOCK_DEVICE_SUPPORT_EXP => out.boolean(false),
        // No command buffers and no 2D block arrays: no capabilities (both
        // answers are `uint32_t` bit fields, `ur_*_capability_flags_t`).
        UR_DEVICE_INFO_COMMAND_BUFFER_UPDATE_CAPABILITIES_EXP | UR_DEVICE_INFO_2D_BLOCK_ARRAY_CAPABILITIES_EXP => {
            out.value(0u32)
        }
        UR_DEVICE_INFO_PER_EVENT_PROFILING_SUPPORT_EXP => out.boolean(info.caps.contains(DeviceCaps::PROFILING)),
        _ => Err(CapiError::UnsupportedEnumeration),
    }
}

/// `urDeviceSelectBinary`: the first device image whose target the device
/// runs ([`crate::conv::binary_targets`]: `spir64` where the device takes SPIR-V), or
/// `INVALID_BINARY` when none does. libsycl calls this once per registered
/// image when it selects a device (tens of thousands of calls with dpnp and
/// oneMKL loaded), so it reads the targets the device record keeps
/// ([`state::Device::targets`]) and compares a few strings.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceSelectBinary(
    d: ur_device_handle_t,
    binaries: *const ur_device_binary_t,
    n: u32,
    selected: *mut u32,
) -> ur_result_t {
    entry(|| {
        let id = get::<DeviceId, _>(d)?;
        if binaries.is_null() || selected.is_null() {
            return Err(CapiError::NullPointer);
        }
        if n == 0 {
            return Err(CapiError::InvalidSize);
        }
        let dev = state::device(id)?;
        // SAFETY: `n` entries (module contract).
        let bins = unsafe { std::slice::from_raw_parts(binaries, n as usize) };
        for t in dev.targets {
            for (i, b) in bins.iter().enumerate() {
                if b.pDeviceTargetSpec.is_null() {
                    continue;
                }
                // SAFETY: a NUL-terminated target name (module contract).
                if unsafe { std::ffi::CStr::from_ptr(b.pDeviceTargetSpec) }.to_bytes() == *t {
                    // SAFETY: non-null and writable (module contract).
                    unsafe { selected.write(i as u32) };
                    return Ok(());
                }
            }
        }
        Err(CapiError::InvalidBinary)
    })
}

/// `urDeviceGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceGetInfo(
    d: ur_device_handle_t,
    prop: ur_device_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(d, (size, value, size_ret), |id: DeviceId, out| {
            device_info(d, id, prop, out)
        })
    }
}

/// The host clock every timestamp of this library is on (nanoseconds since
/// the first call).
pub fn now_ns() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// `urDeviceGetGlobalTimestamps`: device and host times on one host clock.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceGetGlobalTimestamps(
    d: ur_device_handle_t,
    device_ts: *mut u64,
    host_ts: *mut u64,
) -> ur_result_t {
    entry(|| {
        get::<DeviceId, _>(d)?;
        let t = now_ns();
        // SAFETY: null or writable (module contract).
        unsafe { put(device_ts, t) };
        // SAFETY: as above.
        unsafe { put(host_ts, t) };
        Ok(())
    })
}
