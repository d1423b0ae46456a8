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
//! Two more rows move data between devices through the memory manager,
//! compared with doing the same by hand with `opencl3` (medians over
//! interleaved rounds of one transfer of `XFER` = 256 MiB each, reported as
//! GiB/s, so a ratio above 1 means the manager is faster). No
//! timed region allocates: the direct buffers are created before timing and
//! the manager's destination allocations in an untimed warm-up round, so
//! both sides time the transfer alone.
//!
//! - `opencl.migratable_over_direct`: PoCL device 0 -> device 1 of one
//!   context (the manager's route: one adapter copy) over a direct
//!   `clEnqueueCopyBuffer` + wait.
//! - `opencl.staged_over_naive`: PoCL device 0 -> rusticl (another
//!   platform; the manager's route: with both CPU devices host-unified,
//!   zero-copy staging: each source chunk mapped and written to rusticl
//!   straight from the mapping) over a naive blocking read of the whole
//!   buffer to host memory followed by a blocking write to rusticl.
//!
//! They need PoCL's two devices and a second platform; otherwise they are
//! skipped with the reason on stderr.

use std::ptr;
use std::time::Instant;

use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROPERTIES};
use opencl3::context::Context;
use opencl3::device::CL_DEVICE_TYPE_ALL;
use opencl3::event::Event;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE};
use opencl3::types::{cl_event, cl_queue_properties, CL_NON_BLOCKING};
use ur_api::{adapter::prelude::*, BufferDesc, EventId, HostPtr, QueueProps, Runtime};
use ur_bench_row::{median, print_row};

const OPS: usize = 200;
const ROUNDS: usize = 151;
const WARMUP: usize = 5;
const SIZE: usize = 64;
const SLOTS: usize = 64;

fn env_defaults() {
    for (k, v) in [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")] {
        if std::env::var_os(k).is_none() {
            std::env::set_var(k, v);
        }
    }
}

/// The platform the dispatch rows measure: PoCL where it is present (the
/// rows stay comparable whichever other ICDs are registered, and in which
/// order the loader lists them), else the first with devices.
const DISPATCH_PLATFORM: &str = "Portable Computing Language";

/// The first device of the dispatch platform (see [`DISPATCH_PLATFORM`]).
fn first_device() -> Option<opencl3::types::cl_device_id> {
    let platforms = opencl3::platform::get_platforms().ok()?;
    let first = |p: &opencl3::platform::Platform| p.get_devices(CL_DEVICE_TYPE_ALL).ok()?.first().copied();
    platforms
        .iter()
        .filter(|p| p.name().is_ok_and(|n| n.contains(DISPATCH_PLATFORM)))
        .find_map(first)
        .or_else(|| platforms.iter().find_map(first))
}

type BoxErr = Box<dyn std::error::Error>;

fn main() -> Result<(), BoxErr> {
    env_defaults();
    // `cargo bench --bench opencl -- <substring>` runs only the rows whose names contain it.
    let filter = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .unwrap_or_default();
    let wanted = |rows: &[&str]| rows.iter().any(|r| r.contains(filter.as_str()));
    if wanted(&["opencl.dispatch_over_direct", "opencl.adapter_over_direct"]) {
        dispatch()?;
    }
    if wanted(&["opencl.migratable_over_direct", "opencl.staged_over_naive"]) {
        transfers()?;
    }
    Ok(())
}

fn dispatch() -> Result<(), BoxErr> {
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
    let dev = rt
        .platforms()
        .into_iter()
        .filter(|&p| rt.platform_info(p).is_ok_and(|i| i.name.contains(DISPATCH_PLATFORM)))
        .find_map(|p| rt.devices(p).ok()?.first().copied())
        .unwrap_or(rt.all_devices()[0]);
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
    let platforms = a.platforms()?;
    let is_dispatch = |p: &&ur_opencl::Platform| a.platform_info(p).is_ok_and(|i| i.name.contains(DISPATCH_PLATFORM));
    let sdev = platforms
        .iter()
        .filter(is_dispatch)
        .chain(platforms.iter())
        .find_map(|p| a.devices(p).ok().filter(|d| !d.is_empty()))
        .map(|mut d| d.remove(0))
        .ok_or("no device through the adapter")?;
    let sctx = a.create_context(&[&sdev])?;
    let sq = a.create_queue(&sctx, &sdev, &QueueProps::default())?;
    // SAFETY: create_buffer's contract: a non-zero size far below any
    // device's largest allocation, plain read-write flags and no host memory.
    let sbuf = unsafe { a.create_buffer(&sctx, &BufferDesc::new(SIZE * SLOTS).on(&sdev), None)? };
    let static_batch = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        let mut events = Vec::with_capacity(OPS);
        for i in 0..OPS {
            let off = (i % SLOTS) * SIZE;
            // SAFETY: `src` is only read and outlives the wait below.
            let p = unsafe { HostPtr::new(src[off..].as_ptr().cast_mut(), SIZE) };
            // SAFETY: the command contract: `[off, off + SIZE)` lies inside the
            // `SIZE * SLOTS`-byte buffer (off < SIZE * SLOTS, a multiple of
            // SIZE), which was placed for the queue's device in the queue's
            // context; `p` carries the HostPtr promise; no wait list.
            events.push(unsafe { a.enqueue_write(&sq, &sbuf, off, p, &[])? });
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
    print_row("opencl.dispatch_over_direct", r, "ns", "opencl.direct", d);
    print_row("opencl.adapter_over_direct", s, "ns", "opencl.direct", d);
    Ok(())
}

const XFER: usize = 256 << 20;
const XFER_ROUNDS: usize = 9;

/// A transfer row from median milliseconds per `XFER` bytes, reported as
/// GiB/s so that the ratio reads as a speed-up (higher is better).
fn row(name: &str, ms: f64, base_name: &str, base_ms: f64) {
    let gib_s = |ms: f64| XFER as f64 / (1u64 << 30) as f64 / (ms / 1e3);
    print_row(name, gib_s(ms), "GiB/s", base_name, gib_s(base_ms));
}

/// PoCL's two devices and another platform's first device, by `opencl3`.
fn cl_devices() -> Option<(
    opencl3::types::cl_device_id,
    opencl3::types::cl_device_id,
    opencl3::types::cl_device_id,
)> {
    let lists: Vec<Vec<opencl3::types::cl_device_id>> = opencl3::platform::get_platforms()
        .ok()?
        .iter()
        .filter_map(|p| p.get_devices(CL_DEVICE_TYPE_ALL).ok().filter(|d| !d.is_empty()))
        .collect();
    let pocl = lists.iter().position(|d| d.len() >= 2)?;
    let other = lists.iter().enumerate().find(|(i, _)| *i != pocl)?.1[0];
    Some((lists[pocl][0], lists[pocl][1], other))
}

fn queue_on(ctx: &Context, device: opencl3::types::cl_device_id) -> Result<CommandQueue, BoxErr> {
    let props: [cl_queue_properties; 3] = [CL_QUEUE_PROPERTIES as cl_queue_properties, 0, 0];
    // SAFETY: the device is the context's; the property list is zero-terminated.
    let raw =
        unsafe { opencl3::command_queue::create_command_queue_with_properties(ctx.get(), device, props.as_ptr()) }
            .map_err(opencl3::error_codes::ClError)?;
    Ok(CommandQueue::new(raw, 3))
}

fn cl_buffer(ctx: &Context) -> Result<Buffer<u8>, BoxErr> {
    // SAFETY: a plain read-write buffer without host memory.
    Ok(unsafe { Buffer::<u8>::create(ctx, CL_MEM_READ_WRITE, XFER, ptr::null_mut())? })
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn transfers() -> Result<(), BoxErr> {
    use std::sync::Arc;
    use ur_api::{DeviceId, Location};
    use ur_memory_manager::{Access, Config, MemoryManager, Place};

    let Some((c0, c1, cr)) = cl_devices() else {
        eprintln!("opencl transfer rows skipped: need a platform with two devices (PoCL) and a second platform");
        return Ok(());
    };
    // Direct paths.
    let pctx = Context::from_devices(&[c0, c1], &[], None, ptr::null_mut())?;
    let rctx = Context::from_devices(&[cr], &[], None, ptr::null_mut())?;
    let (q0, q1, qr) = (queue_on(&pctx, c0)?, queue_on(&pctx, c1)?, queue_on(&rctx, cr)?);
    let (mut a, mut b, mut r) = (cl_buffer(&pctx)?, cl_buffer(&pctx)?, cl_buffer(&rctx)?);
    let data = vec![0x3Cu8; XFER];
    let mut host = vec![0u8; XFER];
    // SAFETY: blocking writes of `data` into buffers of XFER bytes.
    unsafe {
        q0.enqueue_write_buffer(&mut a, opencl3::types::CL_BLOCKING, 0, &data, &[])?;
        qr.enqueue_write_buffer(&mut r, opencl3::types::CL_BLOCKING, 0, &data, &[])?;
    }
    let mut direct_copy = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        // SAFETY: two live buffers of XFER bytes of the queue's context.
        let e = unsafe { q1.enqueue_copy_buffer(&a, &mut b, 0, 0, XFER, &[])? };
        e.wait()?;
        Ok(ms(t))
    };
    let mut naive_staged = || -> Result<f64, BoxErr> {
        let t = Instant::now();
        // SAFETY: blocking read into / write from `host`, XFER bytes.
        unsafe {
            q0.enqueue_read_buffer(&a, opencl3::types::CL_BLOCKING, 0, &mut host, &[])?;
            qr.enqueue_write_buffer(&mut r, opencl3::types::CL_BLOCKING, 0, &host, &[])?;
        }
        Ok(ms(t))
    };

    // Through the memory manager.
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new())?;
    let lists: Vec<Vec<DeviceId>> = rt
        .platforms()
        .into_iter()
        .map(|p| rt.devices(p))
        .collect::<Result<_, _>>()?;
    let pocl = lists
        .iter()
        .find(|d| d.len() >= 2)
        .ok_or("no two-device platform")?
        .clone();
    let other = lists
        .iter()
        .find(|d| !d.contains(&pocl[0]))
        .ok_or("no second platform")?[0];
    let cp = rt.create_context(&[pocl[0], pocl[1]])?;
    let cr2 = rt.create_context(&[other])?;
    let (l0, l1, l2) = (
        Location::new(cp, pocl[0]),
        Location::new(cp, pocl[1]),
        Location::new(cr2, other),
    );
    let config = Config {
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(Arc::new(rt), &[l0, l1, l2], config)?;
    let buf = mm.create_buffer(XFER)?;
    mm.write(buf, 0, &data)?;
    drop(mm.acquire(buf, Place::Device(l0), Access::Read, 0..XFER)?);
    // What each timed transfer does (device 0 holding the only current copy).
    drop(mm.acquire(buf, Place::Device(l0), Access::Write, 0..XFER)?);
    for to in [l1, l2] {
        eprint!("{}", mm.plan(buf, Place::Device(to), Access::Read, 0..XFER)?.explain());
    }
    let via_mm = |to: Location| -> Result<f64, BoxErr> {
        // Make device 0 the only current copy, then time bringing it to `to`.
        drop(mm.acquire(buf, Place::Device(l0), Access::Write, 0..XFER)?);
        let t = Instant::now();
        drop(mm.acquire(buf, Place::Device(to), Access::Read, 0..XFER)?);
        Ok(ms(t))
    };

    let (mut mig, mut dir, mut stg, mut nai) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..XFER_ROUNDS + 1 {
        let (m, d, s, n) = if round % 2 == 0 {
            (via_mm(l1)?, direct_copy()?, via_mm(l2)?, naive_staged()?)
        } else {
            let d = direct_copy()?;
            let m = via_mm(l1)?;
            let n = naive_staged()?;
            (m, d, via_mm(l2)?, n)
        };
        if round > 0 {
            mig.push(m);
            dir.push(d);
            stg.push(s);
            nai.push(n);
        }
    }
    row(
        "opencl.migratable_over_direct",
        median(mig),
        "opencl.direct_copy",
        median(dir),
    );
    row(
        "opencl.staged_over_naive",
        median(stg),
        "opencl.naive_host_roundtrip",
        median(nai),
    );
    Ok(())
}
