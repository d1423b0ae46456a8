//! Cost of a small enqueue on OpenCL through the dyn layer (`ur_api::Runtime`
//! over the OpenCL adapter) compared with the same calls made directly
//! with `opencl3`, on the first OpenCL device (PoCL here).
//!
//! One batch: `OPS` non-blocking 64-byte writes into a 4 KiB buffer, then
//! one wait for all their events, then every event released. Three paths
//! are measured: direct `opencl3`, the adapter through the static `Adapter`
//! trait, and the adapter through the dyn layer; their batches are
//! interleaved (rotating which goes first) and the medians of per-batch
//! ns/op are compared. Rows: `opencl.dispatch_over_direct` (dyn layer over
//! direct, the row) and `opencl.adapter_over_direct` (static trait
//! over direct: what the adapter alone adds). With no OpenCL device it
//! prints why on stderr and no row.
//!
//! `opencl.migratable_over_direct` and `opencl.staged_over_naive` need the
//! memory manager's routing API and are not measured here yet.

use std::ptr;
use std::time::Instant;

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROPERTIES};
use opencl3::context::Context;
use opencl3::device::CL_DEVICE_TYPE_ALL;
use opencl3::event::Event;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::{cl_event, cl_queue_properties, CL_NON_BLOCKING};
use ur_api::{Adapter, BufferDesc, EventId, HostPtr, QueueProps, Runtime};

const OPS: usize = 200;
const ROUNDS: usize = 151;
const WARMUP: usize = 5;
const SIZE: usize = 64;
const SLOTS: usize = 64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn env_defaults() {
    for (k, v) in [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")] {
        if std::env::var_os(k).is_none() {
            std::env::set_var(k, v);
        }
    }
}

/// The first device of the first platform with devices, the order the adapter lists them in.
fn first_device() -> Option<opencl3::types::cl_device_id> {
    let platforms = opencl3::platform::get_platforms().ok()?;
    platforms
        .iter()
        .find_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).ok().and_then(|d| d.first().copied()))
}

type BoxErr = Box<dyn std::error::Error>;

fn main() -> Result<(), BoxErr> {
    env_defaults();
    let Some(device) = first_device() else {
        eprintln!("opencl bench skipped: no OpenCL device on this machine");
        return Ok(());
    };
    let src = vec![7u8; SIZE * SLOTS];

    // Direct path: opencl3 on its own context and queue.
    let ctx = Context::from_devices(&[device], &[], None, ptr::null_mut())?;
    let props: [cl_queue_properties; 3] = [CL_QUEUE_PROPERTIES as cl_queue_properties, 0, 0];
    // SAFETY: the device is the context's; the property list is zero-terminated.
    let raw =
        unsafe { opencl3::command_queue::create_command_queue_with_properties(ctx.get(), device, props.as_ptr()) }
            .map_err(opencl3::error_codes::ClError)?;
    let q = CommandQueue::new(raw, 3);
    // SAFETY: a plain read-write buffer without host memory.
    let mut buf = unsafe { Buffer::<u8>::create(&ctx, CL_MEM_READ_WRITE, SIZE * SLOTS, ptr::null_mut())? };
    let mut direct_batch = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        let mut events: Vec<Event> = Vec::with_capacity(OPS);
        for i in 0..OPS {
            let off = (i % SLOTS) * SIZE;
            // SAFETY: `src` outlives the wait below; the range is inside the buffer.
            events.push(unsafe { q.enqueue_write_buffer(&mut buf, CL_NON_BLOCKING, off, &src[off..off + SIZE], &[])? });
        }
        let ids: Vec<cl_event> = events.iter().map(Event::get).collect();
        opencl3::event::wait_for_events(&ids).map_err(opencl3::error_codes::ClError)?;
        drop(events);
        Ok(t.elapsed().as_nanos() as f64 / OPS as f64)
    };

    // Dyn path: the same device through the Runtime.
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new())?;
    let dev = rt.all_devices()[0];
    let dctx = rt.create_context(&[dev])?;
    let dq = rt.create_queue(dctx, dev, &QueueProps::default())?;
    let dbuf = rt.create_buffer(dctx, &BufferDesc::new(SIZE * SLOTS).on(dev), None)?;
    let dyn_batch = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        let mut events: Vec<EventId> = Vec::with_capacity(OPS);
        for i in 0..OPS {
            let off = (i % SLOTS) * SIZE;
            // SAFETY: `src` is only read and outlives the wait below.
            let p = unsafe { HostPtr::new(src[off..].as_ptr().cast_mut(), SIZE) };
            events.push(rt.enqueue_write(dq, dbuf, off, p, &[])?);
        }
        rt.wait(&events)?;
        for e in events {
            rt.release_event(e)?;
        }
        Ok(t.elapsed().as_nanos() as f64 / OPS as f64)
    };

    // Static path: the adapter without the dyn layer.
    let a = ur_opencl::OpenClAdapter::new();
    let sdev = a
        .platforms()?
        .iter()
        .find_map(|p| a.devices(p).ok().filter(|d| !d.is_empty()))
        .map(|mut d| d.remove(0))
        .ok_or("no device through the adapter")?;
    let sctx = a.create_context(&[&sdev])?;
    let sq = a.create_queue(&sctx, &sdev, &QueueProps::default())?;
    let sbuf = a.create_buffer(&sctx, &BufferDesc::new(SIZE * SLOTS).on(&sdev), None)?;
    let static_batch = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        let mut events = Vec::with_capacity(OPS);
        for i in 0..OPS {
            let off = (i % SLOTS) * SIZE;
            // SAFETY: `src` is only read and outlives the wait below.
            let p = unsafe { HostPtr::new(src[off..].as_ptr().cast_mut(), SIZE) };
            events.push(a.enqueue_write(&sq, &sbuf, off, p, &[])?);
        }
        a.wait(&events.iter().collect::<Vec<_>>())?;
        drop(events);
        Ok(t.elapsed().as_nanos() as f64 / OPS as f64)
    };

    let (mut direct, mut stat, mut dynamic) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARMUP + ROUNDS {
        let mut times = [0.0; 3];
        for k in 0..3 {
            let path = (round + k) % 3;
            times[path] = match path {
                0 => direct_batch()?,
                1 => static_batch()?,
                _ => dyn_batch()?,
            };
        }
        if round >= WARMUP {
            direct.push(times[0]);
            stat.push(times[1]);
            dynamic.push(times[2]);
        }
    }
    let (d, s, r) = (median(direct), median(stat), median(dynamic));
    println!(
        "BENCH_ROW {{\"name\":\"opencl.dispatch_over_direct\",\"value\":{r:.1},\"unit\":\"ns\",\"baseline_name\":\"opencl.direct\",\"baseline_value\":{d:.1},\"ratio\":{:.3}}}",
        r / d
    );
    println!(
        "BENCH_ROW {{\"name\":\"opencl.adapter_over_direct\",\"value\":{s:.1},\"unit\":\"ns\",\"baseline_name\":\"opencl.direct\",\"baseline_value\":{d:.1},\"ratio\":{:.3}}}",
        s / d
    );
    Ok(())
}
