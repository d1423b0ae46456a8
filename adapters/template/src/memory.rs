//! Buffers, sub-buffers and mappings over host memory.
//!
//! # Safety argument
//!
//! A buffer's bytes are a `Vec<u8>` behind a mutex, shared by `Arc` between
//! a buffer, its sub-buffers and open mappings; every command touches them
//! through a lock guard, in safe code. The only raw memory is the caller's
//! [`HostPtr`] (reads, writes, a buffer's initial data) and the staging
//! block a mapping hands out. The `unsafe` functions here turn a `HostPtr`
//! into a slice for the length of one call, under the promise of
//! [`HostPtr::new`] (valid, and not touched by anyone else meanwhile).
//! No `HostPtr` can point into a buffer's storage: mappings are copies, and
//! `USE_HOST_PTR` is not offered.

use std::sync::Arc;

use crate::TemplateContext;
use crate::TemplateDevice;
use crate::TemplateEvent;
use crate::TemplateQueue;
use parking_lot::{Mutex, MutexGuard};
use ur_api::{BufferDesc, MemFlags};
use ur_api::{Error, HostPtr, MapFlags, Result};

/// The bytes of a buffer and its sub-buffers.
type Storage = Arc<Mutex<Vec<u8>>>;

/// A buffer or sub-buffer: the window `[offset, offset + size)` of its storage.
#[derive(Debug, Clone)]
pub struct TemplateBuffer {
    storage: Storage,
    offset: usize,
    size: usize,
}

impl TemplateBuffer {
    /// A zeroed buffer of `size` bytes; running out of memory is an error,
    /// not an abort.
    pub(crate) fn new(size: usize) -> Result<Self> {
        let mut bytes = Vec::new();
        bytes.try_reserve_exact(size).map_err(|_| Error::OutOfHostMemory)?;
        bytes.resize(size, 0);
        Ok(TemplateBuffer {
            storage: Arc::new(Mutex::new(bytes)),
            offset: 0,
            size,
        })
    }

    /// A view of `[offset, offset + size)` of this buffer, sharing its bytes.
    pub(crate) fn sub(&self, offset: usize, size: usize) -> Self {
        TemplateBuffer {
            storage: self.storage.clone(),
            offset: self.offset + offset,
            size,
        }
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Runs `f` on bytes `[offset, offset + len)` of this buffer.
    ///
    /// Panics if the range is outside the buffer; the dyn layer's checks
    /// make that a bug, never a memory error.
    pub(crate) fn with_bytes<R>(&self, offset: usize, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
        let mut guard = self.storage.lock();
        let start = self.offset + offset;
        f(&mut guard[start..start + len])
    }

    /// Copies `len` bytes from `src` at `src_offset` to `self` at `dst_offset`.
    pub(crate) fn copy_from(&self, dst_offset: usize, src: &TemplateBuffer, src_offset: usize, len: usize) {
        let (d, s) = (self.offset + dst_offset, src.offset + src_offset);
        if Arc::ptr_eq(&self.storage, &src.storage) {
            // Two views of one buffer: one lock, an in-place move.
            self.storage.lock().copy_within(s..s + len, d);
            return;
        }
        let (mut dst_bytes, src_bytes) = lock_pair(&self.storage, &src.storage);
        dst_bytes[d..d + len].copy_from_slice(&src_bytes[s..s + len]);
    }
}

/// Locks two distinct storages, always in address order, so two threads
/// copying A to B and B to A cannot deadlock. Returns `(a, b)`'s guards.
fn lock_pair<'a>(a: &'a Storage, b: &'a Storage) -> (MutexGuard<'a, Vec<u8>>, MutexGuard<'a, Vec<u8>>) {
    if Arc::as_ptr(a) < Arc::as_ptr(b) {
        let ga = a.lock();
        (ga, b.lock())
    } else {
        let gb = b.lock();
        (a.lock(), gb)
    }
}

/// Fills `dst` with `pattern` repeated (`dst.len()` is a multiple of it).
pub(crate) fn fill(dst: &mut [u8], pattern: &[u8]) {
    for chunk in dst.chunks_exact_mut(pattern.len()) {
        chunk.copy_from_slice(pattern);
    }
}

/// The caller's host memory as bytes to read.
///
/// # Safety
///
/// `src` is valid for reads of `src.len()` bytes and nobody writes it until
/// the returned slice is gone (the [`HostPtr::new`] promise, for an
/// operation that reads it).
pub(crate) unsafe fn host_bytes<'a>(src: HostPtr) -> &'a [u8] {
    // SAFETY: valid for `len` reads and not written meanwhile (the caller's
    // contract); a HostPtr of a non-empty command is never null.
    unsafe { std::slice::from_raw_parts(src.as_ptr(), src.len()) }
}

/// The caller's host memory as bytes to write.
///
/// # Safety
///
/// `dst` is valid for writes of `dst.len()` bytes and nothing else accesses
/// it until the returned slice is gone (the [`HostPtr::new`] promise).
pub(crate) unsafe fn host_bytes_mut<'a>(dst: HostPtr) -> &'a mut [u8] {
    // SAFETY: valid and exclusively ours for `len` bytes (the caller's contract).
    unsafe { std::slice::from_raw_parts_mut(dst.as_ptr(), dst.len()) }
}

/// One open mapping: a staging copy of a buffer range.
#[derive(Debug)]
struct Mapping {
    /// Keeps the buffer's storage alive (it may be released while mapped)
    /// and says where to write back.
    buffer: TemplateBuffer,
    offset: usize,
    flags: MapFlags,
    /// The bytes the host sees. Never resized while the mapping is open
    /// (moving the `Vec` does not move its heap block), and no reference
    /// into it is made until unmap, so the address handed out stays valid.
    staging: Vec<u8>,
}

/// Open mappings, keyed by the address handed out.
#[derive(Debug, Default)]
pub(crate) struct MapTable {
    open: Mutex<Vec<Mapping>>,
}

impl MapTable {
    /// Opens a mapping of `[offset, offset + size)` of `buffer`; reads the
    /// current bytes in unless the host will overwrite them all.
    pub(crate) fn map(&self, buffer: &TemplateBuffer, flags: MapFlags, offset: usize, size: usize) -> Result<HostPtr> {
        let mut staging = Vec::new();
        staging.try_reserve_exact(size).map_err(|_| Error::OutOfHostMemory)?;
        if flags.contains(MapFlags::WRITE_INVALIDATE) {
            staging.resize(size, 0);
        } else {
            buffer.with_bytes(offset, size, |b| staging.extend_from_slice(b));
        }
        // SAFETY: the block is `size` bytes, owned by the mapping stored
        // below until `unmap`, and nobody else accesses it: the host has it
        // to itself until it unmaps, as a mapping promises.
        let ptr = unsafe { HostPtr::new(staging.as_mut_ptr(), size) };
        self.open.lock().push(Mapping {
            buffer: buffer.clone(),
            offset,
            flags,
            staging,
        });
        Ok(ptr)
    }

    /// Closes the mapping at `mapped`, first writing the host's bytes back
    /// when `write_back` is set and it was mapped for writing.
    pub(crate) fn unmap(&self, mapped: HostPtr, write_back: bool) {
        let mapping = {
            let mut open = self.open.lock();
            let found = open
                .iter()
                .position(|m| m.staging.as_ptr() == mapped.as_ptr().cast_const() && m.staging.len() == mapped.len());
            found.map(|i| open.swap_remove(i))
        };
        let Some(m) = mapping else {
            // The dyn layer hands each live mapping to exactly one unmap.
            tracing::warn!(ptr = ?mapped.as_ptr(), "unmap of an unknown mapping");
            return;
        };
        if write_back && m.flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE) {
            m.buffer
                .with_bytes(m.offset, m.staging.len(), |b| b.copy_from_slice(&m.staging));
        }
    }
}

impl ur_api::adapter::Memory for crate::TemplateAdapter {
    unsafe fn create_buffer(
        &self,
        _: &TemplateContext,
        desc: &BufferDesc<&TemplateDevice>,
        init: Option<HostPtr>,
    ) -> Result<TemplateBuffer> {
        let buffer = TemplateBuffer::new(desc.size)?;
        // USE_HOST_PTR is not offered (no DeviceCaps::USE_HOST_PTR), so
        // `init` is only ever initial data to copy.
        if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
            // SAFETY: with COPY_HOST_PTR, `src` is readable for exactly
            // `desc.size` bytes during this call (the contract), and it
            // cannot alias the buffer we just allocated.
            let src = unsafe { host_bytes(src) };
            buffer.with_bytes(0, desc.size, |b| b.copy_from_slice(src));
        }
        Ok(buffer)
    }

    unsafe fn enqueue_read(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        q.run(wait, || {
            // SAFETY: `dst` is valid and ours alone for the whole command
            // (the HostPtr promise), which ends before `run` returns; it
            // cannot point into buffer storage (see memory.rs).
            let dst = unsafe { host_bytes_mut(dst) };
            buffer.with_bytes(offset, dst.len(), |b| dst.copy_from_slice(b));
            Ok(())
        })
    }

    unsafe fn enqueue_write(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        q.run(wait, || {
            // SAFETY: `src` is valid for reads and not written during the
            // command (the HostPtr promise), which ends before `run` returns.
            let src = unsafe { host_bytes(src) };
            buffer.with_bytes(offset, src.len(), |b| b.copy_from_slice(src));
            Ok(())
        })
    }

    unsafe fn enqueue_copy(
        &self,
        q: &TemplateQueue,
        src: &TemplateBuffer,
        src_offset: usize,
        dst: &TemplateBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. Both ranges are inside their
        // buffers (the contract; slicing would panic otherwise), and
        // `copy_from` handles two views of one buffer.
        q.run(wait, || {
            dst.copy_from(dst_offset, src, src_offset, size);
            Ok(())
        })
    }

    unsafe fn enqueue_fill(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. The range lies inside the buffer
        // and `size` is a multiple of the pattern's length (the contract).
        q.run(wait, || {
            buffer.with_bytes(offset, size, |b| fill(b, pattern));
            Ok(())
        })
    }
}

impl ur_api::adapter::SubBuffers for crate::TemplateAdapter {
    unsafe fn create_sub_buffer(&self, parent: &TemplateBuffer, offset: usize, size: usize) -> Result<TemplateBuffer> {
        // SAFETY: no unsafe operation here. The range lies inside `parent`
        // (the contract); the view shares its storage, and a bad range
        // could only make `with_bytes` panic, never reach out of bounds.
        Ok(parent.sub(offset, size))
    }
}

impl ur_api::adapter::Mapping for crate::TemplateAdapter {
    unsafe fn enqueue_map(
        &self,
        q: &TemplateQueue,
        buffer: &TemplateBuffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&TemplateEvent],
    ) -> Result<(TemplateEvent, HostPtr)> {
        // SAFETY: no unsafe operation here. The range lies inside the buffer
        // (the contract); the staging block handed out is owned by the map
        // table until the one unmap the dyn layer allows.
        let event = q.run(wait, || Ok(()))?;
        // Commands run at once, so reading the bytes after the wait list is
        // reading them now.
        let ptr = self.maps.map(buffer, flags, offset, size)?;
        Ok((event, ptr))
    }

    unsafe fn enqueue_unmap(
        &self,
        q: &TemplateQueue,
        _: &TemplateBuffer,
        mapped: HostPtr,
        wait: &[&TemplateEvent],
    ) -> Result<TemplateEvent> {
        // SAFETY: no unsafe operation here. `mapped` is a live mapping of
        // this adapter, unmapped once (the contract), so the table finds it
        // and the host's access to the staging block has ended.
        let event = q.run(wait, || Ok(()))?;
        // A failed dependency fails the unmap: close the mapping, but do
        // not write back.
        let write_back = event.outcome().is_ok();
        self.maps.unmap(mapped, write_back);
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sub_buffers_share_bytes_and_copies_within_one_buffer_work() {
        let b = TemplateBuffer::new(32).unwrap();
        b.with_bytes(0, 32, |s| s.iter_mut().enumerate().for_each(|(i, x)| *x = i as u8));
        let (lo, hi) = (b.sub(0, 16), b.sub(16, 16));
        hi.copy_from(0, &lo, 0, 8);
        assert_eq!(b.with_bytes(16, 8, |s| s.to_vec()), (0..8).collect::<Vec<u8>>());
        let other = TemplateBuffer::new(8).unwrap();
        other.copy_from(0, &hi, 8, 8);
        assert_eq!(other.with_bytes(0, 8, |s| s.to_vec()), (24..32).collect::<Vec<u8>>());
    }

    #[test]
    fn fill_repeats_the_pattern() {
        let mut out = [0u8; 9];
        fill(&mut out, &[1, 2, 3]);
        assert_eq!(out, [1, 2, 3, 1, 2, 3, 1, 2, 3]);
    }

    #[test]
    fn mappings_write_back_only_when_mapped_for_writing() {
        let b = TemplateBuffer::new(8).unwrap();
        let maps = MapTable::default();
        for (flags, expect) in [(MapFlags::READ, 0u8), (MapFlags::WRITE, 7)] {
            let p = maps.map(&b, flags, 2, 4).unwrap();
            // SAFETY: the mapping is open and the test is its only user.
            unsafe { host_bytes_mut(p) }.fill(7);
            maps.unmap(p, true);
            assert_eq!(b.with_bytes(2, 4, |s| s.to_vec()), vec![expect; 4], "{flags:?}");
        }
        assert!(maps.open.lock().is_empty());
    }
}
