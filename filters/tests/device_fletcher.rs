//! Fletcher-32 as OpenCL C kernels on every OpenCL device of the machine
//! (PoCL's two, rusticl's, Intel's CPU runtime), through the project's Runtime:
//! the device checksum against the host one over lengths around the block
//! size, odd lengths and sums that fold to 0xffff; verify-and-strip of
//! h5py-written Fletcher-32 chunks (and a corrupt one) in device memory.
//!
//! Without OpenCL the tests print why and skip; where `UR_REQUIRE_OPENCL`
//! is set (CI) that is a failure.

mod common;

use common::h5py::files;
use common::{on_every_opencl_device, ClDevice};
use std::sync::Arc;
use ur_api::{BufferDesc, Runtime};
use ur_filters::device::{kernels_for, DeviceFilterError, DeviceFletcher32, FLETCHER_BLOCK_WORDS};
use ur_filters::h5::Dataset;
use ur_filters::{
    fletcher32, BufferKind, ChunkSource, DeviceKernels, Filter, FilterError, Fletcher32, PlanStep, FILTER_FLETCHER32,
    FILTER_SHUFFLE,
};

fn fletcher_kernel(rt: &Arc<Runtime>, d: &ClDevice) -> ur_api::Result<DeviceFletcher32> {
    DeviceFletcher32::new(rt.clone(), d.ctx, d.dev)
}

#[test]
fn device_checksum_matches_the_host_one() {
    on_every_opencl_device("device_checksum", fletcher_kernel, |rt, d, f| {
        let (ctx, dev, q, device) = (d.ctx, d.dev, d.queue, &d.name);
        let block = 2 * FLETCHER_BLOCK_WORDS;
        let mut cases: Vec<Vec<u8>> = Vec::new();
        for len in [
            0,
            1,
            2,
            3,
            719,
            720,
            721,
            block - 1,
            block,
            block + 1,
            3 * block + 7,
            100_003,
        ] {
            cases.push((0..len).map(|i| (i * 31 + i / 7) as u8).collect());
        }
        // Sums that are multiples of 65535 (HDF5 keeps 0xffff, not 0) and zeros.
        cases.push(vec![0xff; 2 * 65535 + 2]);
        cases.push(vec![0xff; 5000]);
        cases.push(vec![0; 4097]);
        cases.push(vec![0, 0, 0, 1]);
        for data in cases {
            // One byte more than the data: never read, and no zero-sized buffer.
            let mut padded = data.clone();
            padded.push(0xa5);
            let buf = rt
                .create_buffer_with_data(ctx, &BufferDesc::new(padded.len()).on(dev), &padded)
                .unwrap();
            let got = f.checksum(q, buf, data.len(), &[]).unwrap();
            assert_eq!(got, fletcher32(&data), "{device}: {} bytes", data.len());
            rt.release_buffer(buf).unwrap();
        }
    });
}

#[test]
fn device_verify_and_strip_of_encoded_chunks() {
    on_every_opencl_device("device_verify_and_strip", fletcher_kernel, |rt, d, f| {
        let (ctx, dev, q, device) = (d.ctx, d.dev, d.queue, &d.name);
        let data: Vec<u8> = (0..10_001u32).map(|i| (i * 13 + 5) as u8).collect();
        let stored = Fletcher32.encode(data.clone()).unwrap();
        let sum = fletcher32(&data).to_le_bytes();
        let mut legacy = data.clone();
        legacy.extend_from_slice(&[sum[1], sum[0], sum[3], sum[2]]);
        let mut bad = stored.clone();
        bad[4321] ^= 0x10;
        for (what, bytes, ok) in [
            ("stored", &stored, true),
            ("legacy", &legacy, true),
            ("flipped", &bad, false),
        ] {
            let buf = rt
                .create_buffer_with_data(ctx, &BufferDesc::new(bytes.len()).on(dev), bytes)
                .unwrap();
            match f.decode(q, buf, bytes.len(), &[]) {
                Ok(n) => {
                    assert!(ok, "{device} {what}: a corrupt chunk passed");
                    assert_eq!(n, data.len());
                    let mut back = vec![0u8; n];
                    rt.read(q, buf, 0, &mut back).unwrap();
                    assert_eq!(back, data, "{device} {what}: the data is the buffer's prefix");
                }
                Err(DeviceFilterError::Filter(FilterError::Checksum { stored: s, computed })) => {
                    assert!(!ok, "{device} {what}: rejected a good chunk");
                    assert_eq!(computed, fletcher32(&bad[..data.len()]));
                    assert_eq!(s, u32::from_le_bytes(sum));
                }
                Err(e) => panic!("{device} {what}: {e}"),
            }
            rt.release_buffer(buf).unwrap();
        }
        let tiny = rt
            .create_buffer_with_data(ctx, &BufferDesc::new(3).on(dev), &[1, 2, 3])
            .unwrap();
        assert!(matches!(
            f.decode(q, tiny, 3, &[]),
            Err(DeviceFilterError::Filter(FilterError::Corrupt { .. }))
        ));
        rt.release_buffer(tiny).unwrap();
    });
}

#[test]
fn h5py_fletcher_chunks_verified_on_every_opencl_device() {
    let Some(dir) = files() else { return };
    on_every_opencl_device("h5py_fletcher_chunks_verified", fletcher_kernel, |rt, d, f| {
        let (ctx, dev, q, device) = (d.ctx, d.dev, d.queue, &d.name);
        for (file, name, good) in [
            ("filters.h5", "/d2_i8_fletcher", true),
            ("corrupt.h5", "/fletcher_bad", false),
        ] {
            let ds = Dataset::open(dir.join(file), name, false).unwrap();
            assert_eq!(ds.filters().len(), 1, "{device} {name}: Fletcher-32 only");
            let want = std::fs::read(dir.join(format!("{}.bin", &name[1..]))).ok();
            let mut rejected = 0;
            for origin in ur_filters::h5::chunks_meeting(&ur_filters::h5::Selection::all(ds.shape()), ds.chunk_shape())
            {
                let (stored, mask) = ds.read_raw_chunk(&origin).unwrap().unwrap();
                assert_eq!(mask, 0);
                let buf = rt
                    .create_buffer_with_data(ctx, &BufferDesc::new(stored.len()).on(dev), &stored)
                    .unwrap();
                match f.decode(q, buf, stored.len(), &[]) {
                    Ok(n) => {
                        assert_eq!(n, ds.chunk_bytes());
                        let mut back = vec![0u8; n];
                        rt.read(q, buf, 0, &mut back).unwrap();
                        assert_eq!(
                            back,
                            Fletcher32.decode(stored.clone(), n).unwrap(),
                            "{device} {name} {origin:?}"
                        );
                        if let Some(want) = &want {
                            // A 2-D dataset of bytes whose chunks divide it: each chunk row is a run of h5py's read.
                            let (cols, [rows_c, cols_c]) = (
                                ds.shape()[1] as usize,
                                [ds.chunk_shape()[0] as usize, ds.chunk_shape()[1] as usize],
                            );
                            for (i, row) in back.chunks(cols_c).enumerate().take(rows_c) {
                                let at = (origin[0] as usize + i) * cols + origin[1] as usize;
                                assert_eq!(
                                    row,
                                    &want[at..at + cols_c],
                                    "{device} {name} {origin:?} row {i} against h5py's read"
                                );
                            }
                        }
                    }
                    Err(DeviceFilterError::Filter(FilterError::Checksum { .. })) => rejected += 1,
                    Err(e) => panic!("{device} {name} {origin:?}: {e}"),
                }
                rt.release_buffer(buf).unwrap();
            }
            if good {
                assert_eq!(rejected, 0, "{device} {name}");
                assert!(want.is_some());
            } else {
                assert!(rejected >= 1, "{device} {name}: the corrupt chunk passed on the device");
            }
        }
    });
}

#[test]
fn planner_places_the_device_kernels_on_every_opencl_device() {
    let Some(dir) = files() else { return };
    let ds = Dataset::open(dir.join("filters.h5"), "/d1_f32_shuffle_fletcher", false).unwrap();
    on_every_opencl_device(
        "planner_places_the_device_kernels",
        |_, _| Ok::<_, String>(()),
        |rt, d, ()| {
            let kernels = kernels_for(rt, d.ctx, d.dev);
            assert_eq!(
                kernels.ids().collect::<Vec<_>>(),
                [FILTER_SHUFFLE, FILTER_FLETCHER32],
                "{}: both kernels build",
                d.name
            );
            let dest = BufferKind::device("opencl", d.index);
            let source = ChunkSource::FileToDevice(dest.clone());
            let host = ds
                .explain_chunk_with(&[0], source.clone(), &dest, &DeviceKernels::new())
                .unwrap();
            let plan = ds.explain_chunk_with(&[0], source, &dest, &kernels).unwrap();
            println!("{}: chunk [0] with the device's kernels:\n{plan}", d.name);
            // Stored on the device, both filters run there: nothing copied.
            assert_eq!((plan.copies(), host.copies()), (0, 2), "{}", d.name);
            let on_device: Vec<&str> = plan
                .steps
                .iter()
                .filter_map(|s| match s {
                    PlanStep::Run {
                        name, kernel: true, at, ..
                    } if at == &dest => Some(name.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(on_device, ["fletcher32", "shuffle"], "{}", d.name);
        },
    );
    // The native device runs no OpenCL C: no kernels offered.
    let mut rt = ur_api::Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    assert!(kernels_for(&Arc::new(rt), ctx, dev).is_empty());
}
