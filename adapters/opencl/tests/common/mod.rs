//! Shared setup of the tests against real OpenCL runtimes.

#![allow(dead_code)] // reason: each test binary uses a different part of this module.

use std::cell::RefCell;
use std::path::Path;
use std::process::Command;
use std::sync::Once;

use ur_api::{
    ArgValue, BufferDesc, BufferId, ContextId, DeviceId, DynAdapter, KernelId, NdRange, ProgramFormats, ProgramId,
    ProgramSource, QueueId, QueueProps, Runtime,
};

/// Asks PoCL for two pthread devices and rusticl for its llvmpipe device,
/// and the ICD loader for the vendors folder where `cargo xtask setup`
/// registered Intel's CPU runtime, unless the environment already says
/// otherwise. Runs before any OpenCL call of the process (runtimes and the
/// loader read these once, when first loaded).
pub fn env_defaults() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (k, v) in [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")] {
            if std::env::var_os(k).is_none() {
                std::env::set_var(k, v);
            }
        }
        if std::env::var_os("OCL_ICD_VENDORS").is_none() {
            if let Some(v) = ur_opencl::registered_icd_vendors() {
                std::env::set_var("OCL_ICD_VENDORS", v);
            }
        }
    });
}

/// Set (to anything) where OpenCL must be present, such as CI: a missing
/// runtime or device then fails the tests instead of skipping them.
pub const REQUIRE_ENV: &str = "UR_REQUIRE_OPENCL";

/// Skips a test with its reason, or fails it when [`REQUIRE_ENV`] is set.
pub fn skip(test: &str, why: &str) {
    if std::env::var_os(REQUIRE_ENV).is_some() {
        panic!("{test}: {why} ({REQUIRE_ENV} is set, so this is a failure)");
    }
    eprintln!("SKIP {test}: {why}");
}

/// A runtime over the OpenCL adapter, or `None` (with the reason printed)
/// when this machine has no OpenCL device.
pub fn runtime(test: &str) -> Option<Runtime> {
    env_defaults();
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new()).expect("OpenCL adapter init");
    if rt.all_devices().is_empty() {
        skip(test, "no OpenCL platform with devices on this machine");
        return None;
    }
    Some(rt)
}

/// The devices of each platform, in platform order.
pub fn by_platform(rt: &Runtime) -> Vec<Vec<DeviceId>> {
    rt.platforms().into_iter().map(|p| rt.devices(p).unwrap()).collect()
}

/// The first platform with at least two devices (PoCL with two pthread devices).
pub fn two_device_platform(rt: &Runtime) -> Option<Vec<DeviceId>> {
    by_platform(rt).into_iter().find(|d| d.len() >= 2)
}

/// A platform name.
pub fn platform_name(rt: &Runtime, dev: DeviceId) -> String {
    let a: &std::sync::Arc<dyn DynAdapter> = rt.adapter_of(dev).unwrap();
    a.platform_info(a.device_platform(dev).unwrap()).unwrap().name
}

/// Bytes that differ per position, so a misplaced byte is caught.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// How a committed module is made from its source (conformance/kernels/README.md).
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    /// The OpenCL C version (`CL1.2`, `CL2.0`).
    pub cl_std: &'static str,
    /// The SPIR-V extensions the translator may use (`+SPV_A,+SPV_B`), or `""`.
    pub spirv_ext: &'static str,
    /// Marked as written in OpenCL C++ 1.0, as SYCL's modules are, in place
    /// of the OpenCL C version the translator records.
    pub sycl_source: bool,
}

impl Recipe {
    /// OpenCL C 1.2, no extensions.
    pub const CL12: Recipe = Recipe {
        cl_std: "CL1.2",
        spirv_ext: "",
        sycl_source: false,
    };
    /// OpenCL C 2.0, no extensions.
    pub const CL20: Recipe = Recipe {
        cl_std: "CL2.0",
        ..Recipe::CL12
    };
}

/// The OpSource line of a module in the translator's text form: the
/// translator's for OpenCL C 2.0, and SYCL's (OpenCL C++ 1.0).
const OPENCL_C_20_SOURCE: &str = "3 Source 3 200000";
const SYCL_SOURCE: &str = "3 Source 4 100000";

/// Rebuilds `conformance/kernels/<name>.spv` from `<name>.cl` by `recipe`
/// with the commands of that folder's README; `Err` with the reason where
/// clang-15 or llvm-spirv-15 is not installed or refuses.
pub fn rebuild_module(name: &str, recipe: Recipe) -> Result<Vec<u8>, String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/kernels");
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (bc, spv, spt) = (
        tmp.path().join("module.bc"),
        tmp.path().join("module.spv"),
        tmp.path().join("module.spt"),
    );
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{:?}: {e}", cmd.get_program()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    run(Command::new("clang-15")
        .args(["-cc1", "-triple", "spir64-unknown-unknown"])
        .arg(format!("-cl-std={}", recipe.cl_std))
        .args([
            "-no-opaque-pointers",
            "-finclude-default-header",
            "-O2",
            "-emit-llvm-bc",
        ])
        .arg(dir.join(format!("{name}.cl")))
        .arg("-o")
        .arg(&bc))?;
    let mut translate = Command::new("llvm-spirv-15");
    if !recipe.spirv_ext.is_empty() {
        translate.arg(format!("--spirv-ext={}", recipe.spirv_ext));
    }
    run(translate.arg(&bc).arg("-o").arg(&spv))?;
    if recipe.sycl_source {
        run(Command::new("llvm-spirv-15")
            .arg("-to-text")
            .arg(&spv)
            .arg("-o")
            .arg(&spt))?;
        let text = std::fs::read_to_string(&spt).map_err(|e| e.to_string())?;
        // The translator ends each line of its text with a space.
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.iter().any(|l| l.trim_end() == OPENCL_C_20_SOURCE),
            "{name}: the translator's text has no `{OPENCL_C_20_SOURCE}` line to mark"
        );
        let marked: Vec<&str> = lines
            .into_iter()
            .map(|l| {
                if l.trim_end() == OPENCL_C_20_SOURCE {
                    SYCL_SOURCE
                } else {
                    l
                }
            })
            .collect();
        std::fs::write(&spt, marked.join("\n") + "\n").map_err(|e| e.to_string())?;
        run(Command::new("llvm-spirv-15")
            .arg("-to-binary")
            .arg(&spt)
            .arg("-o")
            .arg(&spv))?;
    }
    std::fs::read(&spv).map_err(|e| e.to_string())
}

/// Checks the committed module `conformance/kernels/<name>.spv` against a
/// rebuild from its source ([`rebuild_module`]); a skip, saying why, where
/// the tools are not installed.
pub fn check_committed_module(name: &str, recipe: Recipe, committed: &[u8]) {
    match rebuild_module(name, recipe) {
        Ok(fresh) => assert!(
            fresh == committed,
            "conformance/kernels/{name}.spv is stale: rebuild it (conformance/kernels/README.md)"
        ),
        Err(why) => eprintln!("SKIP {name} rebuild: {why}"),
    }
}

/// The devices that take SPIR-V (natively, or through the translator), or
/// none with `test` skipped.
pub fn spirv_devices(rt: &Runtime, test: &str) -> Vec<DeviceId> {
    let il: Vec<_> = rt
        .all_devices()
        .into_iter()
        .filter(|&d| {
            rt.device_info(d)
                .unwrap()
                .program_formats
                .contains(ProgramFormats::SPIRV)
        })
        .collect();
    if il.is_empty() {
        skip(
            test,
            "no OpenCL device takes SPIR-V (Intel's CPU runtime is not registered, llvm-spirv-15 is not installed)",
        );
    }
    il
}

/// A buffer holding `data`, written through `q`.
pub fn buffer_of<T: Copy>(rt: &Runtime, q: QueueId, ctx: ContextId, data: &[T]) -> BufferId {
    let bytes = std::mem::size_of_val(data);
    let b = rt.create_buffer(ctx, &BufferDesc::new(bytes), None).unwrap();
    // SAFETY: `data` is `bytes` bytes of plain numbers.
    let raw = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), bytes) };
    rt.write(q, b, 0, raw).unwrap();
    b
}

/// The first `n` values of `b`, read through `q`.
pub fn read_back<T: Copy + Default>(rt: &Runtime, q: QueueId, b: BufferId, n: usize) -> Vec<T> {
    let mut out = vec![T::default(); n];
    let bytes = std::mem::size_of_val(out.as_slice());
    // SAFETY: `out` is `bytes` bytes of plain numbers; any bit pattern is one.
    let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), bytes) };
    rt.read(q, b, 0, raw).unwrap();
    out
}

/// A context, an in-order queue on one of its devices and a program (a
/// SPIR-V module, or any [`ProgramSource`]) built for it, with the kernels
/// made from it: what most tests here set up per device. Dropping it
/// releases the kernels, the program, the queue and the context, and
/// checks each release unless the test is failing already.
pub struct Built<'a> {
    pub rt: &'a Runtime,
    pub ctx: ContextId,
    pub q: QueueId,
    pub prog: ProgramId,
    /// The queue's device's name, for messages.
    pub name: String,
    kernels: RefCell<Vec<KernelId>>,
}

impl<'a> Built<'a> {
    /// `module` built in a context of device `d` alone.
    pub fn new(rt: &'a Runtime, d: DeviceId, module: &[u8]) -> Built<'a> {
        Built::over(rt, &[d], d, module)
    }

    /// `module` built in a context over `devices`, the queue on `d`.
    pub fn over(rt: &'a Runtime, devices: &[DeviceId], d: DeviceId, module: &[u8]) -> Built<'a> {
        Built::from_source(rt, devices, d, &ProgramSource::SpirV(module.to_vec()))
    }

    /// `source` built in a context over `devices`, the queue on `d`.
    pub fn from_source(rt: &'a Runtime, devices: &[DeviceId], d: DeviceId, source: &ProgramSource) -> Built<'a> {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(devices).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let prog = rt
            .create_program(ctx, source, "")
            .unwrap_or_else(|e| panic!("the program builds on {name}: {e}"));
        Built {
            rt,
            ctx,
            q,
            prog,
            name,
            kernels: RefCell::new(Vec::new()),
        }
    }

    /// The kernel `name` of the module, released with the rest.
    pub fn kernel(&self, name: &str) -> KernelId {
        let k = self.rt.create_kernel(self.prog, name).unwrap();
        self.kernels.borrow_mut().push(k);
        k
    }

    /// Launches `k` over `range` and waits for it.
    pub fn run(&self, k: KernelId, range: &NdRange, args: &[ArgValue<'_>]) {
        let done = self.rt.enqueue_launch(self.q, k, range, args, &[]).unwrap();
        self.rt.complete(done).unwrap();
    }

    /// A buffer of the context holding `data`.
    pub fn buffer<T: Copy>(&self, data: &[T]) -> BufferId {
        buffer_of(self.rt, self.q, self.ctx, data)
    }

    /// The first `n` values of `b`.
    pub fn read<T: Copy + Default>(&self, b: BufferId, n: usize) -> Vec<T> {
        read_back(self.rt, self.q, b, n)
    }
}

impl Drop for Built<'_> {
    fn drop(&mut self) {
        let rt = self.rt;
        let released = self
            .kernels
            .take()
            .into_iter()
            .map(|k| rt.release_kernel(k))
            .chain([
                rt.release_program(self.prog),
                rt.release_queue(self.q),
                rt.release_context(self.ctx),
            ])
            .collect::<Vec<_>>();
        if !std::thread::panicking() {
            for r in released {
                r.unwrap();
            }
        }
    }
}
