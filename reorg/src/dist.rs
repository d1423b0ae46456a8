//! Global data, process grids and distributions, with their queries.

use std::fmt;
use std::ops::Range;

use crate::elem::ElementType;
use crate::error::{ReorgError, Result};
use crate::layout::{LocalLayout, SlotLayout};
use crate::partition::{DimMap, DimPartition};

/// Most dimensions a distribution may have.
pub const MAX_DIMS: usize = 4;

/// The global data: an N-d shape and an element type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GlobalData {
    shape: Vec<usize>,
    ty: ElementType,
}

impl GlobalData {
    /// Refuses no dimension, more than [`MAX_DIMS`], or a zero extent.
    pub fn new(shape: &[usize], ty: ElementType) -> Result<Self> {
        let reason = if shape.is_empty() {
            Some("no dimension")
        } else if shape.len() > MAX_DIMS {
            Some("more than 4 dimensions")
        } else if shape.contains(&0) {
            Some("a zero-sized dimension")
        } else {
            None
        };
        if let Some(reason) = reason {
            return Err(ReorgError::BadShape {
                shape: shape.to_vec(),
                reason,
            });
        }
        Ok(GlobalData {
            shape: shape.to_vec(),
            ty,
        })
    }

    /// Extents per dimension.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.ty
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Always false (no dimension is zero-sized).
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl fmt::Display for GlobalData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.shape.iter().map(|n| n.to_string()).collect();
        write!(f, "{} {}", s.join("x"), self.ty)
    }
}

/// A process group arranged as a logical grid, row-major (MPI's order):
/// the group's `i`-th rank sits at the grid coordinates of `i`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProcessGrid {
    dims: Vec<usize>,
    ranks: Vec<usize>,
}

impl ProcessGrid {
    /// A grid over `ranks` (ranks of the world: MPI ranks, or local ranks
    /// in one process). Refuses empty or zero-sized grids, a size other
    /// than the group's, and a rank named twice.
    pub fn new(dims: &[usize], ranks: &[usize]) -> Result<Self> {
        let size = Self::size_of(dims)?;
        if size != ranks.len() {
            return Err(ReorgError::GridGroupMismatch {
                grid: dims.to_vec(),
                size,
                group: ranks.len(),
            });
        }
        let mut sorted = ranks.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(ReorgError::DuplicateRank { rank: w[0] });
        }
        Ok(ProcessGrid {
            dims: dims.to_vec(),
            ranks: ranks.to_vec(),
        })
    }

    /// Ranks `first..first + product(dims)`. Refuses what [`ProcessGrid::new`]
    /// refuses, a last rank past `usize::MAX` ([`ReorgError::RankOverflow`])
    /// and a group too large to list in memory.
    pub fn contiguous(dims: &[usize], first: usize) -> Result<Self> {
        let size = Self::size_of(dims)?;
        let last = first.checked_add(size - 1).ok_or_else(|| ReorgError::RankOverflow {
            grid: dims.to_vec(),
            size,
            first,
        })?;
        let mut ranks = Vec::new();
        ranks.try_reserve_exact(size).map_err(|_| ReorgError::BadGrid {
            grid: dims.to_vec(),
            reason: "more places than memory can list",
        })?;
        ranks.extend(first..=last);
        Self::new(dims, &ranks)
    }

    /// The number of places of a grid: refuses no dimension, a zero-sized
    /// one, and a product that overflows `usize`.
    fn size_of(dims: &[usize]) -> Result<usize> {
        let reason = if dims.is_empty() {
            "no dimension"
        } else if dims.contains(&0) {
            "a zero-sized dimension"
        } else {
            match dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)) {
                Some(size) => return Ok(size),
                None => "more places than usize can count",
            }
        };
        Err(ReorgError::BadGrid {
            grid: dims.to_vec(),
            reason,
        })
    }

    /// Extents of the grid.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The group's ranks, in grid order.
    pub fn ranks(&self) -> &[usize] {
        &self.ranks
    }

    /// Grid coordinates of a rank, `None` outside the group.
    pub fn coords(&self, rank: usize) -> Option<Vec<usize>> {
        let mut i = self.ranks.iter().position(|&r| r == rank)?;
        let mut c = vec![0; self.dims.len()];
        for d in (0..self.dims.len()).rev() {
            c[d] = i % self.dims[d];
            i /= self.dims[d];
        }
        Some(c)
    }

    /// The rank at grid coordinates.
    pub fn rank_at(&self, coords: &[usize]) -> usize {
        let i = coords.iter().zip(&self.dims).fold(0, |a, (c, d)| a * d + c);
        self.ranks[i]
    }
}

/// One local slice: a block (one per dimension) with its overlaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Index among the rank's slices.
    pub index: usize,
    /// Global block index per dimension.
    pub block: Vec<usize>,
    /// Global range owned (overlaps excluded).
    pub owned: Vec<Range<usize>>,
    /// Global range with overlaps; may pass the global edges (toroidal,
    /// zero, replicate), where the edge policy says what it holds.
    pub extended: Vec<Range<isize>>,
    /// Local extents (the extended range's lengths).
    pub shape: Vec<usize>,
    /// Element offset of local index 0 in a plane of local memory.
    pub offset: usize,
    /// Element strides per global dimension.
    pub strides: Vec<usize>,
}

impl Slice {
    /// Local coordinates of the first owned element.
    pub fn origin(&self) -> Vec<usize> {
        self.owned
            .iter()
            .zip(&self.extended)
            .map(|(o, e)| (o.start as isize - e.start) as usize)
            .collect()
    }

    /// Element offset (in a plane) of local coordinates.
    pub fn element_offset(&self, local: &[usize]) -> usize {
        self.offset + local.iter().zip(&self.strides).map(|(i, s)| i * s).sum::<usize>()
    }
}

/// Global data over a process grid: partitions per dimension, overlaps, and
/// the local layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Distribution {
    data: GlobalData,
    grid: ProcessGrid,
    maps: Vec<DimMap>,
    layout: LocalLayout,
    slot: SlotLayout,
}

impl Distribution {
    /// Checks everything: one partition per dimension, the grid's rank
    /// (number of dimensions) equal to the data's, block sizes, overlaps,
    /// and the layout.
    pub fn new(data: GlobalData, grid: ProcessGrid, parts: &[DimPartition], layout: LocalLayout) -> Result<Self> {
        let dims = data.shape.len();
        if parts.len() != dims {
            return Err(ReorgError::DimensionCount {
                what: "partitions",
                got: parts.len(),
                dims,
            });
        }
        if grid.dims.len() != dims {
            return Err(ReorgError::DimensionCount {
                what: "process grid",
                got: grid.dims.len(),
                dims,
            });
        }
        let maps = (0..dims)
            .map(|d| DimMap::new(d, data.shape[d], grid.dims[d], parts[d]))
            .collect::<Result<Vec<_>>>()?;
        let slot = layout.resolve(&maps.iter().map(DimMap::slot).collect::<Vec<_>>())?;
        let dist = Distribution {
            data,
            grid,
            maps,
            layout,
            slot,
        };
        // Every local size must fit.
        for &r in dist.grid.ranks() {
            dist.local_elements(r)?;
        }
        Ok(dist)
    }

    /// The global data.
    pub fn data(&self) -> &GlobalData {
        &self.data
    }

    /// The process grid.
    pub fn grid(&self) -> &ProcessGrid {
        &self.grid
    }

    /// The group's ranks.
    pub fn ranks(&self) -> &[usize] {
        self.grid.ranks()
    }

    /// The per-dimension maps (block sizes, ScaLAPACK-style index maps).
    pub fn dim_maps(&self) -> &[DimMap] {
        &self.maps
    }

    /// The local layout.
    pub fn layout(&self) -> &LocalLayout {
        &self.layout
    }

    /// The layout resolved against the slot shape.
    pub fn slot_layout(&self) -> &SlotLayout {
        &self.slot
    }

    fn coords(&self, rank: usize) -> Result<Vec<usize>> {
        self.grid.coords(rank).ok_or(ReorgError::NoSuchSlice { rank, slice: 0 })
    }

    /// Blocks per dimension a rank holds.
    fn block_counts(&self, coords: &[usize]) -> Vec<usize> {
        self.maps.iter().zip(coords).map(|(m, &c)| m.blocks_count(c)).collect()
    }

    /// Number of local slices of a rank (block-cyclic gives several; a
    /// rank with no data has none).
    pub fn slice_count(&self, rank: usize) -> Result<usize> {
        Ok(self.block_counts(&self.coords(rank)?).iter().product())
    }

    /// Slice `index` of a rank.
    pub fn slice(&self, rank: usize, index: usize) -> Result<Slice> {
        let coords = self.coords(rank)?;
        let counts = self.block_counts(&coords);
        if index >= counts.iter().product() {
            return Err(ReorgError::NoSuchSlice { rank, slice: index });
        }
        let mut rest = index;
        let mut k = vec![0; counts.len()];
        for d in (0..counts.len()).rev() {
            k[d] = rest % counts[d];
            rest /= counts[d];
        }
        let block: Vec<usize> = self
            .maps
            .iter()
            .zip(&coords)
            .zip(&k)
            .map(|((m, &c), &k)| m.blocks_of(c).nth(k).unwrap_or(0))
            .collect();
        let owned = self.maps.iter().zip(&block).map(|(m, &j)| m.owned(j)).collect();
        let extended: Vec<Range<isize>> = self.maps.iter().zip(&block).map(|(m, &j)| m.extended(j)).collect();
        Ok(Slice {
            index,
            shape: extended.iter().map(|e| (e.end - e.start) as usize).collect(),
            block,
            owned,
            extended,
            offset: self.layout.offset + index * self.slot.len,
            strides: self.slot.strides.clone(),
        })
    }

    /// All slices of a rank.
    pub fn slices(&self, rank: usize) -> Result<Vec<Slice>> {
        (0..self.slice_count(rank)?).map(|i| self.slice(rank, i)).collect()
    }

    /// The slice index holding global block indices `block` on a rank at
    /// grid coordinates `coords`.
    pub(crate) fn slice_of_blocks(&self, coords: &[usize], block: &[usize]) -> usize {
        let counts = self.block_counts(coords);
        self.maps
            .iter()
            .zip(block)
            .zip(&counts)
            .fold(0, |acc, ((m, &j), &n)| acc * n + if m.whole { 0 } else { j / m.p })
    }

    /// Elements per plane of a rank's local memory: the offset, then one
    /// slot per slice.
    pub fn local_elements(&self, rank: usize) -> Result<usize> {
        self.slice_count(rank)?
            .checked_mul(self.slot.len)
            .and_then(|x| x.checked_add(self.layout.offset))
            .ok_or(ReorgError::SizeOverflow)
    }

    /// Bytes of a rank's local memory (all planes).
    pub fn local_bytes(&self, rank: usize) -> Result<usize> {
        let ty = self.data.ty;
        self.local_elements(rank)?
            .checked_mul(ty.unit_bytes() * ty.planes())
            .ok_or(ReorgError::SizeOverflow)
    }

    /// Byte offset of plane `p` in a rank's local memory.
    pub fn plane_offset(&self, rank: usize, plane: usize) -> Result<usize> {
        Ok(plane * self.local_elements(rank)? * self.data.ty.unit_bytes())
    }

    /// Where global index `g` lives as owned data: rank, slice and local
    /// coordinates (for a whole dimension over several processes: the
    /// coordinate-0 copy).
    pub fn locate(&self, g: &[usize]) -> Option<(usize, Slice, Vec<usize>)> {
        if g.len() != self.maps.len() || g.iter().zip(&self.data.shape).any(|(i, n)| i >= n) {
            return None;
        }
        let coords: Vec<usize> = self.maps.iter().zip(g).map(|(m, &i)| m.owner(i)).collect();
        let block: Vec<usize> = self.maps.iter().zip(g).map(|(m, &i)| i / m.b).collect();
        let rank = self.grid.rank_at(&coords);
        let slice = self.slice(rank, self.slice_of_blocks(&coords, &block)).ok()?;
        let local = g
            .iter()
            .zip(&slice.extended)
            .map(|(&i, e)| (i as isize - e.start) as usize)
            .collect();
        Some((rank, slice, local))
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.maps.iter().map(|m| m.part.to_string()).collect();
        write!(
            f,
            "{} on grid {:?} ranks {:?}, [{}], {}",
            self.data,
            self.grid.dims,
            self.grid.ranks,
            parts.join(", "),
            self.layout
        )
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn contiguous_grids_whose_size_overflows_are_refused() {
        let err = ProcessGrid::contiguous(&[1 << 33, 1 << 33], 0).unwrap_err();
        assert!(
            matches!(&err, ReorgError::BadGrid { grid, .. } if grid == &[1 << 33, 1 << 33]),
            "{err}"
        );
        let err = ProcessGrid::new(&[usize::MAX, 2], &[0, 1]).unwrap_err();
        assert!(matches!(err, ReorgError::BadGrid { .. }), "{err}");
    }

    #[test]
    fn contiguous_ranks_past_usize_max_are_refused() {
        let err = ProcessGrid::contiguous(&[2], usize::MAX).unwrap_err();
        assert!(
            matches!(&err, ReorgError::RankOverflow { size: 2, first: usize::MAX, grid } if grid == &[2]),
            "{err}"
        );
        // The last rank may be usize::MAX itself.
        let g = ProcessGrid::contiguous(&[2], usize::MAX - 1).unwrap();
        assert_eq!(g.ranks(), &[usize::MAX - 1, usize::MAX]);
    }

    #[test]
    fn a_group_too_large_to_list_is_refused() {
        // Fits usize, but not in memory as a list of ranks.
        let err = ProcessGrid::contiguous(&[1 << 62], 0).unwrap_err();
        assert!(matches!(err, ReorgError::BadGrid { .. }), "{err}");
    }

    #[test]
    fn empty_and_zero_sized_grids_are_refused() {
        for dims in [&[][..], &[2, 0]] {
            let err = ProcessGrid::contiguous(dims, 0).unwrap_err();
            assert!(matches!(err, ReorgError::BadGrid { .. }), "{dims:?}: {err}");
        }
    }

    /// A grid extent: small (the grid is listed), or at least 2^61 (any
    /// grid with one has more than 2^60 places: too many to list, or an
    /// overflow), so no case allocates more than a few KiB.
    fn extent() -> impl Strategy<Value = usize> {
        prop_oneof![1usize..=8, (1usize << 61)..=usize::MAX]
    }

    proptest! {
        #[test]
        fn contiguous_never_panics(
            dims in prop::collection::vec(extent(), 1..=MAX_DIMS),
            first in prop_oneof![0usize..1000, (usize::MAX - 5000)..=usize::MAX],
        ) {
            let size = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            match ProcessGrid::contiguous(&dims, first) {
                Ok(g) => {
                    let size = size.expect("an accepted grid's size fits");
                    prop_assert_eq!(g.ranks().len(), size);
                    prop_assert_eq!(g.ranks()[0], first);
                    prop_assert_eq!(g.ranks()[size - 1], first + (size - 1));
                }
                Err(ReorgError::RankOverflow { size: s, .. }) => {
                    prop_assert_eq!(Some(s), size);
                    prop_assert!(first.checked_add(s - 1).is_none());
                }
                Err(ReorgError::BadGrid { .. }) => {
                    prop_assert!(size.is_none_or(|s| s > 1 << 60));
                }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
    }
}
