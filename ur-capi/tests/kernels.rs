//! SPIR-V programs and kernel launches through this library's entry
//! points, as libsycl makes them: `urDeviceSelectBinary`, a program from
//! IL, built, a kernel with its queries, launches with USM-pointer,
//! by-value and memory-object arguments, every element checked; and the
//! errors a caller meets (kernel of an unbuilt program, unknown kernel, a
//! module that is not SPIR-V). Runs on every device that takes SPIR-V
//! (Intel's CPU OpenCL here); skips, saying why, where none is
//! (`UR_REQUIRE_OPENCL=1`, CI, makes that a failure).

#![allow(missing_docs)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ur_adapter_rust::ddi;
use ur_adapter_rust::sys::*;

mod capi;
use capi::{devices, ok};

/// The OpenCL adapter's SPIR-V test module (`fill_index`, `add_one`,
/// `vec_add`, `add_scalar`; source beside it).
const MODULE: &[u8] = include_bytes!("../../conformance/kernels/kernels.spv");

/// The device's pick among `targets` (`None`: `INVALID_BINARY`).
///
/// # Safety
///
/// `t` is this library's table and `d` a device of it.
unsafe fn select(t: &ur_dditable_t, d: ur_device_handle_t, targets: &[&std::ffi::CStr]) -> Option<u32> {
    let bins: Vec<ur_device_binary_t> = targets
        .iter()
        .map(|s| ur_device_binary_t {
            stype: UR_STRUCTURE_TYPE_DEVICE_BINARY,
            pNext: null(),
            pDeviceTargetSpec: s.as_ptr(),
        })
        .collect();
    let mut i = u32::MAX;
    // SAFETY: `bins` holds `len` entries; `i` is writable.
    match unsafe { t.Device.pfnSelectBinary.unwrap()(d, bins.as_ptr(), bins.len() as u32, &mut i) } {
        UR_RESULT_SUCCESS => Some(i),
        UR_RESULT_ERROR_INVALID_BINARY => None,
        other => panic!("urDeviceSelectBinary: {other}"),
    }
}

#[test]
fn spirv_kernels_run_on_every_device_that_takes_spirv() {
    // SAFETY: the table is this library's, built once and never written.
    let t = unsafe { &*ddi::table() };
    // SAFETY: every call passes live out-pointers, buffers of the sizes
    // given and handles this library returned, as the UR specification asks.
    unsafe {
        let mut ran = 0;
        for (d, backend) in devices(t) {
            let pick = select(t, d, &[c"nvptx64", c"spir64"]);
            if backend != UR_BACKEND_OPENCL && backend != UR_BACKEND_LEVEL_ZERO {
                assert_eq!(pick, None, "a host-only or CUDA device takes no spir64 image");
                continue;
            }
            let Some(pick) = pick else { continue };
            assert_eq!(pick, 1, "the spir64 image, not the PTX one");
            run_on(t, d);
            ran += 1;
        }
        skip_unless_ran(ran);
    }
}

fn skip_unless_ran(ran: usize) {
    if ran == 0 {
        assert!(
            std::env::var("UR_REQUIRE_OPENCL").as_deref() != Ok("1"),
            "no device takes SPIR-V (Intel's CPU OpenCL: cargo xtask setup)"
        );
        eprintln!("skipped: no device takes SPIR-V (Intel's CPU OpenCL: cargo xtask setup)");
    }
}

/// Two modules, one calling a function the other defines (sources beside
/// them), each compiled, then linked as libsycl links device images.
const LINK_MAIN: &[u8] = include_bytes!("../../conformance/kernels/link_main.spv");
const LINK_LIB: &[u8] = include_bytes!("../../conformance/kernels/link_lib.spv");

#[test]
fn programs_of_several_modules_link_and_run() {
    // SAFETY: the table is this library's, built once and never written.
    let t = unsafe { &*ddi::table() };
    // SAFETY: as in the test above.
    unsafe {
        let mut ran = 0;
        for (d, _) in devices(t) {
            if select(t, d, &[c"spir64"]).is_none() {
                continue;
            }
            let mut c = null_mut();
            ok(t.Context.pfnCreate.unwrap()(1, &d, null(), &mut c), "urContextCreate");
            let mut q = null_mut();
            ok(t.Queue.pfnCreate.unwrap()(c, d, null(), &mut q), "urQueueCreate");
            let mut parts = [null_mut(); 2];
            for (p, il) in parts.iter_mut().zip([LINK_MAIN, LINK_LIB]) {
                ok(
                    t.Program.pfnCreateWithIL.unwrap()(c, il.as_ptr().cast(), il.len(), null(), p),
                    "urProgramCreateWithIL",
                );
                ok(
                    t.ProgramExp.pfnCompileExp.unwrap()(*p, 1, &mut { d }, 0, c"".as_ptr()),
                    "urProgramCompileExp",
                );
            }
            let mut p = null_mut();
            ok(
                t.ProgramExp.pfnLinkExp.unwrap()(c, 1, &mut { d }, 0, 2, parts.as_ptr(), c"".as_ptr(), &mut p),
                "urProgramLinkExp",
            );
            let mut il_size = usize::MAX;
            ok(
                t.Program.pfnGetInfo.unwrap()(p, UR_PROGRAM_INFO_IL, 0, null_mut(), &mut il_size),
                "IL size",
            );
            assert_eq!(il_size, 0, "a linked program was made from no one module");
            let mut k = null_mut();
            ok(
                t.Kernel.pfnCreate.unwrap()(p, c"apply_scaled".as_ptr(), &mut k),
                "urKernelCreate",
            );
            let init: Vec<i32> = (0..512).map(|i| 5 - i).collect();
            let back = on_buffer(t, c, q, k, &init);
            for (i, (x, v)) in init.iter().zip(&back).enumerate() {
                assert_eq!(*v, 3 * x + 1, "element {i}: scaled() from the other module");
            }
            ok(t.Kernel.pfnRelease.unwrap()(k), "kernel release");
            for p in parts.into_iter().chain([p]) {
                ok(t.Program.pfnRelease.unwrap()(p), "program release");
            }
            ok(t.Queue.pfnRelease.unwrap()(q), "queue release");
            ok(t.Context.pfnRelease.unwrap()(c), "context release");
            ran += 1;
        }
        skip_unless_ran(ran);
    }
}

/// # Safety
///
/// `t` is this library's table and `d` a device of it that takes SPIR-V.
unsafe fn run_on(t: &ur_dditable_t, d: ur_device_handle_t) {
    const N: usize = 4096;
    // SAFETY: as the test's contract says.
    unsafe {
        let mut c = null_mut();
        ok(t.Context.pfnCreate.unwrap()(1, &d, null(), &mut c), "urContextCreate");
        let mut q = null_mut();
        ok(t.Queue.pfnCreate.unwrap()(c, d, null(), &mut q), "urQueueCreate");

        // Not SPIR-V: refused when the program is made.
        let junk = [0u8; 16];
        let mut p = null_mut();
        assert_eq!(
            t.Program.pfnCreateWithIL.unwrap()(c, junk.as_ptr().cast(), junk.len(), null(), &mut p),
            UR_RESULT_ERROR_INVALID_BINARY
        );
        ok(
            t.Program.pfnCreateWithIL.unwrap()(c, MODULE.as_ptr().cast(), MODULE.len(), null(), &mut p),
            "urProgramCreateWithIL",
        );
        let mut k = null_mut();
        assert_eq!(
            t.Kernel.pfnCreate.unwrap()(p, c"add_scalar".as_ptr(), &mut k),
            UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE,
            "a kernel needs a built program"
        );
        ok(t.Program.pfnBuild.unwrap()(c, p, c"".as_ptr()), "urProgramBuild");
        let mut status: ur_program_build_status_t = 0;
        ok(
            t.Program.pfnGetBuildInfo.unwrap()(
                p,
                d,
                UR_PROGRAM_BUILD_INFO_STATUS,
                size_of_val(&status),
                (&raw mut status).cast(),
                null_mut(),
            ),
            "build status",
        );
        assert_eq!(status, UR_PROGRAM_BUILD_STATUS_SUCCESS);
        assert_eq!(
            t.Kernel.pfnCreate.unwrap()(p, c"no_such_kernel".as_ptr(), &mut k),
            UR_RESULT_ERROR_INVALID_KERNEL_NAME
        );
        ok(
            t.Kernel.pfnCreate.unwrap()(p, c"add_scalar".as_ptr(), &mut k),
            "urKernelCreate",
        );
        let mut nargs = 0u32;
        ok(
            t.Kernel.pfnGetInfo.unwrap()(k, UR_KERNEL_INFO_NUM_ARGS, 4, (&raw mut nargs).cast(), null_mut()),
            "num args",
        );
        assert_eq!(nargs, 2);
        let mut wg = 0usize;
        ok(
            t.Kernel.pfnGetGroupInfo.unwrap()(
                k,
                d,
                UR_KERNEL_GROUP_INFO_WORK_GROUP_SIZE,
                size_of::<usize>(),
                (&raw mut wg).cast(),
                null_mut(),
            ),
            "work-group size",
        );
        assert!(wg >= 1, "a kernel runs in work groups of at least one item");

        // USM pointer + by-value argument: buf[i] = i, then += 7.
        let mut ptr: *mut c_void = null_mut();
        ok(
            t.USM.pfnSharedAlloc.unwrap()(c, d, null(), null_mut(), N * 4, &mut ptr),
            "urUSMSharedAlloc",
        );
        let init: Vec<u32> = (0..N as u32).collect();
        ok(
            t.Enqueue.pfnUSMMemcpy.unwrap()(q, true, ptr, init.as_ptr().cast(), N * 4, 0, null(), null_mut()),
            "fill",
        );
        let k7 = 7u32;
        let args = [
            ur_exp_kernel_arg_properties_t {
                stype: UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES,
                pNext: null_mut(),
                type_: UR_EXP_KERNEL_ARG_TYPE_POINTER,
                index: 0,
                size: 8,
                value: ur_exp_kernel_arg_value_t { pointer: ptr },
            },
            ur_exp_kernel_arg_properties_t {
                stype: UR_STRUCTURE_TYPE_EXP_KERNEL_ARG_PROPERTIES,
                pNext: null_mut(),
                type_: UR_EXP_KERNEL_ARG_TYPE_VALUE,
                index: 1,
                size: 4,
                value: ur_exp_kernel_arg_value_t {
                    value: (&raw const k7).cast(),
                },
            },
        ];
        let global = N;
        let launch = t.EnqueueExp.pfnKernelLaunchWithArgsExp.unwrap();
        assert_eq!(
            launch(
                q,
                k,
                4,
                null(),
                &global,
                null(),
                2,
                args.as_ptr(),
                null(),
                0,
                null(),
                null_mut()
            ),
            UR_RESULT_ERROR_INVALID_WORK_DIMENSION
        );
        // Launches add_scalar over `global` items (work-groups of `local`,
        // or the runtime's choice) and waits for its event.
        let launch_and_wait = |global: usize, local: Option<usize>, what: &str| {
            let mut ev = null_mut();
            let local = local.as_ref().map_or(null(), |l| l as *const usize);
            ok(
                launch(
                    q,
                    k,
                    1,
                    null(),
                    &global,
                    local,
                    2,
                    args.as_ptr(),
                    null(),
                    0,
                    null(),
                    &mut ev,
                ),
                what,
            );
            ok(t.Event.pfnWait.unwrap()(1, &ev), "wait");
            ok(t.Event.pfnRelease.unwrap()(ev), "event release");
        };
        launch_and_wait(global, None, "launch add_scalar");
        // An empty range (dpnp's reductions over empty arrays, local size
        // 1): success, an event that completes, and no work-item runs.
        launch_and_wait(0, Some(1), "launch add_scalar over an empty range");
        let mut back = vec![0u32; N];
        ok(
            t.Enqueue.pfnUSMMemcpy.unwrap()(q, true, back.as_mut_ptr().cast(), ptr, N * 4, 0, null(), null_mut()),
            "read back",
        );
        for (i, v) in back.iter().enumerate() {
            assert_eq!(*v, i as u32 + 7, "element {i} after add_scalar");
        }

        // A memory object argument: add_one on a buffer.
        let mut kb = null_mut();
        ok(
            t.Kernel.pfnCreate.unwrap()(p, c"add_one".as_ptr(), &mut kb),
            "urKernelCreate add_one",
        );
        let back = on_buffer(t, c, q, kb, &init);
        for (i, v) in back.iter().enumerate() {
            assert_eq!(*v, i as u32 + 1, "element {i} after add_one");
        }

        ok(t.USM.pfnFree.unwrap()(c, ptr), "usm free");
        ok(t.Kernel.pfnRelease.unwrap()(kb), "kernel release");
        ok(t.Kernel.pfnRelease.unwrap()(k), "kernel release");
        ok(t.Program.pfnRelease.unwrap()(p), "program release");
        assert_eq!(
            t.Program.pfnRelease.unwrap()(p),
            UR_RESULT_ERROR_INVALID_PROGRAM,
            "released twice"
        );
        ok(t.Queue.pfnRelease.unwrap()(q), "queue release");
        ok(t.Context.pfnRelease.unwrap()(c), "context release");
    }
}

/// Runs kernel `k` (one memory-object argument) over a new buffer holding
/// `init`, one work-item per element, and returns what it then holds.
///
/// # Safety
///
/// `t` is this library's table; `c`, `q` and `k` are live handles of it,
/// `q` and `k` of context `c`.
unsafe fn on_buffer<T: Copy + Default>(
    t: &ur_dditable_t,
    c: ur_context_handle_t,
    q: ur_queue_handle_t,
    k: ur_kernel_handle_t,
    init: &[T],
) -> Vec<T> {
    let (n, bytes) = (init.len(), size_of_val(init));
    let mut back = vec![T::default(); n];
    // SAFETY: the caller's promise; `init` and `back` hold `bytes` bytes.
    unsafe {
        let mut b = null_mut();
        ok(
            t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, bytes, null(), &mut b),
            "urMemBufferCreate",
        );
        ok(
            t.Enqueue.pfnMemBufferWrite.unwrap()(q, b, true, 0, bytes, init.as_ptr().cast(), 0, null(), null_mut()),
            "buffer write",
        );
        let arg = capi::mem_arg(0, b);
        let launch = t.EnqueueExp.pfnKernelLaunchWithArgsExp.unwrap();
        ok(
            launch(q, k, 1, null(), &n, null(), 1, &arg, null(), 0, null(), null_mut()),
            "launch over the buffer",
        );
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(q, b, true, 0, bytes, back.as_mut_ptr().cast(), 0, null(), null_mut()),
            "buffer read",
        );
        ok(t.Mem.pfnRelease.unwrap()(b), "mem release");
    }
    back
}
