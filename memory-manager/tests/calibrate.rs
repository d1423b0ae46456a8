//! Route costs are measured once per ordered pair, cached, and reflect the
//! links: with the sim's link model on, a 1 GiB/s host link measures slower
//! than a 16 GiB/s one.

mod common;

use common::setup;
use ur_memory_manager::{Access, Config, Place};

#[test]
fn measured_costs_follow_the_links_and_are_cached() {
    let config = Config {
        measure_routes: true,
        probe_bytes: 4 << 20,
        ..Config::default()
    };
    let s = setup("three_platforms", config);
    s.links.set_enabled(true);
    let places = s.mm.places();
    // L1 is g0 (16 GiB/s host link), L4 is cpu0 (1 GiB/s, 50 us).
    let (g0, cpu0) = (places[1], places[4]);
    assert_eq!(s.mm.route_cost(Place::Host, g0).unwrap(), None);
    let b = s.mm.create_buffer(1 << 20).unwrap();
    s.mm.write(b, 0, &vec![1u8; 1 << 20]).unwrap();
    drop(s.mm.acquire(b, g0, Access::Read, 0..1 << 20).unwrap());
    drop(s.mm.acquire(b, cpu0, Access::Read, 0..1 << 20).unwrap());
    let fast =
        s.mm.route_cost(Place::Host, g0)
            .unwrap()
            .expect("measured on first use");
    let slow =
        s.mm.route_cost(Place::Host, cpu0)
            .unwrap()
            .expect("measured on first use");
    assert!(
        slow.bytes_per_s < fast.bytes_per_s,
        "1 GiB/s link measured {:.2e} B/s, 16 GiB/s link {:.2e} B/s",
        slow.bytes_per_s,
        fast.bytes_per_s
    );
    // About 1 GiB/s: the model's floor, and no faster.
    assert!(slow.bytes_per_s < 1.3 * (1u64 << 30) as f64, "{slow:?}");
    // Cached: asking again does not measure again (same value).
    s.mm.calibrate();
    assert_eq!(s.mm.route_cost(Place::Host, cpu0).unwrap(), Some(slow));
    // Every ordered pair now has a cost.
    for a in &places {
        for b in &places {
            if a != b {
                assert!(s.mm.route_cost(*a, *b).unwrap().is_some());
            }
        }
    }
}
