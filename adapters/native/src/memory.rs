//! Real host memory: buffers, sub-buffers, USM allocations and host
//! registrations.
//!
//! # Safety argument
//!
//! Memory is a [`HostMem`]: an address and a length, owned (an aligned heap
//! allocation freed on drop) or borrowed (caller memory under the
//! [`HostPtr`] promise of `USE_HOST_PTR`). It is shared through `Arc`, so a
//! sub-buffer, a USM allocation or an in-flight command keeps it alive after the
//! caller released its handle or freed its USM pointer. The memory is only
//! ever touched through raw pointers (`ptr::copy`, `ptr::write_bytes`) by
//! the commands of the queues, on their worker threads, and by host kernels
//! through [`ur_api::HostArgs`]; no Rust reference to it is kept. As with any
//! device, commands of different queues that touch the same bytes without
//! an event between them race; ordering them is the caller's job.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Error, HostPtr, MemArg, Result, UsmRef};

use crate::device::BASE_ALIGN;
use crate::Command;
use crate::NativeAdapter;
use crate::NativeDevice;
use crate::NativeEvent;
use crate::NativeQueue;
use crate::PAGE_ALIGN;
use ur_api::{BufferDesc, DeviceAddr, MapFlags, MemFlags, RectCopy, UsmDesc, UsmPtr};

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

    /// A sub-buffer sharing this buffer's memory (the range lies inside
    /// this buffer: the trait's contract).
    pub(crate) fn sub(&self, offset: usize, size: usize) -> Self {
        NativeBuffer {
            mem: self.mem.clone(),
            offset: self.offset + offset,
            size,
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

/// A USM allocation: host memory, whatever the kind.
///
/// Freeing drops this handle, but commands in flight hold the memory's
/// `Arc<HostMem>` (taken when they were enqueued), so it is returned to the
/// allocator only when the last of them has finished: a deferred free that
/// never blocks and never frees memory a command still uses.
#[derive(Debug)]
pub struct NativeUsm {
    pub(crate) mem: Arc<HostMem>,
}

impl NativeUsm {
    pub(crate) fn alloc(size: usize, align: usize) -> Result<Self> {
        Ok(NativeUsm {
            mem: HostMem::alloc(size, align)?,
        })
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
    ///
    /// # Safety
    ///
    /// The range lies inside `b`.
    pub(crate) unsafe fn map(&self, b: &NativeBuffer, offset: usize, size: usize) -> HostPtr {
        let at = b.at(offset);
        self.live.lock().push(((at as usize, size), b.mem.clone()));
        // SAFETY: the range is inside the buffer's memory (caller contract),
        // which this table keeps alive until the matching unmap.
        unsafe { HostPtr::new(at, size) }
    }

    /// Ends one mapping made by [`MapTable::map`] (the dyn layer hands each
    /// live mapping to exactly one unmap).
    pub(crate) fn unmap(&self, mapped: HostPtr) {
        let key = (mapped.as_ptr() as usize, mapped.len());
        let mut live = self.live.lock();
        if let Some(i) = live.iter().position(|(k, _)| *k == key) {
            // Commands in flight hold their own references; the host gives up its access here.
            drop(live.swap_remove(i));
        }
    }
}

/// A context. Native memory is host memory reachable from every context,
/// so a context holds nothing.
#[derive(Debug, Default)]
pub struct NativeContext {
    _private: (),
}

/// The memory one side of a command addresses, kept alive by the command.
///
/// Commands read the address through [`Span::ptr`] (a method, so a
/// closure captures the whole span, keep-alive included).
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

    /// A USM range (from its offset on).
    pub(crate) fn usm(u: UsmRef<'_, NativeAdapter>) -> Span {
        Span {
            _keep: Some(u.alloc.mem.clone()),
            at: SendPtr(u.alloc.mem.at(u.offset)),
        }
    }

    /// One side of a USM copy.
    pub(crate) fn mem_arg(m: MemArg<'_, NativeAdapter>) -> Span {
        match m {
            MemArg::Usm(u) => Span::usm(u),
            MemArg::Host(h) => Span::host(h),
        }
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.at.get()
    }
}

impl ur_api::adapter::Memory for crate::NativeAdapter {
    unsafe fn create_buffer(
        &self,
        _: &NativeContext,
        desc: &BufferDesc<&NativeDevice>,
        init: Option<HostPtr>,
    ) -> Result<NativeBuffer> {
        if let Some(mem) = init.filter(|_| desc.flags.contains(MemFlags::USE_HOST_PTR)) {
            // SAFETY: USE_HOST_PTR memory is exactly `size` bytes, valid for
            // the buffer's life (the caller's contract).
            return Ok(NativeBuffer::whole(unsafe { HostMem::borrowed(mem)? }));
        }
        let align = if desc.flags.contains(MemFlags::ALLOC_HOST_PTR) {
            PAGE_ALIGN
        } else {
            BASE_ALIGN
        };
        let buf = NativeBuffer::whole(HostMem::alloc(desc.size, align)?);
        if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
            // SAFETY: `src` is readable for exactly `size` bytes during this
            // call (the caller's contract); the new buffer is ours and as long.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf.at(0), desc.size) };
        }
        Ok(buf)
    }

    unsafe fn enqueue_read(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::host(dst), Span::buffer(buffer, offset), dst.len()),
        )
    }

    unsafe fn enqueue_write(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::buffer(buffer, offset), Span::host(src), src.len()),
        )
    }

    unsafe fn enqueue_copy(
        &self,
        q: &NativeQueue,
        src: &NativeBuffer,
        src_offset: usize,
        dst: &NativeBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy(Span::buffer(dst, dst_offset), Span::buffer(src, src_offset), size),
        )
    }

    unsafe fn enqueue_copy_rect(
        &self,
        q: &NativeQueue,
        src: &NativeBuffer,
        dst: &NativeBuffer,
        rect: &RectCopy,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::buffer(dst, 0), Span::buffer(src, 0), *rect),
        )
    }

    unsafe fn enqueue_read_rect(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::host(dst), Span::buffer(buffer, 0), *rect),
        )
    }

    unsafe fn enqueue_write_rect(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(
            wait,
            Command::copy_rect(Span::buffer(buffer, 0), Span::host(src), *rect),
        )
    }

    unsafe fn enqueue_fill(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::fill(Span::buffer(buffer, offset), size, pattern)?)
    }
}

impl ur_api::adapter::SubBuffers for crate::NativeAdapter {
    unsafe fn create_sub_buffer(&self, parent: &NativeBuffer, offset: usize, size: usize) -> Result<NativeBuffer> {
        Ok(parent.sub(offset, size))
    }
}

impl ur_api::adapter::Mapping for crate::NativeAdapter {
    unsafe fn enqueue_map(
        &self,
        q: &NativeQueue,
        buffer: &NativeBuffer,
        _: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<(NativeEvent, HostPtr)> {
        // Zero copy: the mapping is the buffer's own memory. The event only
        // orders the host's access after earlier commands.
        // SAFETY: the range lies inside the buffer (the caller's contract).
        let ptr = unsafe { self.maps.map(buffer, offset, size) };
        Ok((q.marker(wait)?, ptr))
    }

    unsafe fn enqueue_unmap(
        &self,
        q: &NativeQueue,
        _: &NativeBuffer,
        mapped: HostPtr,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        // Host writes went straight into the buffer; nothing to write back.
        self.maps.unmap(mapped);
        q.marker(wait)
    }
}

impl ur_api::adapter::HostLocking for crate::NativeAdapter {
    unsafe fn lock_host(&self, _: &NativeContext, mem: HostPtr) -> Result<DeviceAddr> {
        // Host memory is what this device uses already: nothing to pin, and
        // the device reaches it at the host pointer itself. The dyn layer
        // keeps the books (overlaps, exact unlocks).
        Ok(DeviceAddr(mem.as_ptr() as u64))
    }

    unsafe fn unlock_host(&self, _: &NativeContext, _: HostPtr) -> Result<()> {
        Ok(())
    }
}

impl ur_api::adapter::UnifiedMemory for crate::NativeAdapter {
    fn usm_alloc(&self, _: &NativeContext, desc: &UsmDesc<&NativeDevice>) -> Result<(NativeUsm, UsmPtr)> {
        // Host, device and shared allocations are all host memory here.
        let usm = NativeUsm::alloc(desc.size, desc.align)?;
        let base = UsmPtr(usm.mem.at(0) as u64);
        Ok((usm, base))
    }

    unsafe fn enqueue_usm_copy(
        &self,
        q: &NativeQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::copy(Span::mem_arg(dst), Span::mem_arg(src), size))
    }

    unsafe fn enqueue_usm_fill(
        &self,
        q: &NativeQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&NativeEvent],
    ) -> Result<NativeEvent> {
        q.submit(wait, Command::fill(Span::usm(ptr), size, pattern)?)
    }
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
    fn usm_memory_outlives_its_handle_while_held() {
        let usm = NativeUsm::alloc(100, 256).unwrap();
        assert_eq!(usm.mem.at(0) as usize % 256, 0);
        let held = usm.mem.clone();
        drop(usm);
        // The held Arc (as a command holds it) keeps the memory usable.
        // SAFETY: `held` keeps the 100-byte block alive; byte 99 is inside it.
        unsafe { held.at(99).write(5) };
    }

    #[test]
    fn sub_buffers_alias_their_parent() {
        let b = NativeBuffer::whole(HostMem::alloc(256, 4096).unwrap());
        assert_eq!(b.at(0) as usize % 4096, 0);
        let s = b.sub(64, 128);
        assert_eq!(s.at(0), b.at(64));
        assert_eq!(s.size(), 128);
    }
}
