//! Pure parameter checks of the dyn layer: no adapter, no tables, just input.

use super::ArgValue;
use crate::error::{Error, LaunchLimit, Result};
use crate::limits::DeviceLimits;
use crate::types::{DeviceCaps, DeviceInfo, KernelInfo, MapFlags, MemFlags, NdRange, RectCopy, RectSide};

/// The largest fill pattern, in bytes.
pub(crate) const MAX_PATTERN: usize = 128;

/// `[offset, offset + len)` must be non-empty and inside `size` bytes.
///
/// Inlined into every command; the error is built out of line.
#[inline]
pub(crate) fn range(what: &'static str, offset: usize, len: usize, size: usize) -> Result<()> {
    match offset.checked_add(len) {
        Some(end) if len != 0 && end <= size => Ok(()),
        _ => Err(range_error(what, offset, len, size)),
    }
}

#[cold]
#[inline(never)]
fn range_error(what: &'static str, offset: usize, len: usize, size: usize) -> Error {
    if len == 0 {
        return Error::InvalidSize { what, size: len };
    }
    Error::OutOfBounds {
        what,
        offset,
        len,
        size,
    }
}

/// An alignment: 0 (default) or a power of two no larger than `max` (the
/// largest allocation the device makes, rounded up to a power of two: no
/// allocation can honour more).
pub(crate) fn alignment(align: usize, max: u64) -> Result<()> {
    if align != 0 && !align.is_power_of_two() {
        return Err(Error::InvalidAlignment {
            align,
            why: "must be a power of two",
        });
    }
    if align as u64 > max.max(1).next_power_of_two() {
        return Err(Error::InvalidAlignment {
            align,
            why: "larger than the device's largest allocation",
        });
    }
    Ok(())
}

/// A host range for registration: not null, non-empty, not wrapping the
/// address space. Returns its end address.
pub(crate) fn host_range(ptr: *mut u8, len: usize) -> Result<usize> {
    if ptr.is_null() {
        return Err(Error::invalid("host range starts at a null pointer"));
    }
    if len == 0 {
        return Err(Error::InvalidSize {
            what: "host range",
            size: 0,
        });
    }
    (ptr as usize)
        .checked_add(len)
        .ok_or_else(|| Error::invalid(format!("host range {ptr:p}+{len} wraps the address space")))
}

/// A fill pattern over `[offset, offset + size)`.
///
/// Inlined into every fill; the error is built out of line.
#[inline]
pub(crate) fn pattern(pattern: &[u8], offset: usize, size: usize, any_length: bool) -> Result<()> {
    let n = pattern.len();
    // Powers of two (the usual patterns) are checked with a mask: two
    // integer divisions cost more than the rest of a command's checks.
    if n.is_power_of_two() && n <= MAX_PATTERN && (size | offset) & (n - 1) == 0 {
        return Ok(());
    }
    pattern_slow(n, offset, size, any_length)
}

#[cold]
#[inline(never)]
fn pattern_slow(n: usize, offset: usize, size: usize, any_length: bool) -> Result<()> {
    if n == 0 || n > MAX_PATTERN {
        return Err(Error::InvalidSize {
            what: "fill pattern (1..=128 bytes)",
            size: n,
        });
    }
    if !any_length && !n.is_power_of_two() {
        return Err(Error::unsupported(format!(
            "fill pattern of {n} bytes (only powers of two on this device)"
        )));
    }
    let misaligned = if n.is_power_of_two() {
        (size | offset) & (n - 1) != 0
    } else {
        size % n != 0 || offset % n != 0
    };
    if misaligned {
        return Err(Error::invalid(format!(
            "fill offset {offset} and size {size} must be multiples of the pattern length {n}"
        )));
    }
    Ok(())
}

/// Buffer flags and initial data agree.
pub(crate) fn mem_flags(flags: MemFlags, size: usize, init_len: Option<usize>) -> Result<()> {
    let access = flags & (MemFlags::READ_WRITE | MemFlags::READ_ONLY | MemFlags::WRITE_ONLY);
    if access.bits().count_ones() > 1 {
        return Err(Error::invalid("at most one of READ_WRITE, READ_ONLY, WRITE_ONLY"));
    }
    if flags.contains(MemFlags::USE_HOST_PTR) && flags.intersects(MemFlags::ALLOC_HOST_PTR | MemFlags::COPY_HOST_PTR) {
        return Err(Error::invalid("USE_HOST_PTR excludes ALLOC_HOST_PTR and COPY_HOST_PTR"));
    }
    let wants_init = flags.intersects(MemFlags::USE_HOST_PTR | MemFlags::COPY_HOST_PTR);
    match (wants_init, init_len) {
        (true, None) => Err(Error::invalid("USE_HOST_PTR / COPY_HOST_PTR need host memory")),
        (false, Some(_)) => Err(Error::invalid(
            "host memory given without USE_HOST_PTR or COPY_HOST_PTR",
        )),
        (true, Some(n)) if n != size => Err(Error::InvalidSize {
            what: "host memory for the buffer (must equal its size)",
            size: n,
        }),
        _ => Ok(()),
    }
}

/// Map flags are non-empty, known and WRITE_INVALIDATE stands alone.
pub(crate) fn map_flags(flags: MapFlags) -> Result<()> {
    // Found by the bad-input census: bits no flag names were ignored.
    if !(flags - MapFlags::all()).is_empty() {
        return Err(Error::invalid(format!("unknown map flag bits {:#x}", flags.bits())));
    }
    if flags.is_empty() {
        return Err(Error::invalid("map flags are empty"));
    }
    if flags.contains(MapFlags::WRITE_INVALIDATE) && flags.intersects(MapFlags::READ | MapFlags::WRITE) {
        return Err(Error::invalid("WRITE_INVALIDATE excludes READ and WRITE"));
    }
    Ok(())
}

fn rect_side(what: &'static str, side: &RectSide, extent: [usize; 3], size: usize) -> Result<RectSide> {
    let [w, h, _] = extent;
    let row_pitch = if side.row_pitch == 0 { w } else { side.row_pitch };
    if row_pitch < w {
        return Err(Error::invalid(format!(
            "{what} row pitch {row_pitch} is smaller than the width {w}"
        )));
    }
    let packed_slice = row_pitch
        .checked_mul(h)
        .ok_or_else(|| Error::invalid("rect pitch overflows"))?;
    let slice_pitch = if side.slice_pitch == 0 {
        packed_slice
    } else {
        side.slice_pitch
    };
    if slice_pitch < packed_slice {
        return Err(Error::invalid(format!(
            "{what} slice pitch {slice_pitch} is smaller than row pitch x height {packed_slice}"
        )));
    }
    let out = RectSide {
        origin: side.origin,
        row_pitch,
        slice_pitch,
    };
    let end = (|| {
        let start = out.origin[2]
            .checked_mul(slice_pitch)?
            .checked_add(out.origin[1].checked_mul(row_pitch)?)?
            .checked_add(out.origin[0])?;
        start
            .checked_add((extent[2] - 1).checked_mul(slice_pitch)?)?
            .checked_add((extent[1] - 1).checked_mul(row_pitch)?)?
            .checked_add(w)
            .map(|end| (start, end))
    })();
    match end {
        Some((_, end)) if end <= size => Ok(out),
        Some((start, end)) => Err(Error::OutOfBounds {
            what,
            offset: start,
            len: end - start,
            size,
        }),
        None => Err(Error::invalid("rect region overflows")),
    }
}

/// Validates a rect copy between objects of `src_size` and `dst_size` bytes
/// and returns it with explicit pitches.
pub(crate) fn rect(rect: &RectCopy, src_size: usize, dst_size: usize) -> Result<RectCopy> {
    if rect.extent.contains(&0) {
        return Err(Error::InvalidSize {
            what: "rect extent (every dimension must be non-zero)",
            size: 0,
        });
    }
    Ok(RectCopy {
        src: rect_side("rect source", &rect.src, rect.extent, src_size)?,
        dst: rect_side("rect destination", &rect.dst, rect.extent, dst_size)?,
        extent: rect.extent,
    })
}

/// A launch range is well formed for a device with this work-group limit:
/// 1..=3 dimensions, non-zero work-group sizes dividing the global sizes,
/// and no overflow anywhere (`offset + global` per dimension, the total
/// item count, the work-group size). A non-zero offset needs `offsets`.
///
/// A global size of 0 in a used dimension is allowed: the launch is empty
/// ([`NdRange::total`] is 0) and runs no work-item, as OpenCL 2.1 and
/// SYCL's empty ranges have it (dpnp launches such ranges for empty
/// arrays and expects success).
pub(crate) fn nd_range(range: &NdRange, max_work_group: usize, offsets: bool) -> Result<()> {
    let d = range.dims as usize;
    if !(1..=3).contains(&d) {
        return Err(Error::invalid(format!("launch dimensions must be 1..=3, got {d}")));
    }
    if range.global[d..].iter().any(|&g| g != 1) || range.offset[d..].iter().any(|&o| o != 0) {
        return Err(Error::invalid("unused launch dimensions must have size 1 and offset 0"));
    }
    if range.total().is_none() {
        return Err(Error::invalid("the launch's total work-item count overflows"));
    }
    for i in 0..d {
        if range.offset[i].checked_add(range.global[i]).is_none() {
            return Err(Error::invalid(format!(
                "global offset {} + size {} overflows in dimension {i}",
                range.offset[i], range.global[i]
            )));
        }
    }
    if !offsets && range.offset != [0; 3] {
        return Err(Error::unsupported("global offsets on launches of this device"));
    }
    if let Some(local) = range.local {
        if local[..d].contains(&0) || local[d..].iter().any(|&l| l != 1) {
            return Err(Error::invalid(
                "work-group sizes must be non-zero (1 in unused dimensions)",
            ));
        }
        if (0..d).any(|i| range.global[i] % local[i] != 0) {
            return Err(Error::invalid("global size is not a multiple of the work-group size"));
        }
        let total = local
            .iter()
            .try_fold(1usize, |acc, &l| acc.checked_mul(l))
            .ok_or_else(|| Error::invalid("the work-group size overflows"))?;
        if total > max_work_group {
            return Err(Error::invalid(format!(
                "work-group of {total} exceeds the device limit {max_work_group}"
            )));
        }
    }
    Ok(())
}

/// A launch with explicit work-group sizes against the device's
/// per-dimension limits (a limit of 0 is not reported and not checked):
/// the work-group size and the number of work groups in each dimension.
/// Call after [`nd_range`] (which makes the global size a multiple of the
/// work-group size).
pub(crate) fn launch_limits(range: &NdRange, limits: &DeviceLimits) -> Result<()> {
    let Some(local) = range.local else {
        return Ok(());
    };
    let dims = range.dims as usize;
    for (dim, (&size, &global)) in local.iter().zip(&range.global).enumerate().take(dims) {
        let max = limits.max_work_item_sizes[dim];
        if max != 0 && size > max {
            return Err(Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupSize,
                dim,
                size,
                max,
            });
        }
        // `nd_range` made the work-group size non-zero; an empty global
        // size counts no groups.
        let (groups, max) = (global.checked_div(size).unwrap_or(0), limits.max_work_groups[dim]);
        if max != 0 && groups > max {
            return Err(Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupCount,
                dim,
                size: groups,
                max,
            });
        }
    }
    Ok(())
}

/// Kernel arguments against what the adapter reported of the kernel
/// (count, sizes) and what the device allows: local-memory arguments only
/// with [`DeviceCaps::LOCAL_MEMORY_ARGS`], and their sum within
/// [`DeviceInfo::local_mem_size`] (when reported). Buffers and USM pointers
/// count as 8 bytes.
pub(crate) fn kernel_args(info: &KernelInfo, args: &[ArgValue<'_>], device: &DeviceInfo) -> Result<()> {
    if let Some(n) = info.arg_count {
        if args.len() != n {
            return Err(Error::InvalidKernelArgs(format!(
                "the kernel takes {n} arguments, {} given",
                args.len()
            )));
        }
    }
    let local = device.caps.contains(DeviceCaps::LOCAL_MEMORY_ARGS);
    let limit = device.local_mem_size;
    // Saturating: a sum past u64::MAX is past any limit too.
    let mut local_total = 0u64;
    for (i, a) in args.iter().enumerate() {
        let given = match *a {
            ArgValue::Scalar([]) => return Err(Error::InvalidKernelArgs(format!("argument {i}: empty scalar"))),
            ArgValue::Local(0) => {
                return Err(Error::InvalidKernelArgs(format!(
                    "argument {i}: zero-sized local memory"
                )))
            }
            ArgValue::Local(_) if !local => {
                return Err(Error::unsupported("local-memory kernel arguments on this device"))
            }
            ArgValue::Local(n) => {
                local_total = local_total.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
                if limit != 0 && local_total > limit {
                    return Err(Error::InvalidKernelArgs(format!(
                        "argument {i}: {n} bytes of local memory bring the launch to {local_total}, \
                         above the device's {limit}"
                    )));
                }
                continue;
            }
            ArgValue::Scalar(s) => s.len(),
            ArgValue::Buffer(_) | ArgValue::Usm(_) => 8,
        };
        if let Some(&want) = info.arg_sizes.as_ref().and_then(|s| s.get(i)) {
            if want != given {
                return Err(Error::InvalidKernelArgs(format!(
                    "argument {i} is {want} bytes, {given} given"
                )));
            }
        }
    }
    Ok(())
}

/// Two byte ranges of `len` bytes at `a` and `b` overlap (no overflow:
/// both ranges were checked to fit their objects).
pub(crate) fn overlaps(a: usize, b: usize, len: usize) -> bool {
    a < b.saturating_add(len) && b < a.saturating_add(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert!(range("b", 0, 4, 4).is_ok());
        assert_eq!(range("b", 0, 0, 4), Err(Error::InvalidSize { what: "b", size: 0 }));
        assert!(matches!(range("b", 1, 4, 4), Err(Error::OutOfBounds { .. })));
        assert!(matches!(range("b", usize::MAX, 2, 4), Err(Error::OutOfBounds { .. })));
    }

    #[test]
    fn patterns() {
        assert!(pattern(&[1, 2, 3], 0, 9, true).is_ok());
        assert!(matches!(
            pattern(&[1, 2, 3], 0, 9, false),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(pattern(&[1, 2], 1, 4, true), Err(Error::InvalidValue(_))));
        assert!(matches!(
            pattern(&[0; 129], 0, 129, true),
            Err(Error::InvalidSize { .. })
        ));
        assert!(matches!(pattern(&[], 0, 4, true), Err(Error::InvalidSize { .. })));
    }

    #[test]
    fn rect_pitches_default_and_bounds() {
        let r = RectCopy {
            extent: [4, 2, 1],
            ..Default::default()
        };
        let n = rect(&r, 8, 8).unwrap();
        assert_eq!((n.src.row_pitch, n.src.slice_pitch), (4, 8));
        assert!(matches!(rect(&r, 7, 8), Err(Error::OutOfBounds { .. })));
        let bad = RectCopy {
            src: RectSide {
                row_pitch: 3,
                ..Default::default()
            },
            ..r
        };
        assert!(matches!(rect(&bad, 64, 64), Err(Error::InvalidValue(_))));
    }

    #[test]
    fn ranges_nd() {
        assert!(nd_range(&NdRange::d1(8), 64, true).is_ok());
        assert!(nd_range(&NdRange::d1(8).with_local([3, 1, 1]), 64, true).is_err());
        assert!(nd_range(
            &NdRange {
                dims: 4,
                ..NdRange::d1(1)
            },
            64,
            true
        )
        .is_err());
        // Empty: no work-item, with or without work-groups.
        assert!(nd_range(&NdRange::d2(8, 0), 64, true).is_ok());
        assert!(nd_range(&NdRange::d1(0).with_local([1, 1, 1]), 64, true).is_ok());
        assert!(nd_range(&NdRange::d3(1 << 32, 1 << 32, 0), 64, true).is_ok());
        // Still refused when empty: a zero work-group size, unused
        // dimensions not 1.
        assert!(nd_range(&NdRange::d1(0).with_local([0, 1, 1]), 64, true).is_err());
        let unused = NdRange {
            global: [0, 0, 1],
            ..NdRange::d1(0)
        };
        assert!(nd_range(&unused, 64, true).is_err());
    }

    /// Regressions: these panicked or wrapped to small numbers before.
    #[test]
    fn ranges_nd_never_overflow() {
        let big = 1usize << 32;
        let local = NdRange::d2(big, big).with_local([big, big, 1]);
        assert!(matches!(nd_range(&local, 1024, true), Err(Error::InvalidValue(_))));
        let offset = NdRange {
            offset: [usize::MAX, 0, 0],
            ..NdRange::d1(2)
        };
        assert!(matches!(nd_range(&offset, 1024, true), Err(Error::InvalidValue(_))));
        let total = NdRange::d3(big, big, big);
        assert!(matches!(nd_range(&total, 1024, true), Err(Error::InvalidValue(_))));
        let shifted = NdRange {
            offset: [4, 0, 0],
            ..NdRange::d1(2)
        };
        assert!(matches!(
            nd_range(&shifted, 1024, false),
            Err(Error::Unsupported { .. })
        ));
        assert!(nd_range(&shifted, 1024, true).is_ok());
    }

    #[test]
    fn launch_limits_per_dimension() {
        let limits = DeviceLimits {
            max_work_item_sizes: [1024, 1024, 64],
            max_work_groups: [usize::MAX, 65535, 65535],
            ..DeviceLimits::default()
        };
        let ok = NdRange::d3(64, 65535 * 4, 64).with_local([64, 4, 64]);
        assert_eq!(launch_limits(&ok, &limits), Ok(()));
        let block = NdRange::d3(128, 1, 128).with_local([1, 1, 128]);
        assert_eq!(
            launch_limits(&block, &limits),
            Err(Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupSize,
                dim: 2,
                size: 128,
                max: 64
            })
        );
        let grid = NdRange::d2(16, 65536 * 2).with_local([16, 2, 1]);
        let e = launch_limits(&grid, &limits).unwrap_err();
        assert_eq!(
            e,
            Error::LaunchLimit {
                limit: LaunchLimit::WorkGroupCount,
                dim: 1,
                size: 65536,
                max: 65535
            }
        );
        assert!(e.is_invalid_input());
        assert_eq!(
            e.to_string(),
            "work-group count 65536 in dimension 1 exceeds the device limit 65535"
        );
        // Without explicit work groups the adapter chooses (and answers for) them.
        assert_eq!(launch_limits(&NdRange::d2(16, 65536 * 2), &limits), Ok(()));
        // Not reported (0): not checked.
        assert_eq!(launch_limits(&grid, &DeviceLimits::default()), Ok(()));
        // Unused dimensions are 1 and not checked against a zero limit.
        let one_d = DeviceLimits {
            max_work_item_sizes: [256, 0, 0],
            max_work_groups: [4, 0, 0],
            ..DeviceLimits::default()
        };
        assert_eq!(
            launch_limits(&NdRange::d1(1024).with_local([256, 1, 1]), &one_d),
            Ok(())
        );
        assert!(launch_limits(&NdRange::d1(1280).with_local([256, 1, 1]), &one_d).is_err());
    }

    /// A device with local-memory arguments and `local` bytes of it.
    fn dev(local: u64) -> DeviceInfo {
        DeviceInfo::new("d", crate::DeviceType::Cpu)
            .caps(DeviceCaps::KERNELS | DeviceCaps::LOCAL_MEMORY_ARGS)
            .local_mem(local)
    }

    #[test]
    fn kernel_arguments() {
        let two = KernelInfo::with_arg_count(2);
        let args = [ArgValue::Local(4), ArgValue::Scalar(&[1, 2, 3, 4])];
        assert!(kernel_args(&two, &args, &dev(64)).is_ok());
        let no_local = DeviceInfo::new("d", crate::DeviceType::Cpu).caps(DeviceCaps::KERNELS);
        assert!(matches!(
            kernel_args(&two, &args, &no_local),
            Err(Error::Unsupported { .. })
        ));
        assert!(matches!(
            kernel_args(&two, &args[..1], &dev(64)),
            Err(Error::InvalidKernelArgs(_))
        ));
        let sized = KernelInfo::with_arg_sizes(vec![8, 2]);
        let v = 7u32;
        let wrong = [ArgValue::Usm(crate::UsmPtr(64)), ArgValue::scalar(&v)];
        assert!(matches!(
            kernel_args(&sized, &wrong, &dev(64)),
            Err(Error::InvalidKernelArgs(_))
        ));
        assert!(kernel_args(&KernelInfo::default(), &[ArgValue::Scalar(&[])], &dev(64)).is_err());
    }

    #[test]
    fn local_memory_beyond_the_device_size_is_refused() {
        let any = KernelInfo::default();
        // Exactly the device's local memory fits, one byte more does not.
        assert!(kernel_args(&any, &[ArgValue::Local(64)], &dev(64)).is_ok());
        assert!(kernel_args(&any, &[ArgValue::Local(40), ArgValue::Local(24)], &dev(64)).is_ok());
        let over = kernel_args(&any, &[ArgValue::Local(65)], &dev(64));
        assert!(
            matches!(&over, Err(Error::InvalidKernelArgs(m)) if m.contains("argument 0")),
            "{over:?}"
        );
        // The sum counts: each argument fits alone, both do not.
        let sum = kernel_args(&any, &[ArgValue::Local(40), ArgValue::Local(25)], &dev(64));
        assert!(
            matches!(&sum, Err(Error::InvalidKernelArgs(m)) if m.contains("argument 1")),
            "{sum:?}"
        );
        // Sizes whose sum overflows are refused, not wrapped.
        let huge = [ArgValue::Local(usize::MAX), ArgValue::Local(usize::MAX)];
        assert!(matches!(
            kernel_args(&any, &huge, &dev(64)),
            Err(Error::InvalidKernelArgs(_))
        ));
        // A device that reports no size (0) bounds nothing.
        assert!(kernel_args(&any, &[ArgValue::Local(usize::MAX)], &dev(0)).is_ok());
    }

    #[test]
    fn unknown_map_flag_bits_are_refused() {
        assert!(map_flags(MapFlags::from_bits_retain(1 << 9)).is_err());
        assert!(map_flags(MapFlags::READ | MapFlags::from_bits_retain(1 << 9)).is_err());
        assert!(map_flags(MapFlags::READ | MapFlags::WRITE).is_ok());
    }

    #[test]
    fn alignments_and_host_ranges() {
        assert!(alignment(0, 1 << 20).is_ok());
        assert!(alignment(4096, 1 << 20).is_ok());
        assert!(matches!(alignment(3, 1 << 20), Err(Error::InvalidAlignment { .. })));
        assert!(matches!(
            alignment(1 << 63, 1 << 40),
            Err(Error::InvalidAlignment { .. })
        ));
        assert!(host_range(std::ptr::null_mut(), 4).is_err());
        let p = 16usize as *mut u8;
        assert!(matches!(host_range(p, 0), Err(Error::InvalidSize { .. })));
        assert!(host_range(p, usize::MAX).is_err());
        assert_eq!(host_range(p, 16), Ok(32));
    }
}
