//! Behaviour beyond round trips: bad inputs are typed errors that move
//! nothing, size 0 touches no backend, reads past end of file are short,
//! the aligned middle goes to the fastpath, a failing fastpath is retried
//! on the fallback, two threads share a file and a buffer, asynchronous
//! requests, logical buffers.

mod common;

use std::sync::Arc;

use common::*;
use ur_api::{BufferDesc, Location, MemFlags};
use ur_file_io::{
    BackendChoice, BackendKind, BounceCopy, DeviceMem, DirectIo, FileIoError, OpenOptions, Request, Settings,
};
use ur_memory_manager::{MemoryManager, Place};

fn native() -> Dev {
    devices()
        .into_iter()
        .find(|d| d.backend == ur_api::Backend::Native)
        .unwrap()
}

fn target(d: &Dev, buffer: ur_api::BufferId, offset: usize) -> DeviceMem {
    DeviceMem::Buffer {
        queue: d.queue,
        buffer,
        offset,
    }
}

#[test]
fn bad_inputs_are_typed_errors_and_move_nothing() {
    let io = engine(small_settings());
    let rt = io.runtime().clone();
    let d = native();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    write_file(&p, &pattern(1, 10_000));
    let buf = d.buffer(&rt, 4096);
    rt.write(d.queue, buf, 0, &[0xAB; 4096]).unwrap();
    let t = target(&d, buf, 0);
    let f = io.open(&p, OpenOptions::read()).unwrap();
    let before = io.stats();

    // A buffer smaller than the request (from its offset, too).
    assert!(matches!(
        io.read(&f, t, 0, 4097),
        Err(FileIoError::BufferTooSmall {
            needed: 4097,
            available: 4096
        })
    ));
    assert!(matches!(
        io.read(&f, target(&d, buf, 100), 0, 4000),
        Err(FileIoError::BufferTooSmall { available: 3996, .. })
    ));
    // Offsets that overflow.
    assert!(matches!(
        io.read(&f, t, u64::MAX - 2, 16),
        Err(FileIoError::OffsetOverflow { .. })
    ));
    assert!(matches!(
        io.read(&f, t, i64::MAX as u64, 1),
        Err(FileIoError::OffsetOverflow { .. })
    ));
    // A read-only handle used for writing.
    assert!(matches!(io.write(&f, t, 0, 16), Err(FileIoError::NotWritable { .. })));
    // A released buffer.
    let gone = d.buffer(&rt, 64);
    rt.release_buffer(gone).unwrap();
    assert!(matches!(
        io.read(&f, target(&d, gone, 0), 0, 16),
        Err(FileIoError::Runtime(_))
    ));
    // A closed file (size 0 included).
    let f2 = io.open(&p, OpenOptions::read()).unwrap();
    f2.close();
    assert!(f2.is_closed());
    assert!(matches!(io.read(&f2, t, 0, 16), Err(FileIoError::Closed { .. })));
    assert!(matches!(io.read(&f2, t, 0, 0), Err(FileIoError::Closed { .. })));
    // Forcing a backend that is offered nowhere.
    let forced = Request::read(t, 0, 4096).with_backend(BackendChoice::Only(BackendKind::Cufile));
    assert!(matches!(
        io.run(&f, &forced),
        Err(FileIoError::NotOffered {
            backend: BackendKind::Cufile,
            ..
        })
    ));
    // Missing files and directories.
    assert!(matches!(
        io.open(dir.path().join("nope"), OpenOptions::read()),
        Err(FileIoError::Open { .. })
    ));
    assert!(matches!(
        io.open(dir.path(), OpenOptions::read()),
        Err(FileIoError::Open { .. })
    ));

    // Nothing moved anywhere.
    assert_eq!(io.stats(), before);
    let mut back = vec![0u8; 4096];
    rt.read(d.queue, buf, 0, &mut back).unwrap();
    assert!(back.iter().all(|&b| b == 0xAB));
    rt.release_buffer(buf).unwrap();
}

#[test]
fn size_zero_touches_no_backend_and_reads_stop_at_end_of_file() {
    let io = engine(small_settings());
    let rt = io.runtime().clone();
    let d = native();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let data = pattern(2, 5000);
    write_file(&p, &data);
    let buf = d.buffer(&rt, 8192);
    let t = target(&d, buf, 0);
    let f = io.open(&p, OpenOptions::read()).unwrap();
    let before = io.stats();
    assert_eq!(io.read(&f, t, 0, 0).unwrap(), 0);
    assert_eq!(io.read(&f, t, 1 << 40, 0).unwrap(), 0);
    let ex = io.explain(&f, &Request::read(t, 0, 0)).unwrap();
    assert!(
        ex.pieces.is_empty() && ex.to_string().contains("no backend is touched"),
        "{ex}"
    );
    assert_eq!(io.stats(), before, "size 0 counted as a request");
    // Past end of file: the short count; wholly past: 0.
    assert_eq!(io.read(&f, t, 1000, 8192).unwrap(), 4000);
    let mut back = vec![0u8; 4000];
    rt.read(d.queue, buf, 0, &mut back).unwrap();
    assert_eq!(back, data[1000..]);
    assert_eq!(io.read(&f, t, 5000, 10).unwrap(), 0);
    assert_eq!(io.read(&f, t, 9999, 10).unwrap(), 0);
    rt.release_buffer(buf).unwrap();
}

/// A page-aligned native buffer on an O_DIRECT file: head and tail go to
/// the fallback, the aligned middle to the fastpath.
#[test]
fn o_direct_splits_an_aligned_middle_from_the_unaligned_ends() {
    let io = engine(small_settings());
    let rt = io.runtime().clone();
    let d = native();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let data = pattern(3, 3 << 20);
    write_file(&p, &data);
    let f = io.open(&p, OpenOptions::read().direct_io(DirectIo::Auto)).unwrap();
    if !f.mode().o_direct {
        eprintln!("skip: {}", f.mode());
        return;
    }
    let a = f.mode().offset_align as u64;
    let buf = rt
        .create_buffer(
            d.ctx,
            &BufferDesc::new(3 << 20)
                .on(d.device)
                .with_flags(MemFlags::ALLOC_HOST_PTR),
            None,
        )
        .unwrap();
    // Same misalignment on both sides: the middle is aligned everywhere.
    let (off, size) = (a + 3, (1 << 20) + 3);
    let t = target(&d, buf, off as usize);
    let ex = io.explain(&f, &Request::read(t, off, size)).unwrap();
    println!("{ex}");
    let chosen: Vec<_> = ex.pieces.iter().map(|p| p.chosen).collect();
    assert_eq!(
        chosen,
        [BackendKind::Bounce, BackendKind::Direct, BackendKind::Bounce],
        "{ex}"
    );
    assert_eq!(ex.pieces[1].file_offset % a, 0);
    let rep = io.run(&f, &Request::read(t, off, size)).unwrap();
    assert_eq!(rep.bytes, size);
    assert_eq!(rep.bytes_by(BackendKind::Direct) as usize, ex.pieces[1].len);
    let mut back = vec![0u8; size];
    rt.read(d.queue, buf, off as usize, &mut back).unwrap();
    assert_eq!(first_diff(&back, &data[off as usize..off as usize + size]), None);
    // Misaligned differently: no aligned address, so no direct part.
    let t2 = target(&d, buf, 1);
    let ex2 = io.explain(&f, &Request::read(t2, a, 8192)).unwrap();
    assert!(ex2.pieces.iter().all(|p| p.chosen == BackendKind::Bounce), "{ex2}");
    assert!(ex2.to_string().contains("not 512-aligned") || a != 512, "{ex2}");
    rt.release_buffer(buf).unwrap();
}

#[test]
fn a_failing_fastpath_is_retried_on_the_fallback_with_the_right_bytes() {
    for d in devices().into_iter().filter(|d| d.host_visible()) {
        let io = engine(small_settings());
        let rt = io.runtime().clone();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let size = (1 << 20) + 3;
        let data = pattern(4, size);
        write_file(&p, &data);
        let buf = d.buffer(&rt, size);
        rt.write(d.queue, buf, 0, &vec![0x55; size]).unwrap();
        let t = target(&d, buf, 0);
        let f = io.open(&p, OpenOptions::read().direct_io(DirectIo::Off)).unwrap();
        io.inject_fastpath_failures(3);
        let rep = io.read(&f, t, 0, size).unwrap();
        assert_eq!(rep, size);
        let st = io.stats();
        assert_eq!(st.retries, 3, "{}", d.name);
        assert_eq!(st.retried_bytes, 3 * (64 << 10));
        assert_eq!(st.direct_bytes + st.bounce_bytes, size as u64);
        let mut back = vec![0u8; size];
        rt.read(d.queue, buf, 0, &mut back).unwrap();
        assert_eq!(first_diff(&back, &data), None, "{}", d.name);
        // The next request keeps using the fastpath, with no retry.
        let rep = io.run(&f, &Request::read(t, 0, size)).unwrap();
        assert_eq!(
            (rep.retries, rep.bytes_by(BackendKind::Direct)),
            (0, size as u64),
            "{}",
            d.name
        );
        // Writes too.
        let out = io
            .open(dir.path().join("out"), OpenOptions::create().direct_io(DirectIo::Off))
            .unwrap();
        io.inject_fastpath_failures(2);
        let w = io.run(&out, &Request::write(t, 0, size)).unwrap();
        assert_eq!(w.retries, 2);
        assert_eq!(first_diff(&std::fs::read(dir.path().join("out")).unwrap(), &data), None);
        rt.release_buffer(buf).unwrap();
    }
}

#[test]
fn two_threads_read_different_ranges_of_one_file_into_one_buffer() {
    for d in devices() {
        let io = engine(small_settings());
        let rt = io.runtime().clone();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let size = 2 << 20;
        let data = Arc::new(pattern(5, size));
        write_file(&p, &data);
        let buf = d.buffer(&rt, size);
        let f = io.open(&p, OpenOptions::read()).unwrap();
        let half = size / 2 + 1;
        std::thread::scope(|s| {
            for (off, len) in [(0usize, half), (half, size - half)] {
                let (io, f, d) = (&io, &f, &d);
                s.spawn(move || {
                    let n = io.read(f, target(d, buf, off), off as u64, len).unwrap();
                    assert_eq!(n, len);
                });
            }
        });
        let mut back = vec![0u8; size];
        rt.read(d.queue, buf, 0, &mut back).unwrap();
        assert_eq!(first_diff(&back, &data), None, "{}", d.name);
        rt.release_buffer(buf).unwrap();
        io.release_bounce_buffers();
    }
}

#[test]
fn asynchronous_requests_complete_and_report() {
    let io = engine(small_settings());
    let rt = io.runtime().clone();
    let d = native();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let data = pattern(6, 1 << 20);
    write_file(&p, &data);
    let buf = d.buffer(&rt, 1 << 20);
    let f = io.open(&p, OpenOptions::read()).unwrap();
    let h1 = io.submit(&f, Request::read(target(&d, buf, 0), 0, 1 << 19)).unwrap();
    let h2 = io
        .submit(&f, Request::read(target(&d, buf, 1 << 19), 1 << 19, 1 << 19))
        .unwrap();
    assert_eq!(h1.wait().unwrap().bytes + h2.wait().unwrap().bytes, 1 << 20);
    let mut h0 = io.submit(&f, Request::read(target(&d, buf, 0), 0, 0)).unwrap();
    assert!(h0.is_done());
    assert!(matches!(
        io.submit(&f, Request::read(target(&d, buf, 0), 0, 2 << 20)),
        Err(FileIoError::BufferTooSmall { .. })
    ));
    let mut back = vec![0u8; 1 << 20];
    rt.read(d.queue, buf, 0, &mut back).unwrap();
    assert_eq!(first_diff(&back, &data), None);
    rt.release_buffer(buf).unwrap();
}

#[test]
fn logical_buffers_at_device_and_host_places() {
    let rt = runtime();
    let io = engine(small_settings());
    let devs: Vec<Dev> = devices()
        .into_iter()
        .filter(|d| d.backend != ur_api::Backend::OpenCl)
        .collect();
    let locs: Vec<Location> = devs.iter().map(|d| Location::new(d.ctx, d.device)).collect();
    let mm = MemoryManager::new(rt.clone(), &locs).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let size = (1 << 20) + 3;
    let data = pattern(7, size + 10);
    write_file(&p, &data);
    let f = io.open(&p, OpenOptions::read()).unwrap();
    for place in mm.places() {
        let lb = mm.create_buffer(size + 100).unwrap();
        assert_eq!(io.read_logical(&f, &mm, lb, place, 100, 10, size).unwrap(), size);
        let mut back = vec![0u8; size];
        mm.read(lb, 100, &mut back).unwrap();
        assert_eq!(first_diff(&back, &data[10..]), None, "{place:?}");
        let out_path = dir.path().join("out");
        let out = io.open(&out_path, OpenOptions::create()).unwrap();
        assert_eq!(io.write_logical(&out, &mm, lb, place, 100, 0, size).unwrap(), size);
        assert_eq!(
            first_diff(&std::fs::read(&out_path).unwrap(), &data[10..]),
            None,
            "{place:?}"
        );
        assert!(matches!(
            io.read_logical(&f, &mm, lb, place, 200, 0, size),
            Err(FileIoError::BufferTooSmall { .. })
        ));
        mm.release(lb).unwrap();
    }
    assert!(io.stats().host_bytes >= 2 * size as u64);
    let _ = Place::Host;
}

#[test]
fn settings_come_from_one_place() {
    let s = Settings::default()
        .with_overrides(|k| (k == ur_file_io::FALLBACK_ONLY_ENV).then(|| "1".to_string()))
        .unwrap();
    let io = engine(s);
    let rt = io.runtime().clone();
    let d = native();
    let dir = tempfile::tempdir().unwrap();
    write_file(&dir.path().join("f"), &pattern(8, 100_000));
    let buf = d.buffer(&rt, 100_000);
    let f = io.open(dir.path().join("f"), OpenOptions::read()).unwrap();
    let ex = io.explain(&f, &Request::read(target(&d, buf, 0), 0, 100_000)).unwrap();
    assert!(ex.pieces.iter().all(|p| p.chosen == BackendKind::Bounce), "{ex}");
    assert!(ex.to_string().contains("fallback only"), "{ex}");
    rt.release_buffer(buf).unwrap();
}

/// Bounce pieces smaller than tasks (several per task), on both device
/// legs (device writes through rings of 2 and 3 buffers; copies through
/// the device's host mapping, plain and streaming): every byte lands, both
/// ways, on every device, and a read past end of file stops in the middle
/// of a task and of a piece. `explain` names the leg each device takes.
#[test]
fn bounce_pieces_smaller_than_tasks_round_trip_and_stop_at_end_of_file() {
    let legs = [
        (BounceCopy::Queue, 2, false),
        (BounceCopy::Queue, 3, false),
        (BounceCopy::Auto, 2, false),
        (BounceCopy::Auto, 2, true),
    ];
    for (copy, ring, stream) in legs {
        for d in devices() {
            let io = engine(Settings {
                task_size: 64 << 10,
                bounce_size: 16 << 10,
                bounce_ring: ring,
                threads: 2,
                fallback_only: true,
                direct_io: DirectIo::Off,
                bounce_copy: copy,
                bounce_map_size: 16 << 10,
                bounce_stream: stream,
            });
            let rt = io.runtime().clone();
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("f");
            let size = 300_000 + 5;
            let data = pattern(9, size);
            write_file(&p, &data);
            let buf = d.buffer(&rt, size);
            let f = io.open(&p, OpenOptions::read()).unwrap();
            // From an unaligned offset, several pieces per task.
            let off = 777usize;
            let ex = io
                .explain(&f, &Request::read(target(&d, buf, 0), off as u64, size - off))
                .unwrap()
                .to_string();
            let mapped = copy == BounceCopy::Auto && d.host_visible();
            let leg = if mapped {
                "copy through the device's host mapping"
            } else {
                "device write"
            };
            assert!(ex.contains(leg), "{} {copy:?}: {ex}", d.name);
            let n = io.read(&f, target(&d, buf, 0), off as u64, size - off).unwrap();
            assert_eq!(n, size - off, "{}", d.name);
            let mut back = vec![0u8; size - off];
            rt.read(d.queue, buf, 0, &mut back).unwrap();
            assert_eq!(first_diff(&back, &data[off..]), None, "{} {copy:?} ring {ring}", d.name);

            // Past end of file: the last task ends short, mid-task and
            // mid-piece; the tasks after it read nothing.
            let big = d.buffer(&rt, size + 70_000);
            let n = io.read(&f, target(&d, big, 0), 0, size + 70_000).unwrap();
            assert_eq!(n, size, "{}", d.name);
            let mut all = vec![0u8; size];
            rt.read(d.queue, big, 0, &mut all).unwrap();
            assert_eq!(first_diff(&all, &data), None, "{} {copy:?} ring {ring}", d.name);

            // And back out to a file through the same rings.
            let out_path = dir.path().join("out");
            let out = io
                .open(&out_path, OpenOptions::create().direct_io(DirectIo::Off))
                .unwrap();
            assert_eq!(io.write(&out, target(&d, big, 0), 3, size).unwrap(), size);
            let written = std::fs::read(&out_path).unwrap();
            assert_eq!(written.len(), size + 3);
            assert_eq!(
                first_diff(&written[3..], &data),
                None,
                "{} {copy:?} ring {ring}",
                d.name
            );
            let s = io.stats();
            assert_eq!((s.retries, s.direct_bytes), (0, 0), "{s:?}");
            assert!(s.bounce_bytes >= 3 * size as u64 - off as u64, "{s:?}");
            rt.release_buffer(big).unwrap();
            rt.release_buffer(buf).unwrap();
            io.release_bounce_buffers();
        }
    }
}
