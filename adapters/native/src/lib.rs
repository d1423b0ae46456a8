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
//!   a USM pointer is its host address. Hence [`Devices::memory_connection`](ur_api::adapter::Devices::memory_connection)
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
use memory::MapTable;
use ur_api::DeviceInfo;

pub use device::{NativeDevice, NativePlatform, BASE_ALIGN, PAGE_ALIGN, PLATFORM_NAME};
pub use memory::{NativeBuffer, NativeContext, NativeUsm};
pub use program::{NativeKernel, NativeProgram};
pub use queue::{NativeEvent, NativeQueue};

/// The host CPU adapter.
///
/// Used directly through the static [`Adapter`](ur_api::Adapter) trait, whose data-path
/// methods are `unsafe` (the caller takes on the checks the dyn layer
/// would make):
///
/// ```
/// use ur_api::adapter::prelude::*;
/// use ur_api::{BufferDesc, HostPtr, QueueProps};
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
/// use ur_api::adapter::prelude::*;
/// use ur_api::{BufferDesc, QueueProps};
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

impl ur_api::Api for NativeAdapter {
    type Platform = NativePlatform;
    type Device = NativeDevice;
    type Context = NativeContext;
    type Buffer = NativeBuffer;
    type Usm = NativeUsm;
    type Queue = NativeQueue;
    type Event = NativeEvent;
    type Program = NativeProgram;
    type Kernel = NativeKernel;
}
