//! # ur-opencl: the OpenCL adapter
//!
//! Drives every OpenCL platform of the machine through [`opencl3`] (feature
//! `dynamic`: libOpenCL is loaded at run time).
//!
//! ## Design choices
//!
//! - **No OpenCL is zero platforms.** Without `libOpenCL.so.1`, or with no
//!   ICD installed, [`Devices::platforms`](ur_api::adapter::Devices::platforms) answers an empty list, never an
//!   error or a panic; platforms without devices (Clover) answer an empty
//!   device list and the dyn layer skips them.
//! - **Allocations honour the device hint.** OpenCL allocates per context;
//!   a buffer is migrated (`clEnqueueMigrateMemObjects`) to its hinted
//!   device when it is created.
//! - **Connections** (see `device::memory_connection`): same context and
//!   device `Unified`; same context, other device `Migratable` (copied with
//!   `clEnqueueCopyBuffer`); other contexts or platforms `None`. The dyn
//!   layer holds commands to these answers, inside one context too: a buffer
//!   placed for device 0 is copied from on device 1's queue, never used there
//!   in place (which OpenCL would allow by migrating it implicitly).
//! - **The static trait trusts its caller.** Data-path methods are `unsafe
//!   fn`s whose contracts (regions in bounds, objects usable at the queue's
//!   location, host memory valid) the dyn layer discharges; the adapter
//!   re-checks none of them, and keeps only what OpenCL itself reports
//!   (build logs, argument sizes through `clSetKernelArg`, launch limits)
//!   and what its own FFI needs (no NUL byte in names and options).
//! - **USM through `cl_intel_unified_shared_memory` where a platform has
//!   it, else SVM** (`usm.rs`). The extension's entry points are declared
//!   in `ext.rs` and fetched per platform with
//!   `clGetExtensionFunctionAddressForPlatform`; a context whose devices all
//!   have it allocates host, device and shared memory with
//!   `clHostMemAllocINTEL`/`clDeviceMemAllocINTEL`/`clSharedMemAllocINTEL`
//!   for the hinted device (shared memory placed there where the runtime
//!   takes placement flags), copies and fills with `clEnqueueMemcpyINTEL`/
//!   `clEnqueueMemFillINTEL`, prefetches with `clEnqueueMigrateMemINTEL`,
//!   sets kernel arguments with `clSetKernelArgMemPointerINTEL` and frees
//!   with `clMemBlockingFreeINTEL`; the USM kinds are those the device's
//!   `CL_DEVICE_*_MEM_CAPABILITIES_INTEL` give access to. Advice is
//!   ignored (the trait's default): the extension defines no advice values
//!   of its own for `clEnqueueMemAdviseINTEL`, only a range reserved for
//!   device-specific ones, so there is nothing portable to map ours to. Other
//!   platforms use OpenCL 2.0 SVM: coarse-grain SVM is device USM,
//!   fine-grain buffer SVM adds host and shared; devices without SVM report
//!   no USM kinds and the dyn layer answers `Unsupported`. A [`Usm`]
//!   allocation holds its base (alignments above 128 bytes are served by an
//!   aligned address inside a larger allocation) and its context; commands
//!   receive it resolved, so the adapter keeps no table of addresses.
//!   Freeing SVM (`usm_free`, or dropping it) drains the context's queues
//!   first, since `clSVMFree` does not wait; SVM prefetch is
//!   `clEnqueueSVMMigrateMem` on 2.1+ devices.
//! - **No host registration.** OpenCL cannot pin existing host memory;
//!   pinned memory is a buffer with `ALLOC_HOST_PTR`, used through map/unmap.
//! - **Launches** take a global offset (`DeviceCaps::GLOBAL_OFFSET`, OpenCL
//!   1.1+) and `__local` arguments (`DeviceCaps::LOCAL_MEMORY_ARGS`);
//!   [`Kernels::kernel_info`](ur_api::adapter::Kernels::kernel_info) reports `CL_KERNEL_NUM_ARGS`, so the dyn layer
//!   checks argument counts.
//! - **Fills of any pattern length** are honest: powers of two use
//!   `clEnqueueFillBuffer`/`clEnqueueSVMMemFill`, other lengths a seed of
//!   whole repetitions doubled in place with copies.
//! - **Rect copies** go to `clEnqueue*BufferRect`; boxes whose slice pitch
//!   is not a multiple of the row pitch (which OpenCL refuses) are split
//!   into one 2-D box per slice.
//! - **Events across queues work on every runtime**: the queue of a foreign
//!   wait-list event is flushed if it was not (rusticl deadlocks otherwise),
//!   and what is known complete (finish, waits, queue order, wait-list
//!   edges) is tracked so a runtime that updates event status lazily
//!   (rusticl 22.3) still reports `Complete` (see `queue.rs`).
//! - **A failed build is answered again without the runtime.** SYCL
//!   runtimes cache the programs that built, not the failures, so a kernel
//!   whose program does not build (on PoCL 3.1, every one calling sub-group
//!   functions) is built again at every use, ~0.3 s each there. Each context
//!   keeps its failed builds (`program::FailedBuilds`: keyed by the source's
//!   format, its bytes compared in full and the options; at most 64 failures
//!   and 64 MiB of program bytes, least recently used evicted first) and a
//!   second build of one answers the same `ProgramBuild` error and log at
//!   once. Successful builds are not kept.
//! - Error codes map to [`ur_api::Error`] in one file of pure mappings,
//!   [`conv`].
//!
//! On a machine without a GPU, `POCL_DEVICES="pthread pthread"` and
//! `RUSTICL_ENABLE=swrast` give three devices over two platforms (PoCL,
//! rusticl), and Intel's CPU runtime registered by `cargo xtask setup`
//! (`OCL_ICD_VENDORS`, see [`registered_icd_vendors`]) a fourth; the tests
//! and benchmarks set these when they are unset.
//!
//! ```no_run
//! use ur_api::{BufferDesc, QueueProps, Runtime};
//! let mut rt = Runtime::new();
//! rt.add(ur_opencl::OpenClAdapter::new())?;
//! if let Some(&dev) = rt.all_devices().first() {
//!     let ctx = rt.create_context(&[dev])?;
//!     let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
//!     let buf = rt.create_buffer(ctx, &BufferDesc::new(64).on(dev), None)?;
//!     rt.write(q, buf, 0, &[1u8; 64])?;
//! }
//! # Ok::<(), ur_api::Error>(())
//! ```

pub mod conv;
mod device;
mod ext;
mod memory;
mod program;
mod queue;
mod spirv;
mod usm;

pub use device::{Context, Device, Platform};
pub use memory::Buffer;
pub use program::{Kernel, Program};
pub use queue::{Event, Queue};
pub use usm::Usm;

/// The OpenCL adapter. Holds no state: OpenCL objects carry their own.
#[derive(Debug, Default, Clone)]
pub struct OpenClAdapter {
    _private: (),
}

impl OpenClAdapter {
    /// The adapter; OpenCL itself is looked for when platforms are listed.
    pub fn new() -> Self {
        Self::default()
    }
}

/// The ICD vendors folder where `cargo xtask setup` registered Intel's CPU
/// OpenCL runtime beside the system's ICD files (`opencl-icd/vendors` in
/// the wheel cache: `$UR_WHEEL_CACHE`, else `$XDG_CACHE_HOME` or `~/.cache`
/// + `unified-runtime/wheels`), or `None` where nothing is registered.
///
/// For tests, benches and tools, which set `OCL_ICD_VENDORS` to it before
/// their first OpenCL call when the variable is unset; the adapter itself
/// never changes the process environment.
pub fn registered_icd_vendors() -> Option<std::path::PathBuf> {
    use std::path::PathBuf;
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let cache = nonempty("UR_WHEEL_CACHE").map(PathBuf::from).or_else(|| {
        let base = nonempty("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
        Some(base.join("unified-runtime").join("wheels"))
    })?;
    let vendors = cache.join("opencl-icd").join("vendors");
    vendors.join("intel-cpu.icd").is_file().then_some(vendors)
}

impl ur_api::Api for OpenClAdapter {
    type Platform = Platform;
    type Device = Device;
    type Context = Context;
    type Buffer = Buffer;
    type Usm = Usm;
    type Queue = Queue;
    type Event = Event;
    type Program = Program;
    type Kernel = Kernel;
}

// The optional groups this adapter does not offer (its devices lack the
// capability flags, so the dyn layer never calls these defaults).
impl ur_api::adapter::HostLocking for OpenClAdapter {}
