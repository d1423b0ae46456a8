//! Buffers (placed for their device hint), sub-buffers, and USM served by
//! OpenCL 2.0 shared virtual memory.

use std::ffi::c_void;
use std::ptr;

use opencl3::command_queue as cq;
use opencl3::memory::{
    self as clmem, Buffer as ClBuffer, ClMem, CL_MEM_READ_WRITE, CL_MEM_SVM_FINE_GRAIN_BUFFER,
    CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED,
};
use opencl3::types::{cl_mem, cl_mem_migration_flags, CL_FALSE};
use ur_api::{BufferDesc, Error, HostPtr, MemFlags, MemRef, Result, UsmAdvice, UsmDesc, UsmKind, UsmPtr};

use crate::conv::{self, check, check3};
use crate::device::{self, Context, Device};
use crate::queue::{self, event, wait_ids, wl, Event, Queue};

/// A buffer or sub-buffer.
#[derive(Debug)]
pub struct Buffer {
    pub(crate) cl: ClBuffer<u8>,
}

/// Creates a buffer and migrates it to the hinted device (or the context's
/// first), so the allocation exists where it is meant to be used before
/// the call returns. The migration runs on the context's internal queue of
/// that device and is waited for: it is cheap for a fresh buffer, and a
/// concurrent `CONTENT_UNDEFINED` migration could otherwise race with the
/// caller's first write on another queue.
pub(crate) fn create_buffer(ctx: &Context, desc: &BufferDesc<&Device>, init: Option<HostPtr>) -> Result<Buffer> {
    let host = init.map_or(ptr::null_mut(), |h| h.as_ptr().cast::<c_void>());
    // SAFETY: with COPY_HOST_PTR `host` is read during the call; with
    // USE_HOST_PTR it stays valid for the buffer's life (the promise of
    // `HostPtr::new`); otherwise it is null. The dyn layer checked sizes.
    let cl = check3(unsafe { ClBuffer::<u8>::create(&ctx.cl, conv::mem_flags(desc.flags), desc.size, host) })?;
    let target = device::placement(ctx, desc.device_hint)?;
    let helper = ctx.helper_queue(target)?;
    let has_content = desc.flags.intersects(MemFlags::COPY_HOST_PTR | MemFlags::USE_HOST_PTR);
    let flags: cl_mem_migration_flags = if has_content {
        0
    } else {
        CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED
    };
    let mems: [cl_mem; 1] = [cl.get()];
    // SAFETY: one live memory object of the helper queue's context.
    let ev = event(unsafe { cq::enqueue_migrate_mem_object(helper.get(), 1, mems.as_ptr(), flags, 0, ptr::null()) })?;
    check3(ev.cl.wait())?;
    Ok(Buffer { cl })
}

pub(crate) fn create_sub_buffer(parent: &Buffer, offset: usize, size: usize) -> Result<Buffer> {
    // SAFETY: the dyn layer checked the region and its alignment; flags 0
    // inherit the parent's access flags.
    let cl = check3(unsafe { parent.cl.create_sub_buffer(0, offset, size) })?;
    Ok(Buffer { cl })
}

/// Allocates USM memory as SVM (see [`conv::usm_caps_from_svm`] for which
/// kind gets which grain). SVM is context-wide; a device allocation's device
/// only decides which device the dyn layer checked for support.
pub(crate) fn usm_alloc(ctx: &Context, desc: &UsmDesc<&Device>) -> Result<UsmPtr> {
    let flags = match desc.kind {
        UsmKind::Device => CL_MEM_READ_WRITE,
        UsmKind::Host | UsmKind::Shared => CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER,
    };
    let align = u32::try_from(desc.align).map_err(|_| Error::InvalidAlignment {
        align: desc.align,
        why: "larger than OpenCL SVM alignments can be",
    })?;
    // SAFETY: the dyn layer checked size and alignment and that the devices
    // support this kind; a null result is reported as an error by cl3.
    let p = unsafe { clmem::svm_alloc(ctx.cl.get(), flags, desc.size, align) }.map_err(|_| Error::OutOfDeviceMemory)?;
    Ok(UsmPtr(p as u64))
}

/// Frees SVM memory once no command uses it: every queue of the context is
/// drained first (`clSVMFree` itself does not wait).
pub(crate) fn usm_free(ctx: &Context, p: UsmPtr) -> Result<()> {
    ctx.finish_all()?;
    // SAFETY: `p` is the base of a live SVM allocation of this context (the
    // dyn layer's table), and no command uses it any more.
    check(unsafe { clmem::svm_free(ctx.cl.get(), p.0 as *mut c_void) })
}

fn addr(m: MemRef) -> *mut c_void {
    match m {
        MemRef::Usm(p) => p.0 as *mut c_void,
        MemRef::Host(h) => h.as_ptr().cast(),
    }
}

/// Copies between SVM and/or host memory. With at least one SVM side this is
/// `clEnqueueSVMMemcpy` (it takes plain host pointers too). Host to host
/// needs no SVM: it waits for the queue (and `wait`), copies on the calling
/// thread and returns a marker enqueued after, so queue order holds.
pub(crate) fn enqueue_usm_copy(q: &Queue, dst: MemRef, src: MemRef, size: usize, wait: &[&Event]) -> Result<Event> {
    if let (MemRef::Host(d), MemRef::Host(s)) = (dst, src) {
        let before = queue::enqueue_marker(q, wait)?;
        queue::wait(&[&before])?;
        // SAFETY: both spans hold `size` bytes (dyn layer), do not overlap
        // (dyn layer), and are ours for the command (`HostPtr::new`).
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), d.as_ptr(), size) };
        return queue::enqueue_marker(q, &[]);
    }
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    #[allow(deprecated)]
    // reason: cl3 marks this 2.0 entry point deprecated by mistake (a cfg_attr meant for clEnqueueTask).
    // SAFETY: SVM sides are allocations of the queue's context, host sides
    // are valid for the command; ranges were checked by the dyn layer.
    let r = unsafe { cq::enqueue_svm_mem_cpy(q.cl.get(), CL_FALSE, addr(dst), addr(src), size, n, w) };
    event(r)
}

/// Fills SVM memory: powers of two with `clEnqueueSVMMemFill`; other
/// pattern lengths by one blocking copy of a seed of whole repetitions,
/// then in-place doubling copies (the seed is host memory, so that first
/// copy must complete before this call returns).
pub(crate) fn enqueue_usm_fill(q: &Queue, p: UsmPtr, size: usize, pattern: &[u8], wait: &[&Event]) -> Result<Event> {
    let ids = wait_ids(wait);
    let (n, w) = wl(&ids);
    let dst = p.0 as *mut c_void;
    if pattern.len().is_power_of_two() {
        // SAFETY: range checked by the dyn layer; the pattern is copied by
        // OpenCL before the call returns.
        return event(unsafe {
            cq::enqueue_svm_mem_fill(q.cl.get(), dst, pattern.as_ptr().cast(), pattern.len(), size, n, w)
        });
    }
    let seed = queue::repeat_pattern(pattern, size, 64 * 1024);
    #[allow(deprecated)] // reason: see `enqueue_usm_copy`.
    // SAFETY: blocking copy: `seed` outlives it; `seed.len() <= size`.
    let first = unsafe {
        cq::enqueue_svm_mem_cpy(
            q.cl.get(),
            opencl3::types::CL_TRUE,
            dst,
            seed.as_ptr().cast(),
            seed.len(),
            n,
            w,
        )
    };
    let mut last = event(first)?;
    let mut done = seed.len();
    while done < size {
        let len = done.min(size - done);
        #[allow(deprecated)] // reason: see `enqueue_usm_copy`.
        // SAFETY: disjoint ranges inside the checked allocation range.
        let r = unsafe {
            cq::enqueue_svm_mem_cpy(
                q.cl.get(),
                CL_FALSE,
                dst.cast::<u8>().add(done).cast(),
                dst,
                len,
                0,
                ptr::null(),
            )
        };
        last = event(r)?;
        done += len;
    }
    Ok(last)
}

/// Prefetch: `clEnqueueSVMMigrateMem` to the queue's device on OpenCL 2.1+
/// devices; where the runtime does not offer it, a marker (a prefetch is
/// only a hint, its ordering is all that must hold).
pub(crate) fn enqueue_usm_prefetch(q: &Queue, p: UsmPtr, size: usize, wait: &[&Event]) -> Result<Event> {
    if q.version >= (2, 1) {
        let ids = wait_ids(wait);
        let (n, w) = wl(&ids);
        let ptrs: [*const c_void; 1] = [p.0 as *const c_void];
        let sizes: [usize; 1] = [size];
        // SAFETY: one range of a live SVM allocation of the queue's context.
        let r = unsafe { cq::enqueue_svm_migrate_mem(q.cl.get(), 1, ptrs.as_ptr(), sizes.as_ptr(), 0, n, w) };
        match r {
            Ok(ev) => return event(Ok(ev)),
            Err(code) => tracing::debug!(code, "clEnqueueSVMMigrateMem refused; prefetch becomes a marker"),
        }
    }
    queue::enqueue_marker(q, wait)
}

/// OpenCL SVM has no advice; advice is a hint, so it is accepted and has no effect.
pub(crate) fn usm_advise(_q: &Queue, _p: UsmPtr, _size: usize, advice: UsmAdvice) -> Result<()> {
    tracing::trace!(?advice, "USM advice has no OpenCL SVM equivalent; ignored");
    Ok(())
}
