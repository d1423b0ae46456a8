//! Enqueue entry points: buffer reads, writes, copies, fills, rects and
//! maps; USM copies, fills, prefetches and advice; waits and barriers.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`], and UR's command contract: host memory named
//! by a command (`pDst`, `pSrc`, patterns) is valid for the bytes the
//! command touches until its event completes (for a blocking command,
//! until the call returns), and nothing else accesses it meanwhile.
//! Handles are looked up, never read; USM pointers are resolved against
//! the runtime's allocation books.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, LazyLock};

use parking_lot::Mutex;
use ur_api::{HostPtr, MapFlags, MemRef, RectCopy, RectSide, UsmAdvice, UsmPtr};

use crate::conv::CapiError;
use crate::handles::{get, get2};
use crate::info::entry;
use crate::managed::{MemArg, Prepared};
use crate::objects::{Mem, Queue};
use crate::queue::{deps, done};
use crate::state::state;
use crate::sys::*;
use ur_memory_manager::{Access, Acquired};

/// Live mappings: mapped address to its length (`urEnqueueMemUnmap` names
/// only the address).
static MAPS: LazyLock<Mutex<HashMap<usize, usize>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// Mappings of managed buffers: mapped address to the runtime buffer
/// mapped and the access held until the unmap ([`crate::managed`]).
static MANAGED_MAPS: LazyLock<Mutex<HashMap<usize, (ur_api::BufferId, Acquired)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn span(offset: usize, size: usize) -> std::ops::Range<usize> {
    offset..offset.saturating_add(size)
}

fn queue(q: ur_queue_handle_t) -> Result<Queue, CapiError> {
    get::<Queue, _>(q)
}

fn mem(m: ur_mem_handle_t) -> Result<MemArg, CapiError> {
    MemArg::of(m)
}

/// A command's queue and buffer, in one lookup.
fn queue_mem(q: ur_queue_handle_t, m: ur_mem_handle_t) -> Result<(Queue, Arc<Mem>), CapiError> {
    get2::<Queue, Arc<Mem>, _, _>(q, m)
}

/// The shape of the buffer commands: the queue and the command's memory
/// objects (`mems`, in that order of checks), its wait list (events of
/// another context waited for on the host), then `body`, which checks the
/// rest, makes its operands current through the [`Prepared`] and
/// enqueues; its event is handed back ([`done`]), waited for first when
/// `blocking`, after the operands' accesses are handed back to their
/// managers.
///
/// # Safety
///
/// The module's command contract for the wait list and `ev`.
unsafe fn buffer_command<M>(
    qh: ur_queue_handle_t,
    mems: impl FnOnce() -> Result<M, CapiError>,
    (n, wl): (u32, *const ur_event_handle_t),
    (command, blocking, ev): (ur_command_t, bool, *mut ur_event_handle_t),
    body: impl FnOnce(&Queue, M, &mut Prepared) -> Result<ur_api::EventId, CapiError>,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        let m = mems()?;
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let mut p = Prepared::new(w);
        let id = body(&q, m, &mut p)?;
        p.finish(id);
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, command, blocking, ev) }
    })
}

/// Host memory of a command.
///
/// # Safety
///
/// The module's command contract for `p` and `len`.
unsafe fn host(p: *const c_void, len: usize) -> Result<HostPtr, CapiError> {
    if p.is_null() {
        return Err(CapiError::NullPointer);
    }
    // SAFETY: forwarded command contract.
    Ok(unsafe { HostPtr::new(p.cast_mut().cast(), len) })
}

/// A USM allocation of the queue's context, or plain host memory.
///
/// # Safety
///
/// When `p` is not a USM allocation, the command contract for host memory.
unsafe fn mem_ref(q: &Queue, p: *const c_void, len: usize) -> Result<MemRef, CapiError> {
    if state().rt.usm_pointer_info(q.context.1, UsmPtr(p as u64)).is_ok() {
        return Ok(MemRef::Usm(UsmPtr(p as u64)));
    }
    // SAFETY: forwarded command contract.
    Ok(MemRef::Host(unsafe { host(p, len) }?))
}

/// The longest pattern a backend fill takes (`clEnqueueFillBuffer`'s
/// limit, kept by the runtime's checks): longer patterns are written as
/// replicated host data ([`fill_by_writes`]).
const BACKEND_PATTERN_MAX: usize = 128;

/// The most host memory one replicated-pattern fill holds: a longer fill
/// writes the same piece again at each step.
const FILL_PIECE: usize = 1 << 20;

/// A fill's sizes as UR has them (`INVALID_SIZE` otherwise): the pattern
/// is a power of two (UR sets no upper limit), the size is non-zero, and
/// size and offset are multiples of the pattern.
fn fill_sizes(pattern_size: usize, offset: usize, size: usize) -> Result<(), CapiError> {
    if !pattern_size.is_power_of_two() || size == 0 || (size | offset) & (pattern_size - 1) != 0 {
        return Err(CapiError::InvalidSize);
    }
    Ok(())
}

/// A USM fill's sizes as UR has them (`INVALID_SIZE` otherwise): unlike a
/// buffer fill, any pattern length, as long as the size is a non-zero
/// multiple of it (UR's own conformance suite fills with a 10-byte pattern).
fn usm_fill_sizes(pattern_size: usize, size: usize) -> Result<(), CapiError> {
    if pattern_size == 0 || size == 0 || pattern_size > size || size % pattern_size != 0 {
        return Err(CapiError::InvalidSize);
    }
    Ok(())
}

/// Whether a backend fill takes the pattern: a power of two of at most
/// [`BACKEND_PATTERN_MAX`] bytes (`clEnqueueFillBuffer`'s and the USM fill
/// extension's rule); other patterns are written as replicated host data.
fn backend_fills(pattern_size: usize) -> bool {
    pattern_size.is_power_of_two() && pattern_size <= BACKEND_PATTERN_MAX
}

/// A fill with a pattern longer than any backend fill takes: `size` bytes
/// of the pattern repeated, written in pieces of at most [`FILL_PIECE`]
/// bytes by `write(start, piece, wait)` (a write of the piece at byte
/// `start` of the destination), in order on `q` (queues are in order: the
/// first piece waits for `wait`, each later one follows it). The host
/// memory lives until the last piece is complete ([`crate::completion`]).
/// Returns the last piece's event.
fn fill_by_writes(
    q: &Queue,
    pattern: &[u8],
    size: usize,
    wait: &[ur_api::EventId],
    mut write: impl FnMut(usize, HostPtr, &[ur_api::EventId]) -> Result<ur_api::EventId, ur_api::Error>,
) -> Result<ur_api::EventId, CapiError> {
    let rt = &state().rt;
    // Whole patterns per piece, so each piece starts at a pattern boundary
    // of the destination (the fill's size is a multiple of the pattern).
    let piece_len = size.min((FILL_PIECE / pattern.len()).max(1) * pattern.len());
    let piece: Box<[u8]> = pattern.iter().copied().cycle().take(piece_len).collect();
    let mut last: Option<ur_api::EventId> = None;
    let mut start = 0;
    let mut failed = None;
    while start < size {
        let len = piece_len.min(size - start);
        // SAFETY: `piece` holds `piece_len >= len` bytes and is only read;
        // it is kept alive until the last write is complete (below).
        let host = unsafe { HostPtr::new(piece.as_ptr().cast_mut(), len) };
        let w = if last.is_none() { wait } else { &[] };
        match write(start, host, w) {
            Ok(id) => {
                if let Some(prev) = last.replace(id) {
                    let _ = rt.release_event(prev);
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
        start += len;
    }
    let Some(id) = last else {
        return Err(failed.map_or(CapiError::InvalidSize, CapiError::Api));
    };
    // The host piece outlives the writes that read it.
    match rt.enqueue_barrier(q.id, &[id]) {
        Ok(b) => crate::completion::after(
            Some(b),
            Box::new(move || {
                drop(piece);
                let _ = state().rt.release_event(b);
            }),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "no barrier after a replicated fill: waiting on the host");
            let _ = rt.wait(&[id]);
        }
    }
    match failed {
        None => Ok(id),
        Some(e) => {
            let _ = rt.release_event(id);
            Err(e.into())
        }
    }
}

/// `urEnqueueMemBufferRead`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferRead(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    blocking: bool,
    offset: usize,
    size: usize,
    dst: *mut c_void,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let command = (UR_COMMAND_MEM_BUFFER_READ, blocking, ev);
    let body = |q: &Queue, b: MemArg, p: &mut Prepared| {
        // SAFETY: module contract.
        let d = unsafe { host(dst, size) }?;
        if let Some(m) = b.managed() {
            // SAFETY: `dst` holds `size` bytes (module contract; `host` checked it).
            if let Some(id) = unsafe { crate::managed::read_where_current(q, m, offset, dst.cast(), size, &p.wait)? } {
                return Ok(id);
            }
        }
        let (bid, base) = p.arg(q, &b, Access::Read, span(offset, size))?;
        Ok(state().rt.enqueue_read(q.id, bid, base + offset, d, &p.wait)?)
    };
    // SAFETY: module contract.
    unsafe { buffer_command(qh, || mem(b), (n, wl), command, body) }
}

/// `urEnqueueMemBufferWrite`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferWrite(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    blocking: bool,
    offset: usize,
    size: usize,
    src: *const c_void,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let command = (UR_COMMAND_MEM_BUFFER_WRITE, blocking, ev);
    let body = |q: &Queue, b: MemArg, p: &mut Prepared| {
        // SAFETY: module contract.
        let s = unsafe { host(src, size) }?;
        let (bid, base) = p.arg(q, &b, Access::Write, span(offset, size))?;
        Ok(state().rt.enqueue_write(q.id, bid, base + offset, s, &p.wait)?)
    };
    // SAFETY: module contract.
    unsafe { buffer_command(qh, || mem(b), (n, wl), command, body) }
}

/// `urEnqueueMemBufferCopy`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferCopy(
    qh: ur_queue_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let body = |q: &Queue, (s, d): (MemArg, MemArg), p: &mut Prepared| {
        let (sid, sbase) = p.arg(q, &s, Access::Read, span(src_offset, size))?;
        let (did, dbase) = p.arg(q, &d, Access::Write, span(dst_offset, size))?;
        let (so, doff) = (sbase + src_offset, dbase + dst_offset);
        Ok(state().rt.enqueue_copy(q.id, sid, so, did, doff, size, &p.wait)?)
    };
    // SAFETY: module contract.
    unsafe {
        buffer_command(
            qh,
            || Ok((mem(src)?, mem(dst)?)),
            (n, wl),
            (UR_COMMAND_MEM_BUFFER_COPY, false, ev),
            body,
        )
    }
}

/// `urEnqueueMemBufferFill`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferFill(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    pattern: *const c_void,
    pattern_size: usize,
    offset: usize,
    size: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let body = |q: &Queue, b: MemArg, p: &mut Prepared| {
        if pattern.is_null() {
            return Err(CapiError::NullPointer);
        }
        fill_sizes(pattern_size, offset, size)?;
        if offset.checked_add(size).is_none_or(|end| end > b.size()) {
            return Err(CapiError::InvalidSize);
        }
        // SAFETY: the pattern is readable for `pattern_size` bytes during the call (module contract).
        let pat = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        let (bid, base) = p.arg(q, &b, Access::Write, span(offset, size))?;
        let rt = &state().rt;
        Ok(if pattern_size <= BACKEND_PATTERN_MAX {
            rt.enqueue_fill(q.id, bid, base + offset, size, pat, &p.wait)?
        } else {
            fill_by_writes(q, pat, size, &p.wait, |start, host, w| {
                rt.enqueue_write(q.id, bid, base + offset + start, host, w)
            })?
        })
    };
    // SAFETY: module contract.
    unsafe { buffer_command(qh, || mem(b), (n, wl), (UR_COMMAND_MEM_BUFFER_FILL, false, ev), body) }
}

fn side(o: ur_rect_offset_t, row: usize, slice: usize) -> RectSide {
    RectSide::new([o.x as usize, o.y as usize, o.z as usize], row, slice)
}

/// A rect copy, and the host span its host side covers.
fn rect(
    buf: ur_rect_offset_t,
    host_o: ur_rect_offset_t,
    r: ur_rect_region_t,
    pitches: [usize; 4],
    buffer_is_src: bool,
) -> Result<(RectCopy, usize), CapiError> {
    let extent = [r.width as usize, r.height as usize, r.depth as usize];
    if extent.contains(&0) {
        return Err(CapiError::InvalidSize);
    }
    let [brow, bslice, hrow, hslice] = pitches;
    let hrow = if hrow == 0 { extent[0] } else { hrow };
    let hslice = if hslice == 0 { hrow * extent[1] } else { hslice };
    let hs = side(host_o, hrow, hslice);
    let bs = side(buf, brow, bslice);
    let span = hs.end(extent);
    let (src, dst) = if buffer_is_src { (bs, hs) } else { (hs, bs) };
    Ok((RectCopy { src, dst, extent }, span))
}

/// Which way a rectangular transfer between a buffer and host memory goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Buffer -> host (`urEnqueueMemBufferReadRect`).
    Read,
    /// Host -> buffer (`urEnqueueMemBufferWriteRect`).
    Write,
}

/// The body of `urEnqueueMemBuffer{Read,Write}Rect`: `boxes` is (buffer
/// origin, host origin, region, [buffer row, buffer slice, host row, host
/// slice] pitches), `wait` the wait list's count and pointer.
///
/// # Safety
///
/// See the module docs (`mem` is the host memory the box lies in).
#[allow(clippy::too_many_arguments)] // reason: the C entry points' own arguments, grouped where they travel together.
unsafe fn rect_transfer(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    dir: Direction,
    blocking: bool,
    boxes: (ur_rect_offset_t, ur_rect_offset_t, ur_rect_region_t, [usize; 4]),
    mem: *mut c_void,
    (n, wl): (u32, *const ur_event_handle_t),
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let read = dir == Direction::Read;
    let command = if read {
        UR_COMMAND_MEM_BUFFER_READ_RECT
    } else {
        UR_COMMAND_MEM_BUFFER_WRITE_RECT
    };
    let body = |q: &Queue, b: MemArg, p: &mut Prepared| {
        let (buffer_origin, host_origin, region, pitches) = boxes;
        let (mut r, span) = rect(buffer_origin, host_origin, region, pitches, read)?;
        // SAFETY: module contract: the host box lies inside `mem`.
        let h = unsafe { host(mem, span) }?;
        let access = if read { Access::Read } else { Access::Write };
        let (bid, base) = p.arg(q, &b, access, 0..b.size())?;
        let rt = &state().rt;
        Ok(if read {
            r.src.origin[0] += base;
            rt.enqueue_read_rect(q.id, bid, &r, h, &p.wait)?
        } else {
            r.dst.origin[0] += base;
            rt.enqueue_write_rect(q.id, bid, &r, h, &p.wait)?
        })
    };
    // SAFETY: module contract.
    unsafe { buffer_command(qh, || self::mem(b), (n, wl), (command, blocking, ev), body) }
}

/// `urEnqueueMemBufferReadRect`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferReadRect(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    blocking: bool,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    dst: *mut c_void,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let pitches = [buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch];
    let boxes = (buffer_origin, host_origin, region, pitches);
    // SAFETY: the caller's contract is this function's.
    unsafe { rect_transfer(qh, b, Direction::Read, blocking, boxes, dst, (n, wl), ev) }
}

/// `urEnqueueMemBufferWriteRect`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferWriteRect(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    blocking: bool,
    buffer_origin: ur_rect_offset_t,
    host_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    buffer_row_pitch: usize,
    buffer_slice_pitch: usize,
    host_row_pitch: usize,
    host_slice_pitch: usize,
    src: *mut c_void,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let pitches = [buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch];
    let boxes = (buffer_origin, host_origin, region, pitches);
    // SAFETY: the caller's contract is this function's.
    unsafe { rect_transfer(qh, b, Direction::Write, blocking, boxes, src, (n, wl), ev) }
}

/// `urEnqueueMemBufferCopyRect`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferCopyRect(
    qh: ur_queue_handle_t,
    src: ur_mem_handle_t,
    dst: ur_mem_handle_t,
    src_origin: ur_rect_offset_t,
    dst_origin: ur_rect_offset_t,
    region: ur_rect_region_t,
    src_row_pitch: usize,
    src_slice_pitch: usize,
    dst_row_pitch: usize,
    dst_slice_pitch: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    let body = |q: &Queue, (s, d): (MemArg, MemArg), p: &mut Prepared| {
        let extent = [region.width as usize, region.height as usize, region.depth as usize];
        let mut r = RectCopy {
            src: side(src_origin, src_row_pitch, src_slice_pitch),
            dst: side(dst_origin, dst_row_pitch, dst_slice_pitch),
            extent,
        };
        let (sid, sbase) = p.arg(q, &s, Access::Read, 0..s.size())?;
        let (did, dbase) = p.arg(q, &d, Access::Write, 0..d.size())?;
        r.src.origin[0] += sbase;
        r.dst.origin[0] += dbase;
        Ok(state().rt.enqueue_copy_rect(q.id, sid, did, &r, &p.wait)?)
    };
    // SAFETY: module contract.
    unsafe {
        buffer_command(
            qh,
            || Ok((mem(src)?, mem(dst)?)),
            (n, wl),
            (UR_COMMAND_MEM_BUFFER_COPY_RECT, false, ev),
            body,
        )
    }
}

/// `urEnqueueMemBufferMap`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemBufferMap(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    blocking: bool,
    flags: ur_map_flags_t,
    offset: usize,
    size: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
    out: *mut *mut c_void,
) -> ur_result_t {
    entry(|| {
        let (q, b) = queue_mem(qh, b)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        let mut f = MapFlags::empty();
        if flags & UR_MAP_FLAG_READ != 0 {
            f |= MapFlags::READ;
        }
        if flags & UR_MAP_FLAG_WRITE != 0 {
            f |= MapFlags::WRITE;
        }
        if flags & UR_MAP_FLAG_WRITE_INVALIDATE_REGION != 0 {
            f |= MapFlags::WRITE_INVALIDATE;
        }
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let access = if f.contains(MapFlags::WRITE_INVALIDATE) {
            Access::DiscardWrite
        } else if f.contains(MapFlags::WRITE) {
            Access::ReadWrite
        } else {
            Access::Read
        };
        let mut prep = Prepared::new(w);
        let (bid, base) = prep.operand(&q, &b, access, span(offset, size))?;
        let (id, p) = state().rt.enqueue_map(q.id, bid, f, base + offset, size, &prep.wait)?;
        MAPS.lock().insert(p.as_ptr() as usize, p.len());
        if let Some((_, g)) = prep.take_guard() {
            MANAGED_MAPS.lock().insert(p.as_ptr() as usize, (bid, g));
        }
        prep.finish(id);
        // SAFETY: checked non-null; writable by the module contract.
        unsafe { out.write(p.as_ptr().cast()) };
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_MEM_BUFFER_MAP, blocking, ev) }
    })
}

/// `urEnqueueMemUnmap`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueMemUnmap(
    qh: ur_queue_handle_t,
    b: ur_mem_handle_t,
    mapped: *mut c_void,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let (q, b) = queue_mem(qh, b)?;
        crate::managed::same_context(&q, &b)?;
        let len = MAPS
            .lock()
            .get(&(mapped as usize))
            .copied()
            .ok_or(CapiError::InvalidValue)?;
        // SAFETY: the address and length are a live mapping the runtime made.
        let p = unsafe { HostPtr::new(mapped.cast(), len) };
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let managed = MANAGED_MAPS.lock().remove(&(mapped as usize));
        let bid = match (&b.backing, &managed) {
            (_, Some((bid, _))) => *bid,
            (crate::managed::Backing::Direct(id), None) => *id,
            (crate::managed::Backing::Managed { .. }, None) => return Err(CapiError::InvalidValue),
        };
        let id = match state().rt.enqueue_unmap(q.id, bid, p, &w) {
            Ok(id) => id,
            Err(e) => {
                if let Some(m) = managed {
                    MANAGED_MAPS.lock().insert(mapped as usize, m);
                }
                return Err(e.into());
            }
        };
        if let Some((_, g)) = managed {
            g.release_after(id);
        }
        MAPS.lock().remove(&(mapped as usize));
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_MEM_UNMAP, false, ev) }
    })
}

/// `urEnqueueUSMMemcpy`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueUSMMemcpy(
    qh: ur_queue_handle_t,
    blocking: bool,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        if dst.is_null() || src.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: module contract.
        let (d, s, w) = unsafe { (mem_ref(&q, dst, size)?, mem_ref(&q, src, size)?, deps(&q, n, wl)?) };
        let id = state().rt.enqueue_usm_copy(q.id, d, s, size, &w)?;
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_USM_MEMCPY, blocking, ev) }
    })
}

/// `urEnqueueUSMFill`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueUSMFill(
    qh: ur_queue_handle_t,
    ptr: *mut c_void,
    pattern_size: usize,
    pattern: *const c_void,
    size: usize,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        if ptr.is_null() || pattern.is_null() {
            return Err(CapiError::NullPointer);
        }
        usm_fill_sizes(pattern_size, size)?;
        // SAFETY: the pattern is readable for `pattern_size` bytes during the call (module contract).
        let pat = unsafe { std::slice::from_raw_parts(pattern.cast::<u8>(), pattern_size) };
        let rt = &state().rt;
        let at = UsmPtr(ptr as u64);
        let backend = backend_fills(pattern_size);
        if !backend {
            // Every piece must land in the allocation: checked up front, so
            // no piece is enqueued for a fill that cannot complete.
            let info = rt
                .usm_pointer_info(q.context.1, at)
                .map_err(|_| CapiError::InvalidValue)?;
            let room = info.size - (at.0 - info.base.0) as usize;
            if size > room {
                return Err(CapiError::InvalidSize);
            }
        }
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let id = if backend {
            rt.enqueue_usm_fill(q.id, at, size, pat, &w)?
        } else {
            fill_by_writes(&q, pat, size, &w, |start, host, w| {
                let dst = MemRef::Usm(UsmPtr(at.0 + start as u64));
                rt.enqueue_usm_copy(q.id, dst, MemRef::Host(host), host.len(), w)
            })?
        };
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_USM_FILL, false, ev) }
    })
}

/// `urEnqueueUSMPrefetch`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueUSMPrefetch(
    qh: ur_queue_handle_t,
    ptr: *const c_void,
    size: usize,
    _flags: ur_usm_migration_flags_t,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let id = state().rt.enqueue_usm_prefetch(q.id, UsmPtr(ptr as u64), size, &w)?;
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_USM_PREFETCH, false, ev) }
    })
}

/// `urEnqueueUSMAdvise`: the advice, then a barrier for the event.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueUSMAdvise(
    qh: ur_queue_handle_t,
    ptr: *const c_void,
    size: usize,
    advice: ur_usm_advice_flags_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        let mut a = UsmAdvice::empty();
        if advice & UR_USM_ADVICE_FLAG_SET_READ_MOSTLY != 0 {
            a |= UsmAdvice::READ_MOSTLY;
        }
        if advice & UR_USM_ADVICE_FLAG_SET_PREFERRED_LOCATION != 0 {
            a |= UsmAdvice::PREFER_DEVICE;
        }
        if advice & UR_USM_ADVICE_FLAG_SET_PREFERRED_LOCATION_HOST != 0 {
            a |= UsmAdvice::PREFER_HOST;
        }
        if advice & UR_USM_ADVICE_FLAG_SET_ACCESSED_BY_HOST != 0 {
            a |= UsmAdvice::ACCESSED_BY_HOST;
        }
        let rt = &state().rt;
        rt.usm_advise(q.id, UsmPtr(ptr as u64), size, a)?;
        let id = rt.enqueue_barrier(q.id, &[])?;
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_USM_ADVISE, false, ev) }
    })
}

/// `urEnqueueEventsWait`: a barrier (queues are in order).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueEventsWait(
    qh: ur_queue_handle_t,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let q = queue(qh)?;
        // SAFETY: module contract.
        let w = unsafe { deps(&q, n, wl) }?;
        let id = state().rt.enqueue_barrier(q.id, &w)?;
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_EVENTS_WAIT, false, ev) }
    })
}

/// `urEnqueueEventsWaitWithBarrier`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueEventsWaitWithBarrier(
    qh: ur_queue_handle_t,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    // SAFETY: same contract.
    unsafe { urEnqueueEventsWait(qh, n, wl, ev) }
}

/// `urEnqueueEventsWaitWithBarrierExt`: the properties (low-power events)
/// change nothing here.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueEventsWaitWithBarrierExt(
    qh: ur_queue_handle_t,
    _props: *const ur_exp_enqueue_ext_properties_t,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    // SAFETY: same contract.
    unsafe { urEnqueueEventsWait(qh, n, wl, ev) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_sizes_follow_ur() {
        assert_eq!(fill_sizes(256, 512, 1024), Ok(()));
        assert_eq!(fill_sizes(1 << 12, 0, 1 << 12), Ok(()));
        assert_eq!(fill_sizes(1, 3, 5), Ok(()));
        for (p, o, s) in [(3, 0, 12), (0, 0, 4), (8, 0, 12), (8, 4, 16), (8, 0, 0), (16, 0, 8)] {
            assert_eq!(fill_sizes(p, o, s), Err(CapiError::InvalidSize), "{p} {o} {s}");
        }
    }

    #[test]
    fn usm_fills_take_any_pattern_that_divides_the_size() {
        for (p, s) in [(10, 1000), (3, 12), (256, 512), (1, 1), (7, 7)] {
            assert_eq!(usm_fill_sizes(p, s), Ok(()), "{p} {s}");
        }
        for (p, s) in [(0, 16), (8, 12), (16, 8), (8, 0), (10, 1005)] {
            assert_eq!(usm_fill_sizes(p, s), Err(CapiError::InvalidSize), "{p} {s}");
        }
        assert!(backend_fills(128) && backend_fills(1));
        assert!(!backend_fills(10) && !backend_fills(256));
    }
}
