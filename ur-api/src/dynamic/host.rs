//! The [`DynAdapter`] implementation of [`AdapterHost`].
//!
//! A trait's methods must sit in one `impl` block, so this file only
//! forwards each method to the inherent method of the same name, written
//! by area: `objects.rs` (platforms, devices, contexts, queues, events,
//! programs, kernels), `memory.rs` (buffers, USM, host locks) and
//! `commands.rs` (every `enqueue_*`). Inherent methods take precedence
//! over trait methods in `AdapterHost::<A>::name` paths, so these calls do
//! not recurse.

use super::tables::AdapterHost;
use super::{ArgValue, BufferInfo, DynAdapter};
use crate::adapter::Adapter;
use crate::error::Result;
use crate::handles::*;
use crate::types::*;

/// `fn name(&self, args) -> ret;` becomes a method calling the inherent one.
macro_rules! to_inherent {
    ($( fn $name:ident(&self $(, $arg:ident : $aty:ty)* $(,)?) -> $ret:ty; )*) => {$(
        fn $name(&self $(, $arg: $aty)*) -> $ret {
            AdapterHost::<A>::$name(self $(, $arg)*)
        }
    )*};
}

impl<A: Adapter> DynAdapter for AdapterHost<A> {
    fn adapter_id(&self) -> u32 {
        self.id
    }

    fn backend(&self) -> Backend {
        self.adapter.backend()
    }

    to_inherent! {
        fn platforms(&self) -> Vec<PlatformId>;
        fn platform_info(&self, platform: PlatformId) -> Result<PlatformInfo>;
        fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>>;
        fn device_info(&self, device: DeviceId) -> Result<DeviceInfo>;
        fn partition_device(&self, device: DeviceId, how: &Partition) -> Result<Vec<DeviceId>>;
        fn device_platform(&self, device: DeviceId) -> Result<PlatformId>;
        fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId>;
        fn context_devices(&self, context: ContextId) -> Result<Vec<DeviceId>>;
        fn release_context(&self, context: ContextId) -> Result<()>;
        fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection>;
        fn create_buffer(&self, context: ContextId, desc: &BufferDesc<DeviceId>, init: Option<HostPtr>) -> Result<BufferId>;
        fn create_sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> Result<BufferId>;
        fn buffer_info(&self, buffer: BufferId) -> Result<BufferInfo>;
        fn release_buffer(&self, buffer: BufferId) -> Result<()>;
        fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr>;
        fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()>;
        fn usm_pointer_info(&self, context: ContextId, ptr: UsmPtr) -> Result<UsmPointerInfo<DeviceId>>;
        fn lock_host(&self, context: ContextId, mem: HostPtr) -> Result<DeviceAddr>;
        fn unlock_host(&self, context: ContextId, mem: HostPtr) -> Result<()>;
        fn create_queue(&self, context: ContextId, device: DeviceId, props: &QueueProps) -> Result<QueueId>;
        fn queue_location(&self, queue: QueueId) -> Result<Location>;
        fn release_queue(&self, queue: QueueId) -> Result<()>;
        fn flush(&self, queue: QueueId) -> Result<()>;
        fn finish(&self, queue: QueueId) -> Result<()>;
        fn event_status(&self, event: EventId) -> Result<EventStatus>;
        fn wait(&self, events: &[EventId]) -> Result<()>;
        fn event_profiling(&self, event: EventId) -> Result<ProfilingInfo>;
        fn event_context(&self, event: EventId) -> Result<ContextId>;
        fn release_event(&self, event: EventId) -> Result<()>;
        fn create_program(&self, context: ContextId, source: &ProgramSource, options: &str) -> Result<ProgramId>;
        fn release_program(&self, program: ProgramId) -> Result<()>;
        fn create_kernel(&self, program: ProgramId, name: &str) -> Result<KernelId>;
        fn release_kernel(&self, kernel: KernelId) -> Result<()>;
        fn native_handle(&self, of: NativeOf) -> Result<NativeHandle>;
        fn create_program_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<ProgramId>;
        fn kernel_names(&self, program: ProgramId) -> Result<Vec<String>>;
        fn create_kernel_from_native(&self, context: ContextId, handle: NativeHandle, owned: bool) -> Result<(ProgramId, KernelId)>;
        fn kernel_info(&self, kernel: KernelId) -> Result<KernelInfo>;
        fn kernel_group_info(&self, kernel: KernelId, device: DeviceId) -> Result<KernelGroupInfo>;
        fn enqueue_read(&self, queue: QueueId, buffer: BufferId, offset: usize, dst: HostPtr, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_write(&self, queue: QueueId, buffer: BufferId, offset: usize, src: HostPtr, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_copy(&self, queue: QueueId, src: BufferId, src_offset: usize, dst: BufferId, dst_offset: usize, size: usize, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_copy_rect(&self, queue: QueueId, src: BufferId, dst: BufferId, rect: &RectCopy, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_read_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, dst: HostPtr, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_write_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, src: HostPtr, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_fill(&self, queue: QueueId, buffer: BufferId, offset: usize, size: usize, pattern: &[u8], wait: &[EventId]) -> Result<EventId>;
        fn enqueue_map(&self, queue: QueueId, buffer: BufferId, flags: MapFlags, offset: usize, size: usize, wait: &[EventId]) -> Result<(EventId, HostPtr)>;
        fn enqueue_unmap(&self, queue: QueueId, buffer: BufferId, mapped: HostPtr, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_usm_copy(&self, queue: QueueId, dst: MemRef, src: MemRef, size: usize, wait: &[EventId]) -> Result<EventId>;
        fn enqueue_usm_fill(&self, queue: QueueId, ptr: UsmPtr, size: usize, pattern: &[u8], wait: &[EventId]) -> Result<EventId>;
        fn enqueue_usm_prefetch(&self, queue: QueueId, ptr: UsmPtr, size: usize, wait: &[EventId]) -> Result<EventId>;
        fn usm_advise(&self, queue: QueueId, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()>;
        fn enqueue_launch(&self, queue: QueueId, kernel: KernelId, range: &NdRange, args: &[ArgValue<'_>], wait: &[EventId]) -> Result<EventId>;
        fn enqueue_barrier(&self, queue: QueueId, wait: &[EventId]) -> Result<EventId>;
    }
}
