//! Buffer-to-buffer copies: whole, at offsets, within a buffer, sub-buffers.

use ur_api::DeviceCaps;

use crate::{bytes, check_bytes, DeviceEnv, TestResult};

cases!(
    "copy",
    positive: [whole_buffer, at_offsets, within_one_buffer, between_sub_buffers, chained_without_waits, single_bytes_at_edges],
    negative: []
);

fn copy(
    env: &DeviceEnv<'_>,
    q: ur_api::QueueId,
    s: ur_api::BufferId,
    so: usize,
    d: ur_api::BufferId,
    dof: usize,
    n: usize,
) -> TestResult {
    env.rt.complete(env.rt.enqueue_copy(q, s, so, d, dof, n, &[])?)?;
    Ok(())
}

fn whole_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let data = bytes(65536 + 3, 60);
    let a = env.buffer_with(ctx, &data)?;
    let b = env.buffer_with(ctx, &bytes(data.len(), 61))?;
    copy(env, q, a, 0, b, 0, data.len())?;
    check_bytes("destination", &env.read_all(q, b, data.len())?, &data)?;
    check_bytes("source untouched", &env.read_all(q, a, data.len())?, &data)
}

fn at_offsets(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let src = bytes(1024, 62);
    let a = env.buffer_with(ctx, &src)?;
    for (so, dof, n) in [
        (0usize, 1usize, 100usize),
        (1, 0, 1023),
        (17, 501, 333),
        (1000, 3, 24),
        (512, 512, 512),
    ] {
        let init = bytes(1024, 63);
        let b = env.buffer_with(ctx, &init)?;
        copy(env, q, a, so, b, dof, n)?;
        let mut want = init;
        want[dof..dof + n].copy_from_slice(&src[so..so + n]);
        check_bytes(
            &format!("copy {so}->{dof} ({n} bytes)"),
            &env.read_all(q, b, 1024)?,
            &want,
        )?;
    }
    Ok(())
}

fn within_one_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let mut want = bytes(4096, 64);
    let a = env.buffer_with(ctx, &want)?;
    copy(env, q, a, 0, a, 2048, 2048)?;
    want.copy_within(0..2048, 2048);
    copy(env, q, a, 3000, a, 10, 1000)?;
    want.copy_within(3000..4000, 10);
    check_bytes("copies inside one buffer", &env.read_all(q, a, 4096)?, &want)
}

fn between_sub_buffers(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let (ctx, q) = env.setup()?;
    let al = env.info().sub_buffer_align.max(1);
    let size = 4 * al.max(256);
    let mut want = bytes(size, 65);
    let parent = env.buffer_with(ctx, &want)?;
    let half = size / 2;
    let lo = env.sub_buffer(parent, 0, half)?;
    let hi = env.sub_buffer(parent, half, half)?;
    copy(env, q, lo, 5, hi, 100, 77)?;
    want.copy_within(5..82, half + 100);
    check_bytes("parent after sub-buffer copy", &env.read_all(q, parent, size)?, &want)?;
    let other = env.buffer(ctx, half)?;
    copy(env, q, hi, 0, other, 0, half)?;
    check_bytes(
        "sub-buffer to plain buffer",
        &env.read_all(q, other, half)?,
        &want[half..],
    )?;
    copy(env, q, other, 0, lo, 0, half)?;
    want.copy_within(half.., 0);
    check_bytes("plain buffer to sub-buffer", &env.read_all(q, parent, size)?, &want)
}

fn chained_without_waits(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let n = 1 << 18;
    let data = bytes(n, 66);
    let bufs: Vec<_> = std::iter::once(env.buffer_with(ctx, &data))
        .chain((0..5).map(|_| env.buffer(ctx, n)))
        .collect::<Result<_, _>>()?;
    for w in bufs.windows(2) {
        env.track(env.rt.enqueue_copy(q, w[0], 0, w[1], 0, n, &[])?);
    }
    check_bytes("end of the chain", &env.read_all(q, bufs[5], n)?, &data)
}

fn single_bytes_at_edges(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let src = bytes(64, 67);
    let a = env.buffer_with(ctx, &src)?;
    let b = env.buffer_with(ctx, &[0u8; 64])?;
    copy(env, q, a, 63, b, 0, 1)?;
    copy(env, q, a, 0, b, 63, 1)?;
    let mut want = vec![0u8; 64];
    want[0] = src[63];
    want[63] = src[0];
    check_bytes("edge bytes", &env.read_all(q, b, 64)?, &want)
}
