//! Route costs are measured once per ordered pair, cached, and reflect the
//! links: with the sim's link model on, a 64 MiB/s host link measures much
//! slower than a 16 GiB/s one.

mod common;

use std::time::Duration;

use common::setup_topology;
use ur_memory_manager::{Access, Config, Place};
use ur_sim::{DeviceSpec, Topology};

#[test]
fn measured_costs_follow_the_links_and_are_cached() {
    let config = Config {
        measure_routes: true,
        probe_bytes: 1 << 20,
        ..Config::default()
    };
    let topo = Topology::builder()
        .platform("fast")
        .device(DeviceSpec::new("f0").link(16 << 30, Duration::from_micros(2)))
        .platform("slow")
        .device(DeviceSpec::new("s0").link(64 << 20, Duration::from_micros(50)))
        .link_model(true)
        .build()
        .unwrap();
    let s = setup_topology(topo, false, false, config);
    let places = s.mm.places();
    let (fast, slow) = (places[1], places[2]);
    assert_eq!(s.mm.route_cost(Place::Host, fast).unwrap(), None);
    let b = s.mm.create_buffer(64 << 10).unwrap();
    s.mm.write(b, 0, &vec![1u8; 64 << 10]).unwrap();
    drop(s.mm.acquire(b, fast, Access::Read, 0..64 << 10).unwrap());
    drop(s.mm.acquire(b, slow, Access::Read, 0..64 << 10).unwrap());
    let f =
        s.mm.route_cost(Place::Host, fast)
            .unwrap()
            .expect("measured on first use");
    let sl =
        s.mm.route_cost(Place::Host, slow)
            .unwrap()
            .expect("measured on first use");
    assert!(
        sl.bytes_per_s * 3.0 < f.bytes_per_s,
        "64 MiB/s link measured {:.2e} B/s, 16 GiB/s link {:.2e} B/s",
        sl.bytes_per_s,
        f.bytes_per_s
    );
    // The model is a floor on time: never faster than the link.
    assert!(sl.bytes_per_s < 1.5 * (64u64 << 20) as f64, "{sl:?}");
    // Cached: asking again does not measure again (same value).
    s.mm.calibrate();
    assert_eq!(s.mm.route_cost(Place::Host, slow).unwrap(), Some(sl));
    // Every ordered pair now has a cost.
    for a in &places {
        for b in &places {
            if a != b {
                assert!(s.mm.route_cost(*a, *b).unwrap().is_some());
            }
        }
    }
}
