//! Zero-copy staging ([`crate::Route::Mapped`]): one end of a `None` route
//! is mapped into host memory chunk by chunk and the other end's queue reads
//! or writes the mapping directly, so the bytes cross host memory once (or
//! both ends are mapped and the manager copies between the mappings).

use std::ops::Range;

use ur_api::{EventId, HostPtr, MapFlags, Runtime};

use crate::plan::MapEnd;
use crate::staging::Side;

/// One chunk's mapping and the commands on it, each held until waited for.
#[derive(Default)]
struct Mapping {
    /// The map command.
    map: Option<EventId>,
    /// The mapped memory, until its unmap is enqueued.
    ptr: Option<HostPtr>,
    /// The other end's read or write of the mapping.
    xfer: Option<EventId>,
    /// The unmap command.
    unmap: Option<EventId>,
}

/// The chunks of one copy. Dropping it waits for every command still in
/// flight and unmaps every mapping still live, so no path leaks a mapping.
struct Mappings<'a> {
    rt: &'a Runtime,
    side: Side,
    chunks: Vec<Mapping>,
}

impl Mappings<'_> {
    fn map(&mut self, k: usize, flags: MapFlags, (off, len): (usize, usize)) -> ur_api::Result<()> {
        let (ev, ptr) = self
            .rt
            .enqueue_map(self.side.queue, self.side.buffer, flags, off, len, &[])?;
        self.chunks[k].map = Some(ev);
        self.chunks[k].ptr = Some(ptr);
        Ok(())
    }

    /// Waits for chunk `k`'s map; returns the mapped memory.
    fn mapped(&mut self, k: usize) -> ur_api::Result<HostPtr> {
        if let Some(e) = self.chunks[k].map.take() {
            self.rt.complete(e)?;
        }
        Ok(self.chunks[k].ptr.expect("mapped before use"))
    }

    /// Waits for chunk `k`'s transfer, then enqueues its unmap.
    fn release(&mut self, k: usize) -> ur_api::Result<()> {
        if let Some(e) = self.chunks[k].xfer.take() {
            self.rt.complete(e)?;
        }
        if let Some(p) = self.chunks[k].ptr.take() {
            self.chunks[k].unmap = Some(self.rt.enqueue_unmap(self.side.queue, self.side.buffer, p, &[])?);
        }
        Ok(())
    }

    /// Waits for every unmap (for a mapped destination, the unmap is what
    /// makes the bytes current there).
    fn finish(&mut self) -> ur_api::Result<()> {
        for c in &mut self.chunks {
            if let Some(e) = c.unmap.take() {
                self.rt.complete(e)?;
            }
        }
        Ok(())
    }
}

impl Drop for Mappings<'_> {
    fn drop(&mut self) {
        // Errors here belong to a copy already failing; what matters is that
        // nothing still uses a mapping when it is unmapped, and that every
        // mapping is unmapped.
        for k in 0..self.chunks.len() {
            let c = &mut self.chunks[k];
            for e in [c.map.take(), c.xfer.take()].into_iter().flatten() {
                let _ = self.rt.complete(e);
            }
            if let Some(p) = c.ptr.take() {
                match self.rt.enqueue_unmap(self.side.queue, self.side.buffer, p, &[]) {
                    Ok(e) => c.unmap = Some(e),
                    Err(e) => tracing::warn!(error = %e, "unmapping a staging chunk failed"),
                }
            }
            if let Some(e) = self.chunks[k].unmap.take() {
                if let Err(e) = self.rt.complete(e) {
                    tracing::warn!(error = %e, "unmapping a staging chunk failed");
                }
            }
        }
    }
}

/// Copies `range` of `src` to the same range of `dst` through mappings of
/// the `end` side, `depth` chunks of `chunk` bytes mapped at a time: chunk
/// k's transfer runs while chunk k+1 is being mapped, and a chunk is
/// unmapped as soon as its transfer is done. Failure leaves the source
/// untouched (it is only read) and every mapping unmapped.
pub(crate) fn mapped_copy(
    rt: &Runtime,
    src: Side,
    dst: Side,
    range: Range<usize>,
    chunk: usize,
    depth: usize,
    end: MapEnd,
) -> ur_api::Result<()> {
    assert!(chunk > 0 && depth > 0, "chunks and depth are positive");
    let n = range.len().div_ceil(chunk);
    if n == 0 {
        return Ok(());
    }
    let piece = |k: usize| {
        let start = range.start + k * chunk;
        (start, chunk.min(range.end - start))
    };
    // Chunk k must be mapped before step k: with one chunk in flight the
    // loop below would wait on a map it has not enqueued yet.
    let depth = depth.max(2);
    let (mapped, other, flags) = match end {
        MapEnd::Source => (src, dst, MapFlags::READ),
        MapEnd::Destination => (dst, src, MapFlags::WRITE_INVALIDATE),
        MapEnd::Both => return both_mapped(rt, src, dst, n, depth, piece),
    };
    let mut m = Mappings {
        rt,
        side: mapped,
        chunks: (0..n).map(|_| Mapping::default()).collect(),
    };
    for k in 0..n.min(depth) {
        m.map(k, flags, piece(k))?;
    }
    rt.flush(mapped.queue)?;
    for k in 0..n {
        let ptr = m.mapped(k)?;
        let (off, _) = piece(k);
        // The mapping stays live (not unmapped) until this event is waited
        // for in `release` or in `Mappings::drop`.
        m.chunks[k].xfer = Some(if end == MapEnd::Source {
            rt.enqueue_write(other.queue, dst.buffer, off, ptr, &[])?
        } else {
            rt.enqueue_read(other.queue, src.buffer, off, ptr, &[])?
        });
        rt.flush(other.queue)?;
        // Chunk k-1's transfer ran alongside chunk k's map: release it and
        // map the chunk that takes its place.
        if k >= 1 {
            m.release(k - 1)?;
            let next = k - 1 + depth;
            if next < n {
                m.map(next, flags, piece(next))?;
            }
            rt.flush(mapped.queue)?;
        }
    }
    m.release(n - 1)?;
    m.finish()
}

/// [`MapEnd::Both`]: maps source and destination chunks, `depth` ahead, and
/// copies between them on this thread; each pair is unmapped as soon as its
/// bytes are copied.
fn both_mapped(
    rt: &Runtime,
    src: Side,
    dst: Side,
    n: usize,
    depth: usize,
    piece: impl Fn(usize) -> (usize, usize),
) -> ur_api::Result<()> {
    let new = |side| Mappings {
        rt,
        side,
        chunks: (0..n).map(|_| Mapping::default()).collect(),
    };
    let (mut ms, mut md) = (new(src), new(dst));
    let map = |ms: &mut Mappings<'_>, md: &mut Mappings<'_>, k: usize| -> ur_api::Result<()> {
        ms.map(k, MapFlags::READ, piece(k))?;
        md.map(k, MapFlags::WRITE_INVALIDATE, piece(k))
    };
    for k in 0..n.min(depth) {
        map(&mut ms, &mut md, k)?;
    }
    rt.flush(src.queue)?;
    rt.flush(dst.queue)?;
    for k in 0..n {
        let (from, to) = (ms.mapped(k)?, md.mapped(k)?);
        let len = piece(k).1;
        debug_assert!(from.len() == len && to.len() == len);
        // SAFETY: both mappings are live (their maps completed; they are
        // unmapped only below or in `Mappings::drop`), each holds `len`
        // bytes, nothing else uses them meanwhile (no command was given
        // these pointers), and they belong to different buffers, so they do
        // not overlap.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), to.as_ptr(), len) };
        ms.release(k)?;
        md.release(k)?;
        if k + depth < n {
            map(&mut ms, &mut md, k + depth)?;
        }
        rt.flush(src.queue)?;
        rt.flush(dst.queue)?;
    }
    ms.finish()?;
    md.finish()
}
