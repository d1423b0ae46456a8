//! Programs of host kernels, kernels, and launches.

use std::sync::Arc;

use ur_api::host_kernel::HostKernel;
use ur_api::{Error, HostArg, HostArgs, HostKernelLibrary, KernelArg, NdRange, ProgramSource, Result};

use crate::memory::{Span, UsmTable};
use crate::queue::Work;
use crate::NativeAdapter;

/// A built program: a library of host kernels.
#[derive(Debug, Clone)]
pub struct NativeProgram {
    lib: Arc<HostKernelLibrary>,
}

/// A kernel of a program.
#[derive(Debug, Clone)]
pub struct NativeKernel {
    kernel: HostKernel,
}

impl NativeKernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.kernel.name
    }
}

pub(crate) fn create_program(source: &ProgramSource) -> Result<NativeProgram> {
    match source {
        ProgramSource::Host(lib) => Ok(NativeProgram { lib: lib.clone() }),
        other => Err(Error::unsupported(format!(
            "{:?} programs on the native adapter (host kernels only)",
            other.format()
        ))),
    }
}

pub(crate) fn create_kernel(program: &NativeProgram, name: &str) -> Result<NativeKernel> {
    let kernel = program
        .lib
        .get(name)
        .ok_or_else(|| Error::KernelNotFound { name: name.to_owned() })?;
    Ok(NativeKernel { kernel: kernel.clone() })
}

/// An argument as the launch command holds it.
#[derive(Debug)]
enum Held {
    Mem(Span, usize),
    Scalar(Vec<u8>),
    Local(usize),
}

/// Builds the command running `kernel` over `range` with `args`.
pub(crate) fn launch_work(
    usm: &UsmTable,
    kernel: &NativeKernel,
    range: &NdRange,
    args: &[KernelArg<'_, NativeAdapter>],
) -> Result<Work> {
    let k = &kernel.kernel;
    k.check_arity(args.len())?;
    let held = args
        .iter()
        .map(|a| {
            Ok(match a {
                KernelArg::Buffer(b) => Held::Mem(Span::buffer(b, 0), b.size()),
                KernelArg::Usm(p) => {
                    // The kernel may use everything from the pointer to the
                    // end of its allocation.
                    let (mem, off) = usm.find(*p)?;
                    let len = mem.len() - off;
                    Held::Mem(Span::usm(usm, *p, len)?, len)
                }
                KernelArg::Scalar(bytes) => Held::Scalar(bytes.to_vec()),
                KernelArg::Local(n) => Held::Local(*n),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let func = k.func.clone();
    let range = *range;
    Ok(Box::new(move || {
        let args: Vec<HostArg<'_>> = held
            .iter()
            .map(|h| match h {
                Held::Mem(span, len) => HostArg::Mem {
                    ptr: span.ptr(),
                    len: *len,
                },
                Held::Scalar(bytes) => HostArg::Scalar(bytes),
                Held::Local(n) => HostArg::Local(*n),
            })
            .collect();
        func(&HostArgs { range, args: &args })
    }))
}
