//! Routes named by the caller: [`MemoryManager::routes`] lists every route
//! the manager can run from one place to another (the one it would choose
//! first), and [`MemoryManager::copy_via`] runs one copy by a route the
//! caller picks, through the same execution path as a planned copy. For
//! measurements (`ur-bandwidth --route`) that show what the manager's
//! choice gains over the other routes a pair allows; an ordinary access
//! never takes a forced route.

use std::ops::Range;

use ur_api::MemoryConnection;

use crate::error::{MmError, Result};
use crate::exec::{self, Exec};
use crate::manager::{LogicalBuffer, MemoryManager, Place};
use crate::plan::{MapEnd, Route, Step};
use crate::route::{self, HOST};

impl MemoryManager {
    /// Every route a copy from an allocation at `from` into one at `to`
    /// can take, the one the planner chooses first (the route of a
    /// [`Step::Copy`] between them), then the others: from the host only
    /// [`Route::HostWrite`], to the host only [`Route::HostRead`]; between
    /// two devices an adapter copy where the connection is `Unified` or
    /// `Migratable`, the pinned staging ring always, and zero-copy staging
    /// mapping the source, the destination or both where those devices can
    /// map ([`ur_api::DeviceCaps::MAP`]). Chunk sizes and depths are the
    /// manager's [`crate::Config`]. Empty when `from == to`.
    ///
    /// A `Unified` pair's access normally uses the source's allocation in
    /// place and copies nothing (see [`MemoryManager::plan`]); the adapter
    /// copy listed for it is what runs when the destination has an
    /// allocation of its own.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ur_api::{Location, MemoryConnection, Runtime};
    /// use ur_memory_manager::{MemoryManager, Place, Route};
    /// use ur_sim::{SimAdapter, Topology};
    ///
    /// let mut rt = Runtime::new();
    /// rt.add(SimAdapter::new(Topology::two_devices_peer()))?;
    /// let devs = rt.all_devices();
    /// let ctx = rt.create_context(&devs)?;
    /// let (a, b) = (Location::new(ctx, devs[0]), Location::new(ctx, devs[1]));
    /// let mm = MemoryManager::new(Arc::new(rt), &[a, b])?;
    /// let routes = mm.routes(Place::Device(a), Place::Device(b))?;
    /// assert_eq!(routes[0], Route::AdapterCopy(MemoryConnection::Migratable));
    /// assert!(routes.iter().any(|r| matches!(r, Route::Staged { .. })));
    /// assert_eq!(mm.routes(Place::Host, Place::Device(b))?, [Route::HostWrite]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn routes(&self, from: Place, to: Place) -> Result<Vec<Route>> {
        let (a, b) = (self.index(from)?, self.index(to)?);
        if a == b {
            return Ok(Vec::new());
        }
        let inner = &*self.inner;
        let mut out = vec![route::route_between(inner, a, b)];
        if a != HOST && b != HOST {
            let c = &inner.config;
            let conn = inner.conn[a][b];
            if conn != MemoryConnection::None {
                out.push(Route::AdapterCopy(conn));
            }
            out.push(Route::Staged {
                chunk: c.staging_chunk,
                depth: c.staging_depth,
            });
            let (map_a, map_b) = (inner.places[a].map, inner.places[b].map);
            let ends = [
                (MapEnd::Source, map_a),
                (MapEnd::Destination, map_b),
                (MapEnd::Both, map_a && map_b),
            ];
            for (end, can) in ends {
                if can {
                    out.push(Route::Mapped {
                        chunk: c.mapped_chunk,
                        depth: c.staging_depth,
                        end,
                    });
                }
            }
        }
        let mut seen = Vec::with_capacity(out.len());
        out.retain(|r| {
            let new = !seen.contains(r);
            seen.push(*r);
            new
        });
        Ok(out)
    }

    /// Copies `range` of `buf` from `from`, where it must be current, into
    /// an allocation of `to`'s own (made now if `to` has none, even where
    /// `to` could use another place's memory in place) by `route`, which
    /// must be one of [`MemoryManager::routes`]`(from, to)`; blocks until
    /// the bytes are there. The range is then current at both places
    /// (nothing else changes). Fails with [`MmError::RouteUnavailable`] for
    /// another route and [`MmError::NotCurrent`] when `from` lacks part of
    /// the range; a failed copy is [`MmError::CopyFailed`], as for a
    /// planned one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ur_api::{Location, Runtime};
    /// use ur_memory_manager::{Access, MemoryManager, Place, Route};
    /// use ur_sim::{SimAdapter, Topology};
    ///
    /// let mut rt = Runtime::new();
    /// rt.add(SimAdapter::new(Topology::two_devices_peer()))?;
    /// let devs = rt.all_devices();
    /// let ctx = rt.create_context(&devs)?;
    /// let (a, b) = (Place::Device(Location::new(ctx, devs[0])), Place::Device(Location::new(ctx, devs[1])));
    /// let mm = MemoryManager::new(Arc::new(rt), &[Location::new(ctx, devs[0]), Location::new(ctx, devs[1])])?;
    /// let buf = mm.create_buffer(8192)?;
    /// mm.write(buf, 0, &[3u8; 8192])?;
    /// drop(mm.acquire(buf, a, Access::Read, 0..8192)?);
    /// // The planner would copy on the adapter; force the pinned staging ring.
    /// let staged = *mm.routes(a, b)?.iter().find(|r| matches!(r, Route::Staged { .. })).unwrap();
    /// mm.copy_via(buf, a, b, 0..8192, staged)?;
    /// assert_eq!(mm.stats().staged_copies, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn copy_via(
        &self,
        buf: LogicalBuffer,
        from: Place,
        to: Place,
        range: Range<usize>,
        route: Route,
    ) -> Result<()> {
        let (a, b) = (self.index(from)?, self.index(to)?);
        if !self.routes(from, to)?.contains(&route) {
            return Err(MmError::RouteUnavailable {
                route: route.to_string(),
                from: self.inner.places[a].name.clone(),
                to: self.inner.places[b].name.clone(),
            });
        }
        let (_, mut g) = self.locked(buf)?;
        Self::check_range(&g, &range)?;
        let inner = &self.inner;
        for p in [a, b] {
            if inner.is_lost(p) {
                return Err(ur_api::Error::DeviceLost.into());
            }
        }
        // Learn the outcome of earlier asynchronous copies first: one that
        // failed made its range stale at its destination.
        let failed = g.confirm();
        inner
            .counters
            .failed_copies
            .fetch_add(failed, std::sync::atomic::Ordering::Relaxed);
        for s in g.slots.iter_mut().flatten() {
            s.reap();
        }
        let current = g.slots[a].as_ref().is_some_and(|s| s.valid.contains(range.clone()));
        if !current {
            return Err(MmError::NotCurrent {
                buffer: g.name.clone(),
                place: inner.places[a].name.clone(),
                range,
            });
        }
        if g.slots[b].is_none() {
            exec::allocate(inner, &mut g, b)?;
        }
        let step = Step::Copy {
            from: a,
            to: b,
            range,
            route,
        };
        exec::run_step(inner, &mut g, &step, &mut Exec::blocking())?;
        inner.touch(&mut g, b);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ur_api::{Location, MemoryConnection, Runtime};

    use crate::{Access, Config, MapEnd, MemoryManager, MmError, Place, Route, ZeroCopy};

    /// A manager over the native adapter's device in two contexts (a
    /// `Unified` pair) and the places.
    fn native_pair() -> (MemoryManager, Place, Place) {
        let mut rt = Runtime::new();
        rt.add(ur_native::NativeAdapter::new()).unwrap();
        let dev = rt.all_devices()[0];
        let (c0, c1) = (rt.create_context(&[dev]).unwrap(), rt.create_context(&[dev]).unwrap());
        let (l0, l1) = (Location::new(c0, dev), Location::new(c1, dev));
        let config = Config {
            measure_routes: false,
            zero_copy: ZeroCopy::Off,
            ..Config::default()
        };
        let mm = MemoryManager::with_config(Arc::new(rt), &[l0, l1], config).unwrap();
        (mm, Place::Device(l0), Place::Device(l1))
    }

    #[test]
    fn a_unified_pair_offers_copy_staging_and_mapping() {
        let (mm, a, b) = native_pair();
        let routes = mm.routes(a, b).unwrap();
        assert_eq!(routes[0], Route::AdapterCopy(MemoryConnection::Unified), "{routes:?}");
        assert!(routes.iter().any(|r| matches!(r, Route::Staged { .. })), "{routes:?}");
        assert!(
            routes
                .iter()
                .any(|r| matches!(r, Route::Mapped { end: MapEnd::Both, .. })),
            "the native device maps: {routes:?}"
        );
        assert!(mm.routes(a, a).unwrap().is_empty());
        assert_eq!(mm.routes(a, Place::Host).unwrap(), [Route::HostRead]);
    }

    #[test]
    fn every_route_copies_the_bytes() {
        let (mm, a, b) = native_pair();
        let n = 3 << 16;
        let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
        for route in mm.routes(a, b).unwrap() {
            let buf = mm.create_buffer(n).unwrap();
            mm.write(buf, 0, &data).unwrap();
            drop(mm.acquire(buf, a, Access::Read, 0..n).unwrap());
            // Only `a` holds the bytes: the host's copy goes stale.
            drop(mm.acquire(buf, a, Access::Write, 0..n).unwrap());
            mm.copy_via(buf, a, b, 0..n, route).unwrap();
            let g = mm.acquire(buf, b, Access::Read, 0..n).unwrap();
            assert_eq!(g.target(), b, "{route}: the destination has its own allocation");
            let d = g.device().unwrap();
            let mut back = vec![0u8; n];
            mm.runtime().read(d.queue(), d.buffer(), 0, &mut back).unwrap();
            assert!(back == data, "{route}: bytes differ");
            drop(g);
            mm.release(buf).unwrap();
        }
    }

    #[test]
    fn refuses_other_routes_and_stale_sources() {
        let (mm, a, b) = native_pair();
        let buf = mm.create_buffer(4096).unwrap();
        let e = mm.copy_via(buf, Place::Host, b, 0..4096, Route::HostRead).unwrap_err();
        assert!(matches!(e, MmError::RouteUnavailable { .. }), "{e}");
        let staged = mm.routes(a, b).unwrap()[1];
        let e = mm.copy_via(buf, a, b, 0..4096, staged).unwrap_err();
        assert!(matches!(e, MmError::NotCurrent { .. }), "{e}");
        mm.write(buf, 0, &[1u8; 4096]).unwrap();
        mm.copy_via(buf, Place::Host, b, 0..4096, Route::HostWrite).unwrap();
        assert_eq!(mm.stats().copies, 1);
    }
}
