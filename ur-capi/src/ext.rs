//! The memory-connection query as a UR extension function
//! (`include/ur_rust_memory_connection.h`): can memory allocated at one
//! (context, device) location be used in place at another, only copied by
//! the adapter, or must it travel through host memory?
//!
//! UR has no such query (SYCL's `piextGetMemoryConnection` proposal never
//! landed); clients find this one with `dlsym` on the adapter library.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::sync::Arc;

use ur_api::{DeviceId, Location, MemoryConnection};

use crate::conv::CapiError;
use crate::handles::get;
use crate::info::{entry, put_required};
use crate::objects::Context;
use crate::state::state;
use crate::sys::*;

/// Memory of the source is not usable at the destination; data must go
/// through host memory.
pub const UR_RUST_MEMORY_CONNECTION_NONE: u32 = 0;
/// The adapter can copy between the two locations directly.
pub const UR_RUST_MEMORY_CONNECTION_MIGRATABLE: u32 = 1;
/// Memory of the source is usable at the destination as it is.
pub const UR_RUST_MEMORY_CONNECTION_UNIFIED: u32 = 2;

fn location(c: ur_context_handle_t, d: ur_device_handle_t) -> Result<Location, CapiError> {
    let ctx = get::<Arc<Context>, _>(c)?;
    let dev = get::<DeviceId, _>(d)?;
    Ok(Location::new(ctx.part_of(dev), dev))
}

/// `urRustMemoryConnectionExp`: the connection from (`src_context`,
/// `src_device`) to (`dst_context`, `dst_device`), one of the
/// `UR_RUST_MEMORY_CONNECTION_*` values, written to `out`.
///
/// # Safety
///
/// `out` is null or valid for a write of one `u32`; handles are looked up,
/// never read.
#[no_mangle]
pub unsafe extern "C" fn urRustMemoryConnectionExp(
    src_context: ur_context_handle_t,
    src_device: ur_device_handle_t,
    dst_context: ur_context_handle_t,
    dst_device: ur_device_handle_t,
    out: *mut u32,
) -> ur_result_t {
    entry(|| {
        let src = location(src_context, src_device)?;
        let dst = location(dst_context, dst_device)?;
        let c = match state().rt.memory_connection(src, dst)? {
            MemoryConnection::None => UR_RUST_MEMORY_CONNECTION_NONE,
            MemoryConnection::Migratable => UR_RUST_MEMORY_CONNECTION_MIGRATABLE,
            MemoryConnection::Unified => UR_RUST_MEMORY_CONNECTION_UNIFIED,
        };
        // SAFETY: the caller's promise on `out`.
        unsafe { put_required(out, c) }
    })
}
