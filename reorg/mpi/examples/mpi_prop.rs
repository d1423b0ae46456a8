//! Randomised reorganisations over MPI, checked against the global model:
//! the MPI counterpart of `ur-reorg`'s property test, with fewer cases.
//! Every process draws the same cases from one seed: random distributions
//! A and B (1-3 dimensions, partitions, overlaps, edge policies, layouts,
//! element types, groups of 1 to all ranks at random offsets), A -> B
//! through `MpiReorg` over buffer sets, every destination element checked.
//!
//! `mpirun -n 4 --oversubscribe target/debug/examples/mpi_prop [cases]`

use std::sync::Arc;

use mpi::collective::SystemOperation;
use mpi::traits::*;
use ur_memory_manager::{Access, MemoryManager};
use ur_reorg::model::{fill_owned, pattern, verify};
use ur_reorg::*;
use ur_reorg_mpi::MpiReorg;

/// SplitMix64: the same sequence on every process.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn random_dist(rng: &mut Rng, data: &GlobalData, world: usize) -> ur_reorg::Result<Distribution> {
    let dims = data.shape().len();
    let mut grid = vec![1; dims];
    for d in 0..dims {
        grid[d] = 1 + rng.below(3);
        if grid.iter().product::<usize>() > world {
            grid[d] = 1;
        }
    }
    let size: usize = grid.iter().product();
    let first = rng.below(world - size + 1);
    let parts: Vec<DimPartition> = (0..dims)
        .map(|d| {
            let (n, p) = (data.shape()[d], grid[d]);
            let (part, b) = match rng.below(4) {
                0 => (Partition::Whole, n),
                1 => (Partition::Block, n.div_ceil(p)),
                2 => (Partition::Cyclic, 1),
                _ => {
                    let b = 1 + rng.below(4);
                    (Partition::BlockCyclic(b), b)
                }
            };
            let edge = [
                EdgePolicy::Toroidal,
                EdgePolicy::Zero,
                EdgePolicy::Replicate,
                EdgePolicy::Truncate,
            ][rng.below(4)];
            DimPartition::new(part).overlap(rng.below(3).min(b), rng.below(3).min(b), edge)
        })
        .collect();
    let mut order: Vec<usize> = (0..dims).collect();
    for i in (1..dims).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut layout = LocalLayout::row_major().offset(rng.below(5)).order(order);
    if rng.below(2) == 0 {
        layout = layout.strides(Strides::Factors((0..dims).map(|_| 1 + rng.below(2)).collect()));
    }
    Distribution::new(data.clone(), ProcessGrid::contiguous(&grid, first)?, &parts, layout)
}

fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    let universe = mpi::initialize().ok_or("MPI init failed")?;
    let world = universe.world();
    let (me, size) = (world.rank() as usize, world.size() as usize);
    let cases: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(60);
    let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[])?;
    let mut rng = Rng(0x5EED);
    let (mut checked, mut bad) = (0u64, 0u64);
    for case in 0..cases {
        let dims = 1 + rng.below(3);
        let shape: Vec<usize> = (0..dims).map(|_| 1 + rng.below(9)).collect();
        let ty = ElementType::ALL[rng.below(ElementType::ALL.len())];
        let data = GlobalData::new(&shape, ty)?;
        let from = random_dist(&mut rng, &data, size)?;
        let to = random_dist(&mut rng, &data, size)?;
        let plan = ReorgPlan::new(&from, &to)?;
        let exchange = MpiReorg::new(&plan, &world)?;
        let mine = [me];
        let holds = |d: &Distribution| if d.ranks().contains(&me) { &mine[..] } else { &[][..] };
        let src = BufferSet::create(&mm, &from, 1, Some(holds(&from)), |_| None)?;
        let dst = BufferSet::create(&mm, &to, 1, Some(holds(&to)), |_| None)?;
        let value = pattern(&shape);
        if src.ranks().next().is_some() {
            src.with_host(me, 0, Access::DiscardWrite, |m| {
                m.fill(0xEE);
                fill_owned(&from, me, m, &value)
            })??;
        }
        exchange.execute_buffers(&src, 0, &dst, 0)?;
        if dst.ranks().next().is_some() {
            let (mismatch, n) = dst.with_host(me, 0, Access::Read, |m| verify(&to, me, m, &value, 4))??;
            if !mismatch.is_empty() {
                eprintln!("case {case} rank {me}: {mismatch:?}\n{}", plan.explain());
            }
            bad += mismatch.len() as u64;
            checked += n as u64;
        }
        drop(exchange);
        src.release()?;
        dst.release()?;
    }
    let mut totals = [0u64; 2];
    world.all_reduce_into(&[checked, bad][..], &mut totals[..], SystemOperation::sum());
    if me == 0 {
        println!(
            "mpi_prop: {cases} random reorganisations on {size} ranks, {} elements checked, {} mismatches",
            totals[0], totals[1]
        );
    }
    if totals[1] != 0 {
        return Err("mismatches".into());
    }
    Ok(())
}
