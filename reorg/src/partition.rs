//! Per-dimension partitions, overlaps and edge policies, and the index maps
//! of one dimension (ScaLAPACK's `numroc`, `indxg2p`, `indxg2l`, `indxl2g`,
//! 0-based, source process 0).

use std::fmt;
use std::ops::Range;

use crate::error::{ReorgError, Result};

/// How one global dimension is split over the grid's processes along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Partition {
    /// Not split: every process along the grid dimension holds the whole
    /// extent (with a grid dimension of 1, plain "not partitioned"; wider,
    /// a replication: DRI's broadcast).
    Whole,
    /// One block of `ceil(n / p)` per process (MPI darray's default BLOCK);
    /// the last blocks are short or empty.
    Block,
    /// Round-robin single elements (block-cyclic with block 1).
    Cyclic,
    /// Blocks of `b` dealt round-robin (ScaLAPACK).
    BlockCyclic(usize),
}

/// What an overlap holds where it passes a global edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EdgePolicy {
    /// Wrap around: the elements from the other end.
    Toroidal,
    /// Zeros.
    Zero,
    /// The edge element, repeated.
    Replicate,
    /// No overlap past the edge: the slice is shorter there.
    Truncate,
}

/// A dimension's partition with its left and right overlap (halo).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DimPartition {
    /// The partition.
    pub partition: Partition,
    /// Elements of overlap before each block.
    pub left: usize,
    /// Elements of overlap after each block.
    pub right: usize,
    /// What the overlap holds past a global edge.
    pub edge: EdgePolicy,
}

impl DimPartition {
    /// A partition without overlap.
    pub fn new(partition: Partition) -> Self {
        DimPartition {
            partition,
            left: 0,
            right: 0,
            edge: EdgePolicy::Truncate,
        }
    }

    /// Not partitioned.
    pub fn whole() -> Self {
        Self::new(Partition::Whole)
    }

    /// One block per process.
    pub fn block() -> Self {
        Self::new(Partition::Block)
    }

    /// Cyclic.
    pub fn cyclic() -> Self {
        Self::new(Partition::Cyclic)
    }

    /// Block-cyclic with block size `b`.
    pub fn block_cyclic(b: usize) -> Self {
        Self::new(Partition::BlockCyclic(b))
    }

    /// With overlaps and their edge policy.
    pub fn overlap(mut self, left: usize, right: usize, edge: EdgePolicy) -> Self {
        self.left = left;
        self.right = right;
        self.edge = edge;
        self
    }
}

impl fmt::Display for DimPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.partition {
            Partition::Whole => f.write_str("whole")?,
            Partition::Block => f.write_str("block")?,
            Partition::Cyclic => f.write_str("cyclic")?,
            Partition::BlockCyclic(b) => write!(f, "block-cyclic({b})")?,
        }
        if self.left + self.right > 0 {
            let edge = match self.edge {
                EdgePolicy::Toroidal => "toroidal",
                EdgePolicy::Zero => "zero",
                EdgePolicy::Replicate => "replicate",
                EdgePolicy::Truncate => "truncate",
            };
            write!(f, " overlap {}/{} {edge}", self.left, self.right)?;
        }
        Ok(())
    }
}

/// One dimension resolved against its global extent `n` and the grid's
/// extent `p` along it: a block size and the index maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DimMap {
    /// Global extent.
    pub n: usize,
    /// Processes along the dimension.
    pub p: usize,
    /// Block size (`n` for [`Partition::Whole`]).
    pub b: usize,
    /// Every process holds the whole extent.
    pub whole: bool,
    /// The partition with its overlaps.
    pub part: DimPartition,
}

/// What a stretch of a slice's extended range holds along one dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Global elements from `global` on, in order (owned data, neighbours'
    /// data, or wrapped-around data).
    Data { local: Range<usize>, global: usize },
    /// Zeros (edge policy [`EdgePolicy::Zero`]).
    Zero { local: Range<usize> },
    /// Copies of the element at local index `from` (edge policy
    /// [`EdgePolicy::Replicate`]).
    Replicate { local: Range<usize>, from: usize },
}

impl DimMap {
    /// Resolves dimension `dim` (for errors) of extent `n` over `p` processes.
    /// A zero extent or a zero process count is refused here too (as
    /// `GlobalData` and `ProcessGrid` refuse them), since every index map
    /// divides by the block size and the process count.
    pub fn new(dim: usize, n: usize, p: usize, part: DimPartition) -> Result<Self> {
        if n == 0 {
            return Err(ReorgError::BadShape {
                shape: vec![n],
                reason: "a zero-sized dimension",
            });
        }
        if p == 0 {
            return Err(ReorgError::BadGrid {
                grid: vec![p],
                reason: "a zero-sized dimension",
            });
        }
        let (b, whole) = match part.partition {
            Partition::Whole => (n, true),
            Partition::Block => (n.div_ceil(p), false),
            Partition::Cyclic => (1, false),
            Partition::BlockCyclic(0) => return Err(ReorgError::ZeroBlock { dim }),
            Partition::BlockCyclic(b) => (b, false),
        };
        let overlap = part.left.max(part.right);
        if overlap > b {
            return Err(ReorgError::OverlapTooWide { dim, overlap, block: b });
        }
        Ok(DimMap { n, p, b, whole, part })
    }

    /// Number of blocks of the whole extent.
    pub fn blocks(&self) -> usize {
        self.n.div_ceil(self.b)
    }

    /// Process coordinate owning global index `g` (`indxg2p`); 0 for a
    /// whole dimension (every process holds it; 0 is the one read from).
    pub fn owner(&self, g: usize) -> usize {
        if self.whole {
            0
        } else {
            (g / self.b) % self.p
        }
    }

    /// Elements held by process coordinate `c`, overlaps excluded (`numroc`).
    pub fn local_len(&self, c: usize) -> usize {
        if self.whole {
            return self.n;
        }
        let nblocks = self.n / self.b;
        let mut len = (nblocks / self.p) * self.b;
        let extra = nblocks % self.p;
        if c < extra {
            len += self.b;
        } else if c == extra {
            len += self.n % self.b;
        }
        len
    }

    /// Local index of global index `g` on its owner (`indxg2l`).
    pub fn g2l(&self, g: usize) -> usize {
        if self.whole {
            g
        } else {
            self.b * (g / (self.b * self.p)) + g % self.b
        }
    }

    /// Global index of local index `l` on process coordinate `c` (`indxl2g`).
    pub fn l2g(&self, l: usize, c: usize) -> usize {
        if self.whole {
            l
        } else {
            self.p * self.b * (l / self.b) + l % self.b + c * self.b
        }
    }

    /// The global blocks process coordinate `c` holds, in local order.
    pub fn blocks_of(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        let (first, step) = if self.whole { (0, 1) } else { (c, self.p) };
        (first..self.blocks()).step_by(step)
    }

    /// Number of blocks process coordinate `c` holds.
    pub fn blocks_count(&self, c: usize) -> usize {
        if self.whole {
            1
        } else if c < self.blocks() {
            (self.blocks() - c).div_ceil(self.p)
        } else {
            0
        }
    }

    /// Global range block `j` owns.
    pub fn owned(&self, j: usize) -> Range<usize> {
        j * self.b..((j + 1) * self.b).min(self.n)
    }

    /// Global range of block `j` with its overlaps (past the edges unless
    /// truncated).
    pub fn extended(&self, j: usize) -> Range<isize> {
        let own = self.owned(j);
        let (s, e) = (
            own.start as isize - self.part.left as isize,
            (own.end + self.part.right) as isize,
        );
        if self.part.edge == EdgePolicy::Truncate {
            s.max(0)..e.min(self.n as isize)
        } else {
            s..e
        }
    }

    /// Extent of a slot along this dimension: the longest extended block.
    pub fn slot(&self) -> usize {
        self.b + self.part.left + self.part.right
    }

    /// The stretches of block `j`'s extended range, in local order.
    pub(crate) fn pieces(&self, j: usize) -> Vec<Piece> {
        let ext = self.extended(j);
        let n = self.n as isize;
        let mut out = Vec::new();
        let mut pos = ext.start;
        while pos < ext.end {
            let local = (pos - ext.start) as usize;
            if (0..n).contains(&pos) || self.part.edge == EdgePolicy::Toroidal {
                let g = pos.rem_euclid(n);
                let len = (ext.end - pos).min(n - g);
                out.push(Piece::Data {
                    local: local..local + len as usize,
                    global: g as usize,
                });
                pos += len;
            } else {
                // Outside, zero or replicate: up to the edge or the end.
                let stop = if pos < 0 { ext.end.min(0) } else { ext.end };
                let range = local..local + (stop - pos) as usize;
                let edge = if pos < 0 { 0 } else { n - 1 };
                out.push(match self.part.edge {
                    EdgePolicy::Zero => Piece::Zero { local: range },
                    _ => Piece::Replicate {
                        local: range,
                        from: (edge - ext.start) as usize,
                    },
                });
                pos = stop;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ScaLAPACK's tools, 1-based, source process `isrc`, as netlib writes them.
    fn numroc(n: usize, nb: usize, iproc: usize, isrc: usize, nprocs: usize) -> usize {
        let mydist = (nprocs + iproc - isrc) % nprocs;
        let nblocks = n / nb;
        let mut num = (nblocks / nprocs) * nb;
        let extra = nblocks % nprocs;
        if mydist < extra {
            num += nb;
        } else if mydist == extra {
            num += n % nb;
        }
        num
    }
    fn indxg2p(ig: usize, nb: usize, isrc: usize, np: usize) -> usize {
        (isrc + (ig - 1) / nb) % np
    }
    fn indxg2l(ig: usize, nb: usize, np: usize) -> usize {
        nb * ((ig - 1) / (nb * np)) + (ig - 1) % nb + 1
    }
    fn indxl2g(il: usize, nb: usize, ip: usize, isrc: usize, np: usize) -> usize {
        np * nb * ((il - 1) / nb) + (il - 1) % nb + ((np + ip - isrc) % np) * nb + 1
    }

    #[test]
    fn index_maps_match_scalapack_closed_forms() {
        for n in 1..40 {
            for p in 1..6 {
                for b in 1..9 {
                    let m = DimMap::new(0, n, p, DimPartition::block_cyclic(b)).unwrap();
                    let mut total = 0;
                    for c in 0..p {
                        let len = m.local_len(c);
                        assert_eq!(len, numroc(n, b, c, 0, p), "numroc n={n} p={p} b={b} c={c}");
                        let blocks: usize = m.blocks_of(c).map(|j| m.owned(j).len()).sum();
                        assert_eq!(blocks, len);
                        assert_eq!(m.blocks_count(c), m.blocks_of(c).count());
                        for l in 0..len {
                            let g = m.l2g(l, c);
                            assert_eq!(g + 1, indxl2g(l + 1, b, c, 0, p));
                            assert_eq!(m.g2l(g), l);
                            assert_eq!(m.owner(g), c);
                        }
                        total += len;
                    }
                    assert_eq!(total, n);
                    for g in 0..n {
                        assert_eq!(m.owner(g), indxg2p(g + 1, b, 0, p));
                        assert_eq!(m.g2l(g) + 1, indxg2l(g + 1, b, p));
                    }
                }
            }
        }
    }

    #[test]
    fn zero_extent_or_zero_processes_is_an_error_not_a_division_by_zero() {
        // Found by fuzz target reorg_dist (regression input
        // fuzz/regressions/reorg_dist/): `DimMap::new(0, n, 0, block())`
        // divided by zero.
        for part in [
            DimPartition::whole(),
            DimPartition::block(),
            DimPartition::cyclic(),
            DimPartition::block_cyclic(3),
        ] {
            assert!(matches!(DimMap::new(0, 10, 0, part), Err(ReorgError::BadGrid { .. })));
            assert!(matches!(DimMap::new(0, 0, 2, part), Err(ReorgError::BadShape { .. })));
        }
    }

    #[test]
    fn block_is_darray_default_and_cyclic_is_block_one() {
        let m = DimMap::new(0, 10, 4, DimPartition::block()).unwrap();
        assert_eq!(m.b, 3);
        assert_eq!((0..4).map(|c| m.local_len(c)).collect::<Vec<_>>(), [3, 3, 3, 1]);
        let m = DimMap::new(0, 5, 4, DimPartition::block()).unwrap();
        assert_eq!((0..4).map(|c| m.local_len(c)).collect::<Vec<_>>(), [2, 2, 1, 0]);
        assert_eq!(m.blocks_count(3), 0);
        let m = DimMap::new(0, 7, 3, DimPartition::cyclic()).unwrap();
        assert_eq!(m.b, 1);
        assert_eq!((0..3).map(|c| m.local_len(c)).collect::<Vec<_>>(), [3, 2, 2]);
    }

    #[test]
    fn bad_partitions_are_typed_errors() {
        assert!(matches!(
            DimMap::new(1, 10, 2, DimPartition::block_cyclic(0)),
            Err(ReorgError::ZeroBlock { dim: 1 })
        ));
        assert!(matches!(
            DimMap::new(0, 10, 2, DimPartition::block_cyclic(2).overlap(3, 0, EdgePolicy::Zero)),
            Err(ReorgError::OverlapTooWide {
                overlap: 3,
                block: 2,
                ..
            })
        ));
    }

    #[test]
    fn pieces_follow_edge_policies() {
        let part = |e| DimMap::new(0, 6, 2, DimPartition::block_cyclic(2).overlap(1, 2, e)).unwrap();
        let m = part(EdgePolicy::Toroidal);
        assert_eq!(m.extended(0), -1..4);
        assert_eq!(
            m.pieces(0),
            [
                Piece::Data { local: 0..1, global: 5 },
                Piece::Data { local: 1..5, global: 0 }
            ]
        );
        let m = part(EdgePolicy::Zero);
        assert_eq!(
            m.pieces(2),
            [Piece::Data { local: 0..3, global: 3 }, Piece::Zero { local: 3..5 }]
        );
        let m = part(EdgePolicy::Replicate);
        assert_eq!(m.pieces(0)[0], Piece::Replicate { local: 0..1, from: 1 });
        assert_eq!(m.pieces(2)[1], Piece::Replicate { local: 3..5, from: 2 });
        let m = part(EdgePolicy::Truncate);
        assert_eq!(m.extended(0), 0..4);
        assert_eq!(m.extended(2), 3..6);
    }
}
