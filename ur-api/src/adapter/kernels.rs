//! [`Kernels`]: the optional group of programs, kernels and launches.

use super::{Api, KernelArg};
use crate::error::{Error, Result};
use crate::types::{KernelGroupInfo, KernelInfo, NativeHandle, NdRange, ProgramSource};

/// Optional group: programs, kernels and launches
/// ([`DeviceCaps::KERNELS`](crate::DeviceCaps::KERNELS)). Without it,
/// `impl Kernels for MyAdapter {}` (and `type Program = ()`,
/// `type Kernel = ()`).
pub trait Kernels: Api {
    /// Builds a program for every device of the context
    /// ([`DeviceCaps::KERNELS`](crate::DeviceCaps::KERNELS); the source's
    /// format is one every device accepts).
    fn create_program(&self, ctx: &Self::Context, source: &ProgramSource, options: &str) -> Result<Self::Program> {
        let _ = (ctx, source, options);
        Err(Error::unsupported("programs"))
    }
    /// Looks up a kernel by (non-empty) name.
    fn create_kernel(&self, program: &Self::Program, name: &str) -> Result<Self::Kernel> {
        let _ = (program, name);
        Err(Error::unsupported("kernels"))
    }
    /// What the dyn layer checks launches of `kernel` against: its argument
    /// count and, where the backend knows them, argument sizes. The default
    /// knows nothing (launches are then checked by the backend alone).
    fn kernel_info(&self, kernel: &Self::Kernel) -> KernelInfo {
        let _ = kernel;
        KernelInfo::default()
    }

    /// A program of `ctx` over a program the caller built with the backend
    /// itself (`handle`); the adapter takes a reference of its own unless
    /// `owned` (the caller's reference passes to the program).
    fn program_from_native(&self, ctx: &Self::Context, handle: NativeHandle, owned: bool) -> Result<Self::Program> {
        let _ = (ctx, handle, owned);
        Err(Error::unsupported("programs from native handles"))
    }
    /// A kernel of `ctx` over a kernel the caller made with the backend
    /// itself (`handle`), with its program; references taken as in
    /// [`Kernels::program_from_native`].
    fn kernel_from_native(
        &self,
        ctx: &Self::Context,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<(Self::Program, Self::Kernel)> {
        let _ = (ctx, handle, owned);
        Err(Error::unsupported("kernels from native handles"))
    }
    /// The names of a built program's kernels. Default: not known.
    fn kernel_names(&self, program: &Self::Program) -> Result<Vec<String>> {
        let _ = program;
        Err(Error::unsupported("listing a program's kernels"))
    }
    /// A kernel's work-group and sub-group figures on `device`, a device of
    /// the kernel's context. Default: nothing reported.
    fn kernel_group_info(&self, kernel: &Self::Kernel, device: &Self::Device) -> Result<KernelGroupInfo> {
        let _ = (kernel, device);
        Ok(KernelGroupInfo::default())
    }
    /// Launches a kernel ([`DeviceCaps::KERNELS`](crate::DeviceCaps::KERNELS)).
    ///
    /// # Safety
    ///
    /// The command contract for every buffer and USM argument; the kernel
    /// belongs to the queue's context; the range is well formed (1..=3
    /// dimensions, non-zero sizes (the dyn layer turns a launch over an
    /// empty range into a barrier), work-group sizes dividing the global
    /// sizes within the device limit, no overflow of `offset + global` or
    /// of the total item count); the argument count (and sizes, where
    /// [`Kernels::kernel_info`] gave them) match; a non-zero offset only
    /// with [`DeviceCaps::GLOBAL_OFFSET`](crate::DeviceCaps::GLOBAL_OFFSET)
    /// and local-memory arguments only with
    /// [`DeviceCaps::LOCAL_MEMORY_ARGS`](crate::DeviceCaps::LOCAL_MEMORY_ARGS).
    unsafe fn enqueue_launch(
        &self,
        queue: &Self::Queue,
        kernel: &Self::Kernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, kernel, range, args, wait);
        Err(Error::unsupported("kernel launches"))
    }
}
