//! # ur-sim: simulated discrete devices
//!
//! A real test target for the memory manager and the conformance suite:
//! devices with memory the host cannot address, a configurable topology
//! (platforms, devices, which connection holds between any two locations,
//! asymmetric ones included), a link model that makes transfers take time,
//! and deterministic fault injection.
//!
//! ## Design choices
//!
//! - **Separate arenas, real bytes.** Every buffer and device USM allocation
//!   lives in its device's arena. No host pointer to device memory is ever
//!   handed out: device USM pointers are addresses in a per-device fake
//!   address space ([`DEVICE_SPACE_BASE`], non-canonical on x86-64 and
//!   AArch64, one [`DEVICE_SPACE_STRIDE`] per device) that only the sim
//!   interprets; mapping copies into a host staging buffer and unmapping
//!   writes it back (for `WRITE`/`WRITE_INVALIDATE`). Data moves only through
//!   the adapter's commands. Host USM is real host memory. Shared USM is
//!   not advertised (no `UsmCaps::SHARED`), so the dyn layer refuses it and
//!   the adapter has no branch for it.
//! - **USM allocations are objects** ([`SimUsm`]: an arena allocation or a
//!   host block). The dyn layer resolves every USM pointer to its allocation
//!   and offset, so the sim keeps no pointer table; it only hands out the
//!   fake device addresses. Freeing drops the object; commands in flight
//!   hold the memory, so the arena gets it back when the last has run.
//! - **Connections per ordered device pair.** Contexts are made at run time,
//!   so the topology states, per ordered pair, what holds within one context
//!   and across contexts ([`PairRule`]); defaults: same device and context
//!   `Unified`, other device of the same context `Migratable`, different
//!   contexts or platforms `None`. Every answer is true to the sim: it can
//!   copy between any two arenas (`Migratable` holds everywhere) and its
//!   commands address any arena in place (`Unified` holds wherever stated).
//!   The dyn layer lets memory be used on a queue of another location only
//!   where the answer is `Unified`, or `Migratable` for copies.
//! - **Link model, off by default.** Each device has a host link (bandwidth,
//!   latency), pairs may have a peer link. With the model on, every transfer
//!   over a link holds it (one at a time per link, links in parallel) and
//!   lasts at least `latency + bytes / bandwidth` (see [`SimLinks`]).
//! - **Faults are exact.** [`SimFaults`] fails the n-th allocation, a
//!   transfer after k bytes, marks devices lost or caps their memory. No
//!   randomness anywhere.
//! - **Queues** are in order, one worker thread each (`queue.rs`); kernels are
//!   host kernels ([`ur_api::HostKernelLibrary`]), with `ur-api`'s shared
//!   program and kernel types (`ur_api::host_kernel`, as the native adapter):
//!   a launch runs with the arenas of its memory arguments locked. Host code
//!   takes a global offset and local-memory arguments, so the devices say so.
//! - **No validation, no books.** The data-path methods are `unsafe fn`
//!   whose contracts (see [`ur_api::Adapter`]) carry what the dyn layer
//!   checked: regions in bounds, memory usable at the queue's location,
//!   live USM ranges, pattern lengths, kernel argument counts, host
//!   registrations (the dyn layer keeps those books). What the sim still
//!   checks is its own behaviour: lost devices, injected faults, arena
//!   budgets.
//! - **One shared state, below everything.** `state.rs` holds the machine
//!   ([`SimAdapter`] and its [`SimFaults`]/[`SimLinks`] handles share it):
//!   devices with their arenas, links and lost flags, the armed faults. It
//!   depends on no other module but the topology and the link model;
//!   `device.rs` (platforms, devices, contexts, connections), `memory.rs`,
//!   `queue.rs`, `program.rs` and `faults.rs` (the public handles) build on it.
//!
//! ## The topology text format (`UR_SIM_TOPOLOGY`)
//!
//! Statements are separated by `;` or new lines; `#` starts a comment.
//!
//! ```text
//! platform NAME: DEVICE {, DEVICE}     a platform and its devices
//!   DEVICE := NAME {KEY=VALUE}         type=gpu|cpu|acc|custom (gpu)
//!                                      mem=SIZE (256MiB)  bw=RATE (16GiB/s)
//!                                      lat=DURATION (5us)
//! pair A->B {KEY=VALUE}                rule for memory of A used at B
//! pair A<->B {KEY=VALUE}               the same rule both ways
//!                                      same=CONN  other=CONN
//!                                      peer=RATE[@DURATION]
//! links on|off                         the link model (off)
//!
//! SIZE: 4096, 64KiB, 1GiB, 16MB   RATE: SIZE/s   DURATION: 0, 500ns, 5us, 2ms, 1s
//! CONN: unified | migratable | none
//! ```
//!
//! A bad text is a [`TopologyError`] with line, column and reason.
//!
//! ```
//! use ur_api::{BufferDesc, Location, MemoryConnection, QueueProps, Runtime};
//! use ur_sim::{SimAdapter, Topology};
//!
//! let topo = Topology::parse(
//!     "platform gpus: g0 mem=64MiB bw=8GiB/s lat=2us, g1 mem=64MiB
//!      platform fpga: f0 type=acc mem=16MiB
//!      pair g0->f0 other=migratable",
//! )?;
//! let mut rt = Runtime::new();
//! rt.add(SimAdapter::new(topo))?;
//! let devs = rt.all_devices();
//! let (g0, f0) = (devs[0], devs[2]);
//! let (cg, cf) = (rt.create_context(&[g0])?, rt.create_context(&[f0])?);
//! let (lg, lf) = (Location::new(cg, g0), Location::new(cf, f0));
//! assert_eq!(rt.memory_connection(lg, lf)?, MemoryConnection::Migratable);
//! assert_eq!(rt.memory_connection(lf, lg)?, MemoryConnection::None);
//!
//! // Real bytes move between the arenas, on a queue of the destination.
//! let q = rt.create_queue(cf, f0, &QueueProps::default())?;
//! let qg = rt.create_queue(cg, g0, &QueueProps::default())?;
//! let a = rt.create_buffer(cg, &BufferDesc::new(8).on(g0), None)?;
//! let b = rt.create_buffer(cf, &BufferDesc::new(8).on(f0), None)?;
//! rt.write(qg, a, 0, b"simulate")?;
//! let ev = rt.enqueue_copy(q, a, 0, b, 0, 8, &[])?;
//! rt.complete(ev)?;
//! let mut back = [0u8; 8];
//! rt.read(q, b, 0, &mut back)?;
//! assert_eq!(&back, b"simulate");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod conv;
mod device;
mod faults;
mod link;
mod memory;
mod program;
mod queue;
mod state;
mod topology;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use ur_api::{
    Adapter, Backend, BufferDesc, DeviceAddr, DeviceInfo, EventStatus, HostPtr, KernelArg, KernelInfo, Loc, MapFlags,
    MemArg, MemoryConnection, NdRange, PlatformInfo, ProfilingInfo, ProgramSource, QueueProps, RectCopy, Result,
    UsmAdvice, UsmDesc, UsmPtr, UsmRef,
};

pub use device::{SimContext, SimDevice, SimPlatform};
pub use faults::{LinkStats, SimFaults, SimLinks, INJECTED_TRANSFER_FAULT, INJECTED_WAIT_FAULT};
pub use memory::{SimBuffer, SimUsm};
pub use program::{SimKernel, SimProgram};
pub use queue::{SimEvent, SimQueue};
pub use state::{DEVICE_SPACE_BASE, DEVICE_SPACE_STRIDE};
pub use topology::{
    DeviceSpec, LinkSpec, PairRule, PlatformSpec, Topology, TopologyBuilder, TopologyError, TOPOLOGY_ENV,
};

use memory::{HostBlock, Mapping, Operand};
use state::{SimState, ARENA_ALIGN};

/// The simulated-device adapter over one [`Topology`].
///
/// ```
/// use ur_sim::{SimAdapter, Topology};
/// let sim = SimAdapter::new(Topology::two_devices_peer().with_link_model(true));
/// let faults = sim.faults(); // take handles before moving the adapter
/// let links = sim.links();
/// let mut rt = ur_api::Runtime::new();
/// rt.add(sim)?;
/// assert_eq!(rt.all_devices().len(), 2);
/// assert!(links.enabled());
/// faults.lose_device("gpu1")?;
/// # Ok::<(), ur_api::Error>(())
/// ```
///
/// Used directly through the static [`Adapter`] trait, whose data-path
/// methods are `unsafe` (the caller takes on the checks the dyn layer
/// would make):
///
/// ```
/// use ur_api::{Adapter, BufferDesc, HostPtr, QueueProps};
/// use ur_sim::{SimAdapter, Topology};
///
/// let a = SimAdapter::new(Topology::single_device());
/// let platform = a.platforms()?.remove(0);
/// let dev = a.devices(&platform)?.remove(0);
/// let ctx = a.create_context(&[&dev])?;
/// let q = a.create_queue(&ctx, &dev, &QueueProps::default())?;
/// // SAFETY: a non-zero size within the device's limit, no host memory.
/// let buf = unsafe { a.create_buffer(&ctx, &BufferDesc::new(8).on(&dev), None)? };
/// // SAFETY: the fill lies inside the 8-byte buffer, which is at the queue's location.
/// let filled = unsafe { a.enqueue_fill(&q, &buf, 0, 8, &[0xAB], &[])? };
/// let mut out = [0u8; 8];
/// // SAFETY: `out` outlives the wait below and nothing else touches it;
/// // the read lies inside the buffer.
/// let read = unsafe {
///     let dst = HostPtr::new(out.as_mut_ptr(), out.len());
///     a.enqueue_read(&q, &buf, 0, dst, &[&filled])?
/// };
/// a.wait(&[&read])?;
/// assert_eq!(out, [0xAB; 8]);
/// # Ok::<(), ur_api::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimAdapter {
    state: Arc<SimState>,
}

impl SimAdapter {
    /// An adapter over `topology`.
    pub fn new(topology: Topology) -> Self {
        SimAdapter {
            state: Arc::new(SimState::new(topology)),
        }
    }

    /// An adapter over the `UR_SIM_TOPOLOGY` topology; `Ok(None)` when unset.
    pub fn from_env() -> Result<Option<Self>, TopologyError> {
        Ok(Topology::from_env()?.map(Self::new))
    }

    /// For test runs: the `UR_SIM_TOPOLOGY` topology if set, else
    /// [`Topology::default_for_tests`].
    pub fn for_tests() -> Result<Self, TopologyError> {
        Ok(Self::from_env()?.unwrap_or_else(|| Self::new(Topology::default_for_tests())))
    }

    /// The topology simulated.
    pub fn topology(&self) -> &Topology {
        &self.state.topology
    }

    /// The fault-injection handle (clone it freely; it outlives moves of the adapter).
    pub fn faults(&self) -> SimFaults {
        SimFaults {
            state: self.state.clone(),
        }
    }

    /// The link-model handle: on/off and per-link traffic counters.
    pub fn links(&self) -> SimLinks {
        SimLinks {
            state: self.state.clone(),
        }
    }

    fn submit(
        &self,
        queue: &SimQueue,
        wait: &[&SimEvent],
        work: impl FnOnce(&SimState) -> Result<()> + Send + 'static,
    ) -> Result<SimEvent> {
        let state = self.state.clone();
        queue.submit(wait, Box::new(move || work(&state)))
    }

    /// Enqueues one transfer of `rows` from `src` to `dst` (through the
    /// link model, as one transfer however many rows).
    fn enqueue_transfer(
        &self,
        queue: &SimQueue,
        src: Operand,
        dst: Operand,
        rows: Vec<(usize, usize, usize)>,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        src.check()?;
        dst.check()?;
        self.submit(queue, wait, move |s| memory::transfer(s, &src, &dst, &rows, true))
    }
}

fn rect_rows(rect: &RectCopy) -> Vec<(usize, usize, usize)> {
    let mut rows = Vec::with_capacity(rect.extent[1] * rect.extent[2]);
    rect.for_each_row(|s, d, n| rows.push((s, d, n)));
    rows
}

impl Adapter for SimAdapter {
    type Platform = SimPlatform;
    type Device = SimDevice;
    type Context = SimContext;
    type Buffer = SimBuffer;
    type Usm = SimUsm;
    type Queue = SimQueue;
    type Event = SimEvent;
    type Program = SimProgram;
    type Kernel = SimKernel;

    fn backend(&self) -> Backend {
        Backend::Sim
    }

    fn platforms(&self) -> Result<Vec<SimPlatform>> {
        Ok((0..self.state.topology.platforms().len())
            .map(|index| SimPlatform { index })
            .collect())
    }

    fn platform_info(&self, platform: &SimPlatform) -> Result<PlatformInfo> {
        Ok(device::platform_info(&self.state, platform))
    }

    fn devices(&self, platform: &SimPlatform) -> Result<Vec<SimDevice>> {
        Ok(device::devices(&self.state, platform))
    }

    fn device_info(&self, device: &SimDevice) -> Result<DeviceInfo> {
        Ok(device::device_info(&device.0))
    }

    fn create_context(&self, devices: &[&SimDevice]) -> Result<SimContext> {
        device::create_context(&self.state, devices)
    }

    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection {
        device::memory_connection(&self.state, src, dst)
    }

    unsafe fn create_buffer(
        &self,
        ctx: &SimContext,
        desc: &BufferDesc<&SimDevice>,
        init: Option<HostPtr>,
    ) -> Result<SimBuffer> {
        // SAFETY: `init` is readable for `desc.size` bytes with COPY_HOST_PTR
        // (this method's contract, passed on).
        unsafe { memory::create_buffer(&self.state, ctx, desc, init) }
    }

    unsafe fn create_sub_buffer(&self, parent: &SimBuffer, offset: usize, size: usize) -> Result<SimBuffer> {
        parent.device().check()?;
        Ok(memory::create_sub_buffer(parent, offset, size))
    }

    fn usm_alloc(&self, ctx: &SimContext, desc: &UsmDesc<&SimDevice>) -> Result<(SimUsm, UsmPtr)> {
        memory::usm_alloc(&self.state, ctx, desc)
    }

    unsafe fn lock_host(&self, ctx: &SimContext, mem: HostPtr) -> Result<DeviceAddr> {
        // The sim moves locked and pageable host memory alike: nothing to
        // pin, so it records the lock (tests see it through `SimLinks`) and
        // its devices reach the memory at the host address. The dyn layer
        // keeps the books (overlaps, exact unlocks).
        for d in &ctx.devices {
            d.check()?;
        }
        self.state.locked.lock().insert(mem.as_ptr() as usize, mem.len());
        Ok(DeviceAddr(mem.as_ptr() as u64))
    }

    unsafe fn unlock_host(&self, _ctx: &SimContext, mem: HostPtr) -> Result<()> {
        self.state.locked.lock().remove(&(mem.as_ptr() as usize));
        Ok(())
    }

    fn create_queue(&self, _ctx: &SimContext, device: &SimDevice, _props: &QueueProps) -> Result<SimQueue> {
        SimQueue::new(device.0.clone())
    }

    fn flush(&self, _queue: &SimQueue) -> Result<()> {
        // Commands are handed to the worker when enqueued; nothing is pending.
        // Always Ok, so that releasing a queue of a lost device still succeeds.
        Ok(())
    }

    fn finish(&self, queue: &SimQueue) -> Result<()> {
        queue.finish()
    }

    fn event_status(&self, event: &SimEvent) -> Result<EventStatus> {
        Ok(event.0.status())
    }

    fn wait(&self, events: &[&SimEvent]) -> Result<()> {
        if self.state.faults.take_wait_fault() {
            tracing::debug!(events = events.len(), "injected wait failure");
            return Err(faults::wait_fault());
        }
        queue::wait_all(events)
    }

    fn event_profiling(&self, event: &SimEvent) -> Result<ProfilingInfo> {
        event.0.profiling()
    }

    fn create_program(&self, _ctx: &SimContext, source: &ProgramSource, _options: &str) -> Result<SimProgram> {
        SimProgram::build(source)
    }

    fn create_kernel(&self, program: &SimProgram, name: &str) -> Result<SimKernel> {
        program.kernel(name)
    }

    fn kernel_info(&self, kernel: &SimKernel) -> KernelInfo {
        kernel.info()
    }

    unsafe fn enqueue_read(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let rows = vec![(0, 0, dst.len())];
        self.enqueue_transfer(queue, buffer.operand(offset), Operand::host(dst), rows, wait)
    }

    unsafe fn enqueue_write(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let rows = vec![(0, 0, src.len())];
        self.enqueue_transfer(queue, Operand::host(src), buffer.operand(offset), rows, wait)
    }

    unsafe fn enqueue_copy(
        &self,
        queue: &SimQueue,
        src: &SimBuffer,
        src_offset: usize,
        dst: &SimBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let (s, d) = (src.operand(src_offset), dst.operand(dst_offset));
        self.enqueue_transfer(queue, s, d, vec![(0, 0, size)], wait)
    }

    // The rect copies are the sim's own: one transfer through the link model
    // (one latency, the link held once), not one per row as the defaults.

    unsafe fn enqueue_copy_rect(
        &self,
        queue: &SimQueue,
        src: &SimBuffer,
        dst: &SimBuffer,
        rect: &RectCopy,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, src.operand(0), dst.operand(0), rect_rows(rect), wait)
    }

    unsafe fn enqueue_read_rect(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, buffer.operand(0), Operand::host(dst), rect_rows(rect), wait)
    }

    unsafe fn enqueue_write_rect(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, Operand::host(src), buffer.operand(0), rect_rows(rect), wait)
    }

    unsafe fn enqueue_fill(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        buffer.device().check()?;
        let (dst, pattern) = (buffer.operand(offset), pattern.to_vec());
        self.submit(queue, wait, move |_| memory::fill(&dst, 0, size, &pattern))
    }

    unsafe fn enqueue_map(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<(SimEvent, HostPtr)> {
        buffer.device().check()?;
        let staging = Arc::new(HostBlock::zeroed(size, ARENA_ALIGN)?);
        // SAFETY: the staging block is owned by the mapping record (and the
        // commands below) until unmap; the user owns it in between, as the map
        // contract says.
        let mapped = unsafe { HostPtr::new(staging.as_ptr(), size) };
        let read = !flags.contains(MapFlags::WRITE_INVALIDATE);
        let write_back = flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE);
        let src = buffer.operand(offset);
        let keep = staging.clone();
        let ev = self.submit(queue, wait, move |s| {
            if !read {
                return src.check();
            }
            let dst = Operand::Host {
                addr: keep.as_ptr() as usize,
                len: size,
                keep: Some(keep.clone()),
            };
            memory::transfer(s, &src, &dst, &[(0, 0, size)], true)
        })?;
        buffer.add_mapping(Mapping {
            staging,
            offset: buffer.offset + offset,
            size,
            write_back,
        });
        Ok((ev, mapped))
    }

    unsafe fn enqueue_unmap(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        mapped: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        // `mapped` is a live mapping of `buffer` (the contract); a record
        // that is absent anyway has nothing to write back.
        let Some(m) = buffer.take_mapping(mapped) else {
            return self.enqueue_barrier(queue, wait);
        };
        let dst = Operand::Dev {
            alloc: buffer.alloc.clone(),
            offset: m.offset,
        };
        self.submit(queue, wait, move |s| {
            if !m.write_back {
                return Ok(());
            }
            let src = Operand::Host {
                addr: m.staging.as_ptr() as usize,
                len: m.size,
                keep: Some(m.staging.clone()),
            };
            memory::transfer(s, &src, &dst, &[(0, 0, m.size)], true)
        })
    }

    unsafe fn enqueue_usm_copy(
        &self,
        queue: &SimQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let (src, dst) = (Operand::mem_arg(src), Operand::mem_arg(dst));
        self.enqueue_transfer(queue, src, dst, vec![(0, 0, size)], wait)
    }

    unsafe fn enqueue_usm_fill(
        &self,
        queue: &SimQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let dst = Operand::usm(ptr);
        dst.check()?;
        let pattern = pattern.to_vec();
        self.submit(queue, wait, move |_| memory::fill(&dst, 0, size, &pattern))
    }

    unsafe fn enqueue_usm_prefetch(
        &self,
        queue: &SimQueue,
        ptr: UsmRef<'_, Self>,
        _size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        // Device memory stays where it is and host USM is host memory:
        // nothing moves, but memory on a lost device fails the command.
        let device = ptr.alloc.device().cloned();
        self.submit(queue, wait, move |_| device.map_or(Ok(()), |d| d.check()))
    }

    unsafe fn usm_advise(
        &self,
        queue: &SimQueue,
        _ptr: UsmRef<'_, Self>,
        _size: usize,
        _advice: UsmAdvice,
    ) -> Result<()> {
        // Advice changes nothing here; a lost device still answers so.
        queue.device.check()
    }

    unsafe fn enqueue_launch(
        &self,
        queue: &SimQueue,
        kernel: &SimKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let launch = program::prepare(kernel, range, args)?;
        self.submit(queue, wait, move |_| program::run(&launch))
    }

    fn enqueue_barrier(&self, queue: &SimQueue, wait: &[&SimEvent]) -> Result<SimEvent> {
        self.submit(queue, wait, |_| Ok(()))
    }
}
