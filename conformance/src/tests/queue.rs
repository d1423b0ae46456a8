//! Queues: creation, location, flush/finish, in-order execution.

use ur_api::{DeviceCaps, EventStatus, HostPtr, Location, QueueProps};

use crate::{bytes, check_bytes, ensure_eq, DeviceEnv, TestResult};

cases!(
    "queue",
    positive: [
        create_and_release,
        location_names_context_and_device,
        flush_then_finish_completes_work,
        empty_when_idle_and_after_finish,
        in_order_execution,
        two_queues_share_a_context,
        profiling_queue,
        objects_outlive_released_context,
    ],
    negative: []
);

fn create_and_release(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    for _ in 0..8 {
        let q = env.rt.create_queue(ctx, env.device(), &QueueProps::default())?;
        env.rt.finish(q)?;
        env.rt.release_queue(q)?;
    }
    Ok(())
}

fn location_names_context_and_device(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    ensure_eq!(env.rt.queue_location(q)?, Location::new(ctx, env.device()));
    Ok(())
}

fn flush_then_finish_completes_work(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let data = bytes(1 << 16, 40);
    let b = env.buffer(ctx, data.len())?;
    // SAFETY: `data` outlives the write, which completes at `finish` below.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    let e = env.track(env.rt.enqueue_write(q, b, 0, src, &[])?);
    env.rt.flush(q)?;
    env.rt.finish(q)?;
    ensure_eq!(env.rt.event_status(e)?, EventStatus::Complete);
    check_bytes("after finish", &env.read_all(q, b, data.len())?, &data)
}

/// `queue_empty` on the idle cases every adapter can reach (a command held
/// pending needs a backend's gate: the OpenCL adapter's tests use a user
/// event): a new queue, and one whose work was finished.
fn empty_when_idle_and_after_finish(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    ensure_eq!(env.rt.queue_empty(q)?, true);
    let data = bytes(1 << 16, 42);
    let b = env.buffer(ctx, data.len())?;
    // SAFETY: `data` outlives the write, which completes at `finish` below.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    env.track(env.rt.enqueue_write(q, b, 0, src, &[])?);
    env.rt.finish(q)?;
    ensure_eq!(env.rt.queue_empty(q)?, true);
    Ok(())
}

fn in_order_execution(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let n = 4096;
    let b = env.buffer(ctx, n)?;
    let c = env.buffer(ctx, n)?;
    let chunks: Vec<Vec<u8>> = (0..16).map(|i| bytes(n, 100 + i)).collect();
    // Each write overwrites the last; each copy snapshots into `c`; no wait lists.
    for chunk in &chunks {
        // SAFETY: `chunks` outlives every command; `finish` below waits for all.
        let src = unsafe { HostPtr::new(chunk.as_ptr().cast_mut(), n) };
        env.track(env.rt.enqueue_write(q, b, 0, src, &[])?);
        env.track(env.rt.enqueue_copy(q, b, 0, c, 0, n, &[])?);
    }
    let mut out = vec![0u8; n];
    // SAFETY: `out` outlives the read, which completes at `finish`.
    let dst = unsafe { HostPtr::new(out.as_mut_ptr(), n) };
    env.track(env.rt.enqueue_read(q, c, 0, dst, &[])?);
    env.rt.finish(q)?;
    check_bytes("last write wins in order", &out, &chunks[15])
}

fn two_queues_share_a_context(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let q1 = env.queue(ctx)?;
    let q2 = env.queue(ctx)?;
    let b = env.buffer(ctx, 999)?;
    env.rt.write(q1, b, 0, &bytes(999, 41))?;
    env.rt.finish(q1)?;
    check_bytes("read on the other queue", &env.read_all(q2, b, 999)?, &bytes(999, 41))
}

fn profiling_queue(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::PROFILING)?;
    let ctx = env.context()?;
    let q = env.queue_with(ctx, &QueueProps { profiling: true })?;
    let b = env.buffer(ctx, 64)?;
    env.rt.write(q, b, 0, &bytes(64, 42))?;
    check_bytes("profiling queue data", &env.read_all(q, b, 64)?, &bytes(64, 42))
}

fn objects_outlive_released_context(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.rt.create_context(&[env.device()])?;
    let q = env.queue(ctx)?;
    let b = env.buffer_with(ctx, &bytes(256, 43))?;
    env.rt.release_context(ctx)?;
    env.rt.write(q, b, 128, &bytes(128, 44))?;
    let mut want = bytes(256, 43);
    want[128..].copy_from_slice(&bytes(128, 44));
    check_bytes("buffer of a released context", &env.read_all(q, b, 256)?, &want)
}
