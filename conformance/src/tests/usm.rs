//! Unified shared memory: allocation kinds, copies, fills, pointer queries.

use ur_api::{MemRef, UsmAdvice, UsmDesc, UsmKind, UsmPtr};

use crate::env::usm_cap;
use crate::{bytes, check_bytes, ensure, ensure_eq, skip, DeviceEnv, TestResult};

cases!(
    "usm",
    positive: [
        host_roundtrip,
        device_roundtrip,
        shared_roundtrip,
        copy_between_allocations,
        copy_at_interior_pointers,
        fill_every_kind,
        pointer_info_interior,
        aligned_allocations,
        prefetch_and_advise,
        free_and_reallocate,
    ],
    negative: []
);

const KINDS: [UsmKind; 3] = [UsmKind::Host, UsmKind::Device, UsmKind::Shared];

/// The USM kinds the device supports, or a skip.
pub(crate) fn kinds(env: &DeviceEnv<'_>) -> Result<Vec<UsmKind>, crate::TestError> {
    let ks: Vec<UsmKind> = KINDS
        .into_iter()
        .filter(|k| env.info().usm.contains(usm_cap(*k)))
        .collect();
    if ks.is_empty() {
        return Err(skip("device supports no USM allocations"));
    }
    Ok(ks)
}

fn roundtrip(env: &DeviceEnv<'_>, kind: UsmKind) -> TestResult {
    env.require_usm(kind)?;
    let (ctx, q) = env.setup()?;
    let p = env.usm(ctx, kind, 4096)?;
    let data = bytes(4096, 20);
    env.rt.usm_write(q, p, &data)?;
    check_bytes(&format!("{kind:?} USM"), &env.usm_read_all(q, p, 4096)?, &data)
}

fn host_roundtrip(env: &DeviceEnv<'_>) -> TestResult {
    roundtrip(env, UsmKind::Host)
}

fn device_roundtrip(env: &DeviceEnv<'_>) -> TestResult {
    roundtrip(env, UsmKind::Device)
}

fn shared_roundtrip(env: &DeviceEnv<'_>) -> TestResult {
    roundtrip(env, UsmKind::Shared)
}

fn copy_between_allocations(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &a in &ks {
        for &b in &ks {
            let src = env.usm(ctx, a, 1024)?;
            let dst = env.usm(ctx, b, 1024)?;
            let data = bytes(1024, 21);
            env.rt.usm_write(q, src, &data)?;
            let e = env
                .rt
                .enqueue_usm_copy(q, MemRef::Usm(dst), MemRef::Usm(src), 1024, &[])?;
            env.rt.complete(e)?;
            check_bytes(&format!("{a:?} -> {b:?}"), &env.usm_read_all(q, dst, 1024)?, &data)?;
        }
    }
    Ok(())
}

fn copy_at_interior_pointers(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &k in &ks {
        let p = env.usm(ctx, k, 1000)?;
        let mut want = bytes(1000, 22);
        env.rt.usm_write(q, p, &want)?;
        env.rt.usm_write(q, p.offset(333), &bytes(100, 23))?;
        want[333..433].copy_from_slice(&bytes(100, 23));
        // Move [0, 50) to [900, 950) inside the same allocation.
        let e = env
            .rt
            .enqueue_usm_copy(q, MemRef::Usm(p.offset(900)), MemRef::Usm(p), 50, &[])?;
        env.rt.complete(e)?;
        want.copy_within(0..50, 900);
        check_bytes(&format!("{k:?} interior copies"), &env.usm_read_all(q, p, 1000)?, &want)?;
        let mut tail = vec![0; 7];
        env.rt.usm_read(q, p.offset(993), &mut tail)?;
        check_bytes("tail read", &tail, &want[993..])?;
    }
    Ok(())
}

fn fill_every_kind(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &k in &ks {
        let p = env.usm(ctx, k, 512)?;
        for n in [1usize, 2, 4, 8, 16, 32, 64, 128] {
            let pat = bytes(n, 24 + n as u32);
            env.rt.complete(env.rt.enqueue_usm_fill(q, p, 512, &pat, &[])?)?;
            let want: Vec<u8> = pat.iter().copied().cycle().take(512).collect();
            check_bytes(
                &format!("{k:?} fill with {n}-byte pattern"),
                &env.usm_read_all(q, p, 512)?,
                &want,
            )?;
        }
        // A fill of an interior range leaves the rest alone.
        env.rt.complete(env.rt.enqueue_usm_fill(q, p, 512, &[0], &[])?)?;
        env.rt
            .complete(env.rt.enqueue_usm_fill(q, p.offset(64), 128, &[0xab, 0xcd], &[])?)?;
        let mut want = vec![0u8; 512];
        for (i, b) in want[64..192].iter_mut().enumerate() {
            *b = if i % 2 == 0 { 0xab } else { 0xcd };
        }
        check_bytes(&format!("{k:?} interior fill"), &env.usm_read_all(q, p, 512)?, &want)?;
    }
    Ok(())
}

fn pointer_info_interior(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let ctx = env.context()?;
    for &k in &ks {
        let p = env.usm(ctx, k, 300)?;
        for off in [0usize, 1, 150, 299] {
            let i = env.rt.usm_pointer_info(ctx, p.offset(off))?;
            ensure_eq!(i.kind, k);
            ensure_eq!(i.base, p);
            ensure_eq!(i.size, 300);
            if k == UsmKind::Host {
                ensure_eq!(i.device, None);
            } else {
                ensure_eq!(i.device, Some(env.device()));
            }
        }
        ensure!(
            env.rt.usm_pointer_info(ctx, p.offset(300)).map(|i| i.base) != Ok(p),
            "one past the end is reported inside the {k:?} allocation"
        );
    }
    Ok(())
}

fn aligned_allocations(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &k in &ks {
        for align in [1usize, 16, 64, 256, 4096] {
            let mut desc = UsmDesc::new(k, 100).aligned(align);
            if k != UsmKind::Host {
                desc = desc.on(env.device());
            }
            let p = crate::with_context(env.usm_desc(ctx, &desc), format_args!("{k:?} USM aligned to {align}"))?;
            ensure!(p.0 % align as u64 == 0, "{k:?} pointer {p} not aligned to {align}");
            env.rt.usm_write(q, p, &bytes(100, 30))?;
            check_bytes("aligned allocation", &env.usm_read_all(q, p, 100)?, &bytes(100, 30))?;
        }
    }
    Ok(())
}

fn prefetch_and_advise(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &k in &ks {
        let p = env.usm(ctx, k, 4096)?;
        env.rt.usm_write(q, p, &bytes(4096, 31))?;
        env.rt.complete(env.rt.enqueue_usm_prefetch(q, p, 4096, &[])?)?;
        env.rt
            .complete(env.rt.enqueue_usm_prefetch(q, p.offset(1024), 1024, &[])?)?;
        for advice in [
            UsmAdvice::READ_MOSTLY,
            UsmAdvice::PREFER_DEVICE,
            UsmAdvice::PREFER_HOST,
            UsmAdvice::empty(),
        ] {
            env.rt.usm_advise(q, p, 4096, advice)?;
        }
        check_bytes(
            "data after prefetch/advice",
            &env.usm_read_all(q, p, 4096)?,
            &bytes(4096, 31),
        )?;
    }
    Ok(())
}

fn free_and_reallocate(env: &DeviceEnv<'_>) -> TestResult {
    let ks = kinds(env)?;
    let (ctx, q) = env.setup()?;
    for &k in &ks {
        let mut live: Vec<UsmPtr> = Vec::new();
        for i in 0..16u32 {
            let p = env.usm(ctx, k, 64 + i as usize)?;
            env.rt.usm_write(q, p, &bytes(64 + i as usize, i))?;
            live.push(p);
        }
        for p in live.iter().step_by(2) {
            env.rt.usm_free(ctx, *p)?;
        }
        for (i, p) in live.iter().enumerate().skip(1).step_by(2) {
            check_bytes(
                "surviving allocation",
                &env.usm_read_all(q, *p, 64 + i)?,
                &bytes(64 + i, i as u32),
            )?;
        }
    }
    Ok(())
}
