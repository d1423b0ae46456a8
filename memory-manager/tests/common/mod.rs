//! Sim topologies shared by the integration tests.
#![allow(dead_code)] // reason: each test binary uses a different part of this module.

use std::sync::Arc;

use ur_api::{DeviceId, Location, MemoryConnection, Runtime};
use ur_memory_manager::{Config, IntervalSet, LogicalBuffer, MemoryManager, Place};
use ur_sim::{DeviceSpec, PairRule, SimAdapter, SimFaults, SimLinks, Topology};

/// The scenarios every plan snapshot and the random workload run on.
pub const SCENARIOS: [&str; 8] = [
    "single_device",
    "peer_pair_one_context",
    "two_contexts",
    "three_platforms",
    "asymmetric_pair",
    "unified_pair",
    "one_device_two_contexts",
    "host_only",
];

/// A manager over one sim topology, with the sim's control handles.
pub struct Setup {
    pub mm: MemoryManager,
    pub rt: Arc<Runtime>,
    pub faults: SimFaults,
    pub links: SimLinks,
    /// Sim device names, by place index minus one.
    pub device_names: Vec<String>,
}

fn unified_pair() -> Topology {
    Topology::builder()
        .platform("sim")
        .device(DeviceSpec::new("u0"))
        .device(DeviceSpec::new("u1"))
        .pair("u0", "u1", PairRule::new().same_context(MemoryConnection::Unified))
        .pair("u1", "u0", PairRule::new().same_context(MemoryConnection::Unified))
        .build()
        .expect("valid topology")
}

/// Builds a scenario. Contexts: one per platform over all its devices,
/// except `two_contexts` (two platforms, so two contexts) and `host_only`
/// (no device place at all).
pub fn setup(name: &str, config: Config) -> Setup {
    let topo = match name {
        "single_device" | "host_only" | "one_device_two_contexts" => Topology::single_device(),
        "peer_pair_one_context" => Topology::two_devices_peer(),
        "two_contexts" => Topology::two_platforms(),
        "three_platforms" => Topology::three_platforms_mixed(),
        "asymmetric_pair" => Topology::asymmetric_pair(),
        "unified_pair" => unified_pair(),
        other => panic!("unknown scenario {other}"),
    };
    setup_topology(topo, name == "host_only", name == "one_device_two_contexts", config)
}

/// `twice`: two contexts over each platform's devices instead of one.
pub fn setup_topology(topo: Topology, host_only: bool, twice: bool, config: Config) -> Setup {
    let sim = SimAdapter::new(topo);
    let faults = sim.faults();
    let links = sim.links();
    let mut rt = Runtime::new();
    rt.add(sim).expect("sim adapter");
    let mut locations = Vec::new();
    let mut device_names = Vec::new();
    if !host_only {
        for p in rt.platforms() {
            let devs: Vec<DeviceId> = rt.devices(p).expect("devices");
            for _ in 0..if twice { 2 } else { 1 } {
                let ctx = rt.create_context(&devs).expect("context");
                for &d in &devs {
                    locations.push(Location::new(ctx, d));
                    device_names.push(rt.device_info(d).expect("info").name);
                }
            }
        }
    }
    let rt = Arc::new(rt);
    let mm = MemoryManager::with_config(rt.clone(), &locations, config).expect("manager");
    Setup {
        mm,
        rt,
        faults,
        links,
        device_names,
    }
}

/// Deterministic plans: estimates, not measurements; small chunks so staged
/// copies show several.
pub fn plan_config() -> Config {
    Config {
        staging_chunk: 16 << 10,
        staging_depth: 4,
        measure_routes: false,
        ..Config::default()
    }
}

/// The bytes of `b` valid at `at` (empty when `at` holds no allocation).
pub fn valid_at(s: &Setup, b: LogicalBuffer, at: Place) -> IntervalSet {
    s.mm.residency(b)
        .unwrap()
        .into_iter()
        .find(|(p, _)| *p == at)
        .map(|(_, v)| v)
        .unwrap_or_default()
}
