//! # ur-api: the Unified Runtime adapter API
//!
//! One API over several compute backends, in two faces:
//!
//! - **For adapter authors**: the static [`Adapter`] trait with associated
//!   types (`Device`, `Context`, `Buffer`, `Queue`, `Event`, ...). An adapter
//!   is plain Rust objects with `Drop`; it keeps no handle tables and checks
//!   no parameters.
//! - **For runtimes**: the object-safe [`DynAdapter`] layer, implemented once
//!   for every adapter by [`AdapterHost`], and [`Runtime`] over all adapters
//!   of a process. Objects live in slot-map tables behind typed generational
//!   handles ([`BufferId`], [`QueueId`], ...). A released, stale or foreign
//!   handle is [`Error::InvalidHandle`], never undefined behaviour.
//!
//! ## Design choices
//!
//! - **Validation lives once, in the dyn layer**: sizes, regions in bounds,
//!   rect pitches, fill patterns, alignment, handles of the same context,
//!   capability flags. Adapters may assume valid input (see [`Adapter`]).
//! - **Capabilities are flags, not stubs**: [`DeviceCaps`], [`UsmCaps`] and
//!   [`ProgramFormats`] say what a device can do; the dyn layer answers
//!   [`Error::Unsupported`] before calling the adapter.
//! - **Allocations carry a device hint** ([`BufferDesc::device_hint`],
//!   [`UsmDesc::device`]), so backends without context-wide allocations
//!   (CUDA) know where to allocate.
//! - **Adapters answer [`MemoryConnection`]** for any two locations of
//!   theirs; across adapters the answer is `None`. Routing (use in place,
//!   adapter copy, host staging) is the memory manager's job, never an
//!   adapter's. Memory of another context may be used on a queue only where
//!   the adapter answered `Unified` (or `Migratable`, for copies).
//! - **Host memory handed to asynchronous operations** is a [`HostPtr`],
//!   whose `unsafe` constructor carries the lifetime promise; the blocking
//!   helpers of [`Runtime`] ([`Runtime::read`], [`Runtime::write`], ...) are safe.
//! - **Queues are in order**; every enqueue returns an event the caller
//!   releases ([`Runtime::complete`] waits and releases).

pub mod adapter;
pub mod dynamic;
pub mod error;
pub mod handles;
pub mod host_kernel;
pub mod limits;
pub mod partition;
pub mod runtime;
pub mod selector;
pub mod spin;
pub mod types;

pub use adapter::{Adapter, Api, KernelArg, Loc, MemArg, UsmRef};
pub use dynamic::{AdapterHost, ArgValue, BufferInfo, DynAdapter};
pub use error::{Error, HandleKind, LaunchLimit, Result};
pub use handles::{BufferId, ContextId, DeviceId, EventId, Handle, KernelId, Location, PlatformId, ProgramId, QueueId};
pub use host_kernel::{HostArg, HostArgs, HostKernelLibrary};
pub use runtime::Runtime;
pub use selector::{DeviceSelector, SelectorError, SELECTOR_ENV};
pub use types::*;

/// A short list, kept inline up to 8 items: the command path's wait lists
/// and kernel arguments, which each command builds without allocating
/// (the dyn layer, the C ABI, the OpenCL adapter).
pub type ShortList<T> = smallvec::SmallVec<[T; 8]>;
