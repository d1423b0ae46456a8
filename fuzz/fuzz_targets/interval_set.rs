//! `IntervalSet` against a model (one bit per byte of a small universe):
//! every operation, every query, and the representation invariant.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ur_memory_manager::IntervalSet;

const N: usize = 192;

#[derive(Debug, Arbitrary)]
enum Op {
    Insert(u8, u8),
    Remove(u8, u8),
    Union(Vec<(u8, u8)>),
    Subtract(Vec<(u8, u8)>),
    Query(u8, u8),
}

fn range(a: u8, b: u8) -> std::ops::Range<usize> {
    let (a, b) = (a as usize % (N + 1), b as usize % (N + 1));
    a.min(b)..a.max(b)
}

fn build(v: &[(u8, u8)]) -> (IntervalSet, [bool; N]) {
    let mut s = IntervalSet::new();
    let mut m = [false; N];
    for &(a, b) in v {
        let r = range(a, b);
        m[r.clone()].iter_mut().for_each(|x| *x = true);
        s.insert(r);
    }
    (s, m)
}

fn runs(m: &[bool; N], r: std::ops::Range<usize>, want: bool) -> Vec<std::ops::Range<usize>> {
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for i in r {
        if m[i] == want {
            match out.last_mut() {
                Some(last) if last.end == i => last.end = i + 1,
                _ => out.push(i..i + 1),
            }
        }
    }
    out
}

fuzz_target!(|ops: Vec<Op>| {
    let mut s = IntervalSet::new();
    let mut m = [false; N];
    for op in ops.into_iter().take(64) {
        match op {
            Op::Insert(a, b) => {
                let r = range(a, b);
                m[r.clone()].iter_mut().for_each(|x| *x = true);
                s.insert(r);
            }
            Op::Remove(a, b) => {
                let r = range(a, b);
                m[r.clone()].iter_mut().for_each(|x| *x = false);
                s.remove(r);
            }
            Op::Union(v) => {
                let (o, om) = build(&v);
                s.union_with(&o);
                m.iter_mut().zip(om).for_each(|(x, y)| *x |= y);
            }
            Op::Subtract(v) => {
                let (o, om) = build(&v);
                s.subtract(&o);
                m.iter_mut().zip(om).for_each(|(x, y)| *x &= !y);
            }
            Op::Query(a, b) => {
                let r = range(a, b);
                assert_eq!(
                    s.contains(r.clone()),
                    m[r.clone()].iter().all(|x| *x),
                    "contains {r:?} in {s}"
                );
                assert_eq!(
                    s.covered(r.clone()),
                    m[r.clone()].iter().filter(|x| **x).count(),
                    "covered {r:?} in {s}"
                );
                assert_eq!(
                    s.intersect(r.clone()).collect::<Vec<_>>(),
                    runs(&m, r.clone(), true),
                    "intersect {r:?} of {s}"
                );
                assert_eq!(
                    s.gaps(r.clone()).collect::<Vec<_>>(),
                    runs(&m, r.clone(), false),
                    "gaps {r:?} of {s}"
                );
            }
        }
        // The whole set equals the model, ranges sorted, disjoint, non-adjacent, non-empty.
        let got: Vec<_> = s.ranges().collect();
        assert_eq!(got, runs(&m, 0..N, true), "set {s}");
        assert_eq!(s.len(), m.iter().filter(|x| **x).count());
        assert_eq!(s.is_empty(), got.is_empty());
    }
});
