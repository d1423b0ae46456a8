//! Kernel launches from the kernel library, results checked element by element.

use ur_api::{ArgValue, NdRange, UsmKind};

use crate::{check_bytes, skip, DeviceEnv, TestResult};

cases!(
    "kernel",
    positive: [fill_index, add_one, vec_add, add_scalar_argument, chained_launches_across_queues, launch_with_work_group_size, usm_arguments, kernel_reused_with_new_args, empty_launch_runs_nothing],
    negative: []
);

const N: usize = 1024;

fn words(v: impl IntoIterator<Item = u32>) -> Vec<u8> {
    v.into_iter().flat_map(u32::to_ne_bytes).collect()
}

fn fill_index(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "fill_index")?;
    let b = env.buffer_with(ctx, &words((0..N as u32).map(|_| 0xdead_beef)))?;
    env.rt.complete(
        env.rt
            .enqueue_launch(q, k, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])?,
    )?;
    check_bytes("fill_index", &env.read_all(q, b, N * 4)?, &words(0..N as u32))
}

fn add_one(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_one")?;
    let init: Vec<u32> = (0..N as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let b = env.buffer_with(ctx, &words(init.iter().copied()))?;
    for _ in 0..3 {
        env.track(
            env.rt
                .enqueue_launch(q, k, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])?,
        );
    }
    check_bytes(
        "add_one x3",
        &env.read_all(q, b, N * 4)?,
        &words(init.iter().map(|x| x.wrapping_add(3))),
    )
}

fn vec_add(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "vec_add")?;
    let a: Vec<u32> = (0..N as u32).map(|i| i * 3).collect();
    let b: Vec<u32> = (0..N as u32).map(|i| 1_000_000 - i).collect();
    let ba = env.buffer_with(ctx, &words(a.iter().copied()))?;
    let bb = env.buffer_with(ctx, &words(b.iter().copied()))?;
    let bc = env.buffer(ctx, N * 4)?;
    let args = [ArgValue::Buffer(ba), ArgValue::Buffer(bb), ArgValue::Buffer(bc)];
    env.rt
        .complete(env.rt.enqueue_launch(q, k, &NdRange::d1(N), &args, &[])?)?;
    check_bytes(
        "vec_add",
        &env.read_all(q, bc, N * 4)?,
        &words(a.iter().zip(&b).map(|(x, y)| x + y)),
    )
}

fn add_scalar_argument(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_scalar")?;
    let b = env.buffer_with(ctx, &words(0..N as u32))?;
    let s = 0x1234_5678u32;
    env.rt.complete(env.rt.enqueue_launch(
        q,
        k,
        &NdRange::d1(N),
        &[ArgValue::Buffer(b), ArgValue::scalar(&s)],
        &[],
    )?)?;
    check_bytes(
        "add_scalar",
        &env.read_all(q, b, N * 4)?,
        &words((0..N as u32).map(|i| i + s)),
    )
}

fn chained_launches_across_queues(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let (q1, q2) = (env.queue(ctx)?, env.queue(ctx)?);
    let fill = env.kernel(ctx, "fill_index")?;
    let inc = env.kernel(ctx, "add_one")?;
    let b = env.buffer(ctx, N * 4)?;
    let e1 = env.track(
        env.rt
            .enqueue_launch(q1, fill, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])?,
    );
    let e2 = env.track(
        env.rt
            .enqueue_launch(q2, inc, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[e1])?,
    );
    let e3 = env.track(
        env.rt
            .enqueue_launch(q1, inc, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[e2])?,
    );
    env.rt.wait(&[e3])?;
    check_bytes(
        "fill then +1 twice",
        &env.read_all(q1, b, N * 4)?,
        &words((0..N as u32).map(|i| i + 2)),
    )
}

fn launch_with_work_group_size(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "fill_index")?;
    let local = [64usize, 32, 16, 1]
        .into_iter()
        .find(|l| *l <= env.info().max_work_group_size)
        .unwrap_or(1);
    let b = env.buffer(ctx, N * 4)?;
    let range = NdRange::d1(N).with_local([local, 1, 1]);
    env.rt
        .complete(env.rt.enqueue_launch(q, k, &range, &[ArgValue::Buffer(b)], &[])?)?;
    check_bytes(
        &format!("fill_index with work-groups of {local}"),
        &env.read_all(q, b, N * 4)?,
        &words(0..N as u32),
    )
}

fn usm_arguments(env: &DeviceEnv<'_>) -> TestResult {
    let kind = [UsmKind::Device, UsmKind::Shared, UsmKind::Host]
        .into_iter()
        .find(|k| env.info().usm.contains(crate::env::usm_cap(*k)))
        .ok_or_else(|| skip("device supports no USM allocations"))?;
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "vec_add")?;
    let (a, b, c) = (
        env.usm(ctx, kind, N * 4)?,
        env.usm(ctx, kind, N * 4)?,
        env.usm(ctx, kind, N * 4)?,
    );
    env.rt.usm_write(q, a, &words(0..N as u32))?;
    env.rt.usm_write(q, b, &words((0..N as u32).map(|i| i << 8)))?;
    env.rt.complete(env.rt.enqueue_launch(
        q,
        k,
        &NdRange::d1(N),
        &[ArgValue::Usm(a), ArgValue::Usm(b), ArgValue::Usm(c)],
        &[],
    )?)?;
    check_bytes(
        &format!("vec_add over {kind:?} USM"),
        &env.usm_read_all(q, c, N * 4)?,
        &words((0..N as u32).map(|i| i + (i << 8))),
    )
}

fn kernel_reused_with_new_args(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_scalar")?;
    let bufs: Vec<_> = (0..3)
        .map(|_| env.buffer_with(ctx, &words(0..N as u32)))
        .collect::<Result<_, _>>()?;
    for (i, b) in bufs.iter().enumerate() {
        let s = (i as u32 + 1) * 100;
        env.track(env.rt.enqueue_launch(
            q,
            k,
            &NdRange::d1(N),
            &[ArgValue::Buffer(*b), ArgValue::scalar(&s)],
            &[],
        )?);
    }
    for (i, b) in bufs.iter().enumerate() {
        let s = (i as u32 + 1) * 100;
        check_bytes(
            &format!("buffer {i}"),
            &env.read_all(q, *b, N * 4)?,
            &words((0..N as u32).map(|x| x + s)),
        )?;
    }
    Ok(())
}

/// A launch over an empty range (a global size of 0, as SYCL programs make
/// for empty arrays) succeeds, runs no work-item and still orders by its
/// wait list: `fill_index` on one queue, an empty `add_one` on a second
/// queue waiting for it, then a full `add_one` there sees the fill.
fn empty_launch_runs_nothing(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let (q1, q2) = (env.queue(ctx)?, env.queue(ctx)?);
    let fill = env.kernel(ctx, "fill_index")?;
    let inc = env.kernel(ctx, "add_one")?;
    let b = env.buffer(ctx, N * 4)?;
    let filled = env.track(
        env.rt
            .enqueue_launch(q1, fill, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])?,
    );
    let mut last = filled;
    for empty in [
        NdRange::d1(0),
        NdRange::d2(N, 0),
        NdRange::d3(4, 0, 2).with_local([1, 1, 1]),
    ] {
        last = env.track(
            env.rt
                .enqueue_launch(q2, inc, &empty, &[ArgValue::Buffer(b)], &[last])?,
        );
    }
    env.rt.complete(
        env.rt
            .enqueue_launch(q2, inc, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])?,
    )?;
    check_bytes(
        "fill, three empty +1 launches, one +1",
        &env.read_all(q2, b, N * 4)?,
        &words((0..N as u32).map(|i| i + 1)),
    )
}
