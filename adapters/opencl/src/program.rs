//! Programs (OpenCL C source, SPIR-V), kernels and launches.

use std::ffi::c_void;
use std::ptr;

use cl3::info_type::InfoType;
use opencl3::command_queue as cq;
use opencl3::error_codes::{CL_BUILD_PROGRAM_FAILURE, CL_INVALID_KERNEL_NAME};
use opencl3::kernel::{self as clk, Kernel as ClKernel, CL_KERNEL_NUM_ARGS};
use opencl3::memory::ClMem;
use opencl3::types::{cl_mem, cl_program, cl_uint};
use parking_lot::Mutex;
use ur_api::{Error, KernelArg, KernelGroupInfo, KernelInfo, NativeHandle, NativeObj, NdRange, ProgramSource, Result};

use crate::conv::{self, check, check3};
use crate::device::{Context, Handle};
use crate::queue::{raw_event, submit, Event, Queue};
use crate::OpenClAdapter;

/// A program built for every device of its context: one this adapter
/// built, or one the caller built with OpenCL itself and handed over by its
/// handle (`Adapter::program_from_native`). Holds one reference to the
/// OpenCL program, released on drop.
#[derive(Debug)]
pub struct Program {
    raw: Handle<cl_program>,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: this adapter holds one reference to the program (made
        // here, retained, or handed over), released once here.
        if let Err(code) = unsafe { cl3::program::release_program(self.raw.0) } {
            tracing::warn!(code, "clReleaseProgram");
        }
    }
}

/// A kernel. OpenCL kernel arguments are state of the kernel object, so
/// setting them and enqueueing happen under one lock.
#[derive(Debug)]
pub struct Kernel {
    cl: Mutex<ClKernel>,
    num_args: usize,
    name: String,
}

/// `clCreateProgramWithBinary` of the same `binary` for every device of
/// `ctx`. (Not `cl3`'s wrapper: it passes its `&[&[u8]]` as the array of
/// binary pointers, so a second device reads the first slice's length as
/// its pointer.)
fn from_binary(ctx: &Context, binary: &[u8]) -> Result<cl_program> {
    let lib = cl3::load_library()
        .as_ref()
        .map_err(|_| Error::unsupported("the OpenCL library is not loaded"))?;
    let devices: Vec<_> = ctx.devices.iter().map(|d| d.0).collect();
    let lengths = vec![binary.len(); devices.len()];
    let pointers = vec![binary.as_ptr(); devices.len()];
    let mut statuses = vec![0; devices.len()];
    let mut status = opencl3::error_codes::CL_INVALID_VALUE;
    // SAFETY: `devices`, `lengths`, `pointers` and `statuses` have one
    // entry per device of the live context; every pointer points at
    // `binary`, valid for its length for the call.
    let program = lib
        .clCreateProgramWithBinary(
            ctx.cl.get(),
            devices.len() as cl_uint,
            devices.as_ptr(),
            lengths.as_ptr(),
            pointers.as_ptr(),
            statuses.as_mut_ptr(),
            &mut status,
        )
        .ok_or_else(|| Error::unsupported("clCreateProgramWithBinary is missing from the OpenCL library"))?;
    if status != opencl3::error_codes::CL_SUCCESS {
        return Err(conv::error(status));
    }
    Ok(program)
}

fn build_log(p: cl_program, devices: &[Handle<opencl3::types::cl_device_id>]) -> String {
    let mut log = String::new();
    for d in devices {
        let name = opencl3::device::Device::new(d.0).name().unwrap_or_default();
        let text = cl3::program::get_program_build_info(p, d.0, cl3::program::CL_PROGRAM_BUILD_LOG)
            .map(String::from)
            .unwrap_or_else(|code| format!("(no log: {})", conv::error(code)));
        let text = text.trim_end_matches('\0').trim();
        if !text.is_empty() {
            log.push_str(&format!("[{name}]\n{text}\n"));
        }
    }
    if log.is_empty() {
        log.push_str("the build failed and the runtime gave no log");
    }
    log
}

/// The raw handles of this adapter's objects.
pub(crate) fn native_handle(obj: NativeObj<'_, OpenClAdapter>) -> NativeHandle {
    let raw = match obj {
        NativeObj::Platform(p) => p.cl.id() as u64,
        NativeObj::Device(d) => d.id.0 as u64,
        NativeObj::Context(c) => c.cl.get() as u64,
        NativeObj::Queue(q) => q.raw() as u64,
        NativeObj::Program(p) => p.raw.0 as u64,
        NativeObj::Kernel(k) => k.cl.lock().get() as u64,
        NativeObj::Event(e) => e.cl.get() as u64,
    };
    // SAFETY: a live object of this adapter, the backend's own handle.
    unsafe { NativeHandle::new(raw) }
}

/// `CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL` (`cl_intel_required_subgroup_size`).
const CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL: u32 = 0x410A;

impl ur_api::adapter::Kernels for crate::OpenClAdapter {
    /// Builds `source` for every device of `ctx`; a failed build reports every
    /// device's build log in [`Error::ProgramBuild`].
    fn create_program(&self, ctx: &Context, source: &ProgramSource, options: &str) -> Result<Program> {
        if options.contains('\0') {
            return Err(Error::invalid("build options contain a NUL byte"));
        }
        let mut options = options.to_owned();
        let raw = match source {
            ProgramSource::OpenClC(src) => check(cl3::program::create_program_with_source(ctx.cl.get(), &[src]))?,
            ProgramSource::SpirV(il) => match &ctx.translator {
                None => check(cl3::program::create_program_with_il(ctx.cl.get(), il))?,
                // SPIR bitcode, one copy per device, built as SPIR (`spirv.rs`).
                Some(t) => {
                    options.insert_str(0, "-x spir ");
                    from_binary(ctx, &t.bitcode(il)?)?
                }
            },
            // Not reached: the dyn layer only passes formats the devices listed.
            other => return Err(Error::unsupported(format!("{:?} programs on OpenCL", other.format()))),
        };
        // Owned from here: released on every return below.
        let program = Program { raw: Handle(raw) };
        let devices: Vec<_> = ctx.devices.iter().map(|d| d.0).collect();
        let c_options =
            std::ffi::CString::new(options).map_err(|_| Error::invalid("build options contain a NUL byte"))?;
        match cl3::program::build_program(raw, &devices, &c_options, None, ptr::null_mut()) {
            Ok(()) => Ok(program),
            Err(CL_BUILD_PROGRAM_FAILURE) => Err(Error::ProgramBuild {
                log: build_log(raw, &ctx.devices),
            }),
            Err(code) => Err(conv::error(code)),
        }
    }

    fn create_kernel(&self, p: &Program, name: &str) -> Result<Kernel> {
        let not_found = || Error::KernelNotFound { name: name.to_owned() };
        if name.contains('\0') {
            return Err(not_found());
        }
        let c_name = std::ffi::CString::new(name).map_err(|_| not_found())?;
        let cl = match clk::create_kernel(p.raw.0, &c_name) {
            Ok(k) => ClKernel::new(k),
            Err(CL_INVALID_KERNEL_NAME) => return Err(not_found()),
            Err(code) => return Err(conv::error(code)),
        };
        let num_args = check(clk::get_kernel_info(cl.get(), CL_KERNEL_NUM_ARGS))?;
        let num_args = cl_uint::from(num_args) as usize;
        Ok(Kernel {
            cl: Mutex::new(cl),
            num_args,
            name: name.to_owned(),
        })
    }

    /// What the dyn layer checks launches against: the argument count
    /// (`CL_KERNEL_NUM_ARGS`). Sizes are left to `clSetKernelArg`, which knows
    /// them and refuses a wrong one.
    fn kernel_info(&self, k: &Kernel) -> KernelInfo {
        KernelInfo::with_arg_count(k.num_args).named(&k.name)
    }

    /// A program over `handle`, a program the caller built in `ctx`'s OpenCL
    /// context; retained unless `owned`.
    fn program_from_native(&self, ctx: &Context, handle: NativeHandle, owned: bool) -> Result<Program> {
        let raw = handle.raw() as cl_program;
        if raw.is_null() {
            return Err(Error::invalid("a null program handle"));
        }
        let its_ctx = check(cl3::program::get_program_info(raw, cl3::program::CL_PROGRAM_CONTEXT))?;
        if isize::from(its_ctx) as usize != ctx.cl.get() as usize {
            return Err(Error::WrongContext { what: "native program" });
        }
        if !owned {
            // SAFETY: a live program (the handle's contract).
            check(unsafe { cl3::program::retain_program(raw) })?;
        }
        Ok(Program { raw: Handle(raw) })
    }

    /// A kernel over `handle`, a kernel the caller made in `ctx`'s OpenCL
    /// context, with its program; both retained (the kernel not when `owned`).
    fn kernel_from_native(&self, ctx: &Context, handle: NativeHandle, owned: bool) -> Result<(Program, Kernel)> {
        let raw = handle.raw() as opencl3::types::cl_kernel;
        if raw.is_null() {
            return Err(Error::invalid("a null kernel handle"));
        }
        let prog = check(clk::get_kernel_info(raw, clk::CL_KERNEL_PROGRAM))?;
        // SAFETY: the kernel's own program, live while the kernel is.
        let program = ur_api::adapter::Kernels::program_from_native(
            self,
            ctx,
            unsafe { NativeHandle::new(isize::from(prog) as u64) },
            false,
        )?;
        let name = String::from(check(clk::get_kernel_info(raw, clk::CL_KERNEL_FUNCTION_NAME))?)
            .trim_end_matches('\0')
            .to_owned();
        let num_args = cl_uint::from(check(clk::get_kernel_info(raw, CL_KERNEL_NUM_ARGS))?) as usize;
        if !owned {
            // SAFETY: a live kernel (the handle's contract).
            check(unsafe { clk::retain_kernel(raw) })?;
        }
        let kernel = Kernel {
            cl: Mutex::new(ClKernel::new(raw)),
            num_args,
            name,
        };
        Ok((program, kernel))
    }

    /// The program's kernel names (`CL_PROGRAM_KERNEL_NAMES`).
    fn kernel_names(&self, p: &Program) -> Result<Vec<String>> {
        let names = check(cl3::program::get_program_info(
            p.raw.0,
            cl3::program::CL_PROGRAM_KERNEL_NAMES,
        ))?;
        Ok(String::from(names)
            .trim_end_matches('\0')
            .split(';')
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// The kernel's work-group figures on `device` (`clGetKernelWorkGroupInfo`)
    /// and, on OpenCL 2.1 devices, its sub-group figures
    /// (`clGetKernelSubGroupInfo`); a figure the device does not answer is 0.
    fn kernel_group_info(&self, k: &Kernel, device: &crate::Device) -> Result<KernelGroupInfo> {
        let kernel = k.cl.lock();
        let d = device.id.0;
        let mut compile = [0usize; 3];
        for (c, v) in compile
            .iter_mut()
            .zip(kernel.get_compile_work_group_size(d).unwrap_or_default())
        {
            *c = v;
        }
        let sub = |param, input: usize| -> u32 {
            if device.version < (2, 1) {
                return 0;
            }
            // The standard queries answer a `size_t`; others (the Intel one)
            // come back as raw bytes holding one.
            match clk::get_kernel_sub_group_info(kernel.get(), d, param, size_of::<usize>(), (&raw const input).cast())
            {
                Ok(InfoType::Size(v)) => v as u32,
                Ok(InfoType::VecUchar(b)) => b
                    .get(..size_of::<usize>())
                    .map_or(0, |b| usize::from_ne_bytes(b.try_into().unwrap_or_default()) as u32),
                _ => 0,
            }
        };
        let wg = check3(kernel.get_work_group_size(d))?;
        Ok(KernelGroupInfo {
            work_group_size: wg,
            compile_work_group_size: compile,
            local_mem_size: kernel.get_local_mem_size(d).unwrap_or(0),
            preferred_work_group_size_multiple: kernel.get_work_group_size_multiple(d).unwrap_or(0),
            private_mem_size: kernel.get_private_mem_size(d).unwrap_or(0),
            max_sub_group_size: sub(clk::CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, wg),
            max_num_sub_groups: sub(clk::CL_KERNEL_MAX_NUM_SUB_GROUPS, 0),
            compile_num_sub_groups: sub(clk::CL_KERNEL_COMPILE_NUM_SUB_GROUPS, 0),
            compile_sub_group_size: sub(CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL, 0),
        })
    }

    /// Sets every argument and enqueues the launch, under the kernel's lock.
    unsafe fn enqueue_launch(
        &self,
        q: &Queue,
        k: &Kernel,
        range: &NdRange,
        args: &[KernelArg<'_, OpenClAdapter>],
        wait: &[&Event],
    ) -> Result<Event> {
        let kernel = k.cl.lock();
        for (i, a) in args.iter().enumerate() {
            let i = i as cl_uint;
            let arg_err = |e: Error| match e {
                Error::InvalidKernelArgs(m) => Error::InvalidKernelArgs(format!("argument {i} of `{}`: {m}", k.name)),
                other => other,
            };
            // SAFETY (all arms): each value pointer is valid for the size given
            // during the call, which copies it; the caller guarantees (the
            // launch contract) buffers and SVM pointers are live and usable in
            // place at the queue's location, so objects of the kernel's context.
            let r = match a {
                KernelArg::Buffer(b) => {
                    let m: cl_mem = b.cl.get();
                    // SAFETY: see above.
                    unsafe { clk::set_kernel_arg(kernel.get(), i, size_of::<cl_mem>(), (&raw const m).cast()) }
                }
                KernelArg::Usm(p) => match &q.intel {
                    // SAFETY: see above; an allocation of the extension.
                    Some(intel) => match unsafe { (intel.set_arg)(kernel.get(), i, p.ptr.0 as *const c_void) } {
                        0 => Ok(()),
                        code => Err(code),
                    },
                    // SAFETY: see above; an SVM allocation.
                    None => unsafe { clk::set_kernel_arg_svm_pointer(kernel.get(), i, p.ptr.0 as *const c_void) },
                },
                // SAFETY: see above.
                KernelArg::Scalar(bytes) => unsafe {
                    clk::set_kernel_arg(kernel.get(), i, bytes.len(), bytes.as_ptr().cast())
                },
                // SAFETY: see above; local memory takes a null value.
                KernelArg::Local(n) => unsafe { clk::set_kernel_arg(kernel.get(), i, *n, ptr::null()) },
            };
            check(r).map_err(arg_err)?;
        }
        let local = range.local.as_ref().map_or(ptr::null(), |l| l.as_ptr());
        submit(q, wait, |q, n, w| {
            // SAFETY: the caller guarantees (the launch contract) a well-formed
            // range (dims 1..=3, the arrays have 3 entries) and one argument per
            // kernel parameter, all set above; the arrays live across the call.
            raw_event(unsafe {
                cq::enqueue_nd_range_kernel(
                    q,
                    kernel.get(),
                    range.dims,
                    range.offset.as_ptr(),
                    range.global.as_ptr(),
                    local,
                    n,
                    w,
                )
            })
        })
    }
}
