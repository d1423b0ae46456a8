//! Local corner turn: 4096 x 4096 complex f32 (128 MiB), row blocks over 2
//! ranks (row-major) -> column blocks over 2 ranks (column-major, so each
//! destination column is contiguous: a real transpose), all ranks in one
//! process, through memory-manager buffer sets (host-current, so the
//! manager moves nothing and the plan's copies are what is timed).
//! Baseline: one `memcpy` (`copy_from_slice`) of the same 128 MiB, single
//! thread, destination pre-touched. Interleaved repetitions, medians.
//!
//! Rows: `reorg.corner_turn_local_over_memcpy` (the transposing corner
//! turn) and `reorg.corner_turn_local_same_layout_over_memcpy` (row-major
//! on both sides: contiguous runs only). `UR_REORG_BENCH_REPS` (default 5),
//! `UR_REORG_BENCH_N` (default 4096).

use std::sync::Arc;
use std::time::Instant;

use ur_memory_manager::{Access, MemoryManager};
use ur_reorg::*;

const GIB: f64 = (1u64 << 30) as f64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn row(name: &str, value: f64, baseline_name: &str, baseline: f64) {
    println!(
        "BENCH_ROW {{\"name\":\"{name}\",\"value\":{value:.4},\"unit\":\"GiB/s\",\"baseline_name\":\"{baseline_name}\",\"baseline_value\":{baseline:.4},\"ratio\":{:.4}}}",
        value / baseline
    );
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
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for rep in 0..=reps {
            let t = Instant::now();
            plan.execute_local(&src, 0, &dst, 0)?;
            let to_ = t.elapsed().as_secs_f64();
            let t = Instant::now();
            b.copy_from_slice(std::hint::black_box(&a));
            let tb = t.elapsed().as_secs_f64();
            std::hint::black_box(&b);
            if rep > 0 {
                ours.push(bytes / to_ / GIB);
                base.push(bytes / tb / GIB);
            }
        }
        // The result must be right.
        for r in 0..2 {
            let (bad, _) = dst.with_host(r, 0, Access::Read, |m| ur_reorg::model::verify(to, r, m, &value, 1))??;
            assert!(bad.is_empty(), "{name}: wrong data {bad:?}");
        }
        results.push((name, median(ours), median(base)));
        dst.release()?;
    }
    for (name, v, b) in results {
        row(name, v, "memcpy", b);
    }
    Ok(())
}
