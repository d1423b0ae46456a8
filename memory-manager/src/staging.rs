//! Host memory the manager owns: page-aligned blocks ([`PinnedBlock`]: the
//! host place's large stores, the slabs of small ones, staging buffers) and
//! the pooled pinned staging buffers of host-staged copies, with the
//! pipelined copy that runs through them.

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{BufferId, ContextId, EventId, HostPtr, QueueId, Runtime, UsmDesc, UsmKind, UsmPtr};

/// Alignment of host memory the manager allocates (a page).
pub(crate) const HOST_ALIGN: usize = 4096;

/// Where a [`PinnedBlock`]'s memory came from.
enum Origin {
    /// `std::alloc` with [`HOST_ALIGN`].
    Plain,
    /// A USM host allocation (pinned for `context`), freed through the runtime.
    Pinned {
        rt: Arc<Runtime>,
        context: ContextId,
        ptr: UsmPtr,
    },
}

/// Zeroed, page-aligned host memory owned by the manager: pinned (a USM host
/// allocation of some context) where an adapter offers it, else plain.
pub(crate) struct PinnedBlock {
    ptr: NonNull<u8>,
    len: usize,
    origin: Origin,
}

// SAFETY: PinnedBlock owns its allocation exclusively; access goes through &/&mut.
unsafe impl Send for PinnedBlock {}
// SAFETY: shared references only hand out shared slices.
unsafe impl Sync for PinnedBlock {}

impl PinnedBlock {
    /// `len` zeroed plain bytes (at least one), or `OutOfHostMemory`.
    pub(crate) fn zeroed(len: usize) -> ur_api::Result<PinnedBlock> {
        let layout = Layout::from_size_align(len.max(1), HOST_ALIGN).map_err(|_| ur_api::Error::OutOfHostMemory)?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(ur_api::Error::OutOfHostMemory)?;
        Ok(PinnedBlock {
            ptr,
            len,
            origin: Origin::Plain,
        })
    }

    /// `len` zeroed bytes pinned for the first of `contexts` that can
    /// allocate USM host memory; plain memory when none can.
    pub(crate) fn pinned(rt: &Arc<Runtime>, contexts: &[ContextId], len: usize) -> ur_api::Result<PinnedBlock> {
        for &context in contexts {
            let desc = UsmDesc::new(UsmKind::Host, len.max(1)).aligned(HOST_ALIGN);
            match rt.usm_alloc(context, &desc) {
                Ok(ptr) => {
                    // USM host pointers are host addresses (see `UsmPtr`).
                    let Some(raw) = NonNull::new(ptr.0 as usize as *mut u8) else {
                        let _ = rt.usm_free(context, ptr);
                        continue;
                    };
                    // SAFETY: the allocation holds at least `len` bytes; zeroing
                    // makes every byte initialised before any slice is formed.
                    unsafe { std::ptr::write_bytes(raw.as_ptr(), 0, len) };
                    return Ok(PinnedBlock {
                        ptr: raw,
                        len,
                        origin: Origin::Pinned {
                            rt: rt.clone(),
                            context,
                            ptr,
                        },
                    });
                }
                Err(e) => tracing::debug!(error = %e, "no pinned host memory from this context"),
            }
        }
        Self::zeroed(len)
    }

    /// The context the memory is pinned for, if any.
    pub(crate) fn pinned_for(&self) -> Option<ContextId> {
        match &self.origin {
            Origin::Pinned { context, .. } => Some(*context),
            Origin::Plain => None,
        }
    }

    /// Bytes in the block.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The block's first byte (for sub-allocation by [`crate::slab`]).
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.ptr
    }
}

impl Drop for PinnedBlock {
    fn drop(&mut self) {
        match &self.origin {
            Origin::Plain => {
                let layout =
                    Layout::from_size_align(self.len.max(1), HOST_ALIGN).expect("layout was valid at allocation");
                // SAFETY: allocated in `zeroed` with this very layout.
                unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
            }
            Origin::Pinned { rt, context, ptr } => {
                if let Err(e) = rt.usm_free(*context, *ptr) {
                    tracing::warn!(error = %e, "freeing pinned host memory failed");
                }
            }
        }
    }
}

/// Pooled staging buffers, by the context they are pinned for (`None`: plain) and size.
#[derive(Default)]
pub(crate) struct StagingPool {
    free: Mutex<HashMap<(Option<ContextId>, usize), Vec<PinnedBlock>>>,
    /// Buffers allocated so far: pinned, plain.
    pub allocated: (AtomicU64, AtomicU64),
}

impl std::fmt::Debug for StagingPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n: usize = self.free.lock().values().map(Vec::len).sum();
        write!(f, "StagingPool({n} free)")
    }
}

impl StagingPool {
    /// Takes `n` buffers of `len` bytes, pinned for the first of `prefer`
    /// that can allocate USM host memory, else plain.
    pub(crate) fn take(
        &self,
        rt: &Arc<Runtime>,
        prefer: &[ContextId],
        n: usize,
        len: usize,
    ) -> ur_api::Result<Vec<PinnedBlock>> {
        let mut out = Vec::with_capacity(n);
        {
            let mut free = self.free.lock();
            for key in prefer.iter().copied().map(Some).chain([None]) {
                if let Some(v) = free.get_mut(&(key, len)) {
                    while out.len() < n {
                        match v.pop() {
                            Some(b) => out.push(b),
                            None => break,
                        }
                    }
                }
                if !out.is_empty() {
                    break;
                }
            }
        }
        while out.len() < n {
            let m = PinnedBlock::pinned(rt, prefer, len)?;
            let counter = if m.pinned_for().is_some() {
                &self.allocated.0
            } else {
                &self.allocated.1
            };
            counter.fetch_add(1, Ordering::Relaxed);
            out.push(m);
        }
        Ok(out)
    }

    /// Returns buffers to the pool.
    pub(crate) fn give_back(&self, bufs: Vec<PinnedBlock>) {
        let mut free = self.free.lock();
        for b in bufs {
            free.entry((b.pinned_for(), b.len)).or_default().push(b);
        }
    }

    /// Frees every pooled buffer.
    pub(crate) fn clear(&self) {
        self.free.lock().clear();
    }
}

/// One side of a staged copy: a buffer and the queue that reaches it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Side {
    pub queue: QueueId,
    pub buffer: BufferId,
}

/// Events in flight, waited for and released on every exit path.
struct InFlight<'a> {
    rt: &'a Runtime,
    events: Vec<Option<EventId>>,
}

impl InFlight<'_> {
    fn finish(&mut self, i: usize) -> ur_api::Result<()> {
        match self.events[i].take() {
            Some(e) => self.rt.complete(e),
            None => Ok(()),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        for e in self.events.iter_mut().filter_map(Option::take) {
            // Errors here belong to a copy already failing; the memory must
            // simply be idle before the staging buffers are reused.
            let _ = self.rt.complete(e);
        }
    }
}

/// Copies `range` of `src` to the same range of `dst` through host staging:
/// chunk `k` is read into ring slot `k % depth` while earlier chunks are
/// written out, so reading chunk k+1 overlaps writing chunk k. The two
/// queues may belong to different adapters: every hand-off between them is
/// a host wait on the read's event.
pub(crate) fn pipelined_copy(
    rt: &Runtime,
    src: Side,
    dst: Side,
    range: Range<usize>,
    ring: &[PinnedBlock],
) -> ur_api::Result<()> {
    let depth = ring.len();
    assert!(depth > 0, "a staging ring needs at least one buffer");
    let chunk = ring[0].len;
    let len = range.end - range.start;
    let n = len.div_ceil(chunk);
    let piece = |k: usize| {
        let start = range.start + k * chunk;
        (start, chunk.min(range.end - start))
    };
    let slot = |k: usize| {
        let (_, l) = piece(k);
        // SAFETY: every operation given this pointer completes (its event
        // is waited for, here or in `InFlight::drop`) before the ring slot
        // is handed to the next chunk or back to the pool; reads and writes
        // of one slot never overlap because a slot's write is waited for
        // before its next read is enqueued.
        unsafe { HostPtr::new(ring[k % depth].ptr.as_ptr(), l) }
    };
    let mut reads = InFlight {
        rt,
        events: vec![None; n],
    };
    let mut writes = InFlight {
        rt,
        events: vec![None; n],
    };
    for k in 0..n.min(depth) {
        let (off, _) = piece(k);
        reads.events[k] = Some(rt.enqueue_read(src.queue, src.buffer, off, slot(k), &[])?);
    }
    for k in 0..n {
        reads.finish(k)?;
        let (off, _) = piece(k);
        writes.events[k] = Some(rt.enqueue_write(dst.queue, dst.buffer, off, slot(k), &[])?);
        rt.flush(dst.queue)?;
        // Refill the slot of chunk k-1 once its write is done.
        if k >= 1 && k - 1 + depth < n {
            writes.finish(k - 1)?;
            let next = k - 1 + depth;
            let (off, _) = piece(next);
            reads.events[next] = Some(rt.enqueue_read(src.queue, src.buffer, off, slot(next), &[])?);
            rt.flush(src.queue)?;
        }
    }
    for k in 0..n {
        writes.finish(k)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_mem_is_zeroed_and_aligned() {
        let m = PinnedBlock::zeroed(10_000).unwrap();
        // SAFETY: the block holds 10_000 zeroed bytes while `m` lives.
        let bytes = unsafe { std::slice::from_raw_parts(m.base().as_ptr(), m.len()) };
        assert!(bytes.iter().all(|b| *b == 0));
        assert_eq!(m.base().as_ptr() as usize % HOST_ALIGN, 0);
    }
}
