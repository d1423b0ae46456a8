//! Allocations: buffers on device allocations, USM of the three kinds, and
//! host registration through the driver's import extension.

use std::ffi::c_void;
use std::sync::Arc;

use level_zero_sys::result::{check, Described};
use level_zero_sys::sys;
use ur_api::{BufferDesc, DeviceAddr, Error, HostPtr, MemFlags, Result, UsmDesc, UsmKind, UsmPtr};

use crate::conv;
use crate::device::{ContextInner, LevelZeroContext, LevelZeroDevice, Raw};
use crate::hold;
use crate::mem_arg;
use crate::Held;
use crate::LevelZeroEvent;
use crate::LevelZeroQueue;
use ur_api::{MemArg, RectCopy, UsmAdvice, UsmRef};

/// Alignment of sub-buffer offsets (a cache line; Level Zero pointers may be
/// offset freely, this keeps kernel accesses aligned).
pub const SUB_BUFFER_ALIGN: usize = 64;

/// Default USM alignment when the caller asks for none.
const DEFAULT_ALIGN: usize = 64;

/// One `zeMemAlloc*` allocation, freed when the last holder (buffer,
/// sub-buffer, USM object, command in flight) lets go.
#[derive(Debug)]
pub(crate) struct Alloc {
    pub ctx: Arc<ContextInner>,
    pub ptr: Raw<*mut c_void>,
}

impl Drop for Alloc {
    fn drop(&mut self) {
        // SAFETY: our allocation of this context; every command that used
        // it held this Alloc until it completed.
        if let Err(e) = check(unsafe { self.ctx.driver.ze.zeMemFree(self.ctx.handle.0, self.ptr.0) }) {
            tracing::warn!(error = %e, "zeMemFree failed");
        }
    }
}

impl Alloc {
    /// The address `offset` bytes in.
    pub(crate) fn at(&self, offset: usize) -> *mut c_void {
        self.ptr.0.cast::<u8>().wrapping_add(offset).cast()
    }
}

/// A buffer (or sub-buffer): a range of a device allocation.
#[derive(Debug)]
pub struct LevelZeroBuffer {
    pub(crate) mem: Arc<Alloc>,
    pub(crate) offset: usize,
}

impl LevelZeroBuffer {
    /// The device address `offset` bytes into the buffer.
    pub(crate) fn at(&self, offset: usize) -> *mut c_void {
        self.mem.at(self.offset + offset)
    }
}

/// A USM allocation.
#[derive(Debug)]
pub struct LevelZeroUsm {
    pub(crate) mem: Arc<Alloc>,
    pub(crate) kind: UsmKind,
}

fn alloc(
    ctx: &Arc<ContextInner>,
    kind: UsmKind,
    size: usize,
    align: usize,
    device: Option<&LevelZeroDevice>,
) -> Result<Alloc> {
    let ze = ctx.driver.ze;
    let dev_desc = sys::ze_device_mem_alloc_desc_t::described();
    let host_desc = sys::ze_host_mem_alloc_desc_t::described();
    let dev = device.map_or(std::ptr::null_mut(), |d| d.handle.0);
    let mut ptr = std::ptr::null_mut();
    let r = match kind {
        // SAFETY: a live context, described descriptors, a device of the
        // context (or null where the kind allows), an out pointer.
        UsmKind::Device => unsafe { ze.zeMemAllocDevice(ctx.handle.0, &dev_desc, size, align, dev, &mut ptr) },
        // SAFETY: as above.
        UsmKind::Host => unsafe { ze.zeMemAllocHost(ctx.handle.0, &host_desc, size, align, &mut ptr) },
        // SAFETY: as above.
        UsmKind::Shared => unsafe {
            ze.zeMemAllocShared(ctx.handle.0, &dev_desc, &host_desc, size, align, dev, &mut ptr)
        },
    };
    check(r).map_err(conv::error)?;
    if ptr.is_null() {
        return Err(Error::OutOfDeviceMemory);
    }
    Ok(Alloc {
        ctx: ctx.clone(),
        ptr: Raw(ptr),
    })
}

/// A buffer on the hinted device; with `COPY_HOST_PTR`, filled from `init`
/// by a synchronous copy before this returns.
///
/// # Safety
///
/// As [`ur_api::adapter::Memory::create_buffer`].
pub(crate) unsafe fn create_buffer(
    ctx: &LevelZeroContext,
    desc: &BufferDesc<&LevelZeroDevice>,
    init: Option<HostPtr>,
) -> Result<LevelZeroBuffer> {
    let Some(device) = desc.device_hint else {
        unreachable!("the dyn layer places every buffer (Memory::create_buffer)")
    };
    let mem = alloc(&ctx.0, UsmKind::Device, desc.size, SUB_BUFFER_ALIGN, Some(device))?;
    if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
        // SAFETY: `src` is readable for `size` bytes during this call (the
        // caller's contract) and the allocation is `size` bytes.
        unsafe { copy_now(&ctx.0, device, mem.ptr.0, src.as_ptr().cast(), desc.size)? };
    }
    Ok(LevelZeroBuffer {
        mem: Arc::new(mem),
        offset: 0,
    })
}

/// Copies `size` bytes on the device's synchronous init list, returning
/// when the copy is done.
///
/// # Safety
///
/// Both ranges are valid for `size` bytes and usable on `device`.
unsafe fn copy_now(
    ctx: &ContextInner,
    device: &LevelZeroDevice,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> Result<()> {
    let ze = ctx.driver.ze;
    let mut lists = ctx.init_lists.lock();
    let list = match lists.iter().find(|(d, _)| *d == device.handle) {
        Some((_, l)) => *l,
        None => {
            let desc = sys::ze_command_queue_desc_t {
                ordinal: device.compute_ordinal,
                mode: sys::ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
                ..sys::ze_command_queue_desc_t::described()
            };
            let mut list = std::ptr::null_mut();
            // SAFETY: a live context and device, a described desc, an out pointer.
            check(unsafe { ze.zeCommandListCreateImmediate(ctx.handle.0, device.handle.0, &desc, &mut list) })
                .map_err(conv::error)?;
            lists.push((device.handle, Raw(list)));
            Raw(list)
        }
    };
    // SAFETY: the caller's ranges; the list is synchronous (the append
    // returns when the copy is done) and used under the lock.
    check(unsafe {
        ze.zeCommandListAppendMemoryCopy(list.0, dst, src, size, std::ptr::null_mut(), 0, std::ptr::null_mut())
    })
    .map_err(conv::error)
}

pub(crate) fn sub_buffer(parent: &LevelZeroBuffer, offset: usize) -> LevelZeroBuffer {
    LevelZeroBuffer {
        mem: parent.mem.clone(),
        offset: parent.offset + offset,
    }
}

pub(crate) fn usm_alloc(ctx: &LevelZeroContext, desc: &UsmDesc<&LevelZeroDevice>) -> Result<(LevelZeroUsm, UsmPtr)> {
    let align = if desc.align == 0 { DEFAULT_ALIGN } else { desc.align };
    // Host allocations belong to no device; device and shared ones go to the
    // named device (the dyn layer requires one for device allocations).
    let device = match desc.kind {
        UsmKind::Host => None,
        _ => desc.device,
    };
    let mem = alloc(&ctx.0, desc.kind, desc.size, align, device)?;
    let base = UsmPtr(mem.ptr.0 as u64);
    Ok((
        LevelZeroUsm {
            mem: Arc::new(mem),
            kind: desc.kind,
        },
        base,
    ))
}

/// Imports host memory into the driver (`zexDriverImportExternalPointer`):
/// the driver pins it and its devices then use it at the host address
/// itself, as host USM, which is the address answered.
///
/// # Safety
///
/// As [`ur_api::adapter::HostLocking::lock_host`].
pub(crate) unsafe fn lock_host(ctx: &LevelZeroContext, mem: HostPtr) -> Result<DeviceAddr> {
    let d = &ctx.0.driver;
    let import = d.import.ok_or_else(|| Error::unsupported("host pointer import"))?;
    // SAFETY: the driver gave this entry point; the range is valid until
    // unregistered (the caller's contract).
    check(unsafe { (import.import)(d.handle.0, mem.as_ptr().cast(), mem.len()) }).map_err(conv::error)?;
    Ok(DeviceAddr(mem.as_ptr() as u64))
}

/// Undoes [`lock_host`].
///
/// # Safety
///
/// As [`ur_api::adapter::HostLocking::unlock_host`].
pub(crate) unsafe fn unlock_host(ctx: &LevelZeroContext, mem: HostPtr) -> Result<()> {
    let d = &ctx.0.driver;
    let import = d.import.ok_or_else(|| Error::unsupported("host pointer import"))?;
    // SAFETY: `mem` was imported with this driver (the caller's contract).
    check(unsafe { (import.release)(d.handle.0, mem.as_ptr().cast()) }).map_err(conv::error)
}

impl ur_api::adapter::Memory for crate::LevelZeroAdapter {
    unsafe fn create_buffer(
        &self,
        ctx: &LevelZeroContext,
        desc: &BufferDesc<&LevelZeroDevice>,
        init: Option<HostPtr>,
    ) -> Result<LevelZeroBuffer> {
        // SAFETY: the caller's contract, passed on.
        unsafe { create_buffer(ctx, desc, init) }
    }

    unsafe fn enqueue_read(
        &self,
        q: &LevelZeroQueue,
        buffer: &LevelZeroBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the command contract: range in the buffer, `dst` valid.
        unsafe { self.copy(q, dst.as_ptr().cast(), buffer.at(offset), dst.len(), hold(buffer), wait) }
    }

    unsafe fn enqueue_write(
        &self,
        q: &LevelZeroQueue,
        buffer: &LevelZeroBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the command contract: range in the buffer, `src` valid.
        unsafe { self.copy(q, buffer.at(offset), src.as_ptr().cast(), src.len(), hold(buffer), wait) }
    }

    unsafe fn enqueue_copy(
        &self,
        q: &LevelZeroQueue,
        src: &LevelZeroBuffer,
        src_offset: usize,
        dst: &LevelZeroBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let held = Held {
            mem: vec![src.mem.clone(), dst.mem.clone()],
            ..Held::default()
        };
        // SAFETY: the command contract: both ranges in their buffers, disjoint.
        unsafe { self.copy(q, dst.at(dst_offset), src.at(src_offset), size, held, wait) }
    }

    unsafe fn enqueue_copy_rect(
        &self,
        q: &LevelZeroQueue,
        src: &LevelZeroBuffer,
        dst: &LevelZeroBuffer,
        rect: &RectCopy,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let held = Held {
            mem: vec![src.mem.clone(), dst.mem.clone()],
            ..Held::default()
        };
        // SAFETY: the command contract: both boxes inside their buffers.
        unsafe { self.copy_rect(q, dst.at(0).cast(), src.at(0).cast(), rect, held, wait) }
    }

    unsafe fn enqueue_read_rect(
        &self,
        q: &LevelZeroQueue,
        buffer: &LevelZeroBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the command contract: boxes inside the buffer and `dst`.
        unsafe { self.copy_rect(q, dst.as_ptr(), buffer.at(0).cast(), rect, hold(buffer), wait) }
    }

    unsafe fn enqueue_write_rect(
        &self,
        q: &LevelZeroQueue,
        buffer: &LevelZeroBuffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the command contract: boxes inside `src` and the buffer.
        unsafe { self.copy_rect(q, buffer.at(0).cast(), src.as_ptr(), rect, hold(buffer), wait) }
    }

    unsafe fn enqueue_fill(
        &self,
        q: &LevelZeroQueue,
        buffer: &LevelZeroBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the command contract: the range lies in the buffer.
        unsafe { self.fill(q, buffer.at(offset), size, pattern, hold(buffer), wait) }
    }
}

impl ur_api::adapter::SubBuffers for crate::LevelZeroAdapter {
    unsafe fn create_sub_buffer(&self, parent: &LevelZeroBuffer, offset: usize, _: usize) -> Result<LevelZeroBuffer> {
        Ok(sub_buffer(parent, offset))
    }
}

impl ur_api::adapter::HostLocking for crate::LevelZeroAdapter {
    unsafe fn lock_host(&self, ctx: &LevelZeroContext, mem: HostPtr) -> Result<DeviceAddr> {
        // SAFETY: the caller's contract, passed on.
        unsafe { lock_host(ctx, mem) }
    }

    unsafe fn unlock_host(&self, ctx: &LevelZeroContext, mem: HostPtr) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe { unlock_host(ctx, mem) }
    }
}

impl ur_api::adapter::UnifiedMemory for crate::LevelZeroAdapter {
    fn usm_alloc(&self, ctx: &LevelZeroContext, desc: &UsmDesc<&LevelZeroDevice>) -> Result<(LevelZeroUsm, UsmPtr)> {
        usm_alloc(ctx, desc)
    }

    unsafe fn enqueue_usm_copy(
        &self,
        q: &LevelZeroQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let mut held = Held::default();
        let (d, s) = (mem_arg(&dst, &mut held), mem_arg(&src, &mut held));
        // SAFETY: the command contract: both ranges valid and disjoint.
        unsafe { self.copy(q, d, s, size, held, wait) }
    }

    unsafe fn enqueue_usm_fill(
        &self,
        q: &LevelZeroQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let held = Held {
            mem: vec![ptr.alloc.mem.clone()],
            ..Held::default()
        };
        // SAFETY: the command contract: the range lies in the allocation.
        unsafe { self.fill(q, ptr.alloc.mem.at(ptr.offset), size, pattern, held, wait) }
    }

    unsafe fn enqueue_usm_prefetch(
        &self,
        q: &LevelZeroQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        if ptr.alloc.kind != ur_api::UsmKind::Shared {
            return q.barrier(wait);
        }
        let ze = q.ctx.driver.ze;
        let p = ptr.alloc.mem.at(ptr.offset);
        // The prefetch itself signals nothing: a barrier after it carries
        // the event and the ordering.
        let held = Held {
            mem: vec![ptr.alloc.mem.clone()],
            ..Held::default()
        };
        q.submit(wait, held, |a| {
            // SAFETY: a range of a shared allocation; then a barrier on the
            // prepared list, event and wait list.
            unsafe {
                let r = ze.zeCommandListAppendMemoryPrefetch(a.list, p, size);
                if r != sys::ZE_RESULT_SUCCESS {
                    return r;
                }
                ze.zeCommandListAppendBarrier(a.list, a.signal, a.nwait(), a.wait_ptr())
            }
        })
    }

    unsafe fn usm_advise(
        &self,
        q: &LevelZeroQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        advice: UsmAdvice,
    ) -> Result<()> {
        if ptr.alloc.kind != ur_api::UsmKind::Shared {
            return Ok(()); // Advice is a hint; it acts on shared memory only.
        }
        let ze = q.ctx.driver.ze;
        let p = ptr.alloc.mem.at(ptr.offset);
        for adv in crate::conv::advices(advice) {
            let held = Held {
                mem: vec![ptr.alloc.mem.clone()],
                ..Held::default()
            };
            let ev = q.submit(&[], held, |a| {
                // SAFETY: a range of a shared allocation of the queue's
                // device; a barrier carries the event.
                unsafe {
                    let r = ze.zeCommandListAppendMemAdvise(a.list, q.device.0, p, size, adv);
                    if r != sys::ZE_RESULT_SUCCESS {
                        return r;
                    }
                    ze.zeCommandListAppendBarrier(a.list, a.signal, a.nwait(), a.wait_ptr())
                }
            })?;
            drop(ev);
        }
        Ok(())
    }
}
