//! What a device and a kernel are, in the detail a SYCL runtime asks about:
//! work-item limits, caches, vector widths, floating-point and atomic
//! capabilities, sub-groups, the backend's extension list
//! ([`DeviceLimits`]), and a kernel's work-group and sub-group figures on
//! one device ([`KernelGroupInfo`]).
//!
//! Every field defaults to "not reported" (zero, empty): an adapter fills
//! what its backend answers and the layers above (the UR C ABI's
//! `urDeviceGetInfo`, `urKernelGetGroupInfo`) pass those answers on
//! unchanged. The flag types use the bit layout of the UR specification's
//! matching enumerations (which OpenCL shares for floating-point
//! capabilities), so they cross the C ABI without a table.

use bitflags::bitflags;
use serde::Serialize;

bitflags! {
    /// Floating-point capabilities of one precision (UR's
    /// `ur_device_fp_capability_flags_t`, OpenCL's `cl_device_fp_config`).
    /// Empty: the device has no arithmetic of that precision.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    #[serde(transparent)]
    pub struct FpCaps: u32 {
        /// Denormals supported.
        const DENORM = 1 << 0;
        /// Infinity and NaN supported.
        const INF_NAN = 1 << 1;
        /// Round to nearest even.
        const ROUND_TO_NEAREST = 1 << 2;
        /// Round to zero.
        const ROUND_TO_ZERO = 1 << 3;
        /// Round to +/- infinity.
        const ROUND_TO_INF = 1 << 4;
        /// Fused multiply-add.
        const FMA = 1 << 5;
        /// Implemented in software.
        const SOFT_FLOAT = 1 << 6;
        /// Divide and square root correctly rounded.
        const CORRECTLY_ROUNDED_DIVIDE_SQRT = 1 << 7;
    }
}

bitflags! {
    /// Memory orders atomics support (UR's
    /// `ur_memory_order_capability_flags_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    #[serde(transparent)]
    pub struct AtomicOrders: u32 {
        /// Relaxed.
        const RELAXED = 1 << 0;
        /// Acquire.
        const ACQUIRE = 1 << 1;
        /// Release.
        const RELEASE = 1 << 2;
        /// Acquire-release.
        const ACQ_REL = 1 << 3;
        /// Sequentially consistent.
        const SEQ_CST = 1 << 4;
    }
}

bitflags! {
    /// Memory scopes atomics support (UR's
    /// `ur_memory_scope_capability_flags_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    #[serde(transparent)]
    pub struct AtomicScopes: u32 {
        /// One work item.
        const WORK_ITEM = 1 << 0;
        /// A sub-group.
        const SUB_GROUP = 1 << 1;
        /// A work group.
        const WORK_GROUP = 1 << 2;
        /// The device.
        const DEVICE = 1 << 3;
        /// Every device and the host.
        const SYSTEM = 1 << 4;
    }
}

bitflags! {
    /// How a device may access one kind of USM allocation (UR's
    /// `ur_device_usm_access_capability_flags_t`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
    #[serde(transparent)]
    pub struct UsmAccess: u32 {
        /// Plain access.
        const ACCESS = 1 << 0;
        /// Atomic access.
        const ATOMIC_ACCESS = 1 << 1;
        /// Access concurrent with the host or other devices.
        const CONCURRENT_ACCESS = 1 << 2;
        /// Atomic access concurrent with the host or other devices.
        const ATOMIC_CONCURRENT_ACCESS = 1 << 3;
    }
}

/// Vector widths, in elements, per scalar type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct VectorWidths {
    /// `char`.
    pub char: u32,
    /// `short`.
    pub short: u32,
    /// `int`.
    pub int: u32,
    /// `long`.
    pub long: u32,
    /// `float`.
    pub float: u32,
    /// `double` (0 without fp64).
    pub double: u32,
    /// `half` (0 without fp16).
    pub half: u32,
}

/// A device's limits and capabilities beyond [`DeviceInfo`](crate::DeviceInfo)'s
/// core, as its backend reports them. Zero or empty: not reported.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct DeviceLimits {
    /// The backend's vendor id (PCI id for GPUs).
    pub vendor_id: u32,
    /// Largest work-group size per dimension (0: not reported, no check).
    /// The dyn layer checks explicit work-group sizes against it.
    pub max_work_item_sizes: [usize; 3],
    /// Most work groups of one launch per dimension (CUDA's grid limit; 0:
    /// not reported, no check; `usize::MAX`: no limit). The dyn layer
    /// checks launches with explicit work-group sizes against it; where the
    /// adapter chooses the work-group size, the adapter answers for it.
    pub max_work_groups: [usize; 3],
    /// Clock frequency in MHz.
    pub max_clock_frequency: u32,
    /// Address width in bits.
    pub address_bits: u32,
    /// Global memory cache size in bytes.
    pub global_mem_cache_size: u64,
    /// Global memory cache line in bytes.
    pub global_mem_cacheline_size: u32,
    /// Largest constant buffer in bytes.
    pub max_constant_buffer_size: u64,
    /// Most constant arguments of a kernel.
    pub max_constant_args: u32,
    /// Largest total size of a kernel's arguments in bytes.
    pub max_parameter_size: usize,
    /// Preferred vector widths.
    pub preferred_vector_width: VectorWidths,
    /// Native vector widths.
    pub native_vector_width: VectorWidths,
    /// `half` arithmetic.
    pub fp16: FpCaps,
    /// `float` arithmetic.
    pub fp32: FpCaps,
    /// `double` arithmetic.
    pub fp64: FpCaps,
    /// 64-bit integer atomics.
    pub atomic64: bool,
    /// Orders of atomic memory operations.
    pub atomic_orders: AtomicOrders,
    /// Scopes of atomic memory operations.
    pub atomic_scopes: AtomicScopes,
    /// Orders of atomic fences.
    pub fence_orders: AtomicOrders,
    /// Scopes of atomic fences.
    pub fence_scopes: AtomicScopes,
    /// Access to host, device and shared USM allocations, in that order.
    pub usm_access: [UsmAccess; 3],
    /// Sub-group sizes the device supports.
    pub sub_group_sizes: Vec<u32>,
    /// Most sub-groups in a work group.
    pub max_num_sub_groups: u32,
    /// Sub-groups make independent forward progress.
    pub sub_group_independent_forward_progress: bool,
    /// The backend's extension names, space-separated (OpenCL's
    /// `CL_DEVICE_EXTENSIONS`).
    pub extensions: String,
    /// Intermediate languages the device takes (OpenCL's
    /// `CL_DEVICE_IL_VERSION`, e.g. `SPIR-V_1.0 SPIR-V_1.1`).
    pub il_version: String,
    /// Profiling timer resolution in nanoseconds.
    pub profiling_timer_resolution: usize,
    /// `printf` buffer size in bytes.
    pub printf_buffer_size: usize,
    /// How the device can be split into sub-devices.
    pub partition: crate::PartitionCaps,
    /// The device's universally unique id where the backend reports one
    /// (OpenCL's `CL_DEVICE_UUID_KHR`, `cl_khr_device_uuid`): the same
    /// device through another API reports the same bytes.
    pub uuid: Option<[u8; 16]>,
    /// Intel's IP version and execution-unit topology where the backend
    /// reports them (OpenCL's `cl_intel_device_attribute_query`).
    pub intel_attributes: Option<IntelDeviceAttributes>,
}

/// The figures of Intel's device attribute query
/// (`cl_intel_device_attribute_query`), as the runtime reports them (on
/// Intel's CPU runtime a CPU's cores appear as execution units).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct IntelDeviceAttributes {
    /// The device's IP version (`CL_DEVICE_IP_VERSION_INTEL`).
    pub ip_version: u32,
    /// Slices (`CL_DEVICE_NUM_SLICES_INTEL`).
    pub slices: u32,
    /// Sub-slices in each slice (`CL_DEVICE_NUM_SUB_SLICES_PER_SLICE_INTEL`).
    pub sub_slices_per_slice: u32,
    /// Execution units in each sub-slice (`CL_DEVICE_NUM_EUS_PER_SUB_SLICE_INTEL`).
    pub eus_per_sub_slice: u32,
    /// Hardware threads of each execution unit (`CL_DEVICE_NUM_THREADS_PER_EU_INTEL`).
    pub threads_per_eu: u32,
}

impl DeviceLimits {
    /// Does the backend's extension list name `ext`?
    pub fn has_extension(&self, ext: &str) -> bool {
        self.extensions.split_whitespace().any(|e| e == ext)
    }
}

/// A kernel's work-group and sub-group figures on one device, as its
/// backend reports them. Zero: not reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct KernelGroupInfo {
    /// Largest work group this kernel can be launched with on the device.
    pub work_group_size: usize,
    /// The work-group size the kernel was compiled for
    /// (`reqd_work_group_size`), all zeros when none.
    pub compile_work_group_size: [usize; 3],
    /// Local memory the kernel itself uses, in bytes.
    pub local_mem_size: u64,
    /// The preferred multiple of the work-group size.
    pub preferred_work_group_size_multiple: usize,
    /// Private memory per work item, in bytes.
    pub private_mem_size: u64,
    /// Largest sub-group the kernel runs with.
    pub max_sub_group_size: u32,
    /// Most sub-groups in a work group of the kernel.
    pub max_num_sub_groups: u32,
    /// The sub-group count the kernel was compiled for (0: none).
    pub compile_num_sub_groups: u32,
    /// The sub-group size the kernel was compiled for (0: none).
    pub compile_sub_group_size: u32,
}

/// A backend object's own handle (an OpenCL `cl_context`, a CUDA
/// `CUcontext`, ...), for interoperation with code that drives the backend
/// directly: handed out by `Runtime::native_handle`, taken by
/// `Runtime::create_program_from_native`, `create_kernel_from_native` and
/// `create_event_from_native`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NativeHandle(u64);

impl NativeHandle {
    /// Wraps a backend handle.
    ///
    /// # Safety
    ///
    /// `raw` names a live object of the backend and kind it is passed as
    /// (a program of the context it is given with), which stays live for
    /// the call it is passed to.
    pub unsafe fn new(raw: u64) -> Self {
        NativeHandle(raw)
    }

    /// The raw value.
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// Which object's native handle is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeOf {
    /// A platform.
    Platform(crate::PlatformId),
    /// A device.
    Device(crate::DeviceId),
    /// A context.
    Context(crate::ContextId),
    /// A queue.
    Queue(crate::QueueId),
    /// A buffer or sub-buffer.
    Buffer(crate::BufferId),
    /// A program.
    Program(crate::ProgramId),
    /// A kernel.
    Kernel(crate::KernelId),
    /// An event.
    Event(crate::EventId),
    /// The backend queue an event's command was enqueued on (for an event
    /// adopted from the backend, the queue the backend reports for it);
    /// [`Error::Unsupported`](crate::Error::Unsupported) for an event of no
    /// queue.
    EventQueue(crate::EventId),
}

/// An adapter object whose native handle is asked for.
pub enum NativeObj<'a, A: crate::adapter::Api + ?Sized> {
    /// A platform.
    Platform(&'a A::Platform),
    /// A device.
    Device(&'a A::Device),
    /// A context.
    Context(&'a A::Context),
    /// A queue.
    Queue(&'a A::Queue),
    /// A buffer or sub-buffer.
    Buffer(&'a A::Buffer),
    /// A program.
    Program(&'a A::Program),
    /// A kernel.
    Kernel(&'a A::Kernel),
    /// An event.
    Event(&'a A::Event),
    /// The backend queue of an event (see [`NativeOf::EventQueue`]).
    EventQueue(&'a A::Event),
}

impl<A: crate::adapter::Api + ?Sized> std::fmt::Debug for NativeObj<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NativeObj::Platform(_) => "Platform",
            NativeObj::Device(_) => "Device",
            NativeObj::Context(_) => "Context",
            NativeObj::Queue(_) => "Queue",
            NativeObj::Buffer(_) => "Buffer",
            NativeObj::Program(_) => "Program",
            NativeObj::Kernel(_) => "Kernel",
            NativeObj::Event(_) => "Event",
            NativeObj::EventQueue(_) => "EventQueue",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_lookup_matches_whole_names() {
        let l = DeviceLimits {
            extensions: "cl_khr_fp64 cl_khr_il_program".into(),
            ..DeviceLimits::default()
        };
        assert!(l.has_extension("cl_khr_fp64"));
        assert!(!l.has_extension("cl_khr_fp"));
        assert!(!DeviceLimits::default().has_extension("cl_khr_fp64"));
    }
}
