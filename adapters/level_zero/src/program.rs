//! Programs (one SPIR-V module per device of the context), kernels, and
//! launches.

use std::ffi::CString;
use std::sync::Arc;

use level_zero_sys::result::{check, query, Described};
use level_zero_sys::sys;
use parking_lot::Mutex;
use ur_api::{Error, KernelInfo, NdRange, ProgramSource, Result};

use crate::conv;
use crate::device::{ContextInner, LevelZeroContext, Raw};
use crate::queue::{Held, LevelZeroEvent, LevelZeroQueue};
use crate::LevelZeroAdapter;
use ur_api::KernelArg;

#[derive(Debug)]
struct ProgramInner {
    ctx: Arc<ContextInner>,
    spirv: Vec<u8>,
    modules: Vec<(Raw<sys::ze_device_handle_t>, Raw<sys::ze_module_handle_t>)>,
}

impl Drop for ProgramInner {
    fn drop(&mut self) {
        for (_, m) in self.modules.drain(..) {
            // SAFETY: our module; its kernels hold this program, so none is left.
            let _ = unsafe { self.ctx.driver.ze.zeModuleDestroy(m.0) };
        }
    }
}

/// A program: a SPIR-V module built for every device of its context.
#[derive(Debug)]
pub struct LevelZeroProgram(Arc<ProgramInner>);

/// A kernel: one per device of the program's context, each with its
/// argument state behind a lock (arguments are set at launch).
#[derive(Debug)]
pub struct LevelZeroKernel {
    program: Arc<ProgramInner>,
    kernels: Vec<(Raw<sys::ze_device_handle_t>, Mutex<Raw<sys::ze_kernel_handle_t>>)>,
    info: KernelInfo,
}

impl Drop for LevelZeroKernel {
    fn drop(&mut self) {
        for (_, k) in self.kernels.drain(..) {
            // SAFETY: our kernel; launches that used it are appended already.
            let _ = unsafe { self.program.ctx.driver.ze.zeKernelDestroy(k.into_inner().0) };
        }
    }
}

fn build_log(ctx: &ContextInner, log: sys::ze_module_build_log_handle_t) -> String {
    let ze = ctx.driver.ze;
    let mut size = 0usize;
    let mut text = String::new();
    // SAFETY: a live log handle; a null buffer asks for the size.
    if check(unsafe { ze.zeModuleBuildLogGetString(log, &mut size, std::ptr::null_mut()) }).is_ok() && size > 0 {
        let mut buf = vec![0 as std::ffi::c_char; size];
        // SAFETY: a buffer of the size the driver asked for.
        if check(unsafe { ze.zeModuleBuildLogGetString(log, &mut size, buf.as_mut_ptr()) }).is_ok() {
            text = level_zero_sys::result::c_string(&buf);
        }
    }
    // SAFETY: our log handle, not used again.
    let _ = unsafe { ze.zeModuleBuildLogDestroy(log) };
    text
}

pub(crate) fn create_program(
    ctx: &LevelZeroContext,
    source: &ProgramSource,
    options: &str,
) -> Result<LevelZeroProgram> {
    let spirv = match source {
        ProgramSource::SpirV(spirv) => spirv,
        ProgramSource::SpirVModules(_) => {
            return Err(Error::unsupported(
                "programs linked from several SPIR-V modules on Level Zero",
            ))
        }
        other => {
            return Err(Error::unsupported(format!(
                "{:?} programs on Level Zero",
                other.format()
            )))
        }
    };
    let ze = ctx.0.driver.ze;
    let options = CString::new(options).map_err(|_| Error::invalid("build options contain a NUL byte"))?;
    let mut inner = ProgramInner {
        ctx: ctx.0.clone(),
        spirv: spirv.clone(),
        modules: Vec::new(),
    };
    for &dev in &ctx.0.devices {
        let desc = sys::ze_module_desc_t {
            format: sys::ZE_MODULE_FORMAT_IL_SPIRV,
            inputSize: spirv.len(),
            pInputModule: spirv.as_ptr(),
            pBuildFlags: options.as_ptr(),
            ..sys::ze_module_desc_t::described()
        };
        let (mut module, mut log) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: a live context and device, a described desc whose input
        // and options outlive the call, out pointers.
        let r = unsafe { ze.zeModuleCreate(ctx.0.handle.0, dev.0, &desc, &mut module, &mut log) };
        let text = if log.is_null() {
            String::new()
        } else {
            build_log(&ctx.0, log)
        };
        match check(r) {
            Ok(()) => inner.modules.push((dev, Raw(module))),
            Err(e) => {
                let log = if text.is_empty() { e.to_string() } else { text };
                return Err(Error::ProgramBuild { log });
            }
        }
    }
    Ok(LevelZeroProgram(Arc::new(inner)))
}

pub(crate) fn create_kernel(program: &LevelZeroProgram, name: &str) -> Result<LevelZeroKernel> {
    let p = &program.0;
    let ze = p.ctx.driver.ze;
    // The module's own entry points decide what exists (the null driver
    // makes a kernel of any name).
    let parsed = conv::spirv_arg_count(&p.spirv, name);
    let not_found = || Error::KernelNotFound { name: name.to_owned() };
    let cname = CString::new(name).map_err(|_| not_found())?;
    let mut kernels = Vec::new();
    let mut arg_count = parsed;
    for &(dev, module) in &p.modules {
        let desc = sys::ze_kernel_desc_t {
            pKernelName: cname.as_ptr(),
            ..sys::ze_kernel_desc_t::described()
        };
        let mut k = std::ptr::null_mut();
        // SAFETY: a live module, a described desc whose name outlives the call.
        match check(unsafe { ze.zeKernelCreate(module.0, &desc, &mut k) }) {
            Ok(()) => {}
            Err(e) if e.0 == sys::ZE_RESULT_ERROR_INVALID_KERNEL_NAME => return Err(not_found()),
            Err(e) => return Err(conv::error(e)),
        }
        // SAFETY: the kernel just made and a described struct.
        if let Ok(props) = query(|q| unsafe { ze.zeKernelGetProperties(k, q) }) {
            if arg_count.is_none() && props.numKernelArgs > 0 {
                arg_count = Some(props.numKernelArgs as usize);
            }
        }
        kernels.push((dev, Mutex::new(Raw(k))));
    }
    if parsed.is_none() && looks_like_spirv(&p.spirv) {
        return Err(not_found());
    }
    Ok(LevelZeroKernel {
        program: p.clone(),
        kernels,
        info: arg_count.map(KernelInfo::with_arg_count).unwrap_or_default(),
    })
}

fn looks_like_spirv(m: &[u8]) -> bool {
    m.len() >= 4 && (m[..4] == [0x03, 0x02, 0x23, 0x07] || m[..4] == [0x07, 0x23, 0x02, 0x03])
}

pub(crate) fn kernel_info(kernel: &LevelZeroKernel) -> KernelInfo {
    kernel.info.clone()
}

/// Sets the arguments, the group size and (where asked) the global offset,
/// then appends the launch, all under the kernel's lock.
///
/// # Safety
///
/// As [`ur_api::adapter::Kernels::enqueue_launch`].
pub(crate) unsafe fn launch(
    q: &LevelZeroQueue,
    kernel: &LevelZeroKernel,
    range: &NdRange,
    args: &[ur_api::KernelArg<'_, LevelZeroAdapter>],
    wait: &[&LevelZeroEvent],
) -> Result<LevelZeroEvent> {
    let ze = q.ctx.driver.ze;
    let (_, k) = kernel
        .kernels
        .iter()
        .find(|(d, _)| *d == q.device)
        .ok_or(Error::WrongContext { what: "kernel" })?;
    let k = k.lock();
    let mut held = Held::default();
    let e = conv::error;
    for (i, arg) in args.iter().enumerate() {
        let i = i as u32;
        let r = match arg {
            ur_api::KernelArg::Buffer(b) => {
                held.mem.push(b.mem.clone());
                let ptr = b.at(0);
                // SAFETY: a live kernel; the value is a pointer-sized argument.
                unsafe { ze.zeKernelSetArgumentValue(k.0, i, size_of_val(&ptr), (&raw const ptr).cast()) }
            }
            ur_api::KernelArg::Usm(u) => {
                held.mem.push(u.alloc.mem.clone());
                let ptr = u.ptr.0;
                // SAFETY: as above, the USM address as the value.
                unsafe { ze.zeKernelSetArgumentValue(k.0, i, size_of_val(&ptr), (&raw const ptr).cast()) }
            }
            // SAFETY: the bytes outlive the call (the driver copies them).
            ur_api::KernelArg::Scalar(bytes) => unsafe {
                ze.zeKernelSetArgumentValue(k.0, i, bytes.len(), bytes.as_ptr().cast())
            },
            // SAFETY: a null value with a size declares local memory.
            ur_api::KernelArg::Local(n) => unsafe { ze.zeKernelSetArgumentValue(k.0, i, *n, std::ptr::null()) },
        };
        check(r).map_err(|err| match err.0 {
            sys::ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX | sys::ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE => {
                Error::InvalidKernelArgs(format!("argument {i}: {err}"))
            }
            _ => e(err),
        })?;
    }
    let mut suggested = [0u32; 3];
    if range.local.is_none() {
        // Sizes past 32 bits get no suggestion (1 per group); `launch_shape`
        // refuses their group counts.
        if let [Ok(x), Ok(y), Ok(z)] = range.global.map(u32::try_from) {
            // SAFETY: a live kernel and three out pointers.
            let _ = unsafe {
                ze.zeKernelSuggestGroupSize(k.0, x, y, z, &mut suggested[0], &mut suggested[1], &mut suggested[2])
            };
        }
    }
    let (size, groups) = conv::launch_shape(range, suggested)?;
    // SAFETY: a live kernel.
    check(unsafe { ze.zeKernelSetGroupSize(k.0, size[0], size[1], size[2]) }).map_err(e)?;
    // The offset is kernel state: set it on every launch where the driver
    // has the extension (a non-zero offset reaches here only then, the
    // dyn layer checks `GLOBAL_OFFSET`).
    if kernel.program.ctx.driver.has_extension(sys::ZE_GLOBAL_OFFSET_EXP_NAME) {
        let [x, y, z] = range.offset.map(|o| o as u32);
        // SAFETY: a live kernel of a driver with the global-offset extension.
        check(unsafe { ze.zeKernelSetGlobalOffsetExp(k.0, x, y, z) }).map_err(e)?;
    }
    let count = sys::ze_group_count_t {
        groupCountX: groups[0],
        groupCountY: groups[1],
        groupCountZ: groups[2],
    };
    q.submit(wait, held, |a| {
        // SAFETY: a live kernel with every argument set, the list, event
        // and wait list `submit` prepared; buffers and USM are held.
        unsafe { ze.zeCommandListAppendLaunchKernel(a.list, k.0, &count, a.signal, a.nwait(), a.wait_ptr()) }
    })
}

impl ur_api::adapter::Kernels for crate::LevelZeroAdapter {
    fn create_program(
        &self,
        ctx: &LevelZeroContext,
        source: &ProgramSource,
        options: &str,
    ) -> Result<LevelZeroProgram> {
        create_program(ctx, source, options)
    }

    fn create_kernel(&self, program: &LevelZeroProgram, name: &str) -> Result<LevelZeroKernel> {
        create_kernel(program, name)
    }

    fn kernel_info(&self, kernel: &LevelZeroKernel) -> KernelInfo {
        kernel_info(kernel)
    }

    unsafe fn enqueue_launch(
        &self,
        q: &LevelZeroQueue,
        kernel: &LevelZeroKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        // SAFETY: the caller's contract, passed on.
        unsafe { launch(q, kernel, range, args, wait) }
    }
}
