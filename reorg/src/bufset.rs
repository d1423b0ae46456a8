//! Buffer sets: `k` buffers of one distribution (multi-buffering) whose
//! local memories are logical buffers of the memory manager, and the local
//! execution of plans over them.

use std::collections::BTreeMap;

use ur_memory_manager::{Access, BufferSpec, LogicalBuffer, MemoryManager, Place};

use crate::dist::Distribution;
use crate::error::{ReorgError, Result};
use crate::plan::ReorgPlan;

/// `count` local memories per rank of a distribution, each a logical buffer
/// of a [`MemoryManager`], for the ranks this process holds (all of them
/// for local execution, its own under MPI).
#[derive(Debug)]
pub struct BufferSet {
    mm: MemoryManager,
    dist: Distribution,
    count: usize,
    buffers: BTreeMap<usize, Vec<LogicalBuffer>>,
    /// Ranks held whose local memory is empty (no slice, no offset): no
    /// logical buffer (the manager refuses size 0).
    empty: Vec<usize>,
}

impl BufferSet {
    /// Creates `count` buffers for each of `ranks` (`None`: every rank of
    /// the distribution), each allocated at `place(rank)` when that gives
    /// a place (a device: the slice is produced or consumed there), else
    /// on first use.
    pub fn create(
        mm: &MemoryManager,
        dist: &Distribution,
        count: usize,
        ranks: Option<&[usize]>,
        place: impl Fn(usize) -> Option<Place>,
    ) -> Result<Self> {
        if count == 0 {
            return Err(ReorgError::NoBuffers);
        }
        let ranks = ranks.unwrap_or(dist.ranks());
        let mut buffers = BTreeMap::new();
        let mut empty = Vec::new();
        for &r in ranks {
            let size = dist.local_bytes(r)?;
            if size == 0 {
                empty.push(r);
                continue;
            }
            let mut spec = BufferSpec::new(size);
            if let Some(p) = place(r) {
                spec = spec.hint(p);
            }
            let bufs = (0..count)
                .map(|_| mm.create_buffer_with(&spec))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            buffers.insert(r, bufs);
        }
        tracing::debug!(ranks = ranks.len(), count, "buffer set created");
        Ok(BufferSet {
            mm: mm.clone(),
            dist: dist.clone(),
            count,
            buffers,
            empty,
        })
    }

    /// Wraps existing logical buffers (per rank, `count` each); refuses
    /// ranks outside the group, uneven counts and buffers of the wrong size
    /// (ranks with an empty local memory take no buffer).
    pub fn from_buffers(
        mm: &MemoryManager,
        dist: &Distribution,
        buffers: BTreeMap<usize, Vec<LogicalBuffer>>,
    ) -> Result<Self> {
        let count = buffers.values().next().map_or(0, Vec::len);
        if count == 0 {
            return Err(ReorgError::NoBuffers);
        }
        for (&rank, bufs) in &buffers {
            let need = dist.local_bytes(rank)?;
            if bufs.len() != count {
                return Err(ReorgError::NoSuchBuffer {
                    rank,
                    index: bufs.len().min(count),
                });
            }
            for b in bufs {
                let got = mm.size(*b)?;
                if got != need {
                    return Err(ReorgError::WrongBufferSize { rank, got, need });
                }
            }
        }
        Ok(BufferSet {
            mm: mm.clone(),
            dist: dist.clone(),
            count,
            buffers,
            empty: Vec::new(),
        })
    }

    /// The distribution.
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// Buffers per rank.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The ranks held.
    pub fn ranks(&self) -> impl Iterator<Item = usize> + '_ {
        self.buffers.keys().chain(&self.empty).copied()
    }

    /// The manager.
    pub fn manager(&self) -> &MemoryManager {
        &self.mm
    }

    /// Buffer `index` of `rank` (none for a rank whose local memory is empty).
    pub fn buffer(&self, rank: usize, index: usize) -> Result<LogicalBuffer> {
        self.buffers
            .get(&rank)
            .and_then(|b| b.get(index))
            .copied()
            .ok_or(ReorgError::NoSuchBuffer { rank, index })
    }

    /// Runs `f` on the host copy of buffer `index` of `rank` (the whole
    /// local memory), made current for `access`; slices are reached from
    /// it with [`Distribution::view`] and friends.
    pub fn with_host<R>(&self, rank: usize, index: usize, access: Access, f: impl FnOnce(&mut [u8]) -> R) -> Result<R> {
        if self.empty.contains(&rank) && index < self.count {
            return Ok(f(&mut []));
        }
        let b = self.buffer(rank, index)?;
        let size = self.mm.size(b)?;
        Ok(self.mm.with_host(b, access, 0..size, f)?)
    }

    /// Releases every buffer.
    pub fn release(self) -> Result<()> {
        for b in self.buffers.into_values().flatten() {
            self.mm.release(b)?;
        }
        Ok(())
    }
}

impl ReorgPlan {
    /// Runs the plan in this process: buffer `src_index` of `src` into
    /// buffer `dst_index` of `dst`, every rank of both groups held here.
    /// Each destination rank's memory is made current on the host once
    /// (the manager routes it from wherever it was produced), the box
    /// copies from each source rank run as block copies or tiled
    /// transposes, then the edge fills; a device reading it later gets it
    /// routed by the manager.
    pub fn execute_local(&self, src: &BufferSet, src_index: usize, dst: &BufferSet, dst_index: usize) -> Result<()> {
        if src.dist != *self.from() {
            return Err(ReorgError::PlanMismatch { side: "source" });
        }
        if dst.dist != *self.to() {
            return Err(ReorgError::PlanMismatch { side: "destination" });
        }
        for &d in self.to().ranks() {
            let Ok(db) = dst.buffer(d, dst_index) else { continue };
            for &s in self.from().ranks() {
                if src.buffer(s, src_index).ok() == Some(db) {
                    return Err(ReorgError::SameBuffer { rank: d });
                }
            }
        }
        for &d in self.to().ranks() {
            let sources: Vec<usize> = {
                let mut v: Vec<usize> = self
                    .copies
                    .iter()
                    .filter(|c| c.dst_rank == d)
                    .map(|c| c.src_rank)
                    .collect();
                v.dedup();
                v.sort_unstable();
                v.dedup();
                v
            };
            dst.with_host(d, dst_index, Access::ReadWrite, |dmem| -> Result<()> {
                for &s in &sources {
                    src.with_host(s, src_index, Access::Read, |smem| self.copy_between(s, smem, d, dmem))??;
                }
                self.fill_overlaps(d, dmem)
            })??;
        }
        tracing::debug!(
            copies = self.copies.len(),
            bytes = self.bytes(),
            "reorganisation run locally"
        );
        Ok(())
    }
}
