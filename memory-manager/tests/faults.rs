//! Targeted fault scenarios: eviction order and write-back, out-of-memory
//! as a typed error, failed copies, lost devices. Every test checks that no
//! byte is lost.

mod common;

use common::{setup, valid_at, Setup};
use ur_api::Location;
use ur_memory_manager::{Access, Config, IntervalSet, LogicalBuffer, MmError, Place};
use ur_sim::Topology;

const N: usize = 64 << 10;

fn config() -> Config {
    Config {
        staging_chunk: 16 << 10,
        measure_routes: false,
        ..Config::default()
    }
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..N).map(|i| seed.wrapping_mul(7).wrapping_add(i as u8)).collect()
}

/// Writes `data` at a device place so that it is the only current copy there.
fn write_on_device(s: &Setup, b: LogicalBuffer, at: Place, data: &[u8]) {
    let g = s.mm.acquire(b, at, Access::DiscardWrite, 0..data.len()).unwrap();
    s.rt.write(g.queue().unwrap(), g.buffer().unwrap(), 0, data).unwrap();
}

fn read_all(s: &Setup, b: LogicalBuffer) -> Vec<u8> {
    let mut v = vec![0u8; s.mm.size(b).unwrap()];
    s.mm.read(b, 0, &mut v).unwrap();
    v
}

#[test]
fn eviction_is_lru_and_writes_back_the_only_copy() {
    let s = setup("single_device", config());
    let dev = s.mm.places()[1];
    s.faults.cap_memory(&s.device_names[0], 2 * N as u64).unwrap();
    let bufs: Vec<LogicalBuffer> = (0..3).map(|_| s.mm.create_buffer(N).unwrap()).collect();
    write_on_device(&s, bufs[0], dev, &pattern(1));
    write_on_device(&s, bufs[1], dev, &pattern(2));
    // b0 is least recently used: it goes, after its bytes reach the host.
    write_on_device(&s, bufs[2], dev, &pattern(3));
    let st = s.mm.stats();
    assert_eq!((st.evictions, st.written_back), (1, N as u64));
    assert!(valid_at(&s, bufs[0], dev).is_empty());
    assert_eq!(valid_at(&s, bufs[0], Place::Host), IntervalSet::from_range(0..N));
    assert_eq!(
        s.mm.stats().pinned_host_stores,
        1,
        "the host store is pinned sim memory"
    );
    assert_eq!(valid_at(&s, bufs[1], dev), IntervalSet::from_range(0..N));
    for (i, b) in bufs.iter().enumerate() {
        assert_eq!(read_all(&s, *b), pattern(i as u8 + 1));
    }
}

#[test]
fn live_accesses_are_never_evicted_and_oom_is_typed() {
    let s = setup("single_device", config());
    let dev = s.mm.places()[1];
    s.faults.cap_memory(&s.device_names[0], N as u64 + 100).unwrap();
    let a = s.mm.create_buffer(N).unwrap();
    let b = s.mm.create_buffer(N).unwrap();
    s.mm.write(b, 0, &pattern(9)).unwrap();
    let held = s.mm.acquire(a, dev, Access::DiscardWrite, 0..N).unwrap();
    let err = s.mm.acquire(b, dev, Access::Read, 0..N).unwrap_err();
    assert!(matches!(err, MmError::OutOfMemory { evicted: 0, .. }), "{err}");
    drop(held);
    // Now `a` may go (its bytes are zeros written nowhere else: written back).
    let g = s.mm.acquire(b, dev, Access::Read, 0..N).unwrap();
    let mut back = vec![0u8; N];
    s.rt.read(g.queue().unwrap(), g.buffer().unwrap(), 0, &mut back)
        .unwrap();
    assert_eq!(back, pattern(9));
    assert_eq!(s.mm.stats().evictions, 1);
}

#[test]
fn buffer_larger_than_the_device_is_a_typed_error_with_data_intact() {
    let s = setup("single_device", config());
    let dev = s.mm.places()[1];
    s.faults.cap_memory(&s.device_names[0], (N / 2) as u64).unwrap();
    let b = s.mm.create_buffer(N).unwrap();
    s.mm.write(b, 0, &pattern(4)).unwrap();
    let err = s.mm.acquire(b, dev, Access::ReadWrite, 0..N).unwrap_err();
    assert!(matches!(err, MmError::OutOfMemory { .. }), "{err}");
    assert_eq!(read_all(&s, b), pattern(4));
}

#[test]
fn a_transient_allocation_failure_is_retried() {
    let s = setup("single_device", config());
    let dev = s.mm.places()[1];
    let b = s.mm.create_buffer(N).unwrap();
    s.mm.write(b, 0, &pattern(5)).unwrap();
    s.faults.fail_nth_allocation(1);
    let g = s.mm.acquire(b, dev, Access::Read, 0..N).unwrap();
    drop(g);
    assert_eq!(valid_at(&s, b, dev), IntervalSet::from_range(0..N));
}

#[test]
fn a_failed_copy_leaves_source_valid_destination_stale_and_is_retried() {
    for scenario in ["peer_pair_one_context", "two_contexts"] {
        let s = setup(scenario, config());
        let (l1, l2) = (s.mm.places()[1], s.mm.places()[2]);
        let b = s.mm.create_buffer(N).unwrap();
        write_on_device(&s, b, l1, &pattern(6));
        s.faults.fail_copy_after(N / 3);
        let err = s.mm.acquire(b, l2, Access::Read, 0..N).unwrap_err();
        assert!(matches!(err, MmError::CopyFailed { .. }), "{scenario}: {err}");
        assert_eq!(valid_at(&s, b, l1), IntervalSet::from_range(0..N), "{scenario}");
        assert!(valid_at(&s, b, l2).is_empty(), "{scenario}");
        let st = s.mm.stats();
        assert_eq!(st.failed_copies, 1);
        if scenario == "two_contexts" {
            // The staging ring is pinned memory of the sim's contexts.
            assert!(
                st.pinned_staging_buffers >= 2 && st.plain_staging_buffers == 0,
                "{st:?}"
            );
        }
        // Retried on the next access.
        drop(s.mm.acquire(b, l2, Access::Read, 0..N).unwrap());
        assert_eq!(valid_at(&s, b, l2), IntervalSet::from_range(0..N), "{scenario}");
        assert_eq!(read_all(&s, b), pattern(6), "{scenario}");
    }
}

#[test]
fn a_lost_device_is_routed_around_and_sole_copies_there_are_reported() {
    let s = setup("peer_pair_one_context", config());
    let (l1, l2) = (s.mm.places()[1], s.mm.places()[2]);
    let kept = s.mm.create_buffer(N).unwrap();
    s.mm.write(kept, 0, &pattern(7)).unwrap();
    drop(s.mm.acquire(kept, l1, Access::Read, 0..N).unwrap());
    let only = s.mm.create_buffer(N).unwrap();
    write_on_device(&s, only, l1, &pattern(8));
    s.faults.lose_device(&s.device_names[0]).unwrap();
    // The cheapest source (gpu0, a peer copy) fails; the manager learns the
    // device is gone and takes the host copy instead.
    drop(s.mm.acquire(kept, l2, Access::Read, 0..N).unwrap());
    assert_eq!(read_all(&s, kept), pattern(7));
    let err = s.mm.acquire(only, l2, Access::Read, 0..N).unwrap_err();
    assert!(
        matches!(&err, MmError::CopyFailed { .. } | MmError::DataLost { .. }),
        "{err}"
    );
    let err = s.mm.acquire(only, l2, Access::Read, 0..N).unwrap_err();
    assert!(
        matches!(&err, MmError::DataLost { ranges, .. } if ranges.len() == 1 && ranges[0] == (0..N)),
        "{err}"
    );
    // Overwriting the lost bytes makes the buffer usable again.
    s.mm.write(only, 0, &pattern(1)).unwrap();
    assert_eq!(read_all(&s, only), pattern(1));
    assert!(s.mm.acquire(only, l1, Access::Read, 0..N).is_err());
}

/// One sim device in two contexts (two places sharing its memory), capped so
/// that only one allocation of `N` bytes fits.
fn one_device_two_contexts_with_room_for_one() -> (ur_memory_manager::MemoryManager, std::sync::Arc<ur_api::Runtime>) {
    let sim = ur_sim::SimAdapter::new(Topology::single_device());
    let faults = sim.faults();
    let mut rt = ur_api::Runtime::new();
    rt.add(sim).unwrap();
    let d = rt.all_devices()[0];
    let (c0, c1) = (rt.create_context(&[d]).unwrap(), rt.create_context(&[d]).unwrap());
    let rt = std::sync::Arc::new(rt);
    let mm = ur_memory_manager::MemoryManager::with_config(
        rt.clone(),
        &[Location::new(c0, d), Location::new(c1, d)],
        config(),
    )
    .unwrap();
    faults.cap_memory("sim0", N as u64 + 100).unwrap();
    (mm, rt)
}

#[test]
fn eviction_spans_contexts_of_one_device() {
    // One device in two contexts: both places share the device's memory.
    let (mm, _rt) = one_device_two_contexts_with_room_for_one();
    let (p0, p1) = (mm.places()[1], mm.places()[2]);
    let a = mm.create_buffer(N).unwrap();
    let b = mm.create_buffer(N).unwrap();
    mm.write(a, 0, &pattern(2)).unwrap();
    mm.write(b, 0, &pattern(3)).unwrap();
    drop(mm.acquire(a, p0, Access::ReadWrite, 0..N).unwrap());
    drop(mm.acquire(b, p1, Access::Read, 0..N).unwrap());
    assert_eq!(mm.stats().evictions, 1);
    let mut back = vec![0u8; N];
    mm.read(a, 0, &mut back).unwrap();
    assert_eq!(back, pattern(2));
}

#[test]
fn evicting_a_source_of_the_running_plan_replans() {
    // One device in two contexts, room for one allocation: reading at the
    // second context must evict the buffer's own copy at the first (after
    // writing it back), then take the bytes from the host instead.
    let (mm, rt) = one_device_two_contexts_with_room_for_one();
    let (p0, p1) = (mm.places()[1], mm.places()[2]);
    let a = mm.create_buffer(N).unwrap();
    {
        let g = mm.acquire(a, p0, Access::DiscardWrite, 0..N).unwrap();
        rt.write(g.queue().unwrap(), g.buffer().unwrap(), 0, &pattern(5))
            .unwrap();
    }
    let g = mm.acquire(a, p1, Access::Read, 0..N).unwrap();
    let mut back = vec![0u8; N];
    rt.read(g.queue().unwrap(), g.buffer().unwrap(), 0, &mut back).unwrap();
    assert_eq!(back, pattern(5));
    drop(g);
    let st = mm.stats();
    assert_eq!((st.evictions, st.written_back), (1, N as u64));
}

#[test]
fn a_failed_copy_into_caller_memory_is_copy_failed_and_counted() {
    // Issue 26: the read straight from the one device holding the bytes
    // reported the adapter's error as `Runtime` and counted nothing.
    let s = setup("two_contexts", config());
    let a0 = s.mm.places()[1];
    assert_eq!(s.device_names[0], "a0");
    let len = 100_003;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    let b = s.mm.create_buffer(len).unwrap();
    write_on_device(&s, b, a0, &data);
    s.faults.fail_copy_after(777);
    let mut back = vec![0u8; len];
    let err = s.mm.read(b, 0, &mut back).unwrap_err();
    match &err {
        MmError::CopyFailed {
            from, range, source, ..
        } => {
            assert_eq!(*from, s.mm.place_name(a0).unwrap(), "{err}");
            assert_eq!(*range, 0..len, "{err}");
            assert!(
                matches!(
                    **source,
                    ur_api::Error::Backend {
                        code: ur_sim::INJECTED_TRANSFER_FAULT,
                        ..
                    }
                ),
                "{source:?}"
            );
        }
        other => panic!("expected CopyFailed, got {other:?}"),
    }
    assert_eq!(s.mm.stats().failed_copies, 1);
    // Nothing was lost: the device still holds the bytes, and the next read succeeds.
    assert_eq!(valid_at(&s, b, a0), IntervalSet::from_range(0..len));
    assert_eq!(read_all(&s, b), data);
}

#[test]
fn a_failed_copy_of_initial_data_is_copy_failed_and_counted() {
    let s = setup("two_contexts", config());
    let a0 = s.mm.places()[1];
    let data = pattern(3);
    s.faults.fail_copy_after(777);
    let err =
        s.mm.create_buffer_with(&ur_memory_manager::BufferSpec::new(N).hint(a0).init(&data))
            .unwrap_err();
    assert!(
        matches!(&err, MmError::CopyFailed { to, range, .. } if *to == s.mm.place_name(a0).unwrap() && *range == (0..N)),
        "{err:?}"
    );
    assert_eq!(s.mm.stats().failed_copies, 1);
    // Nothing was left behind: the same request succeeds now.
    let b =
        s.mm.create_buffer_with(&ur_memory_manager::BufferSpec::new(N).hint(a0).init(&data))
            .unwrap();
    assert_eq!(read_all(&s, b), data);
}

#[test]
fn a_failure_mid_creation_frees_what_it_allocated() {
    use ur_memory_manager::{BufferSpec, PlanKind, Step};
    let s = setup("two_contexts", config());
    let (a0, b0) = (s.mm.places()[1], s.mm.places()[2]);
    let (na, nb) = (&s.device_names[0], &s.device_names[1]);
    let used = |s: &Setup| (s.faults.memory_used(na).unwrap(), s.faults.memory_used(nb).unwrap());
    let data = pattern(5);
    let spec = BufferSpec::new(N).hint(a0).hint(b0).init(&data);
    let plan = s.mm.plan_creation(&spec).unwrap();
    assert!(matches!(plan.kind, PlanKind::Create { .. }));
    assert!(
        matches!(
            plan.steps[..],
            [Step::Allocate { .. }, Step::Allocate { .. }, Step::Init { .. }]
        ),
        "{}",
        plan.explain()
    );

    // The last step fails (the write of the initial data): both allocations go.
    s.faults.fail_copy_after(100);
    let err = s.mm.create_buffer_with(&spec).unwrap_err();
    assert!(matches!(err, MmError::CopyFailed { .. }), "{err:?}");
    assert_eq!(s.mm.stats().failed_copies, 1);
    assert_eq!(used(&s), (0, 0));

    // The second allocation fails (b0 has no room): the first one goes.
    s.faults.cap_memory(nb, N as u64 - 1).unwrap();
    let err = s.mm.create_buffer_with(&spec).unwrap_err();
    assert!(matches!(err, MmError::OutOfMemory { .. }), "{err:?}");
    assert_eq!(used(&s), (0, 0));

    // With room, the same spec succeeds and holds the data at a0 only.
    s.faults.uncap_memory(nb).unwrap();
    let b = s.mm.create_buffer_with(&spec).unwrap();
    assert_eq!(used(&s), (N as u64, N as u64));
    assert_eq!(valid_at(&s, b, a0), IntervalSet::from_range(0..N));
    assert!(valid_at(&s, b, b0).is_empty());
    assert_eq!(read_all(&s, b), data);
}
