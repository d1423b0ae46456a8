//! [`Memory`]: buffers, their transfers and fills; the optional groups
//! [`SubBuffers`], [`Mapping`] and [`HostLocking`].

use super::Api;
use crate::error::{Error, Result};
use crate::types::{BufferDesc, DeviceAddr, HostPtr, MapFlags, MemFlags, NativeHandle, RectCopy};

/// Buffers: what every adapter implements, in its `memory.rs`. Rect copies
/// have working defaults (one copy per row) that an adapter overrides when
/// its backend has a native rect copy.
pub trait Memory: Api {
    /// Creates a buffer in `ctx`, placed for `desc.device_hint` (always
    /// set: the dyn layer fills in the context's first device).
    ///
    /// # Safety
    ///
    /// `desc.size` is non-zero and at most the device's largest allocation;
    /// the flags are consistent. With `COPY_HOST_PTR`, `init` is readable
    /// for exactly `desc.size` bytes during the call; with `USE_HOST_PTR` it
    /// is exactly `desc.size` bytes valid for the buffer's whole life (the
    /// [`HostPtr::new`] promise); otherwise `init` is `None`.
    unsafe fn create_buffer(
        &self,
        ctx: &Self::Context,
        desc: &BufferDesc<&Self::Device>,
        init: Option<HostPtr>,
    ) -> Result<Self::Buffer>;

    /// A buffer of `ctx` over a memory object the caller got from the
    /// backend itself (`handle`, e.g. an OpenCL `cl_mem` buffer), placed for
    /// `device`; its size in bytes and access flags come with it. The adapter
    /// takes a reference of its own unless `owned`. A memory object of
    /// another backend context is refused ([`Error::WrongContext`]), one that
    /// is not a buffer is invalid. Default: backend memory cannot be adopted.
    fn buffer_from_native(
        &self,
        ctx: &Self::Context,
        device: &Self::Device,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<(Self::Buffer, usize, MemFlags)> {
        let _ = (ctx, device, handle, owned);
        Err(Error::unsupported("buffers from native handles"))
    }

    /// Reads `dst.len()` bytes at `offset` of `buffer` into host memory.
    ///
    /// # Safety
    ///
    /// The command contract (see the trait docs).
    unsafe fn enqueue_read(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Writes `src.len()` bytes of host memory at `offset` of `buffer`.
    ///
    /// # Safety
    ///
    /// The command contract (see the trait docs).
    unsafe fn enqueue_write(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Copies `size` bytes between buffers.
    ///
    /// # Safety
    ///
    /// The command contract; when both are views of one buffer, the two
    /// regions do not overlap.
    unsafe fn enqueue_copy(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        src_offset: usize,
        dst: &Self::Buffer,
        dst_offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;

    /// Copies a 2-D/3-D box between buffers. The default issues one
    /// [`Memory::enqueue_copy`] per row (the queue is in order, so the last
    /// row's event completes after all of them).
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches; when both are views of
    /// one buffer, the two boxes' spans do not overlap.
    unsafe fn enqueue_copy_rect(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        dst: &Self::Buffer,
        rect: &RectCopy,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            // SAFETY: every row lies inside the checked box of each side.
            unsafe { self.enqueue_copy(queue, src, s, dst, d, len, w) }
        })
    }

    /// Reads a box of `buffer` (`rect.src`) into host memory laid out as
    /// `rect.dst`. The default issues one [`Memory::enqueue_read`] per row.
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches.
    unsafe fn enqueue_read_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            let row = dst
                .slice(d, len)
                .ok_or_else(|| Error::invalid("rect row outside host memory"))?;
            // SAFETY: the row lies inside the checked box of both sides.
            unsafe { self.enqueue_read(queue, buffer, s, row, w) }
        })
    }

    /// Writes a box of host memory laid out as `rect.src` into `buffer`
    /// (`rect.dst`). The default issues one [`Memory::enqueue_write`] per row.
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches.
    unsafe fn enqueue_write_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            let row = src
                .slice(s, len)
                .ok_or_else(|| Error::invalid("rect row outside host memory"))?;
            // SAFETY: the row lies inside the checked box of both sides.
            unsafe { self.enqueue_write(queue, buffer, d, row, w) }
        })
    }

    /// Fills `[offset, offset + size)` with a repeated pattern.
    ///
    /// # Safety
    ///
    /// The command contract; the pattern is 1..=128 bytes (a power of two
    /// unless the device has
    /// [`DeviceCaps::FILL_ANY_PATTERN`](crate::DeviceCaps::FILL_ANY_PATTERN)),
    /// and `offset` and `size` are multiples of its length.
    unsafe fn enqueue_fill(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
}

/// Optional group: sub-buffers
/// ([`DeviceCaps::SUB_BUFFERS`](crate::DeviceCaps::SUB_BUFFERS)). Without
/// it, `impl SubBuffers for MyAdapter {}`.
pub trait SubBuffers: Api {
    /// Creates a sub-buffer over `[offset, offset + size)` of `parent`
    /// ([`DeviceCaps::SUB_BUFFERS`](crate::DeviceCaps::SUB_BUFFERS)).
    ///
    /// # Safety
    ///
    /// `parent` is not itself a sub-buffer; `size > 0`, the range lies
    /// inside it and `offset` is a multiple of every context device's
    /// `sub_buffer_align`.
    unsafe fn create_sub_buffer(&self, parent: &Self::Buffer, offset: usize, size: usize) -> Result<Self::Buffer> {
        let _ = (parent, offset, size);
        Err(Error::unsupported("sub-buffers"))
    }
}

/// Optional group: mapping buffers into host memory
/// ([`DeviceCaps::MAP`](crate::DeviceCaps::MAP)). Without it,
/// `impl Mapping for MyAdapter {}`.
pub trait Mapping: Api {
    /// Maps a range of a buffer into host memory
    /// ([`DeviceCaps::MAP`](crate::DeviceCaps::MAP)). The returned span must
    /// be exactly `size` bytes, valid until unmapped.
    ///
    /// # Safety
    ///
    /// The command contract; `flags` are non-empty and `WRITE_INVALIDATE`
    /// stands alone.
    unsafe fn enqueue_map(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<(Self::Event, HostPtr)> {
        let _ = (queue, buffer, flags, offset, size, wait);
        Err(Error::unsupported("buffer mapping"))
    }
    /// Unmaps a mapping made by [`Mapping::enqueue_map`].
    ///
    /// # Safety
    ///
    /// The command contract; `mapped` is exactly a live mapping of `buffer`
    /// returned by [`Mapping::enqueue_map`], unmapped once.
    unsafe fn enqueue_unmap(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        mapped: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, buffer, mapped, wait);
        Err(Error::unsupported("buffer mapping"))
    }
}

/// Optional group: locking (pinning) existing host memory
/// ([`DeviceCaps::HOST_REGISTER`](crate::DeviceCaps::HOST_REGISTER)).
/// Without it, `impl HostLocking for MyAdapter {}`.
pub trait HostLocking: Api {
    /// Locks (pins) existing host memory for the devices of `ctx`
    /// ([`DeviceCaps::HOST_REGISTER`](crate::DeviceCaps::HOST_REGISTER)) and
    /// answers the address those devices reach it at: the host address
    /// where they share the host's address space, a device pointer
    /// otherwise. Reference counts, sub-ranges and merging live above (the
    /// memory manager's registry); here a range is locked once.
    ///
    /// # Safety
    ///
    /// `mem` is non-empty, not null, does not wrap the address space, is
    /// mapped in the process, overlaps no range locked with `ctx`, and stays
    /// valid until [`HostLocking::unlock_host`] of the same range.
    unsafe fn lock_host(&self, ctx: &Self::Context, mem: HostPtr) -> Result<DeviceAddr> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory locking"))
    }

    /// Undoes [`HostLocking::lock_host`].
    ///
    /// # Safety
    ///
    /// `mem` is exactly a range locked with `ctx` and not yet unlocked.
    unsafe fn unlock_host(&self, ctx: &Self::Context, mem: HostPtr) -> Result<()> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory locking"))
    }
}

/// The row-by-row defaults of the rect copies: `op(src_offset, dst_offset,
/// len, wait)` once per contiguous row, the first row after `wait`; the
/// queue is in order, so the last row's event completes after all of them.
fn per_row<E>(rect: &RectCopy, wait: &[&E], mut op: impl FnMut(usize, usize, usize, &[&E]) -> Result<E>) -> Result<E> {
    let mut rows = Vec::new();
    rect.for_each_row(|s, d, len| rows.push((s, d, len)));
    let mut last = None;
    for (i, (s, d, len)) in rows.into_iter().enumerate() {
        last = Some(op(s, d, len, if i == 0 { wait } else { &[] })?);
    }
    last.ok_or_else(|| Error::invalid("empty rect"))
}
