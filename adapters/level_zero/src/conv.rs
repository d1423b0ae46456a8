//! Pure mappings between Level Zero's vocabulary and the API's: result
//! codes to [`Error`], the memory-connection rule, device limits (with the
//! fallbacks for drivers that report zero), rect copies to copy regions,
//! launch ranges to group counts, kernel timestamps to nanoseconds, and the
//! argument count of a SPIR-V entry point. Nothing here calls the driver,
//! so all of it is unit-tested without one.

use level_zero_sys::result::name;
use level_zero_sys::sys::{self, ze_result_t};
use level_zero_sys::ZeError;
use ur_api::{Backend, Error, MemoryConnection, NdRange, RectCopy, UsmAdvice};

/// A Level Zero failure as the API's [`Error`].
pub(crate) fn error(e: ZeError) -> Error {
    let r: ze_result_t = e.0;
    match r {
        sys::ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY => Error::OutOfDeviceMemory,
        sys::ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY => Error::OutOfHostMemory,
        sys::ZE_RESULT_ERROR_DEVICE_LOST | sys::ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET => Error::DeviceLost,
        sys::ZE_RESULT_ERROR_MODULE_BUILD_FAILURE
        | sys::ZE_RESULT_ERROR_MODULE_LINK_FAILURE
        | sys::ZE_RESULT_ERROR_INVALID_NATIVE_BINARY => Error::ProgramBuild {
            log: format!("the Level Zero driver could not build the module: {}", name(r)),
        },
        sys::ZE_RESULT_ERROR_INVALID_KERNEL_NAME => Error::KernelNotFound { name: String::new() },
        sys::ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX | sys::ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE => {
            Error::InvalidKernelArgs(name(r).to_owned())
        }
        sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
        | sys::ZE_RESULT_ERROR_UNSUPPORTED_VERSION
        | sys::ZE_RESULT_ERROR_UNSUPPORTED_SIZE
        | sys::ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT
        | sys::ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION => Error::unsupported(format!("{} on this device", name(r))),
        sys::ZE_RESULT_ERROR_INVALID_ARGUMENT
        | sys::ZE_RESULT_ERROR_INVALID_SIZE
        | sys::ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION
        | sys::ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION
        | sys::ZE_RESULT_ERROR_OVERLAPPING_REGIONS => {
            Error::invalid(format!("the Level Zero driver rejected an argument ({})", name(r)))
        }
        _ => Error::Backend {
            backend: Backend::LevelZero,
            code: i64::from(r),
            message: name(r).to_owned(),
        },
    }
}

/// What the memory-connection rule needs to know about two locations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Between {
    /// Both locations are of one driver.
    pub same_driver: bool,
    /// Both are of one context.
    pub same_context: bool,
    /// Both name one device.
    pub same_device: bool,
}

/// The connection from memory at `src` to use at `dst`. `peer` answers
/// `zeDeviceCanAccessPeer(dst, src)`; it is asked only for two devices of
/// one context.
///
/// - different drivers or contexts: `None` (a Level Zero allocation belongs
///   to its context; no other context may name it);
/// - one device: `Unified`;
/// - two devices of one context: `Unified` where the destination can
///   access the source's memory as a peer, else `Migratable` (a copy
///   engine moves it, `zeCommandListAppendMemoryCopy` across devices).
pub(crate) fn memory_connection(b: Between, peer: impl FnOnce() -> bool) -> MemoryConnection {
    if !b.same_driver || !b.same_context {
        MemoryConnection::None
    } else if b.same_device || peer() {
        MemoryConnection::Unified
    } else {
        MemoryConnection::Migratable
    }
}

/// Level Zero's allocation limit for drivers that report none: 4 GiB, the
/// largest allocation without the relaxed-limits extension.
pub(crate) const DEFAULT_MAX_ALLOC: u64 = 4 << 30;

/// The largest allocation and the global memory size to report: the
/// driver's values, or [`DEFAULT_MAX_ALLOC`] where it reports zero (the
/// null driver reports zero for every limit; an allocation limit of zero
/// would make every allocation invalid input).
pub(crate) fn memory_limits(max_alloc: u64, total: u64) -> (u64, u64) {
    let total = if total == 0 { DEFAULT_MAX_ALLOC } else { total };
    let max_alloc = match max_alloc {
        0 => DEFAULT_MAX_ALLOC.min(total),
        m => m.min(total),
    };
    (total, max_alloc)
}

/// A limit the driver reported, or `fallback` where it reported zero.
pub(crate) fn or_default<T: PartialEq + Default>(reported: T, fallback: T) -> T {
    if reported == T::default() {
        fallback
    } else {
        reported
    }
}

/// Is `len` a fill pattern this queue group fills natively (a power of two
/// no longer than its limit)?
pub(crate) fn native_fill(len: usize, max_pattern: usize) -> bool {
    len.is_power_of_two() && len <= max_pattern
}

/// Level Zero advice for the API's. 1.4 has no "prefer system memory":
/// `PREFER_HOST` clears the device preference instead.
pub(crate) fn advices(advice: UsmAdvice) -> Vec<sys::ze_memory_advice_t> {
    let mut out = Vec::new();
    if advice.contains(UsmAdvice::READ_MOSTLY) {
        out.push(sys::ZE_MEMORY_ADVICE_SET_READ_MOSTLY);
    }
    if advice.contains(UsmAdvice::PREFER_DEVICE) {
        out.push(sys::ZE_MEMORY_ADVICE_SET_PREFERRED_LOCATION);
    }
    if advice.contains(UsmAdvice::PREFER_HOST) {
        out.push(sys::ZE_MEMORY_ADVICE_CLEAR_PREFERRED_LOCATION);
    }
    out
}

/// One side of a rect copy as Level Zero's copy region, plus its pitches.
pub(crate) fn copy_regions(rect: &RectCopy) -> [(sys::ze_copy_region_t, u32, u32); 2] {
    let [w, h, d] = rect.extent;
    let side = |s: &ur_api::RectSide| {
        (
            sys::ze_copy_region_t {
                originX: s.origin[0] as u32,
                originY: s.origin[1] as u32,
                originZ: s.origin[2] as u32,
                width: w as u32,
                height: h as u32,
                depth: d as u32,
            },
            s.row_pitch as u32,
            s.slice_pitch as u32,
        )
    };
    [side(&rect.src), side(&rect.dst)]
}

/// Can [`copy_regions`] describe this rect (every value fits the 32-bit
/// fields)? Otherwise the copy goes row by row.
pub(crate) fn fits_copy_region(rect: &RectCopy) -> bool {
    let fits = |v: usize| u32::try_from(v).is_ok();
    rect.extent.iter().all(|&v| fits(v))
        && [&rect.src, &rect.dst]
            .iter()
            .all(|s| s.origin.iter().all(|&v| fits(v)) && fits(s.row_pitch) && fits(s.slice_pitch))
}

/// The work-group size and group counts of a launch. A work-group size the
/// range names divides the global size (the dyn layer checks it, with the
/// device's work-group limit). `suggested` is the driver's choice when the
/// range names none: a zero (the null driver's answer, or a failed call),
/// or a size that does not divide the global one, counts as 1. Refuses
/// group counts past Level Zero's 32 bits.
pub(crate) fn launch_shape(range: &NdRange, suggested: [u32; 3]) -> Result<([u32; 3], [u32; 3]), Error> {
    let local: [usize; 3] = match range.local {
        Some(l) => l,
        None => std::array::from_fn(|i| {
            let s = (suggested[i] as usize).max(1);
            if range.global[i] % s == 0 {
                s
            } else {
                1
            }
        }),
    };
    let mut groups = [1u32; 3];
    let mut size = [1u32; 3];
    for i in 0..3 {
        let too_big = |what: &str, n: usize| {
            Error::invalid(format!(
                "dimension {i}: {n} {what} do not fit Level Zero's 32-bit launch sizes"
            ))
        };
        size[i] = u32::try_from(local[i]).map_err(|_| too_big("work-items per group", local[i]))?;
        let count = range.global[i] / local[i];
        groups[i] = u32::try_from(count).map_err(|_| too_big("work-groups", count))?;
    }
    Ok((size, groups))
}

/// Device timestamp ticks as nanoseconds. `resolution` is
/// `ze_device_properties_t::timerResolution`: nanoseconds per tick for
/// `ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES` (what this adapter asks for); 0 (the
/// null driver) counts as 1.
pub(crate) fn ticks_to_ns(ticks: u64, resolution: u64, valid_bits: u32) -> u64 {
    let masked = if valid_bits == 0 || valid_bits >= 64 {
        ticks
    } else {
        ticks & ((1u64 << valid_bits) - 1)
    };
    masked.saturating_mul(resolution.max(1))
}

/// The number of parameters of the SPIR-V entry point `name`, or `None`
/// when the module is not SPIR-V or has no such entry point.
pub(crate) fn spirv_arg_count(module: &[u8], name: &str) -> Option<usize> {
    const MAGIC: u32 = 0x0723_0203;
    const OP_ENTRY_POINT: u32 = 15;
    const OP_FUNCTION: u32 = 54;
    const OP_FUNCTION_PARAMETER: u32 = 55;
    if module.len() % 4 != 0 || module.len() < 20 {
        return None;
    }
    let mut words: Vec<u32> = module
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words[0] == MAGIC.swap_bytes() {
        words.iter_mut().for_each(|w| *w = w.swap_bytes());
    } else if words[0] != MAGIC {
        return None;
    }
    let mut target = None;
    let mut current = None;
    let mut params = 0usize;
    let mut i = 5;
    while i < words.len() {
        let (count, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if count == 0 || i + count > words.len() {
            return None;
        }
        let ins = &words[i..i + count];
        match op {
            OP_ENTRY_POINT if count >= 4 => {
                let bytes: Vec<u8> = ins[3..].iter().flat_map(|w| w.to_le_bytes()).collect();
                let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
                if &bytes[..end] == name.as_bytes() {
                    target = Some(ins[2]);
                }
            }
            OP_FUNCTION if count >= 3 => {
                if current.is_some() && current == target {
                    return Some(params);
                }
                current = Some(ins[2]);
                params = 0;
            }
            OP_FUNCTION_PARAMETER => params += 1,
            _ => {}
        }
        i += count;
    }
    (current.is_some() && current == target).then_some(params)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ur_api::RectSide;

    const ONE_CTX: Between = Between {
        same_driver: true,
        same_context: true,
        same_device: false,
    };

    #[test]
    fn connection_same_device_is_unified_without_asking_peers() {
        let b = Between {
            same_device: true,
            ..ONE_CTX
        };
        assert_eq!(
            memory_connection(b, || panic!("no peer query for one device")),
            MemoryConnection::Unified
        );
    }

    #[test]
    fn connection_peers_in_one_context() {
        assert_eq!(memory_connection(ONE_CTX, || true), MemoryConnection::Unified);
        assert_eq!(memory_connection(ONE_CTX, || false), MemoryConnection::Migratable);
    }

    #[test]
    fn connection_other_context_or_driver_is_none() {
        for b in [
            Between {
                same_context: false,
                ..ONE_CTX
            },
            Between {
                same_context: false,
                same_device: true,
                ..ONE_CTX
            },
            Between {
                same_driver: false,
                same_context: false,
                same_device: false,
            },
        ] {
            assert_eq!(
                memory_connection(b, || panic!("no peer query across contexts")),
                MemoryConnection::None,
                "{b:?}"
            );
        }
    }

    #[test]
    fn result_codes_map_to_errors() {
        assert_eq!(
            error(ZeError(sys::ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)),
            Error::OutOfDeviceMemory
        );
        assert_eq!(
            error(ZeError(sys::ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)),
            Error::OutOfHostMemory
        );
        assert_eq!(error(ZeError(sys::ZE_RESULT_ERROR_DEVICE_LOST)), Error::DeviceLost);
        assert!(matches!(
            error(ZeError(sys::ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)),
            Error::ProgramBuild { .. }
        ));
        assert!(matches!(
            error(ZeError(sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)),
            Error::Unsupported { .. }
        ));
        assert!(error(ZeError(sys::ZE_RESULT_ERROR_INVALID_SIZE)).is_invalid_input());
        match error(ZeError(sys::ZE_RESULT_ERROR_UNINITIALIZED)) {
            Error::Backend { backend, code, message } => {
                assert_eq!(backend, Backend::LevelZero);
                assert_eq!(code, 0x7800_0001);
                assert_eq!(message, "ZE_RESULT_ERROR_UNINITIALIZED");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zero_limits_fall_back() {
        assert_eq!(memory_limits(0, 0), (DEFAULT_MAX_ALLOC, DEFAULT_MAX_ALLOC));
        assert_eq!(memory_limits(1 << 20, 8 << 30), (8 << 30, 1 << 20));
        assert_eq!(memory_limits(0, 1 << 30), (1 << 30, 1 << 30));
        assert_eq!(memory_limits(16 << 30, 8 << 30), (8 << 30, 8 << 30));
        assert_eq!(or_default(0u32, 256), 256);
        assert_eq!(or_default(64u32, 256), 64);
    }

    #[test]
    fn fills_native_only_for_powers_of_two_within_the_limit() {
        assert!(native_fill(4, 128));
        assert!(!native_fill(3, 128));
        assert!(!native_fill(128, 64));
    }

    #[test]
    fn rect_regions_and_fallback() {
        let rect = RectCopy {
            src: RectSide::new([4, 1, 0], 16, 64),
            dst: RectSide::new([0, 0, 1], 8, 32),
            extent: [8, 2, 1],
        };
        let [(s, sp, ss), (d, dp, ds)] = copy_regions(&rect);
        assert_eq!(
            (s.originX, s.originY, s.originZ, s.width, s.height, s.depth),
            (4, 1, 0, 8, 2, 1)
        );
        assert_eq!((sp, ss, dp, ds), (16, 64, 8, 32));
        assert_eq!(d.originZ, 1);
        assert!(fits_copy_region(&rect));
        let big = RectCopy {
            extent: [1 << 33, 1, 1],
            ..rect
        };
        assert!(!fits_copy_region(&big));
    }

    #[test]
    fn launch_shapes() {
        let r = NdRange::d2(64, 4).with_local([16, 2, 1]);
        assert_eq!(launch_shape(&r, [0; 3]), Ok(([16, 2, 1], [4, 2, 1])));
        assert_eq!(launch_shape(&NdRange::d1(10), [0, 0, 0]), Ok(([1, 1, 1], [10, 1, 1])));
        assert_eq!(launch_shape(&NdRange::d1(64), [32, 1, 1]), Ok(([32, 1, 1], [2, 1, 1])));
        // A suggestion that does not divide the global size is not taken.
        assert_eq!(launch_shape(&NdRange::d1(10), [4, 1, 1]), Ok(([1, 1, 1], [10, 1, 1])));
        // More groups than 32 bits count: refused, not truncated.
        assert!(matches!(
            launch_shape(&NdRange::d1(1 << 33), [0; 3]),
            Err(Error::InvalidValue(_))
        ));
    }

    #[test]
    fn advice() {
        assert!(advices(UsmAdvice::empty()).is_empty());
        assert_eq!(
            advices(UsmAdvice::READ_MOSTLY | UsmAdvice::PREFER_DEVICE),
            [
                sys::ZE_MEMORY_ADVICE_SET_READ_MOSTLY,
                sys::ZE_MEMORY_ADVICE_SET_PREFERRED_LOCATION
            ]
        );
        assert_eq!(
            advices(UsmAdvice::PREFER_HOST),
            [sys::ZE_MEMORY_ADVICE_CLEAR_PREFERRED_LOCATION]
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(ticks_to_ns(10, 0, 0), 10);
        assert_eq!(ticks_to_ns(10, 83, 64), 830);
        assert_eq!(ticks_to_ns(0x1_0000_0005, 1, 32), 5);
    }

    fn word_string(s: &str) -> Vec<u32> {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b.chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    fn ins(op: u32, operands: &[u32]) -> Vec<u32> {
        let mut v = vec![((operands.len() as u32 + 1) << 16) | op];
        v.extend_from_slice(operands);
        v
    }

    #[test]
    fn spirv_entry_point_parameters() {
        let mut w = vec![0x0723_0203, 0x0001_0000, 0, 100, 0];
        let mut ep = vec![6, 10]; // Kernel, function %10
        ep.extend(word_string("add"));
        w.extend(ins(15, &ep));
        let mut ep2 = vec![6, 20];
        ep2.extend(word_string("none"));
        w.extend(ins(15, &ep2));
        w.extend(ins(54, &[1, 10, 0, 2])); // %10 = OpFunction
        w.extend(ins(55, &[3, 11]));
        w.extend(ins(55, &[3, 12]));
        w.extend(ins(55, &[4, 13]));
        w.extend(ins(56, &[])); // OpFunctionEnd
        w.extend(ins(54, &[1, 20, 0, 5]));
        w.extend(ins(56, &[]));
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(spirv_arg_count(&bytes, "add"), Some(3));
        assert_eq!(spirv_arg_count(&bytes, "none"), Some(0));
        assert_eq!(spirv_arg_count(&bytes, "missing"), None);
        assert_eq!(spirv_arg_count(b"not spir-v at all!!!", "add"), None);
        let swapped: Vec<u8> = w.iter().flat_map(|x| x.to_be_bytes()).collect();
        assert_eq!(spirv_arg_count(&swapped, "add"), Some(3));
    }
}
