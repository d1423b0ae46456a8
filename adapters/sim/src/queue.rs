//! In-order asynchronous queues: one worker thread per queue runs commands
//! in submission order; each command waits for its wait list first. Events
//! carry status and profiling timestamps.
//!
//! Written for this crate (the native adapter exposed no reusable worker
//! when this was written); it is small on purpose.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};
use ur_api::{Error, EventStatus, ProfilingInfo, Result};

use crate::faults;
use crate::state::DeviceState;
use crate::SimContext;
use crate::SimDevice;
use ur_api::QueueProps;

/// Work of one command.
pub(crate) type Work = Box<dyn FnOnce() -> Result<()> + Send>;

fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[derive(Debug)]
struct EventInner {
    status: EventStatus,
    times: ProfilingInfo,
}

/// The completion of one command.
#[derive(Debug)]
pub(crate) struct EventState {
    inner: Mutex<EventInner>,
    done: Condvar,
}

impl EventState {
    fn new() -> Arc<EventState> {
        Arc::new(EventState {
            inner: Mutex::new(EventInner {
                status: EventStatus::Queued,
                times: ProfilingInfo {
                    queued: now_ns(),
                    ..ProfilingInfo::default()
                },
            }),
            done: Condvar::new(),
        })
    }

    fn set(&self, status: EventStatus) {
        let mut g = self.inner.lock();
        let t = now_ns();
        match status {
            EventStatus::Submitted => g.times.submit = t,
            EventStatus::Running => g.times.start = t,
            EventStatus::Complete | EventStatus::Failed(_) => g.times.end = t,
            EventStatus::Queued => {}
        }
        let finished = matches!(status, EventStatus::Complete | EventStatus::Failed(_));
        g.status = status;
        drop(g);
        if finished {
            self.done.notify_all();
        }
    }

    /// Blocks until the command finished; its result.
    pub(crate) fn wait(&self) -> Result<()> {
        let mut g = self.inner.lock();
        loop {
            match &g.status {
                EventStatus::Complete => return Ok(()),
                EventStatus::Failed(e) => return Err(e.clone()),
                _ => self.done.wait(&mut g),
            }
        }
    }

    pub(crate) fn status(&self) -> EventStatus {
        self.inner.lock().status.clone()
    }

    pub(crate) fn profiling(&self) -> Result<ProfilingInfo> {
        let g = self.inner.lock();
        match g.status {
            EventStatus::Complete | EventStatus::Failed(_) => Ok(g.times),
            _ => Err(Error::ProfilingUnavailable("the command has not finished")),
        }
    }
}

/// An event of the sim adapter.
#[derive(Debug, Clone)]
pub struct SimEvent(
    pub(crate) Arc<EventState>,
    #[allow(dead_code)] // reason: only held, to count the handle while it lives.
    Arc<LiveEvent>,
);

/// Counts one event handle (with its clones) in its device's
/// `live_events` while it lives.
#[derive(Debug)]
pub(crate) struct LiveEvent(Arc<DeviceState>);

impl LiveEvent {
    fn new(device: &Arc<DeviceState>) -> Arc<LiveEvent> {
        device.live_events.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Arc::new(LiveEvent(device.clone()))
    }
}

impl Drop for LiveEvent {
    fn drop(&mut self) {
        self.0.live_events.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

struct Job {
    event: Arc<EventState>,
    wait: Vec<Arc<EventState>>,
    work: Work,
}

/// An in-order queue on one device.
#[derive(Debug)]
pub struct SimQueue {
    pub(crate) device: Arc<DeviceState>,
    tx: Mutex<Sender<Job>>,
    last: Mutex<Option<Arc<EventState>>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("wait", &self.wait.len())
            .finish_non_exhaustive()
    }
}

impl SimQueue {
    /// Starts the queue's worker thread.
    pub(crate) fn new(device: Arc<DeviceState>) -> Result<SimQueue> {
        device.check()?;
        let (tx, rx) = channel::<Job>();
        let dev = device.clone();
        std::thread::Builder::new()
            .name(format!("ur-sim-{}", device.spec.name))
            .spawn(move || {
                // Ends when the queue is dropped and every job has run.
                for job in rx {
                    run(&dev, job);
                }
            })
            .map_err(|e| Error::invalid(format!("cannot start a queue worker: {e}")))?;
        Ok(SimQueue {
            device,
            tx: Mutex::new(tx),
            last: Mutex::new(None),
        })
    }

    /// Enqueues `work` after `wait`; fails at once if the device is lost.
    pub(crate) fn submit(&self, wait: &[&SimEvent], work: Work) -> Result<SimEvent> {
        self.device.check()?;
        let event = EventState::new();
        let job = Job {
            event: event.clone(),
            wait: wait.iter().map(|e| e.0.clone()).collect(),
            work,
        };
        let mut last = self.last.lock();
        self.tx
            .lock()
            .send(job)
            .map_err(|_| Error::invalid("the queue's worker has stopped"))?;
        *last = Some(event.clone());
        Ok(SimEvent(event, LiveEvent::new(&self.device)))
    }

    /// Whether everything enqueued so far has ended (its last command).
    pub(crate) fn is_empty(&self) -> bool {
        let last = self.last.lock().clone();
        last.is_none_or(|e| matches!(e.status(), EventStatus::Complete | EventStatus::Failed(_)))
    }

    /// Waits for everything enqueued so far.
    pub(crate) fn finish(&self) -> Result<()> {
        let last = self.last.lock().clone();
        if let Some(e) = last {
            // A failed command is reported by its own event, not by finish.
            let _ = e.wait();
        }
        self.device.check()
    }
}

fn run(device: &DeviceState, job: Job) {
    job.event.set(EventStatus::Submitted);
    for w in &job.wait {
        if let Err(e) = w.wait() {
            job.event.set(EventStatus::Failed(e));
            return;
        }
    }
    job.event.set(EventStatus::Running);
    let result = device.check().and_then(|()| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(job.work))
            .unwrap_or_else(|_| Err(Error::CommandFailed("the command panicked".into())))
    });
    match result {
        Ok(()) => job.event.set(EventStatus::Complete),
        Err(e) => {
            tracing::debug!(device = %device.spec.name, error = %e, "command failed");
            job.event.set(EventStatus::Failed(e));
        }
    }
}

/// Waits for every event; the first failure.
pub(crate) fn wait_all(events: &[&SimEvent]) -> Result<()> {
    let mut first = Ok(());
    for e in events {
        if let (Err(err), true) = (e.0.wait(), first.is_ok()) {
            first = Err(err);
        }
    }
    first
}

impl ur_api::adapter::Commands for crate::SimAdapter {
    fn create_queue(&self, _ctx: &SimContext, device: &SimDevice, _props: &QueueProps) -> Result<SimQueue> {
        SimQueue::new(device.0.clone())
    }

    fn flush(&self, _queue: &SimQueue) -> Result<()> {
        // Commands are handed to the worker when enqueued; nothing is pending.
        // Always Ok, so that releasing a queue of a lost device still succeeds.
        Ok(())
    }

    fn finish(&self, queue: &SimQueue) -> Result<()> {
        queue.finish()
    }

    fn queue_empty(&self, queue: &SimQueue) -> Result<bool> {
        Ok(queue.is_empty())
    }

    fn event_status(&self, event: &SimEvent) -> Result<EventStatus> {
        Ok(event.0.status())
    }

    fn wait(&self, events: &[&SimEvent]) -> Result<()> {
        if self.state.faults.take_wait_fault() {
            tracing::debug!(events = events.len(), "injected wait failure");
            return Err(faults::wait_fault());
        }
        wait_all(events)
    }

    fn enqueue_barrier(&self, queue: &SimQueue, wait: &[&SimEvent]) -> Result<SimEvent> {
        self.submit(queue, wait, |_| Ok(()))
    }
}

impl ur_api::adapter::Profiling for crate::SimAdapter {
    fn event_profiling(&self, event: &SimEvent) -> Result<ProfilingInfo> {
        event.0.profiling()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::state::SimState;
    use crate::topology::Topology;

    fn queue() -> (Arc<SimState>, SimQueue) {
        let s = Arc::new(SimState::new(Topology::single_device()));
        let q = SimQueue::new(s.devices[0].clone()).unwrap();
        (s, q)
    }

    #[test]
    fn commands_run_in_order_and_events_complete() {
        let (_s, q) = queue();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut events = Vec::new();
        for i in 0..5 {
            let log = log.clone();
            events.push(
                q.submit(
                    &[],
                    Box::new(move || {
                        log.lock().push(i);
                        Ok(())
                    }),
                )
                .unwrap(),
            );
        }
        q.finish().unwrap();
        assert_eq!(*log.lock(), vec![0, 1, 2, 3, 4]);
        for e in &events {
            assert_eq!(e.0.status(), EventStatus::Complete);
            let p = e.0.profiling().unwrap();
            assert!(p.queued <= p.submit && p.submit <= p.start && p.start <= p.end);
        }
    }

    #[test]
    fn failures_propagate_to_waiters_and_panics_become_errors() {
        let (_s, q1) = queue();
        let q2 = SimQueue::new(q1.device.clone()).unwrap();
        let bad = q1.submit(&[], Box::new(|| Err(Error::OutOfDeviceMemory))).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let dep = q2
            .submit(
                &[&bad],
                Box::new(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                }),
            )
            .unwrap();
        assert_eq!(wait_all(&[&dep, &bad]), Err(Error::OutOfDeviceMemory));
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        let p = q1.submit(&[], Box::new(|| panic!("boom"))).unwrap();
        assert!(matches!(p.0.wait(), Err(Error::CommandFailed(_))));
    }

    #[test]
    fn lost_device_refuses_and_fails_pending_work() {
        let (s, q) = queue();
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
        let blocker = q
            .submit(
                &[],
                Box::new(move || {
                    started_tx.send(()).unwrap();
                    gate_rx.recv().unwrap();
                    Ok(())
                }),
            )
            .unwrap();
        let pending = q.submit(&[], Box::new(|| Ok(()))).unwrap();
        started_rx.recv().unwrap();
        s.devices[0].set_lost(true);
        gate_tx.send(()).unwrap();
        assert!(blocker.0.wait().is_ok(), "a command already running finishes");
        assert_eq!(pending.0.wait(), Err(Error::DeviceLost));
        assert_eq!(q.submit(&[], Box::new(|| Ok(()))).err(), Some(Error::DeviceLost));
    }
}
