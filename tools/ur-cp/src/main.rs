//! `ur-cp`: copies a file into a device's memory and out to another file
//! (or file -> device only, to measure), through `ur-file-io`; or, with
//! `--hdf5 FILE:/dataset`, loads a chunked HDF5 dataset into a device
//! through `ur-filters` and prints each chunk's filter plan.
//!
//! ```text
//! ur-cp --devices 'opencl:0' --backend auto --verify --explain in.bin out.bin
//! ur-cp --devices 'opencl:0' --hdf5 data.h5:/temps --plans 2 --verify
//! ```
//!
//! Prints a summary: the file mode, bytes per backend, retries and
//! throughput of each leg; `--verify` checksums the source file, the
//! device's copy and the destination file. In `--hdf5` mode: the dataset,
//! the device's filter kernels, the path that runs (`device kernels`: the
//! stored chunks read by file-io into device memory and decoded there by
//! the OpenCL shuffle / Fletcher-32 kernels, where every filter has one and
//! the planner puts it on the device; else `host decode`, then a copy to
//! the device), the plans of the first `--plans` chunks of that path, the
//! read and the plans' copy totals; `--verify` compares the device's copy
//! with a separate host read.
//! Exit status: 0 done, 1 error, 3 checksum mismatch. The copy is written
//! to a temporary file next to DST and renamed over DST only when it is
//! complete (and verified), so a failed copy (1, 3) leaves no DST, and an
//! existing DST as it was.

mod hdf5;
mod output;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use ur_adapters::{check_selector, discover_with, DiscoverOptions};
use ur_api::{
    BufferDesc, BufferId, DeviceCaps, DeviceSelector, HostPtr, MemFlags, QueueId, QueueProps, Runtime, SELECTOR_ENV,
};
use ur_file_io::{
    BackendChoice, BackendKind, DeviceMem, DirectIo, FileIo, IoFile, IoReport, OpenOptions, Request, Settings,
};

/// Copies a file through a device's memory.
#[derive(Debug, Parser)]
#[command(name = "ur-cp", version, about)]
struct Cli {
    /// The file to read.
    #[arg(required_unless_present = "hdf5")]
    src: Option<PathBuf>,
    /// The file to write from the device (omit: file -> device only).
    dst: Option<PathBuf>,
    /// Device selector, e.g. `opencl:0` or `native:*` (the first selected device is used).
    #[arg(long, env = SELECTOR_ENV, value_name = "SELECTOR")]
    devices: Option<String>,
    /// Which of the selected devices (index).
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// auto, direct, cufile or bounce.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// O_DIRECT policy: auto, on or off (default: UR_FILEIO_DIRECT_IO, else auto).
    #[arg(long)]
    direct_io: Option<DirectIo>,
    /// Checksum the source, the device's copy and the destination.
    #[arg(long)]
    verify: bool,
    /// Print each leg's plan: the pieces, every backend's score and why.
    #[arg(long)]
    explain: bool,
    /// Bytes per request, the progress bar's step (suffixes K, M, G).
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    chunk: usize,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
    /// Load the HDF5 dataset `FILE:/dataset` into the device instead of copying a file.
    #[arg(long, value_name = "FILE:/DATASET", conflicts_with_all = ["src", "dst", "backend", "direct_io", "explain"])]
    hdf5: Option<String>,
    // The `--hdf5`-only options also conflict with the file-copy mode's
    // arguments: clap skips a `requires` whose target conflicts with an
    // argument present (`--hdf5` with SRC), so `requires` alone let
    // `--plans 2 FILE` through.
    /// In `--hdf5` mode, how many chunk plans to print.
    #[arg(long, default_value_t = 1, requires = "hdf5", conflicts_with_all = ["src", "dst"])]
    plans: usize,
    /// In `--hdf5` mode, write the device's copy of the dataset (raw, row-major) to this file.
    #[arg(long, value_name = "FILE", requires = "hdf5", conflicts_with_all = ["src", "dst"])]
    dump: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{s}` is not a size like 64M"))
}

const OPENCL_DEFAULTS: [(&str, &str); 2] = [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")];
const GIB: f64 = (1u64 << 30) as f64;

fn main() -> ExitCode {
    for (k, v) in OPENCL_DEFAULTS {
        if std::env::var_os(k).is_none() {
            // Edition 2021: safe; first thing in `main`, before any thread exists.
            std::env::set_var(k, v);
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(&cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(3),
        Err(e) => {
            eprintln!("ur-cp: {e}");
            ExitCode::from(1)
        }
    }
}

/// The device memory of the copy: a buffer, over page-aligned memory of
/// ours where the device can use host memory in place (`USE_HOST_PTR`, so
/// its mapping is page-aligned and O_DIRECT can land in it).
struct DeviceCopy {
    rt: Arc<Runtime>,
    queue: QueueId,
    buffer: BufferId,
    host: Option<(*mut u8, std::alloc::Layout)>,
}

impl Drop for DeviceCopy {
    fn drop(&mut self) {
        let _ = self.rt.release_buffer(self.buffer);
        if let Some((p, layout)) = self.host {
            // SAFETY: allocated with this layout in `device_copy`; the buffer
            // using it was released above.
            unsafe { std::alloc::dealloc(p, layout) };
        }
    }
}

fn device_copy(rt: &Arc<Runtime>, dev: ur_api::DeviceId, size: usize) -> Result<DeviceCopy, String> {
    let info = rt.device_info(dev).map_err(|e| e.to_string())?;
    let ctx = rt.create_context(&[dev]).map_err(|e| e.to_string())?;
    let queue = rt
        .create_queue(ctx, dev, &QueueProps::default())
        .map_err(|e| e.to_string())?;
    let size = size.max(1);
    let desc = BufferDesc::new(size).on(dev);
    let oom = |e: ur_api::Error| format!("cannot allocate {size} bytes on the device: {e}");
    if info.host_unified_memory && info.caps.contains(DeviceCaps::USE_HOST_PTR) {
        let layout =
            std::alloc::Layout::from_size_align(size.next_multiple_of(4096), 4096).map_err(|e| e.to_string())?;
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return Err(format!("cannot allocate {size} bytes of host memory"));
        }
        // SAFETY: `p` is valid for `size` bytes until `DeviceCopy::drop`
        // frees it, after releasing the buffer.
        let host = unsafe { HostPtr::new(p, size) };
        match rt.create_buffer(
            ctx,
            &desc.with_flags(MemFlags::READ_WRITE | MemFlags::USE_HOST_PTR),
            Some(host),
        ) {
            Ok(buffer) => {
                return Ok(DeviceCopy {
                    rt: rt.clone(),
                    queue,
                    buffer,
                    host: Some((p, layout)),
                })
            }
            Err(_) => {
                // SAFETY: allocated just above, not used by any buffer.
                unsafe { std::alloc::dealloc(p, layout) };
            }
        }
    }
    let buffer = rt.create_buffer(ctx, &desc, None).map_err(oom)?;
    Ok(DeviceCopy {
        rt: rt.clone(),
        queue,
        buffer,
        host: None,
    })
}

fn bar(len: u64, what: &str, hidden: bool) -> ProgressBar {
    if hidden || len < 64 << 20 {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template("{msg:>6} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    b
}

fn leg(io: &FileIo, file: &IoFile, req: Request, len: usize, cli: &Cli, what: &str) -> Result<IoReport, String> {
    if cli.explain {
        let whole = Request { size: len, ..req };
        print!("{}", io.explain(file, &whole).map_err(|e| e.to_string())?);
    }
    let pb = bar(len as u64, what, cli.no_progress);
    let mut total = IoReport::default();
    let start = Instant::now();
    let mut off = 0;
    while off < len {
        let n = cli.chunk.max(4096).min(len - off);
        let DeviceMem::Buffer { queue, buffer, .. } = req.target else {
            unreachable!("ur-cp copies through a buffer")
        };
        let r = Request {
            target: DeviceMem::Buffer {
                queue,
                buffer,
                offset: off,
            },
            file_offset: off as u64,
            size: n,
            ..req
        };
        let rep = io.run(file, &r).map_err(|e| e.to_string())?;
        total.add(&rep);
        pb.inc(n as u64);
        off += n;
    }
    pb.finish_and_clear();
    total.elapsed = start.elapsed();
    Ok(total)
}

fn summary(what: &str, r: &IoReport) {
    let secs = r.elapsed.as_secs_f64().max(1e-9);
    let by: Vec<String> = BackendKind::ALL
        .iter()
        .filter(|&&k| r.bytes_by(k) > 0)
        .map(|&k| format!("{k} {}", r.bytes_by(k)))
        .collect();
    println!(
        "  {what:<6} {} bytes in {:.3} s ({:.2} GiB/s); by backend: {}; retries {} ({} bytes)",
        r.bytes,
        secs,
        r.bytes as f64 / GIB / secs,
        if by.is_empty() { "none".into() } else { by.join(", ") },
        r.retries,
        r.retried_bytes
    );
}

/// A checksum streamed over 8-byte words (chunks must be multiples of 8 but the last).
#[derive(Debug, Clone, Copy)]
struct Sum(u64, u64);

impl Sum {
    fn new() -> Self {
        Sum(0x243F_6A88_85A3_08D3, 0)
    }
    fn feed(&mut self, data: &[u8]) {
        let mut words = data.chunks_exact(8);
        for w in &mut words {
            let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
        }
        for &b in words.remainder() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        self.1 += data.len() as u64;
    }
    fn value(&self) -> u64 {
        self.0 ^ self.1
    }
}

fn file_sum(path: &std::path::Path) -> Result<u64, String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut s = Sum::new();
    let mut buf = vec![0u8; 8 << 20];
    loop {
        let mut got = 0;
        while got < buf.len() {
            match f.read(&mut buf[got..]).map_err(|e| e.to_string())? {
                0 => break,
                n => got += n,
            }
        }
        s.feed(&buf[..got]);
        if got < buf.len() {
            return Ok(s.value());
        }
    }
}

fn device_sum(d: &DeviceCopy, len: usize) -> Result<u64, String> {
    let mut s = Sum::new();
    let mut buf = vec![0u8; 8 << 20];
    let mut off = 0;
    while off < len {
        let n = buf.len().min(len - off);
        d.rt.read(d.queue, d.buffer, off, &mut buf[..n])
            .map_err(|e| e.to_string())?;
        s.feed(&buf[..n]);
        off += n;
    }
    Ok(s.value())
}

fn run(cli: &Cli) -> Result<bool, String> {
    let selector: DeviceSelector = match &cli.devices {
        Some(s) => s.parse().map_err(|e| format!("--devices: {e}"))?,
        None => DeviceSelector::all(),
    };
    check_selector(&selector)?;
    let (rt, reports) = discover_with(&selector, &DiscoverOptions::default());
    let devs = rt.all_devices();
    let Some(&dev) = devs.get(cli.device) else {
        let why: Vec<String> = reports
            .iter()
            .map(|r| match &r.outcome {
                Ok(n) => format!("{}: {n} platform(s)", r.backend),
                Err(e) => format!("{}: {e}", r.backend),
            })
            .collect();
        return Err(format!(
            "no device #{} among the {} selected by `{selector}` ({})",
            cli.device,
            devs.len(),
            why.join("; ")
        ));
    };
    if let Some(spec) = &cli.hdf5 {
        return hdf5::run(
            spec,
            rt,
            dev,
            &hdf5::Options {
                plans: cli.plans,
                verify: cli.verify,
                dump: cli.dump.as_deref(),
            },
        );
    }
    let Some(src_path) = &cli.src else {
        return Err("no file to copy (give SRC, or --hdf5 FILE:/dataset)".into());
    };
    let rt = Arc::new(rt);
    let mut settings = Settings::from_env().map_err(|e| e.to_string())?;
    if let Some(d) = cli.direct_io {
        settings.direct_io = d;
    }
    let io = FileIo::with_settings(rt.clone(), settings).map_err(|e| e.to_string())?;
    let src = io.open(src_path, OpenOptions::read()).map_err(|e| e.to_string())?;
    let len = usize::try_from(src.len().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let info = rt.device_info(dev).map_err(|e| e.to_string())?;
    let backend = rt.backend_of(dev).map_err(|e| e.to_string())?;
    let copy = device_copy(&rt, dev, len)?;
    let target = DeviceMem::Buffer {
        queue: copy.queue,
        buffer: copy.buffer,
        offset: 0,
    };
    println!(
        "ur-cp: {} -> {backend} device \"{}\"{}",
        src_path.display(),
        info.name,
        cli.dst
            .as_ref()
            .map_or(String::new(), |d| format!(" -> {}", d.display()))
    );
    println!("  file   {}", src.mode());
    let read = leg(
        &io,
        &src,
        Request::read(target, 0, len).with_backend(cli.backend),
        len,
        cli,
        "read",
    )?;
    summary("read", &read);
    if read.bytes != len {
        return Err(format!(
            "the file shrank while copying: {} of {len} bytes read",
            read.bytes
        ));
    }
    let mut ok = true;
    let output = cli.dst.as_deref().map(output::Output::new).transpose()?;
    if let Some(out) = &output {
        let dst = io.open(out.path(), OpenOptions::create()).map_err(|e| e.to_string())?;
        let write = leg(
            &io,
            &dst,
            Request::write(target, 0, len).with_backend(cli.backend),
            len,
            cli,
            "write",
        )?;
        summary("write", &write);
        dst.close();
    }
    if cli.verify {
        let s = file_sum(src_path)?;
        let d = device_sum(&copy, len)?;
        let mut line = format!("  verify src {s:016x} device {d:016x}");
        ok = s == d;
        if let Some(out) = &output {
            let t = file_sum(out.path())?;
            line.push_str(&format!(" dst {t:016x}"));
            ok &= s == t;
        }
        println!("{line} {}", if ok { "OK" } else { "MISMATCH" });
    }
    io.release_bounce_buffers();
    if let Some(out) = output.filter(|_| ok) {
        out.commit()?;
    }
    Ok(ok)
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::Parser;

    use super::Cli;

    #[test]
    fn hdf5_only_options_without_hdf5_are_usage_errors() {
        for args in [
            &["ur-cp", "--plans", "2", "in.bin"][..],
            &["ur-cp", "--plans", "2", "in.bin", "out.bin"],
            &["ur-cp", "--dump", "dir", "in.bin"],
            &["ur-cp", "in.bin", "--dump", "dir"],
        ] {
            let err = Cli::try_parse_from(args).expect_err(&format!("{args:?} parsed"));
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::ArgumentConflict | ErrorKind::MissingRequiredArgument
                ),
                "{args:?}: {err}"
            );
            assert_eq!(err.exit_code(), 2, "a usage error: {args:?}");
        }
        // Without a file either, --hdf5 is what is missing.
        let err = Cli::try_parse_from(["ur-cp", "--plans", "2"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::MissingRequiredArgument, "{err}");
    }

    #[test]
    fn hdf5_only_options_with_hdf5_parse() {
        let cli = Cli::try_parse_from(["ur-cp", "--hdf5", "f.h5:/d", "--plans", "2", "--dump", "out.raw"]).unwrap();
        assert_eq!(cli.plans, 2);
        assert_eq!(cli.dump.as_deref(), Some(std::path::Path::new("out.raw")));
        // The default number of plans does not ask for --hdf5.
        let cli = Cli::try_parse_from(["ur-cp", "in.bin", "out.bin"]).unwrap();
        assert_eq!((cli.plans, cli.hdf5), (1, None));
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
