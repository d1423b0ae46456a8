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
    /// What it accepts and returns when decoding (the host filter).
    pub decl: KindDecl,
    /// What a device kernel of the same filter accepts and returns, where
    /// one was offered ([`DeviceKernels`]): the planner may run the stage
    /// there instead.
    pub kernel: Option<KindDecl>,
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
        /// Whether its device kernel runs ([`Stage::kernel`]), not the host filter.
        kernel: bool,
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
                    kernel,
                    at,
                    out,
                    bytes_in,
                    bytes_out,
                    in_place,
                } => writeln!(
                    s,
                    "{i}. {name} (filter {index}{}) on {at}{}: {bytes_in} -> {bytes_out} bytes{}",
                    if *kernel { ", device kernel" } else { "" },
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

/// The device kernels a device can run, by HDF5 filter id, each with what
/// it accepts and returns when decoding. Offered to the planner
/// ([`plan_chunk_with`]), a filter with a kernel may run on the device
/// instead of on the host, where that moves fewer bytes.
///
/// ```
/// use ur_filters::{plan_chunk_with, BufferKind, ChunkSource, DeviceKernels, FilterSpec, Pipeline, FILTER_FLETCHER32};
/// use ur_filters::device::DeviceFletcher32;
///
/// let p = Pipeline::new(&[FilterSpec::new(FILTER_FLETCHER32, vec![])])?;
/// let dev = BufferKind::device("opencl", 0);
/// let kernels = DeviceKernels::new().with(FILTER_FLETCHER32, DeviceFletcher32::kinds());
/// // Stored bytes read straight into the device: checked there, no copy.
/// let plan = plan_chunk_with(&p, 0, ChunkSource::FileToDevice(dev.clone()), 1004, 1000, &dev, &kernels);
/// assert_eq!(plan.copies(), 0);
/// # Ok::<(), ur_filters::FilterError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceKernels(BTreeMap<u32, KindDecl>);

impl DeviceKernels {
    /// No kernels: every filter runs on the host.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the kernel of filter `id`, declaring `decl`.
    pub fn with(mut self, id: u32, decl: KindDecl) -> Self {
        self.0.insert(id, decl);
        self
    }

    /// The kernel of filter `id`, if offered.
    pub fn get(&self, id: u32) -> Option<&KindDecl> {
        self.0.get(&id)
    }

    /// The filter ids with a kernel.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.keys().copied()
    }

    /// Whether none is offered.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The same kernels, each accepting exactly `kind`: the device they were
    /// built for (by [`crate::device::kernels_for`]) under the name a caller
    /// plans with, e.g. a memory-manager place
    /// ([`place_kind`](crate::h5::place_kind)), whose name is not the
    /// backend's.
    ///
    /// ```
    /// use ur_filters::{BufferKind, DeviceKernels, FILTER_SHUFFLE};
    /// use ur_filters::device::DeviceShuffle;
    ///
    /// let place = BufferKind::device("L1 pthread/c0:1", 1);
    /// let k = DeviceKernels::new().with(FILTER_SHUFFLE, DeviceShuffle::kinds());
    /// assert!(!k.get(FILTER_SHUFFLE).unwrap().accepts(&place));
    /// assert!(k.on(&place).get(FILTER_SHUFFLE).unwrap().accepts(&place));
    /// ```
    pub fn on(&self, kind: &BufferKind) -> Self {
        DeviceKernels(
            self.0
                .iter()
                .map(|(id, decl)| {
                    let decl = KindDecl {
                        accepts: vec![KindPattern::Exactly(kind.clone())],
                        ..decl.clone()
                    };
                    (*id, decl)
                })
                .collect(),
        )
    }
}

/// The decode stages of one chunk: the pipeline's active filters (bit `i`
/// of `mask` set: filter `i` skipped) in read order, with their sizes
/// (stored size in; a size-changing codec's output is taken as the raw
/// chunk size, Fletcher-32 drops its 4 bytes).
pub fn stages(pipeline: &Pipeline, mask: u32, stored: usize, raw: usize) -> Vec<Stage> {
    stages_with(pipeline, mask, stored, raw, &DeviceKernels::new())
}

/// Like [`stages`], each stage also offering the device kernel of its
/// filter where `kernels` has one.
pub fn stages_with(pipeline: &Pipeline, mask: u32, stored: usize, raw: usize, kernels: &DeviceKernels) -> Vec<Stage> {
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
                kernel: kernels.get(f.id()).cloned(),
                bytes_in: size,
                bytes_out: out,
            };
            size = out;
            st
        })
        .collect()
}

/// Plans one chunk of `pipeline` read from `source` into `destination`,
/// every filter on the host.
pub fn plan_chunk(
    pipeline: &Pipeline,
    mask: u32,
    source: ChunkSource,
    stored: usize,
    raw: usize,
    destination: &BufferKind,
) -> ChunkPlan {
    plan_chunk_with(pipeline, mask, source, stored, raw, destination, &DeviceKernels::new())
}

/// Plans one chunk of `pipeline` read from `source` into `destination`, a
/// filter with a kernel in `kernels` on the host or on the device,
/// whichever moves fewer bytes (the host on a tie).
pub fn plan_chunk_with(
    pipeline: &Pipeline,
    mask: u32,
    source: ChunkSource,
    stored: usize,
    raw: usize,
    destination: &BufferKind,
    kernels: &DeviceKernels,
) -> ChunkPlan {
    plan_stages(
        &stages_with(pipeline, mask, stored, raw, kernels),
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
        for p in st.decl.accepts.iter().chain(st.kernel.iter().flat_map(|k| &k.accepts)) {
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
/// after each stage, minimising (bytes copied, copies). A stage runs as its
/// host filter or its device kernel, on one of the kinds that one accepts;
/// a copy to that kind comes first where the chunk is elsewhere; a last
/// copy takes the output to `destination`.
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
            let options = std::iter::once((false, &st.decl)).chain(st.kernel.iter().map(|k| (true, k)));
            for (kernel, decl) in options {
                for at in cands.iter().filter(|k| decl.accepts(k)) {
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
                    let out = decl.output(at);
                    steps.push(PlanStep::Run {
                        index: st.index,
                        name: st.name.clone(),
                        kernel,
                        at: at.clone(),
                        out: out.clone(),
                        bytes_in: st.bytes_in,
                        bytes_out: st.bytes_out,
                        in_place: decl.in_place,
                    });
                    if next.get(&out).is_none_or(|(cost, _)| (b, c) < *cost) {
                        next.insert(out, ((b, c), steps));
                    }
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
