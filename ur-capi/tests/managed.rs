//! Buffers of a multi-device context live in the memory manager: written
//! through a queue on one device and read through a queue on another (and
//! through sub-buffers), called through this library's entry points. Runs
//! on the first platform with two or more devices (PoCL with
//! `POCL_DEVICES="pthread pthread"`); skips, saying why, where none is.

#![allow(missing_docs)]

use std::ptr::{null, null_mut};

use ur_adapter_rust::ddi;
use ur_adapter_rust::sys::*;

mod capi;
use capi::ok;

#[test]
fn a_buffer_moves_between_the_devices_of_its_context() {
    // SAFETY: the table is this library's, built once and never written.
    let t = unsafe { &*ddi::table() };
    // SAFETY: every call passes live out-pointers and buffers of the sizes
    // given, and handles this library returned, as the UR specification asks.
    unsafe {
        let devs = capi::platforms(t)
            .into_iter()
            .map(|p| p.devices)
            .find(|d| d.len() >= 2)
            .unwrap_or_default();
        if devs.len() < 2 {
            assert!(
                std::env::var("UR_REQUIRE_SYCL").as_deref() != Ok("1"),
                "no platform with two devices"
            );
            eprintln!("skipped: no platform with two devices (POCL_DEVICES=\"pthread pthread\")");
            return;
        }
        let mut c = null_mut();
        ok(
            t.Context.pfnCreate.unwrap()(2, devs.as_ptr(), null(), &mut c),
            "urContextCreate",
        );
        let (mut q0, mut q1) = (null_mut(), null_mut());
        ok(
            t.Queue.pfnCreate.unwrap()(c, devs[0], null(), &mut q0),
            "urQueueCreate 0",
        );
        ok(
            t.Queue.pfnCreate.unwrap()(c, devs[1], null(), &mut q1),
            "urQueueCreate 1",
        );
        const N: usize = 1 << 16;
        let init: Vec<u8> = (0..N).map(|i| (i % 251) as u8).collect();
        let props = ur_buffer_properties_t {
            stype: UR_STRUCTURE_TYPE_BUFFER_PROPERTIES,
            pNext: null_mut(),
            pHost: init.as_ptr().cast_mut().cast(),
        };
        let mut b = null_mut();
        ok(
            t.Mem.pfnBufferCreate.unwrap()(
                c,
                UR_MEM_FLAG_READ_WRITE | UR_MEM_FLAG_ALLOC_COPY_HOST_POINTER,
                N,
                &props,
                &mut b,
            ),
            "urMemBufferCreate",
        );
        // Initial data read on device 1.
        let mut back = vec![0u8; N];
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(q1, b, true, 0, N, back.as_mut_ptr().cast(), 0, null(), null_mut()),
            "read on 1",
        );
        assert_eq!(back, init);
        // Fill on device 0 (non-blocking, event), read on device 1 after it.
        let pat = 0x5au8;
        let mut ev = null_mut();
        ok(
            t.Enqueue.pfnMemBufferFill.unwrap()(q0, b, (&pat as *const u8).cast(), 1, 0, N / 2, 0, null(), &mut ev),
            "fill on 0",
        );
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(q1, b, true, 0, N, back.as_mut_ptr().cast(), 1, &ev, null_mut()),
            "read on 1 after the fill",
        );
        ok(t.Event.pfnRelease.unwrap()(ev), "urEventRelease");
        assert!(back[..N / 2].iter().all(|&v| v == pat));
        assert_eq!(back[N / 2..], init[N / 2..]);
        // A sub-buffer written on device 1, the parent read on device 0.
        let region = ur_buffer_region_t {
            stype: UR_STRUCTURE_TYPE_BUFFER_REGION,
            pNext: null(),
            origin: 4096,
            size: 4096,
        };
        let mut sub = null_mut();
        ok(
            t.Mem.pfnBufferPartition.unwrap()(
                b,
                UR_MEM_FLAG_READ_WRITE,
                UR_BUFFER_CREATE_TYPE_REGION,
                &region,
                &mut sub,
            ),
            "urMemBufferPartition",
        );
        let ones = vec![1u8; 4096];
        ok(
            t.Enqueue.pfnMemBufferWrite.unwrap()(q1, sub, true, 0, 4096, ones.as_ptr().cast(), 0, null(), null_mut()),
            "write the sub-buffer on 1",
        );
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(q0, b, true, 0, N, back.as_mut_ptr().cast(), 0, null(), null_mut()),
            "read the parent on 0",
        );
        assert!(back[4096..8192].iter().all(|&v| v == 1));
        assert!(back[..4096].iter().all(|&v| v == pat));
        assert_eq!(back[N / 2..], init[N / 2..]);
        // A mapping on device 1 sees the bytes written on device 0.
        let two = [2u8; 16];
        ok(
            t.Enqueue.pfnMemBufferWrite.unwrap()(q0, b, true, N - 16, 16, two.as_ptr().cast(), 0, null(), null_mut()),
            "write the tail on 0",
        );
        let mut mapped = null_mut();
        ok(
            t.Enqueue.pfnMemBufferMap.unwrap()(
                q1,
                b,
                true,
                UR_MAP_FLAG_READ,
                N - 16,
                16,
                0,
                null(),
                null_mut(),
                &mut mapped,
            ),
            "map on 1",
        );
        assert_eq!(std::slice::from_raw_parts(mapped.cast::<u8>(), 16), &two);
        ok(
            t.Enqueue.pfnMemUnmap.unwrap()(q1, b, mapped, 0, null(), null_mut()),
            "unmap on 1",
        );
        // A 3-D box written into the sub-buffer on device 0 (its origin
        // shifts every row by 4096 bytes in the parent), read back as a box
        // from the sub-buffer on device 1 with other host pitches, and the
        // whole parent compared with a model: the box's bytes moved,
        // nothing else changed. (Both entry points add the sub-buffer's
        // offset in the manager's buffer; each check fails without it.)
        let mut model = back.clone();
        model[N - 16..].copy_from_slice(&two);
        let src: Vec<u8> = (0..80u8).map(|i| i.wrapping_mul(7).wrapping_add(100)).collect();
        let offset = |(x, y, z): (u64, u64, u64)| ur_rect_offset_t { x, y, z };
        let (bo, ho) = (offset((5, 2, 1)), offset((1, 1, 0)));
        let (w, h, d) = (8usize, 3usize, 2usize);
        let region = ur_rect_region_t {
            width: w as u64,
            height: h as u64,
            depth: d as u64,
        };
        let cells = || (0..d).flat_map(move |z| (0..h).flat_map(move |y| (0..w).map(move |x| (x, y, z))));
        let in_src = |(x, y, z): (usize, usize, usize)| src[(1 + x) + (1 + y) * 10 + z * 40];
        ok(
            t.Enqueue.pfnMemBufferWriteRect.unwrap()(
                q0,
                sub,
                true,
                bo,
                ho,
                region,
                64,
                1024,
                10,
                40,
                src.as_ptr().cast_mut().cast(),
                0,
                null(),
                null_mut(),
            ),
            "write a box into the sub-buffer on 0",
        );
        for (x, y, z) in cells() {
            model[4096 + (5 + x) + (2 + y) * 64 + (1 + z) * 1024] = in_src((x, y, z));
        }
        let mut boxed = vec![0u8; w * h * d];
        ok(
            t.Enqueue.pfnMemBufferReadRect.unwrap()(
                q1,
                sub,
                true,
                bo,
                offset((0, 0, 0)),
                region,
                64,
                1024,
                0,
                0,
                boxed.as_mut_ptr().cast(),
                0,
                null(),
                null_mut(),
            ),
            "read the box from the sub-buffer on 1",
        );
        for (x, y, z) in cells() {
            assert_eq!(boxed[x + y * w + z * w * h], in_src((x, y, z)), "box ({x}, {y}, {z})");
        }
        ok(
            t.Enqueue.pfnMemBufferRead.unwrap()(q1, b, true, 0, N, back.as_mut_ptr().cast(), 0, null(), null_mut()),
            "read the parent on 1",
        );
        assert!(
            back == model,
            "the parent differs from the model outside or inside the box"
        );
        ok(t.Queue.pfnFinish.unwrap()(q1), "urQueueFinish");
        ok(t.Mem.pfnRelease.unwrap()(sub), "release the sub-buffer");
        ok(t.Mem.pfnRelease.unwrap()(b), "release the buffer");
        ok(t.Queue.pfnRelease.unwrap()(q0), "urQueueRelease 0");
        ok(t.Queue.pfnRelease.unwrap()(q1), "urQueueRelease 1");
        ok(t.Context.pfnRelease.unwrap()(c), "urContextRelease");
    }
}
