//! Distributions: queries, typed errors for every bad input, views.

use std::collections::BTreeMap;
use std::sync::Arc;

use ndarray::Axis;
use ur_memory_manager::{Access, MemoryManager};
use ur_reorg::model::{fill_owned, pattern};
use ur_reorg::*;

fn data(shape: &[usize], ty: ElementType) -> GlobalData {
    GlobalData::new(shape, ty).unwrap()
}

#[test]
fn bad_input_is_a_typed_error() {
    let d = data(&[8, 8], ElementType::F32);
    let g = ProcessGrid::contiguous(&[2, 1], 0).unwrap();
    let whole = DimPartition::whole();
    let new = |parts: &[DimPartition], layout| Distribution::new(d.clone(), g.clone(), parts, layout);
    assert!(matches!(
        GlobalData::new(&[4, 0], ElementType::F32),
        Err(ReorgError::BadShape { .. })
    ));
    assert!(matches!(
        GlobalData::new(&[], ElementType::F32),
        Err(ReorgError::BadShape { .. })
    ));
    assert!(matches!(
        ProcessGrid::new(&[0, 2], &[]),
        Err(ReorgError::BadGrid { .. })
    ));
    assert!(matches!(ProcessGrid::new(&[], &[]), Err(ReorgError::BadGrid { .. })));
    assert!(matches!(
        ProcessGrid::new(&[2, 2], &[0, 1, 2]),
        Err(ReorgError::GridGroupMismatch { size: 4, .. })
    ));
    assert!(matches!(
        ProcessGrid::new(&[2], &[1, 1]),
        Err(ReorgError::DuplicateRank { rank: 1 })
    ));
    let r = new(&[DimPartition::block_cyclic(0), whole], LocalLayout::row_major());
    assert!(matches!(r, Err(ReorgError::ZeroBlock { dim: 0 })));
    let r = new(
        &[DimPartition::block_cyclic(2).overlap(0, 3, EdgePolicy::Zero), whole],
        LocalLayout::row_major(),
    );
    assert!(matches!(r, Err(ReorgError::OverlapTooWide { .. })));
    let r = new(
        &[whole, whole],
        LocalLayout::row_major().strides(Strides::Elements(vec![1, 4])),
    );
    assert!(matches!(r, Err(ReorgError::OverlappingStrides { .. })));
    assert!(matches!(
        new(&[whole], LocalLayout::row_major()),
        Err(ReorgError::DimensionCount { .. })
    ));
    let ok = new(&[DimPartition::block(), whole], LocalLayout::row_major()).unwrap();
    assert!(matches!(ok.slice(0, 1), Err(ReorgError::NoSuchSlice { .. })));
    assert!(matches!(ok.slice(7, 0), Err(ReorgError::NoSuchSlice { .. })));
    // Different global data in one reorganisation.
    let other = Distribution::new(
        data(&[8, 8], ElementType::F64),
        g.clone(),
        &[DimPartition::block(), whole],
        LocalLayout::row_major(),
    )
    .unwrap();
    assert!(matches!(
        ReorgPlan::new(&ok, &other),
        Err(ReorgError::DifferentGlobalData { .. })
    ));
    // Buffers of the wrong size, zero buffers, views of the wrong type or length.
    let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[]).unwrap();
    let b = mm.create_buffer(10).unwrap();
    let r = BufferSet::from_buffers(&mm, &ok, BTreeMap::from([(0, vec![b])]));
    assert!(matches!(
        r,
        Err(ReorgError::WrongBufferSize {
            rank: 0,
            got: 10,
            need: 128
        })
    ));
    assert!(matches!(
        BufferSet::create(&mm, &ok, 0, None, |_| None),
        Err(ReorgError::NoBuffers)
    ));
    let mem = vec![0u8; 128];
    assert!(matches!(
        ok.view::<f64>(0, 0, &mem),
        Err(ReorgError::WrongElementType { .. })
    ));
    assert!(matches!(
        ok.view::<f32>(0, 0, &mem[..64]),
        Err(ReorgError::WrongHostLength { .. })
    ));
    let mut short = vec![0u8; 64];
    let plan = ReorgPlan::new(&ok, &ok).unwrap();
    assert!(matches!(
        plan.fill_overlaps(0, &mut short),
        Err(ReorgError::WrongHostLength { .. })
    ));
    // In place (same buffers) is refused.
    let set = BufferSet::create(&mm, &ok, 1, None, |_| None).unwrap();
    assert!(matches!(
        plan.execute_local(&set, 0, &set, 0),
        Err(ReorgError::SameBuffer { .. })
    ));
}

#[test]
fn slices_of_block_cyclic_with_overlaps_and_truncation() {
    let d = data(&[7], ElementType::I16);
    let part = DimPartition::block_cyclic(2).overlap(1, 2, EdgePolicy::Truncate);
    let dist = Distribution::new(
        d,
        ProcessGrid::new(&[2], &[4, 9]).unwrap(),
        &[part],
        LocalLayout::row_major().offset(3),
    )
    .unwrap();
    // Blocks 0..2, 2..4, 4..6, 6..7: rank 4 holds blocks 0 and 2, rank 9 blocks 1 and 3.
    let s: Vec<(std::ops::Range<usize>, std::ops::Range<isize>, usize)> = dist
        .slices(9)
        .unwrap()
        .into_iter()
        .map(|s| (s.owned[0].clone(), s.extended[0].clone(), s.offset))
        .collect();
    assert_eq!(s, [(2..4, 1..6, 3), (6..7, 5..7, 8)]);
    assert_eq!(dist.slice(4, 0).unwrap().origin(), vec![0]);
    assert_eq!(dist.local_elements(9).unwrap(), 3 + 2 * 5);
    let (rank, slice, local) = dist.locate(&[6]).unwrap();
    assert_eq!((rank, slice.index, local), (9, 1, vec![1]));
}

#[test]
fn views_hide_layouts_and_split_complex() {
    for ty in [ElementType::ComplexF32, ElementType::SplitComplexF32] {
        let d = data(&[4, 6], ty);
        let layout = LocalLayout::column_major(2)
            .offset(5)
            .strides(Strides::Factors(vec![2, 3]));
        let parts = [
            DimPartition::block().overlap(1, 1, EdgePolicy::Zero),
            DimPartition::whole(),
        ];
        let dist = Distribution::new(d, ProcessGrid::contiguous(&[2, 1], 0).unwrap(), &parts, layout).unwrap();
        let value = pattern(&[4, 6]);
        let mm = MemoryManager::new(Arc::new(ur_api::Runtime::new()), &[]).unwrap();
        let set = BufferSet::create(&mm, &dist, 2, None, |_| None).unwrap();
        set.with_host(1, 1, Access::DiscardWrite, |m| fill_owned(&dist, 1, m, &value))
            .unwrap()
            .unwrap();
        set.with_host(1, 1, Access::ReadWrite, |m| {
            let parts = dist.parts::<f32>(1, 0, m).unwrap();
            assert_eq!(parts.re.shape(), &[4, 6]); // 2 owned rows + 1 overlap each side
                                                   // Local row 1 is global row 2 (owned); compare with the model.
            for c in 0..6 {
                assert_eq!(parts.re[[1, c]].to_bits(), value(&[2, c], 0) as u32);
                let im = if ty.is_split() {
                    value(&[2, c], 1)
                } else {
                    value(&[2, c], 0) >> 32
                };
                assert_eq!(parts.im[[1, c]].to_bits(), im as u32);
            }
            // Row and column sub-views, iteration.
            assert_eq!(parts.re.index_axis(Axis(0), 2).len(), 6);
            assert_eq!(parts.im.index_axis(Axis(1), 0).len(), 4);
            assert_eq!(parts.re.iter().count(), 24);
            // Writes through a mutable view land where the model says.
            let mut p = dist.parts_mut::<f32>(1, 0, m).unwrap();
            p.im[[2, 3]] = 1.5;
            let plane = if ty.is_split() {
                dist.plane_offset(1, 1).unwrap()
            } else {
                4
            };
            let s = dist.slice(1, 0).unwrap();
            let at = if ty.is_split() {
                plane + s.element_offset(&[2, 3]) * 4
            } else {
                s.element_offset(&[2, 3]) * 8 + plane
            };
            assert_eq!(&m[at..at + 4], &1.5f32.to_le_bytes());
        })
        .unwrap();
        if !ty.is_split() {
            set.with_host(0, 0, Access::ReadWrite, |m| {
                let v = dist.view::<num_complex::Complex<f32>>(0, 0, m).unwrap();
                assert_eq!(v.strides(), &[2, 24]); // column-major: element stride 2, column stride 3 x (4 rows x 2)
            })
            .unwrap();
        }
    }
}
