//! Plain data types shared by every adapter: device descriptions, flags,
//! allocation descriptions, regions and ranges. Platforms and devices
//! here; memory (connections, buffers, USM, host spans, rect regions) in
//! `memory.rs`; queues, events, launches, programs and kernels in
//! `commands.rs`.

use std::fmt;

use bitflags::bitflags;
use serde::Serialize;

pub use crate::limits::{
    AtomicOrders, AtomicScopes, DeviceLimits, FpCaps, IntelDeviceAttributes, KernelGroupInfo, NativeHandle, NativeObj,
    NativeOf, UsmAccess, VectorWidths,
};
pub use crate::partition::{AffinityDomains, Partition, PartitionCaps, PartitionKinds};

mod commands;
mod memory;

pub use commands::*;
pub use memory::*;

/// Which backend an adapter drives.
///
/// Serialised as its [`name`](Backend::name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// The host CPU adapter (always present).
    Native,
    /// Simulated discrete devices (tests and topologies).
    Sim,
    /// OpenCL platforms through the ICD loader.
    OpenCl,
    /// NVIDIA CUDA through the driver API.
    Cuda,
    /// oneAPI Level Zero.
    LevelZero,
    /// A backend `ur-api` does not know, by its selector name (lower case,
    /// letters, digits and `_`; e.g. an out-of-tree adapter's `"template"`).
    Other(&'static str),
}

impl Serialize for Backend {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Backend {
    /// Every backend `ur-api` knows, in display order.
    pub const ALL: [Backend; 5] = [
        Backend::Native,
        Backend::Sim,
        Backend::OpenCl,
        Backend::Cuda,
        Backend::LevelZero,
    ];

    /// The name used in device selectors and test names (`native`, `opencl`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Backend::Native => "native",
            Backend::Sim => "sim",
            Backend::OpenCl => "opencl",
            Backend::Cuda => "cuda",
            Backend::LevelZero => "level_zero",
            Backend::Other(name) => name,
        }
    }

    /// Parses the name of a backend `ur-api` knows; accepts the oneAPI
    /// aliases `native_cpu` and `ext_oneapi_cuda`-style prefixes.
    pub fn from_name(s: &str) -> Option<Backend> {
        let s = s.trim().to_ascii_lowercase();
        let s = s.strip_prefix("ext_oneapi_").unwrap_or(&s);
        Some(match s {
            "native" | "native_cpu" | "host" => Backend::Native,
            "sim" => Backend::Sim,
            "opencl" => Backend::OpenCl,
            "cuda" => Backend::Cuda,
            "level_zero" | "levelzero" | "ze" => Backend::LevelZero,
            _ => return None,
        })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What kind of device this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceType {
    /// A CPU.
    Cpu,
    /// A GPU.
    Gpu,
    /// An accelerator (FPGA, DSP, ...).
    Accelerator,
    /// Anything else (simulated devices report their configured type).
    Custom,
}

impl DeviceType {
    /// Selector name: `cpu`, `gpu`, `fpga`/`acc`, `custom`.
    pub fn name(self) -> &'static str {
        match self {
            DeviceType::Cpu => "cpu",
            DeviceType::Gpu => "gpu",
            DeviceType::Accelerator => "acc",
            DeviceType::Custom => "custom",
        }
    }
}

bitflags! {
    /// Which unified-shared-memory allocation kinds a device supports.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct UsmCaps: u32 {
        /// Host allocations accessible by the device.
        const HOST = 1 << 0;
        /// Device allocations.
        const DEVICE = 1 << 1;
        /// Shared (migrating) allocations.
        const SHARED = 1 << 2;
    }
}

bitflags! {
    /// Optional device capabilities. The dyn layer checks these before
    /// calling an adapter, so adapters never implement "unsupported" stubs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct DeviceCaps: u32 {
        /// Events of profiling-enabled queues carry timestamps.
        const PROFILING = 1 << 0;
        /// Sub-buffers can be created.
        const SUB_BUFFERS = 1 << 1;
        /// Buffers can be mapped into host memory.
        const MAP = 1 << 2;
        /// Kernels can be launched.
        const KERNELS = 1 << 3;
        /// Existing host memory can be locked (pinned) with the adapter
        /// ([`HostLocking::lock_host`](crate::adapter::HostLocking::lock_host)), which answers
        /// the [`DeviceAddr`] the context's devices reach it at.
        const HOST_REGISTER = 1 << 4;
        /// Buffers may be created over caller-owned host memory (`USE_HOST_PTR`).
        const USE_HOST_PTR = 1 << 5;
        /// Fill patterns whose length is not a power of two are supported.
        const FILL_ANY_PATTERN = 1 << 6;
        /// Launches may have a non-zero global offset.
        const GLOBAL_OFFSET = 1 << 7;
        /// Kernels may take work-group local memory as an argument
        /// ([`KernelArg::Local`](crate::KernelArg::Local)).
        const LOCAL_MEMORY_ARGS = 1 << 8;
    }
}

bitflags! {
    /// Program formats a device accepts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct ProgramFormats: u32 {
        /// Host kernels: Rust functions registered by name.
        const HOST = 1 << 0;
        /// OpenCL C source.
        const OPENCL_C = 1 << 1;
        /// SPIR-V intermediate language.
        const SPIRV = 1 << 2;
        /// CUDA C++ source (compiled with NVRTC).
        const CUDA_C = 1 << 3;
        /// PTX assembly.
        const PTX = 1 << 4;
    }
}

/// Describes one platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformInfo {
    /// Platform name.
    pub name: String,
    /// Vendor name.
    pub vendor: String,
    /// Version string as the backend reports it.
    pub version: String,
    /// The backend serving the platform.
    pub backend: Backend,
}

/// Describes one device.
///
/// `#[non_exhaustive]`: adapters build one with [`DeviceInfo::new`] and the
/// chained setters, so new fields do not break them.
///
/// ```
/// use ur_api::{DeviceCaps, DeviceInfo, DeviceType, UsmCaps};
/// let info = DeviceInfo::new("my accelerator", DeviceType::Accelerator)
///     .vendor("ACME")
///     .memory(1 << 30, 256 << 20)
///     .caps(DeviceCaps::MAP | DeviceCaps::KERNELS)
///     .usm(UsmCaps::DEVICE);
/// assert_eq!(info.max_alloc_size, 256 << 20);
/// assert_eq!(info.sub_buffer_align, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// Device name.
    pub name: String,
    /// Vendor name.
    pub vendor: String,
    /// CPU, GPU, ...
    pub device_type: DeviceType,
    /// Global memory in bytes.
    pub global_mem_size: u64,
    /// Largest single allocation in bytes.
    pub max_alloc_size: u64,
    /// The device's memory is the host's memory.
    pub host_unified_memory: bool,
    /// Supported USM allocation kinds.
    pub usm: UsmCaps,
    /// Optional capabilities.
    pub caps: DeviceCaps,
    /// Accepted program formats.
    pub program_formats: ProgramFormats,
    /// Compute units.
    pub max_compute_units: u32,
    /// Largest work-group (block) size.
    pub max_work_group_size: usize,
    /// Required alignment, in bytes, of a sub-buffer's offset.
    pub sub_buffer_align: usize,
    /// Local (work-group shared) memory in bytes a launch may use: the
    /// bound on the sum of its [`ArgValue::Local`](crate::ArgValue::Local)
    /// arguments, which the dyn layer checks. 0: not reported (no bound
    /// checked).
    pub local_mem_size: u64,
    /// Driver version.
    pub driver_version: String,
    /// Backend API version the device supports.
    pub backend_version: String,
    /// Limits and capabilities beyond these, as the backend reports them
    /// (all "not reported" unless the adapter fills them).
    pub limits: DeviceLimits,
}

impl DeviceInfo {
    /// A device with this name and type and modest defaults: no vendor, no
    /// memory reported (0), separate memory, no USM, no optional
    /// capability, no program format, one compute unit, work groups of 1,
    /// sub-buffer alignment 1, no local memory reported (0), empty version
    /// strings.
    pub fn new(name: impl Into<String>, device_type: DeviceType) -> Self {
        DeviceInfo {
            name: name.into(),
            vendor: String::new(),
            device_type,
            global_mem_size: 0,
            max_alloc_size: 0,
            host_unified_memory: false,
            usm: UsmCaps::empty(),
            caps: DeviceCaps::empty(),
            program_formats: ProgramFormats::empty(),
            max_compute_units: 1,
            max_work_group_size: 1,
            sub_buffer_align: 1,
            local_mem_size: 0,
            driver_version: String::new(),
            backend_version: String::new(),
            limits: DeviceLimits::default(),
        }
    }

    /// Sets the limits and capabilities beyond the core fields. Launch
    /// limits already set by [`DeviceInfo::launch_limits`] are kept where
    /// `limits` leaves them unreported (all zero), so the two setters may
    /// be called in either order.
    ///
    /// ```
    /// use ur_api::{DeviceInfo, DeviceLimits, DeviceType};
    /// let info = DeviceInfo::new("gpu", DeviceType::Gpu)
    ///     .launch_limits([1024, 1024, 64], [65535; 3])
    ///     .limits(DeviceLimits { sub_group_sizes: vec![32], ..DeviceLimits::default() });
    /// assert_eq!(info.limits.max_work_item_sizes, [1024, 1024, 64]);
    /// assert_eq!(info.limits.sub_group_sizes, [32]);
    /// ```
    pub fn limits(self, limits: DeviceLimits) -> Self {
        let kept = |new: [usize; 3], old: [usize; 3]| if new == [0; 3] { old } else { new };
        let limits = DeviceLimits {
            max_work_item_sizes: kept(limits.max_work_item_sizes, self.limits.max_work_item_sizes),
            max_work_groups: kept(limits.max_work_groups, self.limits.max_work_groups),
            ..limits
        };
        DeviceInfo { limits, ..self }
    }

    /// Sets the per-dimension launch limits: the largest work-group size
    /// ([`DeviceLimits::max_work_item_sizes`]) and the most work groups
    /// ([`DeviceLimits::max_work_groups`]) in each dimension.
    pub fn launch_limits(mut self, max_work_item_sizes: [usize; 3], max_work_groups: [usize; 3]) -> Self {
        self.limits.max_work_item_sizes = max_work_item_sizes;
        self.limits.max_work_groups = max_work_groups;
        self
    }

    /// Sets the vendor name.
    pub fn vendor(self, vendor: impl Into<String>) -> Self {
        DeviceInfo {
            vendor: vendor.into(),
            ..self
        }
    }

    /// Sets the global memory size and the largest single allocation, in bytes.
    pub fn memory(self, global_mem_size: u64, max_alloc_size: u64) -> Self {
        DeviceInfo {
            global_mem_size,
            max_alloc_size,
            ..self
        }
    }

    /// Says whether the device's memory is the host's.
    pub fn host_unified_memory(self, host_unified_memory: bool) -> Self {
        DeviceInfo {
            host_unified_memory,
            ..self
        }
    }

    /// Sets the supported USM allocation kinds.
    pub fn usm(self, usm: UsmCaps) -> Self {
        DeviceInfo { usm, ..self }
    }

    /// Sets the optional capabilities.
    pub fn caps(self, caps: DeviceCaps) -> Self {
        DeviceInfo { caps, ..self }
    }

    /// Sets the accepted program formats.
    pub fn program_formats(self, program_formats: ProgramFormats) -> Self {
        DeviceInfo {
            program_formats,
            ..self
        }
    }

    /// Sets the compute units and the largest work-group size.
    pub fn compute(self, max_compute_units: u32, max_work_group_size: usize) -> Self {
        DeviceInfo {
            max_compute_units,
            max_work_group_size,
            ..self
        }
    }

    /// Sets the required alignment of a sub-buffer's offset.
    pub fn sub_buffer_align(self, sub_buffer_align: usize) -> Self {
        DeviceInfo {
            sub_buffer_align,
            ..self
        }
    }

    /// Sets the local (work-group shared) memory size in bytes.
    pub fn local_mem(self, local_mem_size: u64) -> Self {
        DeviceInfo { local_mem_size, ..self }
    }

    /// Sets the driver and backend API version strings.
    pub fn versions(self, driver_version: impl Into<String>, backend_version: impl Into<String>) -> Self {
        DeviceInfo {
            driver_version: driver_version.into(),
            backend_version: backend_version.into(),
            ..self
        }
    }
}
