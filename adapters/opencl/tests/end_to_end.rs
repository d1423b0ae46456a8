//! End to end over three real OpenCL devices and the memory manager:
//!
//! 1. a kernel on PoCL device 0 writes a buffer;
//! 2. a kernel on PoCL device 1 (same context: the manager makes an adapter
//!    copy) and a kernel on rusticl (another platform: the manager stages
//!    through host memory) read it and write results, verified on the host;
//! 3. a kernel on rusticl writes a buffer that is then read back on PoCL
//!    device 0.
//!
//! Every byte is checked. Skips (with the reason printed) on machines
//! without PoCL's two devices and a second platform.
//!
//! A second test runs every ordered pair of four devices (PoCL 0, PoCL 1,
//! rusticl, Intel's CPU runtime): a kernel on the source writes, a kernel
//! on the destination reads what the manager's route brought there.

mod common;

use std::sync::Arc;

use ur_api::{ArgValue, ContextId, DeviceId, KernelId, Location, MemoryConnection, NdRange, ProgramSource, Runtime};
use ur_memory_manager::{Access, Config, MapEnd, MemoryManager, Place, Route, Step};

const N: usize = 1 << 18; // elements of u32: 1 MiB per buffer.

const KERNELS: &str = r#"
__kernel void produce(__global uint* out, uint seed) {
    uint i = (uint)get_global_id(0);
    out[i] = (i * 2654435761u) ^ seed;
}
__kernel void consume(__global const uint* in, __global uint* out, uint k) {
    uint i = (uint)get_global_id(0);
    out[i] = in[i] * k + i;
}
"#;

fn produced(i: u32, seed: u32) -> u32 {
    i.wrapping_mul(2_654_435_761) ^ seed
}

fn kernels(rt: &Runtime, ctx: ContextId) -> (KernelId, KernelId) {
    let p = rt
        .create_program(ctx, &ProgramSource::OpenClC(KERNELS.into()), "")
        .unwrap();
    (
        rt.create_kernel(p, "produce").unwrap(),
        rt.create_kernel(p, "consume").unwrap(),
    )
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect()
}

/// The copy steps of the plan for an access.
fn routes(mm: &MemoryManager, buf: ur_memory_manager::LogicalBuffer, place: Place) -> Vec<Route> {
    mm.plan(buf, place, Access::Read, 0..N * 4)
        .unwrap()
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Copy { route, .. } => Some(*route),
            _ => None,
        })
        .collect()
}

#[test]
fn pocl_pocl_rusticl_round_trip() {
    let Some(rt) = common::runtime("end_to_end") else {
        return;
    };
    let Some(pocl) = common::two_device_platform(&rt) else {
        common::skip(
            "end_to_end",
            "no platform with two devices (POCL_DEVICES=\"pthread pthread\")",
        );
        return;
    };
    let other: Option<DeviceId> = common::by_platform(&rt)
        .into_iter()
        .find(|devs| !devs.contains(&pocl[0]))
        .map(|devs| devs[0]);
    let Some(rusticl) = other else {
        common::skip(
            "end_to_end",
            "no second OpenCL platform (RUSTICL_ENABLE=swrast for rusticl)",
        );
        return;
    };
    let (d0, d1) = (pocl[0], pocl[1]);
    let cp = rt.create_context(&[d0, d1]).unwrap();
    let cr = rt.create_context(&[rusticl]).unwrap();
    let (l0, l1, l2) = (Location::new(cp, d0), Location::new(cp, d1), Location::new(cr, rusticl));
    let (kp_produce, kp_consume) = kernels(&rt, cp);
    let (kr_produce, kr_consume) = kernels(&rt, cr);

    let rt = Arc::new(rt);
    let config = Config {
        measure_routes: false,
        staging_chunk: 256 << 10, // several chunks per buffer, so the ring is exercised
        mapped_chunk: 256 << 10,  // and so are several mappings
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &[l0, l1, l2], config).unwrap();
    let (p0, p1, p2) = (Place::Device(l0), Place::Device(l1), Place::Device(l2));
    assert_eq!(mm.connection(p0, p1).unwrap(), MemoryConnection::Migratable);
    assert_eq!(mm.connection(p0, p2).unwrap(), MemoryConnection::None);
    assert_eq!(mm.connection(p2, p0).unwrap(), MemoryConnection::None);

    let launch = |kernel: KernelId, place: &ur_memory_manager::Acquired, args: &[ArgValue<'_>]| {
        let q = place.queue().expect("a device place has a queue");
        rt.complete(rt.enqueue_launch(q, kernel, &NdRange::d1(N), args, &[]).unwrap())
            .unwrap();
    };

    // 1. PoCL device 0 produces.
    let seed = 0x9E37_79B9u32;
    let data = mm.create_buffer(N * 4).unwrap();
    {
        let a = mm.acquire(data, p0, Access::DiscardWrite, 0..N * 4).unwrap();
        launch(
            kp_produce,
            &a,
            &[ArgValue::Buffer(a.buffer().unwrap()), ArgValue::scalar(&seed)],
        );
    }

    // 2a. PoCL device 1 consumes through an adapter copy.
    assert_eq!(
        routes(&mm, data, p1),
        vec![Route::AdapterCopy(MemoryConnection::Migratable)]
    );
    let out1 = mm.create_buffer(N * 4).unwrap();
    {
        let input = mm.acquire(data, p1, Access::Read, 0..N * 4).unwrap();
        let out = mm.acquire(out1, p1, Access::DiscardWrite, 0..N * 4).unwrap();
        let k = 3u32;
        let args = [
            ArgValue::Buffer(input.buffer().unwrap()),
            ArgValue::Buffer(out.buffer().unwrap()),
            ArgValue::scalar(&k),
        ];
        launch(kp_consume, &out, &args);
    }

    // 2b. rusticl consumes through host staging: zero-copy (the source
    // chunks mapped) when both devices share the host's memory, else the
    // pinned staging ring.
    let host_unified = [d0, rusticl]
        .iter()
        .all(|d| rt.device_info(*d).unwrap().host_unified_memory);
    let staged = routes(&mm, data, p2);
    assert!(
        !staged.is_empty()
            && staged.iter().all(|r| match r {
                Route::Mapped { end, .. } => host_unified && *end == MapEnd::Source,
                Route::Staged { .. } => !host_unified,
                _ => false,
            }),
        "expected a host-staged route to rusticl (mapped source: {host_unified}), got {staged:?}"
    );
    let out2 = mm.create_buffer(N * 4).unwrap();
    {
        let input = mm.acquire(data, p2, Access::Read, 0..N * 4).unwrap();
        let out = mm.acquire(out2, p2, Access::DiscardWrite, 0..N * 4).unwrap();
        let k = 5u32;
        let args = [
            ArgValue::Buffer(input.buffer().unwrap()),
            ArgValue::Buffer(out.buffer().unwrap()),
            ArgValue::scalar(&k),
        ];
        launch(kr_consume, &out, &args);
    }

    let mut bytes = vec![0u8; N * 4];
    mm.read(out1, 0, &mut bytes).unwrap();
    let got1 = words(&bytes);
    mm.read(out2, 0, &mut bytes).unwrap();
    let got2 = words(&bytes);
    for i in 0..N as u32 {
        let v = produced(i, seed);
        assert_eq!(
            got1[i as usize],
            v.wrapping_mul(3).wrapping_add(i),
            "PoCL device 1 result at {i}"
        );
        assert_eq!(
            got2[i as usize],
            v.wrapping_mul(5).wrapping_add(i),
            "rusticl result at {i}"
        );
    }

    // 3. rusticl writes; PoCL device 0 reads it back from its own allocation.
    let seed2 = 0x0BAD_F00Du32;
    let back = mm.create_buffer(N * 4).unwrap();
    {
        let a = mm.acquire(back, p2, Access::DiscardWrite, 0..N * 4).unwrap();
        launch(
            kr_produce,
            &a,
            &[ArgValue::Buffer(a.buffer().unwrap()), ArgValue::scalar(&seed2)],
        );
    }
    {
        let a = mm.acquire(back, p0, Access::Read, 0..N * 4).unwrap();
        let mut bytes = vec![0u8; N * 4];
        rt.read(a.queue().unwrap(), a.buffer().unwrap(), 0, &mut bytes).unwrap();
        for (i, w) in words(&bytes).into_iter().enumerate() {
            assert_eq!(w, produced(i as u32, seed2), "rusticl -> PoCL device 0 at {i}");
        }
    }
    let stats = mm.stats();
    assert!(stats.copies >= 1 && stats.staged_copies >= 2, "{stats:?}");
    assert_eq!(stats.mapped_copies > 0, host_unified, "{stats:?}");
    for b in [data, out1, out2, back] {
        mm.release(b).unwrap();
    }
}

/// The first device of the platform whose name contains `needle`.
fn device_of_platform(rt: &Runtime, needle: &str) -> Option<DeviceId> {
    common::by_platform(rt)
        .into_iter()
        .filter_map(|devs| devs.first().copied())
        .find(|&d| common::platform_name(rt, d).contains(needle))
}

#[test]
fn four_devices_every_route_byte_for_byte() {
    const TEST: &str = "end_to_end_four";
    let Some(rt) = common::runtime(TEST) else {
        return;
    };
    let Some(pocl) = common::two_device_platform(&rt) else {
        common::skip(TEST, "no platform with two devices (POCL_DEVICES=\"pthread pthread\")");
        return;
    };
    let Some(rusticl) = device_of_platform(&rt, "rusticl") else {
        common::skip(TEST, "no rusticl device (RUSTICL_ENABLE=swrast)");
        return;
    };
    let Some(intel) = device_of_platform(&rt, "Intel") else {
        common::skip(
            TEST,
            "no Intel CPU OpenCL device (`cargo xtask setup` registers it; OCL_ICD_VENDORS)",
        );
        return;
    };
    let cp = rt.create_context(&[pocl[0], pocl[1]]).unwrap();
    let cr = rt.create_context(&[rusticl]).unwrap();
    let ci = rt.create_context(&[intel]).unwrap();
    let locs = [
        Location::new(cp, pocl[0]),
        Location::new(cp, pocl[1]),
        Location::new(cr, rusticl),
        Location::new(ci, intel),
    ];
    let names = ["PoCL 0", "PoCL 1", "rusticl", "Intel"];
    let ks = [kernels(&rt, cp), kernels(&rt, cp), kernels(&rt, cr), kernels(&rt, ci)];
    let rt = Arc::new(rt);
    let config = Config {
        measure_routes: false,
        staging_chunk: 256 << 10,
        mapped_chunk: 256 << 10,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &locs, config).unwrap();
    let places: Vec<Place> = locs.iter().map(|&l| Place::Device(l)).collect();
    // Intel's device shares no context with the others: every route to or
    // from it goes through host memory.
    for i in 0..3 {
        assert_eq!(mm.connection(places[3], places[i]).unwrap(), MemoryConnection::None);
        assert_eq!(mm.connection(places[i], places[3]).unwrap(), MemoryConnection::None);
    }
    let launch = |kernel: KernelId, place: &ur_memory_manager::Acquired, args: &[ArgValue<'_>]| {
        let q = place.queue().expect("a device place has a queue");
        rt.complete(rt.enqueue_launch(q, kernel, &NdRange::d1(N), args, &[]).unwrap())
            .unwrap();
    };
    let mut bytes = vec![0u8; N * 4];
    for src in 0..4 {
        for dst in (0..4).filter(|&d| d != src) {
            let seed = 0x9E37_79B9u32 ^ ((src * 4 + dst) as u32).wrapping_mul(0x0101_0101);
            let data = mm.create_buffer(N * 4).unwrap();
            {
                let a = mm.acquire(data, places[src], Access::DiscardWrite, 0..N * 4).unwrap();
                let args = [ArgValue::Buffer(a.buffer().unwrap()), ArgValue::scalar(&seed)];
                launch(ks[src].0, &a, &args);
            }
            let route = routes(&mm, data, places[dst]);
            let out = mm.create_buffer(N * 4).unwrap();
            let k = dst as u32 + 2;
            {
                let input = mm.acquire(data, places[dst], Access::Read, 0..N * 4).unwrap();
                let o = mm.acquire(out, places[dst], Access::DiscardWrite, 0..N * 4).unwrap();
                let args = [
                    ArgValue::Buffer(input.buffer().unwrap()),
                    ArgValue::Buffer(o.buffer().unwrap()),
                    ArgValue::scalar(&k),
                ];
                launch(ks[dst].1, &o, &args);
            }
            mm.read(out, 0, &mut bytes).unwrap();
            for (i, w) in words(&bytes).into_iter().enumerate() {
                let want = produced(i as u32, seed).wrapping_mul(k).wrapping_add(i as u32);
                assert_eq!(w, want, "{} -> {} ({route:?}) at {i}", names[src], names[dst]);
            }
            eprintln!("{} -> {}: {route:?}, {} bytes checked", names[src], names[dst], N * 4);
            mm.release(data).unwrap();
            mm.release(out).unwrap();
        }
    }
}
