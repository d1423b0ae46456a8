//! Program entry points: SPIR-V programs created, built (or compiled and
//! linked), queried and released.
//!
//! A UR program is created from its intermediate language and built later,
//! with options; the project's runtime builds a program in one step
//! (`Runtime::create_program`). So a [`Program`] keeps its SPIR-V and, once
//! built, the runtime program; a failed build keeps the backend's log for
//! `urProgramGetBuildInfo(LOG)`. Building is for every device of the
//! context (a device that cannot take SPIR-V fails the build with a log
//! that names it, not the launch).
//!
//! `urProgramCompile` records its options and `urProgramLink` builds a new
//! program from the modules of the programs it links, with the first
//! one's compile options and the link options: one module is built as it
//! is (the case libsycl uses most), several are linked by the adapter
//! (`ProgramSource::SpirVModules`; libsycl links device images that import
//! each other's functions, as oneMKL's do).
//!
//! # Safety (all entry points of this module)
//!
//! As in [`crate::platform`]: pointer arguments are null or valid for what
//! the UR specification says each is for (IL of `length` bytes, arrays of
//! the given counts, NUL-terminated option strings); handles are looked up,
//! never read.

#![allow(non_snake_case)] // reason: entry points carry their C names.

use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{Error, ProgramId, ProgramSource};

use crate::conv::CapiError;
use crate::handles::get;
use crate::handles::{self, ref_count, register};
use crate::info::{entry, put_required, query, Out};
use crate::objects::{Context, Kind, Object};
use crate::state::state;
use crate::sys::*;

/// The first word of every SPIR-V module.
const SPIRV_MAGIC: u32 = 0x0723_0203;

pub use crate::objects::{Build, Program};

impl Program {
    /// The runtime program, or `INVALID_PROGRAM_EXECUTABLE` when the
    /// program was not built.
    pub fn built(&self) -> Result<ProgramId, CapiError> {
        self.build.lock().id.ok_or(CapiError::NotBuilt)
    }

    /// The module built in each runtime context of the program's context
    /// (one, except in a context over several runtimes), in the order of
    /// its parts; a part that fails releases those built before it, and
    /// the log names the runtime's devices.
    fn build_parts(&self, options: &str) -> ur_api::Result<Vec<(ur_api::ContextId, ProgramId)>> {
        let rt = &state().rt;
        let source = match &self.modules[..] {
            [one] => ProgramSource::SpirV(one.to_vec()),
            many => ProgramSource::SpirVModules(many.iter().map(|m| m.to_vec()).collect()),
        };
        let mut built = Vec::new();
        for (part, devices) in &self.context.1.parts {
            match rt.create_program(*part, &source, options) {
                Ok(id) => built.push((*part, id)),
                Err(e) => {
                    for (_, id) in built {
                        let _ = rt.release_program(id);
                    }
                    if !self.context.1.is_split() {
                        return Err(e);
                    }
                    let names: Vec<String> = devices
                        .iter()
                        .filter_map(|d| rt.device_info(*d).ok().map(|i| i.name))
                        .collect();
                    let why = match e {
                        Error::ProgramBuild { log } => log,
                        other => other.to_string(),
                    };
                    return Err(Error::ProgramBuild {
                        log: format!("the runtime of {} did not build the module: {why}", names.join(", ")),
                    });
                }
            }
        }
        Ok(built)
    }

    /// The runtime program built in runtime context `ctx` of the program's
    /// context.
    pub fn built_for(&self, ctx: ur_api::ContextId) -> Result<ProgramId, CapiError> {
        let b = self.build.lock();
        let first = b.id.ok_or(CapiError::NotBuilt)?;
        Ok(b.others.iter().find(|(c, _)| *c == ctx).map_or(first, |(_, p)| *p))
    }

    /// Builds (or rebuilds) the program for every device of its context.
    fn build_with(&self, options: &str) -> Result<(), CapiError> {
        let rt = &state().rt;
        let mut b = self.build.lock();
        if let Some(old) = b.id.take() {
            rt.release_program(old)?;
        }
        for (_, old) in b.others.drain(..) {
            rt.release_program(old)?;
        }
        b.options = options.to_owned();
        b.compiled = false;
        match self.build_parts(options) {
            Ok(mut ids) => {
                b.id = Some(ids.remove(0).1);
                b.others = ids;
                b.failed = false;
                b.log.clear();
                Ok(())
            }
            Err(e) => {
                b.failed = true;
                b.log = match &e {
                    Error::ProgramBuild { log } => log.clone(),
                    other => other.to_string(),
                };
                tracing::debug!(log = %b.log, "program build failed");
                Err(match e {
                    // A device of the context cannot take SPIR-V: the build
                    // fails (with that reason in the log), it is not a
                    // missing feature of the library.
                    Error::Unsupported { .. } => CapiError::BuildFailed,
                    other => other.into(),
                })
            }
        }
    }
}

/// An option string: null is empty.
///
/// # Safety
///
/// `p` is null or a NUL-terminated string.
unsafe fn options<'a>(p: *const c_char) -> Result<&'a str, CapiError> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: NUL-terminated by the caller's promise.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| CapiError::InvalidValue)
}

/// A new program over `il`, checked to be a SPIR-V module.
fn create(ctx: ur_context_handle_t, il: &[u8], out: *mut ur_program_handle_t) -> Result<(), CapiError> {
    let c = get::<Arc<Context>, _>(ctx)?;
    if out.is_null() {
        return Err(CapiError::NullPointer);
    }
    let magic = il.get(..4).map(|m| u32::from_le_bytes([m[0], m[1], m[2], m[3]]));
    if il.len() % 4 != 0 || magic != Some(SPIRV_MAGIC) {
        return Err(CapiError::InvalidBinary);
    }
    let p = Program {
        context: (ctx, c),
        modules: [il.into()].into(),
        build: Mutex::new(Build::default()),
    };
    let h = register(Object::Program(Arc::new(p)));
    // SAFETY: non-null and writable by the caller's promise.
    unsafe { out.write(h) };
    Ok(())
}

/// `urProgramCreateWithIL`: a SPIR-V module.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramCreateWithIL(
    ctx: ur_context_handle_t,
    il: *const c_void,
    length: usize,
    _props: *const ur_program_properties_t,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Context>, _>(ctx)?;
        if il.is_null() {
            return Err(CapiError::NullPointer);
        }
        if length == 0 {
            return Err(CapiError::InvalidSize);
        }
        // SAFETY: `length` readable bytes by the module contract.
        let il = unsafe { std::slice::from_raw_parts(il.cast::<u8>(), length) };
        create(ctx, il, out)
    })
}

/// `urProgramCreateWithBinary`: a SPIR-V module given as the binary of
/// every device (what a program's `BINARIES` answer is here); device-native
/// binaries are `INVALID_BINARY`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramCreateWithBinary(
    ctx: ur_context_handle_t,
    n: u32,
    devices: *mut ur_device_handle_t,
    sizes: *mut usize,
    binaries: *mut *const u8,
    _props: *const ur_program_properties_t,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Context>, _>(ctx)?;
        if devices.is_null() || sizes.is_null() || binaries.is_null() {
            return Err(CapiError::NullPointer);
        }
        if n == 0 {
            return Err(CapiError::InvalidValue);
        }
        // SAFETY: `n` entries each by the module contract.
        let (sizes, binaries) = unsafe {
            (
                std::slice::from_raw_parts(sizes, n as usize),
                std::slice::from_raw_parts(binaries, n as usize),
            )
        };
        if binaries.iter().any(|b| b.is_null()) {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: each binary holds its size in bytes (module contract).
        let first = unsafe { std::slice::from_raw_parts(binaries[0], sizes[0]) };
        create(ctx, first, out)
    })
}

/// `urProgramBuild`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramBuild(
    ctx: ur_context_handle_t,
    p: ur_program_handle_t,
    opts: *const c_char,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Context>, _>(ctx)?;
        let prog = get::<Arc<Program>, _>(p)?;
        if prog.context.0 != ctx {
            return Err(CapiError::Invalid(Kind::Context));
        }
        // SAFETY: module contract.
        prog.build_with(unsafe { options(opts) }?)
    })
}

/// The devices of an `*Exp` build, checked to be devices of the program's
/// context. The build is for every device of the context (one runtime
/// program serves them all).
///
/// # Safety
///
/// `devices` is null or holds `n` handles.
unsafe fn exp_devices(prog: &Program, n: u32, devices: *const ur_device_handle_t) -> Result<(), CapiError> {
    if n == 0 {
        return Err(CapiError::InvalidSize);
    }
    if devices.is_null() {
        return Err(CapiError::NullPointer);
    }
    // SAFETY: `n` handles (caller's promise).
    for d in unsafe { std::slice::from_raw_parts(devices, n as usize) } {
        if !prog.context.1.devices.contains(d) {
            return Err(CapiError::Invalid(Kind::Device));
        }
    }
    Ok(())
}

/// `urProgramBuildExp`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramBuildExp(
    p: ur_program_handle_t,
    n: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    opts: *const c_char,
) -> ur_result_t {
    entry(|| {
        let prog = get::<Arc<Program>, _>(p)?;
        // SAFETY: module contract.
        unsafe { exp_devices(&prog, n, devices) }?;
        // SAFETY: module contract.
        prog.build_with(unsafe { options(opts) }?)
    })
}

/// `urProgramCompile`: records the options; the module is built at link.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramCompile(
    ctx: ur_context_handle_t,
    p: ur_program_handle_t,
    opts: *const c_char,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Context>, _>(ctx)?;
        let prog = get::<Arc<Program>, _>(p)?;
        // SAFETY: module contract.
        let o = unsafe { options(opts) }?;
        compile(&prog, o)
    })
}

fn compile(prog: &Program, options: &str) -> Result<(), CapiError> {
    let mut b = prog.build.lock();
    b.options = options.to_owned();
    b.compiled = true;
    b.failed = false;
    Ok(())
}

/// `urProgramCompileExp`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramCompileExp(
    p: ur_program_handle_t,
    n: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    opts: *const c_char,
) -> ur_result_t {
    entry(|| {
        let prog = get::<Arc<Program>, _>(p)?;
        // SAFETY: module contract.
        unsafe { exp_devices(&prog, n, devices) }?;
        // SAFETY: module contract.
        compile(&prog, unsafe { options(opts) }?)
    })
}

/// Links `n` programs into a new one (built).
///
/// # Safety
///
/// `programs` holds `n` handles; `opts` is null or NUL-terminated; `out` is
/// writable.
unsafe fn link(
    ctx: ur_context_handle_t,
    n: u32,
    programs: *const ur_program_handle_t,
    opts: *const c_char,
    out: *mut ur_program_handle_t,
) -> Result<(), CapiError> {
    let c = get::<Arc<Context>, _>(ctx)?;
    if programs.is_null() || out.is_null() {
        return Err(CapiError::NullPointer);
    }
    if n == 0 {
        return Err(CapiError::InvalidSize);
    }
    // SAFETY: `n` handles (caller's promise).
    let hs = unsafe { std::slice::from_raw_parts(programs, n as usize) };
    let progs = hs
        .iter()
        .map(|h| get::<Arc<Program>, _>(*h))
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: caller's promise.
    let link_opts = unsafe { options(opts) }?;
    let compile_opts = progs[0].build.lock().options.clone();
    let all = [compile_opts.as_str(), link_opts]
        .iter()
        .filter(|s| !s.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ");
    let p = Arc::new(Program {
        context: (ctx, c),
        modules: progs.iter().flat_map(|p| p.modules.iter().cloned()).collect(),
        build: Mutex::new(Build::default()),
    });
    let built = p.build_with(&all);
    // The spec hands out the program even when linking fails, so its log
    // can be read.
    let h = register(Object::Program(p));
    // SAFETY: non-null and writable (caller's promise).
    unsafe { out.write(h) };
    built
}

/// `urProgramLink`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramLink(
    ctx: ur_context_handle_t,
    n: u32,
    programs: *const ur_program_handle_t,
    opts: *const c_char,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    // SAFETY: module contract.
    entry(|| unsafe { link(ctx, n, programs, opts, out) })
}

/// `urProgramLinkExp`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramLinkExp(
    ctx: ur_context_handle_t,
    n_devices: u32,
    devices: *mut ur_device_handle_t,
    _flags: ur_exp_program_flags_t,
    n: u32,
    programs: *const ur_program_handle_t,
    opts: *const c_char,
    out: *mut ur_program_handle_t,
) -> ur_result_t {
    entry(|| {
        let c = get::<Arc<Context>, _>(ctx)?;
        if n_devices == 0 {
            return Err(CapiError::InvalidSize);
        }
        if devices.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: `n_devices` handles (module contract).
        for d in unsafe { std::slice::from_raw_parts(devices, n_devices as usize) } {
            if !c.devices.contains(d) {
                return Err(CapiError::Invalid(Kind::Device));
            }
        }
        // SAFETY: module contract.
        unsafe { link(ctx, n, programs, opts, out) }
    })
}

/// `urProgramRetain`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramRetain(p: ur_program_handle_t) -> ur_result_t {
    entry(|| handles::retain(p, Kind::Program))
}

/// `urProgramRelease`: the runtime program goes with the last reference
/// (kernels hold their program).
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramRelease(p: ur_program_handle_t) -> ur_result_t {
    entry(|| handles::release(p, Kind::Program).map(drop))
}

/// `urProgramSetSpecializationConstants`: the project's program formats
/// carry no specialization constants, and devices answer
/// `PROGRAM_SET_SPECIALIZATION_CONSTANTS` false, so a caller that sets some
/// anyway learns it here.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramSetSpecializationConstants(
    p: ur_program_handle_t,
    n: u32,
    specs: *const ur_specialization_constant_info_t,
) -> ur_result_t {
    entry(|| {
        get::<Arc<Program>, _>(p)?;
        if specs.is_null() {
            return Err(CapiError::NullPointer);
        }
        if n == 0 {
            return Err(CapiError::InvalidSize);
        }
        Err(CapiError::Unsupported)
    })
}

/// `urProgramGetInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramGetInfo(
    p: ur_program_handle_t,
    prop: ur_program_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    // SAFETY: the info outputs follow the module contract.
    unsafe {
        query(p, (size, value, size_ret), |prog: Arc<Program>, out| {
            let devices = &prog.context.1.devices;
            match prop {
                UR_PROGRAM_INFO_REFERENCE_COUNT => out.value(ref_count(p, Kind::Program)?),
                UR_PROGRAM_INFO_CONTEXT => out.value(prog.context.0),
                UR_PROGRAM_INFO_NUM_DEVICES => out.value(devices.len() as u32),
                UR_PROGRAM_INFO_DEVICES => out.array(devices),
                // A linked program was made from no one module.
                UR_PROGRAM_INFO_IL => match &prog.modules[..] {
                    [one] => out.bytes(one),
                    _ => out.bytes(&[]),
                },
                UR_PROGRAM_INFO_NUM_KERNELS => out.value(state().rt.kernel_names(prog.built()?)?.len()),
                UR_PROGRAM_INFO_KERNEL_NAMES => out.string(&state().rt.kernel_names(prog.built()?)?.join(";")),
                _ => Err(CapiError::UnsupportedEnumeration),
            }
        })
    }
}

/// `urProgramGetBuildInfo`.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramGetBuildInfo(
    p: ur_program_handle_t,
    d: ur_device_handle_t,
    prop: ur_program_build_info_t,
    size: usize,
    value: *mut c_void,
    size_ret: *mut usize,
) -> ur_result_t {
    entry(|| {
        let prog = get::<Arc<Program>, _>(p)?;
        get::<ur_api::DeviceId, _>(d)?;
        if !prog.context.1.devices.contains(&d) {
            return Err(CapiError::Invalid(Kind::Device));
        }
        // SAFETY: the info outputs follow the module contract.
        let out = unsafe { Out::new(size, value, size_ret) }?;
        let b = prog.build.lock();
        match prop {
            UR_PROGRAM_BUILD_INFO_STATUS => out.value(if b.failed {
                UR_PROGRAM_BUILD_STATUS_ERROR
            } else if b.id.is_some() || b.compiled {
                UR_PROGRAM_BUILD_STATUS_SUCCESS
            } else {
                UR_PROGRAM_BUILD_STATUS_NONE
            }),
            UR_PROGRAM_BUILD_INFO_OPTIONS => out.string(&b.options),
            UR_PROGRAM_BUILD_INFO_LOG => out.string(&b.log),
            UR_PROGRAM_BUILD_INFO_BINARY_TYPE => out.value(if b.id.is_some() {
                UR_PROGRAM_BINARY_TYPE_EXECUTABLE
            } else if b.compiled {
                UR_PROGRAM_BINARY_TYPE_COMPILED_OBJECT
            } else {
                UR_PROGRAM_BINARY_TYPE_NONE
            }),
            _ => Err(CapiError::UnsupportedEnumeration),
        }
    })
}

/// `urProgramGetFunctionPointer` is for device functions of built
/// programs; the project's programs expose kernels only. Answered
/// `UNSUPPORTED_FEATURE` after the handles are checked.
///
/// # Safety
///
/// See the module docs.
pub unsafe extern "C" fn urProgramGetFunctionPointer(
    d: ur_device_handle_t,
    p: ur_program_handle_t,
    name: *const c_char,
    out: *mut *mut c_void,
) -> ur_result_t {
    entry(|| {
        get::<ur_api::DeviceId, _>(d)?;
        get::<Arc<Program>, _>(p)?;
        if name.is_null() {
            return Err(CapiError::NullPointer);
        }
        // SAFETY: module contract.
        unsafe { put_required(out, std::ptr::null_mut()) }?;
        Err(CapiError::Unsupported)
    })
}
