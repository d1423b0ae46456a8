//! Work run once a runtime event completes: `urEventSetCallback`'s
//! callbacks, and host memory a command reads that must outlive the call
//! (the replicated pattern of a fill larger than the backend's pattern
//! limit, [`crate::enqueue`]).
//!
//! One helper thread, started on first use, polls the status of every
//! pending event (`Runtime::event_status`, no blocking wait that would
//! hold up the others) and runs the work of each that is complete or
//! failed. The work runs on that thread with no lock of this module held,
//! so a callback may call back into the library (retain, release, enqueue,
//! set another callback). A callback that never returns holds up the ones
//! after it: UR asks callbacks to return promptly.

use std::sync::OnceLock;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use ur_api::{EventId, EventStatus};

use crate::state::state;

/// Work waiting for an event.
struct Pending {
    /// The runtime event, kept alive by the work's owner until the work
    /// runs; `None`: complete already.
    event: Option<EventId>,
    /// What to run once it is complete.
    then: Box<dyn FnOnce() + Send>,
}

#[derive(Default)]
struct Watcher {
    pending: Mutex<Vec<Pending>>,
    wake: Condvar,
}

/// The shortest and longest pause between two polls of pending events.
const MIN_PAUSE: Duration = Duration::from_micros(50);
const MAX_PAUSE: Duration = Duration::from_millis(2);

fn watcher() -> &'static Watcher {
    static W: OnceLock<&'static Watcher> = OnceLock::new();
    W.get_or_init(|| {
        let w: &'static Watcher = Box::leak(Box::default());
        let spawned = std::thread::Builder::new()
            .name("ur-capi-completion".into())
            .spawn(move || run(w));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the completion thread: callbacks will not run");
        }
        w
    })
}

/// Has the event finished (complete, failed, or no longer known to the
/// runtime, which only happens once it is done)?
fn finished(event: Option<EventId>) -> bool {
    match event {
        None => true,
        Some(id) => !matches!(
            state().rt.event_status(id),
            Ok(EventStatus::Queued | EventStatus::Submitted | EventStatus::Running)
        ),
    }
}

fn run(w: &'static Watcher) {
    let mut pause = MIN_PAUSE;
    loop {
        let batch = {
            let mut g = w.pending.lock();
            while g.is_empty() {
                w.wake.wait(&mut g);
            }
            std::mem::take(&mut *g)
        };
        let mut waiting = Vec::new();
        let mut ran = false;
        for p in batch {
            if finished(p.event) {
                ran = true;
                // The work is the library's own closure around the caller's
                // callback; a panic in it must not end this thread.
                if std::panic::catch_unwind(std::panic::AssertUnwindSafe(p.then)).is_err() {
                    tracing::error!("completion work panicked");
                }
            } else {
                waiting.push(p);
            }
        }
        if waiting.is_empty() {
            pause = MIN_PAUSE;
            continue;
        }
        {
            // Older work first: what arrived meanwhile goes after it.
            let mut g = w.pending.lock();
            waiting.append(&mut g);
            *g = waiting;
        }
        pause = if ran { MIN_PAUSE } else { (pause * 2).min(MAX_PAUSE) };
        std::thread::sleep(pause);
    }
}

/// Runs `then` on the completion thread once `event` is complete (at once
/// when it is `None`). The caller keeps `event` alive until `then` runs
/// (`then` releases it where the caller owned it).
pub fn after(event: Option<EventId>, then: Box<dyn FnOnce() + Send>) {
    let w = watcher();
    w.pending.lock().push(Pending { event, then });
    w.wake.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn work_for_a_complete_event_runs_on_the_helper_thread() {
        let (tx, rx) = mpsc::channel();
        let me = std::thread::current().id();
        after(
            None,
            Box::new(move || {
                let _ = tx.send(std::thread::current().id());
            }),
        );
        let ran_on = rx.recv_timeout(Duration::from_secs(10)).expect("the work ran");
        assert_ne!(ran_on, me);
    }

    #[test]
    fn work_may_register_more_work() {
        let (tx, rx) = mpsc::channel();
        after(
            None,
            Box::new(move || {
                after(
                    None,
                    Box::new(move || {
                        let _ = tx.send(2);
                    }),
                );
            }),
        );
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(2));
    }
}
