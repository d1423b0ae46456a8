//! Bad input to buffers, copies, rects, fills and maps: each asserts the
//! exact typed error.

use ur_api::{BufferDesc, DeviceCaps, Error, HostPtr, MapFlags, MemFlags, RectCopy, RectSide};

use crate::{bytes, expect_err, skip, DeviceEnv, TestResult};

cases!(
    "negative_memory",
    positive: [],
    negative: [
        buffer_size_zero,
        buffer_larger_than_max_alloc,
        use_host_ptr_without_memory,
        copy_host_ptr_wrong_length,
        host_memory_without_flag,
        conflicting_access_flags,
        buffer_hint_device_not_in_context,
        read_out_of_bounds,
        read_size_zero,
        write_overflowing_offset,
        copy_out_of_bounds,
        copy_size_zero,
        copy_overlapping_regions,
        sub_buffer_out_of_bounds,
        sub_buffer_of_sub_buffer,
        sub_buffer_misaligned,
        rect_zero_extent,
        rect_row_pitch_below_width,
        rect_slice_pitch_too_small,
        rect_out_of_bounds,
        rect_overflowing_origin,
        read_rect_host_too_small,
        copy_rect_overlapping,
        fill_empty_pattern,
        fill_pattern_too_long,
        fill_size_not_multiple,
        fill_offset_not_multiple,
        fill_out_of_bounds,
        fill_non_power_of_two_unsupported,
        map_empty_flags,
        map_invalidate_with_read,
        map_out_of_bounds,
        unmap_not_mapped,
        unmap_twice,
        unmap_on_wrong_buffer,
        host_register_empty,
    ],
);

/// A HostPtr over a slice, for calls that must fail before touching it.
fn host(v: &mut [u8]) -> HostPtr {
    // SAFETY: `v` outlives the call; failing calls never keep the pointer, and
    // succeeding ones are waited for by their callers.
    unsafe { HostPtr::new(v.as_mut_ptr(), v.len()) }
}

fn buffer_size_zero(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    expect_err!(env.buffer(ctx, 0), Error::InvalidSize { size: 0, .. });
    Ok(())
}

fn buffer_larger_than_max_alloc(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let Ok(size) = usize::try_from(env.info().max_alloc_size + 1) else {
        return Err(skip("max_alloc_size does not fit in usize"));
    };
    expect_err!(env.buffer(ctx, size), Error::InvalidSize { .. });
    Ok(())
}

fn use_host_ptr_without_memory(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let desc = BufferDesc::new(64).with_flags(MemFlags::USE_HOST_PTR);
    expect_err!(env.rt.create_buffer(ctx, &desc, None), Error::InvalidValue(_));
    let desc = BufferDesc::new(64).with_flags(MemFlags::COPY_HOST_PTR);
    expect_err!(env.rt.create_buffer(ctx, &desc, None), Error::InvalidValue(_));
    Ok(())
}

fn copy_host_ptr_wrong_length(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let mut data = bytes(63, 1);
    let desc = BufferDesc::new(64).with_flags(MemFlags::COPY_HOST_PTR);
    expect_err!(
        env.rt.create_buffer(ctx, &desc, Some(host(&mut data))),
        Error::InvalidSize { size: 63, .. }
    );
    Ok(())
}

fn host_memory_without_flag(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let mut data = bytes(64, 1);
    expect_err!(
        env.rt.create_buffer(ctx, &BufferDesc::new(64), Some(host(&mut data))),
        Error::InvalidValue(_)
    );
    let both = BufferDesc::new(64).with_flags(MemFlags::USE_HOST_PTR | MemFlags::COPY_HOST_PTR);
    expect_err!(
        env.rt.create_buffer(ctx, &both, Some(host(&mut data))),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn conflicting_access_flags(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let desc = BufferDesc::new(64).with_flags(MemFlags::READ_ONLY | MemFlags::WRITE_ONLY);
    expect_err!(env.rt.create_buffer(ctx, &desc, None), Error::InvalidValue(_));
    Ok(())
}

fn buffer_hint_device_not_in_context(env: &DeviceEnv<'_>) -> TestResult {
    let peer = env.other_device()?;
    let ctx = env.context()?;
    expect_err!(
        env.rt.create_buffer(ctx, &BufferDesc::new(64).on(peer), None),
        Error::DeviceNotInContext
    );
    Ok(())
}

fn read_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let mut out = vec![0u8; 16];
    expect_err!(
        env.rt.read(q, b, 49, &mut out),
        Error::OutOfBounds {
            offset: 49,
            len: 16,
            size: 64,
            ..
        }
    );
    let mut big = vec![0u8; 65];
    expect_err!(env.rt.read(q, b, 0, &mut big), Error::OutOfBounds { .. });
    Ok(())
}

fn read_size_zero(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(env.rt.read(q, b, 0, &mut []), Error::InvalidSize { size: 0, .. });
    expect_err!(env.rt.write(q, b, 0, &[]), Error::InvalidSize { size: 0, .. });
    Ok(())
}

fn write_overflowing_offset(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(env.rt.write(q, b, usize::MAX, &[1, 2]), Error::OutOfBounds { .. });
    expect_err!(
        env.rt.write(q, b, usize::MAX - 1, &[1, 2, 3]),
        Error::OutOfBounds { .. }
    );
    Ok(())
}

fn copy_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let a = env.buffer(ctx, 64)?;
    let b = env.buffer(ctx, 32)?;
    expect_err!(env.rt.enqueue_copy(q, a, 0, b, 0, 64, &[]), Error::OutOfBounds { .. });
    expect_err!(env.rt.enqueue_copy(q, a, 60, b, 0, 8, &[]), Error::OutOfBounds { .. });
    expect_err!(
        env.rt.enqueue_copy(q, a, usize::MAX, b, 0, 2, &[]),
        Error::OutOfBounds { .. }
    );
    Ok(())
}

fn copy_size_zero(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let a = env.buffer(ctx, 64)?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_copy(q, a, 0, b, 0, 0, &[]),
        Error::InvalidSize { size: 0, .. }
    );
    Ok(())
}

fn copy_overlapping_regions(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let a = env.buffer(ctx, 64)?;
    expect_err!(env.rt.enqueue_copy(q, a, 0, a, 16, 32, &[]), Error::InvalidValue(_));
    if env.info().caps.contains(DeviceCaps::SUB_BUFFERS) {
        let al = env.info().sub_buffer_align.max(1);
        let p = env.buffer(ctx, 4 * al)?;
        let s1 = env.sub_buffer(p, 0, 2 * al)?;
        let s2 = env.sub_buffer(p, al, 2 * al)?;
        // s1[al..2al) and s2[0..al) are the same bytes of the parent.
        expect_err!(env.rt.enqueue_copy(q, s1, al, s2, 0, al, &[]), Error::InvalidValue(_));
    }
    Ok(())
}

fn sub_buffer_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let ctx = env.context()?;
    let al = env.info().sub_buffer_align.max(1);
    let p = env.buffer(ctx, 2 * al)?;
    expect_err!(env.rt.create_sub_buffer(p, al, al + 1), Error::OutOfBounds { .. });
    expect_err!(env.rt.create_sub_buffer(p, 0, 0), Error::InvalidSize { size: 0, .. });
    Ok(())
}

fn sub_buffer_of_sub_buffer(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let ctx = env.context()?;
    let al = env.info().sub_buffer_align.max(1);
    let p = env.buffer(ctx, 4 * al)?;
    let s = env.sub_buffer(p, 0, 2 * al)?;
    expect_err!(env.rt.create_sub_buffer(s, 0, al), Error::InvalidValue(_));
    Ok(())
}

fn sub_buffer_misaligned(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let al = env.info().sub_buffer_align;
    if al <= 1 {
        return Err(skip("the device accepts sub-buffers at any offset"));
    }
    let ctx = env.context()?;
    let p = env.buffer(ctx, 4 * al)?;
    expect_err!(env.rt.create_sub_buffer(p, 1, al), Error::InvalidAlignment { .. });
    Ok(())
}

fn rect(src: RectSide, dst: RectSide, extent: [usize; 3]) -> RectCopy {
    RectCopy { src, dst, extent }
}

fn rect_zero_extent(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let (a, b) = (env.buffer(ctx, 256)?, env.buffer(ctx, 256)?);
    for extent in [[0, 4, 1], [4, 0, 1], [4, 4, 0]] {
        let r = rect(RectSide::default(), RectSide::default(), extent);
        expect_err!(
            env.rt.enqueue_copy_rect(q, a, b, &r, &[]),
            Error::InvalidSize { size: 0, .. }
        );
    }
    Ok(())
}

fn rect_row_pitch_below_width(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let (a, b) = (env.buffer(ctx, 256)?, env.buffer(ctx, 256)?);
    let r = rect(RectSide::new([0; 3], 7, 0), RectSide::default(), [8, 2, 1]);
    expect_err!(env.rt.enqueue_copy_rect(q, a, b, &r, &[]), Error::InvalidValue(_));
    let r = rect(RectSide::default(), RectSide::new([0; 3], 4, 0), [8, 2, 1]);
    expect_err!(env.rt.enqueue_copy_rect(q, a, b, &r, &[]), Error::InvalidValue(_));
    Ok(())
}

fn rect_slice_pitch_too_small(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let (a, b) = (env.buffer(ctx, 1024)?, env.buffer(ctx, 1024)?);
    let r = rect(RectSide::new([0; 3], 16, 16 * 4 - 1), RectSide::default(), [8, 4, 2]);
    expect_err!(env.rt.enqueue_copy_rect(q, a, b, &r, &[]), Error::InvalidValue(_));
    Ok(())
}

fn rect_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let (a, b) = (env.buffer(ctx, 64)?, env.buffer(ctx, 64)?);
    // 8x8 box at row 1 needs 72 bytes.
    let r = rect(RectSide::new([0, 1, 0], 8, 0), RectSide::default(), [8, 8, 1]);
    expect_err!(
        env.rt.enqueue_copy_rect(q, a, b, &r, &[]),
        Error::OutOfBounds { size: 64, .. }
    );
    let r = rect(RectSide::default(), RectSide::new([1, 0, 0], 8, 0), [8, 8, 1]);
    expect_err!(
        env.rt.enqueue_copy_rect(q, a, b, &r, &[]),
        Error::OutOfBounds { size: 64, .. }
    );
    Ok(())
}

fn rect_overflowing_origin(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let (a, b) = (env.buffer(ctx, 64)?, env.buffer(ctx, 64)?);
    let r = rect(
        RectSide::new([0, 0, usize::MAX / 2], 8, 16),
        RectSide::default(),
        [8, 2, 1],
    );
    expect_err!(env.rt.enqueue_copy_rect(q, a, b, &r, &[]), Error::InvalidValue(_));
    Ok(())
}

fn read_rect_host_too_small(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 256)?;
    let r = rect(RectSide::default(), RectSide::new([0; 3], 16, 0), [16, 4, 1]);
    let mut small = vec![0u8; 63];
    expect_err!(
        env.rt.read_rect(q, b, &r, &mut small),
        Error::OutOfBounds { size: 63, .. }
    );
    expect_err!(
        env.rt.write_rect(
            q,
            b,
            &rect(RectSide::new([0; 3], 16, 0), RectSide::default(), [16, 4, 1]),
            &small
        ),
        Error::OutOfBounds { size: 63, .. }
    );
    Ok(())
}

fn copy_rect_overlapping(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let a = env.buffer(ctx, 256)?;
    let r = rect(RectSide::new([0; 3], 16, 0), RectSide::new([4, 4, 0], 16, 0), [8, 8, 1]);
    expect_err!(env.rt.enqueue_copy_rect(q, a, a, &r, &[]), Error::InvalidValue(_));
    Ok(())
}

fn fill_empty_pattern(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 64, &[], &[]),
        Error::InvalidSize { size: 0, .. }
    );
    Ok(())
}

fn fill_pattern_too_long(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 256 * 129)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 256 * 129, &[1u8; 129], &[]),
        Error::InvalidSize { size: 129, .. }
    );
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 256 * 128, &[1u8; 256], &[]),
        Error::InvalidSize { size: 256, .. }
    );
    Ok(())
}

fn fill_size_not_multiple(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 62, &[1, 2, 3, 4], &[]),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn fill_offset_not_multiple(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 2, 8, &[1, 2, 3, 4], &[]),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn fill_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 32, 64, &[1, 2], &[]),
        Error::OutOfBounds { .. }
    );
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 0, &[1], &[]),
        Error::InvalidSize { size: 0, .. }
    );
    Ok(())
}

fn fill_non_power_of_two_unsupported(env: &DeviceEnv<'_>) -> TestResult {
    if env.info().caps.contains(DeviceCaps::FILL_ANY_PATTERN) {
        return Err(skip("the device accepts patterns of any length (FILL_ANY_PATTERN)"));
    }
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 60)?;
    expect_err!(
        env.rt.enqueue_fill(q, b, 0, 60, &[1, 2, 3], &[]),
        Error::Unsupported { .. }
    );
    Ok(())
}

fn map_empty_flags(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_map(q, b, MapFlags::empty(), 0, 64, &[]),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn map_invalidate_with_read(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let flags = MapFlags::WRITE_INVALIDATE | MapFlags::READ;
    expect_err!(env.rt.enqueue_map(q, b, flags, 0, 64, &[]), Error::InvalidValue(_));
    Ok(())
}

fn map_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    expect_err!(
        env.rt.enqueue_map(q, b, MapFlags::READ, 60, 8, &[]),
        Error::OutOfBounds { .. }
    );
    expect_err!(
        env.rt.enqueue_map(q, b, MapFlags::READ, 0, 0, &[]),
        Error::InvalidSize { size: 0, .. }
    );
    Ok(())
}

fn unmap_not_mapped(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let mut mem = vec![0u8; 64];
    expect_err!(env.rt.enqueue_unmap(q, b, host(&mut mem), &[]), Error::InvalidValue(_));
    Ok(())
}

fn unmap_twice(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let (e, p) = env.rt.enqueue_map(q, b, MapFlags::READ, 0, 64, &[])?;
    env.rt.complete(e)?;
    env.rt.complete(env.rt.enqueue_unmap(q, b, p, &[])?)?;
    expect_err!(env.rt.enqueue_unmap(q, b, p, &[]), Error::InvalidValue(_));
    Ok(())
}

fn unmap_on_wrong_buffer(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let a = env.buffer(ctx, 64)?;
    let b = env.buffer(ctx, 64)?;
    let (e, p) = env.rt.enqueue_map(q, a, MapFlags::READ, 0, 64, &[])?;
    env.rt.complete(e)?;
    let wrong = env.rt.enqueue_unmap(q, b, p, &[]);
    env.rt.complete(env.rt.enqueue_unmap(q, a, p, &[])?)?;
    expect_err!(wrong, Error::InvalidValue(_));
    Ok(())
}

fn host_register_empty(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let mut mem = [0u8; 0];
    expect_err!(
        env.rt.host_register(ctx, host(&mut mem)),
        Error::InvalidSize { size: 0, .. }
    );
    Ok(())
}
