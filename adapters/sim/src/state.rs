//! The simulated machine's state, shared by the adapter and its handles
//! ([`SimFaults`](crate::SimFaults), [`SimLinks`](crate::SimLinks)): every
//! device (its arena budget, host link, lost flag and fake USM address
//! space), the peer links, the link model switch and the armed faults.
//!
//! This module sits below every other one of the crate except the topology
//! and the link model: `device`, `memory`, `queue`, `faults` and `program`
//! all read it, and it reads none of them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Error, Result};

use crate::link::{Link, LinkModel};
use crate::topology::{DeviceSpec, Topology};

/// Start of the fake device address space: device `i` owns
/// `[DEVICE_SPACE_BASE + (i + 1) * DEVICE_SPACE_STRIDE, + DEVICE_SPACE_STRIDE)`.
/// These addresses are non-canonical on x86-64 and AArch64 (bits 63..48 are
/// neither all zero nor all one), so no host pointer can ever equal one.
pub const DEVICE_SPACE_BASE: u64 = 0x5100_0000_0000_0000;
/// Size of each device's fake address range (1 TiB).
pub const DEVICE_SPACE_STRIDE: u64 = 1 << 40;

/// Alignment of every arena allocation, host USM allocation and staging
/// buffer (and the sub-buffer offset alignment reported).
pub(crate) const ARENA_ALIGN: usize = 64;

/// One simulated device.
#[derive(Debug)]
pub(crate) struct DeviceState {
    /// Flat index in the topology.
    pub(crate) index: usize,
    /// Platform index.
    pub(crate) platform: usize,
    pub(crate) spec: DeviceSpec,
    pub(crate) arena: Arena,
    /// The host link.
    pub(crate) link: Arc<Link>,
    lost: AtomicBool,
    /// Next free address of the device's fake USM space.
    usm_next: Mutex<u64>,
    /// Event handles of commands on this device that are still alive
    /// ([`SimFaults::live_events`](crate::SimFaults::live_events)).
    pub(crate) live_events: AtomicU64,
}

impl DeviceState {
    fn new(index: usize, platform: usize, spec: &DeviceSpec) -> DeviceState {
        let dev = DeviceState {
            index,
            platform,
            spec: spec.clone(),
            arena: Arena::new(spec.memory),
            link: Arc::new(Link::new(spec.link)),
            lost: AtomicBool::new(false),
            usm_next: Mutex::new(0),
            live_events: AtomicU64::new(0),
        };
        *dev.usm_next.lock() = dev.usm_range().0;
        dev
    }

    /// `Err(DeviceLost)` once the device was marked lost.
    pub(crate) fn check(&self) -> Result<()> {
        if self.lost.load(Ordering::Acquire) {
            Err(Error::DeviceLost)
        } else {
            Ok(())
        }
    }

    pub(crate) fn set_lost(&self, lost: bool) {
        self.lost.store(lost, Ordering::Release);
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }

    /// The fake address range of this device.
    pub(crate) fn usm_range(&self) -> (u64, u64) {
        let start = DEVICE_SPACE_BASE + (self.index as u64 + 1) * DEVICE_SPACE_STRIDE;
        (start, start + DEVICE_SPACE_STRIDE)
    }

    /// Hands out `size` bytes of the fake address space aligned to `align`
    /// (a power of two), with a gap after it so that no two allocations are
    /// adjacent. Addresses are never reused.
    pub(crate) fn take_usm_address(&self, size: usize, align: usize) -> Result<u64> {
        let mut next = self.usm_next.lock();
        let addr = next.next_multiple_of(align as u64);
        if addr + size as u64 > self.usm_range().1 {
            return Err(Error::OutOfDeviceMemory);
        }
        *next = addr + size as u64 + ARENA_ALIGN as u64;
        Ok(addr)
    }
}

/// A device's memory budget: its topology size, optionally capped lower.
#[derive(Debug)]
pub(crate) struct Arena {
    capacity: u64,
    state: Mutex<ArenaUse>,
}

#[derive(Debug, Default)]
struct ArenaUse {
    used: u64,
    cap: Option<u64>,
}

impl Arena {
    pub(crate) fn new(capacity: u64) -> Arena {
        Arena {
            capacity,
            state: Mutex::new(ArenaUse::default()),
        }
    }

    /// Takes `size` bytes of the budget, or `OutOfDeviceMemory`.
    pub(crate) fn reserve(&self, size: usize) -> Result<()> {
        let mut s = self.state.lock();
        let limit = s.cap.map_or(self.capacity, |c| c.min(self.capacity));
        match s.used.checked_add(size as u64) {
            Some(n) if n <= limit => {
                s.used = n;
                Ok(())
            }
            _ => Err(Error::OutOfDeviceMemory),
        }
    }

    /// Gives back `size` bytes taken by [`Arena::reserve`].
    pub(crate) fn release(&self, size: usize) {
        let mut s = self.state.lock();
        s.used = s.used.saturating_sub(size as u64);
    }

    pub(crate) fn set_cap(&self, cap: Option<u64>) {
        self.state.lock().cap = cap;
    }

    pub(crate) fn used(&self) -> u64 {
        self.state.lock().used
    }
}

/// Pending one-shot faults and the allocation counter.
#[derive(Debug, Default)]
pub(crate) struct FaultState {
    armed: Mutex<ArmedFaults>,
}

#[derive(Debug, Default)]
struct ArmedFaults {
    /// (device filter, allocations left before the failing one).
    alloc: Option<(Option<usize>, u64)>,
    /// (device filter, bytes to move before failing).
    copy: Option<(Option<usize>, usize)>,
    /// The next wait returns at once with an error.
    wait: bool,
    /// Device allocations attempted (buffers and device USM).
    allocations: u64,
}

impl FaultState {
    /// Arms an allocation fault: the `n`-th allocation (on `device`, or any).
    pub(crate) fn arm_allocation(&self, device: Option<usize>, n: u64) {
        self.armed.lock().alloc = Some((device, n.max(1)));
    }

    /// Arms a transfer fault after `bytes` (for a transfer touching `device`, or any).
    pub(crate) fn arm_copy(&self, device: Option<usize>, bytes: usize) {
        self.armed.lock().copy = Some((device, bytes));
    }

    /// Arms a wait fault: the next wait returns at once with an error.
    pub(crate) fn arm_wait(&self) {
        self.armed.lock().wait = true;
    }

    /// Consumes an armed wait fault: true when this wait must fail at once.
    pub(crate) fn take_wait_fault(&self) -> bool {
        std::mem::take(&mut self.armed.lock().wait)
    }

    /// Disarms every fault (the counter keeps counting).
    pub(crate) fn disarm(&self) {
        let mut g = self.armed.lock();
        g.alloc = None;
        g.copy = None;
        g.wait = false;
    }

    /// Device allocations attempted so far.
    pub(crate) fn allocations(&self) -> u64 {
        self.armed.lock().allocations
    }

    /// Counts one device allocation on `device`; fails it when it is the armed one.
    pub(crate) fn on_allocation(&self, device: usize) -> Result<()> {
        let mut g = self.armed.lock();
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
        let mut g = self.armed.lock();
        match g.copy {
            Some((filter, after)) if filter.is_none_or(|f| devices.contains(&f)) => {
                g.copy = None;
                Some(after)
            }
            _ => None,
        }
    }
}

/// Everything the adapter and its handles share.
#[derive(Debug)]
pub(crate) struct SimState {
    pub(crate) topology: Topology,
    pub(crate) devices: Vec<Arc<DeviceState>>,
    /// Peer links by ordered (source, destination) device index.
    pub(crate) peer_links: BTreeMap<(usize, usize), Arc<Link>>,
    pub(crate) model: LinkModel,
    pub(crate) faults: FaultState,
    /// Host ranges locked now (start -> length), for tests to see
    /// ([`SimLinks::locked_host`](crate::SimLinks::locked_host)).
    pub(crate) locked: Mutex<BTreeMap<usize, usize>>,
    next_context: AtomicU64,
}

impl SimState {
    pub(crate) fn new(topology: Topology) -> SimState {
        let devices = topology
            .devices()
            .enumerate()
            .map(|(index, (platform, spec))| Arc::new(DeviceState::new(index, platform, spec)))
            .collect();
        let n = topology.device_count();
        let mut peer_links = BTreeMap::new();
        for s in 0..n {
            for d in 0..n {
                if let Some(l) = topology.pair_rule(s, d).and_then(|r| r.peer_link) {
                    peer_links.insert((s, d), Arc::new(Link::new(l)));
                }
            }
        }
        SimState {
            model: LinkModel::new(topology.link_model()),
            topology,
            devices,
            peer_links,
            faults: FaultState::default(),
            locked: Mutex::new(BTreeMap::new()),
            next_context: AtomicU64::new(1),
        }
    }

    /// A device by name.
    pub(crate) fn device(&self, name: &str) -> Result<&Arc<DeviceState>> {
        self.devices
            .iter()
            .find(|d| d.spec.name == name)
            .ok_or_else(|| Error::invalid(format!("no simulated device named `{name}`")))
    }

    /// The links a transfer from memory of `src` to memory of `dst` crosses
    /// (`None` = host memory): none within one device or within host memory,
    /// a device's host link between it and the host, and between two devices
    /// the peer link when the topology has one, else both host links.
    pub(crate) fn links_between(&self, src: Option<usize>, dst: Option<usize>) -> Vec<&Arc<Link>> {
        match (src, dst) {
            (None, None) => vec![],
            (Some(d), None) | (None, Some(d)) => vec![&self.devices[d].link],
            (Some(a), Some(b)) if a == b => vec![],
            (Some(a), Some(b)) => match self.peer_links.get(&(a, b)) {
                Some(peer) => vec![peer],
                None => vec![&self.devices[a].link, &self.devices[b].link],
            },
        }
    }

    pub(crate) fn new_context_id(&self) -> u64 {
        self.next_context.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges_are_distinct_and_not_host_addresses() {
        let s = SimState::new(Topology::three_platforms_mixed());
        let ranges: Vec<(u64, u64)> = s.devices.iter().map(|d| d.usm_range()).collect();
        for (i, a) in ranges.iter().enumerate() {
            // Canonical user addresses on x86-64 and AArch64 are below 2^48.
            assert!(a.0 >= 1 << 48 && a.1 <= 0xFFFF_0000_0000_0000);
            for b in &ranges[i + 1..] {
                assert!(a.1 <= b.0 || b.1 <= a.0);
            }
        }
    }

    #[test]
    fn usm_addresses_are_aligned_in_range_and_never_adjacent() {
        let s = SimState::new(Topology::two_devices_peer());
        let d = &s.devices[1];
        let (lo, hi) = d.usm_range();
        let a = d.take_usm_address(100, 4096).unwrap();
        let b = d.take_usm_address(8, 64).unwrap();
        assert!(a >= lo && a + 100 <= hi && a % 4096 == 0);
        assert!(b > a + 100 && b % 64 == 0);
        assert_eq!(d.take_usm_address(usize::MAX >> 20, 64), Err(Error::OutOfDeviceMemory));
    }

    #[test]
    fn links_between_prefers_peer_links() {
        let s = SimState::new(Topology::default_for_tests());
        assert!(s.links_between(None, None).is_empty());
        assert!(s.links_between(Some(0), Some(0)).is_empty());
        assert!(Arc::ptr_eq(s.links_between(Some(1), None)[0], &s.devices[1].link));
        let peer = s.links_between(Some(0), Some(1));
        assert_eq!(peer.len(), 1);
        assert!(Arc::ptr_eq(peer[0], &s.peer_links[&(0, 1)]));
        assert_eq!(s.links_between(Some(1), Some(0)).len(), 2);
    }

    #[test]
    fn arena_cap_limits_and_releases() {
        let a = Arena::new(4096);
        a.set_cap(Some(1000));
        a.reserve(600).unwrap();
        assert_eq!(a.reserve(600), Err(Error::OutOfDeviceMemory));
        a.set_cap(None);
        a.reserve(600).unwrap();
        a.release(1200);
        assert_eq!(a.used(), 0);
    }

    #[test]
    fn nth_allocation_counts_exactly_and_filters_by_device() {
        let f = FaultState::default();
        f.arm_allocation(Some(1), 2);
        assert!(f.on_allocation(0).is_ok());
        assert!(f.on_allocation(1).is_ok());
        assert!(f.on_allocation(0).is_ok());
        assert_eq!(f.on_allocation(1), Err(Error::OutOfDeviceMemory));
        assert!(f.on_allocation(1).is_ok(), "one-shot");
        assert_eq!(f.allocations(), 5);
    }

    #[test]
    fn copy_fault_is_taken_once_by_a_matching_transfer() {
        let f = FaultState::default();
        f.arm_copy(Some(2), 10);
        assert_eq!(f.take_copy_fault(&[0, 1]), None);
        assert_eq!(f.take_copy_fault(&[2]), Some(10));
        assert_eq!(f.take_copy_fault(&[2]), None);
        f.arm_copy(None, 1);
        f.disarm();
        assert_eq!(f.take_copy_fault(&[0]), None);
    }
}
