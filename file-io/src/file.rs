//! [`IoFile`]: an open file, with a buffered descriptor and, where the file
//! system allows it, an `O_DIRECT` one, and the file system's alignment.

use std::fs::File;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use rustix::fs::{AtFlags, OFlags, StatxFlags};

use crate::error::{FileIoError, Result};
use crate::settings::DirectIo;

/// Alignment assumed when the file system does not report `STATX_DIOALIGN`
/// (hipFile's default).
pub const DEFAULT_DIO_ALIGN: usize = 4096;

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for writing too (created if missing).
    pub write: bool,
    /// Truncate to zero length (with `write`).
    pub truncate: bool,
    /// `O_DIRECT` policy; `None`: the engine's [`crate::Settings::direct_io`].
    pub direct_io: Option<DirectIo>,
}

impl OpenOptions {
    /// Read only.
    pub fn read() -> Self {
        OpenOptions {
            write: false,
            truncate: false,
            direct_io: None,
        }
    }

    /// Read and write, created if missing, kept as it is.
    pub fn write() -> Self {
        OpenOptions {
            write: true,
            ..Self::read()
        }
    }

    /// Read and write, created if missing, truncated.
    pub fn create() -> Self {
        OpenOptions {
            write: true,
            truncate: true,
            direct_io: None,
        }
    }

    /// The same with this `O_DIRECT` policy.
    pub fn direct_io(self, d: DirectIo) -> Self {
        OpenOptions {
            direct_io: Some(d),
            ..self
        }
    }
}

/// What the open found: `O_DIRECT` or buffered, why, and the alignment
/// `O_DIRECT` transfers need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMode {
    /// An `O_DIRECT` descriptor is open.
    pub o_direct: bool,
    /// Memory address alignment for `O_DIRECT` (statx `stx_dio_mem_align`).
    pub mem_align: usize,
    /// File offset and size alignment for `O_DIRECT` (`stx_dio_offset_align`).
    pub offset_align: usize,
    /// Why, in words (shown by `explain`).
    pub reason: String,
}

impl std::fmt::Display for FileMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.o_direct {
            write!(
                f,
                "O_DIRECT (offset/size align {}, memory align {}; {})",
                self.offset_align, self.mem_align, self.reason
            )
        } else {
            write!(f, "buffered ({})", self.reason)
        }
    }
}

/// The descriptors; shared by in-flight tasks, so a close during a request
/// takes effect for the next one.
#[derive(Debug)]
pub(crate) struct Fds {
    pub(crate) buffered: File,
    pub(crate) direct: Option<File>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    writable: bool,
    mode: FileMode,
    fds: Mutex<Option<Arc<Fds>>>,
}

/// An open file. Cheap to clone (all clones share one state); usable from
/// several threads at once.
#[derive(Debug, Clone)]
pub struct IoFile {
    inner: Arc<Inner>,
}

fn dio_alignment(f: &File) -> Option<(usize, usize)> {
    let st = rustix::fs::statx(f, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN).ok()?;
    if st.stx_mask & StatxFlags::DIOALIGN.bits() == 0 || st.stx_dio_offset_align == 0 {
        return None;
    }
    Some((st.stx_dio_mem_align as usize, st.stx_dio_offset_align as usize))
}

impl IoFile {
    pub(crate) fn open(path: &Path, opts: OpenOptions, policy: DirectIo) -> Result<Self> {
        let err = |source| FileIoError::Open {
            path: path.to_path_buf(),
            source,
        };
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        if opts.write {
            o.write(true).create(true).truncate(opts.truncate);
        }
        let buffered = o.open(path).map_err(err)?;
        let meta = buffered.metadata().map_err(err)?;
        if meta.is_dir() {
            return Err(err(std::io::Error::new(
                std::io::ErrorKind::IsADirectory,
                "is a directory",
            )));
        }
        let (direct, mode) = if policy == DirectIo::Off {
            let mode = FileMode {
                o_direct: false,
                mem_align: 1,
                offset_align: 1,
                reason: "O_DIRECT turned off".into(),
            };
            (None, mode)
        } else {
            let mut d = std::fs::OpenOptions::new();
            d.read(true)
                .write(opts.write)
                .custom_flags(OFlags::DIRECT.bits() as i32);
            match d.open(path) {
                Ok(f) => {
                    let (mem, off, reason) = match dio_alignment(&f) {
                        Some((m, o)) => (m, o, "statx DIOALIGN".to_string()),
                        None => (
                            DEFAULT_DIO_ALIGN,
                            DEFAULT_DIO_ALIGN,
                            format!("statx reports no DIOALIGN: assuming {DEFAULT_DIO_ALIGN}"),
                        ),
                    };
                    let mode = FileMode {
                        o_direct: true,
                        mem_align: mem.max(1),
                        offset_align: off.max(1),
                        reason,
                    };
                    (Some(f), mode)
                }
                Err(e) if policy == DirectIo::On => {
                    return Err(err(std::io::Error::new(
                        e.kind(),
                        format!("O_DIRECT open refused: {e}"),
                    )))
                }
                Err(e) => {
                    let mode = FileMode {
                        o_direct: false,
                        mem_align: 1,
                        offset_align: 1,
                        reason: format!("the file system refused O_DIRECT: {e}"),
                    };
                    (None, mode)
                }
            }
        };
        tracing::debug!(path = %path.display(), %mode, "opened");
        Ok(IoFile {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                writable: opts.write,
                mode,
                fds: Mutex::new(Some(Arc::new(Fds { buffered, direct }))),
            }),
        })
    }

    /// The path it was opened with.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// `O_DIRECT` or buffered, and the alignment.
    pub fn mode(&self) -> &FileMode {
        &self.inner.mode
    }

    /// Opened for writing.
    pub fn writable(&self) -> bool {
        self.inner.writable
    }

    /// Closes the descriptors (requests in flight finish first); later
    /// requests are [`FileIoError::Closed`].
    pub fn close(&self) {
        self.inner.fds.lock().take();
    }

    /// Whether [`IoFile::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.inner.fds.lock().is_none()
    }

    pub(crate) fn fds(&self) -> Result<Arc<Fds>> {
        self.inner.fds.lock().clone().ok_or_else(|| FileIoError::Closed {
            path: self.inner.path.clone(),
        })
    }

    /// The file's length now.
    pub fn len(&self) -> Result<u64> {
        let fds = self.fds()?;
        let meta = fds.buffered.metadata().map_err(|e| FileIoError::io("fstat", 0, 0, e))?;
        Ok(meta.len())
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// Drops the file's pages from the page cache (`POSIX_FADV_DONTNEED`),
    /// for cold-cache measurements.
    pub fn drop_page_cache(&self) -> Result<()> {
        let fds = self.fds()?;
        let _ = fds.buffered.sync_data();
        rustix::fs::fadvise(&fds.buffered, 0, None, rustix::fs::Advice::DontNeed)
            .map_err(|e| FileIoError::io("posix_fadvise", 0, 0, e.into()))
    }
}

impl Fds {
    /// The descriptor for a transfer: `O_DIRECT` when asked and open.
    pub(crate) fn pick(&self, o_direct: bool) -> (&File, &'static str, &'static str) {
        match (&self.direct, o_direct) {
            (Some(f), true) => (f, "O_DIRECT pread", "O_DIRECT pwrite"),
            _ => (&self.buffered, "pread", "pwrite"),
        }
    }

    /// Reads until `buf` is full or end of file; returns the bytes read.
    pub(crate) fn read_full(&self, o_direct: bool, buf: &mut [u8], offset: u64) -> Result<usize> {
        let (f, op, _) = self.pick(o_direct);
        let mut done = 0;
        while done < buf.len() {
            match f.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FileIoError::io(op, offset + done as u64, buf.len() - done, e)),
            }
        }
        Ok(done)
    }

    /// Writes all of `buf` at `offset`.
    pub(crate) fn write_full(&self, o_direct: bool, buf: &[u8], offset: u64) -> Result<()> {
        let (f, _, op) = self.pick(o_direct);
        f.write_all_at(buf, offset)
            .map_err(|e| FileIoError::io(op, offset, buf.len(), e))
    }
}
