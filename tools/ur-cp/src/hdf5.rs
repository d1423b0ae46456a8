//! `ur-cp --hdf5 FILE:/dataset`: a chunked, filtered HDF5 dataset into a
//! logical buffer made current at the selected device (through
//! `ur-filters`' direct chunk reads and the memory manager), with the plan of
//! the first chunks and a summary of all of them.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ur_api::{DeviceId, Location, Runtime};
use ur_filters::h5::{self, chunks_meeting, Dataset, Selection};
use ur_memory_manager::{MemoryManager, Place};

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

/// Loads the dataset named by `spec` into `dev`'s memory and prints the
/// plans of the first `opts.plans` chunks and a summary. With
/// `opts.verify`, compares the device's copy with a separate host read of
/// the dataset (`Ok(false)` on a mismatch).
pub fn run(spec: &str, rt: Runtime, dev: DeviceId, opts: &Options<'_>) -> Result<bool, String> {
    let plans = opts.plans;
    let (file, name) = parse_spec(spec)?;
    let ds = Dataset::open(file, name, false).map_err(|e| e.to_string())?;
    let info = rt.device_info(dev).map_err(|e| e.to_string())?;
    let backend = rt.backend_of(dev).map_err(|e| e.to_string())?;
    let ctx = rt.create_context(&[dev]).map_err(|e| e.to_string())?;
    let mm = MemoryManager::new(Arc::new(rt), &[Location::new(ctx, dev)]).map_err(|e| e.to_string())?;
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
    let all = Selection::all(ds.shape());
    let origins = chunks_meeting(&all, ds.chunk_shape());
    let (mut copies, mut copied) = (0usize, 0usize);
    for (i, origin) in origins.iter().enumerate() {
        let plan = ds.explain_chunk(origin, &kind).map_err(|e| e.to_string())?;
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
    let buf = mm.create_buffer(ds.byte_len().max(1)).map_err(|e| e.to_string())?;
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
        std::fs::write(path, &bytes[..len]).map_err(|e| format!("{}: {e}", path.display()))?;
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
