//! Bad input to USM calls: each asserts the exact typed error.

use ur_api::{Error, HandleKind, HostPtr, MemRef, UsmAdvice, UsmDesc, UsmKind};

use super::usm::kinds;
use crate::{expect_err, DeviceEnv, TestResult};

cases!(
    "negative_usm",
    positive: [],
    negative: [
        alloc_size_zero,
        alloc_alignment_not_power_of_two,
        device_alloc_without_device,
        alloc_device_not_in_context,
        free_unknown_pointer,
        double_free,
        free_interior_pointer,
        free_in_wrong_context,
        stale_pointer_in_copy,
        copy_out_of_bounds,
        copy_size_zero,
        copy_overlapping,
        copy_host_side_too_small,
        fill_bad_pattern,
        fill_out_of_bounds,
        advise_conflicting,
        pointer_info_wrong_context,
        launch_with_stale_pointer,
    ],
);

const USM_POINTER: HandleKind = HandleKind::UsmPointer;

fn alloc_size_zero(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    for k in kinds(env)? {
        expect_err!(env.usm(ctx, k, 0), Error::InvalidSize { size: 0, .. });
    }
    Ok(())
}

fn alloc_alignment_not_power_of_two(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    for k in kinds(env)? {
        for align in [3usize, 12, 100] {
            let desc = UsmDesc::new(k, 64).aligned(align).on(env.device());
            expect_err!(env.usm_desc(ctx, &desc), Error::InvalidAlignment { .. });
        }
    }
    Ok(())
}

fn device_alloc_without_device(env: &DeviceEnv<'_>) -> TestResult {
    env.require_usm(UsmKind::Device)?;
    let ctx = env.context()?;
    expect_err!(
        env.usm_desc(ctx, &UsmDesc::new(UsmKind::Device, 64)),
        Error::InvalidValue(_)
    );
    Ok(())
}

fn alloc_device_not_in_context(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let peer = env.other_device()?;
    let ctx = env.context()?;
    for k in ks {
        expect_err!(
            env.usm_desc(ctx, &UsmDesc::new(k, 64).on(peer)),
            Error::DeviceNotInContext
        );
    }
    Ok(())
}

fn free_unknown_pointer(env: &DeviceEnv<'_>) -> TestResult {
    kinds(env)?;
    let ctx = env.context()?;
    expect_err!(
        env.rt.usm_free(ctx, ur_api::UsmPtr(0x10)),
        Error::InvalidHandle { kind: USM_POINTER }
    );
    Ok(())
}

fn double_free(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        env.rt.usm_free(ctx, p)?;
        expect_err!(env.rt.usm_free(ctx, p), Error::InvalidHandle { kind: USM_POINTER });
    }
    Ok(())
}

fn free_interior_pointer(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        expect_err!(
            env.rt.usm_free(ctx, p.offset(8)),
            Error::InvalidHandle { kind: USM_POINTER }
        );
        env.rt.usm_free(ctx, p)?;
    }
    Ok(())
}

fn free_in_wrong_context(env: &DeviceEnv<'_>) -> TestResult {
    let a = env.context()?;
    let b = env.context()?;
    for k in kinds(env)? {
        let p = env.usm(a, k, 64)?;
        expect_err!(env.rt.usm_free(b, p), Error::InvalidHandle { kind: USM_POINTER });
        env.rt.usm_free(a, p)?;
    }
    Ok(())
}

fn stale_pointer_in_copy(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        env.rt.usm_free(ctx, p)?;
        expect_err!(
            env.rt.usm_write(q, p, &[0u8; 16]),
            Error::InvalidHandle { kind: USM_POINTER }
        );
        let mut out = [0u8; 16];
        expect_err!(
            env.rt.usm_read(q, p, &mut out),
            Error::InvalidHandle { kind: USM_POINTER }
        );
    }
    Ok(())
}

fn copy_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        expect_err!(env.rt.usm_write(q, p.offset(60), &[0u8; 8]), Error::OutOfBounds { .. });
        expect_err!(env.rt.usm_write(q, p, &[0u8; 65]), Error::OutOfBounds { .. });
    }
    Ok(())
}

fn copy_size_zero(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        let r = env
            .rt
            .enqueue_usm_copy(q, MemRef::Usm(p), MemRef::Usm(p.offset(32)), 0, &[]);
        expect_err!(r, Error::InvalidSize { size: 0, .. });
    }
    Ok(())
}

fn copy_overlapping(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        let r = env
            .rt
            .enqueue_usm_copy(q, MemRef::Usm(p.offset(8)), MemRef::Usm(p), 16, &[]);
        expect_err!(r, Error::InvalidValue(_));
    }
    Ok(())
}

fn copy_host_side_too_small(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        let mut small = [0u8; 16];
        // SAFETY: the call fails its checks before using the memory.
        let h = unsafe { HostPtr::new(small.as_mut_ptr(), small.len()) };
        let r = env.rt.enqueue_usm_copy(q, MemRef::Host(h), MemRef::Usm(p), 32, &[]);
        expect_err!(r, Error::OutOfBounds { size: 16, .. });
    }
    Ok(())
}

fn fill_bad_pattern(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        expect_err!(
            env.rt.enqueue_usm_fill(q, p, 62, &[1, 2, 3, 4], &[]),
            Error::InvalidValue(_)
        );
        expect_err!(
            env.rt.enqueue_usm_fill(q, p, 64, &[], &[]),
            Error::InvalidSize { size: 0, .. }
        );
        expect_err!(
            env.rt.enqueue_usm_fill(q, p, 0, &[1], &[]),
            Error::InvalidSize { size: 0, .. }
        );
    }
    Ok(())
}

fn fill_out_of_bounds(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        expect_err!(
            env.rt.enqueue_usm_fill(q, p.offset(32), 64, &[1], &[]),
            Error::OutOfBounds { .. }
        );
    }
    Ok(())
}

fn advise_conflicting(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for k in kinds(env)? {
        let p = env.usm(ctx, k, 64)?;
        let advice = UsmAdvice::PREFER_DEVICE | UsmAdvice::PREFER_HOST;
        expect_err!(env.rt.usm_advise(q, p, 64, advice), Error::InvalidValue(_));
        expect_err!(
            env.rt.usm_advise(q, p, 65, UsmAdvice::READ_MOSTLY),
            Error::OutOfBounds { .. }
        );
    }
    Ok(())
}

fn pointer_info_wrong_context(env: &DeviceEnv<'_>) -> TestResult {
    let a = env.context()?;
    let b = env.context()?;
    for k in kinds(env)? {
        let p = env.usm(a, k, 64)?;
        expect_err!(
            env.rt.usm_pointer_info(b, p),
            Error::InvalidHandle { kind: USM_POINTER }
        );
        env.rt.usm_free(a, p)?;
        expect_err!(
            env.rt.usm_pointer_info(a, p),
            Error::InvalidHandle { kind: USM_POINTER }
        );
    }
    Ok(())
}

fn launch_with_stale_pointer(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_one")?;
    let p = env.usm(ctx, ks[0], 256)?;
    env.rt.usm_free(ctx, p)?;
    let r = env
        .rt
        .enqueue_launch(q, k, &ur_api::NdRange::d1(64), &[ur_api::ArgValue::Usm(p)], &[]);
    expect_err!(r, Error::InvalidHandle { kind: USM_POINTER });
    Ok(())
}
