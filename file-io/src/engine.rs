//! [`FileIo`]: the engine. Checks a request, plans it (split, score,
//! choose), runs the pieces, retries failed fastpath parts on the fallback.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{bounded, Receiver};
use ur_api::Runtime;

use crate::backend::bounce::{Bounce, BouncePool};
use crate::backend::cufile::Cufile;
use crate::backend::direct::Direct;
use crate::backend::{Backend, Job};
use crate::error::{FileIoError, Result};
use crate::file::{IoFile, OpenOptions};
use crate::plan::{self, BackendChoice, BackendKind, Direction, Explanation, PlannedPiece};
use crate::settings::Settings;
use crate::stats::{self, Counters, IoReport, IoStats};
use crate::target::{DeviceMem, HostVisible, Resolved};

/// One transfer between a file range and device memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// File -> device or device -> file.
    pub dir: Direction,
    /// The device side.
    pub target: DeviceMem,
    /// Where in the file.
    pub file_offset: u64,
    /// Bytes.
    pub size: usize,
    /// Which backends may be used.
    pub backend: BackendChoice,
}

impl Request {
    /// Reads `size` bytes at `file_offset` into `target`.
    pub fn read(target: DeviceMem, file_offset: u64, size: usize) -> Self {
        Request {
            dir: Direction::Read,
            target,
            file_offset,
            size,
            backend: BackendChoice::Auto,
        }
    }

    /// Writes `size` bytes from `source` at `file_offset`.
    pub fn write(source: DeviceMem, file_offset: u64, size: usize) -> Self {
        Request {
            dir: Direction::Write,
            ..Self::read(source, file_offset, size)
        }
    }

    /// The same with a backend choice.
    pub fn with_backend(self, backend: BackendChoice) -> Self {
        Request { backend, ..self }
    }
}

#[derive(Debug)]
pub(crate) struct Engine {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) settings: Settings,
    pub(crate) pool: crate::pool::Pool,
    pub(crate) bounce: BouncePool,
    pub(crate) counters: Counters,
    inject: AtomicU64,
    backends: [Box<dyn Backend>; 3],
}

impl Engine {
    /// Consumes one injected fastpath failure, if any is pending.
    pub(crate) fn take_injected_failure(&self) -> bool {
        self.inject
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }

    fn backend(&self, kind: BackendKind) -> &dyn Backend {
        let b = self.backends[stats::index(kind)].as_ref();
        debug_assert_eq!(b.kind(), kind);
        b
    }
}

/// The file I/O engine over a runtime: cheap to clone, usable from many
/// threads at once.
#[derive(Debug, Clone)]
pub struct FileIo {
    engine: Arc<Engine>,
}

/// A request in flight ([`FileIo::submit`]).
#[derive(Debug)]
pub struct IoHandle {
    rx: Option<Receiver<Result<IoReport>>>,
    ready: Option<Result<IoReport>>,
}

impl IoHandle {
    /// Waits for the request and returns its report (or its error).
    pub fn wait(mut self) -> Result<IoReport> {
        if let Some(r) = self.ready.take() {
            return r;
        }
        let rx = self.rx.take().expect("a handle waits once");
        rx.recv().unwrap_or_else(|_| {
            Err(FileIoError::io(
                "request thread",
                0,
                0,
                std::io::Error::other("the request thread ended without a result"),
            ))
        })
    }

    /// Whether the request has finished (then [`IoHandle::wait`] does not block).
    pub fn is_done(&mut self) -> bool {
        if self.ready.is_none() {
            if let Some(r) = self.rx.as_ref().and_then(|rx| rx.try_recv().ok()) {
                self.ready = Some(r);
            }
        }
        self.ready.is_some()
    }
}

/// A checked and planned request.
struct Prepared {
    job: Arc<Job>,
    explanation: Explanation,
}

impl FileIo {
    /// An engine with [`Settings::from_env`].
    pub fn new(rt: Arc<Runtime>) -> Result<Self> {
        Self::with_settings(rt, Settings::from_env()?)
    }

    /// An engine with these settings.
    pub fn with_settings(rt: Arc<Runtime>, settings: Settings) -> Result<Self> {
        settings.validate()?;
        Ok(FileIo {
            engine: Arc::new(Engine {
                pool: crate::pool::Pool::new(settings.threads - 1),
                bounce: BouncePool::new(rt.clone()),
                rt,
                settings,
                counters: Counters::default(),
                inject: AtomicU64::new(0),
                backends: [Box::new(Direct), Box::new(Cufile), Box::new(Bounce)],
            }),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> Settings {
        self.engine.settings
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.engine.rt
    }

    /// Opens a file (`O_DIRECT` per `opts` or the settings; see [`IoFile::mode`]).
    pub fn open(&self, path: impl AsRef<Path>, opts: OpenOptions) -> Result<IoFile> {
        IoFile::open(
            path.as_ref(),
            opts,
            opts.direct_io.unwrap_or(self.engine.settings.direct_io),
        )
    }

    /// Reads `size` bytes at `file_offset` into `target`; returns the
    /// bytes read (fewer at end of file).
    pub fn read(&self, file: &IoFile, target: DeviceMem, file_offset: u64, size: usize) -> Result<usize> {
        Ok(self.run(file, &Request::read(target, file_offset, size))?.bytes)
    }

    /// Writes `size` bytes from `source` at `file_offset`.
    pub fn write(&self, file: &IoFile, source: DeviceMem, file_offset: u64, size: usize) -> Result<usize> {
        Ok(self.run(file, &Request::write(source, file_offset, size))?.bytes)
    }

    /// Runs a request on the calling thread (and the pool) and waits.
    pub fn run(&self, file: &IoFile, req: &Request) -> Result<IoReport> {
        match self.prepare(file, req)? {
            None => Ok(IoReport::default()),
            Some(p) => self.execute(p),
        }
    }

    /// Starts a request and returns a handle to wait on. Input errors come
    /// back here, before anything moves.
    pub fn submit(&self, file: &IoFile, req: Request) -> Result<IoHandle> {
        let Some(p) = self.prepare(file, &req)? else {
            return Ok(IoHandle {
                rx: None,
                ready: Some(Ok(IoReport::default())),
            });
        };
        let (tx, rx) = bounded(1);
        let me = self.clone();
        std::thread::Builder::new()
            .name("ur-file-io-request".into())
            .spawn(move || {
                let _ = tx.send(me.execute(p));
            })
            .map_err(|e| FileIoError::io("spawning a request thread", req.file_offset, req.size, e))?;
        Ok(IoHandle {
            rx: Some(rx),
            ready: None,
        })
    }

    /// What a request would do, piece by piece, with every backend's score.
    /// Checks the request as [`FileIo::run`] does; moves nothing.
    pub fn explain(&self, file: &IoFile, req: &Request) -> Result<Explanation> {
        match self.prepare(file, req)? {
            Some(p) => Ok(p.explanation),
            None => {
                let target = if req.size == 0 {
                    "(not resolved: size 0 touches no backend)".to_string()
                } else {
                    Resolved::new(&self.engine.rt, req.target)?.describe()
                };
                Ok(Explanation {
                    dir: req.dir,
                    file_offset: req.file_offset,
                    requested: req.size,
                    len: 0,
                    file: file.mode().clone(),
                    target,
                    choice: req.backend,
                    pieces: Vec::new(),
                })
            }
        }
    }

    /// The counters.
    pub fn stats(&self) -> IoStats {
        let b = &self.engine.bounce;
        self.engine
            .counters
            .snapshot(b.pinned.load(Ordering::Relaxed), b.plain.load(Ordering::Relaxed))
    }

    /// For tests: the next `n` fastpath tasks fail (after moving part of
    /// their bytes) with [`FileIoError::Injected`]; each is retried on the
    /// fallback.
    pub fn inject_fastpath_failures(&self, n: u64) {
        self.engine.inject.store(n, Ordering::Release);
    }

    /// Frees the pooled bounce buffers (do this before releasing a context
    /// whose USM host memory they are).
    pub fn release_bounce_buffers(&self) {
        self.engine.bounce.trim();
    }

    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Checks in the documented order (closed, not writable, size 0,
    /// overflow, target, capacity), cuts a read at end of file, plans.
    /// `None`: nothing to move.
    fn prepare(&self, file: &IoFile, req: &Request) -> Result<Option<Prepared>> {
        let fds = file.fds()?;
        if req.dir == Direction::Write && !file.writable() {
            return Err(FileIoError::NotWritable {
                path: file.path().to_path_buf(),
            });
        }
        if req.size == 0 {
            return Ok(None);
        }
        check_span(req.file_offset, req.size)?;
        let rt = &self.engine.rt;
        let mut target = Resolved::new(rt, req.target)?;
        if target.capacity < req.size {
            return Err(FileIoError::BufferTooSmall {
                needed: req.size,
                available: target.capacity,
            });
        }
        let len = match req.dir {
            Direction::Read => {
                let file_len = file.len()?;
                (file_len.saturating_sub(req.file_offset)).min(req.size as u64) as usize
            }
            Direction::Write => req.size,
        };
        if len == 0 {
            return Ok(None);
        }
        let mode = file.mode().clone();
        let direct_wanted = !self.engine.settings.fallback_only
            && matches!(
                req.backend,
                BackendChoice::Auto | BackendChoice::Only(BackendKind::Direct)
            );
        if direct_wanted && mode.o_direct && target.visible == HostVisible::Mapped {
            target.probe_address(rt);
        }
        let describe = target.describe();
        let job = Arc::new(Job::new(
            self.engine.clone(),
            fds,
            mode.clone(),
            req.dir,
            target,
            req.file_offset,
        ));
        let mut pieces = Vec::new();
        for (off, n) in plan::split(req.file_offset, len, mode.o_direct, mode.offset_align) {
            let view = job.view(off, n);
            let scores: Vec<_> = self.engine.backends.iter().map(|b| b.score(&job, &view)).collect();
            let chosen = plan::choose(&scores, req.backend).unwrap_or(BackendKind::Bounce);
            pieces.push(PlannedPiece {
                file_offset: off,
                len: n,
                delta: (off - req.file_offset) as usize,
                chosen,
                scores,
            });
        }
        if let BackendChoice::Only(k) = req.backend {
            if k != BackendKind::Bounce && !pieces.iter().any(|p| p.chosen == k) {
                let reason = pieces[0]
                    .scores
                    .iter()
                    .find(|s| s.backend == k)
                    .map_or_else(String::new, |s| s.reason.clone());
                return Err(FileIoError::NotOffered { backend: k, reason });
            }
        }
        let explanation = Explanation {
            dir: req.dir,
            file_offset: req.file_offset,
            requested: req.size,
            len,
            file: mode,
            target: describe,
            choice: req.backend,
            pieces,
        };
        Ok(Some(Prepared { job, explanation }))
    }

    fn execute(&self, p: Prepared) -> Result<IoReport> {
        let start = Instant::now();
        let job = p.job;
        let mut report = IoReport::default();
        for piece in &p.explanation.pieces {
            let failed = self
                .engine
                .backend(piece.chosen)
                .run(&job, piece.file_offset, piece.len)?;
            let failed_bytes: usize = failed.iter().map(|f| f.len).sum();
            report.by_backend[stats::index(piece.chosen)] += (piece.len - failed_bytes) as u64;
            for f in failed {
                tracing::warn!(
                    backend = %piece.chosen,
                    error = %f.error,
                    file_offset = f.file_offset,
                    len = f.len,
                    "fastpath failed; retrying on the bounce fallback"
                );
                report.retries += 1;
                report.retried_bytes += f.len as u64;
                self.engine
                    .backend(BackendKind::Bounce)
                    .run(&job, f.file_offset, f.len)
                    .inspect_err(|e| tracing::error!(error = %e, first = %f.error, "the fallback failed too"))?;
                report.by_backend[stats::index(BackendKind::Bounce)] += f.len as u64;
            }
        }
        report.bytes = match job.short_at() {
            Some(at) => (at - job.file_offset) as usize,
            None => p.explanation.len,
        };
        report.elapsed = start.elapsed();
        self.engine.counters.record(&report);
        tracing::debug!(bytes = report.bytes, retries = report.retries, elapsed = ?report.elapsed, "request done");
        Ok(report)
    }
}

/// `offset + size` must fit a file offset (`i64`).
pub(crate) fn check_span(offset: u64, size: usize) -> Result<()> {
    match offset.checked_add(size as u64) {
        Some(end) if end <= i64::MAX as u64 => Ok(()),
        _ => Err(FileIoError::OffsetOverflow { offset, size }),
    }
}
