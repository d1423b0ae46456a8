//! CUDA bandwidth and dispatch cost, side by side in one run.
//!
//! - 256 MiB host-to-device and device-to-host through the dyn layer, from
//!   pageable memory (a `Vec`) and from pinned memory (host USM);
//! - the same through the memory manager's host-staged route (a native CPU
//!   location to the CUDA device: the connection is `None`, so the manager
//!   copies chunk by chunk through its pinned staging ring);
//! - the cost of a small enqueue (64-byte write) through the dyn layer over
//!   a direct cudarc call, blocking and non-blocking.
//!
//! Variants are interleaved per round; each row is the median of the rounds.
//! Where no CUDA device exists the bench prints why and exits 0.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{result, CudaContext};
use ur_api::*;
use ur_bench_row::{median, print_row};
use ur_cuda::CudaAdapter;
use ur_memory_manager::{Access, Config, MemoryManager, Place};

const SIZE: usize = 256 << 20;
const ROUNDS: usize = 7;
const SMALL: usize = 64;
const SMALL_ITERS: usize = 2000;
const SMALL_ROUNDS: usize = 9;

fn gib_s(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / (1u64 << 30) as f64
}

fn time(f: impl FnOnce() -> Result<()>) -> f64 {
    let t = Instant::now();
    f().expect("benchmark step");
    t.elapsed().as_secs_f64()
}

fn main() {
    if let Some(why) = CudaAdapter::unavailable_reason() {
        println!("SKIP cuda bench: {why}");
        return;
    }
    let mut rt = Runtime::new();
    rt.add(CudaAdapter::new()).expect("cuda adapter");
    rt.add(ur_native::NativeAdapter::new()).expect("native adapter");
    let rt = Arc::new(rt);
    let devices = rt.all_devices();
    let Some(&dev) = devices.iter().find(|&&d| rt.backend_of(d).unwrap() == Backend::Cuda) else {
        println!("SKIP cuda bench: no CUDA device");
        return;
    };
    let cpu = *devices
        .iter()
        .find(|&&d| rt.backend_of(d).unwrap() == Backend::Native)
        .expect("native device");
    let info = rt.device_info(dev).unwrap();
    println!(
        "device: {} ({}), driver {}",
        info.name, info.backend_version, info.driver_version
    );

    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None).unwrap();
    let mut pageable = vec![1u8; SIZE];
    let pinned = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Host, SIZE)).unwrap();
    // SAFETY: host USM of SIZE bytes, alive until freed at the end.
    let pinned_ptr = unsafe { HostPtr::new(pinned.0 as *mut u8, SIZE) };
    // SAFETY: as above; no command runs while it is filled.
    unsafe { std::ptr::write_bytes(pinned_ptr.as_ptr(), 2, SIZE) };

    // The manager over a native CPU location and the CUDA device.
    let cpu_ctx = rt.create_context(&[cpu]).unwrap();
    let (cpu_loc, gpu_loc) = (Location::new(cpu_ctx, cpu), Location::new(ctx, dev));
    let mm = MemoryManager::with_config(rt.clone(), &[cpu_loc, gpu_loc], Config::default()).unwrap();
    let conn = rt.memory_connection(cpu_loc, gpu_loc).unwrap();
    let lb = mm.create_buffer(SIZE).unwrap();
    let (cpu_p, gpu_p) = (Place::Device(cpu_loc), Place::Device(gpu_loc));
    let staged_h2d = || -> Result<()> {
        drop(
            mm.acquire(lb, cpu_p, Access::DiscardWrite, 0..SIZE)
                .map_err(|e| Error::invalid(e.to_string()))?,
        );
        drop(
            mm.acquire(lb, gpu_p, Access::Read, 0..SIZE)
                .map_err(|e| Error::invalid(e.to_string()))?,
        );
        Ok(())
    };
    let staged_d2h = || -> Result<()> {
        drop(
            mm.acquire(lb, gpu_p, Access::DiscardWrite, 0..SIZE)
                .map_err(|e| Error::invalid(e.to_string()))?,
        );
        drop(
            mm.acquire(lb, cpu_p, Access::Read, 0..SIZE)
                .map_err(|e| Error::invalid(e.to_string()))?,
        );
        Ok(())
    };
    println!(
        "manager route native -> cuda (connection {conn}):\n{}",
        mm.plan(lb, gpu_p, Access::Read, 0..SIZE)
            .map(|p| p.to_string())
            .unwrap_or_default()
    );

    let write_pinned = || rt.complete(rt.enqueue_write(q, buf, 0, pinned_ptr, &[])?);
    let read_pinned = || rt.complete(rt.enqueue_read(q, buf, 0, pinned_ptr, &[])?);
    // Warm up every path once (first touch of pages, staging pool, route probes).
    rt.write(q, buf, 0, &pageable).unwrap();
    rt.read(q, buf, 0, &mut pageable).unwrap();
    write_pinned().unwrap();
    read_pinned().unwrap();
    staged_h2d().unwrap();
    staged_d2h().unwrap();
    // The staged timings include the DiscardWrite acquire (bookkeeping only).
    let (mut h2d_pg, mut h2d_pin, mut d2h_pg, mut d2h_pin, mut h2d_mm, mut d2h_mm) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        h2d_pg.push(time(|| rt.write(q, buf, 0, &pageable)));
        h2d_pin.push(time(write_pinned));
        h2d_mm.push(time(staged_h2d));
        d2h_pg.push(time(|| rt.read(q, buf, 0, &mut pageable)));
        d2h_pin.push(time(read_pinned));
        d2h_mm.push(time(staged_d2h));
    }
    let g = |v: Vec<f64>| gib_s(SIZE, median(v));
    let (h2d_pg, h2d_pin, d2h_pg, d2h_pin, h2d_mm, d2h_mm) =
        (g(h2d_pg), g(h2d_pin), g(d2h_pg), g(d2h_pin), g(h2d_mm), g(d2h_mm));

    // Dispatch: a 64-byte write through the dyn layer vs a direct cudarc call.
    let small_buf = rt.create_buffer(ctx, &BufferDesc::new(SMALL).on(dev), None).unwrap();
    let src = [7u8; SMALL];
    let cctx = CudaContext::new(0).expect("cudarc context");
    let stream = cctx.new_stream().expect("cudarc stream");
    let raw = stream.cu_stream();
    // SAFETY: the primary context is current (bound by CudaContext::new).
    let dptr = unsafe { result::malloc_sync(SMALL) }.expect("cudarc alloc");
    let (mut ours_sync, mut direct_sync, mut ours_async, mut direct_async) = (vec![], vec![], vec![], vec![]);
    for _ in 0..SMALL_ROUNDS {
        ours_sync.push(time(|| {
            for _ in 0..SMALL_ITERS {
                rt.write(q, small_buf, 0, &src)?;
            }
            Ok(())
        }));
        direct_sync.push(time(|| {
            cctx.bind_to_thread().unwrap();
            for _ in 0..SMALL_ITERS {
                // SAFETY: `dptr` holds SMALL bytes; `src` outlives the sync.
                unsafe {
                    result::memcpy_htod_async(dptr, &src, raw).unwrap();
                    result::stream::synchronize(raw).unwrap();
                }
            }
            Ok(())
        }));
        // SAFETY: `src` outlives the finish below.
        let src_ptr = unsafe { HostPtr::new(src.as_ptr().cast_mut(), SMALL) };
        ours_async.push(time(|| {
            for _ in 0..SMALL_ITERS {
                let ev = rt.enqueue_write(q, small_buf, 0, src_ptr, &[])?;
                rt.release_event(ev)?;
            }
            rt.finish(q)
        }));
        direct_async.push(time(|| {
            cctx.bind_to_thread().unwrap();
            for _ in 0..SMALL_ITERS {
                // SAFETY: as above.
                unsafe { result::memcpy_htod_async(dptr, &src, raw).unwrap() };
            }
            // SAFETY: the stream is alive.
            unsafe { result::stream::synchronize(raw).unwrap() };
            Ok(())
        }));
    }
    let us = |v: Vec<f64>| median(v) / SMALL_ITERS as f64 * 1e6;
    let (ours_sync, direct_sync, ours_async, direct_async) =
        (us(ours_sync), us(direct_sync), us(ours_async), us(direct_async));
    // SAFETY: allocated above, no command uses it any more.
    unsafe { result::free_sync(dptr) }.ok();
    rt.usm_free(ctx, pinned).unwrap();

    println!();
    println!("| what (256 MiB)                     | GiB/s   |");
    println!("|------------------------------------|---------|");
    println!("| host-to-device, pageable           | {h2d_pg:7.2} |");
    println!("| host-to-device, pinned             | {h2d_pin:7.2} |");
    println!("| host-to-device, manager staged     | {h2d_mm:7.2} |");
    println!("| device-to-host, pageable           | {d2h_pg:7.2} |");
    println!("| device-to-host, pinned             | {d2h_pin:7.2} |");
    println!("| device-to-host, manager staged     | {d2h_mm:7.2} |");
    println!();
    println!("| 64-byte write                      | µs/op   |");
    println!("|------------------------------------|---------|");
    println!("| dyn layer, blocking (rt.write)     | {ours_sync:7.2} |");
    println!("| cudarc direct, blocking            | {direct_sync:7.2} |");
    println!("| dyn layer, enqueue + release event | {ours_async:7.2} |");
    println!("| cudarc direct, enqueue             | {direct_async:7.2} |");
    println!();
    print_row(
        "cuda.h2d_pinned_over_pageable",
        h2d_pin,
        "GiB/s",
        "cuda.h2d_pageable",
        h2d_pg,
    );
    print_row(
        "cuda.d2h_pinned_over_pageable",
        d2h_pin,
        "GiB/s",
        "cuda.d2h_pageable",
        d2h_pg,
    );
    print_row(
        "cuda.h2d_manager_staged_over_pinned",
        h2d_mm,
        "GiB/s",
        "cuda.h2d_pinned",
        h2d_pin,
    );
    print_row(
        "cuda.d2h_manager_staged_over_pinned",
        d2h_mm,
        "GiB/s",
        "cuda.d2h_pinned",
        d2h_pin,
    );
    print_row(
        "cuda.dispatch_over_direct",
        ours_sync,
        "us",
        "cudarc.memcpy_htod_sync",
        direct_sync,
    );
    print_row(
        "cuda.enqueue_over_direct",
        ours_async,
        "us",
        "cudarc.memcpy_htod_async",
        direct_async,
    );
}
