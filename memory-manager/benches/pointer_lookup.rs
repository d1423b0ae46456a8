//! Interior-pointer lookup: `ur_api::dynamic::PointerMap` (the runtime's
//! pointer map and the pinned registry's index) against
//! `BTreeMap::range(..=p).next_back()` on the same data, in the same run.
//!
//! 100,000 ranges (sizes 256 B .. 64 KiB, gaps of the same order, so most
//! fine granules hold one to a few ranges), 1,000,000 random queries of which
//! 80% fall inside a range, median of `UR_MM_BENCH_REPS` (default 11) passes.
//!
//! Rows: `pointer_lookup.100k_over_btreemap` (ns per lookup, ratio = ours /
//! BTreeMap's; target <= 0.3), `pointer_lookup.100k_get_over_btreemap` (the
//! lookup plus the value), `pointer_lookup.100k_sorted_vec_over_btreemap`
//! (a reference), and `pointer_lookup.100k_8_readers_1_writer_over_btreemap`:
//! the lookup median of 8 threads (each thread's CPU time per lookup) while
//! a ninth locks and unlocks ranges (insert/remove) without pause; its baseline is the single-thread BTreeMap
//! figure (a BTreeMap needs a lock to be written under readers at all).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ur_api::dynamic::PointerMap;
use ur_bench_row::{median, print_row};

const RANGES: usize = 100_000;
const QUERIES: usize = 1_000_000;

fn time_ns(queries: &[usize], f: impl Fn(usize) -> usize) -> f64 {
    let t = Instant::now();
    let mut acc = 0usize;
    for &q in queries {
        acc = acc.wrapping_add(f(q));
    }
    black_box(acc);
    t.elapsed().as_nanos() as f64 / queries.len() as f64
}

/// Per-lookup cost in this thread's CPU time: with more threads than cores
/// (CI machines have two), wall time would count the time a reader spends
/// descheduled.
fn cpu_ns(queries: &[usize], f: impl Fn(usize) -> usize) -> f64 {
    let now = || {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
    };
    let t = now();
    let mut acc = 0usize;
    for &q in queries {
        acc = acc.wrapping_add(f(q));
    }
    black_box(acc);
    (now() - t) / queries.len() as f64
}

fn main() {
    let reps: usize = std::env::var("UR_MM_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15);
    let mut ranges = Vec::with_capacity(RANGES);
    let mut at = 0x7f00_0000_0000usize;
    for _ in 0..RANGES {
        let size = 256 + rng.usize(..64 << 10);
        at += 64 + rng.usize(..16 << 10);
        ranges.push((at, size));
        at += size;
    }
    let map = PointerMap::<u32>::new();
    let mut tree = BTreeMap::new();
    for (i, &(b, s)) in ranges.iter().enumerate() {
        map.insert(b, s, i as u32).expect("disjoint");
        tree.insert(b, (s, i as u32));
    }
    let sorted: Vec<(usize, usize, u32)> = tree.iter().map(|(&b, &(s, i))| (b, s, i)).collect();
    let queries: Vec<usize> = (0..QUERIES)
        .map(|_| {
            let i = rng.usize(..RANGES);
            let (b, s) = ranges[i];
            if rng.u8(..10) < 8 {
                b + rng.usize(..s)
            } else {
                b - 1 - rng.usize(..32) // in the gap before it (gaps >= 64 B)
            }
        })
        .collect();
    let hits = queries.iter().filter(|&&q| map.lookup(q).is_some()).count();
    eprintln!("pointer_lookup: {RANGES} ranges, {QUERIES} queries, {hits} hits");
    let btree = |p: usize| {
        tree.range(..=p)
            .next_back()
            .filter(|(&b, &(s, _))| p - b < s)
            .map_or(0, |(_, &(_, i))| i as usize)
    };
    let ours = |p: usize| map.lookup(p).map_or(0, |h| h.id as usize);
    let ours_get = |p: usize| map.get(p).map_or(0, |(_, v)| v as usize);
    let vec = |p: usize| {
        let i = sorted.partition_point(|&(b, _, _)| b <= p);
        i.checked_sub(1)
            .map(|i| sorted[i])
            .filter(|&(b, s, _)| p - b < s)
            .map_or(0, |(_, _, i)| i as usize)
    };
    assert!(queries.iter().all(|&q| btree(q) == ours(q) && ours(q) == vec(q)));
    let (mut t_tree, mut t_ours, mut t_get, mut t_vec) = (vec![], vec![], vec![], vec![]);
    for _ in 0..reps {
        t_tree.push(time_ns(&queries, btree));
        t_ours.push(time_ns(&queries, ours));
        t_get.push(time_ns(&queries, ours_get));
        t_vec.push(time_ns(&queries, vec));
    }
    let base = median(t_tree);
    print_row(
        "pointer_lookup.100k_over_btreemap",
        median(t_ours),
        "ns",
        "btreemap_range_next_back",
        base,
    );
    print_row(
        "pointer_lookup.100k_get_over_btreemap",
        median(t_get),
        "ns",
        "btreemap_range_next_back",
        base,
    );
    print_row(
        "pointer_lookup.100k_sorted_vec_over_btreemap",
        median(t_vec),
        "ns",
        "btreemap_range_next_back",
        base,
    );

    // 8 readers, one writer inserting and removing ranges of its own.
    let stop = AtomicBool::new(false);
    let (map, queries, stop) = (&map, &queries, &stop);
    let per_thread: Vec<f64> = std::thread::scope(|s| {
        let writer = s.spawn(move || {
            let mut n = 0u64;
            let mut at = 0x7e00_0000_0000usize;
            while !stop.load(Ordering::Relaxed) {
                map.insert(at, 4096, 0).expect("fresh range");
                map.remove(at).expect("just inserted");
                at += 8192;
                n += 1;
            }
            n
        });
        let readers: Vec<_> = (0..8)
            .map(|t| {
                s.spawn(move || {
                    let chunk = &queries[t * (QUERIES / 8)..(t + 1) * (QUERIES / 8)];
                    median((0..reps).map(|_| cpu_ns(chunk, ours)))
                })
            })
            .collect();
        let r = readers.into_iter().map(|h| h.join().expect("reader")).collect();
        stop.store(true, Ordering::Relaxed);
        eprintln!(
            "pointer_lookup: writer did {} insert+remove pairs",
            writer.join().expect("writer")
        );
        r
    });
    print_row(
        "pointer_lookup.100k_8_readers_1_writer_over_btreemap",
        median(per_thread),
        "ns",
        "btreemap_range_next_back_1_thread",
        base,
    );
}
