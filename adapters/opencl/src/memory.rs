//! Memory: buffers (placed for their device hint), sub-buffers and their
//! commands (read, write, copy, rect, fill, map). USM is in `usm.rs`.

use std::ffi::c_void;
use std::ptr;

use opencl3::command_queue as cq;
use opencl3::event::Event as ClEvent;
use opencl3::memory::{
    self as clmem, Buffer as ClBuffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_ONLY,
    CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED,
};
use opencl3::types::{cl_device_id, cl_event, cl_mem, cl_mem_migration_flags, cl_uint, CL_FALSE};
use ur_api::{BufferDesc, Error, HostPtr, MapFlags, MemFlags, RectCopy, Result};

use crate::conv::{self, check, check3};
use crate::device::{Context, Device, Handle};
use crate::queue::{raw_event, submit, Event, Queue};

/// A buffer or sub-buffer.
#[derive(Debug)]
pub struct Buffer {
    pub(crate) cl: ClBuffer<u8>,
}

impl Buffer {
    fn raw(&self) -> cl_mem {
        self.cl.get()
    }
}

/// Places memory object `mem` of `ctx` for device `target`: migrated there
/// (`flags`: OpenCL's migration flags) on the context's internal queue of
/// that device, and waited for.
fn place(ctx: &Context, target: Handle<cl_device_id>, mem: cl_mem, flags: cl_mem_migration_flags) -> Result<()> {
    let helper = ctx.helper_queue(target)?;
    let mems: [cl_mem; 1] = [mem];
    // SAFETY: one live memory object of the helper queue's context.
    let ev =
        raw_event(unsafe { cq::enqueue_migrate_mem_object(helper.get(), 1, mems.as_ptr(), flags, 0, ptr::null()) })?;
    check3(helper.flush())?;
    check3(ev.wait())
}

/// Runs one rect command per box OpenCL accepts ([`conv::rects_for_opencl`]):
/// the first waits on the wait list, the rest follow in queue order.
fn rect_chain(
    rect: &RectCopy,
    n: cl_uint,
    w: *const cl_event,
    mut one: impl FnMut(&RectCopy, cl_uint, *const cl_event) -> Result<ClEvent>,
) -> Result<ClEvent> {
    let boxes = conv::rects_for_opencl(rect);
    let mut last = None;
    for (i, r) in boxes.iter().enumerate() {
        let (n, w) = if i == 0 { (n, w) } else { (0, ptr::null()) };
        last = Some(one(r, n, w)?);
    }
    last.ok_or_else(|| Error::invalid("empty rect"))
}

/// Bytes of the pattern seed for fills whose pattern OpenCL cannot take.
pub(crate) const FILL_SEED: usize = 64 * 1024;

impl ur_api::adapter::Memory for crate::OpenClAdapter {
    /// Creates a buffer and migrates it to the hinted device (or the context's
    /// first), so the allocation exists where it is meant to be used before
    /// the call returns. The migration runs on the context's internal queue of
    /// that device and is waited for: it is cheap for a fresh buffer, and a
    /// concurrent `CONTENT_UNDEFINED` migration could otherwise race with the
    /// caller's first write on another queue.
    unsafe fn create_buffer(&self, ctx: &Context, desc: &BufferDesc<&Device>, init: Option<HostPtr>) -> Result<Buffer> {
        let host = init.map_or(ptr::null_mut(), |h| h.as_ptr().cast::<c_void>());
        // SAFETY: the caller guarantees (create_buffer's contract) a non-zero
        // size within the device's limit and consistent flags; with
        // COPY_HOST_PTR `host` is `size` bytes read during the call, with
        // USE_HOST_PTR `size` bytes valid for the buffer's life (the promise of
        // `HostPtr::new`), otherwise null.
        let cl = check3(unsafe { ClBuffer::<u8>::create(&ctx.cl, conv::mem_flags(desc.flags), desc.size, host) })?;
        // The dyn layer always sets the hint; a context has at least one device.
        let target = desc.device_hint.map_or(ctx.devices[0], |d| d.id);
        let has_content = desc.flags.intersects(MemFlags::COPY_HOST_PTR | MemFlags::USE_HOST_PTR);
        let flags: cl_mem_migration_flags = if has_content {
            0
        } else {
            CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED
        };
        place(ctx, target, cl.get(), flags)?;
        Ok(Buffer { cl })
    }

    /// A `cl_mem` buffer of the context's `cl_context`, retained unless
    /// `owned`, with its contents moved to `device` (as a created buffer is
    /// placed there); its size and access flags are OpenCL's.
    fn buffer_from_native(
        &self,
        ctx: &Context,
        device: &Device,
        handle: ur_api::NativeHandle,
        owned: bool,
    ) -> Result<(Buffer, usize, MemFlags)> {
        let raw = handle.raw() as cl_mem;
        if raw.is_null() {
            return Err(Error::invalid("a null memory handle"));
        }
        let info = |param| check(cl3::memory::get_mem_object_info(raw, param));
        if isize::from(info(cl3::memory::CL_MEM_CONTEXT)?) as usize != ctx.cl.get() as usize {
            return Err(Error::WrongContext { what: "native buffer" });
        }
        if u32::from(info(cl3::memory::CL_MEM_TYPE)?) != cl3::memory::CL_MEM_OBJECT_BUFFER {
            return Err(Error::invalid("a native memory object that is not a buffer"));
        }
        let size = usize::from(info(cl3::memory::CL_MEM_SIZE)?);
        let flags = conv::mem_access(u64::from(info(cl3::memory::CL_MEM_FLAGS)?));
        if !owned {
            // SAFETY: a live memory object (the handle's contract).
            check(unsafe { cl3::memory::retain_mem_object(raw) })?;
        }
        let buffer = Buffer { cl: ClBuffer::new(raw) };
        // Its contents move with it (no migration flags).
        place(ctx, device.id, raw, 0)?;
        Ok((buffer, size, flags))
    }

    unsafe fn enqueue_read(
        &self,
        q: &Queue,
        b: &Buffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            // SAFETY: the caller guarantees (the command contract) the range lies
            // inside the buffer, usable at the queue's location, and `dst` is
            // valid for the whole command (the promise of `HostPtr::new`).
            raw_event(unsafe {
                cq::enqueue_read_buffer(q, b.raw(), CL_FALSE, offset, dst.len(), dst.as_ptr().cast(), n, w)
            })
        })
    }

    unsafe fn enqueue_write(
        &self,
        q: &Queue,
        b: &Buffer,
        offset: usize,
        src: HostPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            // SAFETY: as in `enqueue_read`; the source is only read.
            raw_event(unsafe {
                cq::enqueue_write_buffer(q, b.raw(), CL_FALSE, offset, src.len(), src.as_ptr().cast(), n, w)
            })
        })
    }

    unsafe fn enqueue_copy(
        &self,
        q: &Queue,
        src: &Buffer,
        src_offset: usize,
        dst: &Buffer,
        dst_offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            // SAFETY: the caller guarantees (the command contract) both ranges lie
            // inside their buffers, usable for a copy here, and do not overlap.
            raw_event(unsafe { cq::enqueue_copy_buffer(q, src.raw(), dst.raw(), src_offset, dst_offset, size, n, w) })
        })
    }

    unsafe fn enqueue_copy_rect(
        &self,
        q: &Queue,
        src: &Buffer,
        dst: &Buffer,
        rect: &RectCopy,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            rect_chain(rect, n, w, |r, n, w| {
                // SAFETY: the caller guarantees (the command contract) explicit
                // pitches and both boxes inside their buffers; `rects_for_opencl`
                // only splits a box into slices; the arrays live across the call.
                raw_event(unsafe {
                    cq::enqueue_copy_buffer_rect(
                        q,
                        src.raw(),
                        dst.raw(),
                        r.src.origin.as_ptr(),
                        r.dst.origin.as_ptr(),
                        r.extent.as_ptr(),
                        r.src.row_pitch,
                        r.src.slice_pitch,
                        r.dst.row_pitch,
                        r.dst.slice_pitch,
                        n,
                        w,
                    )
                })
            })
        })
    }

    unsafe fn enqueue_read_rect(
        &self,
        q: &Queue,
        b: &Buffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            rect_chain(rect, n, w, |r, n, w| {
                // SAFETY: the caller guarantees (the command contract) the boxes lie
                // inside the buffer and `dst`, valid for the command (`HostPtr::new`).
                raw_event(unsafe {
                    cq::enqueue_read_buffer_rect(
                        q,
                        b.raw(),
                        CL_FALSE,
                        r.src.origin.as_ptr(),
                        r.dst.origin.as_ptr(),
                        r.extent.as_ptr(),
                        r.src.row_pitch,
                        r.src.slice_pitch,
                        r.dst.row_pitch,
                        r.dst.slice_pitch,
                        dst.as_ptr().cast(),
                        n,
                        w,
                    )
                })
            })
        })
    }

    unsafe fn enqueue_write_rect(
        &self,
        q: &Queue,
        b: &Buffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&Event],
    ) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            rect_chain(rect, n, w, |r, n, w| {
                // SAFETY: as in `enqueue_read_rect`; the host side is the source.
                raw_event(unsafe {
                    cq::enqueue_write_buffer_rect(
                        q,
                        b.raw(),
                        CL_FALSE,
                        r.dst.origin.as_ptr(),
                        r.src.origin.as_ptr(),
                        r.extent.as_ptr(),
                        r.dst.row_pitch,
                        r.dst.slice_pitch,
                        r.src.row_pitch,
                        r.src.slice_pitch,
                        src.as_ptr().cast(),
                        n,
                        w,
                    )
                })
            })
        })
    }

    unsafe fn enqueue_fill(
        &self,
        q: &Queue,
        b: &Buffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&Event],
    ) -> Result<Event> {
        if pattern.len().is_power_of_two() {
            return submit(q, wait, |q, n, w| {
                // SAFETY: the caller guarantees (the command contract) the range lies
                // inside the buffer and the pattern's length divides offset and
                // size; OpenCL copies the pattern before the call returns.
                raw_event(unsafe {
                    cq::enqueue_fill_buffer(q, b.raw(), pattern.as_ptr().cast(), pattern.len(), offset, size, n, w)
                })
            });
        }
        let seed = conv::repeat_pattern(pattern, size, FILL_SEED);
        let ctx = check3(q.shared.cl.context())?;
        // SAFETY: COPY_HOST_PTR reads `seed` during the call only.
        let raw = check(unsafe {
            clmem::create_buffer(
                ctx,
                CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                seed.len(),
                seed.as_ptr() as *mut c_void,
            )
        })?;
        let tmp = ClBuffer::<u8>::new(raw);
        submit(q, wait, |q, n, w| {
            // SAFETY: `seed.len() <= size`, inside the range the caller guarantees
            // (the command contract); OpenCL keeps the temporary buffer alive
            // until the copy using it completes.
            let mut last =
                raw_event(unsafe { cq::enqueue_copy_buffer(q, tmp.get(), b.raw(), 0, offset, seed.len(), n, w) })?;
            let mut done = seed.len();
            while done < size {
                let len = done.min(size - done);
                // SAFETY: `[offset, offset + len)` and `[offset + done, offset +
                // done + len)` are disjoint and inside the caller's range; the
                // in-order queue runs the copies after the ones before.
                last = raw_event(unsafe {
                    cq::enqueue_copy_buffer(q, b.raw(), b.raw(), offset, offset + done, len, 0, ptr::null())
                })?;
                done += len;
            }
            Ok(last)
        })
    }
}

impl ur_api::adapter::SubBuffers for crate::OpenClAdapter {
    unsafe fn create_sub_buffer(&self, parent: &Buffer, offset: usize, size: usize) -> Result<Buffer> {
        // SAFETY: the caller guarantees (create_sub_buffer's contract) a whole
        // parent buffer and a non-empty, aligned region inside it; flags 0
        // inherit the parent's access flags.
        let cl = check3(unsafe { parent.cl.create_sub_buffer(0, offset, size) })?;
        Ok(Buffer { cl })
    }
}

impl ur_api::adapter::Mapping for crate::OpenClAdapter {
    unsafe fn enqueue_map(
        &self,
        q: &Queue,
        b: &Buffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&Event],
    ) -> Result<(Event, HostPtr)> {
        let mut out: cl_mem = ptr::null_mut();
        let ev = submit(q, wait, |q, n, w| {
            // SAFETY: the caller guarantees (the command contract) the range lies
            // inside the buffer; the mapped pointer is written into `out` before
            // the call returns.
            raw_event(unsafe {
                cq::enqueue_map_buffer(
                    q,
                    b.raw(),
                    CL_FALSE,
                    conv::map_flags(flags),
                    offset,
                    size,
                    &mut out,
                    n,
                    w,
                )
            })
        })?;
        if out.is_null() {
            return Err(Error::CommandFailed("clEnqueueMapBuffer returned no pointer".into()));
        }
        // SAFETY: OpenCL keeps the mapped region valid until it is unmapped, and
        // the caller may use it only after the map event completes.
        Ok((ev, unsafe { HostPtr::new(out.cast(), size) }))
    }

    unsafe fn enqueue_unmap(&self, q: &Queue, b: &Buffer, mapped: HostPtr, wait: &[&Event]) -> Result<Event> {
        submit(q, wait, |q, n, w| {
            // SAFETY: the caller guarantees (enqueue_unmap's contract) `mapped` is
            // a live mapping of `b`, unmapped once.
            raw_event(unsafe { cq::enqueue_unmap_mem_object(q, b.raw(), mapped.as_ptr().cast(), n, w) })
        })
    }
}
