//! Fault injection and link control: cloneable handles taken from the
//! adapter before it moves into a `Runtime`. Everything is deterministic:
//! counters are exact and nothing is random.

use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Backend, Error, Result};

use crate::device::Shared;

/// The native error code of an injected transfer failure
/// ([`Error::Backend`] with backend `Sim`).
pub const INJECTED_TRANSFER_FAULT: i64 = -9001;

/// Pending one-shot faults.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// (device filter, allocations left before the failing one).
    alloc: Option<(Option<usize>, u64)>,
    /// (device filter, bytes to move before failing).
    copy: Option<(Option<usize>, usize)>,
    /// Device allocations attempted (buffers and device USM).
    allocations: u64,
}

impl FaultState {
    /// Counts one device allocation on `device`; fails it when it is the armed one.
    pub(crate) fn on_allocation(&self, device: usize) -> Result<()> {
        let mut g = self.inner.lock();
        g.allocations += 1;
        if let Some((filter, left)) = &mut g.alloc {
            if filter.is_none_or(|f| f == device) {
                *left -= 1;
                if *left == 0 {
                    g.alloc = None;
                    tracing::debug!(device, "injected allocation failure");
                    return Err(Error::OutOfDeviceMemory);
                }
            }
        }
        Ok(())
    }

    /// For a transfer touching `devices`: the byte count after which it must
    /// fail, consuming the armed fault.
    pub(crate) fn take_copy_fault(&self, devices: &[usize]) -> Option<usize> {
        let mut g = self.inner.lock();
        match g.copy {
            Some((filter, after)) if filter.is_none_or(|f| devices.contains(&f)) => {
                g.copy = None;
                Some(after)
            }
            _ => None,
        }
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
    pub(crate) shared: Arc<Shared>,
}

impl SimFaults {
    fn index(&self, device: &str) -> Result<usize> {
        Ok(self.shared.device(device)?.index)
    }

    /// The `n`-th device allocation (buffer or device USM) from now fails
    /// with [`Error::OutOfDeviceMemory`]; `n = 1` is the next one (0 acts as 1).
    /// Replaces an allocation fault armed before.
    pub fn fail_nth_allocation(&self, n: u64) {
        self.shared.faults.inner.lock().alloc = Some((None, n.max(1)));
    }

    /// Like [`SimFaults::fail_nth_allocation`], counting only allocations on `device`.
    pub fn fail_nth_allocation_on(&self, device: &str, n: u64) -> Result<()> {
        let d = self.index(device)?;
        self.shared.faults.inner.lock().alloc = Some((Some(d), n.max(1)));
        Ok(())
    }

    /// The next transfer command to run (read, write, copy, the rect
    /// variants, USM copy, the read of a map, the write-back of an unmap;
    /// not the initial copy of a `COPY_HOST_PTR` buffer) moves only its first
    /// `bytes` bytes (the destination is partly written) and its event fails
    /// with [`Error::Backend`] code [`INJECTED_TRANSFER_FAULT`]. Replaces a
    /// transfer fault armed before.
    pub fn fail_copy_after(&self, bytes: usize) {
        self.shared.faults.inner.lock().copy = Some((None, bytes));
    }

    /// Like [`SimFaults::fail_copy_after`], for the next transfer touching `device`.
    pub fn fail_copy_after_on(&self, device: &str, bytes: usize) -> Result<()> {
        let d = self.index(device)?;
        self.shared.faults.inner.lock().copy = Some((Some(d), bytes));
        Ok(())
    }

    /// Marks a device lost: every later operation on it (contexts, queues,
    /// allocations, commands that have not started, commands touching its
    /// memory) fails with [`Error::DeviceLost`].
    pub fn lose_device(&self, device: &str) -> Result<()> {
        self.shared.device(device)?.set_lost(true);
        Ok(())
    }

    /// Undoes [`SimFaults::lose_device`] (for tests that reuse an adapter).
    pub fn restore_device(&self, device: &str) -> Result<()> {
        self.shared.device(device)?.set_lost(false);
        Ok(())
    }

    /// Is the device marked lost?
    pub fn is_lost(&self, device: &str) -> Result<bool> {
        Ok(self.shared.device(device)?.is_lost())
    }

    /// Caps a device's usable memory at `bytes` (below its topology size):
    /// an allocation that would take the arena over the cap fails with
    /// [`Error::OutOfDeviceMemory`]; freed memory counts as free again.
    pub fn cap_memory(&self, device: &str, bytes: u64) -> Result<()> {
        self.shared.device(device)?.arena.set_cap(Some(bytes));
        Ok(())
    }

    /// Removes a cap set by [`SimFaults::cap_memory`].
    pub fn uncap_memory(&self, device: &str) -> Result<()> {
        self.shared.device(device)?.arena.set_cap(None);
        Ok(())
    }

    /// Bytes currently allocated in a device's arena.
    pub fn memory_used(&self, device: &str) -> Result<u64> {
        Ok(self.shared.device(device)?.arena.used())
    }

    /// Device allocations attempted so far (buffers and device USM, failed ones included).
    pub fn allocations(&self) -> u64 {
        self.shared.faults.inner.lock().allocations
    }

    /// Disarms pending faults, removes caps and restores lost devices.
    pub fn clear(&self) {
        {
            let mut g = self.shared.faults.inner.lock();
            g.alloc = None;
            g.copy = None;
        }
        for d in &self.shared.devices {
            d.arena.set_cap(None);
            d.set_lost(false);
        }
    }
}

/// Link model control and transfer counters of one simulated adapter; take
/// it with [`SimAdapter::links`](crate::SimAdapter::links).
#[derive(Debug, Clone)]
pub struct SimLinks {
    pub(crate) shared: Arc<Shared>,
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
        self.shared.model.set(on);
    }

    /// Is the link model on?
    pub fn enabled(&self) -> bool {
        self.shared.model.enabled()
    }

    /// Traffic over a device's host link (device <-> host, and device <->
    /// device copies without a peer link).
    pub fn host_link(&self, device: &str) -> Result<LinkStats> {
        let l = &self.shared.device(device)?.link;
        Ok(LinkStats {
            bytes: l.bytes(),
            transfers: l.transfers(),
        })
    }

    /// Traffic over the peer link `src -> dst`, `None` when the topology has none.
    pub fn peer_link(&self, src: &str, dst: &str) -> Result<Option<LinkStats>> {
        let key = (self.shared.device(src)?.index, self.shared.device(dst)?.index);
        Ok(self.shared.peer_links.get(&key).map(|l| LinkStats {
            bytes: l.bytes(),
            transfers: l.transfers(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_allocation_counts_exactly_and_filters_by_device() {
        let f = FaultState::default();
        f.inner.lock().alloc = Some((Some(1), 2));
        assert!(f.on_allocation(0).is_ok());
        assert!(f.on_allocation(1).is_ok());
        assert!(f.on_allocation(0).is_ok());
        assert_eq!(f.on_allocation(1), Err(Error::OutOfDeviceMemory));
        assert!(f.on_allocation(1).is_ok(), "one-shot");
        assert_eq!(f.inner.lock().allocations, 5);
    }

    #[test]
    fn copy_fault_is_taken_once_by_a_matching_transfer() {
        let f = FaultState::default();
        f.inner.lock().copy = Some((Some(2), 10));
        assert_eq!(f.take_copy_fault(&[0, 1]), None);
        assert_eq!(f.take_copy_fault(&[2]), Some(10));
        assert_eq!(f.take_copy_fault(&[2]), None);
    }
}
