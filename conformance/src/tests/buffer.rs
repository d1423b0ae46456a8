//! Buffers: creation flags, host reads and writes, sub-buffers, registration.

use ur_api::{BufferDesc, DeviceCaps, HostPtr, MemFlags};

use crate::{bytes, check_bytes, ensure, ensure_eq, DeviceEnv, TestResult};

cases!(
    "buffer",
    positive: [
        write_read_roundtrip,
        write_read_at_offsets,
        copy_host_ptr_initialises,
        use_host_ptr_reads_caller_memory,
        alloc_host_ptr_and_access_flags,
        info_describes_the_buffer,
        sub_buffer_views_parent,
        sub_buffer_info_names_parent,
        large_buffer_roundtrip,
        many_buffers_stay_distinct,
        host_register_and_unregister,
        release_while_command_in_flight,
    ],
    negative: []
);

fn write_read_roundtrip(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let data = bytes(4096, 1);
    let b = env.buffer(ctx, data.len())?;
    env.rt.write(q, b, 0, &data)?;
    check_bytes("read back", &env.read_all(q, b, data.len())?, &data)
}

fn write_read_at_offsets(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let mut want = bytes(1000, 2);
    let b = env.buffer_with(ctx, &want)?;
    for (off, len, seed) in [
        (0usize, 1usize, 10u32),
        (1, 7, 11),
        (13, 300, 12),
        (999, 1, 13),
        (500, 500, 14),
    ] {
        let part = bytes(len, seed);
        env.rt.write(q, b, off, &part)?;
        want[off..off + len].copy_from_slice(&part);
        let mut got = vec![0; len];
        env.rt.read(q, b, off, &mut got)?;
        check_bytes(&format!("read at {off}+{len}"), &got, &part)?;
    }
    check_bytes("whole buffer", &env.read_all(q, b, 1000)?, &want)
}

fn copy_host_ptr_initialises(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let mut data = bytes(777, 3);
    let b = env.buffer_with(ctx, &data)?;
    data.iter_mut().for_each(|x| *x = 0); // the buffer must own a copy
    check_bytes("initial contents", &env.read_all(q, b, 777)?, &bytes(777, 3))
}

fn use_host_ptr_reads_caller_memory(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::USE_HOST_PTR)?;
    let (ctx, q) = env.setup()?;
    let mut mem = bytes(512, 4);
    // SAFETY: `mem` outlives the buffer, which is released (after finish)
    // before the end of this function; nothing else touches `mem` meanwhile.
    let host = unsafe { HostPtr::new(mem.as_mut_ptr(), mem.len()) };
    let desc = BufferDesc::new(512).on(env.device()).with_flags(MemFlags::USE_HOST_PTR);
    let b = env.rt.create_buffer(ctx, &desc, Some(host))?;
    let r = (|| -> TestResult {
        check_bytes("initial contents", &env.read_all(q, b, 512)?, &bytes(512, 4))?;
        env.rt.write(q, b, 100, &bytes(50, 5))?;
        let mut want = bytes(512, 4);
        want[100..150].copy_from_slice(&bytes(50, 5));
        check_bytes("after write", &env.read_all(q, b, 512)?, &want)
    })();
    env.rt.finish(q)?;
    env.rt.release_buffer(b)?;
    drop(mem);
    r
}

fn alloc_host_ptr_and_access_flags(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    for flags in [
        MemFlags::ALLOC_HOST_PTR,
        MemFlags::READ_ONLY,
        MemFlags::WRITE_ONLY,
        MemFlags::empty(),
    ] {
        let b = env.buffer_desc(ctx, &BufferDesc::new(256).on(env.device()).with_flags(flags))?;
        env.rt.write(q, b, 0, &bytes(256, 6))?;
        check_bytes(&format!("{flags:?}"), &env.read_all(q, b, 256)?, &bytes(256, 6))?;
        ensure_eq!(env.rt.buffer_info(b)?.flags, flags);
    }
    Ok(())
}

fn info_describes_the_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let b = env.buffer(ctx, 123)?;
    let i = env.rt.buffer_info(b)?;
    ensure_eq!(i.context, ctx);
    ensure_eq!(i.device, env.device());
    ensure_eq!(i.size, 123);
    ensure_eq!(i.parent, None);
    let unhinted = env.buffer_desc(ctx, &BufferDesc::new(8))?;
    ensure_eq!(env.rt.buffer_info(unhinted)?.device, env.device());
    Ok(())
}

/// A sub-buffer offset that satisfies the device's alignment.
fn sub_align(env: &DeviceEnv<'_>) -> usize {
    env.info().sub_buffer_align.max(1)
}

fn sub_buffer_views_parent(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let (ctx, q) = env.setup()?;
    let a = sub_align(env);
    let size = 4 * a + 256;
    let mut want = bytes(size, 7);
    let parent = env.buffer_with(ctx, &want)?;
    let sub = env.sub_buffer(parent, a, 2 * a + 64)?;
    check_bytes(
        "sub-buffer view",
        &env.read_all(q, sub, 2 * a + 64)?,
        &want[a..3 * a + 64],
    )?;
    env.rt.write(q, sub, 10, &bytes(40, 8))?;
    want[a + 10..a + 50].copy_from_slice(&bytes(40, 8));
    check_bytes("parent after sub write", &env.read_all(q, parent, size)?, &want)?;
    env.rt.write(q, parent, a + 60, &bytes(4, 9))?;
    let mut got = vec![0; 4];
    env.rt.read(q, sub, 60, &mut got)?;
    check_bytes("sub after parent write", &got, &bytes(4, 9))
}

fn sub_buffer_info_names_parent(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::SUB_BUFFERS)?;
    let ctx = env.context()?;
    let a = sub_align(env);
    let parent = env.buffer(ctx, 2 * a)?;
    let sub = env.sub_buffer(parent, a, a)?;
    let i = env.rt.buffer_info(sub)?;
    ensure_eq!(i.parent, Some((parent, a)));
    ensure_eq!(i.size, a);
    ensure_eq!(i.context, ctx);
    // The sub-buffer keeps working after its parent's handle is released.
    env.rt.release_buffer(parent)?;
    ensure_eq!(env.rt.buffer_info(sub)?.size, a);
    Ok(())
}

fn large_buffer_roundtrip(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let size = (16usize << 20).min((env.info().max_alloc_size / 2) as usize);
    let data = bytes(size, 10);
    let b = env.buffer_with(ctx, &data)?;
    env.rt.write(q, b, size / 2, &bytes(size / 4, 11))?;
    let mut want = data;
    want[size / 2..size / 2 + size / 4].copy_from_slice(&bytes(size / 4, 11));
    check_bytes("large buffer", &env.read_all(q, b, size)?, &want)
}

fn many_buffers_stay_distinct(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let bufs: Vec<_> = (0..64u32)
        .map(|i| env.buffer_with(ctx, &bytes(64 + i as usize, i)))
        .collect::<Result<_, _>>()?;
    for (i, b) in bufs.iter().enumerate() {
        check_bytes(
            &format!("buffer {i}"),
            &env.read_all(q, *b, 64 + i)?,
            &bytes(64 + i, i as u32),
        )?;
    }
    Ok(())
}

fn host_register_and_unregister(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::HOST_REGISTER)?;
    let (ctx, q) = env.setup()?;
    let mut mem = bytes(8192, 12);
    // SAFETY: `mem` stays alive and unmoved until it is unregistered below.
    let host = unsafe { HostPtr::new(mem.as_mut_ptr(), mem.len()) };
    env.rt.host_register(ctx, host)?;
    let b = env.buffer(ctx, 8192)?;
    let r = env.rt.write(q, b, 0, &mem);
    env.rt.host_unregister(ctx, host)?;
    r?;
    ensure!(env.read_all(q, b, 8192)? == mem, "registered memory did not round-trip");
    Ok(())
}

fn release_while_command_in_flight(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let data = bytes(1 << 20, 13);
    let b = env
        .rt
        .create_buffer(ctx, &BufferDesc::new(data.len()).on(env.device()), None)?;
    let b2 = env.buffer(ctx, data.len())?;
    // SAFETY: `data` outlives the write, which is waited for below.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    let w = env.rt.enqueue_write(q, b, 0, src, &[])?;
    let c = env.rt.enqueue_copy(q, b, 0, b2, 0, data.len(), &[])?;
    env.rt.release_buffer(b)?;
    env.rt.complete(w)?;
    env.rt.complete(c)?;
    check_bytes("copy of a released buffer", &env.read_all(q, b2, data.len())?, &data)
}
