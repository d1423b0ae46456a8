//! USM entry points: host, device and shared allocations, pointer queries,
//! and pools (a pool hands out plain allocations of its context).
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never
//! read. USM pointers are only compared with the runtime's allocation
//! books, never dereferenced here.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;

use ur_api::{DeviceId, UsmDesc, UsmKind, UsmPtr};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count, register};
use crate::info::{entry, put_required, query, Out};
use crate::objects::{Context, Kind, Object, Pool};
use crate::state::{device_handle, state};
use crate::sys::*;

/// Allocations made through a pool: base address to the pool's handle
/// (`UR_USM_ALLOC_INFO_POOL`). Allocations without a pool are not listed.
static POOL_OF: LazyLock<Mutex<HashMap<usize, usize>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// `POOL_OF.len()`, changed only under its lock: a free with no pooled
/// allocation anywhere skips the lock and the hash. An allocation's entry
/// is made before its pointer is handed out, so a thread freeing it (which
/// got the pointer after that) sees a count of at least one.
static POOLED: AtomicUsize = AtomicUsize::new(0);

/// Records that `p` was allocated through `pool`.
fn pool_insert(p: usize, pool: usize) {
    let mut map = POOL_OF.lock();
    map.insert(p, pool);
    POOLED.store(map.len(), Ordering::Relaxed);
}

/// Forgets the pool of `p`; returns it.
fn pool_remove(p: usize) -> Option<usize> {
    if POOLED.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut map = POOL_OF.lock();
    let pool = map.remove(&p);
    POOLED.store(map.len(), Ordering::Relaxed);
    pool
}

/// The runtime context of `ctx` that allocated `p` (its first when none
/// did: the runtime then answers for an unknown pointer).
fn owner(ctx: &Context, p: *const c_void) -> ur_api::ContextId {
    if !ctx.is_split() {
        return ctx.id;
    }
    let rt = &state().rt;
    ctx.parts
        .iter()
        .map(|(c, _)| *c)
        .find(|c| rt.usm_pointer_info(*c, UsmPtr(p as u64)).is_ok())
        .unwrap_or(ctx.id)
}

fn alloc(
    c: ur_context_handle_t,
    d: Option<ur_device_handle_t>,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
    kind: UsmKind,
) -> Result<(), CapiError> {
    let ctx = get::<Arc<Context>, _>(c)?;
    // Every handle is checked before any other argument (the UR order:
    // handles, pointers, values).
    let device = d.map(get::<DeviceId, _>).transpose()?;
    if !pool.is_null() {
        get::<Arc<Pool>, _>(pool)?;
    }
    if out.is_null() {
        return Err(CapiError::NullPointer);
    }
    if size == 0 {
        return Err(CapiError::Api(ur_api::Error::InvalidSize {
            what: "USM allocation",
            size,
        }));
    }
    // SAFETY: null or a valid descriptor (module contract).
    let align = unsafe { desc.as_ref() }.map_or(0, |d| d.align as usize);
    if align != 0 && !align.is_power_of_two() {
        return Err(CapiError::InvalidValue);
    }
    let mut udesc = UsmDesc::new(kind, size).aligned(align);
    if let Some(d) = device {
        udesc = udesc.on(d);
    }
    // A context over several runtimes: device memory in the device's
    // runtime context; host and shared memory would have to be usable by
    // every runtime's devices, which no runtime gives.
    let part = match device {
        _ if !ctx.is_split() => ctx.id,
        Some(d) if kind == UsmKind::Device => ctx.part_of(d),
        _ => return Err(CapiError::Unsupported),
    };
    let ptr = state().rt.usm_alloc(part, &udesc)?;
    if !pool.is_null() {
        pool_insert(ptr.0 as usize, pool as usize);
    }
    // SAFETY: checked non-null; writable by the module contract.
    unsafe { put_required(out, ptr.0 as *mut c_void) }
}

/// `urUSMHostAlloc`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMHostAlloc(
    c: ur_context_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    entry(|| alloc(c, None, desc, pool, size, out, UsmKind::Host))
}

/// `urUSMDeviceAlloc`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMDeviceAlloc(
    c: ur_context_handle_t,
    d: ur_device_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    entry(|| alloc(c, Some(d), desc, pool, size, out, UsmKind::Device))
}

/// `urUSMSharedAlloc`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMSharedAlloc(
    c: ur_context_handle_t,
    d: ur_device_handle_t,
    desc: *const ur_usm_desc_t,
    pool: ur_usm_pool_handle_t,
    size: usize,
    out: *mut *mut c_void,
) -> ur_result_t {
    entry(|| alloc(c, Some(d), desc, pool, size, out, UsmKind::Shared))
}

/// `urUSMFree`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMFree(c: ur_context_handle_t, p: *mut c_void) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        if p.is_null() {
            return Err(CapiError::NullPointer);
        }
        // Forgotten before the free: the address may be handed out again
        // as soon as it is freed.
        let pool = pool_remove(p as usize);
        let freed = state().rt.usm_free(owner(&ctx, p), UsmPtr(p as u64));
        if let (Err(_), Some(pool)) = (&freed, pool) {
            pool_insert(p as usize, pool);
        }
        Ok(freed?)
    })
}

/// `urUSMGetMemAllocInfo`: a pointer that is no allocation of the context
/// is of type `UNKNOWN` (and has no other property); a null pointer is
/// `INVALID_NULL_POINTER`. The pool of an allocation made through a pool is
/// that pool's handle, null for any other.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMGetMemAllocInfo(
    c: ur_context_handle_t,
    p: *const c_void,
    prop: ur_usm_alloc_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        if p.is_null() {
            return Err(CapiError::NullPointer);
        }
        if prop > UR_USM_ALLOC_INFO_POOL {
            return Err(CapiError::InvalidEnumeration);
        }
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        let info = state().rt.usm_pointer_info(owner(&ctx, p), UsmPtr(p as u64)).ok();
        match (prop, info) {
            (UR_USM_ALLOC_INFO_TYPE, None) => out.value(UR_USM_TYPE_UNKNOWN),
            (_, None) => Err(CapiError::InvalidValue),
            (UR_USM_ALLOC_INFO_TYPE, Some(i)) => out.value(match i.kind {
                UsmKind::Host => UR_USM_TYPE_HOST,
                UsmKind::Device => UR_USM_TYPE_DEVICE,
                UsmKind::Shared => UR_USM_TYPE_SHARED,
            }),
            (UR_USM_ALLOC_INFO_BASE_PTR, Some(i)) => out.value(i.base.0 as *mut c_void),
            (UR_USM_ALLOC_INFO_SIZE, Some(i)) => out.value(i.size),
            (UR_USM_ALLOC_INFO_DEVICE, Some(i)) => out.value(i.device.map_or(std::ptr::null_mut(), device_handle)),
            (UR_USM_ALLOC_INFO_POOL, Some(i)) => {
                let pool = POOL_OF.lock().get(&(i.base.0 as usize)).copied().unwrap_or(0);
                out.value(pool as ur_usm_pool_handle_t)
            }
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// `urUSMPoolCreate`: a pool of the context (allocations through it are
/// the context's own).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMPoolCreate(
    c: ur_context_handle_t,
    desc: *mut ur_usm_pool_desc_t,
    out: *mut ur_usm_pool_handle_t,
) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        // SAFETY: null or a valid descriptor (module contract).
        let d = unsafe { desc.as_ref() }.ok_or(CapiError::NullPointer)?;
        let h = register(Object::Pool(Arc::new(Pool {
            context: (c, ctx),
            flags: d.flags,
        })));
        // SAFETY: writable by the module contract.
        unsafe { put_required(out, h) }
    })
}

/// `urUSMPoolRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMPoolRetain(p: ur_usm_pool_handle_t) -> ur_result_t {
    entry(|| handles::retain(p, Kind::Pool))
}

/// `urUSMPoolRelease`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMPoolRelease(p: ur_usm_pool_handle_t) -> ur_result_t {
    entry(|| handles::release(p, Kind::Pool).map(drop))
}

/// `urUSMPoolGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urUSMPoolGetInfo(
    p: ur_usm_pool_handle_t,
    prop: ur_usm_pool_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(p, (size, value, size_ret), |pool: Arc<Pool>, out| match prop {
            UR_USM_POOL_INFO_REFERENCE_COUNT => out.value(ref_count(p, Kind::Pool)?),
            UR_USM_POOL_INFO_CONTEXT => out.value(pool.context.0),
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count that lets a free skip the pool books follows them: an entry
    /// is found until removed, once, and the count equals the books' size
    /// (read under their lock: other tests may pool meanwhile).
    #[test]
    fn pool_books_count_their_entries() {
        // Addresses no allocation has (odd), unique to this test.
        let (p, q) = (0x7_0000_0001usize, 0x7_0000_0003usize);
        pool_insert(p, 0xa0);
        pool_insert(q, 0xb0);
        {
            let map = POOL_OF.lock();
            assert_eq!(POOLED.load(Ordering::Relaxed), map.len());
            assert!(map.len() >= 2);
        }
        assert_eq!(pool_remove(p), Some(0xa0));
        assert_eq!(pool_remove(p), None, "forgotten once removed");
        assert_eq!(pool_remove(q), Some(0xb0));
        let map = POOL_OF.lock();
        assert_eq!(POOLED.load(Ordering::Relaxed), map.len());
    }
}
