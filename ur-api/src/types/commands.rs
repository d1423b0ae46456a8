//! Commands: queue properties, event status and profiling, launch ranges,
//! program sources, kernel descriptions and mapping flags.

use std::fmt;

use bitflags::bitflags;
use serde::Serialize;

use super::ProgramFormats;

/// What the dyn layer checks a kernel's launches against
/// ([`Kernels::kernel_info`](crate::adapter::Kernels::kernel_info)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KernelInfo {
    /// The number of arguments, when the backend knows it.
    pub arg_count: Option<usize>,
    /// Each argument's size in bytes, when the backend knows them (buffers
    /// and USM pointers are 8 bytes). Implies `arg_count`.
    pub arg_sizes: Option<Vec<usize>>,
    /// The kernel's name, where the backend reports it (a kernel made from
    /// a native handle has no name of ours).
    pub name: Option<String>,
}

impl KernelInfo {
    /// Sets the kernel's name.
    pub fn named(self, name: impl Into<String>) -> Self {
        KernelInfo {
            name: Some(name.into()),
            ..self
        }
    }

    /// A kernel taking `n` arguments of sizes unknown.
    pub fn with_arg_count(n: usize) -> Self {
        KernelInfo {
            arg_count: Some(n),
            arg_sizes: None,
            name: None,
        }
    }

    /// A kernel whose arguments have these sizes.
    pub fn with_arg_sizes(sizes: Vec<usize>) -> Self {
        KernelInfo {
            arg_count: Some(sizes.len()),
            arg_sizes: Some(sizes),
            name: None,
        }
    }
}

bitflags! {
    /// How a mapping will be used.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct MapFlags: u32 {
        /// The host reads the mapped memory.
        const READ = 1 << 0;
        /// The host writes the mapped memory (written back on unmap).
        const WRITE = 1 << 1;
        /// The host overwrites the whole range; its old contents need not be read.
        const WRITE_INVALIDATE = 1 << 2;
    }
}

/// Queue creation properties. Queues are always in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueProps {
    /// Record profiling timestamps on this queue's events.
    pub profiling: bool,
}

/// Where a command is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventStatus {
    /// Enqueued, not yet handed to the device.
    Queued,
    /// Handed to the device.
    Submitted,
    /// Running.
    Running,
    /// Finished successfully.
    Complete,
    /// Finished with an error.
    Failed(crate::Error),
}

/// Profiling timestamps of a command, in nanoseconds on a clock that is
/// monotonic per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ProfilingInfo {
    /// When the command was enqueued.
    pub queued: u64,
    /// When it was submitted to the device.
    pub submit: u64,
    /// When it started running.
    pub start: u64,
    /// When it finished.
    pub end: u64,
}

/// A 1-, 2- or 3-dimensional launch range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdRange {
    /// Number of dimensions used (1..=3).
    pub dims: u32,
    /// Global size per dimension; unused dimensions are 1.
    pub global: [usize; 3],
    /// Work-group size per dimension, or `None` for the adapter's choice.
    pub local: Option<[usize; 3]>,
    /// Global offset per dimension.
    pub offset: [usize; 3],
}

impl NdRange {
    /// A 1-D range of `n` work items.
    pub fn d1(n: usize) -> Self {
        NdRange {
            dims: 1,
            global: [n, 1, 1],
            local: None,
            offset: [0; 3],
        }
    }

    /// A 2-D range.
    pub fn d2(x: usize, y: usize) -> Self {
        NdRange {
            dims: 2,
            global: [x, y, 1],
            local: None,
            offset: [0; 3],
        }
    }

    /// A 3-D range.
    pub fn d3(x: usize, y: usize, z: usize) -> Self {
        NdRange {
            dims: 3,
            global: [x, y, z],
            local: None,
            offset: [0; 3],
        }
    }

    /// The same range with a work-group size.
    pub fn with_local(self, local: [usize; 3]) -> Self {
        NdRange {
            local: Some(local),
            ..self
        }
    }

    /// Total work items, or `None` when the count overflows `usize`.
    pub fn total(&self) -> Option<usize> {
        if self.is_empty() {
            return Some(0);
        }
        self.global.iter().try_fold(1usize, |acc, &g| acc.checked_mul(g))
    }

    /// Whether the range holds no work-item: a global size of 0 in one of
    /// its `dims` dimensions. Such a launch is valid and runs nothing (OpenCL
    /// 2.1's rule; SYCL's empty ranges):
    ///
    /// ```
    /// use ur_api::NdRange;
    /// assert!(NdRange::d2(8, 0).is_empty());
    /// assert_eq!(NdRange::d2(8, 0).total(), Some(0));
    /// assert!(!NdRange::d1(1).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.global[..(self.dims as usize).min(3)].contains(&0)
    }
}

/// Where a program comes from.
#[derive(Clone)]
pub enum ProgramSource {
    /// Host kernels: Rust functions registered by name (native and sim adapters).
    Host(std::sync::Arc<crate::host_kernel::HostKernelLibrary>),
    /// OpenCL C source.
    OpenClC(String),
    /// SPIR-V binary.
    SpirV(Vec<u8>),
    /// Several SPIR-V modules linked into one program: the functions and
    /// variables a module imports (`LinkageAttributes ... Import`) are those
    /// another exports. SYCL runtimes link device images so (oneMKL's
    /// kernels call functions of other images). Needs
    /// [`ProgramFormats::SPIRV`] and an adapter that links.
    SpirVModules(Vec<Vec<u8>>),
    /// CUDA C++ source, compiled with NVRTC.
    CudaC(String),
    /// PTX assembly.
    Ptx(String),
}

impl ProgramSource {
    /// The format flag this source needs.
    pub fn format(&self) -> ProgramFormats {
        match self {
            ProgramSource::Host(_) => ProgramFormats::HOST,
            ProgramSource::OpenClC(_) => ProgramFormats::OPENCL_C,
            ProgramSource::SpirV(_) | ProgramSource::SpirVModules(_) => ProgramFormats::SPIRV,
            ProgramSource::CudaC(_) => ProgramFormats::CUDA_C,
            ProgramSource::Ptx(_) => ProgramFormats::PTX,
        }
    }
}

impl fmt::Debug for ProgramSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramSource::Host(lib) => f.debug_tuple("Host").field(&lib.names()).finish(),
            ProgramSource::OpenClC(s) => write!(f, "OpenClC({} bytes)", s.len()),
            ProgramSource::SpirV(s) => write!(f, "SpirV({} bytes)", s.len()),
            ProgramSource::SpirVModules(m) => {
                let sizes: Vec<usize> = m.iter().map(Vec::len).collect();
                write!(f, "SpirVModules({sizes:?} bytes)")
            }
            ProgramSource::CudaC(s) => write!(f, "CudaC({} bytes)", s.len()),
            ProgramSource::Ptx(s) => write!(f, "Ptx({} bytes)", s.len()),
        }
    }
}
