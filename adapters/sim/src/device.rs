//! The simulated machine's state: devices (each with an arena and a host
//! link), peer links, contexts, and the connection answer.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Backend, DeviceCaps, DeviceInfo, Error, MemoryConnection, PlatformInfo, ProgramFormats, Result, UsmCaps};

use crate::faults::FaultState;
use crate::link::{Link, LinkModel};
use crate::memory::{Arena, UsmTable};
use crate::topology::{DeviceSpec, Topology};

/// Start of the fake device address space: device `i` owns
/// `[DEVICE_SPACE_BASE + (i + 1) * DEVICE_SPACE_STRIDE, + DEVICE_SPACE_STRIDE)`.
/// These addresses are non-canonical on x86-64 and AArch64 (bits 63..48 are
/// neither all zero nor all one), so no host pointer can ever equal one.
pub const DEVICE_SPACE_BASE: u64 = 0x5100_0000_0000_0000;
/// Size of each device's fake address range (1 TiB).
pub const DEVICE_SPACE_STRIDE: u64 = 1 << 40;

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
    pub(crate) usm_next: Mutex<u64>,
}

impl DeviceState {
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

    pub(crate) fn info(&self) -> DeviceInfo {
        DeviceInfo {
            name: self.spec.name.clone(),
            vendor: "ur-sim".into(),
            device_type: self.spec.device_type,
            global_mem_size: self.spec.memory,
            max_alloc_size: self.spec.memory,
            host_unified_memory: false,
            usm: UsmCaps::HOST | UsmCaps::DEVICE,
            caps: DeviceCaps::PROFILING
                | DeviceCaps::SUB_BUFFERS
                | DeviceCaps::MAP
                | DeviceCaps::KERNELS
                | DeviceCaps::HOST_REGISTER
                | DeviceCaps::FILL_ANY_PATTERN,
            program_formats: ProgramFormats::HOST,
            max_compute_units: 1,
            max_work_group_size: 1024,
            sub_buffer_align: crate::memory::ARENA_ALIGN,
            driver_version: env!("CARGO_PKG_VERSION").into(),
            backend_version: "sim 1".into(),
        }
    }
}

/// Everything the adapter and its handles share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) topology: Topology,
    pub(crate) devices: Vec<Arc<DeviceState>>,
    /// Peer links by ordered (source, destination) device index.
    pub(crate) peer_links: BTreeMap<(usize, usize), Arc<Link>>,
    pub(crate) model: LinkModel,
    pub(crate) faults: FaultState,
    pub(crate) usm: UsmTable,
    next_context: AtomicU64,
}

impl Shared {
    pub(crate) fn new(topology: Topology) -> Shared {
        let devices = topology
            .devices()
            .enumerate()
            .map(|(index, (platform, spec))| {
                let dev = DeviceState {
                    index,
                    platform,
                    spec: spec.clone(),
                    arena: Arena::new(spec.memory),
                    link: Arc::new(Link::new(spec.link)),
                    lost: AtomicBool::new(false),
                    usm_next: Mutex::new(0),
                };
                *dev.usm_next.lock() = dev.usm_range().0;
                Arc::new(dev)
            })
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
        Shared {
            model: LinkModel::new(topology.link_model()),
            topology,
            devices,
            peer_links,
            faults: FaultState::default(),
            usm: UsmTable::default(),
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

/// A platform of the topology.
#[derive(Debug)]
pub struct SimPlatform {
    pub(crate) index: usize,
}

/// A simulated device.
#[derive(Debug, Clone)]
pub struct SimDevice(pub(crate) Arc<DeviceState>);

/// A context over devices of one platform.
#[derive(Debug)]
pub struct SimContext {
    pub(crate) id: u64,
    pub(crate) devices: Vec<Arc<DeviceState>>,
    /// Host ranges registered with the context: (start address, length).
    pub(crate) registered: Mutex<Vec<(usize, usize)>>,
}

impl SimContext {
    /// The first device (where allocations without a hint go).
    pub(crate) fn first(&self) -> &Arc<DeviceState> {
        &self.devices[0]
    }
}

pub(crate) fn platform_info(shared: &Shared, p: &SimPlatform) -> PlatformInfo {
    PlatformInfo {
        name: shared.topology.platforms()[p.index].name.clone(),
        vendor: "ur-sim".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        backend: Backend::Sim,
    }
}

pub(crate) fn devices(shared: &Shared, p: &SimPlatform) -> Vec<SimDevice> {
    shared
        .devices
        .iter()
        .filter(|d| d.platform == p.index)
        .map(|d| SimDevice(d.clone()))
        .collect()
}

pub(crate) fn create_context(shared: &Shared, devices: &[&SimDevice]) -> Result<SimContext> {
    for d in devices {
        d.0.check()?;
    }
    Ok(SimContext {
        id: shared.new_context_id(),
        devices: devices.iter().map(|d| d.0.clone()).collect(),
        registered: Mutex::new(Vec::new()),
    })
}

pub(crate) fn memory_connection(
    shared: &Shared,
    src: (&SimContext, &SimDevice),
    dst: (&SimContext, &SimDevice),
) -> MemoryConnection {
    let same_context = src.0.id == dst.0.id;
    shared.topology.connection(src.1 .0.index, dst.1 .0.index, same_context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ranges_are_distinct_and_not_host_addresses() {
        let s = Shared::new(Topology::three_platforms_mixed());
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
    fn links_between_prefers_peer_links() {
        let s = Shared::new(Topology::default_for_tests());
        assert!(s.links_between(None, None).is_empty());
        assert!(s.links_between(Some(0), Some(0)).is_empty());
        assert!(Arc::ptr_eq(s.links_between(Some(1), None)[0], &s.devices[1].link));
        let peer = s.links_between(Some(0), Some(1));
        assert_eq!(peer.len(), 1);
        assert!(Arc::ptr_eq(peer[0], &s.peer_links[&(0, 1)]));
        assert_eq!(s.links_between(Some(1), Some(0)).len(), 2);
    }
}
