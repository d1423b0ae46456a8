//! # ur-cuda: the CUDA adapter
//!
//! Drives NVIDIA GPUs through the CUDA driver API, loaded at run time with
//! [`cudarc`] (features `dynamic-loading`, `driver`, `nvrtc`).
//!
//! ```
//! use ur_api::adapter::Devices;
//! let cuda = ur_cuda::CudaAdapter::new();
//! // With no driver installed this is an empty list, never a panic.
//! let platforms = cuda.platforms().unwrap();
//! assert!(platforms.len() <= 1);
//! ```
//!
//! ## Design choices
//!
//! - **Absent driver = zero platforms.** cudarc's loader panics when
//!   libcuda (or a symbol) is missing. Before the first driver call the
//!   adapter checks that the library is present and that it exports every
//!   entry point the adapter uses, then calls `cuInit`; any failure is
//!   logged and [`Devices::platforms`](ur_api::adapter::Devices::platforms) returns an empty list. NVRTC is
//!   checked the same way: without it devices accept PTX only (the
//!   [`ProgramFormats::CUDA_C`](ur_api::ProgramFormats) flag is off).
//! - **One platform with every device.** Each device is used through its
//!   *primary context*, retained once at enumeration. A context of this API
//!   is just a set of devices: two contexts on one device share the primary
//!   context and its memory.
//! - **Allocations go to the hinted device**; without a hint, to the
//!   context's first device (buffers, shared USM). Host USM is portable
//!   page-locked memory (`cuMemHostAlloc`), visible to every device.
//! - **Memory connections** (src -> dst):
//!   - same device, any two contexts: `Unified` (one primary context, one
//!     address space via UVA);
//!   - two devices of one context where the destination can access the
//!     source as a peer: `Unified`. Creating a context enables peer access
//!     between its peer-capable devices, so kernels on one read the other's
//!     memory in place (peer access is a property of the primary contexts
//!     and stays enabled);
//!   - peer-capable devices otherwise: `Migratable` (`cuMemcpyPeerAsync`);
//!   - devices that are not peers: `None`. The driver could still copy
//!     between them by staging through host memory itself; the adapter
//!     leaves that route to the memory manager, where it is visible.
//!
//!   The dyn layer holds every command to these answers, inside one context
//!   too: in a context over two devices that are not peers, one device's
//!   buffers are refused on the other's queue, even for copies (the data
//!   travels through host memory, planned by the memory manager). Only the
//!   single-device case was run on hardware (one H100); the peer paths are
//!   written to the driver's documentation and untested.
//! - **The static trait trusts its caller.** Data-path methods are `unsafe
//!   fn`s whose contracts (regions in bounds, objects usable at the queue's
//!   location, host memory valid, mappings live) the dyn layer discharges;
//!   the adapter re-checks none of them and keeps only what the driver
//!   reports and what its FFI needs (no NUL byte in sources, names, options).
//! - **Buffers** are `cuMemAlloc` allocations; sub-buffers are offsets into
//!   them (offsets aligned to 256 bytes). `USE_HOST_PTR` buffers are the
//!   caller's memory itself, pinned and mapped with `cuMemHostRegister`
//!   (zero copy: kernels reach it over the bus); memory the caller already
//!   registered is used as it is and left registered. `ALLOC_HOST_PTR` is
//!   accepted as a hint and ignored.
//! - **Mapping is a copy**: `enqueue_map` copies the range into fresh
//!   page-locked staging memory (skipped for `WRITE_INVALIDATE`);
//!   `enqueue_unmap` copies it back when the map allowed writes. There is
//!   no zero-copy mapping of device memory.
//! - **Fills** use `cuMemsetD8/16/32` for patterns of 1, 2 and 4 bytes (and
//!   for longer patterns whose bytes or words repeat); any other pattern of
//!   `n` bytes becomes one strided 2-D memset per pattern element
//!   (`cuMemsetD2D32` with a pitch of `n`, or 16/8-bit elements where
//!   alignment demands), so every length 1..=128 works without a kernel:
//!   [`DeviceCaps::FILL_ANY_PATTERN`](ur_api::DeviceCaps) is set.
//! - **Rect copies**: one `cuMemcpy2DAsync` per slice; row by row where the
//!   two sides are on different devices or a pitch exceeds the device limit.
//! - **USM**: device (`cuMemAlloc`), host (`cuMemHostAlloc`), shared
//!   (`cuMemAllocManaged`, only on devices with concurrent managed access,
//!   and never more than the device's free memory). A [`CudaUsm`] holds
//!   what the driver returned, its kind and device; commands receive it
//!   resolved (no address table in the adapter), and dropping it (the
//!   trait's default `usm_free`) synchronises the devices and frees it.
//!   Advice (`cuMemAdvise`) and prefetch (`cuMemPrefetchAsync`) act on
//!   shared memory, known from the allocation's kind; on device and host
//!   memory they are accepted and do nothing. Existing host memory
//!   is pinned with `cuMemHostRegister` (portable).
//! - **Programs**: CUDA C compiled by NVRTC to a cubin for each device's
//!   compute capability (`--gpu-architecture=sm_XY` unless the options name
//!   one; a virtual `compute_XY` gives PTX), or PTX JIT-compiled by the
//!   driver. Build failures carry NVRTC's or the JIT's log. Kernels are
//!   looked up by their unmangled name: declare them `extern "C"`.
//! - **Launches**: grid = global / block; buffers and USM pointers pass as
//!   device addresses. Global offsets and local-memory arguments have no
//!   CUDA equivalent: the devices set neither `DeviceCaps::GLOBAL_OFFSET`
//!   nor `DeviceCaps::LOCAL_MEMORY_ARGS`, so the dyn layer refuses them.
//!   [`Kernels::kernel_info`](ur_api::adapter::Kernels::kernel_info) reports parameter sizes where the driver
//!   knows them (`cuFuncGetParamInfo`, 12.4+), so the dyn layer checks
//!   argument counts and sizes; with an older driver nothing can check them.
//! - **Queues are streams** (non-blocking, in order); each command records
//!   an event. Freeing memory (buffer release, `usm_free`) first
//!   synchronises the devices, so commands in flight never see freed memory.
//! - **Profiling**: CUDA events only measure differences. A profiling queue
//!   records a reference event at creation and notes the host clock when it
//!   completed; a command's `start` is that host time plus the reference to
//!   start-event time, `end` adds the start to end time; `queued` and
//!   `submit` are the host clock at the enqueue call. All are nanoseconds
//!   on the process's monotonic clock. `cuEventElapsedTime` is an `f32` of
//!   milliseconds: durations are good to about 0.5 µs, absolute times lose
//!   precision as the queue ages (about 0.1 ms after an hour).
//! - Driver and NVRTC codes map to [`ur_api::Error`] in `conv.rs`.
//! - Only `driver/` calls the driver and NVRTC: it loads them (the
//!   presence check, the symbol lists), wraps every call as a `Result`, and
//!   owns contexts, streams, events, modules, allocations and registrations
//!   as handles released on drop (`tests/tidy.rs` keeps it the only one).

mod conv;
mod device;
mod driver;
mod memory;
mod program;
mod queue;

pub use device::{CudaContext, CudaDevice, CudaPlatform};
pub use memory::{CudaBuffer, CudaUsm};
pub use program::{CudaKernel, CudaProgram};
pub use queue::{CudaEvent, CudaQueue};

/// The CUDA adapter. Creating it touches no library; the driver is looked
/// for when platforms are listed.
#[derive(Debug, Default)]
pub struct CudaAdapter {
    _private: (),
}

impl CudaAdapter {
    /// A CUDA adapter (cannot fail: an absent driver means zero platforms).
    pub fn new() -> Self {
        CudaAdapter { _private: () }
    }

    /// Why CUDA is unusable on this machine, or `None` where the driver loaded.
    ///
    /// ```
    /// if let Some(reason) = ur_cuda::CudaAdapter::unavailable_reason() {
    ///     println!("no CUDA: {reason}");
    /// }
    /// ```
    pub fn unavailable_reason() -> Option<String> {
        driver::load().err()
    }

    /// Whether NVRTC (CUDA C compilation) is available.
    pub fn nvrtc_available() -> bool {
        driver::load().is_ok() && driver::nvrtc_present()
    }
}

impl ur_api::Api for CudaAdapter {
    type Platform = CudaPlatform;
    type Device = CudaDevice;
    type Context = CudaContext;
    type Buffer = CudaBuffer;
    type Usm = CudaUsm;
    type Queue = CudaQueue;
    type Event = CudaEvent;
    type Program = CudaProgram;
    type Kernel = CudaKernel;
}
