//! Running plans: allocation (with eviction on out-of-memory), zero fill,
//! host writes and reads, adapter copies and host-staged copies, blocking
//! or chained on events ([`Exec`]); a creation plan's initial data from the
//! caller's slice (`caller_io`).

pub(crate) mod caller_io;
pub(crate) mod evict;
mod measure;

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use ur_api::{BufferDesc, Error, EventId};

use crate::error::{MmError, Result};
use crate::events::{enqueue_after, OwnedEvent};
use crate::mapped::mapped_copy;
use crate::plan::{Access, InitPath, Plan, Route, Step};
use crate::residency::{Mem, Residency, Slot};
use crate::route::{self, HOST};
use crate::staging::{pipelined_copy, Side};
use crate::state::ManagerState;
use evict::Evicted;
pub(crate) use measure::{calibrate, measure_for};

/// How the steps of a plan run.
pub(crate) struct Exec<'a> {
    /// Events the caller's earlier work produced: every step waits for them.
    pub wait: &'a [EventId],
    /// Wait for each operation before the next step (errors are then
    /// reported by the step that caused them).
    pub blocking: bool,
    /// Asynchronous mode: the events of the operations enqueued.
    pub events: Vec<Arc<OwnedEvent>>,
    /// The caller's initial data, which a creation plan's [`Step::Init`]
    /// writes (empty otherwise).
    pub init: &'a [u8],
}

impl Exec<'static> {
    /// Every step completes before the next one starts.
    pub(crate) fn blocking() -> Self {
        Exec::creating(&[])
    }
}

impl<'a> Exec<'a> {
    /// Steps enqueued after `wait`, chained on events, not waited for.
    pub(crate) fn chained(wait: &'a [EventId]) -> Self {
        Exec {
            wait,
            blocking: false,
            events: Vec::new(),
            init: &[],
        }
    }

    /// Blocking, with the caller's initial data for a creation plan.
    pub(crate) fn creating(init: &'a [u8]) -> Self {
        Exec {
            wait: &[],
            blocking: true,
            events: Vec::new(),
            init,
        }
    }
}

/// Runs a creation plan ([`crate::plan::PlanKind::Create`]) on the new,
/// locked buffer: its allocations, then its initial data from `init`. The
/// first failure is returned; the caller frees what was allocated.
pub(crate) fn run_create(inner: &ManagerState, res: &mut Residency, plan: &Plan, init: &[u8]) -> Result<()> {
    let mut exec = Exec::creating(init);
    for step in &plan.steps {
        run_step(inner, res, step, &mut exec)?;
    }
    Ok(())
}

/// Plans and runs one access on a locked buffer; returns the target place.
pub(crate) fn run_access(
    inner: &ManagerState,
    res: &mut Residency,
    access: Access,
    place: usize,
    range: Range<usize>,
    exec: &mut Exec<'_>,
) -> Result<usize> {
    let failed = res.confirm();
    inner.counters.failed_copies.fetch_add(failed, Relaxed);
    for s in res.slots.iter_mut().flatten() {
        s.reap();
    }
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
        if access.reads_old_data() {
            measure_for(inner, res, place, &lost);
        }
        let view = res.masked_view(&lost);
        let plan = route::plan_access(inner, &view, &res.name, res.size, access, place, range.clone());
        tracing::trace!(plan = %plan.explain(), "running");
        let generation = res.evictions;
        let mut failed = None;
        let mut stale_plan = false;
        for step in &plan.steps {
            if let Err(e) = run_step(inner, res, step, exec) {
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
                    Step::Allocate { place, .. } | Step::Zero { place, .. } | Step::Init { place, .. } => {
                        vec![*place]
                    }
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
        inner.touch(res, plan.target);
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
pub(crate) fn run_step(inner: &ManagerState, res: &mut Residency, step: &Step, exec: &mut Exec<'_>) -> Result<()> {
    match step {
        Step::Allocate { place, .. } => allocate(inner, res, *place),
        Step::Zero { place, range } => {
            zero(inner, res, *place, range.clone(), exec)?;
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
            copy(inner, res, *from, *to, range.clone(), *route, exec).map_err(|source| {
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
            inner.touch(res, *from);
            Ok(())
        }
        Step::Init { place, range, path } => {
            let data = exec
                .init
                .get(range.clone())
                .expect("the plan's range lies in the initial data");
            write_init(inner, res, *place, range.start, data, *path)?;
            res.mark_written(*place, range.clone());
            inner.touch(res, *place);
            Ok(())
        }
    }
}

/// Writes the caller's initial data at `offset` of the allocation at
/// `place`: a memcpy into the host store, or one transfer into a device
/// allocation through its context's decision tree (a failure is
/// [`MmError::CopyFailed`], counted in `failed_copies`). An allocation of
/// the plan that making room for a later one evicted is made again.
fn write_init(
    inner: &ManagerState,
    res: &mut Residency,
    place: usize,
    offset: usize,
    data: &[u8],
    path: InitPath,
) -> Result<()> {
    if res.slots[place].is_none() {
        allocate(inner, res, place)?;
    }
    let slot = res.slots[place].as_mut().expect("allocated above");
    match &mut slot.mem {
        Mem::Host(m) => {
            m.as_mut_slice()[offset..offset + data.len()].copy_from_slice(data);
            Ok(())
        }
        Mem::Device(b) => {
            let path = match path {
                InitPath::Transfer(p) => Some(p),
                InitPath::HostCopy => None,
            };
            let b = *b;
            caller_io::transfer(inner, &res.name, place, b, offset, caller_io::Dir::Write(data, path))
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
pub(crate) fn allocate(inner: &ManagerState, res: &mut Residency, place: usize) -> Result<()> {
    let now = inner.tick();
    if place == HOST {
        let mem = inner
            .slabs
            .store(&inner.rt, &inner.host_store_preference(), res.size)
            .map_err(|e| MmError::OutOfMemory {
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
                inner.track(res, place);
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

/// The caller's wait list plus the work pending on the allocations at `places`.
fn wait_list(res: &Residency, places: &[usize], exec: &Exec<'_>) -> Vec<EventId> {
    let mut w: Vec<EventId> = exec.wait.to_vec();
    for &p in places {
        if let Some(s) = &res.slots[p] {
            w.extend(s.busy_ids());
        }
    }
    w
}

/// After enqueueing `event` that uses the allocations at `uses`: blocking,
/// wait for it; else record it on those allocations (and, for a copy into
/// `dest`, as unconfirmed) and flush `queue`.
fn settle(
    inner: &ManagerState,
    res: &mut Residency,
    event: EventId,
    queue: ur_api::QueueId,
    uses: &[usize],
    dest: Option<(usize, Range<usize>)>,
    exec: &mut Exec<'_>,
) -> ur_api::Result<()> {
    if exec.blocking {
        return inner.rt.complete(event);
    }
    let e = OwnedEvent::new(&inner.rt, event);
    for &p in uses {
        if let Some(s) = res.slots[p].as_mut() {
            s.busy.push(e.clone());
        }
    }
    if let Some((p, r)) = dest {
        res.unconfirmed.push((e.clone(), p, r));
    }
    exec.events.push(e);
    inner.rt.flush(queue)
}

fn zero(
    inner: &ManagerState,
    res: &mut Residency,
    place: usize,
    range: Range<usize>,
    exec: &mut Exec<'_>,
) -> Result<()> {
    let wait = wait_list(res, &[place], exec);
    match &mut res.slots[place].as_mut().expect("allocated").mem {
        Mem::Host(m) => {
            inner.rt.wait(&wait)?;
            m.as_mut_slice()[range].fill(0);
        }
        Mem::Device(b) => {
            let (q, b) = (inner.queue(place), *b);
            let ev = enqueue_after(&inner.rt, q, &wait, |w| {
                inner.rt.enqueue_fill(q, b, range.start, range.len(), &[0u8], w)
            })?;
            settle(inner, res, ev, q, &[place], None, exec)?;
        }
    }
    Ok(())
}

/// Moves `range` from the allocation at `from` to the one at `to`, after
/// the caller's wait list and the work pending on both allocations.
/// Adapter routes are enqueued (chained on events unless `exec` blocks);
/// host-staged routes run on the host, which first waits for all of that.
pub(crate) fn copy(
    inner: &ManagerState,
    res: &mut Residency,
    from: usize,
    to: usize,
    range: Range<usize>,
    route: Route,
    exec: &mut Exec<'_>,
) -> ur_api::Result<()> {
    let rt = &inner.rt;
    let dev = |res: &Residency, p: usize| {
        res.slots[p]
            .as_ref()
            .and_then(Slot::device_buffer)
            .expect("device allocation")
    };
    let wait = wait_list(res, &[from, to], exec);
    let dest = Some((to, range.clone()));
    match route {
        Route::HostWrite => {
            let (q, dst) = (inner.queue(to), dev(res, to));
            let Some(Mem::Host(m)) = res.slots[HOST].as_mut().map(|s| &mut s.mem) else {
                unreachable!("host source without a host store")
            };
            let src = m.host_ptr(range.clone());
            let ev = enqueue_after(rt, q, &wait, |w| rt.enqueue_write(q, dst, range.start, src, w))?;
            settle(inner, res, ev, q, &[HOST, to], dest, exec)
        }
        Route::HostRead => {
            let (q, src) = (inner.queue(from), dev(res, from));
            let Some(Mem::Host(m)) = res.slots[HOST].as_mut().map(|s| &mut s.mem) else {
                unreachable!("host destination without a host store")
            };
            let dst = m.host_ptr(range.clone());
            let ev = enqueue_after(rt, q, &wait, |w| rt.enqueue_read(q, src, range.start, dst, w))?;
            settle(inner, res, ev, q, &[from, HOST], dest, exec)
        }
        Route::AdapterCopy(_) => {
            let (q, s, d) = (inner.queue(to), dev(res, from), dev(res, to));
            let ev = enqueue_after(rt, q, &wait, |w| {
                rt.enqueue_copy(q, s, range.start, d, range.start, range.len(), w)
            })?;
            settle(inner, res, ev, q, &[from, to], dest, exec)
        }
        Route::Staged { chunk, depth } => {
            // The host does this work: it waits for what came before.
            rt.wait(&wait)?;
            let len = range.len();
            let chunk = chunk.min(len.next_power_of_two().max(64));
            let depth = depth.min(len.div_ceil(chunk)).max(1);
            let ring = inner
                .staging
                .take(rt, &inner.staging_preference(from, to), depth, chunk)?;
            let src = Side {
                queue: inner.queue(from),
                buffer: dev(res, from),
            };
            let dst = Side {
                queue: inner.queue(to),
                buffer: dev(res, to),
            };
            let r = pipelined_copy(rt, src, dst, range, &ring);
            inner.staging.give_back(ring);
            r
        }
        Route::Mapped { chunk, depth, end } => {
            rt.wait(&wait)?;
            let len = range.len();
            let chunk = chunk.min(len.next_power_of_two().max(64));
            let depth = depth.min(len.div_ceil(chunk)).max(1);
            let src = Side {
                queue: inner.queue(from),
                buffer: dev(res, from),
            };
            let dst = Side {
                queue: inner.queue(to),
                buffer: dev(res, to),
            };
            mapped_copy(rt, src, dst, range, chunk, depth, end)
        }
    }
}
