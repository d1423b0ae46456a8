//! Small tests of the pure, lock-free parts sized for Miri (`cargo xtask
//! ci`'s `miri` step runs them with the unit tests of `ur-api` and
//! `ur-memory-manager`): the interpreter checks every access for undefined
//! behaviour, aliasing violations and data races, so a few hundred
//! operations across threads say more here than millions natively.
//! The full-sized versions live next to the code.

use std::sync::atomic::{AtomicBool, Ordering};

use ur_api::dynamic::pointer_map::PointerMap;

/// Lookups each reader makes at most: under Miri an unbounded reader
/// loop spins for as long as the writer's turns last (it made this file
/// the longest part of the `miri` step, minutes); enough lookups remain to
/// interleave with every insert and remove of the writer.
const READER_LOOKUPS: usize = 400;

/// A range of the test: base and size of range `i` (sizes from 256 bytes
/// to 64 KiB, so more than one tier of the map holds some).
fn range(i: usize) -> (usize, usize) {
    (0x10_0000 + i * 0x1_0000, 0x100 << (i % 9))
}

/// Readers look ranges up while a writer inserts and removes the odd ones
/// (growing the table past its first tier): a reader sees a whole entry of
/// the range it asked about or nothing, never a torn or foreign one, and
/// always finds the even ranges nobody touches.
#[test]
fn pointer_map_readers_race_a_writer() {
    const N: usize = 48;
    let m = PointerMap::<usize>::new();
    for i in (0..N).step_by(2) {
        let (b, s) = range(i);
        m.insert(b, s, i).unwrap();
    }
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        for t in 0..2usize {
            let (m, stop) = (&m, &stop);
            sc.spawn(move || {
                let mut i = t;
                for _ in 0..READER_LOOKUPS {
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    i = (i * 7 + 3) % N;
                    let (b, s) = range(i);
                    match m.get(b + s - 1) {
                        Some((h, v)) => assert_eq!((h.base, h.size, v), (b, s, i)),
                        None => assert!(i % 2 == 1, "stable range {i} missed"),
                    }
                }
            });
        }
        for round in 0..4 {
            for i in (1..N).step_by(2) {
                let (b, s) = range(i);
                if round % 2 == 0 {
                    m.insert(b, s, i).unwrap();
                } else {
                    assert_eq!(m.remove(b), Some(i));
                }
            }
        }
        stop.store(true, Ordering::Release);
    });
    assert_eq!(m.len(), N / 2);
}

/// Updates race lookups of the same entry: a reader sees the old or the
/// new value, never anything else.
#[test]
fn pointer_map_updates_race_lookups() {
    let m = PointerMap::<u64>::new();
    let (b, s) = range(1);
    m.insert(b, s, 0).unwrap();
    std::thread::scope(|sc| {
        let m = &m;
        let reader = sc.spawn(move || {
            let mut last = 0;
            for _ in 0..50 {
                let (_, v) = m.get(b).expect("the entry stays");
                assert!(v >= last, "value went back from {last} to {v}");
                last = v;
            }
        });
        for k in 1..=20 {
            assert_eq!(m.update(b, |v| v + 1), Some(k));
        }
        reader.join().unwrap();
    });
    assert_eq!(m.get(b).map(|(_, v)| v), Some(20));
}
