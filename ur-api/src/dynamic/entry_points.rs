//! The one list of the dyn layer's entry points.
//!
//! Every [`DynAdapter`](super::DynAdapter) method is written once, in
//! [`dyn_entry_points!`]: its doc comment, its signature and how
//! [`Runtime`](crate::Runtime) offers it. Four things expand from the list:
//!
//! - the body of `pub trait DynAdapter` (`mod.rs`),
//! - `impl DynAdapter for AdapterHost<A>`, each method forwarding to the
//!   inherent method of the same name (`host.rs`),
//! - `Runtime`'s forwarders for the `routed` entries, and a compile-time
//!   check that each `hand_written` entry has a `Runtime` method of the
//!   same signature (`runtime.rs`),
//! - [`ENTRY_POINTS`], the list as data (the stale/foreign handle sweep,
//!   `reliability/tests/sweep.rs`, reads it).
//!
//! Adding an entry point: add it here, write `AdapterHost::name` (in
//! `objects.rs`, `memory.rs` or `commands.rs`), and, for a `hand_written`
//! one, `Runtime::name`; the sweep then fails until a row covers it.

/// The list. Each entry is
///
/// ```text
/// /// Docs (for the trait method and, when routed, Runtime's).
/// [RUNTIME] fn name(&self, arg: Type, ...) -> Ret;
/// ```
///
/// or, for a method with a default body in the trait (which `AdapterHost`
/// does not override), `... -> Ret = { body };`. `RUNTIME` says how
/// `Runtime` offers the method:
///
/// - `routed(arg)`: a generated forwarder calls it on the adapter that
///   issued the handle `arg`;
/// - `hand_written`: `Runtime` writes a method of the same name and
///   signature itself (more than one adapter, or its own bookkeeping);
/// - `dyn_only`: not on `Runtime`.
///
/// `dyn_entry_points!(callback)` expands to `callback! { <the list> }`.
macro_rules! dyn_entry_points {
    ($callback:ident) => {
        $callback! {
            /// This adapter instance's identifier (carried by its handles).
            [dyn_only] fn adapter_id(&self) -> u32;
            /// The backend.
            [dyn_only] fn backend(&self) -> Backend;
            /// Platforms with at least one device.
            [hand_written] fn platforms(&self) -> Vec<PlatformId>;
            /// Describes a platform.
            [routed(platform)] fn platform_info(&self, platform: PlatformId) -> Result<PlatformInfo>;
            /// Devices of a platform.
            [hand_written] fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>>;
            /// Describes a device.
            [routed(device)] fn device_info(&self, device: DeviceId) -> Result<DeviceInfo>;
            /// The platform of a device.
            [routed(device)] fn device_platform(&self, device: DeviceId) -> Result<PlatformId>;
            /// Splits a device into sub-devices ([`Devices::partition_device`](crate::adapter::Devices::partition_device)),
            /// after checking the request against the device's
            /// [`PartitionCaps`](crate::PartitionCaps). Sub-devices are devices of
            /// the same platform; their ids stay valid for the adapter's life.
            [routed(device)] fn partition_device(&self, device: DeviceId, how: &Partition) -> Result<Vec<DeviceId>>;

            /// Creates a context over devices of one platform.
            [hand_written] fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId>;
            /// A context over a context got from the backend itself and
            /// `devices` of it ([`Devices::context_from_native`](crate::adapter::Devices::context_from_native));
            /// a reference of its own is taken unless `owned`.
            [hand_written] fn create_context_from_native(&self, devices: &[DeviceId], handle: NativeHandle, owned: bool) -> Result<ContextId>;
            /// The devices of a context.
            [routed(context)] fn context_devices(&self, context: ContextId) -> Result<Vec<DeviceId>>;
            /// Releases a context. Objects created in it keep it alive until released.
            [routed(context)] fn release_context(&self, context: ContextId) -> Result<()>;
            /// Can memory of `src` be used at `dst`? (see [`MemoryConnection`]).
            [hand_written] fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection>;

            /// Creates a buffer; `init` per [`Memory::create_buffer`](crate::adapter::Memory::create_buffer).
            [routed(context)] fn create_buffer(&self, context: ContextId, desc: &BufferDesc<DeviceId>, init: Option<HostPtr>) -> Result<BufferId>;
            /// A buffer of `context` over a memory object got from the
            /// backend itself ([`Memory::buffer_from_native`](crate::adapter::Memory::buffer_from_native)),
            /// placed for the context's first device, as a buffer created
            /// with no device hint is; a reference of its own is taken unless `owned`.
            [routed(context)] fn create_buffer_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<BufferId>;
            /// Creates a sub-buffer of a (non-sub) buffer.
            [routed(parent)] fn create_sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> Result<BufferId>;
            /// Describes a buffer.
            [routed(buffer)] fn buffer_info(&self, buffer: BufferId) -> Result<BufferInfo>;
            /// Releases a buffer (in-flight commands keep its memory alive).
            [routed(buffer)] fn release_buffer(&self, buffer: BufferId) -> Result<()>;

            /// Allocates USM memory.
            [hand_written] fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr>;
            /// Frees a USM allocation by its base pointer.
            [hand_written] fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()>;
            /// Finds the allocation of `context` containing `ptr` (any interior pointer).
            [routed(context)] fn usm_pointer_info(&self, context: ContextId, ptr: UsmPtr) -> Result<UsmPointerInfo<DeviceId>>;
            /// Locks (pins) host memory for the devices of the context, once
            /// (overlapping an existing lock of the context is refused), and answers
            /// the address they reach it at. Reference-counted locking of sub-ranges
            /// is the memory manager's registry.
            [hand_written] fn lock_host(&self, context: ContextId, mem: HostPtr) -> Result<DeviceAddr>;
            /// Unlocks exactly a range [`DynAdapter::lock_host`] locked.
            [hand_written] fn unlock_host(&self, context: ContextId, mem: HostPtr) -> Result<()>;
            /// [`DynAdapter::lock_host`], without the address (the older name).
            [hand_written] fn host_register(&self, context: ContextId, mem: HostPtr) -> Result<()> = {
                self.lock_host(context, mem).map(drop)
            };
            /// [`DynAdapter::unlock_host`] (the older name).
            [hand_written] fn host_unregister(&self, context: ContextId, mem: HostPtr) -> Result<()> = {
                self.unlock_host(context, mem)
            };

            /// Creates an in-order queue.
            [routed(context)] fn create_queue(&self, context: ContextId, device: DeviceId, props: &QueueProps) -> Result<QueueId>;
            /// An in-order queue of `context` on `device` over a queue got from
            /// the backend itself
            /// ([`Commands::queue_from_native`](crate::adapter::Commands::queue_from_native));
            /// without profiling. A reference of its own is taken unless `owned`.
            [routed(context)] fn create_queue_from_native(&self, context: ContextId, device: DeviceId, handle: NativeHandle, owned: bool) -> Result<QueueId>;
            /// The location a queue runs at.
            [routed(queue)] fn queue_location(&self, queue: QueueId) -> Result<Location>;
            /// Releases a queue (its pending work still runs).
            [routed(queue)] fn release_queue(&self, queue: QueueId) -> Result<()>;
            /// Submits pending work.
            [routed(queue)] fn flush(&self, queue: QueueId) -> Result<()>;
            /// Waits for all work on the queue.
            [routed(queue)] fn finish(&self, queue: QueueId) -> Result<()>;
            /// Whether every command enqueued on the queue so far has ended
            /// (a snapshot; see [`Commands::queue_empty`](crate::adapter::Commands::queue_empty)).
            [routed(queue)] fn queue_empty(&self, queue: QueueId) -> Result<bool>;

            /// Status of an event.
            [routed(event)] fn event_status(&self, event: EventId) -> Result<EventStatus>;
            /// Waits for events (of this adapter): returns only when all have
            /// ended or the device is lost, as [`Commands::wait`](crate::adapter::Commands::wait) promises.
            [hand_written] fn wait(&self, events: &[EventId]) -> Result<()>;
            /// Profiling timestamps of an event.
            [routed(event)] fn event_profiling(&self, event: EventId) -> Result<ProfilingInfo>;
            /// The context of an event (a wait list may only hold events of the
            /// queue's context).
            [routed(event)] fn event_context(&self, event: EventId) -> Result<ContextId>;
            /// Releases an event.
            [routed(event)] fn release_event(&self, event: EventId) -> Result<()>;
            /// An event of `context` over an event got from the backend itself
            /// ([`Commands::event_from_native`](crate::adapter::Commands::event_from_native)):
            /// complete, running or queued, it is waited for, queried, put in
            /// wait lists and released as any other; it has no queue and no
            /// profiling information. A reference of its own is taken unless
            /// `owned`.
            [routed(context)] fn create_event_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<EventId>;

            /// Builds a program for all devices of the context.
            [routed(context)] fn create_program(&self, context: ContextId, source: &ProgramSource, options: &str) -> Result<ProgramId>;
            /// Releases a program.
            [routed(program)] fn release_program(&self, program: ProgramId) -> Result<()>;
            /// Looks up a kernel.
            [routed(program)] fn create_kernel(&self, program: ProgramId, name: &str) -> Result<KernelId>;
            /// Releases a kernel.
            [routed(kernel)] fn release_kernel(&self, kernel: KernelId) -> Result<()>;
            /// The backend's own handle of an object (interoperation; adapters that
            /// hand none out answer [`Error::Unsupported`](crate::Error::Unsupported)).
            [hand_written] fn native_handle(&self, of: NativeOf) -> Result<NativeHandle>;
            /// A program of `context` over a program built with the backend itself.
            [routed(context)] fn create_program_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<ProgramId>;
            /// A kernel (and its program) of `context` over a kernel made with the
            /// backend itself.
            [routed(context)] fn create_kernel_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<(ProgramId, KernelId)>;
            /// The names of a program's kernels.
            [routed(program)] fn kernel_names(&self, program: ProgramId) -> Result<Vec<String>>;
            /// A kernel's argument count and sizes, as its adapter reported them.
            [routed(kernel)] fn kernel_info(&self, kernel: KernelId) -> Result<KernelInfo>;
            /// A kernel's work-group and sub-group figures on a device of its
            /// context.
            [routed(kernel)] fn kernel_group_info(&self, kernel: KernelId, device: DeviceId) -> Result<KernelGroupInfo>;

            /// Reads from a buffer into host memory (asynchronous; see [`HostPtr`]).
            [routed(queue)] fn enqueue_read(&self, queue: QueueId, buffer: BufferId, offset: usize, dst: HostPtr, wait: &[EventId]) -> Result<EventId>;
            /// Writes host memory into a buffer (asynchronous; see [`HostPtr`]).
            [routed(queue)] fn enqueue_write(&self, queue: QueueId, buffer: BufferId, offset: usize, src: HostPtr, wait: &[EventId]) -> Result<EventId>;
            /// Copies between buffers.
            [routed(queue)] fn enqueue_copy(&self, queue: QueueId, src: BufferId, src_offset: usize, dst: BufferId, dst_offset: usize, size: usize, wait: &[EventId]) -> Result<EventId>;
            /// Copies a box between buffers.
            [routed(queue)] fn enqueue_copy_rect(&self, queue: QueueId, src: BufferId, dst: BufferId, rect: &RectCopy, wait: &[EventId]) -> Result<EventId>;
            /// Reads a box of a buffer into host memory.
            [routed(queue)] fn enqueue_read_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, dst: HostPtr, wait: &[EventId]) -> Result<EventId>;
            /// Writes a box of host memory into a buffer.
            [routed(queue)] fn enqueue_write_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, src: HostPtr, wait: &[EventId]) -> Result<EventId>;
            /// Fills a buffer range with a pattern.
            [routed(queue)] fn enqueue_fill(&self, queue: QueueId, buffer: BufferId, offset: usize, size: usize, pattern: &[u8], wait: &[EventId]) -> Result<EventId>;
            /// Maps a buffer range into host memory.
            [routed(queue)] fn enqueue_map(&self, queue: QueueId, buffer: BufferId, flags: MapFlags, offset: usize, size: usize, wait: &[EventId]) -> Result<(EventId, HostPtr)>;
            /// Unmaps a mapping.
            [routed(queue)] fn enqueue_unmap(&self, queue: QueueId, buffer: BufferId, mapped: HostPtr, wait: &[EventId]) -> Result<EventId>;
            /// Copies between USM and/or host memory.
            [routed(queue)] fn enqueue_usm_copy(&self, queue: QueueId, dst: MemRef, src: MemRef, size: usize, wait: &[EventId]) -> Result<EventId>;
            /// Fills USM memory.
            [routed(queue)] fn enqueue_usm_fill(&self, queue: QueueId, ptr: UsmPtr, size: usize, pattern: &[u8], wait: &[EventId]) -> Result<EventId>;
            /// Prefetches USM memory to the queue's device.
            [routed(queue)] fn enqueue_usm_prefetch(&self, queue: QueueId, ptr: UsmPtr, size: usize, wait: &[EventId]) -> Result<EventId>;
            /// Advises on USM memory.
            [routed(queue)] fn usm_advise(&self, queue: QueueId, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()>;
            /// Launches a kernel.
            [routed(queue)] fn enqueue_launch(&self, queue: QueueId, kernel: KernelId, range: &NdRange, args: &[ArgValue<'_>], wait: &[EventId]) -> Result<EventId>;
            /// A barrier.
            [routed(queue)] fn enqueue_barrier(&self, queue: QueueId, wait: &[EventId]) -> Result<EventId>;
        }
    };
}
pub(crate) use dyn_entry_points;

/// How [`Runtime`](crate::Runtime) offers a [`DynAdapter`](super::DynAdapter)
/// method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRuntime {
    /// A method of the same name and signature, generated: it calls the
    /// adapter that issued the handle argument named `by`.
    Routed {
        /// The argument whose handle picks the adapter.
        by: &'static str,
    },
    /// A method of the same name and signature, written by hand in
    /// `runtime.rs` or `runtime/pointers.rs` (checked at compile time).
    HandWritten,
    /// Not offered (`Runtime` answers it from its own state: see
    /// [`Runtime::adapter_of`](crate::Runtime::adapter_of) and
    /// [`Runtime::backend_of`](crate::Runtime::backend_of)).
    DynOnly,
}

/// One entry point of the dyn layer, as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryPoint {
    /// The method's name.
    pub name: &'static str,
    /// Its arguments after `&self`: name and type, as `stringify!` prints
    /// them (`wait: &[EventId]` gives `("wait", "& [EventId]")`).
    pub args: &'static [(&'static str, &'static str)],
    /// How `Runtime` offers it.
    pub on_runtime: OnRuntime,
    /// Whether the trait gives it a default body (`AdapterHost` does not
    /// override it).
    pub provided: bool,
}

/// `[routed(arg)]` and the others as an [`OnRuntime`].
macro_rules! on_runtime {
    (routed($by:ident)) => {
        OnRuntime::Routed { by: stringify!($by) }
    };
    (hand_written) => {
        OnRuntime::HandWritten
    };
    (dyn_only) => {
        OnRuntime::DynOnly
    };
}

/// Whether an entry has a default body.
macro_rules! provided {
    () => {
        false
    };
    ($body:block) => {
        true
    };
}

/// The list as [`ENTRY_POINTS`].
macro_rules! entry_point_table {
    ($(
        $(#[$m:meta])*
        [$($on:tt)*] fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty $(= $body:block)?;
    )*) => {
        /// Every [`DynAdapter`](super::DynAdapter) method, in declaration
        /// order, from the same list as the trait itself.
        pub const ENTRY_POINTS: &[EntryPoint] = &[$(
            EntryPoint {
                name: stringify!($name),
                args: &[$((stringify!($arg), stringify!($aty))),*],
                on_runtime: on_runtime!($($on)*),
                provided: provided!($($body)?),
            }
        ),*];
    };
}

dyn_entry_points!(entry_point_table);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_holds_every_method_once() {
        let mut names: Vec<&str> = ENTRY_POINTS.iter().map(|e| e.name).collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name appears twice");
        let enqueue_read = ENTRY_POINTS.iter().find(|e| e.name == "enqueue_read").unwrap();
        assert_eq!(enqueue_read.on_runtime, OnRuntime::Routed { by: "queue" });
        assert_eq!(enqueue_read.args[0], ("queue", "QueueId"));
        assert_eq!(enqueue_read.args.len(), 5);
        let provided: Vec<&str> = ENTRY_POINTS.iter().filter(|e| e.provided).map(|e| e.name).collect();
        assert_eq!(provided, ["host_register", "host_unregister"]);
    }

    #[test]
    fn every_routing_argument_is_an_argument() {
        for e in ENTRY_POINTS {
            if let OnRuntime::Routed { by } = e.on_runtime {
                assert_eq!(e.args.first().map(|a| a.0), Some(by), "{}", e.name);
            }
        }
    }
}
