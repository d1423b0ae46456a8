//! SPIR-V programs on every OpenCL device that takes IL (Intel's CPU
//! runtime here; `cl_khr_il_program` / OpenCL 2.1+ `CL_DEVICE_IL_VERSION`),
//! with the conformance kernels' module (`conformance/kernels/`, see its
//! README for how it is made).

mod common;

use common::{check_committed_module, runtime, skip, spirv_devices, Built, Recipe};
use ur_api::{ArgValue, BufferDesc, NdRange, ProgramFormats, UsmDesc, UsmKind};

/// The committed module.
const MODULE: &[u8] = include_bytes!("../../../conformance/kernels/kernels.spv");

#[test]
fn the_committed_module_is_what_the_tools_make() {
    check_committed_module("kernels", Recipe::CL12, MODULE);
}

#[test]
fn spirv_kernels_run_with_buffers_scalars_and_usm() {
    let Some(rt) = runtime("spirv") else { return };
    let il = spirv_devices(&rt, "spirv");
    if il.is_empty() {
        return;
    }
    let n = 1024usize;
    for d in il {
        let info = rt.device_info(d).unwrap();
        eprintln!("SPIR-V on {}", info.name);
        let on = Built::new(&rt, d, MODULE);
        let (ctx, q) = (on.ctx, on.q);
        let fill = on.kernel("fill_index");
        let add = on.kernel("add_scalar");
        let buf = rt.create_buffer(ctx, &BufferDesc::new(n * 4).on(d), None).unwrap();
        rt.complete(
            rt.enqueue_launch(q, fill, &NdRange::d1(n), &[ArgValue::Buffer(buf)], &[])
                .unwrap(),
        )
        .unwrap();
        let k = 7u32;
        rt.complete(
            rt.enqueue_launch(
                q,
                add,
                &NdRange::d1(n),
                &[ArgValue::Buffer(buf), ArgValue::scalar(&k)],
                &[],
            )
            .unwrap(),
        )
        .unwrap();
        let mut back = vec![0u8; n * 4];
        rt.read(q, buf, 0, &mut back).unwrap();
        let want: Vec<u8> = (0..n as u32).flat_map(|i| (i + 7).to_ne_bytes()).collect();
        assert_eq!(back, want, "buffer arguments on {}", info.name);

        // USM arguments where the device has shared USM.
        if info.usm.contains(ur_api::UsmCaps::SHARED) {
            let p = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Shared, n * 4).on(d)).unwrap();
            rt.complete(
                rt.enqueue_launch(q, fill, &NdRange::d1(n), &[ArgValue::Usm(p)], &[])
                    .unwrap(),
            )
            .unwrap();
            let mut back = vec![0u8; n * 4];
            rt.usm_read(q, p, &mut back).unwrap();
            let want: Vec<u8> = (0..n as u32).flat_map(|i| i.to_ne_bytes()).collect();
            assert_eq!(back, want, "USM arguments on {}", info.name);
            rt.usm_free(ctx, p).unwrap();
        }
        rt.release_buffer(buf).unwrap();
    }
}

/// A context over every device of a platform that takes SPIR-V builds the
/// module once for all of them (PoCL's two devices take it as SPIR bitcode
/// through the translator: one binary per device), and a kernel runs on
/// the last device.
#[test]
fn spirv_builds_for_every_device_of_a_multi_device_context() {
    let Some(rt) = runtime("spirv") else { return };
    let mut tried = false;
    for p in rt.platforms() {
        let devices = rt.devices(p).unwrap();
        let takes = |&d: &ur_api::DeviceId| {
            rt.device_info(d)
                .unwrap()
                .program_formats
                .contains(ProgramFormats::SPIRV)
        };
        if devices.len() < 2 || !devices.iter().all(takes) {
            continue;
        }
        tried = true;
        let last = *devices.last().unwrap();
        let on = Built::over(&rt, &devices, last, MODULE);
        let (ctx, q) = (on.ctx, on.q);
        let fill = on.kernel("fill_index");
        let n = 256usize;
        let buf = rt.create_buffer(ctx, &BufferDesc::new(n * 4).on(last), None).unwrap();
        rt.complete(
            rt.enqueue_launch(q, fill, &NdRange::d1(n), &[ArgValue::Buffer(buf)], &[])
                .unwrap(),
        )
        .unwrap();
        let mut back = vec![0u8; n * 4];
        rt.read(q, buf, 0, &mut back).unwrap();
        let want: Vec<u8> = (0..n as u32).flat_map(|i| i.to_ne_bytes()).collect();
        assert_eq!(back, want);
        rt.release_buffer(buf).unwrap();
    }
    if !tried {
        skip(
            "spirv",
            "no platform with two devices that take SPIR-V (PoCL with POCL_DEVICES=\"pthread pthread\" and llvm-spirv-15)",
        );
    }
}

/// `conformance/kernels/long_name.cl`: one kernel whose name is longer than
/// a file name may be.
const LONG_NAME_MODULE: &[u8] = include_bytes!("../../../conformance/kernels/long_name.spv");

#[test]
fn the_committed_long_name_module_is_what_the_tools_make() {
    check_committed_module("long_name", Recipe::CL12, LONG_NAME_MODULE);
}

/// A kernel named longer than a file name (SYCL's mangled names of nested
/// templates are) is created by its name, listed by it and runs on every
/// device that takes SPIR-V (PoCL 3.1 aborted the process compiling such a
/// kernel before the translator's renaming, `src/spirv/rewrite.rs`).
#[test]
fn a_kernel_named_longer_than_a_file_name_runs() {
    let Some(rt) = runtime("spirv") else { return };
    let name = format!("add_two_{}end", "with_a_name_longer_than_a_file_name_may_be_".repeat(6));
    assert!(name.len() > 255);
    for d in spirv_devices(&rt, "spirv") {
        let on = Built::new(&rt, d, LONG_NAME_MODULE);
        let (ctx, q) = (on.ctx, on.q);
        assert_eq!(
            rt.kernel_names(on.prog).unwrap(),
            std::slice::from_ref(&name),
            "{}",
            on.name
        );
        let k = on.kernel(&name);
        let n = 64usize;
        let buf = rt.create_buffer(ctx, &BufferDesc::new(n * 4).on(d), None).unwrap();
        let init: Vec<u8> = (0..n as u32).flat_map(|i| i.to_ne_bytes()).collect();
        rt.write(q, buf, 0, &init).unwrap();
        rt.complete(
            rt.enqueue_launch(q, k, &NdRange::d1(n), &[ArgValue::Buffer(buf)], &[])
                .unwrap(),
        )
        .unwrap();
        let mut back = vec![0u8; n * 4];
        rt.read(q, buf, 0, &mut back).unwrap();
        let want: Vec<u8> = (0..n as u32).flat_map(|i| (i + 2).to_ne_bytes()).collect();
        assert_eq!(back, want, "{}", on.name);
        rt.release_buffer(buf).unwrap();
    }
}
