//! # ur-template: the smallest complete adapter, to copy from
//!
//! One platform, one CPU-type device, buffers in host memory and a
//! synchronous queue. It passes the conformance suite; everything it does
//! not offer is skipped there with a reason. Start a new backend by copying
//! this crate (the steps are in `ARCHITECTURE.md`, "Writing an adapter").
//!
//! ## Walk-through
//!
//! 1. **Types** (one per associated type of [`Adapter`]): [`TemplatePlatform`],
//!    [`TemplateDevice`], [`TemplateContext`] in `device.rs`;
//!    [`TemplateBuffer`] in `memory.rs`; [`TemplateQueue`], [`TemplateEvent`]
//!    in `queue.rs`. Optional parts the device lacks get `()` (`Usm`,
//!    `Program`, `Kernel` here): the dyn layer never hands one over.
//! 2. **Describe the device honestly** with the [`DeviceInfo::new`] builder
//!    (`device.rs`). The capability flags are the contract: the dyn layer
//!    answers [`Error::Unsupported`](ur_api::Error::Unsupported) for what
//!    is absent and never calls the trait's defaults, and the suite turns
//!    that into skips. This device
//!    has `SUB_BUFFERS`, `MAP` and `FILL_ANY_PATTERN`; no USM, kernels,
//!    profiling or host registration, so those trait methods keep their
//!    defaults and appear nowhere below.
//! 3. **Answer [`Adapter::memory_connection`] truthfully**: it is what the
//!    dyn layer lets a buffer be used by and what the memory manager plans
//!    routes with.
//! 4. **Implement the required methods** (the `Adapter` impl below):
//!    discovery, contexts, buffers, queues, events, read / write / copy /
//!    fill and the barrier. Rect copies use the trait's per-row defaults.
//! 5. **Write the `unsafe fn`s to their `# Safety` contracts.** The dyn
//!    layer has already checked handles, contexts, sizes, bounds,
//!    alignment and capabilities; the adapter re-checks none of it, and
//!    each body says in a `// SAFETY:` comment which promise makes it sound.
//! 6. **Run the suite**: `tests/conformance.rs` is the five lines
//!    `ur_conformance::harness::run_suite(TemplateAdapter::new).exit()` with
//!    `harness = false`; `cargo test -p ur-template` runs it.
//!
//! ## Design choices
//!
//! - **Synchronous queue.** Each command runs during its enqueue call, so
//!   events are born complete (or failed, with the cause) and `flush` /
//!   `finish` / `wait` have nothing to wait for. Correct, and the simplest
//!   thing that is; a real backend submits and returns.
//! - **Memory is a `Vec<u8>` behind a mutex**, shared by `Arc` with
//!   sub-buffers and open mappings, so every buffer access is safe code;
//!   the only raw memory is the caller's [`HostPtr`]. Releasing a buffer
//!   that is still mapped is fine: the mapping holds the storage.
//! - **Mapping is a staging copy** (copied in unless `WRITE_INVALIDATE`,
//!   written back on unmap when mapped for writing), the shape a device
//!   with its own memory needs.
//! - **No `conv.rs`**: with no native library there are no codes to map.
//!
//! ```
//! use ur_api::{BufferDesc, QueueProps, Runtime};
//! let mut rt = Runtime::new();
//! rt.add(ur_template::TemplateAdapter::new())?;
//! let dev = rt.all_devices()[0];
//! let ctx = rt.create_context(&[dev])?;
//! let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
//! let buf = rt.create_buffer(ctx, &BufferDesc::new(6), None)?;
//! rt.complete(rt.enqueue_fill(q, buf, 0, 6, &[1, 2, 3], &[])?)?;
//! let mut back = [0u8; 6];
//! rt.read(q, buf, 0, &mut back)?;
//! assert_eq!(back, [1, 2, 3, 1, 2, 3]);
//! # Ok::<(), ur_api::Error>(())
//! ```

mod device;
mod memory;
mod queue;

use memory::{fill, host_bytes, host_bytes_mut, MapTable};
use ur_api::{
    Adapter, Backend, BufferDesc, DeviceInfo, EventStatus, HostPtr, Loc, MapFlags, MemFlags, MemoryConnection,
    PlatformInfo, QueueProps, Result,
};

pub use device::{TemplateContext, TemplateDevice, TemplatePlatform, BACKEND, BACKEND_NAME};
pub use memory::TemplateBuffer;
pub use queue::{TemplateEvent, TemplateQueue};

/// The template adapter. Add it to a [`ur_api::Runtime`] with
/// [`Runtime::add`](ur_api::Runtime::add); safe code reaches it only
/// through the dyn layer, which discharges the `unsafe` contracts.
#[derive(Debug, Default)]
pub struct TemplateAdapter {
    maps: MapTable,
}

impl TemplateAdapter {
    /// The adapter (it finds its one device without looking).
    pub fn new() -> TemplateAdapter {
        TemplateAdapter::default()
    }
}

impl Adapter for TemplateAdapter {
    type Platform = TemplatePlatform;
    type Device = TemplateDevice;
    type Context = TemplateContext;
    type Buffer = TemplateBuffer;
    // No USM and no kernels (see `device_info`): the dyn layer never creates
    // or passes these, so the unit type stands in.
    type Usm = ();
    type Queue = TemplateQueue;
    type Event = TemplateEvent;
    type Program = ();
    type Kernel = ();

    fn backend(&self) -> Backend {
        BACKEND
    }

    fn platforms(&self) -> Result<Vec<TemplatePlatform>> {
        Ok(vec![TemplatePlatform])
    }

    fn platform_info(&self, _: &TemplatePlatform) -> Result<PlatformInfo> {
        Ok(device::platform_info())
    }

    fn devices(&self, _: &TemplatePlatform) -> Result<Vec<TemplateDevice>> {
        Ok(vec![TemplateDevice])
    }

    fn device_info(&self, _: &TemplateDevice) -> Result<DeviceInfo> {
        Ok(device::device_info())
    }

    fn create_context(&self, _: &[&TemplateDevice]) -> Result<TemplateContext> {
        Ok(TemplateContext::default())
    }

    fn memory_connection(&self, _: Loc<'_, Self>, _: Loc<'_, Self>) -> MemoryConnection {
        // Every buffer of this adapter, whatever its context, is host memory
        // that any command of this adapter touches as it is (through the
        // buffer's own lock; nothing is copied). So memory made at one
        // location is usable in place at every other: `Unified`. An adapter
        // whose contexts own separate device memory answers `Migratable`
        // where its copy commands can reach both, and `None` otherwise.
        MemoryConnection::Unified
    }

    unsafe fn create_buffer(
        &self,
        _: &TemplateContext,
        desc: &BufferDesc<&TemplateDevice>,
        init: Option<HostPtr>,
    ) -> Result<TemplateBuffer> {
        let buffer = TemplateBuffer::new(desc.size)?;
        // USE_HOST_PTR is not offered (no DeviceCaps::USE_HOST_PTR), so
        // `init` is only ever initial data to copy.
        if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
            // SAFETY: with COPY_HOST_PTR, `src` is readable for exactly
            // `desc.size` bytes during this call (the contract), and it
            // cannot alias the buffer we just allocated.
            let src = unsafe { host_bytes(src) };
            buffer.with_bytes(0, desc.size, |b| b.copy_from_slice(src));
        }
        Ok(buffer)
    }

    unsafe fn create_sub_buffer(&self, parent: &TemplateBuffer, offset: usize, size: usize) -> Result<TemplateBuffer> {
        // SAFETY: no unsafe operation here. The range lies inside `parent`
        // (the contract); the view shares its storage, and a bad range
        // could only make `with_bytes` panic, never reach out of bounds.
        Ok(parent.sub(offset, size))
    }

    fn create_queue(&self, _: &TemplateContext, _: &TemplateDevice, _: &QueueProps) -> Result<TemplateQueue> {
        Ok(TemplateQueue::default())
    }

    fn flush(&self, _: &TemplateQueue) -> Result<()> {
        Ok(()) // Every command already ran.
    }

    fn finish(&self, _: &TemplateQueue) -> Result<()> {
        Ok(()) // Every command already finished.
    }

    fn event_status(&self, event: &TemplateEvent) -> Result<EventStatus> {
        Ok(event.status())
    }

    fn wait(&self, events: &[&TemplateEvent]) -> Result<()> {
        events.iter().try_for_each(|e| e.outcome())
    }

    unsafe fn enqueue_read(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        q.run(wait, || {
            // SAFETY: `dst` is valid and ours alone for the whole command
            // (the HostPtr promise), which ends before `run` returns; it
            // cannot point into buffer storage (see memory.rs).
            let dst = unsafe { host_bytes_mut(dst) };
            buffer.with_bytes(offset, dst.len(), |b| dst.copy_from_slice(b));
            Ok(())
        })
    }

    unsafe fn enqueue_write(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        q.run(wait, || {
            // SAFETY: `src` is valid for reads and not written during the
            // command (the HostPtr promise), which ends before `run` returns.
            let src = unsafe { host_bytes(src) };
            buffer.with_bytes(offset, src.len(), |b| b.copy_from_slice(src));
            Ok(())
        })
    }

    unsafe fn enqueue_copy(
        &self,
        q: &TemplateQueue,
        src: &TemplateBuffer,
        src_offset: usize,
        dst: &TemplateBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. Both ranges are inside their
        // buffers (the contract; slicing would panic otherwise), and
        // `copy_from` handles two views of one buffer.
        q.run(wait, || {
            dst.copy_from(dst_offset, src, src_offset, size);
            Ok(())
        })
    }

    unsafe fn enqueue_fill(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. The range lies inside the buffer
        // and `size` is a multiple of the pattern's length (the contract).
        q.run(wait, || {
            buffer.with_bytes(offset, size, |b| fill(b, pattern));
            Ok(())
        })
    }

    unsafe fn enqueue_map(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&TemplateEvent],
    ) -> Result<(TemplateEvent, HostPtr)> {
        // SAFETY: no unsafe operation here. The range lies inside the buffer
        // (the contract); the staging block handed out is owned by the map
        // table until the one unmap the dyn layer allows.
        let event = q.run(wait, || Ok(()))?;
        // Commands run at once, so reading the bytes after the wait list is
        // reading them now.
        let ptr = self.maps.map(buffer, flags, offset, size)?;
        Ok((event, ptr))
    }

    unsafe fn enqueue_unmap(
        &self,
        q: &TemplateQueue,
        _: &TemplateBuffer,
        mapped: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. `mapped` is a live mapping of
        // this adapter, unmapped once (the contract), so the table finds it
        // and the host's access to the staging block has ended.
        let event = q.run(wait, || Ok(()))?;
        // A failed dependency fails the unmap: close the mapping, but do
        // not write back.
        let write_back = event.outcome().is_ok();
        self.maps.unmap(mapped, write_back);
        Ok(event)
    }

    fn enqueue_barrier(&self, q: &TemplateQueue, wait: &[&TemplateEvent]) -> Result<TemplateEvent> {
        q.run(wait, || Ok(()))
    }
}

#[cfg(test)]
mod tests;
