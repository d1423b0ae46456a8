//! Operations: what a command (or a wait) holds from its lookups until its
//! event is recorded, so that nothing it borrowed is dropped meanwhile.
//!
//! A command locks its queue's lane once to look up the queue, begin its
//! operation there (a [`Ticket`] of the lane's [`Grace`]), borrow the
//! events of its wait list that live in that lane and resolve its other
//! objects in the tables (which a lane's lock lets it read, see
//! `table_lock.rs`); then it calls the adapter with no lock held, and locks
//! the lane again to record its event and end the operation.

use crate::spin::SpinGuard as LaneGuard;

use super::tables::*;
use crate::adapter::Adapter;
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::ShortList;

/// An operation in flight (see [`AdapterHost::begin_command`]): a ticket
/// in its own lane, and one in each other lane whose events it borrowed.
pub(super) struct OpGuard<'h, A: Adapter> {
    host: &'h AdapterHost<A>,
    lane: usize,
    ticket: Option<Ticket>,
    /// Its lane's lock while a command resolves its objects; `None` once
    /// it is released (before the adapter is called).
    locked: Option<LaneGuard<'h, Lane<A>>>,
    others: Vec<(usize, Ticket)>,
}

impl<A: Adapter> AdapterHost<A> {
    /// Starts an operation in `lane`, with no lock left held; it ends when
    /// the guard is dropped, so a call that panics still ends it.
    #[inline]
    pub(super) fn begin_op(&self, lane: usize) -> OpGuard<'_, A> {
        OpGuard {
            host: self,
            lane,
            ticket: Some(self.tables.lane(lane).lock().grace.begin()),
            locked: None,
            others: Vec::new(),
        }
    }

    /// Starts a command's operation: locks the queue's lane, looks the
    /// queue up and begins the operation there, keeping the lock for the
    /// command's other lookups ([`OpGuard::tables`]) until
    /// [`OpGuard::unlock`]. It ends when the guard is dropped or
    /// [`OpGuard::record`]s an event, so an adapter call that panics still
    /// ends it.
    #[inline(always)]
    pub(super) fn begin_command(&self, queue: QueueId) -> Result<(OpGuard<'_, A>, Held<QueueEntry<A>>)> {
        self.own(queue)?;
        let lane = queue_lane(queue.key);
        let mut l = self.tables.lane(lane).lock();
        let q = self
            .tables
            .read_under(lane, &l)
            .queues
            .get(queue.key)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Queue,
            })?;
        debug_assert_eq!(q.lane, lane, "a queue lives in the lane of its slot");
        // SAFETY: a live entry in its own `Arc` allocation, found under its
        // lane's lock (under which the tables are read); the operation is
        // begun in that lane before the lock is released, and the caller
        // (`command`) drops the `Held` before the operation ends. A queue
        // removed meanwhile is retired in every lane, this one included.
        let q = unsafe { Held::new(&**q) };
        let ticket = l.grace.begin();
        let op = OpGuard {
            host: self,
            lane,
            ticket: Some(ticket),
            locked: Some(l),
            others: Vec::new(),
        };
        Ok((op, q))
    }

    /// Starts an operation on one event (a status query, a wait for one
    /// event): locks the event's lane once to find it and begin the
    /// operation there, and releases the lock. The operation ends when the
    /// guard is dropped (one more lock of the lane); the `Held` must be
    /// dropped first. Builds no list, unlike [`OpGuard::borrow_events`]:
    /// SYCL runtimes poll an event's status in loops.
    #[inline]
    pub(super) fn begin_event_op(&self, id: EventId) -> Result<(OpGuard<'_, A>, Held<EventEntry<A>>)> {
        self.own(id)?;
        let (lane, key) = unlane(id.key);
        let mut l = self.tables.lane(lane).lock();
        let e = l.events.get(key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Event,
        })?;
        // SAFETY: a live entry in a slab slot, found under its lane's lock;
        // the operation is begun in that lane before the lock is released,
        // and the caller drops the `Held` before the guard ends it, so the
        // slot is not reclaimed meanwhile (a release retires it instead).
        let held = unsafe { Held::new(e) };
        let ticket = l.grace.begin();
        drop(l);
        let op = OpGuard {
            host: self,
            lane,
            ticket: Some(ticket),
            locked: None,
            others: Vec::new(),
        };
        Ok((op, held))
    }
}

impl<'h, A: Adapter> OpGuard<'h, A> {
    /// The tables, read under the operation's lane lock (see
    /// [`AdapterHost::begin_command`]).
    #[inline(always)]
    pub(super) fn tables(&self) -> &Tables<A> {
        let l = self.locked.as_ref().expect("a command resolves under its lane's lock");
        self.host.tables.read_under(self.lane, l)
    }

    /// Releases the lane's lock (before the adapter is called).
    #[inline]
    pub(super) fn unlock(&mut self) {
        self.locked = None;
    }

    /// Records a command's event (in the queue's lane, the operation's own)
    /// and ends the operation.
    #[inline(always)]
    pub(super) fn record(self, q: &QueueEntry<A>, obj: A::Event) -> EventId {
        // No drop glue on the common path: with its ticket ended, an
        // operation that never held another lane's ticket (so `others`
        // never allocated) and no longer holds its lock owns nothing.
        let mut op = std::mem::ManuallyDrop::new(self);
        debug_assert_eq!(op.lane, q.lane, "a command's operation lives in its queue's lane");
        debug_assert!(op.locked.is_none(), "no lock is held across the adapter's call");
        let ticket = op.ticket.take().expect("an operation ends once");
        let id = op.host.record_event(ticket, q, obj);
        if op.others.capacity() != 0 || op.locked.is_some() {
            drop(std::mem::ManuallyDrop::into_inner(op));
        }
        id
    }

    /// Borrows the events of a wait list (alive, of this adapter, of context
    /// `ctx`), taking a ticket in each other lane they live in. Lanes are
    /// locked one at a time, once per run of events of the same lane; the
    /// operation's own lane is locked again afterwards if it was before.
    #[inline]
    pub(super) fn borrow_events(
        &mut self,
        ctx: Option<ContextKey>,
        ids: &[EventId],
    ) -> Result<ShortList<Held<EventEntry<A>>>> {
        if ids.is_empty() {
            return Ok(ShortList::new());
        }
        self.borrow_some(ctx, ids)
    }

    /// [`OpGuard::borrow_events`] for a wait list that is not empty.
    #[inline(never)]
    fn borrow_some(&mut self, ctx: Option<ContextKey>, ids: &[EventId]) -> Result<ShortList<Held<EventEntry<A>>>> {
        let host = self.host;
        let relock = self.locked.is_some();
        let mut out = ShortList::with_capacity(ids.len());
        // The lane locked now: consecutive events of one lane (the usual
        // wait list) are looked up under one lock hold; the operation's own
        // lane, if it holds its lock, first.
        let mut locked: Option<(usize, LaneGuard<'h, Lane<A>>)> = self.locked.take().map(|l| (self.lane, l));
        for &id in ids {
            host.own(id)?;
            let (lane, key) = unlane(id.key);
            if locked.as_ref().is_none_or(|(held, _)| *held != lane) {
                // One lane at a time: the previous lock goes first.
                drop(locked.take());
                locked = Some((lane, host.tables.lane(lane).lock()));
            }
            let (_, l) = locked.as_mut().expect("locked just above");
            let e = l.events.get(key).ok_or(Error::InvalidHandle {
                kind: HandleKind::Event,
            })?;
            if ctx.is_some_and(|c| c != e.ctx) {
                return Err(Error::WrongContext {
                    what: "wait-list event",
                });
            }
            // SAFETY: a live entry in a slab slot, found under its lane's
            // lock; this operation holds a ticket in that lane (its own, or
            // one taken below before the lock is released), so the slot is
            // not reclaimed before the operation ends and drops the `Held`.
            let held = unsafe { Held::new(e) };
            if lane != self.lane && !self.others.iter().any(|(o, _)| *o == lane) {
                self.others.push((lane, l.grace.begin()));
            }
            out.push(held);
        }
        if relock {
            self.locked = Some(match locked {
                Some((lane, l)) if lane == self.lane => l,
                other => {
                    drop(other);
                    host.tables.lane(self.lane).lock()
                }
            });
        }
        Ok(out)
    }

    /// Ends what the operation still holds: its own ticket (if no event
    /// was recorded: a failed or panicking call, or a wait), through its
    /// lane's lock if it still holds it, and its tickets in other lanes.
    #[inline(never)]
    fn end_all(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            match self.locked.take() {
                Some(mut l) => {
                    let free = l.end(ticket);
                    drop(l);
                    drop(free);
                }
                None => self.host.end_op(self.lane, ticket),
            }
        }
        for (lane, ticket) in self.others.drain(..) {
            self.host.end_op(lane, ticket);
        }
    }
}

impl<A: Adapter> Drop for OpGuard<'_, A> {
    #[inline]
    fn drop(&mut self) {
        // The common case (an event recorded, a wait list of the queue's
        // own lane) ends here.
        if self.ticket.is_some() || !self.others.is_empty() {
            self.end_all();
        }
    }
}
