//! The object-safe face of the API, for runtimes.
//!
//! [`AdapterHost`] wraps any [`Adapter`](crate::Adapter) (a blanket
//! implementation, written once) and implements [`DynAdapter`]: objects live
//! in slot-map tables behind typed generational handles, and every parameter
//! is checked here, once, before the adapter sees it.
//!
//! Files: `tables.rs` (entries, lookups, the location check, the lanes
//! that keep events and in-flight operations per group of queues),
//! `table_lock.rs` (the tables' lock: a shared read-write lock or any one
//! lane's lock to read, both and every lane to write; a lane's lock is a
//! [`crate::spin`] lock, its unlock a release store), `op.rs` (a
//! command's operation: its lane's lock, ticket and borrowed wait list),
//! `grace.rs` (how commands borrow entries without a count per object), `slab.rs`
//! (the event table), `check.rs`
//! (pure parameter checks), `objects.rs`, `memory.rs`, `commands.rs` (the
//! methods by area; every command has one shape, `AdapterHost::command`),
//! `host.rs` (the trait implementation forwarding to them),
//! `entry_points.rs` (the one list of the trait's methods, from which the
//! trait, `host.rs` and `Runtime`'s forwarders expand).
//!
//! Memory is bound to its location: a buffer or USM allocation made at
//! (context, device) is used by a command on a queue elsewhere only where
//! the adapter answers `Unified` from there to the queue's location (for
//! copies also `Migratable`); otherwise the command fails with
//! [`Error::NotAccessible`](crate::Error::NotAccessible) and the memory
//! manager moves the data.

mod check;
mod commands;
mod entry_points;
mod grace;
mod host;
mod memory;
mod objects;
mod op;
pub mod pointer_map;
mod slab;
mod sub_devices;
mod table_lock;
mod tables;
mod usm_cache;

pub(crate) use entry_points::dyn_entry_points;
pub use entry_points::{EntryPoint, OnRuntime, ENTRY_POINTS};
pub use pointer_map::{Hit, MapError, PointerMap};
pub use tables::AdapterHost;

use crate::error::Result;
use crate::handles::{BufferId, ContextId, DeviceId, EventId, KernelId, Location, PlatformId, ProgramId, QueueId};
use crate::types::{
    Backend, BufferDesc, DeviceAddr, DeviceInfo, EventStatus, HostPtr, KernelGroupInfo, KernelInfo, MapFlags, MemFlags,
    MemRef, MemoryConnection, NativeHandle, NativeOf, NdRange, Partition, PlatformInfo, ProfilingInfo, ProgramSource,
    QueueProps, RectCopy, UsmAdvice, UsmDesc, UsmPointerInfo, UsmPtr,
};

/// One kernel argument in the dyn layer.
#[derive(Debug, Clone, Copy)]
pub enum ArgValue<'a> {
    /// A buffer.
    Buffer(BufferId),
    /// A USM pointer.
    Usm(UsmPtr),
    /// A by-value argument's bytes.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

impl<'a> ArgValue<'a> {
    /// A scalar argument from a plain-data value's bytes.
    pub fn scalar<T: bytemuck::Pod>(v: &'a T) -> Self {
        ArgValue::Scalar(bytemuck::bytes_of(v))
    }
}

/// What the dyn layer knows about a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferInfo {
    /// The buffer's context.
    pub context: ContextId,
    /// The device it was placed for (the hint, or the context's first device).
    pub device: DeviceId,
    /// Size in bytes.
    pub size: usize,
    /// Creation flags.
    pub flags: MemFlags,
    /// For a sub-buffer: its parent and offset in it.
    pub parent: Option<(BufferId, usize)>,
}

/// Declares every method of the list (see `entry_points.rs`) in the trait:
/// abstract, or with the default body the list gives.
macro_rules! dyn_trait_items {
    ($(
        $(#[$m:meta])*
        [$($on:tt)*] fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty $(= $body:block)?;
    )*) => {$(
        dyn_trait_item! { $(#[$m])* fn $name(&$self $(, $arg: $aty)*) -> $ret; $($body)? }
    )*};
}

/// One trait method of [`dyn_trait_items!`].
macro_rules! dyn_trait_item {
    ($(#[$m:meta])* fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty;) => {
        $(#[$m])*
        fn $name(&$self $(, $arg: $aty)*) -> $ret;
    };
    ($(#[$m:meta])* fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty; $body:block) => {
        $(#[$m])*
        fn $name(&$self $(, $arg: $aty)*) -> $ret $body
    };
}

/// The object-safe adapter interface. Every method validates its input.
///
/// Users normally call these through [`Runtime`](crate::Runtime), which
/// routes each call to the adapter that owns its handles.
///
/// The methods are declared in one list, `dynamic/entry_points.rs`, that
/// also makes `AdapterHost`'s implementation, `Runtime`'s forwarders and
/// [`ENTRY_POINTS`].
pub trait DynAdapter: Send + Sync {
    dyn_entry_points!(dyn_trait_items);
}
