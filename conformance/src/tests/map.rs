//! Mapping buffers into host memory: read and write mappings, ranges.

use ur_api::{BufferId, DeviceCaps, HostPtr, MapFlags, QueueId};

use crate::{bytes, check_bytes, ensure_eq, DeviceEnv, TestResult};

cases!(
    "map",
    positive: [read_mapping_sees_contents, write_mapping_written_back, write_invalidate_mapping, mapping_a_range, two_mappings_at_once, map_sub_buffer],
    negative: []
);

/// Maps, waits, and returns the mapping.
fn map(
    env: &DeviceEnv<'_>,
    q: QueueId,
    b: BufferId,
    flags: MapFlags,
    off: usize,
    len: usize,
) -> Result<HostPtr, crate::TestError> {
    let (e, p) = env.rt.enqueue_map(q, b, flags, off, len, &[])?;
    env.rt.complete(e)?;
    ensure_eq!(p.len(), len);
    Ok(p)
}

fn unmap(env: &DeviceEnv<'_>, q: QueueId, b: BufferId, p: HostPtr) -> TestResult {
    env.rt.complete(env.rt.enqueue_unmap(q, b, p, &[])?)?;
    Ok(())
}

/// # Safety
///
/// `p` must be a live, completed mapping that nothing else accesses.
unsafe fn view<'a>(p: HostPtr) -> &'a mut [u8] {
    // SAFETY: per the contract, the mapping is valid for p.len() bytes and unaliased.
    unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), p.len()) }
}

fn read_mapping_sees_contents(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let data = bytes(4096, 110);
    let b = env.buffer_with(ctx, &data)?;
    let p = map(env, q, b, MapFlags::READ, 0, 4096)?;
    // SAFETY: the map event completed and the mapping is unmapped only below.
    let r = check_bytes("read mapping", unsafe { view(p) }, &data);
    unmap(env, q, b, p)?;
    r
}

fn write_mapping_written_back(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer_with(ctx, &bytes(2048, 111))?;
    let p = map(env, q, b, MapFlags::READ | MapFlags::WRITE, 0, 2048)?;
    // SAFETY: the map event completed; the mapping is unmapped only below.
    let m = unsafe { view(p) };
    check_bytes("read-write mapping", m, &bytes(2048, 111))?;
    m[100..300].copy_from_slice(&bytes(200, 112));
    unmap(env, q, b, p)?;
    let mut want = bytes(2048, 111);
    want[100..300].copy_from_slice(&bytes(200, 112));
    check_bytes("after unmap", &env.read_all(q, b, 2048)?, &want)
}

fn write_invalidate_mapping(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer_with(ctx, &bytes(1024, 113))?;
    let p = map(env, q, b, MapFlags::WRITE_INVALIDATE, 256, 512)?;
    // SAFETY: the map event completed; the mapping is unmapped only below.
    unsafe { view(p) }.copy_from_slice(&bytes(512, 114));
    unmap(env, q, b, p)?;
    let mut want = bytes(1024, 113);
    want[256..768].copy_from_slice(&bytes(512, 114));
    check_bytes("after write-invalidate unmap", &env.read_all(q, b, 1024)?, &want)
}

fn mapping_a_range(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let data = bytes(3000, 115);
    let b = env.buffer_with(ctx, &data)?;
    for (off, len) in [(0usize, 1usize), (1, 999), (2999, 1), (1234, 1766)] {
        let p = map(env, q, b, MapFlags::READ, off, len)?;
        // SAFETY: the map event completed; the mapping is unmapped right after.
        let r = check_bytes(
            &format!("mapping {off}+{len}"),
            unsafe { view(p) },
            &data[off..off + len],
        );
        unmap(env, q, b, p)?;
        r?;
    }
    Ok(())
}

fn two_mappings_at_once(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP)?;
    let (ctx, q) = env.setup()?;
    let b = env.buffer_with(ctx, &bytes(1024, 116))?;
    let p1 = map(env, q, b, MapFlags::WRITE, 0, 512)?;
    let p2 = map(env, q, b, MapFlags::WRITE, 512, 512)?;
    // SAFETY: both maps completed; they cover disjoint ranges; unmapped below.
    unsafe { view(p1) }.fill(0x11);
    // SAFETY: as above.
    unsafe { view(p2) }.fill(0x22);
    unmap(env, q, b, p2)?;
    unmap(env, q, b, p1)?;
    let mut want = vec![0x11u8; 1024];
    want[512..].fill(0x22);
    check_bytes("two mappings", &env.read_all(q, b, 1024)?, &want)
}

fn map_sub_buffer(env: &DeviceEnv<'_>) -> TestResult {
    env.require_caps(DeviceCaps::MAP | DeviceCaps::SUB_BUFFERS)?;
    let (ctx, q) = env.setup()?;
    let al = env.info().sub_buffer_align.max(1);
    let total = 3 * al.max(128);
    let parent = env.buffer_with(ctx, &bytes(total, 117))?;
    let sub = env.sub_buffer(parent, al, al)?;
    let p = map(env, q, sub, MapFlags::READ | MapFlags::WRITE, 0, al)?;
    // SAFETY: the map completed; unmapped below.
    let m = unsafe { view(p) };
    let r = check_bytes("sub-buffer mapping", m, &bytes(total, 117)[al..2 * al]);
    m.fill(0x77);
    unmap(env, q, sub, p)?;
    r?;
    let mut want = bytes(total, 117);
    want[al..2 * al].fill(0x77);
    check_bytes("parent after sub-buffer unmap", &env.read_all(q, parent, total)?, &want)
}
