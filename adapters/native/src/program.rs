//! Programs of host kernels and their launches. The program and kernel
//! types are `ur-api`'s shared host-kernel ones ([`HostProgram`],
//! [`HostKernel`]), the same as the sim adapter's.

use ur_api::host_kernel::{HostKernel, HostLaunch, HostProgram, LaunchArg};
use ur_api::{KernelArg, NdRange};

use crate::command::Work;
use crate::memory::Span;
use crate::Command;
use crate::NativeAdapter;
use crate::NativeContext;
use crate::NativeEvent;
use crate::NativeQueue;
use ur_api::{KernelInfo, ProgramSource, Result};

/// A built program: a library of host kernels.
pub type NativeProgram = HostProgram;

/// A kernel of a program.
pub type NativeKernel = HostKernel;

/// Builds the command running `kernel` over `range` with `args`. Memory
/// arguments are held (kept alive) by the command until it has run.
pub(crate) fn launch_work(kernel: &HostKernel, range: &NdRange, args: &[KernelArg<'_, NativeAdapter>]) -> Work {
    let held = args
        .iter()
        .map(|a| match a {
            KernelArg::Buffer(b) => LaunchArg::Mem {
                mem: Span::buffer(b, 0),
                len: b.size(),
            },
            // The kernel may use everything from the pointer to the end of
            // its allocation.
            KernelArg::Usm(u) => LaunchArg::Mem {
                mem: Span::usm(*u),
                len: u.alloc.mem.len() - u.offset,
            },
            KernelArg::Scalar(bytes) => LaunchArg::Scalar(bytes.to_vec()),
            KernelArg::Local(n) => LaunchArg::Local(*n),
        })
        .collect();
    let launch = HostLaunch::new(kernel, range, held);
    Box::new(move || {
        let ptrs: Vec<*mut u8> = launch.mems().map(Span::ptr).collect();
        launch.run(&ptrs)
    })
}

impl ur_api::adapter::Kernels for crate::NativeAdapter {
    fn create_program(&self, _: &NativeContext, source: &ProgramSource, _options: &str) -> Result<NativeProgram> {
        NativeProgram::build(source)
    }

    fn create_kernel(&self, program: &NativeProgram, name: &str) -> Result<NativeKernel> {
        program.kernel(name)
    }

    fn kernel_info(&self, kernel: &NativeKernel) -> KernelInfo {
        kernel.info()
    }

    unsafe fn enqueue_launch(
        &self,
        q: &NativeQueue,
        kernel: &NativeKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::Run(launch_work(kernel, range, args)))
    }
}
