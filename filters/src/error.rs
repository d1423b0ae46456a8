//! Typed errors.

use std::path::PathBuf;

/// A filter failed on one chunk.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    /// The pipeline names a filter this crate does not implement.
    #[error("unknown filter id {id}")]
    Unknown {
        /// The filter id.
        id: u32,
    },
    /// The stored Fletcher-32 checksum does not match the data.
    #[error("fletcher32 mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Checksum {
        /// The checksum stored after the data.
        stored: u32,
        /// The checksum of the data.
        computed: u32,
    },
    /// The stored bytes are not a valid encoding.
    #[error("{filter}: corrupt input: {reason}")]
    Corrupt {
        /// The filter.
        filter: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// Reading or writing an HDF5 dataset failed.
#[derive(Debug, thiserror::Error)]
pub enum H5Error {
    /// libhdf5 could not be loaded.
    #[error("libhdf5 not available: {0}")]
    Library(String),
    /// An HDF5 call failed.
    #[error("{call} failed on {what}")]
    Call {
        /// The HDF5 function.
        call: &'static str,
        /// The object (file, dataset, chunk).
        what: String,
    },
    /// The dataset's layout is not chunked.
    #[error("dataset {dataset} is not chunked (layout {layout})")]
    NotChunked {
        /// The dataset.
        dataset: String,
        /// HDF5's layout code.
        layout: i32,
    },
    /// The dataset's pipeline has a filter we cannot run.
    #[error("dataset {dataset}: {source}")]
    Pipeline {
        /// The dataset.
        dataset: String,
        /// What is wrong.
        source: FilterError,
    },
    /// One chunk failed to decode.
    #[error("dataset {dataset}, chunk at {chunk:?}: filter {filter} ({name}): {source}")]
    Chunk {
        /// The dataset.
        dataset: String,
        /// The chunk's logical offset (in elements, per dimension).
        chunk: Vec<u64>,
        /// The failing filter's index in the pipeline.
        filter: usize,
        /// Its name.
        name: &'static str,
        /// What it reported.
        source: FilterError,
    },
    /// A chunk's decoded size is not the chunk's size.
    #[error("dataset {dataset}, chunk at {chunk:?}: decoded {got} bytes, expected {expected}")]
    ChunkSize {
        /// The dataset.
        dataset: String,
        /// The chunk's logical offset.
        chunk: Vec<u64>,
        /// Bytes decoded.
        got: usize,
        /// Bytes expected.
        expected: usize,
    },
    /// A hyperslab outside the dataset.
    #[error("dataset {dataset}: selection start {start:?} count {count:?} outside shape {shape:?}")]
    OutOfRange {
        /// The dataset.
        dataset: String,
        /// Start per dimension.
        start: Vec<u64>,
        /// Count per dimension.
        count: Vec<u64>,
        /// The dataset's shape.
        shape: Vec<u64>,
    },
    /// A path with an interior NUL.
    #[error("bad name {0:?}")]
    BadName(PathBuf),
    /// The destination failed.
    #[error(transparent)]
    Memory(#[from] ur_memory_manager::MmError),
}
