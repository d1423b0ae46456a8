//! # ur-filters: HDF5 chunk filters that declare their buffer kinds
//!
//! HDF5's filters never said which buffers they can work on, so HDF5 always
//! decodes in host memory. Here a [`Filter`] declares, per direction, the
//! [`BufferKind`]s it accepts and returns ([`KindDecl`]); the planner
//! ([`plan_chunk`]) places every filter of a chunk's pipeline and inserts a
//! copy only where the kinds differ, choosing the placement that moves the
//! fewest bytes; the plan is data ([`ChunkPlan`], [`ChunkPlan::explain`]).
//!
//! - Filters: deflate (HDF5 id 1), shuffle (2), Fletcher-32 (3), LZ4 (the
//!   registered plugin id 32004), bit-exact with HDF5's stored formats.
//! - [`h5`]: real HDF5 files through libhdf5 (loaded at run time): direct
//!   chunk reads (`H5Dread_chunk`), parallel decode, landing a dataset or a
//!   hyperslab in a memory-manager logical buffer at any place.
//!
//! ```
//! use ur_filters::{BufferKind, FilterSpec, Pipeline, plan_chunk, ChunkSource};
//!
//! let p = Pipeline::new(&[FilterSpec::new(2, vec![4]), FilterSpec::new(1, vec![6])])?;
//! let plan = plan_chunk(&p, 0, ChunkSource::Fallback, 1000, 4000, &BufferKind::device("opencl", 0));
//! assert_eq!(plan.copies(), 1);
//! print!("{}", plan.explain());
//! # Ok::<(), ur_filters::FilterError>(())
//! ```

mod codecs;
pub mod device;
mod device_fletcher;
mod error;
mod filter;
pub mod h5;
mod kind;
mod planner;

pub use codecs::{fletcher32, shuffle_into, unshuffle_into, Deflate, Fletcher32, Lz4, Shuffle, LZ4_DEFAULT_BLOCK};
pub use error::{FilterError, H5Error};
pub use filter::{
    Direction, Filter, FilterSpec, Pipeline, FILTER_DEFLATE, FILTER_FLETCHER32, FILTER_LZ4, FILTER_SHUFFLE,
};
pub use kind::{BufferKind, KindDecl, KindPattern, Returns};
pub use planner::{
    plan_chunk, plan_chunk_with, plan_stages, stages, stages_with, ChunkPlan, ChunkSource, DeviceKernels, PlanStep,
    Stage,
};
