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
//! - **Handles are registered headers, never trusted pointers**
//!   ([`handles`]): each points at a header whose first word is our
//!   dispatch table (the loader reads it there); an incoming handle is
//!   looked up by address in one table before anything is done with it, so
//!   a released, stale, foreign or mistyped handle answers `INVALID_*`.
//!   Reference counts are kept per handle in that table.
//! - **No panic crosses the ABI**: every entry point runs its body under
//!   `catch_unwind` ([`info::entry`]); errors are typed ([`conv::CapiError`])
//!   and mapped to `ur_result_t` in [`conv`].
//! - **One adapter, every backend**: the adapter handle stands for the whole
//!   project runtime; each project platform is one UR platform. Platforms
//!   report `UR_BACKEND_NATIVE_CPU`, the UR backend libsycl drives without
//!   native interop (see [`platform::BACKEND`]).
//! - **Cross-context wait lists** are waited for on the host before the
//!   command is enqueued; in-context ones are handed to the runtime.
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
//! `GetGlobalTimestamps`. Context: `urContextCreate`, `Retain`, `Release`,
//! `GetInfo`. Memory: `urMemBufferCreate`, `BufferPartition`, `Retain`,
//! `Release`, `GetInfo`. USM: `urUSMHostAlloc`, `DeviceAlloc`,
//! `SharedAlloc`, `Free`, `GetMemAllocInfo`, `PoolCreate`, `PoolRetain`,
//! `PoolRelease`, `PoolGetInfo`. Queue: `urQueueCreate`, `Retain`,
//! `Release`, `GetInfo`, `Finish`, `Flush`. Event: `urEventWait`,
//! `Retain`, `Release`, `GetInfo`, `GetProfilingInfo`. Enqueue:
//! `MemBufferRead`, `Write`, `ReadRect`, `WriteRect`, `Copy`, `CopyRect`,
//! `Fill`, `Map`, `MemUnmap`, `USMMemcpy`, `USMFill`, `USMPrefetch`,
//! `USMAdvise`, `EventsWait`, `EventsWaitWithBarrier`,
//! `EventsWaitWithBarrierExt`.
//!
//! ## Entry points not implemented
//!
//! Left null in the tables (the loader answers
//! `UR_RESULT_ERROR_UNINITIALIZED`; libsycl's host-only paths never call
//! them):
//!
//! - programs and kernels (`urProgram*`, `urKernel*`,
//!   `urEnqueueKernelLaunch`): the project's programs are Rust host
//!   kernels, OpenCL C, SPIR-V or CUDA; SYCL device images need an offload
//!   compiler this machine does not have, and launching them needs the
//!   SYCL kernel ABI, which `ur-api` does not model;
//! - native handles (`*GetNativeHandle`, `*CreateWithNativeHandle`):
//!   the runtime hides its backends' objects by design;
//! - images, samplers, bindless images, virtual and physical memory, IPC,
//!   command buffers, graphs, USM 2-D copies and fills, device globals,
//!   host pipes, `urEventSetCallback`, `urContextSetExtendedDeleter`,
//!   sub-device partitioning, `urDeviceSelectBinary`: no project API to
//!   stand on.

pub mod conv;
pub mod ddi;
pub mod handles;
pub mod info;
pub mod objects;
pub mod state;
pub mod sys;

pub mod context;
pub mod device;
pub mod enqueue;
pub mod ext;
pub mod memory;
pub mod platform;
pub mod queue;
pub mod usm;
