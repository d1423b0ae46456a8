//! What a queue's worker runs: a command carried by value.
//!
//! Memory commands (fills and copies) are plain enum variants holding their
//! [`Span`]s, so enqueueing one allocates nothing; only a kernel launch
//! (or a test's closure) is a boxed closure, [`Command::Run`]. Each
//! variant's memory stays alive while the command exists: its spans hold
//! the memory's `Arc` (see the safety argument of [`crate::memory`]).

use std::panic::{catch_unwind, AssertUnwindSafe};

use ur_api::{Error, RectCopy, Result};

use crate::memory::{fill, Span};

/// A command's own code, run on the worker; an `Err` text fails its event.
pub(crate) type Work = Box<dyn FnOnce() -> std::result::Result<(), String> + Send>;

/// One command of a queue.
pub(crate) enum Command {
    /// Fill `len` bytes at `dst` with `pattern` repeated.
    Fill { dst: Span, len: usize, pattern: Pattern },
    /// Copy `len` bytes from `src` to `dst` (overlap tolerated).
    Copy { dst: Span, src: Span, len: usize },
    /// Copy a box; `src` and `dst` are the starts of the objects the rect's
    /// origins and pitches are relative to. The rect (104 bytes) is boxed
    /// so that it does not make every command that large (see [`Pattern`]).
    CopyRect { dst: Span, src: Span, rect: Box<RectCopy> },
    /// Nothing to do but complete in order (barriers, map and unmap).
    Marker,
    /// Any other work: a kernel launch.
    Run(Work),
}

impl Command {
    /// A command copying `len` bytes from `src` to `dst`.
    pub(crate) fn copy(dst: Span, src: Span, len: usize) -> Command {
        Command::Copy { dst, src, len }
    }

    /// A command copying the box `rect` from `src` to `dst`.
    pub(crate) fn copy_rect(dst: Span, src: Span, rect: RectCopy) -> Command {
        Command::CopyRect {
            dst,
            src,
            rect: Box::new(rect),
        }
    }

    /// A command filling `len` bytes at `dst` with `pattern` repeated; the
    /// pattern (1 to 128 bytes) is copied into the command.
    pub(crate) fn fill(dst: Span, len: usize, pattern: &[u8]) -> Result<Command> {
        Ok(Command::Fill {
            dst,
            len,
            pattern: Pattern::new(pattern)?,
        })
    }

    /// Runs the command, consuming it (its spans are released before this
    /// returns); a panic fails the command rather than the worker.
    pub(crate) fn execute(self) -> Result<()> {
        match catch_unwind(AssertUnwindSafe(move || self.run())) {
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
        }
    }

    fn run(self) -> std::result::Result<(), String> {
        match self {
            Command::Fill { dst, len, pattern } => {
                // SAFETY: the span is alive (held by this command) and valid
                // for `len` bytes (the dyn layer's bounds checks, or
                // Span::usm's); the pattern lives inside this command, not in
                // the destination.
                unsafe { fill(dst.ptr(), len, pattern.as_slice()) };
            }
            Command::Copy { dst, src, len } => {
                // SAFETY: both spans are alive (held by this command) and
                // valid for `len` bytes (the dyn layer's bounds checks, or
                // Span::usm's). ptr::copy tolerates overlap (a host pointer
                // into a mapped buffer).
                unsafe { std::ptr::copy(src.ptr(), dst.ptr(), len) };
            }
            Command::CopyRect { dst, src, rect } => {
                let (s, d) = (src.ptr(), dst.ptr());
                rect.for_each_row(|so, dof, len| {
                    // SAFETY: the dyn layer checked every row of the box lies
                    // inside both objects, which the spans (alive until the
                    // end of this arm) keep alive.
                    unsafe { std::ptr::copy(s.add(so), d.add(dof), len) };
                });
            }
            Command::Marker => {}
            Command::Run(work) => return work(),
        }
        Ok(())
    }
}

/// The longest fill pattern stored inside the command itself.
const INLINE_PATTERN: usize = 16;

/// A fill pattern: stored inline up to [`INLINE_PATTERN`] bytes (every
/// scalar and vector of up to 16 bytes), so such a fill needs no
/// allocation; longer ones (up to 128 bytes) are boxed. Inline storage is
/// kept small because every command is as large as the largest variant
/// and is moved through the channel by value: with 128 bytes inline, the
/// moves (`memmove`) were a third of the dispatch bench's profile.
pub(crate) enum Pattern {
    Inline { bytes: [u8; INLINE_PATTERN], len: u8 },
    Boxed(Box<[u8]>),
}

impl Pattern {
    fn new(p: &[u8]) -> Result<Self> {
        if p.is_empty() || p.len() > 128 {
            return Err(Error::InvalidSize {
                what: "fill pattern (1..=128 bytes)",
                size: p.len(),
            });
        }
        Ok(match u8::try_from(p.len()) {
            Ok(len) if p.len() <= INLINE_PATTERN => {
                let mut bytes = [0u8; INLINE_PATTERN];
                bytes[..p.len()].copy_from_slice(p);
                Pattern::Inline { bytes, len }
            }
            _ => Pattern::Boxed(p.into()),
        })
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            Pattern::Inline { bytes, len } => &bytes[..usize::from(*len)],
            Pattern::Boxed(bytes) => bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::HostMem;
    use crate::NativeBuffer;

    fn bytes(b: &NativeBuffer) -> Vec<u8> {
        // SAFETY: the buffer is alive and `size` bytes long; no command runs.
        unsafe { std::slice::from_raw_parts(b.at(0), b.size()) }.to_vec()
    }

    #[test]
    fn memory_commands_run_in_place() {
        let b = NativeBuffer::whole(HostMem::alloc(16, 64).unwrap());
        Command::fill(Span::buffer(&b, 2), 6, &[1, 2, 3])
            .unwrap()
            .execute()
            .unwrap();
        assert_eq!(bytes(&b)[..10], [0, 0, 1, 2, 3, 1, 2, 3, 0, 0]);
        Command::copy(Span::buffer(&b, 10), Span::buffer(&b, 2), 6)
            .execute()
            .unwrap();
        assert_eq!(bytes(&b)[10..], [1, 2, 3, 1, 2, 3]);
        assert!(Command::fill(Span::buffer(&b, 0), 0, &[]).is_err());
        assert!(Command::fill(Span::buffer(&b, 0), 0, &[0; 129]).is_err());
        // A pattern too long to be stored inline.
        let long: Vec<u8> = (1..=17).collect();
        let c = NativeBuffer::whole(HostMem::alloc(34, 64).unwrap());
        Command::fill(Span::buffer(&c, 0), 34, &long)
            .unwrap()
            .execute()
            .unwrap();
        assert_eq!(bytes(&c), [&long[..], &long[..]].concat());
    }

    #[test]
    fn commands_stay_small() {
        // Moved by value through the channel: a size check, so a new
        // variant that bloats every command is noticed.
        assert!(
            std::mem::size_of::<Command>() <= 48,
            "{}",
            std::mem::size_of::<Command>()
        );
    }

    #[test]
    fn run_failures_and_panics_become_errors() {
        assert_eq!(Command::Marker.execute(), Ok(()));
        let failed = Command::Run(Box::new(|| Err("boom".into()))).execute();
        assert_eq!(failed, Err(Error::CommandFailed("boom".into())));
        let panicked = Command::Run(Box::new(|| panic!("kaboom {}", 7))).execute();
        assert!(matches!(panicked, Err(Error::CommandFailed(t)) if t.contains("kaboom 7")));
    }

    #[test]
    fn a_command_keeps_its_memory_alive() {
        let b = NativeBuffer::whole(HostMem::alloc(8, 64).unwrap());
        let cmd = Command::fill(Span::buffer(&b, 0), 8, &[9]).unwrap();
        let weak = std::sync::Arc::downgrade(&b.mem);
        drop(b);
        assert!(weak.upgrade().is_some(), "the command holds the memory");
        cmd.execute().unwrap();
        assert!(weak.upgrade().is_none(), "released once the command has run");
    }
}
