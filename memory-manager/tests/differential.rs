//! Differential random workload: the manager against a plain host model.
//!
//! Random sim scenario, random logical buffers, random accesses at random
//! places with random modes and ranges, fault injection armed before
//! accesses (failed n-th allocation, copy failing after k bytes, device
//! memory caps that force eviction). After every step, every current copy
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

#[derive(Debug, Clone)]
enum Fault {
    None,
    FailNthAllocation(u64),
    FailCopyAfter(usize),
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
        4 => Just(Fault::None),
        1 => (1u64..4).prop_map(Fault::FailNthAllocation),
        1 => (0usize..3000).prop_map(Fault::FailCopyAfter),
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

fn reset_faults(s: &Setup, cap: Option<u64>) {
    s.faults.clear();
    if let Some(c) = cap {
        for d in &s.device_names {
            s.faults.cap_memory(d, c).expect("cap");
        }
    }
}

/// Every current copy equals the model; bytes current nowhere are zeros.
fn verify(s: &Setup, bufs: &[LogicalBuffer], model: &[Vec<u8>]) -> Result<(), TestCaseError> {
    for (b, m) in bufs.iter().zip(model) {
        let mut anywhere = IntervalSet::new();
        for (place, range, bytes) in s.mm.valid_copies(*b).map_err(|e| TestCaseError::fail(e.to_string()))? {
            prop_assert!(
                bytes == m[range.clone()],
                "{b} at {} {range:?} differs from the model",
                s.mm.place_name(place).unwrap()
            );
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

fn run(case: Case) -> Result<(), TestCaseError> {
    let config = Config {
        staging_chunk: 512,
        staging_depth: 3,
        measure_routes: false,
        ..Config::default()
    };
    let s = setup(SCENARIOS[case.scenario], config);
    reset_faults(&s, case.cap);
    let places = s.mm.places();
    let bufs: Vec<LogicalBuffer> = case.sizes.iter().map(|&n| s.mm.create_buffer(n).unwrap()).collect();
    let mut model: Vec<Vec<u8>> = case.sizes.iter().map(|&n| vec![0u8; n]).collect();
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
        }
        // What the access writes: all of it for discard-write, the first half otherwise.
        let written = match op.mode {
            Access::Read => range.start..range.start,
            Access::DiscardWrite => range.clone(),
            _ => range.start..range.start + range.len().div_ceil(2),
        };
        let bytes = data(op.seed, written.len());
        let result: Result<(), MmError> = match place {
            Place::Host => s.mm.with_host(b, op.mode, range.clone(), |h| {
                reset_faults(&s, case.cap);
                let off = written.start - range.start;
                h[off..off + bytes.len()].copy_from_slice(&bytes);
                let seen = h.to_vec();
                (seen, range.clone())
            }),
            Place::Device(_) => s.mm.acquire(b, place, op.mode, range.clone()).map(|g| {
                reset_faults(&s, case.cap);
                let (q, dev) = (g.queue().unwrap(), g.buffer().unwrap());
                if !bytes.is_empty() {
                    s.rt.write(q, dev, written.start, &bytes).expect("user write");
                }
                let mut seen = vec![0u8; range.len()];
                s.rt.read(q, dev, range.start, &mut seen).expect("user read");
                (seen, range.clone())
            }),
        }
        .map(|(seen, r)| {
            // What the access saw must be the model with its own write applied.
            let mut expect = model[bi][r.clone()].to_vec();
            if op.mode == Access::DiscardWrite {
                expect.copy_from_slice(&bytes);
            } else {
                let off = written.start - r.start;
                expect[off..off + bytes.len()].copy_from_slice(&bytes);
            }
            assert_eq!(seen, expect, "the access saw wrong bytes");
            model[bi][written.clone()].copy_from_slice(&bytes);
        });
        reset_faults(&s, case.cap);
        if let Err(e) = result {
            ERRORS.fetch_add(1, Ordering::Relaxed);
            let typed = matches!(e, MmError::CopyFailed { .. } | MmError::OutOfMemory { .. });
            prop_assert!(typed, "untyped failure: {e}");
            prop_assert!(armed || case.cap.is_some(), "failure with no fault armed: {e}");
        }
        verify(&s, &bufs, &model)?;
    }
    let st = s.mm.stats();
    EVICTIONS.fetch_add(st.evictions, Ordering::Relaxed);
    WRITE_BACKS.fetch_add(st.written_back, Ordering::Relaxed);
    STAGED.fetch_add(st.staged_copies, Ordering::Relaxed);
    COPIES.fetch_add(st.copies, Ordering::Relaxed);
    // A last full read through the manager sees the model.
    for (b, m) in bufs.iter().zip(&model) {
        let mut all = vec![0u8; m.len()];
        s.mm.read(*b, 0, &mut all)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&all, m);
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
