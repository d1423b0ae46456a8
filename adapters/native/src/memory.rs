//! Real host memory: buffers, sub-buffers, USM allocations and host
//! registrations.
//!
//! # Safety argument
//!
//! Memory is a [`HostMem`]: an address and a length, owned (an aligned heap
//! allocation freed on drop) or borrowed (caller memory under the
//! [`HostPtr`] promise of `USE_HOST_PTR`). It is shared through `Arc`, so a
//! sub-buffer, a USM lookup or an in-flight command keeps it alive after the
//! caller released its handle or freed its USM pointer. The memory is only
//! ever touched through raw pointers (`ptr::copy`, `ptr::write_bytes`) by
//! the commands of the queues, on their worker threads, and by host kernels
//! through [`ur_api::HostArgs`]; no Rust reference to it is kept. As with any
//! device, commands of different queues that touch the same bytes without
//! an event between them race; ordering them is the caller's job.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Error, HandleKind, HostPtr, MemRef, RectCopy, Result, UsmPtr};

use crate::device::BASE_ALIGN;
use crate::queue::Work;

/// A span of host memory the adapter may hand to commands.
#[derive(Debug)]
pub(crate) struct HostMem {
    ptr: NonNull<u8>,
    len: usize,
    /// `Some` when this adapter allocated the memory and frees it on drop.
    owned: Option<Layout>,
}

// SAFETY: HostMem is an address and a length; every access goes through raw
// pointers in commands whose ordering the queues and events provide (see the
// module docs). Owned memory is a plain heap block with no thread affinity.
unsafe impl Send for HostMem {}
// SAFETY: as above; `&HostMem` only exposes the address.
unsafe impl Sync for HostMem {}

impl HostMem {
    /// A zeroed allocation of `len` bytes aligned to `align` (a power of two).
    pub(crate) fn alloc(len: usize, align: usize) -> Result<Arc<Self>> {
        if len == 0 {
            return Err(Error::InvalidSize {
                what: "host allocation",
                size: 0,
            });
        }
        let layout = Layout::from_size_align(len, align.max(BASE_ALIGN)).map_err(|_| Error::InvalidSize {
            what: "host allocation",
            size: len,
        })?;
        // SAFETY: the layout has a non-zero size (checked above).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(Error::OutOfHostMemory)?;
        Ok(Arc::new(HostMem {
            ptr,
            len,
            owned: Some(layout),
        }))
    }

    /// Caller memory, used in place.
    ///
    /// # Safety
    ///
    /// `mem` must stay valid for as long as the returned value lives (the
    /// `USE_HOST_PTR` promise of [`HostPtr::new`]).
    pub(crate) unsafe fn borrowed(mem: HostPtr) -> Result<Arc<Self>> {
        let ptr = NonNull::new(mem.as_ptr()).ok_or_else(|| Error::invalid("null host pointer"))?;
        Ok(Arc::new(HostMem {
            ptr,
            len: mem.len(),
            owned: None,
        }))
    }

    /// The address `offset` bytes in.
    pub(crate) fn at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.len);
        // SAFETY: offset <= len, so the result is inside the span or one past it.
        unsafe { self.ptr.as_ptr().add(offset) }
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        if let Some(layout) = self.owned {
            // SAFETY: allocated in `HostMem::alloc` with exactly this layout;
            // the last Arc is gone, so no command can still use it.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
        }
    }
}

/// A buffer or sub-buffer: a window `[offset, offset + size)` of memory.
#[derive(Debug, Clone)]
pub struct NativeBuffer {
    pub(crate) mem: Arc<HostMem>,
    pub(crate) offset: usize,
    pub(crate) size: usize,
}

impl NativeBuffer {
    pub(crate) fn whole(mem: Arc<HostMem>) -> Self {
        let size = mem.len();
        NativeBuffer { mem, offset: 0, size }
    }

    /// A sub-buffer sharing this buffer's memory.
    pub(crate) fn sub(&self, offset: usize, size: usize) -> Result<Self> {
        match offset.checked_add(size) {
            Some(end) if end <= self.size && size > 0 => Ok(NativeBuffer {
                mem: self.mem.clone(),
                offset: self.offset + offset,
                size,
            }),
            _ => Err(Error::OutOfBounds {
                what: "parent buffer",
                offset,
                len: size,
                size: self.size,
            }),
        }
    }

    /// The host address of byte `offset` of this buffer.
    pub(crate) fn at(&self, offset: usize) -> *mut u8 {
        self.mem.at(self.offset + offset)
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// A raw address that may travel to a worker thread inside a command.
///
/// Closures must call [`SendPtr::get`] rather than read the field, so that
/// they capture the whole (Send) wrapper and not the raw pointer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SendPtr(pub(crate) *mut u8);

// SAFETY: the pointer is kept alive by an Arc<HostMem> (or the HostPtr
// promise) captured by the same command; see the module docs.
unsafe impl Send for SendPtr {}

impl SendPtr {
    pub(crate) fn get(self) -> *mut u8 {
        self.0
    }
}

/// One USM allocation.
#[derive(Debug)]
pub(crate) struct UsmBlock {
    pub(crate) mem: Arc<HostMem>,
    ctx: u64,
}

/// Every live USM allocation of the adapter, by base address.
///
/// Freeing removes the entry at once, but commands in flight hold the
/// block's `Arc<HostMem>` (taken when they were enqueued), so the memory is
/// returned to the allocator only when the last of them has finished: a
/// deferred free that never blocks `usm_free` and never frees memory a
/// command still uses. The table is adapter-wide, not per context, because
/// every native location is `Unified` with every other: a queue of one
/// context may use USM of another.
#[derive(Debug, Default)]
pub(crate) struct UsmTable {
    blocks: Mutex<BTreeMap<u64, UsmBlock>>,
}

impl UsmTable {
    pub(crate) fn alloc(&self, ctx: u64, size: usize, align: usize) -> Result<UsmPtr> {
        let mem = HostMem::alloc(size, align)?;
        let base = mem.at(0) as u64;
        self.blocks.lock().insert(base, UsmBlock { mem, ctx });
        Ok(UsmPtr(base))
    }

    pub(crate) fn free(&self, ctx: u64, ptr: UsmPtr) -> Result<()> {
        let mut blocks = self.blocks.lock();
        match blocks.get(&ptr.0) {
            Some(b) if b.ctx == ctx => {
                blocks.remove(&ptr.0);
                Ok(())
            }
            _ => Err(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            }),
        }
    }

    /// The allocation containing `ptr` and the offset of `ptr` in it.
    pub(crate) fn find(&self, ptr: UsmPtr) -> Result<(Arc<HostMem>, usize)> {
        let blocks = self.blocks.lock();
        let (base, block) = blocks
            .range(..=ptr.0)
            .next_back()
            .filter(|(base, b)| ptr.0 - **base < b.mem.len() as u64)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            })?;
        Ok((block.mem.clone(), (ptr.0 - base) as usize))
    }

    /// `[ptr, ptr + len)` inside one allocation: its memory (kept alive) and address.
    pub(crate) fn span(&self, ptr: UsmPtr, len: usize) -> Result<(Arc<HostMem>, SendPtr)> {
        let (mem, off) = self.find(ptr)?;
        if len > mem.len() - off {
            return Err(Error::OutOfBounds {
                what: "USM allocation",
                offset: off,
                len,
                size: mem.len(),
            });
        }
        let at = SendPtr(mem.at(off));
        Ok((mem, at))
    }
}

/// Host ranges registered with one context.
///
/// Native memory is host memory already, so registering pins nothing; the
/// adapter still keeps the books so the contract matches devices where it
/// matters (CUDA refuses overlapping registrations the same way): a range
/// overlapping a registered one is refused, and only a registered range,
/// exactly, can be unregistered.
#[derive(Debug, Default)]
pub(crate) struct Registrations {
    /// Start address -> length.
    ranges: Mutex<BTreeMap<usize, usize>>,
}

impl Registrations {
    pub(crate) fn register(&self, mem: HostPtr) -> Result<()> {
        let (start, len) = (mem.as_ptr() as usize, mem.len());
        let end = start
            .checked_add(len)
            .ok_or_else(|| Error::invalid("host range wraps around"))?;
        let mut ranges = self.ranges.lock();
        let clash = ranges.range(..end).next_back().filter(|(&s, &l)| s + l > start);
        if let Some((&s, &l)) = clash {
            return Err(Error::invalid(format!(
                "host range {start:#x}+{len} overlaps the registered range {s:#x}+{l}"
            )));
        }
        ranges.insert(start, len);
        Ok(())
    }

    pub(crate) fn unregister(&self, mem: HostPtr) -> Result<()> {
        let (start, len) = (mem.as_ptr() as usize, mem.len());
        let mut ranges = self.ranges.lock();
        match ranges.get(&start) {
            Some(&l) if l == len => {
                ranges.remove(&start);
                Ok(())
            }
            _ => Err(Error::invalid(format!(
                "host range {start:#x}+{len} was not registered (unregister exactly the registered range)"
            ))),
        }
    }
}

/// Fills `len` bytes at `dst` with `pattern` repeated (`len` a multiple of it).
///
/// # Safety
///
/// `dst` must be valid for writes of `len` bytes and not overlap `pattern`.
pub(crate) unsafe fn fill(dst: *mut u8, len: usize, pattern: &[u8]) {
    let n = pattern.len();
    if n == 1 {
        // SAFETY: dst is valid for len bytes (caller contract).
        unsafe { std::ptr::write_bytes(dst, pattern[0], len) };
        return;
    }
    let first = n.min(len);
    // SAFETY: first <= len bytes of dst are writable; pattern does not overlap dst.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), dst, first) };
    // Double the filled prefix until the range is full: O(log(len / n)) copies.
    let mut done = first;
    while done < len {
        let chunk = done.min(len - done);
        // SAFETY: [0, done) is filled and [done, done + chunk) is inside the
        // range and disjoint from [0, chunk) because chunk <= done. The
        // prefix is a whole number of patterns, so the period is preserved.
        unsafe { std::ptr::copy_nonoverlapping(dst, dst.add(done), chunk) };
        done += chunk;
    }
}

/// Live mappings: each holds its buffer's memory until it is unmapped, so
/// a mapped pointer stays valid even if the buffer is released first.
#[derive(Debug, Default)]
pub(crate) struct MapTable {
    live: Mutex<Vec<((usize, usize), Arc<HostMem>)>>,
}

impl MapTable {
    /// Maps `[offset, offset + size)` of `b`: a pointer into its memory.
    pub(crate) fn map(&self, b: &NativeBuffer, offset: usize, size: usize) -> Result<HostPtr> {
        let end = offset.checked_add(size).filter(|&e| e <= b.size);
        if end.is_none() {
            return Err(Error::OutOfBounds {
                what: "buffer",
                offset,
                len: size,
                size: b.size,
            });
        }
        let at = b.at(offset);
        self.live.lock().push(((at as usize, size), b.mem.clone()));
        // SAFETY: the range is inside the buffer's memory, which this table
        // keeps alive until the matching unmap.
        Ok(unsafe { HostPtr::new(at, size) })
    }

    /// Ends one mapping made by [`MapTable::map`].
    pub(crate) fn unmap(&self, mapped: HostPtr) -> Result<()> {
        let key = (mapped.as_ptr() as usize, mapped.len());
        let mut live = self.live.lock();
        let i = live
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| Error::invalid("pointer is not a live mapping"))?;
        // Commands in flight hold their own references; the host gives up its access here.
        drop(live.swap_remove(i));
        Ok(())
    }
}

/// A context: an identity (for USM ownership) and its host registrations.
#[derive(Debug)]
pub struct NativeContext {
    pub(crate) id: u64,
    pub(crate) registrations: Registrations,
}

impl NativeContext {
    pub(crate) fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        NativeContext {
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            registrations: Registrations::default(),
        }
    }
}

/// The memory one side of a command addresses, kept alive by the command.
///
/// Closures use [`Span::ptr`] (a method, so the whole span, keep-alive
/// included, is captured by the command).
#[derive(Debug)]
pub(crate) struct Span {
    /// Held only to keep the memory alive while the command exists.
    _keep: Option<Arc<HostMem>>,
    at: SendPtr,
}

impl Span {
    /// Byte `offset` of a buffer.
    pub(crate) fn buffer(b: &NativeBuffer, offset: usize) -> Span {
        Span {
            _keep: Some(b.mem.clone()),
            at: SendPtr(b.at(offset)),
        }
    }

    /// Caller host memory (kept valid by the [`HostPtr`] promise).
    pub(crate) fn host(h: HostPtr) -> Span {
        Span {
            _keep: None,
            at: SendPtr(h.as_ptr()),
        }
    }

    /// `[ptr, ptr + len)` of a USM allocation.
    pub(crate) fn usm(table: &UsmTable, ptr: UsmPtr, len: usize) -> Result<Span> {
        let (mem, at) = table.span(ptr, len)?;
        Ok(Span { _keep: Some(mem), at })
    }

    /// Memory named by a USM copy.
    pub(crate) fn mem_ref(table: &UsmTable, m: MemRef, len: usize) -> Result<Span> {
        match m {
            MemRef::Usm(p) => Span::usm(table, p, len),
            MemRef::Host(h) if h.len() >= len => Ok(Span::host(h)),
            MemRef::Host(h) => Err(Error::OutOfBounds {
                what: "host memory",
                offset: 0,
                len,
                size: h.len(),
            }),
        }
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.at.get()
    }
}

/// A fill pattern stored inline (at most 128 bytes), so a fill command
/// needs no allocation of its own.
#[derive(Debug, Clone, Copy)]
struct Pattern {
    bytes: [u8; 128],
    len: usize,
}

impl Pattern {
    fn new(p: &[u8]) -> Result<Self> {
        if p.is_empty() || p.len() > 128 {
            return Err(Error::InvalidSize {
                what: "fill pattern (1..=128 bytes)",
                size: p.len(),
            });
        }
        let mut bytes = [0u8; 128];
        bytes[..p.len()].copy_from_slice(p);
        Ok(Pattern { bytes, len: p.len() })
    }

    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A command copying `len` bytes from `src` to `dst`.
pub(crate) fn copy_work(dst: Span, src: Span, len: usize) -> Work {
    Box::new(move || {
        // SAFETY: both spans are alive (held by this command) and valid for
        // `len` bytes (the dyn layer's bounds checks, or Span::usm's).
        // ptr::copy tolerates overlap (a host pointer into a mapped buffer).
        unsafe { std::ptr::copy(src.ptr(), dst.ptr(), len) };
        Ok(())
    })
}

/// A command copying a box; `src` and `dst` are the starts of the objects
/// the rect's origins and pitches are relative to.
pub(crate) fn copy_rect_work(dst: Span, src: Span, rect: RectCopy) -> Work {
    Box::new(move || {
        let (s, d) = (src.ptr(), dst.ptr());
        rect.for_each_row(|so, dof, len| {
            // SAFETY: the dyn layer checked every row of the box lies inside
            // both objects, which the spans keep alive.
            unsafe { std::ptr::copy(s.add(so), d.add(dof), len) };
        });
        Ok(())
    })
}

/// A command filling `len` bytes at `dst` with `pattern` repeated.
pub(crate) fn fill_work(dst: Span, len: usize, pattern: &[u8]) -> Result<Work> {
    let pattern = Pattern::new(pattern)?;
    Ok(Box::new(move || {
        // SAFETY: the span is alive and valid for `len` bytes; the pattern
        // lives inside this closure, not in the destination.
        unsafe { fill(dst.ptr(), len, pattern.as_slice()) };
        Ok(())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_repeats_any_pattern() {
        for n in [1usize, 2, 3, 7, 64, 128] {
            let pattern: Vec<u8> = (0..n).map(|i| (i * 7 + 1) as u8).collect();
            let mut out = vec![0u8; n * 37];
            // SAFETY: out is a live, exclusive vector of exactly that length.
            unsafe { fill(out.as_mut_ptr(), out.len(), &pattern) };
            for (i, b) in out.iter().enumerate() {
                assert_eq!(*b, pattern[i % n], "pattern {n} byte {i}");
            }
        }
    }

    #[test]
    fn usm_lookup_and_deferred_free() {
        let t = UsmTable::default();
        let p = t.alloc(1, 100, 256).unwrap();
        assert_eq!(p.0 % 256, 0);
        let (mem, off) = t.find(p.offset(10)).unwrap();
        assert_eq!((off, mem.len()), (10, 100));
        assert!(t.span(p.offset(90), 11).is_err());
        assert!(t.find(p.offset(100)).is_err());
        assert_eq!(
            t.free(2, p),
            Err(Error::InvalidHandle {
                kind: HandleKind::UsmPointer
            })
        );
        t.free(1, p).unwrap();
        // The held Arc keeps the memory usable after the free.
        // SAFETY: `mem` keeps the 100-byte block alive; byte 99 is inside it.
        unsafe { mem.at(99).write(5) };
        assert!(t.find(p).is_err());
        assert!(t.free(1, p).is_err());
    }

    #[test]
    fn registrations_refuse_overlap_and_need_the_same_range() {
        let mut host = vec![0u8; 4096];
        let r = Registrations::default();
        // SAFETY: only addresses are used; the memory is never accessed here.
        let (all, half, tail) = unsafe {
            (
                HostPtr::new(host.as_mut_ptr(), 4096),
                HostPtr::new(host.as_mut_ptr(), 2048),
                HostPtr::new(host.as_mut_ptr().add(2048), 2048),
            )
        };
        r.register(half).unwrap();
        assert!(r.register(all).is_err());
        assert!(r.register(half).is_err());
        r.register(tail).unwrap();
        assert!(matches!(r.unregister(all), Err(Error::InvalidValue(_))));
        r.unregister(half).unwrap();
        r.unregister(tail).unwrap();
        r.register(all).unwrap();
        r.unregister(all).unwrap();
    }

    #[test]
    fn sub_buffers_alias_their_parent() {
        let b = NativeBuffer::whole(HostMem::alloc(256, 4096).unwrap());
        assert_eq!(b.at(0) as usize % 4096, 0);
        let s = b.sub(64, 128).unwrap();
        assert_eq!(s.at(0), b.at(64));
        assert!(b.sub(200, 100).is_err());
    }
}
