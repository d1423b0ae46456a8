//! [`FileIoError`]: the one error type of the crate.

use std::path::PathBuf;

use crate::plan::BackendKind;

/// Everything that can go wrong. Input errors (the first group) are raised
/// before any byte moves: nothing is read or written anywhere.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileIoError {
    /// The file handle was closed.
    #[error("the file {path} is closed")]
    Closed {
        /// The file.
        path: PathBuf,
    },
    /// A write to a file opened for reading only.
    #[error("the file {path} was opened for reading only")]
    NotWritable {
        /// The file.
        path: PathBuf,
    },
    /// `file_offset + size` (or a buffer offset plus size) does not fit.
    #[error("offset {offset} + size {size} overflows")]
    OffsetOverflow {
        /// The offset.
        offset: u64,
        /// The size.
        size: usize,
    },
    /// The device buffer (or USM allocation) holds fewer bytes than asked for.
    #[error("the buffer holds {available} bytes from the given offset, the request needs {needed}")]
    BufferTooSmall {
        /// Bytes the request needs.
        needed: usize,
        /// Bytes the target holds from its offset.
        available: usize,
    },
    /// The backend asked for is offered for no part of the request.
    #[error("backend {backend} is not offered for this request: {reason}")]
    NotOffered {
        /// The backend asked for.
        backend: BackendKind,
        /// Why (its score's reason).
        reason: String,
    },
    /// A bad setting (environment variable or field).
    #[error("invalid setting {name}={value}: {reason}")]
    Setting {
        /// The setting's name (the environment variable).
        name: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Opening a file failed.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// A read or write of the file failed.
    #[error("{op} of {len} bytes at file offset {offset} failed: {source}")]
    Io {
        /// `pread`, `pwrite`, `O_DIRECT pread`, ...
        op: &'static str,
        /// File offset.
        offset: u64,
        /// Length.
        len: usize,
        /// The system error.
        source: std::io::Error,
    },
    /// A runtime call (map, copy, query) failed.
    #[error("runtime: {0}")]
    Runtime(#[from] ur_api::Error),
    /// A memory-manager call failed.
    #[error("memory manager: {0}")]
    Manager(#[from] ur_memory_manager::MmError),
    /// A fault injected for tests ([`crate::FileIo::inject_fastpath_failures`]).
    #[error("injected fastpath failure (test fault injection)")]
    Injected,
}

/// The crate's result type.
pub type Result<T, E = FileIoError> = std::result::Result<T, E>;

impl FileIoError {
    pub(crate) fn io(op: &'static str, offset: u64, len: usize, source: std::io::Error) -> Self {
        FileIoError::Io {
            op,
            offset,
            len,
            source,
        }
    }
}
