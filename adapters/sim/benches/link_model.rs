//! The link model, measured: two 32 MiB host-to-device writes at the same
//! time over two different device links against the same two writes over
//! one link (serialized), and one write against its modelled minimum time.
//!
//! Interleaved repetitions, medians. Rows (BENCH_ROW lines):
//! `sim.link_model.two_links_concurrent` (baseline: one link twice) and
//! `sim.link_model.single_write` (baseline: latency + bytes / bandwidth).
//! `UR_SIM_BENCH_REPS` sets the repetitions (default 5).

use std::time::{Duration, Instant};

use ur_api::{BufferDesc, HostPtr, QueueProps, Runtime};
use ur_bench_row::{median, print_row};
use ur_sim::{DeviceSpec, LinkSpec, SimAdapter, Topology};

const SIZE: usize = 32 << 20;
const BANDWIDTH: u64 = 1 << 30;
const LATENCY: Duration = Duration::from_micros(20);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::var("UR_SIM_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let topo = Topology::builder()
        .platform("simA")
        .device(DeviceSpec::new("a0").memory(256 << 20).link(BANDWIDTH, LATENCY))
        .platform("simB")
        .device(DeviceSpec::new("b0").memory(256 << 20).link(BANDWIDTH, LATENCY))
        .link_model(true)
        .build()?;
    let mut rt = Runtime::new();
    rt.add(SimAdapter::new(topo))?;
    let devs = rt.all_devices();
    let (ca, cb) = (rt.create_context(&[devs[0]])?, rt.create_context(&[devs[1]])?);
    let props = QueueProps::default();
    let (qa1, qa2) = (
        rt.create_queue(ca, devs[0], &props)?,
        rt.create_queue(ca, devs[0], &props)?,
    );
    let qb = rt.create_queue(cb, devs[1], &props)?;
    let (a1, a2) = (
        rt.create_buffer(ca, &BufferDesc::new(SIZE), None)?,
        rt.create_buffer(ca, &BufferDesc::new(SIZE), None)?,
    );
    let b = rt.create_buffer(cb, &BufferDesc::new(SIZE), None)?;
    let data = vec![0x5Au8; SIZE];
    // SAFETY: `data` outlives every write below, each waited for before the next round.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), SIZE) };

    let (mut two_links, mut one_link, mut single) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        let e1 = rt.enqueue_write(qa1, a1, 0, src, &[])?;
        let e2 = rt.enqueue_write(qb, b, 0, src, &[])?;
        rt.wait(&[e1, e2])?;
        two_links.push(t.elapsed().as_secs_f64() * 1e3);
        for e in [e1, e2] {
            rt.release_event(e)?;
        }

        let t = Instant::now();
        let e1 = rt.enqueue_write(qa1, a1, 0, src, &[])?;
        let e2 = rt.enqueue_write(qa2, a2, 0, src, &[])?;
        rt.wait(&[e1, e2])?;
        one_link.push(t.elapsed().as_secs_f64() * 1e3);
        for e in [e1, e2] {
            rt.release_event(e)?;
        }

        let t = Instant::now();
        rt.complete(rt.enqueue_write(qb, b, 0, src, &[])?)?;
        single.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let modelled = LinkSpec::new(BANDWIDTH, LATENCY).min_time(SIZE).as_secs_f64() * 1e3;
    eprintln!(
        "{reps} repetitions of {} MiB writes over {} MiB/s links",
        SIZE >> 20,
        BANDWIDTH >> 20
    );
    print_row(
        "sim.link_model.two_links_concurrent",
        median(two_links),
        "ms",
        "sim.link_model.one_link_twice",
        median(one_link),
    );
    print_row(
        "sim.link_model.single_write",
        median(single),
        "ms",
        "sim.link_model.modelled_minimum",
        modelled,
    );
    Ok(())
}
