//! Programs linked from several SPIR-V modules (`ProgramSource::SpirVModules`,
//! what SYCL runtimes make of device images that import each other's
//! functions) on every OpenCL device that takes SPIR-V: compiled and linked
//! by the runtime where it takes IL (Intel's CPU runtime), translated and
//! linked as bitcode where it takes SPIR (PoCL 3.1, `src/spirv/mod.rs`).
//! The modules are `conformance/kernels/link_main.cl` (a kernel calling
//! `scaled`) and `link_lib.cl` (`scaled`), committed as SPIR-V like the
//! conformance kernels.

mod common;

use common::{check_committed_module, runtime, spirv_devices, Built, Recipe};
use ur_api::{ArgValue, Error, NdRange, ProgramSource};

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
        // Either order: the link resolves imports wherever they are.
        for modules in [vec![MAIN.to_vec(), LIB.to_vec()], vec![LIB.to_vec(), MAIN.to_vec()]] {
            let on = Built::from_source(&rt, &[d], d, &ProgramSource::SpirVModules(modules));
            let k = on.kernel("apply_scaled");
            let input: Vec<i32> = (0..N as i32).map(|i| i * 7 - 300).collect();
            let b = on.buffer(&input);
            on.run(k, &NdRange::d1(N), &[ArgValue::Buffer(b)]);
            for (i, (x, got)) in input.iter().zip(on.read::<i32>(b, N)).enumerate() {
                assert_eq!(got, 3 * x + 1, "{}: element {i}", on.name);
            }
            rt.release_buffer(b).unwrap();
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
        rt.release_context(ctx).unwrap();
    }
}
