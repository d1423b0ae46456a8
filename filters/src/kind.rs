//! Buffer kinds: where a chunk's bytes live, and what a filter declares it
//! accepts and hands back.

use std::fmt;

/// Where a buffer's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BufferKind {
    /// Ordinary host memory (`malloc`, a `Vec`).
    HostPageable,
    /// Page-locked host memory a device can copy from by DMA.
    HostPinned,
    /// Memory of one device of a backend (`backend` as the runtime names it).
    Device {
        /// The backend's name (`opencl`, `cuda`, ...).
        backend: String,
        /// Which of the runtime's devices.
        index: u32,
    },
}

impl BufferKind {
    /// A device buffer kind.
    pub fn device(backend: impl Into<String>, index: u32) -> Self {
        BufferKind::Device {
            backend: backend.into(),
            index,
        }
    }

    /// Whether the bytes are in host memory (pageable or pinned).
    pub fn is_host(&self) -> bool {
        !matches!(self, BufferKind::Device { .. })
    }
}

impl fmt::Display for BufferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufferKind::HostPageable => f.write_str("host-pageable"),
            BufferKind::HostPinned => f.write_str("host-pinned"),
            BufferKind::Device { backend, index } => write!(f, "device({backend}:{index})"),
        }
    }
}

/// A set of buffer kinds, as a filter declares what it accepts.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KindPattern {
    /// Any kind at all.
    Any,
    /// Host memory, pageable or pinned.
    AnyHost,
    /// Exactly this kind.
    Exactly(BufferKind),
    /// Memory of any device of this backend.
    DeviceOf(String),
}

impl KindPattern {
    /// Whether `kind` is in the set.
    pub fn matches(&self, kind: &BufferKind) -> bool {
        match self {
            KindPattern::Any => true,
            KindPattern::AnyHost => kind.is_host(),
            KindPattern::Exactly(k) => k == kind,
            KindPattern::DeviceOf(b) => matches!(kind, BufferKind::Device { backend, .. } if backend == b),
        }
    }
}

impl fmt::Display for KindPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KindPattern::Any => f.write_str("any"),
            KindPattern::AnyHost => f.write_str("any host"),
            KindPattern::Exactly(k) => write!(f, "{k}"),
            KindPattern::DeviceOf(b) => write!(f, "device({b}:*)"),
        }
    }
}

/// The kind of buffer a filter hands back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Returns {
    /// The kind it was given (it works in place or allocates alongside).
    SameAsInput,
    /// Always this kind (a host codec that allocates a `Vec`, say).
    Kind(BufferKind),
}

/// What a filter declares about buffers, for one direction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KindDecl {
    /// Kinds it can read its input from (any one of them).
    pub accepts: Vec<KindPattern>,
    /// The kind of its output.
    pub returns: Returns,
    /// Whether it rewrites its input buffer instead of producing a new one.
    pub in_place: bool,
}

impl KindDecl {
    /// A host codec: takes any host memory, hands back pageable memory.
    pub fn host_codec() -> Self {
        KindDecl {
            accepts: vec![KindPattern::AnyHost],
            returns: Returns::Kind(BufferKind::HostPageable),
            in_place: false,
        }
    }

    /// A host filter that works in place on any host memory.
    pub fn host_in_place() -> Self {
        KindDecl {
            accepts: vec![KindPattern::AnyHost],
            returns: Returns::SameAsInput,
            in_place: true,
        }
    }

    /// A device kernel: device memory of `backend` only, output stays there.
    pub fn device_only(backend: impl Into<String>) -> Self {
        KindDecl {
            accepts: vec![KindPattern::DeviceOf(backend.into())],
            returns: Returns::SameAsInput,
            in_place: false,
        }
    }

    /// Whether it accepts `kind`.
    pub fn accepts(&self, kind: &BufferKind) -> bool {
        self.accepts.iter().any(|p| p.matches(kind))
    }

    /// The kind of the output for an input of `kind`.
    pub fn output(&self, input: &BufferKind) -> BufferKind {
        match &self.returns {
            Returns::SameAsInput => input.clone(),
            Returns::Kind(k) => k.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_kinds() {
        let dev = BufferKind::device("opencl", 0);
        assert!(KindPattern::Any.matches(&dev));
        assert!(!KindPattern::AnyHost.matches(&dev));
        assert!(KindPattern::AnyHost.matches(&BufferKind::HostPinned));
        assert!(KindPattern::DeviceOf("opencl".into()).matches(&dev));
        assert!(!KindPattern::DeviceOf("cuda".into()).matches(&dev));
        assert_eq!(
            KindDecl::host_codec().output(&BufferKind::HostPinned),
            BufferKind::HostPageable
        );
        assert_eq!(
            KindDecl::host_in_place().output(&BufferKind::HostPinned),
            BufferKind::HostPinned
        );
    }
}
