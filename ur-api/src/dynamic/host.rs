//! The [`DynAdapter`] implementation of [`AdapterHost`].
//!
//! A trait's methods must sit in one `impl` block, so this file only
//! forwards each method of the list (`entry_points.rs`) to the inherent
//! method of the same name, written
//! by area: `objects.rs` (platforms, devices, contexts, queues, events,
//! programs, kernels), `memory.rs` (buffers, USM, host locks) and
//! `commands.rs` (every `enqueue_*`). Inherent methods take precedence
//! over trait methods in `AdapterHost::<A>::name` paths, so these calls do
//! not recurse (an entry without its inherent method would: the
//! forwarders deny rustc's `unconditional_recursion` lint, so the build
//! fails). `adapter_id` and `backend`
//! are the inherent methods written here.

use super::tables::AdapterHost;
use super::{dyn_entry_points, ArgValue, BufferInfo, DynAdapter};
use crate::adapter::Adapter;
use crate::error::Result;
use crate::handles::*;
use crate::types::*;

/// Each method of the list (`entry_points.rs`) calls the inherent method of
/// the same name; the trait's default methods are not overridden.
macro_rules! to_inherent {
    ($(
        $(#[$m:meta])*
        [$($on:tt)*] fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty $(= $body:block)?;
    )*) => {$(
        to_inherent_one! { fn $name(&$self $(, $arg: $aty)*) -> $ret; $($body)? }
    )*};
}

/// One method of [`to_inherent!`].
macro_rules! to_inherent_one {
    (fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty;) => {
        // Without an inherent method of this name the call below resolves
        // to this very method: make that a build error, not a warning.
        #[deny(unconditional_recursion)]
        fn $name(&$self $(, $arg: $aty)*) -> $ret {
            AdapterHost::<A>::$name($self $(, $arg)*)
        }
    };
    (fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty; $body:block) => {};
}

impl<A: Adapter> AdapterHost<A> {
    fn adapter_id(&self) -> u32 {
        self.id
    }

    fn backend(&self) -> Backend {
        self.adapter.backend()
    }
}

impl<A: Adapter> DynAdapter for AdapterHost<A> {
    dyn_entry_points!(to_inherent);
}
