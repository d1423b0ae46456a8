//! A dataset (or a hyperslab of it) into, and out of, a memory-manager
//! logical buffer at any of its places.

use ur_memory_manager::{Access, LogicalBuffer, MemoryManager, Place};

use super::{Dataset, ReadReport, Selection};
use crate::error::H5Error;
use crate::kind::BufferKind;

/// The buffer kind a memory-manager place stands for in plans: host memory
/// the manager owns is pageable; a device place is named as the manager
/// prints it, indexed by its position among the manager's places.
pub fn place_kind(mm: &MemoryManager, place: Place) -> Result<BufferKind, H5Error> {
    Ok(match place {
        Place::Host => BufferKind::HostPageable,
        Place::Device(_) => {
            let index = mm.places().iter().position(|p| *p == place).unwrap_or(0) as u32;
            BufferKind::device(mm.place_name(place)?, index)
        }
    })
}

impl Dataset {
    /// Reads `sel` into `buf` at `offset`, made current at `place`.
    ///
    /// Chunks are decoded (in parallel) into a host staging buffer first;
    /// only when every chunk decoded is it written to the logical buffer
    /// (at the host place, then made current at `place` by the manager's
    /// own route), so a corrupt chunk leaves the buffer's previous
    /// contents and validity untouched.
    pub fn read_logical(
        &self,
        sel: &Selection,
        mm: &MemoryManager,
        buf: LogicalBuffer,
        place: Place,
        offset: usize,
    ) -> Result<ReadReport, H5Error> {
        self.check(sel)?;
        let need = sel.len() as usize * self.elem;
        let size = mm.size(buf)?;
        if offset.checked_add(need).is_none_or(|end| end > size) {
            return Err(H5Error::OutOfRange {
                dataset: format!("{} (logical buffer of {size} bytes at offset {offset})", self.name),
                start: sel.start.clone(),
                count: sel.count.clone(),
                shape: self.shape.clone(),
            });
        }
        let mut staging = vec![0u8; need];
        let report = self.read_into(sel, &mut staging)?;
        mm.write(buf, offset, &staging)?;
        if place != Place::Host {
            drop(mm.acquire(buf, place, Access::Read, offset..offset + need)?);
        }
        Ok(report)
    }

    /// Writes the whole dataset from `buf` at `offset` (taken through the
    /// host place), every chunk encoded by the pipeline.
    pub fn write_logical(&self, mm: &MemoryManager, buf: LogicalBuffer, offset: usize) -> Result<usize, H5Error> {
        let mut staging = vec![0u8; self.byte_len()];
        mm.read(buf, offset, &mut staging)?;
        self.write_all(&staging)
    }
}
