//! The timeline of one in-order queue: which of its commands have finished,
//! which one runs, and the errors of those that failed.
//!
//! An in-order queue's commands finish in the order they were enqueued, so
//! the state of every command is a function of a few counters: command
//! `seq` (numbered from 1) is complete once `completed >= seq`, running
//! while `running == seq`, queued before. An event is then just the
//! timeline and a number (see [`crate::NativeEvent`]); no command needs a
//! completion object of its own.
//!
//! # Waking only whom a completion concerns
//!
//! Waiters register the number they wait for in `wake_at` (the smallest
//! registered one; `u64::MAX` when nobody waits), and the worker takes the
//! lock and notifies only when it completes a command at or past it. (A
//! plain waiter count made `finish()` behind a long backlog wake for every
//! command: a futex wake and a context switch each, 2.8 µs per command in
//! the dispatch bench when both threads shared a core.) Notifying resets
//! `wake_at` under the lock; every woken waiter that is not done yet
//! registers again (under the lock) before it sleeps.
//!
//! No wake-up is lost: a waiter registers and then checks `completed`; the
//! worker stores `completed` and then reads `wake_at`. All four accesses
//! are `SeqCst`, so at least one side sees the other's write: if the worker
//! misses the registration, the waiter's check comes later in the total
//! order and sees the new `completed`; otherwise the worker takes the lock
//! (so it cannot notify between a waiter's check under the lock and its
//! going to sleep) and notifies.
//!
//! # Failures
//!
//! A failed command's error is stored keyed by its number before
//! `completed` passes it, and kept for as long as the timeline lives: as
//! long as the queue or any of its events. Failures are rare (an error
//! each), and keeping them is what lets a `wait()` long after the failure,
//! or a later command depending on it, still report the cause.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Condvar, Mutex};
use ur_api::{Error, EventStatus, Result};

/// The fields the worker writes for every command, on a cache line of
/// their own: the enqueueing thread updates the timeline's reference count
/// for every event it hands out, and sharing a line with it would make the
/// two threads fight over that line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Progress {
    /// Every command numbered up to this one has finished.
    completed: AtomicU64,
    /// The command running now (or the last one that ran).
    running: AtomicU64,
}

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Timeline {
    progress: Progress,
    /// The smallest command number a thread blocked in [`Timeline::wait`]
    /// waits for; `u64::MAX` when none does.
    wake_at: AtomicU64,
    /// Whether `failures` has ever held anything (read without the lock).
    any_failed: AtomicBool,
    /// Failed commands' numbers (ascending) and errors; also the lock of `done`.
    failures: Mutex<Vec<(u64, Error)>>,
    done: Condvar,
    /// How many times the worker notified (tests only).
    #[cfg(test)]
    notified: std::sync::atomic::AtomicUsize,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            progress: Progress::default(),
            wake_at: AtomicU64::new(u64::MAX),
            any_failed: AtomicBool::new(false),
            failures: Mutex::new(Vec::new()),
            done: Condvar::new(),
            #[cfg(test)]
            notified: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl Timeline {
    /// Whether command `seq` has finished (completed or failed).
    pub(crate) fn is_done(&self, seq: u64) -> bool {
        self.progress.completed.load(Ordering::SeqCst) >= seq
    }

    /// The status of command `seq`.
    pub(crate) fn status(&self, seq: u64) -> EventStatus {
        if self.is_done(seq) {
            match self.outcome(seq) {
                Ok(()) => EventStatus::Complete,
                Err(e) => EventStatus::Failed(e),
            }
        } else if self.progress.running.load(Ordering::SeqCst) == seq {
            EventStatus::Running
        } else {
            EventStatus::Queued
        }
    }

    /// Blocks until command `seq` has finished; its error if it failed.
    pub(crate) fn wait(&self, seq: u64) -> Result<()> {
        self.wait_done(seq);
        self.outcome(seq)
    }

    /// Blocks until command `seq` has finished, however it ended.
    pub(crate) fn wait_done(&self, seq: u64) {
        if self.is_done(seq) {
            return;
        }
        let mut guard = self.failures.lock();
        loop {
            // Registered under the lock, so the worker's reset (also under
            // it) cannot come between this and the sleep below.
            self.wake_at.fetch_min(seq, Ordering::SeqCst);
            if self.is_done(seq) {
                return;
            }
            self.done.wait(&mut guard);
        }
    }

    /// The outcome of command `seq`, which has finished.
    fn outcome(&self, seq: u64) -> Result<()> {
        // `completed` was read (SeqCst, so acquiring) at or past `seq`, and
        // a failure is recorded before `completed` passes it.
        if !self.any_failed.load(Ordering::Acquire) {
            return Ok(());
        }
        let failures = self.failures.lock();
        match failures.binary_search_by_key(&seq, |(s, _)| *s) {
            Ok(i) => Err(failures[i].1.clone()),
            Err(_) => Ok(()),
        }
    }

    /// Marks command `seq` as running (the worker, before running it).
    pub(crate) fn start(&self, seq: u64) {
        self.progress.running.store(seq, Ordering::SeqCst);
    }

    /// Records that command `seq`, the one after the last completed, has
    /// finished with `outcome`, and wakes its waiters (the worker).
    pub(crate) fn complete(&self, seq: u64, outcome: Result<()>) {
        debug_assert_eq!(self.progress.completed.load(Ordering::Relaxed) + 1, seq);
        if let Err(e) = outcome {
            let mut failures = self.failures.lock();
            failures.push((seq, e));
            self.any_failed.store(true, Ordering::Release);
        }
        self.progress.completed.store(seq, Ordering::SeqCst);
        if self.wake_at.load(Ordering::SeqCst) <= seq {
            // Taking the lock orders this notification after any waiter's
            // check under the lock (see the module docs).
            let guard = self.failures.lock();
            self.wake_at.store(u64::MAX, Ordering::SeqCst);
            drop(guard);
            self.done.notify_all();
            #[cfg(test)]
            self.notified.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn status_follows_the_counters() {
        let t = Timeline::default();
        assert_eq!(t.status(1), EventStatus::Queued);
        t.start(1);
        assert_eq!(t.status(1), EventStatus::Running);
        assert_eq!(t.status(2), EventStatus::Queued);
        t.complete(1, Ok(()));
        assert_eq!(t.status(1), EventStatus::Complete);
        t.start(2);
        t.complete(2, Err(Error::CommandFailed("two".into())));
        t.complete(3, Ok(()));
        assert_eq!(t.status(2), EventStatus::Failed(Error::CommandFailed("two".into())));
        assert_eq!(t.wait(2), Err(Error::CommandFailed("two".into())));
        assert_eq!(t.wait(1), Ok(()));
        assert_eq!(t.wait(3), Ok(()));
    }

    #[test]
    fn waiters_on_other_threads_wake() {
        let t = Arc::new(Timeline::default());
        let waiters: Vec<_> = (1..=4u64)
            .map(|seq| {
                let t = t.clone();
                std::thread::spawn(move || t.wait(seq))
            })
            .collect();
        std::thread::sleep(Duration::from_millis(5));
        for seq in 1..=4 {
            let outcome = if seq == 3 {
                Err(Error::CommandFailed("three".into()))
            } else {
                Ok(())
            };
            t.complete(seq, outcome);
        }
        let results: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(results[..2], [Ok(()), Ok(())]);
        assert_eq!(results[2], Err(Error::CommandFailed("three".into())));
        assert_eq!(results[3], Ok(()));
    }

    /// Many short waits racing the completions: a lost wake-up would hang
    /// this test.
    #[test]
    fn no_wake_up_is_lost() {
        const N: u64 = if cfg!(miri) { 50 } else { 20_000 };
        let t = Arc::new(Timeline::default());
        let worker = {
            let t = t.clone();
            std::thread::spawn(move || {
                for seq in 1..=N {
                    t.start(seq);
                    t.complete(seq, Ok(()));
                }
            })
        };
        for seq in 1..=N {
            t.wait(seq).unwrap();
        }
        worker.join().unwrap();
    }

    /// A waiter far ahead of the worker is woken when its command is done,
    /// not by every completion before it.
    #[test]
    fn a_waiter_is_not_woken_by_earlier_completions() {
        const N: u64 = 1000;
        let t = Arc::new(Timeline::default());
        let waiter = {
            let t = t.clone();
            std::thread::spawn(move || t.wait(N))
        };
        while t.wake_at.load(Ordering::SeqCst) != N {
            std::thread::yield_now();
        }
        for seq in 1..=N {
            t.complete(seq, Ok(()));
        }
        waiter.join().unwrap().unwrap();
        assert_eq!(t.notified.load(Ordering::Relaxed), 1);
    }
}
