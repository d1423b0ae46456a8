//! Host-staged copy throughput: 256 MiB between two sim devices whose
//! connection is `None` (two platforms), host links at 2 GiB/s.
//!
//! Side by side, interleaved repetitions, medians:
//! - the manager's pipelined staged copy (chunk ring, reads overlapping writes),
//! - one single-leg transfer of the same size (device -> host), the bound a
//!   perfect pipeline approaches,
//! - the naive staged copy: read everything to host, then write everything.
//!
//! Rows (BENCH_ROW lines): `staged_copy.pipelined_over_single_leg`,
//! `staged_copy.pipelined_over_naive`, and the same with the link model off
//! (`.unthrottled`). `UR_MM_BENCH_REPS` sets the repetitions (default 5);
//! `UR_MM_BENCH_CHUNK_KIB` and `UR_MM_BENCH_DEPTH` override the staging
//! chunk and ring depth (for tuning).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ur_api::{BufferDesc, Location, QueueProps, Runtime};
use ur_bench_row::{median, print_row};
use ur_memory_manager::{Access, Config, MemoryManager};
use ur_sim::{DeviceSpec, SimAdapter, Topology};

const SIZE: usize = 256 << 20;
const GIB: f64 = (1u64 << 30) as f64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::var("UR_MM_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let link = (2u64 << 30, Duration::from_micros(5));
    let topo = Topology::builder()
        .platform("simA")
        .device(DeviceSpec::new("a0").memory(1 << 30).link(link.0, link.1))
        .platform("simB")
        .device(DeviceSpec::new("b0").memory(1 << 30).link(link.0, link.1))
        .link_model(true)
        .build()?;
    let sim = SimAdapter::new(topo);
    let links = sim.links();
    let mut rt = Runtime::new();
    rt.add(sim)?;
    let devs = rt.all_devices();
    let (a0, b0) = (devs[0], devs[1]);
    let (ca, cb) = (rt.create_context(&[a0])?, rt.create_context(&[b0])?);
    let rt = Arc::new(rt);
    let (la, lb) = (Location::new(ca, a0), Location::new(cb, b0));
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    let defaults = Config::default();
    let config = Config {
        measure_routes: false,
        staging_chunk: env("UR_MM_BENCH_CHUNK_KIB").map_or(defaults.staging_chunk, |k| k << 10),
        staging_depth: env("UR_MM_BENCH_DEPTH").unwrap_or(defaults.staging_depth),
        ..defaults
    };
    let mm = MemoryManager::with_config(rt.clone(), &[la, lb], config)?;
    let (pa, pb) = (mm.places()[1], mm.places()[2]);
    eprintln!(
        "staged copy of {} MiB, chunk {} KiB, ring {}",
        SIZE >> 20,
        config.staging_chunk >> 10,
        config.staging_depth
    );

    // The manager's buffer: current at a0 only.
    let buf = mm.create_buffer(SIZE)?;
    let data: Vec<u8> = (0..SIZE).map(|i| (i * 7 + 3) as u8).collect();
    {
        let g = mm.acquire(buf, pa, Access::DiscardWrite, 0..SIZE)?;
        rt.write(g.queue().unwrap(), g.buffer().unwrap(), 0, &data)?;
    }
    // Baselines' own buffers and queues.
    let qa = rt.create_queue(ca, a0, &QueueProps::default())?;
    let qb = rt.create_queue(cb, b0, &QueueProps::default())?;
    let src = rt.create_buffer_with_data(ca, &BufferDesc::new(SIZE).on(a0), &data)?;
    let dst = rt.create_buffer(cb, &BufferDesc::new(SIZE).on(b0), None)?;
    let mut host = vec![0u8; SIZE];

    for throttled in [true, false] {
        links.set_enabled(throttled);
        let (mut piped, mut single, mut naive) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..reps + 1 {
            // Pipelined: make b0 stale (a discard-write at a0 copies nothing), then read at b0.
            drop(mm.acquire(buf, pa, Access::DiscardWrite, 0..SIZE)?);
            let t = Instant::now();
            drop(mm.acquire(buf, pb, Access::Read, 0..SIZE)?);
            let tp = t.elapsed().as_secs_f64();
            // Single leg: one device -> host read.
            let t = Instant::now();
            rt.read(qa, src, 0, &mut host)?;
            let ts = t.elapsed().as_secs_f64();
            // Naive: all to host, then all to the other device.
            let t = Instant::now();
            rt.read(qa, src, 0, &mut host)?;
            rt.write(qb, dst, 0, &host)?;
            let tn = t.elapsed().as_secs_f64();
            if rep > 0 {
                // Repetition 0 warms pools and first-touch pages.
                piped.push(SIZE as f64 / tp / GIB);
                single.push(SIZE as f64 / ts / GIB);
                naive.push(SIZE as f64 / tn / GIB);
            }
        }
        // The copy must be right.
        let g = mm.acquire(buf, pb, Access::Read, 0..SIZE)?;
        let mut back = vec![0u8; SIZE];
        rt.read(g.queue().unwrap(), g.buffer().unwrap(), 0, &mut back)?;
        assert!(back == data, "staged copy corrupted data");
        drop(g);
        let suffix = if throttled { "" } else { ".unthrottled" };
        let (p, s, n) = (median(piped), median(single), median(naive));
        eprintln!(
            "links {}: pipelined {p:.2} GiB/s, single leg {s:.2} GiB/s, naive {n:.2} GiB/s",
            if throttled { "2 GiB/s" } else { "off" }
        );
        print_row(
            &format!("staged_copy.pipelined_over_single_leg{suffix}"),
            p,
            "GiB/s",
            "single_leg",
            s,
        );
        print_row(
            &format!("staged_copy.pipelined_over_naive{suffix}"),
            p,
            "GiB/s",
            "naive_staged",
            n,
        );
    }
    for q in [qa, qb] {
        rt.release_queue(q)?;
    }
    rt.release_buffer(src)?;
    rt.release_buffer(dst)?;
    Ok(())
}
