//! The tables' lock and the lanes: readers either share a read-write lock
//! or hold any one lane's mutex; writers hold the read-write lock
//! exclusively *and* every lane's mutex.
//!
//! A command locks its queue's lane anyway (to begin its operation and
//! borrow its wait list), so it reads the tables under that lane's lock
//! and takes no lock that every thread shares: threads submitting to
//! queues of different lanes touch no common cache line. Other readers
//! (queries, object creation) share `rw`. Objects are made and released
//! rarely; a writer waits for every lane in turn.
//!
//! Lock order: `rw`, then lanes in index order (writers); a thread holding
//! a lane's mutex takes neither `rw` nor another lane's mutex.

use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::spin::{SpinGuard as LaneGuard, SpinMutex as LaneMutex};

/// A lane's mutex on its own cache lines.
#[repr(align(128))]
struct Padded<L>(LaneMutex<L>);

/// A value `T` read under `rw` (shared) or one of `N` lanes' mutexes,
/// written under `rw` (exclusive) and every lane's mutex; and the lanes,
/// each an `L` of its own. See the module docs.
pub(super) struct TableLock<T, L, const N: usize> {
    rw: RwLock<()>,
    value: UnsafeCell<T>,
    lanes: Box<[Padded<L>; N]>,
}

// SAFETY: the value is reached through `&` only by readers (holding `rw`
// shared or a lane's mutex) and through `&mut` only by a writer that
// excludes all of them (holding `rw` exclusively and every lane's mutex),
// as a `RwLock<T>` would, so `T: Send + Sync` suffices for it; the lanes
// are mutexes (`L: Send`).
unsafe impl<T: Send + Sync, L: Send, const N: usize> Sync for TableLock<T, L, N> {}

impl<T, L, const N: usize> TableLock<T, L, N> {
    pub(super) fn new(value: T, lane: impl FnMut(usize) -> L) -> Self {
        let mut lane = lane;
        TableLock {
            rw: RwLock::new(()),
            value: UnsafeCell::new(value),
            lanes: Box::new(std::array::from_fn(|i| Padded(LaneMutex::new(lane(i))))),
        }
    }

    /// Lane `i`'s mutex.
    #[inline(always)]
    pub(super) fn lane(&self, i: usize) -> &LaneMutex<L> {
        &self.lanes[i].0
    }

    /// Every lane's mutex, in index order.
    pub(super) fn lanes(&self) -> impl Iterator<Item = &LaneMutex<L>> {
        self.lanes.iter().map(|p| &p.0)
    }

    /// Shared access for a reader that holds no lane's mutex.
    pub(super) fn read(&self) -> TablesRead<'_, T> {
        let guard = self.rw.read();
        // SAFETY: `rw` is held shared: no writer holds it exclusively, so
        // none writes the value while the guard lives.
        let value = unsafe { &*self.value.get() };
        TablesRead { _guard: guard, value }
    }

    /// Shared access under a lane's lock `l` (lane `i`'s), for as long as
    /// `l` is borrowed.
    ///
    /// # Panics
    ///
    /// If `l` does not guard lane `i` of this lock.
    #[inline(always)]
    pub(super) fn read_under<'g>(&'g self, i: usize, l: &'g LaneGuard<'_, L>) -> &'g T {
        assert!(
            std::ptr::eq(LaneGuard::mutex(l), self.lane(i)),
            "the tables are read under a lane lock of their own"
        );
        // SAFETY: `l` holds one of this lock's lanes, which every writer
        // holds while it has `&mut` access (`write`); the reference lives
        // no longer than the borrow of `l`.
        unsafe { &*self.value.get() }
    }

    /// Exclusive access: takes `rw` exclusively, then every lane's mutex in
    /// index order. No lane may be locked while the guard lives.
    pub(super) fn write(&self) -> TablesWrite<'_, T, L, N> {
        let guard = self.rw.write();
        let lanes = std::array::from_fn(|i| self.lane(i).lock());
        // SAFETY: `rw` is held exclusively (no reader through `read`) and
        // every lane's mutex is held (no reader through `read_under`): this
        // is the only access until the guard is dropped.
        let value = unsafe { &mut *self.value.get() };
        TablesWrite {
            value,
            _lanes: lanes,
            _guard: guard,
        }
    }
}

/// Shared access through `rw`.
pub(super) struct TablesRead<'a, T> {
    _guard: RwLockReadGuard<'a, ()>,
    value: &'a T,
}

impl<T> Deref for TablesRead<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

/// Exclusive access: `rw` and every lane's mutex held.
pub(super) struct TablesWrite<'a, T, L, const N: usize> {
    value: &'a mut T,
    // Fields drop in declaration order: the lanes before `rw`.
    _lanes: [LaneGuard<'a, L>; N],
    _guard: RwLockWriteGuard<'a, ()>,
}

impl<T, L, const N: usize> Deref for TablesWrite<'_, T, L, N> {
    type Target = T;

    fn deref(&self) -> &T {
        self.value
    }
}

impl<T, L, const N: usize> DerefMut for TablesWrite<'_, T, L, N> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    /// A writer waits for every lane: while any one lane is held (a command
    /// reading the tables under it), no write can begin; it begins once the
    /// lane is released.
    #[test]
    fn a_writer_waits_for_every_lane() {
        let t: TableLock<Vec<u32>, u32, 4> = TableLock::new(Vec::new(), |i| i as u32);
        for i in 0..4 {
            let wrote = AtomicBool::new(false);
            std::thread::scope(|s| {
                let l = t.lane(i).lock();
                let before = t.read_under(i, &l).len();
                let writer = s.spawn(|| {
                    t.write().push(7);
                    wrote.store(true, Ordering::SeqCst);
                });
                std::thread::sleep(Duration::from_millis(50));
                assert!(!wrote.load(Ordering::SeqCst), "a write began while lane {i} was held");
                assert_eq!(t.read_under(i, &l).len(), before, "the tables changed under lane {i}");
                drop(l);
                writer.join().expect("the writer finishes");
            });
            assert!(wrote.load(Ordering::SeqCst));
        }
        assert_eq!(t.read().len(), 4);
    }

    /// A writer also waits for the shared readers of `rw`, and readers under
    /// different lanes do not wait for each other.
    #[test]
    fn shared_readers_and_lanes() {
        let t: TableLock<u32, (), 2> = TableLock::new(1, |_| ());
        let r = t.read();
        let (a, b) = (t.lane(0).lock(), t.lane(1).lock());
        assert_eq!((*r, *t.read_under(0, &a), *t.read_under(1, &b)), (1, 1, 1));
        drop((a, b));
        let wrote = AtomicBool::new(false);
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                *t.write() = 2;
                wrote.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!wrote.load(Ordering::SeqCst), "a write began under a shared reader");
            assert_eq!(*r, 1);
            drop(r);
            writer.join().expect("the writer finishes");
        });
        assert_eq!(*t.read(), 2);
    }

    #[test]
    #[should_panic(expected = "a lane lock of their own")]
    fn a_foreign_lane_guard_is_refused() {
        let (t, other): (TableLock<u32, (), 2>, TableLock<u32, (), 2>) =
            (TableLock::new(1, |_| ()), TableLock::new(2, |_| ()));
        let l = other.lane(0).lock();
        let _ = t.read_under(0, &l);
    }

    #[test]
    #[should_panic(expected = "a lane lock of their own")]
    fn another_lanes_guard_is_refused() {
        let t: TableLock<u32, (), 2> = TableLock::new(1, |_| ());
        let l = t.lane(1).lock();
        let _ = t.read_under(0, &l);
    }
}
