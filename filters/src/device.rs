//! Filters as device kernels (OpenCL C) that accept device buffers only,
//! run through the project's [`Runtime`], and the shuffle-only dataset
//! path that reads stored chunks straight into device memory with
//! `ur-file-io` and unshuffles them there.

use std::sync::Arc;

use ur_api::{
    ArgValue, Backend, BufferDesc, BufferId, ContextId, DeviceId, EventId, KernelId, NdRange, ProgramId, ProgramSource,
    QueueId, Runtime,
};
use ur_file_io::{BackendKind, DeviceMem, FileIo, OpenOptions, Request};

use crate::error::H5Error;
use crate::filter::{FILTER_FLETCHER32, FILTER_SHUFFLE};
use crate::h5::{Dataset, Selection};
use crate::kind::{BufferKind, KindDecl};
use crate::planner::{ChunkSource, DeviceKernels};

pub use crate::device_fletcher::{DeviceFilterError, DeviceFletcher32, FLETCHER32_CL, FLETCHER_BLOCK_WORDS};

/// The kernels: HDF5's byte shuffle and its inverse, one work-item per element.
pub const SHUFFLE_CL: &str = r#"
__kernel void ur_unshuffle(__global const uchar *src, __global uchar *dst, ulong dst_off, ulong n, uint size, ulong count) {
    ulong i = get_global_id(0);
    if (i >= count) return;
    __global uchar *d = dst + dst_off + i * size;
    for (uint j = 0; j < size; ++j) d[j] = src[j * n + i];
}
__kernel void ur_shuffle(__global const uchar *src, __global uchar *dst, ulong dst_off, ulong n, uint size, ulong count) {
    ulong i = get_global_id(0);
    if (i >= count) return;
    __global const uchar *s = src + i * size;
    for (uint j = 0; j < size; ++j) dst[dst_off + j * n + i] = s[j];
}
"#;

/// HDF5's shuffle (filter 2) as an OpenCL C kernel: device buffers only.
#[derive(Debug)]
pub struct DeviceShuffle {
    rt: Arc<Runtime>,
    program: ProgramId,
    unshuffle: KernelId,
    shuffle: KernelId,
}

impl DeviceShuffle {
    /// Builds the kernels for `context` (an OpenCL context).
    pub fn new(rt: Arc<Runtime>, context: ContextId) -> ur_api::Result<Self> {
        let program = rt.create_program(context, &ProgramSource::OpenClC(SHUFFLE_CL.into()), "")?;
        let unshuffle = rt.create_kernel(program, "ur_unshuffle")?;
        let shuffle = rt.create_kernel(program, "ur_shuffle")?;
        Ok(DeviceShuffle {
            rt,
            program,
            unshuffle,
            shuffle,
        })
    }

    /// HDF5's filter id.
    pub fn id(&self) -> u32 {
        FILTER_SHUFFLE
    }

    /// What it accepts and returns: OpenCL device memory only.
    pub fn kinds() -> KindDecl {
        KindDecl::device_only("opencl")
    }

    /// Runs `kernel` over a chunk of `bytes` (elements of `size` bytes),
    /// writing only the first `out_bytes` of its result (an edge chunk).
    fn launch(
        &self,
        kernel: KernelId,
        queue: QueueId,
        (src, dst, dst_offset): (BufferId, BufferId, usize),
        bytes: usize,
        out_bytes: usize,
        size: usize,
        wait: &[EventId],
    ) -> ur_api::Result<EventId> {
        let out_bytes = out_bytes.min(bytes);
        let n = if size > 1 { bytes / size } else { 0 };
        if n <= 1 {
            return self.rt.enqueue_copy(queue, src, 0, dst, dst_offset, out_bytes, wait);
        }
        let count = (out_bytes / size).min(n);
        let (off, n64, sz, count64) = (dst_offset as u64, n as u64, size as u32, count as u64);
        let args = [
            ArgValue::Buffer(src),
            ArgValue::Buffer(dst),
            ArgValue::scalar(&off),
            ArgValue::scalar(&n64),
            ArgValue::scalar(&sz),
            ArgValue::scalar(&count64),
        ];
        let mut ev = self
            .rt
            .enqueue_launch(queue, kernel, &NdRange::d1(count.max(1)), &args, wait)?;
        let whole = n * size;
        if whole < out_bytes {
            // Bytes past the last whole element are not shuffled.
            let tail = self
                .rt
                .enqueue_copy(queue, src, whole, dst, dst_offset + whole, out_bytes - whole, &[ev])?;
            self.rt.release_event(ev)?;
            ev = tail;
        }
        Ok(ev)
    }

    /// Unshuffles a chunk of `bytes` at the start of `src` into `dst` at
    /// `dst_offset`, writing its first `out_bytes` only.
    pub fn decode(
        &self,
        queue: QueueId,
        src: BufferId,
        (dst, dst_offset): (BufferId, usize),
        bytes: usize,
        out_bytes: usize,
        size: usize,
        wait: &[EventId],
    ) -> ur_api::Result<EventId> {
        self.launch(
            self.unshuffle,
            queue,
            (src, dst, dst_offset),
            bytes,
            out_bytes,
            size,
            wait,
        )
    }

    /// Shuffles `bytes` at the start of `src` into `dst` at `dst_offset`.
    pub fn encode(
        &self,
        queue: QueueId,
        src: BufferId,
        (dst, dst_offset): (BufferId, usize),
        bytes: usize,
        size: usize,
        wait: &[EventId],
    ) -> ur_api::Result<EventId> {
        self.launch(self.shuffle, queue, (src, dst, dst_offset), bytes, bytes, size, wait)
    }
}

impl Drop for DeviceShuffle {
    fn drop(&mut self) {
        let _ = self.rt.release_kernel(self.unshuffle);
        let _ = self.rt.release_kernel(self.shuffle);
        let _ = self.rt.release_program(self.program);
    }
}

/// The device kernels of this module that `device` (in `context`) can run,
/// for the planner ([`crate::plan_chunk_with`],
/// [`Dataset::explain_chunk_with`](crate::h5::Dataset::explain_chunk_with)):
/// none on a device of another backend than OpenCL; on an OpenCL one, each
/// kernel whose program builds there (a build failure is logged and leaves
/// that filter on the host).
pub fn kernels_for(rt: &Arc<Runtime>, context: ContextId, device: DeviceId) -> DeviceKernels {
    let mut kernels = DeviceKernels::new();
    match rt.backend_of(device) {
        Ok(Backend::OpenCl) => {}
        other => {
            tracing::debug!(?other, "no device filter kernels: not an OpenCL device");
            return kernels;
        }
    }
    match DeviceShuffle::new(rt.clone(), context) {
        Ok(_) => kernels = kernels.with(FILTER_SHUFFLE, DeviceShuffle::kinds()),
        Err(e) => tracing::warn!(%e, "the shuffle kernel does not build; shuffle stays on the host"),
    }
    match DeviceFletcher32::new(rt.clone(), context, device) {
        Ok(_) => kernels = kernels.with(FILTER_FLETCHER32, DeviceFletcher32::kinds()),
        Err(e) => tracing::warn!(%e, "the Fletcher-32 kernels do not build; Fletcher-32 stays on the host"),
    }
    kernels
}

/// What [`read_to_device`] (and [`read_shuffled_to_device`]) moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceReadReport {
    /// Chunks read.
    pub chunks: usize,
    /// Stored bytes read from the file.
    pub stored_bytes: u64,
    /// Bytes copied between buffer kinds (a host bounce buffer to the
    /// device: the file-io fallback); the direct fastpath copies none.
    pub bytes_copied: u64,
}

/// The device kernels [`read_to_device`] may run; a filter without one
/// makes the dataset one it refuses ([`device_read_refusal`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct DeviceDecoders<'a> {
    /// HDF5's shuffle as a kernel.
    pub shuffle: Option<&'a DeviceShuffle>,
    /// HDF5's Fletcher-32 as kernels.
    pub fletcher32: Option<&'a DeviceFletcher32>,
}

impl DeviceDecoders<'_> {
    /// The kernels offered, for the planner and [`device_read_refusal`].
    pub fn kernels(&self) -> DeviceKernels {
        let mut k = DeviceKernels::new();
        if self.shuffle.is_some() {
            k = k.with(FILTER_SHUFFLE, DeviceShuffle::kinds());
        }
        if self.fletcher32.is_some() {
            k = k.with(FILTER_FLETCHER32, DeviceFletcher32::kinds());
        }
        k
    }
}

/// Why [`read_to_device`] cannot load `ds` with `kernels` (`None`: it
/// can). It loads a dataset whose filters are shuffle and Fletcher-32
/// only, each at most once and each with its kernel in `kernels`, shuffle
/// (if present) the first filter (the last to decode: it writes the
/// destination), chunked in whole rows (every chunk dimension but the
/// first spans the dataset).
pub fn device_read_refusal(ds: &Dataset, kernels: &DeviceKernels) -> Option<String> {
    let specs = ds.filters();
    for (i, s) in specs.iter().enumerate() {
        if s.id != FILTER_SHUFFLE && s.id != FILTER_FLETCHER32 {
            return Some(format!("filter {i} (id {}) has no device kernel", s.id));
        }
        if kernels.get(s.id).is_none() {
            return Some(format!(
                "filter {i} (id {}): its kernel does not build on the device",
                s.id
            ));
        }
        if specs[..i].iter().any(|o| o.id == s.id) {
            return Some(format!("filter id {} appears twice", s.id));
        }
        if s.id == FILTER_SHUFFLE && i != 0 {
            return Some("shuffle is not the first filter".into());
        }
    }
    if ds.shape().iter().zip(ds.chunk_shape()).skip(1).any(|(s, c)| s != c) {
        return Some("chunks are not whole rows".into());
    }
    None
}

/// Where the stored bytes of `ds`'s chunks land when [`read_to_device`]
/// reads them on `queue`: [`ChunkSource::FileToDevice`] of `kind` when
/// file-io's plan for the first allocated chunk (into a device buffer like
/// the loader's staging buffer) uses no bounce buffer, else
/// [`ChunkSource::FileToPinned`] (its pinned bounce buffers).
pub fn device_source(
    ds: &Dataset,
    io: &FileIo,
    (context, device, queue): (ContextId, DeviceId, QueueId),
    kind: &BufferKind,
) -> Result<ChunkSource, H5Error> {
    let rt = io.runtime().clone();
    let origins = crate::h5::chunks_meeting(&Selection::all(ds.shape()), ds.chunk_shape());
    let mut first = None;
    for origin in &origins {
        if let Some(loc) = ds.chunk_location(origin)? {
            first = Some(loc);
            break;
        }
    }
    let Some((addr, stored, _)) = first else {
        return Ok(ChunkSource::FileToDevice(kind.clone()));
    };
    let io_err = |call: &'static str| {
        move |e: ur_file_io::FileIoError| H5Error::Call {
            call,
            what: e.to_string(),
        }
    };
    let file = io
        .open(ds.path(), OpenOptions::read())
        .map_err(io_err("FileIo::open"))?;
    let probe = rt
        .create_buffer(
            context,
            &BufferDesc::new(ds.chunk_bytes().max(stored as usize)).on(device),
            None,
        )
        .map_err(|e| H5Error::Call {
            call: "create_buffer",
            what: e.to_string(),
        })?;
    let target = DeviceMem::Buffer {
        queue,
        buffer: probe,
        offset: 0,
    };
    let explained = io.explain(&file, &Request::read(target, addr, stored as usize));
    let _ = rt.release_buffer(probe);
    let explained = explained.map_err(io_err("FileIo::explain"))?;
    let bounce = explained.pieces.iter().any(|p| p.chosen == BackendKind::Bounce);
    Ok(if bounce {
        ChunkSource::FileToPinned
    } else {
        ChunkSource::FileToDevice(kind.clone())
    })
}

/// Reads a shuffle-only dataset chunked in whole rows into `dst`: see
/// [`read_to_device`] (here with the shuffle kernel only).
pub fn read_shuffled_to_device(
    ds: &Dataset,
    io: &FileIo,
    shuffle: &DeviceShuffle,
    context: ContextId,
    device: DeviceId,
    queue: QueueId,
    dst: BufferId,
) -> Result<DeviceReadReport, H5Error> {
    let decoders = DeviceDecoders {
        shuffle: Some(shuffle),
        fletcher32: None,
    };
    read_to_device(ds, io, decoders, (context, device, queue), dst)
}

/// Reads a dataset [`device_read_refusal`] accepts into `dst` (at byte
/// 0) on `queue`'s device: each chunk's stored bytes go from the file into
/// a device staging buffer through `io` (its fastpath where offered), then
/// the kernels decode them there: Fletcher-32 checked on the device and
/// stripped in place, shuffle undone into place (or, without it, one
/// device copy into place). No host decode. A chunk not allocated is an
/// error (the host path writes the fill value).
pub fn read_to_device(
    ds: &Dataset,
    io: &FileIo,
    decoders: DeviceDecoders<'_>,
    (context, device, queue): (ContextId, DeviceId, QueueId),
    dst: BufferId,
) -> Result<DeviceReadReport, H5Error> {
    let rt = io.runtime().clone();
    let call = |call: &'static str| {
        move |e: ur_api::Error| H5Error::Call {
            call,
            what: e.to_string(),
        }
    };
    if let Some(reason) = device_read_refusal(ds, &decoders.kernels()) {
        return Err(H5Error::Pipeline {
            dataset: ds.name().into(),
            source: crate::FilterError::Corrupt {
                filter: "device read",
                reason,
            },
        });
    }
    let size = ds
        .filters()
        .iter()
        .find(|s| s.id == FILTER_SHUFFLE)
        .and_then(|s| s.cd_values.first().copied())
        .unwrap_or(1) as usize;
    let file = io.open(ds.path(), OpenOptions::read()).map_err(|e| H5Error::Call {
        call: "FileIo::open",
        what: e.to_string(),
    })?;
    // Fletcher-32 chunks are stored 4 bytes longer than the chunk.
    let staging = rt
        .create_buffer(context, &BufferDesc::new(ds.chunk_bytes() + 4).on(device), None)
        .map_err(call("create_buffer"))?;
    let mut report = DeviceReadReport::default();
    let origins = crate::h5::chunks_meeting(&Selection::all(ds.shape()), ds.chunk_shape());
    let row = ds.byte_len() / ds.shape()[0].max(1) as usize;
    let result = (|| {
        for origin in origins {
            let Some((addr, stored, mask)) = ds.chunk_location(&origin)? else {
                return Err(H5Error::Call {
                    call: "H5Dget_chunk_info_by_coord",
                    what: format!("{} chunk {origin:?} not allocated", ds.name()),
                });
            };
            let start = origin[0] as usize * row;
            let bytes = (ds.byte_len() - start).min(ds.chunk_bytes());
            let target = DeviceMem::Buffer {
                queue,
                buffer: staging,
                offset: 0,
            };
            let rep = io
                .run(&file, &Request::read(target, addr, stored as usize))
                .map_err(|e| H5Error::Call {
                    call: "FileIo::run",
                    what: e.to_string(),
                })?;
            report.bytes_copied += rep.bytes_by(BackendKind::Bounce);
            report.stored_bytes += stored;
            report.chunks += 1;
            // Decode order: the pipeline reversed, filters in `mask` skipped.
            let mut len = stored as usize;
            let mut placed = None;
            for (index, f) in ds.pipeline().active(mask).rev() {
                match (f.id(), decoders.fletcher32, decoders.shuffle) {
                    (FILTER_FLETCHER32, Some(fl), _) => {
                        len = fl.decode(queue, staging, len, &[]).map_err(|e| match e {
                            DeviceFilterError::Filter(source) => H5Error::Chunk {
                                dataset: ds.name().into(),
                                chunk: origin.clone(),
                                filter: index,
                                name: f.name(),
                                source,
                            },
                            DeviceFilterError::Runtime(e) => call("enqueue_launch")(e),
                        })?;
                    }
                    // An edge chunk is stored at full chunk size; only its first `bytes` are the dataset's.
                    (FILTER_SHUFFLE, _, Some(sh)) => {
                        placed = Some(
                            sh.decode(queue, staging, (dst, start), len, bytes, size, &[])
                                .map_err(call("enqueue_launch"))?,
                        );
                    }
                    (id, _, _) => {
                        return Err(H5Error::Call {
                            call: "read_to_device",
                            what: format!("{} chunk {origin:?}: filter {id} has no kernel here", ds.name()),
                        })
                    }
                }
            }
            let ev = match placed {
                Some(ev) => ev,
                None => rt
                    .enqueue_copy(queue, staging, 0, dst, start, bytes.min(len), &[])
                    .map_err(call("enqueue_copy"))?,
            };
            rt.complete(ev).map_err(call("wait"))?;
        }
        Ok(())
    })();
    let _ = rt.release_buffer(staging);
    result.map(|()| report)
}
