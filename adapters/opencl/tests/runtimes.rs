//! The adapter against the real OpenCL runtimes of the machine (PoCL,
//! rusticl). Each test prints a SKIP line and returns when there is none
//! (or fails, where `UR_REQUIRE_OPENCL` is set, as in CI).

mod common;

use common::{pattern, runtime, two_device_platform};
use ur_api::{
    ArgValue, BufferDesc, DeviceCaps, Error, Location, MapFlags, MemFlags, MemoryConnection, NdRange, ProgramSource,
    QueueProps, RectCopy, RectSide, UsmDesc, UsmKind,
};

#[test]
fn discovery_finds_devices_with_sane_info() {
    let Some(rt) = runtime("discovery") else { return };
    let devices = rt.all_devices();
    assert!(!devices.is_empty());
    for d in devices {
        let info = rt.device_info(d).unwrap();
        assert!(!info.name.is_empty());
        assert!(info.global_mem_size > 0 && info.max_alloc_size > 0);
        assert!(info.max_work_group_size >= 1);
        assert!(info.sub_buffer_align.is_power_of_two());
        assert!(info.backend_version.starts_with("OpenCL "), "{}", info.backend_version);
        // CPU devices answer a cache (rusticl's llvmpipe answers none: the
        // host's is reported), where the host lists one in sysfs.
        let host_cache = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0").exists();
        if info.device_type == ur_api::DeviceType::Cpu && host_cache {
            let l = &info.limits;
            assert!(
                l.global_mem_cache_size > 0 && l.global_mem_cacheline_size > 0,
                "{}: cache {} line {}",
                info.name,
                l.global_mem_cache_size,
                l.global_mem_cacheline_size
            );
        }
        eprintln!(
            "{} [{}] type={:?} usm={:?} caps={:?}",
            info.name,
            common::platform_name(&rt, d),
            info.device_type,
            info.usm,
            info.caps
        );
    }
    // Every listed platform has devices (Clover's empty one is skipped).
    for p in rt.platforms() {
        assert!(!rt.devices(p).unwrap().is_empty());
    }
}

#[test]
fn no_icd_means_zero_platforms_not_an_error() {
    const MARK: &str = "UR_OPENCL_TEST_NO_ICD";
    if std::env::var_os(MARK).is_some() {
        // Child: the ICD loader finds no vendor files.
        let mut rt = ur_api::Runtime::new();
        rt.add(ur_opencl::OpenClAdapter::new())
            .expect("no ICD is not an init failure");
        assert!(rt.all_devices().is_empty());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "no_icd_means_zero_platforms_not_an_error", "--nocapture"])
        .env(MARK, "1")
        .env("OCL_ICD_VENDORS", "/nonexistent-ur-opencl-test")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 passed"));
}

#[test]
fn write_read_every_device() {
    let Some(rt) = runtime("write_read") else { return };
    for d in rt.all_devices() {
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let n = 1 << 16;
        let b = rt.create_buffer(ctx, &BufferDesc::new(n).on(d), None).unwrap();
        let data = pattern(n, 7);
        rt.write(q, b, 0, &data).unwrap();
        let mut back = vec![0u8; n];
        rt.read(q, b, 0, &mut back).unwrap();
        assert_eq!(back, data);
        // An offset read of a sub-range.
        let mut part = vec![0u8; 100];
        rt.read(q, b, 1000, &mut part).unwrap();
        assert_eq!(part, data[1000..1100]);
    }
}

#[test]
fn copy_between_two_pocl_devices_in_one_context() {
    let Some(rt) = runtime("copy_two_devices") else { return };
    let Some(devs) = two_device_platform(&rt) else {
        common::skip(
            "copy_two_devices",
            "no platform with two devices (POCL_DEVICES=\"pthread pthread\")",
        );
        return;
    };
    let (d0, d1) = (devs[0], devs[1]);
    let ctx = rt.create_context(&[d0, d1]).unwrap();
    let other = rt.create_context(&[d0]).unwrap();
    let conn = |a, b| rt.memory_connection(a, b).unwrap();
    assert_eq!(
        conn(Location::new(ctx, d0), Location::new(ctx, d0)),
        MemoryConnection::Unified
    );
    assert_eq!(
        conn(Location::new(ctx, d0), Location::new(ctx, d1)),
        MemoryConnection::Migratable
    );
    assert_eq!(
        conn(Location::new(ctx, d1), Location::new(ctx, d0)),
        MemoryConnection::Migratable
    );
    assert_eq!(
        conn(Location::new(ctx, d0), Location::new(other, d0)),
        MemoryConnection::None
    );

    let q0 = rt.create_queue(ctx, d0, &QueueProps::default()).unwrap();
    let q1 = rt.create_queue(ctx, d1, &QueueProps::default()).unwrap();
    let n = 3 << 20;
    let a = rt.create_buffer(ctx, &BufferDesc::new(n).on(d0), None).unwrap();
    let b = rt.create_buffer(ctx, &BufferDesc::new(n).on(d1), None).unwrap();
    let data = pattern(n, 3);
    rt.write(q0, a, 0, &data).unwrap();
    rt.complete(rt.enqueue_copy(q1, a, 0, b, 0, n, &[]).unwrap()).unwrap();
    let mut back = vec![0u8; n];
    rt.read(q1, b, 0, &mut back).unwrap();
    assert!(back == data, "copy between PoCL devices corrupted data");
    // Device 0's buffer is only copied from on device 1's queue, never used
    // there in place (OpenCL would migrate it behind the manager's back).
    let mut probe = [0u8; 16];
    assert!(
        matches!(rt.read(q1, a, 0, &mut probe), Err(Error::NotAccessible { .. })),
        "in-place use on another device of the context must be refused"
    );
}

#[test]
fn rect_fill_map_sub_buffer() {
    let Some(rt) = runtime("rect_fill_map") else { return };
    for d in rt.all_devices() {
        let info = rt.device_info(d).unwrap();
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        // 8 rows of 16 bytes; read the 4x3 box at (2, 1).
        let buf = rt
            .create_buffer_with_data(ctx, &BufferDesc::new(128), &pattern(128, 1))
            .unwrap();
        let rect = RectCopy {
            src: RectSide::new([2, 1, 0], 16, 0),
            dst: RectSide::default(),
            extent: [4, 3, 1],
        };
        let mut boxed = vec![0u8; 12];
        rt.read_rect(q, buf, &rect, &mut boxed).unwrap();
        let src = pattern(128, 1);
        let want: Vec<u8> = (1..4).flat_map(|r| src[r * 16 + 2..r * 16 + 6].to_vec()).collect();
        assert_eq!(boxed, want);

        // A 3-byte pattern (not a power of two) over 300 000 bytes at offset 3.
        let size = 300_000;
        let f = rt.create_buffer(ctx, &BufferDesc::new(size + 6), None).unwrap();
        rt.write(q, f, 0, &vec![0xEE; size + 6]).unwrap();
        rt.complete(rt.enqueue_fill(q, f, 3, size, &[1, 2, 3], &[]).unwrap())
            .unwrap();
        let mut back = vec![0u8; size + 6];
        rt.read(q, f, 0, &mut back).unwrap();
        assert_eq!(&back[..3], &[0xEE; 3]);
        assert_eq!(&back[size + 3..], &[0xEE; 3]);
        assert!(back[3..size + 3].chunks(3).all(|c| c == [1, 2, 3]));

        // Map for reading.
        let (ev, p) = rt.enqueue_map(q, buf, MapFlags::READ, 16, 16, &[]).unwrap();
        rt.complete(ev).unwrap();
        // SAFETY: the map event completed; the mapping is 16 bytes until unmapped.
        let mapped = unsafe { std::slice::from_raw_parts(p.as_ptr(), 16) }.to_vec();
        assert_eq!(mapped, src[16..32]);
        rt.complete(rt.enqueue_unmap(q, buf, p, &[]).unwrap()).unwrap();

        // A sub-buffer at the device's alignment.
        let off = info.sub_buffer_align;
        let parent = rt.create_buffer(ctx, &BufferDesc::new(off * 2), None).unwrap();
        let sub = rt.create_sub_buffer(parent, off, 8).unwrap();
        rt.write(q, sub, 0, &[9; 8]).unwrap();
        let mut whole = vec![0u8; 8];
        rt.read(q, parent, off, &mut whole).unwrap();
        assert_eq!(whole, [9; 8]);

        // Pinned host memory: ALLOC_HOST_PTR written through a mapping.
        let pinned = rt
            .create_buffer(ctx, &BufferDesc::new(64).with_flags(MemFlags::ALLOC_HOST_PTR), None)
            .unwrap();
        let (ev, p) = rt
            .enqueue_map(q, pinned, MapFlags::WRITE_INVALIDATE, 0, 64, &[])
            .unwrap();
        rt.complete(ev).unwrap();
        // SAFETY: mapped for writing, 64 bytes, until unmapped.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0x5A, 64) };
        rt.complete(rt.enqueue_unmap(q, pinned, p, &[]).unwrap()).unwrap();
        let mut back = [0u8; 64];
        rt.read(q, pinned, 0, &mut back).unwrap();
        assert_eq!(back, [0x5A; 64]);
    }
}

const KERNELS: &str = r#"
__kernel void scale(__global uint* buf, uint k, __local uint* scratch) {
    size_t i = get_global_id(0);
    scratch[get_local_id(0)] = buf[i] * k;
    barrier(CLK_LOCAL_MEM_FENCE);
    buf[i] = scratch[get_local_id(0)];
}
"#;

#[test]
fn kernels_with_buffer_scalar_local_and_svm_args() {
    let Some(rt) = runtime("kernels") else { return };
    for d in rt.all_devices() {
        let info = rt.device_info(d).unwrap();
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps { profiling: true }).unwrap();
        let prog = rt
            .create_program(ctx, &ProgramSource::OpenClC(KERNELS.into()), "")
            .unwrap();
        let k = rt.create_kernel(prog, "scale").unwrap();
        let n = 256usize;
        let input: Vec<u32> = (0..n as u32).collect();
        let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let buf = rt
            .create_buffer_with_data(ctx, &BufferDesc::new(n * 4), &bytes)
            .unwrap();
        let three = 3u32;
        let args = [ArgValue::Buffer(buf), ArgValue::scalar(&three), ArgValue::Local(64 * 4)];
        let ev = rt
            .enqueue_launch(q, k, &NdRange::d1(n).with_local([64, 1, 1]), &args, &[])
            .unwrap();
        rt.wait(&[ev]).unwrap();
        let prof = rt.event_profiling(ev).unwrap();
        assert!(prof.start <= prof.end && prof.queued <= prof.start, "{prof:?}");
        rt.release_event(ev).unwrap();
        let mut back = vec![0u8; n * 4];
        rt.read(q, buf, 0, &mut back).unwrap();
        let got: Vec<u32> = back
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, input.iter().map(|v| v * 3).collect::<Vec<_>>());

        // A global offset: only items 64.. run again.
        assert!(info
            .caps
            .contains(DeviceCaps::GLOBAL_OFFSET | DeviceCaps::LOCAL_MEMORY_ARGS));
        let mut shifted = NdRange::d1(n - 64).with_local([64, 1, 1]);
        shifted.offset = [64, 0, 0];
        rt.complete(rt.enqueue_launch(q, k, &shifted, &args, &[]).unwrap())
            .unwrap();
        rt.read(q, buf, 0, &mut back).unwrap();
        let got: Vec<u32> = back
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        let want: Vec<u32> = input.iter().map(|&v| if v < 64 { v * 3 } else { v * 9 }).collect();
        assert_eq!(got, want, "launch with a global offset");

        // Too few arguments is an error, not a launch with stale ones.
        assert!(matches!(
            rt.enqueue_launch(q, k, &NdRange::d1(n), &args[..2], &[]),
            Err(Error::InvalidKernelArgs(_))
        ));
        assert!(matches!(
            rt.create_kernel(prog, "nope"),
            Err(Error::KernelNotFound { .. })
        ));

        // SVM as USM where the device has it; otherwise Unsupported.
        let desc = UsmDesc::new(UsmKind::Device, n * 4).on(d);
        if info.usm.is_empty() {
            assert!(matches!(rt.usm_alloc(ctx, &desc), Err(Error::Unsupported { .. })));
            continue;
        }
        let p = rt.usm_alloc(ctx, &desc).unwrap();
        rt.usm_write(q, p, &bytes).unwrap();
        let args = [ArgValue::Usm(p), ArgValue::scalar(&three), ArgValue::Local(64 * 4)];
        rt.complete(
            rt.enqueue_launch(q, k, &NdRange::d1(n).with_local([64, 1, 1]), &args, &[])
                .unwrap(),
        )
        .unwrap();
        let mut back = vec![0u8; n * 4];
        rt.usm_read(q, p, &mut back).unwrap();
        let got: Vec<u32> = back
            .chunks(4)
            .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, input.iter().map(|v| v * 3).collect::<Vec<_>>());
        // A 5-byte fill pattern on SVM.
        rt.complete(rt.enqueue_usm_fill(q, p, 1000, &[1, 2, 3, 4, 5], &[]).unwrap())
            .unwrap();
        let mut filled = vec![0u8; 1000];
        rt.usm_read(q, p, &mut filled).unwrap();
        assert!(filled.chunks(5).all(|c| c == [1, 2, 3, 4, 5]));
        rt.usm_free(ctx, p).unwrap();
    }
}

#[test]
fn build_failure_carries_the_log() {
    let Some(rt) = runtime("build_failure") else { return };
    let d = rt.all_devices()[0];
    let ctx = rt.create_context(&[d]).unwrap();
    let bad = ProgramSource::OpenClC("__kernel void broken(__global uint* p) { p[0] = undefined_name; }".into());
    match rt.create_program(ctx, &bad, "") {
        Err(Error::ProgramBuild { log }) => assert!(log.contains("undefined_name"), "log: {log}"),
        other => panic!("expected a build error, got {other:?}"),
    }
}

#[test]
fn cross_queue_wait_and_status_after_finish() {
    // rusticl 22.3 deadlocks on a wait list naming an unflushed queue's
    // event, and reports CL_QUEUED for finished events until waited on.
    let Some(rt) = runtime("cross_queue") else { return };
    for d in rt.all_devices() {
        let ctx = rt.create_context(&[d]).unwrap();
        let q1 = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let q2 = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let n = 1 << 20;
        let data = pattern(n, 11);
        let a = rt.create_buffer(ctx, &BufferDesc::new(n), None).unwrap();
        let b = rt.create_buffer(ctx, &BufferDesc::new(n), None).unwrap();
        for _ in 0..20 {
            // SAFETY: `data` outlives the write, waited for below.
            let src = unsafe { ur_api::HostPtr::new(data.as_ptr().cast_mut(), n) };
            let w = rt.enqueue_write(q1, a, 0, src, &[]).unwrap();
            let c = rt.enqueue_copy(q2, a, 0, b, 0, n, &[w]).unwrap();
            let m = rt.enqueue_barrier(q2, &[]).unwrap();
            rt.wait(&[m]).unwrap();
            for e in [w, c, m] {
                assert_eq!(rt.event_status(e).unwrap(), ur_api::EventStatus::Complete);
                rt.release_event(e).unwrap();
            }
            // SAFETY: as above.
            let src = unsafe { ur_api::HostPtr::new(data.as_ptr().cast_mut(), n) };
            let w = rt.enqueue_write(q1, a, 0, src, &[]).unwrap();
            rt.flush(q1).unwrap();
            rt.finish(q1).unwrap();
            assert_eq!(rt.event_status(w).unwrap(), ur_api::EventStatus::Complete);
            rt.release_event(w).unwrap();
        }
        let mut back = vec![0u8; n];
        rt.read(q2, b, 0, &mut back).unwrap();
        assert!(back == data);
    }
}

#[test]
fn odd_slice_pitches_and_over_aligned_usm() {
    let Some(rt) = runtime("odd_pitches") else { return };
    for d in rt.all_devices() {
        let info = rt.device_info(d).unwrap();
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        // A 3-D read whose buffer slice pitch (37) is not a multiple of its row pitch (8).
        let src = pattern(256, 5);
        let buf = rt.create_buffer_with_data(ctx, &BufferDesc::new(256), &src).unwrap();
        let rect = RectCopy {
            src: RectSide::new([1, 1, 1], 8, 37),
            dst: RectSide::default(),
            extent: [3, 2, 3],
        };
        let mut got = vec![0u8; 18];
        rt.read_rect(q, buf, &rect, &mut got).unwrap();
        let mut want = Vec::new();
        for z in 0..3 {
            for y in 0..2 {
                let s = (1 + z) * 37 + (1 + y) * 8 + 1;
                want.extend_from_slice(&src[s..s + 3]);
            }
        }
        assert_eq!(got, want);

        if info.usm.contains(ur_api::UsmCaps::DEVICE) {
            for align in [256usize, 4096, 65536] {
                let p = rt
                    .usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 100).on(d).aligned(align))
                    .unwrap();
                assert_eq!(p.0 % align as u64, 0);
                rt.usm_write(q, p, &src[..100]).unwrap();
                let mut back = vec![0u8; 100];
                rt.usm_read(q, p, &mut back).unwrap();
                assert_eq!(back, src[..100]);
                rt.usm_free(ctx, p).unwrap();
            }
        }
    }
}

/// The ICD loader's real path, if it is installed.
fn loader_path() -> Option<std::path::PathBuf> {
    [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/lib/x86_64-linux-gnu",
    ]
    .iter()
    .map(|d| std::path::Path::new(d).join("libOpenCL.so.1"))
    .find(|p| p.exists())
    .and_then(|p| p.canonicalize().ok())
}

#[test]
fn missing_library_means_zero_platforms_not_a_panic() {
    const MARK: &str = "UR_OPENCL_TEST_NO_LIBRARY";
    let check_here = || {
        // opencl3 itself answers an error code (the loader's), not a panic...
        let raw = opencl3::platform::get_platforms();
        assert!(
            matches!(raw, Err(ref e) if e.0 == ur_opencl::conv::LOADER_LIBRARY_MISSING),
            "{raw:?}"
        );
        // ...which the adapter turns into zero platforms.
        let mut rt = ur_api::Runtime::new();
        rt.add(ur_opencl::OpenClAdapter::new())
            .expect("a missing library is not an init failure");
        assert!(rt.all_devices().is_empty() && rt.platforms().is_empty());
    };
    if std::env::var_os(MARK).is_some() {
        return check_here();
    }
    let Some(lib) = loader_path() else {
        // Really missing on this machine: check it in this process.
        return check_here();
    };
    // Hide the library from a child process: a private mount namespace with
    // /dev/null bound over it (needs root and unshare; skip otherwise).
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "mount --bind /dev/null '{}' && exec '{}' --exact missing_library_means_zero_platforms_not_a_panic --nocapture",
        lib.display(),
        exe.display()
    );
    let out = match std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env(MARK, "1")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIP missing_library: cannot run unshare ({e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.contains("running 1 test") {
        eprintln!(
            "SKIP missing_library: cannot hide {} (unshare/mount refused: {})",
            lib.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return;
    }
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
