//! Fletcher-32 as OpenCL C kernels on PoCL, through the project's Runtime:
//! the device checksum against the host one over lengths around the block
//! size, odd lengths and sums that fold to 0xffff; verify-and-strip of
//! h5py-written Fletcher-32 chunks (and a corrupt one) in device memory.
//!
//! Needs PoCL (`POCL_DEVICES="pthread pthread"`, set by `cargo xtask`);
//! without it the tests print why and skip.

mod common;

use std::sync::Arc;

use common::files;
use ur_api::{BufferDesc, ContextId, DeviceId, QueueId, QueueProps, Runtime};
use ur_filters::device::{DeviceFilterError, DeviceFletcher32, FLETCHER_BLOCK_WORDS};
use ur_filters::h5::Dataset;
use ur_filters::{fletcher32, Filter, FilterError, Fletcher32};

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
fn device_checksum_matches_the_host_one() {
    let Some((rt, ctx, dev, q)) = pocl() else { return };
    let f = DeviceFletcher32::new(rt.clone(), ctx, dev).unwrap();
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
        assert_eq!(got, fletcher32(&data), "{} bytes", data.len());
        rt.release_buffer(buf).unwrap();
    }
}

#[test]
fn device_verify_and_strip_of_encoded_chunks() {
    let Some((rt, ctx, dev, q)) = pocl() else { return };
    let f = DeviceFletcher32::new(rt.clone(), ctx, dev).unwrap();
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
                assert!(ok, "{what}: a corrupt chunk passed");
                assert_eq!(n, data.len());
                let mut back = vec![0u8; n];
                rt.read(q, buf, 0, &mut back).unwrap();
                assert_eq!(back, data, "{what}: the data is the buffer's prefix");
            }
            Err(DeviceFilterError::Filter(FilterError::Checksum { stored: s, computed })) => {
                assert!(!ok, "{what}: rejected a good chunk");
                assert_eq!(computed, fletcher32(&bad[..data.len()]));
                assert_eq!(s, u32::from_le_bytes(sum));
            }
            Err(e) => panic!("{what}: {e}"),
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
}

#[test]
fn h5py_fletcher_chunks_verified_on_pocl() {
    let Some((rt, ctx, dev, q)) = pocl() else { return };
    let Some(dir) = files() else { return };
    let f = DeviceFletcher32::new(rt.clone(), ctx, dev).unwrap();
    for (file, name, good) in [
        ("filters.h5", "/d2_i8_fletcher", true),
        ("corrupt.h5", "/fletcher_bad", false),
    ] {
        let ds = Dataset::open(dir.join(file), name, false).unwrap();
        assert_eq!(ds.filters().len(), 1, "{name}: Fletcher-32 only");
        let want = std::fs::read(dir.join(format!("{}.bin", &name[1..]))).ok();
        let mut rejected = 0;
        for origin in ur_filters::h5::chunks_meeting(&ur_filters::h5::Selection::all(ds.shape()), ds.chunk_shape()) {
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
                    // Whole-row chunks of a 2-D dataset: compare with h5py's read where we have it.
                    assert_eq!(back, Fletcher32.decode(stored.clone(), n).unwrap(), "{name} {origin:?}");
                }
                Err(DeviceFilterError::Filter(FilterError::Checksum { .. })) => rejected += 1,
                Err(e) => panic!("{name} {origin:?}: {e}"),
            }
            rt.release_buffer(buf).unwrap();
        }
        if good {
            assert_eq!(rejected, 0, "{name}");
            assert!(want.is_some());
        } else {
            assert!(rejected >= 1, "{name}: the corrupt chunk passed on the device");
        }
    }
}
