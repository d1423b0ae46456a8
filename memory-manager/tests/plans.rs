//! Plan snapshots on every sim scenario: the same script of accesses, each
//! plan printed with `explain()` before it runs, then the final residency;
//! and the creation plans of buffers with hints and initial data.

mod common;

use std::fmt::Write as _;
use std::ops::Range;

use common::{plan_config, setup, SCENARIOS};
use ur_memory_manager::{Access, BufferSpec, LogicalBuffer, MemoryManager, Place, PlanKind, Step};

const KIB: usize = 1024;

fn step(out: &mut String, mm: &MemoryManager, b: LogicalBuffer, place: Place, access: Access, range: Range<usize>) {
    let plan = mm.plan(b, place, access, range.clone()).expect("plan");
    out.push_str(&plan.explain());
    let got = mm.acquire(b, place, access, range).expect("acquire");
    assert_eq!(mm.place_name(got.target()).unwrap(), plan.places[plan.target]);
    // Running the plan leaves nothing to do for the same access.
    drop(got);
    let again = mm.plan(b, place, plan.access, plan.range.clone()).expect("plan");
    assert!(
        again.steps.is_empty(),
        "a second identical access must be a no-op:\n{}",
        again.explain()
    );
}

fn residency(out: &mut String, mm: &MemoryManager, b: LogicalBuffer) {
    let _ = writeln!(out, "residency of {b}:");
    let size = mm.size(b).unwrap();
    for (place, valid) in mm.residency(b).unwrap() {
        let _ = writeln!(out, "  {}: {valid}", mm.place_name(place).unwrap());
        // `is_current` agrees with the residency: each valid range is
        // current there, and the whole buffer only where all of it is.
        for r in valid.ranges() {
            assert!(mm.is_current(b, place, r).unwrap());
        }
        assert_eq!(mm.is_current(b, place, 0..size).unwrap(), valid.contains(0..size));
    }
}

fn script(name: &str) -> String {
    let s = setup(name, plan_config());
    let mm = &s.mm;
    let places = mm.places();
    let devices = &places[1..];
    let mut out = String::new();
    let _ = writeln!(out, "scenario {name}; places:");
    for a in &places {
        let conns: Vec<String> = places
            .iter()
            .map(|b| {
                if a == b {
                    "-".to_string()
                } else {
                    mm.connection(*a, *b).unwrap().to_string()
                }
            })
            .collect();
        let _ = writeln!(out, "  {:<16} -> [{}]", mm.place_name(*a).unwrap(), conns.join(", "));
    }
    out.push('\n');

    let b0 = mm.create_buffer(64 * KIB).unwrap();
    step(&mut out, mm, b0, Place::Host, Access::DiscardWrite, 0..64 * KIB);
    for &d in devices {
        step(&mut out, mm, b0, d, Access::Read, 0..64 * KIB);
    }
    if devices.len() >= 2 {
        step(&mut out, mm, b0, devices[1], Access::ReadWrite, 16 * KIB..48 * KIB);
        step(&mut out, mm, b0, devices[0], Access::Read, 0..64 * KIB);
        step(&mut out, mm, b0, devices[0], Access::Write, 40 * KIB..56 * KIB);
    }
    step(&mut out, mm, b0, Place::Host, Access::Read, 0..64 * KIB);
    if let Some(&last) = devices.last() {
        step(&mut out, mm, b0, last, Access::DiscardWrite, 0..8 * KIB);
        step(&mut out, mm, b0, Place::Host, Access::Read, 0..16 * KIB);
    }
    if devices.len() >= 2 {
        // One range assembled from two devices and the host.
        step(&mut out, mm, b0, devices[0], Access::DiscardWrite, 0..4 * KIB);
        step(&mut out, mm, b0, devices[1], Access::DiscardWrite, 60 * KIB..64 * KIB);
        step(&mut out, mm, b0, Place::Host, Access::Read, 0..64 * KIB);
    }
    residency(&mut out, mm, b0);
    out.push('\n');

    // Never-written bytes read as zero; part written on the host first.
    let b1 = mm.create_buffer(32 * KIB).unwrap();
    mm.write(b1, 8 * KIB, &[1u8; 4 * KIB]).unwrap();
    let at = devices.last().copied().unwrap_or(Place::Host);
    step(&mut out, mm, b1, at, Access::Read, 0..32 * KIB);
    residency(&mut out, mm, b1);
    out
}

#[test]
fn plan_snapshots() {
    for name in SCENARIOS {
        let text = script(name);
        insta::assert_snapshot!(name, text);
    }
}

/// Prints the creation plan of `spec`, creates the buffer (the plan names
/// it), prints its residency and checks its bytes.
fn create(out: &mut String, mm: &MemoryManager, spec: &BufferSpec<'_>, data: &[u8]) -> LogicalBuffer {
    let plan = mm.plan_creation(spec).expect("plan");
    assert!(matches!(plan.kind, PlanKind::Create { .. }));
    out.push_str(&plan.explain());
    let b = mm.create_buffer_with(spec).expect("create");
    assert_eq!(b.to_string(), plan.buffer);
    // What the plan allocated is what the buffer holds.
    let allocated: Vec<String> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Allocate { place, .. } => Some(plan.places[*place].clone()),
            _ => None,
        })
        .collect();
    let held: Vec<String> = mm
        .residency(b)
        .unwrap()
        .into_iter()
        .map(|(p, _)| mm.place_name(p).unwrap())
        .collect();
    assert_eq!(allocated, held);
    residency(out, mm, b);
    out.push('\n');
    let mut back = vec![0u8; mm.size(b).unwrap()];
    mm.read(b, 0, &mut back).unwrap();
    assert_eq!(&back[..data.len()], data);
    assert!(back[data.len()..].iter().all(|&x| x == 0));
    b
}

fn creation_script(name: &str) -> String {
    let s = setup(name, plan_config());
    let mm = &s.mm;
    let devices = &mm.places()[1..];
    let data: Vec<u8> = (0..8 * KIB).map(|i| (i % 251) as u8).collect();
    let mut out = String::new();
    // Hints on (up to) two places and initial data: allocations at each,
    // the data written once, to the first.
    let mut spec = BufferSpec::new(16 * KIB);
    for &d in devices.iter().take(2) {
        spec = spec.hint(d);
    }
    create(&mut out, mm, &spec.clone().init(&data), &data);
    // The same hints without data: allocations only.
    create(&mut out, mm, &spec, &[]);
    // No hint: the data goes to the host store.
    create(&mut out, mm, &BufferSpec::new(16 * KIB).init(&data), &data);
    // Neither: nothing until first use.
    create(&mut out, mm, &BufferSpec::new(16 * KIB), &[]);
    out
}

#[test]
fn creation_plan_snapshots() {
    for name in SCENARIOS {
        let text = creation_script(name);
        insta::assert_snapshot!(format!("create_{name}"), text);
    }
}
