//! File <-> a logical buffer of the memory manager, at any of its places.

use ur_memory_manager::{Access, LogicalBuffer, MemoryManager, Place};

use crate::engine::{check_span, FileIo, Request};
use crate::error::{FileIoError, Result};
use crate::file::IoFile;
use crate::target::DeviceMem;

impl FileIo {
    /// Reads `size` bytes at `file_offset` into `buf` at `buf_offset`, made
    /// current at `place` (the manager's other copies of the range become
    /// stale). At a device, the manager's allocation there is the target
    /// (acquired `DiscardWrite`, so nothing is copied in first); at the
    /// host place, the file is read straight into the manager's host store.
    /// Returns the bytes read (fewer at end of file; only those are written).
    pub fn read_logical(
        &self,
        file: &IoFile,
        mm: &MemoryManager,
        buf: LogicalBuffer,
        place: Place,
        buf_offset: usize,
        file_offset: u64,
        size: usize,
    ) -> Result<usize> {
        let fds = file.fds()?;
        if size == 0 {
            return Ok(0);
        }
        check_span(file_offset, size)?;
        check_buffer(mm, buf, buf_offset, size)?;
        let len = file.len()?.saturating_sub(file_offset).min(size as u64) as usize;
        if len == 0 {
            return Ok(0);
        }
        let range = buf_offset..buf_offset + len;
        match place {
            Place::Host => {
                let n = mm.with_host(buf, Access::DiscardWrite, range, |s| {
                    fds.read_full(false, s, file_offset)
                })??;
                self.engine().counters.record_host(n);
                Ok(n)
            }
            Place::Device(_) => {
                let g = mm.acquire(buf, place, Access::DiscardWrite, range)?;
                let d = g.device()?;
                let target = DeviceMem::Buffer {
                    queue: d.queue(),
                    buffer: d.buffer(),
                    offset: buf_offset,
                };
                Ok(self.run(file, &Request::read(target, file_offset, len))?.bytes)
            }
        }
    }

    /// Writes `size` bytes of `buf` from `buf_offset` to the file at
    /// `file_offset`, taking them from `place` (made current there first).
    pub fn write_logical(
        &self,
        file: &IoFile,
        mm: &MemoryManager,
        buf: LogicalBuffer,
        place: Place,
        buf_offset: usize,
        file_offset: u64,
        size: usize,
    ) -> Result<usize> {
        let fds = file.fds()?;
        if !file.writable() {
            return Err(FileIoError::NotWritable {
                path: file.path().to_path_buf(),
            });
        }
        if size == 0 {
            return Ok(0);
        }
        check_span(file_offset, size)?;
        check_buffer(mm, buf, buf_offset, size)?;
        let range = buf_offset..buf_offset + size;
        match place {
            Place::Host => {
                mm.with_host(buf, Access::Read, range, |s| fds.write_full(false, s, file_offset))??;
                self.engine().counters.record_host(size);
                Ok(size)
            }
            Place::Device(_) => {
                let g = mm.acquire(buf, place, Access::Read, range)?;
                let d = g.device()?;
                let source = DeviceMem::Buffer {
                    queue: d.queue(),
                    buffer: d.buffer(),
                    offset: buf_offset,
                };
                Ok(self.run(file, &Request::write(source, file_offset, size))?.bytes)
            }
        }
    }
}

fn check_buffer(mm: &MemoryManager, buf: LogicalBuffer, offset: usize, size: usize) -> Result<()> {
    offset.checked_add(size).ok_or(FileIoError::OffsetOverflow {
        offset: offset as u64,
        size,
    })?;
    let available = mm.size(buf)?.saturating_sub(offset);
    if available < size {
        return Err(FileIoError::BufferTooSmall {
            needed: size,
            available,
        });
    }
    Ok(())
}
