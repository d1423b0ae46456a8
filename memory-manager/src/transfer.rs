//! [`HostTransfer`]: the decision tree for host <-> device transfers of
//! caller memory, with the thresholds in one place ([`TransferThresholds`]).
//!
//! 1. The range is already locked (in the registry, or a USM host allocation
//!    or lock the runtime's pointer map knows) -> [`TransferPath::Direct`]:
//!    one copy from it.
//! 2. Below `stage_below` bytes -> [`TransferPath::Staged`], through pooled
//!    pinned chunks (`chunk` bytes, `depth` in flight; the host memcpy of
//!    chunk k overlaps the device copy of chunk k-1).
//! 3. From `lock_at_least` bytes, on a device that locks
//!    ([`DeviceCaps::HOST_REGISTER`]) -> [`TransferPath::LockInPlace`]
//!    (lock, one copy, unlock).
//! 4. Otherwise `Direct` from pageable memory (for a CPU device that is one
//!    memcpy; a GPU driver stages by itself).
//!
//! A bounded cache of recent locks (UCX's registration cache) is not kept:
//! without munmap notifications a cached lock can outlive the caller's
//! mapping and pin pages a later mapping at the same address does not own.
//! Callers that keep memory for long lock it themselves
//! ([`PinnedRegistry::lock`]); step 1 then takes it.

use std::sync::Arc;

use ur_api::runtime::PointerKind;
use ur_api::{BufferId, ContextId, DeviceCaps, DeviceInfo, DeviceType, HostPtr, QueueId, Runtime, UsmKind};

use crate::pinned::{PinnedRegistry, RuntimeLocker, UnionPolicy};
use crate::staging::StagingPool;

/// The path one transfer takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransferPath {
    /// One copy straight from (to) the caller's memory.
    Direct,
    /// Lock the caller's range, one copy, unlock.
    LockInPlace,
    /// Through pooled pinned staging chunks.
    Staged,
}

/// Where the decision tree switches paths, per device; see the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferThresholds {
    /// Below this many bytes, stage.
    pub stage_below: usize,
    /// From this many bytes, stage too: on CPU devices the pipeline runs
    /// our memcpy of one chunk beside the device's copy of the previous
    /// one, two cores instead of one; `usize::MAX`: never.
    pub stage_at_least: usize,
    /// From this many bytes (and at least `stage_below`), lock in place on
    /// devices that lock; `usize::MAX`: never.
    pub lock_at_least: usize,
    /// Staging chunk size.
    pub chunk: usize,
    /// Staging chunks in flight.
    pub depth: usize,
}

impl TransferThresholds {
    /// The defaults for a device, from measurements where we have them
    /// (`memory-manager/benches/host_transfer.rs`):
    ///
    /// - CPU devices (PoCL, rusticl's llvmpipe, native, sim CPUs): the
    ///   device copy is a memcpy from pageable memory already; staging adds
    ///   a second one. Measured on PoCL (2-core VM, write + read, GiB/s,
    ///   direct vs staged): 4 KiB 0.076 vs 0.076 and 0.138 vs 0.147 (command
    ///   latency dominates: a tie); 1 MiB 17.9-19.0 vs 5.7-10.9; 4 MiB 21.2
    ///   vs 7.3; 16 MiB 17.1 vs 7.8; 32 MiB 9.1 vs 4.5; 64 MiB 8.1 vs 5.5;
    ///   256 MiB 4.0 vs 3.9 and 4.0 vs 4.7 (the pipeline's second core
    ///   against one more copy: a tie within this machine's noise). So
    ///   direct everywhere: `stage_below` 0, `stage_at_least` never.
    /// - Devices that lock (CUDA, Level Zero): lock in place from 1 MiB,
    ///   stage below. Not measured here (no GPU lent): a lock costs a
    ///   system call and a page walk (tens of microseconds per MiB by
    ///   vendor figures), a staged chunk one extra memcpy; the crossover is
    ///   expected between 256 KiB and 4 MiB; re-measure with the bench on a
    ///   lent GPU.
    /// - Other devices without locking (OpenCL GPUs): stage below 1 MiB,
    ///   where a pageable copy pays the driver's own bounce buffer and
    ///   synchronisation; direct above (not measured here).
    ///
    /// `UR_MM_STAGE_BELOW` and `UR_MM_LOCK_AT_LEAST` (bytes) override.
    pub fn for_device(info: &DeviceInfo) -> Self {
        let cpu = info.device_type == DeviceType::Cpu;
        let mut t = TransferThresholds {
            stage_below: if cpu { 0 } else { 1 << 20 },
            stage_at_least: usize::MAX,
            lock_at_least: if cpu { usize::MAX } else { 1 << 20 },
            chunk: 1 << 20,
            depth: 4,
        };
        let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
        if let Some(v) = env("UR_MM_STAGE_BELOW") {
            t.stage_below = v;
        }
        if let Some(v) = env("UR_MM_STAGE_AT_LEAST") {
            t.stage_at_least = v;
        }
        if let Some(v) = env("UR_MM_LOCK_AT_LEAST") {
            t.lock_at_least = v;
        }
        t
    }
}

/// Host <-> device transfers of caller memory for one context; see the
/// module docs.
#[derive(Debug)]
pub struct HostTransfer {
    rt: Arc<Runtime>,
    context: ContextId,
    can_lock: bool,
    thresholds: TransferThresholds,
    registry: PinnedRegistry,
    staging: StagingPool,
}

#[derive(Clone, Copy)]
enum Dir {
    ToDevice,
    FromDevice,
}

impl HostTransfer {
    /// Transfers for `context`, with thresholds from its first device.
    pub fn new(rt: Arc<Runtime>, context: ContextId) -> ur_api::Result<Self> {
        let devices = rt.context_devices(context)?;
        let infos: Vec<DeviceInfo> = devices.iter().map(|&d| rt.device_info(d)).collect::<Result<_, _>>()?;
        let can_lock = infos.iter().all(|i| i.caps.contains(DeviceCaps::HOST_REGISTER));
        let thresholds = TransferThresholds::for_device(&infos[0]);
        Ok(Self::with_thresholds(rt, context, can_lock, thresholds))
    }

    /// As [`HostTransfer::new`] with given thresholds (`can_lock`: the
    /// context's devices all offer [`DeviceCaps::HOST_REGISTER`]).
    pub fn with_thresholds(
        rt: Arc<Runtime>,
        context: ContextId,
        can_lock: bool,
        thresholds: TransferThresholds,
    ) -> Self {
        let locker = RuntimeLocker {
            rt: rt.clone(),
            context,
        };
        HostTransfer {
            rt,
            context,
            can_lock,
            thresholds,
            registry: PinnedRegistry::new(locker, UnionPolicy::Refuse),
            staging: StagingPool::default(),
        }
    }

    /// The thresholds in force.
    pub fn thresholds(&self) -> TransferThresholds {
        self.thresholds
    }

    /// The context's lock registry (lock long-lived memory here; transfers
    /// from it then go direct).
    pub fn registry(&self) -> &PinnedRegistry {
        &self.registry
    }

    fn already_locked(&self, base: usize, len: usize) -> bool {
        if let Some((p, _)) = self.registry.find(base) {
            return base + len <= p.region_base + p.region_size;
        }
        self.rt.pointer_info(base).is_some_and(|i| {
            let pinned = matches!(i.kind, PointerKind::Usm(UsmKind::Host) | PointerKind::Locked)
                && (i.kind != PointerKind::Locked || i.locks.iter().any(|(c, _)| *c == self.context));
            pinned && base + len <= i.base + i.size
        })
    }

    /// The path a transfer of `len` bytes at `base` takes.
    pub fn choose(&self, base: usize, len: usize) -> TransferPath {
        let t = &self.thresholds;
        if self.already_locked(base, len) {
            TransferPath::Direct
        } else if len < t.stage_below || len >= t.stage_at_least {
            TransferPath::Staged
        } else if self.can_lock && len >= t.lock_at_least {
            TransferPath::LockInPlace
        } else {
            TransferPath::Direct
        }
    }

    /// Writes `src` at `offset` of `buffer` through `queue` and waits;
    /// returns the path taken.
    pub fn write(&self, queue: QueueId, buffer: BufferId, offset: usize, src: &[u8]) -> ur_api::Result<TransferPath> {
        let path = self.choose(src.as_ptr() as usize, src.len());
        self.write_via(path, queue, buffer, offset, src)?;
        Ok(path)
    }

    /// Reads into `dst` from `offset` of `buffer` through `queue` and
    /// waits; returns the path taken.
    pub fn read(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        dst: &mut [u8],
    ) -> ur_api::Result<TransferPath> {
        let path = self.choose(dst.as_ptr() as usize, dst.len());
        self.read_via(path, queue, buffer, offset, dst)?;
        Ok(path)
    }

    /// [`HostTransfer::write`] by a path forced by the caller (benches;
    /// `LockInPlace` needs a device that locks).
    pub fn write_via(
        &self,
        path: TransferPath,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        src: &[u8],
    ) -> ur_api::Result<()> {
        // SAFETY: the borrow outlives the call, which waits for every command
        // given this span; writes only read it.
        let mem = unsafe { HostPtr::new(src.as_ptr().cast_mut(), src.len()) };
        self.run(path, Dir::ToDevice, queue, buffer, offset, mem)
    }

    /// [`HostTransfer::read`] by a path forced by the caller.
    pub fn read_via(
        &self,
        path: TransferPath,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        dst: &mut [u8],
    ) -> ur_api::Result<()> {
        // SAFETY: the exclusive borrow outlives the call, which waits for
        // every command given this span.
        let mem = unsafe { HostPtr::new(dst.as_mut_ptr(), dst.len()) };
        self.run(path, Dir::FromDevice, queue, buffer, offset, mem)
    }

    fn copy(&self, dir: Dir, queue: QueueId, buffer: BufferId, offset: usize, mem: HostPtr) -> ur_api::Result<()> {
        let e = match dir {
            Dir::ToDevice => self.rt.enqueue_write(queue, buffer, offset, mem, &[])?,
            Dir::FromDevice => self.rt.enqueue_read(queue, buffer, offset, mem, &[])?,
        };
        self.rt.complete(e)
    }

    fn run(
        &self,
        path: TransferPath,
        dir: Dir,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        mem: HostPtr,
    ) -> ur_api::Result<()> {
        if mem.is_empty() {
            return Ok(());
        }
        match path {
            TransferPath::Direct => self.copy(dir, queue, buffer, offset, mem),
            TransferPath::LockInPlace => {
                let base = mem.as_ptr() as usize;
                self.registry
                    .lock(mem)
                    .map_err(|e| ur_api::Error::invalid(format!("locking the caller's range: {e}")))?;
                let r = self.copy(dir, queue, buffer, offset, mem);
                let u = self.registry.unlock(base);
                r?;
                u.map(drop)
                    .map_err(|e| ur_api::Error::invalid(format!("unlocking the caller's range: {e}")))
            }
            TransferPath::Staged => self.staged(dir, queue, buffer, offset, mem),
        }
    }

    /// Chunks through `depth` pooled pinned buffers: the memcpy of one chunk
    /// overlaps the device copy of the one before.
    fn staged(&self, dir: Dir, queue: QueueId, buffer: BufferId, offset: usize, mem: HostPtr) -> ur_api::Result<()> {
        let t = &self.thresholds;
        let chunk = t.chunk.min(mem.len().next_power_of_two()).max(4096);
        let n = mem.len().div_ceil(chunk);
        let depth = t.depth.min(n).max(1);
        let ring = self.staging.take(&self.rt, &[self.context], depth, chunk)?;
        let piece = |k: usize| (k * chunk, chunk.min(mem.len() - k * chunk));
        let slot = |k: usize| {
            let (_, l) = piece(k);
            // SAFETY: each slot's command is waited for before the slot is
            // reused or the ring goes back to the pool (below, and on every
            // error path through `events`' drain).
            unsafe { HostPtr::new(ring[k % depth].base().as_ptr(), l) }
        };
        let caller = |k: usize| {
            let (o, l) = piece(k);
            mem.slice(o, l).expect("chunk inside the span")
        };
        let mut events: Vec<Option<ur_api::EventId>> = vec![None; n];
        let result = (|| -> ur_api::Result<()> {
            match dir {
                Dir::ToDevice => {
                    for k in 0..n {
                        if k >= depth {
                            if let Some(e) = events[k - depth].take() {
                                self.rt.complete(e)?;
                            }
                        }
                        let (s, d) = (caller(k), slot(k));
                        // SAFETY: the caller's span is readable for the call;
                        // the slot is idle (its last command completed) and
                        // as long as the chunk.
                        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_ptr(), s.len()) };
                        events[k] = Some(self.rt.enqueue_write(queue, buffer, offset + piece(k).0, d, &[])?);
                        self.rt.flush(queue)?;
                    }
                }
                Dir::FromDevice => {
                    for (k, e) in events.iter_mut().enumerate().take(depth) {
                        *e = Some(self.rt.enqueue_read(queue, buffer, offset + piece(k).0, slot(k), &[])?);
                    }
                    self.rt.flush(queue)?;
                    for k in 0..n {
                        if let Some(e) = events[k].take() {
                            self.rt.complete(e)?;
                        }
                        let (s, d) = (slot(k), caller(k));
                        // SAFETY: the slot's read completed; the caller's
                        // span is writable for the call.
                        unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), d.as_ptr(), d.len()) };
                        if k + depth < n {
                            let next = k + depth;
                            events[next] =
                                Some(
                                    self.rt
                                        .enqueue_read(queue, buffer, offset + piece(next).0, slot(next), &[])?,
                                );
                            self.rt.flush(queue)?;
                        }
                    }
                }
            }
            Ok(())
        })();
        // Drain what is still in flight (the last writes on success, anything
        // on an error path) before the ring goes back to the pool.
        let mut drained = Ok(());
        for e in events.into_iter().flatten() {
            let r = self.rt.complete(e);
            if drained.is_ok() {
                drained = r;
            }
        }
        self.staging.give_back(ring);
        result.and(drained)
    }
}
