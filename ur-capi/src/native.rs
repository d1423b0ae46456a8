//! Native handles: the backend's own objects behind ours, for programs
//! that drive the backend directly beside SYCL (dpctl builds OpenCL
//! programs with `clCreateProgramWithSource` in the `cl_context` of a SYCL
//! context, then hands the `cl_program` back to SYCL).
//!
//! Handed out where the adapter serving the object has one (OpenCL: the
//! `cl_platform_id`, `cl_device_id`, `cl_context`, `cl_command_queue`,
//! `cl_program`, `cl_kernel`, `cl_event`); adapters that keep their
//! objects to themselves (native, sim) answer `UNSUPPORTED_FEATURE`, which
//! SYCL reports as a `feature_not_supported` exception the caller can
//! handle. A program made from a native handle
//! (`urProgramCreateWithNativeHandle`) must belong to the context's
//! backend context; it is a built program whose kernels are created by
//! name as any other. So must an event (`urEventCreateWithNativeHandle`),
//! which is then waited for, queried and put in wait lists as any other.
//! So must a queue (`urQueueCreateWithNativeHandle`), which then runs
//! commands as any other. A native platform or device (`urPlatformCreateWithNativeHandle`,
//! `urDeviceCreateWithNativeHandle`) answers the handle we already list
//! over that backend object, never a second one.
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]; a native handle given to us names a live
//! backend object of the kind the entry point takes.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{ContextId, DeviceId, Error, NativeHandle, NativeOf, PlatformId};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::register;
use crate::info::{entry, put_required};
use crate::kernel::Kernel;
use crate::managed::Backing;
use crate::objects::{Context, Event, Mem, Object, Queue};
use crate::program::{Build, Program};
use crate::state::state;
use crate::sys::*;

/// Writes the native handle of `of` to `out`.
///
/// # Safety
///
/// `out` is null or writable.
unsafe fn answer(of: NativeOf, out: *mut ur_native_handle_t) -> Result<(), CapiError> {
    if out.is_null() {
        return Err(CapiError::NullPointer);
    }
    let h = state().rt.native_handle(of)?;
    // SAFETY: non-null and writable (caller's promise).
    unsafe { put_required(out, h.raw() as ur_native_handle_t) }
}

/// `urPlatformGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformGetNativeHandle(
    p: ur_platform_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { answer(NativeOf::Platform(get::<PlatformId, _>(p)?), out) })
}

/// Our handle of the platform or device whose backend object is `native`,
/// among `candidates` (handle, what it is): the first whose adapter answers
/// that native handle. A backend object is never wrapped twice: the handle
/// answered is the one `urPlatformGet` / `urDeviceGet` /
/// `urDevicePartition` handed out.
fn ours_of(native: ur_native_handle_t, candidates: impl IntoIterator<Item = (usize, NativeOf)>) -> Option<usize> {
    let rt = &state().rt;
    candidates
        .into_iter()
        .find(|(_, of)| rt.native_handle(*of).is_ok_and(|h| h.raw() == native as u64))
        .map(|(h, _)| h)
}

/// `urPlatformCreateWithNativeHandle`: the platform we list over the
/// backend platform `native` (OpenCL: a `cl_platform_id`). One we do not
/// list, or a backend whose objects are its own (native, sim), is
/// `INVALID_VALUE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urPlatformCreateWithNativeHandle(
    native: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    _props: *const ur_platform_native_properties_t,
    out: *mut ur_platform_handle_t,
) -> ur_result_t {
    entry(|| {
        crate::handles::lookup(adapter, crate::conv::Kind::Adapter)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        let st = state();
        let candidates = st.platforms.iter().map(|p| (p.handle, NativeOf::Platform(p.id)));
        let h = ours_of(native, candidates).ok_or(CapiError::InvalidValue)?;
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h as ur_platform_handle_t) }
    })
}

/// `urDeviceCreateWithNativeHandle`: the device we list over the backend
/// device `native` (OpenCL: a `cl_device_id`), a root device or a
/// sub-device `urDevicePartition` made; a sub-device gets one more
/// reference (the caller's, given back with `urDeviceRelease`; root
/// devices are not counted). A device we do not know is `INVALID_VALUE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceCreateWithNativeHandle(
    native: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    _props: *const ur_device_native_properties_t,
    out: *mut ur_device_handle_t,
) -> ur_result_t {
    entry(|| {
        crate::handles::lookup(adapter, crate::conv::Kind::Adapter)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        let st = state();
        let roots = st.devices.values().map(|d| (d.handle, NativeOf::Device(d.id)));
        let h = match ours_of(native, roots) {
            Some(h) => h,
            None => {
                let subs: Vec<(usize, NativeOf)> = st
                    .sub_devices
                    .read()
                    .values()
                    .map(|d| (d.handle, NativeOf::Device(d.id)))
                    .collect();
                let h = ours_of(native, subs).ok_or(CapiError::InvalidValue)?;
                crate::handles::retain(h as ur_device_handle_t, crate::conv::Kind::Device)?;
                h
            }
        };
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h as ur_device_handle_t) }
    })
}

/// `urDeviceGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urDeviceGetNativeHandle(d: ur_device_handle_t, out: *mut ur_native_handle_t) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { answer(NativeOf::Device(get::<DeviceId, _>(d)?), out) })
}

/// `urContextGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextGetNativeHandle(c: ur_context_handle_t, out: *mut ur_native_handle_t) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| {
        let ctx = get::<Arc<Context>, _>(c)?;
        // A context over several runtimes has no one native context.
        if ctx.is_split() {
            return Err(CapiError::Unsupported);
        }
        // SAFETY: as the module contract says.
        unsafe { answer(NativeOf::Context(ctx.id), out) }
    })
}

/// `urQueueGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueGetNativeHandle(
    q: ur_queue_handle_t,
    _desc: *mut ur_queue_native_desc_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { answer(NativeOf::Queue(get::<Queue, _>(q)?.id), out) })
}

/// `urEventGetNativeHandle`: the backend's event behind a command's event
/// (or an adopted one); for an event made from native handle 0, which has
/// none, the handle it was made from, 0.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventGetNativeHandle(e: ur_event_handle_t, out: *mut ur_native_handle_t) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe {
        match get::<Event, _>(e)?.id {
            Some(id) => answer(NativeOf::Event(id), out),
            None if out.is_null() => Err(CapiError::NullPointer),
            None => put_required(out, 0),
        }
    })
}

/// `urProgramGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramGetNativeHandle(p: ur_program_handle_t, out: *mut ur_native_handle_t) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { answer(NativeOf::Program(get::<Arc<Program>, _>(p)?.built()?), out) })
}

/// `urKernelGetNativeHandle`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelGetNativeHandle(k: ur_kernel_handle_t, out: *mut ur_native_handle_t) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { answer(NativeOf::Kernel(get::<Arc<Kernel>, _>(k)?.id), out) })
}

/// `urProgramCreateWithNativeHandle`: a built program over a backend
/// program of the context's backend context.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramCreateWithNativeHandle(
    native: ur_native_handle_t,
    ctx: ur_context_handle_t,
    props: *const ur_program_native_properties_t,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: null or a live properties struct (module contract).
        let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
        let id: ContextId = c.id;
        // SAFETY: a live backend program (module contract).
        let handle = unsafe { NativeHandle::new(native as u64) };
        let pid = state().rt.create_program_from_native(id, handle, owned)?;
        let p = Program {
            context: (ctx, c),
            modules: [Arc::from(&[][..])].into(),
            build: Mutex::new(Build {
                id: Some(pid),
                ..Build::default()
            }),
        };
        let h = register(Object::Program(Arc::new(p)));
        // SAFETY: non-null and writable (module contract).
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `urKernelCreateWithNativeHandle`: a kernel over a backend kernel of the
/// context's backend context. Its program is the one given, or (none given,
/// as libsycl does for OpenCL interop) the backend kernel's own program,
/// which then has no handle of ours.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelCreateWithNativeHandle(
    native: ur_native_handle_t,
    ctx: ur_context_handle_t,
    ph: ur_program_handle_t,
    props: *const ur_kernel_native_properties_t,
    out: *mut ur_kernel_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        let given = if ph.is_null() {
            None
        } else {
            Some(get::<Arc<Program>, _>(ph)?)
        };
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: null or a live properties struct (module contract).
        let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
        let rt = &state().rt;
        // SAFETY: a live backend kernel (module contract).
        let handle = unsafe { NativeHandle::new(native as u64) };
        let (pid, kid) = rt.create_kernel_from_native(c.id, handle, owned)?;
        let own_program = Arc::new(Program {
            context: (ctx, c),
            modules: [Arc::from(&[][..])].into(),
            build: Mutex::new(Build {
                id: Some(pid),
                ..Build::default()
            }),
        });
        let program = match given {
            Some(p) => (ph, p),
            None => (std::ptr::null_mut(), own_program.clone()),
        };
        let info = rt.kernel_info(kid)?;
        let k = Kernel {
            id: kid,
            program,
            name: info.name.unwrap_or_default(),
            num_args: info.arg_count.unwrap_or(0) as u32,
            _native_program: Some(own_program),
            others: Vec::new(),
        };
        let h = register(Object::Kernel(Arc::new(k)));
        // SAFETY: non-null and writable (module contract).
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `urEventCreateWithNativeHandle`. Native handle 0 (UR's conformance
/// suite makes its placeholder events this way) gives an event of the
/// context that is complete from the start and has no runtime event
/// behind it: it can be retained, released, queried (status `COMPLETE`,
/// no profiling information), waited for and put in wait lists, where it
/// orders nothing.
///
/// Any other handle is a backend event (an OpenCL `cl_event` a program got
/// from `urEventGetNativeHandle` or made itself) of the context's backend
/// context, which the runtime adopts (`Runtime::create_event_from_native`):
/// the event is waited for, queried and put in wait lists as a command's
/// event is; it has no profiling information and reports
/// `UR_COMMAND_EVENTS_WAIT` as its command. Its queue
/// (`UR_EVENT_INFO_COMMAND_QUEUE`) is a new queue handle over the backend
/// queue the backend reports for it (OpenCL: `CL_EVENT_COMMAND_QUEUE`),
/// held by the event and released with it; null for an event of no queue
/// (a user event) or of a queue that cannot be adopted (out of order).
/// `pProperties->isNativeHandleOwned` passes the caller's reference to it
/// (released with the event's last release); without properties, or not
/// owned, the runtime takes a reference of its own. An event of another backend context is
/// `INVALID_CONTEXT`; adapters that cannot adopt events (native, sim)
/// answer `UNSUPPORTED_FEATURE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEventCreateWithNativeHandle(
    native: ur_native_handle_t,
    ctx: ur_context_handle_t,
    props: *const ur_event_native_properties_t,
    out: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        let id = if native == 0 {
            None
        } else {
            // SAFETY: null or a live properties struct (module contract).
            let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
            // SAFETY: a live backend event (module contract).
            Some(unsafe { adopt(&c, native, owned) }?)
        };
        let context = id.map_or(c.id, |(_, part)| part);
        let queue = id.map_or(std::ptr::null_mut(), |(e, _)| adopted_event_queue(&c, ctx, e));
        let h = register(Object::Event(Event {
            id: id.map(|(e, _)| e),
            context: (ctx, context),
            queue,
            command: UR_COMMAND_EVENTS_WAIT,
            holds_queue: !queue.is_null(),
            host_ts: 0,
        }));
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h) }
    })
}

/// `urMemGetNativeHandle`: the backend's memory object of a buffer or
/// sub-buffer of a one-device context (OpenCL: its `cl_mem`), whichever
/// device is named (the device handle is optional, checked when given). A
/// buffer of a context of several devices lives in the memory manager, one
/// allocation per device and none of them the buffer: `UNSUPPORTED_FEATURE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemGetNativeHandle(
    m: ur_mem_handle_t,
    dev: ur_device_handle_t,
    out: *mut ur_native_handle_t,
) -> ur_result_t {
    entry(|| {
        let mem = get::<Arc<Mem>, _>(m)?;
        if !dev.is_null() {
            get::<DeviceId, _>(dev)?;
        }
        match mem.backing {
            // SAFETY: module contract.
            Backing::Direct(id) => unsafe { answer(NativeOf::Buffer(id), out) },
            Backing::Managed { .. } => Err(CapiError::Unsupported),
        }
    })
}

/// `urMemBufferCreateWithNativeHandle`: a buffer of context `ctx` over the
/// backend's memory object `native` (OpenCL: a `cl_mem` buffer of the
/// context's `cl_context`, else `INVALID_CONTEXT`), with its size and
/// access flags, placed for the context's device. With
/// `isNativeHandleOwned` the caller's reference passes to the buffer
/// (released with it); without properties, or not owned, the runtime takes
/// a reference of its own. A context of several devices keeps its buffers
/// in the memory manager, which makes its own allocations, and adapters
/// that cannot adopt memory (native, sim) answer `UNSUPPORTED_FEATURE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urMemBufferCreateWithNativeHandle(
    native: ur_native_handle_t,
    ctx: ur_context_handle_t,
    props: *const ur_mem_native_properties_t,
    out: *mut ur_mem_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        if crate::managed::manager(&c)?.is_some() {
            return Err(CapiError::Unsupported);
        }
        // SAFETY: null or a live properties struct (module contract).
        let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
        // SAFETY: a live backend memory object (module contract).
        let handle = unsafe { NativeHandle::new(native as u64) };
        let rt = &state().rt;
        let id = rt.create_buffer_from_native(c.id, handle, owned)?;
        let info = rt.buffer_info(id)?;
        let h = register(Object::Mem(Arc::new(Mem {
            backing: Backing::Direct(id),
            context: (ctx, c),
            size: info.size,
            flags: crate::memory::ur_access(info.flags),
            host_ptr: 0,
            parent: None,
        })));
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h) }
    })
}

/// `urContextCreateWithNativeHandle`: a context over the backend context
/// `native` (OpenCL: a `cl_context`) and the `n` devices given, each one of
/// its devices (`INVALID_VALUE` otherwise, and for an empty list: the
/// devices are not guessed from the native handle), all of one runtime
/// platform. Its native handle is `native` again. With
/// `isNativeHandleOwned` the caller's reference passes to the context
/// (released with it); without properties, or not owned, the runtime takes
/// a reference of its own. Adapters that cannot adopt contexts (native,
/// sim) answer `UNSUPPORTED_FEATURE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urContextCreateWithNativeHandle(
    native: ur_native_handle_t,
    adapter: ur_adapter_handle_t,
    n: u32,
    devices: *const ur_device_handle_t,
    props: *const ur_context_native_properties_t,
    out: *mut ur_context_handle_t,
) -> ur_result_t {
    entry(|| {
        crate::handles::lookup(adapter, crate::conv::Kind::Adapter)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        if n == 0 || devices.is_null() {
            return Err(CapiError::InvalidValue);
        }
        // SAFETY: `devices` holds `n` handles (module contract).
        let hs = unsafe { std::slice::from_raw_parts(devices, n as usize) };
        let ids = hs
            .iter()
            .map(|h| get::<DeviceId, _>(*h))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: null or a live properties struct (module contract).
        let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
        // SAFETY: a live backend context (module contract).
        let handle = unsafe { NativeHandle::new(native as u64) };
        let c = state().rt.create_context_from_native(&ids, handle, owned)?;
        let h = crate::context::register_context(hs, vec![(c, ids)]).inspect_err(|_| {
            let _ = state().rt.release_context(c);
        })?;
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h) }
    })
}

/// `urQueueCreateWithNativeHandle`: a queue of context `ctx` over the
/// backend queue `native` (OpenCL: an in-order `cl_command_queue` of the
/// context's `cl_context`), on `dev`, or with no device given on the
/// context's device the backend queue runs on. Commands on it run in order
/// as on any queue of ours; it reports no profiling. With
/// `isNativeHandleOwned` the caller's reference passes to the queue
/// (released with it); without properties, or not owned, the runtime takes
/// a reference of its own. A queue of another backend context is
/// `INVALID_CONTEXT`, an out-of-order one and adapters that cannot adopt
/// queues (native, sim) `UNSUPPORTED_FEATURE`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urQueueCreateWithNativeHandle(
    native: ur_native_handle_t,
    ctx: ur_context_handle_t,
    dev: ur_device_handle_t,
    props: *const ur_queue_native_properties_t,
    out: *mut ur_queue_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        if out.is_null() {
            return Err(CapiError::NullPointer);
        }
        if !dev.is_null() {
            get::<DeviceId, _>(dev)?;
        }
        // SAFETY: null or a live properties struct (module contract).
        let owned = !props.is_null() && unsafe { (*props).isNativeHandleOwned };
        // SAFETY: a live backend queue (module contract).
        let h = unsafe { adopt_queue(&c, ctx, dev, native, owned) }?;
        // SAFETY: non-null and writable (module contract).
        unsafe { put_required(out, h) }
    })
}

/// A new queue handle of context `c` (handle `ctx`) over backend queue
/// `native`, on `dev`, or with `dev` null on the context's device the
/// backend queue runs on (the first whose adapter takes it).
///
/// # Safety
///
/// `native` names a live backend queue.
unsafe fn adopt_queue(
    c: &Context,
    ctx: ur_context_handle_t,
    dev: ur_device_handle_t,
    native: ur_native_handle_t,
    owned: bool,
) -> Result<ur_queue_handle_t, CapiError> {
    let devices = if dev.is_null() { c.devices.clone() } else { vec![dev] };
    let rt = &state().rt;
    let mut last = CapiError::InvalidValue;
    for d in devices {
        let id = get::<DeviceId, _>(d)?;
        let part = c.part_of(id);
        // SAFETY: a live backend queue (the caller's promise).
        let handle = unsafe { NativeHandle::new(native as u64) };
        match rt.create_queue_from_native(part, id, handle, owned) {
            Ok(q) => {
                return Ok(register(Object::Queue(Queue {
                    id: q,
                    context: (ctx, part),
                    device: d,
                    flags: 0,
                })))
            }
            Err(e) => last = e.into(),
        }
    }
    Err(last)
}

/// The queue handle of an adopted event: a new one over the backend queue
/// the backend reports for it, or null where it reports none (a user
/// event) or the queue cannot be adopted (an out-of-order one).
fn adopted_event_queue(c: &Context, ctx: ur_context_handle_t, event: ur_api::EventId) -> ur_queue_handle_t {
    let made = state()
        .rt
        .native_handle(NativeOf::EventQueue(event))
        .map_err(CapiError::from)
        // SAFETY: the live event's own backend queue, which the backend
        // keeps alive while the event is; adopting it takes a reference.
        .and_then(|q| unsafe { adopt_queue(c, ctx, std::ptr::null_mut(), q.raw() as ur_native_handle_t, false) });
    made.unwrap_or_else(|err| {
        tracing::debug!(error = ?err, "an adopted event's queue is not reported");
        std::ptr::null_mut()
    })
}

/// Adopts backend event `native` into the runtime context of `c` it
/// belongs to: its one part, or (a context over several runtimes) the
/// first part whose adapter neither refuses the event's context nor
/// cannot adopt events. Answers the event and that part.
///
/// # Safety
///
/// `native` names a live backend event (module contract).
unsafe fn adopt(
    c: &Context,
    native: ur_native_handle_t,
    owned: bool,
) -> Result<(ur_api::EventId, ContextId), CapiError> {
    let rt = &state().rt;
    let mut last = None;
    for &(part, _) in &c.parts {
        // SAFETY: a live backend event (the caller's promise).
        let handle = unsafe { NativeHandle::new(native as u64) };
        match rt.create_event_from_native(part, handle, owned) {
            Ok(e) => return Ok((e, part)),
            Err(err @ (Error::WrongContext { .. } | Error::Unsupported { .. })) => last = Some(err),
            Err(err) => return Err(err.into()),
        }
    }
    Err(last.map_or(CapiError::Unsupported, CapiError::from))
}
