//! Platforms, devices and contexts: one platform with one CPU-type device.
//!
//! An adapter over a real backend enumerates here (and returns `Ok(vec![])`
//! when its runtime library is absent); the template has nothing to find.

use ur_api::{Backend, DeviceCaps, DeviceInfo, DeviceType, PlatformInfo};
use ur_api::{Loc, MemoryConnection, Result};

/// The backend name, as device selectors and test names spell it
/// (`UR_DEVICE_SELECTOR=template:0`, `[template/Template device#0] ...`).
pub const BACKEND_NAME: &str = "template";

/// The backend this adapter drives: one `ur-api` does not know by name.
pub const BACKEND: Backend = Backend::Other(BACKEND_NAME);

/// The one platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplatePlatform;

/// The one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateDevice;

/// A context. Buffers are host memory any command of this adapter can
/// reach, so a context has nothing to hold; a backend with per-context
/// resources (a driver context, a memory pool) keeps them here.
#[derive(Debug, Default)]
pub struct TemplateContext {
    _private: (),
}

/// The platform's description.
pub(crate) fn platform_info() -> PlatformInfo {
    PlatformInfo {
        name: "Template platform".to_owned(),
        vendor: "Unified Runtime project".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        backend: BACKEND,
    }
}

/// The device's description: everything the dyn layer checks against and
/// the suite decides its skips by. Claim only what the adapter implements.
pub(crate) fn device_info() -> DeviceInfo {
    DeviceInfo::new("Template device", DeviceType::Cpu)
        .vendor("Unified Runtime project")
        // Buffers are allocated on demand from the heap; these are the
        // limits the dyn layer enforces, modest so tests stay cheap.
        .memory(1 << 30, 256 << 20)
        // Buffers live in ordinary host memory.
        .host_unified_memory(true)
        // SUB_BUFFERS: a view is an `Arc` clone plus an offset.
        // MAP: a mapping is a staging copy (cheap to write, and the shape a
        // discrete device needs). FILL_ANY_PATTERN: the fill loop does not
        // care about the pattern's length. Absent, on purpose: USM (no
        // `.usm(..)`), KERNELS (no program format), PROFILING,
        // HOST_REGISTER, USE_HOST_PTR, GLOBAL_OFFSET, LOCAL_MEMORY_ARGS;
        // the dyn layer answers `Unsupported` for them and the suite skips.
        .caps(DeviceCaps::SUB_BUFFERS | DeviceCaps::MAP | DeviceCaps::FILL_ANY_PATTERN)
        // The storage needs no alignment; 8 keeps sub-buffers viewable as
        // `u64` and exercises the dyn layer's alignment checks.
        .sub_buffer_align(8)
        // Per dimension: the largest work group and the most work groups of
        // a launch (the dyn layer checks explicit work-group sizes against
        // them). Without KERNELS nothing launches: groups of one, any count.
        .launch_limits([1; 3], [usize::MAX; 3])
        // No `.local_mem(..)`: without LOCAL_MEMORY_ARGS a launch can ask
        // for no local memory, and 0 says so. An adapter that takes such
        // arguments reports its device's size here (the dyn layer bounds
        // their sum by it).
        .versions(
            env!("CARGO_PKG_VERSION"),
            format!("template {}", env!("CARGO_PKG_VERSION")),
        )
}

impl ur_api::adapter::Devices for crate::TemplateAdapter {
    fn backend(&self) -> Backend {
        BACKEND
    }

    fn platforms(&self) -> Result<Vec<TemplatePlatform>> {
        Ok(vec![TemplatePlatform])
    }

    fn platform_info(&self, _: &TemplatePlatform) -> Result<PlatformInfo> {
        Ok(platform_info())
    }

    fn devices(&self, _: &TemplatePlatform) -> Result<Vec<TemplateDevice>> {
        Ok(vec![TemplateDevice])
    }

    fn device_info(&self, _: &TemplateDevice) -> Result<DeviceInfo> {
        Ok(device_info())
    }

    fn create_context(&self, _: &[&TemplateDevice]) -> Result<TemplateContext> {
        Ok(TemplateContext::default())
    }

    fn memory_connection(&self, _: Loc<'_, Self>, _: Loc<'_, Self>) -> MemoryConnection {
        // Every buffer of this adapter, whatever its context, is host memory
        // that any command of this adapter touches as it is (through the
        // buffer's own lock; nothing is copied). So memory made at one
        // location is usable in place at every other: `Unified`. An adapter
        // whose contexts own separate device memory answers `Migratable`
        // where its copy commands can reach both, and `None` otherwise.
        MemoryConnection::Unified
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_claims_only_what_is_implemented() {
        let info = device_info();
        assert_eq!(info.device_type, DeviceType::Cpu);
        assert!(info.usm.is_empty(), "no USM");
        assert!(!info.caps.contains(DeviceCaps::KERNELS));
        assert!(!info.caps.contains(DeviceCaps::PROFILING));
        assert!(info.max_alloc_size <= info.global_mem_size);
        assert_eq!(platform_info().backend.name(), BACKEND_NAME);
    }
}
