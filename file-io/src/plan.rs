//! Plans as data: a request split into pieces (an aligned middle and
//! unaligned head and tail when the file is `O_DIRECT`), every backend's
//! [`Score`] for every piece, the choice, and [`Explanation`] to print it.

use std::fmt;

use crate::file::FileMode;

/// The backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendKind {
    /// The fastpath on host-visible device memory: file data lands in the
    /// device's memory (a mapping of a host-unified buffer, or USM host
    /// memory) with no bounce.
    Direct,
    /// NVIDIA cuFile (GPUDirect Storage), loaded at run time.
    Cufile,
    /// The fallback: pinned bounce buffers and device copies. Always offered.
    Bounce,
}

impl BackendKind {
    /// Every backend, in tie-break order (fastpaths first).
    pub const ALL: [BackendKind; 3] = [BackendKind::Direct, BackendKind::Cufile, BackendKind::Bounce];

    /// The name used on the command line and in explanations.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Direct => "direct",
            BackendKind::Cufile => "cufile",
            BackendKind::Bounce => "bounce",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which backends a request may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// The best score per piece.
    #[default]
    Auto,
    /// This backend where it is offered, the bounce fallback elsewhere; an
    /// error if it is offered for no part of the request. `Only(Bounce)`
    /// is "fallback only".
    Only(BackendKind),
}

impl std::str::FromStr for BackendChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "direct" => Ok(BackendChoice::Only(BackendKind::Direct)),
            "cufile" => Ok(BackendChoice::Only(BackendKind::Cufile)),
            "bounce" => Ok(BackendChoice::Only(BackendKind::Bounce)),
            _ => Err(format!(
                "unknown backend `{s}` (expected auto, direct, cufile or bounce)"
            )),
        }
    }
}

impl BackendChoice {
    fn allows(self, kind: BackendKind) -> bool {
        match self {
            BackendChoice::Auto => true,
            BackendChoice::Only(k) => kind == k || kind == BackendKind::Bounce,
        }
    }
}

/// File to device, or device to file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// File -> device.
    Read,
    /// Device -> file.
    Write,
}

/// One backend's answer for one piece: `value < 0` is "not offered".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Score {
    /// The backend.
    pub backend: BackendKind,
    /// Higher wins; negative: not offered.
    pub value: i32,
    /// Why, in words.
    pub reason: String,
}

impl Score {
    /// An offer.
    pub fn offer(backend: BackendKind, value: i32, reason: impl Into<String>) -> Self {
        Score {
            backend,
            value,
            reason: reason.into(),
        }
    }

    /// A refusal.
    pub fn refuse(backend: BackendKind, reason: impl Into<String>) -> Self {
        Score {
            backend,
            value: -1,
            reason: reason.into(),
        }
    }

    /// Whether the backend is offered.
    pub fn offered(&self) -> bool {
        self.value >= 0
    }
}

/// What a scorer sees of one piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PieceView {
    pub(crate) dir: Direction,
    pub(crate) file_offset: u64,
    pub(crate) len: usize,
    /// Host address of the piece's first byte in the target, where known.
    pub(crate) addr: Option<usize>,
    pub(crate) o_direct: bool,
    pub(crate) mem_align: usize,
    pub(crate) offset_align: usize,
}

impl PieceView {
    /// Offset and size aligned for `O_DIRECT` (the address is the caller's).
    pub(crate) fn file_aligned(&self) -> bool {
        self.o_direct && self.file_offset % self.offset_align as u64 == 0 && self.len % self.offset_align == 0
    }
}

/// One part of a request and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPiece {
    /// File offset of the piece.
    pub file_offset: u64,
    /// Bytes.
    pub len: usize,
    /// Offset of the piece from the request's start (in the target too).
    pub delta: usize,
    /// The backend chosen.
    pub chosen: BackendKind,
    /// Every backend's score.
    pub scores: Vec<Score>,
}

/// Splits `[offset, offset + len)` into an aligned middle and unaligned
/// head and tail for an `O_DIRECT` file; one piece otherwise (or when no
/// aligned middle exists). Returns `(file_offset, len)` pairs.
///
/// `offset + len` must not pass `i64::MAX` (the engine's `OffsetOverflow`
/// check runs first); public for the fuzz target.
pub fn split(offset: u64, len: usize, o_direct: bool, align: usize) -> Vec<(u64, usize)> {
    let end = offset + len as u64;
    let a = align.max(1) as u64;
    let start = offset.div_ceil(a) * a;
    let stop = end / a * a;
    if !o_direct || len == 0 || start >= stop {
        return vec![(offset, len)];
    }
    let mut out = Vec::with_capacity(3);
    if start > offset {
        out.push((offset, (start - offset) as usize));
    }
    out.push((start, (stop - start) as usize));
    if end > stop {
        out.push((stop, (end - stop) as usize));
    }
    out
}

/// Picks the best allowed offered score (ties: the first in
/// [`BackendKind::ALL`] order).
pub(crate) fn choose(scores: &[Score], choice: BackendChoice) -> Option<BackendKind> {
    let mut best: Option<&Score> = None;
    for s in scores.iter().filter(|s| s.offered() && choice.allows(s.backend)) {
        if best.is_none_or(|b| s.value > b.value) {
            best = Some(s);
        }
    }
    best.map(|s| s.backend)
}

/// What a request will do, piece by piece, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    /// Read or write.
    pub dir: Direction,
    /// The request's file offset.
    pub file_offset: u64,
    /// Bytes asked for.
    pub requested: usize,
    /// Bytes that will move (a read is cut at end of file).
    pub len: usize,
    /// How the file is open.
    pub file: FileMode,
    /// The device side, in words.
    pub target: String,
    /// The backend choice in force.
    pub choice: BackendChoice,
    /// The pieces, in file order.
    pub pieces: Vec<PlannedPiece>,
}

impl Explanation {
    /// Bytes per backend.
    pub fn bytes_by_backend(&self) -> Vec<(BackendKind, usize)> {
        BackendKind::ALL
            .iter()
            .map(|&k| (k, self.pieces.iter().filter(|p| p.chosen == k).map(|p| p.len).sum()))
            .filter(|&(_, n)| n > 0)
            .collect()
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.dir {
            Direction::Read => "read file -> device",
            Direction::Write => "write device -> file",
        };
        writeln!(
            f,
            "{verb}: {} bytes at file offset {}{}",
            self.requested,
            self.file_offset,
            if self.len < self.requested {
                format!(" ({} before end of file)", self.len)
            } else {
                String::new()
            }
        )?;
        writeln!(f, "  file:   {}", self.file)?;
        writeln!(f, "  device: {}", self.target)?;
        if self.choice != BackendChoice::Auto {
            writeln!(f, "  backend asked for: {:?}", self.choice)?;
        }
        if self.pieces.is_empty() {
            return writeln!(f, "  nothing to move: no backend is touched");
        }
        for p in &self.pieces {
            writeln!(
                f,
                "  [{}, {}) {} bytes -> {}",
                p.file_offset,
                p.file_offset + p.len as u64,
                p.len,
                p.chosen
            )?;
            for s in &p.scores {
                writeln!(f, "      {:<6} {:>4}  {}", s.backend.name(), s.value, s.reason)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_gives_head_middle_tail() {
        assert_eq!(split(3, 1024, true, 512), vec![(3, 509), (512, 512), (1024, 3)]);
        assert_eq!(split(512, 1024, true, 512), vec![(512, 1024)]);
        assert_eq!(split(0, 4097, true, 512), vec![(0, 4096), (4096, 1)]);
        assert_eq!(split(1, 4095, true, 512), vec![(1, 511), (512, 3584)]);
    }

    #[test]
    fn split_keeps_one_piece_without_o_direct_or_middle() {
        assert_eq!(split(3, 1024, false, 512), vec![(3, 1024)]);
        assert_eq!(split(3, 100, true, 512), vec![(3, 100)]);
        assert_eq!(split(510, 4, true, 512), vec![(510, 4)]);
        assert_eq!(split(7, 0, true, 512), vec![(7, 0)]);
    }

    #[test]
    fn choose_takes_the_best_allowed_offer() {
        let scores = vec![
            Score::offer(BackendKind::Direct, 100, "aligned"),
            Score::refuse(BackendKind::Cufile, "absent"),
            Score::offer(BackendKind::Bounce, 0, "always"),
        ];
        assert_eq!(choose(&scores, BackendChoice::Auto), Some(BackendKind::Direct));
        assert_eq!(
            choose(&scores, BackendChoice::Only(BackendKind::Bounce)),
            Some(BackendKind::Bounce)
        );
        assert_eq!(
            choose(&scores, BackendChoice::Only(BackendKind::Cufile)),
            Some(BackendKind::Bounce)
        );
        assert_eq!(choose(&scores[..2], BackendChoice::Only(BackendKind::Cufile)), None);
    }

    #[test]
    fn choice_parses() {
        assert_eq!("auto".parse::<BackendChoice>().unwrap(), BackendChoice::Auto);
        assert_eq!(
            "Direct".parse::<BackendChoice>().unwrap(),
            BackendChoice::Only(BackendKind::Direct)
        );
        assert!("fast".parse::<BackendChoice>().is_err());
    }
}
