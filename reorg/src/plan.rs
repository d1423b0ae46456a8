//! Reorganisation plans: which rank sends which global box to which rank,
//! into which local place, and which overlaps are filled afterwards.

use std::fmt::Write as _;
use std::ops::Range;

use crate::dist::Distribution;
use crate::error::{ReorgError, Result};
use crate::partition::Piece;

/// One box of global data moved from a source slice to a destination slice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoxCopy {
    /// Source rank.
    pub src_rank: usize,
    /// Source slice.
    pub src_slice: usize,
    /// Local coordinates of the box in the source slice.
    pub src_start: Vec<usize>,
    /// Destination rank.
    pub dst_rank: usize,
    /// Destination slice.
    pub dst_slice: usize,
    /// Local coordinates of the box in the destination slice.
    pub dst_start: Vec<usize>,
    /// Global coordinates of the box's first element.
    pub global: Vec<usize>,
    /// Extent per dimension.
    pub extent: Vec<usize>,
}

impl BoxCopy {
    /// Elements in the box.
    pub fn elements(&self) -> usize {
        self.extent.iter().product()
    }
}

/// An overlap past a global edge, filled on the destination after the
/// data arrived: along dimension `dim`, the local indices `range` (every
/// index of the other dimensions).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Fill {
    /// Zeros (edge policy zero).
    Zero {
        /// Destination rank.
        rank: usize,
        /// Its slice.
        slice: usize,
        /// The dimension.
        dim: usize,
        /// Local indices along it.
        range: Range<usize>,
    },
    /// Copies of the hyperplane at local index `from` (edge policy replicate).
    Replicate {
        /// Destination rank.
        rank: usize,
        /// Its slice.
        slice: usize,
        /// The dimension.
        dim: usize,
        /// Local indices along it.
        range: Range<usize>,
        /// Local index of the edge element.
        from: usize,
    },
}

/// A reorganisation from one distribution to another of the same global
/// data: data, computed once, run many times (locally or on MPI).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReorgPlan {
    from: Distribution,
    to: Distribution,
    /// Box copies, by destination rank, destination slice, then source.
    pub copies: Vec<BoxCopy>,
    /// Edge fills, in the order they must run (by slice, dimensions in order).
    pub fills: Vec<Fill>,
}

/// Per dimension, the pieces of a destination slice's data that come from
/// one source block: (source block, local start in the source slice,
/// local start in the destination slice, global start, length).
type DimRun = (usize, usize, usize, usize, usize);

impl ReorgPlan {
    /// Plans the move of every element of `from` into every element of `to`
    /// (owned and overlap). Refuses different global data.
    pub fn new(from: &Distribution, to: &Distribution) -> Result<Self> {
        if from.data() != to.data() {
            return Err(ReorgError::DifferentGlobalData {
                from: from.data().to_string(),
                to: to.data().to_string(),
            });
        }
        let mut copies = Vec::new();
        let mut fills = Vec::new();
        for &rank in to.ranks() {
            for slice in to.slices(rank)? {
                let pieces: Vec<Vec<Piece>> = to
                    .dim_maps()
                    .iter()
                    .zip(&slice.block)
                    .map(|(m, &j)| m.pieces(j))
                    .collect();
                // Data runs per dimension, split at the source's blocks.
                let runs: Vec<Vec<DimRun>> = pieces
                    .iter()
                    .zip(from.dim_maps())
                    .map(|(ps, sm)| {
                        let mut out = Vec::new();
                        for p in ps {
                            if let Piece::Data { local, global } = p {
                                let end = global + local.len();
                                let mut g = *global;
                                while g < end {
                                    let j = g / sm.b;
                                    let stop = sm.owned(j).end.min(end);
                                    let src_local = (g as isize - sm.extended(j).start) as usize;
                                    out.push((j, src_local, local.start + (g - global), g, stop - g));
                                    g = stop;
                                }
                            }
                        }
                        out
                    })
                    .collect();
                product(&runs, &mut |combo: &[&DimRun]| {
                    let block: Vec<usize> = combo.iter().map(|r| r.0).collect();
                    let coords: Vec<usize> = from
                        .dim_maps()
                        .iter()
                        .zip(&block)
                        .map(|(m, &j)| m.owner(j * m.b))
                        .collect();
                    copies.push(BoxCopy {
                        src_rank: from.grid().rank_at(&coords),
                        src_slice: from.slice_of_blocks(&coords, &block),
                        src_start: combo.iter().map(|r| r.1).collect(),
                        dst_rank: rank,
                        dst_slice: slice.index,
                        dst_start: combo.iter().map(|r| r.2).collect(),
                        global: combo.iter().map(|r| r.3).collect(),
                        extent: combo.iter().map(|r| r.4).collect(),
                    });
                });
                for (dim, ps) in pieces.iter().enumerate() {
                    for p in ps {
                        match p {
                            Piece::Data { .. } => {}
                            Piece::Zero { local } => fills.push(Fill::Zero {
                                rank,
                                slice: slice.index,
                                dim,
                                range: local.clone(),
                            }),
                            Piece::Replicate { local, from } => fills.push(Fill::Replicate {
                                rank,
                                slice: slice.index,
                                dim,
                                range: local.clone(),
                                from: *from,
                            }),
                        }
                    }
                }
            }
        }
        tracing::debug!(copies = copies.len(), fills = fills.len(), "reorganisation planned");
        Ok(ReorgPlan {
            from: from.clone(),
            to: to.clone(),
            copies,
            fills,
        })
    }

    /// The source distribution.
    pub fn from(&self) -> &Distribution {
        &self.from
    }

    /// The destination distribution.
    pub fn to(&self) -> &Distribution {
        &self.to
    }

    /// Bytes moved by the box copies.
    pub fn bytes(&self) -> usize {
        self.copies.iter().map(BoxCopy::elements).sum::<usize>() * self.from.data().element_type().element_bytes()
    }

    /// The plan in words, one line per copy and fill (no addresses):
    /// stable text for snapshot tests.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "reorganise {}", self.from.data());
        let _ = writeln!(s, "  from {}", self.from);
        let _ = writeln!(s, "  to   {}", self.to);
        let _ = writeln!(
            s,
            "  {} box copies, {} bytes; {} edge fills",
            self.copies.len(),
            self.bytes(),
            self.fills.len()
        );
        for c in &self.copies {
            let boxes: Vec<String> = c
                .global
                .iter()
                .zip(&c.extent)
                .map(|(g, e)| format!("{g}..{}", g + e))
                .collect();
            let _ = writeln!(
                s,
                "  copy [{}] r{}.s{} @{:?} -> r{}.s{} @{:?}",
                boxes.join(", "),
                c.src_rank,
                c.src_slice,
                c.src_start,
                c.dst_rank,
                c.dst_slice,
                c.dst_start
            );
        }
        for f in &self.fills {
            let _ = match f {
                Fill::Zero {
                    rank,
                    slice,
                    dim,
                    range,
                } => {
                    writeln!(
                        s,
                        "  fill r{rank}.s{slice} dim {dim} [{}..{}) zero",
                        range.start, range.end
                    )
                }
                Fill::Replicate {
                    rank,
                    slice,
                    dim,
                    range,
                    from,
                } => writeln!(
                    s,
                    "  fill r{rank}.s{slice} dim {dim} [{}..{}) replicate {from}",
                    range.start, range.end
                ),
            };
        }
        s
    }
}

/// Calls `f` for every combination of one run per dimension.
fn product<'a>(runs: &'a [Vec<DimRun>], f: &mut dyn FnMut(&[&'a DimRun])) {
    fn go<'a>(runs: &'a [Vec<DimRun>], acc: &mut Vec<&'a DimRun>, f: &mut dyn FnMut(&[&'a DimRun])) {
        match runs.split_first() {
            None => f(acc),
            Some((first, rest)) => {
                for r in first {
                    acc.push(r);
                    go(rest, acc, f);
                    acc.pop();
                }
            }
        }
    }
    go(runs, &mut Vec::with_capacity(runs.len()), f);
}
