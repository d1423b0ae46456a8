//! The bounce fallback, always offered: page-aligned pinned bounce buffers
//! (USM host allocations of the target's context where the device offers
//! them, page-aligned host memory otherwise), pooled across requests and
//! so faulted in once.
//!
//! Two device legs ([`leg`], named by `explain`): how a piece gets from
//! its bounce buffer into device memory.
//!
//! **Copy through the device's host mapping** ([`super::bounce_map`]), for
//! a buffered file and a target the host maps at no cost (a buffer of a
//! host-unified device: native, PoCL, rusticl, Intel's CPU OpenCL; USM
//! host memory), unless the settings ask for device writes
//! (`bounce_copy`, `UR_FILEIO_BOUNCE_COPY=queue`). The request's range is
//! mapped once; every thread `pread`s piece k (`bounce_map_size`, 512 KiB,
//! `UR_FILEIO_BOUNCE_MAP_SIZE`) into its one bounce buffer and copies it
//! into the mapping right away, while it is still in the core's L2, with
//! non-temporal stores (`bounce_stream`, `UR_FILEIO_BOUNCE_STREAM`): the
//! destination is written once and not read back, so its lines are neither
//! read for ownership nor left to evict the next piece. No device command
//! per piece, and every thread reads. Writes: copy out of the mapping into
//! the bounce buffer, then `pwrite` it (plain stores: the `pwrite` reads
//! them back at once).
//!
//! Measured on the 2-core VM (256 MiB, PoCL, warm cache, `file_read`
//! bench: every variant follows plain `pread` in turn in each repetition, 3
//! runs of 5, 2 threads), reads over `pread`: the mapping leg with
//! streaming stores 0.92, 0.93, 0.91 (512 KiB pieces; 256 KiB 0.89-0.92,
//! 128 KiB 0.89, 64 KiB 0.84, 4 MiB 0.89); with plain stores 0.77-0.81
//! (128 KiB to 1 MiB pieces alike); the device-write leg in the same runs
//! 0.67, 0.69, 0.70. CPU seconds per GiB: 0.148-0.153 streaming, 0.175
//! plain, 0.180-0.183 device writes, plain `pread` 0.135-0.140. Writes over
//! `pwrite`: 1.06-1.08 against 0.99-1.03 for device writes. Before this
//! leg the same bench gave 0.60-0.70 (the device-write leg was the default).
//! The other host-unified devices, `ur-cp --backend bounce --direct-io off
//! --chunk 256M` of a cached 256 MiB file, the legs alternating, 3 each
//! (GiB/s, mapping leg against device writes): native 7.6-9.6 / 5.7-6.0,
//! rusticl (llvmpipe) 9.2-9.4 / 6.5-6.7, Intel's CPU OpenCL 8.0-9.9 /
//! 6.5-6.6, PoCL 9.1-9.6 / 6.3-6.8.
//!
//! **Device writes**, for everything else (device memory apart from the
//! host's: CUDA, Level Zero GPUs, sim; `O_DIRECT` files, whose pieces wait
//! on the disk). Each thread ([`readers`]: for buffered I/O on a CPU device
//! half the settings' threads, the device's copies take the other half)
//! claims tasks and moves each in pieces through a ring of buffers (the
//! settings' `bounce_size` and `bounce_ring`, `UR_FILEIO_BOUNCE_SIZE`,
//! `UR_FILEIO_BOUNCE_RING`; the piece size no longer depends on the task
//! size). A read `pread`s piece k into a buffer, enqueues the device write
//! out of it without waiting and goes on with piece k+1; it waits for
//! piece k's device write only when piece k + ring reuses the buffer.
//! Writes run the same ring the other way (device reads ahead, `pwrite` of
//! the oldest piece).
//!
//! The device-write defaults, 4 MiB pieces (one per task) in a ring of 2,
//! were chosen by measurement on the 2-core VM (256 MiB, PoCL, warm cache,
//! the variants taking turns after plain `pread` in each repetition,
//! `UR_FILEIO_BENCH_BOUNCE_SWEEP` of the `file_read` bench, 3 runs of 7):
//! reads over `pread` 0.68-0.82 for 4 MiB x 2, 0.62-0.69 for 512 KiB x 4,
//! 0.69-0.73 for 1 MiB x 4, 0.49-0.74 for 256 KiB x 4, 0.55-0.61 for
//! 4 MiB x 4; CPU seconds per GiB 0.27-0.28 (4 MiB x 2) against 0.28-0.29
//! (512 KiB) and 0.31-0.41 (256 KiB), plain `pread` 0.16-0.17. Cache-sized
//! pieces do not make the second copy cheaper on this leg: the per-command
//! cost of the device queue grows faster. Writes over `pwrite`: 0.71-0.83
//! for 4 MiB x 2, 0.63-0.66 for 512 KiB x 4.
//!
//! Aligned pieces of an `O_DIRECT` file use `O_DIRECT` (the buffers are
//! page-aligned) with task-sized pieces, two per thread: they wait on the
//! disk, not on memory; unaligned ones the buffered descriptor. Buffers of
//! 2 MiB or more sit on huge-page boundaries and ask for transparent huge
//! pages ([`advise_huge`]): `O_DIRECT` into 4 KiB pages ran at 0.4-0.8
//! GiB/s whatever the disk did, into huge pages at the disk's speed. With
//! them (file dropped from the page cache, 256 MiB, 2 threads), the
//! bounce path reads at 0.72-0.88 of plain `O_DIRECT` `pread` into huge
//! pages (the disk alone), the direct path at 0.99-1.07 of it.

use std::alloc::Layout;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{ContextId, DeviceType, EventId, HostPtr, MemRef, Runtime, UsmDesc, UsmKind, UsmPtr};

use super::{Backend, Failed, Job};
use crate::error::{FileIoError, Result};
use crate::plan::{BackendKind, Direction, PieceView, Score};
use crate::pool::TaskSet;
use crate::settings::BounceCopy;
use crate::target::{DeviceMem, HostVisible};

const PAGE: usize = 4096;
/// A transparent huge page (x86-64, aarch64 with 4 KiB pages).
const HUGE: usize = 2 << 20;

/// Alignment of a bounce buffer of `len` bytes: buffers of at least a huge
/// page start on one, so that [`advise_huge`] can back them with huge pages.
fn align_for(len: usize) -> usize {
    if len >= HUGE {
        HUGE
    } else {
        PAGE
    }
}

/// Asks the kernel to back `addr..addr + len` with transparent huge pages
/// (where it is `madvise` mode, as here). Measured on the 2-core VM: 256
/// MiB of `O_DIRECT` `pread` in 4 MiB requests, 2 threads, file dropped
/// from the page cache: 0.48-0.79 GiB/s into 4 KiB pages, 1.5-2.0 GiB/s
/// into huge pages (fewer, larger segments per request); the bounce path's
/// `O_DIRECT` reads were bound by this, not by the disk. Failure only costs
/// speed and is logged.
fn advise_huge(addr: usize, len: usize) {
    if len < HUGE || addr % HUGE != 0 {
        return;
    }
    // SAFETY: the range is a live allocation of ours; MADV_HUGEPAGE changes
    // how it is backed, never its contents.
    let r = unsafe { rustix::mm::madvise(addr as *mut std::ffi::c_void, len, rustix::mm::Advice::LinuxHugepage) };
    if let Err(e) = r {
        tracing::debug!(error = %e, "no huge pages for a bounce buffer");
    }
}

/// One bounce buffer.
#[derive(Debug)]
pub(crate) struct Block {
    addr: usize,
    len: usize,
    usm: Option<(ContextId, UsmPtr)>,
}

impl Block {
    /// The buffer's address.
    pub(crate) fn addr(&self) -> usize {
        self.addr
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// Bounce buffers kept between requests (of every piece size in use).
#[derive(Debug)]
pub(crate) struct BouncePool {
    rt: Arc<Runtime>,
    free: Mutex<Vec<Block>>,
    pub(crate) pinned: AtomicU64,
    pub(crate) plain: AtomicU64,
}

impl BouncePool {
    pub(crate) fn new(rt: Arc<Runtime>) -> Self {
        BouncePool {
            rt,
            free: Mutex::new(Vec::new()),
            pinned: AtomicU64::new(0),
            plain: AtomicU64::new(0),
        }
    }

    /// A free block of `len` bytes (a non-zero multiple of 4096) usable with
    /// `ctx` (its own USM host memory, or plain memory), or a new one.
    pub(crate) fn take(&self, ctx: ContextId, usm_host: bool, len: usize) -> Result<Block> {
        {
            let mut free = self.free.lock();
            let want = |b: &Block| {
                b.len == len
                    && match b.usm {
                        Some((c, _)) => c == ctx,
                        None => !usm_host,
                    }
            };
            if let Some(i) = free.iter().position(want) {
                return Ok(free.swap_remove(i));
            }
        }
        if usm_host {
            let desc = UsmDesc::new(UsmKind::Host, len).aligned(align_for(len));
            match self.rt.usm_alloc(ctx, &desc) {
                Ok(p) => {
                    self.pinned.fetch_add(1, Ordering::Relaxed);
                    advise_huge(p.0 as usize, len);
                    return Ok(Block {
                        addr: p.0 as usize,
                        len,
                        usm: Some((ctx, p)),
                    });
                }
                Err(e) => tracing::debug!(error = %e, "no USM host bounce buffer; using plain memory"),
            }
        }
        let layout = Layout::from_size_align(len, align_for(len)).expect("len is a non-zero multiple of 4096");
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        if p.is_null() {
            return Err(FileIoError::Runtime(ur_api::Error::OutOfHostMemory));
        }
        advise_huge(p as usize, len);
        self.plain.fetch_add(1, Ordering::Relaxed);
        Ok(Block {
            addr: p as usize,
            len,
            usm: None,
        })
    }

    pub(crate) fn give(&self, b: Block) {
        self.free.lock().push(b);
    }

    /// Frees every pooled block (a context with USM bounce buffers cannot
    /// be released while they live).
    pub(crate) fn trim(&self) {
        for b in self.free.lock().drain(..) {
            match b.usm {
                Some((ctx, p)) => {
                    if let Err(e) = self.rt.usm_free(ctx, p) {
                        tracing::warn!(error = %e, "freeing a bounce buffer failed");
                    }
                }
                None => {
                    let layout = Layout::from_size_align(b.len, align_for(b.len)).expect("as allocated");
                    // SAFETY: allocated in `take` with this layout, freed once.
                    unsafe { std::alloc::dealloc(b.addr as *mut u8, layout) };
                }
            }
        }
    }
}

impl Drop for BouncePool {
    fn drop(&mut self) {
        self.trim();
    }
}

#[derive(Debug)]
pub(crate) struct Bounce;

impl Backend for Bounce {
    fn kind(&self) -> BackendKind {
        BackendKind::Bounce
    }

    fn score(&self, job: &Job, p: &PieceView) -> Score {
        let threads = job.engine.settings.threads;
        let (leg, why) = leg(job);
        if leg == Leg::Mapping {
            let op = match p.dir {
                Direction::Read => "pread into a pinned bounce buffer, then copy into device memory",
                Direction::Write => "copy out of device memory into a pinned bounce buffer, then pwrite",
            };
            let s = &job.engine.settings;
            let stores = if p.dir == Direction::Read && s.bounce_stream && cfg!(target_arch = "x86_64") {
                "streaming stores"
            } else {
                "plain stores"
            };
            return Score::offer(
                BackendKind::Bounce,
                0,
                format!(
                    "always offered: buffered {op} ({} KiB pieces, one buffer per thread, {stores}; {threads} threads); device leg: {why}",
                    s.bounce_map_size.min(s.task_size) >> 10
                ),
            );
        }
        let how = if p.file_aligned() { "O_DIRECT" } else { "buffered" };
        let op = match p.dir {
            Direction::Read => "pread into a ring of pinned bounce buffers, device writes overlapped",
            Direction::Write => "device reads into a ring of pinned bounce buffers, pwrite overlapped",
        };
        let (piece, ring) = job.engine.settings.bounce_pieces(job.mode.o_direct);
        let n = readers(threads, job.target.info.device_type, job.mode.o_direct);
        let who = if n < threads {
            format!("{n} of {threads} threads (the CPU device's copies take the other cores)")
        } else {
            format!("{n} threads")
        };
        Score::offer(
            BackendKind::Bounce,
            0,
            format!(
                "always offered: {how} {op} ({ring} x {} KiB per thread); {who}; device leg: {why}",
                piece >> 10
            ),
        )
    }

    fn run(&self, job: &Arc<Job>, file_offset: u64, len: usize) -> Result<Vec<Failed>> {
        if leg(job).0 == Leg::Mapping && super::bounce_map::run(job, file_offset, len)? {
            return Ok(Vec::new());
        }
        let eng = &job.engine;
        let task = eng.settings.task_size;
        let (piece, ring) = eng.settings.bounce_pieces(job.mode.o_direct);
        let tasks = TaskSet::new(len.div_ceil(task));
        let error: Arc<Mutex<Option<FileIoError>>> = Arc::new(Mutex::new(None));
        let (j, e) = (job.clone(), error.clone());
        let readers = readers(eng.settings.threads, job.target.info.device_type, job.mode.o_direct);
        tracing::trace!(readers, task, piece, ring, len, "bounce");
        eng.pool.run(
            &tasks,
            readers - 1,
            Arc::new(move |ts: &TaskSet| {
                let geometry = Geometry {
                    file_offset,
                    len,
                    task,
                    piece,
                };
                if let Err(err) = Worker::new(&j, ts, geometry, ring).run() {
                    ts.stop();
                    e.lock().get_or_insert(err);
                }
            }),
        );
        let err = error.lock().take();
        match err {
            Some(e) => Err(e),
            None => Ok(Vec::new()),
        }
    }
}

/// The device leg of a bounce request: how each piece gets from its bounce
/// buffer into device memory (or back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Leg {
    /// Non-blocking device writes (reads) out of (into) a ring of buffers.
    DeviceWrite,
    /// The reading thread copies each piece through the device memory's
    /// host mapping ([`super::bounce_map`]).
    Mapping,
}

/// Which leg `job` takes, and why (for `explain`).
pub(crate) fn leg(job: &Job) -> (Leg, String) {
    let s = &job.engine.settings;
    // Named by what the device does: it writes the pieces of a file read,
    // and reads those of a file write.
    let queued = match job.dir {
        Direction::Read => "device write",
        Direction::Write => "device read",
    };
    let device_write = |why: &str| (Leg::DeviceWrite, format!("{queued}: {why}"));
    if s.bounce_copy == BounceCopy::Queue {
        return device_write("settings ask for it (bounce_copy / UR_FILEIO_BOUNCE_COPY=queue)");
    }
    if job.mode.o_direct {
        return device_write("O_DIRECT file: the pieces wait on the disk, queued device copies overlap them");
    }
    match &job.target.visible {
        HostVisible::Mapped => (
            Leg::Mapping,
            "copy through the device's host mapping: the device is host-unified (its buffer maps with no copy), \
             so each thread copies its piece while it is still in the core's cache, with no device command per piece"
                .into(),
        ),
        HostVisible::UsmHost => (
            Leg::Mapping,
            "copy through the device's host mapping: USM host memory, so each thread copies its piece while it \
             is still in the core's cache, with no device command per piece"
                .into(),
        ),
        HostVisible::No(r) => device_write(r),
    }
}

/// Threads that read (or write) the file for one bounce request on the
/// device-write leg, of `threads` (the mapping leg uses every thread: its
/// device copies are its own). On a CPU device the device side of every task (the copy from
/// the bounce buffer into the buffer) is a memcpy run by the OpenCL
/// runtime's own threads on the same cores, and so is a buffered read (the
/// kernel's copy from the page cache): half the threads read, so that
/// reading task k+1 and the device copy of task k each get a core instead
/// of twice as many threads sharing them. Measured on the 2-core VM (256
/// MiB, warm cache, PoCL, 4 MiB tasks, medians of 5, two runs each): 1
/// reader 2.94 and 2.48 GiB/s, 2 readers 2.71 and 2.22 GiB/s. `O_DIRECT`
/// reads (`o_direct`) wait on the disk, not the cores, and keep every
/// thread: the disk's queue depth.
pub(crate) fn readers(threads: usize, device: DeviceType, o_direct: bool) -> usize {
    match device {
        DeviceType::Cpu if !o_direct => (threads / 2).max(1),
        _ => threads.max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_halve_only_buffered_io_on_cpu_devices() {
        assert_eq!(readers(2, DeviceType::Cpu, false), 1);
        assert_eq!(readers(1, DeviceType::Cpu, false), 1);
        assert_eq!(readers(8, DeviceType::Cpu, false), 4);
        assert_eq!(readers(2, DeviceType::Cpu, true), 2);
        assert_eq!(readers(2, DeviceType::Gpu, false), 2);
    }
}

/// Where one bounce run's pieces lie.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    /// File offset of the run's first byte.
    file_offset: u64,
    /// Bytes in the run.
    len: usize,
    /// Bytes per task (the unit claimed from the [`TaskSet`]).
    task: usize,
    /// Bytes per piece (one bounce buffer).
    piece: usize,
}

/// A piece in flight on one of a worker's blocks.
#[derive(Debug)]
struct Pending {
    event: EventId,
    pos: u64,
    len: usize,
    od: bool,
    /// The last piece of its task: completing it ends the task.
    ends_task: bool,
}

/// One thread's share of a run: claims tasks and moves each in pieces
/// through a ring of blocks, waiting on a block's device command only when
/// the ring comes back to it.
struct Worker<'a> {
    job: &'a Job,
    ts: &'a TaskSet,
    g: Geometry,
    blocks: Vec<Option<Block>>,
    pending: Vec<Option<Pending>>,
    /// Pieces started so far (the next one takes slot `k % ring`).
    k: usize,
    /// A claimed task whose last piece is not yet pending: ended (once)
    /// by [`Worker::run`] if the pipeline stops early.
    open_task: bool,
}

impl<'a> Worker<'a> {
    fn new(job: &'a Job, ts: &'a TaskSet, g: Geometry, ring: usize) -> Self {
        Worker {
            job,
            ts,
            g,
            blocks: (0..ring).map(|_| None).collect(),
            pending: (0..ring).map(|_| None).collect(),
            k: 0,
            open_task: false,
        }
    }

    fn run(&mut self) -> Result<()> {
        let r = self.pipeline();
        // Every claimed task ends exactly once, errors included; blocks go
        // back only once no command uses them.
        for p in self.pending.iter_mut().filter_map(Option::take) {
            let _ = self.job.engine.rt.complete(p.event);
            if p.ends_task {
                self.ts.done();
            }
        }
        if std::mem::take(&mut self.open_task) {
            self.ts.done();
        }
        let pool = &self.job.engine.bounce;
        for b in self.blocks.iter_mut().filter_map(Option::take) {
            pool.give(b);
        }
        r
    }

    fn block(&mut self, slot: usize) -> Result<usize> {
        if self.blocks[slot].is_none() {
            let t = &self.job.target;
            self.blocks[slot] = Some(self.job.engine.bounce.take(t.context, t.usm_host(), self.g.piece)?);
        }
        Ok(self.blocks[slot].as_ref().expect("just set").addr)
    }

    fn pipeline(&mut self) -> Result<()> {
        let g = self.g;
        let ring = self.blocks.len();
        while let Some(i) = self.ts.claim() {
            self.open_task = true;
            let t_off = i * g.task;
            let t_len = g.task.min(g.len - t_off);
            let mut o = 0;
            while o < t_len {
                let l = g.piece.min(t_len - o);
                let last = o + l == t_len;
                let pos = g.file_offset + (t_off + o) as u64;
                let delta = (pos - self.job.file_offset) as usize;
                let slot = self.k % ring;
                self.k += 1;
                // The piece `ring` back used this block: its command (and,
                // for writes, its pwrite) ends before the block is reused.
                self.finish(slot)?;
                let addr = self.block(slot)?;
                let od = self.job.o_direct_for(pos, l, addr);
                match self.job.dir {
                    Direction::Read => {
                        // SAFETY: the block is ours (its last command completed
                        // in `finish`) and `piece >= l` bytes long.
                        let buf = unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, l) };
                        let n = self.job.fds.read_full(od, buf, pos)?;
                        let short = n < l;
                        if short {
                            self.job.note_short(pos + n as u64);
                        }
                        let ends_task = last || short;
                        if n > 0 {
                            let event = self.enqueue(Direction::Read, addr, n, delta)?;
                            self.pending[slot] = Some(Pending {
                                event,
                                pos,
                                len: n,
                                od,
                                ends_task,
                            });
                            if ends_task {
                                self.open_task = false;
                            }
                        } else if ends_task {
                            self.open_task = false;
                            self.ts.done();
                        }
                        if short {
                            // End of file: nothing more in this task.
                            break;
                        }
                    }
                    Direction::Write => {
                        let event = self.enqueue(Direction::Write, addr, l, delta)?;
                        self.pending[slot] = Some(Pending {
                            event,
                            pos,
                            len: l,
                            od,
                            ends_task: last,
                        });
                        if last {
                            self.open_task = false;
                        }
                    }
                }
                o += l;
            }
        }
        // The rest, oldest first.
        for s in 0..ring {
            self.finish((self.k + s) % ring)?;
        }
        Ok(())
    }

    /// Completes the command pending on `slot` (for writes, then `pwrite`s
    /// its bytes), ending its task if it was the task's last piece.
    fn finish(&mut self, slot: usize) -> Result<()> {
        let Some(p) = self.pending[slot].take() else {
            return Ok(());
        };
        let r = self
            .job
            .engine
            .rt
            .complete(p.event)
            .map_err(FileIoError::from)
            .and_then(|()| {
                if self.job.dir == Direction::Write {
                    let addr = self.blocks[slot].as_ref().expect("a pending slot has a block").addr;
                    // SAFETY: the device read into the block completed; the
                    // block is ours and at least `p.len` bytes long.
                    let buf = unsafe { std::slice::from_raw_parts(addr as *const u8, p.len) };
                    self.job.fds.write_full(p.od, buf, p.pos)?;
                }
                Ok(())
            });
        if p.ends_task {
            self.ts.done();
        }
        r
    }

    /// Enqueues the device side of a piece: host block -> device (reads of
    /// the file) or device -> host block (writes), and flushes, without
    /// waiting for it.
    fn enqueue(&self, dir: Direction, addr: usize, len: usize, delta: usize) -> Result<EventId> {
        let rt = &self.job.engine.rt;
        // SAFETY: the block stays ours, untouched, until the event completes
        // (`finish` or `run` waits for it before reuse or return).
        let host = unsafe { HostPtr::new(addr as *mut u8, len) };
        let mem = self.job.target.mem;
        let ev = match (mem, dir) {
            (DeviceMem::Buffer { queue, buffer, offset }, Direction::Read) => {
                rt.enqueue_write(queue, buffer, offset + delta, host, &[])?
            }
            (DeviceMem::Buffer { queue, buffer, offset }, Direction::Write) => {
                rt.enqueue_read(queue, buffer, offset + delta, host, &[])?
            }
            (DeviceMem::Usm { queue, ptr }, Direction::Read) => {
                rt.enqueue_usm_copy(queue, MemRef::Usm(ptr.offset(delta)), MemRef::Host(host), len, &[])?
            }
            (DeviceMem::Usm { queue, ptr }, Direction::Write) => {
                rt.enqueue_usm_copy(queue, MemRef::Host(host), MemRef::Usm(ptr.offset(delta)), len, &[])?
            }
        };
        rt.flush(mem.queue())?;
        Ok(ev)
    }
}
