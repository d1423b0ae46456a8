//! Programs: building the kernel library and looking kernels up.

use crate::kernels::KERNELS;
use crate::{DeviceEnv, TestResult};

cases!(
    "program",
    positive: [build_and_release, every_library_kernel_found, build_twice_in_one_context, kernel_outlives_program],
    negative: []
);

fn build_and_release(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    env.rt.release_program(p)?;
    Ok(())
}

fn every_library_kernel_found(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    for (name, _) in KERNELS {
        let k = env.rt.create_kernel(p, name)?;
        env.rt.release_kernel(k)?;
    }
    Ok(())
}

fn build_twice_in_one_context(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let a = env.program(ctx)?;
    let b = env.program(ctx)?;
    env.kernel_of(a, "add_one")?;
    env.kernel_of(b, "add_one")?;
    Ok(())
}

fn kernel_outlives_program(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let (ctx, q) = env.setup()?;
    let p = env.program(ctx)?;
    let k = env.kernel_of(p, "fill_index")?;
    env.rt.release_program(p)?;
    let b = env.buffer(ctx, 256 * 4)?;
    env.rt.complete(
        env.rt
            .enqueue_launch(q, k, &ur_api::NdRange::d1(256), &[ur_api::ArgValue::Buffer(b)], &[])?,
    )?;
    let got = env.read_all(q, b, 256 * 4)?;
    let want: Vec<u8> = (0u32..256).flat_map(u32::to_ne_bytes).collect();
    crate::check_bytes("fill_index after program release", &got, &want)
}
