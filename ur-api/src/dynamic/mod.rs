//! The object-safe face of the API, for runtimes.
//!
//! [`AdapterHost`] wraps any [`Adapter`](crate::Adapter) (a blanket
//! implementation, written once) and implements [`DynAdapter`]: objects live
//! in slot-map tables behind typed generational handles, and every parameter
//! is checked here, once, before the adapter sees it.
//!
//! Files: `tables.rs` (entries, lookups, the location check, the lanes
//! that keep events and in-flight operations per group of queues), `grace.rs`
//! (how commands borrow entries without a count per object), `slab.rs`
//! (the event table), `check.rs`
//! (pure parameter checks), `objects.rs`, `memory.rs`, `commands.rs` (the
//! methods by area; every command has one shape, `AdapterHost::command`),
//! `host.rs` (the trait implementation forwarding to them).
//!
//! Memory is bound to its location: a buffer or USM allocation made at
//! (context, device) is used by a command on a queue elsewhere only where
//! the adapter answers `Unified` from there to the queue's location (for
//! copies also `Migratable`); otherwise the command fails with
//! [`Error::NotAccessible`](crate::Error::NotAccessible) and the memory
//! manager moves the data.

mod check;
mod commands;
mod grace;
mod host;
mod memory;
mod objects;
pub mod pointer_map;
mod slab;
mod sub_devices;
mod tables;

pub use pointer_map::{Hit, MapError, PointerMap};
pub use tables::AdapterHost;

use crate::error::Result;
use crate::handles::{BufferId, ContextId, DeviceId, EventId, KernelId, Location, PlatformId, ProgramId, QueueId};
use crate::types::{
    Backend, BufferDesc, DeviceAddr, DeviceInfo, EventStatus, HostPtr, KernelGroupInfo, KernelInfo, MapFlags, MemFlags,
    MemRef, MemoryConnection, NativeHandle, NativeOf, NdRange, PlatformInfo, ProfilingInfo, ProgramSource, QueueProps,
    RectCopy, UsmAdvice, UsmDesc, UsmPointerInfo, UsmPtr,
};

/// One kernel argument in the dyn layer.
#[derive(Debug, Clone, Copy)]
pub enum ArgValue<'a> {
    /// A buffer.
    Buffer(BufferId),
    /// A USM pointer.
    Usm(UsmPtr),
    /// A by-value argument's bytes.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

impl<'a> ArgValue<'a> {
    /// A scalar argument from a plain-data value's bytes.
    pub fn scalar<T: bytemuck::Pod>(v: &'a T) -> Self {
        ArgValue::Scalar(bytemuck::bytes_of(v))
    }
}

/// What the dyn layer knows about a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferInfo {
    /// The buffer's context.
    pub context: ContextId,
    /// The device it was placed for (the hint, or the context's first device).
    pub device: DeviceId,
    /// Size in bytes.
    pub size: usize,
    /// Creation flags.
    pub flags: MemFlags,
    /// For a sub-buffer: its parent and offset in it.
    pub parent: Option<(BufferId, usize)>,
}

/// The object-safe adapter interface. Every method validates its input.
///
/// Users normally call these through [`Runtime`](crate::Runtime), which
/// routes each call to the adapter that owns its handles.
pub trait DynAdapter: Send + Sync {
    /// This adapter instance's identifier (carried by its handles).
    fn adapter_id(&self) -> u32;
    /// The backend.
    fn backend(&self) -> Backend;
    /// Platforms with at least one device.
    fn platforms(&self) -> Vec<PlatformId>;
    /// Describes a platform.
    fn platform_info(&self, platform: PlatformId) -> Result<PlatformInfo>;
    /// Devices of a platform.
    fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>>;
    /// Describes a device.
    fn device_info(&self, device: DeviceId) -> Result<DeviceInfo>;
    /// The platform of a device.
    fn device_platform(&self, device: DeviceId) -> Result<PlatformId>;
    /// Splits a device into sub-devices ([`Adapter::partition_device`](crate::Adapter::partition_device)),
    /// after checking the request against the device's
    /// [`PartitionCaps`](crate::PartitionCaps). Sub-devices are devices of
    /// the same platform; their ids stay valid for the adapter's life.
    fn partition_device(&self, device: DeviceId, how: &crate::Partition) -> Result<Vec<DeviceId>>;

    /// Creates a context over devices of one platform.
    fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId>;
    /// The devices of a context.
    fn context_devices(&self, context: ContextId) -> Result<Vec<DeviceId>>;
    /// Releases a context. Objects created in it keep it alive until released.
    fn release_context(&self, context: ContextId) -> Result<()>;
    /// Can memory of `src` be used at `dst`? (see [`MemoryConnection`]).
    fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection>;

    /// Creates a buffer; `init` per [`Adapter::create_buffer`](crate::Adapter::create_buffer).
    fn create_buffer(&self, context: ContextId, desc: &BufferDesc<DeviceId>, init: Option<HostPtr>)
        -> Result<BufferId>;
    /// Creates a sub-buffer of a (non-sub) buffer.
    fn create_sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> Result<BufferId>;
    /// Describes a buffer.
    fn buffer_info(&self, buffer: BufferId) -> Result<BufferInfo>;
    /// Releases a buffer (in-flight commands keep its memory alive).
    fn release_buffer(&self, buffer: BufferId) -> Result<()>;

    /// Allocates USM memory.
    fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr>;
    /// Frees a USM allocation by its base pointer.
    fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()>;
    /// Finds the allocation containing `ptr` (any interior pointer).
    fn usm_pointer_info(&self, context: ContextId, ptr: UsmPtr) -> Result<UsmPointerInfo<DeviceId>>;
    /// Locks (pins) host memory for the devices of the context, once
    /// (overlapping an existing lock of the context is refused), and answers
    /// the address they reach it at. Reference-counted locking of sub-ranges
    /// is the memory manager's registry.
    fn lock_host(&self, context: ContextId, mem: HostPtr) -> Result<DeviceAddr>;
    /// Unlocks exactly a range [`DynAdapter::lock_host`] locked.
    fn unlock_host(&self, context: ContextId, mem: HostPtr) -> Result<()>;
    /// [`DynAdapter::lock_host`], without the address (the older name).
    fn host_register(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        self.lock_host(context, mem).map(drop)
    }
    /// [`DynAdapter::unlock_host`] (the older name).
    fn host_unregister(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        self.unlock_host(context, mem)
    }

    /// Creates an in-order queue.
    fn create_queue(&self, context: ContextId, device: DeviceId, props: &QueueProps) -> Result<QueueId>;
    /// The location a queue runs at.
    fn queue_location(&self, queue: QueueId) -> Result<Location>;
    /// Releases a queue (its pending work still runs).
    fn release_queue(&self, queue: QueueId) -> Result<()>;
    /// Submits pending work.
    fn flush(&self, queue: QueueId) -> Result<()>;
    /// Waits for all work on the queue.
    fn finish(&self, queue: QueueId) -> Result<()>;

    /// Status of an event.
    fn event_status(&self, event: EventId) -> Result<EventStatus>;
    /// Waits for events (of this adapter): returns only when all have
    /// ended or the device is lost, as [`Adapter::wait`](crate::Adapter::wait) promises.
    fn wait(&self, events: &[EventId]) -> Result<()>;
    /// Profiling timestamps.
    fn event_profiling(&self, event: EventId) -> Result<ProfilingInfo>;
    /// The context of an event (a wait list may only hold events of the
    /// queue's context).
    fn event_context(&self, event: EventId) -> Result<ContextId>;
    /// Releases an event.
    fn release_event(&self, event: EventId) -> Result<()>;

    /// Builds a program for all devices of the context.
    fn create_program(&self, context: ContextId, source: &ProgramSource, options: &str) -> Result<ProgramId>;
    /// Releases a program.
    fn release_program(&self, program: ProgramId) -> Result<()>;
    /// Looks up a kernel.
    fn create_kernel(&self, program: ProgramId, name: &str) -> Result<KernelId>;
    /// Releases a kernel.
    fn release_kernel(&self, kernel: KernelId) -> Result<()>;
    /// The backend's own handle of an object.
    fn native_handle(&self, of: NativeOf) -> Result<NativeHandle>;
    /// A program of `context` over a program built with the backend itself.
    fn create_program_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<ProgramId>;
    /// A kernel (and its program) of `context` over a kernel made with the
    /// backend itself.
    fn create_kernel_from_native(
        &self,
        context: ContextId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<(ProgramId, KernelId)>;
    /// The names of a program's kernels.
    fn kernel_names(&self, program: ProgramId) -> Result<Vec<String>>;
    /// A kernel's argument count and sizes, as its adapter reported them.
    fn kernel_info(&self, kernel: KernelId) -> Result<KernelInfo>;
    /// A kernel's work-group and sub-group figures on a device of its
    /// context.
    fn kernel_group_info(&self, kernel: KernelId, device: DeviceId) -> Result<KernelGroupInfo>;

    /// Reads from a buffer into host memory.
    fn enqueue_read(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Writes host memory into a buffer.
    fn enqueue_write(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Copies between buffers.
    fn enqueue_copy(
        &self,
        queue: QueueId,
        src: BufferId,
        src_offset: usize,
        dst: BufferId,
        dst_offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Copies a box between buffers.
    fn enqueue_copy_rect(
        &self,
        queue: QueueId,
        src: BufferId,
        dst: BufferId,
        rect: &RectCopy,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Reads a box of a buffer into host memory.
    fn enqueue_read_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Writes a box of host memory into a buffer.
    fn enqueue_write_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Fills a buffer range with a pattern.
    fn enqueue_fill(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Maps a buffer range.
    fn enqueue_map(
        &self,
        queue: QueueId,
        buffer: BufferId,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<(EventId, HostPtr)>;
    /// Unmaps a mapping.
    fn enqueue_unmap(&self, queue: QueueId, buffer: BufferId, mapped: HostPtr, wait: &[EventId]) -> Result<EventId>;
    /// Copies between USM and/or host memory.
    fn enqueue_usm_copy(
        &self,
        queue: QueueId,
        dst: MemRef,
        src: MemRef,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Fills USM memory.
    fn enqueue_usm_fill(
        &self,
        queue: QueueId,
        ptr: UsmPtr,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId>;
    /// Prefetches USM memory to the queue's device.
    fn enqueue_usm_prefetch(&self, queue: QueueId, ptr: UsmPtr, size: usize, wait: &[EventId]) -> Result<EventId>;
    /// Advises on USM memory.
    fn usm_advise(&self, queue: QueueId, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()>;
    /// Launches a kernel.
    fn enqueue_launch(
        &self,
        queue: QueueId,
        kernel: KernelId,
        range: &NdRange,
        args: &[ArgValue<'_>],
        wait: &[EventId],
    ) -> Result<EventId>;
    /// A barrier.
    fn enqueue_barrier(&self, queue: QueueId, wait: &[EventId]) -> Result<EventId>;
}
