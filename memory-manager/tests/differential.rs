//! Differential random workload: the manager against a plain host model.
//!
//! Random sim scenario, random logical buffers, random accesses at random
//! places with random modes and ranges, fault injection armed before
//! accesses (failed n-th allocation, copy failing after k bytes, device
//! memory caps that force eviction, a device lost for good: bytes whose only
//! copy was there must be reported lost, never served). After every step, every current copy
//! of every byte at every place is read back and compared with the model,
//! and bytes current nowhere must be never-written zeros.
//!
//! Cases: `UR_MM_PROPTEST_CASES` (default 1000).

mod common;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

use common::{setup, Setup, SCENARIOS};
use proptest::prelude::*;
use proptest::test_runner::Config as PtConfig;
use ur_memory_manager::{Access, Config, IntervalSet, LogicalBuffer, MmError, Place};

/// Totals over all cases, to show the workload reaches what it claims to test.
static ERRORS: AtomicU64 = AtomicU64::new(0);
static EVICTIONS: AtomicU64 = AtomicU64::new(0);
static WRITE_BACKS: AtomicU64 = AtomicU64::new(0);
static STAGED: AtomicU64 = AtomicU64::new(0);
static COPIES: AtomicU64 = AtomicU64::new(0);
static LOST: AtomicU64 = AtomicU64::new(0);

#[derive(Debug, Clone)]
enum Fault {
    None,
    FailNthAllocation(u64),
    FailCopyAfter(usize),
    /// Loses a device for the rest of the case (first time only).
    LoseDevice(usize),
}

#[derive(Debug, Clone)]
struct Op {
    buf: usize,
    place: usize,
    mode: Access,
    start: usize,
    len: usize,
    seed: u8,
    fault: Fault,
}

fn mode() -> impl Strategy<Value = Access> {
    prop_oneof![
        Just(Access::Read),
        Just(Access::Write),
        Just(Access::ReadWrite),
        Just(Access::DiscardWrite)
    ]
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        12 => Just(Fault::None),
        3 => (1u64..4).prop_map(Fault::FailNthAllocation),
        3 => (0usize..3000).prop_map(Fault::FailCopyAfter),
        1 => (0usize..8).prop_map(Fault::LoseDevice),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    (
        0usize..8,
        0usize..8,
        mode(),
        0usize..4096,
        1usize..4096,
        any::<u8>(),
        fault(),
    )
        .prop_map(|(buf, place, mode, start, len, seed, fault)| Op {
            buf,
            place,
            mode,
            start,
            len,
            seed,
            fault,
        })
}

#[derive(Debug, Clone)]
struct Case {
    scenario: usize,
    sizes: Vec<usize>,
    /// Cap every device's memory to this many bytes (forces eviction).
    cap: Option<u64>,
    ops: Vec<Op>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..SCENARIOS.len(),
        proptest::collection::vec(1usize..=4096, 1..=4),
        proptest::option::of(4096u64..12288),
        proptest::collection::vec(op(), 1..20),
    )
        .prop_map(|(scenario, sizes, cap, ops)| Case {
            scenario,
            sizes,
            cap,
            ops,
        })
}

fn data(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| seed.wrapping_add((i * 31 % 251) as u8) | 1).collect()
}

/// The faults that persist between steps: memory caps and a lost device.
struct Standing {
    cap: Option<u64>,
    lost: Option<String>,
}

fn reset_faults(s: &Setup, st: &Standing) {
    s.faults.clear();
    if let Some(c) = st.cap {
        for d in &s.device_names {
            s.faults.cap_memory(d, c).expect("cap");
        }
    }
    if let Some(d) = &st.lost {
        s.faults.lose_device(d).expect("lose");
    }
}

/// Is a place on the lost device?
fn dead(s: &Setup, st: &Standing, places: &[Place], place: Place) -> bool {
    let i = places.iter().position(|p| *p == place).expect("a place of the manager");
    i > 0 && st.lost.as_deref() == Some(s.device_names[i - 1].as_str())
}

/// Per buffer: bytes stranded on the lost device (must never be served)
/// and bytes whose content is undefined (a discard-write whose user write
/// failed on the lost device: any content is right).
struct Unknowns {
    lost: Vec<IntervalSet>,
    undefined: Vec<IntervalSet>,
}

/// Every current copy (on live devices) equals the model where defined;
/// bytes current nowhere are never-written zeros, or stranded.
fn verify(s: &Setup, bufs: &[LogicalBuffer], model: &[Vec<u8>], unk: &Unknowns) -> Result<(), TestCaseError> {
    for (i, (b, m)) in bufs.iter().zip(model).enumerate() {
        let mut anywhere = unk.lost[i].clone();
        anywhere.union_with(&unk.undefined[i]);
        for (place, range, bytes) in s.mm.valid_copies(*b).map_err(|e| TestCaseError::fail(e.to_string()))? {
            for r in unk.undefined[i].gaps(range.clone()) {
                prop_assert!(
                    bytes[r.start - range.start..r.end - range.start] == m[r.clone()],
                    "{b} at {} {r:?} differs from the model",
                    s.mm.place_name(place).unwrap()
                );
            }
            anywhere.insert(range);
        }
        for gap in anywhere.gaps(0..m.len()) {
            prop_assert!(
                m[gap.clone()].iter().all(|x| *x == 0),
                "{b} {gap:?} is valid nowhere but was written"
            );
        }
    }
    Ok(())
}

/// What an access saw: the bytes of its range, or `None` when the user's
/// own transfer failed (on a lost device); and whether the allocation used
/// is on the lost device.
type Seen = (Option<Vec<u8>>, bool);

fn run(case: Case) -> Result<(), TestCaseError> {
    let config = Config {
        staging_chunk: 512,
        staging_depth: 3,
        measure_routes: false,
        ..Config::default()
    };
    let s = setup(SCENARIOS[case.scenario], config);
    let mut st = Standing {
        cap: case.cap,
        lost: None,
    };
    reset_faults(&s, &st);
    let places = s.mm.places();
    let bufs: Vec<LogicalBuffer> = case.sizes.iter().map(|&n| s.mm.create_buffer(n).unwrap()).collect();
    let mut model: Vec<Vec<u8>> = case.sizes.iter().map(|&n| vec![0u8; n]).collect();
    let mut unk = Unknowns {
        lost: bufs.iter().map(|_| IntervalSet::new()).collect(),
        undefined: bufs.iter().map(|_| IntervalSet::new()).collect(),
    };
    for op in case.ops {
        let bi = op.buf % bufs.len();
        let (b, size) = (bufs[bi], case.sizes[bi]);
        let place = places[op.place % places.len()];
        let start = op.start % size;
        let range: Range<usize> = start..(start + op.len).min(size);
        let armed = !matches!(op.fault, Fault::None);
        match op.fault {
            Fault::None => {}
            Fault::FailNthAllocation(n) => s.faults.fail_nth_allocation(n),
            Fault::FailCopyAfter(k) => s.faults.fail_copy_after(k),
            Fault::LoseDevice(k) => {
                if st.lost.is_none() && !s.device_names.is_empty() {
                    let name = s.device_names[k % s.device_names.len()].clone();
                    st.lost = Some(name);
                    // What becomes unreadable: bytes current only there.
                    for (bj, bb) in bufs.iter().enumerate() {
                        let (mut there, mut alive) = (IntervalSet::new(), IntervalSet::new());
                        for (p, valid) in s.mm.residency(*bb).unwrap() {
                            if dead(&s, &st, &places, p) {
                                there.union_with(&valid);
                            } else {
                                alive.union_with(&valid);
                            }
                        }
                        there.subtract(&alive);
                        unk.lost[bj].union_with(&there);
                    }
                    reset_faults(&s, &st);
                }
            }
        }
        // What the access writes: all of it for discard-write, the first half otherwise.
        let written = match op.mode {
            Access::Read => range.start..range.start,
            Access::DiscardWrite => range.clone(),
            _ => range.start..range.start + range.len().div_ceil(2),
        };
        let bytes = data(op.seed, written.len());
        let result: Result<Seen, MmError> = match place {
            Place::Host => s.mm.with_host(b, op.mode, range.clone(), |h| {
                reset_faults(&s, &st);
                let off = written.start - range.start;
                h[off..off + bytes.len()].copy_from_slice(&bytes);
                (Some(h.to_vec()), false)
            }),
            Place::Device(_) => s.mm.acquire(b, place, op.mode, range.clone()).map(|g| {
                reset_faults(&s, &st);
                let target_dead = dead(&s, &st, &places, g.target());
                let (q, dev) = (g.queue().unwrap(), g.buffer().unwrap());
                let mut seen = vec![0u8; range.len()];
                let user = (|| {
                    if !bytes.is_empty() {
                        s.rt.write(q, dev, written.start, &bytes)?;
                    }
                    s.rt.read(q, dev, range.start, &mut seen)
                })();
                match user {
                    Ok(()) => (Some(seen), target_dead),
                    Err(e) => {
                        let on_lost = target_dead || dead(&s, &st, &places, place);
                        assert!(on_lost, "the user's transfer failed on a live device: {e}");
                        (None, target_dead)
                    }
                }
            }),
        };
        reset_faults(&s, &st);
        match result {
            Ok((Some(seen), _)) => {
                if op.mode.reads_old_data() {
                    let served: Vec<_> = unk.lost[bi].intersect(range.clone()).collect();
                    prop_assert!(served.is_empty(), "{b}: served lost bytes {served:?}");
                }
                // What the access saw must be the model with its own write applied.
                let mut expect = model[bi][range.clone()].to_vec();
                let off = written.start - range.start;
                expect[off..off + bytes.len()].copy_from_slice(&bytes);
                for r in unk.undefined[bi].gaps(range.clone()) {
                    let (a, z) = (r.start - range.start, r.end - range.start);
                    prop_assert_eq!(&seen[a..z], &expect[a..z], "the access saw wrong bytes");
                }
                model[bi][written.clone()].copy_from_slice(&bytes);
                unk.lost[bi].remove(written.clone());
                unk.undefined[bi].remove(written.clone());
            }
            Ok((None, target_dead)) => {
                // The user's own transfer failed on the lost device.
                if op.mode.writes() && target_dead {
                    // The range is current only there now: unreadable.
                    unk.lost[bi].insert(range.clone());
                    unk.undefined[bi].remove(range.clone());
                } else if op.mode == Access::DiscardWrite {
                    // Nothing was copied in and nothing written: any content.
                    unk.undefined[bi].insert(range.clone());
                }
            }
            Err(e) => {
                ERRORS.fetch_add(1, Ordering::Relaxed);
                match &e {
                    MmError::CopyFailed { .. } | MmError::OutOfMemory { .. } => {
                        prop_assert!(armed || st.cap.is_some(), "failure with no fault armed: {e}");
                    }
                    MmError::DataLost { ranges, .. } => {
                        for r in ranges {
                            prop_assert!(unk.lost[bi].contains(r.clone()), "{b}: {r:?} reported lost: {e}");
                        }
                    }
                    MmError::Runtime(ur_api::Error::DeviceLost) => {
                        prop_assert!(dead(&s, &st, &places, place), "device lost at a live place: {e}");
                    }
                    _ => prop_assert!(false, "untyped failure: {e}"),
                }
            }
        }
        verify(&s, &bufs, &model, &unk)?;
    }
    let stats = s.mm.stats();
    EVICTIONS.fetch_add(stats.evictions, Ordering::Relaxed);
    WRITE_BACKS.fetch_add(stats.written_back, Ordering::Relaxed);
    STAGED.fetch_add(stats.staged_copies, Ordering::Relaxed);
    COPIES.fetch_add(stats.copies, Ordering::Relaxed);
    if st.lost.is_some() {
        LOST.fetch_add(1, Ordering::Relaxed);
    }
    // A last read through the manager of everything readable sees the model.
    for (i, (b, m)) in bufs.iter().zip(&model).enumerate() {
        for r in unk.lost[i].gaps(0..m.len()) {
            let mut part = vec![0u8; r.len()];
            s.mm.read(*b, r.start, &mut part)
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            for d in unk.undefined[i].gaps(r.clone()) {
                prop_assert_eq!(&part[d.start - r.start..d.end - r.start], &m[d]);
            }
        }
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("UR_MM_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000)
}

#[test]
fn manager_matches_host_model() {
    let config = PtConfig {
        cases: cases(),
        failure_persistence: None,
        ..PtConfig::default()
    };
    let n = config.cases;
    proptest!(config, |(c in case())| { run(c)?; });
    let totals = [
        ("typed errors", ERRORS.load(Ordering::Relaxed)),
        ("evictions", EVICTIONS.load(Ordering::Relaxed)),
        ("bytes written back", WRITE_BACKS.load(Ordering::Relaxed)),
        ("staged copies", STAGED.load(Ordering::Relaxed)),
        ("copies", COPIES.load(Ordering::Relaxed)),
        ("cases with a lost device", LOST.load(Ordering::Relaxed)),
    ];
    eprintln!("{n} cases: {totals:?}");
    if n >= 200 {
        for (what, count) in totals {
            assert!(
                count > 0,
                "no {what} in {n} cases: the workload misses what it is meant to test"
            );
        }
    }
}

/// Found by the random workload: evicting a copy whose other copy sits on a
/// device lost unnoticed must still write it back to the host.
#[test]
fn eviction_with_an_unnoticed_lost_device() {
    let op = |buf, place, start, len, fault| Op {
        buf,
        place,
        mode: Access::Read,
        start,
        len,
        seed: 0,
        fault,
    };
    let c = Case {
        scenario: 1,
        sizes: vec![1647, 3158],
        cap: Some(4096),
        ops: vec![
            op(5, 2, 0, 1, Fault::None),
            op(0, 4, 1206, 186, Fault::None),
            op(0, 2, 1198, 9, Fault::None),
            op(0, 0, 0, 1, Fault::LoseDevice(1)),
            op(5, 1, 0, 1, Fault::None),
        ],
    };
    run(c).map_err(|e| e.to_string()).unwrap();
}
