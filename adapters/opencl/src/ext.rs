//! `cl_intel_unified_shared_memory`: the entry points the adapter uses,
//! declared here from the extension's specification and fetched per
//! platform with `clGetExtensionFunctionAddressForPlatform` (an ICD loader
//! exports no extension function; each platform's library has its own).

use std::ffi::{c_void, CStr};

use opencl3::types::{
    cl_bool, cl_command_queue, cl_context, cl_device_id, cl_event, cl_int, cl_kernel, cl_mem_migration_flags,
    cl_platform_id, cl_uint,
};

/// The extension's name in a device's `CL_DEVICE_EXTENSIONS`.
pub(crate) const EXTENSION: &str = "cl_intel_unified_shared_memory";

/// `cl_mem_properties_intel`.
pub(crate) type MemProperties = u64;

/// `CL_DEVICE_HOST_MEM_CAPABILITIES_INTEL`.
pub(crate) const DEVICE_HOST_MEM_CAPABILITIES: u32 = 0x4190;
/// `CL_DEVICE_DEVICE_MEM_CAPABILITIES_INTEL`.
pub(crate) const DEVICE_DEVICE_MEM_CAPABILITIES: u32 = 0x4191;
/// `CL_DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL`.
pub(crate) const DEVICE_SINGLE_DEVICE_SHARED_MEM_CAPABILITIES: u32 = 0x4192;
/// `CL_MEM_ALLOC_TYPE_INTEL`, a `clGetMemAllocInfoINTEL` query.
pub(crate) const MEM_ALLOC_TYPE: cl_uint = 0x419A;
/// `CL_MEM_TYPE_HOST_INTEL` (then `_DEVICE_` and `_SHARED_`: 0x4198, 0x4199).
pub(crate) const MEM_TYPE_HOST: cl_uint = 0x4197;
/// `CL_MEM_ALLOC_FLAGS_INTEL`, a `cl_mem_properties_intel` key.
pub(crate) const MEM_ALLOC_FLAGS: MemProperties = 0x4195;

type HostAlloc = unsafe extern "C" fn(cl_context, *const MemProperties, usize, cl_uint, *mut cl_int) -> *mut c_void;
type DeviceAlloc =
    unsafe extern "C" fn(cl_context, cl_device_id, *const MemProperties, usize, cl_uint, *mut cl_int) -> *mut c_void;
type Free = unsafe extern "C" fn(cl_context, *mut c_void) -> cl_int;
type AllocInfo = unsafe extern "C" fn(cl_context, *const c_void, cl_uint, usize, *mut c_void, *mut usize) -> cl_int;
type SetArg = unsafe extern "C" fn(cl_kernel, cl_uint, *const c_void) -> cl_int;
type Fill = unsafe extern "C" fn(
    cl_command_queue,
    *mut c_void,
    *const c_void,
    usize,
    usize,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;
type Memcpy = unsafe extern "C" fn(
    cl_command_queue,
    cl_bool,
    *mut c_void,
    *const c_void,
    usize,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;
type Migrate = unsafe extern "C" fn(
    cl_command_queue,
    *const c_void,
    usize,
    cl_mem_migration_flags,
    cl_uint,
    *const cl_event,
    *mut cl_event,
) -> cl_int;

/// The extension's entry points of one platform.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IntelUsm {
    /// `clHostMemAllocINTEL`.
    pub(crate) host_alloc: HostAlloc,
    /// `clDeviceMemAllocINTEL`.
    pub(crate) device_alloc: DeviceAlloc,
    /// `clSharedMemAllocINTEL` (same signature; the device may be null).
    pub(crate) shared_alloc: DeviceAlloc,
    /// `clMemBlockingFreeINTEL`: frees once commands using the memory completed.
    pub(crate) blocking_free: Free,
    /// `clGetMemAllocInfoINTEL`.
    pub(crate) alloc_info: AllocInfo,
    /// `clSetKernelArgMemPointerINTEL`.
    pub(crate) set_arg: SetArg,
    /// `clEnqueueMemFillINTEL`.
    pub(crate) fill: Fill,
    /// `clEnqueueMemcpyINTEL`.
    pub(crate) memcpy: Memcpy,
    /// `clEnqueueMigrateMemINTEL`.
    pub(crate) migrate: Migrate,
}

/// The address of `name` in `platform`'s library, or `None`.
fn address(platform: cl_platform_id, name: &CStr) -> Option<*mut c_void> {
    let lib = cl3::load_library().as_ref().ok()?;
    // A live platform id and a NUL-terminated name; the call only looks
    // the name up (cl3's wrapper is a safe fn).
    let p = lib.clGetExtensionFunctionAddressForPlatform(platform, name.as_ptr())?;
    (!p.is_null()).then_some(p)
}

impl IntelUsm {
    /// The entry points of `platform`, or `None` when any is missing (the
    /// adapter then serves USM with SVM, or not at all).
    pub(crate) fn load(platform: cl_platform_id) -> Option<Self> {
        macro_rules! get {
            ($name:literal, $ty:ty) => {{
                let p = address(platform, $name)?;
                // SAFETY: the platform returned this address for the named
                // entry point, whose C signature `$ty` declares (from the
                // extension's specification).
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        Some(IntelUsm {
            host_alloc: get!(c"clHostMemAllocINTEL", HostAlloc),
            device_alloc: get!(c"clDeviceMemAllocINTEL", DeviceAlloc),
            shared_alloc: get!(c"clSharedMemAllocINTEL", DeviceAlloc),
            blocking_free: get!(c"clMemBlockingFreeINTEL", Free),
            alloc_info: get!(c"clGetMemAllocInfoINTEL", AllocInfo),
            set_arg: get!(c"clSetKernelArgMemPointerINTEL", SetArg),
            fill: get!(c"clEnqueueMemFillINTEL", Fill),
            memcpy: get!(c"clEnqueueMemcpyINTEL", Memcpy),
            migrate: get!(c"clEnqueueMigrateMemINTEL", Migrate),
        })
    }
}

#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the adapter never asks; its tests check allocations with it")
)]
impl IntelUsm {
    /// The kind of USM memory `ptr` lies in, as the runtime reports it
    /// (`CL_MEM_ALLOC_TYPE_INTEL`): 0 host, 1 device, 2 shared, `None`
    /// unknown (not an allocation of `ctx`).
    ///
    /// # Safety
    ///
    /// `ctx` is a live context of this platform.
    pub(crate) unsafe fn alloc_type(&self, ctx: cl_context, ptr: *const c_void) -> Option<u32> {
        let mut ty: cl_uint = 0;
        // SAFETY: the caller's live context; `ty` is a `cl_uint` living
        // across the call, its size given; the pointer is only looked up.
        let code = unsafe {
            (self.alloc_info)(
                ctx,
                ptr,
                MEM_ALLOC_TYPE,
                size_of::<cl_uint>(),
                (&raw mut ty).cast(),
                std::ptr::null_mut(),
            )
        };
        (code == 0).then_some(ty.wrapping_sub(MEM_TYPE_HOST)).filter(|&k| k < 3)
    }
}

/// Runs an enqueue entry point that returns its event through the last
/// argument; the event is owned by the caller.
pub(crate) fn event_of(f: impl FnOnce(*mut cl_event) -> cl_int) -> Result<cl_event, cl_int> {
    let mut ev: cl_event = std::ptr::null_mut();
    match f(&mut ev) {
        0 => Ok(ev),
        code => Err(code),
    }
}
