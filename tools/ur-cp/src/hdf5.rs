//! `ur-cp --hdf5 FILE:/dataset`: a chunked, filtered HDF5 dataset into a
//! logical buffer made current at the selected device, with the plan of the
//! first chunks, the path that ran, and a summary of all of them.
//!
//! Two paths, and the plans printed are those of the path that runs:
//! - device kernels: where the device runs a kernel for every filter
//!   (`ur_filters::device::kernels_for`: shuffle, Fletcher-32 on OpenCL),
//!   the loader takes the dataset (`device_read_refusal`) and the planner,
//!   given the kernels and where file-io lands the stored bytes, puts every
//!   filter of every chunk on the device, the stored chunks are read by
//!   `ur-file-io` into device memory and decoded there, straight into the
//!   logical buffer's device allocation;
//! - host decode otherwise: `ur-filters`' direct chunk reads decoded on the
//!   host, then the memory manager's copy to the device (plans with host
//!   filters only).
//!
//! ```text
//! ur-cp: f.h5:/d1_f32_shuffle_fletcher -> opencl device "llvmpipe ..." (device(L1 llvmpipe .../c0:1))
//!   dataset shape [300], chunks [64], 4 bytes/element, 1200 bytes; filters: shuffle -> fletcher32
//!   device filter kernels: shuffle, fletcher32
//!   path   device kernels (fletcher32 -> shuffle): stored chunks read by file-io into device memory, decoded there
//!   plan of chunk [0]:
//!     0. read 260 stored bytes into device(L1 llvmpipe .../c0:1)
//!     1. fletcher32 (filter 1, device kernel) on device(L1 llvmpipe .../c0:1): 260 -> 256 bytes, in place
//!     2. shuffle (filter 0, device kernel) on device(L1 llvmpipe .../c0:1): 256 -> 256 bytes
//!     => 3 steps, ends at device(L1 llvmpipe .../c0:1): 0 copies, 0 bytes copied
//!   read   5 chunks, 1300 stored bytes -> 1200 bytes in 0.028 s (0.0 MiB/s); file-io bounced 0 bytes through host memory
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ur_api::{ContextId, DeviceId, Location, QueueId, QueueProps, Runtime};
use ur_file_io::{DirectIo, FileIo, Settings};
use ur_filters::device::{
    device_read_refusal, device_source, kernels_for, read_to_device, DeviceDecoders, DeviceFletcher32, DeviceShuffle,
};
use ur_filters::h5::{self, chunks_meeting, Dataset, Selection};
use ur_filters::{BufferKind, ChunkPlan, DeviceKernels, PlanStep, FILTER_FLETCHER32, FILTER_SHUFFLE};
use ur_memory_manager::{Access, LogicalBuffer, MemoryManager, Place};

const MIB: f64 = (1u64 << 20) as f64;

/// Splits `FILE:/dataset` at the last `:` that is followed by `/`.
pub fn parse_spec(spec: &str) -> Result<(&Path, &str), String> {
    match spec.rfind(":/") {
        Some(at) if at > 0 => Ok((Path::new(&spec[..at]), &spec[at + 1..])),
        _ => Err(format!(
            "--hdf5 `{spec}`: expected FILE:/dataset, e.g. data.h5:/group/temps"
        )),
    }
}

/// What `--hdf5` mode does besides loading.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// How many chunk plans to print.
    pub plans: usize,
    /// Compare the device's copy with a separate host read.
    pub verify: bool,
    /// Write the device's copy to this file.
    pub dump: Option<&'a Path>,
}

/// The filter names of `kernels`, e.g. `shuffle, fletcher32`.
fn kernel_names(kernels: &DeviceKernels) -> String {
    let names: Vec<&str> = kernels
        .ids()
        .map(|id| match id {
            FILTER_SHUFFLE => "shuffle",
            FILTER_FLETCHER32 => "fletcher32",
            _ => "?",
        })
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Whether every filter run of `plan` is a device kernel.
fn all_kernels(plan: &ChunkPlan) -> bool {
    plan.steps
        .iter()
        .all(|s| !matches!(s, PlanStep::Run { kernel: false, .. }))
}

/// The device path, where it runs: its file-io engine and the chunk plans
/// with the kernels; `Err` why not (then the host decode runs).
fn device_plans(
    ds: &Dataset,
    rt: &Arc<Runtime>,
    (ctx, dev, queue): (ContextId, DeviceId, QueueId),
    kind: &BufferKind,
    kernels: &DeviceKernels,
    origins: &[Vec<u64>],
) -> Result<Result<(FileIo, Vec<ChunkPlan>), String>, String> {
    if kernels.is_empty() {
        return Ok(Err("no filter kernel runs on this device".into()));
    }
    if ds.byte_len() == 0 {
        return Ok(Err("the dataset is empty".into()));
    }
    if let Some(why) = device_read_refusal(ds, kernels) {
        return Ok(Err(format!("the device loader needs a kernel missing here: {why}")));
    }
    for origin in origins {
        if ds.chunk_location(origin).map_err(|e| e.to_string())?.is_none() {
            return Ok(Err(format!(
                "chunk {origin:?} is not allocated (the fill value is written on the host)"
            )));
        }
    }
    // Chunk reads are small and unaligned: buffered, like the filters bench.
    let settings = Settings {
        direct_io: DirectIo::Off,
        ..Settings::from_env().map_err(|e| e.to_string())?
    };
    let io = FileIo::with_settings(rt.clone(), settings).map_err(|e| e.to_string())?;
    let source = device_source(ds, &io, (ctx, dev, queue), kind).map_err(|e| e.to_string())?;
    let mut plans = Vec::with_capacity(origins.len());
    for origin in origins {
        let plan = ds
            .explain_chunk_with(origin, source.clone(), kind, kernels)
            .map_err(|e| e.to_string())?;
        if !all_kernels(&plan) {
            return Ok(Err(format!(
                "with the stored bytes read into {}, the planner keeps a filter of chunk {origin:?} on the host",
                source.kind()
            )));
        }
        plans.push(plan);
    }
    Ok(Ok((io, plans)))
}

/// Loads the whole dataset through the device kernels into `buf`'s
/// allocation at `place`; returns the line to print.
fn load_on_device(
    ds: &Dataset,
    io: &FileIo,
    mm: &MemoryManager,
    (buf, place): (LogicalBuffer, Place),
    (ctx, dev): (ContextId, DeviceId),
    kernels: &DeviceKernels,
) -> Result<String, String> {
    let rt = mm.runtime().clone();
    let needs = |id: u32| kernels.get(id).is_some() && ds.filters().iter().any(|s| s.id == id);
    let shuffle = needs(FILTER_SHUFFLE)
        .then(|| DeviceShuffle::new(rt.clone(), ctx))
        .transpose()
        .map_err(|e| e.to_string())?;
    let fletcher32 = needs(FILTER_FLETCHER32)
        .then(|| DeviceFletcher32::new(rt.clone(), ctx, dev))
        .transpose()
        .map_err(|e| e.to_string())?;
    let decoders = DeviceDecoders {
        shuffle: shuffle.as_ref(),
        fletcher32: fletcher32.as_ref(),
    };
    let len = ds.byte_len();
    let start = Instant::now();
    // The whole range is overwritten: nothing copied in, current only here after.
    let acquired = mm
        .acquire(buf, place, Access::DiscardWrite, 0..len)
        .map_err(|e| e.to_string())?;
    let view = acquired.device().map_err(|e| e.to_string())?;
    let report =
        read_to_device(ds, io, decoders, (ctx, dev, view.queue()), view.buffer()).map_err(|e| e.to_string())?;
    drop(acquired);
    let secs = start.elapsed().as_secs_f64().max(1e-9);
    Ok(format!(
        "  read   {} chunks, {} stored bytes -> {len} bytes in {secs:.3} s ({:.1} MiB/s); \
         file-io bounced {} bytes through host memory",
        report.chunks,
        report.stored_bytes,
        len as f64 / MIB / secs,
        report.bytes_copied
    ))
}

/// Loads the dataset named by `spec` into `dev`'s memory and prints the
/// plans of the first `opts.plans` chunks, the path that ran and a
/// summary. With `opts.verify`, compares the device's copy with a separate
/// host read of the dataset (`Ok(false)` on a mismatch).
pub fn run(spec: &str, rt: Runtime, dev: DeviceId, opts: &Options<'_>) -> Result<bool, String> {
    let plans = opts.plans;
    let (file, name) = parse_spec(spec)?;
    let ds = Dataset::open(file, name, false).map_err(|e| e.to_string())?;
    let rt = Arc::new(rt);
    let info = rt.device_info(dev).map_err(|e| e.to_string())?;
    let backend = rt.backend_of(dev).map_err(|e| e.to_string())?;
    let ctx = rt.create_context(&[dev]).map_err(|e| e.to_string())?;
    let mm = MemoryManager::new(rt.clone(), &[Location::new(ctx, dev)]).map_err(|e| e.to_string())?;
    let place = mm
        .places()
        .into_iter()
        .find(|p| *p != Place::Host)
        .ok_or("the memory manager has no device place")?;
    let kind = h5::place_kind(&mm, place).map_err(|e| e.to_string())?;
    let filters: Vec<&str> = ds.pipeline().filters().iter().map(|f| f.name()).collect();
    println!(
        "ur-cp: {}:{} -> {backend} device \"{}\" ({kind})",
        file.display(),
        ds.name(),
        info.name
    );
    println!(
        "  dataset shape {:?}, chunks {:?}, {} bytes/element, {} bytes; filters: {}",
        ds.shape(),
        ds.chunk_shape(),
        ds.element_size(),
        ds.byte_len(),
        if filters.is_empty() {
            "none".into()
        } else {
            filters.join(" -> ")
        }
    );
    // Building the kernels costs a compile per program: asked only where
    // the device loader could take the dataset given every kernel.
    let every = DeviceKernels::new()
        .with(FILTER_SHUFFLE, DeviceShuffle::kinds())
        .with(FILTER_FLETCHER32, DeviceFletcher32::kinds());
    let refused = device_read_refusal(&ds, &every);
    let kernels = match &refused {
        // Declared on the place's kind, the name the plans use for this device.
        None => kernels_for(&rt, ctx, dev).on(&kind),
        Some(_) => DeviceKernels::new(),
    };
    println!(
        "  device filter kernels: {}",
        if refused.is_some() {
            "not asked".into()
        } else {
            kernel_names(&kernels)
        }
    );
    let all = Selection::all(ds.shape());
    let origins = chunks_meeting(&all, ds.chunk_shape());
    let buf = mm.create_buffer(ds.byte_len().max(1)).map_err(|e| e.to_string())?;
    // A queue for file-io's plan of the device path (the load runs on the manager's).
    let queue = rt
        .create_queue(ctx, dev, &QueueProps::default())
        .map_err(|e| e.to_string())?;
    let device = match refused {
        Some(why) => Ok(Err(format!("the device loader does not take it: {why}"))),
        None => device_plans(&ds, &rt, (ctx, dev, queue), &kind, &kernels, &origins),
    };
    let _ = rt.release_queue(queue);
    let device = device?;
    let (device_io, chunk_plans) = match device {
        Ok((io, plans)) => {
            // Decode order: the pipeline reversed.
            let used: Vec<&str> = ds.pipeline().filters().iter().rev().map(|f| f.name()).collect();
            println!(
                "  path   device kernels ({}): stored chunks read by file-io into device memory, decoded there",
                if used.is_empty() {
                    "none needed".into()
                } else {
                    used.join(" -> ")
                }
            );
            (Some(io), plans)
        }
        Err(why) => {
            println!("  path   host decode ({why}), then the memory manager's copy to the device");
            let plans = origins
                .iter()
                .map(|origin| ds.explain_chunk(origin, &kind).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            (None, plans)
        }
    };
    let (mut copies, mut copied) = (0usize, 0usize);
    for (i, (origin, plan)) in origins.iter().zip(&chunk_plans).enumerate() {
        copies += plan.copies();
        copied += plan.bytes_copied();
        if i < plans {
            println!("  plan of chunk {origin:?}:");
            for line in plan.explain().lines() {
                println!("    {line}");
            }
        }
    }
    if origins.len() > plans {
        println!(
            "  ({} more chunk plans not shown; --plans N shows more)",
            origins.len() - plans
        );
    }
    match &device_io {
        Some(io) => println!("{}", load_on_device(&ds, io, &mm, (buf, place), (ctx, dev), &kernels)?),
        None => {
            let start = Instant::now();
            let report = ds.read_logical(&all, &mm, buf, place, 0).map_err(|e| e.to_string())?;
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            println!(
                "  read   {} chunks ({} unallocated: fill value), {} stored bytes -> {} bytes in {secs:.3} s ({:.1} MiB/s)",
                report.chunks,
                report.unallocated,
                report.stored_bytes,
                report.bytes,
                report.bytes as f64 / MIB / secs
            );
        }
    }
    println!(
        "  plans  {} chunks, {copies} copies between kinds, {copied} bytes copied",
        origins.len()
    );
    // The device's valid copy of the whole dataset, as the manager holds it.
    let len = ds.byte_len();
    let copy = mm
        .valid_copies(buf)
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|(p, r, _)| *p == place && r.start == 0 && r.end >= len)
        .map(|(_, _, bytes)| bytes);
    if let Some(path) = opts.dump {
        let bytes = copy.as_ref().ok_or("the device holds no valid copy of the dataset")?;
        // Through a temporary file: a failed write leaves no partial dump.
        let out = crate::output::Output::new(path)?;
        std::fs::write(out.path(), &bytes[..len]).map_err(|e| format!("{}: {e}", path.display()))?;
        out.commit()?;
        println!("  dump   {len} bytes of the device's copy -> {}", path.display());
    }
    if !opts.verify {
        return Ok(true);
    }
    let want = ds.read_all().map_err(|e| e.to_string())?;
    let ok = copy.as_ref().is_some_and(|bytes| bytes[..len] == want[..]);
    println!(
        "  verify device copy {} the host read ({} bytes) {}",
        if copy.is_some() { "against" } else { "missing; against" },
        want.len(),
        if ok { "OK" } else { "MISMATCH" }
    );
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_splits_at_the_last_colon_before_a_slash() {
        assert_eq!(parse_spec("a:b/f.h5:/g/d").unwrap(), (Path::new("a:b/f.h5"), "/g/d"));
        assert_eq!(parse_spec("f.h5:/d").unwrap(), (Path::new("f.h5"), "/d"));
        assert!(parse_spec("f.h5").is_err());
        assert!(parse_spec(":/d").is_err());
        assert!(parse_spec("f.h5:d").is_err());
    }
}
