//! # ur-capi: the project's adapters behind the Unified Runtime C ABI
//!
//! `cargo build --release -p ur-capi` makes `libur_adapter_rust.so`, an
//! adapter library for Intel's UR loader (UR 0.12): point the loader at it
//! with `UR_ADAPTERS_FORCE_LOAD=/path/to/libur_adapter_rust.so` and any UR
//! client (the DPC++ SYCL runtime `libsycl.so` included) runs on every
//! device of the project's own `Runtime` (`ur_adapters::discover`: native,
//! sim with `UR_SIM_TOPOLOGY`, OpenCL, CUDA, Level Zero).
//!
//! Design choices (see the module docs for each area):
//!
//! - **Bindings are generated** (`cargo xtask codegen`, bindgen over the
//!   wheel's `ur_ddi.h`, committed in `bindings.rs`): types only; this
//!   crate defines the entry points and hands them out through the
//!   `urGet*ProcAddrTable` exports ([`ddi`]).
//! - **Handles are headers that hold their objects, never trusted
//!   pointers** ([`handles`]): each points at a header whose first word is
//!   our dispatch table (the loader reads it there), then the object and its
//!   reference count behind the header's own lock. An incoming address is
//!   read only if it lies in one of our header arenas on a header boundary
//!   (a wait-free check), so a released, stale, foreign or mistyped handle
//!   answers `INVALID_*`; one translation per handle, and no lock shared by
//!   every thread.
//! - **No panic crosses the ABI**: every entry point runs its body under
//!   `catch_unwind` ([`info::entry`]); errors are typed ([`conv::CapiError`])
//!   and mapped to `ur_result_t` in [`conv`].
//! - **One adapter, every backend**: the adapter handle stands for the whole
//!   project runtime; each project platform is one UR platform, reporting
//!   the UR backend of the project backend that serves it
//!   ([`conv::ur_backend`]: OpenCL platforms are `UR_BACKEND_OPENCL`, so
//!   libsycl offers them the SPIR-V images applications ship). The
//!   host-only platforms (native, sim) are listed only where nothing else
//!   is, or with `UR_RUST_HOST_PLATFORMS=1` ([`state::state`]). With
//!   `UR_RUST_ONE_PLATFORM=1` one platform holds every runtime's devices,
//!   and a context may span runtimes ([`state::ONE_PLATFORM_ENV`]).
//! - **SYCL device code runs** ([`program`], [`kernel`]): SPIR-V programs
//!   built for every device of their context, kernels with their queries,
//!   `urEnqueueKernelLaunchWithArgsExp`; native handles for interop
//!   ([`native`]).
//! - **Cross-context wait lists** are waited for on the host before the
//!   command is enqueued; in-context ones are handed to the runtime.
//!   Memory objects are another matter: a command uses a buffer only
//!   through a queue of the buffer's context (`INVALID_CONTEXT`
//!   otherwise, [`managed::same_context`]), whatever the adapter.
//! - **UR's command rules, not the backend's**: fills take any
//!   power-of-two pattern (longer than a backend fill takes: written as
//!   replicated host data, [`enqueue`]); buffers larger than a device of
//!   their context allocates are refused at creation; partitions only
//!   narrow their parent's access.
//! - **Buffers of multi-device contexts live in the memory manager**
//!   ([`managed`]): UR buffers belong to a context and UR puts migration in
//!   the adapter; the project's runtime forbids implicit migration, so
//!   such a buffer is a `ur-memory-manager` logical buffer, acquired at the
//!   queue's location before each command (the manager copies along its
//!   routes) and handed back after it. One-device contexts keep plain
//!   runtime buffers.
//! - **Profiling times are on one clock** with `urDeviceGetGlobalTimestamps`
//!   ([`queue::on_host_clock`]): device-measured intervals, anchored at the
//!   host time the event was handed out.
//! - **Every DDI slot is filled**: unsupported entry points answer
//!   `UNSUPPORTED_FEATURE` through stubs generated from the bindings
//!   ([`unsupported`]).
//!
//! ## Tests and benches
//!
//! `tests/loader.rs` calls through Intel's loader; `tests/sycl.rs` builds
//! the SYCL programs of `tests/sycl/` and runs each on this library and on
//! UR's own OpenCL adapter (same output), and again under the loader's
//! validation layer (no kind of report UR's own adapter does not also get);
//! `tests/handle_sweep.rs` calls every implemented entry point with stale,
//! foreign and mistyped handles (generated callers, so new entry points are
//! swept too); `benches/urabi.rs` compares with UR's OpenCL adapter.
//! - **The project's idea, exposed**: `urRustMemoryConnectionExp` (header
//!   `include/ur_rust_memory_connection.h`, [`ext`]) answers the
//!   memory-connection query for two (context, device) locations.
//!
//! ## Entry points implemented
//!
//! Adapter: `urAdapterGet`, `Retain`, `Release`, `GetLastError`,
//! `GetInfo`, `SetLoggerCallback`, `SetLoggerCallbackLevel`. Platform:
//! `urPlatformGet`, `GetInfo`, `GetApiVersion`, `GetBackendOption`.
//! Device: `urDeviceGet`, `GetInfo`, `Retain`, `Release`,
//! `GetGlobalTimestamps`, `SelectBinary`, `GetNativeHandle`. Context: `urContextCreate`, `Retain`, `Release`,
//! `GetInfo`. Memory: `urMemBufferCreate`, `BufferPartition`, `Retain`,
//! `Release`, `GetInfo`. USM: `urUSMHostAlloc`, `DeviceAlloc`,
//! `SharedAlloc`, `Free`, `GetMemAllocInfo`, `PoolCreate`, `PoolRetain`,
//! `PoolRelease`, `PoolGetInfo`. Queue: `urQueueCreate`, `Retain`,
//! `Release`, `GetInfo`, `Finish`, `Flush`. Event: `urEventWait`,
//! `Retain`, `Release`, `GetInfo`, `GetProfilingInfo`, `SetCallback`
//! ([`completion`]), `CreateWithNativeHandle` (native handle 0: a
//! complete placeholder event). Enqueue:
//! `MemBufferRead`, `Write`, `ReadRect`, `WriteRect`, `Copy`, `CopyRect`,
//! `Fill`, `Map`, `MemUnmap`, `USMMemcpy`, `USMFill`, `USMPrefetch`,
//! `USMAdvise`, `EventsWait`, `EventsWaitWithBarrier`,
//! `EventsWaitWithBarrierExt`, `KernelLaunchWithArgsExp`. Program:
//! `urProgramCreateWithIL`, `CreateWithBinary` (SPIR-V), `Build`,
//! `BuildExp`, `Compile`, `CompileExp`, `Link`, `LinkExp` (one module),
//! `Retain`, `Release`, `GetInfo`, `GetBuildInfo`, `GetNativeHandle`,
//! `CreateWithNativeHandle`. Kernel: `urKernelCreate`, `Retain`,
//! `Release`, `GetInfo`, `GetGroupInfo`, `GetSubGroupInfo`,
//! `SetExecInfo`, `GetNativeHandle`, `CreateWithNativeHandle`. Platform,
//! context and queue: `GetNativeHandle`; queue:
//! `urQueueIsGraphCaptureEnabledExp`.
//!
//! ## Entry points not implemented
//!
//! Every other DDI table slot holds a stub generated by `build.rs` from
//! the bindings that answers `UR_RESULT_ERROR_UNSUPPORTED_FEATURE` (never
//! a null slot, which the loader would report as `UNINITIALIZED`). The
//! families, with why (the complete per-entry-point list, with reasons,
//! is in [`unsupported`]):
//!
//! - linking several SPIR-V modules, specialization constants, device
//!   globals and function pointers of programs;
//! - native handles of USM pools, and buffers of several devices' contexts
//!   (the memory manager's, one allocation per device) to or from native
//!   handles;
//! - images, samplers, bindless images, virtual and physical memory, IPC,
//!   command buffers, graphs, USM 2-D copies and fills, device globals,
//!   host pipes: no project API to stand on.

pub mod completion;
pub mod conv;
pub mod ddi;
pub mod handles;
pub mod info;
pub mod objects;
pub mod rt;
pub mod state;
pub mod sys;
pub mod table;
pub mod unsupported;

pub mod context;
pub mod device;
pub mod enqueue;
pub mod ext;
pub mod kernel;
pub mod managed;
pub mod memory;
pub mod native;
pub mod partition;
pub mod platform;
pub mod program;
pub mod queue;
pub mod usm;
