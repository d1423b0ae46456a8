//! The shuffle filter as an OpenCL C kernel on every OpenCL device of the
//! machine (PoCL's two, rusticl's, Intel's CPU runtime), through the
//! project's Runtime: against the host shuffle, and reading h5py-written
//! shuffle-only and Fletcher-32 + shuffle datasets straight into device
//! memory (the checksum checked there).
//!
//! Without OpenCL the tests print why and skip; where `UR_REQUIRE_OPENCL`
//! is set (CI) that is a failure.

mod common;

use common::h5py::{assert_same_elements, files};
use common::{on_every_opencl_device, ClDevice};
use std::sync::Arc;
use ur_api::{BufferDesc, Runtime};
use ur_file_io::{DirectIo, FileIo, Settings};
use ur_filters::device::{
    device_read_refusal, device_source, read_shuffled_to_device, read_to_device, DeviceDecoders, DeviceFletcher32,
    DeviceShuffle,
};
use ur_filters::h5::Dataset;
use ur_filters::{
    BufferKind, ChunkSource, DeviceKernels, Filter, FilterError, H5Error, Shuffle, FILTER_FLETCHER32, FILTER_SHUFFLE,
};

fn shuffle_kernel(rt: &Arc<Runtime>, d: &ClDevice) -> ur_api::Result<DeviceShuffle> {
    DeviceShuffle::new(rt.clone(), d.ctx)
}

#[test]
fn device_unshuffle_matches_the_host_filter() {
    on_every_opencl_device("device_unshuffle", shuffle_kernel, |rt, d, ds| {
        let (ctx, dev, q, name) = (d.ctx, d.dev, d.queue, &d.name);
        for (size, len, out) in [
            (4usize, 4096usize, 4096usize),
            (8, 8000, 2400),
            (2, 1001, 1001),
            (1, 100, 100),
        ] {
            let raw: Vec<u8> = (0..len).map(|i| (i * 7 + i / 13) as u8).collect();
            let stored = Shuffle::new(size).encode(raw.clone()).unwrap();
            let src = rt
                .create_buffer_with_data(ctx, &BufferDesc::new(len).on(dev), &stored)
                .unwrap();
            let dst = rt.create_buffer(ctx, &BufferDesc::new(out + 16).on(dev), None).unwrap();
            let ev = ds.decode(q, src, (dst, 16), len, out, size, &[]).unwrap();
            rt.complete(ev).unwrap();
            let mut back = vec![0u8; out];
            rt.read(q, dst, 16, &mut back).unwrap();
            assert_same_elements(
                &format!("{name}: size {size}, {len} bytes, first {out}"),
                &back,
                &raw[..out],
                size,
            );
            // And the kernel's shuffle is HDF5's.
            let ev = ds.encode(q, dst, (src, 0), out - out % size.max(1), size, &[]).unwrap();
            rt.complete(ev).unwrap();
            rt.release_buffer(src).unwrap();
            rt.release_buffer(dst).unwrap();
        }
    });
}

#[test]
fn h5py_shuffle_dataset_into_every_opencl_device_without_host_decode() {
    let Some(dir) = files() else { return };
    let ds = Dataset::open(dir.join("filters.h5"), "/d2_f32_shuffle_rows", false).unwrap();
    let want = std::fs::read(dir.join("d2_f32_shuffle_rows.bin")).unwrap();
    on_every_opencl_device("h5py_shuffle_dataset_into_device", shuffle_kernel, |rt, d, shuffle| {
        let (ctx, dev, q, name) = (d.ctx, d.dev, d.queue, &d.name);
        // Buffered file: file-io's direct fastpath (pread into the mapping of the
        // PoCL buffer) takes the unaligned chunk ranges; the fallback bounces them.
        for (settings, fast) in [
            (
                Settings {
                    direct_io: DirectIo::Off,
                    ..Settings::default()
                },
                true,
            ),
            (
                Settings {
                    fallback_only: true,
                    ..Settings::default()
                },
                false,
            ),
        ] {
            let io = FileIo::with_settings(rt.clone(), settings).unwrap();
            let dst = rt
                .create_buffer(ctx, &BufferDesc::new(ds.byte_len()).on(dev), None)
                .unwrap();
            let report =
                read_shuffled_to_device(&ds, &io, &shuffle, ctx, dev, q, dst).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut back = vec![0u8; ds.byte_len()];
            rt.read(q, dst, 0, &mut back).unwrap();
            assert_same_elements(&format!("{name}: device read of d2_f32_shuffle_rows"), &back, &want, 4);
            println!("{name}: fastpath allowed {fast}: {report:?}");
            assert_eq!(report.chunks, 4, "{name}");
            if !fast {
                assert_eq!(
                    report.bytes_copied, report.stored_bytes,
                    "{name}: the fallback bounces every byte"
                );
            }
            rt.release_buffer(dst).unwrap();
        }
    });
}

#[test]
fn h5py_fletcher_shuffle_dataset_checked_and_unshuffled_on_every_opencl_device() {
    let Some(dir) = files() else { return };
    let ds = Dataset::open(dir.join("filters.h5"), "/d1_f32_shuffle_fletcher", false).unwrap();
    let bad = Dataset::open(dir.join("corrupt.h5"), "/fletcher_bad_rows", false).unwrap();
    let want = std::fs::read(dir.join("d1_f32_shuffle_fletcher.bin")).unwrap();
    let every = DeviceKernels::new()
        .with(FILTER_SHUFFLE, DeviceShuffle::kinds())
        .with(FILTER_FLETCHER32, DeviceFletcher32::kinds());
    // What the loader takes, whatever the device.
    assert_eq!(device_read_refusal(&ds, &every), None);
    let shuffle_only = DeviceKernels::new().with(FILTER_SHUFFLE, DeviceShuffle::kinds());
    assert!(device_read_refusal(&ds, &shuffle_only).is_some_and(|w| w.contains("filter 1 (id 3)")));
    let deflate = Dataset::open(dir.join("filters.h5"), "/d2_f64_shuffle_deflate", false).unwrap();
    assert!(device_read_refusal(&deflate, &every).is_some_and(|w| w.contains("no device kernel")));
    let squares = Dataset::open(dir.join("filters.h5"), "/d2_i8_fletcher", false).unwrap();
    assert!(device_read_refusal(&squares, &every).is_some_and(|w| w.contains("whole rows")));
    on_every_opencl_device(
        "h5py_fletcher_shuffle_dataset_into_device",
        |rt, d| Ok::<_, ur_api::Error>((shuffle_kernel(rt, d)?, DeviceFletcher32::new(rt.clone(), d.ctx, d.dev)?)),
        |rt, d, (shuffle, fletcher)| {
            let (ctx, dev, q, name) = (d.ctx, d.dev, d.queue, &d.name);
            let kind = BufferKind::device("opencl", d.index);
            let decoders = DeviceDecoders {
                shuffle: Some(&shuffle),
                fletcher32: Some(&fletcher),
            };
            for fallback_only in [false, true] {
                let io = FileIo::with_settings(
                    rt.clone(),
                    Settings {
                        direct_io: DirectIo::Off,
                        fallback_only,
                        ..Settings::default()
                    },
                )
                .unwrap();
                let source = device_source(&ds, &io, (ctx, dev, q), &kind).unwrap();
                let dst = rt
                    .create_buffer(ctx, &BufferDesc::new(ds.byte_len()).on(dev), None)
                    .unwrap();
                let report =
                    read_to_device(&ds, &io, decoders, (ctx, dev, q), dst).unwrap_or_else(|e| panic!("{name}: {e}"));
                let mut back = vec![0u8; ds.byte_len()];
                rt.read(q, dst, 0, &mut back).unwrap();
                rt.release_buffer(dst).unwrap();
                assert_same_elements(
                    &format!("{name}: device read of d1_f32_shuffle_fletcher"),
                    &back,
                    &want,
                    4,
                );
                assert_eq!(report.chunks, 5, "{name}");
                // The source file-io's plan names is the one the read took.
                println!("{name}: fallback only {fallback_only}: {source:?}, {report:?}");
                if fallback_only {
                    assert_eq!(source, ChunkSource::FileToPinned, "{name}");
                    assert_eq!(report.bytes_copied, report.stored_bytes, "{name}");
                } else {
                    assert_eq!(
                        source == ChunkSource::FileToDevice(kind.clone()),
                        report.bytes_copied == 0,
                        "{name}: {source:?} but {report:?}"
                    );
                }
            }
            // A corrupt chunk is caught by the device checksum, named.
            let io = FileIo::with_settings(rt.clone(), Settings::default()).unwrap();
            let dst = rt
                .create_buffer(ctx, &BufferDesc::new(bad.byte_len()).on(dev), None)
                .unwrap();
            let err = read_to_device(&bad, &io, decoders, (ctx, dev, q), dst).unwrap_err();
            rt.release_buffer(dst).unwrap();
            assert!(
                matches!(&err, H5Error::Chunk { chunk, filter: 1, source: FilterError::Checksum { .. }, .. } if chunk == &[16, 0]),
                "{name}: {err}"
            );
        },
    );
}
