//! The backends behind one small trait: each scores a piece
//! ([`Backend::score`]) and moves the pieces it won ([`Backend::run`]).

pub(crate) mod bounce;
pub(crate) mod bounce_map;
pub(crate) mod cufile;
pub(crate) mod direct;

use std::sync::Arc;

use parking_lot::Mutex;

use crate::engine::Engine;
use crate::error::{FileIoError, Result};
use crate::file::{Fds, FileMode};
use crate::plan::{BackendKind, Direction, PieceView, Score};
use crate::target::Resolved;

/// One request being run, shared with the helper threads.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) engine: Arc<Engine>,
    pub(crate) fds: Arc<Fds>,
    pub(crate) mode: FileMode,
    pub(crate) dir: Direction,
    pub(crate) target: Resolved,
    /// The request's first file offset (the target's first byte).
    pub(crate) file_offset: u64,
    /// The first file position where a read met end of file early (the
    /// file shrank since the request was planned).
    short: Mutex<Option<u64>>,
}

impl Job {
    pub(crate) fn new(
        engine: Arc<Engine>,
        fds: Arc<Fds>,
        mode: FileMode,
        dir: Direction,
        target: Resolved,
        file_offset: u64,
    ) -> Self {
        Job {
            engine,
            fds,
            mode,
            dir,
            target,
            file_offset,
            short: Mutex::new(None),
        }
    }

    pub(crate) fn note_short(&self, at: u64) {
        let mut s = self.short.lock();
        *s = Some(s.map_or(at, |p| p.min(at)));
    }

    pub(crate) fn short_at(&self) -> Option<u64> {
        *self.short.lock()
    }

    /// The piece view the scorers see.
    pub(crate) fn view(&self, file_offset: u64, len: usize) -> PieceView {
        let delta = (file_offset - self.file_offset) as usize;
        PieceView {
            dir: self.dir,
            file_offset,
            len,
            addr: self.target.addr.map(|a| a + delta),
            o_direct: self.mode.o_direct,
            mem_align: self.mode.mem_align,
            offset_align: self.mode.offset_align,
        }
    }

    /// `O_DIRECT` for a transfer at `pos` of `len` bytes from or to memory at `addr`.
    pub(crate) fn o_direct_for(&self, pos: u64, len: usize, addr: usize) -> bool {
        self.mode.o_direct
            && pos % self.mode.offset_align as u64 == 0
            && len % self.mode.offset_align == 0
            && addr % self.mode.mem_align == 0
    }
}

/// A part of a piece a fastpath could not move: retried on the fallback.
#[derive(Debug)]
pub(crate) struct Failed {
    pub(crate) file_offset: u64,
    pub(crate) len: usize,
    pub(crate) error: FileIoError,
}

/// A backend.
pub(crate) trait Backend: Send + Sync + std::fmt::Debug {
    /// Which one.
    fn kind(&self) -> BackendKind;

    /// Its score for a piece of `job` (negative: not offered). Never does I/O.
    fn score(&self, job: &Job, piece: &PieceView) -> Score;

    /// Moves `[file_offset, file_offset + len)` of `job`, a piece this
    /// backend was offered for. A fastpath returns the parts that failed
    /// (to retry on the fallback); an `Err` is final.
    fn run(&self, job: &Arc<Job>, file_offset: u64, len: usize) -> Result<Vec<Failed>>;
}
