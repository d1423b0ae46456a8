//! The link model: every device has a host link, some device pairs a peer
//! link. With the model on, a transfer holds every link it crosses (one
//! transfer per link at a time; different links run in parallel) and lasts
//! at least `sum(latency) + bytes / min(bandwidth)`: after the real memcpy
//! the transfer sleeps for the remainder. With the model off, links only
//! count bytes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};

use crate::topology::LinkSpec;

/// One link: its speed, a lock that serializes its transfers, and counters.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) spec: LinkSpec,
    busy: Mutex<()>,
    bytes: AtomicU64,
    transfers: AtomicU64,
}

impl Link {
    pub(crate) fn new(spec: LinkSpec) -> Self {
        Link {
            spec,
            busy: Mutex::new(()),
            bytes: AtomicU64::new(0),
            transfers: AtomicU64::new(0),
        }
    }

    /// Bytes moved over this link so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Transfers that crossed this link so far.
    pub(crate) fn transfers(&self) -> u64 {
        self.transfers.load(Ordering::Relaxed)
    }
}

/// Turns the link model on and off; shared by the adapter and its handles.
#[derive(Debug, Default)]
pub(crate) struct LinkModel {
    on: AtomicBool,
}

impl LinkModel {
    pub(crate) fn new(on: bool) -> Self {
        LinkModel {
            on: AtomicBool::new(on),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Runs `work` (which returns its result and the bytes it moved) as a
    /// transfer over `links`. With the model on, holds every link (locked in
    /// address order, so two transfers never deadlock) for at least the
    /// modelled time.
    pub(crate) fn transfer<R>(&self, links: &[&Arc<Link>], work: impl FnOnce() -> (R, usize)) -> R {
        let mut ordered: Vec<&Arc<Link>> = links.to_vec();
        ordered.sort_by_key(|l| Arc::as_ptr(l) as usize);
        ordered.dedup_by_key(|l| Arc::as_ptr(l) as usize);
        if !self.enabled() || ordered.is_empty() {
            let (r, moved) = work();
            count(&ordered, moved);
            return r;
        }
        let _held: Vec<MutexGuard<'_, ()>> = ordered.iter().map(|l| l.busy.lock()).collect();
        let start = Instant::now();
        let (r, moved) = work();
        count(&ordered, moved);
        let need = model_time(ordered.iter().map(|l| &l.spec), moved);
        let spent = start.elapsed();
        if need > spent {
            std::thread::sleep(need - spent);
        }
        r
    }
}

fn count(links: &[&Arc<Link>], moved: usize) {
    for l in links {
        l.bytes.fetch_add(moved as u64, Ordering::Relaxed);
        l.transfers.fetch_add(1, Ordering::Relaxed);
    }
}

/// Least time for `bytes` over a chain of links: every latency, and the
/// slowest bandwidth.
pub(crate) fn model_time<'a>(links: impl Iterator<Item = &'a LinkSpec>, bytes: usize) -> Duration {
    let mut latency = Duration::ZERO;
    let mut slowest: Option<u64> = None;
    for l in links {
        latency += l.latency;
        slowest = Some(slowest.map_or(l.bandwidth, |s| s.min(l.bandwidth)));
    }
    slowest.map_or(Duration::ZERO, |bw| LinkSpec::new(bw, latency).min_time(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_time_sums_latency_and_takes_slowest_bandwidth() {
        let a = LinkSpec::new(1000, Duration::from_millis(1));
        let b = LinkSpec::new(500, Duration::from_millis(2));
        assert_eq!(model_time([a, b].iter(), 1000), Duration::from_millis(2003));
        assert_eq!(model_time(std::iter::empty(), 1000), Duration::ZERO);
    }

    #[test]
    fn transfers_take_at_least_the_modelled_time_when_on() {
        let model = LinkModel::new(true);
        let link = Arc::new(Link::new(LinkSpec::new(1 << 20, Duration::from_millis(5))));
        let t = Instant::now();
        model.transfer(&[&link], || ((), 1 << 16)); // 5 ms + 62.5 ms
        assert!(t.elapsed() >= Duration::from_micros(67_500), "{:?}", t.elapsed());
        assert_eq!(link.bytes(), 1 << 16);
        assert_eq!(link.transfers(), 1);
    }

    #[test]
    fn one_link_serializes_two_links_overlap() {
        use std::sync::atomic::AtomicBool;
        use std::sync::mpsc::channel;

        let model = Arc::new(LinkModel::new(true));
        let spec = LinkSpec::new(u64::MAX, Duration::ZERO);
        let (a, b) = (Arc::new(Link::new(spec)), Arc::new(Link::new(spec)));
        // Hold link `a` with a transfer that waits for a signal.
        let (started_tx, started_rx) = channel();
        let (release_tx, release_rx) = channel::<()>();
        let holder = std::thread::spawn({
            let (m, a) = (model.clone(), a.clone());
            move || {
                m.transfer(&[&a], || {
                    started_tx.send(()).unwrap();
                    release_rx.recv().unwrap();
                    ((), 1)
                })
            }
        });
        started_rx.recv().unwrap();
        // Another link is free: this completes while `a` is held.
        model.transfer(&[&b], || ((), 1));
        assert_eq!(b.transfers(), 1);
        // The same link is not: a second transfer on `a` waits for the first.
        let ran = Arc::new(AtomicBool::new(false));
        let waiter = std::thread::spawn({
            let (m, a, ran) = (model.clone(), a.clone(), ran.clone());
            move || m.transfer(&[&a], || ((ran.store(true, Ordering::SeqCst)), 1))
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!ran.load(Ordering::SeqCst), "a second transfer ran on a busy link");
        release_tx.send(()).unwrap();
        holder.join().unwrap();
        waiter.join().unwrap();
        assert!(ran.load(Ordering::SeqCst));
        assert_eq!(a.transfers(), 2);
    }

    #[test]
    fn off_model_only_counts() {
        let model = LinkModel::default();
        let link = Arc::new(Link::new(LinkSpec::new(1, Duration::from_secs(60))));
        let t = Instant::now();
        let r = model.transfer(&[&link, &link], || (7, 3));
        assert_eq!(r, 7);
        assert!(t.elapsed() < Duration::from_secs(60));
        assert_eq!(link.bytes(), 3);
    }
}
