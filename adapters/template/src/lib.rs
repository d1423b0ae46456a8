//! # ur-template: the smallest complete adapter, to copy from
//!
//! One platform, one CPU-type device, buffers in host memory and a
//! synchronous queue. It passes the conformance suite; everything it does
//! not offer is skipped there with a reason. Start a new backend by copying
//! this crate (the steps are in `ARCHITECTURE.md`, "Writing an adapter").
//!
//! ## Walk-through
//!
//! The API is split by area ([`ur_api::adapter`]); each part is
//! implemented in the file that owns it:
//!
//! 1. **Types** (`lib.rs`): [`ur_api::Api`] names one type per object:
//!    [`TemplatePlatform`], [`TemplateDevice`], [`TemplateContext`] in
//!    `device.rs`; [`TemplateBuffer`] in `memory.rs`; [`TemplateQueue`],
//!    [`TemplateEvent`] in `queue.rs`. Objects of groups the device lacks
//!    are `()` (`Usm`, `Program`, `Kernel` here): the dyn layer never hands
//!    one over.
//! 2. **Discovery** (`device.rs`, [`Devices`](ur_api::adapter::Devices)):
//!    describe the device honestly with the
//!    [`DeviceInfo::new`](ur_api::DeviceInfo::new) builder. The capability
//!    flags are the contract: the dyn layer answers
//!    [`Error::Unsupported`](ur_api::Error::Unsupported) for what is absent
//!    and never calls the trait's defaults, and the suite turns that into
//!    skips. This device has `SUB_BUFFERS`, `MAP` and `FILL_ANY_PATTERN`; no
//!    USM, kernels, profiling or host registration.
//! 3. **Answer [`Devices::memory_connection`](ur_api::adapter::Devices::memory_connection)
//!    truthfully** (`device.rs`): it is what the dyn layer lets a buffer be
//!    used by and what the memory manager plans routes with.
//! 4. **The required areas**: buffers, read / write / copy / fill in
//!    `memory.rs` ([`Memory`](ur_api::adapter::Memory); rect copies use the
//!    trait's per-row defaults), queues, events and the barrier in
//!    `queue.rs` ([`Commands`](ur_api::adapter::Commands)).
//! 5. **The optional groups**, one trait each: the ones the device offers
//!    are implemented where they belong (`SubBuffers` and `Mapping` in
//!    `memory.rs`); the ones it lacks are one line each below the types
//!    (`impl HostLocking for TemplateAdapter {}`), with no body to write.
//! 6. **Write the `unsafe fn`s to their `# Safety` contracts.** The dyn
//!    layer has already checked handles, contexts, sizes, bounds,
//!    alignment and capabilities; the adapter re-checks none of it, and
//!    each body says in a `// SAFETY:` comment which promise makes it sound.
//! 7. **Run the suite**: `tests/conformance.rs` is the five lines
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
//!   the only raw memory is the caller's [`HostPtr`](ur_api::HostPtr). Releasing a buffer
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

use memory::MapTable;

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

impl ur_api::Api for TemplateAdapter {
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
}

// The optional groups this adapter does not offer (its devices lack the
// capability flags, so the dyn layer never calls these defaults).
impl ur_api::adapter::HostLocking for TemplateAdapter {}
impl ur_api::adapter::Profiling for TemplateAdapter {}
impl ur_api::adapter::Kernels for TemplateAdapter {}
impl ur_api::adapter::UnifiedMemory for TemplateAdapter {}

#[cfg(test)]
mod tests;
