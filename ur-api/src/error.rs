//! The one error type of the API.

use std::fmt;

use crate::types::{Backend, MemoryConnection};

/// Result alias used across the API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which kind of object a handle names; carried by [`Error::InvalidHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandleKind {
    /// A platform handle.
    Platform,
    /// A device handle.
    Device,
    /// A context handle.
    Context,
    /// A buffer or sub-buffer handle.
    Buffer,
    /// A queue handle.
    Queue,
    /// An event handle.
    Event,
    /// A program handle.
    Program,
    /// A kernel handle.
    Kernel,
    /// A USM pointer that is not (or no longer) an allocation of the context.
    UsmPointer,
}

impl fmt::Display for HandleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            HandleKind::Platform => "platform",
            HandleKind::Device => "device",
            HandleKind::Context => "context",
            HandleKind::Buffer => "buffer",
            HandleKind::Queue => "queue",
            HandleKind::Event => "event",
            HandleKind::Program => "program",
            HandleKind::Kernel => "kernel",
            HandleKind::UsmPointer => "USM pointer",
        };
        f.write_str(s)
    }
}

/// A per-dimension launch limit, as [`Error::LaunchLimit`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaunchLimit {
    /// Work items of one work group (CUDA's block dimension).
    WorkGroupSize,
    /// Work groups of one launch (CUDA's grid dimension).
    WorkGroupCount,
}

impl std::fmt::Display for LaunchLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LaunchLimit::WorkGroupSize => "work-group size",
            LaunchLimit::WorkGroupCount => "work-group count",
        })
    }
}

/// Every failure the API reports.
///
/// The dyn layer turns bad input into one of the first variants before any
/// adapter sees it; adapters report backend failures with the later ones,
/// mapping native codes in their own `conv.rs`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The handle was released, is stale, or belongs to another adapter.
    #[error("invalid {kind} handle (released, stale, or from another adapter)")]
    InvalidHandle {
        /// What the handle was supposed to name.
        kind: HandleKind,
    },
    /// An object of one context (an event of a wait list, a kernel) was
    /// used with a queue of another context.
    #[error("{what} belongs to another context")]
    WrongContext {
        /// Which argument was in the wrong context.
        what: &'static str,
    },
    /// Memory allocated at one location (context, device) was used at
    /// another, and the adapter does not answer `Unified` from the first to
    /// the second (nor, for a copy, `Migratable`). Moving data between
    /// locations is the memory manager's job, never a side effect of a
    /// command.
    #[error("{what} lives at another location and is not usable at the queue's (connection `{connection}`{})",
        if *copy { "; a copy needs `unified` or `migratable`" } else { "; in-place use needs `unified`" })]
    NotAccessible {
        /// Which argument was at the wrong location.
        what: &'static str,
        /// The adapter's answer from the memory's location to the queue's.
        connection: MemoryConnection,
        /// Whether the use was a copy.
        copy: bool,
    },
    /// The object is still used by others and cannot be released yet.
    #[error("{what} is still in use by {users} {by}")]
    InUse {
        /// What was to be released.
        what: &'static str,
        /// How many users remain.
        users: usize,
        /// What kind of users.
        by: &'static str,
    },
    /// A device was named that the context does not contain.
    #[error("the device is not part of the context")]
    DeviceNotInContext,
    /// A size that must be non-zero (or otherwise constrained) was not.
    #[error("invalid size for {what}: {size}")]
    InvalidSize {
        /// What the size describes.
        what: &'static str,
        /// The size given.
        size: usize,
    },
    /// A region does not fit inside the object it addresses.
    #[error("region at offset {offset} of {len} bytes is out of bounds of {what} ({size} bytes)")]
    OutOfBounds {
        /// What the region was in.
        what: &'static str,
        /// Start of the region.
        offset: usize,
        /// Length of the region.
        len: usize,
        /// Size of the object.
        size: usize,
    },
    /// An alignment that is not a power of two, or an address that violates one.
    #[error("invalid alignment {align}: {why}")]
    InvalidAlignment {
        /// The alignment in question.
        align: usize,
        /// Why it is invalid.
        why: &'static str,
    },
    /// Any other invalid argument.
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A launch exceeds one of the device's per-dimension limits
    /// ([`DeviceLimits::max_work_item_sizes`](crate::limits::DeviceLimits::max_work_item_sizes),
    /// [`DeviceLimits::max_work_groups`](crate::limits::DeviceLimits::max_work_groups)).
    #[error("{limit} {size} in dimension {dim} exceeds the device limit {max}")]
    LaunchLimit {
        /// Which limit.
        limit: LaunchLimit,
        /// The dimension (0, 1 or 2).
        dim: usize,
        /// What the launch asked for in that dimension.
        size: usize,
        /// The device's limit in that dimension.
        max: usize,
    },
    /// The device or adapter lacks a capability the call needs.
    #[error("unsupported: {what}")]
    Unsupported {
        /// The missing capability.
        what: String,
    },
    /// The device ran out of memory.
    #[error("out of device memory")]
    OutOfDeviceMemory,
    /// The host ran out of memory.
    #[error("out of host memory")]
    OutOfHostMemory,
    /// The device was lost (reset, removed, or failed).
    #[error("device lost")]
    DeviceLost,
    /// A program failed to build; the log says why.
    #[error("program build failed:\n{log}")]
    ProgramBuild {
        /// The compiler's build log.
        log: String,
    },
    /// No kernel of that name exists in the program.
    #[error("no kernel named `{name}` in the program")]
    KernelNotFound {
        /// The name asked for.
        name: String,
    },
    /// Kernel arguments do not match what the kernel expects.
    #[error("invalid kernel arguments: {0}")]
    InvalidKernelArgs(String),
    /// Profiling information was asked of an event that has none.
    #[error("profiling information unavailable: {0}")]
    ProfilingUnavailable(&'static str),
    /// A command failed at execution time; carries the cause's text.
    #[error("command failed: {0}")]
    CommandFailed(String),
    /// A backend error that has no more specific variant.
    #[error("{backend} error {code}: {message}")]
    Backend {
        /// The backend that failed.
        backend: Backend,
        /// The native error code.
        code: i64,
        /// The native error name or message.
        message: String,
    },
}

impl Error {
    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(what: impl Into<String>) -> Self {
        Error::Unsupported { what: what.into() }
    }

    /// Shorthand for [`Error::InvalidValue`].
    pub fn invalid(what: impl Into<String>) -> Self {
        Error::InvalidValue(what.into())
    }

    /// True for errors that describe bad input rather than a runtime failure.
    pub fn is_invalid_input(&self) -> bool {
        matches!(
            self,
            Error::InvalidHandle { .. }
                | Error::WrongContext { .. }
                | Error::NotAccessible { .. }
                | Error::InUse { .. }
                | Error::DeviceNotInContext
                | Error::InvalidSize { .. }
                | Error::OutOfBounds { .. }
                | Error::InvalidAlignment { .. }
                | Error::InvalidValue(_)
                | Error::LaunchLimit { .. }
                | Error::InvalidKernelArgs(_)
        )
    }
}
