//! Choosing where an access's bytes come from: target allocation, sources,
//! routes and their cost. Everything here is pure: it reads a residency view
//! and a [`Topology`] and returns a [`Plan`].

use std::ops::Range;

use ur_api::MemoryConnection;

use crate::interval::IntervalSet;
use crate::plan::{Access, InitPath, MapEnd, Plan, PlanKind, Route, Step};

/// Index of the host place.
pub(crate) const HOST: usize = 0;

/// A simple cost model of one route: `latency + bytes / bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkCost {
    /// Fixed cost of one transfer, in seconds.
    pub latency_s: f64,
    /// Sustained bandwidth in bytes per second.
    pub bytes_per_s: f64,
}

impl LinkCost {
    /// Seconds to move `bytes`, optionally without the fixed latency
    /// (when the transfer extends one already paid for).
    pub fn seconds(&self, bytes: usize, with_latency: bool) -> f64 {
        let lat = if with_latency { self.latency_s } else { 0.0 };
        lat + bytes as f64 / self.bytes_per_s.max(1.0)
    }

    /// The estimate used for a route until (unless) it is measured.
    pub fn estimate(route: Route) -> LinkCost {
        let (latency_us, gib_s) = match route {
            Route::AdapterCopy(MemoryConnection::Unified) => (5.0, 16.0),
            Route::AdapterCopy(_) => (10.0, 8.0),
            Route::HostWrite | Route::HostRead => (10.0, 6.0),
            Route::Staged { .. } => (40.0, 3.0),
            // One host copy instead of two.
            Route::Mapped { .. } => (40.0, 6.0),
        };
        LinkCost {
            latency_s: latency_us * 1e-6,
            bytes_per_s: gib_s * (1u64 << 30) as f64,
        }
    }
}

/// What the planner needs to know about the places.
pub(crate) trait Topology {
    /// The connection answer from one device place to another (never called with the host).
    fn connection(&self, from: usize, to: usize) -> MemoryConnection;
    /// The cost of a route between two places.
    fn cost(&self, from: usize, to: usize, route: Route) -> LinkCost;
    /// Staging chunk size and ring depth.
    fn staging(&self) -> (usize, usize);
    /// For a `None` connection between two device places: which end to map
    /// for zero-copy staging, or `None` for the pinned staging ring.
    fn zero_copy(&self, from: usize, to: usize) -> Option<MapEnd>;
    /// Chunk size of zero-copy staging.
    fn mapped_chunk(&self) -> usize;
    /// Place names, by index.
    fn names(&self) -> Vec<String>;
}

/// The route data takes from `from` to `to` (distinct places).
pub(crate) fn route_between(topo: &dyn Topology, from: usize, to: usize) -> Route {
    if from == HOST {
        return Route::HostWrite;
    }
    if to == HOST {
        return Route::HostRead;
    }
    match topo.connection(from, to) {
        MemoryConnection::None => {
            let (chunk, depth) = topo.staging();
            match topo.zero_copy(from, to) {
                Some(end) => Route::Mapped {
                    chunk: topo.mapped_chunk(),
                    depth,
                    end,
                },
                None => Route::Staged { chunk, depth },
            }
        }
        c => Route::AdapterCopy(c),
    }
}

/// Can memory allocated at `from` be used at `to` as it is?
fn unified(topo: &dyn Topology, from: usize, to: usize) -> bool {
    from == to || (from != HOST && to != HOST && topo.connection(from, to) == MemoryConnection::Unified)
}

/// Per place: `None` when the buffer has no allocation there, else its valid bytes.
pub(crate) type View<'a> = [Option<&'a IntervalSet>];

/// The place whose allocation an access at `place` uses: the place's own
/// allocation if it has one; else an existing allocation whose memory is
/// `Unified` with it (the one holding most of `range`, lowest index on ties);
/// else a new allocation at the place.
pub(crate) fn choose_target(topo: &dyn Topology, view: &View<'_>, place: usize, range: Range<usize>) -> usize {
    if view[place].is_some() {
        return place;
    }
    let mut best: Option<(usize, usize)> = None;
    for (i, v) in view.iter().enumerate() {
        let Some(valid) = v else { continue };
        if i == place || !unified(topo, i, place) {
            continue;
        }
        let covered = valid.covered(range.clone());
        if best.is_none_or(|(_, c)| covered > c) {
            best = Some((i, covered));
        }
    }
    best.map(|(i, _)| i).unwrap_or(place)
}

/// Picks, for each piece of `missing`, the source that makes the whole
/// cheapest: a dynamic program over the elementary segments (cut at every
/// boundary of every source's valid ranges) where keeping the previous
/// segment's source costs only `bytes / bandwidth` and switching source pays
/// the route's latency too. Bytes valid nowhere are zero-filled.
fn choose_sources(topo: &dyn Topology, view: &View<'_>, target: usize, missing: &IntervalSet, steps: &mut Vec<Step>) {
    for piece in missing.ranges() {
        let mut cuts = vec![piece.start, piece.end];
        for (i, v) in view.iter().enumerate() {
            if i == target {
                continue;
            }
            if let Some(valid) = v {
                for r in valid.intersect(piece.clone()) {
                    cuts.push(r.start);
                    cuts.push(r.end);
                }
            }
        }
        cuts.sort_unstable();
        cuts.dedup();
        let segs: Vec<Range<usize>> = cuts.windows(2).map(|w| w[0]..w[1]).collect();
        // Candidate sources per segment; usize::MAX stands for "zero fill".
        const ZERO: usize = usize::MAX;
        let cands: Vec<Vec<usize>> = segs
            .iter()
            .map(|seg| {
                let c: Vec<usize> = view
                    .iter()
                    .enumerate()
                    .filter(|(i, v)| *i != target && v.is_some_and(|v| v.contains(seg.clone())))
                    .map(|(i, _)| i)
                    .collect();
                if c.is_empty() {
                    vec![ZERO]
                } else {
                    c
                }
            })
            .collect();
        let cost = |src: usize, bytes: usize, fresh: bool| -> f64 {
            if src == ZERO {
                return if fresh { 1e-6 } else { 0.0 };
            }
            topo.cost(src, target, route_between(topo, src, target))
                .seconds(bytes, fresh)
        };
        // best[k][j]: cheapest way to cover segments 0..=k ending with cands[k][j]; back-pointer.
        let mut best: Vec<Vec<(f64, usize)>> = Vec::with_capacity(segs.len());
        for (k, seg) in segs.iter().enumerate() {
            let row: Vec<(f64, usize)> = cands[k]
                .iter()
                .map(|&s| {
                    if k == 0 {
                        return (cost(s, seg.len(), true), 0);
                    }
                    let mut pick = (f64::INFINITY, 0);
                    for (pj, &p) in cands[k - 1].iter().enumerate() {
                        let c = best[k - 1][pj].0 + cost(s, seg.len(), p != s);
                        // Strict `<` keeps the lowest index on ties: deterministic.
                        if c < pick.0 {
                            pick = (c, pj);
                        }
                    }
                    pick
                })
                .collect();
            best.push(row);
        }
        // Walk back.
        let mut choice = vec![0usize; segs.len()];
        let last = segs.len() - 1;
        let mut j = (0..cands[last].len())
            .min_by(|&a, &b| best[last][a].0.total_cmp(&best[last][b].0))
            .expect("at least one candidate");
        for k in (0..segs.len()).rev() {
            choice[k] = cands[k][j];
            j = best[k][j].1;
        }
        // Merge runs of one source into steps.
        let mut k = 0;
        while k < segs.len() {
            let src = choice[k];
            let start = segs[k].start;
            let mut end = segs[k].end;
            while k + 1 < segs.len() && choice[k + 1] == src {
                k += 1;
                end = segs[k].end;
            }
            k += 1;
            steps.push(if src == ZERO {
                Step::Zero {
                    place: target,
                    range: start..end,
                }
            } else {
                Step::Copy {
                    from: src,
                    to: target,
                    range: start..end,
                    route: route_between(topo, src, target),
                }
            });
        }
    }
}

/// Plans one access. `view` has one entry per place (index 0: host).
pub(crate) fn plan_access(
    topo: &dyn Topology,
    view: &View<'_>,
    buffer: &str,
    size: usize,
    access: Access,
    place: usize,
    range: Range<usize>,
) -> Plan {
    let target = choose_target(topo, view, place, range.clone());
    let mut steps = Vec::new();
    let empty = IntervalSet::new();
    let have = match view[target] {
        Some(v) => v,
        None => {
            steps.push(Step::Allocate { place: target, size });
            &empty
        }
    };
    if access.reads_old_data() {
        let mut missing = IntervalSet::new();
        for g in have.gaps(range.clone()) {
            missing.insert(g);
        }
        choose_sources(topo, view, target, &missing, &mut steps);
    }
    let mut invalidates = Vec::new();
    if access.writes() {
        for (i, v) in view.iter().enumerate() {
            if i == target {
                continue;
            }
            if let Some(valid) = v {
                let mut lost = IntervalSet::new();
                for r in valid.intersect(range.clone()) {
                    lost.insert(r);
                }
                if !lost.is_empty() {
                    invalidates.push((i, lost));
                }
            }
        }
    }
    Plan {
        kind: PlanKind::Access,
        buffer: buffer.to_string(),
        access,
        range,
        place,
        target,
        steps,
        invalidates,
        places: topo.names(),
    }
}

/// Plans the creation of a buffer of `size` bytes: an allocation at each
/// hinted place in `hints` (in order) unless its memory is `Unified` with an
/// earlier hint's allocation, which it then uses; then, with `init` bytes
/// of initial data, their write into the first hint's allocation (the host
/// store without a hint) by the path `init_path` gives for that place.
pub(crate) fn plan_create(
    topo: &dyn Topology,
    buffer: &str,
    size: usize,
    hints: &[usize],
    init: usize,
    init_path: impl FnOnce(usize) -> InitPath,
) -> Plan {
    let places = topo.names();
    let empty = IntervalSet::new();
    let mut view: Vec<Option<&IntervalSet>> = vec![None; places.len()];
    let mut steps = Vec::new();
    let mut uses = Vec::with_capacity(hints.len());
    for &h in hints {
        let target = choose_target(topo, &view, h, 0..size);
        if view[target].is_none() {
            steps.push(Step::Allocate { place: target, size });
            view[target] = Some(&empty);
        }
        uses.push((h, target));
    }
    let place = hints.first().copied().unwrap_or(HOST);
    let target = uses.first().map_or(HOST, |&(_, t)| t);
    if init > 0 {
        if view[target].is_none() {
            steps.push(Step::Allocate { place: target, size });
        }
        steps.push(Step::Init {
            place: target,
            range: 0..init,
            path: init_path(target),
        });
    }
    Plan {
        kind: PlanKind::Create { size, hints: uses },
        buffer: buffer.to_string(),
        access: Access::DiscardWrite,
        range: 0..init,
        place,
        target,
        steps,
        invalidates: Vec::new(),
        places,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A topology from a matrix of connection answers; place 0 is the host.
    pub(crate) struct Matrix {
        pub conn: Vec<Vec<MemoryConnection>>,
    }

    /// A [`Matrix`] whose `None` routes between the `mapped` places use zero-copy staging.
    struct Mappable {
        m: Matrix,
        mapped: Vec<usize>,
    }

    impl Topology for Mappable {
        fn connection(&self, from: usize, to: usize) -> MemoryConnection {
            self.m.connection(from, to)
        }
        fn cost(&self, from: usize, to: usize, route: Route) -> LinkCost {
            self.m.cost(from, to, route)
        }
        fn staging(&self) -> (usize, usize) {
            self.m.staging()
        }
        fn zero_copy(&self, from: usize, to: usize) -> Option<MapEnd> {
            (self.mapped.contains(&from) && self.mapped.contains(&to)).then_some(MapEnd::Source)
        }
        fn mapped_chunk(&self) -> usize {
            self.m.mapped_chunk()
        }
        fn names(&self) -> Vec<String> {
            self.m.names()
        }
    }

    impl Topology for Matrix {
        fn connection(&self, from: usize, to: usize) -> MemoryConnection {
            self.conn[from - 1][to - 1]
        }
        fn cost(&self, _from: usize, _to: usize, route: Route) -> LinkCost {
            LinkCost::estimate(route)
        }
        fn staging(&self) -> (usize, usize) {
            (1024, 4)
        }
        fn zero_copy(&self, _from: usize, _to: usize) -> Option<MapEnd> {
            None
        }
        fn mapped_chunk(&self) -> usize {
            4096
        }
        fn names(&self) -> Vec<String> {
            (0..=self.conn.len())
                .map(|i| if i == 0 { "host".into() } else { format!("L{i}") })
                .collect()
        }
    }

    use MemoryConnection::{Migratable as M, None as N, Unified as U};

    fn set(r: Range<usize>) -> IntervalSet {
        IntervalSet::from_range(r)
    }

    #[test]
    fn unified_uses_source_in_place() {
        let t = Matrix {
            conn: vec![vec![U, U], vec![U, U]],
        };
        let l1 = set(0..100);
        let view = [None, Some(&l1), None];
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 2, 0..100);
        assert_eq!(p.target, 1);
        assert!(p.steps.is_empty(), "{}", p.explain());
    }

    #[test]
    fn migratable_is_one_copy_none_is_staged() {
        let t = Matrix {
            conn: vec![vec![U, M, N], vec![M, U, N], vec![N, N, U]],
        };
        let l1 = set(0..100);
        let view = [None, Some(&l1), None, None];
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 2, 0..100);
        assert_eq!(p.steps.len(), 2, "{}", p.explain());
        assert!(matches!(
            p.steps[1],
            Step::Copy {
                from: 1,
                to: 2,
                route: Route::AdapterCopy(M),
                ..
            }
        ));
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 3, 0..100);
        assert!(matches!(
            p.steps[1],
            Step::Copy {
                from: 1,
                to: 3,
                route: Route::Staged { .. },
                ..
            }
        ));
    }

    #[test]
    fn none_between_mappable_places_is_zero_copy() {
        let t = Mappable {
            m: Matrix {
                conn: vec![vec![U, N, N], vec![N, U, N], vec![N, N, U]],
            },
            mapped: vec![1, 2],
        };
        let l1 = set(0..100);
        let view = [None, Some(&l1), None, None];
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 2, 0..100);
        assert_eq!(
            p.steps[1],
            Step::Copy {
                from: 1,
                to: 2,
                range: 0..100,
                route: Route::Mapped {
                    chunk: 4096,
                    depth: 4,
                    end: MapEnd::Source
                }
            },
            "{}",
            p.explain()
        );
        assert!(
            p.explain().contains("by staged (mapped source, zero-copy)"),
            "{}",
            p.explain()
        );
        // Only one end mappable: the pinned ring.
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 3, 0..100);
        assert!(
            matches!(
                p.steps[1],
                Step::Copy {
                    route: Route::Staged { .. },
                    ..
                }
            ),
            "{}",
            p.explain()
        );
    }

    #[test]
    fn host_copy_beats_staging() {
        let t = Matrix {
            conn: vec![vec![U, N], vec![N, U]],
        };
        let l1 = set(0..100);
        let host = set(0..100);
        let view = [Some(&host), Some(&l1), None];
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 2, 0..100);
        assert!(
            matches!(
                p.steps[1],
                Step::Copy {
                    from: 0,
                    route: Route::HostWrite,
                    ..
                }
            ),
            "{}",
            p.explain()
        );
    }

    #[test]
    fn assembles_from_several_sources_and_zero_fills() {
        let t = Matrix {
            conn: vec![vec![U, M, N], vec![M, U, N], vec![N, N, U]],
        };
        let l1 = set(0..40);
        let l3 = set(60..80);
        let view = [None, Some(&l1), None, Some(&l3)];
        let p = plan_access(&t, &view, "b0", 100, Access::ReadWrite, 2, 0..100);
        let text = p.explain();
        assert_eq!(p.steps.len(), 5, "{text}");
        assert!(
            matches!(&p.steps[1], Step::Copy { from: 1, range, .. } if *range == (0..40)),
            "{text}"
        );
        assert!(
            matches!(&p.steps[2], Step::Zero { range, .. } if *range == (40..60)),
            "{text}"
        );
        assert!(
            matches!(&p.steps[3], Step::Copy { from: 3, range, .. } if *range == (60..80)),
            "{text}"
        );
        assert!(
            matches!(&p.steps[4], Step::Zero { range, .. } if *range == (80..100)),
            "{text}"
        );
        assert_eq!(p.invalidates.len(), 2, "{text}");
    }

    #[test]
    fn discard_write_copies_nothing() {
        let t = Matrix {
            conn: vec![vec![U, M], vec![M, U]],
        };
        let l1 = set(0..100);
        let view = [None, Some(&l1), None];
        let p = plan_access(&t, &view, "b0", 100, Access::DiscardWrite, 2, 10..20);
        assert_eq!(p.steps, vec![Step::Allocate { place: 2, size: 100 }]);
        assert_eq!(p.invalidates, vec![(1, set(10..20))]);
    }

    #[test]
    fn keeps_one_source_rather_than_switching_for_small_pieces() {
        // L1 holds everything, host holds the middle: switching to the host
        // for 10 bytes would pay two more latencies.
        let t = Matrix {
            conn: vec![vec![U, M], vec![M, U]],
        };
        let l1 = set(0..100);
        let host = set(40..50);
        let view = [Some(&host), Some(&l1), None];
        let p = plan_access(&t, &view, "b0", 100, Access::Read, 2, 0..100);
        assert_eq!(p.steps.len(), 2, "{}", p.explain());
    }
}
