//! Programs (CUDA C through NVRTC, or PTX), kernels and launches.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use ur_api::{Error, KernelArg, KernelInfo, NdRange, ProgramSource, Result};

use crate::conv;
use crate::device::{CtxInner, DevInner};
use crate::driver::{self, Device, Function, Module};
use crate::queue::{submit, CudaEvent, CudaQueue};
use crate::CudaAdapter;
use crate::CudaContext;

/// A program: one loaded module per device of its context.
#[derive(Debug, Clone)]
pub struct CudaProgram(Arc<ProgramInner>);

#[derive(Debug)]
struct ProgramInner {
    modules: Vec<(Arc<DevInner>, Module)>,
}

impl Drop for ProgramInner {
    fn drop(&mut self) {
        for (dev, m) in self.modules.drain(..) {
            // Unloaded in its device's context; where that cannot be bound
            // the module is left to the driver.
            match dev.bind() {
                Ok(()) => drop(m),
                Err(e) => {
                    tracing::warn!(error = %e, "binding a context to unload a module failed");
                    std::mem::forget(m);
                }
            }
        }
    }
}

/// A kernel: its function in every module of the program (which it keeps
/// loaded).
#[derive(Debug)]
pub struct CudaKernel {
    funcs: Vec<(Device, Function)>,
    /// Parameter sizes, as the driver reports them (`cuFuncGetParamInfo`).
    params: Vec<usize>,
    _program: CudaProgram,
}

/// Compiles CUDA C with NVRTC for one compute capability: to a cubin for
/// `sm_XY` unless the options name an architecture, to PTX where the
/// options ask for a virtual one (`compute_XY`).
fn nvrtc_compile(src: &str, cc: (i32, i32), options: &str) -> Result<Vec<u8>> {
    if !driver::nvrtc_present() {
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
    // SAFETY: NVRTC is present and no option contains a NUL byte (both
    // checked above).
    unsafe { driver::nvrtc_compile(&csrc, &opts) }
}

/// Loads a module image (cubin, or NUL-terminated PTX) on one device; a
/// JIT failure is a [`Error::ProgramBuild`] carrying the JIT's log.
fn load(dev: &Arc<DevInner>, image: &[u8]) -> Result<Module> {
    dev.bind()?;
    // SAFETY: images come from NVRTC (a cubin, or PTX with its NUL) or
    // from the caller's PTX with a NUL appended (`create_program`).
    unsafe { Module::load(image) }
}

pub(crate) fn create_program(ctx: &CtxInner, source: &ProgramSource, options: &str) -> Result<CudaProgram> {
    let mut images: Vec<((i32, i32), Vec<u8>)> = Vec::new();
    for d in &ctx.devices {
        if images.iter().any(|(cc, _)| *cc == d.limits.cc) {
            continue;
        }
        let image = match source {
            ProgramSource::Ptx(ptx) => CString::new(ptx.as_str())
                .map_err(|_| Error::invalid("PTX contains a NUL byte"))?
                .into_bytes_with_nul(),
            ProgramSource::CudaC(src) => nvrtc_compile(src, d.limits.cc, options)?,
            // Not reached: the dyn layer only passes formats the devices listed.
            other => return Err(Error::unsupported(format!("{:?} programs on CUDA", other.format()))),
        };
        images.push((d.limits.cc, image));
    }
    let mut inner = ProgramInner { modules: Vec::new() };
    for d in &ctx.devices {
        let image = &images
            .iter()
            .find(|(cc, _)| *cc == d.limits.cc)
            .expect("an image per capability")
            .1;
        let m = load(d, image)?;
        inner.modules.push((d.clone(), m));
    }
    Ok(CudaProgram(Arc::new(inner)))
}

/// Launches with grid = global / block (see [`conv::launch_dims`]).
/// Buffers and USM pointers pass as 8-byte device addresses, scalars as
/// their bytes.
///
/// # Safety
///
/// The contract of [`ur_api::adapter::Kernels::enqueue_launch`]. The devices set
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
    let (grid, block) = conv::launch_dims(range, q.dev.limits.max_block, q.dev.max_grid)?;
    submit(q, wait, Vec::new(), |s| {
        // SAFETY: the caller guarantees (the launch contract) one argument per
        // kernel parameter, of its size where the driver reported sizes, and
        // buffers and USM pointers usable in place on this device; `ptrs`
        // holds one pointer per argument to storage that outlives the call
        // (the driver copies the values; scalars are padded to 8 bytes); the
        // function belongs to the stream's device, its module kept loaded by
        // the kernel.
        unsafe { driver::launch_kernel(f, grid, block, &mut ptrs, s) }
    })
}

impl ur_api::adapter::Kernels for crate::CudaAdapter {
    fn create_program(&self, ctx: &CudaContext, source: &ProgramSource, options: &str) -> Result<CudaProgram> {
        create_program(&ctx.0, source, options)
    }

    /// Looks a kernel up by its (unmangled: declare kernels `extern "C"`) name.
    fn create_kernel(&self, p: &CudaProgram, name: &str) -> Result<CudaKernel> {
        let cname = CString::new(name).map_err(|_| Error::invalid("kernel name contains a NUL byte"))?;
        let mut funcs = Vec::new();
        for (dev, m) in &p.0.modules {
            dev.bind()?;
            match m.function(&cname)? {
                Some(f) => funcs.push((dev.dev, f)),
                None => return Err(Error::KernelNotFound { name: name.to_owned() }),
            }
        }
        // A kernel whose parameter layout is unknown could not be launched
        // soundly (see `device_info`): refuse it here rather than launch blind.
        let params = match funcs.first() {
            // SAFETY: the function's module is loaded (the program is alive).
            Some(&(_, f)) => unsafe { f.param_sizes() }
                .ok_or_else(|| Error::unsupported("kernels whose parameters the driver cannot report"))?,
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
    fn kernel_info(&self, k: &CudaKernel) -> KernelInfo {
        KernelInfo::with_arg_sizes(k.params.clone())
    }

    unsafe fn enqueue_launch(
        &self,
        q: &CudaQueue,
        kernel: &CudaKernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        w: &[&CudaEvent],
    ) -> Result<CudaEvent> {
        // SAFETY: the caller keeps the launch contract, forwarded as is.
        unsafe { launch(q, kernel, range, args, w) }
    }
}
