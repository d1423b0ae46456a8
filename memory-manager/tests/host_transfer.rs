//! The host-transfer decision tree on sim, native and OpenCL devices: every
//! path, forced and chosen, round-trips the data; the choices follow the
//! thresholds; locks taken for a transfer are gone afterwards.

use std::sync::Arc;

use ur_api::{BufferDesc, ContextId, DeviceCaps, DeviceId, QueueId, QueueProps, Runtime, UsmDesc, UsmKind};
use ur_memory_manager::{HostTransfer, TransferPath, TransferThresholds};

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn setup(rt: &Runtime, dev: DeviceId) -> (ContextId, QueueId) {
    let ctx = rt.create_context(&[dev]).expect("context");
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).expect("queue");
    (ctx, q)
}

/// Every path both ways, at sizes around the chunk, with odd offsets.
fn round_trips(rt: &Arc<Runtime>, dev: DeviceId) {
    let (ctx, q) = setup(rt, dev);
    let can_lock = rt.device_info(dev).unwrap().caps.contains(DeviceCaps::HOST_REGISTER);
    let t = TransferThresholds {
        stage_below: 64 << 10,
        stage_at_least: usize::MAX,
        lock_at_least: 64 << 10,
        chunk: 16 << 10,
        depth: 3,
    };
    let x = HostTransfer::with_thresholds(rt.clone(), ctx, can_lock, t);
    let buf = rt.create_buffer(ctx, &BufferDesc::new(300_000), None).unwrap();
    let mut paths = vec![TransferPath::Direct, TransferPath::Staged];
    if can_lock {
        paths.push(TransferPath::LockInPlace);
    }
    for (i, &len) in [1usize, 4096, 16 << 10, (16 << 10) + 7, 100_003, 250_000]
        .iter()
        .enumerate()
    {
        for &path in &paths {
            let src = pattern(len, i as u8 ^ path as u8);
            x.write_via(path, q, buf, 11, &src).unwrap();
            let mut back = vec![0u8; len];
            x.read_via(path, q, buf, 11, &mut back).unwrap();
            assert!(back == src, "{path:?} {len} bytes did not round-trip");
            // And the chosen path, cross-checked with a plain read.
            let chosen = x.write(q, buf, 0, &src).unwrap();
            let mut plain = vec![0u8; len];
            rt.read(q, buf, 0, &mut plain).unwrap();
            assert!(plain == src, "{chosen:?} {len} bytes");
            let expect = match (can_lock, len >= 64 << 10) {
                (true, true) => TransferPath::LockInPlace,
                (_, false) => TransferPath::Staged,
                (false, true) => TransferPath::Direct,
            };
            assert_eq!(chosen, expect, "{len} bytes");
        }
    }
    assert!(x.registry().is_empty(), "transfer locks are released");
    // Memory locked by the caller goes direct, whatever its size.
    if can_lock {
        let mut mine = pattern(1000, 9);
        // SAFETY: `mine` outlives the lock, unlocked below.
        let span = unsafe { ur_api::HostPtr::new(mine.as_mut_ptr(), mine.len()) };
        x.registry().lock(span).unwrap();
        assert_eq!(x.write(q, buf, 0, &mine).unwrap(), TransferPath::Direct);
        x.registry().unlock(mine.as_ptr() as usize).unwrap();
    }
    // USM host memory is pinned by its allocator: direct.
    if let Ok(p) = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Host, 8192)) {
        // SAFETY: a live USM host allocation of 8192 bytes, host-addressable.
        let usm = unsafe { std::slice::from_raw_parts_mut(p.0 as usize as *mut u8, 8192) };
        usm.copy_from_slice(&pattern(8192, 3));
        assert_eq!(x.write(q, buf, 0, usm).unwrap(), TransferPath::Direct);
        let mut plain = vec![0u8; 8192];
        rt.read(q, buf, 0, &mut plain).unwrap();
        assert!(plain == pattern(8192, 3));
        rt.usm_free(ctx, p).unwrap();
    }
    rt.release_buffer(buf).unwrap();
}

#[test]
fn sim_paths_round_trip() {
    let mut rt = Runtime::new();
    rt.add(ur_sim::SimAdapter::for_tests().unwrap()).unwrap();
    let rt = Arc::new(rt);
    round_trips(&rt, rt.all_devices()[0]);
}

#[test]
fn native_paths_round_trip() {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let rt = Arc::new(rt);
    round_trips(&rt, rt.all_devices()[0]);
}

#[test]
fn opencl_paths_round_trip() {
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new()).unwrap();
    let rt = Arc::new(rt);
    let devs = rt.all_devices();
    if devs.is_empty() {
        eprintln!("skipped: no OpenCL device (set POCL_DEVICES / RUSTICL_ENABLE)");
        return;
    }
    for d in devs {
        round_trips(&rt, d);
    }
}

#[test]
fn cpu_devices_default_to_direct() {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let rt = Arc::new(rt);
    let dev = rt.all_devices()[0];
    let (ctx, _) = setup(&rt, dev);
    let x = HostTransfer::new(rt.clone(), ctx).unwrap();
    let t = x.thresholds();
    if std::env::var_os("UR_MM_STAGE_BELOW").is_none() && std::env::var_os("UR_MM_LOCK_AT_LEAST").is_none() {
        assert_eq!((t.stage_below, t.lock_at_least), (0, usize::MAX));
    }
    let v = vec![0u8; 4096];
    assert_eq!(x.choose(v.as_ptr() as usize, v.len()), TransferPath::Direct);
}
