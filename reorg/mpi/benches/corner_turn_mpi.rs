//! Corner turn over MPI: 4096 x 4096 complex f32 (128 MiB), row blocks over
//! all ranks -> column blocks over all ranks, run with
//! `mpirun -n 4 --oversubscribe target/release/deps/corner_turn_mpi-*`,
//! which `cargo xtask bench` does (`cargo bench` alone runs one rank). Ours: `MpiReorg` (one `MPI_Alltoallw`
//! with derived datatypes). Baseline in the same run: hand-written pack
//! into per-peer blocks + `MPI_Alltoall` + unpack. Time = slowest rank,
//! interleaved repetitions, medians; rows as GiB/s of the whole matrix.
//!
//! Rows: `reorg.corner_turn_mpi_over_alltoall` (row-major on both sides)
//! and `reorg.corner_turn_mpi_transposed_over_alltoall` (column-major
//! destination; the baseline's unpack transposes). Without MPI (run
//! outside mpirun, one rank) it still runs. `UR_REORG_BENCH_REPS` (5),
//! `UR_REORG_BENCH_N` (4096).

use mpi::collective::SystemOperation;
use mpi::traits::*;
use ur_bench_row::{median, print_row};
use ur_reorg::*;
use ur_reorg_mpi::MpiReorg;

const GIB: f64 = (1u64 << 30) as f64;

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let universe = mpi::initialize().ok_or("MPI init failed")?;
    let world = universe.world();
    let (me, p) = (world.rank() as usize, world.size() as usize);
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (reps, n) = (env("UR_REORG_BENCH_REPS", 5), env("UR_REORG_BENCH_N", 4096));
    if n % p != 0 {
        return Err("N must be a multiple of the rank count".into());
    }
    let (r, c) = (n / p, n / p); // my rows (source), my columns (destination)
    let data = GlobalData::new(&[n, n], ElementType::ComplexF32)?;
    let rows = Distribution::new(
        data.clone(),
        ProcessGrid::contiguous(&[p, 1], 0)?,
        &[DimPartition::block(), DimPartition::whole()],
        LocalLayout::row_major(),
    )?;
    let src: Vec<u64> = (0..r * n).map(|i| (me * r * n + i) as u64).collect();
    let mut results = Vec::new();
    for (name, transposed) in [
        ("reorg.corner_turn_mpi_over_alltoall", false),
        ("reorg.corner_turn_mpi_transposed_over_alltoall", true),
    ] {
        let layout = if transposed {
            LocalLayout::column_major(2)
        } else {
            LocalLayout::row_major()
        };
        let cols = Distribution::new(
            data.clone(),
            ProcessGrid::contiguous(&[1, p], 0)?,
            &[DimPartition::whole(), DimPartition::block()],
            layout,
        )?;
        let plan = ReorgPlan::new(&rows, &cols)?;
        let ex = MpiReorg::new(&plan, &world)?;
        let mut dst = vec![0u64; n * c];
        let mut base_dst = vec![1u64; n * c];
        let mut send = vec![0u64; r * n];
        let mut recv = vec![0u64; r * n];
        let (mut ours, mut base) = (Vec::new(), Vec::new());
        for rep in 0..=reps {
            world.barrier();
            let t = mpi::time();
            ex.execute(bytemuck::cast_slice(&src), bytemuck::cast_slice_mut(&mut dst))?;
            let mine = mpi::time() - t;
            let mut t_ours = 0f64;
            world.all_reduce_into(&mine, &mut t_ours, SystemOperation::max());
            world.barrier();
            let t = mpi::time();
            // Pack: my rows, peer q's columns, row after row.
            for q in 0..p {
                for i in 0..r {
                    send[q * r * c + i * c..q * r * c + (i + 1) * c]
                        .copy_from_slice(&src[i * n + q * c..i * n + (q + 1) * c]);
                }
            }
            world.all_to_all_into(&send[..], &mut recv[..]);
            // Unpack: peer s's rows of my columns.
            for s in 0..p {
                let blk = &recv[s * r * c..(s + 1) * r * c];
                for i in 0..r {
                    let g = s * r + i;
                    if transposed {
                        for j in 0..c {
                            base_dst[j * n + g] = blk[i * c + j];
                        }
                    } else {
                        base_dst[g * c..(g + 1) * c].copy_from_slice(&blk[i * c..(i + 1) * c]);
                    }
                }
            }
            let mine = mpi::time() - t;
            let mut t_base = 0f64;
            world.all_reduce_into(&mine, &mut t_base, SystemOperation::max());
            if rep > 0 {
                let bytes = (n * n * 8) as f64;
                ours.push(bytes / t_ours / GIB);
                base.push(bytes / t_base / GIB);
            }
        }
        assert!(dst == base_dst, "{name}: MpiReorg and the baseline disagree");
        results.push((name, median(ours), median(base)));
    }
    if me == 0 {
        for (name, v, b) in results {
            print_row(name, v, "GiB/s", &format!("pack+MPI_Alltoall+unpack ({p} ranks)"), b);
        }
    }
    Ok(())
}
