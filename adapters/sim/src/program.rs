//! Programs and kernels: `ur-api`'s shared host-kernel types
//! ([`HostProgram`], [`HostKernel`]), the same as the native adapter's, run
//! by the simulated device over its arena memory. The kernel receives
//! pointers into the arena for the launch only, with the arenas locked;
//! they never leave the adapter.

use ur_api::host_kernel::{HostKernel, HostLaunch, HostProgram, LaunchArg};
use ur_api::{Error, KernelArg, NdRange, Result};

use crate::memory::{access, Operand};
use crate::SimAdapter;
use crate::SimContext;
use crate::SimEvent;
use crate::SimQueue;
use ur_api::{KernelInfo, ProgramSource};

/// A built program: a library of host kernels.
pub type SimProgram = HostProgram;

/// A kernel of a program.
pub type SimKernel = HostKernel;

/// A launch of `kernel` over `range`, its memory arguments taken as
/// operands (held until the launch has run). A buffer or USM argument on a
/// lost device fails it at once.
pub(crate) fn prepare(
    kernel: &HostKernel,
    range: &NdRange,
    args: &[KernelArg<'_, SimAdapter>],
) -> Result<HostLaunch<Operand>> {
    let args = args
        .iter()
        .map(|a| {
            Ok(match a {
                KernelArg::Buffer(b) => {
                    b.device().check()?;
                    LaunchArg::Mem {
                        mem: b.operand(0),
                        len: b.size,
                    }
                }
                // The kernel may use everything from the pointer to the end
                // of its allocation.
                KernelArg::Usm(u) => {
                    let mem = Operand::usm(*u);
                    mem.check()?;
                    LaunchArg::Mem { len: mem.len(), mem }
                }
                KernelArg::Scalar(s) => LaunchArg::Scalar(s.to_vec()),
                KernelArg::Local(n) => LaunchArg::Local(*n),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(HostLaunch::new(kernel, range, args))
}

/// Runs a prepared launch over the whole range with its memory locked;
/// memory on a device lost since the enqueue fails it.
pub(crate) fn run(launch: &HostLaunch<Operand>) -> Result<()> {
    let mems: Vec<&Operand> = launch.mems().collect();
    for m in &mems {
        m.check()?;
    }
    access(&mems, |ptrs| launch.run(ptrs)).map_err(Error::CommandFailed)
}

impl ur_api::adapter::Kernels for crate::SimAdapter {
    fn create_program(&self, _ctx: &SimContext, source: &ProgramSource, _options: &str) -> Result<SimProgram> {
        SimProgram::build(source)
    }

    fn create_kernel(&self, program: &SimProgram, name: &str) -> Result<SimKernel> {
        program.kernel(name)
    }

    fn kernel_info(&self, kernel: &SimKernel) -> KernelInfo {
        kernel.info()
    }

    unsafe fn enqueue_launch(
        &self,
        queue: &SimQueue,
        kernel: &SimKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let launch = prepare(kernel, range, args)?;
        self.submit(queue, wait, move |_| run(&launch))
    }
}
