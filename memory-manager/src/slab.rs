//! The host place's stores ([`HostStore`]): a buffer of more than
//! [`SLAB_MAX`] bytes gets its own page-aligned pinned block; a smaller one
//! gets a slot of its size class (powers of two from [`MIN_CLASS`] to
//! [`SLAB_MAX`]) in a shared pinned slab of [`SLAB_BYTES`], so that many
//! small buffers do not each cost a page. Slots go back to their class's
//! free list when the store is dropped; slabs live as long as the manager.

use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{ContextId, HostPtr, Runtime};

use crate::staging::{PinnedBlock, HOST_ALIGN};

/// The largest host store sub-allocated from a slab (a quarter page).
pub(crate) const SLAB_MAX: usize = 1024;
/// The smallest size class.
pub(crate) const MIN_CLASS: usize = 16;
/// Bytes per slab.
pub(crate) const SLAB_BYTES: usize = 64 << 10;

/// The size class of a store of `len` bytes, `None` above [`SLAB_MAX`].
pub(crate) fn class_of(len: usize) -> Option<usize> {
    (len <= SLAB_MAX).then(|| len.max(MIN_CLASS).next_power_of_two())
}

/// One slot of a slab: its block and the offset of the slot in it.
pub(crate) struct SlabSlot {
    slab: Arc<PinnedBlock>,
    offset: usize,
}

/// The slabs, one free list per size class.
#[derive(Default)]
pub(crate) struct SlabPool {
    free: Mutex<Vec<(usize, Vec<SlabSlot>)>>,
    /// Bytes of host memory held by host stores: whole blocks for large
    /// stores (rounded to a page), whole slabs for small ones.
    pub host_bytes: AtomicU64,
    /// Slabs allocated.
    pub slabs: AtomicU64,
}

impl std::fmt::Debug for SlabPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlabPool({} slabs)", self.slabs.load(Ordering::Relaxed))
    }
}

/// The memory of the host place of one logical buffer.
pub(crate) enum HostStore {
    /// A block of its own.
    Own(PinnedBlock, Arc<SlabPool>),
    /// A slot of a shared slab (`len` bytes used of its class).
    Slab {
        slot: Option<SlabSlot>,
        len: usize,
        class: usize,
        pool: Arc<SlabPool>,
    },
}

impl SlabPool {
    /// A zeroed host store of `len` bytes, pinned for the first of
    /// `contexts` that can allocate USM host memory, else plain.
    pub(crate) fn store(
        self: &Arc<Self>,
        rt: &Arc<Runtime>,
        contexts: &[ContextId],
        len: usize,
    ) -> ur_api::Result<HostStore> {
        let Some(class) = class_of(len) else {
            let block = PinnedBlock::pinned(rt, contexts, len)?;
            self.host_bytes
                .fetch_add(len.next_multiple_of(HOST_ALIGN) as u64, Ordering::Relaxed);
            return Ok(HostStore::Own(block, self.clone()));
        };
        let mut free = self.free.lock();
        let i = match free.iter().position(|(c, _)| *c == class) {
            Some(i) => i,
            None => {
                free.push((class, Vec::new()));
                free.len() - 1
            }
        };
        if free[i].1.is_empty() {
            let slab = Arc::new(PinnedBlock::pinned(rt, contexts, SLAB_BYTES)?);
            self.slabs.fetch_add(1, Ordering::Relaxed);
            self.host_bytes.fetch_add(SLAB_BYTES as u64, Ordering::Relaxed);
            // Reversed so that slots are handed out in address order.
            free[i].1.extend((0..SLAB_BYTES / class).rev().map(|k| SlabSlot {
                slab: slab.clone(),
                offset: k * class,
            }));
        }
        let slot = free[i].1.pop().expect("a slab was just added");
        drop(free);
        let mut store = HostStore::Slab {
            slot: Some(slot),
            len,
            class,
            pool: self.clone(),
        };
        // A reused slot holds an earlier buffer's bytes.
        store.as_mut_slice().fill(0);
        Ok(store)
    }
}

impl HostStore {
    fn raw(&self) -> (NonNull<u8>, usize) {
        match self {
            HostStore::Own(b, _) => (b.base(), b.len()),
            HostStore::Slab { slot, len, .. } => {
                let s = slot.as_ref().expect("a live store has its slot");
                // SAFETY: offset + class <= SLAB_BYTES, the slab's size, so
                // the result stays inside the slab's allocation.
                (unsafe { s.slab.base().add(s.offset) }, *len)
            }
        }
    }

    /// The context the memory is pinned for, if any.
    pub(crate) fn pinned_for(&self) -> Option<ContextId> {
        match self {
            HostStore::Own(b, _) => b.pinned_for(),
            HostStore::Slab { slot, .. } => slot.as_ref().and_then(|s| s.slab.pinned_for()),
        }
    }

    pub(crate) fn as_slice(&self) -> &[u8] {
        let (p, len) = self.raw();
        // SAFETY: `p` is valid for `len` initialised (zeroed at creation)
        // bytes while `self` lives; a slab slot is this store's alone (the
        // pool hands each slot to one store at a time).
        unsafe { std::slice::from_raw_parts(p.as_ptr(), len) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        let (p, len) = self.raw();
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) }
    }

    /// A `HostPtr` over `range` for an operation whose event the manager
    /// records on the host place's allocation (see `Slot::busy`): nothing
    /// on the host touches these bytes, and the store is not freed, before
    /// that event completes.
    pub(crate) fn host_ptr(&mut self, range: Range<usize>) -> HostPtr {
        let s = &mut self.as_mut_slice()[range];
        // SAFETY: see above: every host-side access and the release of the
        // store wait for the events recorded on the host allocation.
        unsafe { HostPtr::new(s.as_mut_ptr(), s.len()) }
    }
}

impl Drop for HostStore {
    fn drop(&mut self) {
        match self {
            HostStore::Own(b, pool) => {
                pool.host_bytes
                    .fetch_sub(b.len().next_multiple_of(HOST_ALIGN) as u64, Ordering::Relaxed);
            }
            HostStore::Slab { slot, class, pool, .. } => {
                if let Some(slot) = slot.take() {
                    let mut free = pool.free.lock();
                    if let Some((_, v)) = free.iter_mut().find(|(c, _)| c == class) {
                        v.push(slot);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes() {
        assert_eq!(class_of(1), Some(16));
        assert_eq!(class_of(16), Some(16));
        assert_eq!(class_of(17), Some(32));
        assert_eq!(class_of(1024), Some(1024));
        assert_eq!(class_of(1025), None);
    }

    #[test]
    fn slots_are_shared_zeroed_and_reused() {
        let rt = Arc::new(Runtime::new());
        let pool = Arc::new(SlabPool::default());
        let mut a = pool.store(&rt, &[], 10).unwrap();
        let b = pool.store(&rt, &[], 16).unwrap();
        assert_eq!(a.as_slice().len(), 10);
        assert_eq!(b.as_slice().as_ptr() as usize - a.as_slice().as_ptr() as usize, 16);
        a.as_mut_slice().fill(9);
        let p = a.as_slice().as_ptr();
        drop(a);
        let c = pool.store(&rt, &[], 12).unwrap();
        assert_eq!(c.as_slice().as_ptr(), p, "the freed slot is reused");
        assert!(c.as_slice().iter().all(|x| *x == 0));
        assert_eq!(pool.slabs.load(Ordering::Relaxed), 1);
        let big = pool.store(&rt, &[], 5000).unwrap();
        assert_eq!(big.as_slice().len(), 5000);
        assert_eq!(pool.host_bytes.load(Ordering::Relaxed), (SLAB_BYTES + 8192) as u64);
        drop(big);
        assert_eq!(pool.host_bytes.load(Ordering::Relaxed), SLAB_BYTES as u64);
    }
}
