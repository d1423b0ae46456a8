//! [`IntervalSet`]: a set of byte ranges, kept as sorted, disjoint,
//! non-adjacent half-open intervals.
//!
//! Validity is tracked with these rather than with a dense page vector: a
//! buffer of any size that is valid in a few pieces costs a few entries, and
//! byte-exact ranges need no rounding to pages.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;

/// A set of byte offsets stored as disjoint half-open ranges.
///
/// ```
/// use ur_memory_manager::IntervalSet;
/// let mut s = IntervalSet::new();
/// s.insert(0..10);
/// s.insert(20..30);
/// s.insert(10..20); // joins the two pieces
/// assert_eq!(s.ranges().collect::<Vec<_>>(), vec![0..30]);
/// s.remove(5..7);
/// assert_eq!(s.gaps(0..30).collect::<Vec<_>>(), vec![5..7]);
/// assert!(s.contains(0..5) && !s.contains(4..8));
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct IntervalSet {
    /// start -> end; disjoint, non-adjacent, non-empty.
    map: BTreeMap<usize, usize>,
}

impl fmt::Debug for IntervalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for IntervalSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.map.is_empty() {
            return f.write_str("{}");
        }
        f.write_str("{")?;
        for (i, (s, e)) in self.map.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "[{s}, {e})")?;
        }
        f.write_str("}")
    }
}

impl IntervalSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set holding one range (empty if the range is).
    pub fn from_range(r: Range<usize>) -> Self {
        let mut s = Self::new();
        s.insert(r);
        s
    }

    /// True when no byte is in the set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of bytes in the set.
    pub fn len(&self) -> usize {
        self.map.iter().map(|(s, e)| e - s).sum()
    }

    /// The ranges, in ascending order.
    pub fn ranges(&self) -> impl Iterator<Item = Range<usize>> + '_ {
        self.map.iter().map(|(&s, &e)| s..e)
    }

    /// Adds a range, merging with neighbours it touches or overlaps.
    pub fn insert(&mut self, r: Range<usize>) {
        if r.start >= r.end {
            return;
        }
        let (mut start, mut end) = (r.start, r.end);
        // A range starting at or before `start` that reaches it.
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                start = s;
                end = end.max(e);
            }
        }
        // Ranges starting inside [start, end] are swallowed.
        let swallowed: Vec<usize> = self.map.range(start..=end).map(|(&s, _)| s).collect();
        for s in swallowed {
            let e = self.map.remove(&s).expect("key just listed");
            end = end.max(e);
        }
        self.map.insert(start, end);
    }

    /// Removes a range.
    pub fn remove(&mut self, r: Range<usize>) {
        if r.start >= r.end {
            return;
        }
        // A range starting before r.start that overlaps it is cut in two.
        if let Some((&s, &e)) = self.map.range(..r.start).next_back() {
            if e > r.start {
                self.map.insert(s, r.start);
                if e > r.end {
                    self.map.insert(r.end, e);
                    return;
                }
            }
        }
        let inside: Vec<(usize, usize)> = self.map.range(r.start..r.end).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in inside {
            self.map.remove(&s);
            if e > r.end {
                self.map.insert(r.end, e);
            }
        }
    }

    /// True when every byte of `r` is in the set (an empty range is).
    pub fn contains(&self, r: Range<usize>) -> bool {
        if r.start >= r.end {
            return true;
        }
        matches!(self.map.range(..=r.start).next_back(), Some((_, &e)) if e >= r.end)
    }

    /// The parts of `r` that are in the set, in ascending order.
    pub fn intersect(&self, r: Range<usize>) -> impl Iterator<Item = Range<usize>> + '_ {
        let first = self
            .map
            .range(..=r.start)
            .next_back()
            .filter(|(_, &e)| e > r.start)
            .map(|(&s, _)| s)
            .unwrap_or(r.start);
        let end = r.end;
        let start = r.start;
        self.map
            .range(first..end.max(first))
            .map(move |(&s, &e)| s.max(start)..e.min(end))
            .filter(|x| x.start < x.end)
    }

    /// The parts of `r` that are not in the set, in ascending order.
    pub fn gaps(&self, r: Range<usize>) -> impl Iterator<Item = Range<usize>> + '_ {
        let mut cursor = r.start;
        let end = r.end;
        let mut pieces = self.intersect(r.clone()).peekable();
        std::iter::from_fn(move || loop {
            if cursor >= end {
                return None;
            }
            match pieces.next() {
                Some(p) if p.start > cursor => {
                    let gap = cursor..p.start;
                    cursor = p.end;
                    return Some(gap);
                }
                Some(p) => cursor = p.end,
                None => {
                    let gap = cursor..end;
                    cursor = end;
                    return Some(gap);
                }
            }
        })
    }

    /// Bytes of `r` that are in the set.
    pub fn covered(&self, r: Range<usize>) -> usize {
        self.intersect(r).map(|x| x.end - x.start).sum()
    }

    /// Adds every range of `other`.
    pub fn union_with(&mut self, other: &IntervalSet) {
        for r in other.ranges() {
            self.insert(r);
        }
    }

    /// Removes every range of `other`.
    pub fn subtract(&mut self, other: &IntervalSet) {
        for r in other.ranges() {
            self.remove(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const N: usize = 64;

    fn model_of(s: &IntervalSet) -> [bool; N] {
        let mut m = [false; N];
        for r in s.ranges() {
            for b in &mut m[r] {
                *b = true;
            }
        }
        m
    }

    fn check_invariants(s: &IntervalSet) {
        let mut prev_end = None;
        for r in s.ranges() {
            assert!(r.start < r.end, "empty piece in {s}");
            if let Some(p) = prev_end {
                assert!(r.start > p, "pieces touch or overlap in {s}");
            }
            prev_end = Some(r.end);
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(Range<usize>),
        Remove(Range<usize>),
    }

    fn range() -> impl Strategy<Value = Range<usize>> {
        (0..N, 0..N).prop_map(|(a, b)| a.min(b)..a.max(b))
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![range().prop_map(Op::Insert), range().prop_map(Op::Remove)]
    }

    proptest! {
        #[test]
        fn matches_a_bit_model(ops in proptest::collection::vec(op(), 0..24), probe in range()) {
            let mut s = IntervalSet::new();
            let mut m = [false; N];
            for op in ops {
                match op {
                    Op::Insert(r) => { for b in &mut m[r.clone()] { *b = true; } s.insert(r); }
                    Op::Remove(r) => { for b in &mut m[r.clone()] { *b = false; } s.remove(r); }
                }
                check_invariants(&s);
                prop_assert_eq!(model_of(&s), m);
            }
            prop_assert_eq!(s.len(), m.iter().filter(|b| **b).count());
            prop_assert_eq!(s.contains(probe.clone()), m[probe.clone()].iter().all(|b| *b));
            let inside: usize = s.intersect(probe.clone()).map(|r| r.len()).sum();
            prop_assert_eq!(inside, m[probe.clone()].iter().filter(|b| **b).count());
            prop_assert_eq!(s.covered(probe.clone()), inside);
            let mut rebuilt = [false; N];
            for r in s.intersect(probe.clone()) { for b in &mut rebuilt[r] { *b = true; } }
            for r in s.gaps(probe.clone()) {
                prop_assert!(r.start < r.end);
                for (i, b) in m.iter().enumerate().take(r.end).skip(r.start) {
                    prop_assert!(!*b, "gap covers set byte {}", i);
                    rebuilt[i] = true;
                }
            }
            for (i, b) in rebuilt.iter().enumerate() {
                prop_assert_eq!(*b, probe.contains(&i), "byte {} not accounted for", i);
            }
        }
    }

    #[test]
    fn display_and_merge() {
        let mut s = IntervalSet::new();
        assert_eq!(s.to_string(), "{}");
        s.insert(4..8);
        s.insert(0..2);
        assert_eq!(s.to_string(), "{[0, 2), [4, 8)}");
        s.insert(2..4);
        assert_eq!(s.to_string(), "{[0, 8)}");
        s.remove(0..8);
        assert!(s.is_empty());
    }

    #[test]
    fn union_and_subtract() {
        let mut a = IntervalSet::from_range(0..10);
        let b = IntervalSet::from_range(5..20);
        a.union_with(&b);
        assert_eq!(a, IntervalSet::from_range(0..20));
        a.subtract(&IntervalSet::from_range(3..6));
        assert_eq!(a.to_string(), "{[0, 3), [6, 20)}");
        assert_eq!(a.gaps(0..25).collect::<Vec<_>>(), vec![3..6, 20..25]);
    }
}
