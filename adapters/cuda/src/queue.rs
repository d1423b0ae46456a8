//! Queues (CUDA streams), events, and every enqueued memory operation.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cudarc::driver::sys::{self, CUresult};
use ur_api::{Error, EventStatus, HostPtr, MapFlags, MemArg, ProfilingInfo, QueueProps, RectCopy, Result, UsmRef};

use crate::conv::{self, check};
use crate::device::{CudaContext, CudaDevice, DevInner};
use crate::memory::{self, CudaBuffer, Mapping, Pinned};
use crate::CudaAdapter;

/// Host nanoseconds since the first call in this process.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Pooled events per device at most (the rest are destroyed).
const EVENT_POOL_MAX: usize = 256;

/// An owned CUDA event; timing-free ones go back to their device's pool.
#[derive(Debug)]
pub(crate) struct RawEvent {
    ev: sys::CUevent,
    pool: Option<Arc<DevInner>>,
}

// SAFETY: CUDA events may be used from any thread.
unsafe impl Send for RawEvent {}
// SAFETY: as above.
unsafe impl Sync for RawEvent {}

impl RawEvent {
    /// A new event with timing (profiling) or a pooled one without. The
    /// device's context must be current.
    fn new(dev: &Arc<DevInner>, timing: bool) -> Result<RawEvent> {
        if !timing {
            if let Some(ev) = dev.event_pool.lock().pop() {
                return Ok(RawEvent {
                    ev,
                    pool: Some(dev.clone()),
                });
            }
        }
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut ev = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the device's context is current.
        check(unsafe { sys::cuEventCreate(&mut ev, flags as u32) })?;
        Ok(RawEvent {
            ev,
            pool: (!timing).then(|| dev.clone()),
        })
    }

    fn record(&self, stream: sys::CUstream) -> Result<()> {
        // SAFETY: both handles are alive.
        check(unsafe { sys::cuEventRecord(self.ev, stream) })
    }

    fn elapsed_ms(&self, later: &RawEvent) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events were created with timing and have completed.
        check(unsafe { sys::cuEventElapsedTime(&mut ms, self.ev, later.ev) })?;
        Ok(ms)
    }
}

impl Drop for RawEvent {
    fn drop(&mut self) {
        if let Some(dev) = &self.pool {
            let mut pool = dev.event_pool.lock();
            if pool.len() < EVENT_POOL_MAX {
                // Re-recording a pending event later is allowed: waits
                // already enqueued keep the state they captured.
                pool.push(self.ev);
                return;
            }
        }
        // SAFETY: the event is owned; destroying a pending event is allowed
        // (resources are released once it completes).
        unsafe { sys::cuEventDestroy_v2(self.ev) };
    }
}

/// The reference point of a profiling queue's timestamps.
#[derive(Debug)]
pub(crate) struct ProfBase {
    origin: RawEvent,
    base_ns: u64,
}

/// An in-order queue: a non-blocking stream on one device's primary context.
#[derive(Debug)]
pub struct CudaQueue {
    pub(crate) stream: sys::CUstream,
    pub(crate) dev: Arc<DevInner>,
    prof: Option<Arc<ProfBase>>,
}

// SAFETY: streams may be used from any thread; the driver serialises.
unsafe impl Send for CudaQueue {}
// SAFETY: as above.
unsafe impl Sync for CudaQueue {}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        if self.dev.bind().is_ok() {
            // SAFETY: the stream is owned; pending work still completes and
            // the driver frees the stream afterwards.
            unsafe { sys::cuStreamDestroy_v2(self.stream) };
        }
    }
}

/// The completion of one command: an event recorded after it on the
/// stream (and, on profiling queues, one before it).
#[derive(Debug)]
pub struct CudaEvent {
    end: RawEvent,
    start: Option<(RawEvent, Arc<ProfBase>)>,
    queued_ns: u64,
    /// Memory the command uses that must outlive it (pinned staging).
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    dev: Arc<DevInner>,
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if !self.keep.is_empty() {
            let waited = self.dev.bind().and_then(|()| {
                // SAFETY: the event is alive; waiting makes sure the kept
                // memory is no longer used when it is dropped after this.
                check(unsafe { sys::cuEventSynchronize(self.end.ev) })
            });
            if let Err(e) = waited {
                tracing::warn!(error = %e, "waiting for a command before freeing its staging failed");
            }
        }
    }
}

pub(crate) fn create_queue(_ctx: &CudaContext, dev: &CudaDevice, props: &QueueProps) -> Result<CudaQueue> {
    let d = dev.0.clone();
    d.bind()?;
    let mut stream = std::ptr::null_mut();
    let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: valid out-pointer, the device's context is current.
    check(unsafe { sys::cuStreamCreate(&mut stream, flags) })?;
    let mut q = CudaQueue {
        stream,
        dev: d,
        prof: None,
    };
    if props.profiling {
        let origin = RawEvent::new(&q.dev, true)?;
        origin.record(stream)?;
        // SAFETY: the event was just recorded on a live stream.
        check(unsafe { sys::cuEventSynchronize(origin.ev) })?;
        q.prof = Some(Arc::new(ProfBase {
            origin,
            base_ns: now_ns(),
        }));
    }
    Ok(q)
}

/// Enqueues `op` on the queue after the wait list, bracketed by events.
pub(crate) fn submit(
    q: &CudaQueue,
    wait: &[&CudaEvent],
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    op: impl FnOnce(sys::CUstream) -> Result<()>,
) -> Result<CudaEvent> {
    q.dev.bind()?;
    for e in wait {
        // SAFETY: both handles are alive; events of other devices are allowed.
        check(unsafe { sys::cuStreamWaitEvent(q.stream, e.end.ev, 0) })?;
    }
    let queued_ns = now_ns();
    let start = match &q.prof {
        Some(p) => {
            let s = RawEvent::new(&q.dev, true)?;
            s.record(q.stream)?;
            Some((s, p.clone()))
        }
        None => None,
    };
    op(q.stream)?;
    let end = RawEvent::new(&q.dev, q.prof.is_some())?;
    end.record(q.stream)?;
    Ok(CudaEvent {
        end,
        start,
        queued_ns,
        keep,
        dev: q.dev.clone(),
    })
}

pub(crate) fn finish(q: &CudaQueue) -> Result<()> {
    q.dev.bind()?;
    // SAFETY: the stream is alive.
    check(unsafe { sys::cuStreamSynchronize(q.stream) })
}

pub(crate) fn event_status(e: &CudaEvent) -> Result<EventStatus> {
    e.dev.bind()?;
    // SAFETY: the event is alive.
    Ok(match unsafe { sys::cuEventQuery(e.end.ev) } {
        CUresult::CUDA_SUCCESS => EventStatus::Complete,
        CUresult::CUDA_ERROR_NOT_READY => EventStatus::Submitted,
        other => EventStatus::Failed(conv::error(other)),
    })
}

/// Synchronizes every event, even after one fails (`Adapter::wait`'s
/// promise: a failure does not end the wait for the others early), and
/// reports the first failure. `cuEventSynchronize` itself returns only
/// once the event has completed, or with the context's sticky error (the
/// device is lost to this process).
pub(crate) fn wait(events: &[&CudaEvent]) -> Result<()> {
    let mut first = Ok(());
    for e in events {
        let r = e.dev.bind().and_then(|()| {
            // SAFETY: the event is alive.
            check(unsafe { sys::cuEventSynchronize(e.end.ev) })
        });
        if first.is_ok() {
            first = r;
        }
    }
    first
}

pub(crate) fn event_profiling(e: &CudaEvent) -> Result<ProfilingInfo> {
    let Some((start, base)) = &e.start else {
        return Err(Error::ProfilingUnavailable(
            "the event's queue was created without profiling",
        ));
    };
    if event_status(e)? != EventStatus::Complete {
        return Err(Error::ProfilingUnavailable("the command has not completed"));
    }
    let to_start = base.origin.elapsed_ms(start)?;
    let run = start.elapsed_ms(&e.end)?;
    Ok(conv::profiling(base.base_ns, e.queued_ns, to_start, run))
}

// ---- memory operations ----

/// Reads a buffer range into host memory.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn read(
    q: &CudaQueue,
    b: &CudaBuffer,
    offset: usize,
    dst: HostPtr,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    submit(q, w, Vec::new(), |s| {
        // SAFETY: the caller guarantees (the command contract) the range lies
        // inside the buffer, usable on this device, and `dst` is valid until
        // the event completes (the HostPtr promise).
        check(unsafe { sys::cuMemcpyDtoHAsync_v2(dst.as_ptr().cast(), b.ptr() + offset as u64, dst.len(), s) })
    })
}

/// Writes host memory into a buffer range.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn write(
    q: &CudaQueue,
    b: &CudaBuffer,
    offset: usize,
    src: HostPtr,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    submit(q, w, Vec::new(), |s| {
        // SAFETY: as in `read`, with the HostPtr promise for reading `src`.
        check(unsafe { sys::cuMemcpyHtoDAsync_v2(b.ptr() + offset as u64, src.as_ptr().cast(), src.len(), s) })
    })
}

/// A device-to-device copy; across devices with `cuMemcpyPeerAsync`.
///
/// # Safety
///
/// `size` bytes at `src` (memory of `src_dev`) and at `dst` (of `dst_dev`)
/// are live device memory that does not overlap.
unsafe fn copy_d2d(
    s: sys::CUstream,
    dst: u64,
    dst_dev: &DevInner,
    src: u64,
    src_dev: &DevInner,
    size: usize,
) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the contexts are retained.
    check(unsafe {
        if dst_dev.dev == src_dev.dev {
            sys::cuMemcpyDtoDAsync_v2(dst, src, size, s)
        } else {
            sys::cuMemcpyPeerAsync(dst, dst_dev.ctx, src, src_dev.ctx, size, s)
        }
    })
}

/// Copies between buffers.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn copy(
    q: &CudaQueue,
    src: &CudaBuffer,
    src_offset: usize,
    dst: &CudaBuffer,
    dst_offset: usize,
    size: usize,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    submit(q, w, Vec::new(), |s| {
        // SAFETY: the caller guarantees (the command contract) both ranges lie
        // inside their buffers, usable for a copy here, and do not overlap.
        unsafe {
            copy_d2d(
                s,
                dst.ptr() + dst_offset as u64,
                dst.dev(),
                src.ptr() + src_offset as u64,
                src.dev(),
                size,
            )
        }
    })
}

/// One side of a rect copy: device memory (address and device) or host memory.
#[derive(Clone, Copy)]
pub(crate) enum Side<'a> {
    Device(u64, &'a DevInner),
    Host(*mut u8),
}

impl Side<'_> {
    fn at(self, off: usize) -> Self {
        match self {
            Side::Device(p, d) => Side::Device(p + off as u64, d),
            // Address arithmetic only: the callers' contract puts the box
            // inside the host span.
            Side::Host(p) => Side::Host(p.wrapping_add(off)),
        }
    }
}

/// A linear copy between any two sides.
///
/// # Safety
///
/// Both sides hold `len` live bytes (host sides valid for the command by
/// the HostPtr promise) and do not overlap.
unsafe fn copy_any(s: sys::CUstream, dst: Side<'_>, src: Side<'_>, len: usize) -> Result<()> {
    match (dst, src) {
        // SAFETY: the caller guarantees both ranges.
        (Side::Device(d, dd), Side::Device(p, sd)) => unsafe { copy_d2d(s, d, dd, p, sd, len) },
        // SAFETY: the caller guarantees both ranges; host spans valid by promise.
        (Side::Device(d, _), Side::Host(h)) => check(unsafe { sys::cuMemcpyHtoDAsync_v2(d, h.cast(), len, s) }),
        // SAFETY: as above.
        (Side::Host(h), Side::Device(p, _)) => check(unsafe { sys::cuMemcpyDtoHAsync_v2(h.cast(), p, len, s) }),
        (Side::Host(d), Side::Host(p)) => {
            // SAFETY: the caller guarantees both spans, valid by promise and
            // not overlapping.
            unsafe { std::ptr::copy_nonoverlapping(p, d, len) };
            Ok(())
        }
    }
}

/// The memory type, host pointer and device pointer of one 2-D copy side.
fn side_parts(side: Side<'_>) -> (sys::CUmemorytype, *mut u8, sys::CUdeviceptr) {
    match side {
        Side::Device(p, _) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), p),
        Side::Host(h) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, h, 0),
    }
}

/// A rect copy: one `cuMemcpy2DAsync` per slice, or row by row where a
/// pitch exceeds the device's limit, the two sides are on different
/// devices, or both are host memory.
///
/// # Safety
///
/// Both boxes (explicit pitches) lie inside live memory of their sides
/// (host sides valid for the command by the HostPtr promise), and their
/// spans do not overlap.
pub(crate) unsafe fn copy_rect_sides(
    s: sys::CUstream,
    dev: &DevInner,
    dst: Side<'_>,
    src: Side<'_>,
    rect: &RectCopy,
) -> Result<()> {
    let [w, h, d] = rect.extent;
    let cross = match (dst, src) {
        (Side::Device(_, a), Side::Device(_, b)) => a.dev != b.dev,
        (Side::Host(_), Side::Host(_)) => true,
        _ => false,
    };
    let pitches_ok = rect.src.row_pitch <= dev.max_pitch && rect.dst.row_pitch <= dev.max_pitch;
    if cross || !pitches_ok || h == 1 {
        let mut result = Ok(());
        rect.for_each_row(|so, dof, len| {
            if result.is_ok() {
                // SAFETY: each row lies inside its side's box, guaranteed
                // by the caller.
                result = unsafe { copy_any(s, dst.at(dof), src.at(so), len) };
            }
        });
        return result;
    }
    for z in 0..d {
        let so = rect.src.start() + z * rect.src.slice_pitch;
        let dof = rect.dst.start() + z * rect.dst.slice_pitch;
        let (src_type, src_host, src_dev) = side_parts(src.at(so));
        let (dst_type, dst_host, dst_dev) = side_parts(dst.at(dof));
        let m = sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: src_type,
            srcHost: src_host.cast_const().cast(),
            srcDevice: src_dev,
            srcArray: std::ptr::null_mut(),
            srcPitch: rect.src.row_pitch,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: dst_type,
            dstHost: dst_host.cast(),
            dstDevice: dst_dev,
            dstArray: std::ptr::null_mut(),
            dstPitch: rect.dst.row_pitch,
            WidthInBytes: w,
            Height: h,
        };
        // SAFETY: the caller guarantees both boxes lie inside their sides.
        check(unsafe { sys::cuMemcpy2DAsync_v2(&m, s) })?;
    }
    Ok(())
}

/// Copies a box between buffers.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn copy_rect(
    q: &CudaQueue,
    src: &CudaBuffer,
    dst: &CudaBuffer,
    rect: &RectCopy,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    let (sd, dd) = (Side::Device(src.ptr(), src.dev()), Side::Device(dst.ptr(), dst.dev()));
    // SAFETY: the caller guarantees (the command contract) both boxes lie
    // inside their buffers, usable for a copy here, with disjoint spans.
    submit(q, w, Vec::new(), |s| unsafe {
        copy_rect_sides(s, &q.dev, dd, sd, rect)
    })
}

/// Reads a box of a buffer into host memory.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn read_rect(
    q: &CudaQueue,
    b: &CudaBuffer,
    rect: &RectCopy,
    dst: HostPtr,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    let sd = Side::Device(b.ptr(), b.dev());
    // SAFETY: the caller guarantees (the command contract) the boxes lie
    // inside the buffer and `dst`, valid for the command.
    submit(q, w, Vec::new(), |s| unsafe {
        copy_rect_sides(s, &q.dev, Side::Host(dst.as_ptr()), sd, rect)
    })
}

/// Writes a box of host memory into a buffer.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn write_rect(
    q: &CudaQueue,
    b: &CudaBuffer,
    rect: &RectCopy,
    src: HostPtr,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    let dd = Side::Device(b.ptr(), b.dev());
    // SAFETY: the caller guarantees (the command contract) the boxes lie
    // inside `src`, valid for the command, and the buffer.
    submit(q, w, Vec::new(), |s| unsafe {
        copy_rect_sides(s, &q.dev, dd, Side::Host(src.as_ptr()), rect)
    })
}

/// Fills `size` bytes at `addr` with the pattern (see [`conv::fill_plan`]).
///
/// # Safety
///
/// `size` bytes at `addr` are live device-accessible memory.
unsafe fn fill_at(s: sys::CUstream, addr: u64, size: usize, pattern: &[u8]) -> Result<()> {
    for op in conv::fill_plan(addr, size, pattern) {
        let p = addr + op.offset as u64;
        // SAFETY: the caller guarantees the range; every element of the plan
        // lies inside it and is aligned to its width.
        let r = unsafe {
            match (op.width, op.pitch) {
                (1, 0) => sys::cuMemsetD8Async(p, op.value as u8, op.count, s),
                (2, 0) => sys::cuMemsetD16Async(p, op.value as u16, op.count, s),
                (4, 0) => sys::cuMemsetD32Async(p, op.value, op.count, s),
                (1, pitch) => sys::cuMemsetD2D8Async(p, pitch, op.value as u8, 1, op.count, s),
                (2, pitch) => sys::cuMemsetD2D16Async(p, pitch, op.value as u16, 1, op.count, s),
                (_, pitch) => sys::cuMemsetD2D32Async(p, pitch, op.value, 1, op.count, s),
            }
        };
        check(r)?;
    }
    Ok(())
}

/// Fills a buffer range with a pattern.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn fill(
    q: &CudaQueue,
    b: &CudaBuffer,
    offset: usize,
    size: usize,
    pattern: &[u8],
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    // SAFETY: the caller guarantees (the command contract) the range lies
    // inside the buffer, usable here.
    submit(q, w, Vec::new(), |s| unsafe {
        fill_at(s, b.ptr() + offset as u64, size, pattern)
    })
}

/// Maps by copying the range into fresh pinned staging memory (unless the
/// map invalidates it); [`unmap`] copies it back when the map wrote.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn map(
    q: &CudaQueue,
    b: &CudaBuffer,
    flags: MapFlags,
    offset: usize,
    size: usize,
    w: &[&CudaEvent],
) -> Result<(CudaEvent, HostPtr)> {
    let staging = Arc::new(Pinned::alloc(&q.dev, size)?);
    let host = staging.host_ptr();
    let read_back = !flags.contains(MapFlags::WRITE_INVALIDATE);
    let ev = submit(q, w, Vec::new(), |s| {
        if read_back {
            // SAFETY: staging holds `size` bytes and lives in the mapping; the
            // caller guarantees (the command contract) the range lies inside
            // the buffer.
            check(unsafe { sys::cuMemcpyDtoHAsync_v2(host.as_ptr().cast(), b.ptr() + offset as u64, size, s) })
        } else {
            Ok(())
        }
    })?;
    b.maps
        .lock()
        .push((host.as_ptr() as usize, Mapping { staging, offset, flags }));
    Ok((ev, host))
}

/// Copies a mapping back (where the map allowed writes) and releases it.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn unmap(q: &CudaQueue, b: &CudaBuffer, mapped: HostPtr, w: &[&CudaEvent]) -> Result<CudaEvent> {
    let key = mapped.as_ptr() as usize;
    let m = {
        let mut maps = b.maps.lock();
        let i = maps
            .iter()
            .position(|(k, _)| *k == key)
            .expect("the caller guarantees a live mapping of this buffer (enqueue_unmap's contract)");
        maps.swap_remove(i).1
    };
    let write_back = m.flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE);
    let staging = m.staging.clone();
    let keep: Vec<Arc<dyn Any + Send + Sync>> = vec![m.staging];
    submit(q, w, keep, |s| {
        if write_back {
            // SAFETY: the staging memory is kept alive by the event until the
            // copy completed.
            check(unsafe {
                sys::cuMemcpyHtoDAsync_v2(b.ptr() + m.offset as u64, staging.ptr.cast_const(), staging.len, s)
            })
        } else {
            Ok(())
        }
    })
}

fn mem_addr(m: MemArg<'_, CudaAdapter>) -> u64 {
    match m {
        MemArg::Usm(u) => u.ptr.0,
        MemArg::Host(h) => h.as_ptr() as u64,
    }
}

/// USM copies use `cuMemcpyAsync`: with unified addressing the driver
/// infers each side's kind (device, pinned or pageable host, managed).
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn usm_copy(
    q: &CudaQueue,
    dst: MemArg<'_, CudaAdapter>,
    src: MemArg<'_, CudaAdapter>,
    size: usize,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    let (d, s_) = (mem_addr(dst), mem_addr(src));
    submit(q, w, Vec::new(), |s| {
        // SAFETY: the caller guarantees (the command contract) both sides hold
        // `size` bytes (USM allocations usable for a copy here, or host spans
        // valid by promise) and do not overlap.
        check(unsafe { sys::cuMemcpyAsync(d, s_, size, s) })
    })
}

/// Fills USM memory with a pattern.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn usm_fill(
    q: &CudaQueue,
    ptr: UsmRef<'_, CudaAdapter>,
    size: usize,
    pattern: &[u8],
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    // SAFETY: the caller guarantees (the command contract) `size` bytes at
    // `ptr` lie in one allocation usable here.
    submit(q, w, Vec::new(), |s| unsafe { fill_at(s, ptr.ptr.0, size, pattern) })
}

/// Prefetches managed memory to the queue's device; other USM kinds already
/// live where they live, so the command only orders the queue.
///
/// # Safety
///
/// The command contract of [`ur_api::Adapter`] (see its `enqueue_*` method
/// of the same name).
pub(crate) unsafe fn usm_prefetch(
    q: &CudaQueue,
    ptr: UsmRef<'_, CudaAdapter>,
    size: usize,
    w: &[&CudaEvent],
) -> Result<CudaEvent> {
    let managed = ptr.alloc.is_managed();
    submit(q, w, Vec::new(), |s| {
        if managed {
            // SAFETY: the caller guarantees (the command contract) the range
            // lies in this allocation, managed memory.
            check(unsafe { sys::cuMemPrefetchAsync(ptr.ptr.0, size, q.dev.dev, s) })
        } else {
            Ok(())
        }
    })
}

/// Advice applies to managed memory (`cuMemAdvise`); for device and host
/// USM it is accepted and has no effect, as advice is only a hint.
///
/// # Safety
///
/// The contract of [`ur_api::Adapter::usm_advise`].
pub(crate) unsafe fn usm_advise(
    q: &CudaQueue,
    ptr: UsmRef<'_, CudaAdapter>,
    size: usize,
    advice: ur_api::UsmAdvice,
) -> Result<()> {
    if !ptr.alloc.is_managed() {
        return Ok(());
    }
    q.dev.bind()?;
    // SAFETY: the caller guarantees (usm_advise's contract) the range lies in
    // this allocation, managed memory.
    unsafe { memory::advise(&q.dev, ptr.ptr.0, size, advice) }
}

pub(crate) fn barrier(q: &CudaQueue, w: &[&CudaEvent]) -> Result<CudaEvent> {
    submit(q, w, Vec::new(), |_| Ok(()))
}
