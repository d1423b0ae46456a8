//! The shuffle filter as an OpenCL C kernel on PoCL, through the project's
//! Runtime: against the host shuffle, and reading an h5py-written
//! shuffle-only dataset straight into device memory.
//!
//! Needs PoCL (`POCL_DEVICES="pthread pthread"`, set by `cargo xtask`);
//! without it the tests print why and skip.

mod common;

use std::sync::Arc;

use common::{assert_same_elements, files};
use ur_api::{BufferDesc, ContextId, DeviceId, QueueId, QueueProps, Runtime};
use ur_file_io::{DirectIo, FileIo, Settings};
use ur_filters::device::{read_shuffled_to_device, DeviceShuffle};
use ur_filters::h5::Dataset;
use ur_filters::{Filter, Shuffle};

fn pocl() -> Option<(Arc<Runtime>, ContextId, DeviceId, QueueId)> {
    let mut rt = Runtime::new();
    if let Err(e) = rt.add(ur_opencl::OpenClAdapter::new()) {
        println!("SKIP: no OpenCL: {e}");
        return None;
    }
    let Some(dev) = rt.all_devices().into_iter().find(|&d| {
        rt.platform_info(rt.device_platform(d).unwrap())
            .map(|p| p.name.contains("Portable"))
            .unwrap_or(false)
    }) else {
        println!("SKIP: no PoCL device (POCL_DEVICES and OCL_ICD_VENDORS as cargo xtask sets them)");
        return None;
    };
    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    Some((Arc::new(rt), ctx, dev, q))
}

#[test]
fn device_unshuffle_matches_the_host_filter() {
    let Some((rt, ctx, dev, q)) = pocl() else { return };
    let ds = DeviceShuffle::new(rt.clone(), ctx).unwrap();
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
            &format!("size {size}, {len} bytes, first {out}"),
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
}

#[test]
fn h5py_shuffle_dataset_into_pocl_without_host_decode() {
    let Some((rt, ctx, dev, q)) = pocl() else { return };
    let Some(dir) = files() else { return };
    let ds = Dataset::open(dir.join("filters.h5"), "/d2_f32_shuffle_rows", false).unwrap();
    let want = std::fs::read(dir.join("d2_f32_shuffle_rows.bin")).unwrap();
    let shuffle = DeviceShuffle::new(rt.clone(), ctx).unwrap();
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
        let report = read_shuffled_to_device(&ds, &io, &shuffle, ctx, dev, q, dst).unwrap();
        let mut back = vec![0u8; ds.byte_len()];
        rt.read(q, dst, 0, &mut back).unwrap();
        assert_same_elements("device read of d2_f32_shuffle_rows", &back, &want, 4);
        println!("fastpath allowed {fast}: {report:?}");
        assert_eq!(report.chunks, 4);
        if !fast {
            assert_eq!(
                report.bytes_copied, report.stored_bytes,
                "the fallback bounces every byte"
            );
        }
        rt.release_buffer(dst).unwrap();
    }
}
