//! `UR_SIM_TOPOLOGY` parser: never panics; a parsed topology prints to text
//! that parses back to an equal topology, and a sim adapter over it starts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ur_sim::Topology;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(topo) = Topology::parse(text) else { return };
    let printed = topo.to_string();
    let again = Topology::parse(&printed)
        .unwrap_or_else(|e| panic!("{text:?} printed as {printed:?}, which does not parse: {e}"));
    assert_eq!(topo, again, "{text:?} -> {printed:?}");
    // Small topologies only: every device gets an arena.
    if topo.devices().count() <= 8 {
        let mut rt = ur_api::Runtime::new();
        if rt.add(ur_sim::SimAdapter::new(topo)).is_ok() {
            for d in rt.all_devices() {
                let _ = rt.device_info(d);
            }
        }
    }
});
