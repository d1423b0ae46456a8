//! What one cell measures, and the route letters.
//!
//! Every measurement uses a fresh logical buffer of the cell's size, one
//! untimed warm-up (allocations, first touch of pages, pools), then
//! `reps` timed repetitions; before each, the buffer is made current at
//! the source only (untimed; nothing moves there after the warm-up). What
//! is timed, by the kind of the two ends:
//!
//! - **Manager places** (a device location, or `host/pinned`, the manager's
//!   host place): the manager's own move, `acquire(dst, Read)` of the whole
//!   buffer (for the host place `with_host`), from the call until the bytes
//!   are current at the destination. Its route is the plan's: the copy
//!   step's route, or `I` when the plan has no copy (the destination uses
//!   the source's memory in place, or they are one place). A forced route
//!   (`--route`) times [`MemoryManager::copy_via`] instead: the same
//!   execution path, by the route named, into the destination's own
//!   allocation.
//! - **`host/pageable` and a device**: caller memory through the manager's
//!   host-transfer decision tree ([`MemoryManager::host_transfer`]), the
//!   path the manager takes for caller bytes: to the device, the tree's
//!   `write` into the device allocation of an `acquire(dst,
//!   DiscardWrite)`; from it, [`MemoryManager::read`] of a buffer current
//!   only there (straight into the caller's memory). Its route is the
//!   tree's path (`D`, `L`, `S`); a forced one runs `write_via` /
//!   `read_via` with that path.
//! - **`host/pageable` and `host/pinned`**: [`MemoryManager::write`] /
//!   [`MemoryManager::read`], a memcpy into / out of the host place (`H`).
//! - **`host/pageable` to itself**: no manager route exists between two
//!   pieces of caller memory; a plain memcpy between two heap buffers is
//!   timed, as the machine's reference (`H`).

use std::time::Instant;

use ur_api::{DeviceCaps, Location};
use ur_memory_manager::{Access, LogicalBuffer, MapEnd, MemoryManager, Place, Route, Step, TransferPath};

use crate::error::BwError;
use crate::locations::Kind;

/// A route, by its letter in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// The destination uses the source's memory in place: nothing moves.
    InPlace,
    /// One adapter copy (`Unified` or `Migratable` connection).
    Copy,
    /// Host-staged through pinned buffers (the manager's ring between two
    /// devices; pooled pinned chunks for caller memory).
    Staged,
    /// Zero-copy staging, the source mapped.
    MapSource,
    /// Zero-copy staging, the destination mapped.
    MapDestination,
    /// Zero-copy staging, both ends mapped.
    MapBoth,
    /// The host place to a device (`enqueue_write` from pinned memory).
    HostWrite,
    /// A device to the host place (`enqueue_read` into pinned memory).
    HostRead,
    /// Caller memory, one device copy straight from / into it.
    Direct,
    /// Caller memory locked in place, one copy, unlocked.
    Locked,
    /// A host memcpy.
    Memcpy,
}

impl Code {
    /// Every code, in legend order.
    pub const ALL: [Code; 11] = [
        Code::InPlace,
        Code::Copy,
        Code::Staged,
        Code::MapSource,
        Code::MapDestination,
        Code::MapBoth,
        Code::HostWrite,
        Code::HostRead,
        Code::Direct,
        Code::Locked,
        Code::Memcpy,
    ];

    /// The letter in tables, the picture and the JSON `route` field.
    pub fn letter(self) -> &'static str {
        match self {
            Code::InPlace => "I",
            Code::Copy => "C",
            Code::Staged => "S",
            Code::MapSource => "Z",
            Code::MapDestination => "Zd",
            Code::MapBoth => "Zb",
            Code::HostWrite => "W",
            Code::HostRead => "R",
            Code::Direct => "D",
            Code::Locked => "L",
            Code::Memcpy => "H",
        }
    }

    /// What the letter stands for.
    pub fn describe(self) -> &'static str {
        match self {
            Code::InPlace => "in place: nothing moves (the figure is the size over the acquire's bookkeeping time, not a memory bandwidth)",
            Code::Copy => "adapter copy (one enqueue_copy on the destination's queue; unified or migratable connection)",
            Code::Staged => "host-staged through pinned buffers (the manager's ring between devices; pooled pinned chunks for caller memory)",
            Code::MapSource => "zero-copy staging: source chunks mapped, the destination written from the mapping",
            Code::MapDestination => "zero-copy staging: destination chunks mapped, the source read into the mapping",
            Code::MapBoth => "zero-copy staging: both ends mapped, a host memcpy between the mappings",
            Code::HostWrite => "host write: the manager's host place to the device (enqueue_write)",
            Code::HostRead => "host read: the device to the manager's host place (enqueue_read)",
            Code::Direct => "caller memory direct: one device copy from or into the pageable memory",
            Code::Locked => "caller memory locked in place, one device copy, unlocked",
            Code::Memcpy => "host memcpy",
        }
    }

    /// The code of a letter (case-insensitive).
    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL
            .into_iter()
            .find(|c| c.letter().eq_ignore_ascii_case(s.trim()))
    }

    /// The code of a manager route.
    pub fn of_route(r: &Route) -> Code {
        match r {
            Route::HostWrite => Code::HostWrite,
            Route::HostRead => Code::HostRead,
            Route::AdapterCopy(_) => Code::Copy,
            Route::Staged { .. } => Code::Staged,
            Route::Mapped {
                end: MapEnd::Source, ..
            } => Code::MapSource,
            Route::Mapped {
                end: MapEnd::Destination,
                ..
            } => Code::MapDestination,
            Route::Mapped { end: MapEnd::Both, .. } => Code::MapBoth,
        }
    }

    /// The code of a host-transfer path.
    pub fn of_path(p: TransferPath) -> Code {
        match p {
            TransferPath::Direct => Code::Direct,
            TransferPath::LockInPlace => Code::Locked,
            TransferPath::Staged => Code::Staged,
        }
    }
}

/// How a cell's move is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// As the manager chooses.
    Chosen,
    /// A manager route forced with [`MemoryManager::copy_via`].
    Route(Route),
    /// A host-transfer path forced with `write_via` / `read_via`.
    Path(TransferPath),
}

/// One measurement: the route that ran and each repetition's seconds.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The route.
    pub code: Code,
    /// Seconds per timed repetition.
    pub seconds: Vec<f64>,
}

/// Measures cells over one memory manager.
#[derive(Debug)]
pub struct Bench<'a> {
    mm: &'a MemoryManager,
    /// Caller memory the pageable source reads from (touched, patterned).
    src: Vec<u8>,
    /// Caller memory the pageable destination writes to (touched).
    dst: Vec<u8>,
}

impl<'a> Bench<'a> {
    /// A bench whose caller memory holds up to `max_size` bytes.
    pub fn new(mm: &'a MemoryManager, max_size: usize) -> Self {
        let src: Vec<u8> = (0..max_size)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(7))
            .collect();
        Bench {
            mm,
            src,
            dst: vec![0u8; max_size],
        }
    }

    /// Can the context of `at` lock caller memory (the tree's `L` path)?
    fn can_lock(&self, at: Location) -> bool {
        let rt = self.mm.runtime();
        rt.context_devices(at.context).is_ok_and(|ds| {
            ds.iter().all(|d| {
                rt.device_info(*d)
                    .is_ok_and(|i| i.caps.contains(DeviceCaps::HOST_REGISTER))
            })
        })
    }

    /// The route the manager will choose for a cell, before measuring it
    /// (the measurement reports the route that actually ran).
    pub fn chosen(&self, src: Kind, dst: Kind, size: usize) -> Result<Code, BwError> {
        let mm = self.mm;
        Ok(match (src, dst) {
            (Kind::Pageable, Kind::Device(d)) => Code::of_path(
                mm.host_transfer(Place::Device(d))?
                    .choose(self.src.as_ptr() as usize, size),
            ),
            (Kind::Device(s), Kind::Pageable) => Code::of_path(
                mm.host_transfer(Place::Device(s))?
                    .choose(self.dst.as_ptr() as usize, size),
            ),
            (Kind::Pageable, _) | (_, Kind::Pageable) => Code::Memcpy,
            _ => {
                let (a, b) = (src.place().expect("a place"), dst.place().expect("a place"));
                let in_place = a == b
                    || (matches!((a, b), (Place::Device(_), Place::Device(_)))
                        && mm.connection(a, b)? == ur_api::MemoryConnection::Unified);
                if in_place {
                    Code::InPlace
                } else {
                    Code::of_route(&mm.routes(a, b)?[0])
                }
            }
        })
    }

    /// The other routes the cell allows (not the chosen one), each once,
    /// for `--route`.
    pub fn alternatives(&self, src: Kind, dst: Kind, size: usize) -> Result<Vec<(Code, Way)>, BwError> {
        let chosen = self.chosen(src, dst, size)?;
        let mut out: Vec<(Code, Way)> = Vec::new();
        match (src, dst) {
            (Kind::Pageable, Kind::Device(d)) | (Kind::Device(d), Kind::Pageable) => {
                let mut paths = vec![TransferPath::Direct, TransferPath::Staged];
                if self.can_lock(d) {
                    paths.push(TransferPath::LockInPlace);
                }
                out.extend(paths.into_iter().map(|p| (Code::of_path(p), Way::Path(p))));
            }
            (Kind::Pageable, _) | (_, Kind::Pageable) => {}
            _ => {
                let (a, b) = (src.place().expect("a place"), dst.place().expect("a place"));
                for r in self.mm.routes(a, b)? {
                    out.push((Code::of_route(&r), Way::Route(r)));
                }
            }
        }
        let mut seen = vec![chosen];
        out.retain(|(c, _)| {
            let new = !seen.contains(c);
            seen.push(*c);
            new
        });
        Ok(out)
    }

    /// Measures one cell: `size` bytes from `src` to `dst` by `way`, one
    /// warm-up and `reps` timed repetitions (see the module docs).
    pub fn measure(&mut self, src: Kind, dst: Kind, way: Way, size: usize, reps: usize) -> Result<Sample, BwError> {
        let reps = reps.max(1);
        if let (Kind::Pageable, Kind::Pageable) = (src, dst) {
            return Ok(self.memcpy(size, reps));
        }
        let buf = self.mm.create_buffer(size)?;
        let out = self.run(buf, src, dst, way, size, reps);
        let released = self.mm.release(buf);
        let sample = out?;
        released?;
        Ok(sample)
    }

    /// Pageable to pageable: no manager route; a plain memcpy.
    fn memcpy(&mut self, size: usize, reps: usize) -> Sample {
        let mut seconds = Vec::with_capacity(reps);
        for rep in 0..=reps {
            let t = Instant::now();
            self.dst[..size].copy_from_slice(&self.src[..size]);
            std::hint::black_box(&mut self.dst);
            if rep > 0 {
                seconds.push(t.elapsed().as_secs_f64());
            }
        }
        Sample {
            code: Code::Memcpy,
            seconds,
        }
    }

    /// Makes the buffer current at `place` only (after the first call,
    /// nothing moves: it is current there already).
    fn make_sole(&self, buf: LogicalBuffer, place: Place, size: usize) -> Result<(), BwError> {
        match place {
            Place::Host => self.mm.with_host(buf, Access::Write, 0..size, |_| ())?,
            p => drop(self.mm.acquire(buf, p, Access::Write, 0..size)?),
        }
        Ok(())
    }

    /// The route of the manager's plan for reading the buffer at `at`.
    fn planned(&self, buf: LogicalBuffer, at: Place, size: usize) -> Result<Code, BwError> {
        let plan = self.mm.plan(buf, at, Access::Read, 0..size)?;
        let routes: Vec<Code> = plan
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Copy { route, .. } => Some(Code::of_route(route)),
                _ => None,
            })
            .collect();
        match routes.first() {
            None => Ok(Code::InPlace),
            Some(&c) => {
                if routes.iter().any(|x| *x != c) {
                    tracing::warn!(plan = %plan.explain(), "a plan with several routes; reporting the first");
                }
                Ok(c)
            }
        }
    }

    /// Runs `warm-up + reps` repetitions of `rep`, which returns the route
    /// it took and the seconds it spent on the timed part.
    fn repeat(
        reps: usize,
        mut rep: impl FnMut(&mut Self) -> Result<(Code, f64), BwError>,
        this: &mut Self,
    ) -> Result<Sample, BwError> {
        let mut seconds = Vec::with_capacity(reps);
        let mut code = None;
        for i in 0..=reps {
            let (c, s) = rep(this)?;
            match code {
                None => code = Some(c),
                Some(first) if first != c => {
                    return Err(BwError::RouteChanged {
                        first: first.letter().into(),
                        then: c.letter().into(),
                    })
                }
                Some(_) => {}
            }
            if i > 0 {
                seconds.push(s);
            }
        }
        Ok(Sample {
            code: code.expect("at least one repetition"),
            seconds,
        })
    }

    fn run(
        &mut self,
        buf: LogicalBuffer,
        src: Kind,
        dst: Kind,
        way: Way,
        size: usize,
        reps: usize,
    ) -> Result<Sample, BwError> {
        match (src, dst) {
            (Kind::Pageable, Kind::Pinned) => Self::repeat(
                reps,
                |b| {
                    let t = Instant::now();
                    b.mm.write(buf, 0, &b.src[..size])?;
                    Ok((Code::Memcpy, t.elapsed().as_secs_f64()))
                },
                self,
            ),
            (Kind::Pinned, Kind::Pageable) => {
                self.mm.write(buf, 0, &self.src[..size])?;
                Self::repeat(
                    reps,
                    |b| {
                        let t = Instant::now();
                        b.mm.read(buf, 0, &mut b.dst[..size])?;
                        Ok((Code::Memcpy, t.elapsed().as_secs_f64()))
                    },
                    self,
                )
            }
            (Kind::Pageable, Kind::Device(d)) => {
                let at = Place::Device(d);
                let g = self.mm.acquire(buf, at, Access::DiscardWrite, 0..size)?;
                let view = g.device()?;
                let x = self.mm.host_transfer(at)?;
                let out = Self::repeat(
                    reps,
                    |b| {
                        let data = &b.src[..size];
                        let t = Instant::now();
                        let path = match way {
                            Way::Path(p) => {
                                x.write_via(p, view.queue(), view.buffer(), 0, data)?;
                                p
                            }
                            _ => x.write(view.queue(), view.buffer(), 0, data)?,
                        };
                        Ok((Code::of_path(path), t.elapsed().as_secs_f64()))
                    },
                    self,
                );
                drop(g);
                out
            }
            (Kind::Device(s), Kind::Pageable) => {
                let at = Place::Device(s);
                self.mm.write(buf, 0, &self.src[..size])?;
                self.make_sole(buf, at, size)?;
                match way {
                    Way::Path(p) => {
                        let g = self.mm.acquire(buf, at, Access::Read, 0..size)?;
                        let view = g.device()?;
                        let x = self.mm.host_transfer(at)?;
                        let out = Self::repeat(
                            reps,
                            |b| {
                                let t = Instant::now();
                                x.read_via(p, view.queue(), view.buffer(), 0, &mut b.dst[..size])?;
                                Ok((Code::of_path(p), t.elapsed().as_secs_f64()))
                            },
                            self,
                        );
                        drop(g);
                        out
                    }
                    _ => Self::repeat(
                        reps,
                        |b| {
                            b.make_sole(buf, at, size)?;
                            let before = b.mm.stats();
                            let t = Instant::now();
                            b.mm.read(buf, 0, &mut b.dst[..size])?;
                            let s = t.elapsed().as_secs_f64();
                            let after = b.mm.stats();
                            // Which path the manager's read took, from its counters.
                            let code = if after.caller_locked > before.caller_locked {
                                Code::Locked
                            } else if after.caller_staged > before.caller_staged {
                                Code::Staged
                            } else if after.caller_direct > before.caller_direct {
                                Code::Direct
                            } else {
                                // Through the host place (a device read, then a memcpy).
                                Code::HostRead
                            };
                            Ok((code, s))
                        },
                        self,
                    ),
                }
            }
            (Kind::Pageable, Kind::Pageable) => unreachable!("measured without a buffer"),
            _ => {
                let (a, b) = (src.place().expect("a place"), dst.place().expect("a place"));
                self.mm.write(buf, 0, &self.src[..size])?;
                Self::repeat(
                    reps,
                    |bench| {
                        bench.make_sole(buf, a, size)?;
                        match way {
                            Way::Route(r) => {
                                let t = Instant::now();
                                bench.mm.copy_via(buf, a, b, 0..size, r)?;
                                Ok((Code::of_route(&r), t.elapsed().as_secs_f64()))
                            }
                            _ => {
                                let code = bench.planned(buf, b, size)?;
                                let t = Instant::now();
                                match b {
                                    Place::Host => bench.mm.with_host(buf, Access::Read, 0..size, |_| ())?,
                                    p => drop(bench.mm.acquire(buf, p, Access::Read, 0..size)?),
                                }
                                Ok((code, t.elapsed().as_secs_f64()))
                            }
                        }
                    },
                    self,
                )
            }
        }
    }
}

/// Median, minimum and maximum of `xs` (not empty).
pub fn stats(xs: &[f64]) -> (f64, f64, f64) {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    (median, v[0], v[n - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_parse_back() {
        for c in Code::ALL {
            assert_eq!(Code::parse(c.letter()), Some(c));
            assert_eq!(Code::parse(&c.letter().to_lowercase()), Some(c));
        }
        assert_eq!(Code::parse("Q"), None);
    }

    #[test]
    fn median_min_max() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
        assert_eq!(stats(&[4.0, 1.0, 2.0, 3.0]), (2.5, 1.0, 4.0));
        assert_eq!(stats(&[5.0]), (5.0, 5.0, 5.0));
    }
}
