//! The event table: entries addressed by (slot, generation), in chunks that
//! never move, with a free list.
//!
//! Every command inserts an event and most are released soon after, so
//! insert and remove are a few instructions: pop or push a free slot index
//! and bump the slot's generation. A slot's generation is odd while it
//! holds a live entry and even once removed, so a stale key (an odd
//! generation of an earlier use) never matches a later entry, as with
//! `slotmap` (whose key layout [`EventKey`] keeps).
//!
//! Entries stay where they are until their slot is reclaimed, so a
//! [`Held`](super::grace::Held) borrow of one stays valid while the table
//! grows; a removed entry whose slot is still borrowed is left in place
//! (its generation already even) and reclaimed once the grace period ends.
//! The chunks are reached through raw pointers only, and only one slot is
//! referenced at a time, so writing one slot asserts nothing about borrows
//! of another.

use std::ptr::NonNull;

use slotmap::{Key, KeyData};

use crate::handles::EventKey;

/// Slots per chunk.
const CHUNK: usize = 64;

struct Slot<T> {
    /// Odd: holds a live entry; even: vacant, or removed and retired.
    generation: u32,
    entry: Option<T>,
}

/// Entries by (slot, generation); see the module docs.
pub(super) struct Slab<T> {
    /// Each a `Box<[Slot<T>; CHUNK]>` turned into a raw pointer.
    chunks: Vec<NonNull<Slot<T>>>,
    /// Vacant slots, reused last-in first-out.
    free: Vec<u32>,
    /// Live entries.
    len: usize,
}

// SAFETY: a `Slab` owns its chunks and their entries as a `Vec<Box<_>>`
// would; the raw pointers are never shared outside it.
unsafe impl<T: Send> Send for Slab<T> {}
// SAFETY: shared access gives only `&T` (see `get`).
unsafe impl<T: Sync> Sync for Slab<T> {}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            chunks: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

fn split(key: EventKey) -> (usize, u32) {
    let raw = key.data().as_ffi();
    ((raw & 0xffff_ffff) as usize, (raw >> 32) as u32)
}

impl<T> Slab<T> {
    /// The slot at `index`, if the table has grown that far.
    #[inline]
    fn slot(&self, index: usize) -> Option<*mut Slot<T>> {
        let chunk = self.chunks.get(index / CHUNK)?;
        // SAFETY: `index % CHUNK` lies inside the chunk's array.
        Some(unsafe { chunk.as_ptr().add(index % CHUNK) })
    }

    /// The slot of a live entry's key.
    #[inline]
    fn live(&self, key: EventKey) -> Option<*mut Slot<T>> {
        let (index, generation) = split(key);
        let p = self.slot(index)?;
        // SAFETY: a slot of a live chunk; its generation is read through
        // the raw pointer (no reference to the slot is made).
        let g = unsafe { std::ptr::addr_of!((*p).generation).read() };
        (g == generation).then_some(p)
    }

    /// How many entries are live.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let base = (self.chunks.len() * CHUNK) as u32;
        let chunk: Box<[Slot<T>]> = (0..CHUNK)
            .map(|_| Slot {
                generation: 0,
                entry: None,
            })
            .collect();
        let raw = Box::into_raw(chunk).cast::<Slot<T>>();
        // SAFETY: `Box::into_raw` never returns null.
        self.chunks.push(unsafe { NonNull::new_unchecked(raw) });
        // Lowest index on top of the stack.
        self.free.extend((base..base + CHUNK as u32).rev());
    }

    /// Inserts an entry; its key.
    #[inline]
    pub(super) fn insert(&mut self, entry: T) -> EventKey {
        if self.free.is_empty() {
            self.grow();
        }
        let index = self.free.pop().expect("grow adds vacant slots");
        let p = self.slot(index as usize).expect("free slots lie in chunks");
        // SAFETY: `p` points to a vacant slot of a live chunk: no borrow of
        // it exists (vacant slots are never lent), and this `&mut self`
        // call is the only access. A vacant slot's entry is `None`, so
        // overwriting it without a drop leaks nothing.
        let generation = unsafe {
            let s = &mut *p;
            s.generation = s.generation.wrapping_add(1) | 1;
            std::ptr::addr_of_mut!(s.entry).write(Some(entry));
            s.generation
        };
        self.len += 1;
        EventKey::from(KeyData::from_ffi((u64::from(generation) << 32) | u64::from(index)))
    }

    /// The live entry of `key`.
    #[inline]
    pub(super) fn get(&self, key: EventKey) -> Option<&T> {
        let p = self.live(key)?;
        // SAFETY: a live slot of a live chunk; its entry is only lent
        // shared, for as long as `&self`.
        unsafe { (*std::ptr::addr_of!((*p).entry)).as_ref() }
    }

    /// Removes the live entry of `key` and frees its slot at once: only
    /// when no borrow of the entry can be alive (no operation in flight).
    #[inline]
    pub(super) fn take(&mut self, key: EventKey) -> Option<T> {
        let p = self.live(key)?;
        let (index, generation) = split(key);
        // SAFETY: a live slot of a live chunk with no borrow of its entry
        // alive (the caller's condition); `&mut self` is the only access.
        let entry = unsafe {
            let s = &mut *p;
            s.generation = generation.wrapping_add(1);
            s.entry.take()
        };
        self.free.push(index as u32);
        self.len -= 1;
        entry
    }

    /// Removes the live entry of `key`, leaving it in its slot (the key is
    /// stale from now on); its slot index, for [`Slab::reclaim`] now or,
    /// if it may still be borrowed, once its grace period ends.
    #[inline]
    pub(super) fn remove(&mut self, key: EventKey) -> Option<u32> {
        let p = self.live(key)?;
        let (index, generation) = split(key);
        // SAFETY: a live slot of a live chunk. Only its `generation` is
        // written, through the raw pointer: a borrow of its entry stays valid.
        unsafe { std::ptr::addr_of_mut!((*p).generation).write(generation.wrapping_add(1)) };
        self.len -= 1;
        Some(index as u32)
    }

    /// Takes the entry out of a removed slot and makes the slot vacant.
    /// The caller guarantees no borrow of the entry is alive (no operation
    /// in flight, or the grace period of the removal has ended).
    #[inline]
    pub(super) fn reclaim(&mut self, index: u32) -> T {
        let p = self.slot(index as usize).expect("a removed slot lies in a chunk");
        // SAFETY: a slot of a live chunk, removed (even generation), with
        // no borrow of its entry alive (the caller's guarantee).
        let entry = unsafe {
            debug_assert!((*p).generation % 2 == 0, "only removed slots are reclaimed");
            (*p).entry.take()
        };
        self.free.push(index);
        entry.expect("a removed slot holds its entry until reclaimed")
    }
}

impl<T> Drop for Slab<T> {
    fn drop(&mut self) {
        for chunk in self.chunks.drain(..) {
            let slice = std::ptr::slice_from_raw_parts_mut(chunk.as_ptr(), CHUNK);
            // SAFETY: made by `Box::into_raw` of a `Box<[Slot<T>]>` of
            // `CHUNK` slots in `grow`, freed once, here.
            drop(unsafe { Box::from_raw(slice) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_get_remove_reuse() {
        let mut s = Slab::default();
        let a = s.insert(1u32);
        let b = s.insert(2u32);
        assert_eq!((s.get(a), s.get(b), s.len()), (Some(&1), Some(&2), 2));
        let i = s.remove(a).expect("live");
        assert_eq!(s.get(a), None, "a removed key is stale");
        assert_eq!(s.remove(a), None, "removed once");
        assert_eq!(s.reclaim(i), 1);
        let c = s.insert(3u32);
        assert_ne!(a, c, "the slot is reused under a new generation");
        assert_eq!(split(a).0, split(c).0);
        assert_eq!((s.get(a), s.get(c), s.len()), (None, Some(&3), 2));
    }

    #[test]
    fn take_frees_the_slot_at_once() {
        let mut s = Slab::default();
        let a = s.insert(1u8);
        assert_eq!(s.take(a), Some(1));
        assert_eq!((s.take(a), s.get(a), s.len()), (None, None, 0));
        let b = s.insert(2u8);
        assert_eq!(split(a).0, split(b).0, "the slot is reused");
        assert_eq!(s.get(b), Some(&2));
    }

    #[test]
    fn borrows_survive_growth_and_other_slots() {
        let mut s = Slab::default();
        let first = s.insert(String::from("first"));
        let p: *const String = s.get(first).expect("live");
        let keys: Vec<_> = (0..3 * CHUNK).map(|i| s.insert(i.to_string())).collect();
        for k in &keys[..CHUNK] {
            let i = s.remove(*k).expect("live");
            drop(s.reclaim(i));
        }
        // Removed but not reclaimed: still readable by an old borrow.
        s.remove(first).expect("live");
        // SAFETY: the slot is not reclaimed and chunks never move.
        assert_eq!(unsafe { &*p }, "first");
        assert_eq!(s.len(), 2 * CHUNK);
    }

    #[test]
    fn foreign_and_null_keys_miss() {
        let mut s: Slab<u8> = Slab::default();
        assert_eq!(s.get(EventKey::null()), None);
        assert_eq!(s.remove(EventKey::null()), None);
        let k = s.insert(1);
        let (i, g) = split(k);
        let forged = EventKey::from(KeyData::from_ffi((u64::from(g + 2) << 32) | i as u64));
        assert_eq!(s.get(forged), None);
    }
}
