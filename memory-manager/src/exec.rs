//! Running plans: allocation (with eviction on out-of-memory), zero fill,
//! host writes and reads, adapter copies and host-staged copies.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use ur_api::{BufferDesc, Error, Runtime};

use crate::error::{MmError, Result};
use crate::evict::{self, Evicted};
use crate::manager::Inner;
use crate::mapped::mapped_copy;
use crate::plan::{Access, Route, Step};
use crate::residency::{Mem, Residency, Slot};
use crate::route::{self, LinkCost, HOST};
use crate::staging::{pipelined_copy, HostMem, Side};

/// Plans and runs one access on a locked buffer; returns the target place.
pub(crate) fn run_access(
    inner: &Inner,
    res: &mut Residency,
    access: Access,
    place: usize,
    range: Range<usize>,
) -> Result<usize> {
    loop {
        if inner.is_lost(place) {
            return Err(Error::DeviceLost.into());
        }
        let lost = inner.lost_flags();
        if access.reads_old_data() {
            let stranded = res.stranded(&lost, range.clone());
            if !stranded.is_empty() {
                return Err(MmError::DataLost {
                    buffer: res.name.clone(),
                    ranges: stranded.ranges().collect(),
                });
            }
        }
        let view = res.masked_view(&lost);
        let plan = route::plan_access(inner, &view, &res.name, res.size, access, place, range.clone());
        tracing::trace!(plan = %plan.explain(), "running");
        let now = inner.tick();
        let generation = res.evictions;
        let mut failed = None;
        let mut stale_plan = false;
        for step in &plan.steps {
            if let Err(e) = run_step(inner, res, step) {
                failed = Some((e, step));
                break;
            }
            if res.evictions != generation {
                // Making room evicted one of this buffer's own allocations
                // (its bytes were written back first): plan again.
                stale_plan = true;
                break;
            }
        }
        match failed {
            None if stale_plan => continue,
            None => {}
            Some((e, step)) if device_lost(&e) => {
                // Learn which place is gone, then plan again around it.
                let places = match step {
                    Step::Allocate { place, .. } | Step::Zero { place, .. } => vec![*place],
                    Step::Copy { from, to, .. } => vec![*from, *to],
                };
                let learned: Vec<bool> = places.into_iter().map(|p| inner.check_lost(p)).collect();
                if !learned.contains(&true) {
                    return Err(e);
                }
                continue;
            }
            Some((e, _)) => return Err(e),
        }
        let slot = res.slots[plan.target].as_mut().expect("allocated by the plan");
        slot.last_use = now;
        if access.writes() {
            res.mark_written(plan.target, range);
        } else {
            res.mark_valid(plan.target, range);
        }
        return Ok(plan.target);
    }
}

/// True when the failure's cause is a lost device.
fn device_lost(e: &MmError) -> bool {
    match e {
        MmError::CopyFailed { source, .. } => **source == Error::DeviceLost,
        MmError::Runtime(inner) => *inner == Error::DeviceLost,
        _ => false,
    }
}

/// Runs one step; on success the destination range is marked valid.
pub(crate) fn run_step(inner: &Inner, res: &mut Residency, step: &Step) -> Result<()> {
    match step {
        Step::Allocate { place, .. } => allocate(inner, res, *place),
        Step::Zero { place, range } => {
            zero(inner, res, *place, range.clone())?;
            res.mark_valid(*place, range.clone());
            Ok(())
        }
        Step::Copy { from, to, range, route } => {
            let c = &inner.counters;
            c.copies.fetch_add(1, Relaxed);
            if matches!(route, Route::Staged { .. } | Route::Mapped { .. }) {
                c.staged_copies.fetch_add(1, Relaxed);
            }
            if matches!(route, Route::Mapped { .. }) {
                c.mapped_copies.fetch_add(1, Relaxed);
            }
            copy(inner, res, *from, *to, range.clone(), *route).map_err(|source| {
                c.failed_copies.fetch_add(1, Relaxed);
                MmError::CopyFailed {
                    buffer: res.name.clone(),
                    from: inner.places[*from].name.clone(),
                    to: inner.places[*to].name.clone(),
                    range: range.clone(),
                    source: Box::new(source),
                }
            })?;
            c.bytes_moved.fetch_add(range.len() as u64, Relaxed);
            res.mark_valid(*to, range.clone());
            if let Some(s) = res.slots[*from].as_mut() {
                s.last_use = inner.tick();
            }
            Ok(())
        }
    }
}

fn is_oom(e: &Error) -> bool {
    matches!(e, Error::OutOfDeviceMemory | Error::OutOfHostMemory)
}

/// Creates the buffer's allocation at `place`. Out of memory at a device:
/// evict least recently used allocations there whose data is valid
/// elsewhere (writing sole copies back to the host first) and retry. When
/// what could go is in use by other threads, wait a little (up to 100 ms in
/// all); with nothing left to evict, retry once, then report.
pub(crate) fn allocate(inner: &Inner, res: &mut Residency, place: usize) -> Result<()> {
    let now = inner.tick();
    if place == HOST {
        let mem =
            HostMem::pinned(&inner.rt, &inner.host_store_preference(), res.size).map_err(|e| MmError::OutOfMemory {
                place: "host".into(),
                buffer: res.name.clone(),
                size: res.size,
                evicted: 0,
                source: Box::new(e),
            })?;
        if mem.pinned_for().is_some() {
            inner.counters.pinned_host_stores.fetch_add(1, Relaxed);
        }
        res.slots[HOST] = Some(Slot::new(Mem::Host(mem), now));
        return Ok(());
    }
    let loc = inner.places[place].location.expect("device place");
    let desc = BufferDesc::new(res.size).on(loc.device);
    const MAX_WAITS: u32 = 200;
    let mut evicted = 0;
    let mut retried = false;
    let mut waits = 0;
    loop {
        match inner.rt.create_buffer(loc.context, &desc, None) {
            Ok(b) => {
                res.slots[place] = Some(Slot::new(Mem::Device(b), now));
                if evicted > 0 {
                    tracing::debug!(buffer = %res.name, place = %inner.places[place].name, evicted, "allocated after eviction");
                }
                return Ok(());
            }
            Err(e) if is_oom(&e) => match evict::evict_one(inner, res, place) {
                Evicted::One => evicted += 1,
                // Other threads hold what could go: give them a moment.
                Evicted::Busy if waits < MAX_WAITS => {
                    waits += 1;
                    std::thread::sleep(Duration::from_micros(500));
                }
                _ if !retried => retried = true,
                _ => {
                    return Err(MmError::OutOfMemory {
                        place: inner.places[place].name.clone(),
                        buffer: res.name.clone(),
                        size: res.size,
                        evicted,
                        source: Box::new(e),
                    })
                }
            },
            Err(e) => return Err(e.into()),
        }
    }
}

/// Releases every allocation of a buffer.
pub(crate) fn free_all(rt: &Runtime, res: &mut Residency) {
    for slot in res.slots.iter_mut() {
        if let Some(Slot {
            mem: Mem::Device(b), ..
        }) = slot.take()
        {
            if let Err(e) = rt.release_buffer(b) {
                tracing::warn!(error = %e, "releasing an allocation failed");
            }
        }
    }
}

fn zero(inner: &Inner, res: &mut Residency, place: usize, range: Range<usize>) -> Result<()> {
    match &mut res.slots[place].as_mut().expect("allocated").mem {
        Mem::Host(m) => m.as_mut_slice()[range].fill(0),
        Mem::Device(b) => {
            let q = inner.queue(place);
            let ev = inner.rt.enqueue_fill(q, *b, range.start, range.len(), &[0u8], &[])?;
            inner.rt.complete(ev)?;
        }
    }
    Ok(())
}

/// Moves `range` from the allocation at `from` to the one at `to`.
fn copy(
    inner: &Inner,
    res: &mut Residency,
    from: usize,
    to: usize,
    range: Range<usize>,
    route: Route,
) -> ur_api::Result<()> {
    let rt = &inner.rt;
    let dev = |p: usize| {
        res.slots[p]
            .as_ref()
            .and_then(Slot::device_buffer)
            .expect("device allocation")
    };
    match route {
        Route::HostWrite => {
            let dst = dev(to);
            let Some(Mem::Host(m)) = res.slots[HOST].as_mut().map(|s| &mut s.mem) else {
                unreachable!("host source without a host store")
            };
            let ev = rt.enqueue_write(inner.queue(to), dst, range.start, m.host_ptr(range), &[])?;
            rt.complete(ev)
        }
        Route::HostRead => {
            let src = dev(from);
            let Some(Mem::Host(m)) = res.slots[HOST].as_mut().map(|s| &mut s.mem) else {
                unreachable!("host destination without a host store")
            };
            let ev = rt.enqueue_read(inner.queue(from), src, range.start, m.host_ptr(range), &[])?;
            rt.complete(ev)
        }
        Route::AdapterCopy(_) => {
            let ev = rt.enqueue_copy(
                inner.queue(to),
                dev(from),
                range.start,
                dev(to),
                range.start,
                range.len(),
                &[],
            )?;
            rt.complete(ev)
        }
        Route::Staged { chunk, depth } => {
            let len = range.len();
            let chunk = chunk.min(len.next_power_of_two().max(64));
            let depth = depth.min(len.div_ceil(chunk)).max(1);
            let ring = inner
                .staging
                .take(rt, &inner.staging_preference(from, to), depth, chunk)?;
            let src = Side {
                queue: inner.queue(from),
                buffer: dev(from),
            };
            let dst = Side {
                queue: inner.queue(to),
                buffer: dev(to),
            };
            let r = pipelined_copy(rt, src, dst, range, &ring);
            inner.staging.give_back(ring);
            r
        }
        Route::Mapped { chunk, depth, end } => {
            let len = range.len();
            let chunk = chunk.min(len.next_power_of_two().max(64));
            let depth = depth.min(len.div_ceil(chunk)).max(1);
            let src = Side {
                queue: inner.queue(from),
                buffer: dev(from),
            };
            let dst = Side {
                queue: inner.queue(to),
                buffer: dev(to),
            };
            mapped_copy(rt, src, dst, range, chunk, depth, end)
        }
    }
}

/// Measures one route: two transfers of different sizes through temporary
/// allocations give latency and bandwidth.
pub(crate) fn measure(inner: &Inner, from: usize, to: usize, route: Route) -> ur_api::Result<LinkCost> {
    let big = inner.config.probe_bytes.max(64 << 10);
    let small = big / 16;
    let mut res = Residency::new("probe".into(), big, inner.places.len());
    let out = (|| {
        for p in [from, to] {
            if p == HOST {
                res.slots[HOST] = Some(Slot::new(
                    Mem::Host(HostMem::pinned(&inner.rt, &inner.host_store_preference(), big)?),
                    0,
                ));
            } else {
                let loc = inner.places[p].location.expect("device place");
                let b = inner
                    .rt
                    .create_buffer(loc.context, &BufferDesc::new(big).on(loc.device), None)?;
                res.slots[p] = Some(Slot::new(Mem::Device(b), 0));
            }
        }
        // Warm up (first-touch, pool fill), then time each size twice and
        // keep the faster run (less noise from other work on the machine).
        copy(inner, &mut res, from, to, 0..small, route)?;
        let mut time = |n: usize| -> ur_api::Result<f64> {
            let mut best = f64::INFINITY;
            for _ in 0..2 {
                let t = Instant::now();
                copy(inner, &mut res, from, to, 0..n, route)?;
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok(best)
        };
        let t_small = time(small)?;
        let t_big = time(big)?;
        let bytes_per_s = ((big - small) as f64 / (t_big - t_small).max(1e-9)).max(1e6);
        let latency_s = (t_small - small as f64 / bytes_per_s).max(0.0);
        Ok(LinkCost { latency_s, bytes_per_s })
    })();
    free_all(&inner.rt, &mut res);
    if let Ok(c) = &out {
        tracing::debug!(from = %inner.places[from].name, to = %inner.places[to].name, ?c, "measured route");
    }
    out
}
