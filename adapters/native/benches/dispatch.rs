//! Cost of a small enqueue on the native adapter, through the dyn layer
//! (`ur_api::Runtime`: handle tables and checks) and through the static
//! `Adapter` trait directly.
//!
//! Each batch enqueues `OPS` 64-byte fills, releasing every event at once,
//! and finishes the queue at the end. Batches of both paths are interleaved
//! (alternating which goes first) and the medians of per-batch ns/op are
//! compared. Prints one `BENCH_ROW` line.
//!
//! For profiling one side alone (`perf stat`, callgrind), set
//! `UR_DISPATCH_ONLY=dyn` or `UR_DISPATCH_ONLY=static`: that side's batches
//! run by themselves and the bench prints their median ns/op, no row.
//!
//! Every thread (the submitting one and the adapters' queue workers) runs
//! on one CPU, the one the bench starts on. Left to the scheduler, each
//! path's worker either shares the submitting thread's CPU (it runs the
//! batch at `finish`, and a command costs its submission) or sits on
//! another one (every command wakes it across cores), and which one a run
//! gets decides the row: eight unpinned runs of two builds on a quiet
//! 2-core machine read 0.90 to 2.27 (static 181-393 ns, dyn 250-414), the
//! same builds pinned 1.31-1.42 (2026-11-28). `UR_DISPATCH_UNPINNED=1`
//! leaves the threads to the scheduler.

use std::time::Instant;

use ur_api::{adapter::prelude::*, BufferDesc, QueueProps, Runtime};
use ur_bench_row::{median, print_row};
use ur_native::NativeAdapter;

const OPS: usize = 500;
const ROUNDS: usize = 201;
const WARMUP: usize = 10;
const SIZE: usize = 64;

/// Restricts the calling thread, and so every thread it starts later, to
/// the CPU it runs on now; answers that CPU, or `None` where it could not.
fn pin_to_this_cpu() -> Option<usize> {
    // SAFETY: no arguments; answers the CPU or -1.
    let cpu = usize::try_from(unsafe { libc::sched_getcpu() }).ok()?;
    // SAFETY: an all-zero `cpu_set_t` is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is a CPU number the kernel gave, inside the set's bits.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a live `cpu_set_t` of
    // the size passed.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    (r == 0).then_some(cpu)
}

fn main() -> ur_api::Result<()> {
    // Before any adapter starts its worker threads (see the module docs).
    if std::env::var_os("UR_DISPATCH_UNPINNED").is_none() {
        match pin_to_this_cpu() {
            Some(cpu) => println!("dispatch.native: every thread on CPU {cpu} (UR_DISPATCH_UNPINNED=1: any CPU)"),
            None => println!("dispatch.native: threads not pinned (sched_setaffinity failed)"),
        }
    }
    // Static path.
    let a = NativeAdapter::new();
    let p = a.platforms()?.remove(0);
    let dev = a.devices(&p)?.remove(0);
    let ctx = a.create_context(&[&dev])?;
    let sq = a.create_queue(&ctx, &dev, &QueueProps::default())?;
    // SAFETY: a non-zero size within the device's limit, no host memory.
    let sbuf = unsafe { a.create_buffer(&ctx, &BufferDesc::new(SIZE * 64).on(&dev), None)? };
    let static_batch = || -> ur_api::Result<f64> {
        let t = Instant::now();
        for i in 0..OPS {
            // SAFETY: each fill lies inside the buffer, at the queue's location.
            let e = unsafe { a.enqueue_fill(&sq, &sbuf, (i % 64) * SIZE, SIZE, &[i as u8], &[])? };
            drop(e);
        }
        a.finish(&sq)?;
        Ok(t.elapsed().as_nanos() as f64 / OPS as f64)
    };

    // Dyn path.
    let mut rt = Runtime::new();
    rt.add(NativeAdapter::new())?;
    let ddev = rt.all_devices()[0];
    let dctx = rt.create_context(&[ddev])?;
    let dq = rt.create_queue(dctx, ddev, &QueueProps::default())?;
    let dbuf = rt.create_buffer(dctx, &BufferDesc::new(SIZE * 64), None)?;
    let dyn_batch = || -> ur_api::Result<f64> {
        let t = Instant::now();
        for i in 0..OPS {
            let e = rt.enqueue_fill(dq, dbuf, (i % 64) * SIZE, SIZE, &[i as u8], &[])?;
            rt.release_event(e)?;
        }
        rt.finish(dq)?;
        Ok(t.elapsed().as_nanos() as f64 / OPS as f64)
    };

    if let Ok(only) = std::env::var("UR_DISPATCH_ONLY") {
        let batch: &dyn Fn() -> ur_api::Result<f64> = match only.as_str() {
            "dyn" => &dyn_batch,
            "static" => &static_batch,
            other => {
                return Err(ur_api::Error::invalid(format!(
                    "UR_DISPATCH_ONLY={other}: dyn or static"
                )))
            }
        };
        let mut v = Vec::new();
        for round in 0..WARMUP + ROUNDS {
            let ns = batch()?;
            if round >= WARMUP {
                v.push(ns);
            }
        }
        println!(
            "{only} only: {:.1} ns/op (median of {ROUNDS} batches of {OPS})",
            median(v)
        );
        return Ok(());
    }

    let (mut stat, mut dynamic) = (Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        let (s, d) = if round % 2 == 0 {
            let s = static_batch()?;
            (s, dyn_batch()?)
        } else {
            let d = dyn_batch()?;
            (static_batch()?, d)
        };
        if round >= WARMUP {
            stat.push(s);
            dynamic.push(d);
        }
    }
    let (s, d) = (median(stat), median(dynamic));
    print_row("dispatch.native.dyn_over_static", d, "ns", "dispatch.native.static", s);
    Ok(())
}
