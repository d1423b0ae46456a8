//! Fault injection and link control: cloneable handles taken from the
//! adapter before it moves into a `Runtime`. Everything is deterministic:
//! counters are exact and nothing is random. The armed faults themselves
//! live in the shared state (`state.rs`), where allocations and transfers
//! consult them.

use std::sync::Arc;

use ur_api::{Backend, Error, Result};

use crate::state::SimState;

/// The native error code of an injected transfer failure
/// ([`Error::Backend`] with backend `Sim`).
pub const INJECTED_TRANSFER_FAULT: i64 = -9001;

/// The native error code of an injected wait failure
/// ([`SimFaults::fail_next_wait`]).
pub const INJECTED_WAIT_FAULT: i64 = -9002;

/// The error of a wait failed by an injected fault.
pub(crate) fn wait_fault() -> Error {
    Error::Backend {
        backend: Backend::Sim,
        code: INJECTED_WAIT_FAULT,
        message: "injected wait fault: returned before the events completed".into(),
    }
}

/// The error of a transfer stopped by an injected fault.
pub(crate) fn transfer_fault(moved: usize, total: usize) -> Error {
    Error::Backend {
        backend: Backend::Sim,
        code: INJECTED_TRANSFER_FAULT,
        message: format!("injected transfer fault: stopped after {moved} of {total} bytes"),
    }
}

/// Fault injection for one simulated adapter. Take it with
/// [`SimAdapter::faults`](crate::SimAdapter::faults) before the adapter is
/// moved into a `Runtime`; clones control the same adapter.
///
/// Devices are named as in the topology.
///
/// ```
/// use ur_api::{BufferDesc, Error, Runtime};
/// use ur_sim::{SimAdapter, Topology};
///
/// let sim = SimAdapter::new(Topology::single_device());
/// let faults = sim.faults();
/// let mut rt = Runtime::new();
/// rt.add(sim)?;
/// let dev = rt.all_devices()[0];
/// let ctx = rt.create_context(&[dev])?;
/// faults.fail_nth_allocation(2);
/// assert!(rt.create_buffer(ctx, &BufferDesc::new(64), None).is_ok());
/// assert_eq!(rt.create_buffer(ctx, &BufferDesc::new(64), None), Err(Error::OutOfDeviceMemory));
/// assert!(rt.create_buffer(ctx, &BufferDesc::new(64), None).is_ok());
/// # Ok::<(), ur_api::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct SimFaults {
    pub(crate) state: Arc<SimState>,
}

impl SimFaults {
    fn index(&self, device: &str) -> Result<usize> {
        Ok(self.state.device(device)?.index)
    }

    /// The `n`-th device allocation (buffer or device USM) from now fails
    /// with [`Error::OutOfDeviceMemory`]; `n = 1` is the next one (0 acts as 1).
    /// Replaces an allocation fault armed before.
    pub fn fail_nth_allocation(&self, n: u64) {
        self.state.faults.arm_allocation(None, n);
    }

    /// Like [`SimFaults::fail_nth_allocation`], counting only allocations on `device`.
    pub fn fail_nth_allocation_on(&self, device: &str, n: u64) -> Result<()> {
        let d = self.index(device)?;
        self.state.faults.arm_allocation(Some(d), n);
        Ok(())
    }

    /// The next transfer command to run (read, write, copy, the rect
    /// variants, USM copy, the read of a map, the write-back of an unmap;
    /// not the initial copy of a `COPY_HOST_PTR` buffer) moves only its first
    /// `bytes` bytes (the destination is partly written) and its event fails
    /// with [`Error::Backend`] code [`INJECTED_TRANSFER_FAULT`]. Replaces a
    /// transfer fault armed before.
    pub fn fail_copy_after(&self, bytes: usize) {
        self.state.faults.arm_copy(None, bytes);
    }

    /// Like [`SimFaults::fail_copy_after`], for the next transfer touching `device`.
    pub fn fail_copy_after_on(&self, device: &str, bytes: usize) -> Result<()> {
        let d = self.index(device)?;
        self.state.faults.arm_copy(Some(d), bytes);
        Ok(())
    }

    /// The next `wait` (of any events) returns [`Error::Backend`] code
    /// [`INJECTED_WAIT_FAULT`] at once, without waiting for its events:
    /// a wait that breaks the `Adapter::wait` contract, as a backend's
    /// wait that gives up on a failed flush would. For testing that
    /// callers do not trust a failed wait (`Runtime`'s blocking helpers
    /// finish the queue then). Replaces a wait fault armed before.
    pub fn fail_next_wait(&self) {
        self.state.faults.arm_wait();
    }

    /// Marks a device lost: every later operation on it (contexts, queues,
    /// allocations, commands that have not started, commands touching its
    /// memory) fails with [`Error::DeviceLost`].
    pub fn lose_device(&self, device: &str) -> Result<()> {
        self.state.device(device)?.set_lost(true);
        Ok(())
    }

    /// Undoes [`SimFaults::lose_device`] (for tests that reuse an adapter).
    pub fn restore_device(&self, device: &str) -> Result<()> {
        self.state.device(device)?.set_lost(false);
        Ok(())
    }

    /// Is the device marked lost?
    pub fn is_lost(&self, device: &str) -> Result<bool> {
        Ok(self.state.device(device)?.is_lost())
    }

    /// Caps a device's usable memory at `bytes` (below its topology size):
    /// an allocation that would take the arena over the cap fails with
    /// [`Error::OutOfDeviceMemory`]; freed memory counts as free again.
    pub fn cap_memory(&self, device: &str, bytes: u64) -> Result<()> {
        self.state.device(device)?.arena.set_cap(Some(bytes));
        Ok(())
    }

    /// Removes a cap set by [`SimFaults::cap_memory`].
    pub fn uncap_memory(&self, device: &str) -> Result<()> {
        self.state.device(device)?.arena.set_cap(None);
        Ok(())
    }

    /// Bytes currently allocated in a device's arena.
    pub fn memory_used(&self, device: &str) -> Result<u64> {
        Ok(self.state.device(device)?.arena.used())
    }

    /// Event handles alive now, over all devices: one per command whose
    /// event has not been released (through the runtime: `release_event`,
    /// dropped once no operation in flight borrows it). For tests that
    /// count leaks and double releases.
    pub fn live_events(&self) -> u64 {
        self.state
            .devices
            .iter()
            .map(|d| d.live_events.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// Device allocations attempted so far (buffers and device USM, failed ones included).
    pub fn allocations(&self) -> u64 {
        self.state.faults.allocations()
    }

    /// Disarms pending faults, removes caps and restores lost devices.
    pub fn clear(&self) {
        self.state.faults.disarm();
        for d in &self.state.devices {
            d.arena.set_cap(None);
            d.set_lost(false);
        }
    }
}

/// Link model control and transfer counters of one simulated adapter; take
/// it with [`SimAdapter::links`](crate::SimAdapter::links).
#[derive(Debug, Clone)]
pub struct SimLinks {
    pub(crate) state: Arc<SimState>,
}

/// Traffic over one link so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Bytes moved.
    pub bytes: u64,
    /// Transfers that crossed the link.
    pub transfers: u64,
}

impl SimLinks {
    /// Turns the link model on or off (the topology's setting is the start value).
    pub fn set_enabled(&self, on: bool) {
        self.state.model.set(on);
    }

    /// Is the link model on?
    pub fn enabled(&self) -> bool {
        self.state.model.enabled()
    }

    /// Traffic over a device's host link (device <-> host, and device <->
    /// device copies without a peer link).
    pub fn host_link(&self, device: &str) -> Result<LinkStats> {
        let l = &self.state.device(device)?.link;
        Ok(LinkStats {
            bytes: l.bytes(),
            transfers: l.transfers(),
        })
    }

    /// Traffic over the peer link `src -> dst`, `None` when the topology has none.
    pub fn peer_link(&self, src: &str, dst: &str) -> Result<Option<LinkStats>> {
        let key = (self.state.device(src)?.index, self.state.device(dst)?.index);
        Ok(self.state.peer_links.get(&key).map(|l| LinkStats {
            bytes: l.bytes(),
            transfers: l.transfers(),
        }))
    }

    /// Host ranges locked with the adapter now (start, length), in address
    /// order: the sim pins nothing, it records.
    pub fn locked_host(&self) -> Vec<(usize, usize)> {
        self.state.locked.lock().iter().map(|(&s, &l)| (s, l)).collect()
    }
}
