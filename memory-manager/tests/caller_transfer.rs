//! The manager's transfers of caller memory go through the host-transfer
//! decision tree: initial data for a hinted device and reads straight from
//! a device. The sim (a GPU-like device that locks) records its locks, so
//! the tests see the route; every byte is checked.

mod common;

use std::sync::Arc;

use common::{plan_config, setup, valid_at};
use ur_api::{HostPtr, Location, Runtime};
use ur_memory_manager::{Access, BufferSpec, IntervalSet, MemoryManager, Place, TransferPath};

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) ^ (i >> 12) as u8)
        .collect()
}

/// The default thresholds are in force (no environment override).
fn default_thresholds() -> bool {
    ["UR_MM_STAGE_BELOW", "UR_MM_STAGE_AT_LEAST", "UR_MM_LOCK_AT_LEAST"]
        .iter()
        .all(|k| std::env::var_os(k).is_none())
}

#[test]
fn sim_small_stages_large_locks_in_place() {
    if !default_thresholds() {
        eprintln!("skipped: UR_MM_* threshold overrides set");
        return;
    }
    let s = setup("single_device", plan_config());
    let dev = s.mm.places()[1];
    let x = s.mm.host_transfer(dev).unwrap();
    let t = x.thresholds();
    // The sim's devices are GPUs that lock: stage below 1 MiB, lock from it.
    assert_eq!((t.stage_below, t.lock_at_least), (1 << 20, 1 << 20));

    let small = pattern(4097, 1);
    let large = pattern((3 << 20) + 11, 2);
    let a =
        s.mm.create_buffer_with(&BufferSpec::new(8192).hint(dev).init(&small))
            .unwrap();
    let st = s.mm.stats();
    assert_eq!((st.caller_staged, st.caller_locked, st.caller_direct), (1, 0, 0));
    let b =
        s.mm.create_buffer_with(&BufferSpec::new(4 << 20).hint(dev).init(&large))
            .unwrap();
    let st = s.mm.stats();
    assert_eq!((st.caller_staged, st.caller_locked, st.caller_direct), (1, 1, 0));
    assert!(
        s.links.locked_host().is_empty(),
        "a lock in place is released after the copy"
    );
    // The data went to the device only.
    assert_eq!(valid_at(&s, b, Place::Host), IntervalSet::new());
    assert_eq!(valid_at(&s, b, dev), IntervalSet::from_range(0..large.len()));

    // Reads come straight from the device, by size.
    let mut back = vec![0u8; small.len()];
    s.mm.read(a, 0, &mut back).unwrap();
    assert!(back == small);
    let mut back = vec![0u8; large.len()];
    s.mm.read(b, 0, &mut back).unwrap();
    assert!(back == large);
    let st = s.mm.stats();
    assert_eq!((st.caller_staged, st.caller_locked, st.caller_direct), (2, 2, 0));
    assert!(s.links.locked_host().is_empty());
    // ... and leave the host place alone.
    assert_eq!(valid_at(&s, a, Place::Host), IntervalSet::new());
    assert_eq!(valid_at(&s, b, Place::Host), IntervalSet::new());
    // An unaligned interior range too.
    let mut part = vec![0u8; 100_001];
    s.mm.read(b, 777, &mut part).unwrap();
    assert!(part[..] == large[777..777 + 100_001]);
}

#[test]
fn sim_memory_the_caller_locked_goes_direct() {
    if !default_thresholds() {
        eprintln!("skipped: UR_MM_* threshold overrides set");
        return;
    }
    let s = setup("single_device", plan_config());
    let dev = s.mm.places()[1];
    let data = pattern(64 << 10, 7);
    let buf =
        s.mm.create_buffer_with(&BufferSpec::new(data.len()).hint(dev).init(&data))
            .unwrap();
    let x = s.mm.host_transfer(dev).unwrap();
    let mut mine = vec![0u8; data.len()];
    // SAFETY: `mine` outlives the lock, unlocked below.
    let span = unsafe { HostPtr::new(mine.as_mut_ptr(), mine.len()) };
    x.registry().lock(span).unwrap();
    assert_eq!(s.links.locked_host(), vec![(mine.as_ptr() as usize, mine.len())]);
    assert_eq!(x.choose(mine.as_ptr() as usize, mine.len()), TransferPath::Direct);
    let before = s.mm.stats();
    s.mm.read(buf, 0, &mut mine).unwrap();
    let st = s.mm.stats();
    assert_eq!(st.caller_direct - before.caller_direct, 1);
    assert_eq!(
        st.caller_staged, before.caller_staged,
        "64 KiB of locked memory is not staged"
    );
    assert!(mine == data);
    // The caller's lock is the caller's: still there.
    assert_eq!(s.links.locked_host().len(), 1);
    x.registry().unlock(mine.as_ptr() as usize).unwrap();
    assert!(s.links.locked_host().is_empty());
}

#[test]
fn reads_use_the_host_place_when_it_holds_the_range() {
    let s = setup("single_device", plan_config());
    let dev = s.mm.places()[1];
    let data = pattern(10_000, 3);
    let buf = s.mm.create_buffer(data.len()).unwrap();
    s.mm.write(buf, 0, &data).unwrap();
    // Current at both places now.
    drop(s.mm.acquire(buf, dev, Access::Read, 0..data.len()).unwrap());
    let before = s.mm.stats();
    let mut back = vec![0u8; data.len()];
    s.mm.read(buf, 0, &mut back).unwrap();
    assert!(back == data);
    let st = s.mm.stats();
    assert_eq!(st.copies, before.copies, "served by the host store, no transfer");
    // Written on the device: the host store is stale, the read goes to the device.
    let g = s.mm.acquire(buf, dev, Access::ReadWrite, 0..100).unwrap();
    let d = g.device().unwrap();
    s.rt.write(d.queue(), d.buffer(), 0, &[0xEE; 100]).unwrap();
    drop(g);
    s.mm.read(buf, 0, &mut back).unwrap();
    assert_eq!(&back[..100], &[0xEE; 100]);
    assert!(back[100..] == data[100..]);
    let st2 = s.mm.stats();
    assert_eq!(st2.copies, st.copies + 1, "one transfer from the device");
    // A range split between places goes through the host place.
    let g = s.mm.acquire(buf, Place::Host, Access::ReadWrite, 50..60).unwrap();
    drop(g);
    s.mm.read(buf, 0, &mut back).unwrap();
    assert_eq!(&back[..100], &[0xEE; 100]);
}

#[test]
fn native_device_reads_go_direct() {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let dev = rt.all_devices()[0];
    let at = Location::new(rt.create_context(&[dev]).unwrap(), dev);
    let mm = MemoryManager::new(Arc::new(rt), &[at]).unwrap();
    let data = pattern((1 << 20) + 5, 9);
    let buf = mm
        .create_buffer_with(&BufferSpec::new(data.len()).hint(Place::Device(at)).init(&data))
        .unwrap();
    let mut back = vec![0u8; data.len()];
    mm.read(buf, 0, &mut back).unwrap();
    assert!(back == data);
    if default_thresholds() {
        // A CPU device copies from pageable memory with one memcpy: direct.
        let st = mm.stats();
        assert_eq!((st.caller_direct, st.caller_locked, st.caller_staged), (2, 0, 0));
    }
}

#[test]
fn opencl_devices_round_trip_through_the_tree() {
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new()).unwrap();
    let devs = rt.all_devices();
    if devs.is_empty() {
        eprintln!("skipped: no OpenCL device (set POCL_DEVICES / RUSTICL_ENABLE / OCL_ICD_VENDORS)");
        return;
    }
    let locs: Vec<Location> = devs
        .iter()
        .map(|&d| Location::new(rt.create_context(&[d]).unwrap(), d))
        .collect();
    let mm = MemoryManager::new(Arc::new(rt), &locs).unwrap();
    for (i, &at) in locs.iter().enumerate() {
        for len in [1usize, 4095, (1 << 20) + 3] {
            let data = pattern(len, i as u8);
            let buf = mm
                .create_buffer_with(&BufferSpec::new(len + 17).hint(Place::Device(at)).init(&data))
                .unwrap();
            let mut back = vec![0u8; len];
            mm.read(buf, 0, &mut back).unwrap();
            assert!(back == data, "{len} bytes on {at}");
            mm.release(buf).unwrap();
        }
    }
    let st = mm.stats();
    assert_eq!(
        st.caller_direct + st.caller_locked + st.caller_staged,
        6 * locs.len() as u64
    );
    let rt = mm.runtime();
    let all_cpu = locs
        .iter()
        .all(|l| rt.device_info(l.device).unwrap().device_type == ur_api::DeviceType::Cpu);
    if all_cpu && default_thresholds() {
        // CPU devices copy pageable memory with one memcpy: never staged,
        // and they do not lock (no HOST_REGISTER: see the OpenCL adapter).
        assert_eq!(st.caller_direct, 6 * locs.len() as u64);
        for l in &locs {
            let caps = rt.device_info(l.device).unwrap().caps;
            assert!(!caps.contains(ur_api::DeviceCaps::HOST_REGISTER));
        }
    }
}
