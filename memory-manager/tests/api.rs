//! The API shaped for its users: handles tied to their manager, checked
//! offsets, side-effect-free plans, hints and initial data, device views,
//! small host stores in shared slabs.

mod common;

use common::{plan_config, setup, valid_at};
use ur_memory_manager::{Access, BufferSpec, Config, IntervalSet, MmError, Place};

#[test]
fn a_buffer_of_another_manager_is_a_typed_error() {
    let a = setup("single_device", plan_config());
    let b = setup("single_device", plan_config());
    let buf = a.mm.create_buffer(64).unwrap();
    let other = b.mm.create_buffer(64).unwrap();
    assert_eq!(buf.to_string(), other.to_string(), "same name, different managers");
    let err = b.mm.write(buf, 0, &[1u8; 4]).unwrap_err();
    assert!(matches!(err, MmError::ForeignBuffer { .. }), "{err}");
    assert!(matches!(b.mm.release(buf), Err(MmError::ForeignBuffer { .. })));
    // Neither buffer was touched.
    let mut back = [9u8; 4];
    b.mm.read(other, 0, &mut back).unwrap();
    assert_eq!(back, [0u8; 4]);
}

#[test]
fn overflowing_offsets_are_typed_errors() {
    let s = setup("single_device", plan_config());
    let buf = s.mm.create_buffer(64).unwrap();
    let err = s.mm.write(buf, usize::MAX, &[1u8; 2]).unwrap_err();
    assert_eq!(
        err,
        MmError::RangeOverflow {
            offset: usize::MAX,
            len: 2
        }
    );
    let mut dst = [0u8; 8];
    assert!(matches!(
        s.mm.read(buf, usize::MAX - 3, &mut dst),
        Err(MmError::RangeOverflow { .. })
    ));
    assert!(matches!(s.mm.read(buf, 60, &mut dst), Err(MmError::OutOfBounds { .. })));
}

#[test]
fn plan_measures_nothing() {
    let config = Config {
        measure_routes: true,
        probe_bytes: 64 << 10,
        ..plan_config()
    };
    let s = setup("two_contexts", config);
    let places = s.mm.places();
    let buf = s.mm.create_buffer(4096).unwrap();
    s.mm.write(buf, 0, &[3u8; 4096]).unwrap();
    let before = s.mm.stats();
    let plan = s.mm.plan(buf, places[1], Access::Read, 0..4096).unwrap();
    assert!(!plan.steps.is_empty());
    assert_eq!(s.mm.stats(), before);
    assert_eq!(
        s.mm.route_cost(Place::Host, places[1]).unwrap(),
        None,
        "plan measured a route"
    );
    // The access measures what it weighs.
    drop(s.mm.acquire(buf, places[1], Access::Read, 0..4096).unwrap());
    assert!(s.mm.route_cost(Place::Host, places[1]).unwrap().is_some());
}

#[test]
fn initial_data_lands_at_the_first_hint_in_one_copy() {
    let s = setup("two_contexts", plan_config());
    let places = s.mm.places();
    let (a, b) = (places[1], places[2]);
    let data: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
    let buf =
        s.mm.create_buffer_with(&BufferSpec::new(8192).hint(a).hint(b).init(&data))
            .unwrap();
    let st = s.mm.stats();
    assert_eq!((st.copies, st.bytes_moved), (1, 8192));
    assert_eq!(valid_at(&s, buf, a), IntervalSet::from_range(0..8192));
    let res = s.mm.residency(buf).unwrap();
    assert!(
        res.iter().all(|(p, _)| *p != Place::Host),
        "no host store on the way: {res:?}"
    );
    assert!(
        res.iter().any(|(p, v)| *p == b && v.is_empty()),
        "b allocated eagerly: {res:?}"
    );
    // Valid at the device as it stands.
    let g = s.mm.acquire(buf, a, Access::Read, 0..8192).unwrap();
    assert_eq!(s.mm.stats().copies, 1);
    let d = g.device().unwrap();
    let mut back = vec![0u8; 8192];
    s.rt.read(d.queue(), d.buffer(), 0, &mut back).unwrap();
    assert_eq!(back, data);
    drop(g);
    let mut host = vec![0u8; 8192];
    s.mm.read(buf, 0, &mut host).unwrap();
    assert_eq!(host, data);
    // Too much data is a typed error and creates nothing.
    let err = s.mm.create_buffer_with(&BufferSpec::new(4).init(&data)).unwrap_err();
    assert_eq!(err, MmError::InitTooLong { size: 4, len: 8192 });
}

#[test]
fn without_hint_initial_data_goes_to_the_host_store() {
    let s = setup("single_device", plan_config());
    let buf = s.mm.create_buffer_with(&BufferSpec::new(100).init(&[5u8; 10])).unwrap();
    assert_eq!(valid_at(&s, buf, Place::Host), IntervalSet::from_range(0..10));
    let mut back = [1u8; 100];
    s.mm.read(buf, 0, &mut back).unwrap();
    assert_eq!(&back[..10], &[5u8; 10]);
    assert!(back[10..].iter().all(|b| *b == 0));
}

#[test]
fn a_host_guard_has_no_device_view() {
    let s = setup("single_device", plan_config());
    let buf = s.mm.create_buffer(16).unwrap();
    let g = s.mm.acquire(buf, Place::Host, Access::Read, 0..16).unwrap();
    assert_eq!(g.device().unwrap_err(), MmError::NotADevice);
}

#[test]
fn small_host_stores_share_slabs() {
    const N: usize = 10_000;
    let s = setup("host_only", plan_config());
    let bufs: Vec<_> = (0..N)
        .map(|i| {
            let b = s.mm.create_buffer(16).unwrap();
            s.mm.write(b, 0, &(i as u128).to_le_bytes()).unwrap();
            b
        })
        .collect();
    let st = s.mm.stats();
    println!(
        "{N} buffers of 16 B hold {} B of host memory in {} slabs",
        st.host_store_bytes, st.host_slabs
    );
    assert!(
        st.host_store_bytes <= (N * 16 + (64 << 10)) as u64,
        "{} bytes for {N} buffers of 16 B",
        st.host_store_bytes
    );
    for (i, b) in bufs.iter().enumerate().step_by(997) {
        let mut back = [0u8; 16];
        s.mm.read(*b, 0, &mut back).unwrap();
        assert_eq!(u128::from_le_bytes(back), i as u128);
    }
    for b in bufs {
        s.mm.release(b).unwrap();
    }
    // Released slots are reused: no new slab.
    for _ in 0..N {
        let b = s.mm.create_buffer(16).unwrap();
        s.mm.write(b, 0, &[1u8; 16]).unwrap();
    }
    assert_eq!(s.mm.stats().host_slabs, st.host_slabs);
}

/// Regression: releasing the context of a live manager's location freed
/// the USM host allocations it uses as host stores and staging, so every
/// logical buffer read freed memory afterwards. The context now outlives
/// its users: the release is refused while the manager holds them.
#[test]
fn a_context_the_manager_uses_is_not_released_under_it() {
    use std::sync::Arc;
    let mut rt = ur_api::Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let rt = Arc::new(rt);
    let at = ur_api::Location::new(ctx, dev);
    let mm = ur_memory_manager::MemoryManager::new(rt.clone(), &[at]).unwrap();
    let buf = mm.create_buffer(4096).unwrap();
    mm.write(buf, 0, &[0x5A; 4096]).unwrap();
    assert!(
        mm.stats().pinned_host_stores > 0,
        "the host store is a USM host allocation of the context"
    );
    let refused = rt.release_context(ctx);
    assert!(matches!(refused, Err(ur_api::Error::InUse { .. })), "{refused:?}");
    let mut back = vec![0u8; 4096];
    mm.read(buf, 0, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0x5A));
    drop(mm);
    rt.release_context(ctx).unwrap();
}
