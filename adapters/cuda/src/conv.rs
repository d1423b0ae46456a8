//! Pure mappings between CUDA's vocabulary and the API's: driver and NVRTC
//! result codes to [`Error`], fill patterns to `cuMemsetD*` calls, launch
//! ranges to block sizes, event times to [`ProfilingInfo`]. Nothing here
//! calls the driver, so all of it is unit-tested on machines without a GPU.

use cudarc::driver::sys::{self, CUresult};
use cudarc::nvrtc::sys::nvrtcResult;
use ur_api::{
    AtomicOrders, AtomicScopes, Backend, DeviceLimits, Error, FpCaps, LaunchLimit, MemoryConnection, NdRange,
    ProfilingInfo, Result, UsmAccess, UsmAdvice,
};

/// A driver result as `Ok(())` or the matching [`Error`].
pub(crate) fn check(r: CUresult) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(error(r))
    }
}

/// The [`Error`] for a failed driver call.
pub(crate) fn error(r: CUresult) -> Error {
    use CUresult as C;
    match r {
        C::CUDA_ERROR_OUT_OF_MEMORY => Error::OutOfDeviceMemory,
        C::CUDA_ERROR_INVALID_VALUE => {
            Error::invalid("the CUDA driver rejected an argument (CUDA_ERROR_INVALID_VALUE)")
        }
        C::CUDA_ERROR_NOT_SUPPORTED | C::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => {
            Error::unsupported(format!("{} on this device", name(r)))
        }
        C::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => Error::invalid("host memory is already registered"),
        C::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => Error::invalid("host memory is not registered"),
        C::CUDA_ERROR_INVALID_IMAGE
        | C::CUDA_ERROR_INVALID_PTX
        | C::CUDA_ERROR_NO_BINARY_FOR_GPU
        | C::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | C::CUDA_ERROR_JIT_COMPILER_NOT_FOUND
        | C::CUDA_ERROR_JIT_COMPILATION_DISABLED
        | C::CUDA_ERROR_INVALID_SOURCE => Error::ProgramBuild {
            log: format!("the CUDA driver could not load the module: {}", name(r)),
        },
        C::CUDA_ERROR_NOT_FOUND => Error::invalid("not found (CUDA_ERROR_NOT_FOUND)"),
        C::CUDA_ERROR_ILLEGAL_ADDRESS
        | C::CUDA_ERROR_LAUNCH_FAILED
        | C::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        | C::CUDA_ERROR_LAUNCH_TIMEOUT
        | C::CUDA_ERROR_ASSERT
        | C::CUDA_ERROR_ILLEGAL_INSTRUCTION
        | C::CUDA_ERROR_MISALIGNED_ADDRESS
        | C::CUDA_ERROR_INVALID_ADDRESS_SPACE
        | C::CUDA_ERROR_INVALID_PC => Error::CommandFailed(name(r).to_owned()),
        C::CUDA_ERROR_ECC_UNCORRECTABLE
        | C::CUDA_ERROR_HARDWARE_STACK_ERROR
        | C::CUDA_ERROR_NVLINK_UNCORRECTABLE
        | C::CUDA_ERROR_DEVICE_UNAVAILABLE
        | C::CUDA_ERROR_CONTEXT_IS_DESTROYED => Error::DeviceLost,
        _ => Error::Backend {
            backend: Backend::Cuda,
            code: r as i64,
            message: name(r).to_owned(),
        },
    }
}

/// The symbolic name of a driver result (from the enum, not the driver, so
/// it works with no driver loaded).
pub(crate) fn name(r: CUresult) -> &'static str {
    use CUresult as C;
    match r {
        C::CUDA_SUCCESS => "CUDA_SUCCESS",
        C::CUDA_ERROR_INVALID_VALUE => "CUDA_ERROR_INVALID_VALUE",
        C::CUDA_ERROR_OUT_OF_MEMORY => "CUDA_ERROR_OUT_OF_MEMORY",
        C::CUDA_ERROR_NOT_INITIALIZED => "CUDA_ERROR_NOT_INITIALIZED",
        C::CUDA_ERROR_DEINITIALIZED => "CUDA_ERROR_DEINITIALIZED",
        C::CUDA_ERROR_STUB_LIBRARY => "CUDA_ERROR_STUB_LIBRARY",
        C::CUDA_ERROR_NO_DEVICE => "CUDA_ERROR_NO_DEVICE",
        C::CUDA_ERROR_INVALID_DEVICE => "CUDA_ERROR_INVALID_DEVICE",
        C::CUDA_ERROR_INVALID_IMAGE => "CUDA_ERROR_INVALID_IMAGE",
        C::CUDA_ERROR_INVALID_CONTEXT => "CUDA_ERROR_INVALID_CONTEXT",
        C::CUDA_ERROR_NO_BINARY_FOR_GPU => "CUDA_ERROR_NO_BINARY_FOR_GPU",
        C::CUDA_ERROR_ECC_UNCORRECTABLE => "CUDA_ERROR_ECC_UNCORRECTABLE",
        C::CUDA_ERROR_PEER_ACCESS_UNSUPPORTED => "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
        C::CUDA_ERROR_INVALID_PTX => "CUDA_ERROR_INVALID_PTX",
        C::CUDA_ERROR_NVLINK_UNCORRECTABLE => "CUDA_ERROR_NVLINK_UNCORRECTABLE",
        C::CUDA_ERROR_JIT_COMPILER_NOT_FOUND => "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
        C::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        C::CUDA_ERROR_JIT_COMPILATION_DISABLED => "CUDA_ERROR_JIT_COMPILATION_DISABLED",
        C::CUDA_ERROR_INVALID_SOURCE => "CUDA_ERROR_INVALID_SOURCE",
        C::CUDA_ERROR_INVALID_HANDLE => "CUDA_ERROR_INVALID_HANDLE",
        C::CUDA_ERROR_NOT_FOUND => "CUDA_ERROR_NOT_FOUND",
        C::CUDA_ERROR_NOT_READY => "CUDA_ERROR_NOT_READY",
        C::CUDA_ERROR_ILLEGAL_ADDRESS => "CUDA_ERROR_ILLEGAL_ADDRESS",
        C::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        C::CUDA_ERROR_LAUNCH_TIMEOUT => "CUDA_ERROR_LAUNCH_TIMEOUT",
        C::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
        C::CUDA_ERROR_CONTEXT_IS_DESTROYED => "CUDA_ERROR_CONTEXT_IS_DESTROYED",
        C::CUDA_ERROR_ASSERT => "CUDA_ERROR_ASSERT",
        C::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
        C::CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
        C::CUDA_ERROR_HARDWARE_STACK_ERROR => "CUDA_ERROR_HARDWARE_STACK_ERROR",
        C::CUDA_ERROR_ILLEGAL_INSTRUCTION => "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        C::CUDA_ERROR_MISALIGNED_ADDRESS => "CUDA_ERROR_MISALIGNED_ADDRESS",
        C::CUDA_ERROR_INVALID_ADDRESS_SPACE => "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        C::CUDA_ERROR_INVALID_PC => "CUDA_ERROR_INVALID_PC",
        C::CUDA_ERROR_LAUNCH_FAILED => "CUDA_ERROR_LAUNCH_FAILED",
        C::CUDA_ERROR_DEVICE_UNAVAILABLE => "CUDA_ERROR_DEVICE_UNAVAILABLE",
        C::CUDA_ERROR_NOT_PERMITTED => "CUDA_ERROR_NOT_PERMITTED",
        C::CUDA_ERROR_NOT_SUPPORTED => "CUDA_ERROR_NOT_SUPPORTED",
        C::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
        C::CUDA_ERROR_UNKNOWN => "CUDA_ERROR_UNKNOWN",
        _ => "CUDA_ERROR (see the code)",
    }
}

/// The [`Error`] for a failed NVRTC call other than a compilation error
/// (which carries its log and is built by the caller).
pub(crate) fn nvrtc_error(r: nvrtcResult) -> Error {
    match r {
        nvrtcResult::NVRTC_ERROR_OUT_OF_MEMORY => Error::OutOfHostMemory,
        nvrtcResult::NVRTC_ERROR_INVALID_OPTION => Error::ProgramBuild {
            log: "NVRTC rejected a compiler option (NVRTC_ERROR_INVALID_OPTION)".into(),
        },
        nvrtcResult::NVRTC_ERROR_COMPILATION => Error::ProgramBuild {
            log: "NVRTC compilation failed".into(),
        },
        other => Error::Backend {
            backend: Backend::Cuda,
            code: other as i64,
            message: format!("NVRTC {other:?}"),
        },
    }
}

/// `cudaCpuDeviceId` / `CU_DEVICE_CPU`: the host as an advice target.
pub(crate) const CU_DEVICE_CPU: sys::CUdevice = -1;

/// Where a `cuMemAdvise` call points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AdviseTarget {
    /// The queue's device.
    Device,
    /// The host (`CU_DEVICE_CPU`).
    Host,
}

/// The `cuMemAdvise` calls for a set of advice flags.
pub(crate) fn advice(a: UsmAdvice) -> Vec<(sys::CUmem_advise, AdviseTarget)> {
    use sys::CUmem_advise as M;
    let mut out = Vec::new();
    if a.contains(UsmAdvice::READ_MOSTLY) {
        out.push((M::CU_MEM_ADVISE_SET_READ_MOSTLY, AdviseTarget::Device));
    }
    if a.contains(UsmAdvice::PREFER_DEVICE) {
        out.push((M::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, AdviseTarget::Device));
    }
    if a.contains(UsmAdvice::PREFER_HOST) {
        out.push((M::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, AdviseTarget::Host));
    }
    if a.contains(UsmAdvice::ACCESSED_BY_HOST) {
        out.push((M::CU_MEM_ADVISE_SET_ACCESSED_BY, AdviseTarget::Host));
    }
    out
}

/// One `cuMemsetD*` call of a fill: `count` elements of `width` bytes with
/// `value`, starting `offset` bytes in, `pitch` bytes apart (`pitch == 0`:
/// contiguous, the 1-D call; otherwise the 2-D call with a width of one
/// element and `count` rows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FillOp {
    /// Bytes from the fill's start.
    pub offset: usize,
    /// Element width: 1, 2 or 4 bytes.
    pub width: usize,
    /// The element's value (little-endian, as the pattern's bytes).
    pub value: u32,
    /// Distance between elements; 0 for contiguous.
    pub pitch: usize,
    /// Number of elements.
    pub count: usize,
}

/// Turns a fill of `size` bytes at address `addr` with `pattern` into
/// `cuMemsetD*` calls.
///
/// Patterns of 1, 2 and 4 bytes are one contiguous call; a pattern whose
/// 4-byte words (or bytes) are all equal is too. Any other pattern of `n`
/// bytes becomes `n/4` (or `n/2`, or `n`) strided 2-D memsets, one per
/// element of the pattern, with the pattern length as pitch. Wider elements
/// are used only where `addr` and the pattern length allow their alignment.
/// `size` must be a multiple of the pattern length (the dyn layer checks).
pub(crate) fn fill_plan(addr: u64, size: usize, pattern: &[u8]) -> Vec<FillOp> {
    let n = pattern.len();
    debug_assert!(n > 0 && size % n == 0);
    if pattern.iter().all(|&b| b == pattern[0]) {
        return vec![FillOp {
            offset: 0,
            width: 1,
            value: u32::from(pattern[0]),
            pitch: 0,
            count: size,
        }];
    }
    let width = [4usize, 2]
        .into_iter()
        .find(|&w| n % w == 0 && addr % w as u64 == 0)
        .unwrap_or(1);
    let elems: Vec<u32> = pattern
        .chunks_exact(width)
        .map(|c| c.iter().rev().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
        .collect();
    if elems.iter().all(|&e| e == elems[0]) {
        return vec![FillOp {
            offset: 0,
            width,
            value: elems[0],
            pitch: 0,
            count: size / width,
        }];
    }
    elems
        .iter()
        .enumerate()
        .map(|(j, &value)| FillOp {
            offset: j * width,
            width,
            value,
            pitch: n,
            count: size / n,
        })
        .collect()
}

/// Grid and block sizes for a launch: the range's work-group size when it
/// has one (which the dyn layer checked against the device's block and
/// grid limits, `DeviceLimits::max_work_item_sizes` / `max_work_groups`),
/// otherwise per dimension the largest divisor of the global size not above
/// a default (256 in 1-D, 16x16 in 2-D, 8x8x4 in 3-D) and the block limit,
/// so that grid × block covers exactly the global range (CUDA kernels see
/// no global size of their own). Only that choice is checked here: it fails
/// where the grid it needs exceeds the device's limit.
pub(crate) fn launch_dims(
    range: &NdRange,
    max_block: [usize; 3],
    max_grid: [usize; 3],
) -> Result<([u32; 3], [u32; 3])> {
    let d = range.dims as usize;
    let defaults: [usize; 3] = match d {
        1 => [256, 1, 1],
        2 => [16, 16, 1],
        _ => [8, 8, 4],
    };
    let (block, chosen) = match range.local {
        Some(l) => (l, false),
        None => {
            let mut b = [1usize; 3];
            for i in 0..3 {
                let cap = defaults[i].min(max_block[i]).max(1);
                b[i] = (1..=cap).rev().find(|c| range.global[i] % c == 0).unwrap_or(1);
            }
            (b, true)
        }
    };
    let mut grid = [1u32; 3];
    let mut blk = [1u32; 3];
    for dim in 0..3 {
        let g = range.global[dim] / block[dim];
        if chosen && g > max_grid[dim] {
            return Err(Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupCount,
                dim,
                size: g,
                max: max_grid[dim],
            });
        }
        // The driver's limits fit in 32 bits; this only keeps a conversion
        // from wrapping.
        let narrow =
            |v: usize| u32::try_from(v).map_err(|_| Error::invalid(format!("{v} in dimension {dim} exceeds 32 bits")));
        grid[dim] = narrow(g)?;
        blk[dim] = narrow(block[dim])?;
    }
    Ok((grid, blk))
}

/// What the driver answers about a device's limits
/// (`cuDeviceGetAttribute`; 0 where an attribute is not reported).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LimitAttrs {
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Threads per block, per dimension.
    pub max_block: [usize; 3],
    /// Threads per block in all.
    pub max_threads: usize,
    /// Threads per warp.
    pub warp: u32,
    /// Peak clock in kHz (`CU_DEVICE_ATTRIBUTE_CLOCK_RATE`, gone from newer drivers: 0).
    pub clock_khz: u32,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    /// Constant memory in bytes.
    pub const_bytes: u64,
    /// Managed memory the host and device may touch concurrently.
    pub concurrent_managed: bool,
}

/// NVIDIA's PCI vendor id.
pub(crate) const NVIDIA_VENDOR_ID: u32 = 0x10de;

/// Bytes of kernel parameters every CUDA version accepts (newer drivers
/// take more on Volta and later; 4 KiB is the floor).
pub(crate) const MAX_PARAMETER_BYTES: usize = 4096;

/// Global memory cache line of NVIDIA GPUs in bytes.
pub(crate) const CACHE_LINE_BYTES: u32 = 128;

/// Event timing resolution in ns (`cuEventElapsedTime`: about 0.5 µs).
pub(crate) const TIMER_RESOLUTION_NS: usize = 500;

/// A device's [`DeviceLimits`] from its attributes: work-item sizes, the
/// warp as the one sub-group size, caches, IEEE fp32/fp64 (fp16 from
/// compute capability 5.3), 64-bit atomics, the memory orders and scopes
/// CUDA's memory model gives from compute capability 7.0 (relaxed,
/// device-wide before), and USM access per allocation kind. Values the
/// driver does not report stay 0 ("not reported").
pub(crate) fn limits(a: &LimitAttrs) -> DeviceLimits {
    let ieee = FpCaps::DENORM
        | FpCaps::INF_NAN
        | FpCaps::ROUND_TO_NEAREST
        | FpCaps::ROUND_TO_ZERO
        | FpCaps::ROUND_TO_INF
        | FpCaps::FMA
        | FpCaps::CORRECTLY_ROUNDED_DIVIDE_SQRT;
    let volta = a.cc >= (7, 0);
    let orders = if volta {
        AtomicOrders::RELAXED
            | AtomicOrders::ACQUIRE
            | AtomicOrders::RELEASE
            | AtomicOrders::ACQ_REL
            | AtomicOrders::SEQ_CST
    } else {
        AtomicOrders::RELAXED
    };
    let mut scopes =
        AtomicScopes::WORK_ITEM | AtomicScopes::SUB_GROUP | AtomicScopes::WORK_GROUP | AtomicScopes::DEVICE;
    if a.cc >= (6, 0) {
        scopes |= AtomicScopes::SYSTEM;
    }
    let plain = UsmAccess::ACCESS | UsmAccess::ATOMIC_ACCESS;
    let shared = if a.concurrent_managed {
        plain | UsmAccess::CONCURRENT_ACCESS | UsmAccess::ATOMIC_CONCURRENT_ACCESS
    } else {
        plain
    };
    DeviceLimits {
        vendor_id: NVIDIA_VENDOR_ID,
        max_work_item_sizes: a.max_block,
        max_clock_frequency: a.clock_khz / 1000,
        address_bits: 64,
        global_mem_cache_size: a.l2_bytes,
        global_mem_cacheline_size: CACHE_LINE_BYTES,
        max_constant_buffer_size: a.const_bytes,
        max_parameter_size: MAX_PARAMETER_BYTES,
        fp16: if a.cc >= (5, 3) { ieee } else { FpCaps::empty() },
        fp32: ieee,
        fp64: ieee,
        atomic64: true,
        atomic_orders: orders,
        atomic_scopes: scopes,
        fence_orders: orders,
        fence_scopes: scopes,
        usm_access: [plain, plain, shared],
        sub_group_sizes: if a.warp > 0 { vec![a.warp] } else { Vec::new() },
        max_num_sub_groups: if a.warp > 0 {
            (a.max_threads / a.warp as usize) as u32
        } else {
            0
        },
        sub_group_independent_forward_progress: volta,
        profiling_timer_resolution: TIMER_RESOLUTION_NS,
        ..DeviceLimits::default()
    }
}

/// Profiling timestamps from CUDA event times.
///
/// CUDA events give only differences (`cuEventElapsedTime`, in ms as `f32`,
/// about 0.5 µs resolution). Each profiling queue records a reference event
/// when it is created and notes the host clock (`base_ns`) right after it
/// completed. A command's start is `base_ns` plus the time from the
/// reference to its start event; its end adds the (precise, short) start to
/// end time. `queued` and `submit` are the host clock at the enqueue call.
/// The result is clamped so that `queued <= submit <= start <= end`.
pub(crate) fn profiling(base_ns: u64, queued_ns: u64, ref_to_start_ms: f32, start_to_end_ms: f32) -> ProfilingInfo {
    let ms_to_ns = |ms: f32| (f64::from(ms.max(0.0)) * 1e6).round() as u64;
    let start = (base_ns + ms_to_ns(ref_to_start_ms)).max(queued_ns);
    let end = start + ms_to_ns(start_to_end_ms);
    ProfilingInfo {
        queued: queued_ns,
        submit: queued_ns,
        start,
        end,
    }
}

/// The connection answer (the crate docs give the reasoning): the same
/// device is `Unified` (one primary context, one address space); two devices
/// of one context with peer access enabled from the destination to the
/// source are `Unified`; peer-capable devices otherwise are `Migratable`;
/// anything else is `None`.
pub(crate) fn connection(same_device: bool, peer_enabled_in_context: bool, peer_capable: bool) -> MemoryConnection {
    if same_device || peer_enabled_in_context {
        MemoryConnection::Unified
    } else if peer_capable {
        MemoryConnection::Migratable
    } else {
        MemoryConnection::None
    }
}

/// `12080` -> `"12.8"`, as `cuDriverGetVersion` and `nvrtcVersion` count.
pub(crate) fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(plan: &[FillOp], size: usize) -> Vec<u8> {
        let mut mem = vec![0xEEu8; size];
        for op in plan {
            let step = if op.pitch == 0 { op.width } else { op.pitch };
            for k in 0..op.count {
                let at = op.offset + k * step;
                mem[at..at + op.width].copy_from_slice(&op.value.to_le_bytes()[..op.width]);
            }
        }
        mem
    }

    #[test]
    fn fill_plans_reproduce_every_pattern() {
        for n in [1usize, 2, 3, 4, 6, 8, 12, 16, 24, 128] {
            let pattern: Vec<u8> = (0..n).map(|i| (i * 37 + 1) as u8).collect();
            for addr in [0u64, 1, 2, 4, 256] {
                let size = n * 7;
                let plan = fill_plan(addr, size, &pattern);
                let want: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
                assert_eq!(apply(&plan, size), want, "pattern {n} at {addr}");
                for op in &plan {
                    assert_eq!((addr + op.offset as u64) % op.width as u64, 0, "aligned elements");
                }
            }
        }
    }

    #[test]
    fn fill_plans_use_one_call_where_they_can() {
        assert_eq!(fill_plan(0, 64, &[5; 8]).len(), 1);
        let p = fill_plan(0, 64, &[1, 2, 3, 4, 1, 2, 3, 4]);
        assert_eq!(
            p,
            vec![FillOp {
                offset: 0,
                width: 4,
                value: 0x0403_0201,
                pitch: 0,
                count: 16
            }]
        );
        assert_eq!(fill_plan(0, 64, &[1, 2]).len(), 1);
        assert_eq!(fill_plan(1, 64, &[1, 2]).len(), 2, "odd address: byte-wide");
        assert_eq!(fill_plan(0, 128, &(0..16).collect::<Vec<u8>>()).len(), 4);
    }

    #[test]
    fn default_blocks_divide_the_global_range() {
        let big = [1024, 1024, 64];
        let grid = [i32::MAX as usize, 65535, 65535];
        let (g, b) = launch_dims(&NdRange::d1(1000), big, grid).unwrap();
        assert_eq!((g, b), ([4, 1, 1], [250, 1, 1]));
        let (g, b) = launch_dims(&NdRange::d2(48, 20), big, grid).unwrap();
        assert_eq!((g, b), ([3, 2, 1], [16, 10, 1]));
        let (g, b) = launch_dims(&NdRange::d3(8, 8, 8), big, grid).unwrap();
        assert_eq!((g, b), ([1, 1, 2], [8, 8, 4]));
        let (g, b) = launch_dims(&NdRange::d1(1009), big, grid).unwrap();
        assert_eq!((g, b), ([1009, 1, 1], [1, 1, 1]), "a prime falls back to blocks of one");
        let (g, b) = launch_dims(&NdRange::d1(64).with_local([32, 1, 1]), big, grid).unwrap();
        assert_eq!((g, b), ([2, 1, 1], [32, 1, 1]));
        assert_eq!(
            launch_dims(&NdRange::d2(16, 70000 * 16), big, grid),
            Err(Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupCount,
                dim: 1,
                size: 70000,
                max: 65535
            }),
            "the chosen blocks (16 x 16) need too many in y"
        );
        // Explicit blocks were checked by the dyn layer: not again here.
        let (g, b) = launch_dims(&NdRange::d2(16, 70000 * 16).with_local([16, 1, 1]), big, grid).unwrap();
        assert_eq!((g, b), ([1, 70000 * 16, 1], [16, 1, 1]));
    }

    #[test]
    fn profiling_is_ordered_and_scaled() {
        let p = profiling(1_000_000, 900_000, 0.5, 0.25);
        assert_eq!(p.start, 1_500_000);
        assert_eq!(p.end, 1_750_000);
        assert_eq!((p.queued, p.submit), (900_000, 900_000));
        let late = profiling(1_000_000, 2_000_000, 0.5, 0.0);
        assert!(late.queued <= late.submit && late.submit <= late.start && late.start <= late.end);
        assert_eq!(profiling(0, 0, -1.0, -1.0).end, 0);
    }

    #[test]
    fn errors_map_to_api_errors() {
        assert_eq!(error(CUresult::CUDA_ERROR_OUT_OF_MEMORY), Error::OutOfDeviceMemory);
        assert!(matches!(
            error(CUresult::CUDA_ERROR_INVALID_PTX),
            Error::ProgramBuild { .. }
        ));
        assert!(matches!(
            error(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
            Error::CommandFailed(_)
        ));
        assert!(matches!(
            error(CUresult::CUDA_ERROR_NOT_SUPPORTED),
            Error::Unsupported { .. }
        ));
        assert!(error(CUresult::CUDA_ERROR_INVALID_VALUE).is_invalid_input());
        match error(CUresult::CUDA_ERROR_NO_DEVICE) {
            Error::Backend { backend, code, message } => {
                assert_eq!((backend, code), (Backend::Cuda, 100));
                assert_eq!(message, "CUDA_ERROR_NO_DEVICE");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(check(CUresult::CUDA_SUCCESS).is_ok());
        assert!(matches!(
            nvrtc_error(nvrtcResult::NVRTC_ERROR_INVALID_OPTION),
            Error::ProgramBuild { .. }
        ));
    }

    #[test]
    fn limits_follow_the_attributes() {
        let h100 = LimitAttrs {
            cc: (9, 0),
            max_block: [1024, 1024, 64],
            max_threads: 1024,
            warp: 32,
            clock_khz: 1_980_000,
            l2_bytes: 50 << 20,
            const_bytes: 64 << 10,
            concurrent_managed: true,
        };
        let l = limits(&h100);
        assert_eq!(l.vendor_id, 0x10de);
        assert_eq!(l.max_work_item_sizes, [1024, 1024, 64]);
        assert_eq!(l.max_clock_frequency, 1980);
        assert_eq!((l.sub_group_sizes.as_slice(), l.max_num_sub_groups), (&[32][..], 32));
        assert!(l.sub_group_independent_forward_progress);
        assert!(l.atomic_orders.contains(AtomicOrders::SEQ_CST) && l.atomic_scopes.contains(AtomicScopes::SYSTEM));
        assert!(!l.fp16.is_empty() && !l.fp64.is_empty());
        assert!(l.usm_access[2].contains(UsmAccess::CONCURRENT_ACCESS));
        // An old device: relaxed device-scope atomics, no fp16, no
        // concurrent managed access; unreported attributes stay 0.
        let kepler = LimitAttrs {
            cc: (3, 5),
            concurrent_managed: false,
            clock_khz: 0,
            warp: 0,
            ..h100
        };
        let l = limits(&kepler);
        assert_eq!(l.atomic_orders, AtomicOrders::RELAXED);
        assert!(!l.atomic_scopes.contains(AtomicScopes::SYSTEM));
        assert!(l.fp16.is_empty());
        assert!(!l.usm_access[2].contains(UsmAccess::CONCURRENT_ACCESS));
        assert_eq!((l.max_clock_frequency, l.max_num_sub_groups), (0, 0));
        assert!(l.sub_group_sizes.is_empty());
    }

    #[test]
    fn connections() {
        use MemoryConnection as M;
        assert_eq!(connection(true, false, false), M::Unified, "same device, any contexts");
        assert_eq!(
            connection(false, true, true),
            M::Unified,
            "peers enabled in one context"
        );
        assert_eq!(
            connection(false, false, true),
            M::Migratable,
            "peer-capable, other context"
        );
        assert_eq!(connection(false, false, false), M::None, "not peers");
    }

    #[test]
    fn advice_and_versions() {
        use sys::CUmem_advise as M;
        assert!(advice(UsmAdvice::empty()).is_empty());
        assert_eq!(
            advice(UsmAdvice::READ_MOSTLY | UsmAdvice::PREFER_HOST),
            vec![
                (M::CU_MEM_ADVISE_SET_READ_MOSTLY, AdviseTarget::Device),
                (M::CU_MEM_ADVISE_SET_PREFERRED_LOCATION, AdviseTarget::Host)
            ]
        );
        assert_eq!(cuda_version(12080), "12.8");
        assert_eq!(cuda_version(13000), "13.0");
    }
}
