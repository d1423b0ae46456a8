//! HDF5 read throughput, side by side in one run.
//!
//! Rows (BENCH_ROW lines):
//! - `filters.h5_read_over_h5py`: a 256 MiB (`UR_FILTERS_BENCH_MIB`)
//!   float32 dataset, shuffle + deflate in 1 MiB chunks, written by h5py,
//!   read whole into host memory: ours (direct chunk reads, rayon-parallel
//!   decode) over h5py's `dataset[...]` in a subprocess (timed around the
//!   read only), interleaved, warm page cache for both, medians of
//!   `UR_FILTERS_BENCH_REPS` (default 3). Target >= 1.5.
//! - `filters.device_shuffle_copies`: bytes copied between buffer kinds
//!   to land a 64 MiB shuffle-only dataset (h5py-written) in a PoCL
//!   buffer: ours (stored chunks read by file-io's direct fastpath into
//!   a device staging buffer, unshuffled by the OpenCL kernel) over
//!   "decode on host, then copy" (our host read, then one write of the
//!   decoded bytes to the device). The device contents are compared.
//!   Target <= 0.5. Needs PoCL (skipped with the reason otherwise).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::Path;
use std::time::Instant;

use common::h5py::{python, script};
use common::{pocl, ClDevice};
use ur_api::BufferDesc;
use ur_bench_row::{median, print_row};
use ur_file_io::{DirectIo, FileIo, Settings};
use ur_filters::device::{read_shuffled_to_device, DeviceShuffle};
use ur_filters::h5::{self, Dataset};

const GIB: f64 = (1u64 << 30) as f64;

fn main() {
    if let Err(e) = h5::available() {
        eprintln!("filters.h5_read_over_h5py: skipped: {e}");
        return;
    }
    let script = script("bench_file.py");
    let mib: u64 = std::env::var("UR_FILTERS_BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let reps: usize = std::env::var("UR_FILTERS_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("bench.h5");
    let t = Instant::now();
    let st = python()
        .arg(&script)
        .arg("write")
        .arg(&file)
        .arg(mib.to_string())
        .status();
    if !st.is_ok_and(|s| s.success()) {
        eprintln!("filters.h5_read_over_h5py: skipped: h5py could not write the file");
        return;
    }
    eprintln!(
        "wrote {mib} MiB with h5py in {:.1}s; file {} MiB",
        t.elapsed().as_secs_f64(),
        std::fs::metadata(&file).map(|m| m.len() >> 20).unwrap_or(0)
    );
    let bytes = (mib << 20) as f64;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut reference: Option<Vec<u8>> = None;
    // One unmeasured read each first: both see a warm page cache.
    for rep in 0..=reps {
        let t = Instant::now();
        let ds = Dataset::open(&file, "/data", false).expect("open");
        let data = ds.read_all().expect("read");
        let ours_s = t.elapsed().as_secs_f64();
        drop(ds);
        let out = python().arg(&script).arg("read").arg(&file).output().expect("python");
        let h5py_s: f64 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("h5py's seconds");
        if rep == 0 {
            assert_eq!(data.len() as f64, bytes);
            reference = Some(data);
            continue;
        }
        assert!(
            reference.as_deref() == Some(&data[..]),
            "reads differ between repetitions"
        );
        ours.push(bytes / ours_s / GIB);
        theirs.push(bytes / h5py_s / GIB);
    }
    eprintln!(
        "GiB/s samples: ours {ours:.3?} h5py {theirs:.3?} (rayon threads {})",
        rayon::current_num_threads()
    );
    print_row(
        "filters.h5_read_over_h5py",
        median(ours),
        "GiB/s",
        "h5py dataset[...]",
        median(theirs),
    );
    device_copies(&script, dir.path());
}

fn device_copies(script: &Path, dir: &Path) {
    // Prints why (and returns `None`) without PoCL; panics where
    // UR_REQUIRE_OPENCL is set.
    let Some((rt, ClDevice { ctx, dev, queue: q, .. })) = pocl("filters.device_shuffle_copies") else {
        return;
    };
    let file = dir.join("shuffle.h5");
    let st = python().arg(script).arg("shuffle").arg(&file).arg("64").status();
    assert!(st.is_ok_and(|s| s.success()), "h5py could not write the shuffle file");
    let ds = Dataset::open(&file, "/data", false).expect("open");
    let n = ds.byte_len();
    // Ours.
    let io = FileIo::with_settings(
        rt.clone(),
        Settings {
            direct_io: DirectIo::Off,
            ..Settings::default()
        },
    )
    .expect("file-io");
    let shuffle = DeviceShuffle::new(rt.clone(), ctx).expect("kernel");
    let dst = rt
        .create_buffer(ctx, &BufferDesc::new(n).on(dev), None)
        .expect("buffer");
    let t = Instant::now();
    let report = read_shuffled_to_device(&ds, &io, &shuffle, ctx, dev, q, dst).expect("device read");
    let ours_s = t.elapsed().as_secs_f64();
    let mut on_device = vec![0u8; n];
    rt.read(q, dst, 0, &mut on_device).expect("read back");
    // Decode on host, then copy.
    let t = Instant::now();
    let host = ds.read_all().expect("host read");
    let base = rt
        .create_buffer(ctx, &BufferDesc::new(n).on(dev), None)
        .expect("buffer");
    rt.write(q, base, 0, &host).expect("copy to device");
    let base_s = t.elapsed().as_secs_f64();
    let baseline_copied = host.len() as f64;
    assert!(on_device == host, "device and host decodes differ");
    eprintln!(
        "device shuffle: {report:?} in {ours_s:.3}s; host decode + copy: {baseline_copied} bytes copied in {base_s:.3}s"
    );
    print_row(
        "filters.device_shuffle_copies",
        report.bytes_copied as f64,
        "bytes",
        "decode on host, then copy",
        baseline_copied,
    );
    rt.release_buffer(dst).expect("release");
    rt.release_buffer(base).expect("release");
}
