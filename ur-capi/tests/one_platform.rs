//! The one platform over every runtime (`UR_RUST_ONE_PLATFORM=1`): one UR
//! platform lists the devices of every runtime; a context over devices of
//! two runtimes (PoCL's and Intel's CPU OpenCL, say) holds buffers the
//! memory manager moves between them, answers the connection of every pair,
//! builds one SPIR-V module for every runtime and launches its kernels on
//! either device (the buffer they use moved between runtimes by the
//! manager), and refuses what no runtime can give (host USM usable by
//! both, one native context) with typed errors.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ur_adapter_rust::ddi;
use ur_adapter_rust::ext::{urRustMemoryConnectionExp, UR_RUST_MEMORY_CONNECTION_NONE};
use ur_adapter_rust::sys::*;

mod capi;
use capi::ok;

fn t() -> &'static ur_dditable_t {
    // SAFETY: the table is this library's, built once and never written.
    unsafe { &*ddi::table() }
}

/// The committed SPIR-V module (`fill_index`, `add_one`, ...).
const MODULE: &[u8] = include_bytes!("../../conformance/kernels/kernels.spv");

/// Launches `k` over `n` work-items on `q` with buffer `b` as argument 0.
///
/// # Safety
///
/// Handles of this library.
unsafe fn launch_on(t: &ur_dditable_t, q: ur_queue_handle_t, k: ur_kernel_handle_t, b: ur_mem_handle_t, n: usize) {
    let arg = capi::mem_arg(0, b);
    let launch = t.EnqueueExp.pfnKernelLaunchWithArgsExp.unwrap();
    // SAFETY: the caller's handles; one argument, a one-dimensional range.
    ok(
        unsafe { launch(q, k, 1, null(), &n, null(), 1, &arg, null(), 0, null(), null_mut()) },
        "kernel launch",
    );
}

/// The connection of two (context, device) pairs.
fn connection(c: ur_context_handle_t, a: ur_device_handle_t, b: ur_device_handle_t) -> u32 {
    let mut out = u32::MAX;
    // SAFETY: live handles of this library, a writable `u32`.
    ok(
        unsafe { urRustMemoryConnectionExp(c, a, c, b, &mut out) },
        "urRustMemoryConnectionExp",
    );
    out
}

#[test]
fn one_context_over_two_runtimes_moves_buffers_between_them() {
    // Before the library's first call (its state reads it once).
    std::env::set_var("UR_RUST_ONE_PLATFORM", "1");
    let t = t();
    // SAFETY: every call passes live out-pointers, buffers of the sizes
    // given and handles this library returned, as the UR specification asks.
    unsafe {
        let plats = capi::platforms(t);
        let with_devices: Vec<_> = plats.iter().filter(|p| !p.devices.is_empty()).collect();
        assert_eq!(with_devices.len(), 1, "one platform listed");
        let p = with_devices[0];
        let devices = p.devices.clone();
        eprintln!("one platform: {} ({} devices)", p.name, devices.len());

        // A context over every device; the pair to move between is the
        // first pair whose runtimes differ (connection None).
        let mut c = null_mut();
        ok(
            t.Context.pfnCreate.unwrap()(devices.len() as u32, devices.as_ptr(), null(), &mut c),
            "context over every device",
        );
        let usm = |d| {
            capi::device_value::<ur_device_usm_access_capability_flags_t>(t, d, UR_DEVICE_INFO_USM_DEVICE_SUPPORT) != 0
        };
        let mut pairs = Vec::new();
        for &a in &devices {
            for &b in &devices {
                let conn = connection(c, a, b);
                if a == b {
                    assert_ne!(conn, UR_RUST_MEMORY_CONNECTION_NONE, "a device reaches its own memory");
                } else if conn == UR_RUST_MEMORY_CONNECTION_NONE {
                    pairs.push((a, b));
                }
            }
        }
        // Devices with USM where there are (rusticl here has none).
        let pair = pairs
            .iter()
            .copied()
            .find(|&(a, b)| usm(a) && usm(b))
            .or(pairs.first().copied());
        let Some((a, b)) = pair else {
            assert!(
                std::env::var("UR_REQUIRE_OPENCL").as_deref() != Ok("1"),
                "no two devices of different runtimes (PoCL and Intel's CPU OpenCL: cargo xtask setup)"
            );
            eprintln!("skipped: no two devices of different runtimes");
            ok(t.Context.pfnRelease.unwrap()(c), "release context");
            return;
        };
        let (mut qa, mut qb) = (null_mut(), null_mut());
        ok(
            t.Queue.pfnCreate.unwrap()(c, a, null(), &mut qa),
            "queue on the first runtime",
        );
        ok(t.Queue.pfnCreate.unwrap()(c, b, null(), &mut qb), "queue on the second");

        // Written through one runtime, read through the other, then
        // written back in part through the second and read through the
        // first: every byte checked.
        const N: usize = 3 << 20;
        let src: Vec<u8> = (0..N).map(|i| (i * 7 % 251) as u8).collect();
        let buf = capi::write_here_read_there(t, c, qa, qb, &src);
        let mut back = vec![0u8; N];
        let patch = vec![0xA5u8; 4096];
        ok(
            t.Enqueue.pfnMemBufferWrite.unwrap()(
                qb,
                buf,
                true,
                N / 2,
                4096,
                patch.as_ptr().cast(),
                0,
                null(),
                null_mut(),
            ),
            "write a page on the second",
        );
        let mut expect = src.clone();
        expect[N / 2..N / 2 + 4096].fill(0xA5);
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(qa, buf, true, 0, N, back.as_mut_ptr().cast(), 0, null(), null_mut()),
            "read back on the first",
        );
        assert!(back == expect, "the second runtime's write is seen through the first");

        let outer = (c, qa, qb);
        // One module built for both runtimes; `fill_index` on the first,
        // `add_one` on the second (the buffer moved by the manager), read
        // back on the first.
        let mut p = null_mut();
        ok(
            t.Program.pfnCreateWithIL.unwrap()(c, MODULE.as_ptr().cast(), MODULE.len(), null(), &mut p),
            "urProgramCreateWithIL",
        );
        let built = t.Program.pfnBuild.unwrap()(c, p, c"".as_ptr());
        let text = |d, prop| String::from_utf8_lossy(&capi::device_array::<u8>(t, d, prop)).into_owned();
        let takes_spirv = |d| {
            // PoCL (through llvm-spirv-15, which setup installs) and Intel's
            // CPU runtime take SPIR-V; rusticl 22.3 does not.
            text(d, UR_DEVICE_INFO_VERSION).contains("PoCL") || text(d, UR_DEVICE_INFO_VENDOR).contains("Intel")
        };
        let every = devices.iter().all(|&d| takes_spirv(d));
        eprintln!("program over every device: {built} (every device takes SPIR-V: {every})");
        if every {
            assert_eq!(built, UR_RESULT_SUCCESS, "every device takes SPIR-V");
        }
        if built != UR_RESULT_SUCCESS {
            // A device that takes no SPIR-V fails the build (for every
            // device: one program object), with a log naming it.
            assert_eq!(built, UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE);
            let mut size = 0usize;
            ok(
                t.Program.pfnGetBuildInfo.unwrap()(p, a, UR_PROGRAM_BUILD_INFO_LOG, 0, null_mut(), &mut size),
                "build log size",
            );
            assert!(size > 1, "the failed build has a log");
            ok(t.Program.pfnRelease.unwrap()(p), "release program");
        }
        // The kernels, in a context over the two devices only.
        let (c, qa, qb, p) = if built == UR_RESULT_SUCCESS {
            (c, qa, qb, p)
        } else {
            let (mut c2, mut qa2, mut qb2, mut p2) = (null_mut(), null_mut(), null_mut(), null_mut());
            ok(
                t.Context.pfnCreate.unwrap()(2, [a, b].as_ptr(), null(), &mut c2),
                "context over the pair",
            );
            ok(t.Queue.pfnCreate.unwrap()(c2, a, null(), &mut qa2), "queue");
            ok(t.Queue.pfnCreate.unwrap()(c2, b, null(), &mut qb2), "queue");
            ok(
                t.Program.pfnCreateWithIL.unwrap()(c2, MODULE.as_ptr().cast(), MODULE.len(), null(), &mut p2),
                "urProgramCreateWithIL",
            );
            (c2, qa2, qb2, p2)
        };
        let pair_built = if built == UR_RESULT_SUCCESS {
            built
        } else {
            t.Program.pfnBuild.unwrap()(c, p, c"".as_ptr())
        };
        if takes_spirv(a) && takes_spirv(b) {
            assert_eq!(pair_built, UR_RESULT_SUCCESS, "both devices of the pair take SPIR-V");
        }
        if pair_built == UR_RESULT_SUCCESS {
            let (mut fill, mut add) = (null_mut(), null_mut());
            ok(
                t.Kernel.pfnCreate.unwrap()(p, c"fill_index".as_ptr(), &mut fill),
                "fill_index",
            );
            ok(t.Kernel.pfnCreate.unwrap()(p, c"add_one".as_ptr(), &mut add), "add_one");
            const K: usize = 1 << 16;
            let mut kb = null_mut();
            ok(
                t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, K * 4, null(), &mut kb),
                "kernel buffer",
            );
            launch_on(t, qa, fill, kb, K);
            launch_on(t, qb, add, kb, K);
            let mut out = vec![0u32; K];
            ok(
                t.Enqueue.pfnMemBufferRead.unwrap()(
                    qa,
                    kb,
                    true,
                    0,
                    K * 4,
                    out.as_mut_ptr().cast(),
                    0,
                    null(),
                    null_mut(),
                ),
                "read the kernels' result",
            );
            for (i, v) in out.iter().enumerate() {
                assert_eq!(
                    *v,
                    i as u32 + 1,
                    "element {i}: filled on one runtime, incremented on the other"
                );
            }
            // What a launch costs when its buffer was last written on the
            // other runtime's device (printed, not asserted: the machine is
            // shared): alternate `add_one` between the devices, each launch
            // finished before the next.
            let finish = |q| ok(t.Queue.pfnFinish.unwrap()(q), "finish");
            let timed = |q_here, q_there, rounds: u32| {
                let t0 = std::time::Instant::now();
                for _ in 0..rounds {
                    launch_on(t, q_here, add, kb, K);
                    finish(q_here);
                    launch_on(t, q_there, add, kb, K);
                    finish(q_there);
                }
                t0.elapsed() / (2 * rounds)
            };
            let across = timed(qa, qb, 20);
            let same = timed(qa, qa, 20);
            eprintln!(
                "launch of add_one on {} KiB: {across:?} when the buffer was last written on the other runtime's device, {same:?} on the same device",
                K * 4 / 1024
            );
            ok(t.Mem.pfnRelease.unwrap()(kb), "release kernel buffer");
            ok(t.Kernel.pfnRelease.unwrap()(fill), "release kernel");
            ok(t.Kernel.pfnRelease.unwrap()(add), "release kernel");
        }
        ok(t.Program.pfnRelease.unwrap()(p), "release program");
        if built != UR_RESULT_SUCCESS {
            ok(t.Queue.pfnRelease.unwrap()(qa), "release queue");
            ok(t.Queue.pfnRelease.unwrap()(qb), "release queue");
            ok(t.Context.pfnRelease.unwrap()(c), "release pair context");
        }
        let (qa, qb) = (outer.1, outer.2);
        let c = outer.0;

        // Device USM on each device; host USM (usable by every device of
        // the context) no runtime gives across runtimes.
        for d in [a, b].into_iter().filter(|&d| usm(d)) {
            let mut m: *mut c_void = null_mut();
            ok(
                t.USM.pfnDeviceAlloc.unwrap()(c, d, null(), null_mut(), 4096, &mut m),
                "device USM",
            );
            let mut ty: ur_usm_type_t = 0;
            ok(
                t.USM.pfnGetMemAllocInfo.unwrap()(
                    c,
                    m,
                    UR_USM_ALLOC_INFO_TYPE,
                    size_of::<ur_usm_type_t>(),
                    (&raw mut ty).cast(),
                    null_mut(),
                ),
                "USM type",
            );
            assert_eq!(ty, UR_USM_TYPE_DEVICE);
            ok(t.USM.pfnFree.unwrap()(c, m), "free device USM");
        }
        let mut m: *mut c_void = null_mut();
        assert_eq!(
            t.USM.pfnHostAlloc.unwrap()(c, null(), null_mut(), 4096, &mut m),
            UR_RESULT_ERROR_UNSUPPORTED_FEATURE
        );
        let mut native = 0 as ur_native_handle_t;
        assert_eq!(
            t.Context.pfnGetNativeHandle.unwrap()(c, &mut native),
            UR_RESULT_ERROR_UNSUPPORTED_FEATURE
        );

        ok(t.Mem.pfnRelease.unwrap()(buf), "release buffer");
        ok(t.Queue.pfnRelease.unwrap()(qa), "release queue");
        ok(t.Queue.pfnRelease.unwrap()(qb), "release queue");
        ok(t.Context.pfnRelease.unwrap()(c), "release context");
    }
}
