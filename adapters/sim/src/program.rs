//! Programs and kernels: host kernels ([`ur_api::HostKernelLibrary`]) run by
//! the simulated device over its arena memory. The kernel receives pointers
//! into the arena for the launch only; they never leave the adapter.

use std::sync::Arc;

use ur_api::host_kernel::HostKernel;
use ur_api::{Error, HostArg, HostArgs, HostKernelLibrary, KernelArg, NdRange, ProgramSource, Result};

use crate::device::Shared;
use crate::memory::{access, Mem};
use crate::SimAdapter;

/// A built program: the host kernel library it was made from.
#[derive(Debug)]
pub struct SimProgram {
    lib: Arc<HostKernelLibrary>,
}

/// A kernel of a program.
#[derive(Debug)]
pub struct SimKernel {
    kernel: HostKernel,
}

pub(crate) fn create_program(source: &ProgramSource) -> Result<SimProgram> {
    match source {
        ProgramSource::Host(lib) => Ok(SimProgram { lib: lib.clone() }),
        other => Err(Error::unsupported(format!(
            "{:?} programs on simulated devices (host kernels only)",
            other.format()
        ))),
    }
}

pub(crate) fn create_kernel(program: &SimProgram, name: &str) -> Result<SimKernel> {
    program
        .lib
        .get(name)
        .cloned()
        .map(|kernel| SimKernel { kernel })
        .ok_or_else(|| Error::KernelNotFound { name: name.to_owned() })
}

/// One argument resolved at enqueue time.
#[derive(Debug)]
enum LaunchArg {
    Mem { mem: Mem, len: usize },
    Scalar(Vec<u8>),
    Local(usize),
}

/// A launch ready to run on a queue's worker.
#[derive(Debug)]
pub(crate) struct Launch {
    kernel: HostKernel,
    range: NdRange,
    args: Vec<LaunchArg>,
}

/// Resolves the arguments (USM pointers to their allocations) and checks the arity.
pub(crate) fn prepare(
    shared: &Shared,
    kernel: &SimKernel,
    range: &NdRange,
    args: &[KernelArg<'_, SimAdapter>],
) -> Result<Launch> {
    let k = &kernel.kernel;
    k.check_arity(args.len())?;
    let args = args
        .iter()
        .map(|a| {
            Ok(match a {
                KernelArg::Buffer(b) => {
                    b.alloc.device.check()?;
                    LaunchArg::Mem {
                        mem: b.mem(0),
                        len: b.size,
                    }
                }
                KernelArg::Usm(p) => {
                    let mem = shared.usm.resolve(*p)?;
                    if let Some(d) = mem.device() {
                        d.check()?;
                    }
                    LaunchArg::Mem { len: mem.len(), mem }
                }
                KernelArg::Scalar(s) => LaunchArg::Scalar(s.to_vec()),
                KernelArg::Local(n) => LaunchArg::Local(*n),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Launch {
        kernel: k.clone(),
        range: *range,
        args,
    })
}

impl Launch {
    /// Runs the kernel over the whole range, with its memory locked.
    pub(crate) fn run(self) -> Result<()> {
        let mems: Vec<&Mem> = self
            .args
            .iter()
            .filter_map(|a| match a {
                LaunchArg::Mem { mem, .. } => Some(mem),
                _ => None,
            })
            .collect();
        for m in &mems {
            if let Some(d) = m.device() {
                d.check()?;
            }
        }
        let name = self.kernel.name.clone();
        let outcome = access(&mems, |ptrs| {
            let mut p = ptrs.iter();
            let host_args: Vec<HostArg<'_>> = self
                .args
                .iter()
                .map(|a| match a {
                    LaunchArg::Mem { len, .. } => HostArg::Mem {
                        ptr: *p.next().expect("one pointer per memory argument"),
                        len: *len,
                    },
                    LaunchArg::Scalar(s) => HostArg::Scalar(s),
                    LaunchArg::Local(n) => HostArg::Local(*n),
                })
                .collect();
            (self.kernel.func)(&HostArgs {
                range: self.range,
                args: &host_args,
            })
        });
        outcome.map_err(|e| Error::CommandFailed(format!("kernel `{name}`: {e}")))
    }
}
