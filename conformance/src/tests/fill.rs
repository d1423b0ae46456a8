//! Buffer fills: every pattern size 1..=128, offsets, sub-buffers.

use ur_api::{BufferId, DeviceCaps, QueueId};

use crate::{bytes, check_bytes, skip, DeviceEnv, TestResult};

cases!(
    "fill",
    positive: [power_of_two_patterns, any_length_patterns, divisors_of_one_length, at_offsets, sub_buffer_fill, overlapping_fills_in_order],
    negative: []
);

/// Fills `[off, off + len)` of `b` (initialised with seed 80) and checks
/// every byte of the buffer.
fn fill_and_check(
    env: &DeviceEnv<'_>,
    q: QueueId,
    b: BufferId,
    total: usize,
    off: usize,
    len: usize,
    pat: &[u8],
) -> TestResult {
    env.rt.write(q, b, 0, &bytes(total, 80))?;
    env.rt.complete(env.rt.enqueue_fill(q, b, off, len, pat, &[])?)?;
    let mut want = bytes(total, 80);
    for (i, x) in want[off..off + len].iter_mut().enumerate() {
        *x = pat[i % pat.len()];
    }
    check_bytes(
        &format!("fill of {len} bytes at {off} with a {}-byte pattern", pat.len()),
        &env.read_all(q, b, total)?,
        &want,
    )
}

fn sizes(pow2: bool) -> impl Iterator<Item = usize> {
    (1..=128usize).filter(move |n| n.is_power_of_two() == pow2)
}

fn power_of_two_patterns(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for n in sizes(true) {
        let total = n * 13;
        let b = env.buffer(ctx, total)?;
        fill_and_check(env, q, b, total, 0, total, &bytes(n, n as u32))?;
    }
    Ok(())
}

fn any_length_patterns(env: &DeviceEnv<'_>) -> TestResult {
    if !env.info().caps.contains(DeviceCaps::FILL_ANY_PATTERN) {
        return Err(skip(
            "patterns whose length is not a power of two need FILL_ANY_PATTERN",
        ));
    }
    let (ctx, q) = env.setup()?;
    for n in sizes(false) {
        let total = n * 7;
        let b = env.buffer(ctx, total)?;
        fill_and_check(env, q, b, total, 0, total, &bytes(n, n as u32))?;
    }
    Ok(())
}

/// One buffer of 5040 bytes (7!) filled with every pattern size in 1..=128
/// that divides it.
fn divisors_of_one_length(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let total = 5040;
    let b = env.buffer(ctx, total)?;
    let any = env.info().caps.contains(DeviceCaps::FILL_ANY_PATTERN);
    let mut skipped = Vec::new();
    for n in (1..=128usize).filter(|n| total % n == 0) {
        if !any && !n.is_power_of_two() {
            skipped.push(n);
            continue;
        }
        fill_and_check(env, q, b, total, 0, total, &bytes(n, 200 + n as u32))?;
    }
    if !skipped.is_empty() {
        tracing::info!(?skipped, "pattern sizes left out: the device lacks FILL_ANY_PATTERN");
    }
    Ok(())
}

fn at_offsets(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let total = 4096;
    let b = env.buffer(ctx, total)?;
    for (n, off, len) in [
        (1usize, 1usize, 1usize),
        (2, 2, 6),
        (4, 12, 400),
        (8, 4000, 96),
        (16, 16, 16),
        (64, 128, 3968),
        (128, 3968, 128),
    ] {
        fill_and_check(env, q, b, total, off, len, &bytes(n, 90 + n as u32))?;
    }
    if env.info().caps.contains(DeviceCaps::FILL_ANY_PATTERN) {
        for (n, off, len) in [(3usize, 3usize, 9usize), (12, 24, 1200), (127, 127, 127 * 30)] {
            fill_and_check(env, q, b, total, off, len, &bytes(n, 95 + n as u32))?;
        }
    }
    Ok(())
}

fn sub_buffer_fill(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let (ctx, q) = env.setup()?;
    let al = env.info().sub_buffer_align.max(1);
    let total = 4 * al.max(64);
    let parent = env.buffer_with(ctx, &bytes(total, 81))?;
    let sub = env.sub_buffer(parent, al, 2 * al)?;
    env.rt
        .complete(env.rt.enqueue_fill(q, sub, 0, 2 * al, &[0xee, 0x11], &[])?)?;
    let mut want = bytes(total, 81);
    for (i, x) in want[al..3 * al].iter_mut().enumerate() {
        *x = if i % 2 == 0 { 0xee } else { 0x11 };
    }
    check_bytes("parent after sub-buffer fill", &env.read_all(q, parent, total)?, &want)
}

fn overlapping_fills_in_order(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 1024)?;
    env.track(env.rt.enqueue_fill(q, b, 0, 1024, &[1, 2, 3, 4], &[])?);
    env.track(env.rt.enqueue_fill(q, b, 256, 512, &[9; 8], &[])?);
    env.track(env.rt.enqueue_fill(q, b, 512, 4, &[7], &[])?);
    let mut want: Vec<u8> = [1, 2, 3, 4].into_iter().cycle().take(1024).collect();
    want[256..768].fill(9);
    want[512..516].fill(7);
    check_bytes("fills applied in order", &env.read_all(q, b, 1024)?, &want)
}
