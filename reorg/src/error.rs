//! The crate's error type: every bad input is a variant, never a panic.

use ur_memory_manager::MmError;

/// Result with [`ReorgError`].
pub type Result<T> = std::result::Result<T, ReorgError>;

/// What can go wrong building a distribution, a view, a buffer set or a
/// reorganisation, or running one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReorgError {
    /// A global shape with no dimension, too many, or a zero-sized one.
    #[error("global shape {shape:?} is invalid: {reason}")]
    BadShape {
        /// The shape given.
        shape: Vec<usize>,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A process grid with no dimension or a zero-sized one.
    #[error("process grid {grid:?} is invalid: {reason}")]
    BadGrid {
        /// The grid given.
        grid: Vec<usize>,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The grid's size differs from the group's.
    #[error("process grid {grid:?} has {size} places but the group has {group} ranks")]
    GridGroupMismatch {
        /// The grid.
        grid: Vec<usize>,
        /// Its number of places.
        size: usize,
        /// The group's number of ranks.
        group: usize,
    },
    /// [`crate::ProcessGrid::contiguous`] from a first rank whose group's
    /// last rank (`first + size - 1`) passes `usize::MAX`.
    #[error("process grid {grid:?} of {size} places from rank {first} has ranks past usize::MAX")]
    RankOverflow {
        /// The grid.
        grid: Vec<usize>,
        /// Its number of places.
        size: usize,
        /// The first rank asked for.
        first: usize,
    },
    /// A group naming one rank twice.
    #[error("rank {rank} appears twice in the group")]
    DuplicateRank {
        /// The repeated rank.
        rank: usize,
    },
    /// Per-dimension lists (partitions, strides, order) of the wrong length.
    #[error("{what} has {got} entries for {dims} dimensions")]
    DimensionCount {
        /// Which list.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The number of dimensions.
        dims: usize,
    },
    /// Block size 0 in a block-cyclic partition.
    #[error("dimension {dim}: block size 0")]
    ZeroBlock {
        /// The dimension.
        dim: usize,
    },
    /// An overlap wider than the partition's block.
    #[error("dimension {dim}: overlap {overlap} is wider than the block ({block})")]
    OverlapTooWide {
        /// The dimension.
        dim: usize,
        /// The wider of the left and right overlap.
        overlap: usize,
        /// The block size.
        block: usize,
    },
    /// A dimension order that is not a permutation of the dimensions.
    #[error("dimension order {order:?} is not a permutation of 0..{dims}")]
    BadOrder {
        /// The order given.
        order: Vec<usize>,
        /// The number of dimensions.
        dims: usize,
    },
    /// Strides under which two elements of a slice share memory.
    #[error("strides {strides:?} (elements, fastest first) overlap elements of a {shape:?} slice")]
    OverlappingStrides {
        /// The strides in memory order.
        strides: Vec<usize>,
        /// The slice extents in memory order.
        shape: Vec<usize>,
    },
    /// A stride factor of 0.
    #[error("stride factor 0 in memory dimension {dim}")]
    ZeroStride {
        /// The memory dimension (0 = fastest).
        dim: usize,
    },
    /// A local size that does not fit `usize`.
    #[error("local memory size overflows")]
    SizeOverflow,
    /// A rank that is not in the group, or a slice index out of range.
    #[error("rank {rank} slice {slice} does not exist in this distribution")]
    NoSuchSlice {
        /// The rank.
        rank: usize,
        /// The slice index.
        slice: usize,
    },
    /// A rank this buffer set holds no buffer for.
    #[error("this buffer set holds no buffer {index} for rank {rank}")]
    NoSuchBuffer {
        /// The rank.
        rank: usize,
        /// The buffer index (multi-buffering).
        index: usize,
    },
    /// A buffer of a size other than the distribution's local size.
    #[error("buffer for rank {rank} has {got} bytes, the distribution needs {need}")]
    WrongBufferSize {
        /// The rank.
        rank: usize,
        /// Its size.
        got: usize,
        /// The size the distribution's local layout needs.
        need: usize,
    },
    /// A buffer set of zero buffers.
    #[error("a buffer set needs at least one buffer")]
    NoBuffers,
    /// Two distributions of different global data in one reorganisation.
    #[error("different global data: {from} vs {to}")]
    DifferentGlobalData {
        /// The source's global data.
        from: String,
        /// The destination's.
        to: String,
    },
    /// A view asked with a Rust type that is not the data's element type.
    #[error("view of {want} over data of {have}")]
    WrongElementType {
        /// The data's element type.
        have: String,
        /// The view's element type.
        want: &'static str,
    },
    /// Host memory not aligned for the element type.
    #[error("host memory is not aligned to {align} bytes for a view")]
    Misaligned {
        /// The alignment needed.
        align: usize,
    },
    /// A host byte slice of the wrong length for a rank's local memory.
    #[error("host memory of {got} bytes for a local memory of {need}")]
    WrongHostLength {
        /// Its length.
        got: usize,
        /// The local size.
        need: usize,
    },
    /// The source and destination of a reorganisation are the same buffer.
    #[error(
        "source and destination are the same logical buffer (rank {rank}); in-place reorganisation is not supported"
    )]
    SameBuffer {
        /// The rank.
        rank: usize,
    },
    /// A buffer set of another distribution than the plan's.
    #[error("the buffer set's distribution is not the plan's {side}")]
    PlanMismatch {
        /// "source" or "destination".
        side: &'static str,
    },
    /// The memory manager failed.
    #[error(transparent)]
    Memory(#[from] MmError),
}
