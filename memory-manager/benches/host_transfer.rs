//! Host <-> device transfers of caller (pageable) memory on the first
//! OpenCL device (PoCL in CI): the decision tree's choice against the best
//! of the paths forced by hand (direct, staged, and lock-in-place where the
//! device locks), same buffers, interleaved repetitions, medians.
//!
//! Rows: `host_transfer.4KiB`, `host_transfer.1MiB`, `host_transfer.256MiB`:
//! GiB/s of a write then a read of that size (value = the tree's choice,
//! baseline = the best forced path; target >= 0.95). `UR_MM_BENCH_REPS`
//! sets the repetitions (default 7); `UR_MM_BENCH_EXTRA_MIB=8,32` adds sizes
//! (for tuning the thresholds). Without an OpenCL device, no rows.

use std::sync::Arc;
use std::time::Instant;

use ur_api::{BufferDesc, DeviceCaps, QueueProps, Runtime};
use ur_bench_row::{median, print_row};
use ur_memory_manager::{HostTransfer, TransferPath};

const GIB: f64 = (1u64 << 30) as f64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps: usize = std::env::var("UR_MM_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7);
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new())?;
    let rt = Arc::new(rt);
    let Some(&dev) = rt.all_devices().first() else {
        eprintln!("host_transfer: no OpenCL device, no rows");
        return Ok(());
    };
    let info = rt.device_info(dev)?;
    let ctx = rt.create_context(&[dev])?;
    let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
    let x = HostTransfer::new(rt.clone(), ctx)?;
    eprintln!(
        "host_transfer: {} ({:?}), thresholds {:?}",
        info.name,
        info.device_type,
        x.thresholds()
    );
    let mut forced = vec![TransferPath::Direct, TransferPath::Staged];
    if info.caps.contains(DeviceCaps::HOST_REGISTER) {
        forced.push(TransferPath::LockInPlace);
    }
    let mut sizes = vec![
        ("4KiB".to_string(), 4usize << 10),
        ("1MiB".into(), 1 << 20),
        ("256MiB".into(), 256 << 20),
    ];
    // Extra sizes for tuning the thresholds: UR_MM_BENCH_EXTRA_MIB=8,32,64.
    if let Ok(extra) = std::env::var("UR_MM_BENCH_EXTRA_MIB") {
        sizes.extend(
            extra
                .split(',')
                .filter_map(|m| m.trim().parse::<usize>().ok())
                .map(|m| (format!("{m}MiB"), m << 20)),
        );
    }
    for (name, size) in sizes {
        let buf = rt.create_buffer(ctx, &BufferDesc::new(size), None)?;
        let mut host = vec![7u8; size];
        // Enough round trips per sample for ~50 ms at 1 GiB/s.
        let iters = ((50usize << 20) / size).clamp(1, 4000);
        let mut sample = |path: Option<TransferPath>| -> Result<f64, ur_api::Error> {
            let t = Instant::now();
            for _ in 0..iters {
                match path {
                    None => {
                        x.write(q, buf, 0, &host)?;
                        x.read(q, buf, 0, &mut host)?;
                    }
                    Some(p) => {
                        x.write_via(p, q, buf, 0, &host)?;
                        x.read_via(p, q, buf, 0, &mut host)?;
                    }
                }
            }
            Ok((2 * size * iters) as f64 / GIB / t.elapsed().as_secs_f64())
        };
        sample(None)?; // warm-up: staging pool, driver paths
        let mut chosen = Vec::new();
        let mut by_path: Vec<Vec<f64>> = vec![Vec::new(); forced.len()];
        for _ in 0..reps {
            chosen.push(sample(None)?);
            for (i, &p) in forced.iter().enumerate() {
                by_path[i].push(sample(Some(p))?);
            }
        }
        let medians: Vec<f64> = by_path.into_iter().map(median).collect();
        let (best_i, &best) = medians
            .iter()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(b.1))
            .expect("at least one forced path");
        let value = median(chosen);
        let choice = x.choose(host.as_ptr() as usize, size);
        eprintln!(
            "host_transfer.{name}: chosen {choice:?} {value:.3} GiB/s; forced {:?}",
            forced.iter().zip(&medians).collect::<Vec<_>>()
        );
        print_row(
            &format!("host_transfer.{name}"),
            value,
            "GiB/s",
            &format!("best_forced_{:?}", forced[best_i]),
            best,
        );
        rt.release_buffer(buf)?;
    }
    Ok(())
}
