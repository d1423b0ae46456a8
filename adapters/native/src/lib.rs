//! # ur-native: the host CPU adapter
//!
//! Always present, the embedded default: one platform ("Native host") with
//! one CPU device, described from the real machine (`/proc/cpuinfo`,
//! `/proc/meminfo`, available parallelism).
//!
//! ## Design choices
//!
//! - **All memory is ordinary host memory.** Buffers are zeroed, aligned
//!   heap blocks (64 bytes, a cache line; 4096 for `ALLOC_HOST_PTR`), or the
//!   caller's memory with `USE_HOST_PTR`. USM of every kind is the same, and
//!   a USM pointer is its host address. Hence [`Adapter::memory_connection`]
//!   is `Unified` for every pair of locations, and mapping is zero-copy.
//! - **Memory is shared by `Arc`**: a sub-buffer, and every command in
//!   flight, holds the memory it touches, so releasing a buffer or freeing
//!   USM while commands still use it is safe: the memory goes back to the
//!   allocator when the last of them finishes (a deferred free; `usm_free`
//!   never blocks). Only memory named by a command's arguments is tracked:
//!   a kernel that follows pointers stored in memory must be waited for
//!   before that memory is freed.
//! - **One worker thread per queue.** Enqueueing sends the command, by
//!   value, down a channel and returns an event at once (no per-command
//!   allocation; an event is a point on its queue's timeline); the worker runs commands
//!   in order, each after its wait list. A failed dependency fails the
//!   command with [`ur_api::Error::CommandFailed`] naming the cause; a panicking
//!   kernel fails its event, not the worker. `flush` has nothing to do
//!   (submission is immediate); dropping a queue lets pending work finish
//!   and joins the worker.
//! - **Profiling** timestamps are nanoseconds on one process-wide monotonic
//!   clock, recorded only on profiling queues.
//! - **Kernels** are [`ur_api::HostKernelLibrary`] functions; a launch runs the
//!   whole range in one call on the queue's worker.
//! - **No validation**: the dyn layer checks parameters before this adapter
//!   sees them, and the data-path methods are `unsafe fn` whose contracts
//!   (see [`ur_api::Adapter`]) say what the caller guarantees. The adapter
//!   keeps no USM or registration books of its own: USM arrives resolved
//!   to its [`NativeUsm`], registrations are the dyn layer's.
//!
//! ```
//! use ur_api::{BufferDesc, QueueProps, Runtime};
//! let mut rt = Runtime::new();
//! rt.add(ur_native::NativeAdapter::new())?;
//! let dev = rt.all_devices()[0];
//! let ctx = rt.create_context(&[dev])?;
//! let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
//! let buf = rt.create_buffer(ctx, &BufferDesc::new(12), None)?;
//! rt.complete(rt.enqueue_fill(q, buf, 0, 12, &[1, 2, 3], &[])?)?;
//! let mut back = [0u8; 12];
//! rt.read(q, buf, 0, &mut back)?;
//! assert_eq!(back, [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]);
//! # Ok::<(), ur_api::Error>(())
//! ```

mod command;
mod device;
mod memory;
mod program;
mod queue;
#[cfg(test)]
mod tests;
mod timeline;

use command::Command;
use memory::{HostMem, MapTable, Span};
use ur_api::{
    Adapter, Backend, BufferDesc, DeviceAddr, DeviceInfo, EventStatus, HostPtr, KernelArg, KernelInfo, Loc, MapFlags,
    MemArg, MemFlags, MemoryConnection, NdRange, PlatformInfo, ProfilingInfo, ProgramSource, QueueProps, RectCopy,
    Result, UsmDesc, UsmPtr, UsmRef,
};

pub use device::{NativeDevice, NativePlatform, BASE_ALIGN, PAGE_ALIGN, PLATFORM_NAME};
pub use memory::{NativeBuffer, NativeContext, NativeUsm};
pub use program::{NativeKernel, NativeProgram};
pub use queue::{NativeEvent, NativeQueue};

/// The host CPU adapter.
///
/// Used directly through the static [`Adapter`] trait, whose data-path
/// methods are `unsafe` (the caller takes on the checks the dyn layer
/// would make):
///
/// ```
/// use ur_api::{Adapter, BufferDesc, HostPtr, QueueProps};
/// use ur_native::NativeAdapter;
///
/// let a = NativeAdapter::new();
/// let platform = a.platforms()?.remove(0);
/// let dev = a.devices(&platform)?.remove(0);
/// let ctx = a.create_context(&[&dev])?;
/// let q = a.create_queue(&ctx, &dev, &QueueProps::default())?;
/// // SAFETY: a non-zero size within the device's limit, no host memory.
/// let buf = unsafe { a.create_buffer(&ctx, &BufferDesc::new(8).on(&dev), None)? };
/// // SAFETY: the fill lies inside the 8-byte buffer, which is at the queue's location.
/// let filled = unsafe { a.enqueue_fill(&q, &buf, 0, 8, &[0xAB], &[])? };
/// let mut out = [0u8; 8];
/// // SAFETY: `out` outlives the wait below and nothing else touches it;
/// // the read lies inside the buffer.
/// let read = unsafe {
///     let dst = HostPtr::new(out.as_mut_ptr(), out.len());
///     a.enqueue_read(&q, &buf, 0, dst, &[&filled])?
/// };
/// a.wait(&[&read])?;
/// assert_eq!(out, [0xAB; 8]);
/// # Ok::<(), ur_api::Error>(())
/// ```
///
/// Safe code cannot skip those checks: an out-of-bounds fill through the
/// static trait does not compile without an `unsafe` block (whose
/// `// SAFETY:` comment would have to claim the range fits)...
///
/// ```compile_fail,E0133
/// use ur_api::{Adapter, BufferDesc, QueueProps};
/// let a = ur_native::NativeAdapter::new();
/// let platform = a.platforms()?.remove(0);
/// let dev = a.devices(&platform)?.remove(0);
/// let ctx = a.create_context(&[&dev])?;
/// let q = a.create_queue(&ctx, &dev, &QueueProps::default())?;
/// # let b: ur_native::NativeBuffer = todo!();
/// a.enqueue_fill(&q, &b, 0, 1 << 20, &[0xAA], &[])?; // E0133: call to unsafe function
/// # Ok::<(), ur_api::Error>(())
/// ```
///
/// ... and through [`ur_api::Runtime`] the dyn layer refuses it:
///
/// ```
/// use ur_api::{BufferDesc, Error, QueueProps, Runtime};
/// let mut rt = Runtime::new();
/// rt.add(ur_native::NativeAdapter::new())?;
/// let dev = rt.all_devices()[0];
/// let ctx = rt.create_context(&[dev])?;
/// let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
/// let b = rt.create_buffer(ctx, &BufferDesc::new(64), None)?;
/// let r = rt.enqueue_fill(q, b, 0, 1 << 20, &[0xAA], &[]);
/// assert!(matches!(r, Err(Error::OutOfBounds { .. })));
/// # Ok::<(), ur_api::Error>(())
/// ```
#[derive(Debug)]
pub struct NativeAdapter {
    info: DeviceInfo,
    maps: MapTable,
}

impl Default for NativeAdapter {
    fn default() -> Self {
        Self::new()
    }
}

impl NativeAdapter {
    /// The adapter, with the host CPU described from this machine.
    pub fn new() -> NativeAdapter {
        NativeAdapter {
            info: device::discover(),
            maps: MapTable::default(),
        }
    }
}

impl Adapter for NativeAdapter {
    type Platform = NativePlatform;
    type Device = NativeDevice;
    type Context = NativeContext;
    type Buffer = NativeBuffer;
    type Usm = NativeUsm;
    type Queue = NativeQueue;
    type Event = NativeEvent;
    type Program = NativeProgram;
    type Kernel = NativeKernel;

    fn backend(&self) -> Backend {
        Backend::Native
    }

    fn platforms(&self) -> Result<Vec<NativePlatform>> {
        Ok(vec![NativePlatform])
    }

    fn platform_info(&self, _: &NativePlatform) -> Result<PlatformInfo> {
        Ok(device::platform_info())
    }

    fn devices(&self, _: &NativePlatform) -> Result<Vec<NativeDevice>> {
        Ok(vec![NativeDevice])
    }

    fn device_info(&self, _: &NativeDevice) -> Result<DeviceInfo> {
        Ok(self.info.clone())
    }

    fn create_context(&self, _: &[&NativeDevice]) -> Result<NativeContext> {
        Ok(NativeContext::default())
    }

    fn memory_connection(&self, _: Loc<'_, Self>, _: Loc<'_, Self>) -> MemoryConnection {
        // Every allocation of this adapter, in any context, is ordinary host
        // memory of this process: every native context and device, and the
        // host itself, can address it as it is. No copy is ever needed.
        MemoryConnection::Unified
    }

    unsafe fn create_buffer(
        &self,
        _: &NativeContext,
        desc: &BufferDesc<&NativeDevice>,
        init: Option<HostPtr>,
    ) -> Result<NativeBuffer> {
        if let Some(mem) = init.filter(|_| desc.flags.contains(MemFlags::USE_HOST_PTR)) {
            // SAFETY: USE_HOST_PTR memory is exactly `size` bytes, valid for
            // the buffer's life (the caller's contract).
            return Ok(NativeBuffer::whole(unsafe { HostMem::borrowed(mem)? }));
        }
        let align = if desc.flags.contains(MemFlags::ALLOC_HOST_PTR) {
            PAGE_ALIGN
        } else {
            BASE_ALIGN
        };
        let buf = NativeBuffer::whole(HostMem::alloc(desc.size, align)?);
        if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
            // SAFETY: `src` is readable for exactly `size` bytes during this
            // call (the caller's contract); the new buffer is ours and as long.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.at(0), desc.size) };
        }
        Ok(buf)
    }

    unsafe fn create_sub_buffer(&self, parent: &NativeBuffer, offset: usize, size: usize) -> Result<NativeBuffer> {
        Ok(parent.sub(offset, size))
    }

    fn usm_alloc(&self, _: &NativeContext, desc: &UsmDesc<&NativeDevice>) -> Result<(NativeUsm, UsmPtr)> {
        // Host, device and shared allocations are all host memory here.
        let usm = NativeUsm::alloc(desc.size, desc.align)?;
        let base = UsmPtr(usm.mem.at(0) as u64);
        Ok((usm, base))
    }

    unsafe fn lock_host(&self, _: &NativeContext, mem: HostPtr) -> Result<DeviceAddr> {
        // Host memory is what this device uses already: nothing to pin, and
        // the device reaches it at the host pointer itself. The dyn layer
        // keeps the books (overlaps, exact unlocks).
        Ok(DeviceAddr(mem.as_ptr() as u64))
    }

    unsafe fn unlock_host(&self, _: &NativeContext, _: HostPtr) -> Result<()> {
        Ok(())
    }

    fn create_queue(&self, _: &NativeContext, _: &NativeDevice, props: &QueueProps) -> Result<NativeQueue> {
        NativeQueue::new(props.profiling)
    }

    fn flush(&self, _: &NativeQueue) -> Result<()> {
        Ok(()) // Commands are handed to the worker when enqueued.
    }

    fn finish(&self, queue: &NativeQueue) -> Result<()> {
        queue.finish()
    }

    fn event_status(&self, event: &NativeEvent) -> Result<EventStatus> {
        Ok(event.status())
    }

    fn wait(&self, events: &[&NativeEvent]) -> Result<()> {
        let mut first = Ok(());
        for e in events {
            let r = e.wait();
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    fn event_profiling(&self, event: &NativeEvent) -> Result<ProfilingInfo> {
        event.profiling()
    }

    fn create_program(&self, _: &NativeContext, source: &ProgramSource, _options: &str) -> Result<NativeProgram> {
        NativeProgram::build(source)
    }

    fn create_kernel(&self, program: &NativeProgram, name: &str) -> Result<NativeKernel> {
        program.kernel(name)
    }

    fn kernel_info(&self, kernel: &NativeKernel) -> KernelInfo {
        kernel.info()
    }

    unsafe fn enqueue_read(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::host(dst), Span::buffer(buffer, offset), dst.len()),
        )
    }

    unsafe fn enqueue_write(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::buffer(buffer, offset), Span::host(src), src.len()),
        )
    }

    unsafe fn enqueue_copy(
        &self,
        q: &NativeQueue,
        src: &NativeBuffer,
        src_offset: usize,
        dst: &NativeBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::buffer(dst, dst_offset), Span::buffer(src, src_offset), size),
        )
    }

    unsafe fn enqueue_copy_rect(
        &self,
        q: &NativeQueue,
        src: &NativeBuffer,
        dst: &NativeBuffer,
        rect: &RectCopy,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::buffer(dst, 0), Span::buffer(src, 0), *rect),
        )
    }

    unsafe fn enqueue_read_rect(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::host(dst), Span::buffer(buffer, 0), *rect),
        )
    }

    unsafe fn enqueue_write_rect(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::buffer(buffer, 0), Span::host(src), *rect),
        )
    }

    unsafe fn enqueue_fill(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::fill(Span::buffer(buffer, offset), size, pattern)?)
    }

    unsafe fn enqueue_map(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        _: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<(NativeEvent, HostPtr)> {
        // Zero copy: the mapping is the buffer's own memory. The event only
        // orders the host's access after earlier commands.
        // SAFETY: the range lies inside the buffer (the caller's contract).
        let ptr = unsafe { self.maps.map(buffer, offset, size) };
        Ok((q.marker(wait)?, ptr))
    }

    unsafe fn enqueue_unmap(
        &self,
        q: &NativeQueue,
        _: &NativeBuffer,
        mapped: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        // Host writes went straight into the buffer; nothing to write back.
        self.maps.unmap(mapped);
        q.marker(wait)
    }

    unsafe fn enqueue_usm_copy(
        &self,
        q: &NativeQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::copy(Span::mem_arg(dst), Span::mem_arg(src), size))
    }

    unsafe fn enqueue_usm_fill(
        &self,
        q: &NativeQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::fill(Span::usm(ptr), size, pattern)?)
    }

    unsafe fn enqueue_launch(
        &self,
        q: &NativeQueue,
        kernel: &NativeKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::Run(program::launch_work(kernel, range, args)))
    }

    fn enqueue_barrier(&self, q: &NativeQueue, wait: &[&NativeEvent]) -> Result<NativeEvent> {
        q.marker(wait)
    }
}
