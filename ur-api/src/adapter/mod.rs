//! The static face of the API, for adapter authors.
//!
//! An adapter is a set of plain Rust types with `Drop`. It never validates
//! handles, sizes or regions (the dyn layer did that before calling), never
//! picks a route between locations and never stages through host memory on
//! its own: it answers [`Devices::memory_connection`] and performs
//! primitive operations.
//!
//! ## The API split by area
//!
//! The API is one trait per area, each implemented in the adapter's file
//! that owns the area (the wgpu-hal shape):
//!
//! | trait | file here | what | adapter file |
//! |---|---|---|---|
//! | [`Api`] | `mod.rs` | the associated types | `lib.rs` |
//! | [`Devices`] | `device.rs` | the backend, discovery, contexts, memory connections, native handles | `device.rs` |
//! | [`Memory`] | `memory.rs` | buffers and their transfers, rect copies, fills | `memory.rs` |
//! | [`Commands`] | `commands.rs` | queues, events, waits, barriers | `queue.rs` |
//! | [`SubBuffers`], [`Mapping`], [`HostLocking`] | `memory.rs` | optional groups | `memory.rs` |
//! | [`Profiling`] | `commands.rs` | optional group | `queue.rs` |
//! | [`Kernels`] | `kernels.rs` | optional group: programs, kernels, launches | `program.rs` |
//! | [`UnifiedMemory`] | `usm.rs` | optional group: USM | `usm.rs` or `memory.rs` |
//!
//! [`Adapter`] is the umbrella: every type that implements all of them is
//! an `Adapter` (a blanket impl), so `A: Adapter` bounds reach every
//! method without naming the area traits. Code that calls the static trait
//! on a concrete adapter type imports the areas it uses, or
//! [`prelude`]`::*`.
//!
//! ## Optional groups: their own traits
//!
//! What a device may lack is a group of its own, one trait per group,
//! whose methods all have bodies here: [`SubBuffers`]
//! ([`DeviceCaps::SUB_BUFFERS`]), [`Mapping`] ([`DeviceCaps::MAP`]),
//! [`HostLocking`] ([`DeviceCaps::HOST_REGISTER`]), [`Profiling`]
//! ([`DeviceCaps::PROFILING`]), [`Kernels`] ([`DeviceCaps::KERNELS`]) and
//! [`UnifiedMemory`] (a non-empty [`UsmCaps`](crate::UsmCaps)). An adapter
//! without a group says so in one line, `impl Mapping for MyAdapter {}`,
//! and writes no "unsupported" body; an adapter with it overrides the
//! methods in the file that owns the group. The bodies kept here (an
//! [`Error::Unsupported`]) are never reached where the flag is absent: the
//! dyn layer answers `Unsupported` first. The capability flags stay the
//! run-time truth because they are per device (one platform may mix
//! devices with and without a group); the traits make a group's presence
//! in the adapter visible in its type and keep its defaults in one place.
//! Working defaults (rect copies as one copy per row, a prefetch as a
//! barrier, advice ignored, no kernel argument info) are overridden where
//! the backend does better.
//!
//! ## Safe and unsafe methods (the wgpu-hal model)
//!
//! Methods whose arguments cannot break memory safety however they are
//! chosen (queries, object creation without host memory, waits) are safe.
//! Every method that trusts the dyn layer's checks (regions inside their
//! objects, objects usable at the queue's location, host memory valid for
//! the command) is an `unsafe fn` whose `# Safety` section lists what the
//! caller guarantees. [`AdapterHost`](crate::AdapterHost) is the one caller
//! in the project that discharges those contracts; safe code reaches an
//! adapter only through it, so no safe call can make an adapter read or
//! write out of bounds.
//!
//! Guarantees the dyn layer gives every call (safe or not):
//! - every object passed belongs to this adapter and is alive (it holds a
//!   reference until the call returns);
//! - optional operations are only called when the device's
//!   [`DeviceCaps`](crate::DeviceCaps) / [`UsmCaps`](crate::UsmCaps) say so.
//!
//! The `unsafe` methods state in their `# Safety` sections what else the
//! caller guarantees; the common conditions, referred to as **the command
//! contract**, are:
//! - sizes are non-zero and every region (`offset + size`, rect boxes with
//!   explicit, consistent pitches, USM ranges) lies inside its buffer,
//!   allocation or host span;
//! - every buffer and USM allocation is usable at the queue's location:
//!   allocated at that (context, device), or at one this adapter answered
//!   `Unified` for, or (for the copy operations only) `Migratable`;
//! - wait-list events belong to the queue's context;
//! - host memory ([`HostPtr`]) is valid for the whole command, as
//!   [`HostPtr::new`] promises.
//!
//! A test or benchmark may call the static trait directly; it then takes
//! these obligations on itself in an `unsafe` block.
//!
//! [`DeviceCaps::SUB_BUFFERS`]: crate::DeviceCaps::SUB_BUFFERS
//! [`DeviceCaps::MAP`]: crate::DeviceCaps::MAP
//! [`DeviceCaps::HOST_REGISTER`]: crate::DeviceCaps::HOST_REGISTER
//! [`DeviceCaps::PROFILING`]: crate::DeviceCaps::PROFILING
//! [`DeviceCaps::KERNELS`]: crate::DeviceCaps::KERNELS
//! [`Error::Unsupported`]: crate::Error::Unsupported

mod commands;
mod device;
mod kernels;
mod memory;
mod usm;

pub use commands::{wait_each, Commands, Profiling};
pub use device::Devices;
pub use kernels::Kernels;
pub use memory::{HostLocking, Mapping, Memory, SubBuffers};
pub use usm::UnifiedMemory;

use crate::types::{HostPtr, UsmPtr};

/// Every area trait, for code that calls the static trait on a concrete
/// adapter type: `use ur_api::adapter::prelude::*;`.
pub mod prelude {
    pub use super::{
        Adapter, Api, Commands, Devices, HostLocking, Kernels, Mapping, Memory, Profiling, SubBuffers, UnifiedMemory,
    };
}

/// The associated types of an adapter: plain Rust types with `Drop`, held
/// by [`AdapterHost`](crate::AdapterHost) behind its handles. Types an
/// adapter never makes (no USM, no kernels) may be `()`.
pub trait Api: Send + Sync + 'static {
    /// A platform (a driver / vendor implementation).
    type Platform: Send + Sync + 'static;
    /// A device of a platform.
    type Device: Send + Sync + 'static;
    /// A context over one or more devices of one platform.
    type Context: Send + Sync + 'static;
    /// A buffer or sub-buffer.
    type Buffer: Send + Sync + 'static;
    /// A USM allocation. Dropping it must not free memory that commands
    /// already enqueued still use (free it in [`UnifiedMemory::usm_free`],
    /// or keep the memory alive from the commands).
    type Usm: Send + Sync + 'static;
    /// An in-order queue on one device of a context.
    type Queue: Send + Sync + 'static;
    /// The completion of one command.
    type Event: Send + Sync + 'static;
    /// A built program.
    type Program: Send + Sync + 'static;
    /// A kernel of a program.
    type Kernel: Send + Sync + 'static;
}

/// The trait every backend is: the associated types ([`Api`]), the
/// required areas ([`Devices`], [`Memory`], [`Commands`]) and the optional
/// groups ([`SubBuffers`], [`Mapping`], [`HostLocking`], [`Profiling`],
/// [`Kernels`], [`UnifiedMemory`]; see the module docs). Implemented for
/// every type that implements them all; never implemented by hand.
///
/// An `A: Adapter` bound reaches every method of every area (the methods
/// of supertraits are in scope through the bound), and `A::Buffer` names
/// an associated type.
pub trait Adapter:
    Api + Devices + Memory + Commands + SubBuffers + Mapping + HostLocking + Profiling + Kernels + UnifiedMemory
{
}

impl<T> Adapter for T where
    T: Api + Devices + Memory + Commands + SubBuffers + Mapping + HostLocking + Profiling + Kernels + UnifiedMemory
{
}

/// A resolved USM range as an adapter receives it: the allocation (the
/// adapter's own object, looked up by the dyn layer), the offset in it and
/// the address at that offset.
pub struct UsmRef<'a, A: Api + ?Sized> {
    /// The allocation.
    pub alloc: &'a A::Usm,
    /// Byte offset of the range in the allocation.
    pub offset: usize,
    /// The address at `offset` (the allocation's base plus `offset`).
    pub ptr: UsmPtr,
}

impl<A: Api + ?Sized> Clone for UsmRef<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: Api + ?Sized> Copy for UsmRef<'_, A> {}

impl<A: Api + ?Sized> std::fmt::Debug for UsmRef<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UsmRef({} at offset {})", self.ptr, self.offset)
    }
}

/// One side of a USM copy as an adapter receives it.
pub enum MemArg<'a, A: Api + ?Sized> {
    /// A range of a USM allocation.
    Usm(UsmRef<'a, A>),
    /// Host memory that is not a USM allocation.
    Host(HostPtr),
}

impl<A: Api + ?Sized> Clone for MemArg<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: Api + ?Sized> Copy for MemArg<'_, A> {}

impl<A: Api + ?Sized> std::fmt::Debug for MemArg<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemArg::Usm(u) => u.fmt(f),
            MemArg::Host(h) => write!(f, "Host({:p}, {} bytes)", h.as_ptr(), h.len()),
        }
    }
}

/// One kernel argument as an adapter receives it.
pub enum KernelArg<'a, A: Api + ?Sized> {
    /// A buffer (or sub-buffer).
    Buffer(&'a A::Buffer),
    /// A USM pointer, resolved to its allocation.
    Usm(UsmRef<'a, A>),
    /// A by-value argument's bytes.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

impl<A: Api + ?Sized> std::fmt::Debug for KernelArg<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelArg::Buffer(_) => f.write_str("Buffer"),
            KernelArg::Usm(p) => write!(f, "Usm({})", p.ptr),
            KernelArg::Scalar(b) => write!(f, "Scalar({} bytes)", b.len()),
            KernelArg::Local(n) => write!(f, "Local({n})"),
        }
    }
}

/// A location as an adapter sees it: a context and one of its devices.
pub type Loc<'a, A> = (&'a <A as Api>::Context, &'a <A as Api>::Device);
