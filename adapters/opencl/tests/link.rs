//! Programs linked from several SPIR-V modules (`ProgramSource::SpirVModules`,
//! what SYCL runtimes make of device images that import each other's
//! functions) on every OpenCL device that takes SPIR-V: compiled and linked
//! by the runtime where it takes IL (Intel's CPU runtime), translated and
//! linked as bitcode where it takes SPIR (PoCL 3.1, `src/spirv/mod.rs`).
//! The modules are `conformance/kernels/link_main.cl` (a kernel calling
//! `scaled`) and `link_lib.cl` (`scaled`), committed as SPIR-V like the
//! conformance kernels.

mod common;

use common::{check_committed_module, runtime, spirv_devices, Recipe};
use ur_api::{ArgValue, BufferDesc, Error, NdRange, ProgramSource, QueueProps};

const MAIN: &[u8] = include_bytes!("../../../conformance/kernels/link_main.spv");
const LIB: &[u8] = include_bytes!("../../../conformance/kernels/link_lib.spv");

#[test]
fn the_committed_modules_are_what_the_tools_make() {
    check_committed_module("link_main", Recipe::CL12, MAIN);
    check_committed_module("link_lib", Recipe::CL12, LIB);
}

#[test]
fn a_kernel_calls_a_function_of_another_module() {
    let Some(rt) = runtime("link") else { return };
    const N: usize = 256;
    for d in spirv_devices(&rt, "link") {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(&[d]).unwrap();
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        // Either order: the link resolves imports wherever they are.
        for modules in [vec![MAIN.to_vec(), LIB.to_vec()], vec![LIB.to_vec(), MAIN.to_vec()]] {
            let prog = rt
                .create_program(ctx, &ProgramSource::SpirVModules(modules), "")
                .unwrap_or_else(|e| panic!("{name}: linking the modules: {e}"));
            let k = rt.create_kernel(prog, "apply_scaled").unwrap();
            let input: Vec<i32> = (0..N as i32).map(|i| i * 7 - 300).collect();
            let bytes: Vec<u8> = input.iter().flat_map(|x| x.to_ne_bytes()).collect();
            let b = rt.create_buffer(ctx, &BufferDesc::new(bytes.len()), None).unwrap();
            rt.write(q, b, 0, &bytes).unwrap();
            let e = rt
                .enqueue_launch(q, k, &NdRange::d1(N), &[ArgValue::Buffer(b)], &[])
                .unwrap();
            rt.wait(&[e]).unwrap();
            rt.release_event(e).unwrap();
            let mut out = vec![0u8; bytes.len()];
            rt.read(q, b, 0, &mut out).unwrap();
            for (i, (x, got)) in input.iter().zip(out.chunks(4)).enumerate() {
                let got = i32::from_ne_bytes(got.try_into().unwrap());
                assert_eq!(got, 3 * x + 1, "{name}: element {i}");
            }
            rt.release_buffer(b).unwrap();
            rt.release_kernel(k).unwrap();
            rt.release_program(prog).unwrap();
        }
    }
}

#[test]
fn an_unresolved_or_twice_defined_function_is_a_build_failure() {
    let Some(rt) = runtime("link") else { return };
    for d in spirv_devices(&rt, "link") {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(&[d]).unwrap();
        // `scaled` imported and defined nowhere: built alone, or "linked" alone.
        for source in [
            ProgramSource::SpirV(MAIN.to_vec()),
            ProgramSource::SpirVModules(vec![MAIN.to_vec()]),
            ProgramSource::SpirVModules(vec![MAIN.to_vec(), LIB.to_vec(), LIB.to_vec()]),
        ] {
            match rt.create_program(ctx, &source, "") {
                Err(Error::ProgramBuild { log }) => eprintln!("{name}: {source:?}: {log}"),
                other => panic!("{name}: {source:?}: expected a build failure, got {other:?}"),
            }
        }
    }
}
