//! Events: status, waits, wait lists across queues, profiling, barriers.

use ur_api::{DeviceCaps, Error, EventStatus, HandleKind, HostPtr, QueueProps};

use crate::{bytes, check_bytes, ensure, ensure_eq, expect_err, DeviceEnv, TestResult};

cases!(
    "event",
    positive: [
        complete_after_wait,
        wait_list_orders_across_queues,
        wait_on_many_events,
        profiling_timestamps_ordered,
        barrier_covers_earlier_work,
        barrier_with_wait_list,
        complete_releases_the_event,
    ],
    negative: []
);

fn complete_after_wait(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 4096)?;
    let e = env.track(env.rt.enqueue_fill(q, b, 0, 4096, &[7], &[])?);
    let s = env.rt.event_status(e)?;
    ensure!(
        matches!(
            s,
            EventStatus::Queued | EventStatus::Submitted | EventStatus::Running | EventStatus::Complete
        ),
        "fresh event status {s:?}"
    );
    env.rt.wait(&[e])?;
    ensure_eq!(env.rt.event_status(e)?, EventStatus::Complete);
    check_bytes("filled", &env.read_all(q, b, 4096)?, &[7u8; 4096])
}

fn wait_list_orders_across_queues(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let q1 = env.queue(ctx)?;
    let q2 = env.queue(ctx)?;
    let n = 1 << 20;
    let data = bytes(n, 50);
    let a = env.buffer(ctx, n)?;
    let b = env.buffer(ctx, n)?;
    // SAFETY: `data` outlives the write; the test waits for everything below.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), n) };
    let w = env.track(env.rt.enqueue_write(q1, a, 0, src, &[])?);
    let c = env.track(env.rt.enqueue_copy(q2, a, 0, b, 0, n, &[w])?);
    let mut out = vec![0u8; n];
    // SAFETY: `out` outlives the read, waited for on the next line.
    let dst = unsafe { HostPtr::new(out.as_mut_ptr(), n) };
    let r = env.track(env.rt.enqueue_read(q2, b, 0, dst, &[c])?);
    env.rt.wait(&[r])?;
    ensure_eq!(env.rt.event_status(w)?, EventStatus::Complete);
    ensure_eq!(env.rt.event_status(c)?, EventStatus::Complete);
    check_bytes("copied after the other queue's write", &out, &data)
}

fn wait_on_many_events(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let q2 = env.queue(ctx)?;
    let bufs: Vec<_> = (0..8).map(|_| env.buffer(ctx, 1024)).collect::<Result<_, _>>()?;
    let mut events = Vec::new();
    for (i, b) in bufs.iter().enumerate() {
        let queue = if i % 2 == 0 { q } else { q2 };
        events.push(env.track(env.rt.enqueue_fill(queue, *b, 0, 1024, &[i as u8 + 1], &[])?));
    }
    env.rt.wait(&events)?;
    for (i, e) in events.iter().enumerate() {
        ensure_eq!(env.rt.event_status(*e)?, EventStatus::Complete);
        check_bytes(
            &format!("buffer {i}"),
            &env.read_all(q, bufs[i], 1024)?,
            &[i as u8 + 1; 1024],
        )?;
    }
    Ok(())
}

fn profiling_timestamps_ordered(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::PROFILING)?;
    let ctx = env.context()?;
    let q = env.queue_with(ctx, &QueueProps { profiling: true })?;
    let b = env.buffer(ctx, 1 << 16)?;
    let c = env.buffer(ctx, 1 << 16)?;
    let e1 = env.track(env.rt.enqueue_fill(q, b, 0, 1 << 16, &[1, 2, 3, 4], &[])?);
    let e2 = env.track(env.rt.enqueue_copy(q, b, 0, c, 0, 1 << 16, &[])?);
    let e3 = env.track(env.rt.enqueue_barrier(q, &[])?);
    env.rt.wait(&[e1, e2, e3])?;
    let mut last_queued = 0;
    for e in [e1, e2] {
        let p = env.rt.event_profiling(e)?;
        ensure!(
            p.queued <= p.submit && p.submit <= p.start && p.start <= p.end,
            "timestamps out of order: {p:?}"
        );
        ensure!(p.queued >= last_queued, "queued times go backwards");
        last_queued = p.queued;
    }
    let (p1, p2) = (env.rt.event_profiling(e1)?, env.rt.event_profiling(e2)?);
    ensure!(
        p1.end <= p2.end,
        "in-order commands finished out of order: {p1:?} then {p2:?}"
    );
    Ok(())
}

fn barrier_covers_earlier_work(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let bufs: Vec<_> = (0..4).map(|_| env.buffer(ctx, 1 << 16)).collect::<Result<_, _>>()?;
    let fills: Vec<_> = bufs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            env.rt
                .enqueue_fill(q, *b, 0, 1 << 16, &[i as u8 + 9], &[])
                .map(|e| env.track(e))
        })
        .collect::<Result<_, _>>()?;
    let bar = env.track(env.rt.enqueue_barrier(q, &[])?);
    env.rt.wait(&[bar])?;
    for e in fills {
        ensure_eq!(env.rt.event_status(e)?, EventStatus::Complete);
    }
    check_bytes(
        "after barrier",
        &env.read_all(q, bufs[3], 1 << 16)?,
        &vec![12u8; 1 << 16],
    )
}

fn barrier_with_wait_list(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let q1 = env.queue(ctx)?;
    let q2 = env.queue(ctx)?;
    let b = env.buffer(ctx, 1 << 20)?;
    let f = env.track(env.rt.enqueue_fill(q1, b, 0, 1 << 20, &[0x5a, 0xa5], &[])?);
    let bar = env.track(env.rt.enqueue_barrier(q2, &[f])?);
    let mut out = vec![0u8; 1 << 20];
    // SAFETY: `out` outlives the read, waited for on the next line.
    let dst = unsafe { HostPtr::new(out.as_mut_ptr(), out.len()) };
    let r = env.track(env.rt.enqueue_read(q2, b, 0, dst, &[])?);
    env.rt.wait(&[r])?;
    ensure_eq!(env.rt.event_status(bar)?, EventStatus::Complete);
    ensure_eq!(env.rt.event_status(f)?, EventStatus::Complete);
    let want: Vec<u8> = [0x5a, 0xa5].into_iter().cycle().take(1 << 20).collect();
    check_bytes("read behind a barrier on another queue", &out, &want)
}

fn complete_releases_the_event(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 16)?;
    let e = env.rt.enqueue_fill(q, b, 0, 16, &[1], &[])?;
    env.rt.complete(e)?;
    expect_err!(
        env.rt.event_status(e),
        Error::InvalidHandle {
            kind: HandleKind::Event
        }
    );
    Ok(())
}
