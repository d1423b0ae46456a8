//! [`IoStats`] (the engine's counters) and [`IoReport`] (one request's).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::plan::BackendKind;

/// Counters since the engine was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Requests that moved at least one byte.
    pub requests: u64,
    /// Bytes moved by the direct fastpath.
    pub direct_bytes: u64,
    /// Bytes moved by cuFile.
    pub cufile_bytes: u64,
    /// Bytes moved by the bounce fallback (retries included).
    pub bounce_bytes: u64,
    /// Bytes moved to or from a logical buffer's host place.
    pub host_bytes: u64,
    /// Fastpath parts that failed and were retried on the fallback.
    pub retries: u64,
    /// Bytes of those parts.
    pub retried_bytes: u64,
    /// Pinned (USM host) bounce buffers allocated.
    pub pinned_bounce_buffers: u64,
    /// Plain page-aligned bounce buffers allocated (no USM host memory).
    pub plain_bounce_buffers: u64,
}

impl IoStats {
    /// Bytes moved by a backend.
    pub fn bytes(&self, kind: BackendKind) -> u64 {
        match kind {
            BackendKind::Direct => self.direct_bytes,
            BackendKind::Cufile => self.cufile_bytes,
            BackendKind::Bounce => self.bounce_bytes,
        }
    }
}

/// What one request did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoReport {
    /// Bytes moved (a read is cut at end of file).
    pub bytes: usize,
    /// Bytes per backend, in [`BackendKind::ALL`] order (direct, cufile, bounce).
    pub by_backend: [u64; 3],
    /// Fastpath parts retried on the fallback.
    pub retries: u64,
    /// Bytes of those parts.
    pub retried_bytes: u64,
    /// Wall time of the transfer.
    pub elapsed: Duration,
}

impl IoReport {
    /// Bytes moved by a backend.
    pub fn bytes_by(&self, kind: BackendKind) -> u64 {
        self.by_backend[index(kind)]
    }

    /// Adds another report (for a copy made of several requests).
    pub fn add(&mut self, o: &IoReport) {
        self.bytes += o.bytes;
        for i in 0..3 {
            self.by_backend[i] += o.by_backend[i];
        }
        self.retries += o.retries;
        self.retried_bytes += o.retried_bytes;
        self.elapsed += o.elapsed;
    }
}

pub(crate) fn index(kind: BackendKind) -> usize {
    match kind {
        BackendKind::Direct => 0,
        BackendKind::Cufile => 1,
        BackendKind::Bounce => 2,
    }
}

#[derive(Debug, Default)]
pub(crate) struct Counters {
    requests: AtomicU64,
    by_backend: [AtomicU64; 3],
    host: AtomicU64,
    retries: AtomicU64,
    retried_bytes: AtomicU64,
}

impl Counters {
    pub(crate) fn record(&self, r: &IoReport) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        for i in 0..3 {
            self.by_backend[i].fetch_add(r.by_backend[i], Ordering::Relaxed);
        }
        self.retries.fetch_add(r.retries, Ordering::Relaxed);
        self.retried_bytes.fetch_add(r.retried_bytes, Ordering::Relaxed);
    }

    pub(crate) fn record_host(&self, bytes: usize) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.host.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self, pinned: u64, plain: u64) -> IoStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        IoStats {
            requests: l(&self.requests),
            direct_bytes: l(&self.by_backend[0]),
            cufile_bytes: l(&self.by_backend[1]),
            bounce_bytes: l(&self.by_backend[2]),
            host_bytes: l(&self.host),
            retries: l(&self.retries),
            retried_bytes: l(&self.retried_bytes),
            pinned_bounce_buffers: pinned,
            plain_bounce_buffers: plain,
        }
    }
}
