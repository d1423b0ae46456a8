//! Local corner turn: 4096 x 4096 complex f32 (128 MiB), row blocks over 2
//! ranks (row-major) -> column blocks over 2 ranks (column-major, so each
//! destination column is contiguous: a real transpose), all ranks in one
//! process, through memory-manager buffer sets (host-current, so the
//! manager moves nothing and the plan's copies are what is timed).
//! Baseline: one `memcpy` (`copy_from_slice`) of the same 128 MiB, single
//! thread, destination pre-touched. Interleaved repetitions, medians.
//!
//! Rows: `reorg.corner_turn_local_over_memcpy` (the transposing corner
//! turn, `execute_local` on the calling thread, over 1-thread memcpy: the
//! issue's row), `reorg.corner_turn_local_same_layout_over_memcpy`
//! (row-major on both sides: contiguous runs only, over 1-thread memcpy)
//! and `reorg.corner_turn_local_2threads_over_memcpy_2threads` (the
//! transposing turn by `execute_host_threads(.., 2)`, one thread per
//! destination rank, over a 2-thread memcpy: two threads each copying
//! half of the same 128 MiB). `UR_REORG_BENCH_REPS` (default 5),
//! `UR_REORG_BENCH_N` (default 4096).

use std::sync::Arc;
use std::time::Instant;

use ur_bench_row::{median, print_row};
use ur_memory_manager::{Access, MemoryManager};
use ur_reorg::*;

const GIB: f64 = (1u64 << 30) as f64;

/// `b.copy_from_slice(a)` split in halves over two threads.
fn memcpy_2threads(a: &[u8], b: &mut [u8]) {
    let (a0, a1) = a.split_at(a.len() / 2);
    let (b0, b1) = b.split_at_mut(a.len() / 2);
    std::thread::scope(|s| {
        s.spawn(|| b1.copy_from_slice(a1));
        b0.copy_from_slice(a0);
    });
}

/// Runs the plan over the host memories of the two source and two
/// destination ranks on `threads` threads.
fn execute_2x2(plan: &ReorgPlan, src: &BufferSet, dst: &BufferSet, threads: usize) -> Result<()> {
    src.with_host(0, 0, Access::Read, |s0| {
        src.with_host(1, 0, Access::Read, |s1| {
            dst.with_host(0, 0, Access::ReadWrite, |d0| {
                dst.with_host(1, 0, Access::ReadWrite, |d1| {
                    plan.execute_host_threads(&[s0, s1], &mut [d0, d1], threads)
                })
            })
        })
    })????
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (reps, n) = (env("UR_REORG_BENCH_REPS", 5), env("UR_REORG_BENCH_N", 4096));
    let data = GlobalData::new(&[n, n], ElementType::ComplexF32)?;
    let rows = Distribution::new(
        data.clone(),
        ProcessGrid::contiguous(&[2, 1], 0)?,
        &[DimPartition::block(), DimPartition::whole()],
        LocalLayout::row_major(),
    )?;
    let cols = |layout| {
        Distribution::new(
            data.clone(),
            ProcessGrid::contiguous(&[1, 2], 0).unwrap(),
            &[DimPartition::whole(), DimPartition::block()],
            layout,
        )
    };
    let turned = cols(LocalLayout::column_major(2))?;
    let same = cols(LocalLayout::row_major())?;
    let bytes = (n * n * 8) as f64;
    let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[])?;
    let src = BufferSet::create(&mm, &rows, 1, None, |_| None)?;
    let shape = [n, n];
    let value = ur_reorg::model::pattern(&shape);
    for r in 0..2 {
        src.with_host(r, 0, Access::DiscardWrite, |m| {
            ur_reorg::model::fill_owned(&rows, r, m, &value)
        })??;
    }
    let mut results = Vec::new();
    for (name, to) in [
        ("reorg.corner_turn_local_over_memcpy", &turned),
        ("reorg.corner_turn_local_same_layout_over_memcpy", &same),
    ] {
        let plan = ReorgPlan::new(&rows, to)?;
        let dst = BufferSet::create(&mm, to, 1, None, |_| None)?;
        for r in 0..2 {
            dst.with_host(r, 0, Access::DiscardWrite, |m| m.fill(0))?;
        }
        let a = vec![7u8; n * n * 8];
        let mut b = vec![0u8; n * n * 8];
        let threaded = std::ptr::eq(to, &turned);
        let (mut ours, mut base, mut ours2, mut base2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let gibs = |t: Instant| bytes / t.elapsed().as_secs_f64() / GIB;
        for rep in 0..=reps {
            let t = Instant::now();
            plan.execute_local(&src, 0, &dst, 0)?;
            let o = gibs(t);
            let t = Instant::now();
            b.copy_from_slice(std::hint::black_box(&a));
            let m = gibs(t);
            std::hint::black_box(&b);
            if rep > 0 {
                ours.push(o);
                base.push(m);
            }
            if threaded {
                let t = Instant::now();
                execute_2x2(&plan, &src, &dst, 2)?;
                let o = gibs(t);
                let t = Instant::now();
                memcpy_2threads(std::hint::black_box(&a), &mut b);
                let m = gibs(t);
                std::hint::black_box(&b);
                if rep > 0 {
                    ours2.push(o);
                    base2.push(m);
                }
            }
        }
        // The result must be right.
        for r in 0..2 {
            let (bad, _) = dst.with_host(r, 0, Access::Read, |m| ur_reorg::model::verify(to, r, m, &value, 1))??;
            assert!(bad.is_empty(), "{name}: wrong data {bad:?}");
        }
        results.push((name, median(ours), "memcpy", median(base)));
        if threaded {
            results.push((
                "reorg.corner_turn_local_2threads_over_memcpy_2threads",
                median(ours2),
                "memcpy_2threads",
                median(base2),
            ));
        }
        dst.release()?;
    }
    for (name, v, bn, b) in results {
        print_row(name, v, "GiB/s", bn, b);
    }
    Ok(())
}
