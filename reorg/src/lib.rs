//! # ur-reorg: distributed N-d data, views, buffer sets and reorganisation
//!
//! After the Data Reorganization Interface (DRI 1.0) and the VSIPL view
//! model it borrows: the programmer says how global N-d data is split over
//! a process grid and laid out in local memory, and reaches the data
//! through views, never through offset arithmetic.
//!
//! - [`GlobalData`]: a shape (1 to [`MAX_DIMS`] dimensions) and an
//!   [`ElementType`] of the DRI table (split complex included).
//! - [`ProcessGrid`]: a group of ranks arranged as a row-major grid.
//! - [`DimPartition`]: per dimension a [`Partition`] (whole, block, cyclic,
//!   block-cyclic) with left/right overlaps and an [`EdgePolicy`].
//! - [`LocalLayout`]: up-front offset, dimension order, [`Strides`].
//! - [`Distribution`]: all of them, checked, queried for slices
//!   ([`Distribution::slices`]: owned and extended global ranges, shape,
//!   place in local memory) and viewed ([`Distribution::view`],
//!   [`Distribution::parts`]).
//! - [`BufferSet`]: `k` local memories per rank, logical buffers of the
//!   memory manager.
//! - [`ReorgPlan`]: A -> B as data ([`ReorgPlan::explain`]), run locally
//!   ([`ReorgPlan::execute_local`], [`ReorgPlan::execute_host`]) or, in
//!   `ur-reorg-mpi`, across processes.
//!
//! ## Design choices
//!
//! - **Index maps are ScaLAPACK's.** A dimension resolves to a block size
//!   `b` ([`DimMap`]): block = `ceil(n / p)` (MPI darray's default), cyclic
//!   = 1, block-cyclic = `b`, whole = `n`. Ownership and local indices are
//!   `indxg2p`/`indxg2l`/`indxl2g`/`numroc` (0-based, source process 0),
//!   tested against the netlib closed forms. Uneven divisions leave short
//!   or empty last blocks; a rank with no data has no slice.
//! - **A slice is one block per dimension with its overlaps.** A rank's
//!   slices are the product of its blocks per dimension (block-cyclic gives
//!   several), row-major in block order. Overlaps are defined on global
//!   indices: slice `[s, e)` holds `[s - left, e + right)`; past a global
//!   edge the [`EdgePolicy`] says what it holds: the other end (toroidal),
//!   zeros, the edge element, or nothing (truncate: the slice is shorter).
//!   An overlap wider than the block is refused (DRI leaves block-cyclic
//!   overlaps loosely defined; this is the definition used here).
//! - **Local memory is slots.** Per plane (two planes for split complex:
//!   real, then imaginary): `offset` elements, then one equal slot per
//!   slice holding the longest extended block in the layout's dimension
//!   order and strides. Equal slots keep every slice's place a product
//!   and let MPI describe a slice with one datatype. Strides are dense,
//!   factors of the dense strides (DRI's "row stride 2" = `Factors([1, 2])`),
//!   or explicit element strides, refused where two elements would share
//!   memory ([`ReorgError::OverlappingStrides`]).
//! - **Views are `ndarray` views.** They are built with the safe
//!   `from_shape` over the host bytes (bounds and aliasing checked by
//!   ndarray); indexing is by local coordinates in global dimension order,
//!   whatever the memory order. ndarray brings row/column/plane sub-views,
//!   iteration and `split_complex` (interleaved re/im views); split complex
//!   gets the same [`num_complex::Complex`] of views from its two planes. Own
//!   types describe the layout (device-agnostic, printable); ndarray only
//!   sees host memory.
//! - **Plans are data.** [`ReorgPlan::new`] lists box copies (source rank,
//!   slice, local start -> destination rank, slice, local start, extent),
//!   covering owned data, neighbours' overlaps and toroidal wraps, then
//!   edge [`Fill`]s (zero, replicate) that run on the destination after
//!   the data arrived, one dimension at a time (which gives the right
//!   corners for any mix of policies). A whole dimension over several
//!   processes is read from grid coordinate 0 and written to all.
//! - **Local execution goes through the memory manager.** Each local memory
//!   is a logical buffer; [`ReorgPlan::execute_local`] makes each
//!   destination current on the host (`with_host`), runs the box copies
//!   from each source rank (also made current on the host: the manager
//!   routes it from any device) as contiguous block copies, tiled
//!   transposes where the two memory orders differ, and per-element loops
//!   only where neither side is contiguous.
//! - **No panics on input**: every bad input is a [`ReorgError`] variant.
//!
//! ## Example: DRI's example #1 distribution
//!
//! ```
//! use ur_reorg::*;
//!
//! // 64 x 20 in DRI's (x, y) order: 20 rows of 64 columns, rows over 5 ranks.
//! let data = GlobalData::new(&[20, 64], ElementType::ComplexF32)?;
//! let grid = ProcessGrid::contiguous(&[5, 1], 0)?;
//! let rows = DimPartition::block_cyclic(2).overlap(1, 1, EdgePolicy::Toroidal);
//! let layout = LocalLayout::row_major().offset(512).strides(Strides::Factors(vec![1, 2]));
//! let dist = Distribution::new(data, grid, &[rows, DimPartition::whole()], layout)?;
//! assert_eq!(dist.slice_count(0)?, 2); // 10 row blocks over 5 ranks
//! let s = dist.slice(0, 0)?;
//! assert_eq!(s.extended, vec![-1..3, 0..64]); // toroidal: global row 19 comes first
//! assert_eq!((s.shape.clone(), s.strides.clone(), s.offset), (vec![4, 64], vec![128, 1], 512));
//! assert_eq!(dist.slice(0, 1)?.owned, vec![10..12, 0..64]); // block 5 = 0 + 5 ranks
//! # Ok::<(), ReorgError>(())
//! ```

mod bufset;
mod dist;
mod elem;
mod error;
mod exec;
mod layout;
pub mod model;
mod partition;
mod plan;
mod view;

pub use bufset::BufferSet;
pub use dist::{Distribution, GlobalData, ProcessGrid, Slice, MAX_DIMS};
pub use elem::{Element, ElementType};
pub use error::{ReorgError, Result};
pub use exec::BoxGeometry;
pub use layout::{LocalLayout, SlotLayout, Strides};
pub use partition::{DimMap, DimPartition, EdgePolicy, Partition};
pub use plan::{BoxCopy, Fill, ReorgPlan};
