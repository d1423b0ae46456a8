//! [`UnifiedMemory`]: the optional USM group.

use super::{Commands, MemArg, UsmRef};
use crate::error::{Error, Result};
use crate::types::{UsmAdvice, UsmDesc, UsmPtr};

/// Optional group: USM allocations and commands (a non-empty
/// [`UsmCaps`](crate::UsmCaps)). Without it,
/// `impl UnifiedMemory for MyAdapter {}` (and `type Usm = ()`).
pub trait UnifiedMemory: Commands {
    /// Allocates USM memory in `ctx` (a non-empty [`UsmCaps`](crate::UsmCaps));
    /// returns the allocation and its base address. The dyn layer checked
    /// that the kind is supported, the size non-zero and within the largest
    /// allocation, the alignment 0 or a power of two no larger than the
    /// device's largest allocation, and that a device allocation names a device.
    fn usm_alloc(&self, ctx: &Self::Context, desc: &UsmDesc<&Self::Device>) -> Result<(Self::Usm, UsmPtr)> {
        let _ = (ctx, desc);
        Err(Error::unsupported("USM allocations"))
    }

    /// Frees a USM allocation. Commands already enqueued may still use it:
    /// the memory must stay valid until they complete (wait for them, or
    /// let them hold it). The default drops `alloc`.
    ///
    /// # Safety
    ///
    /// `alloc` was made by [`UnifiedMemory::usm_alloc`] in `ctx`, and no command
    /// is enqueued with it from now on.
    unsafe fn usm_free(&self, ctx: &Self::Context, alloc: Self::Usm) -> Result<()> {
        let _ = ctx;
        drop(alloc);
        Ok(())
    }

    /// Copies `size` bytes between USM and/or host memory.
    ///
    /// # Safety
    ///
    /// The command contract; the two ranges do not overlap.
    unsafe fn enqueue_usm_copy(
        &self,
        queue: &Self::Queue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, dst, src, size, wait);
        Err(Error::unsupported("USM copies"))
    }
    /// Fills `size` bytes of USM memory with a pattern.
    ///
    /// # Safety
    ///
    /// As [`Memory::enqueue_fill`](super::Memory::enqueue_fill), for the USM range.
    unsafe fn enqueue_usm_fill(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, ptr, size, pattern, wait);
        Err(Error::unsupported("USM fills"))
    }
    /// Hints that `size` bytes of USM memory will be used on the queue's
    /// device soon. The default is a barrier (a prefetch is only a hint;
    /// its ordering is all that must hold).
    ///
    /// # Safety
    ///
    /// The command contract.
    unsafe fn enqueue_usm_prefetch(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (ptr, size);
        self.enqueue_barrier(queue, wait)
    }
    /// Attaches advice to `size` bytes of USM memory. The default ignores it
    /// (advice is a hint).
    ///
    /// # Safety
    ///
    /// The command contract; `PREFER_DEVICE` and `PREFER_HOST` are not both set.
    unsafe fn usm_advise(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        advice: UsmAdvice,
    ) -> Result<()> {
        let _ = (queue, ptr, size, advice);
        Ok(())
    }
}
