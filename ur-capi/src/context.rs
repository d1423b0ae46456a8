//! Context entry points.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::c_void;
use std::sync::Arc;

use ur_api::DeviceId;

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count, register};
use crate::info::{entry, put_required, query};
use crate::objects::{Context, Kind, Object};
use crate::state::state;
use crate::sys::*;

/// `urContextCreate`: one runtime context over devices of one platform;
/// over devices of several runtimes (the one platform over every runtime),
/// one runtime context per runtime, its buffers in one memory manager over
/// all of them ([`crate::managed`]).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextCreate(
    n: u32,
    devices: *const ur_device_handle_t,
    _props: *const ur_context_properties_t,
    out: *mut ur_context_handle_t,
) -> ur_result_t {
    entry(|| {
        if devices.is_null() || out.is_null() {
            return Err(CapiError::NullPointer);
        }
        if n == 0 {
            return Err(CapiError::InvalidSize);
        }
        // SAFETY: `devices` holds `n` handles (module contract).
        let hs = unsafe { std::slice::from_raw_parts(devices, n as usize) };
        let ids = hs
            .iter()
            .map(|h| get::<DeviceId, _>(*h))
            .collect::<Result<Vec<_>, _>>()?;
        let rt = &state().rt;
        // One runtime context per runtime platform (one, except in the one
        // platform over every runtime).
        let mut groups: Vec<(ur_api::PlatformId, Vec<ur_api::DeviceId>)> = Vec::new();
        for &d in &ids {
            let p = rt.device_platform(d)?;
            match groups.iter_mut().find(|(q, _)| *q == p) {
                Some((_, ds)) => ds.push(d),
                None => groups.push((p, vec![d])),
            }
        }
        let mut parts = Vec::with_capacity(groups.len());
        for (_, ds) in groups {
            match rt.create_context(&ds) {
                Ok(c) => parts.push((c, ds)),
                Err(e) => {
                    for (c, _) in parts {
                        let _ = rt.release_context(c);
                    }
                    return Err(e.into());
                }
            }
        }
        let h = register_context(hs, parts)?;
        // SAFETY: checked non-null above; writable by the module contract.
        unsafe { put_required(out, h) }
    })
}

/// Registers a context handle over runtime contexts `parts` (one per
/// runtime platform, with their devices) of devices `hs`.
pub fn register_context(
    hs: &[ur_device_handle_t],
    parts: Vec<(ur_api::ContextId, Vec<ur_api::DeviceId>)>,
) -> Result<ur_context_handle_t, CapiError> {
    // The devices' records (registered with their handles), not a fresh
    // copy of each description.
    let records = parts
        .iter()
        .flat_map(|(_, ds)| ds)
        .map(|d| crate::state::device(*d))
        .collect::<Result<Vec<_>, _>>()?;
    let max_alloc = records.iter().map(|r| r.info.max_alloc_size).min().unwrap_or(0);
    let use_host_ptr = records
        .first()
        .is_some_and(|r| r.info.caps.contains(ur_api::DeviceCaps::USE_HOST_PTR));
    Ok(register(Object::Context(Arc::new(Context {
        id: parts[0].0,
        parts,
        devices: hs.to_vec(),
        mm: std::sync::OnceLock::new(),
        max_alloc,
        use_host_ptr,
        deleters: parking_lot::Mutex::new(Vec::new()),
    }))))
}

/// `urContextSetExtendedDeleter`: `deleter` is called with `data` once the
/// context is destroyed, that is when its last reference is released and no
/// object made in it holds it any more (as OpenCL's context destructor
/// callbacks), on the thread that releases the last of them. Several
/// deleters run in the order they were set.
///
/// # Safety
///
/// See the module docs; `deleter` may be called with `data` from another
/// thread until the context is destroyed.
pub unsafe extern "C" fn urContextSetExtendedDeleter(
    c: ur_context_handle_t,
    deleter: ur_context_extended_deleter_t,
    data: *mut c_void,
) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        let deleter = deleter.ok_or(CapiError::NullPointer)?;
        ctx.deleters.lock().push((deleter, data as usize));
        Ok(())
    })
}

/// `urContextRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextRetain(c: ur_context_handle_t) -> ur_result_t {
    entry(|| handles::retain(c, Kind::Context))
}

/// `urContextRelease`: the last release releases the runtime's context.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextRelease(c: ur_context_handle_t) -> ur_result_t {
    entry(|| {
        if let Some(Object::Context(ctx)) = handles::release(c, Kind::Context)? {
            for (id, _) in &ctx.parts {
                if let Err(e) = state().rt.release_context(*id) {
                    // UR lets a context go while objects made in it live on;
                    // the runtime keeps it until they are released.
                    tracing::debug!(error = %e, "context released with live objects");
                }
            }
        }
        Ok(())
    })
}

/// `urContextGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextGetInfo(
    c: ur_context_handle_t,
    prop: ur_context_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(c, (size, value, size_ret), |ctx: Arc<Context>, out| match prop {
            UR_CONTEXT_INFO_NUM_DEVICES => out.value(ctx.devices.len() as u32),
            UR_CONTEXT_INFO_DEVICES => out.array(&ctx.devices),
            UR_CONTEXT_INFO_REFERENCE_COUNT => out.value(ref_count(c, Kind::Context)?),
            UR_CONTEXT_INFO_USM_MEMCPY2D_SUPPORT | UR_CONTEXT_INFO_USM_FILL2D_SUPPORT => out.boolean(false),
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}
