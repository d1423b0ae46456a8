//! Grace periods for table entries that commands borrow without a count.
//!
//! A command resolves its queue and buffers under its queue's lane's lock
//! (which lets it read the tables) and its wait-list events under their
//! lanes' locks, then calls the adapter
//! outside every lock. Rather than cloning an `Arc` per object (two atomic
//! read-modify-writes each), it borrows the entries ([`Held`]) and counts
//! itself as one *operation* in its lane's [`Grace`] (plain integers, under
//! the lane's lock), and in the lane of any wait-list event from another
//! lane. An entry removed while operations are in flight is *retired*: a
//! queue or buffer in every lane, an event slot in its own; it is kept
//! until every operation that could have borrowed it has ended, then
//! dropped outside the lock by whichever thread ends the last of them.
//!
//! Two buckets bound the wait (a small RCU): operations join the current
//! bucket; retired entries wait for the bucket they may be borrowed from.
//! The current bucket flips only when the other one has drained, so after
//! a flip every operation that started before it is in the old bucket, and
//! entries retired before the flip are freed when that bucket drains.
//! New operations never join a bucket that is draining, so a steady stream
//! of commands cannot hold a retired entry forever.

use std::ptr::NonNull;

/// An entry borrowed by an operation: valid until the operation ends.
///
/// Made only from an entry found under its table's lock (a lane's lock,
/// under which a command reads the tables and its lane's events), by a thread that counts (or, in the same
/// critical section, starts counting) an operation in a [`Grace`] the
/// entry's removal is retired into; used only until that operation ends.
/// Not `Send`: it stays with the operation's thread.
pub(super) struct Held<T>(NonNull<T>);

impl<T> Held<T> {
    /// Borrows `entry` for the current operation.
    ///
    /// # Safety
    ///
    /// `entry` must be a live table entry found under its table's lock, in
    /// its own heap allocation (an `Arc`) or a slot of an event
    /// [`Slab`](super::slab::Slab), neither of which moves. The calling
    /// thread must either count an operation in a [`Grace`] the entry's
    /// removal is retired into (a queue or buffer: any lane's, since they
    /// are retired in every lane; an event: its own lane's), begun before
    /// that lock is released and ending only after the `Held` is dropped,
    /// so a removed entry is retired, not dropped, while the `Held` can
    /// deref it; or drop the `Held` before it releases the lock.
    pub(super) unsafe fn new(entry: &T) -> Self {
        Held(NonNull::from(entry))
    }
}

impl<T> std::ops::Deref for Held<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: a `Held` is made from a live table entry by an operation
        // counted in the table's `Grace` and used only until it ends; an
        // entry removed meanwhile is retired, not dropped, until then. The
        // entry lives in its own heap allocation (an `Arc`) or an event
        // slab slot, neither of which the table moves.
        unsafe { self.0.as_ref() }
    }
}

/// Which bucket an operation was counted in; hand it back to end it.
#[must_use = "an operation must be ended"]
#[derive(Debug)]
pub(super) struct Ticket(usize);

/// Operations in flight and the retired entries they may still borrow.
pub(super) struct Grace<R> {
    current: usize,
    ops: [usize; 2],
    /// Retired since the last flip.
    pending: Vec<R>,
    /// Retired before the flip away from bucket `i`: freed once `ops[i]` is 0.
    waiting: [Vec<R>; 2],
    /// How many entries wait in `pending` and `waiting`.
    retired: usize,
}

impl<R> Default for Grace<R> {
    fn default() -> Self {
        Grace {
            current: 0,
            ops: [0, 0],
            pending: Vec::new(),
            waiting: [Vec::new(), Vec::new()],
            retired: 0,
        }
    }
}

impl<R> Grace<R> {
    /// Starts an operation.
    pub(super) fn begin(&mut self) -> Ticket {
        self.ops[self.current] += 1;
        Ticket(self.current)
    }

    /// Whether no operation is in flight (nothing borrowed: a removed entry
    /// may be dropped or reused at once).
    pub(super) fn idle(&self) -> bool {
        self.ops == [0, 0]
    }

    /// Ends an operation; what may be dropped now (outside the lock).
    #[inline]
    pub(super) fn end(&mut self, t: Ticket) -> Option<Vec<R>> {
        self.ops[t.0] -= 1;
        if self.retired == 0 {
            // The common case: nothing waits for a grace period.
            return None;
        }
        Some(self.advance())
    }

    /// Retires a removed entry; what may be dropped now (outside the lock).
    pub(super) fn retire(&mut self, r: R) -> Vec<R> {
        if self.idle() {
            return vec![r];
        }
        self.pending.push(r);
        self.retired += 1;
        self.advance()
    }

    #[cold]
    fn advance(&mut self) -> Vec<R> {
        let free = self.flip();
        self.retired -= free.len();
        free
    }

    fn flip(&mut self) -> Vec<R> {
        let other = 1 - self.current;
        if self.ops[other] != 0 {
            return Vec::new();
        }
        let mut free = std::mem::take(&mut self.waiting[other]);
        if !self.pending.is_empty() {
            // Bucket `other` is empty: every operation that may borrow a
            // pending entry is in the current bucket.
            debug_assert!(self.waiting[self.current].is_empty());
            self.waiting[self.current] = std::mem::take(&mut self.pending);
            self.current = other;
            let old = 1 - self.current;
            if self.ops[old] == 0 {
                free.append(&mut self.waiting[old]);
            }
        }
        free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_retire_frees_at_once() {
        let mut g = Grace::default();
        assert_eq!(g.retire(1), vec![1]);
    }

    #[test]
    fn retired_waits_for_earlier_ops_only() {
        let mut g = Grace::default();
        let a = g.begin();
        assert!(g.retire(1).is_empty(), "op `a` may borrow entry 1");
        // Later operations join the other bucket and do not hold entry 1.
        let b = g.begin();
        assert_eq!(g.end(a), Some(vec![1]));
        assert_eq!(g.end(b), None);
        assert!(g.idle());
    }

    #[test]
    fn steady_stream_cannot_starve_a_retired_entry() {
        let mut g = Grace::default();
        let mut live = vec![g.begin()];
        assert!(g.retire(7).is_empty());
        let mut freed = Vec::new();
        // Overlapping operations: one always in flight.
        for _ in 0..10 {
            live.push(g.begin());
            freed.extend(g.end(live.remove(0)).into_iter().flatten());
        }
        assert_eq!(freed, vec![7]);
        for t in live {
            assert_eq!(g.end(t), None);
        }
    }

    #[test]
    fn retired_during_drain_waits_for_the_next_flip() {
        let mut g = Grace::default();
        let a = g.begin();
        assert!(g.retire(1).is_empty()); // flips: 1 waits for `a`
        let b = g.begin(); // in the new bucket
        assert!(g.retire(2).is_empty()); // `b` may borrow 2; no flip while `a` runs
        assert_eq!(g.end(a), Some(vec![1])); // flips again: 2 waits for `b`
        let c = g.begin();
        assert_eq!(g.end(b), Some(vec![2]));
        assert_eq!(g.end(c), None);
    }
}
