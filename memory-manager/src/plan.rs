//! Plans are data: what the manager will do to give an access its bytes.
//!
//! A [`Plan`] is computed from the residency of one logical buffer, the
//! connection answers between places and the cost model, before anything
//! runs. [`Plan::explain`] prints it as text; the text holds no addresses
//! and no timings, so it can be snapshot-tested.

use std::fmt::{self, Write as _};
use std::ops::Range;

use ur_api::MemoryConnection;

use crate::interval::IntervalSet;
use crate::transfer::TransferPath;

/// How an access uses its byte range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Reads: the range is made valid at the place; other copies stay valid.
    Read,
    /// Writes part or all of the range: the range is made valid first (bytes
    /// not written keep their values), then it is current only at this place.
    Write,
    /// Reads and writes: as [`Access::Write`].
    ReadWrite,
    /// Overwrites the whole range: nothing is copied, and afterwards the
    /// range is current only at this place.
    DiscardWrite,
}

impl Access {
    /// True when the access needs the old contents.
    pub fn reads_old_data(self) -> bool {
        !matches!(self, Access::DiscardWrite)
    }

    /// True when other places become stale.
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }

    /// Lower-case name used by [`Plan::explain`].
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read-write",
            Access::DiscardWrite => "discard-write",
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How bytes travel from one place to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Host memory to a device allocation (`enqueue_write` on the device's queue).
    HostWrite,
    /// A device allocation to host memory (`enqueue_read` on the device's queue).
    HostRead,
    /// One adapter copy (`enqueue_copy` on the destination's queue); the
    /// connection answer was `Unified` or `Migratable`.
    AdapterCopy(MemoryConnection),
    /// The connection answer was `None`: read to pinned host staging
    /// buffers, write from them, chunk by chunk, `depth` chunks in flight.
    Staged {
        /// Bytes per chunk.
        chunk: usize,
        /// Staging buffers in the ring (chunks in flight).
        depth: usize,
    },
    /// The connection answer was `None` and both ends are host-unified
    /// devices that can map buffers: zero-copy staging. Each chunk of the
    /// mapped end is mapped into host memory and the other end's queue reads
    /// or writes it directly (one host copy instead of two; with
    /// [`MapEnd::Both`] both ends are mapped and the manager copies between
    /// them), `depth` chunks mapped at a time; every mapping is unmapped
    /// before the copy returns.
    Mapped {
        /// Bytes per chunk.
        chunk: usize,
        /// Chunks mapped at a time.
        depth: usize,
        /// Which end is mapped.
        end: MapEnd,
    },
}

/// The end of a [`Route::Mapped`] copy whose chunks are mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapEnd {
    /// The source is mapped for reading; the destination's queue writes
    /// from the mapping.
    Source,
    /// The destination is mapped for overwriting (`WRITE_INVALIDATE`); the
    /// source's queue reads into the mapping.
    Destination,
    /// Both ends are mapped (source for reading, destination for
    /// overwriting) and the manager copies between the mappings on the host.
    Both,
}

impl MapEnd {
    /// Lower-case name used by [`Plan::explain`].
    pub fn name(self) -> &'static str {
        match self {
            MapEnd::Source => "source",
            MapEnd::Destination => "destination",
            MapEnd::Both => "source and destination",
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::HostWrite => f.write_str("host write"),
            Route::HostRead => f.write_str("host read"),
            Route::AdapterCopy(c) => write!(f, "adapter copy ({c})"),
            Route::Staged { chunk, depth } => {
                write!(
                    f,
                    "host-staged copy (none): chunks of {}, ring of {depth}",
                    bytes(*chunk)
                )
            }
            Route::Mapped { chunk, depth, end } => write!(
                f,
                "staged (mapped {}, zero-copy): chunks of {}, {depth} mapped at a time",
                end.name(),
                bytes(*chunk)
            ),
        }
    }
}

/// How a creation plan's initial data travels from the caller's slice
/// ([`Step::Init`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InitPath {
    /// A memcpy into the host place's store.
    HostCopy,
    /// One transfer into a device allocation through its context's
    /// [`HostTransfer`](crate::HostTransfer) decision tree, by the path it
    /// chose for the caller's slice.
    Transfer(TransferPath),
}

impl fmt::Display for InitPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitPath::HostCopy => f.write_str("memcpy into the host store"),
            InitPath::Transfer(TransferPath::Direct) => f.write_str("host transfer (direct)"),
            InitPath::Transfer(TransferPath::LockInPlace) => f.write_str("host transfer (locked in place)"),
            InitPath::Transfer(TransferPath::Staged) => f.write_str("host transfer (staged through the pinned ring)"),
        }
    }
}

/// What a plan does: one access, or the creation of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanKind {
    /// An access: [`Plan::access`] of [`Plan::range`] at [`Plan::place`].
    Access,
    /// The creation of a buffer
    /// ([`MemoryManager::create_buffer_with`](crate::MemoryManager::create_buffer_with)):
    /// per hinted place, in the order given, the place whose allocation it
    /// uses (itself, or an earlier hint's place whose memory is `Unified`
    /// with it). The plan's [`Plan::access`] is then `DiscardWrite` of the
    /// initial data's range (empty without data) at [`Plan::place`] (the
    /// first hint, or the host), whose allocation at [`Plan::target`]
    /// receives it.
    Create {
        /// The buffer's size in bytes.
        size: usize,
        /// (hinted place, place whose allocation it uses).
        hints: Vec<(usize, usize)>,
    },
}

/// One step of a plan. Places are indices into [`Plan::places`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Create the logical buffer's allocation at a place.
    Allocate {
        /// Where.
        place: usize,
        /// Bytes (the logical buffer's size).
        size: usize,
    },
    /// Bytes never written anywhere read as zero: fill them.
    Zero {
        /// Where.
        place: usize,
        /// Byte range of the logical buffer.
        range: Range<usize>,
    },
    /// Copy a range from one place's allocation to another's.
    Copy {
        /// Source place (valid there).
        from: usize,
        /// Destination place.
        to: usize,
        /// Byte range of the logical buffer.
        range: Range<usize>,
        /// How.
        route: Route,
    },
    /// Write the caller's initial data (creation plans only): the first
    /// `range.len()` bytes of the caller's slice to `range` of the
    /// allocation at `place`, current there afterwards.
    Init {
        /// Where.
        place: usize,
        /// Byte range of the logical buffer (`0..data.len()`).
        range: Range<usize>,
        /// How.
        path: InitPath,
    },
}

/// What the manager will do for one access, computed before it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// An access or a creation.
    pub kind: PlanKind,
    /// The logical buffer's name (`b0`, `b1`, ... in creation order).
    pub buffer: String,
    /// The access.
    pub access: Access,
    /// Byte range accessed.
    pub range: Range<usize>,
    /// The place asked for.
    pub place: usize,
    /// The place whose allocation the access uses: the place asked for, or
    /// a place whose memory is `Unified` with it (used in place).
    pub target: usize,
    /// Steps, in order.
    pub steps: Vec<Step>,
    /// For writes: ranges that become stale, per place.
    pub invalidates: Vec<(usize, IntervalSet)>,
    /// Names of the places, by index (index 0 is the host).
    pub places: Vec<String>,
}

/// "4096 B", "64 KiB", "3 MiB" for exact multiples, else bytes.
pub(crate) fn bytes(n: usize) -> String {
    const KI: usize = 1024;
    if n >= KI * KI && n % (KI * KI) == 0 {
        format!("{} MiB", n / (KI * KI))
    } else if n >= KI && n % KI == 0 {
        format!("{} KiB", n / KI)
    } else {
        format!("{n} B")
    }
}

fn range(r: &Range<usize>) -> String {
    format!("[{}, {})", r.start, r.end)
}

impl Plan {
    /// Bytes the plan moves: copies between places and initial data.
    pub fn bytes_moved(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Copy { range, .. } | Step::Init { range, .. } => range.len(),
                _ => 0,
            })
            .sum()
    }

    /// True when the plan copies nothing and allocates nothing.
    pub fn is_noop(&self) -> bool {
        self.steps.is_empty()
    }

    /// The plan as text, one step a line; deterministic (no addresses, no timings).
    ///
    /// ```
    /// use ur_memory_manager::{Access, Plan, PlanKind, Route, Step};
    /// let plan = Plan {
    ///     kind: PlanKind::Access,
    ///     buffer: "b0".into(),
    ///     access: Access::Read,
    ///     range: 0..4096,
    ///     place: 1,
    ///     target: 1,
    ///     steps: vec![
    ///         Step::Allocate { place: 1, size: 4096 },
    ///         Step::Copy { from: 0, to: 1, range: 0..4096, route: Route::HostWrite },
    ///     ],
    ///     invalidates: vec![],
    ///     places: vec!["host".into(), "L1 sim-dev0".into()],
    /// };
    /// assert_eq!(
    ///     plan.explain(),
    ///     "b0: read [0, 4096) at L1 sim-dev0\n\
    ///      \x20 uses the allocation at L1 sim-dev0\n\
    ///      \x20 1. allocate 4 KiB at L1 sim-dev0\n\
    ///      \x20 2. copy [0, 4096) host -> L1 sim-dev0 by host write\n"
    /// );
    /// ```
    pub fn explain(&self) -> String {
        let name = |i: usize| self.places.get(i).cloned().unwrap_or_else(|| format!("place#{i}"));
        let mut s = String::new();
        match &self.kind {
            PlanKind::Access => {
                let _ = writeln!(
                    s,
                    "{}: {} {} at {}",
                    self.buffer,
                    self.access,
                    range(&self.range),
                    name(self.place)
                );
                if self.target == self.place {
                    let _ = writeln!(s, "  uses the allocation at {}", name(self.target));
                } else {
                    let _ = writeln!(s, "  uses the allocation at {} in place (unified)", name(self.target));
                }
                if self.steps.is_empty() {
                    let _ = writeln!(s, "  nothing to copy");
                }
            }
            PlanKind::Create { size, hints } => {
                let _ = writeln!(s, "{}: create, {}", self.buffer, bytes(*size));
                if hints.is_empty() {
                    let _ = writeln!(s, "  no hint");
                }
                for (h, t) in hints {
                    if h == t {
                        let _ = writeln!(s, "  hint {}", name(*h));
                    } else {
                        let _ = writeln!(
                            s,
                            "  hint {} uses the allocation at {} in place (unified)",
                            name(*h),
                            name(*t)
                        );
                    }
                }
                if self.steps.is_empty() {
                    let _ = writeln!(s, "  nothing to allocate until first use");
                }
            }
        }
        for (i, step) in self.steps.iter().enumerate() {
            let n = i + 1;
            let _ = match step {
                Step::Allocate { place, size } => writeln!(s, "  {n}. allocate {} at {}", bytes(*size), name(*place)),
                Step::Zero { place, range: r } => {
                    writeln!(s, "  {n}. zero {} at {} (never written)", range(r), name(*place))
                }
                Step::Copy {
                    from,
                    to,
                    range: r,
                    route,
                } => writeln!(
                    s,
                    "  {n}. copy {} {} -> {} by {route}",
                    range(r),
                    name(*from),
                    name(*to)
                ),
                Step::Init { place, range: r, path } => writeln!(
                    s,
                    "  {n}. write initial data {} caller memory -> {} by {path}",
                    range(r),
                    name(*place)
                ),
            };
        }
        for (p, set) in &self.invalidates {
            let _ = writeln!(s, "  then stale at {}: {set}", name(*p));
        }
        s
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_read_well() {
        assert_eq!(bytes(100), "100 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(3 << 20), "3 MiB");
        assert_eq!(bytes(1536), "1536 B");
    }

    #[test]
    fn explain_lists_staged_and_stale() {
        let plan = Plan {
            kind: PlanKind::Access,
            buffer: "b3".into(),
            access: Access::Write,
            range: 0..100,
            place: 2,
            target: 1,
            steps: vec![Step::Copy {
                from: 3,
                to: 1,
                range: 0..100,
                route: Route::Staged {
                    chunk: 1 << 20,
                    depth: 4,
                },
            }],
            invalidates: vec![(3, IntervalSet::from_range(0..100))],
            places: vec!["host".into(), "L1".into(), "L2".into(), "L3".into()],
        };
        let text = plan.explain();
        assert!(text.contains("in place (unified)"), "{text}");
        assert!(
            text.contains("host-staged copy (none): chunks of 1 MiB, ring of 4"),
            "{text}"
        );
        assert!(text.contains("then stale at L3: {[0, 100)}"), "{text}");
        let mapped = Route::Mapped {
            chunk: 4 << 20,
            depth: 2,
            end: MapEnd::Source,
        };
        assert_eq!(
            mapped.to_string(),
            "staged (mapped source, zero-copy): chunks of 4 MiB, 2 mapped at a time"
        );
        assert_eq!(plan.bytes_moved(), 100);
        assert!(!plan.is_noop());
    }
}
