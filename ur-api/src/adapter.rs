//! The static face of the API, for adapter authors.
//!
//! An adapter is a set of plain Rust types with `Drop`. It never validates
//! handles, sizes or regions (the dyn layer did that before calling), never
//! picks a route between locations and never stages through host memory on
//! its own: it answers [`Adapter::memory_connection`] and performs primitive
//! operations.

use crate::error::{Error, Result};
use crate::types::{
    Backend, BufferDesc, DeviceInfo, EventStatus, HostPtr, MapFlags, MemRef, MemoryConnection, NdRange, PlatformInfo,
    ProfilingInfo, ProgramSource, QueueProps, RectCopy, UsmAdvice, UsmDesc, UsmPtr,
};

/// One kernel argument as an adapter receives it.
pub enum KernelArg<'a, A: Adapter + ?Sized> {
    /// A buffer (or sub-buffer).
    Buffer(&'a A::Buffer),
    /// A USM pointer.
    Usm(UsmPtr),
    /// A by-value argument's bytes.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

impl<A: Adapter + ?Sized> std::fmt::Debug for KernelArg<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelArg::Buffer(_) => f.write_str("Buffer"),
            KernelArg::Usm(p) => write!(f, "Usm({p})"),
            KernelArg::Scalar(b) => write!(f, "Scalar({} bytes)", b.len()),
            KernelArg::Local(n) => write!(f, "Local({n})"),
        }
    }
}

/// A location as an adapter sees it: a context and one of its devices.
pub type Loc<'a, A> = (&'a <A as Adapter>::Context, &'a <A as Adapter>::Device);

/// The trait every backend implements.
///
/// Preconditions the dyn layer guarantees for every call:
/// - every object passed belongs to this adapter and is alive;
/// - sizes are non-zero, regions are inside their buffers or allocations,
///   rect pitches are explicit and consistent, alignments are powers of two;
/// - objects of different contexts are only combined where this adapter
///   answered `Unified` (use in place) or `Migratable` (copies) for them;
/// - optional operations are only called when the device's
///   [`DeviceCaps`](crate::DeviceCaps) / [`UsmCaps`](crate::UsmCaps) say so.
pub trait Adapter: Send + Sync + 'static {
    /// A platform (a driver / vendor implementation).
    type Platform: Send + Sync + 'static;
    /// A device of a platform.
    type Device: Send + Sync + 'static;
    /// A context over one or more devices of one platform.
    type Context: Send + Sync + 'static;
    /// A buffer or sub-buffer.
    type Buffer: Send + Sync + 'static;
    /// An in-order queue on one device of a context.
    type Queue: Send + Sync + 'static;
    /// The completion of one command.
    type Event: Send + Sync + 'static;
    /// A built program.
    type Program: Send + Sync + 'static;
    /// A kernel of a program.
    type Kernel: Send + Sync + 'static;

    /// The backend this adapter drives.
    fn backend(&self) -> Backend;

    /// The platforms present. An absent runtime is `Ok(vec![])`, not an error.
    fn platforms(&self) -> Result<Vec<Self::Platform>>;
    /// Describes a platform.
    fn platform_info(&self, platform: &Self::Platform) -> Result<PlatformInfo>;
    /// The devices of a platform (may be empty; the dyn layer skips such platforms).
    fn devices(&self, platform: &Self::Platform) -> Result<Vec<Self::Device>>;
    /// Describes a device.
    fn device_info(&self, device: &Self::Device) -> Result<DeviceInfo>;

    /// Creates a context over devices of one platform (at least one).
    fn create_context(&self, devices: &[&Self::Device]) -> Result<Self::Context>;

    /// Can memory allocated at `src` be used at `dst`? Directional.
    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection;

    /// Creates a buffer in `ctx`, placed for `desc.device_hint`. With
    /// `COPY_HOST_PTR`, `init` holds the initial contents (exactly `size`
    /// bytes); with `USE_HOST_PTR` it is the memory to use (valid for the
    /// buffer's whole life, by the promise of [`HostPtr::new`]).
    fn create_buffer(
        &self,
        ctx: &Self::Context,
        desc: &BufferDesc<&Self::Device>,
        init: Option<HostPtr>,
    ) -> Result<Self::Buffer>;
    /// Creates a sub-buffer over `[offset, offset + size)` of `parent`.
    fn create_sub_buffer(&self, parent: &Self::Buffer, offset: usize, size: usize) -> Result<Self::Buffer> {
        let _ = (parent, offset, size);
        Err(Error::unsupported("sub-buffers"))
    }

    /// Allocates USM memory in `ctx`.
    fn usm_alloc(&self, ctx: &Self::Context, desc: &UsmDesc<&Self::Device>) -> Result<UsmPtr>;
    /// Frees a USM allocation (its base pointer) once no command uses it.
    fn usm_free(&self, ctx: &Self::Context, ptr: UsmPtr) -> Result<()>;

    /// Registers (pins) existing host memory with the context.
    fn host_register(&self, ctx: &Self::Context, mem: HostPtr) -> Result<()> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory registration"))
    }
    /// Undoes [`Adapter::host_register`].
    fn host_unregister(&self, ctx: &Self::Context, mem: HostPtr) -> Result<()> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory registration"))
    }

    /// Creates an in-order queue on `device` of `ctx`.
    fn create_queue(&self, ctx: &Self::Context, device: &Self::Device, props: &QueueProps) -> Result<Self::Queue>;
    /// Submits pending work without waiting.
    fn flush(&self, queue: &Self::Queue) -> Result<()>;
    /// Waits for all work on the queue.
    fn finish(&self, queue: &Self::Queue) -> Result<()>;

    /// Current status of an event.
    fn event_status(&self, event: &Self::Event) -> Result<EventStatus>;
    /// Waits for all events; returns the first failure.
    fn wait(&self, events: &[&Self::Event]) -> Result<()>;
    /// Profiling timestamps of a completed event of a profiling queue.
    fn event_profiling(&self, event: &Self::Event) -> Result<ProfilingInfo>;

    /// Builds a program for every device of the context.
    fn create_program(&self, ctx: &Self::Context, source: &ProgramSource, options: &str) -> Result<Self::Program>;
    /// Looks up a kernel by name.
    fn create_kernel(&self, program: &Self::Program, name: &str) -> Result<Self::Kernel>;

    /// Reads `dst.len()` bytes at `offset` of `buffer` into host memory.
    fn enqueue_read(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Writes `src.len()` bytes of host memory at `offset` of `buffer`.
    fn enqueue_write(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Copies `size` bytes between buffers.
    fn enqueue_copy(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        src_offset: usize,
        dst: &Self::Buffer,
        dst_offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Copies a 2-D/3-D box between buffers.
    fn enqueue_copy_rect(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        dst: &Self::Buffer,
        rect: &RectCopy,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Reads a box of `buffer` (`rect.src`) into host memory laid out as `rect.dst`.
    fn enqueue_read_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Writes a box of host memory laid out as `rect.src` into `buffer` (`rect.dst`).
    fn enqueue_write_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Fills `[offset, offset + size)` with a repeated pattern (1..=128 bytes;
    /// `size` and `offset` are multiples of its length).
    fn enqueue_fill(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Maps a range of a buffer into host memory.
    fn enqueue_map(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<(Self::Event, HostPtr)> {
        let _ = (queue, buffer, flags, offset, size, wait);
        Err(Error::unsupported("buffer mapping"))
    }
    /// Unmaps a mapping made by [`Adapter::enqueue_map`].
    fn enqueue_unmap(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        mapped: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, buffer, mapped, wait);
        Err(Error::unsupported("buffer mapping"))
    }

    /// Copies `size` bytes between USM and/or host memory.
    fn enqueue_usm_copy(
        &self,
        queue: &Self::Queue,
        dst: MemRef,
        src: MemRef,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Fills USM memory with a pattern.
    fn enqueue_usm_fill(
        &self,
        queue: &Self::Queue,
        ptr: UsmPtr,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Hints that USM memory will be used on the queue's device soon.
    fn enqueue_usm_prefetch(
        &self,
        queue: &Self::Queue,
        ptr: UsmPtr,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Attaches advice to a USM range.
    fn usm_advise(&self, queue: &Self::Queue, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()>;

    /// Launches a kernel.
    fn enqueue_launch(
        &self,
        queue: &Self::Queue,
        kernel: &Self::Kernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// An event that completes when everything before it (and `wait`) has.
    fn enqueue_barrier(&self, queue: &Self::Queue, wait: &[&Self::Event]) -> Result<Self::Event>;
}
