//! USM: through `cl_intel_unified_shared_memory` where the context's
//! platform has it (allocations for the hinted device, `clEnqueueMemcpyINTEL`,
//! `clEnqueueMemFillINTEL`, `clEnqueueMigrateMemINTEL`), otherwise through
//! OpenCL 2.0 shared virtual memory (`clSVMAlloc`, `clEnqueueSVM*`).
//!
//! Which one a context uses is decided once, when it is created
//! ([`ContextInner::intel`]): a platform either offers the extension on
//! every device of the context or the context uses SVM. The capability
//! flags each device reports (`conv::usm_caps_from_intel` /
//! `conv::usm_caps_from_svm`) say exactly what that path offers.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use opencl3::command_queue as cq;
use opencl3::memory::{self as clmem, CL_MEM_READ_WRITE, CL_MEM_SVM_FINE_GRAIN_BUFFER};
use opencl3::types::{cl_int, cl_uint, CL_FALSE, CL_TRUE};
use ur_api::{Error, MemArg, Result, UsmDesc, UsmKind, UsmPtr, UsmRef};

use crate::conv::{self, check, check3};
use crate::device::{Context, ContextInner, Device, Handle};
use crate::ext::{event_of, IntelUsm};
use crate::memory::FILL_SEED;
use crate::queue::{raw_event, submit, Event, Queue};
use crate::OpenClAdapter;

/// The largest alignment asked of the runtime: the size of the largest
/// OpenCL C type (`long16`, 128 bytes), which both `clSVMAlloc` and the
/// Intel allocators must honour. Larger ones are served by over-allocating
/// and handing out an aligned interior pointer.
const NATIVE_ALIGN: usize = 128;

/// A USM allocation of one context: Intel USM or SVM memory.
///
/// It keeps the context alive, so that freeing it can wait for the commands
/// using it: `clMemBlockingFreeINTEL` does so itself; for SVM the context's
/// queues are drained first (`clSVMFree` does not wait). Freed by
/// [`ur_api::adapter::UnifiedMemory::usm_free`], or when dropped.
#[derive(Debug)]
pub struct Usm {
    /// What the allocator returned (the address handed out may be aligned
    /// up inside it); `None` once freed.
    base: Option<Handle<*mut c_void>>,
    ctx: Arc<ContextInner>,
}

impl Usm {
    /// Frees the memory once no command uses it. On failure the memory
    /// stays allocated.
    pub(crate) fn free(&mut self) -> Result<()> {
        let Some(base) = self.base else { return Ok(()) };
        if let Some(intel) = self.ctx.intel {
            // SAFETY: `base` is a live allocation of this context made by the
            // extension (`usm_alloc`), freed only here, once; the blocking
            // free waits for every command that may use it.
            let code = unsafe { (intel.blocking_free)(self.ctx.cl.get(), base.0) };
            check(if code == 0 { Ok(()) } else { Err(code) })?;
            self.base = None;
            return Ok(());
        }
        self.ctx.finish_all()?;
        self.base = None;
        // SAFETY: `base` is a live SVM allocation of this context (made by
        // `usm_alloc`, freed only here, once), and every queue that could
        // use it was drained just above.
        check(unsafe { clmem::svm_free(self.ctx.cl.get(), base.0) })
    }
}

impl Drop for Usm {
    fn drop(&mut self) {
        if let Err(e) = self.free() {
            tracing::warn!(error = %e, "freeing USM memory failed; the memory is leaked");
        }
    }
}

/// One allocation through the extension; device and shared allocations are
/// made for the hinted device (a shared one without a hint for none).
fn intel_alloc(
    ctx: &Context,
    intel: &IntelUsm,
    desc: &UsmDesc<&Device>,
    size: usize,
    align: cl_uint,
) -> Result<*mut c_void> {
    let flags = conv::intel_alloc_flags(desc.kind, desc.device.is_some(), desc.advice);
    let props: [u64; 3] = [crate::ext::MEM_ALLOC_FLAGS, flags, 0];
    let refused = ctx.placement_refused.load(std::sync::atomic::Ordering::Relaxed);
    let props_ptr = if flags == 0 || refused {
        ptr::null()
    } else {
        props.as_ptr()
    };
    let device = desc.device.map_or(ptr::null_mut(), |d| d.id.0);
    let alloc = |props: *const u64, code: &mut cl_int| {
        // SAFETY: a live context; `device` is null or a device of it (the
        // dyn layer checked the hint belongs to the context); the property
        // list is null or zero-terminated and lives across the call; the
        // size is non-zero and the alignment 0 or a power of two <= 128.
        unsafe {
            match desc.kind {
                UsmKind::Host => (intel.host_alloc)(ctx.cl.get(), props, size, align, code),
                UsmKind::Device => (intel.device_alloc)(ctx.cl.get(), device, props, size, align, code),
                UsmKind::Shared => (intel.shared_alloc)(ctx.cl.get(), device, props, size, align, code),
            }
        }
    };
    let mut code: cl_int = 0;
    let mut p = alloc(props_ptr, &mut code);
    if p.is_null() && code == opencl3::error_codes::CL_INVALID_PROPERTY && !props_ptr.is_null() {
        // Placement is a hint; a runtime that takes no placement (Intel's
        // CPU runtime: all its memory is host memory) allocates without it.
        tracing::debug!("the runtime refused the placement flags; allocating without them from now on");
        ctx.placement_refused.store(true, std::sync::atomic::Ordering::Relaxed);
        p = alloc(ptr::null(), &mut code);
    }
    if p.is_null() {
        tracing::debug!(code, kind = ?desc.kind, size, "Intel USM allocation failed");
        return Err(match conv::error(code) {
            Error::Backend { .. } if code == opencl3::error_codes::CL_INVALID_BUFFER_SIZE => Error::OutOfDeviceMemory,
            e => e,
        });
    }
    Ok(p)
}

/// Frees USM memory once no command uses it (see `Usm::free`).
pub(crate) fn usm_free(mut alloc: Usm) -> Result<()> {
    alloc.free()
}

/// The largest USM copy [`crate::queue::run_on_idle`] may make on the
/// calling thread: a host `memcpy` of 64 KiB (a few µs) costs about what
/// handing a command to a CPU runtime's worker and waiting for it does, so
/// anything larger stays a command the runtime may split across its
/// threads while the caller goes on.
const HOST_COPY_MAX: usize = 64 * 1024;

fn addr(m: MemArg<'_, OpenClAdapter>) -> *mut c_void {
    match m {
        MemArg::Usm(u) => u.ptr.0 as *mut c_void,
        MemArg::Host(h) => h.as_ptr().cast(),
    }
}

/// One USM copy on the queue's path (Intel or SVM).
///
/// # Safety
///
/// Each side holds `size` bytes usable for a copy on `queue` (USM of its
/// context, or host memory valid until the copy completes, or during the
/// call when `blocking`), and the two do not overlap.
unsafe fn memcpy(
    q: QueueRef<'_>,
    blocking: opencl3::types::cl_bool,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    n: cl_uint,
    w: *const opencl3::types::cl_event,
) -> std::result::Result<opencl3::types::cl_event, cl_int> {
    match q.intel {
        // SAFETY: the caller's contract, as the extension states it.
        Some(intel) => event_of(|ev| unsafe { (intel.memcpy)(q.raw, blocking, dst, src, size, n, w, ev) }),
        #[allow(deprecated)]
        // reason: cl3 marks this 2.0 entry point deprecated by mistake (a cfg_attr meant for clEnqueueTask).
        // SAFETY: the caller's contract; SVM sides are allocations of the queue's context.
        None => unsafe { cq::enqueue_svm_mem_cpy(q.raw, blocking, dst, src, size, n, w) },
    }
}

/// What the USM commands need of a queue inside [`submit`]'s closure.
#[derive(Clone, Copy)]
struct QueueRef<'a> {
    raw: opencl3::types::cl_command_queue,
    intel: &'a Option<IntelUsm>,
}

impl ur_api::adapter::UnifiedMemory for crate::OpenClAdapter {
    /// Allocates USM memory: with the Intel extension for the hinted device
    /// (see [`conv::intel_alloc_flags`] for the placement), else as SVM (see
    /// [`conv::usm_caps_from_svm`] for which kind gets which grain; SVM is
    /// context-wide, so the device only decided what the dyn layer checked).
    fn usm_alloc(&self, ctx: &Context, desc: &UsmDesc<&Device>) -> Result<(Usm, UsmPtr)> {
        let (native, extra) = if desc.align <= NATIVE_ALIGN {
            (desc.align, 0)
        } else {
            (NATIVE_ALIGN, desc.align - NATIVE_ALIGN)
        };
        let size = desc.size.checked_add(extra).ok_or(Error::OutOfDeviceMemory)?;
        // By reference: the extension's table is not copied per call.
        let base = match &ctx.intel {
            Some(intel) => intel_alloc(ctx, intel, desc, size, native as cl_uint)?,
            None => {
                let flags = match desc.kind {
                    UsmKind::Device => CL_MEM_READ_WRITE,
                    UsmKind::Host | UsmKind::Shared => CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER,
                };
                // SAFETY: alignment is 0 or a power of two <= 128 and the size
                // non-zero; a null result is reported as an error by cl3.
                unsafe { clmem::svm_alloc(ctx.cl.get(), flags, size, native as cl_uint) }
                    .map_err(|_| Error::OutOfDeviceMemory)?
            }
        };
        let addr = (base as u64).next_multiple_of(desc.align.max(1) as u64);
        let usm = Usm {
            base: Some(Handle(base)),
            ctx: ctx.shared().clone(),
        };
        Ok((usm, UsmPtr(addr)))
    }

    /// Frees USM memory once no command uses it (see `Usm::free`).
    unsafe fn usm_free(&self, _ctx: &Context, alloc: Usm) -> Result<()> {
        usm_free(alloc)
    }

    /// Copies between USM and/or host memory. With at least one USM side this
    /// is `clEnqueueMemcpyINTEL` or `clEnqueueSVMMemcpy` (both take plain host
    /// pointers too). Host to host needs neither: it waits for the queue (and
    /// `wait`) with a marker, copies on the calling thread and returns a marker
    /// enqueued after it.
    unsafe fn enqueue_usm_copy(
        &self,
        q: &Queue,
        dst: MemArg<'_, OpenClAdapter>,
        src: MemArg<'_, OpenClAdapter>,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        if let (MemArg::Host(d), MemArg::Host(s)) = (dst, src) {
            return submit(q, wait, |q, n, w| {
                // SAFETY: a marker over live events of the queue's context.
                let before = raw_event(unsafe { cq::enqueue_marker_with_wait_list(q, n, w) })?;
                check3(before.wait())?;
                // SAFETY: the caller guarantees (the command contract) both spans
                // hold `size` bytes, do not overlap, and are ours for the command
                // (`HostPtr::new`).
                unsafe { ptr::copy_nonoverlapping(s.as_ptr(), d.as_ptr(), size) };
                // SAFETY: a marker with no wait list.
                raw_event(unsafe { cq::enqueue_marker_with_wait_list(q, 0, ptr::null()) })
            });
        }
        let (d, s) = (addr(dst), addr(src));
        if let Some(ctx) = q.host_copies.filter(|_| size <= HOST_COPY_MAX) {
            // SAFETY: as for the command below; and with `host_copies`
            // every allocation of the queue's context is host memory (CPU
            // devices of host-unified memory), so the calling thread may
            // copy it once no command of the queue or of `wait` is pending
            // (`run_on_idle` checks that under the queue's lock).
            let copy = || unsafe { ptr::copy_nonoverlapping(s.cast::<u8>(), d.cast::<u8>(), size) };
            if let Some(done) = crate::queue::run_on_idle(q, ctx, wait, copy)? {
                return Ok(done);
            }
        }
        let intel = &q.intel;
        submit(q, wait, |raw, n, w| {
            let q = QueueRef { raw, intel };
            // SAFETY: the caller guarantees (the command contract) each side holds
            // `size` bytes, the two do not overlap, host sides are valid for the
            // command, and USM sides are usable for a copy here: allocations of
            // the queue's context (other contexts are never even `Migratable`).
            raw_event(unsafe { memcpy(q, CL_FALSE, d, s, size, n, w) })
        })
    }

    /// Fills USM memory: powers of two with `clEnqueueMemFillINTEL` or
    /// `clEnqueueSVMMemFill`; other pattern lengths by one blocking copy of a
    /// seed of whole repetitions, then in-place doubling copies (the seed is
    /// host memory, so that first copy completes before this call returns).
    unsafe fn enqueue_usm_fill(
        &self,
        q: &Queue,
        p: UsmRef<'_, OpenClAdapter>,
        size: usize,
        pattern: &[u8],
        wait: &[&Event],
    ) -> Result<Event> {
        let dst = p.ptr.0 as *mut c_void;
        let intel = &q.intel;
        if pattern.len().is_power_of_two() {
            return submit(q, wait, |q, n, w| {
                // SAFETY (both arms): the caller guarantees (the command contract)
                // `size` bytes at `dst` lie in an allocation usable here and the
                // pattern's length divides `size`; the runtime copies the pattern
                // before returning.
                raw_event(match intel {
                    Some(i) => event_of(|ev| {
                        // SAFETY: see above.
                        unsafe { (i.fill)(q, dst, pattern.as_ptr().cast(), pattern.len(), size, n, w, ev) }
                    }),
                    // SAFETY: see above.
                    None => unsafe {
                        cq::enqueue_svm_mem_fill(q, dst, pattern.as_ptr().cast(), pattern.len(), size, n, w)
                    },
                })
            });
        }
        let seed = conv::repeat_pattern(pattern, size, FILL_SEED);
        submit(q, wait, |raw, n, w| {
            let q = QueueRef { raw, intel };
            // SAFETY: a blocking copy, so `seed` outlives it; `seed.len() <= size`
            // bytes, inside the range the caller guarantees (the command contract).
            let mut last = raw_event(unsafe { memcpy(q, CL_TRUE, dst, seed.as_ptr().cast(), seed.len(), n, w) })?;
            let mut done = seed.len();
            while done < size {
                let len = done.min(size - done);
                // SAFETY: disjoint ranges inside the caller's range (`done + len
                // <= size`), as above.
                let r = unsafe { memcpy(q, CL_FALSE, dst.cast::<u8>().add(done).cast(), dst, len, 0, ptr::null()) };
                last = raw_event(r)?;
                done += len;
            }
            Ok(last)
        })
    }

    /// Prefetch: `clEnqueueMigrateMemINTEL` to the queue's device, or
    /// `clEnqueueSVMMigrateMem` on OpenCL 2.1+ SVM devices; where the runtime
    /// refuses it, a marker (a prefetch is only a hint; its ordering is all
    /// that must hold).
    unsafe fn enqueue_usm_prefetch(
        &self,
        q: &Queue,
        p: UsmRef<'_, OpenClAdapter>,
        size: usize,
        wait: &[&Event],
    ) -> Result<Event> {
        let migrate = q.version >= (2, 1);
        let intel = &q.intel;
        submit(q, wait, |q, n, w| {
            let at = p.ptr.0 as *const c_void;
            let r = match intel {
                // SAFETY: the caller guarantees (the command contract) one range
                // of a live allocation of the queue's context; flags 0 migrate
                // to the queue's device.
                Some(i) => Some(event_of(|ev| unsafe { (i.migrate)(q, at, size, 0, n, w, ev) })),
                None if migrate => {
                    let ptrs: [*const c_void; 1] = [at];
                    let sizes: [usize; 1] = [size];
                    // SAFETY: as above, for an SVM allocation.
                    Some(unsafe { cq::enqueue_svm_migrate_mem(q, 1, ptrs.as_ptr(), sizes.as_ptr(), 0, n, w) })
                }
                None => None,
            };
            match r {
                Some(Ok(ev)) => return raw_event(Ok(ev)),
                Some(Err(code)) => {
                    tracing::debug!(code, "the runtime refused the migration; prefetch becomes a marker")
                }
                None => {}
            }
            // SAFETY: a marker over live events of the queue's context.
            raw_event(unsafe { cq::enqueue_marker_with_wait_list(q, n, w) })
        })
    }
}

#[cfg(test)]
mod tests {
    use ur_api::{adapter::prelude::*, UsmDesc, UsmKind};

    use crate::OpenClAdapter;

    /// On a platform with the extension, each kind is allocated through it:
    /// the runtime itself reports the kind asked for, at interior pointers
    /// of over-aligned allocations too. Skips where no platform has it.
    #[test]
    fn intel_allocations_are_the_kind_asked_for() {
        let a = OpenClAdapter::new();
        let Some(dev) = a
            .platforms()
            .unwrap_or_default()
            .iter()
            .flat_map(|p| a.devices(p).unwrap_or_default())
            .find(|d| d.intel.is_some())
        else {
            eprintln!("SKIP: no platform with cl_intel_unified_shared_memory (OCL_ICD_VENDORS unset?)");
            return;
        };
        let ctx = a.create_context(&[&dev]).unwrap();
        let intel = ctx.intel.expect("a context of Intel USM devices uses the extension");
        for (kind, want) in [(UsmKind::Host, 0), (UsmKind::Device, 1), (UsmKind::Shared, 2)] {
            for align in [0, 4096] {
                let (usm, ptr) = a
                    .usm_alloc(&ctx, &UsmDesc::new(kind, 1000).on(&dev).aligned(align))
                    .unwrap();
                assert_eq!(ptr.0 % align.max(1) as u64, 0);
                // SAFETY: the context is alive.
                let got = unsafe { intel.alloc_type(ctx.cl.get(), ptr.0 as *const _) };
                assert_eq!(got, Some(want), "{kind:?} aligned {align}");
                // SAFETY: made in `ctx` just above, used by no command.
                unsafe { a.usm_free(&ctx, usm) }.unwrap();
            }
        }
    }
}
