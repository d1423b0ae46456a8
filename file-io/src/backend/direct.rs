//! The direct fastpath: file data lands in host-visible device memory with
//! no bounce: a mapping of a buffer of a host-unified device (native, PoCL,
//! rusticl, Intel's CPU OpenCL), or USM host memory the device uses in
//! place. With an `O_DIRECT` file it is offered only where offset, size and
//! address are aligned as statx says; with a buffered file, everywhere.

use std::sync::Arc;

use parking_lot::Mutex;

use super::{Backend, Failed, Job};
use crate::error::{FileIoError, Result};
use crate::plan::{BackendKind, Direction, PieceView, Score};
use crate::pool::TaskSet;
use crate::target::{self, HostVisible};

/// Score of an `O_DIRECT` transfer straight into device memory.
pub(crate) const SCORE_O_DIRECT: i32 = 100;
/// Score of a buffered transfer straight into device memory.
pub(crate) const SCORE_BUFFERED: i32 = 80;

#[derive(Debug)]
pub(crate) struct Direct;

impl Backend for Direct {
    fn kind(&self) -> BackendKind {
        BackendKind::Direct
    }

    fn score(&self, job: &Job, p: &PieceView) -> Score {
        let refuse = |r: String| Score::refuse(BackendKind::Direct, r);
        if job.engine.settings.fallback_only {
            return refuse("fallback only (settings / UR_FILEIO_FALLBACK_ONLY)".into());
        }
        let into = match &job.target.visible {
            HostVisible::Mapped => "mapped device memory",
            HostVisible::UsmHost => "USM host memory",
            HostVisible::No(r) => return refuse(r.clone()),
        };
        let op = match p.dir {
            Direction::Read => "pread straight into",
            Direction::Write => "pwrite straight from",
        };
        if !p.o_direct {
            return Score::offer(
                BackendKind::Direct,
                SCORE_BUFFERED,
                format!("buffered {op} {into} (no bounce)"),
            );
        }
        let (oa, ma) = (p.offset_align, p.mem_align);
        if p.file_offset % oa as u64 != 0 {
            return refuse(format!("O_DIRECT file: offset {} is not {oa}-aligned", p.file_offset));
        }
        if p.len % oa != 0 {
            return refuse(format!("O_DIRECT file: size {} is not a multiple of {oa}", p.len));
        }
        match p.addr {
            None => refuse("O_DIRECT file: the mapping's address could not be learned".into()),
            Some(a) if a % ma != 0 => refuse(format!("O_DIRECT file: address {a:#x} is not {ma}-aligned")),
            Some(_) => Score::offer(
                BackendKind::Direct,
                SCORE_O_DIRECT,
                format!("O_DIRECT {op} {into}: offset, size and address {oa}/{ma}-aligned"),
            ),
        }
    }

    fn run(&self, job: &Arc<Job>, file_offset: u64, len: usize) -> Result<Vec<Failed>> {
        let whole = |error| {
            Ok(vec![Failed {
                file_offset,
                len,
                error,
            }])
        };
        let eng = &job.engine;
        let delta = (file_offset - job.file_offset) as usize;
        let mem = job.target.mem;
        let (base, mapping) = match target::host_range(&eng.rt, &job.target, delta, len, job.dir) {
            Some(Ok(range)) => range,
            Some(Err(e)) => return whole(e),
            None => unreachable!("direct is not offered for memory that is not host-visible"),
        };
        let od = job.mode.o_direct;
        let failures: Arc<Mutex<Vec<Failed>>> = Arc::new(Mutex::new(Vec::new()));
        if od && !job.o_direct_for(file_offset, len, base) {
            // The scored address was a probe; the real mapping disagrees.
            failures.lock().push(Failed {
                file_offset,
                len,
                error: FileIoError::io(
                    "O_DIRECT",
                    file_offset,
                    len,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("mapping at {base:#x} is not {}-aligned", job.mode.mem_align),
                    ),
                ),
            });
        } else {
            let task = eng.settings.task_size;
            let tasks = TaskSet::new(len.div_ceil(task));
            let (j, f) = (job.clone(), failures.clone());
            eng.pool.run(
                &tasks,
                eng.settings.threads - 1,
                Arc::new(move |ts: &TaskSet| {
                    while let Some(i) = ts.claim() {
                        let o = i * task;
                        let l = task.min(len - o);
                        let pos = file_offset + o as u64;
                        // SAFETY: `base..base + len` is a live mapping (unmapped
                        // only after `Pool::run` returns, when every task is done)
                        // or USM host memory the caller gave to this request;
                        // tasks cover disjoint ranges of it.
                        if let Err(error) = unsafe { transfer(&j, od, (base + o) as *mut u8, l, pos) } {
                            f.lock().push(Failed {
                                file_offset: pos,
                                len: l,
                                error,
                            });
                        }
                        ts.done();
                    }
                }),
            );
        }
        if let Some(m) = mapping {
            if let Err(e) = target::unmap(&eng.rt, mem, m) {
                // What landed in the mapping may be lost: redo the piece.
                return whole(e);
            }
        }
        let mut out = std::mem::take(&mut *failures.lock());
        out.sort_by_key(|f| f.file_offset);
        Ok(out)
    }
}

/// One task: `len` bytes at `ptr` from or to the file at `pos`.
///
/// # Safety
///
/// `ptr` is valid for reads and writes of `len` bytes, used by nothing
/// else, for the whole call.
unsafe fn transfer(job: &Job, od: bool, ptr: *mut u8, len: usize, pos: u64) -> Result<()> {
    // SAFETY: the caller's promise.
    let buf = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
    let injected = job.engine.take_injected_failure();
    match job.dir {
        Direction::Read => {
            if injected {
                // Half the bytes land, then the path fails: the retry must
                // overwrite the whole task.
                job.fds.read_full(od, &mut buf[..len / 2 / 4096 * 4096], pos)?;
                return Err(FileIoError::Injected);
            }
            let n = job.fds.read_full(od, buf, pos)?;
            if n < len {
                job.note_short(pos + n as u64);
            }
        }
        Direction::Write => {
            if injected {
                job.fds.write_full(od, &buf[..len / 2 / 4096 * 4096], pos)?;
                return Err(FileIoError::Injected);
            }
            job.fds.write_full(od, buf, pos)?;
        }
    }
    Ok(())
}
