//! Kernel entry points: kernels of built programs, their queries, and the
//! launch (`urEnqueueKernelLaunchWithArgsExp`, UR 0.12's one launch entry
//! point, which carries the arguments with the launch).
//!
//! Arguments map to the runtime's [`ArgValue`]s: by-value bytes, USM
//! pointers (resolved against the queue's context: a pointer into a live
//! allocation; null is a null pointer), memory objects (a buffer of a
//! one-device context as it is; a buffer of a multi-device context made
//! current at the queue's location by the context's memory manager for the
//! access the launch declares, and handed back after it, as every other
//! command does, [`crate::managed`]) and local memory sizes. Samplers are
//! refused (no images).
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`], and UR's launch contract: the argument array
//! holds `numArgs` entries whose by-value pointers are valid for their
//! sizes during the call; size arrays hold `workDim` entries.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use ur_api::{ArgValue, DeviceId, KernelGroupInfo, NdRange, ShortList, UsmPtr};
use ur_memory_manager::Access;

use crate::conv::CapiError;
use crate::handles::{self, ref_count, register};
use crate::handles::{get, get2};
use crate::info::{entry, query, Out};
use crate::managed::Prepared;
use crate::objects::{Kind, Mem, Object, Queue};
use crate::program::Program;
use crate::queue::{deps, done};
use crate::state::state;
use crate::sys::*;

pub use crate::objects::Kernel;

/// `urKernelCreate`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelCreate(
    p: ur_program_handle_t,
    name: *const c_char,
    out: *mut ur_kernel_handle_t,
) -> ur_result_t {
    entry(|| {
        let prog = get::<Arc<Program>, _>(p)?;
        if name.is_null() || out.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: NUL-terminated by the module contract.
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| CapiError::InvalidValue)?;
        let rt = &state().rt;
        // The kernel in the program of every runtime context (one, except
        // in a context over several runtimes); all released on a failure.
        let mut made: Vec<(ur_api::ContextId, ur_api::KernelId)> = Vec::new();
        let found = prog.context.1.parts.iter().try_for_each(|(part, _)| {
            made.push((*part, rt.create_kernel(prog.built_for(*part)?, name)?));
            Ok::<_, CapiError>(())
        });
        let num_args = found.and_then(|()| Ok(rt.kernel_info(made[0].1)?.arg_count.unwrap_or(0) as u32));
        let num_args = match num_args {
            Ok(n) => n,
            Err(e) => {
                for (_, k) in made {
                    let _ = rt.release_kernel(k);
                }
                return Err(e);
            }
        };
        let id = made[0].1;
        let others = made.split_off(1);
        let k = Kernel {
            id,
            program: (p, prog),
            name: name.to_owned(),
            num_args,
            _native_program: None,
            others,
        };
        let h = register(Object::Kernel(Arc::new(k)));
        // SAFETY: non-null and writable by the module contract.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// `urKernelRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelRetain(k: ur_kernel_handle_t) -> ur_result_t {
    entry(|| handles::retain(k, Kind::Kernel))
}

/// `urKernelRelease`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelRelease(k: ur_kernel_handle_t) -> ur_result_t {
    entry(|| handles::release(k, Kind::Kernel).map(drop))
}

/// `urKernelGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelGetInfo(
    k: ur_kernel_handle_t,
    prop: ur_kernel_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(k, (size, value, size_ret), |kernel: Arc<Kernel>, out| match prop {
            UR_KERNEL_INFO_FUNCTION_NAME => out.string(&kernel.name),
            UR_KERNEL_INFO_NUM_ARGS => out.value(kernel.num_args),
            UR_KERNEL_INFO_REFERENCE_COUNT => out.value(ref_count(k, Kind::Kernel)?),
            UR_KERNEL_INFO_CONTEXT => out.value(kernel.program.1.context.0),
            UR_KERNEL_INFO_PROGRAM => out.value(kernel.program.0),
            UR_KERNEL_INFO_ATTRIBUTES => out.string(""),
            _ => Err(CapiError::UnsupportedEnumeration),
        })
    }
}

/// The kernel's figures on device `d` of its context.
fn group_info(k: ur_kernel_handle_t, d: ur_device_handle_t) -> Result<KernelGroupInfo, CapiError> {
    let (kernel, dev) = get2::<Arc<Kernel>, DeviceId, _, _>(k, d)?;
    if !kernel.program.1.context.1.devices.contains(&d) {
        return Err(CapiError::Invalid(Kind::Device));
    }
    let part = kernel.program.1.context.1.part_of(dev);
    Ok(state().rt.kernel_group_info(kernel.id_for(part), dev)?)
}

/// `urKernelGetGroupInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelGetGroupInfo(
    k: ur_kernel_handle_t,
    d: ur_device_handle_t,
    prop: ur_kernel_group_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        let g = group_info(k, d)?;
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        match prop {
            UR_KERNEL_GROUP_INFO_WORK_GROUP_SIZE => out.value(g.work_group_size),
            UR_KERNEL_GROUP_INFO_COMPILE_WORK_GROUP_SIZE => out.array(&g.compile_work_group_size),
            UR_KERNEL_GROUP_INFO_LOCAL_MEM_SIZE => out.value(g.local_mem_size as usize),
            UR_KERNEL_GROUP_INFO_PREFERRED_WORK_GROUP_SIZE_MULTIPLE => out.value(g.preferred_work_group_size_multiple),
            UR_KERNEL_GROUP_INFO_PRIVATE_MEM_SIZE => out.value(g.private_mem_size as usize),
            // No `max_work_group_size` kernel attribute is modelled: zeros,
            // as the spec says for kernels without one.
            UR_KERNEL_GROUP_INFO_COMPILE_MAX_WORK_GROUP_SIZE => out.array(&[0usize; 3]),
            UR_KERNEL_GROUP_INFO_COMPILE_MAX_LINEAR_WORK_GROUP_SIZE => out.value(0usize),
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// `urKernelGetSubGroupInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelGetSubGroupInfo(
    k: ur_kernel_handle_t,
    d: ur_device_handle_t,
    prop: ur_kernel_sub_group_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        let g = group_info(k, d)?;
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        match prop {
            UR_KERNEL_SUB_GROUP_INFO_MAX_SUB_GROUP_SIZE => out.value(g.max_sub_group_size),
            UR_KERNEL_SUB_GROUP_INFO_MAX_NUM_SUB_GROUPS => out.value(g.max_num_sub_groups),
            UR_KERNEL_SUB_GROUP_INFO_COMPILE_NUM_SUB_GROUPS => out.value(g.compile_num_sub_groups),
            UR_KERNEL_SUB_GROUP_INFO_SUB_GROUP_SIZE_INTEL => out.value(g.compile_sub_group_size),
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// `urKernelSetExecInfo`: the hints are accepted. Indirect USM access
/// needs nothing from the backends here (USM of a context is reachable
/// from every kernel of it on the devices the project drives); the cache
/// configuration is a GPU tuning hint.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urKernelSetExecInfo(
    k: ur_kernel_handle_t,
    prop: ur_kernel_exec_info_t,
    _size: usize,
    _props: *const ur_kernel_exec_info_properties_t,
    value: *const c_void,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Kernel>, _>(k)?;
        if value.is_null() {
            return Err(CapiError::NullPointer);
        }
        match prop {
            UR_KERNEL_EXEC_INFO_USM_INDIRECT_ACCESS
            | UR_KERNEL_EXEC_INFO_USM_PTRS
            | UR_KERNEL_EXEC_INFO_CACHE_CONFIG => Ok(()),
            _ => Err(CapiError::InvalidValue),
        }
    })
}

/// The work sizes of a launch.
///
/// # Safety
///
/// Each non-null pointer holds `dims` entries.
unsafe fn nd_range(
    dims: u32,
    offset: *const usize,
    global: *const usize,
    local: *const usize,
) -> Result<NdRange, CapiError> {
    if !(1..=3).contains(&dims) {
        return Err(CapiError::WorkDimension);
    }
    if global.is_null() {
        return Err(CapiError::NullPointer);
    }
    let read = |p: *const usize, unused: usize| -> [usize; 3] {
        let mut v = [unused; 3];
        for (i, x) in v.iter_mut().take(dims as usize).enumerate() {
            // SAFETY: `dims` entries (caller's promise).
            *x = unsafe { p.add(i).read() };
        }
        v
    };
    // A global size of 0 is an empty launch, which succeeds and runs
    // nothing (see `ur_api::NdRange::is_empty`): UR's OpenCL adapter passes
    // it to OpenCL 2.1+, which has that rule, and dpnp launches such ranges
    // for empty arrays.
    Ok(NdRange {
        dims,
        global: read(global, 1),
        local: (!local.is_null()).then(|| read(local, 1)),
        offset: if offset.is_null() { [0; 3] } else { read(offset, 0) },
    })
}

/// What a memory-object argument's flags let the kernel do to it.
fn mem_access(flags: ur_mem_flags_t) -> Access {
    if flags & UR_MEM_FLAG_READ_ONLY != 0 {
        Access::Read
    } else {
        Access::ReadWrite
    }
}

/// Eight zero bytes: a null pointer or memory object, which OpenCL and UR
/// accept for any pointer parameter.
static NULL_ARG: [u8; 8] = [0; 8];

/// `urEnqueueKernelLaunchWithArgsExp`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urEnqueueKernelLaunchWithArgsExp(
    qh: ur_queue_handle_t,
    kh: ur_kernel_handle_t,
    dims: u32,
    offset: *const usize,
    global: *const usize,
    local: *const usize,
    num_args: u32,
    args: *const ur_exp_kernel_arg_properties_t,
    launch: *const ur_kernel_launch_ext_properties_t,
    n: u32,
    wl: *const ur_event_handle_t,
    ev: *mut ur_event_handle_t,
) -> ur_result_t {
    entry(|| {
        let (q, k) = get2::<Queue, Arc<Kernel>, _, _>(qh, kh)?;
        if k.program.1.context.0 != q.context.0 {
            return Err(CapiError::Invalid(Kind::Context));
        }
        // SAFETY: module contract.
        if !launch.is_null() && unsafe { (*launch).flags } != 0 {
            return Err(CapiError::Unsupported);
        }
        // SAFETY: module contract.
        let range = unsafe { nd_range(dims, offset, global, local) }?;
        if num_args > 0 && args.is_null() {
            return Err(CapiError::NullPointer);
        }
        let given: &[ur_exp_kernel_arg_properties_t] = if num_args == 0 {
            &[]
        } else {
            // SAFETY: `num_args` entries (module contract).
            unsafe { std::slice::from_raw_parts(args, num_args as usize) }
        };
        // SAFETY: module contract.
        let mut p = Prepared::new(unsafe { deps(&q, n, wl) }?);
        let mut values: ShortList<Option<ArgValue<'_>>> = ShortList::from_elem(None, k.num_args.max(num_args) as usize);
        for a in given {
            let slot = values.get_mut(a.index as usize).ok_or(CapiError::ArgIndex)?;
            // SAFETY: the union member read is the one `type_` names (module contract).
            *slot = Some(unsafe { arg(&q, &mut p, a) }?);
        }
        let values = values
            .into_iter()
            .collect::<Option<ShortList<_>>>()
            .ok_or(CapiError::Api(ur_api::Error::InvalidKernelArgs(
                "an argument was not given".into(),
            )))?;
        let id = state()
            .rt
            .enqueue_launch(q.id, k.id_for(q.context.1), &range, &values, &p.wait)?;
        p.finish(id);
        // SAFETY: module contract for `ev`.
        unsafe { done(qh, &q, id, UR_COMMAND_KERNEL_LAUNCH, false, ev) }
    })
}

/// One argument as the runtime takes it.
///
/// # Safety
///
/// `a.value` holds the member `a.type_` names, valid as the module says.
unsafe fn arg<'a>(
    q: &Queue,
    p: &mut Prepared,
    a: &'a ur_exp_kernel_arg_properties_t,
) -> Result<ArgValue<'a>, CapiError> {
    Ok(match a.type_ {
        UR_EXP_KERNEL_ARG_TYPE_VALUE => {
            // SAFETY: the value member (caller's promise).
            let v = unsafe { a.value.value };
            if v.is_null() || a.size == 0 {
                return Err(CapiError::ArgSize);
            }
            // SAFETY: `size` readable bytes for the call (module contract).
            ArgValue::Scalar(unsafe { std::slice::from_raw_parts(v.cast::<u8>(), a.size) })
        }
        UR_EXP_KERNEL_ARG_TYPE_POINTER => {
            // SAFETY: the pointer member (caller's promise).
            let ptr = unsafe { a.value.pointer };
            if ptr.is_null() {
                ArgValue::Scalar(&NULL_ARG)
            } else {
                ArgValue::Usm(UsmPtr(ptr as u64))
            }
        }
        UR_EXP_KERNEL_ARG_TYPE_MEM_OBJ => {
            // SAFETY: the memory-object member (caller's promise).
            let t = unsafe { a.value.memObjTuple };
            if t.hMem.is_null() {
                return Ok(ArgValue::Scalar(&NULL_ARG));
            }
            let m = get::<Arc<Mem>, _>(t.hMem)?;
            if m.context.0 != q.context.0 {
                return Err(CapiError::Invalid(Kind::Context));
            }
            let (id, base) = p.operand(q, &m, mem_access(t.flags), 0..m.size)?;
            if base != 0 {
                // A sub-buffer of a managed buffer is a range of its
                // parent's logical buffer; a kernel needs its own object.
                return Err(CapiError::Unsupported);
            }
            ArgValue::Buffer(id)
        }
        UR_EXP_KERNEL_ARG_TYPE_LOCAL => ArgValue::Local(a.size),
        UR_EXP_KERNEL_ARG_TYPE_SAMPLER => return Err(CapiError::Unsupported),
        _ => return Err(CapiError::InvalidValue),
    })
}
