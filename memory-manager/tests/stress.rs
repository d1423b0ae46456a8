//! Many threads at once, on private buffers and on one shared buffer (each
//! thread owns a disjoint slice of it), with device memory capped so that
//! eviction runs concurrently with copies. Every read is checked.

mod common;

use std::sync::Arc;

use common::{setup, Setup};
use ur_memory_manager::{Access, Config, LogicalBuffer, MmError, Place};

const THREADS: usize = 4;
const SLICE: usize = 8 << 10;
const PRIVATE: usize = 24 << 10;
const STEPS: usize = 150;

/// Retries an access that found every allocation busy (typed out-of-memory).
fn with_retry<T>(mut f: impl FnMut() -> Result<T, MmError>) -> T {
    for _ in 0..200 {
        match f() {
            Ok(v) => return v,
            Err(MmError::OutOfMemory { .. }) => std::thread::sleep(std::time::Duration::from_millis(1)),
            Err(e) => panic!("unexpected failure: {e}"),
        }
    }
    panic!("out of memory 200 times in a row");
}

/// Makes `range` of `b` current at `at` for `access`, writes `write` at its
/// start (if any), and returns what the range holds afterwards.
fn access(
    s: &Setup,
    b: LogicalBuffer,
    at: Place,
    mode: Access,
    range: std::ops::Range<usize>,
    write: &[u8],
) -> Vec<u8> {
    match at {
        Place::Host => with_retry(|| {
            s.mm.with_host(b, mode, range.clone(), |h| {
                h[..write.len()].copy_from_slice(write);
                h.to_vec()
            })
        }),
        Place::Device(_) => {
            let g = with_retry(|| s.mm.acquire(b, at, mode, range.clone()));
            let (q, buf) = (g.queue().unwrap(), g.buffer().unwrap());
            if !write.is_empty() {
                s.rt.write(q, buf, range.start, write).unwrap();
            }
            let mut seen = vec![0u8; range.len()];
            s.rt.read(q, buf, range.start, &mut seen).unwrap();
            seen
        }
    }
}

fn worker(s: &Setup, t: usize, shared: LogicalBuffer) {
    let places = s.mm.places();
    let mut rng = fastrand::Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
    let own = s.mm.create_buffer(PRIVATE).unwrap();
    let mut model_own = vec![0u8; PRIVATE];
    let mut model_slice = vec![0u8; SLICE];
    let base = t * SLICE;
    for step in 0..STEPS {
        let at = places[rng.usize(..places.len())];
        let mode = [Access::Read, Access::Write, Access::ReadWrite, Access::DiscardWrite][rng.usize(..4)];
        let on_shared = rng.bool();
        let (b, size) = if on_shared { (shared, SLICE) } else { (own, PRIVATE) };
        let start = rng.usize(..size);
        let len = rng.usize(1..=size - start);
        let wlen = match mode {
            Access::Read => 0,
            Access::DiscardWrite => len,
            _ => len.div_ceil(2),
        };
        let write: Vec<u8> = (0..wlen).map(|i| (t * 64 + step + i) as u8 | 0x80).collect();
        let off = if on_shared { base } else { 0 };
        let seen = access(s, b, at, mode, off + start..off + start + len, &write);
        let model = if on_shared { &mut model_slice } else { &mut model_own };
        model[start..start + wlen].copy_from_slice(&write);
        assert_eq!(
            seen,
            model[start..start + len],
            "thread {t} step {step}: {mode} at {} saw wrong bytes",
            s.mm.place_name(at).unwrap()
        );
    }
    let mut all = vec![0u8; PRIVATE];
    s.mm.read(own, 0, &mut all).unwrap();
    assert_eq!(all, model_own, "thread {t}: private buffer");
    let mut mine = vec![0u8; SLICE];
    s.mm.read(shared, base, &mut mine).unwrap();
    assert_eq!(mine, model_slice, "thread {t}: its slice of the shared buffer");
    s.mm.release(own).unwrap();
}

#[test]
fn many_threads_many_buffers_one_shared_buffer() {
    for scenario in ["peer_pair_one_context", "three_platforms"] {
        let config = Config {
            staging_chunk: 4 << 10,
            measure_routes: false,
            ..Config::default()
        };
        let s = Arc::new(setup(scenario, config));
        // Room for about three allocations per device: eviction under load.
        for d in &s.device_names {
            s.faults.cap_memory(d, (3 * PRIVATE) as u64).unwrap();
        }
        let shared = s.mm.create_buffer(THREADS * SLICE).unwrap();
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || worker(&s, t, shared))
            })
            .collect();
        for h in handles {
            h.join().expect("worker panicked");
        }
        let st = s.mm.stats();
        assert!(st.copies > 0 && st.evictions > 0, "{scenario}: {st:?}");
    }
}
