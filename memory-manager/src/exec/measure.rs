//! Route measurement: only here (before an access runs, and in
//! `calibrate`), never while planning, so that a plan has no side effects.

use std::time::Instant;

use ur_api::BufferDesc;

use super::{copy, Exec};
use crate::plan::Route;
use crate::residency::{Mem, Residency, Slot};
use crate::route::{self, LinkCost, HOST};
use crate::state::ManagerState;

/// Before an access at `place` that reads old data: measures (and caches)
/// every route the plan may weigh that has no cost yet: from each place
/// holding an allocation to `place` and to the places whose allocations
/// `place` could use in place. Does nothing unless `measure_routes` is on.
pub(crate) fn measure_for(inner: &ManagerState, res: &Residency, place: usize, lost: &[bool]) {
    if !inner.config.measure_routes {
        return;
    }
    let held: Vec<usize> = (0..res.slots.len())
        .filter(|&p| res.slots[p].is_some() && !lost[p])
        .collect();
    let mut targets = vec![place];
    for &t in &held {
        if t != place && t != HOST && place != HOST && inner.conn[t][place] == ur_api::MemoryConnection::Unified {
            targets.push(t);
        }
    }
    for &t in &targets {
        for &s in &held {
            if s != t {
                ensure(inner, s, t);
            }
        }
    }
}

/// Fills the cost cache for every ordered pair of places.
pub(crate) fn calibrate(inner: &ManagerState) {
    let n = inner.places.len();
    for a in 0..n {
        for b in 0..n {
            if a != b {
                ensure(inner, a, b);
            }
        }
    }
}

/// The cached cost of `from -> to`, measured now when missing (estimated
/// when measurement is off or fails).
fn ensure(inner: &ManagerState, from: usize, to: usize) -> LinkCost {
    if let Some(c) = inner.costs.lock().get(&(from, to)) {
        return *c;
    }
    let r = route::route_between(inner, from, to);
    let c = if inner.config.measure_routes {
        measure(inner, from, to, r).unwrap_or_else(|e| {
            tracing::debug!(error = %e, from, to, "route measurement failed; using the estimate");
            LinkCost::estimate(r)
        })
    } else {
        LinkCost::estimate(r)
    };
    *inner.costs.lock().entry((from, to)).or_insert(c)
}

/// Measures one route: two transfers of different sizes through temporary
/// allocations give latency and bandwidth.
fn measure(inner: &ManagerState, from: usize, to: usize, route: Route) -> ur_api::Result<LinkCost> {
    let big = inner.config.probe_bytes.max(64 << 10);
    let small = big / 16;
    let mut res = Residency::new(u64::MAX, big, inner.places.len());
    res.name = "probe".into();
    let out = (|| {
        for p in [from, to] {
            if p == HOST {
                let store = inner.slabs.store(&inner.rt, &inner.host_store_preference(), big)?;
                res.slots[HOST] = Some(Slot::new(Mem::Host(store), 0));
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
        copy(inner, &mut res, from, to, 0..small, route, &mut Exec::blocking())?;
        let mut time = |n: usize| -> ur_api::Result<f64> {
            let mut best = f64::INFINITY;
            for _ in 0..2 {
                let t = Instant::now();
                copy(inner, &mut res, from, to, 0..n, route, &mut Exec::blocking())?;
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
    inner.free_all(&mut res);
    if let Ok(c) = &out {
        tracing::debug!(from = %inner.places[from].name, to = %inner.places[to].name, ?c, "measured route");
    }
    out
}
