//! 16 threads on shared logical buffers of the memory manager, across
//! native, sim and every OpenCL device present (PoCL x2 and rusticl in CI),
//! for a bounded time with a watchdog. Each thread reads and writes ranges
//! of two shared buffers: one where every thread owns a disjoint slice, one
//! where ranges overlap freely. The manager leaves ordering conflicting
//! accesses of one range to its callers (see `Acquired`), so accesses to
//! the overlapping buffer hold its model's lock from acquire to release
//! (the model follows the real order), while the disjoint slices run fully
//! concurrently; every read is checked, and every byte of both buffers and
//! of every valid copy the manager keeps at the end.
//!
//! `UR_STRESS_SECS` sets the duration (default 20 s); the watchdog fails
//! the test (a deadlock) when no thread makes progress for 120 s.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ur_api::{Location, Runtime};
use ur_memory_manager::{Access, Config, LogicalBuffer, MemoryManager, MmError, Place};

const THREADS: usize = 16;
const SLICE: usize = 2 << 10;
const SHARED: usize = 24 << 10;

struct World {
    mm: MemoryManager,
    rt: Arc<Runtime>,
    disjoint: LogicalBuffer,
    overlap: LogicalBuffer,
    /// Models, updated under the manager's guard of their buffer.
    model_disjoint: Mutex<Vec<u8>>,
    model_overlap: Mutex<Vec<u8>>,
    progress: AtomicU64,
    stop: AtomicBool,
}

fn runtime() -> Runtime {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    rt.add(ur_sim::SimAdapter::new(ur_sim::Topology::two_devices_peer()))
        .unwrap();
    rt.add(ur_opencl::OpenClAdapter::new()).unwrap();
    rt
}

fn retry<T>(mut f: impl FnMut() -> Result<T, MmError>) -> T {
    for _ in 0..500 {
        match f() {
            Ok(v) => return v,
            Err(MmError::OutOfMemory { .. }) => std::thread::sleep(Duration::from_millis(1)),
            Err(e) => panic!("unexpected failure: {e}"),
        }
    }
    panic!("out of memory 500 times in a row");
}

/// One access: makes `range` current at `at`, writes `write` at its start
/// (if any) and updates `model` while the buffer is held, returns what the
/// range holds and what the model says it should.
fn access(
    w: &World,
    b: LogicalBuffer,
    model: &Mutex<Vec<u8>>,
    at: Place,
    mode: Access,
    range: Range<usize>,
    write: &[u8],
    serialize: bool,
) -> (Vec<u8>, Vec<u8>) {
    let held = serialize.then(|| model.lock().unwrap());
    let held = std::cell::RefCell::new(held);
    let update = || {
        let mut h = held.borrow_mut();
        let mut own;
        let m: &mut Vec<u8> = match h.as_mut() {
            Some(g) => g,
            None => {
                own = model.lock().unwrap();
                &mut own
            }
        };
        m[range.start..range.start + write.len()].copy_from_slice(write);
        m[range.clone()].to_vec()
    };
    match at {
        Place::Host => retry(|| {
            w.mm.with_host(b, mode, range.clone(), |h| {
                h[..write.len()].copy_from_slice(write);
                let want = update();
                (h.to_vec(), want)
            })
        }),
        Place::Device(_) => {
            let g = retry(|| w.mm.acquire(b, at, mode, range.clone()));
            let (q, buf) = (g.queue().unwrap(), g.buffer().unwrap());
            if !write.is_empty() {
                w.rt.write(q, buf, range.start, write).unwrap();
            }
            let mut seen = vec![0u8; range.len()];
            w.rt.read(q, buf, range.start, &mut seen).unwrap();
            let want = update();
            drop(g);
            (seen, want)
        }
    }
}

fn worker(w: &World, t: usize) -> usize {
    let places = w.mm.places();
    let mut rng = fastrand::Rng::with_seed(0xA076_1D64_78BD_642F ^ ((t as u64 + 1) << 17));
    let mut steps = 0;
    while !w.stop.load(Ordering::Relaxed) {
        let at = places[rng.usize(..places.len())];
        let mode = [Access::Read, Access::Write, Access::ReadWrite, Access::DiscardWrite][rng.usize(..4)];
        let disjoint = rng.bool();
        let (b, model, base, size) = if disjoint {
            (w.disjoint, &w.model_disjoint, t * SLICE, SLICE)
        } else {
            (w.overlap, &w.model_overlap, 0, SHARED)
        };
        let start = rng.usize(..size);
        let len = rng.usize(1..=(size - start).min(4 << 10));
        let wlen = match mode {
            Access::Read => 0,
            Access::DiscardWrite => len,
            _ => len.div_ceil(2),
        };
        let write: Vec<u8> = (0..wlen).map(|i| (t * 31 + steps * 7 + i) as u8).collect();
        let range = base + start..base + start + len;
        let (seen, want) = access(w, b, model, at, mode, range.clone(), &write, !disjoint);
        assert!(
            seen == want,
            "thread {t} step {steps}: {mode} {range:?} at {} saw wrong bytes",
            w.mm.place_name(at).unwrap()
        );
        steps += 1;
        w.progress.fetch_add(1, Ordering::Relaxed);
    }
    steps
}

#[test]
fn sixteen_threads_across_every_device_match_the_model() {
    let rt = runtime();
    let mut locations = Vec::new();
    let mut names = Vec::new();
    for p in rt.platforms() {
        let devs = rt.devices(p).unwrap();
        let ctx = rt.create_context(&devs).unwrap();
        for d in devs {
            locations.push(Location::new(ctx, d));
            let info = rt.device_info(d).unwrap();
            names.push(format!("{}/{}", rt.backend_of(d).unwrap().name(), info.name));
        }
    }
    let opencl = names.iter().filter(|n| n.starts_with("opencl/")).count();
    if std::env::var_os("UR_REQUIRE_OPENCL").is_some() {
        assert!(opencl > 0, "UR_REQUIRE_OPENCL is set but no OpenCL device: {names:?}");
    }
    eprintln!("stress over {} devices: {names:?}", names.len());
    let rt = Arc::new(rt);
    let config = Config {
        staging_chunk: 4 << 10,
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &locations, config).unwrap();
    let disjoint = mm.create_buffer(THREADS * SLICE).unwrap();
    let overlap = mm.create_buffer(SHARED).unwrap();
    mm.write(disjoint, 0, &vec![0u8; THREADS * SLICE]).unwrap();
    mm.write(overlap, 0, &vec![0u8; SHARED]).unwrap();
    let w = Arc::new(World {
        mm,
        rt,
        disjoint,
        overlap,
        model_disjoint: Mutex::new(vec![0u8; THREADS * SLICE]),
        model_overlap: Mutex::new(vec![0u8; SHARED]),
        progress: AtomicU64::new(0),
        stop: AtomicBool::new(false),
    });
    let secs: u64 = std::env::var("UR_STRESS_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let w = w.clone();
            std::thread::spawn(move || worker(&w, t))
        })
        .collect();
    // The watchdog: stop after `secs`; a stall of 120 s is a deadlock.
    let start = Instant::now();
    let mut last = (0, Instant::now());
    while start.elapsed() < Duration::from_secs(secs) || !handles.iter().all(|h| h.is_finished()) {
        if start.elapsed() >= Duration::from_secs(secs) {
            w.stop.store(true, Ordering::Relaxed);
        }
        if handles.iter().any(|h| h.is_finished()) && !w.stop.load(Ordering::Relaxed) {
            break; // a worker panicked: join reports it
        }
        let now = w.progress.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        }
        assert!(
            last.1.elapsed() < Duration::from_secs(120),
            "deadlock: no access finished for 120 s ({now} done)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    w.stop.store(true, Ordering::Relaxed);
    let steps: usize = handles.into_iter().map(|h| h.join().expect("worker panicked")).sum();
    // Every byte of both buffers, read back through the host.
    let mut all = vec![0u8; THREADS * SLICE];
    w.mm.read(w.disjoint, 0, &mut all).unwrap();
    assert!(
        all == *w.model_disjoint.lock().unwrap(),
        "disjoint buffer differs from the model"
    );
    let mut all = vec![0u8; SHARED];
    w.mm.read(w.overlap, 0, &mut all).unwrap();
    assert!(
        all == *w.model_overlap.lock().unwrap(),
        "overlapping buffer differs from the model"
    );
    // And every valid copy the manager holds agrees with the model.
    for (b, model) in [(w.disjoint, &w.model_disjoint), (w.overlap, &w.model_overlap)] {
        let model = model.lock().unwrap();
        for (place, range, bytes) in w.mm.valid_copies(b).unwrap() {
            assert!(bytes == model[range.clone()], "stale valid copy at {place:?} {range:?}");
        }
    }
    eprintln!(
        "stress: {steps} accesses by {THREADS} threads in {:.1}s, {:?}",
        start.elapsed().as_secs_f64(),
        w.mm.stats()
    );
    w.mm.release(w.disjoint).unwrap();
    w.mm.release(w.overlap).unwrap();
}
