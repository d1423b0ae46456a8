//! Programs (OpenCL C source, SPIR-V), kernels and launches.

use std::collections::HashMap;
use std::ffi::c_void;
use std::hash::{Hash, Hasher};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cl3::info_type::InfoType;
use opencl3::command_queue as cq;
use opencl3::error_codes::{
    CL_BUILD_PROGRAM_FAILURE, CL_COMPILE_PROGRAM_FAILURE, CL_INVALID_KERNEL_NAME, CL_LINK_PROGRAM_FAILURE,
};
use opencl3::kernel::{self as clk, Kernel as ClKernel, CL_KERNEL_NUM_ARGS};
use opencl3::memory::ClMem;
use opencl3::types::{cl_mem, cl_program, cl_uint};
use parking_lot::Mutex;
use ur_api::{Error, KernelArg, KernelGroupInfo, KernelInfo, NativeHandle, NativeObj, NdRange, ProgramSource, Result};

use crate::conv::{self, check, check3};
use crate::device::{Context, Handle};
use crate::queue::{raw_event, submit, Event, Queue};
use crate::spirv::rewrite::shortened;
use crate::OpenClAdapter;

/// A program built for every device of its context: one this adapter
/// built, or one the caller built with OpenCL itself and handed over by its
/// handle (`Adapter::program_from_native`). Holds one reference to the
/// OpenCL program, released on drop.
#[derive(Debug)]
pub struct Program {
    raw: Handle<cl_program>,
    /// Kernels renamed in the program for the runtime (their names; each
    /// is now `spirv::rewrite::shortened` of that): SPIR runtimes' long
    /// names, see `spirv/rewrite.rs`.
    renamed: Arc<[String]>,
}

impl Program {
    fn new(raw: cl_program) -> Program {
        Program {
            raw: Handle(raw),
            renamed: Arc::from([]),
        }
    }

    /// The runtime's name of the kernel named `name`.
    fn runtime_name<'a>(&self, name: &'a str) -> std::borrow::Cow<'a, str> {
        if self.renamed.iter().any(|n| n == name) {
            shortened(name)
        } else {
            name.into()
        }
    }
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

/// Creates and builds `source` for every device of `ctx`, calling the
/// runtime (no cache).
fn build(ctx: &Context, source: &ProgramSource, options: &str) -> Result<Program> {
    let mut options = options.to_owned();
    let spir = |spir: crate::spirv::Spir, options: &mut String| -> Result<Program> {
        options.insert_str(0, "-x spir ");
        Ok(Program {
            raw: Handle(from_binary(ctx, &spir.bitcode)?),
            renamed: spir.renamed,
        })
    };
    // Owned from here: released on every return below.
    let program = match source {
        ProgramSource::OpenClC(src) => {
            Program::new(check(cl3::program::create_program_with_source(ctx.cl.get(), &[src]))?)
        }
        ProgramSource::SpirV(il) => match &ctx.translator {
            None => Program::new(check(cl3::program::create_program_with_il(ctx.cl.get(), il))?),
            // SPIR bitcode, one copy per device, built as SPIR (`spirv/mod.rs`).
            Some(t) => spir(t.bitcode(il, ctx.group_builtins)?, &mut options)?,
        },
        ProgramSource::SpirVModules(modules) => match &ctx.translator {
            None => return compile_and_link(ctx, modules, &options),
            // Linked as bitcode, then built as one SPIR program.
            Some(t) => {
                let modules: Vec<&[u8]> = modules.iter().map(Vec::as_slice).collect();
                spir(t.linked_bitcode(&modules, ctx.group_builtins)?, &mut options)?
            }
        },
        other => return Err(Error::unsupported(format!("{:?} programs on OpenCL", other.format()))),
    };
    let raw = program.raw.0;
    let devices: Vec<_> = ctx.devices.iter().map(|d| d.0).collect();
    let c_options = c_options(options)?;
    ctx.failed_builds.runtime_builds.fetch_add(1, Ordering::Relaxed);
    match cl3::program::build_program(raw, &devices, &c_options, None, ptr::null_mut()) {
        Ok(()) => Ok(program),
        Err(CL_BUILD_PROGRAM_FAILURE) => Err(Error::ProgramBuild {
            log: build_log(raw, &ctx.devices),
        }),
        Err(code) => Err(conv::error(code)),
    }
}

fn c_options(options: String) -> Result<std::ffi::CString> {
    std::ffi::CString::new(options).map_err(|_| Error::invalid("build options contain a NUL byte"))
}

/// SPIR-V modules that import each other's symbols, on a runtime that takes
/// IL: each is compiled (`clCompileProgram`, with `options`), then all are
/// linked into one executable program (`clLinkProgram`, no options: the
/// options that also apply to linking, such as `-cl-fast-relaxed-math`,
/// are compile options as well).
fn compile_and_link(ctx: &Context, modules: &[Vec<u8>], options: &str) -> Result<Program> {
    let devices: Vec<_> = ctx.devices.iter().map(|d| d.0).collect();
    let c_options = c_options(options.to_owned())?;
    let mut compiled = Vec::with_capacity(modules.len());
    for il in modules {
        // Owned from here: released when `compiled` goes.
        let p = Program::new(check(cl3::program::create_program_with_il(ctx.cl.get(), il))?);
        ctx.failed_builds.runtime_builds.fetch_add(1, Ordering::Relaxed);
        match cl3::program::compile_program(p.raw.0, &devices, &c_options, &[], &[], None, ptr::null_mut()) {
            Ok(()) => compiled.push(p),
            Err(CL_COMPILE_PROGRAM_FAILURE) => {
                return Err(Error::ProgramBuild {
                    log: build_log(p.raw.0, &ctx.devices),
                })
            }
            Err(code) => return Err(conv::error(code)),
        }
    }
    let raws: Vec<cl_program> = compiled.iter().map(|p| p.raw.0).collect();
    // SAFETY: `raws` are live programs of the context, compiled for its
    // devices (`compiled` holds them for the call); no callback.
    match unsafe { cl3::program::link_program(ctx.cl.get(), &devices, c"", &raws, None, ptr::null_mut()) } {
        Ok(raw) => Ok(Program::new(raw)),
        // OpenCL hands out no program (so no log) when linking fails
        // before making one.
        Err(CL_LINK_PROGRAM_FAILURE) => Err(Error::ProgramBuild {
            log: format!(
                "linking {} SPIR-V modules failed (an import no module exports, or a symbol defined twice)",
                modules.len()
            ),
        }),
        Err(code) => Err(conv::error(code)),
    }
}

/// The format of a program's bytes, part of a [`FailedBuilds`] key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SourceFormat {
    /// OpenCL C source text.
    OpenClC,
    /// A SPIR-V module.
    SpirV,
    /// SPIR-V modules linked into one program, [`joined`].
    SpirVModules,
}

/// Several modules as one byte string for a [`FailedBuilds`] key: each
/// module's length (8 bytes, little-endian) before its bytes, so two lists
/// give the same string only when they are the same modules.
fn joined(modules: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(modules.iter().map(|m| m.len() + 8).sum());
    for m in modules {
        out.extend_from_slice(&(m.len() as u64).to_le_bytes());
        out.extend_from_slice(m);
    }
    out
}

/// At most this many failed builds are kept per context.
pub(crate) const FAILED_BUILDS_MAX: usize = 64;

/// At most this many program bytes (sources and modules) are kept per
/// context; a larger program is not kept at all.
pub(crate) const FAILED_BUILDS_MAX_BYTES: usize = 64 << 20;

/// Programs whose build failed in one context, so that building them again
/// answers the same failure and log at once instead of calling the runtime.
///
/// SYCL runtimes keep the programs that built, not the failures: a kernel
/// whose program does not build is created and built again at every use.
/// On PoCL 3.1, where every SYCL kernel calling a builtin its kernel
/// library lacks failed to build (before the group builtins of
/// `spirv/builtins.rs`; what they do not cover still fails), that is ~0.3 s
/// a time, and dpnp's test files call such kernels thousands of times. A build depends only on the devices, the program's
/// bytes and the options, and the devices are the context's, so a failure
/// is kept per context (it goes with the context) and keyed by:
///
/// - the program's format and its bytes: OpenCL C text or the SPIR-V module
///   as given, before any translation. The bytes are kept and compared in
///   full; a 64-bit hash only picks the bucket, so a hash collision never
///   answers another program's failure;
/// - the build options as the caller gave them.
///
/// Only build failures (`CL_BUILD_PROGRAM_FAILURE`, or the SPIR-V
/// translator refusing the module) are kept: the runtime's verdict on that
/// program. Other errors (out of memory, a lost device) may not recur and
/// are not kept; successful builds are not kept either (the caller owns
/// the program it gets).
///
/// Bounded: at most [`FAILED_BUILDS_MAX`] failures and
/// [`FAILED_BUILDS_MAX_BYTES`] program bytes per context. Inserting past
/// either bound evicts the failure answered least recently first.
#[derive(Default)]
pub(crate) struct FailedBuilds {
    entries: Mutex<FailedEntries>,
    /// `clBuildProgram` and `clCompileProgram` calls made in this context
    /// (all builds, not only failed ones): the tests' evidence that a cached failure calls no
    /// runtime.
    pub(crate) runtime_builds: AtomicUsize,
}

#[derive(Default)]
struct FailedEntries {
    /// Hash of the key -> the failures with that hash.
    by_hash: HashMap<u64, Vec<Failure>>,
    /// Entries in `by_hash`.
    count: usize,
    /// Program bytes held by the entries.
    bytes: usize,
    /// Use clock: incremented at each insert and hit.
    clock: u64,
}

struct Failure {
    format: SourceFormat,
    bytes: Box<[u8]>,
    options: String,
    log: String,
    /// The `clock` of the last insert or hit.
    last_used: u64,
}

/// The counts only: the kept programs may be megabytes each.
impl std::fmt::Debug for FailedBuilds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.entries.lock();
        f.debug_struct("FailedBuilds")
            .field("failures", &e.count)
            .field("bytes", &e.bytes)
            .field("runtime_builds", &self.runtime_builds.load(Ordering::Relaxed))
            .finish()
    }
}

impl Failure {
    fn is(&self, format: SourceFormat, bytes: &[u8], options: &str) -> bool {
        self.format == format && self.options == options && *self.bytes == *bytes
    }
}

fn key_hash(format: SourceFormat, bytes: &[u8], options: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (format, bytes, options).hash(&mut h);
    h.finish()
}

impl FailedBuilds {
    /// The log of an earlier failed build of these bytes with these options.
    pub(crate) fn get(&self, format: SourceFormat, bytes: &[u8], options: &str) -> Option<String> {
        let hash = key_hash(format, bytes, options);
        let mut e = self.entries.lock();
        e.clock += 1;
        let now = e.clock;
        let f = e
            .by_hash
            .get_mut(&hash)?
            .iter_mut()
            .find(|f| f.is(format, bytes, options))?;
        f.last_used = now;
        tracing::debug!(
            bytes = bytes.len(),
            options,
            "program build failed before in this context: not rebuilt"
        );
        Some(f.log.clone())
    }

    /// Keeps a failed build, evicting the least recently used failures to
    /// stay within the bounds.
    pub(crate) fn insert(&self, format: SourceFormat, bytes: &[u8], options: &str, log: &str) {
        if bytes.len() > FAILED_BUILDS_MAX_BYTES {
            return;
        }
        let hash = key_hash(format, bytes, options);
        let mut e = self.entries.lock();
        if e.by_hash
            .get(&hash)
            .is_some_and(|b| b.iter().any(|f| f.is(format, bytes, options)))
        {
            return; // another thread kept it first
        }
        while e.count >= FAILED_BUILDS_MAX || e.bytes + bytes.len() > FAILED_BUILDS_MAX_BYTES {
            if !e.evict_oldest() {
                break;
            }
        }
        e.clock += 1;
        let last_used = e.clock;
        e.by_hash.entry(hash).or_default().push(Failure {
            format,
            bytes: bytes.into(),
            options: options.to_owned(),
            log: log.to_owned(),
            last_used,
        });
        e.count += 1;
        e.bytes += bytes.len();
    }

    /// Failed builds kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().count
    }
}

impl FailedEntries {
    /// Drops the least recently used failure; false when there is none.
    fn evict_oldest(&mut self) -> bool {
        let oldest = self
            .by_hash
            .iter()
            .flat_map(|(h, b)| b.iter().enumerate().map(move |(i, f)| (f.last_used, *h, i)))
            .min();
        let Some((_, hash, i)) = oldest else { return false };
        let Some(bucket) = self.by_hash.get_mut(&hash) else {
            return false;
        };
        let gone = bucket.swap_remove(i);
        if bucket.is_empty() {
            self.by_hash.remove(&hash);
        }
        self.count -= 1;
        self.bytes -= gone.bytes.len();
        true
    }
}

/// The raw handles of this adapter's objects.
pub(crate) fn native_handle(obj: NativeObj<'_, OpenClAdapter>) -> Result<NativeHandle> {
    let raw = match obj {
        NativeObj::Platform(p) => p.cl.id() as u64,
        NativeObj::Device(d) => d.id.0 as u64,
        NativeObj::Context(c) => c.cl.get() as u64,
        NativeObj::Queue(q) => q.raw() as u64,
        NativeObj::Buffer(b) => b.cl.get() as u64,
        NativeObj::Program(p) => p.raw.0 as u64,
        NativeObj::Kernel(k) => k.cl.lock().get() as u64,
        NativeObj::Event(e) => e.cl.get() as u64,
        NativeObj::EventQueue(e) => {
            e.native_queue()
                .ok_or_else(|| Error::unsupported("the queue of an event enqueued on none"))? as u64
        }
    };
    // SAFETY: a live object of this adapter, the backend's own handle.
    Ok(unsafe { NativeHandle::new(raw) })
}

/// `CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL` (`cl_intel_required_subgroup_size`).
const CL_KERNEL_COMPILE_SUB_GROUP_SIZE_INTEL: u32 = 0x410A;

impl ur_api::adapter::Kernels for crate::OpenClAdapter {
    /// Builds `source` for every device of `ctx`; a failed build reports every
    /// device's build log in [`Error::ProgramBuild`]. A build that failed
    /// before in `ctx` (the same source and options) fails again with the
    /// same log without calling the runtime again (a cache per context,
    /// bounded; see `FailedBuilds` in this module).
    fn create_program(&self, ctx: &Context, source: &ProgramSource, options: &str) -> Result<Program> {
        if options.contains('\0') {
            return Err(Error::invalid("build options contain a NUL byte"));
        }
        let (format, bytes) = match source {
            ProgramSource::OpenClC(src) => (SourceFormat::OpenClC, std::borrow::Cow::Borrowed(src.as_bytes())),
            ProgramSource::SpirV(il) => (SourceFormat::SpirV, std::borrow::Cow::Borrowed(il.as_slice())),
            ProgramSource::SpirVModules(modules) => {
                (SourceFormat::SpirVModules, std::borrow::Cow::Owned(joined(modules)))
            }
            // Not reached: the dyn layer only passes formats the devices listed.
            other => return Err(Error::unsupported(format!("{:?} programs on OpenCL", other.format()))),
        };
        if let Some(log) = ctx.failed_builds.get(format, &bytes, options) {
            return Err(Error::ProgramBuild { log });
        }
        match build(ctx, source, options) {
            Err(Error::ProgramBuild { log }) => {
                ctx.failed_builds.insert(format, &bytes, options, &log);
                Err(Error::ProgramBuild { log })
            }
            other => other,
        }
    }

    fn create_kernel(&self, p: &Program, name: &str) -> Result<Kernel> {
        let not_found = || Error::KernelNotFound { name: name.to_owned() };
        if name.contains('\0') {
            return Err(not_found());
        }
        let c_name = std::ffi::CString::new(p.runtime_name(name).as_bytes()).map_err(|_| not_found())?;
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
        Ok(Program::new(raw))
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
            .map(|n| {
                let long = p.renamed.iter().find(|long| shortened(long) == n);
                long.map_or(n, String::as_str).to_owned()
            })
            .collect())
    }

    /// The kernel's work-group figures on `device` (`clGetKernelWorkGroupInfo`)
    /// and, on OpenCL 2.1 devices, its sub-group figures
    /// (`clGetKernelSubGroupInfo`; on devices with the group builtins, whose
    /// sub-groups are rows of the work-group, the largest row up to the
    /// largest listed sub-group size, and one sub-group per work-item at the
    /// most); a figure the device does not answer is 0.
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
        let wg = check3(kernel.get_work_group_size(d))?;
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
        let (max_sub_group_size, max_num_sub_groups) = if device.group_builtins {
            // Rows of the work-group (`spirv/builtins.c`).
            let wg = u32::try_from(wg).unwrap_or(u32::MAX);
            (wg.min(crate::spirv::builtins::LISTED_SUB_GROUP_MAX), wg)
        } else {
            (
                sub(clk::CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, wg),
                sub(clk::CL_KERNEL_MAX_NUM_SUB_GROUPS, 0),
            )
        };
        Ok(KernelGroupInfo {
            work_group_size: wg,
            compile_work_group_size: compile,
            local_mem_size: kernel.get_local_mem_size(d).unwrap_or(0),
            preferred_work_group_size_multiple: kernel.get_work_group_size_multiple(d).unwrap_or(0),
            private_mem_size: kernel.get_private_mem_size(d).unwrap_or(0),
            max_sub_group_size,
            max_num_sub_groups,
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use ur_api::{adapter::prelude::*, Error, ProgramSource};

    use super::{FailedBuilds, SourceFormat, FAILED_BUILDS_MAX, FAILED_BUILDS_MAX_BYTES};
    use crate::OpenClAdapter;

    /// A kernel calling a sub-group function, which PoCL 3.1's kernel
    /// library lacks: its build fails there.
    const SUB_GROUP_KERNEL: &str = "__kernel void k(__global int *p) { p[0] = sub_group_reduce_add(p[0]); }";
    const PLAIN_KERNEL: &str = "__kernel void k(__global int *p) { p[0] += 1; }";

    #[test]
    fn a_failure_is_answered_for_the_same_bytes_format_and_options_only() {
        let f = FailedBuilds::default();
        f.insert(SourceFormat::OpenClC, b"abc", "-O2", "the log");
        assert_eq!(f.get(SourceFormat::OpenClC, b"abc", "-O2").as_deref(), Some("the log"));
        assert_eq!(f.get(SourceFormat::OpenClC, b"abd", "-O2"), None);
        assert_eq!(f.get(SourceFormat::OpenClC, b"abc", "-O1"), None);
        assert_eq!(f.get(SourceFormat::SpirV, b"abc", "-O2"), None);
        // Kept once, however often it is inserted.
        f.insert(SourceFormat::OpenClC, b"abc", "-O2", "the log");
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn the_least_recently_used_failure_is_evicted_past_the_count() {
        let f = FailedBuilds::default();
        for i in 0..FAILED_BUILDS_MAX {
            f.insert(SourceFormat::SpirV, &i.to_le_bytes(), "", "log");
        }
        // The first is used again, so the second is now the oldest.
        assert!(f.get(SourceFormat::SpirV, &0usize.to_le_bytes(), "").is_some());
        f.insert(SourceFormat::SpirV, b"one more", "", "log");
        assert_eq!(f.len(), FAILED_BUILDS_MAX);
        assert!(f.get(SourceFormat::SpirV, &0usize.to_le_bytes(), "").is_some());
        assert!(f.get(SourceFormat::SpirV, &1usize.to_le_bytes(), "").is_none());
        assert!(f.get(SourceFormat::SpirV, b"one more", "").is_some());
    }

    #[test]
    fn the_bytes_kept_stay_within_their_bound() {
        let f = FailedBuilds::default();
        let half = vec![1u8; FAILED_BUILDS_MAX_BYTES / 2];
        let other = vec![2u8; FAILED_BUILDS_MAX_BYTES / 2];
        f.insert(SourceFormat::SpirV, &half, "", "a");
        f.insert(SourceFormat::SpirV, &other, "", "b");
        assert_eq!(f.len(), 2);
        // A third module needs room: the oldest goes.
        f.insert(SourceFormat::SpirV, b"small", "", "c");
        assert_eq!(f.len(), 2);
        assert!(f.get(SourceFormat::SpirV, &half, "").is_none());
        assert!(f.get(SourceFormat::SpirV, &other, "").is_some());
        // One larger than the bound is not kept, and evicts nothing.
        f.insert(SourceFormat::SpirV, &vec![3u8; FAILED_BUILDS_MAX_BYTES + 1], "", "d");
        assert_eq!(f.len(), 2);
    }

    /// On PoCL: a program that fails to build, built twice, fails twice
    /// with the same log, and only the first calls `clBuildProgram`; with
    /// other options it is built again; a program that builds is built by
    /// the runtime each time (successes are not kept). Skips without PoCL.
    #[test]
    fn a_failed_build_is_answered_again_without_the_runtime() {
        let a = OpenClAdapter::new();
        let Some(devices) = a.platforms().unwrap_or_default().iter().find_map(|p| {
            let pocl = a.platform_info(p).ok()?.name.contains("Portable Computing Language");
            pocl.then(|| a.devices(p).unwrap_or_default())
        }) else {
            assert!(std::env::var_os("UR_REQUIRE_OPENCL").is_none(), "no PoCL platform");
            eprintln!("SKIP a_failed_build_is_answered_again_without_the_runtime: no PoCL platform");
            return;
        };
        let ctx = a.create_context(&devices.iter().collect::<Vec<_>>()).unwrap();
        let builds = || ctx.failed_builds.runtime_builds.load(Ordering::Relaxed);
        let failing = ProgramSource::OpenClC(SUB_GROUP_KERNEL.to_owned());
        let log = |r: ur_api::Result<_>| match r {
            Err(Error::ProgramBuild { log }) => log,
            other => panic!("expected a build failure, got {other:?}"),
        };
        let first = log(a.create_program(&ctx, &failing, ""));
        assert_eq!(builds(), 1);
        assert!(first.contains("sub_group_reduce_add"), "{first}");
        let second = log(a.create_program(&ctx, &failing, ""));
        assert_eq!(second, first);
        assert_eq!(builds(), 1, "the second build called the runtime");
        // Other options: another build.
        log(a.create_program(&ctx, &failing, "-cl-opt-disable"));
        assert_eq!(builds(), 2);
        let plain = ProgramSource::OpenClC(PLAIN_KERNEL.to_owned());
        drop(a.create_program(&ctx, &plain, "").unwrap());
        drop(a.create_program(&ctx, &plain, "").unwrap());
        assert_eq!(builds(), 4);
    }
}
