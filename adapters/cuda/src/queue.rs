//! Queues (CUDA streams), events, and every enqueued memory operation.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use ur_api::{Error, EventStatus, HostPtr, MapFlags, MemArg, ProfilingInfo, QueueProps, RectCopy, Result, UsmRef};

use crate::conv;
use crate::device::{CudaContext, CudaDevice, DevInner};
use crate::driver::{self, Event, Mem2d, Stream};
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
    /// Always `Some` but while dropping (when it goes back to the pool).
    ev: Option<Event>,
    pool: Option<Arc<DevInner>>,
}

impl RawEvent {
    /// A new event with timing (profiling) or a pooled one without. The
    /// device's context must be current.
    fn new(dev: &Arc<DevInner>, timing: bool) -> Result<RawEvent> {
        if !timing {
            if let Some(ev) = dev.event_pool.lock().pop() {
                return Ok(RawEvent {
                    ev: Some(ev),
                    pool: Some(dev.clone()),
                });
            }
        }
        Ok(RawEvent {
            ev: Some(Event::new(timing)?),
            pool: (!timing).then(|| dev.clone()),
        })
    }

    fn ev(&self) -> &Event {
        self.ev.as_ref().expect("a RawEvent holds its event until dropped")
    }

    fn record(&self, stream: &Stream) -> Result<()> {
        self.ev().record(stream)
    }

    fn elapsed_ms(&self, later: &RawEvent) -> Result<f32> {
        self.ev().elapsed_ms(later.ev())
    }
}

impl Drop for RawEvent {
    fn drop(&mut self) {
        if let (Some(dev), Some(ev)) = (&self.pool, self.ev.take()) {
            let mut pool = dev.event_pool.lock();
            if pool.len() < EVENT_POOL_MAX {
                // Re-recording a pending event later is allowed: waits
                // already enqueued keep the state they captured.
                pool.push(ev);
            }
        }
        // Otherwise the event (the field, or `ev` past the pool's limit) is
        // destroyed; destroying a pending event is allowed.
    }
}

/// The reference point of a profiling queue's timestamps.
#[derive(Debug)]
pub(crate) struct ProfBase {
    origin: RawEvent,
    base_ns: u64,
}

/// An in-order queue: a non-blocking stream on one device's primary context.
/// Its fields drop in order: the stream (in the context `Drop::drop`
/// bound), then the profiling base, then the device.
#[derive(Debug)]
pub struct CudaQueue {
    pub(crate) stream: Stream,
    prof: Option<Arc<ProfBase>>,
    pub(crate) dev: Arc<DevInner>,
}

impl Drop for CudaQueue {
    fn drop(&mut self) {
        if let Err(e) = self.dev.bind() {
            tracing::warn!(error = %e, "binding a context to destroy a stream failed");
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
            // Waiting makes sure the kept memory is no longer used when it
            // is dropped after this.
            let waited = self.dev.bind().and_then(|()| self.end.ev().synchronize());
            if let Err(e) = waited {
                tracing::warn!(error = %e, "waiting for a command before freeing its staging failed");
            }
        }
    }
}

/// Enqueues `op` on the queue after the wait list, bracketed by events.
pub(crate) fn submit(
    q: &CudaQueue,
    wait: &[&CudaEvent],
    keep: Vec<Arc<dyn Any + Send + Sync>>,
    op: impl FnOnce(&Stream) -> Result<()>,
) -> Result<CudaEvent> {
    q.dev.bind()?;
    for e in wait {
        // Events of other devices are allowed.
        q.stream.wait_event(e.end.ev())?;
    }
    let queued_ns = now_ns();
    let start = match &q.prof {
        Some(p) => {
            let s = RawEvent::new(&q.dev, true)?;
            s.record(&q.stream)?;
            Some((s, p.clone()))
        }
        None => None,
    };
    op(&q.stream)?;
    let end = RawEvent::new(&q.dev, q.prof.is_some())?;
    end.record(&q.stream)?;
    Ok(CudaEvent {
        end,
        start,
        queued_ns,
        keep,
        dev: q.dev.clone(),
    })
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
        unsafe { driver::memcpy_dtoh_async(dst.as_ptr().cast(), b.ptr() + offset as u64, dst.len(), s) }
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
        unsafe { driver::memcpy_htod_async(b.ptr() + offset as u64, src.as_ptr().cast(), src.len(), s) }
    })
}

/// A device-to-device copy; across devices with `cuMemcpyPeerAsync`.
///
/// # Safety
///
/// `size` bytes at `src` (memory of `src_dev`) and at `dst` (of `dst_dev`)
/// are live device memory that does not overlap.
unsafe fn copy_d2d(s: &Stream, dst: u64, dst_dev: &DevInner, src: u64, src_dev: &DevInner, size: usize) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the contexts are retained.
    unsafe {
        if dst_dev.dev == src_dev.dev {
            driver::memcpy_dtod_async(dst, src, size, s)
        } else {
            driver::memcpy_peer_async(dst, &dst_dev.ctx, src, &src_dev.ctx, size, s)
        }
    }
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
unsafe fn copy_any(s: &Stream, dst: Side<'_>, src: Side<'_>, len: usize) -> Result<()> {
    match (dst, src) {
        // SAFETY: the caller guarantees both ranges.
        (Side::Device(d, dd), Side::Device(p, sd)) => unsafe { copy_d2d(s, d, dd, p, sd, len) },
        // SAFETY: the caller guarantees both ranges; host spans valid by promise.
        (Side::Device(d, _), Side::Host(h)) => unsafe { driver::memcpy_htod_async(d, h.cast(), len, s) },
        // SAFETY: as above.
        (Side::Host(h), Side::Device(p, _)) => unsafe { driver::memcpy_dtoh_async(h.cast(), p, len, s) },
        (Side::Host(d), Side::Host(p)) => {
            // SAFETY: the caller guarantees both spans, valid by promise and
            // not overlapping.
            unsafe { std::ptr::copy_nonoverlapping(p, d, len) };
            Ok(())
        }
    }
}

/// One side of a 2-D copy, as the driver layer takes it.
fn mem_2d(side: Side<'_>) -> Mem2d {
    match side {
        Side::Device(p, _) => Mem2d::Device(p),
        Side::Host(h) => Mem2d::Host(h),
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
    s: &Stream,
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
        // SAFETY: the caller guarantees both boxes lie inside their sides;
        // both pitches are within the device's limit (checked above).
        unsafe {
            driver::memcpy_2d_async(
                mem_2d(dst.at(dof)),
                rect.dst.row_pitch,
                mem_2d(src.at(so)),
                rect.src.row_pitch,
                w,
                h,
                s,
            )
        }?;
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
unsafe fn fill_at(s: &Stream, addr: u64, size: usize, pattern: &[u8]) -> Result<()> {
    for op in conv::fill_plan(addr, size, pattern) {
        let p = addr + op.offset as u64;
        // SAFETY: the caller guarantees the range; every element of the plan
        // lies inside it and is aligned to its width.
        unsafe { driver::memset_async(p, op.width, op.pitch, op.value, op.count, s) }?;
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
            unsafe { driver::memcpy_dtoh_async(host.as_ptr().cast(), b.ptr() + offset as u64, size, s) }
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
            unsafe { driver::memcpy_htod_async(b.ptr() + m.offset as u64, staging.ptr().cast_const(), staging.len, s) }
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
        unsafe { driver::memcpy_async(d, s_, size, s) }
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
            unsafe { driver::mem_prefetch_async(ptr.ptr.0, size, q.dev.dev, s) }
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
/// The contract of [`ur_api::adapter::UnifiedMemory::usm_advise`].
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

impl ur_api::adapter::Commands for crate::CudaAdapter {
    fn create_queue(&self, _ctx: &CudaContext, dev: &CudaDevice, props: &QueueProps) -> Result<CudaQueue> {
        let d = dev.0.clone();
        d.bind()?;
        let mut q = CudaQueue {
            stream: Stream::new()?,
            prof: None,
            dev: d,
        };
        if props.profiling {
            let origin = RawEvent::new(&q.dev, true)?;
            origin.record(&q.stream)?;
            origin.ev().synchronize()?;
            q.prof = Some(Arc::new(ProfBase {
                origin,
                base_ns: now_ns(),
            }));
        }
        Ok(q)
    }

    fn flush(&self, _queue: &CudaQueue) -> Result<()> {
        // CUDA submits work when it is enqueued.
        Ok(())
    }

    fn finish(&self, q: &CudaQueue) -> Result<()> {
        q.dev.bind()?;
        q.stream.synchronize()
    }

    fn event_status(&self, e: &CudaEvent) -> Result<EventStatus> {
        e.dev.bind()?;
        Ok(match e.end.ev().query() {
            Ok(true) => EventStatus::Complete,
            Ok(false) => EventStatus::Submitted,
            Err(err) => EventStatus::Failed(err),
        })
    }

    /// Synchronizes every event, even after one fails (`Adapter::wait`'s
    /// promise: a failure does not end the wait for the others early), and
    /// reports the first failure. `cuEventSynchronize` itself returns only
    /// once the event has completed, or with the context's sticky error (the
    /// device is lost to this process).
    fn wait(&self, events: &[&CudaEvent]) -> Result<()> {
        ur_api::adapter::wait_each(events, |e| e.dev.bind().and_then(|()| e.end.ev().synchronize()))
    }

    fn enqueue_barrier(&self, q: &CudaQueue, w: &[&CudaEvent]) -> Result<CudaEvent> {
        barrier(q, w)
    }
}

impl ur_api::adapter::Profiling for crate::CudaAdapter {
    fn event_profiling(&self, e: &CudaEvent) -> Result<ProfilingInfo> {
        let Some((start, base)) = &e.start else {
            return Err(Error::ProfilingUnavailable(
                "the event's queue was created without profiling",
            ));
        };
        if ur_api::adapter::Commands::event_status(self, e)? != EventStatus::Complete {
            return Err(Error::ProfilingUnavailable("the command has not completed"));
        }
        let to_start = base.origin.elapsed_ms(start)?;
        let run = start.elapsed_ms(&e.end)?;
        Ok(conv::profiling(base.base_ns, e.queued_ns, to_start, run))
    }
}
