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

use ur_api::{RectCopy, Result};

pub use device::{SimContext, SimDevice, SimPlatform};
pub use faults::{LinkStats, SimFaults, SimLinks, INJECTED_TRANSFER_FAULT, INJECTED_WAIT_FAULT};
pub use memory::{SimBuffer, SimUsm};
pub use program::{SimKernel, SimProgram};
pub use queue::{SimEvent, SimQueue};
pub use state::{DEVICE_SPACE_BASE, DEVICE_SPACE_STRIDE};
pub use topology::{
    DeviceSpec, LinkSpec, PairRule, PlatformSpec, Topology, TopologyBuilder, TopologyError, TOPOLOGY_ENV,
};

use memory::Operand;
use state::SimState;

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
/// Used directly through the static [`Adapter`](ur_api::Adapter) trait, whose data-path
/// methods are `unsafe` (the caller takes on the checks the dyn layer
/// would make):
///
/// ```
/// use ur_api::adapter::prelude::*;
/// use ur_api::{BufferDesc, HostPtr, QueueProps};
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

impl ur_api::Api for SimAdapter {
    type Platform = SimPlatform;
    type Device = SimDevice;
    type Context = SimContext;
    type Buffer = SimBuffer;
    type Usm = SimUsm;
    type Queue = SimQueue;
    type Event = SimEvent;
    type Program = SimProgram;
    type Kernel = SimKernel;
}
