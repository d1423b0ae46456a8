//! Property test: random distributions A and B (1-3 dimensions, random
//! partitions, overlaps, edge policies, layouts, element types, groups of
//! 1-6 ranks), reorganised A -> B locally through memory-manager buffer
//! sets; every element of every destination slice, overlaps included, is
//! checked against the global model, and bytes outside slices (offset,
//! padding) must be untouched.

use std::sync::Arc;

use proptest::prelude::*;
use ur_memory_manager::{Access, MemoryManager};
use ur_reorg::model::{fill_owned, pattern, verify};
use ur_reorg::*;

#[derive(Debug, Clone)]
struct DistSpec {
    grid: Vec<usize>,
    first_rank: usize,
    parts: Vec<(u8, usize, usize, usize, u8)>,
    offset: usize,
    order: Vec<usize>,
    factors: Option<Vec<usize>>,
}

fn dist_spec(dims: usize) -> impl Strategy<Value = DistSpec> {
    (
        prop::collection::vec(1usize..=3, dims).prop_filter("group of at most 6", |g| g.iter().product::<usize>() <= 6),
        0usize..3,
        prop::collection::vec((0u8..4, 1usize..5, 0usize..3, 0usize..3, 0u8..4), dims),
        0usize..6,
        Just((0..dims).collect::<Vec<_>>()).prop_shuffle(),
        prop::option::of(prop::collection::vec(1usize..3, dims)),
    )
        .prop_map(|(grid, first_rank, parts, offset, order, factors)| DistSpec {
            grid,
            first_rank,
            parts,
            offset,
            order,
            factors,
        })
}

fn build(data: &GlobalData, s: &DistSpec) -> Distribution {
    let grid = ProcessGrid::contiguous(&s.grid, s.first_rank).unwrap();
    let parts: Vec<DimPartition> = s
        .parts
        .iter()
        .enumerate()
        .map(|(d, &(kind, b, l, r, edge))| {
            let (n, p) = (data.shape()[d], s.grid[d]);
            let (part, block) = match kind {
                0 => (Partition::Whole, n),
                1 => (Partition::Block, n.div_ceil(p)),
                2 => (Partition::Cyclic, 1),
                _ => (Partition::BlockCyclic(b), b),
            };
            let edge = [
                EdgePolicy::Toroidal,
                EdgePolicy::Zero,
                EdgePolicy::Replicate,
                EdgePolicy::Truncate,
            ][edge as usize];
            DimPartition::new(part).overlap(l.min(block), r.min(block), edge)
        })
        .collect();
    let mut layout = LocalLayout::row_major().offset(s.offset).order(s.order.clone());
    if let Some(f) = &s.factors {
        layout = layout.strides(Strides::Factors(f.clone()));
    }
    Distribution::new(data.clone(), grid, &parts, layout).unwrap()
}

fn case() -> impl Strategy<Value = (Vec<usize>, usize, DistSpec, DistSpec)> {
    (1usize..=3).prop_flat_map(|dims| {
        (
            prop::collection::vec(1usize..10, dims),
            0..ElementType::ALL.len(),
            dist_spec(dims),
            dist_spec(dims),
        )
    })
}

const UNTOUCHED: u8 = 0xCD;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn local_reorganisation_matches_the_global_model((shape, ty, a, b) in case()) {
        let data = GlobalData::new(&shape, ElementType::ALL[ty]).unwrap();
        let (from, to) = (build(&data, &a), build(&data, &b));
        let plan = ReorgPlan::new(&from, &to).unwrap();
        let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[]).unwrap();
        let src = BufferSet::create(&mm, &from, 1, None, |_| None).unwrap();
        let dst = BufferSet::create(&mm, &to, 2, None, |_| None).unwrap();
        let value = pattern(&shape);
        for &r in from.ranks() {
            src.with_host(r, 0, Access::DiscardWrite, |m| {
                m.fill(0xEE); // garbage where the plan must not read
                fill_owned(&from, r, m, &value)
            }).unwrap().unwrap();
        }
        for &r in to.ranks() {
            dst.with_host(r, 1, Access::DiscardWrite, |m| m.fill(UNTOUCHED)).unwrap();
        }
        plan.execute_local(&src, 0, &dst, 1).unwrap();
        for &r in to.ranks() {
            let (bad, checked, untouched_ok) = dst.with_host(r, 1, Access::Read, |m| {
                let (bad, checked) = verify(&to, r, m, &value, 4).unwrap();
                // Everything the slices do not cover keeps its bytes.
                let mut covered = vec![false; m.len()];
                ur_reorg::model::for_each_element(&to, r, |_, _, at, _| {
                    for &x in at { covered[x..x + data.element_type().unit_bytes()].fill(true); }
                }).unwrap();
                let ok = m.iter().zip(&covered).all(|(b, c)| *c || *b == UNTOUCHED);
                (bad, checked, ok)
            }).unwrap();
            prop_assert!(bad.is_empty(), "rank {r}: {bad:?}\n{}", plan.explain());
            prop_assert!(untouched_ok, "rank {r}: bytes outside slices changed");
            let expected: usize = to.slices(r).unwrap().iter().map(|s| s.shape.iter().product::<usize>()).sum();
            prop_assert_eq!(checked, expected);
        }
        src.release().unwrap();
        dst.release().unwrap();
    }
}
