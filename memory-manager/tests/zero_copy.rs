//! Zero-copy staging ([`Route::Mapped`]) on sim devices, forced by
//! [`ZeroCopy::MapSource`] / [`ZeroCopy::MapDestination`] (sim devices are
//! not host-unified, so `ZeroCopy::Auto` keeps the pinned ring there):
//! bytes arrive intact, plans name the route, and a failed step leaves the
//! source valid and the destination stale, then succeeds when retried.

mod common;

use common::{setup, valid_at, Setup};
use ur_memory_manager::{Access, Config, IntervalSet, LogicalBuffer, MapEnd, MmError, Place, Route, Step, ZeroCopy};

const N: usize = 200 << 10; // not a multiple of the chunk: a short last chunk

fn config(zero_copy: ZeroCopy) -> Config {
    Config {
        staging_chunk: 16 << 10,
        mapped_chunk: 16 << 10,
        staging_depth: 3,
        measure_routes: false,
        zero_copy,
        ..Config::default()
    }
}

fn pattern(seed: u8) -> Vec<u8> {
    (0..N)
        .map(|i| seed.wrapping_mul(31).wrapping_add((i / 7) as u8))
        .collect()
}

fn write_on_device(s: &Setup, b: LogicalBuffer, at: Place, data: &[u8]) {
    let g = s.mm.acquire(b, at, Access::DiscardWrite, 0..data.len()).unwrap();
    s.rt.write(g.queue().unwrap(), g.buffer().unwrap(), 0, data).unwrap();
}

fn device_bytes(s: &Setup, b: LogicalBuffer, at: Place) -> Vec<u8> {
    let g = s.mm.acquire(b, at, Access::Read, 0..N).unwrap();
    let mut v = vec![0u8; N];
    s.rt.read(g.queue().unwrap(), g.buffer().unwrap(), 0, &mut v).unwrap();
    v
}

#[test]
fn auto_keeps_the_pinned_ring_on_devices_that_are_not_host_unified() {
    let s = setup("two_contexts", config(ZeroCopy::Auto));
    let (l1, l2) = (s.mm.places()[1], s.mm.places()[2]);
    let b = s.mm.create_buffer(N).unwrap();
    write_on_device(&s, b, l1, &pattern(1));
    let plan = s.mm.plan(b, l2, Access::Read, 0..N).unwrap();
    assert!(
        matches!(
            plan.steps[1],
            Step::Copy {
                route: Route::Staged { .. },
                ..
            }
        ),
        "{plan}"
    );
}

#[test]
fn mapped_copies_move_every_byte_in_both_directions() {
    for (mode, end) in [
        (ZeroCopy::MapSource, MapEnd::Source),
        (ZeroCopy::MapDestination, MapEnd::Destination),
        (ZeroCopy::MapBoth, MapEnd::Both),
    ] {
        let s = setup("two_contexts", config(mode));
        let (l1, l2) = (s.mm.places()[1], s.mm.places()[2]);
        let b = s.mm.create_buffer(N).unwrap();
        write_on_device(&s, b, l1, &pattern(2));
        let plan = s.mm.plan(b, l2, Access::Read, 0..N).unwrap();
        assert!(
            matches!(plan.steps[1], Step::Copy { route: Route::Mapped { end: e, depth: 3, .. }, .. } if e == end),
            "{plan}"
        );
        assert!(
            plan.explain()
                .contains(&format!("by staged (mapped {}, zero-copy)", end.name())),
            "{plan}"
        );
        assert_eq!(device_bytes(&s, b, l2), pattern(2), "{mode:?}");
        // Back the other way, a sub-range only.
        write_on_device(&s, b, l2, &pattern(3));
        let g = s.mm.acquire(b, l1, Access::Read, 1000..150_000).unwrap();
        let mut v = vec![0u8; 149_000];
        s.rt.read(g.queue().unwrap(), g.buffer().unwrap(), 1000, &mut v)
            .unwrap();
        assert_eq!(v, pattern(3)[1000..150_000], "{mode:?}");
        drop(g);
        let st = s.mm.stats();
        assert_eq!((st.mapped_copies, st.staged_copies), (2, 2), "{mode:?}: {st:?}");
        assert_eq!(
            st.pinned_staging_buffers + st.plain_staging_buffers,
            0,
            "no ring: {st:?}"
        );
    }
}

#[test]
fn a_failed_mapped_copy_loses_nothing_and_is_retried() {
    for mode in [ZeroCopy::MapSource, ZeroCopy::MapDestination, ZeroCopy::MapBoth] {
        // Fail the first transfer touching either end: the map's read or the
        // unmap's write-back of the mapped end, or the other end's transfer.
        for faulty in [0, 1] {
            let s = setup("two_contexts", config(mode));
            let (l1, l2) = (s.mm.places()[1], s.mm.places()[2]);
            let b = s.mm.create_buffer(N).unwrap();
            write_on_device(&s, b, l1, &pattern(4));
            s.faults.fail_copy_after_on(&s.device_names[faulty], 5000).unwrap();
            let err = s.mm.acquire(b, l2, Access::Read, 0..N).unwrap_err();
            assert!(matches!(err, MmError::CopyFailed { .. }), "{mode:?}/{faulty}: {err}");
            assert_eq!(valid_at(&s, b, l1), IntervalSet::from_range(0..N), "{mode:?}/{faulty}");
            assert!(valid_at(&s, b, l2).is_empty(), "{mode:?}/{faulty}");
            assert_eq!(s.mm.stats().failed_copies, 1);
            assert_eq!(device_bytes(&s, b, l2), pattern(4), "{mode:?}/{faulty}: retried");
            // Every mapping was unmapped: the allocations can be released.
            s.mm.release(b).unwrap();
        }
    }
}
