//! The dispatch tables: one `ur_dditable_t` holding every entry point we
//! implement (each handle's header points at it), and the
//! `urGet*ProcAddrTable` exports the UR loader calls to fill its own copy.
//! Entries we do not implement get a generated stub answering
//! `UR_RESULT_ERROR_UNSUPPORTED_FEATURE` ([`crate::unsupported`]): no slot
//! is null.

use std::sync::OnceLock;

use crate::sys::*;
use crate::{context, device, enqueue, kernel, memory, native, partition, platform, program, queue, usm};

/// The entry points that got an `UNSUPPORTED_FEATURE` stub, recorded as
/// the table is filled ([`crate::table`] holds the table itself).
static STUBS: OnceLock<Vec<&'static str>> = OnceLock::new();

/// The address every handle header carries, the table filled on first use.
pub fn table() -> *const ur_dditable_t {
    crate::table::fill(|| {
        let mut t = build();
        let stubs = crate::unsupported::fill(&mut t);
        let _ = STUBS.set(stubs);
        t
    })
}

/// The entry points answered by an `UNSUPPORTED_FEATURE` stub
/// ([`crate::unsupported`]).
pub fn unsupported() -> &'static [&'static str] {
    table();
    STUBS.get().map_or(&[], Vec::as_slice)
}

fn build() -> ur_dditable_t {
    let mut t = ur_dditable_t::default();
    let a = &mut t.Adapter;
    a.pfnGet = Some(platform::urAdapterGet);
    a.pfnRetain = Some(platform::urAdapterRetain);
    a.pfnRelease = Some(platform::urAdapterRelease);
    a.pfnGetLastError = Some(platform::urAdapterGetLastError);
    a.pfnGetInfo = Some(platform::urAdapterGetInfo);
    a.pfnSetLoggerCallback = Some(platform::urAdapterSetLoggerCallback);
    a.pfnSetLoggerCallbackLevel = Some(platform::urAdapterSetLoggerCallbackLevel);
    let p = &mut t.Platform;
    p.pfnGet = Some(platform::urPlatformGet);
    p.pfnGetInfo = Some(platform::urPlatformGetInfo);
    p.pfnGetApiVersion = Some(platform::urPlatformGetApiVersion);
    p.pfnGetBackendOption = Some(platform::urPlatformGetBackendOption);
    let d = &mut t.Device;
    d.pfnGet = Some(device::urDeviceGet);
    d.pfnGetInfo = Some(device::urDeviceGetInfo);
    d.pfnRetain = Some(device::urDeviceRetain);
    d.pfnRelease = Some(device::urDeviceRelease);
    d.pfnGetGlobalTimestamps = Some(device::urDeviceGetGlobalTimestamps);
    d.pfnPartition = Some(partition::urDevicePartition);
    let c = &mut t.Context;
    c.pfnCreate = Some(context::urContextCreate);
    c.pfnRetain = Some(context::urContextRetain);
    c.pfnRelease = Some(context::urContextRelease);
    c.pfnGetInfo = Some(context::urContextGetInfo);
    c.pfnSetExtendedDeleter = Some(context::urContextSetExtendedDeleter);
    let m = &mut t.Mem;
    m.pfnBufferCreate = Some(memory::urMemBufferCreate);
    m.pfnBufferPartition = Some(memory::urMemBufferPartition);
    m.pfnRetain = Some(memory::urMemRetain);
    m.pfnRelease = Some(memory::urMemRelease);
    m.pfnGetInfo = Some(memory::urMemGetInfo);
    m.pfnGetNativeHandle = Some(native::urMemGetNativeHandle);
    m.pfnBufferCreateWithNativeHandle = Some(native::urMemBufferCreateWithNativeHandle);
    let u = &mut t.USM;
    u.pfnHostAlloc = Some(usm::urUSMHostAlloc);
    u.pfnDeviceAlloc = Some(usm::urUSMDeviceAlloc);
    u.pfnSharedAlloc = Some(usm::urUSMSharedAlloc);
    u.pfnFree = Some(usm::urUSMFree);
    u.pfnGetMemAllocInfo = Some(usm::urUSMGetMemAllocInfo);
    u.pfnPoolCreate = Some(usm::urUSMPoolCreate);
    u.pfnPoolRetain = Some(usm::urUSMPoolRetain);
    u.pfnPoolRelease = Some(usm::urUSMPoolRelease);
    u.pfnPoolGetInfo = Some(usm::urUSMPoolGetInfo);
    let q = &mut t.Queue;
    q.pfnCreate = Some(queue::urQueueCreate);
    q.pfnRetain = Some(queue::urQueueRetain);
    q.pfnRelease = Some(queue::urQueueRelease);
    q.pfnGetInfo = Some(queue::urQueueGetInfo);
    q.pfnFinish = Some(queue::urQueueFinish);
    q.pfnFlush = Some(queue::urQueueFlush);
    let e = &mut t.Event;
    e.pfnWait = Some(queue::urEventWait);
    e.pfnRetain = Some(queue::urEventRetain);
    e.pfnRelease = Some(queue::urEventRelease);
    e.pfnGetInfo = Some(queue::urEventGetInfo);
    e.pfnGetProfilingInfo = Some(queue::urEventGetProfilingInfo);
    e.pfnSetCallback = Some(queue::urEventSetCallback);
    e.pfnCreateWithNativeHandle = Some(native::urEventCreateWithNativeHandle);
    let n = &mut t.Enqueue;
    n.pfnMemBufferRead = Some(enqueue::urEnqueueMemBufferRead);
    n.pfnMemBufferWrite = Some(enqueue::urEnqueueMemBufferWrite);
    n.pfnMemBufferReadRect = Some(enqueue::urEnqueueMemBufferReadRect);
    n.pfnMemBufferWriteRect = Some(enqueue::urEnqueueMemBufferWriteRect);
    n.pfnMemBufferCopy = Some(enqueue::urEnqueueMemBufferCopy);
    n.pfnMemBufferCopyRect = Some(enqueue::urEnqueueMemBufferCopyRect);
    n.pfnMemBufferFill = Some(enqueue::urEnqueueMemBufferFill);
    n.pfnMemBufferMap = Some(enqueue::urEnqueueMemBufferMap);
    n.pfnMemUnmap = Some(enqueue::urEnqueueMemUnmap);
    n.pfnUSMMemcpy = Some(enqueue::urEnqueueUSMMemcpy);
    n.pfnUSMFill = Some(enqueue::urEnqueueUSMFill);
    n.pfnUSMPrefetch = Some(enqueue::urEnqueueUSMPrefetch);
    n.pfnUSMAdvise = Some(enqueue::urEnqueueUSMAdvise);
    n.pfnEventsWait = Some(enqueue::urEnqueueEventsWait);
    n.pfnEventsWaitWithBarrier = Some(enqueue::urEnqueueEventsWaitWithBarrier);
    n.pfnEventsWaitWithBarrierExt = Some(enqueue::urEnqueueEventsWaitWithBarrierExt);
    t.EnqueueExp.pfnKernelLaunchWithArgsExp = Some(kernel::urEnqueueKernelLaunchWithArgsExp);
    t.QueueExp.pfnIsGraphCaptureEnabledExp = Some(queue::urQueueIsGraphCaptureEnabledExp);
    let pr = &mut t.Program;
    pr.pfnCreateWithIL = Some(program::urProgramCreateWithIL);
    pr.pfnCreateWithBinary = Some(program::urProgramCreateWithBinary);
    pr.pfnBuild = Some(program::urProgramBuild);
    pr.pfnCompile = Some(program::urProgramCompile);
    pr.pfnLink = Some(program::urProgramLink);
    pr.pfnRetain = Some(program::urProgramRetain);
    pr.pfnRelease = Some(program::urProgramRelease);
    pr.pfnGetInfo = Some(program::urProgramGetInfo);
    pr.pfnGetBuildInfo = Some(program::urProgramGetBuildInfo);
    pr.pfnSetSpecializationConstants = Some(program::urProgramSetSpecializationConstants);
    pr.pfnGetFunctionPointer = Some(program::urProgramGetFunctionPointer);
    let px = &mut t.ProgramExp;
    px.pfnBuildExp = Some(program::urProgramBuildExp);
    px.pfnCompileExp = Some(program::urProgramCompileExp);
    px.pfnLinkExp = Some(program::urProgramLinkExp);
    let k = &mut t.Kernel;
    k.pfnCreate = Some(kernel::urKernelCreate);
    k.pfnRetain = Some(kernel::urKernelRetain);
    k.pfnRelease = Some(kernel::urKernelRelease);
    k.pfnGetInfo = Some(kernel::urKernelGetInfo);
    k.pfnGetGroupInfo = Some(kernel::urKernelGetGroupInfo);
    k.pfnGetSubGroupInfo = Some(kernel::urKernelGetSubGroupInfo);
    k.pfnSetExecInfo = Some(kernel::urKernelSetExecInfo);
    t.Device.pfnSelectBinary = Some(device::urDeviceSelectBinary);
    t.Platform.pfnGetNativeHandle = Some(native::urPlatformGetNativeHandle);
    t.Device.pfnGetNativeHandle = Some(native::urDeviceGetNativeHandle);
    t.Platform.pfnCreateWithNativeHandle = Some(native::urPlatformCreateWithNativeHandle);
    t.Device.pfnCreateWithNativeHandle = Some(native::urDeviceCreateWithNativeHandle);
    t.Queue.pfnCreateWithNativeHandle = Some(native::urQueueCreateWithNativeHandle);
    t.Context.pfnCreateWithNativeHandle = Some(native::urContextCreateWithNativeHandle);
    t.Context.pfnGetNativeHandle = Some(native::urContextGetNativeHandle);
    t.Queue.pfnGetNativeHandle = Some(native::urQueueGetNativeHandle);
    t.Program.pfnGetNativeHandle = Some(native::urProgramGetNativeHandle);
    t.Kernel.pfnGetNativeHandle = Some(native::urKernelGetNativeHandle);
    t.Event.pfnGetNativeHandle = Some(native::urEventGetNativeHandle);
    t.Program.pfnCreateWithNativeHandle = Some(native::urProgramCreateWithNativeHandle);
    t.Kernel.pfnCreateWithNativeHandle = Some(native::urKernelCreateWithNativeHandle);
    t
}

/// Is `version` one this library serves (UR 0.x, x >= 12)?
fn version_ok(version: ur_api_version_t) -> bool {
    version >> 16 == 0 && (version & 0xffff) >= 12
}

macro_rules! exports {
    ($($name:ident => $field:ident : $ty:ty;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: fills the loader's `", stringify!($ty), "` with our entry points.")]
        ///
        /// # Safety
        ///
        /// `table` is null or valid for a write of the table.
        #[no_mangle]
        pub unsafe extern "C" fn $name(version: ur_api_version_t, table: *mut $ty) -> ur_result_t {
            crate::info::entry(|| {
                if table.is_null() {
                    return Err(crate::conv::CapiError::NullPointer);
                }
                if !version_ok(version) {
                    return Err(crate::conv::CapiError::Api(ur_api::Error::unsupported("this UR API version")));
                }
                // SAFETY: `table()` returns the filled table ([`crate::table`]);
                // `table` is non-null and writable by the caller's promise.
                unsafe { table.write((*self::table()).$field) };
                Ok(())
            })
        }
    )*};
}

exports! {
    urGetAdapterProcAddrTable => Adapter: ur_adapter_dditable_t;
    urGetPlatformProcAddrTable => Platform: ur_platform_dditable_t;
    urGetContextProcAddrTable => Context: ur_context_dditable_t;
    urGetEventProcAddrTable => Event: ur_event_dditable_t;
    urGetEventExpProcAddrTable => EventExp: ur_event_exp_dditable_t;
    urGetProgramProcAddrTable => Program: ur_program_dditable_t;
    urGetProgramExpProcAddrTable => ProgramExp: ur_program_exp_dditable_t;
    urGetKernelProcAddrTable => Kernel: ur_kernel_dditable_t;
    urGetQueueProcAddrTable => Queue: ur_queue_dditable_t;
    urGetQueueExpProcAddrTable => QueueExp: ur_queue_exp_dditable_t;
    urGetSamplerProcAddrTable => Sampler: ur_sampler_dditable_t;
    urGetMemProcAddrTable => Mem: ur_mem_dditable_t;
    urGetPhysicalMemProcAddrTable => PhysicalMem: ur_physical_mem_dditable_t;
    urGetEnqueueProcAddrTable => Enqueue: ur_enqueue_dditable_t;
    urGetEnqueueExpProcAddrTable => EnqueueExp: ur_enqueue_exp_dditable_t;
    urGetUSMProcAddrTable => USM: ur_usm_dditable_t;
    urGetUSMExpProcAddrTable => USMExp: ur_usm_exp_dditable_t;
    urGetBindlessImagesExpProcAddrTable => BindlessImagesExp: ur_bindless_images_exp_dditable_t;
    urGetCommandBufferExpProcAddrTable => CommandBufferExp: ur_command_buffer_exp_dditable_t;
    urGetGraphExpProcAddrTable => GraphExp: ur_graph_exp_dditable_t;
    urGetIPCExpProcAddrTable => IPCExp: ur_ipc_exp_dditable_t;
    urGetMemoryExportExpProcAddrTable => MemoryExportExp: ur_memory_export_exp_dditable_t;
    urGetUsmP2PExpProcAddrTable => UsmP2PExp: ur_usm_p2p_exp_dditable_t;
    urGetVirtualMemProcAddrTable => VirtualMem: ur_virtual_mem_dditable_t;
    urGetDeviceProcAddrTable => Device: ur_device_dditable_t;
    urGetDeviceExpProcAddrTable => DeviceExp: ur_device_exp_dditable_t;
}
