//! Programs (CUDA C through NVRTC, or PTX), kernels and launches.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use cudarc::driver::sys::{self, CUresult};
use cudarc::nvrtc::{result as nvrtc, sys::nvrtcResult};
use ur_api::{Error, KernelArg, KernelInfo, NdRange, ProgramSource, Result};

use crate::conv::{self, check};
use crate::device::{self, CtxInner, DevInner};
use crate::queue::{submit, CudaEvent, CudaQueue};
use crate::CudaAdapter;

/// A program: one loaded module per device of its context.
#[derive(Debug, Clone)]
pub struct CudaProgram(Arc<ProgramInner>);

#[derive(Debug)]
struct ProgramInner {
    modules: Vec<(Arc<DevInner>, sys::CUmodule)>,
}

// SAFETY: modules may be used from any thread; the driver serialises.
unsafe impl Send for ProgramInner {}
// SAFETY: as above.
unsafe impl Sync for ProgramInner {}

impl Drop for ProgramInner {
    fn drop(&mut self) {
        for (dev, m) in &self.modules {
            // SAFETY: the module is owned and loaded in this device's context.
            let r = dev.bind().and_then(|()| check(unsafe { sys::cuModuleUnload(*m) }));
            if let Err(e) = r {
                tracing::warn!(error = %e, "cuModuleUnload failed");
            }
        }
    }
}

/// A kernel: its function in every module of the program.
#[derive(Debug)]
pub struct CudaKernel {
    funcs: Vec<(sys::CUdevice, sys::CUfunction)>,
    /// Parameter sizes, as the driver reports them (`cuFuncGetParamInfo`).
    params: Vec<usize>,
    _program: CudaProgram,
}

// SAFETY: functions may be used from any thread; the program keeps them alive.
unsafe impl Send for CudaKernel {}
// SAFETY: as above.
unsafe impl Sync for CudaKernel {}

/// Compiles CUDA C with NVRTC for one compute capability: to a cubin for
/// `sm_XY` unless the options name an architecture, to PTX where the
/// options ask for a virtual one (`compute_XY`).
fn nvrtc_compile(src: &str, cc: (i32, i32), options: &str) -> Result<Vec<u8>> {
    if !device::nvrtc_present() {
        return Err(Error::unsupported("CUDA C programs: NVRTC was not found"));
    }
    let csrc = CString::new(src).map_err(|_| Error::invalid("CUDA C source contains a NUL byte"))?;
    let mut opts: Vec<String> = options.split_whitespace().map(str::to_owned).collect();
    if opts.iter().any(|o| o.contains('\0')) {
        return Err(Error::invalid("compiler option contains a NUL byte"));
    }
    if !opts
        .iter()
        .any(|o| o.starts_with("--gpu-architecture") || o.starts_with("-arch"))
    {
        opts.push(format!("--gpu-architecture=sm_{}{}", cc.0, cc.1));
    }
    let prog = nvrtc::create_program(&csrc, Some(c"program.cu")).map_err(|e| conv::nvrtc_error(e.0))?;
    struct Guard(cudarc::nvrtc::sys::nvrtcProgram);
    impl Drop for Guard {
        fn drop(&mut self) {
            // SAFETY: created above, destroyed once here.
            let _ = unsafe { nvrtc::destroy_program(self.0) };
        }
    }
    let prog = Guard(prog);
    // SAFETY: the program is alive; no option contains a NUL byte (checked).
    let compiled = unsafe { nvrtc::compile_program(prog.0, &opts) };
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
    let cubin = unsafe { cudarc::nvrtc::sys::nvrtcGetCUBINSize(prog.0, &mut size) };
    if cubin == nvrtcResult::NVRTC_SUCCESS && size > 0 {
        let mut out = vec![0u8; size];
        // SAFETY: `out` holds the size NVRTC reported.
        let r = unsafe { cudarc::nvrtc::sys::nvrtcGetCUBIN(prog.0, out.as_mut_ptr().cast()) };
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

/// Loads a module image (cubin, or NUL-terminated PTX) on one device; a
/// JIT failure is a [`Error::ProgramBuild`] carrying the JIT's log.
fn load(dev: &Arc<DevInner>, image: &[u8]) -> Result<sys::CUmodule> {
    dev.bind()?;
    let mut log = vec![0u8; 16 * 1024];
    let mut opts = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut vals: [*mut c_void; 2] = [log.as_mut_ptr().cast(), log.len() as *mut c_void];
    let mut module = std::ptr::null_mut();
    // SAFETY: the image is a complete cubin or NUL-terminated PTX; the
    // option arrays have two entries each and the log buffer its stated size.
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
        return Ok(module);
    }
    let jit: String = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]).into_owned();
    Err(match conv::error(r) {
        Error::ProgramBuild { log } => Error::ProgramBuild {
            log: if jit.is_empty() { log } else { format!("{log}\n{jit}") },
        },
        other => other,
    })
}

pub(crate) fn create_program(ctx: &CtxInner, source: &ProgramSource, options: &str) -> Result<CudaProgram> {
    let mut images: Vec<((i32, i32), Vec<u8>)> = Vec::new();
    for d in &ctx.devices {
        if images.iter().any(|(cc, _)| *cc == d.cc) {
            continue;
        }
        let image = match source {
            ProgramSource::Ptx(ptx) => CString::new(ptx.as_str())
                .map_err(|_| Error::invalid("PTX contains a NUL byte"))?
                .into_bytes_with_nul(),
            ProgramSource::CudaC(src) => nvrtc_compile(src, d.cc, options)?,
            // Not reached: the dyn layer only passes formats the devices listed.
            other => return Err(Error::unsupported(format!("{:?} programs on CUDA", other.format()))),
        };
        images.push((d.cc, image));
    }
    let mut inner = ProgramInner { modules: Vec::new() };
    for d in &ctx.devices {
        let image = &images
            .iter()
            .find(|(cc, _)| *cc == d.cc)
            .expect("an image per capability")
            .1;
        let m = load(d, image)?;
        inner.modules.push((d.clone(), m));
    }
    Ok(CudaProgram(Arc::new(inner)))
}

fn param_sizes(f: sys::CUfunction) -> Option<Vec<usize>> {
    if !device::has_symbol("cuFuncGetParamInfo") {
        return None;
    }
    let mut sizes = Vec::new();
    for i in 0.. {
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: the symbol exists (checked); valid out-pointers; an index past
        // the last parameter returns CUDA_ERROR_INVALID_VALUE.
        match unsafe { sys::cuFuncGetParamInfo(f, i, &mut off, &mut size) } {
            CUresult::CUDA_SUCCESS => sizes.push(size),
            CUresult::CUDA_ERROR_INVALID_VALUE => break,
            _ => return None,
        }
    }
    Some(sizes)
}

/// Looks a kernel up by its (unmangled: declare kernels `extern "C"`) name.
pub(crate) fn create_kernel(p: &CudaProgram, name: &str) -> Result<CudaKernel> {
    let cname = CString::new(name).map_err(|_| Error::invalid("kernel name contains a NUL byte"))?;
    let mut funcs = Vec::new();
    for (dev, m) in &p.0.modules {
        dev.bind()?;
        let mut f = std::ptr::null_mut();
        // SAFETY: the module is loaded; valid out-pointer and C string.
        match unsafe { sys::cuModuleGetFunction(&mut f, *m, cname.as_ptr()) } {
            CUresult::CUDA_SUCCESS => funcs.push((dev.dev, f)),
            CUresult::CUDA_ERROR_NOT_FOUND => return Err(Error::KernelNotFound { name: name.to_owned() }),
            other => return Err(conv::error(other)),
        }
    }
    // A kernel whose parameter layout is unknown could not be launched
    // soundly (see `device_info`): refuse it here rather than launch blind.
    let params = match funcs.first() {
        Some(&(_, f)) => {
            param_sizes(f).ok_or_else(|| Error::unsupported("kernels whose parameters the driver cannot report"))?
        }
        None => Vec::new(),
    };
    Ok(CudaKernel {
        funcs,
        params,
        _program: p.clone(),
    })
}

/// What the dyn layer checks launches against: the parameter sizes the
/// driver reports (`cuFuncGetParamInfo`, CUDA 12.4+; devices of older
/// drivers do not advertise `KERNELS`, see `device_info`).
pub(crate) fn kernel_info(k: &CudaKernel) -> KernelInfo {
    KernelInfo::with_arg_sizes(k.params.clone())
}

/// Launches with grid = global / block (see [`conv::launch_dims`]).
/// Buffers and USM pointers pass as 8-byte device addresses, scalars as
/// their bytes.
///
/// # Safety
///
/// The contract of [`ur_api::Adapter::enqueue_launch`]. The devices set
/// neither `GLOBAL_OFFSET` nor `LOCAL_MEMORY_ARGS`, so the range has no
/// offset and no argument is local memory.
pub(crate) unsafe fn launch(
    q: &CudaQueue,
    k: &CudaKernel,
    range: &NdRange,
    args: &[KernelArg<'_, CudaAdapter>],
    wait: &[&CudaEvent],
) -> Result<CudaEvent> {
    let f = k
        .funcs
        .iter()
        .find(|(d, _)| *d == q.dev.dev)
        .map(|&(_, f)| f)
        .ok_or_else(|| Error::invalid("the kernel's program was not built for the queue's device"))?;
    let mut store: Vec<Vec<u64>> = args
        .iter()
        .map(|a| match a {
            KernelArg::Buffer(b) => vec![b.ptr()],
            KernelArg::Usm(p) => vec![p.ptr.0],
            KernelArg::Scalar(s) => {
                let mut v = vec![0u64; s.len().div_ceil(8)];
                // SAFETY: `v` has at least `s.len()` bytes; u64 storage has no
                // invalid bit patterns.
                unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), v.as_mut_ptr().cast::<u8>(), s.len()) };
                v
            }
            KernelArg::Local(_) => unreachable!("no CUDA device sets LOCAL_MEMORY_ARGS (enqueue_launch's contract)"),
        })
        .collect();
    let mut ptrs: Vec<*mut c_void> = store.iter_mut().map(|v| v.as_mut_ptr().cast()).collect();
    let (grid, block) = conv::launch_dims(range, q.dev.max_block, q.dev.max_grid)?;
    submit(q, wait, Vec::new(), |s| {
        // SAFETY: the caller guarantees (the launch contract) one argument per
        // kernel parameter, of its size where the driver reported sizes, and
        // buffers and USM pointers usable in place on this device; `ptrs`
        // holds one pointer per argument to storage that outlives the call
        // (the driver copies the values; scalars are padded to 8 bytes); the
        // function belongs to the stream's device.
        check(unsafe {
            sys::cuLaunchKernel(
                f,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                0,
                s,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    })
}
