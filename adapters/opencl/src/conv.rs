//! Pure mappings between OpenCL codes and flags and the API's types.
//!
//! Nothing here calls OpenCL: every function is a total mapping, unit-tested
//! below.

use opencl3::device::{
    CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, CL_DEVICE_SVM_FINE_GRAIN_BUFFER, CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CPU,
    CL_DEVICE_TYPE_GPU,
};
use opencl3::error_codes::{self as ec, ClError};
use opencl3::event::{CL_COMPLETE, CL_QUEUED, CL_RUNNING, CL_SUBMITTED};
use opencl3::memory::{CL_MAP_READ, CL_MAP_WRITE, CL_MAP_WRITE_INVALIDATE_REGION};
use opencl3::memory::{
    CL_MEM_ALLOC_HOST_PTR, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, CL_MEM_USE_HOST_PTR,
    CL_MEM_WRITE_ONLY,
};
use opencl3::types::{cl_device_svm_capabilities, cl_device_type, cl_int, cl_map_flags, cl_mem_flags};
use ur_api::{
    AtomicOrders, AtomicScopes, Backend, DeviceType, Error, EventStatus, MapFlags, MemFlags, Partition, PartitionKinds,
    RectCopy, RectSide, UsmAccess, UsmAdvice, UsmCaps, UsmKind,
};

/// Error codes of the run-time loader (cl3's `dynamic` feature), not of OpenCL.
pub const LOADER_LIBRARY_MISSING: cl_int = ec::DLOPEN_RUNTIME_LOAD_FAILED;
/// A function the loaded library does not export.
pub const LOADER_FUNCTION_MISSING: cl_int = ec::DLOPEN_FUNCTION_NOT_AVAILABLE;

/// The API error for an OpenCL (or loader) error code.
///
/// Codes that describe bad input are mapped to the input variants only where
/// the input is the caller's (work-group sizes, kernel arguments); anything
/// else the dyn layer already validated is a backend error carrying its name.
///
/// ```
/// # use ur_opencl::conv::error;
/// assert_eq!(error(-6), ur_api::Error::OutOfHostMemory);
/// ```
pub fn error(code: cl_int) -> Error {
    match code {
        ec::CL_MEM_OBJECT_ALLOCATION_FAILURE | ec::CL_OUT_OF_RESOURCES => Error::OutOfDeviceMemory,
        ec::CL_OUT_OF_HOST_MEMORY => Error::OutOfHostMemory,
        ec::CL_DEVICE_NOT_AVAILABLE => Error::DeviceLost,
        ec::CL_BUILD_PROGRAM_FAILURE | ec::CL_COMPILE_PROGRAM_FAILURE | ec::CL_LINK_PROGRAM_FAILURE => {
            Error::ProgramBuild {
                log: format!("{} (no build log available)", ClError(code)),
            }
        }
        ec::CL_INVALID_KERNEL_ARGS | ec::CL_INVALID_ARG_INDEX | ec::CL_INVALID_ARG_VALUE | ec::CL_INVALID_ARG_SIZE => {
            Error::InvalidKernelArgs(ClError(code).to_string())
        }
        ec::CL_INVALID_WORK_GROUP_SIZE | ec::CL_INVALID_WORK_ITEM_SIZE | ec::CL_INVALID_GLOBAL_WORK_SIZE => {
            Error::invalid(format!("launch range rejected by the device: {}", ClError(code)))
        }
        ec::CL_MISALIGNED_SUB_BUFFER_OFFSET => Error::InvalidAlignment {
            align: 0,
            why: "sub-buffer offset is not aligned for a device of the context",
        },
        ec::CL_PROFILING_INFO_NOT_AVAILABLE => {
            Error::ProfilingUnavailable("the OpenCL runtime has no timestamps for this event")
        }
        ec::CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST => {
            Error::CommandFailed("a command in the wait list failed".into())
        }
        ec::CL_COMPILER_NOT_AVAILABLE | ec::CL_LINKER_NOT_AVAILABLE => {
            Error::unsupported("an OpenCL C compiler on this device")
        }
        LOADER_LIBRARY_MISSING => Error::unsupported("the OpenCL ICD loader (libOpenCL.so.1) is not installed"),
        LOADER_FUNCTION_MISSING => Error::unsupported("an OpenCL function missing from the loaded libOpenCL"),
        _ => Error::Backend {
            backend: Backend::OpenCl,
            code: i64::from(code),
            message: ClError(code).to_string(),
        },
    }
}

/// Maps an OpenCL result into the API's.
pub(crate) fn check<T>(r: Result<T, cl_int>) -> ur_api::Result<T> {
    r.map_err(error)
}

/// Maps an `opencl3` result into the API's.
pub(crate) fn check3<T>(r: Result<T, ClError>) -> ur_api::Result<T> {
    r.map_err(|e| error(e.0))
}

/// Is this enumeration error really "there are none"? (`clGetPlatformIDs`
/// answers `CL_PLATFORM_NOT_FOUND_KHR` without ICDs, `clGetDeviceIDs`
/// answers `CL_DEVICE_NOT_FOUND` for a platform with no devices, and the
/// run-time loader answers its own code when libOpenCL is absent.)
pub(crate) fn means_none(code: cl_int) -> bool {
    matches!(
        code,
        ec::CL_PLATFORM_NOT_FOUND_KHR | ec::CL_DEVICE_NOT_FOUND | LOADER_LIBRARY_MISSING
    )
}

/// Buffer creation flags. `ALLOC_HOST_PTR` asks for host-accessible
/// (pinned) backing, which is what OpenCL's flag of the same name does.
/// The access flags of an OpenCL memory object's `CL_MEM_FLAGS` (read-write
/// where neither read-only nor write-only is set, as OpenCL's default).
pub fn mem_access(flags: cl_mem_flags) -> MemFlags {
    if flags & CL_MEM_READ_ONLY != 0 {
        MemFlags::READ_ONLY
    } else if flags & CL_MEM_WRITE_ONLY != 0 {
        MemFlags::WRITE_ONLY
    } else {
        MemFlags::READ_WRITE
    }
}

pub fn mem_flags(flags: MemFlags) -> cl_mem_flags {
    let mut out = if flags.contains(MemFlags::READ_ONLY) {
        CL_MEM_READ_ONLY
    } else if flags.contains(MemFlags::WRITE_ONLY) {
        CL_MEM_WRITE_ONLY
    } else {
        CL_MEM_READ_WRITE
    };
    if flags.contains(MemFlags::USE_HOST_PTR) {
        out |= CL_MEM_USE_HOST_PTR;
    }
    if flags.contains(MemFlags::ALLOC_HOST_PTR) {
        out |= CL_MEM_ALLOC_HOST_PTR;
    }
    if flags.contains(MemFlags::COPY_HOST_PTR) {
        out |= CL_MEM_COPY_HOST_PTR;
    }
    out
}

/// Map flags.
pub fn map_flags(flags: MapFlags) -> cl_map_flags {
    let mut out = 0;
    if flags.contains(MapFlags::READ) {
        out |= CL_MAP_READ;
    }
    if flags.contains(MapFlags::WRITE) {
        out |= CL_MAP_WRITE;
    }
    if flags.contains(MapFlags::WRITE_INVALIDATE) {
        out |= CL_MAP_WRITE_INVALIDATE_REGION;
    }
    out
}

/// An event's `CL_EVENT_COMMAND_EXECUTION_STATUS`; negative values are the
/// error that terminated the command.
pub fn event_status(status: cl_int) -> EventStatus {
    match status {
        CL_COMPLETE => EventStatus::Complete,
        CL_RUNNING => EventStatus::Running,
        CL_SUBMITTED => EventStatus::Submitted,
        CL_QUEUED => EventStatus::Queued,
        s if s < 0 => EventStatus::Failed(Error::CommandFailed(ClError(s).to_string())),
        s => EventStatus::Failed(Error::CommandFailed(format!("unknown OpenCL execution status {s}"))),
    }
}

/// Device type bits (a device may set several; the most specific wins).
pub fn device_type(ty: cl_device_type) -> DeviceType {
    if ty & CL_DEVICE_TYPE_GPU != 0 {
        DeviceType::Gpu
    } else if ty & CL_DEVICE_TYPE_CPU != 0 {
        DeviceType::Cpu
    } else if ty & CL_DEVICE_TYPE_ACCELERATOR != 0 {
        DeviceType::Accelerator
    } else {
        DeviceType::Custom
    }
}

/// Which USM kinds this adapter serves with OpenCL 2.0 shared virtual memory.
///
/// Decision: coarse-grain SVM is memory the host may only touch through
/// enqueued copies (or map/unmap), which is exactly a *device* allocation;
/// fine-grain buffer SVM is memory host and device both dereference with
/// events as the only synchronisation, which is what *host* and *shared*
/// allocations promise. Without SVM the kinds are absent (the dyn layer then
/// answers `Unsupported`).
pub fn usm_caps_from_svm(svm: cl_device_svm_capabilities) -> UsmCaps {
    let mut caps = UsmCaps::empty();
    if svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER != 0 {
        caps |= UsmCaps::DEVICE;
    }
    if svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER != 0 {
        caps |= UsmCaps::HOST | UsmCaps::SHARED;
    }
    caps
}

/// `CL_UNIFIED_SHARED_MEMORY_ACCESS_INTEL`: the device can access memory of
/// that kind (the other capability bits, atomics and concurrency, refine it).
pub const INTEL_USM_ACCESS: u64 = 1 << 0;
/// `CL_MEM_ALLOC_INITIAL_PLACEMENT_DEVICE_INTEL`.
pub const INTEL_PLACEMENT_DEVICE: u64 = 1 << 1;
/// `CL_MEM_ALLOC_INITIAL_PLACEMENT_HOST_INTEL`.
pub const INTEL_PLACEMENT_HOST: u64 = 1 << 2;

/// Which USM kinds a device with `cl_intel_unified_shared_memory` offers,
/// from its host, device and single-device shared memory capabilities: a
/// kind is there exactly when the device can access memory of that kind.
pub fn usm_caps_from_intel(host: u64, device: u64, shared: u64) -> UsmCaps {
    let mut caps = UsmCaps::empty();
    if host & INTEL_USM_ACCESS != 0 {
        caps |= UsmCaps::HOST;
    }
    if device & INTEL_USM_ACCESS != 0 {
        caps |= UsmCaps::DEVICE;
    }
    if shared & INTEL_USM_ACCESS != 0 {
        caps |= UsmCaps::SHARED;
    }
    caps
}

/// OpenCL 3.0's `CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES` (and fence
/// capabilities) as UR's separate orders and scopes. `None` (a device
/// before 3.0, which cannot answer): what OpenCL 1.2 atomics give, relaxed
/// order at work-group and device scope.
pub fn atomic_caps(cl: Option<u64>) -> (AtomicOrders, AtomicScopes) {
    // CL_DEVICE_ATOMIC_ORDER_* and CL_DEVICE_ATOMIC_SCOPE_* bits.
    const RELAXED: u64 = 1 << 0;
    const ACQ_REL: u64 = 1 << 1;
    const SEQ_CST: u64 = 1 << 2;
    const WORK_ITEM: u64 = 1 << 3;
    const WORK_GROUP: u64 = 1 << 4;
    const DEVICE: u64 = 1 << 5;
    const ALL_DEVICES: u64 = 1 << 6;
    let Some(cl) = cl else {
        return (AtomicOrders::RELAXED, AtomicScopes::WORK_GROUP | AtomicScopes::DEVICE);
    };
    let mut orders = AtomicOrders::empty();
    if cl & RELAXED != 0 {
        orders |= AtomicOrders::RELAXED;
    }
    if cl & ACQ_REL != 0 {
        orders |= AtomicOrders::ACQUIRE | AtomicOrders::RELEASE | AtomicOrders::ACQ_REL;
    }
    if cl & SEQ_CST != 0 {
        orders |= AtomicOrders::SEQ_CST;
    }
    let mut scopes = AtomicScopes::empty();
    for (bit, scope) in [
        (WORK_ITEM, AtomicScopes::WORK_ITEM),
        (WORK_GROUP, AtomicScopes::WORK_GROUP),
        (DEVICE, AtomicScopes::DEVICE),
        (ALL_DEVICES, AtomicScopes::SYSTEM),
    ] {
        if cl & bit != 0 {
            scopes |= scope;
        }
    }
    (orders, scopes)
}

/// `CL_DEVICE_PARTITION_*` property names (OpenCL 1.2).
const CL_PARTITION_EQUALLY: isize = 0x1086;
const CL_PARTITION_BY_COUNTS: isize = 0x1087;
const CL_PARTITION_BY_COUNTS_LIST_END: isize = 0x0;
const CL_PARTITION_BY_AFFINITY_DOMAIN: isize = 0x1088;

/// The partitions a device accepts, from its `CL_DEVICE_PARTITION_PROPERTIES`
/// (names the API has no partition for, such as Intel's by-names, are
/// left out).
pub fn partition_kinds(props: &[isize]) -> PartitionKinds {
    props.iter().fold(PartitionKinds::empty(), |k, &p| {
        k | match p {
            CL_PARTITION_EQUALLY => PartitionKinds::EQUALLY,
            CL_PARTITION_BY_COUNTS => PartitionKinds::BY_COUNTS,
            CL_PARTITION_BY_AFFINITY_DOMAIN => PartitionKinds::BY_AFFINITY_DOMAIN,
            _ => PartitionKinds::empty(),
        }
    })
}

/// The zero-terminated `clCreateSubDevices` property list of a partition
/// (affinity domains have OpenCL's bit values).
pub fn partition_properties(how: &Partition) -> Vec<isize> {
    match how {
        Partition::Equally(n) => vec![CL_PARTITION_EQUALLY, *n as isize, 0],
        Partition::ByCounts(counts) => std::iter::once(CL_PARTITION_BY_COUNTS)
            .chain(counts.iter().map(|&n| n as isize))
            .chain([CL_PARTITION_BY_COUNTS_LIST_END, 0])
            .collect(),
        Partition::ByAffinityDomain(d) => vec![CL_PARTITION_BY_AFFINITY_DOMAIN, d.bits() as isize, 0],
    }
}

/// How a device accesses one USM kind: the Intel extension's capability
/// bits (`CL_UNIFIED_SHARED_MEMORY_*_ACCESS_INTEL`) have UR's layout; with
/// SVM instead, coarse-grain buffers are device memory and fine-grain ones
/// host and shared memory, both accessed concurrently by the host.
pub fn usm_access(intel: Option<u64>, svm: cl_device_svm_capabilities, kind: UsmKind) -> UsmAccess {
    if let Some(bits) = intel {
        return UsmAccess::from_bits_truncate(bits as u32);
    }
    let grain = match kind {
        UsmKind::Device => CL_DEVICE_SVM_COARSE_GRAIN_BUFFER,
        UsmKind::Host | UsmKind::Shared => CL_DEVICE_SVM_FINE_GRAIN_BUFFER,
    };
    if svm & grain == 0 {
        UsmAccess::empty()
    } else {
        UsmAccess::ACCESS | UsmAccess::CONCURRENT_ACCESS
    }
}

/// `CL_MEM_ALLOC_FLAGS_INTEL` for an allocation: only shared memory has a
/// placement to choose; it starts where the advice prefers, else on the
/// hinted device, else where the runtime likes.
pub fn intel_alloc_flags(kind: UsmKind, has_device: bool, advice: UsmAdvice) -> u64 {
    match kind {
        UsmKind::Shared if advice.contains(UsmAdvice::PREFER_HOST) => INTEL_PLACEMENT_HOST,
        UsmKind::Shared if has_device || advice.contains(UsmAdvice::PREFER_DEVICE) => INTEL_PLACEMENT_DEVICE,
        _ => 0,
    }
}

/// `(major, minor)` of a version string such as `"OpenCL 3.0 PoCL ..."`,
/// or, for the OpenCL C version, `"OpenCL C 1.2 PoCL"`.
pub fn cl_version(s: &str) -> Option<(u32, u32)> {
    let rest = s.strip_prefix("OpenCL ")?;
    let rest = rest.strip_prefix("C ").unwrap_or(rest);
    let num = rest.split_whitespace().next()?;
    let (major, minor) = num.split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The pattern repeated to fill at most `cap` bytes of a `size`-byte range
/// (whole repetitions, at least one, never more than `size`).
pub fn repeat_pattern(pattern: &[u8], size: usize, cap: usize) -> Vec<u8> {
    let reps = (cap / pattern.len()).clamp(1, (size / pattern.len()).max(1));
    pattern.repeat(reps)
}

/// A rect copy as OpenCL's `*Rect` calls accept it. They require each
/// slice pitch to be a multiple of its row pitch; where a side's is not,
/// the box is split into one 2-D box per slice, each slice's start folded
/// into the byte origin (`origin[0]`).
pub fn rects_for_opencl(rect: &RectCopy) -> Vec<RectCopy> {
    let ok = |s: &RectSide| s.row_pitch == 0 || s.slice_pitch % s.row_pitch == 0;
    if ok(&rect.src) && ok(&rect.dst) {
        return vec![*rect];
    }
    let [w, h, d] = rect.extent;
    let slice = |s: &RectSide, k: usize| RectSide {
        origin: [s.origin[0] + (s.origin[2] + k) * s.slice_pitch, s.origin[1], 0],
        row_pitch: s.row_pitch,
        slice_pitch: s.row_pitch * (s.origin[1] + h),
    };
    (0..d)
        .map(|k| RectCopy {
            src: slice(&rect.src, k),
            dst: slice(&rect.dst, k),
            extent: [w, h, 1],
        })
        .collect()
}

/// A host CPU cache: size and line size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCache {
    /// Bytes.
    pub size: u64,
    /// Bytes per line.
    pub line: u64,
}

/// The last-level data cache among sysfs cache entries, each
/// `(level, type, size, coherency_line_size)` as the files read
/// (`"3\n"`, `"Unified\n"`, `"32768K\n"`, `"64\n"`); instruction caches
/// and unreadable entries are skipped.
pub fn last_level_cache(entries: impl IntoIterator<Item = (String, String, String, String)>) -> Option<HostCache> {
    entries
        .into_iter()
        .filter(|(_, kind, _, _)| matches!(kind.trim(), "Data" | "Unified"))
        .filter_map(|(level, _, size, line)| {
            let level: u32 = level.trim().parse().ok()?;
            let size = size.trim();
            let (digits, unit) = match size.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
                Some((i, _)) => size.split_at(i),
                None => (size, ""),
            };
            let scale = match unit {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => return None,
            };
            let size = digits.parse::<u64>().ok()?.checked_mul(scale)?;
            let line = line.trim().parse().ok()?;
            Some((level, HostCache { size, line }))
        })
        .max_by_key(|(level, _)| *level)
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_map_to_their_variants() {
        assert_eq!(error(ec::CL_MEM_OBJECT_ALLOCATION_FAILURE), Error::OutOfDeviceMemory);
        assert_eq!(error(ec::CL_OUT_OF_RESOURCES), Error::OutOfDeviceMemory);
        assert_eq!(error(ec::CL_OUT_OF_HOST_MEMORY), Error::OutOfHostMemory);
        assert_eq!(error(ec::CL_DEVICE_NOT_AVAILABLE), Error::DeviceLost);
        assert!(matches!(
            error(ec::CL_BUILD_PROGRAM_FAILURE),
            Error::ProgramBuild { .. }
        ));
        assert!(matches!(error(ec::CL_INVALID_ARG_SIZE), Error::InvalidKernelArgs(_)));
        assert!(matches!(error(ec::CL_INVALID_KERNEL_ARGS), Error::InvalidKernelArgs(_)));
        assert!(matches!(error(ec::CL_INVALID_WORK_GROUP_SIZE), Error::InvalidValue(_)));
        assert!(matches!(
            error(ec::CL_MISALIGNED_SUB_BUFFER_OFFSET),
            Error::InvalidAlignment { .. }
        ));
        assert!(matches!(
            error(ec::CL_PROFILING_INFO_NOT_AVAILABLE),
            Error::ProfilingUnavailable(_)
        ));
        assert!(matches!(
            error(ec::CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
            Error::CommandFailed(_)
        ));
        assert!(matches!(error(LOADER_LIBRARY_MISSING), Error::Unsupported { .. }));
        assert!(matches!(
            error(ec::CL_COMPILER_NOT_AVAILABLE),
            Error::Unsupported { .. }
        ));
    }

    #[test]
    fn other_errors_keep_code_and_name() {
        match error(ec::CL_INVALID_MEM_OBJECT) {
            Error::Backend { backend, code, message } => {
                assert_eq!(backend, Backend::OpenCl);
                assert_eq!(code, -38);
                assert_eq!(message, "CL_INVALID_MEM_OBJECT");
            }
            e => panic!("unexpected {e:?}"),
        }
        assert!(matches!(error(-12345), Error::Backend { code: -12345, .. }));
    }

    #[test]
    fn none_found_codes() {
        assert!(means_none(ec::CL_PLATFORM_NOT_FOUND_KHR));
        assert!(means_none(ec::CL_DEVICE_NOT_FOUND));
        assert!(means_none(LOADER_LIBRARY_MISSING));
        assert!(!means_none(ec::CL_INVALID_PLATFORM));
        assert!(!means_none(ec::CL_OUT_OF_HOST_MEMORY));
    }

    #[test]
    fn mem_access_reads_the_access_flag_back() {
        for f in [MemFlags::READ_WRITE, MemFlags::READ_ONLY, MemFlags::WRITE_ONLY] {
            assert_eq!(mem_access(mem_flags(f) | CL_MEM_COPY_HOST_PTR), f);
        }
        assert_eq!(
            mem_access(CL_MEM_USE_HOST_PTR),
            MemFlags::READ_WRITE,
            "OpenCL's default"
        );
    }

    #[test]
    fn mem_flags_map() {
        assert_eq!(mem_flags(MemFlags::empty()), CL_MEM_READ_WRITE);
        assert_eq!(mem_flags(MemFlags::READ_WRITE), CL_MEM_READ_WRITE);
        assert_eq!(mem_flags(MemFlags::READ_ONLY), CL_MEM_READ_ONLY);
        assert_eq!(mem_flags(MemFlags::WRITE_ONLY), CL_MEM_WRITE_ONLY);
        assert_eq!(
            mem_flags(MemFlags::READ_ONLY | MemFlags::COPY_HOST_PTR | MemFlags::ALLOC_HOST_PTR),
            CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR | CL_MEM_ALLOC_HOST_PTR
        );
        assert_eq!(
            mem_flags(MemFlags::USE_HOST_PTR),
            CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR
        );
    }

    #[test]
    fn map_flags_map() {
        assert_eq!(map_flags(MapFlags::READ), CL_MAP_READ);
        assert_eq!(map_flags(MapFlags::READ | MapFlags::WRITE), CL_MAP_READ | CL_MAP_WRITE);
        assert_eq!(map_flags(MapFlags::WRITE_INVALIDATE), CL_MAP_WRITE_INVALIDATE_REGION);
    }

    #[test]
    fn statuses() {
        assert_eq!(event_status(CL_COMPLETE), EventStatus::Complete);
        assert_eq!(event_status(CL_RUNNING), EventStatus::Running);
        assert_eq!(event_status(CL_SUBMITTED), EventStatus::Submitted);
        assert_eq!(event_status(CL_QUEUED), EventStatus::Queued);
        assert!(matches!(event_status(-5), EventStatus::Failed(Error::CommandFailed(m)) if m == "CL_OUT_OF_RESOURCES"));
    }

    #[test]
    fn device_types() {
        assert_eq!(device_type(CL_DEVICE_TYPE_CPU), DeviceType::Cpu);
        assert_eq!(device_type(CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_CPU), DeviceType::Gpu);
        assert_eq!(device_type(CL_DEVICE_TYPE_ACCELERATOR), DeviceType::Accelerator);
        assert_eq!(device_type(0), DeviceType::Custom);
    }

    #[test]
    fn svm_decision() {
        assert_eq!(usm_caps_from_svm(0), UsmCaps::empty());
        assert_eq!(usm_caps_from_svm(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER), UsmCaps::DEVICE);
        assert_eq!(
            usm_caps_from_svm(CL_DEVICE_SVM_COARSE_GRAIN_BUFFER | CL_DEVICE_SVM_FINE_GRAIN_BUFFER),
            UsmCaps::all()
        );
    }

    #[test]
    fn intel_usm_decision() {
        assert_eq!(usm_caps_from_intel(0, 0, 0), UsmCaps::empty());
        assert_eq!(usm_caps_from_intel(0xf, 0xf, 0xf), UsmCaps::all());
        assert_eq!(usm_caps_from_intel(0, 1, 0), UsmCaps::DEVICE);
        // Atomics without plain access is no access.
        assert_eq!(usm_caps_from_intel(0b10, 1, 0b100), UsmCaps::DEVICE);
        assert_eq!(usm_caps_from_intel(1, 0, 1), UsmCaps::HOST | UsmCaps::SHARED);
    }

    #[test]
    fn intel_placement() {
        let none = UsmAdvice::empty();
        assert_eq!(intel_alloc_flags(UsmKind::Shared, true, none), INTEL_PLACEMENT_DEVICE);
        assert_eq!(intel_alloc_flags(UsmKind::Shared, false, none), 0);
        assert_eq!(
            intel_alloc_flags(UsmKind::Shared, true, UsmAdvice::PREFER_HOST),
            INTEL_PLACEMENT_HOST
        );
        assert_eq!(
            intel_alloc_flags(UsmKind::Shared, false, UsmAdvice::PREFER_DEVICE),
            INTEL_PLACEMENT_DEVICE
        );
        assert_eq!(intel_alloc_flags(UsmKind::Device, true, UsmAdvice::PREFER_HOST), 0);
        assert_eq!(intel_alloc_flags(UsmKind::Host, false, none), 0);
    }

    #[test]
    fn seed_is_whole_repetitions_within_bounds() {
        assert_eq!(repeat_pattern(&[1, 2, 3], 30, 8), vec![1, 2, 3, 1, 2, 3]);
        assert_eq!(repeat_pattern(&[1, 2, 3], 6, 1 << 20).len(), 6);
        assert_eq!(repeat_pattern(&[9; 5], 5, 2).len(), 5, "at least one repetition");
    }

    /// Every (src, dst) byte pair a rect copy moves, in order.
    fn pairs(r: &RectCopy) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        r.for_each_row(|s, d, len| out.extend((0..len).map(|i| (s + i, d + i))));
        out
    }

    #[test]
    fn rects_split_only_where_opencl_refuses_the_pitches() {
        let fine = RectCopy {
            src: RectSide::new([1, 2, 1], 8, 32),
            dst: RectSide::new([0, 0, 0], 4, 12),
            extent: [4, 3, 2],
        };
        assert_eq!(rects_for_opencl(&fine), vec![fine]);
        let odd = RectCopy {
            src: RectSide::new([1, 2, 1], 8, 37),
            ..fine
        };
        let split = rects_for_opencl(&odd);
        assert_eq!(split.len(), 2);
        for r in &split {
            assert_eq!(r.src.slice_pitch % r.src.row_pitch, 0);
            assert_eq!(r.dst.slice_pitch % r.dst.row_pitch, 0);
            assert_eq!(r.extent[2], 1);
        }
        let moved: Vec<(usize, usize)> = split.iter().flat_map(pairs).collect();
        assert_eq!(moved, pairs(&odd), "the split moves exactly the same bytes");
    }

    #[test]
    fn versions() {
        assert_eq!(cl_version("OpenCL 3.0 PoCL HSTR: x"), Some((3, 0)));
        assert_eq!(cl_version("OpenCL 1.2 "), Some((1, 2)));
        assert_eq!(cl_version("OpenCL 2.1"), Some((2, 1)));
        assert_eq!(cl_version("CUDA 12"), None);
        assert_eq!(cl_version("OpenCL C 1.2 PoCL"), Some((1, 2)));
        assert_eq!(cl_version("OpenCL C 3.0 "), Some((3, 0)));
    }

    #[test]
    fn atomic_capabilities_split_into_orders_and_scopes() {
        // Relaxed + acq_rel, work-group and device scope.
        let (o, sc) = atomic_caps(Some(0b011_0011));
        assert_eq!(
            o,
            AtomicOrders::RELAXED | AtomicOrders::ACQUIRE | AtomicOrders::RELEASE | AtomicOrders::ACQ_REL
        );
        assert_eq!(sc, AtomicScopes::WORK_GROUP | AtomicScopes::DEVICE);
        let (o, sc) = atomic_caps(Some(0x7f));
        assert!(o.contains(AtomicOrders::SEQ_CST) && sc.contains(AtomicScopes::SYSTEM | AtomicScopes::WORK_ITEM));
        assert_eq!(atomic_caps(None).0, AtomicOrders::RELAXED);
    }

    #[test]
    fn usm_access_from_intel_bits_or_svm() {
        assert_eq!(
            usm_access(Some(0b1011), 0, UsmKind::Host),
            UsmAccess::ACCESS | UsmAccess::ATOMIC_ACCESS | UsmAccess::ATOMIC_CONCURRENT_ACCESS
        );
        assert_eq!(
            usm_access(None, CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, UsmKind::Shared),
            UsmAccess::empty()
        );
        assert!(usm_access(None, CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, UsmKind::Device).contains(UsmAccess::ACCESS));
    }

    #[test]
    fn partitions_map_to_opencl_property_lists() {
        use ur_api::AffinityDomains;
        assert_eq!(partition_properties(&Partition::Equally(2)), [0x1086, 2, 0]);
        assert_eq!(
            partition_properties(&Partition::ByCounts(vec![3, 1])),
            [0x1087, 3, 1, 0, 0]
        );
        assert_eq!(
            partition_properties(&Partition::ByAffinityDomain(AffinityDomains::NEXT_PARTITIONABLE)),
            [0x1088, 1 << 5, 0]
        );
        assert_eq!(
            partition_kinds(&[0x1086, 0x4052, 0x1088]),
            PartitionKinds::EQUALLY | PartitionKinds::BY_AFFINITY_DOMAIN
        );
        assert_eq!(partition_kinds(&[]), PartitionKinds::empty());
    }

    #[test]
    fn last_level_cache_from_sysfs_entries() {
        let e = |l: &str, t: &str, s: &str, n: &str| (l.into(), t.into(), s.into(), n.into());
        let entries = vec![
            e("1\n", "Data\n", "32K\n", "64\n"),
            e("1\n", "Instruction\n", "32K\n", "64\n"),
            e("3\n", "Unified\n", "32768K\n", "64\n"),
            e("2\n", "Unified\n", "512K\n", "64\n"),
            e("4\n", "Instruction\n", "1G\n", "64\n"),
        ];
        assert_eq!(
            last_level_cache(entries),
            Some(HostCache {
                size: 32 << 20,
                line: 64
            })
        );
        assert_eq!(
            last_level_cache(vec![e("2", "Unified", "1M", "128")]),
            Some(HostCache {
                size: 1 << 20,
                line: 128
            })
        );
        assert_eq!(last_level_cache(vec![e("x", "Unified", "1M", "64")]), None);
        assert_eq!(last_level_cache(vec![e("2", "Unified", "1Q", "64")]), None);
        assert_eq!(last_level_cache(Vec::new()), None);
    }
}
