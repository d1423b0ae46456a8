//! Memory is bound to its location (context, device): a command uses it at
//! another location only where the adapter answers `Unified` (a copy also
//! where it answers `Migratable`), and otherwise fails with
//! `NotAccessible` — no command moves data behind the memory manager's
//! back. Also the lifetime and overflow rules of the layer that checks it.

use ur_api::{ArgValue, BufferDesc, Error, HostPtr, Location, MemoryConnection, NdRange, UsmDesc, UsmKind};

use crate::env::DeviceEnv;
use crate::{check_bytes, ensure, expect_err, skip, TestResult};

cases!(
    "location",
    positive: [peer_buffer_copied_where_the_connection_allows],
    negative: [
        peer_buffer_in_place_only_where_unified,
        peer_device_usm_in_place_only_where_unified,
        context_with_usm_is_not_released,
        host_register_bad_ranges,
        launch_sizes_that_overflow,
        usm_alignment_beyond_any_allocation,
    ],
);

/// Runs `body` with a context over the device under test and a peer of its
/// platform, a queue on the device under test, the peer's location and the
/// connection from it to the device under test; releases it all after.
fn with_peer(
    env: &DeviceEnv<'_>,
    body: impl FnOnce(ur_api::ContextId, ur_api::QueueId, Location, MemoryConnection) -> TestResult,
) -> TestResult {
    let peer = env.peer_device()?;
    let ctx = env.rt.create_context(&[env.device(), peer])?;
    let r = (|| {
        let q = env.queue(ctx)?;
        let from = Location::new(ctx, peer);
        let conn = env.rt.memory_connection(from, Location::new(ctx, env.device()))?;
        body(ctx, q, from, conn)
    })();
    env.cleanup();
    env.rt.release_context(ctx)?;
    r
}

/// The central invariant: a buffer placed for the peer is used in place on
/// this device's queue only where the adapter says `Unified`.
fn peer_buffer_in_place_only_where_unified(env: &DeviceEnv<'_>) -> TestResult {
    with_peer(env, |ctx, q, from, conn| {
        let buf = env.buffer_desc(ctx, &BufferDesc::new(64).on(from.device))?;
        let fill = env.rt.enqueue_fill(q, buf, 0, 64, &[7], &[]);
        let mut out = vec![0u8; 64];
        let read = env.rt.read(q, buf, 0, &mut out);
        if conn == MemoryConnection::Unified {
            env.rt.complete(fill?)?;
            read?;
            check_bytes("unified peer buffer", &out, &[7; 64])?;
            return Err(skip(
                "the peer's memory is Unified here: in-place use is allowed (and was checked)",
            ));
        }
        expect_err!(fill, Error::NotAccessible { copy: false, .. });
        expect_err!(read, Error::NotAccessible { copy: false, .. });
        if env.info().caps.contains(ur_api::DeviceCaps::KERNELS) {
            let k = env.kernel(ctx, "add_one")?;
            let launch = env
                .rt
                .enqueue_launch(q, k, &NdRange::d1(16), &[ArgValue::Buffer(buf)], &[]);
            expect_err!(launch, Error::NotAccessible { copy: false, .. });
        }
        Ok(())
    })
}

/// A copy from the peer's buffer on this device's queue works where the
/// answer is `Migratable` or `Unified`, with the right bytes.
fn peer_buffer_copied_where_the_connection_allows(env: &DeviceEnv<'_>) -> TestResult {
    with_peer(env, |ctx, q, from, conn| {
        let data = crate::bytes(256, 9);
        let src = env.buffer_desc(ctx, &BufferDesc::new(256).on(from.device))?;
        let pq = env.rt.create_queue(ctx, from.device, &Default::default())?;
        let written = env.rt.write(pq, src, 0, &data);
        env.rt.finish(pq)?;
        env.rt.release_queue(pq)?;
        written?;
        let dst = env.buffer(ctx, 256)?;
        let copied = env.rt.enqueue_copy(q, src, 0, dst, 0, 256, &[]);
        if conn == MemoryConnection::None {
            expect_err!(copied, Error::NotAccessible { copy: true, .. });
            return Err(skip("the peer's memory is not copyable here (None): refusal checked"));
        }
        env.rt.complete(copied?)?;
        check_bytes("copied from the peer", &env.read_all(q, dst, 256)?, &data)
    })
}

/// Device USM of the peer, likewise.
fn peer_device_usm_in_place_only_where_unified(env: &DeviceEnv<'_>) -> TestResult {
    env.require_usm(UsmKind::Device)?;
    with_peer(env, |ctx, q, from, conn| {
        let peer_info = env.rt.device_info(from.device)?;
        if !peer_info.usm.contains(ur_api::UsmCaps::DEVICE) {
            return Err(skip("the peer has no device USM"));
        }
        let p = env.usm_desc(ctx, &UsmDesc::new(UsmKind::Device, 64).on(from.device))?;
        let fill = env.rt.enqueue_usm_fill(q, p, 64, &[3], &[]);
        if conn == MemoryConnection::Unified {
            env.rt.complete(fill?)?;
            return Err(skip("the peer's memory is Unified here: in-place use is allowed"));
        }
        expect_err!(fill, Error::NotAccessible { copy: false, .. });
        Ok(())
    })
}

/// A context whose USM allocations are alive is not released (their
/// memory would be freed under whoever uses it); once they are freed, it is.
fn context_with_usm_is_not_released(env: &DeviceEnv<'_>) -> TestResult {
    let kind = [UsmKind::Host, UsmKind::Device, UsmKind::Shared]
        .into_iter()
        .find(|k| env.info().usm.contains(crate::env::usm_cap(*k)))
        .ok_or_else(|| skip("no USM on this device"))?;
    let ctx = env.rt.create_context(&[env.device()])?;
    let p = env.rt.usm_alloc(ctx, &UsmDesc::new(kind, 64).on(env.device()))?;
    let refused = env.rt.release_context(ctx);
    let freed = env.rt.usm_free(ctx, p);
    let released = env.rt.release_context(ctx);
    expect_err!(refused, Error::InUse { users: 1, .. });
    freed?;
    released?;
    Ok(())
}

/// Host registration refuses null, wrapping and overlapping ranges, and
/// unregistration of a range that was not registered, before the adapter.
fn host_register_bad_ranges(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(ur_api::DeviceCaps::HOST_REGISTER)?;
    let ctx = env.context()?;
    let mut mem = vec![0u8; 8192];
    // SAFETY: none of these spans is accessed: each registration below is
    // refused by the checks, or (`first`) covers live memory we own, which
    // is unregistered before `mem` is dropped.
    let (null, wrapping, first, overlapping, unknown) = unsafe {
        (
            HostPtr::new(std::ptr::null_mut(), 64),
            HostPtr::new((usize::MAX - 63) as *mut u8, 128),
            HostPtr::new(mem.as_mut_ptr(), 4096),
            HostPtr::new(mem.as_mut_ptr().add(2048), 4096),
            HostPtr::new(mem.as_mut_ptr().add(4096), 4096),
        )
    };
    expect_err!(env.rt.host_register(ctx, null), Error::InvalidValue(_));
    expect_err!(env.rt.host_register(ctx, wrapping), Error::InvalidValue(_));
    env.rt.host_register(ctx, first)?;
    let overlap = env.rt.host_register(ctx, overlapping);
    let not_registered = env.rt.host_unregister(ctx, unknown);
    let partial = env.rt.host_unregister(ctx, mem_slice(first, 1024));
    env.rt.host_unregister(ctx, first)?;
    expect_err!(overlap, Error::InvalidValue(_));
    expect_err!(not_registered, Error::InvalidValue(_));
    expect_err!(partial, Error::InvalidValue(_));
    Ok(())
}

fn mem_slice(h: HostPtr, len: usize) -> HostPtr {
    h.slice(0, len).expect("inside the span")
}

/// Launch sizes whose products or sums overflow are refused, not wrapped.
fn launch_sizes_that_overflow(env: &DeviceEnv<'_>) -> TestResult {
    env.require_kernels()?;
    let (ctx, q) = env.setup()?;
    let k = env.kernel(ctx, "add_one")?;
    let buf = env.buffer(ctx, 64)?;
    let args = [ArgValue::Buffer(buf)];
    let big = 1usize << 32;
    let local = NdRange::d2(big, big).with_local([big, big, 1]);
    expect_err!(env.rt.enqueue_launch(q, k, &local, &args, &[]), Error::InvalidValue(_));
    let total = NdRange::d3(big, big, big);
    expect_err!(env.rt.enqueue_launch(q, k, &total, &args, &[]), Error::InvalidValue(_));
    let offset = NdRange {
        offset: [usize::MAX, 0, 0],
        ..NdRange::d1(16)
    };
    expect_err!(env.rt.enqueue_launch(q, k, &offset, &args, &[]), Error::InvalidValue(_));
    Ok(())
}

/// An alignment no allocation can honour is an invalid alignment, not
/// "out of memory".
fn usm_alignment_beyond_any_allocation(env: &DeviceEnv<'_>) -> TestResult {
    let kind = [UsmKind::Host, UsmKind::Device, UsmKind::Shared]
        .into_iter()
        .find(|k| env.info().usm.contains(crate::env::usm_cap(*k)))
        .ok_or_else(|| skip("no USM on this device"))?;
    let ctx = env.context()?;
    let desc = UsmDesc::new(kind, 64).on(env.device()).aligned(1 << 63);
    expect_err!(env.usm_desc(ctx, &desc), Error::InvalidAlignment { .. });
    ensure!(
        env.info().max_alloc_size < 1 << 62,
        "the device claims an enormous largest allocation"
    );
    Ok(())
}
