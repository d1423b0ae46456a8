//! Plan snapshots: `explain()` of small reorganisations (corner turn,
//! overlaps with every edge policy, block-cyclic to block, a broadcast of
//! whole dimensions, DRI's example #1 summary).

use ur_reorg::*;

fn dist(shape: &[usize], grid: &[usize], first: usize, parts: &[DimPartition], layout: LocalLayout) -> Distribution {
    let data = GlobalData::new(shape, ElementType::ComplexF32).unwrap();
    Distribution::new(data, ProcessGrid::contiguous(grid, first).unwrap(), parts, layout).unwrap()
}

#[test]
fn corner_turn_rows_to_columns() {
    let a = dist(
        &[4, 6],
        &[2, 1],
        0,
        &[DimPartition::block(), DimPartition::whole()],
        LocalLayout::row_major(),
    );
    let b = dist(
        &[4, 6],
        &[1, 2],
        0,
        &[DimPartition::whole(), DimPartition::block()],
        LocalLayout::column_major(2),
    );
    insta::assert_snapshot!(ReorgPlan::new(&a, &b).unwrap().explain());
}

#[test]
fn overlaps_with_every_edge_policy() {
    let mut out = String::new();
    for edge in [
        EdgePolicy::Toroidal,
        EdgePolicy::Zero,
        EdgePolicy::Replicate,
        EdgePolicy::Truncate,
    ] {
        let a = dist(
            &[6, 3],
            &[3, 1],
            0,
            &[DimPartition::block(), DimPartition::whole()],
            LocalLayout::row_major(),
        );
        let rows = DimPartition::block().overlap(1, 1, edge);
        let cols = DimPartition::whole().overlap(1, 0, edge);
        let b = dist(&[6, 3], &[2, 1], 3, &[rows, cols], LocalLayout::row_major().offset(4));
        out.push_str(&ReorgPlan::new(&a, &b).unwrap().explain());
    }
    insta::assert_snapshot!(out);
}

#[test]
fn block_cyclic_to_block_and_broadcast() {
    let a = dist(
        &[10],
        &[3],
        0,
        &[DimPartition::block_cyclic(2)],
        LocalLayout::row_major(),
    );
    let b = dist(&[10], &[2], 0, &[DimPartition::block()], LocalLayout::row_major());
    let c = dist(&[10], &[3], 2, &[DimPartition::whole()], LocalLayout::row_major());
    let mut out = ReorgPlan::new(&a, &b).unwrap().explain();
    out.push_str(&ReorgPlan::new(&b, &c).unwrap().explain());
    insta::assert_snapshot!(out);
}

#[test]
fn dri_example_one_summary() {
    // 64 x 20 complex f32 in DRI's (x, y) order: 20 rows of 64 columns.
    let sender = dist(
        &[20, 64],
        &[1, 5],
        0,
        &[DimPartition::whole(), DimPartition::block()],
        LocalLayout::row_major(),
    );
    let rows = DimPartition::block_cyclic(2).overlap(1, 1, EdgePolicy::Toroidal);
    let layout = LocalLayout::row_major()
        .offset(512)
        .strides(Strides::Factors(vec![1, 2]));
    let receiver = dist(&[20, 64], &[5, 1], 5, &[rows, DimPartition::whole()], layout);
    let plan = ReorgPlan::new(&sender, &receiver).unwrap();
    let text = plan.explain();
    let summary: String = text
        .lines()
        .take(4)
        .chain(text.lines().filter(|l| l.contains("-> r5.")))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(summary);
}
