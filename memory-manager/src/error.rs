//! The memory manager's typed errors.

use std::ops::Range;

/// Result alias of the memory manager.
pub type Result<T, E = MmError> = std::result::Result<T, E>;

/// Every failure the memory manager reports. Whatever the variant, every
/// logical buffer's data is intact: a failure never loses the last valid
/// copy of a byte.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MmError {
    /// An allocation failed even after evicting what could be evicted.
    #[error("out of memory at {place} allocating {size} bytes for {buffer} (evicted {evicted} allocations first)")]
    OutOfMemory {
        /// The place (see [`crate::MemoryManager::place_name`]).
        place: String,
        /// The logical buffer that needed the memory.
        buffer: String,
        /// Bytes asked for.
        size: usize,
        /// How many allocations were evicted before giving up.
        evicted: usize,
        /// The adapter's last answer.
        #[source]
        source: Box<ur_api::Error>,
    },
    /// A copy failed. The source stays valid, the destination stays stale;
    /// the next access plans the copy again. Transfers between a device
    /// and the caller's memory ([`crate::MemoryManager::read`] straight from
    /// a device, initial data of [`crate::MemoryManager::create_buffer_with`])
    /// report their failures here too, naming the caller's side
    /// `caller memory`; a failed read leaves the caller's slice partly
    /// written.
    #[error("copy of [{}, {}) of {buffer} from {from} to {to} failed", range.start, range.end)]
    CopyFailed {
        /// The logical buffer.
        buffer: String,
        /// Source place (or `caller memory`).
        from: String,
        /// Destination place (or `caller memory`).
        to: String,
        /// Byte range of the logical buffer.
        range: Range<usize>,
        /// The adapter's error.
        #[source]
        source: Box<ur_api::Error>,
    },
    /// Bytes whose only current copy is on a device that was lost. Nothing
    /// else of the buffer is affected; writing the ranges makes them usable again.
    #[error("{buffer}: bytes {ranges:?} were current only on a lost device")]
    DataLost {
        /// The logical buffer.
        buffer: String,
        /// The ranges that cannot be read.
        ranges: Vec<Range<usize>>,
    },
    /// A place that this manager was not created with.
    #[error("{0} is not a place of this memory manager")]
    UnknownPlace(String),
    /// A logical buffer handle that was released or belongs to another manager.
    #[error("unknown or released logical buffer")]
    UnknownBuffer,
    /// A byte range outside the logical buffer.
    #[error("range [{}, {}) is out of bounds of {buffer} ({size} bytes)", range.start, range.end)]
    OutOfBounds {
        /// The logical buffer.
        buffer: String,
        /// The range asked for.
        range: Range<usize>,
        /// The buffer's size.
        size: usize,
    },
    /// The buffer still has live accesses ([`crate::Acquired`] guards).
    #[error("{buffer} is in use by {pins} live accesses")]
    InUse {
        /// The logical buffer.
        buffer: String,
        /// Live guards.
        pins: usize,
    },
    /// A logical buffer of another memory manager.
    #[error("{buffer} belongs to another memory manager")]
    ForeignBuffer {
        /// The buffer's name in its own manager.
        buffer: String,
    },
    /// `offset + len` does not fit in `usize`.
    #[error("offset {offset} plus length {len} overflows")]
    RangeOverflow {
        /// Offset asked for.
        offset: usize,
        /// Length asked for.
        len: usize,
    },
    /// One buffer named twice in one [`crate::MemoryManager::acquire_all`].
    #[error("{buffer} appears twice in one acquire_all request")]
    DuplicateBuffer {
        /// The logical buffer.
        buffer: String,
    },
    /// A device view of an access at the host place.
    #[error("the access is at the host place: it has no device buffer or queue")]
    NotADevice,
    /// Initial data longer than the buffer.
    #[error("initial data of {len} bytes does not fit a buffer of {size} bytes")]
    InitTooLong {
        /// The buffer's size.
        size: usize,
        /// Bytes of initial data.
        len: usize,
    },
    /// [`crate::MemoryManager::copy_via`] with a route that is not one of
    /// [`crate::MemoryManager::routes`] between the two places.
    #[error("the manager cannot copy from {from} to {to} by {route}")]
    RouteUnavailable {
        /// The route asked for.
        route: String,
        /// Source place.
        from: String,
        /// Destination place.
        to: String,
    },
    /// [`crate::MemoryManager::copy_via`] from a place where part of the
    /// range is not current.
    #[error("[{}, {}) of {buffer} is not current at {place}", range.start, range.end)]
    NotCurrent {
        /// The logical buffer.
        buffer: String,
        /// The place asked to be the source.
        place: String,
        /// The range asked for.
        range: Range<usize>,
    },
    /// Any other failure of the runtime below.
    #[error(transparent)]
    Runtime(#[from] ur_api::Error),
}
