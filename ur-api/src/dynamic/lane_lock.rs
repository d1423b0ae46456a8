//! A lane's lock: a test-and-test-and-set spin lock whose unlock is a plain
//! release store.
//!
//! A lane's lock is taken two or three times per command (begin, record,
//! release) and held for a few dozen instructions, by threads that mostly
//! submit to their own lanes. An uncontended round trip of a parking mutex
//! is two atomic read-modify-writes (the unlock must learn whether a
//! waiter parked); here it is one, and the unlock a store. A waiter spins
//! briefly, then yields its time slice until the lock is free, so a holder
//! that was preempted gets the processor back.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// How often a waiter spins before it starts yielding.
const SPINS: u32 = 64;

/// A spin lock over a `T`; see the module docs.
pub(super) struct LaneMutex<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `LaneGuard`, and at most one
// guard exists at a time (`lock` acquires `locked`, the guard's drop
// releases it), so sharing the mutex shares `T` only as a `Mutex<T>`
// would: moved between threads, never aliased (`T: Send`).
unsafe impl<T: Send> Sync for LaneMutex<T> {}

impl<T> LaneMutex<T> {
    pub(super) fn new(value: T) -> Self {
        LaneMutex {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Waits for the lock and takes it.
    #[inline]
    pub(super) fn lock(&self) -> LaneGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        LaneGuard {
            mutex: self,
            _value: PhantomData,
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_contended(&self) {
        let mut spins = 0;
        loop {
            // Wait reading only, so waiters do not steal the line from the
            // holder; then try once.
            while self.locked.load(Ordering::Relaxed) {
                if spins < SPINS {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

/// The lock held; released when dropped.
pub(super) struct LaneGuard<'a, T> {
    mutex: &'a LaneMutex<T>,
    /// Shares `T` as `&mut T` would (`Sync` only where `T: Sync`).
    _value: PhantomData<&'a mut T>,
}

impl<'a, T> LaneGuard<'a, T> {
    /// The mutex this guard holds.
    #[inline(always)]
    pub(super) fn mutex(g: &Self) -> &'a LaneMutex<T> {
        g.mutex
    }
}

impl<T> Deref for LaneGuard<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other guard (the only
        // way to the value) exists until it is dropped.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T> DerefMut for LaneGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow
        // through the guard.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T> Drop for LaneGuard<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        // Release: the holder's writes happen before the next `lock`'s
        // acquire that reads `false`.
        self.mutex.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads (more than this machine's cores, so holders are preempted)
    /// increment a plain counter under the lock: none is lost, and every
    /// holder sees the previous holder's writes.
    #[test]
    fn excludes_and_publishes() {
        const THREADS: usize = 6;
        const ROUNDS: usize = 20_000;
        let m = LaneMutex::new((0usize, [0usize; 4]));
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ROUNDS {
                        let mut g = m.lock();
                        // A read-modify-write across several plain
                        // accesses: two holders at once would lose updates
                        // or leave the array unequal.
                        let n = std::hint::black_box(g.0);
                        for x in g.1.iter_mut() {
                            assert_eq!(*x, n, "a holder saw another's half-done update");
                            *x = n + 1;
                        }
                        g.0 = n + 1;
                    }
                });
            }
        });
        let g = m.lock();
        assert_eq!(g.0, THREADS * ROUNDS);
        assert_eq!(g.1, [THREADS * ROUNDS; 4]);
    }

    #[test]
    fn a_guard_names_its_mutex() {
        let (a, b) = (LaneMutex::new(1), LaneMutex::new(2));
        let g = a.lock();
        assert!(std::ptr::eq(LaneGuard::mutex(&g), &a));
        assert!(!std::ptr::eq(LaneGuard::mutex(&g), &b));
        drop(g);
        assert_eq!(*a.lock(), 1, "released on drop: locks again");
    }
}
