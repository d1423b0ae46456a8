use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use proptest::prelude::*;

use super::*;

fn model_lookup(m: &BTreeMap<usize, (usize, u8)>, p: usize) -> Option<(usize, usize, u8)> {
    let (&b, &(s, v)) = m.range(..=p).next_back()?;
    (p - b < s).then_some((b, s, v))
}

#[test]
fn bad_ranges_are_refused() {
    let m = PointerMap::<u8>::new();
    assert_eq!(m.insert(0x1000, 0, 1), Err(MapError::Empty(0x1000)));
    assert_eq!(m.insert(0, 16, 1), Err(MapError::Null));
    assert_eq!(
        m.insert(usize::MAX - 3, 16, 1),
        Err(MapError::Wraps {
            base: usize::MAX - 3,
            size: 16
        })
    );
    m.insert(0x1000, 0x100, 1).unwrap();
    assert_eq!(
        m.insert(0x10f0, 0x100, 2),
        Err(MapError::Overlap {
            base: 0x10f0,
            size: 0x100,
            existing_base: 0x1000,
            existing_size: 0x100
        })
    );
    assert_eq!(m.get(0x10ff).map(|(h, v)| (h.base, v)), Some((0x1000, 1)));
    assert_eq!(m.get(0x1100), None);
}

#[test]
fn every_tier_answers() {
    let m = PointerMap::<u8>::new();
    let fine = 0x10_0000;
    let medium = 0x8000_0000;
    let coarse = 0x1_0000_0000;
    let huge = 0x100_0000_0000;
    m.insert(fine, 100, 1).unwrap();
    m.insert(medium, FINE_MAX + 1, 4).unwrap();
    m.insert(coarse, MEDIUM_MAX + 1, 2).unwrap();
    m.insert(huge, COARSE_MAX + 1, 3).unwrap();
    assert_eq!(m.get(fine + 99).unwrap().1, 1);
    assert_eq!(m.get(medium + FINE_MAX).unwrap().1, 4);
    assert!(m.get(medium + FINE_MAX + 1).is_none());
    assert_eq!(m.get(coarse + MEDIUM_MAX).unwrap().1, 2);
    assert_eq!(m.get(huge + COARSE_MAX).unwrap().1, 3);
    assert!(m.get(huge + COARSE_MAX + 1).is_none());
    assert_eq!(m.remove(huge), Some(3));
    assert!(m.get(huge).is_none());
    assert_eq!(m.remove(medium), Some(4));
    assert!(m.get(medium).is_none());
    assert_eq!(m.overlapping(fine, coarse - fine + 1).len(), 2);
}

#[test]
fn growth_keeps_every_range() {
    let m = PointerMap::<u32>::new();
    for i in 0..20_000usize {
        m.insert(0x1000_0000 + i * 0x3000, 0x2000 + (i % 7) * 0x100, i as u32)
            .unwrap();
    }
    for i in (0..20_000usize).step_by(3) {
        assert_eq!(m.remove(0x1000_0000 + i * 0x3000), Some(i as u32));
    }
    for i in 0..20_000usize {
        let p = 0x1000_0000 + i * 0x3000 + 0x1fff;
        assert_eq!(m.get(p).map(|(_, v)| v), (i % 3 != 0).then_some(i as u32), "{i}");
    }
}

/// Readers never see a torn or foreign entry while a writer toggles ranges,
/// and always find the ranges nobody touches.
#[test]
fn readers_never_wait_or_tear() {
    let m = PointerMap::<usize>::new();
    let n = 4096;
    let base = |i: usize| 0x4000_0000 + i * 0x1_8000;
    let size = |i: usize| 0x1000 + (i % 13) * 0x1000;
    for i in (0..n).filter(|i| i % 2 == 0) {
        m.insert(base(i), size(i), i).unwrap();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..3 {
            let (m, stop) = (&m, &stop);
            s.spawn(move || {
                let mut x = t as usize + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let i = (x >> 33) % n;
                    let p = base(i) + (x >> 7) % size(i);
                    match m.get(p) {
                        Some((h, v)) => {
                            assert_eq!((h.base, h.size, v), (base(i), size(i), i));
                        }
                        None => assert!(i % 2 == 1, "stable range {i} missed"),
                    }
                }
            });
        }
        for round in 0..40 {
            for i in (1..n).step_by(2) {
                if round % 2 == 0 {
                    m.insert(base(i), size(i), i).unwrap();
                } else {
                    m.remove(base(i)).unwrap();
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
}

#[derive(Debug, Clone)]
enum Op {
    Insert(usize, usize, u8),
    Remove(usize),
    Get(usize),
}

fn op() -> impl Strategy<Value = Op> {
    // Addresses over a few dozen MiB and sizes on both sides of the fine
    // and medium tiers' borders (the 1 MiB USM allocation too), so ranges
    // collide often.
    let addr = (1usize..64, 0usize..0x10_0000).prop_map(|(hi, lo)| hi * 0x10_0000 + lo);
    let size = prop_oneof![
        1usize..0x100,
        0x100usize..0x3_0000,
        Just(FINE_MAX),
        Just(FINE_MAX + 1),
        Just(1 << 20),
        Just(MEDIUM_MAX),
        Just(MEDIUM_MAX + 1)
    ];
    prop_oneof![
        3 => (addr.clone(), size, any::<u8>()).prop_map(|(a, s, v)| Op::Insert(a, s, v)),
        1 => addr.clone().prop_map(Op::Remove),
        4 => addr.prop_map(Op::Get),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn agrees_with_a_btreemap(ops in proptest::collection::vec(op(), 1..300)) {
        let m = PointerMap::<u8>::new();
        let mut model: BTreeMap<usize, (usize, u8)> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Insert(a, s, v) => {
                    let clash = model.range(..a + s).next_back().filter(|(&b, &(l, _))| b + l > a);
                    let r = m.insert(a, s, v);
                    prop_assert_eq!(r.is_ok(), clash.is_none(), "{:?}", r);
                    if r.is_ok() {
                        model.insert(a, (s, v));
                    }
                }
                Op::Remove(a) => {
                    // Remove the range holding `a`, by its base.
                    let base = model_lookup(&model, a).map(|(b, _, _)| b).unwrap_or(a);
                    prop_assert_eq!(m.remove(base), model.remove(&base).map(|(_, v)| v));
                }
                Op::Get(p) => {
                    let got = m.get(p).map(|(h, v)| (h.base, h.size, v));
                    prop_assert_eq!(got, model_lookup(&model, p));
                }
            }
        }
        for (&b, &(s, v)) in &model {
            prop_assert_eq!(m.get(b + s - 1).map(|(_, v)| v), Some(v));
        }
    }
}

#[test]
fn remove_if_asks_before_removing() {
    let m = PointerMap::<u8>::new();
    m.insert(0x4000, 0x100, 7).unwrap();
    assert_eq!(m.remove_if(0x4000, |v| *v == 8), None, "refused: kept");
    assert_eq!(m.get(0x40ff).map(|(_, v)| v), Some(7));
    assert_eq!(m.remove_if(0x4001, |_| true), None, "not a range's start");
    assert_eq!(m.remove_if(0x4000, |v| *v == 7), Some(7));
    assert!(m.get(0x4000).is_none());
    // The id is free again and the range may come back.
    m.insert(0x4000, 0x100, 9).unwrap();
    assert_eq!(m.get(0x4000).map(|(_, v)| v), Some(9));
}

/// Values live inline in their slots: each one is dropped exactly once,
/// whether removed, replaced by `update`, refused by `remove_if` (kept) or
/// still held when the map goes.
#[test]
fn values_are_dropped_exactly_once() {
    let token = std::sync::Arc::new(());
    let m = PointerMap::<std::sync::Arc<()>>::new();
    for i in 0..8usize {
        m.insert(0x1_0000 + i * 0x1000, 0x800, token.clone()).unwrap();
    }
    assert_eq!(std::sync::Arc::strong_count(&token), 9);
    // Replaced: the old value goes, the new one stays.
    let returned = m.update(0x1_0000, |v| v.clone()).unwrap();
    assert_eq!(
        std::sync::Arc::strong_count(&token),
        10,
        "the old value dropped, the new one and its copy held"
    );
    drop(returned);
    // Removed: handed back, not dropped by the map.
    let v = m.remove(0x1_1000).unwrap();
    assert_eq!(std::sync::Arc::strong_count(&token), 9);
    drop(v);
    assert_eq!(m.remove_if(0x1_2000, |_| false), None);
    assert_eq!(std::sync::Arc::strong_count(&token), 8);
    // The freed slot is reused for a new range.
    m.insert(0x9_0000, 0x10, token.clone()).unwrap();
    assert_eq!(m.get(0x9_000f).map(|(h, _)| h.base), Some(0x9_0000));
    drop(m);
    assert_eq!(
        std::sync::Arc::strong_count(&token),
        1,
        "every held value dropped with the map"
    );
}

/// A range being updated never disappears from readers' view: each reader
/// finds it every time, with values that only grow (the old or the new one,
/// never a torn or stale one after a newer was seen).
#[test]
fn updates_never_hide_a_range() {
    let (rounds, lookups) = if cfg!(miri) { (40, 200) } else { (20_000, 200_000) };
    let m = PointerMap::<u64>::new();
    m.insert(0x4_0000, 0x1000, 0).unwrap();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            let (m, stop) = (&m, &stop);
            s.spawn(move || {
                let mut last = 0;
                for i in 0..lookups {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let (h, v) = m.get(0x4_0000 + (i % 0x1000)).expect("an updated range stays visible");
                    assert_eq!((h.base, h.size), (0x4_0000, 0x1000));
                    assert!(v >= last, "saw {v} after {last}");
                    last = v;
                }
            });
        }
        for r in 1..=rounds {
            assert_eq!(m.update(0x4_0000, |_| r), Some(r));
        }
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(m.get(0x4_0000).map(|(_, v)| v), Some(rounds));
}
