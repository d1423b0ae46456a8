//! Host kernels: Rust functions registered by name, the program format of
//! adapters whose devices execute host code (native, sim).
//!
//! A SYCL-like runtime that compiles kernels to host code registers them in a
//! [`HostKernelLibrary`] and builds a program from it with
//! [`ProgramSource::Host`].
//!
//! ```
//! use ur_api::host_kernel::{HostKernelLibrary, HostArgs};
//!
//! let mut lib = HostKernelLibrary::new();
//! // add_scalar(buffer<u32>, u32): adds the scalar to every element.
//! lib.register("add_scalar", 2, |args: &HostArgs<'_>| {
//!     let k: u32 = args.scalar(1)?;
//!     // SAFETY: the adapter hands each kernel exclusive access to its buffers
//!     // for the duration of the launch.
//!     let data = unsafe { args.mem_mut::<u32>(0)? };
//!     for i in 0..args.range.global[0] {
//!         data[i] += k;
//!     }
//!     Ok(())
//! });
//! assert_eq!(lib.names(), vec!["add_scalar"]);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::types::{KernelInfo, NdRange, ProgramSource};

/// One argument as a host kernel sees it.
#[derive(Debug, Clone, Copy)]
pub enum HostArg<'a> {
    /// Memory (a buffer or USM allocation) at a host address the kernel may access.
    Mem {
        /// Start address.
        ptr: *mut u8,
        /// Length in bytes.
        len: usize,
    },
    /// A by-value argument.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

/// What a host kernel receives for one launch.
#[derive(Debug)]
pub struct HostArgs<'a> {
    /// The launch range.
    pub range: NdRange,
    /// The arguments, in order.
    pub args: &'a [HostArg<'a>],
}

impl HostArgs<'_> {
    /// Reads scalar argument `i` as a `T`.
    pub fn scalar<T: Copy>(&self, i: usize) -> Result<T, String> {
        match self.args.get(i) {
            Some(HostArg::Scalar(b)) if b.len() == std::mem::size_of::<T>() => {
                // SAFETY: the slice has exactly size_of::<T>() bytes; read_unaligned
                // has no alignment requirement; T: Copy has no drop glue. Callers only
                // use plain-data scalar types (integers, floats).
                Ok(unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<T>()) })
            }
            Some(other) => Err(format!(
                "argument {i}: expected a {}-byte scalar, got {other:?}",
                std::mem::size_of::<T>()
            )),
            None => Err(format!("argument {i} missing")),
        }
    }

    /// Views memory argument `i` as a slice of `T` (trailing bytes ignored).
    ///
    /// # Safety
    ///
    /// No other live reference may alias the same memory while the returned
    /// slice is used (two arguments naming one buffer must not both be
    /// borrowed mutably), and `T` must be valid for any bit pattern.
    #[allow(clippy::mut_from_ref)] // reason: the adapter grants the kernel exclusive access to argument memory for the launch; the caller upholds no-aliasing per the contract above.
    pub unsafe fn mem_mut<T: Copy>(&self, i: usize) -> Result<&mut [T], String> {
        match self.args.get(i) {
            Some(&HostArg::Mem { ptr, len }) => {
                if ptr as usize % std::mem::align_of::<T>() != 0 {
                    return Err(format!("argument {i}: memory not aligned for the element type"));
                }
                // SAFETY: the adapter guarantees ptr is valid for len bytes during the
                // launch; alignment checked above; aliasing is the caller's contract.
                Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<T>(), len / std::mem::size_of::<T>()) })
            }
            Some(other) => Err(format!("argument {i}: expected memory, got {other:?}")),
            None => Err(format!("argument {i} missing")),
        }
    }
}

/// A host kernel function. It runs the whole range of one launch and
/// returns an error text on failure.
pub type HostKernelFn = Arc<dyn Fn(&HostArgs<'_>) -> Result<(), String> + Send + Sync>;

/// A registered kernel: its name, argument count and function.
#[derive(Clone)]
pub struct HostKernel {
    /// Kernel name.
    pub name: String,
    /// Number of arguments it takes.
    pub arity: usize,
    /// The function.
    pub func: HostKernelFn,
}

impl fmt::Debug for HostKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostKernel")
            .field("name", &self.name)
            .field("arity", &self.arity)
            .finish_non_exhaustive()
    }
}

impl HostKernel {
    /// What the dyn layer checks launches against: the argument count.
    pub fn info(&self) -> KernelInfo {
        KernelInfo::with_arg_count(self.arity)
    }
}

/// A set of host kernels keyed by name.
#[derive(Debug, Clone, Default)]
pub struct HostKernelLibrary {
    kernels: BTreeMap<String, HostKernel>,
}

impl HostKernelLibrary {
    /// An empty library.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) a kernel taking `arity` arguments.
    pub fn register(
        &mut self,
        name: &str,
        arity: usize,
        func: impl Fn(&HostArgs<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.kernels.insert(
            name.to_owned(),
            HostKernel {
                name: name.to_owned(),
                arity,
                func: Arc::new(func),
            },
        );
        self
    }

    /// Looks a kernel up by name.
    pub fn get(&self, name: &str) -> Option<&HostKernel> {
        self.kernels.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.kernels.keys().map(String::as_str).collect()
    }
}

/// A program of host kernels, as every adapter whose devices run host code
/// (native, sim) holds it: the library it was built from.
#[derive(Debug, Clone)]
pub struct HostProgram {
    lib: Arc<HostKernelLibrary>,
}

impl HostProgram {
    /// Builds a program from a [`ProgramSource::Host`] library. The dyn
    /// layer only passes formats the device listed, so another format is
    /// refused here only when an adapter is called directly.
    pub fn build(source: &ProgramSource) -> Result<Self, crate::Error> {
        match source {
            ProgramSource::Host(lib) => Ok(HostProgram { lib: lib.clone() }),
            other => Err(crate::Error::unsupported(format!(
                "{:?} programs on a host-kernel device",
                other.format()
            ))),
        }
    }

    /// The kernel called `name`.
    pub fn kernel(&self, name: &str) -> Result<HostKernel, crate::Error> {
        self.lib
            .get(name)
            .cloned()
            .ok_or_else(|| crate::Error::KernelNotFound { name: name.to_owned() })
    }
}

/// One argument of a host-kernel launch as the launch command holds it
/// until it runs: memory the adapter resolves to an address when the
/// kernel runs (`M` is the adapter's handle on it, which keeps it alive),
/// a scalar's bytes, or a local-memory size.
#[derive(Debug)]
pub enum LaunchArg<M> {
    /// Memory of `len` bytes.
    Mem {
        /// The adapter's handle on the memory.
        mem: M,
        /// Bytes the kernel may access.
        len: usize,
    },
    /// A by-value argument's bytes.
    Scalar(Vec<u8>),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

/// A host-kernel launch prepared at enqueue time, run later on a queue's
/// worker.
#[derive(Debug)]
pub struct HostLaunch<M> {
    kernel: HostKernel,
    range: NdRange,
    args: Vec<LaunchArg<M>>,
}

impl<M> HostLaunch<M> {
    /// A launch of `kernel` over `range`; the dyn layer checked the
    /// argument count against [`HostKernel::info`].
    pub fn new(kernel: &HostKernel, range: &NdRange, args: Vec<LaunchArg<M>>) -> Self {
        HostLaunch {
            kernel: kernel.clone(),
            range: *range,
            args,
        }
    }

    /// The memory arguments, in order.
    pub fn mems(&self) -> impl Iterator<Item = &M> {
        self.args.iter().filter_map(|a| match a {
            LaunchArg::Mem { mem, .. } => Some(mem),
            _ => None,
        })
    }

    /// Runs the kernel over the whole range; `ptrs` holds each memory
    /// argument's current host address, in the order of [`HostLaunch::mems`].
    /// A kernel's error text comes back prefixed with its name (for
    /// [`Error::CommandFailed`](crate::Error::CommandFailed)).
    pub fn run(&self, ptrs: &[*mut u8]) -> Result<(), String> {
        let mut p = ptrs.iter();
        let args: Vec<HostArg<'_>> = self
            .args
            .iter()
            .map(|a| match a {
                LaunchArg::Mem { len, .. } => HostArg::Mem {
                    ptr: *p.next().expect("one address per memory argument"),
                    len: *len,
                },
                LaunchArg::Scalar(s) => HostArg::Scalar(s),
                LaunchArg::Local(n) => HostArg::Local(*n),
            })
            .collect();
        (self.kernel.func)(&HostArgs {
            range: self.range,
            args: &args,
        })
        .map_err(|e| format!("kernel `{}`: {e}", self.kernel.name))
    }
}
