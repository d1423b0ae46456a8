//! Bad input to contexts, queues, programs, kernels and launches, and
//! objects of one context used in another: each asserts the exact error.

use ur_api::{
    ArgValue, DeviceCaps, Error, Location, MemoryConnection, NdRange, ProgramFormats, ProgramSource, QueueProps,
};

use crate::env::unsupported_format;
use crate::{check_bytes, expect_err, skip, DeviceEnv, TestResult};

cases!(
    "negative_objects",
    positive: [],
    negative: [
        context_empty_device_list,
        context_duplicate_device,
        context_over_two_platforms,
        queue_device_not_in_context,
        wrong_context_event_in_wait_list,
        wrong_context_kernel,
        wrong_context_buffer,
        unknown_kernel_name,
        empty_kernel_name,
        wrong_kernel_arg_count,
        nd_range_bad_dimensions,
        nd_range_local_not_dividing,
        nd_range_work_group_too_large,
        empty_scalar_and_zero_local_args,
        profiling_without_profiling_queue,
        program_format_not_accepted,
        invalid_program_source,
    ],
);

fn context_empty_device_list(env: &DeviceEnv<'_>) -> TestResult {
    expect_err!(env.rt.create_context(&[]), Error::InvalidValue(_));
    expect_err!(env.adapter()?.create_context(&[]), Error::InvalidValue(_));
    Ok(())
}

fn context_duplicate_device(env: &DeviceEnv<'_>) -> TestResult {
    expect_err!(
        env.rt.create_context(&[env.device(), env.device()]),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn context_over_two_platforms(env: &DeviceEnv<'_>) -> TestResult {
    let a = env.adapter()?;
    let mine = env.rt.device_platform(env.device())?;
    let other = a
        .platforms()
        .into_iter()
        .filter(|p| *p != mine)
        .find_map(|p| a.devices(p).ok().and_then(|d| d.first().copied()))
        .ok_or_else(|| skip("the adapter has a single platform"))?;
    expect_err!(env.rt.create_context(&[env.device(), other]), Error::InvalidValue(_));
    Ok(())
}

fn queue_device_not_in_context(env: &DeviceEnv<'_>) -> TestResult {
    let peer = env.other_device()?;
    let ctx = env.context()?;
    expect_err!(
        env.rt.create_queue(ctx, peer, &QueueProps::default()),
        Error::DeviceNotInContext
    );
    expect_err!(
        env.rt
            .memory_connection(Location::new(ctx, peer), Location::new(ctx, env.device())),
        Error::DeviceNotInContext
    );
    Ok(())
}

fn wrong_context_event_in_wait_list(env: &DeviceEnv<'_>) -> TestResult {
    let (a, qa) = env.setup()?;
    let (_, qb) = env.setup()?;
    let b = env.buffer(a, 64)?;
    let e = env.track(env.rt.enqueue_barrier(qb, &[])?);
    expect_err!(
        env.rt.enqueue_fill(qa, b, 0, 64, &[1], &[e]),
        Error::WrongContext { .. }
    );
    expect_err!(env.rt.enqueue_barrier(qa, &[e]), Error::WrongContext { .. });
    Ok(())
}

fn wrong_context_kernel(env: &DeviceEnv<'_>) -> TestResult {
    let (a, qa) = env.setup()?;
    let b_ctx = env.context()?;
    let k = env.kernel(b_ctx, "add_one")?;
    let buf = env.buffer(a, 256)?;
    let r = env
        .rt
        .enqueue_launch(qa, k, &NdRange::d1(64), &[ArgValue::Buffer(buf)], &[]);
    expect_err!(r, Error::WrongContext { .. });
    Ok(())
}

/// A buffer of another context on a queue: `NotAccessible` unless the
/// adapter reports the two locations `Unified` (then it must work in place).
fn wrong_context_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let (a, qa) = env.setup()?;
    let b = env.context()?;
    let buf = env.buffer_with(b, &crate::bytes(64, 5))?;
    let conn = env
        .rt
        .memory_connection(Location::new(b, env.device()), Location::new(a, env.device()))?;
    let mut out = vec![0u8; 64];
    let r = env.rt.read(qa, buf, 0, &mut out);
    if conn == MemoryConnection::Unified {
        r?;
        check_bytes("buffer of a unified context", &out, &crate::bytes(64, 5))?;
        return Err(skip(
            "the contexts are Unified: using the buffer there is allowed (and was checked)",
        ));
    }
    expect_err!(r, Error::NotAccessible { copy: false, .. });
    Ok(())
}

fn unknown_kernel_name(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    expect_err!(env.kernel_of(p, "no_such_kernel"), Error::KernelNotFound { .. });
    Ok(())
}

fn empty_kernel_name(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let ctx = env.context()?;
    let p = env.program(ctx)?;
    expect_err!(env.kernel_of(p, ""), Error::InvalidValue(_));
    Ok(())
}

fn wrong_kernel_arg_count(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "vec_add")?;
    let b = env.buffer(ctx, 1024)?;
    let r = env
        .rt
        .enqueue_launch(q, k, &NdRange::d1(64), &[ArgValue::Buffer(b)], &[]);
    expect_err!(r, Error::InvalidKernelArgs(_));
    let one = env.kernel(ctx, "add_one")?;
    let r = env.rt.enqueue_launch(
        q,
        one,
        &NdRange::d1(64),
        &[ArgValue::Buffer(b), ArgValue::Buffer(b)],
        &[],
    );
    expect_err!(r, Error::InvalidKernelArgs(_));
    Ok(())
}

/// Launches `add_one` over a 64 KiB buffer with `range`; the outer result
/// is a skip when the device cannot run kernels.
fn launch_expect(env: &DeviceEnv<'_>, range: NdRange) -> Result<ur_api::Result<ur_api::EventId>, crate::TestError> {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_one")?;
    let b = env.buffer(ctx, 1 << 16)?;
    Ok(env
        .rt
        .enqueue_launch(q, k, &range, &[ArgValue::Buffer(b)], &[])
        .map(|e| env.track(e)))
}

fn nd_range_bad_dimensions(env: &DeviceEnv<'_>) -> TestResult {
    expect_err!(
        launch_expect(
            env,
            NdRange {
                dims: 0,
                ..NdRange::d1(64)
            }
        )?,
        Error::InvalidValue(_)
    );
    expect_err!(
        launch_expect(
            env,
            NdRange {
                dims: 4,
                ..NdRange::d1(64)
            }
        )?,
        Error::InvalidValue(_)
    );
    // An unused dimension with a size other than 1.
    expect_err!(
        launch_expect(
            env,
            NdRange {
                global: [64, 2, 1],
                ..NdRange::d1(64)
            }
        )?,
        Error::InvalidValue(_)
    );
    Ok(())
}

fn nd_range_local_not_dividing(env: &DeviceEnv<'_>) -> TestResult {
    expect_err!(
        launch_expect(env, NdRange::d1(64).with_local([3, 1, 1]))?,
        Error::InvalidValue(_)
    );
    expect_err!(
        launch_expect(env, NdRange::d1(64).with_local([0, 1, 1]))?,
        Error::InvalidValue(_)
    );
    Ok(())
}

fn nd_range_work_group_too_large(env: &DeviceEnv<'_>) -> TestResult {
    let max = env.info().max_work_group_size;
    let Some(local) = max.checked_add(1).map(|l| l.next_power_of_two()) else {
        return Err(skip("work-group limit is usize::MAX"));
    };
    let Some(global) = local.checked_mul(2) else {
        return Err(skip("work-group limit too large to exceed"));
    };
    expect_err!(
        launch_expect(env, NdRange::d1(global).with_local([local, 1, 1]))?,
        Error::InvalidValue(_)
    );
    Ok(())
}

fn empty_scalar_and_zero_local_args(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_scalar")?;
    let b = env.buffer(ctx, 256)?;
    let r = env.rt.enqueue_launch(
        q,
        k,
        &NdRange::d1(64),
        &[ArgValue::Buffer(b), ArgValue::Scalar(&[])],
        &[],
    );
    expect_err!(r, Error::InvalidKernelArgs(_));
    let r = env
        .rt
        .enqueue_launch(q, k, &NdRange::d1(64), &[ArgValue::Buffer(b), ArgValue::Local(0)], &[]);
    expect_err!(r, Error::InvalidKernelArgs(_));
    Ok(())
}

fn profiling_without_profiling_queue(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let b = env.buffer(ctx, 64)?;
    let e = env.track(env.rt.enqueue_fill(q, b, 0, 64, &[1], &[])?);
    env.rt.wait(&[e])?;
    expect_err!(env.rt.event_profiling(e), Error::ProfilingUnavailable(_));
    if !env.info().caps.contains(DeviceCaps::PROFILING) {
        let r = env.rt.create_queue(ctx, env.device(), &QueueProps { profiling: true });
        expect_err!(r, Error::Unsupported { .. });
    }
    Ok(())
}

fn program_format_not_accepted(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::KERNELS)?;
    let ctx = env.context()?;
    let Some(format) = unsupported_format(env.info().program_formats) else {
        return Err(skip("the device accepts every program format"));
    };
    let source = match format {
        f if f == ProgramFormats::PTX => ProgramSource::Ptx(".version 7.0".into()),
        f if f == ProgramFormats::SPIRV => ProgramSource::SpirV(vec![0x03, 0x02, 0x23, 0x07]),
        f if f == ProgramFormats::CUDA_C => ProgramSource::CudaC(crate::kernels::CUDA_C.into()),
        f if f == ProgramFormats::OPENCL_C => ProgramSource::OpenClC(crate::kernels::OPENCL_C.into()),
        _ => ProgramSource::Host(std::sync::Arc::new(crate::kernels::host_library())),
    };
    expect_err!(env.rt.create_program(ctx, &source, ""), Error::Unsupported { .. });
    Ok(())
}

fn invalid_program_source(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::KERNELS)?;
    let ctx = env.context()?;
    let formats = env.info().program_formats;
    let source = if formats.contains(ProgramFormats::OPENCL_C) {
        ProgramSource::OpenClC("__kernel void broken(__global uint* p) { p[0] = ; }".into())
    } else if formats.contains(ProgramFormats::CUDA_C) {
        ProgramSource::CudaC("extern \"C\" __global__ void broken(unsigned* p) { p[0] = ; }".into())
    } else {
        return Err(skip("host-kernel programs have no source that can fail to build"));
    };
    expect_err!(env.rt.create_program(ctx, &source, ""), Error::ProgramBuild { .. });
    Ok(())
}
