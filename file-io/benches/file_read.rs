//! File -> device read throughput, 256 MiB, on a PoCL CPU device, the
//! compared paths interleaved in one run, medians of `UR_FILEIO_BENCH_REPS`
//! (default 5) repetitions.
//!
//! Rows (BENCH_ROW lines):
//! - `file.read_bounce_over_pread`: the bounce fallback into a PoCL buffer
//!   over plain parallel `pread` of the same file into host memory (same
//!   threads, same 4 MiB tasks), warm page cache. Target >= 0.8.
//! - `file.read_direct_over_bounce`: the direct fastpath (pread into the
//!   mapping of a `USE_HOST_PTR` buffer over page-aligned memory) over the
//!   bounce fallback into the same buffer (its default leg: copies through
//!   the mapping), buffered file, warm cache. Target >= 1.3. On stderr also
//!   over the fallback's device-write leg. Measured here (2-core VM): about
//!   1.0 over the mapping leg, 1.4-1.5 over the device-write leg: the
//!   direct path is a `pread` into the mapping, and the mapping leg's second
//!   copy (from L2, streaming stores) costs about what the read for
//!   ownership of `pread`'s destination costs the direct path.
//! - `file.read_direct_over_bounce.odirect`: the same with `O_DIRECT` on
//!   both paths, the file dropped from the page cache before each read.
//!   Target >= 1.5. `...odirect.cpu_s_per_gib` gives the process CPU
//!   seconds per GiB of each path (value: direct, baseline: bounce).
//! - `file.read_odirect_disk_only` (informative): the disk alone, plain
//!   parallel `O_DIRECT` `pread` of the dropped file into page-aligned host
//!   memory (same threads, same 4 MiB tasks), interleaved with the two
//!   paths above; value: disk only, baseline: the bounce path. A ratio near
//!   1 says the bounce path is disk-bound.
//! - `file.read_cufile_or_bounce_over_pread_pinned` needs a CUDA device:
//!   not measured without one (said on stderr).
//!
//! Informative, on stderr: the bounce fallback's device-write leg
//! (`BounceCopy::Queue`: 4 MiB pieces, one per task, a ring of 2, device
//! writes) next to the default (on PoCL, copies through the buffer's host
//! mapping in cache-sized pieces), both directions, interleaved: reads over
//! `pread`, and writes (device -> file through the page cache, the same
//! file overwritten) over parallel `pwrite` from host memory.
//!
//! `UR_FILEIO_BENCH_BOUNCE_SWEEP=SIZE[:RING[:THREADS[:LEG]]],...` (e.g.
//! `128K,256K:8,1M:4:4,256K:2:2:stream`) adds, interleaved with the pread
//! baseline in the same repetitions, the bounce fallback with those
//! settings (piece size, ring, threads; LEG `queue` for device writes,
//! `map` (the default) or `stream` (non-temporal stores) for copies through
//! the mapping, where SIZE sets the mapping leg's piece size); medians and
//! ratios over pread go to stderr, no rows.

use std::sync::Arc;
use std::time::Instant;

use ur_api::{BufferDesc, DeviceId, HostPtr, MemFlags, QueueProps, Runtime};
use ur_bench_row::{median, print_row};
use ur_file_io::{
    BackendChoice, BackendKind, BounceCopy, DeviceMem, DirectIo, FileIo, IoFile, OpenOptions, Request, Settings,
};

const SIZE: usize = 256 << 20;
const GIB: f64 = (1u64 << 30) as f64;

/// Process CPU seconds (user + system, all threads).
fn cpu_seconds() -> f64 {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr()) };
    assert_eq!(r, 0);
    // SAFETY: initialised by the successful call.
    let u = unsafe { u.assume_init() };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Host memory on a 2 MiB boundary, backed by transparent huge pages where
/// the kernel grants them (`MADV_HUGEPAGE`), as the bounce buffers are: the
/// baselines (pread, the disk alone) and the `USE_HOST_PTR` buffer get the
/// same kind of memory as the paths they are compared with.
struct Aligned(*mut u8, std::alloc::Layout);

impl Aligned {
    fn new(len: usize) -> Self {
        let layout = std::alloc::Layout::from_size_align(len, 2 << 20).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        assert!(!p.is_null());
        // SAFETY: our allocation; the advice changes its backing, not its contents.
        let r = unsafe { libc::madvise(p.cast(), len, libc::MADV_HUGEPAGE) };
        if r != 0 {
            eprintln!("madvise(MADV_HUGEPAGE) failed: {}", std::io::Error::last_os_error());
        }
        // SAFETY: `p` is valid for `len` bytes; zeroing faults the pages in.
        unsafe { std::ptr::write_bytes(p, 0, len) };
        Aligned(p, layout)
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.0, self.1) }
    }
}

/// Plain parallel pread of the whole file into host memory: `threads`
/// threads, 4 MiB tasks striped over them.
fn pread_all(path: &std::path::Path, dst: &Aligned, threads: usize) -> f64 {
    striped_read(&std::fs::File::open(path).unwrap(), dst, threads)
}

/// Reads the whole of `f` into `dst` on `threads` threads, 4 MiB tasks
/// striped over them; GiB/s.
fn striped_read(f: &std::fs::File, dst: &Aligned, threads: usize) -> f64 {
    use std::os::unix::fs::FileExt;
    let base = dst.0 as usize;
    striped(threads, |offset, len| {
        // SAFETY: the tasks of the threads are disjoint ranges of `dst`.
        let buf = unsafe { std::slice::from_raw_parts_mut((base + offset) as *mut u8, len) };
        f.read_exact_at(buf, offset as u64).unwrap();
    })
}

/// Runs `task(offset, len)` over the `SIZE` bytes in 4 MiB tasks striped
/// over `threads` threads; GiB/s.
fn striped(threads: usize, task: impl Fn(usize, usize) + Sync) -> f64 {
    const TASK: usize = 4 << 20;
    let task = &task;
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut i = t;
                while i * TASK < SIZE {
                    task(i * TASK, TASK.min(SIZE - i * TASK));
                    i += threads;
                }
            });
        }
    });
    SIZE as f64 / GIB / start.elapsed().as_secs_f64()
}

/// Plain parallel `O_DIRECT` pread of the whole (dropped) file into
/// page-aligned host memory: the disk alone, no device.
fn pread_odirect_all(io: &IoFile, path: &std::path::Path, dst: &Aligned, threads: usize) -> f64 {
    use std::os::unix::fs::OpenOptionsExt;
    io.drop_page_cache().unwrap();
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    striped_read(&f, dst, threads)
}

/// Plain parallel pwrite of `src` over the whole file (page cache).
fn pwrite_all(f: &std::fs::File, src: &Aligned, threads: usize) -> f64 {
    use std::os::unix::fs::FileExt;
    let base = src.0 as usize;
    striped(threads, |offset, len| {
        // SAFETY: `src` is SIZE bytes, only read here.
        let buf = unsafe { std::slice::from_raw_parts((base + offset) as *const u8, len) };
        f.write_all_at(buf, offset as u64).unwrap();
    })
}

/// One timed bounce write of the whole buffer to `f`; GiB/s.
fn timed_write(io: &FileIo, f: &IoFile, source: DeviceMem) -> f64 {
    let req = Request::write(source, 0, SIZE).with_backend(BackendChoice::Only(BackendKind::Bounce));
    let t0 = Instant::now();
    let rep = io.run(f, &req).unwrap();
    assert_eq!(rep.bytes_by(BackendKind::Bounce), SIZE as u64);
    SIZE as f64 / GIB / t0.elapsed().as_secs_f64()
}

/// One timed read of the whole file; returns (GiB/s, CPU s/GiB).
fn timed(io: &FileIo, f: &IoFile, target: DeviceMem, choice: BackendKind, cold: bool) -> (f64, f64) {
    if cold {
        f.drop_page_cache().unwrap();
    }
    let req = Request::read(target, 0, SIZE).with_backend(BackendChoice::Only(choice));
    let (c0, t0) = (cpu_seconds(), Instant::now());
    let rep = io.run(f, &req).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - c0;
    assert_eq!(rep.bytes, SIZE);
    assert_eq!(rep.bytes_by(choice), SIZE as u64, "the forced path moved every byte");
    let gib = SIZE as f64 / GIB;
    (gib / secs, cpu / gib)
}

/// The engines of `UR_FILEIO_BENCH_BOUNCE_SWEEP` (buffered), with labels.
fn sweep_engines(rt: &Arc<Runtime>, base: Settings) -> Result<Vec<(String, FileIo)>, Box<dyn std::error::Error>> {
    let Ok(list) = std::env::var("UR_FILEIO_BENCH_BOUNCE_SWEEP") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for item in list.split(',').filter(|s| !s.trim().is_empty()) {
        let mut parts = item.trim().split(':');
        let mut settings = Settings {
            direct_io: DirectIo::Off,
            ..base
        };
        let pick = |k: &str, v: Option<&str>| v.map(|v| (k.to_string(), v.to_string()));
        let size = parts.next();
        let (ring, threads) = (parts.next(), parts.next());
        let leg = parts.next().unwrap_or("map");
        let (copy, stream) = match leg {
            "queue" => ("queue", "0"),
            "map" => ("auto", "0"),
            "stream" => ("auto", "1"),
            other => return Err(format!("sweep leg {other:?}: expected queue, map or stream").into()),
        };
        let size_key = if copy == "queue" {
            "UR_FILEIO_BOUNCE_SIZE"
        } else {
            "UR_FILEIO_BOUNCE_MAP_SIZE"
        };
        let overrides: Vec<(String, String)> = [
            pick(size_key, size),
            pick("UR_FILEIO_BOUNCE_RING", ring),
            pick("UR_FILEIO_THREADS", threads),
            pick("UR_FILEIO_BOUNCE_COPY", Some(copy)),
            pick("UR_FILEIO_BOUNCE_STREAM", Some(stream)),
        ]
        .into_iter()
        .flatten()
        .collect();
        settings = settings.with_overrides(|k| overrides.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))?;
        let piece = if copy == "queue" {
            settings.bounce_size
        } else {
            settings.bounce_map_size
        };
        let label = format!(
            "{leg} piece {} KiB ring {} threads {}",
            piece >> 10,
            settings.bounce_ring,
            settings.threads
        );
        out.push((label, FileIo::with_settings(rt.clone(), settings)?));
    }
    Ok(out)
}

fn pocl_device(rt: &Runtime) -> Option<DeviceId> {
    rt.all_devices().into_iter().find(|&d| {
        rt.platform_info(rt.device_platform(d).unwrap())
            .map(|p| p.name.contains("Portable"))
            .unwrap_or(false)
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for (k, v) in [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")] {
        if std::env::var_os(k).is_none() {
            // Edition 2021: safe; before any thread exists.
            std::env::set_var(k, v);
        }
    }
    let reps: usize = std::env::var("UR_FILEIO_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    eprintln!("file.read_cufile_or_bounce_over_pread_pinned: not measured: no CUDA device here");
    let mut rt = Runtime::new();
    rt.add(ur_opencl::OpenClAdapter::new())?;
    let Some(dev) = pocl_device(&rt) else {
        eprintln!("file benches skipped: no PoCL device");
        return Ok(());
    };
    let ctx = rt.create_context(&[dev])?;
    let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
    let plain = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None)?;
    let host = Aligned::new(SIZE);
    // SAFETY: `host` outlives the buffer (released below, before `host` drops).
    let hp = unsafe { HostPtr::new(host.0, SIZE) };
    let uhp = rt.create_buffer(
        ctx,
        &BufferDesc::new(SIZE)
            .on(dev)
            .with_flags(MemFlags::READ_WRITE | MemFlags::USE_HOST_PTR),
        Some(hp),
    )?;
    let rt = Arc::new(rt);
    let base = Settings::from_env()?;
    let buffered = FileIo::with_settings(
        rt.clone(),
        Settings {
            direct_io: DirectIo::Off,
            ..base
        },
    )?;
    let direct = FileIo::with_settings(
        rt.clone(),
        Settings {
            direct_io: DirectIo::On,
            ..base
        },
    )?;

    let dir = tempfile::Builder::new()
        .prefix("ur-file-io-bench")
        .tempdir_in(std::env::temp_dir())?;
    let path = dir.path().join("data.bin");
    let data: Vec<u8> = (0..SIZE).map(|i| (i.wrapping_mul(31) ^ (i >> 12)) as u8).collect();
    std::fs::write(&path, &data)?;
    drop(data);
    let fb = buffered.open(&path, OpenOptions::read())?;
    let fd = direct.open(&path, OpenOptions::read())?;
    eprintln!(
        "256 MiB, {} threads, task {} KiB, bounce pieces {} KiB x {} per thread (device writes), {} KiB (mapping, {}); O_DIRECT file: {}",
        base.threads,
        base.task_size >> 10,
        base.task_size.min(base.bounce_size) >> 10,
        base.bounce_ring,
        base.task_size.min(base.bounce_map_size) >> 10,
        if base.bounce_stream { "streaming stores" } else { "plain stores" },
        fd.mode()
    );
    let t_plain = |m| DeviceMem::Buffer {
        queue: q,
        buffer: m,
        offset: 0,
    };
    let pread_dst = Aligned::new(SIZE);
    // Warm-up: page cache, bounce buffers, first mappings.
    pread_all(&path, &pread_dst, base.threads);
    timed(&buffered, &fb, t_plain(plain), BackendKind::Bounce, false);
    timed(&buffered, &fb, t_plain(uhp), BackendKind::Direct, false);

    let sweep = sweep_engines(&rt, base)?;
    // The bounce fallback's device-write leg (the default before the
    // mapping leg), 4 MiB pieces in a ring of 2.
    let queue_leg = FileIo::with_settings(
        rt.clone(),
        Settings {
            direct_io: DirectIo::Off,
            bounce_copy: BounceCopy::Queue,
            ..base
        },
    )?;
    let out_path = dir.path().join("out.bin");
    let out_plain = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.path().join("out-pwrite.bin"))?;
    let fo = buffered.open(&out_path, OpenOptions::create())?;
    let fo_queue = queue_leg.open(&out_path, OpenOptions::create())?;
    let (mut queue_r, mut pwrite, mut bounce_w, mut queue_w) = (vec![], vec![], vec![], vec![]);
    // Warm-up of the write side (file pages, the device-write engine's buffers).
    pwrite_all(&out_plain, &pread_dst, base.threads);
    timed_write(&buffered, &fo, t_plain(plain));
    timed_write(&queue_leg, &fo_queue, t_plain(plain));
    timed(&queue_leg, &fb, t_plain(plain), BackendKind::Bounce, false);
    let mut swept: Vec<Vec<(f64, f64)>> = sweep.iter().map(|_| Vec::new()).collect();
    let sweep_files = sweep
        .iter()
        .map(|(_, io)| io.open(&path, OpenOptions::read()))
        .collect::<Result<Vec<_>, _>>()?;
    let (mut pread, mut bounce_plain, mut direct_warm, mut bounce_warm) = (vec![], vec![], vec![], vec![]);
    let mut queue_warm = vec![];
    let (mut cpu_pread, mut cpu_bounce, mut cpu_queue) = (vec![], vec![], vec![]);
    for rep in 0..reps {
        let c0 = cpu_seconds();
        pread.push(pread_all(&path, &pread_dst, base.threads));
        cpu_pread.push((cpu_seconds() - c0) / (SIZE as f64 / GIB));
        // The bounce variants (the default, the device-write leg, the
        // sweep) take turns at following pread.
        let n = 2 + sweep.len();
        for j in 0..n {
            match (j + rep) % n {
                0 => {
                    let (g, c) = timed(&buffered, &fb, t_plain(plain), BackendKind::Bounce, false);
                    bounce_plain.push(g);
                    cpu_bounce.push(c);
                }
                1 => {
                    let (g, c) = timed(&queue_leg, &fb, t_plain(plain), BackendKind::Bounce, false);
                    queue_r.push(g);
                    cpu_queue.push(c);
                }
                k => {
                    let (io, f) = (&sweep[k - 2].1, &sweep_files[k - 2]);
                    swept[k - 2].push(timed(io, f, t_plain(plain), BackendKind::Bounce, false));
                }
            }
        }
        direct_warm.push(timed(&buffered, &fb, t_plain(uhp), BackendKind::Direct, false).0);
        bounce_warm.push(timed(&buffered, &fb, t_plain(uhp), BackendKind::Bounce, false).0);
        queue_warm.push(timed(&queue_leg, &fb, t_plain(uhp), BackendKind::Bounce, false).0);
    }
    // Writes after every read: their writeback must not disturb the reads.
    for rep in 0..reps {
        pwrite.push(pwrite_all(&out_plain, &pread_dst, base.threads));
        for k in [rep % 2, 1 - rep % 2] {
            if k == 0 {
                bounce_w.push(timed_write(&buffered, &fo, t_plain(plain)));
            } else {
                queue_w.push(timed_write(&queue_leg, &fo_queue, t_plain(plain)));
            }
        }
    }
    let (mut dc, mut bc, mut dcpu, mut bcpu, mut disk) = (vec![], vec![], vec![], vec![], vec![]);
    // Informative: the disk with twice the requests in flight.
    let mut disk2 = vec![];
    // The VM's disk has its own cache below ours: rotate which path reads
    // first, so none always follows another.
    for rep in 0..reps {
        for k in [0, 1, 2, 3].map(|k| (k + rep) % 4) {
            if k == 3 {
                disk2.push(pread_odirect_all(&fd, &path, &pread_dst, 2 * base.threads));
            } else if k == 2 {
                disk.push(pread_odirect_all(&fd, &path, &pread_dst, base.threads));
            } else if k == 0 {
                let (g, c) = timed(&direct, &fd, t_plain(uhp), BackendKind::Direct, true);
                dc.push(g);
                dcpu.push(c);
            } else {
                let (g, c) = timed(&direct, &fd, t_plain(uhp), BackendKind::Bounce, true);
                bc.push(g);
                bcpu.push(c);
            }
        }
    }
    eprintln!("samples GiB/s: pread {pread:.2?} bounce {bounce_plain:.2?}");
    let mp = median(pread.clone());
    let mw = median(pwrite.clone());
    eprintln!(
        "  reads over pread: bounce {:.3} (device-write leg: {:.3}); device-write leg samples {queue_r:.2?}",
        median(bounce_plain.clone()) / mp,
        median(queue_r.clone()) / mp
    );
    eprintln!(
        "  reads CPU s/GiB: pread {:.3} bounce {:.3} device-write leg {:.3}",
        median(cpu_pread),
        median(cpu_bounce),
        median(cpu_queue)
    );
    eprintln!("  writes GiB/s: pwrite {pwrite:.2?} bounce {bounce_w:.2?} device-write leg {queue_w:.2?}");
    eprintln!(
        "  writes over pwrite: bounce {:.3} (device-write leg: {:.3}); pwrite median {mw:.2} GiB/s",
        median(bounce_w) / mw,
        median(queue_w) / mw
    );
    queue_leg.release_bounce_buffers();
    for ((label, io), v) in sweep.iter().zip(swept) {
        let g: Vec<f64> = v.iter().map(|x| x.0).collect();
        let m = median(g.clone());
        eprintln!(
            "  sweep {label}: bounce {g:.2?} median {m:.2} GiB/s, over pread {:.3}, CPU s/GiB {:.3}",
            m / median(pread.clone()),
            median(v.iter().map(|x| x.1))
        );
        io.release_bounce_buffers();
    }
    eprintln!("  warm direct {direct_warm:.2?} bounce {bounce_warm:.2?} bounce device-write leg {queue_warm:.2?}");
    eprintln!(
        "  warm direct over bounce {:.3}, over the device-write leg {:.3}",
        median(direct_warm.clone()) / median(bounce_warm.clone()),
        median(direct_warm.clone()) / median(queue_warm.clone())
    );
    eprintln!("  O_DIRECT cold direct {dc:.2?} bounce {bc:.2?} disk only (pread O_DIRECT) {disk:.2?}");
    eprintln!(
        "  O_DIRECT medians: direct {:.2} bounce {:.2} disk only {:.2} (with {} threads: {:.2}) GiB/s; CPU s/GiB direct {:.3} bounce {:.3}",
        median(dc.clone()),
        median(bc.clone()),
        median(disk.clone()),
        2 * base.threads,
        median(disk2),
        median(dcpu.clone()),
        median(bcpu.clone())
    );
    print_row(
        "file.read_bounce_over_pread",
        median(bounce_plain),
        "GiB/s",
        "pread_host",
        median(pread),
    );
    print_row(
        "file.read_direct_over_bounce",
        median(direct_warm),
        "GiB/s",
        "bounce",
        median(bounce_warm),
    );
    print_row(
        "file.read_direct_over_bounce.odirect",
        median(dc),
        "GiB/s",
        "bounce_odirect",
        median(bc.clone()),
    );
    print_row(
        "file.read_direct_over_bounce.odirect.cpu_s_per_gib",
        median(dcpu),
        "cpu_s/GiB",
        "bounce_odirect",
        median(bcpu),
    );
    print_row(
        "file.read_odirect_disk_only",
        median(disk),
        "GiB/s",
        "bounce_odirect",
        median(bc),
    );
    for (what, io) in [("buffered", &buffered), ("O_DIRECT", &direct)] {
        let st = io.stats();
        eprintln!(
            "  {what} engine bounce buffers: {} USM host, {} plain",
            st.pinned_bounce_buffers, st.plain_bounce_buffers
        );
    }
    direct.release_bounce_buffers();
    buffered.release_bounce_buffers();
    rt.release_buffer(uhp)?;
    rt.release_buffer(plain)?;
    drop(host);
    Ok(())
}
