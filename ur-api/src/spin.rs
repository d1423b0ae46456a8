//! A test-and-test-and-set spin lock whose unlock is a plain release
//! store: the lock of the dyn layer's lanes ([`crate::dynamic`]) and of
//! `ur-capi`'s handle headers.
//!
//! Both are taken on every command and held for a few instructions (a
//! lookup, a ticket, a reference count), mostly by threads on their own
//! lanes and handles. An uncontended round trip of a parking mutex is two
//! atomic read-modify-writes (the unlock must learn whether a waiter
//! parked); here it is one, and the unlock a store, which is what the
//! dispatch benches measured. A waiter spins briefly, then yields its time
//! slice until the lock is free, so a holder that was preempted gets the
//! processor back. Not for locks held across blocking calls: a waiter
//! there would burn its time slices.

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// How often a waiter spins before it starts yielding.
const SPINS: u32 = 64;

/// A spin lock over a `T`; see the module docs.
pub struct SpinMutex<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `SpinGuard`, and at most one
// guard exists at a time (`lock` acquires `locked`, the guard's drop
// releases it), so sharing the mutex shares `T` only as a `Mutex<T>`
// would: moved between threads, never aliased (`T: Send`).
unsafe impl<T: Send> Sync for SpinMutex<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for SpinMutex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpinMutex")
            .field("locked", &self.locked.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> SpinMutex<T> {
    /// An unlocked mutex over `value`.
    pub const fn new(value: T) -> Self {
        SpinMutex {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Waits for the lock and takes it.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard {
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
pub struct SpinGuard<'a, T> {
    mutex: &'a SpinMutex<T>,
    /// Shares `T` as `&mut T` would (`Sync` only where `T: Sync`).
    _value: PhantomData<&'a mut T>,
}

impl<'a, T> SpinGuard<'a, T> {
    /// The mutex this guard holds.
    #[inline(always)]
    pub fn mutex(g: &Self) -> &'a SpinMutex<T> {
        g.mutex
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SpinGuard").field(&**self).finish()
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: this guard holds the lock, so no other guard (the only
        // way to the value) exists until it is dropped.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow
        // through the guard.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
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

    /// Threads (more than this machine's cores, so holders are preempted
    /// and the yielding path runs) update plain data under the lock: no
    /// update is lost, and every holder sees the previous holder's writes.
    /// A lock that does not exclude (an `Ordering::Relaxed` acquire or an
    /// unlock before the holder's writes) fails it.
    #[test]
    fn excludes_and_publishes() {
        const THREADS: usize = 6;
        const ROUNDS: usize = 20_000;
        let m = SpinMutex::new((0usize, [0usize; 4]));
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
                        std::hint::black_box(&mut *g);
                        g.0 = n + 1;
                    }
                });
            }
        });
        let g = m.lock();
        assert_eq!(g.0, THREADS * ROUNDS, "updates were lost");
        assert_eq!(g.1, [THREADS * ROUNDS; 4]);
    }

    #[test]
    fn a_released_lock_is_taken_again() {
        let m = SpinMutex::new(1u32);
        *m.lock() += 1;
        *m.lock() += 1;
        assert_eq!(*m.lock(), 3);
    }

    #[test]
    fn a_guard_names_its_mutex() {
        let (a, b) = (SpinMutex::new(1), SpinMutex::new(2));
        let g = a.lock();
        assert!(std::ptr::eq(SpinGuard::mutex(&g), &a));
        assert!(!std::ptr::eq(SpinGuard::mutex(&g), &b));
        drop(g);
        assert_eq!(*a.lock(), 1, "released on drop: locks again");
    }
}
