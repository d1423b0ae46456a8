//! Plain data types shared by every adapter: device descriptions, flags,
//! allocation descriptions, regions and ranges.

use std::fmt;

use bitflags::bitflags;
use serde::Serialize;

pub use crate::limits::{
    AtomicOrders, AtomicScopes, DeviceLimits, FpCaps, KernelGroupInfo, NativeHandle, NativeObj, NativeOf, UsmAccess,
    VectorWidths,
};
pub use crate::partition::{AffinityDomains, Partition, PartitionCaps, PartitionKinds};

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

    /// Sets the limits and capabilities beyond the core fields.
    pub fn limits(self, limits: DeviceLimits) -> Self {
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

/// What the dyn layer checks a kernel's launches against
/// ([`Kernels::kernel_info`](crate::adapter::Kernels::kernel_info)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct KernelInfo {
    /// The number of arguments, when the backend knows it.
    pub arg_count: Option<usize>,
    /// Each argument's size in bytes, when the backend knows them (buffers
    /// and USM pointers are 8 bytes). Implies `arg_count`.
    pub arg_sizes: Option<Vec<usize>>,
    /// The kernel's name, where the backend reports it (a kernel made from
    /// a native handle has no name of ours).
    pub name: Option<String>,
}

impl KernelInfo {
    /// Sets the kernel's name.
    pub fn named(self, name: impl Into<String>) -> Self {
        KernelInfo {
            name: Some(name.into()),
            ..self
        }
    }

    /// A kernel taking `n` arguments of sizes unknown.
    pub fn with_arg_count(n: usize) -> Self {
        KernelInfo {
            arg_count: Some(n),
            arg_sizes: None,
            name: None,
        }
    }

    /// A kernel whose arguments have these sizes.
    pub fn with_arg_sizes(sizes: Vec<usize>) -> Self {
        KernelInfo {
            arg_count: Some(sizes.len()),
            arg_sizes: Some(sizes),
            name: None,
        }
    }
}

/// The answer to "can memory of location A be used at location B?".
///
/// A location is a (context, device) pair. The answer is directional:
/// `connection(a, b)` may differ from `connection(b, a)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryConnection {
    /// The adapter cannot move the data: it must travel through host memory
    /// (read to host at the source, write from host at the destination).
    None,
    /// Not usable in place, but the adapter can copy it directly
    /// (`enqueue_copy` on a queue of either location).
    Migratable,
    /// Memory allocated at the source location is usable at the destination
    /// as it is: no copy and no second allocation is needed.
    Unified,
}

impl fmt::Display for MemoryConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryConnection::None => "none",
            MemoryConnection::Migratable => "migratable",
            MemoryConnection::Unified => "unified",
        })
    }
}

bitflags! {
    /// Buffer creation flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct MemFlags: u32 {
        /// Kernels read and write the buffer (the default when no access flag is set).
        const READ_WRITE = 1 << 0;
        /// Kernels only read the buffer.
        const READ_ONLY = 1 << 1;
        /// Kernels only write the buffer.
        const WRITE_ONLY = 1 << 2;
        /// The buffer lives in caller-owned host memory.
        const USE_HOST_PTR = 1 << 3;
        /// Back the buffer with host-accessible (pinned) memory.
        const ALLOC_HOST_PTR = 1 << 4;
        /// Initialise the buffer from caller data.
        const COPY_HOST_PTR = 1 << 5;
    }
}

/// Describes a buffer to create. `D` is the device type: a handle in the dyn
/// layer, a reference to the adapter's device in the static trait.
#[derive(Debug, Clone, Copy)]
pub struct BufferDesc<D> {
    /// Size in bytes; must be non-zero.
    pub size: usize,
    /// Creation flags.
    pub flags: MemFlags,
    /// The device this allocation is meant for. Backends that allocate per
    /// context (OpenCL) place the memory there; backends that allocate per
    /// device (CUDA) allocate on it. `None`: the context's first device.
    pub device_hint: Option<D>,
}

impl<D> BufferDesc<D> {
    /// A read-write buffer of `size` bytes with no device hint.
    pub fn new(size: usize) -> Self {
        BufferDesc {
            size,
            flags: MemFlags::READ_WRITE,
            device_hint: None,
        }
    }

    /// The same description with a device hint.
    pub fn on(self, device: D) -> Self {
        BufferDesc {
            device_hint: Some(device),
            ..self
        }
    }

    /// The same description with these flags.
    pub fn with_flags(self, flags: MemFlags) -> Self {
        BufferDesc { flags, ..self }
    }

    /// Converts the device type.
    pub fn map_device<E>(self, f: impl FnOnce(D) -> E) -> BufferDesc<E> {
        BufferDesc {
            size: self.size,
            flags: self.flags,
            device_hint: self.device_hint.map(f),
        }
    }
}

/// USM allocation kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsmKind {
    /// Host memory the devices of the context can access.
    Host,
    /// Device memory.
    Device,
    /// Memory that migrates between host and device on demand.
    Shared,
}

bitflags! {
    /// Advice attached to a USM allocation or range.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct UsmAdvice: u32 {
        /// Mostly read; the backend may replicate it.
        const READ_MOSTLY = 1 << 0;
        /// Prefer keeping the memory on the device.
        const PREFER_DEVICE = 1 << 1;
        /// Prefer keeping the memory on the host.
        const PREFER_HOST = 1 << 2;
        /// The host will access the memory.
        const ACCESSED_BY_HOST = 1 << 3;
    }
}

/// Describes a USM allocation. `D` as in [`BufferDesc`].
#[derive(Debug, Clone, Copy)]
pub struct UsmDesc<D> {
    /// Host, device or shared.
    pub kind: UsmKind,
    /// Size in bytes; must be non-zero.
    pub size: usize,
    /// Alignment in bytes; 0 means the adapter's default, otherwise a power of two.
    pub align: usize,
    /// The device the allocation is for (required for device allocations).
    pub device: Option<D>,
    /// Initial advice.
    pub advice: UsmAdvice,
}

impl<D> UsmDesc<D> {
    /// An allocation of `kind` and `size` with default alignment and no advice.
    pub fn new(kind: UsmKind, size: usize) -> Self {
        UsmDesc {
            kind,
            size,
            align: 0,
            device: None,
            advice: UsmAdvice::empty(),
        }
    }

    /// The same description for this device.
    pub fn on(self, device: D) -> Self {
        UsmDesc {
            device: Some(device),
            ..self
        }
    }

    /// The same description with this alignment.
    pub fn aligned(self, align: usize) -> Self {
        UsmDesc { align, ..self }
    }

    /// Converts the device type.
    pub fn map_device<E>(self, f: impl FnOnce(D) -> E) -> UsmDesc<E> {
        UsmDesc {
            kind: self.kind,
            size: self.size,
            align: self.align,
            device: self.device.map(f),
            advice: self.advice,
        }
    }
}

/// A USM address. For host and shared allocations of host-addressable
/// backends it is a host address; for device allocations it is an address
/// in the device's space that only the adapter interprets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UsmPtr(pub u64);

impl UsmPtr {
    /// The address `bytes` further on (wrapping: only addresses inside
    /// an allocation mean anything).
    pub fn offset(self, bytes: usize) -> UsmPtr {
        UsmPtr(self.0.wrapping_add(bytes as u64))
    }
}

impl fmt::Display for UsmPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// What a pointer query returns. `D` as in [`BufferDesc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsmPointerInfo<D> {
    /// Allocation kind.
    pub kind: UsmKind,
    /// Base address of the allocation containing the pointer.
    pub base: UsmPtr,
    /// Size of that allocation.
    pub size: usize,
    /// The device of the allocation, if any.
    pub device: Option<D>,
}

/// A span of host memory handed to an adapter for an operation that may run
/// after the call returns.
///
/// Creating one is `unsafe`: the creator promises the memory stays valid for
/// the whole operation (until its event completes), and that nothing else
/// writes it meanwhile (for operations that read it) or accesses it
/// meanwhile (for operations that write it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPtr {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a HostPtr is only an address and a length; the promise made in
// `HostPtr::new` covers use from the adapter's worker threads.
unsafe impl Send for HostPtr {}
// SAFETY: as above; sharing the address does not access the memory.
unsafe impl Sync for HostPtr {}

impl HostPtr {
    /// Wraps `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes from now until
    /// every operation given this `HostPtr` has completed (its event is
    /// complete, or the blocking call returned), and the memory must not be
    /// accessed by anything else in that time, except by other reads when the
    /// operations only read it.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        HostPtr { ptr, len }
    }

    /// The start address.
    pub fn as_ptr(self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        self.len
    }

    /// True for a zero-length span.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The sub-span `[offset, offset + len)`, or `None` if it does not fit.
    pub fn slice(self, offset: usize, len: usize) -> Option<HostPtr> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| HostPtr {
            // SAFETY: offset <= self.len, so the result stays inside the span.
            ptr: unsafe { self.ptr.add(offset) },
            len,
        })
    }
}

/// The address at which the devices of a context reach locked host memory
/// (what [`HostLocking::lock_host`](crate::adapter::HostLocking::lock_host) answers): the host
/// address itself where devices share the host's address space (native, sim,
/// Level Zero imports, CUDA with unified addressing), a device pointer
/// otherwise (`cuMemHostGetDevicePointer`). Usable as a [`UsmPtr`]-like
/// address by the adapter that returned it; opaque to everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DeviceAddr(pub u64);

impl DeviceAddr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: usize) -> DeviceAddr {
        DeviceAddr(self.0.wrapping_add(bytes as u64))
    }
}

/// Memory named by a USM copy: a USM allocation or plain host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemRef {
    /// A USM address (any kind).
    Usm(UsmPtr),
    /// Host memory that is not a USM allocation.
    Host(HostPtr),
}

/// One side of a rectangular copy: where the box starts and how rows and
/// slices are laid out. `origin` is (byte in row, row, slice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RectSide {
    /// Start of the box: byte offset in the row, row index, slice index.
    pub origin: [usize; 3],
    /// Bytes between the starts of two rows; 0 means tightly packed (the box width).
    pub row_pitch: usize,
    /// Bytes between the starts of two slices; 0 means tightly packed (row pitch × height).
    pub slice_pitch: usize,
}

impl RectSide {
    /// A side from its origin (byte in the row, row, slice) and pitches (0 = packed).
    ///
    /// ```
    /// use ur_api::{RectCopy, RectSide};
    /// // A 4-byte-wide, 2-row box from row 1 of a 16-byte-pitch image into a packed one.
    /// let r = RectCopy {
    ///     src: RectSide::new([0, 1, 0], 16, 0),
    ///     dst: RectSide::default(),
    ///     extent: [4, 2, 1],
    /// };
    /// assert_eq!(r.src.start(), 16);
    /// ```
    pub const fn new(origin: [usize; 3], row_pitch: usize, slice_pitch: usize) -> Self {
        RectSide {
            origin,
            row_pitch,
            slice_pitch,
        }
    }

    /// Byte offset of the box's first byte.
    pub fn start(&self) -> usize {
        self.origin[2] * self.slice_pitch + self.origin[1] * self.row_pitch + self.origin[0]
    }

    /// One past the box's last byte, for a box of `extent`.
    pub fn end(&self, extent: [usize; 3]) -> usize {
        self.start() + (extent[2] - 1) * self.slice_pitch + (extent[1] - 1) * self.row_pitch + extent[0]
    }
}

/// A rectangular (2-D or 3-D) copy. `extent` is (width in bytes, rows, slices).
///
/// The dyn layer replaces zero pitches by their packed values before an
/// adapter sees the description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RectCopy {
    /// Source layout.
    pub src: RectSide,
    /// Destination layout.
    pub dst: RectSide,
    /// Width in bytes, number of rows, number of slices.
    pub extent: [usize; 3],
}

impl RectCopy {
    /// Calls `f(src_offset, dst_offset, len)` for every contiguous row of the box.
    /// Pitches must already be explicit (non-zero).
    pub fn for_each_row(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [w, h, d] = self.extent;
        for z in 0..d {
            for y in 0..h {
                let s = self.src.start() + z * self.src.slice_pitch + y * self.src.row_pitch;
                let t = self.dst.start() + z * self.dst.slice_pitch + y * self.dst.row_pitch;
                f(s, t, w);
            }
        }
    }
}

bitflags! {
    /// How a mapping will be used.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct MapFlags: u32 {
        /// The host reads the mapped memory.
        const READ = 1 << 0;
        /// The host writes the mapped memory (written back on unmap).
        const WRITE = 1 << 1;
        /// The host overwrites the whole range; its old contents need not be read.
        const WRITE_INVALIDATE = 1 << 2;
    }
}

/// Queue creation properties. Queues are always in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueProps {
    /// Record profiling timestamps on this queue's events.
    pub profiling: bool,
}

/// Where a command is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventStatus {
    /// Enqueued, not yet handed to the device.
    Queued,
    /// Handed to the device.
    Submitted,
    /// Running.
    Running,
    /// Finished successfully.
    Complete,
    /// Finished with an error.
    Failed(crate::Error),
}

/// Profiling timestamps of a command, in nanoseconds on a clock that is
/// monotonic per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct ProfilingInfo {
    /// When the command was enqueued.
    pub queued: u64,
    /// When it was submitted to the device.
    pub submit: u64,
    /// When it started running.
    pub start: u64,
    /// When it finished.
    pub end: u64,
}

/// A 1-, 2- or 3-dimensional launch range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdRange {
    /// Number of dimensions used (1..=3).
    pub dims: u32,
    /// Global size per dimension; unused dimensions are 1.
    pub global: [usize; 3],
    /// Work-group size per dimension, or `None` for the adapter's choice.
    pub local: Option<[usize; 3]>,
    /// Global offset per dimension.
    pub offset: [usize; 3],
}

impl NdRange {
    /// A 1-D range of `n` work items.
    pub fn d1(n: usize) -> Self {
        NdRange {
            dims: 1,
            global: [n, 1, 1],
            local: None,
            offset: [0; 3],
        }
    }

    /// A 2-D range.
    pub fn d2(x: usize, y: usize) -> Self {
        NdRange {
            dims: 2,
            global: [x, y, 1],
            local: None,
            offset: [0; 3],
        }
    }

    /// A 3-D range.
    pub fn d3(x: usize, y: usize, z: usize) -> Self {
        NdRange {
            dims: 3,
            global: [x, y, z],
            local: None,
            offset: [0; 3],
        }
    }

    /// The same range with a work-group size.
    pub fn with_local(self, local: [usize; 3]) -> Self {
        NdRange {
            local: Some(local),
            ..self
        }
    }

    /// Total work items, or `None` when the count overflows `usize`.
    pub fn total(&self) -> Option<usize> {
        self.global.iter().try_fold(1usize, |acc, &g| acc.checked_mul(g))
    }
}

/// Where a program comes from.
#[derive(Clone)]
pub enum ProgramSource {
    /// Host kernels: Rust functions registered by name (native and sim adapters).
    Host(std::sync::Arc<crate::host_kernel::HostKernelLibrary>),
    /// OpenCL C source.
    OpenClC(String),
    /// SPIR-V binary.
    SpirV(Vec<u8>),
    /// CUDA C++ source, compiled with NVRTC.
    CudaC(String),
    /// PTX assembly.
    Ptx(String),
}

impl ProgramSource {
    /// The format flag this source needs.
    pub fn format(&self) -> ProgramFormats {
        match self {
            ProgramSource::Host(_) => ProgramFormats::HOST,
            ProgramSource::OpenClC(_) => ProgramFormats::OPENCL_C,
            ProgramSource::SpirV(_) => ProgramFormats::SPIRV,
            ProgramSource::CudaC(_) => ProgramFormats::CUDA_C,
            ProgramSource::Ptx(_) => ProgramFormats::PTX,
        }
    }
}

impl fmt::Debug for ProgramSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramSource::Host(lib) => f.debug_tuple("Host").field(&lib.names()).finish(),
            ProgramSource::OpenClC(s) => write!(f, "OpenClC({} bytes)", s.len()),
            ProgramSource::SpirV(s) => write!(f, "SpirV({} bytes)", s.len()),
            ProgramSource::CudaC(s) => write!(f, "CudaC({} bytes)", s.len()),
            ProgramSource::Ptx(s) => write!(f, "Ptx({} bytes)", s.len()),
        }
    }
}
