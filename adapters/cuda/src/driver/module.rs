//! Modules, functions and kernel launches; NVRTC compilation.

use std::ffi::{c_void, CStr};

use cudarc::driver::sys::{self, CUresult};
use cudarc::nvrtc::result as nvrtc;
use cudarc::nvrtc::sys::{self as nv, nvrtcResult};
use ur_api::{Error, Result};

use crate::conv::{self, check};

use super::*;

// ---- modules and launches ----

/// A loaded module, unloaded on drop (its context must be current then).
#[derive(Debug)]
pub(crate) struct Module(sys::CUmodule);

// SAFETY: modules may be used from any thread; the driver serialises.
unsafe impl Send for Module {}
// SAFETY: as above.
unsafe impl Sync for Module {}

impl Module {
    /// Loads a module image in the current context; a JIT failure is a
    /// [`Error::ProgramBuild`] carrying the JIT's log.
    ///
    /// # Safety
    ///
    /// `image` is a complete cubin or NUL-terminated PTX.
    pub(crate) unsafe fn load(image: &[u8]) -> Result<Module> {
        let mut log = vec![0u8; 16 * 1024];
        let mut opts = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut vals: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
        let mut module = std::ptr::null_mut();
        // SAFETY: the caller guarantees the image; the option arrays have two
        // entries each and the log buffer its stated size.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut module,
                image.as_ptr().cast(),
                2,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        if r == CUresult::CUDA_SUCCESS {
            return Ok(Module(module));
        }
        let jit = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
        Err(match conv::error(r) {
            Error::ProgramBuild { log } => Error::ProgramBuild {
                log: if jit.is_empty() { log } else { format!("{log}\n{jit}") },
            },
            other => other,
        })
    }

    /// The function named `name`; `None` where the module has none.
    pub(crate) fn function(&self, name: &CStr) -> Result<Option<Function>> {
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is loaded; valid out-pointer and C string.
        match unsafe { sys::cuModuleGetFunction(&mut f, self.0, name.as_ptr()) } {
            CUresult::CUDA_SUCCESS => Ok(Some(Function(f))),
            CUresult::CUDA_ERROR_NOT_FOUND => Ok(None),
            other => Err(conv::error(other)),
        }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module is owned and unloaded once.
        if let Err(e) = check(unsafe { sys::cuModuleUnload(self.0) }) {
            tracing::warn!(error = %e, "cuModuleUnload failed");
        }
    }
}

/// A kernel function of a [`Module`]; valid while the module is loaded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Function(sys::CUfunction);

// SAFETY: functions may be used from any thread; the driver serialises.
unsafe impl Send for Function {}
// SAFETY: as above.
unsafe impl Sync for Function {}

impl Function {
    /// The parameter sizes (`cuFuncGetParamInfo`, CUDA 12.4+); `None` where
    /// the driver cannot report them.
    ///
    /// # Safety
    ///
    /// The function's module is still loaded.
    pub(crate) unsafe fn param_sizes(self) -> Option<Vec<usize>> {
        if !has_symbol("cuFuncGetParamInfo") {
            return None;
        }
        let mut sizes = Vec::new();
        for i in 0.. {
            let (mut off, mut size) = (0usize, 0usize);
            // SAFETY: the symbol exists (checked); the caller guarantees a
            // live function; valid out-pointers; an index past the last
            // parameter returns CUDA_ERROR_INVALID_VALUE.
            match unsafe { sys::cuFuncGetParamInfo(self.0, i, &mut off, &mut size) } {
                CUresult::CUDA_SUCCESS => sizes.push(size),
                CUresult::CUDA_ERROR_INVALID_VALUE => break,
                _ => return None,
            }
        }
        Some(sizes)
    }
}

/// Launches `f` with `grid` × `block` threads and no dynamic shared memory.
///
/// # Safety
///
/// The function's module is loaded in the stream's context; `params` holds
/// one pointer per kernel parameter, each to storage of at least the
/// parameter's size (the driver copies the values during the call); every
/// address passed in them is usable in place on the stream's device.
pub(crate) unsafe fn launch_kernel(
    f: Function,
    grid: [u32; 3],
    block: [u32; 3],
    params: &mut [*mut c_void],
    s: &Stream,
) -> Result<()> {
    // SAFETY: the caller guarantees the function and the parameters; the
    // stream is alive.
    check(unsafe {
        sys::cuLaunchKernel(
            f.0,
            grid[0],
            grid[1],
            grid[2],
            block[0],
            block[1],
            block[2],
            0,
            s.0,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    })
}

// ---- NVRTC ----

/// An NVRTC program, destroyed on drop.
struct NvrtcProgram(nv::nvrtcProgram);

impl Drop for NvrtcProgram {
    fn drop(&mut self) {
        // SAFETY: created by `nvrtc_compile`, destroyed once here.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

/// Compiles CUDA C with NVRTC under `opts`: a cubin where the options name
/// a real architecture, PTX (NUL-terminated) where a virtual one. A failed
/// compilation is [`Error::ProgramBuild`] with NVRTC's log.
///
/// # Safety
///
/// NVRTC is present ([`nvrtc_present`]), and no option contains a NUL byte.
pub(crate) unsafe fn nvrtc_compile(src: &CStr, opts: &[String]) -> Result<Vec<u8>> {
    let prog = NvrtcProgram(nvrtc::create_program(src, Some(c"program.cu")).map_err(|e| conv::nvrtc_error(e.0))?);
    // SAFETY: the program is alive; the caller guarantees NUL-free options.
    let compiled = unsafe { nvrtc::compile_program(prog.0, opts) };
    // SAFETY: the program is alive.
    let log = unsafe { nvrtc::get_program_log(prog.0) }
        .map(|l| {
            let bytes: Vec<u8> = l.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    if let Err(e) = compiled {
        return Err(match e.0 {
            nvrtcResult::NVRTC_ERROR_COMPILATION | nvrtcResult::NVRTC_ERROR_INVALID_OPTION => Error::ProgramBuild {
                log: if log.is_empty() { format!("{:?}", e.0) } else { log },
            },
            other => conv::nvrtc_error(other),
        });
    }
    if !log.trim().is_empty() {
        tracing::debug!(%log, "NVRTC build log");
    }
    let mut size = 0usize;
    // SAFETY: the program is alive and compiled; valid out-pointer.
    let cubin = unsafe { nv::nvrtcGetCUBINSize(prog.0, &mut size) };
    if cubin == nvrtcResult::NVRTC_SUCCESS && size > 0 {
        let mut out = vec![0u8; size];
        // SAFETY: `out` holds the size NVRTC reported.
        let r = unsafe { nv::nvrtcGetCUBIN(prog.0, out.as_mut_ptr().cast()) };
        if r != nvrtcResult::NVRTC_SUCCESS {
            return Err(conv::nvrtc_error(r));
        }
        return Ok(out);
    }
    // A virtual architecture was asked for: PTX, JIT-compiled at load.
    // SAFETY: the program is alive and compiled.
    let ptx = unsafe { nvrtc::get_ptx(prog.0) }.map_err(|e| conv::nvrtc_error(e.0))?;
    Ok(ptx.iter().map(|&c| c as u8).collect())
}
