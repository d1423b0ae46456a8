//! The thread pool: fixed worker threads fed through a channel, and
//! [`TaskSet`], the tasks of one piece claimed by the calling thread and by
//! helpers on the pool. The caller always works too, so a request makes
//! progress even when every worker is busy with other requests.

use std::sync::Arc;

use crossbeam_channel::{unbounded, Sender};
use parking_lot::{Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// Worker threads; dropped, they finish their jobs and exit.
#[derive(Debug)]
pub(crate) struct Pool {
    tx: Sender<Job>,
    workers: usize,
}

impl Pool {
    /// `workers` threads (the caller of [`Pool::run`] is one more).
    pub(crate) fn new(workers: usize) -> Self {
        let (tx, rx) = unbounded::<Job>();
        for i in 0..workers {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("ur-file-io-{i}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                });
            if let Err(e) = spawned {
                tracing::warn!(error = %e, "could not start an I/O worker; running with fewer");
            }
        }
        Pool { tx, workers }
    }

    /// Runs `body` on the calling thread and on up to `helpers` pool
    /// workers; each claims tasks from `tasks` until none is left. Returns
    /// once every claimed task is done and no further claim can succeed.
    pub(crate) fn run(&self, tasks: &Arc<TaskSet>, helpers: usize, body: Arc<dyn Fn(&TaskSet) + Send + Sync>) {
        let helpers = helpers.min(self.workers).min(tasks.n.saturating_sub(1));
        for _ in 0..helpers {
            let (t, b) = (tasks.clone(), body.clone());
            if self.tx.send(Box::new(move || b(&t))).is_err() {
                break;
            }
        }
        body(tasks);
        tasks.close();
    }
}

#[derive(Debug)]
struct State {
    next: usize,
    in_flight: usize,
    stopped: bool,
}

/// `n` tasks, claimed one at a time.
#[derive(Debug)]
pub(crate) struct TaskSet {
    n: usize,
    state: Mutex<State>,
    cv: Condvar,
}

impl TaskSet {
    pub(crate) fn new(n: usize) -> Arc<Self> {
        Arc::new(TaskSet {
            n,
            state: Mutex::new(State {
                next: 0,
                in_flight: 0,
                stopped: false,
            }),
            cv: Condvar::new(),
        })
    }

    /// The next task, or `None` when all are claimed or the set stopped.
    pub(crate) fn claim(&self) -> Option<usize> {
        let mut s = self.state.lock();
        if s.stopped || s.next >= self.n {
            return None;
        }
        s.next += 1;
        s.in_flight += 1;
        Some(s.next - 1)
    }

    /// A claimed task is finished (successfully or not).
    pub(crate) fn done(&self) {
        let mut s = self.state.lock();
        s.in_flight -= 1;
        if s.in_flight == 0 {
            self.cv.notify_all();
        }
    }

    /// No further claims (after an error).
    pub(crate) fn stop(&self) {
        self.state.lock().stopped = true;
    }

    /// Stops claims and waits for the claimed tasks.
    fn close(&self) {
        let mut s = self.state.lock();
        s.stopped = true;
        while s.in_flight > 0 {
            self.cv.wait(&mut s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_task_runs_once_with_helpers() {
        let pool = Pool::new(3);
        let hits: Arc<Vec<AtomicUsize>> = Arc::new((0..100).map(|_| AtomicUsize::new(0)).collect());
        let ts = TaskSet::new(100);
        let h = hits.clone();
        pool.run(
            &ts,
            3,
            Arc::new(move |t: &TaskSet| {
                while let Some(i) = t.claim() {
                    h[i].fetch_add(1, Ordering::Relaxed);
                    std::thread::yield_now();
                    t.done();
                }
            }),
        );
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
    }

    #[test]
    fn stop_ends_claims_and_run_returns() {
        let pool = Pool::new(2);
        let ran = Arc::new(AtomicUsize::new(0));
        let ts = TaskSet::new(50);
        let r = ran.clone();
        pool.run(
            &ts,
            2,
            Arc::new(move |t: &TaskSet| {
                while let Some(i) = t.claim() {
                    r.fetch_add(1, Ordering::Relaxed);
                    if i == 3 {
                        t.stop();
                    }
                    t.done();
                }
            }),
        );
        let n = ran.load(Ordering::Relaxed);
        assert!((4..50).contains(&n), "{n} tasks ran");
        assert!(ts.claim().is_none());
    }
}
