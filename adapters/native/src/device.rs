//! Platform and device discovery: one platform, one device (the host CPU),
//! described from the real machine.

use crate::NativeContext;
use ur_api::{Backend, DeviceCaps, DeviceInfo, DeviceType, PlatformInfo, ProgramFormats, UsmCaps};
use ur_api::{Loc, MemoryConnection, Result};

/// The native platform (there is exactly one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativePlatform;

/// The host CPU as a device (there is exactly one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeDevice;

/// Name of the one platform.
pub const PLATFORM_NAME: &str = "Native host";

/// Alignment of every buffer and default-aligned USM allocation, and the
/// required alignment of a sub-buffer offset: one cache line on x86-64 and
/// most AArch64 cores. It covers every scalar and SIMD type up to 512 bits,
/// so a kernel may view any buffer or sub-buffer as a slice of such values,
/// and two allocations never share a cache line (no false sharing between
/// commands on different queues).
pub const BASE_ALIGN: usize = 64;

/// Alignment of `ALLOC_HOST_PTR` buffers and of host registrations the
/// memory manager stages through: a page, as pinned memory is elsewhere.
pub const PAGE_ALIGN: usize = 4096;

/// Used when `/proc/meminfo` cannot be read (non-Linux hosts).
const FALLBACK_MEM: u64 = 4 << 30;

/// Host kernels run the whole range in one call, so there is no hardware
/// work-group limit; this is the value CPU OpenCL runtimes (PoCL) report,
/// which keeps ranges portable to them.
const MAX_WORK_GROUP: usize = 4096;

/// Local memory a launch may ask of a host kernel, summed over its
/// local-memory arguments. A host kernel allocates its work-group scratch
/// itself, so there is no hardware limit; this is the size a CPU OpenCL
/// runtime reports (Intel's CPU runtime: 256 KiB), which keeps launches
/// portable to them and keeps a hostile size from reaching the kernel.
pub const LOCAL_MEM_SIZE: u64 = 256 << 10;

pub(crate) fn platform_info() -> PlatformInfo {
    PlatformInfo {
        name: PLATFORM_NAME.to_owned(),
        vendor: "Unified Runtime project".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        backend: Backend::Native,
    }
}

/// Describes the host CPU from `/proc/cpuinfo`, `/proc/meminfo` and the
/// standard library's view of available parallelism.
pub(crate) fn discover() -> DeviceInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let total = mem_total(&meminfo).unwrap_or_else(|| {
        tracing::warn!(fallback = FALLBACK_MEM, "cannot read MemTotal from /proc/meminfo");
        FALLBACK_MEM
    });
    let units = std::thread::available_parallelism().map_or(1, |n| n.get());
    describe(&cpuinfo, total, units)
}

/// The device description for a CPU described by `cpuinfo` text, with
/// `total` bytes of memory and `units` hardware threads.
fn describe(cpuinfo: &str, total: u64, units: usize) -> DeviceInfo {
    let name = cpuinfo_field(cpuinfo, "model name")
        .or_else(|| cpuinfo_field(cpuinfo, "Model"))
        .map(str::to_owned)
        .unwrap_or_else(|| format!("Host CPU ({})", std::env::consts::ARCH));
    let vendor = cpuinfo_field(cpuinfo, "vendor_id").unwrap_or("unknown").to_owned();
    DeviceInfo::new(name, DeviceType::Cpu)
        .vendor(vendor)
        // Half of the machine for one allocation: it may not starve the
        // process and everything else on it; also far below isize::MAX,
        // which Layout needs.
        .memory(total, total / 2)
        .host_unified_memory(true)
        .usm(UsmCaps::HOST | UsmCaps::DEVICE | UsmCaps::SHARED)
        .caps(
            DeviceCaps::PROFILING
                | DeviceCaps::SUB_BUFFERS
                | DeviceCaps::MAP
                | DeviceCaps::KERNELS
                | DeviceCaps::HOST_REGISTER
                | DeviceCaps::USE_HOST_PTR
                | DeviceCaps::FILL_ANY_PATTERN
                | DeviceCaps::GLOBAL_OFFSET
                | DeviceCaps::LOCAL_MEMORY_ARGS,
        )
        .program_formats(ProgramFormats::HOST)
        .compute(u32::try_from(units).unwrap_or(u32::MAX), MAX_WORK_GROUP)
        // Work groups run as loops on the workers: no per-dimension bound
        // beyond the total, and any number of groups.
        .launch_limits([MAX_WORK_GROUP; 3], [usize::MAX; 3])
        .sub_buffer_align(BASE_ALIGN)
        .local_mem(LOCAL_MEM_SIZE)
        .versions(
            env!("CARGO_PKG_VERSION"),
            format!("native {}", env!("CARGO_PKG_VERSION")),
        )
}

/// The value of the first `key : value` line of `/proc/cpuinfo` text.
fn cpuinfo_field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim()).filter(|v| !v.is_empty())
    })
}

/// `MemTotal` of `/proc/meminfo` text, in bytes.
fn mem_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut parts = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") => n.checked_mul(1024),
        None => Some(n),
        Some(_) => None,
    }
}

impl ur_api::adapter::Devices for crate::NativeAdapter {
    fn backend(&self) -> Backend {
        Backend::Native
    }

    fn platforms(&self) -> Result<Vec<NativePlatform>> {
        Ok(vec![NativePlatform])
    }

    fn platform_info(&self, _: &NativePlatform) -> Result<PlatformInfo> {
        Ok(platform_info())
    }

    fn devices(&self, _: &NativePlatform) -> Result<Vec<NativeDevice>> {
        Ok(vec![NativeDevice])
    }

    fn device_info(&self, _: &NativeDevice) -> Result<DeviceInfo> {
        Ok(self.info.clone())
    }

    fn create_context(&self, _: &[&NativeDevice]) -> Result<NativeContext> {
        Ok(NativeContext::default())
    }

    fn memory_connection(&self, _: Loc<'_, Self>, _: Loc<'_, Self>) -> MemoryConnection {
        // Every allocation of this adapter, in any context, is ordinary host
        // memory of this process: every native context and device, and the
        // host itself, can address it as it is. No copy is ever needed.
        MemoryConnection::Unified
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUINFO: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";

    #[test]
    fn parses_cpuinfo_and_meminfo() {
        assert_eq!(
            cpuinfo_field(CPUINFO, "model name"),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpuinfo_field(CPUINFO, "vendor_id"), Some("GenuineIntel"));
        assert_eq!(cpuinfo_field(CPUINFO, "flags"), None);
        assert_eq!(
            mem_total("MemTotal:       8040132 kB\nMemFree: 1 kB\n"),
            Some(8040132 * 1024)
        );
        assert_eq!(mem_total("MemFree: 1 kB\n"), None);
    }

    #[test]
    fn describes_the_cpu() {
        let info = describe(CPUINFO, 8 << 30, 6);
        assert_eq!(info.name, "Intel(R) Xeon(R) CPU @ 2.20GHz");
        assert_eq!(info.vendor, "GenuineIntel");
        assert_eq!((info.global_mem_size, info.max_alloc_size), (8 << 30, 4 << 30));
        assert_eq!(info.max_compute_units, 6);
        assert!(info.host_unified_memory);
        let bare = describe("", 1 << 30, 1);
        assert!(bare.name.starts_with("Host CPU ("), "{}", bare.name);
    }

    #[test]
    fn discovers_this_machine() {
        let info = discover();
        assert!(info.global_mem_size > 0);
        assert!(info.max_compute_units >= 1);
        if let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") {
            if let Some(model) = cpuinfo_field(&text, "model name") {
                assert_eq!(info.name, model);
            }
        }
    }
}
