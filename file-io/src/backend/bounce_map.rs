//! The bounce fallback's mapping leg: for a target whose memory the host
//! maps at no cost (a buffer of a host-unified device, USM host memory) and
//! a buffered file, every thread moves its tasks in cache-sized pieces
//! ([`Settings::bounce_map_size`](crate::Settings::bounce_map_size)): it
//! `pread`s piece k into its pinned bounce buffer and copies it into the
//! device memory's mapping right away, while the piece is still in the
//! core's cache (writes: copy out of the mapping, then `pwrite`). Still two
//! copies (file -> bounce buffer -> device memory), but no device command
//! per piece and no thread left waiting on one. The measurements that made
//! it the default for such targets are in `bounce.rs`.

use std::sync::Arc;

use parking_lot::Mutex;

use super::bounce::Block;
use super::Job;
use crate::error::{FileIoError, Result};
use crate::plan::Direction;
use crate::pool::TaskSet;
use crate::target;

/// Moves `[file_offset, file_offset + len)` of `job` through the target's
/// host mapping. `Ok(false)`: the host could not reach the range (a failed
/// mapping, logged); the caller uses device writes instead, nothing was
/// moved.
pub(crate) fn run(job: &Arc<Job>, file_offset: u64, len: usize) -> Result<bool> {
    let eng = &job.engine;
    let delta = (file_offset - job.file_offset) as usize;
    let mem = job.target.mem;
    let (base, mapping) = match target::host_range(&eng.rt, &job.target, delta, len, job.dir) {
        Some(Ok(range)) => range,
        Some(Err(e)) => {
            tracing::warn!(error = %e, "bounce: the target's range is not reachable from the host; using device writes");
            return Ok(false);
        }
        None => return Ok(false),
    };
    let task = eng.settings.task_size;
    let piece = eng.settings.bounce_map_size.min(task);
    let stream = eng.settings.bounce_stream;
    let tasks = TaskSet::new(len.div_ceil(task));
    let error: Arc<Mutex<Option<FileIoError>>> = Arc::new(Mutex::new(None));
    let (j, e) = (job.clone(), error.clone());
    tracing::trace!(task, piece, len, stream, "bounce through the mapping");
    eng.pool.run(
        &tasks,
        eng.settings.threads - 1,
        Arc::new(move |ts: &TaskSet| {
            let mut block: Option<Block> = None;
            let r = (|| -> Result<()> {
                while let Some(i) = ts.claim() {
                    let t_off = i * task;
                    let t_len = task.min(len - t_off);
                    let b = match &block {
                        Some(b) => b,
                        None => {
                            let t = &j.target;
                            block.insert(j.engine.bounce.take(t.context, t.usm_host(), piece)?)
                        }
                    };
                    // SAFETY: `base..base + len` is a live mapping (unmapped only
                    // after `Pool::run` returns, when every task is done) or USM
                    // host memory the caller gave to this request; tasks cover
                    // disjoint ranges of it; the block is this thread's.
                    let r = unsafe {
                        move_task(
                            &j,
                            b,
                            (base + t_off) as *mut u8,
                            t_len,
                            file_offset + t_off as u64,
                            stream,
                        )
                    };
                    ts.done();
                    r?;
                }
                Ok(())
            })();
            if let Some(b) = block {
                j.engine.bounce.give(b);
            }
            if let Err(err) = r {
                ts.stop();
                e.lock().get_or_insert(err);
            }
        }),
    );
    if let Some(m) = mapping {
        target::unmap(&eng.rt, mem, m)?;
    }
    let err = error.lock().take();
    match err {
        Some(e) => Err(e),
        None => Ok(true),
    }
}

/// One task: `len` bytes at `dst` (device memory's host mapping) from or to
/// the file at `pos`, in pieces of the block's size.
///
/// # Safety
///
/// `dst` is valid for reads and writes of `len` bytes and used by nothing
/// else for the whole call; `block` is the caller's alone.
unsafe fn move_task(job: &Job, block: &Block, dst: *mut u8, len: usize, pos: u64, stream: bool) -> Result<()> {
    let mut o = 0;
    while o < len {
        let l = block.len().min(len - o);
        let at = pos + o as u64;
        // SAFETY: the block is this thread's and at least `l` bytes long.
        let bounce = unsafe { std::slice::from_raw_parts_mut(block.addr() as *mut u8, l) };
        // SAFETY: `o + l <= len`: inside the caller's range.
        let dev = unsafe { dst.add(o) };
        match job.dir {
            Direction::Read => {
                let n = job.fds.read_full(false, bounce, at)?;
                // SAFETY: `n <= l` bytes from the block into the caller's range;
                // they do not overlap (the block is ours, the range the device's).
                unsafe { copy(dev, bounce.as_ptr(), n, stream) };
                if n < l {
                    job.note_short(at + n as u64);
                    return Ok(());
                }
            }
            Direction::Write => {
                // SAFETY: as above, the other way round; the bounce buffer is
                // read by the `pwrite` right after, so no streaming stores.
                unsafe { std::ptr::copy_nonoverlapping(dev, bounce.as_mut_ptr(), l) };
                job.fds.write_full(false, bounce, at)?;
            }
        }
        o += l;
    }
    Ok(())
}

/// Copies `len` bytes from `src` to `dst`, with non-temporal stores when
/// `stream` (x86-64).
///
/// # Safety
///
/// As [`std::ptr::copy_nonoverlapping`]: `src` valid for reads and `dst`
/// for writes of `len` bytes, the two not overlapping.
unsafe fn copy(dst: *mut u8, src: *const u8, len: usize, stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && len >= 4096 {
        // SAFETY: the caller's promise.
        unsafe { copy_stream(dst, src, len) };
        return;
    }
    let _ = stream;
    // SAFETY: the caller's promise.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, len) };
}

/// [`copy`] with SSE2 non-temporal 16-byte stores for the 16-aligned middle
/// of `dst` (SSE2 is part of x86-64), plain copies for the ends.
///
/// # Safety
///
/// As [`copy`].
#[cfg(target_arch = "x86_64")]
unsafe fn copy_stream(dst: *mut u8, src: *const u8, len: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let head = dst.align_offset(16).min(len);
    let body = (len - head) / 64 * 64;
    // SAFETY: every access below lies within `[0, len)` of `src` and `dst`
    // (`head + body <= len`); the stores of the middle are 16-aligned; the
    // fence orders the streaming stores before any later store or release.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let (s, d) = (src.add(head), dst.add(head));
        let mut i = 0;
        while i < body {
            let a = _mm_loadu_si128(s.add(i) as *const __m128i);
            let b = _mm_loadu_si128(s.add(i + 16) as *const __m128i);
            let c = _mm_loadu_si128(s.add(i + 32) as *const __m128i);
            let e = _mm_loadu_si128(s.add(i + 48) as *const __m128i);
            _mm_stream_si128(d.add(i) as *mut __m128i, a);
            _mm_stream_si128(d.add(i + 16) as *mut __m128i, b);
            _mm_stream_si128(d.add(i + 32) as *mut __m128i, c);
            _mm_stream_si128(d.add(i + 48) as *mut __m128i, e);
            i += 64;
        }
        _mm_sfence();
        std::ptr::copy_nonoverlapping(s.add(body), d.add(body), len - head - body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_copy_matches_at_every_alignment() {
        let src: Vec<u8> = (0..20_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for (d_off, s_off, len) in [(0, 0, 0), (1, 0, 4096), (3, 5, 10_001), (15, 1, 19_000), (16, 16, 8192)] {
            let mut dst = vec![0u8; 20_000];
            // SAFETY: both ranges lie inside their vectors, which do not overlap.
            unsafe { copy(dst.as_mut_ptr().add(d_off), src.as_ptr().add(s_off), len, true) };
            assert_eq!(
                &dst[d_off..d_off + len],
                &src[s_off..s_off + len],
                "{d_off} {s_off} {len}"
            );
            assert!(dst[..d_off].iter().all(|&b| b == 0));
            assert!(dst[d_off + len..].iter().all(|&b| b == 0), "{d_off} {s_off} {len}");
        }
    }
}
