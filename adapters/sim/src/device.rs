//! Platforms, devices and contexts of the simulated machine, their
//! descriptions, and the connection answer.

use std::sync::Arc;

use ur_api::{Backend, DeviceCaps, DeviceInfo, MemoryConnection, PlatformInfo, ProgramFormats, Result, UsmCaps};

use crate::state::{DeviceState, SimState, ARENA_ALIGN};
use ur_api::Loc;

/// Work-group limit reported: kernels are host kernels that run the whole
/// range in one call, so this is a convention, not a hardware limit.
const MAX_WORK_GROUP: usize = 1024;

/// Local memory reported, summed over a launch's local-memory arguments:
/// a convention like [`MAX_WORK_GROUP`] (host kernels allocate their own
/// scratch), the 64 KiB of a typical GPU's work-group shared memory.
pub const LOCAL_MEM_SIZE: u64 = 64 << 10;

/// Per-dimension launch limits reported, conventions too: a typical GPU's
/// block limits (1024 x 1024 x 64) and grid limits (2^31 - 1 x 65535 x
/// 65535), so that the dyn layer's per-dimension checks meet a device that
/// has them.
const MAX_WORK_ITEM_SIZES: [usize; 3] = [1024, 1024, 64];
const MAX_WORK_GROUPS: [usize; 3] = [(1 << 31) - 1, 65535, 65535];

/// A platform of the topology.
#[derive(Debug)]
pub struct SimPlatform {
    pub(crate) index: usize,
}

/// A simulated device.
#[derive(Debug, Clone)]
pub struct SimDevice(pub(crate) Arc<DeviceState>);

/// A context over devices of one platform. It holds no books: host
/// registrations are the dyn layer's, USM allocations are objects of their own.
#[derive(Debug)]
pub struct SimContext {
    pub(crate) id: u64,
    pub(crate) devices: Vec<Arc<DeviceState>>,
}

impl SimContext {
    /// The first device (where allocations without a hint go).
    pub(crate) fn first(&self) -> &Arc<DeviceState> {
        &self.devices[0]
    }
}

pub(crate) fn platform_info(state: &SimState, p: &SimPlatform) -> PlatformInfo {
    PlatformInfo {
        name: state.topology.platforms()[p.index].name.clone(),
        vendor: "ur-sim".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        backend: Backend::Sim,
    }
}

pub(crate) fn devices(state: &SimState, p: &SimPlatform) -> Vec<SimDevice> {
    state
        .devices
        .iter()
        .filter(|d| d.platform == p.index)
        .map(|d| SimDevice(d.clone()))
        .collect()
}

/// Describes a device: its topology name, type and memory; discrete (no
/// host-unified memory); host and device USM but not shared USM (arenas
/// are not host addressable); host kernels, which take a global offset and
/// local-memory arguments like any host code.
pub(crate) fn device_info(d: &DeviceState) -> DeviceInfo {
    DeviceInfo::new(d.spec.name.clone(), d.spec.device_type)
        .vendor("ur-sim")
        .memory(d.spec.memory, d.spec.memory)
        .host_unified_memory(false)
        .usm(UsmCaps::HOST | UsmCaps::DEVICE)
        .caps(
            DeviceCaps::PROFILING
                | DeviceCaps::SUB_BUFFERS
                | DeviceCaps::MAP
                | DeviceCaps::KERNELS
                | DeviceCaps::HOST_REGISTER
                | DeviceCaps::FILL_ANY_PATTERN
                | DeviceCaps::GLOBAL_OFFSET
                | DeviceCaps::LOCAL_MEMORY_ARGS,
        )
        .program_formats(ProgramFormats::HOST)
        .compute(1, MAX_WORK_GROUP)
        .launch_limits(MAX_WORK_ITEM_SIZES, MAX_WORK_GROUPS)
        .sub_buffer_align(ARENA_ALIGN)
        .local_mem(LOCAL_MEM_SIZE)
        .versions(env!("CARGO_PKG_VERSION"), "sim 1")
}

pub(crate) fn create_context(state: &SimState, devices: &[&SimDevice]) -> Result<SimContext> {
    for d in devices {
        d.0.check()?;
    }
    Ok(SimContext {
        id: state.new_context_id(),
        devices: devices.iter().map(|d| d.0.clone()).collect(),
    })
}

/// The topology's answer for the two devices, in one context or across
/// contexts. Every answer is true to what the sim does: a command of any
/// queue can address any arena in place (so `Unified`, wherever the
/// topology states it, holds without a copy), and the sim can copy between
/// any two arenas (so `Migratable` holds everywhere). `None` is the model's
/// choice, and the dyn layer then keeps the memory away from that location.
pub(crate) fn memory_connection(
    state: &SimState,
    src: (&SimContext, &SimDevice),
    dst: (&SimContext, &SimDevice),
) -> MemoryConnection {
    let same_context = src.0.id == dst.0.id;
    state.topology.connection(src.1 .0.index, dst.1 .0.index, same_context)
}

impl ur_api::adapter::Devices for crate::SimAdapter {
    fn backend(&self) -> Backend {
        Backend::Sim
    }

    fn platforms(&self) -> Result<Vec<SimPlatform>> {
        Ok((0..self.state.topology.platforms().len())
            .map(|index| SimPlatform { index })
            .collect())
    }

    fn platform_info(&self, platform: &SimPlatform) -> Result<PlatformInfo> {
        Ok(platform_info(&self.state, platform))
    }

    fn devices(&self, platform: &SimPlatform) -> Result<Vec<SimDevice>> {
        Ok(devices(&self.state, platform))
    }

    fn device_info(&self, device: &SimDevice) -> Result<DeviceInfo> {
        Ok(device_info(&device.0))
    }

    fn create_context(&self, devices: &[&SimDevice]) -> Result<SimContext> {
        create_context(&self.state, devices)
    }

    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection {
        memory_connection(&self.state, src, dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    #[test]
    fn devices_describe_discrete_host_kernel_devices() {
        let s = SimState::new(Topology::three_platforms_mixed());
        let info = device_info(&s.devices[2]);
        assert_eq!(info.name, "acc0");
        assert_eq!((info.global_mem_size, info.max_alloc_size), (128 << 20, 128 << 20));
        assert!(!info.host_unified_memory);
        assert!(!info.usm.contains(UsmCaps::SHARED));
        assert!(info
            .caps
            .contains(DeviceCaps::GLOBAL_OFFSET | DeviceCaps::LOCAL_MEMORY_ARGS | DeviceCaps::MAP));
        assert_eq!(info.sub_buffer_align, ARENA_ALIGN);
    }

    #[test]
    fn connections_follow_the_topology_per_context() {
        let s = SimState::new(Topology::asymmetric_pair());
        let (a, b) = (SimDevice(s.devices[0].clone()), SimDevice(s.devices[1].clone()));
        let both = create_context(&s, &[&a, &b]).unwrap();
        let only_b = create_context(&s, &[&b]).unwrap();
        assert_eq!(
            memory_connection(&s, (&both, &a), (&both, &a)),
            MemoryConnection::Unified
        );
        assert_eq!(
            memory_connection(&s, (&both, &a), (&only_b, &b)),
            MemoryConnection::Migratable
        );
        assert_eq!(memory_connection(&s, (&both, &b), (&both, &a)), MemoryConnection::None);
    }
}
