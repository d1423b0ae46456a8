//! The pipeline planner: where each filter of a chunk runs, and the copies
//! between buffer kinds that placement needs, with the fewest bytes moved.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use crate::filter::{Direction, Pipeline};
use crate::kind::{BufferKind, KindDecl, KindPattern};

/// Where a chunk's stored bytes come from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChunkSource {
    /// A file fastpath reads them straight into pinned host memory.
    FileToPinned,
    /// A file fastpath reads them straight into this device's memory.
    FileToDevice(BufferKind),
    /// The fallback: an ordinary read into pageable host memory.
    Fallback,
}

impl ChunkSource {
    /// The kind of buffer the stored bytes land in.
    pub fn kind(&self) -> BufferKind {
        match self {
            ChunkSource::FileToPinned => BufferKind::HostPinned,
            ChunkSource::FileToDevice(k) => k.clone(),
            ChunkSource::Fallback => BufferKind::HostPageable,
        }
    }
}

/// One filter of a chunk's decode, with its declaration and sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// The filter's index in the dataset's pipeline.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// What it accepts and returns when decoding.
    pub decl: KindDecl,
    /// Bytes it reads.
    pub bytes_in: usize,
    /// Bytes it writes.
    pub bytes_out: usize,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanStep {
    /// The stored bytes are read into a buffer of this kind.
    Read {
        /// Where they land.
        into: BufferKind,
        /// How many.
        bytes: usize,
    },
    /// A copy between kinds.
    Copy {
        /// From.
        from: BufferKind,
        /// To.
        to: BufferKind,
        /// Bytes copied.
        bytes: usize,
    },
    /// A filter runs on a buffer of this kind.
    Run {
        /// Index in the pipeline.
        index: usize,
        /// Filter name.
        name: String,
        /// The kind it reads.
        at: BufferKind,
        /// The kind it leaves its output in.
        out: BufferKind,
        /// Bytes read.
        bytes_in: usize,
        /// Bytes written.
        bytes_out: usize,
        /// Whether it rewrote its input.
        in_place: bool,
    },
}

/// A chunk's plan: steps in order, as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkPlan {
    /// The steps.
    pub steps: Vec<PlanStep>,
    /// Where the decoded chunk must end up.
    pub destination: BufferKind,
}

impl ChunkPlan {
    /// How many copies between kinds.
    pub fn copies(&self) -> usize {
        self.steps.iter().filter(|s| matches!(s, PlanStep::Copy { .. })).count()
    }

    /// Bytes copied between kinds.
    pub fn bytes_copied(&self) -> usize {
        self.steps
            .iter()
            .map(|s| match s {
                PlanStep::Copy { bytes, .. } => *bytes,
                _ => 0,
            })
            .sum()
    }

    /// A readable account of the plan, one step a line.
    pub fn explain(&self) -> String {
        let mut s = String::new();
        for (i, step) in self.steps.iter().enumerate() {
            let _ = match step {
                PlanStep::Read { into, bytes } => writeln!(s, "{i}. read {bytes} stored bytes into {into}"),
                PlanStep::Copy { from, to, bytes } => writeln!(s, "{i}. copy {bytes} bytes {from} -> {to}"),
                PlanStep::Run {
                    index,
                    name,
                    at,
                    out,
                    bytes_in,
                    bytes_out,
                    in_place,
                } => writeln!(
                    s,
                    "{i}. {name} (filter {index}) on {at}{}: {bytes_in} -> {bytes_out} bytes{}",
                    if out != at { format!(" -> {out}") } else { String::new() },
                    if *in_place { ", in place" } else { "" }
                ),
            };
        }
        let _ = writeln!(
            s,
            "=> {} steps, ends at {}: {} copies, {} bytes copied",
            self.steps.len(),
            self.destination,
            self.copies(),
            self.bytes_copied()
        );
        s
    }
}

impl fmt::Display for ChunkPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.explain())
    }
}

/// The decode stages of one chunk: the pipeline's active filters (bit `i`
/// of `mask` set: filter `i` skipped) in read order, with their sizes
/// (stored size in; a size-changing codec's output is taken as the raw
/// chunk size, Fletcher-32 drops its 4 bytes).
pub fn stages(pipeline: &Pipeline, mask: u32, stored: usize, raw: usize) -> Vec<Stage> {
    let mut size = stored;
    pipeline
        .active(mask)
        .rev()
        .map(|(index, f)| {
            let out = if f.keeps_size() {
                size
            } else if f.id() == crate::FILTER_FLETCHER32 {
                size.saturating_sub(4)
            } else {
                raw
            };
            let st = Stage {
                index,
                name: f.name().to_string(),
                decl: f.kinds(Direction::Decode),
                bytes_in: size,
                bytes_out: out,
            };
            size = out;
            st
        })
        .collect()
}

/// Plans one chunk of `pipeline` read from `source` into `destination`.
pub fn plan_chunk(
    pipeline: &Pipeline,
    mask: u32,
    source: ChunkSource,
    stored: usize,
    raw: usize,
    destination: &BufferKind,
) -> ChunkPlan {
    plan_stages(
        &stages(pipeline, mask, stored, raw),
        &source.kind(),
        stored,
        destination,
    )
}

/// The kinds worth considering: host pageable and pinned, the source, the
/// destination, every kind a stage names, and one device of each backend a
/// stage accepts where none is there yet.
pub(crate) fn candidates(stages: &[Stage], source: &BufferKind, destination: &BufferKind) -> Vec<BufferKind> {
    let mut c = vec![
        BufferKind::HostPageable,
        BufferKind::HostPinned,
        source.clone(),
        destination.clone(),
    ];
    for st in stages {
        for p in &st.decl.accepts {
            match p {
                KindPattern::Exactly(k) => c.push(k.clone()),
                KindPattern::DeviceOf(b) if !c.iter().any(|k| p.matches(k)) => c.push(BufferKind::device(b.clone(), 0)),
                _ => {}
            }
        }
    }
    c.sort();
    c.dedup();
    c
}

/// Plans given stages: dynamic programming over the kind the chunk is in
/// after each stage, minimising (bytes copied, copies). A stage runs on one
/// of the kinds it accepts; a copy to that kind comes first where the chunk
/// is elsewhere; a last copy takes the output to `destination`.
pub fn plan_stages(stages: &[Stage], source: &BufferKind, stored: usize, destination: &BufferKind) -> ChunkPlan {
    let cands = candidates(stages, source, destination);
    type Best = ((usize, usize), Vec<PlanStep>);
    let mut best: BTreeMap<BufferKind, Best> = BTreeMap::new();
    best.insert(
        source.clone(),
        (
            (0, 0),
            vec![PlanStep::Read {
                into: source.clone(),
                bytes: stored,
            }],
        ),
    );
    for st in stages {
        let mut next: BTreeMap<BufferKind, Best> = BTreeMap::new();
        for (cur, ((bytes, copies), steps)) in &best {
            for at in cands.iter().filter(|k| st.decl.accepts(k)) {
                let mut steps = steps.clone();
                let (mut b, mut c) = (*bytes, *copies);
                if at != cur {
                    steps.push(PlanStep::Copy {
                        from: cur.clone(),
                        to: at.clone(),
                        bytes: st.bytes_in,
                    });
                    b += st.bytes_in;
                    c += 1;
                }
                let out = st.decl.output(at);
                steps.push(PlanStep::Run {
                    index: st.index,
                    name: st.name.clone(),
                    at: at.clone(),
                    out: out.clone(),
                    bytes_in: st.bytes_in,
                    bytes_out: st.bytes_out,
                    in_place: st.decl.in_place,
                });
                if next.get(&out).is_none_or(|(cost, _)| (b, c) < *cost) {
                    next.insert(out, ((b, c), steps));
                }
            }
        }
        best = next;
    }
    let last = stages.last().map_or(stored, |s| s.bytes_out);
    let finish = best.into_iter().map(|(kind, ((b, c), mut steps))| {
        if &kind != destination {
            steps.push(PlanStep::Copy {
                from: kind,
                to: destination.clone(),
                bytes: last,
            });
            ((b + last, c + 1), steps)
        } else {
            ((b, c), steps)
        }
    });
    let (_, steps) = finish
        .min_by_key(|(cost, _)| *cost)
        .expect("every stage accepts some candidate kind (host filters accept host memory)");
    ChunkPlan {
        steps,
        destination: destination.clone(),
    }
}

#[cfg(test)]
#[path = "planner_tests.rs"]
mod tests;
