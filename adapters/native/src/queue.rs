//! In-order queues run by one worker thread each, and their events.
//!
//! Enqueueing sends the command, by value (a [`Command`]), down a channel
//! and returns an event at once; the worker runs commands in order, first
//! waiting for each command's wait list. An idle worker polls the channel
//! briefly before it parks (see [`POLL_BEFORE_PARK`]), so a steady stream
//! of small commands does not pay a kernel wake-up each.
//!
//! # No heap traffic per command
//!
//! A command is enqueued on the caller's thread and finished on the
//! worker's. When each command allocated (a boxed closure, an `Arc` per
//! event) and its last reference was dropped on the worker, every command
//! was a malloc on one thread and a free on the other. With glibc's
//! allocator both then take the same arena lock: `perf` showed `_int_free`
//! on the worker, `malloc` on the caller and `__lll_lock_wait_private` with
//! futex calls on both, and the dispatch bench
//! (`cargo bench -p ur-native --bench dispatch`) was bimodal per process:
//! 157-200 ns per 64-byte fill when both threads happened to share a core,
//! 690-780 ns when they ran on two (with jemalloc preloaded: 124-164 ns
//! every time). A library cannot choose the application's allocator, so
//! the queue does no per-command allocation on a non-profiling queue:
//!
//! - memory commands are enum variants carried in the channel's slots
//!   (only kernel launches box a closure, [`Command::Run`]);
//! - an event is its queue's [`Timeline`] (one `Arc`, made with the queue)
//!   and the command's number on it: cloning one is a reference-count
//!   increment, and the job sent to the worker carries only the number;
//! - wait lists of up to two events are stored inline.
//!
//! What remains is the channel's own storage (a block per 31 commands) and,
//! on profiling queues, one allocation per event for its timestamps. Two
//! more things mattered once the allocations were gone: commands are moved
//! by value, so they are kept small (a job is at most 112 bytes; with a
//! 128-byte pattern inline, `memmove` was a third of the profile), and a
//! waiter is woken only when its own command is done (see
//! [`crate::timeline`]).
//!
//! Measured on the 2-core development machine (6 process runs each, old
//! and new binaries alternated, the other core busy at times): the old
//! queue was in its slow mode in 5 of 6 runs (static 261-938 ns, dyn
//! 739-1117 ns per fill), the new one in none (static 161-207 ns, dyn
//! 231-249 ns; alone, `UR_DISPATCH_ONLY=static` 135-145 ns and `dyn`
//! 189-211 ns, on 1.84-1.89 CPUs: both threads on their own cores).

use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use parking_lot::Mutex;
use ur_api::{Backend, Error, EventStatus, ProfilingInfo, Result};

use crate::command::Command;
use crate::timeline::Timeline;
use crate::NativeContext;
use crate::NativeDevice;
use ur_api::QueueProps;

/// Nanoseconds since a process-wide monotonic epoch (the first call).
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The timestamps of one command of a profiling queue.
type Times = Arc<Mutex<ProfilingInfo>>;

/// The completion of one command: a point on its queue's timeline.
/// Cloning shares the same completion (and allocates nothing).
///
/// An event may outlive its queue: it holds the timeline, which records
/// how the command ended.
#[derive(Debug, Clone)]
pub struct NativeEvent {
    timeline: Arc<Timeline>,
    seq: u64,
    /// `Some` on a profiling queue.
    times: Option<Times>,
}

impl NativeEvent {
    /// The current status.
    pub fn status(&self) -> EventStatus {
        self.timeline.status(self.seq)
    }

    /// Blocks until the command has finished; its error if it failed.
    pub fn wait(&self) -> Result<()> {
        self.timeline.wait(self.seq)
    }

    /// Profiling timestamps, once complete, of an event of a profiling queue.
    pub fn profiling(&self) -> Result<ProfilingInfo> {
        let Some(times) = &self.times else {
            return Err(Error::ProfilingUnavailable(
                "the event's queue was created without profiling",
            ));
        };
        if !self.timeline.is_done(self.seq) {
            return Err(Error::ProfilingUnavailable("the command has not finished"));
        }
        // The worker writes the end time before marking the command done.
        let info = *times.lock();
        Ok(info)
    }
}

/// A command's wait list: the events' points (timeline and number); up to
/// two stored inline.
enum Deps {
    Inline([Option<(Arc<Timeline>, u64)>; 2]),
    Heap(Vec<(Arc<Timeline>, u64)>),
}

impl Deps {
    fn new(wait: &[&NativeEvent]) -> Deps {
        let point = |e: &NativeEvent| (e.timeline.clone(), e.seq);
        match wait {
            [] => Deps::Inline([None, None]),
            [a] => Deps::Inline([Some(point(a)), None]),
            [a, b] => Deps::Inline([Some(point(a)), Some(point(b))]),
            more => Deps::Heap(more.iter().map(|e| point(e)).collect()),
        }
    }

    /// Waits for every event; the first failure among them.
    fn first_failure(&self) -> Option<Error> {
        let (inline, heap): (&[Option<_>], &[_]) = match self {
            Deps::Inline(points) => (points, &[]),
            Deps::Heap(points) => (&[], points),
        };
        inline
            .iter()
            .flatten()
            .chain(heap)
            .find_map(|(timeline, seq)| timeline.wait(*seq).err())
    }
}

/// What the worker receives: the command and where it stands on the timeline.
struct Job {
    seq: u64,
    deps: Deps,
    command: Command,
    times: Option<Times>,
}

/// The enqueueing side: numbers are given out in the order jobs enter the
/// channel (under one lock), so the worker sees them in sequence.
#[derive(Debug)]
struct Submitter {
    tx: Option<Sender<Job>>,
    /// The number of the last command sent.
    last: u64,
}

/// An in-order queue with its own worker thread.
///
/// Dropping the queue closes its channel and joins the worker: commands
/// already enqueued still run to completion first.
#[derive(Debug)]
pub struct NativeQueue {
    submitter: Mutex<Submitter>,
    timeline: Arc<Timeline>,
    worker: Option<JoinHandle<()>>,
    profiling: bool,
}

impl NativeQueue {
    pub(crate) fn new(profiling: bool) -> Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let timeline = Arc::new(Timeline::default());
        let worker_timeline = timeline.clone();
        let worker = std::thread::Builder::new()
            .name("ur-native-queue".to_owned())
            .spawn(move || run(rx, &worker_timeline))
            .map_err(|e| Error::Backend {
                backend: Backend::Native,
                code: e.raw_os_error().map_or(-1, i64::from),
                message: format!("cannot start a queue worker thread: {e}"),
            })?;
        Ok(NativeQueue {
            submitter: Mutex::new(Submitter { tx: Some(tx), last: 0 }),
            timeline,
            worker: Some(worker),
            profiling,
        })
    }

    /// Enqueues `command` to run after everything before it and after `wait`.
    pub(crate) fn submit(&self, wait: &[&NativeEvent], command: Command) -> Result<NativeEvent> {
        let times = self.profiling.then(|| {
            let queued = now_ns();
            Arc::new(Mutex::new(ProfilingInfo {
                queued,
                submit: queued,
                ..ProfilingInfo::default()
            }))
        });
        let deps = Deps::new(wait);
        let mut s = self.submitter.lock();
        let seq = s.last + 1;
        if let Some(t) = &times {
            t.lock().submit = now_ns();
        }
        let job = Job {
            seq,
            deps,
            command,
            times: times.clone(),
        };
        s.tx.as_ref()
            .ok_or(Error::DeviceLost)?
            .send(job)
            .map_err(|_| Error::DeviceLost)?;
        s.last = seq;
        drop(s);
        Ok(NativeEvent {
            timeline: self.timeline.clone(),
            seq,
            times,
        })
    }

    /// Enqueues a command that does nothing but complete in order.
    pub(crate) fn marker(&self, wait: &[&NativeEvent]) -> Result<NativeEvent> {
        self.submit(wait, Command::Marker)
    }

    /// Whether everything enqueued so far has ended (failed commands
    /// included).
    pub(crate) fn is_empty(&self) -> bool {
        let last = self.submitter.lock().last;
        self.timeline.is_done(last)
    }

    /// Waits for everything enqueued so far (failed commands included).
    pub(crate) fn finish(&self) -> Result<()> {
        let last = self.submitter.lock().last;
        self.timeline.wait_done(last);
        Ok(())
    }
}

impl Drop for NativeQueue {
    fn drop(&mut self) {
        // Closing the channel lets the worker drain what is queued, then exit.
        drop(self.submitter.get_mut().tx.take());
        if let Some(worker) = self.worker.take() {
            if worker.thread().id() == std::thread::current().id() {
                // Dropped by one of its own commands: it exits by itself.
                return;
            }
            if worker.join().is_err() {
                tracing::error!("a native queue worker panicked outside a command");
            }
        }
    }
}

/// How long an idle worker polls for the next command before it parks.
///
/// Parking makes the next enqueue wake the worker through the kernel (a
/// futex wake, several hundred nanoseconds here), which then dominates the
/// cost of a small command: a stream of commands ran either at that cost
/// or far below it depending on whether the worker had just gone to sleep.
/// Polling for a short while keeps a busy queue's worker awake, so a steady
/// stream of enqueues never pays the wake; an idle queue still parks after
/// this long.
const POLL_BEFORE_PARK: Duration = Duration::from_micros(50);

/// Busy-wait rounds before the polling worker starts yielding its core.
const SPIN_ROUNDS: u32 = 64;

/// The next command: polled for [`POLL_BEFORE_PARK`] (spinning, then
/// yielding), then waited for; `None` once the channel is closed and empty.
fn next_job(rx: &Receiver<Job>) -> Option<Job> {
    let mut round = 0u32;
    let mut since: Option<Instant> = None;
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        if round < SPIN_ROUNDS {
            round += 1;
            std::hint::spin_loop();
            continue;
        }
        let start = *since.get_or_insert_with(Instant::now);
        if start.elapsed() >= POLL_BEFORE_PARK {
            return rx.recv().ok();
        }
        std::thread::yield_now();
    }
}

/// The worker loop: one command at a time, in order, until the channel closes.
fn run(rx: Receiver<Job>, timeline: &Timeline) {
    while let Some(Job {
        seq,
        deps,
        command,
        times,
    }) = next_job(&rx)
    {
        let failed_dep = deps.first_failure();
        drop(deps);
        let outcome = match failed_dep {
            Some(cause) => {
                drop(command);
                Err(Error::CommandFailed(format!("a wait-list event failed: {cause}")))
            }
            None => {
                timeline.start(seq);
                if let Some(t) = &times {
                    t.lock().start = now_ns();
                }
                command.execute()
            }
        };
        if let Some(t) = times {
            let end = now_ns();
            let mut t = t.lock();
            if t.start == 0 {
                t.start = end;
            }
            t.end = end;
        }
        timeline.complete(seq, outcome);
    }
}

impl ur_api::adapter::Commands for crate::NativeAdapter {
    fn create_queue(&self, _: &NativeContext, _: &NativeDevice, props: &QueueProps) -> Result<NativeQueue> {
        NativeQueue::new(props.profiling)
    }

    fn flush(&self, _: &NativeQueue) -> Result<()> {
        Ok(()) // Commands are handed to the worker when enqueued.
    }

    fn finish(&self, queue: &NativeQueue) -> Result<()> {
        queue.finish()
    }

    fn queue_empty(&self, queue: &NativeQueue) -> Result<bool> {
        Ok(queue.is_empty())
    }

    fn event_status(&self, event: &NativeEvent) -> Result<EventStatus> {
        Ok(event.status())
    }

    fn wait(&self, events: &[&NativeEvent]) -> Result<()> {
        ur_api::adapter::wait_each(events, |e| e.wait())
    }

    fn enqueue_barrier(&self, q: &NativeQueue, wait: &[&NativeEvent]) -> Result<NativeEvent> {
        q.marker(wait)
    }
}

impl ur_api::adapter::Profiling for crate::NativeAdapter {
    fn event_profiling(&self, event: &NativeEvent) -> Result<ProfilingInfo> {
        event.profiling()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Condvar;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A command running `f`.
    fn job(f: impl FnOnce() -> std::result::Result<(), String> + Send + 'static) -> Command {
        Command::Run(Box::new(f))
    }

    #[test]
    fn enqueue_returns_before_a_slow_command_runs() {
        let q = NativeQueue::new(false).unwrap();
        let (cmd, gate) = gated();
        let slow = q.submit(&[], cmd).unwrap();
        let after = q.marker(&[]).unwrap();
        // Nothing can have finished: the first command waits for the gate.
        assert!(!matches!(slow.status(), EventStatus::Complete));
        assert!(matches!(after.status(), EventStatus::Queued));
        open(&gate);
        after.wait().unwrap();
        assert_eq!(slow.status(), EventStatus::Complete);
    }

    #[test]
    fn failures_and_panics_fail_the_event_not_the_worker() {
        let q = NativeQueue::new(false).unwrap();
        let bad = q.submit(&[], job(|| Err("boom".into()))).unwrap();
        let panicky = q.submit(&[], job(|| panic!("kaboom"))).unwrap();
        assert_eq!(bad.wait(), Err(Error::CommandFailed("boom".into())));
        assert!(matches!(panicky.wait(), Err(Error::CommandFailed(t)) if t.contains("kaboom")));
        let dependent = q.marker(&[&bad]).unwrap();
        match dependent.wait() {
            Err(Error::CommandFailed(t)) => assert!(t.contains("boom"), "{t}"),
            other => panic!("expected a failure naming the cause, got {other:?}"),
        }
        q.finish().unwrap();
    }

    #[test]
    fn profiling_timestamps_are_ordered() {
        let q = NativeQueue::new(true).unwrap();
        let e = q
            .submit(
                &[],
                job(|| {
                    std::thread::sleep(Duration::from_millis(2));
                    Ok(())
                }),
            )
            .unwrap();
        e.wait().unwrap();
        let t = e.profiling().unwrap();
        assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end, "{t:?}");
        assert!(t.end - t.start >= 2_000_000, "{t:?}");
        let plain = NativeQueue::new(false).unwrap().marker(&[]).unwrap();
        plain.wait().unwrap();
        assert!(matches!(plain.profiling(), Err(Error::ProfilingUnavailable(_))));
    }

    #[test]
    fn a_parked_worker_wakes_for_the_next_command() {
        let q = NativeQueue::new(false).unwrap();
        q.finish().unwrap();
        // Past the polling window the worker is parked in `recv`.
        std::thread::sleep(POLL_BEFORE_PARK * 20);
        let count = Arc::new(AtomicUsize::new(0));
        let c = count.clone();
        let e = q
            .submit(
                &[],
                job(move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        e.wait().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn dropping_a_queue_runs_pending_work() {
        let count = Arc::new(AtomicUsize::new(0));
        let q = NativeQueue::new(false).unwrap();
        for _ in 0..50 {
            let c = count.clone();
            q.submit(
                &[],
                job(move || {
                    std::thread::sleep(Duration::from_micros(200));
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        }
        drop(q);
        assert_eq!(count.load(Ordering::SeqCst), 50);
    }

    /// A command that blocks until the test opens its gate.
    fn gated() -> (Command, Arc<(Mutex<bool>, Condvar)>) {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        let cmd = job(move || {
            let mut open = g.0.lock();
            while !*open {
                g.1.wait(&mut open);
            }
            Ok(())
        });
        (cmd, gate)
    }

    fn open(gate: &(Mutex<bool>, Condvar)) {
        *gate.0.lock() = true;
        gate.1.notify_all();
    }

    /// Polls `event` until it reports `Running` (the worker picked it up).
    fn until_running(event: &NativeEvent) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while event.status() != EventStatus::Running {
            assert!(Instant::now() < deadline, "never ran: {:?}", event.status());
            std::thread::yield_now();
        }
    }

    #[test]
    fn status_goes_queued_running_complete() {
        let q = NativeQueue::new(false).unwrap();
        let (cmd, gate) = gated();
        let first = q.submit(&[], cmd).unwrap();
        let second = q.marker(&[]).unwrap();
        until_running(&first);
        assert_eq!(second.status(), EventStatus::Queued);
        open(&gate);
        second.wait().unwrap();
        assert_eq!(first.status(), EventStatus::Complete);
        assert_eq!(second.status(), EventStatus::Complete);
    }

    #[test]
    fn a_failure_is_reported_after_later_commands_completed() {
        let q = NativeQueue::new(false).unwrap();
        let ok = q.marker(&[]).unwrap();
        let bad = q.submit(&[], job(|| Err("the third".into()))).unwrap();
        let later: Vec<_> = (0..100).map(|_| q.marker(&[]).unwrap()).collect();
        q.finish().unwrap();
        assert!(later.iter().all(|e| e.status() == EventStatus::Complete));
        // Long after the failure, with later commands done, it is still known.
        let expected = Error::CommandFailed("the third".into());
        assert_eq!(bad.status(), EventStatus::Failed(expected.clone()));
        assert_eq!(bad.clone().wait(), Err(expected));
        assert_eq!(ok.wait(), Ok(()));
    }

    #[test]
    fn an_event_is_waited_for_on_other_threads() {
        let q = NativeQueue::new(false).unwrap();
        let (cmd, gate) = gated();
        let slow = q.submit(&[], cmd).unwrap();
        let bad = q.submit(&[], job(|| Err("late".into()))).unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|i| {
                let (slow, bad) = (slow.clone(), bad.clone());
                std::thread::spawn(move || if i == 0 { slow.wait() } else { bad.wait() })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(10));
        open(&gate);
        let results: Vec<_> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(results[0], Ok(()));
        assert_eq!(
            results[1..],
            [
                Err(Error::CommandFailed("late".into())),
                Err(Error::CommandFailed("late".into()))
            ]
        );
    }

    #[test]
    fn events_outlive_their_queue() {
        let q = NativeQueue::new(false).unwrap();
        let (cmd, gate) = gated();
        let slow = q.submit(&[], cmd).unwrap();
        let bad = q.submit(&[], job(|| Err("gone".into()))).unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            open(&gate);
        });
        drop(q); // drains the queue, then the events are all that is left
        opener.join().unwrap();
        assert_eq!(slow.status(), EventStatus::Complete);
        assert_eq!(bad.wait(), Err(Error::CommandFailed("gone".into())));
    }

    #[test]
    fn a_failed_dependency_on_another_queue_fails_the_dependent() {
        let (q1, q2) = (NativeQueue::new(false).unwrap(), NativeQueue::new(true).unwrap());
        let (cmd, gate) = gated();
        let slow = q1.submit(&[], cmd).unwrap();
        let bad = q1.submit(&[], job(|| Err("upstream".into()))).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let others: Vec<_> = (0..3).map(|_| q1.marker(&[]).unwrap()).collect();
        let dependent = q2
            .submit(
                &[&slow, &others[0], &bad],
                job(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        assert_eq!(dependent.status(), EventStatus::Queued);
        open(&gate);
        match dependent.wait() {
            Err(Error::CommandFailed(t)) => assert!(t.contains("upstream"), "{t}"),
            other => panic!("expected a failure naming the cause, got {other:?}"),
        }
        assert_eq!(
            ran.load(Ordering::SeqCst),
            0,
            "a command with a failed dependency must not run"
        );
        // A failed command of a profiling queue still has its timestamps.
        let t = dependent.profiling().unwrap();
        assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end, "{t:?}");
        // Both queues keep working.
        q2.marker(&[&others[2]]).unwrap().wait().unwrap();
        q1.finish().unwrap();
    }

    #[test]
    fn jobs_stay_small() {
        // Moved by value through the channel (see `Pattern`).
        assert!(std::mem::size_of::<Job>() <= 112, "{}", std::mem::size_of::<Job>());
    }

    #[test]
    fn enqueues_from_many_threads_keep_one_order() {
        // Miri interprets every interleaving slowly: fewer markers there.
        const PER_THREAD: u64 = if cfg!(miri) { 25 } else { 500 };
        let q = Arc::new(NativeQueue::new(false).unwrap());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                std::thread::spawn(move || {
                    let events: Vec<_> = (0..PER_THREAD).map(|_| q.marker(&[]).unwrap()).collect();
                    events
                })
            })
            .collect();
        let events: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
        let last = events.iter().max_by_key(|e| e.seq).unwrap().clone();
        last.wait().unwrap();
        assert!(events.iter().all(|e| e.status() == EventStatus::Complete));
        let mut seqs: Vec<_> = events.iter().map(|e| e.seq).collect();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            (1..=4 * PER_THREAD).collect::<Vec<_>>(),
            "every number given once"
        );
    }
}
