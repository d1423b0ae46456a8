//! In-order queues run by one worker thread each, and their events.
//!
//! Enqueueing boxes the command as a closure, sends it down a channel and
//! returns an event at once; the worker runs commands in order, first
//! waiting for each command's wait list. An idle worker polls the channel
//! briefly before it parks (see [`POLL_BEFORE_PARK`]), so a steady stream
//! of small commands does not pay a kernel wake-up each.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use parking_lot::{Condvar, Mutex};
use ur_api::{Backend, Error, EventStatus, ProfilingInfo, Result};

/// Nanoseconds since a process-wide monotonic epoch (the first call).
pub(crate) fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// What a command does on the worker; an `Err` text fails its event.
pub(crate) type Work = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

#[derive(Debug)]
struct State {
    status: EventStatus,
    times: ProfilingInfo,
}

#[derive(Debug)]
struct EventInner {
    state: Mutex<State>,
    done: Condvar,
    profiling: bool,
}

/// The completion of one command. Cloning shares the same completion.
#[derive(Debug, Clone)]
pub struct NativeEvent(Arc<EventInner>);

impl NativeEvent {
    fn new(profiling: bool) -> Self {
        let queued = if profiling { now_ns() } else { 0 };
        NativeEvent(Arc::new(EventInner {
            state: Mutex::new(State {
                status: EventStatus::Queued,
                times: ProfilingInfo {
                    queued,
                    submit: queued,
                    ..ProfilingInfo::default()
                },
            }),
            done: Condvar::new(),
            profiling,
        }))
    }

    /// The current status.
    pub fn status(&self) -> EventStatus {
        self.0.state.lock().status.clone()
    }

    /// Blocks until the command has finished; its error if it failed.
    pub fn wait(&self) -> Result<()> {
        let mut s = self.0.state.lock();
        loop {
            match &s.status {
                EventStatus::Complete => return Ok(()),
                EventStatus::Failed(e) => return Err(e.clone()),
                _ => self.0.done.wait(&mut s),
            }
        }
    }

    /// Profiling timestamps, once complete, of an event of a profiling queue.
    pub fn profiling(&self) -> Result<ProfilingInfo> {
        if !self.0.profiling {
            return Err(Error::ProfilingUnavailable(
                "the event's queue was created without profiling",
            ));
        }
        let s = self.0.state.lock();
        match s.status {
            EventStatus::Complete | EventStatus::Failed(_) => Ok(s.times),
            _ => Err(Error::ProfilingUnavailable("the command has not finished")),
        }
    }

    fn set_submitted(&self) {
        if self.0.profiling {
            self.0.state.lock().times.submit = now_ns();
        }
    }

    fn set_running(&self) {
        let mut s = self.0.state.lock();
        s.status = EventStatus::Running;
        if self.0.profiling {
            s.times.start = now_ns();
        }
    }

    fn finish(&self, outcome: std::result::Result<(), Error>) {
        let mut s = self.0.state.lock();
        if self.0.profiling {
            let end = now_ns();
            if s.times.start == 0 {
                s.times.start = end;
            }
            s.times.end = end;
        }
        s.status = match outcome {
            Ok(()) => EventStatus::Complete,
            Err(e) => EventStatus::Failed(e),
        };
        drop(s);
        self.0.done.notify_all();
    }
}

struct Job {
    event: NativeEvent,
    deps: Vec<NativeEvent>,
    work: Work,
}

/// An in-order queue with its own worker thread.
///
/// Dropping the queue closes its channel and joins the worker: commands
/// already enqueued still run to completion first.
#[derive(Debug)]
pub struct NativeQueue {
    tx: Option<Sender<Job>>,
    worker: Option<JoinHandle<()>>,
    profiling: bool,
}

impl NativeQueue {
    pub(crate) fn new(profiling: bool) -> Result<Self> {
        let (tx, rx) = crossbeam_channel::unbounded();
        let worker = std::thread::Builder::new()
            .name("ur-native-queue".to_owned())
            .spawn(move || run(rx))
            .map_err(|e| Error::Backend {
                backend: Backend::Native,
                code: e.raw_os_error().map_or(-1, i64::from),
                message: format!("cannot start a queue worker thread: {e}"),
            })?;
        Ok(NativeQueue {
            tx: Some(tx),
            worker: Some(worker),
            profiling,
        })
    }

    /// Enqueues `work` to run after everything before it and after `wait`.
    pub(crate) fn submit(&self, wait: &[&NativeEvent], work: Work) -> Result<NativeEvent> {
        let event = NativeEvent::new(self.profiling);
        let job = Job {
            event: event.clone(),
            deps: wait.iter().map(|&e| e.clone()).collect(),
            work,
        };
        event.set_submitted();
        let tx = self.tx.as_ref().ok_or(Error::DeviceLost)?;
        tx.send(job).map_err(|_| Error::DeviceLost)?;
        Ok(event)
    }

    /// Enqueues a command that does nothing but complete in order.
    pub(crate) fn marker(&self, wait: &[&NativeEvent]) -> Result<NativeEvent> {
        self.submit(wait, Box::new(|| Ok(())))
    }

    /// Waits for everything enqueued so far (failed commands included).
    pub(crate) fn finish(&self) -> Result<()> {
        // The marker has no wait list, so it cannot fail: it completes once
        // every earlier command has finished, however they ended.
        self.marker(&[])?.wait()
    }
}

impl Drop for NativeQueue {
    fn drop(&mut self) {
        // Closing the channel lets the worker drain what is queued, then exit.
        drop(self.tx.take());
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
fn run(rx: Receiver<Job>) {
    while let Some(job) = next_job(&rx) {
        let failed_dep = job.deps.iter().find_map(|d| d.wait().err());
        drop(job.deps);
        if let Some(cause) = failed_dep {
            job.event
                .finish(Err(Error::CommandFailed(format!("a wait-list event failed: {cause}"))));
            continue;
        }
        job.event.set_running();
        let outcome = match catch_unwind(AssertUnwindSafe(job.work)) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(text)) => Err(Error::CommandFailed(text)),
            Err(panic) => {
                let text = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_owned());
                Err(Error::CommandFailed(format!("the command panicked: {text}")))
            }
        };
        job.event.finish(outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn enqueue_returns_before_a_slow_command_runs() {
        let q = NativeQueue::new(false).unwrap();
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        let slow = q
            .submit(
                &[],
                Box::new(move || {
                    let mut open = g.0.lock();
                    while !*open {
                        g.1.wait(&mut open);
                    }
                    Ok(())
                }),
            )
            .unwrap();
        let after = q.marker(&[]).unwrap();
        // Nothing can have finished: the first command waits for the gate.
        assert!(!matches!(slow.status(), EventStatus::Complete));
        assert!(matches!(after.status(), EventStatus::Queued));
        *gate.0.lock() = true;
        gate.1.notify_all();
        after.wait().unwrap();
        assert_eq!(slow.status(), EventStatus::Complete);
    }

    #[test]
    fn failures_and_panics_fail_the_event_not_the_worker() {
        let q = NativeQueue::new(false).unwrap();
        let bad = q.submit(&[], Box::new(|| Err("boom".into()))).unwrap();
        let panicky = q.submit(&[], Box::new(|| panic!("kaboom"))).unwrap();
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
                Box::new(|| {
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
                Box::new(move || {
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
                Box::new(move || {
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
}
