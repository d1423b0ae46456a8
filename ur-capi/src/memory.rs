//! Buffer and sub-buffer entry points.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for; handles are looked up, never
//! read. A `USE_HOST_PTR` or `COPY_HOST_PTR` host pointer is valid for
//! `size` bytes (for `USE_HOST_PTR`, for the buffer's whole life).

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::c_void;
use std::sync::Arc;

use ur_api::{BufferDesc, HostPtr, MemFlags};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count, register};
use crate::info::{entry, put_required, query};
use crate::managed::Backing;
use crate::objects::{Context, Kind, Mem, Object};
use crate::state::state;
use crate::sys::*;

/// Every `ur_mem_flag_t` bit UR 0.12 defines.
const KNOWN_MEM_FLAGS: ur_mem_flags_t = UR_MEM_FLAG_READ_WRITE
    | UR_MEM_FLAG_WRITE_ONLY
    | UR_MEM_FLAG_READ_ONLY
    | UR_MEM_FLAG_USE_HOST_POINTER
    | UR_MEM_FLAG_ALLOC_HOST_POINTER
    | UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER;

/// The access flags of a set of memory flags.
const ACCESS_FLAGS: ur_mem_flags_t = UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_WRITE_ONLY | UR_MEM_FLAG_READ_ONLY;

/// The flags of a sub-buffer of a buffer with `parent` flags, as asked
/// (`asked`, 0: the parent's): the access may only narrow the parent's (a
/// read-only parent gives read-only partitions, a write-only one
/// write-only partitions), and host-pointer flags belong to the parent
/// alone. `INVALID_VALUE` otherwise, as `clCreateSubBuffer` and UR's
/// conformance suite have it.
pub fn partition_flags(parent: ur_mem_flags_t, asked: ur_mem_flags_t) -> Result<ur_mem_flags_t, CapiError> {
    if asked & !KNOWN_MEM_FLAGS != 0 {
        return Err(CapiError::InvalidEnumeration);
    }
    if asked == 0 {
        return Ok(parent);
    }
    let host = UR_MEM_FLAG_USE_HOST_POINTER | UR_MEM_FLAG_ALLOC_HOST_POINTER | UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER;
    if asked & host != 0 || (asked & ACCESS_FLAGS).count_ones() > 1 {
        return Err(CapiError::InvalidValue);
    }
    let parent_access = match parent & ACCESS_FLAGS {
        0 => UR_MEM_FLAG_READ_WRITE,
        a => a,
    };
    let access = match asked & ACCESS_FLAGS {
        0 => parent_access,
        a => a,
    };
    let allowed = access == parent_access || parent_access & UR_MEM_FLAG_READ_WRITE != 0;
    if !allowed {
        return Err(CapiError::InvalidValue);
    }
    Ok((parent & host) | access)
}

/// The UR access flag of a buffer's access flags (read-write by default).
pub fn ur_access(flags: MemFlags) -> ur_mem_flags_t {
    if flags.contains(MemFlags::READ_ONLY) {
        UR_MEM_FLAG_READ_ONLY
    } else if flags.contains(MemFlags::WRITE_ONLY) {
        UR_MEM_FLAG_WRITE_ONLY
    } else {
        UR_MEM_FLAG_READ_WRITE
    }
}

fn mem_flags(flags: ur_mem_flags_t) -> MemFlags {
    let mut f = MemFlags::empty();
    for (ur, ours) in [
        (UR_MEM_FLAG_READ_WRITE, MemFlags::READ_WRITE),
        (UR_MEM_FLAG_READ_ONLY, MemFlags::READ_ONLY),
        (UR_MEM_FLAG_WRITE_ONLY, MemFlags::WRITE_ONLY),
        (UR_MEM_FLAG_USE_HOST_POINTER, MemFlags::USE_HOST_PTR),
        (UR_MEM_FLAG_ALLOC_HOST_POINTER, MemFlags::ALLOC_HOST_PTR),
        (UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER, MemFlags::COPY_HOST_PTR),
    ] {
        if flags & ur != 0 {
            f |= ours;
        }
    }
    if f.intersection(MemFlags::READ_WRITE | MemFlags::READ_ONLY | MemFlags::WRITE_ONLY)
        .is_empty()
    {
        f |= MemFlags::READ_WRITE;
    }
    f
}

/// `urMemBufferCreate`. A `USE_HOST_PTR` buffer on a device without
/// `DeviceCaps::USE_HOST_PTR` becomes a copy of the host memory at creation
/// (libsycl writes back through map/read, as the UR spec allows).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemBufferCreate(
    c: ur_context_handle_t,
    flags: ur_mem_flags_t,
    size: usize,
    props: *const ur_buffer_properties_t,
    out: *mut ur_mem_handle_t,
) -> ur_result_t {
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        if flags & !KNOWN_MEM_FLAGS != 0 {
            return Err(CapiError::InvalidEnumeration);
        }
        if size == 0 {
            return Err(CapiError::InvalidBufferSize);
        }
        // Every device of the context must be able to hold the buffer (a
        // managed buffer of a multi-device context moves to each): refused
        // here, at creation, whatever the context's size.
        if size as u64 > ctx.max_alloc {
            tracing::debug!(
                size,
                max = ctx.max_alloc,
                "buffer larger than a device of the context allocates"
            );
            return Err(CapiError::InvalidBufferSize);
        }
        // SAFETY: null or a valid properties struct (module contract).
        let host = unsafe { props.as_ref() }.map_or(std::ptr::null_mut(), |p| p.pHost);
        let wants_host = flags & (UR_MEM_FLAG_USE_HOST_POINTER | UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER) != 0;
        if wants_host && host.is_null() {
            return Err(CapiError::Api(ur_api::Error::invalid(
                "host pointer required by the flags",
            )));
        }
        if let Some(mm) = crate::managed::manager(&ctx)? {
            // SAFETY: the host memory is valid for `size` bytes (module contract).
            let init = wants_host.then(|| unsafe { std::slice::from_raw_parts(host.cast::<u8>(), size) });
            let backing = crate::managed::create(&mm, size, init)?;
            return finish_create(c, ctx, backing, size, flags, host, out);
        }
        let rt = &state().rt;
        let mut f = mem_flags(flags);
        let native_use = ctx.use_host_ptr;
        if f.contains(MemFlags::USE_HOST_PTR) && !native_use {
            f = (f - MemFlags::USE_HOST_PTR) | MemFlags::COPY_HOST_PTR;
        }
        // SAFETY: the host memory is valid for `size` bytes for as long as
        // the flags need it (module contract).
        let init = wants_host.then(|| unsafe { HostPtr::new(host.cast(), size) });
        let id = rt.create_buffer(ctx.id, &BufferDesc::new(size).with_flags(f), init)?;
        finish_create(c, ctx, Backing::Direct(id), size, flags, host, out)
    })
}

fn finish_create(
    c: ur_context_handle_t,
    ctx: Arc<Context>,
    backing: Backing,
    size: usize,
    flags: ur_mem_flags_t,
    host: *mut c_void,
    out: *mut ur_mem_handle_t,
) -> Result<(), CapiError> {
    let mem = Mem {
        backing,
        context: (c, ctx),
        size,
        flags,
        host_ptr: if flags & UR_MEM_FLAG_USE_HOST_POINTER != 0 {
            host as usize
        } else {
            0
        },
        parent: None,
    };
    let h = register(Object::Mem(Arc::new(mem)));
    // SAFETY: the caller checked `out` non-null; writable by the module contract.
    unsafe { put_required(out, h) }
}

/// `urMemBufferPartition`: a sub-buffer (regions only).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemBufferPartition(
    b: ur_mem_handle_t,
    flags: ur_mem_flags_t,
    ty: ur_buffer_create_type_t,
    region: *const ur_buffer_region_t,
    out: *mut ur_mem_handle_t,
) -> ur_result_t {
    entry(|| {
        let parent = get::<Arc<Mem>, _>(b)?;
        if ty != UR_BUFFER_CREATE_TYPE_REGION {
            return Err(CapiError::InvalidEnumeration);
        }
        // SAFETY: null or a valid region (module contract).
        let r = unsafe { region.as_ref() }.ok_or(CapiError::NullPointer)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        let flags = partition_flags(parent.flags, flags)?;
        if r.size == 0 || r.origin.checked_add(r.size).is_none_or(|end| end > parent.size) {
            return Err(CapiError::InvalidBufferSize);
        }
        if parent.parent.is_some() {
            return Err(CapiError::Api(ur_api::Error::invalid("a sub-buffer of a sub-buffer")));
        }
        let backing = match &parent.backing {
            Backing::Direct(id) => Backing::Direct(state().rt.create_sub_buffer(*id, r.origin, r.size)?),
            Backing::Managed { mm, buf, offset, .. } => Backing::Managed {
                mm: mm.clone(),
                buf: *buf,
                offset: offset + r.origin,
                root: false,
            },
        };
        let mem = Mem {
            backing,
            context: parent.context.clone(),
            size: r.size,
            flags,
            host_ptr: if parent.host_ptr == 0 {
                0
            } else {
                parent.host_ptr + r.origin
            },
            parent: Some((b, r.origin)),
        };
        handles::retain(b, Kind::Mem)?;
        let h = register(Object::Mem(Arc::new(mem)));
        // SAFETY: checked non-null above.
        unsafe { put_required(out, h) }
    })
}

/// `urMemRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemRetain(m: ur_mem_handle_t) -> ur_result_t {
    entry(|| handles::retain(m, Kind::Mem))
}

/// `urMemRelease`: the last release releases the runtime's buffer (its
/// in-flight commands keep the memory alive) and a sub-buffer's hold on
/// its parent.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemRelease(m: ur_mem_handle_t) -> ur_result_t {
    entry(|| release_mem(m))
}

fn release_mem(m: ur_mem_handle_t) -> Result<(), CapiError> {
    if let Some(Object::Mem(mem)) = handles::release(m, Kind::Mem)? {
        crate::managed::release(&mem.backing)?;
        if let Some((parent, _)) = mem.parent {
            release_mem(parent)?;
        }
    }
    Ok(())
}

/// `urMemGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemGetInfo(
    m: ur_mem_handle_t,
    prop: ur_mem_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(m, (size, value, size_ret), |mem: Arc<Mem>, out| match prop {
            UR_MEM_INFO_SIZE => out.value(mem.size),
            UR_MEM_INFO_CONTEXT => out.value(mem.context.0),
            UR_MEM_INFO_REFERENCE_COUNT => out.value(ref_count(m, Kind::Mem)?),
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_narrow_their_parents_access_only() {
        let (rw, ro, wo) = (UR_MEM_FLAG_READ_WRITE, UR_MEM_FLAG_READ_ONLY, UR_MEM_FLAG_WRITE_ONLY);
        assert_eq!(partition_flags(ro, rw), Err(CapiError::InvalidValue));
        assert_eq!(partition_flags(ro, wo), Err(CapiError::InvalidValue));
        assert_eq!(partition_flags(wo, ro), Err(CapiError::InvalidValue));
        assert_eq!(partition_flags(ro, ro), Ok(ro));
        assert_eq!(partition_flags(ro, 0), Ok(ro));
        assert_eq!(partition_flags(rw, ro), Ok(ro));
        assert_eq!(partition_flags(rw, wo), Ok(wo));
        // No access flag on the parent is read-write.
        assert_eq!(partition_flags(0, ro), Ok(ro));
        // Host-pointer flags are the parent's, never a partition's.
        assert_eq!(
            partition_flags(rw, UR_MEM_FLAG_USE_HOST_POINTER),
            Err(CapiError::InvalidValue)
        );
        assert_eq!(
            partition_flags(rw | UR_MEM_FLAG_USE_HOST_POINTER, ro),
            Ok(ro | UR_MEM_FLAG_USE_HOST_POINTER)
        );
        assert_eq!(partition_flags(rw, ro | wo), Err(CapiError::InvalidValue));
        assert_eq!(partition_flags(rw, 1 << 20), Err(CapiError::InvalidEnumeration));
    }
}
