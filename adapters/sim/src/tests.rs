//! End-to-end tests through the public `Runtime`: no host pointers to device
//! memory, mapping through staging copies, the link model's lower bound,
//! every fault, kernels and connections.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ur_api::{
    ArgValue, BufferDesc, ContextId, DeviceId, Error, EventStatus, HostArgs, HostKernelLibrary, HostPtr, Location,
    MapFlags, MemRef, MemoryConnection, NdRange, ProgramSource, QueueId, QueueProps, RectCopy, RectSide, Runtime,
    UsmDesc, UsmKind,
};

use crate::{SimAdapter, SimFaults, SimLinks, Topology, DEVICE_SPACE_BASE, INJECTED_TRANSFER_FAULT};
use ur_api::runtime::PointerKind;

struct Rig {
    rt: Runtime,
    faults: SimFaults,
    links: SimLinks,
    devs: Vec<DeviceId>,
}

fn rig(topology: Topology) -> Rig {
    let sim = SimAdapter::new(topology);
    let (faults, links) = (sim.faults(), sim.links());
    let mut rt = Runtime::new();
    rt.add(sim).unwrap();
    let devs = rt.all_devices();
    Rig {
        rt,
        faults,
        links,
        devs,
    }
}

impl Rig {
    fn ctx_queue(&self, dev: usize) -> (ContextId, QueueId) {
        let ctx = self.rt.create_context(&[self.devs[dev]]).unwrap();
        let q = self
            .rt
            .create_queue(ctx, self.devs[dev], &QueueProps::default())
            .unwrap();
        (ctx, q)
    }
}

/// True if `addr` could be a host address of this process (x86-64 and
/// AArch64 user space is below 2^48).
fn host_addressable(addr: u64) -> bool {
    addr < 1 << 48
}

#[test]
fn device_usm_pointers_are_never_host_addresses() {
    let r = rig(Topology::default_for_tests());
    for (i, &dev) in r.devs.iter().enumerate() {
        let (ctx, q) = r.ctx_queue(i);
        let p =
            r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 4096).on(dev))
                .unwrap();
        assert!(!host_addressable(p.0) && p.0 >= DEVICE_SPACE_BASE, "{p}");
        let info = r.rt.usm_pointer_info(ctx, p.offset(17)).unwrap();
        assert_eq!((info.kind, info.base, info.device), (UsmKind::Device, p, Some(dev)));
        r.rt.usm_write(q, p.offset(8), b"abc").unwrap();
        let mut back = [0u8; 5];
        r.rt.usm_read(q, p.offset(7), &mut back).unwrap();
        assert_eq!(&back, b"\0abc\0");
        // Host USM is real host memory.
        let h = r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Host, 64)).unwrap();
        assert!(host_addressable(h.0));
        r.rt.usm_write(q, h, b"host").unwrap();
        // SAFETY: a host USM allocation of 64 bytes; no command uses it now.
        assert_eq!(unsafe { std::slice::from_raw_parts(h.0 as *const u8, 4) }, b"host");
        // Shared USM is absent: a capability, not a stub.
        assert!(matches!(
            r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Shared, 64)),
            Err(Error::Unsupported { .. })
        ));
    }
}

#[test]
fn map_hands_out_a_staging_copy_and_unmap_writes_back() {
    let r = rig(Topology::single_device());
    let (ctx, q) = r.ctx_queue(0);
    let buf =
        r.rt.create_buffer_with_data(ctx, &BufferDesc::new(64), &[5u8; 64])
            .unwrap();
    let (ev, m) =
        r.rt.enqueue_map(q, buf, MapFlags::READ | MapFlags::WRITE, 16, 16, &[])
            .unwrap();
    r.rt.complete(ev).unwrap();
    // SAFETY: the mapping is 16 bytes and ours until unmap.
    let view = unsafe { std::slice::from_raw_parts_mut(m.as_ptr(), m.len()) };
    assert_eq!(view, &[5u8; 16]);
    view.fill(9);
    // Before unmap the device copy is unchanged: the mapping is a copy.
    let mut back = [0u8; 64];
    r.rt.read(q, buf, 0, &mut back).unwrap();
    assert_eq!(back, [5u8; 64]);
    r.rt.complete(r.rt.enqueue_unmap(q, buf, m, &[]).unwrap()).unwrap();
    r.rt.read(q, buf, 0, &mut back).unwrap();
    assert_eq!(&back[..16], &[5u8; 16]);
    assert_eq!(&back[16..32], &[9u8; 16]);
    assert_eq!(&back[32..], &[5u8; 32]);
    // A read-only mapping is not written back.
    let (ev, m) = r.rt.enqueue_map(q, buf, MapFlags::READ, 0, 8, &[]).unwrap();
    r.rt.complete(ev).unwrap();
    // SAFETY: as above, 8 bytes.
    unsafe { std::ptr::write_bytes(m.as_ptr(), 1, 8) };
    r.rt.complete(r.rt.enqueue_unmap(q, buf, m, &[]).unwrap()).unwrap();
    r.rt.read(q, buf, 0, &mut back[..8]).unwrap();
    assert_eq!(&back[..8], &[5u8; 8]);
}

#[test]
fn link_model_lower_bound_4mib_at_64mib_per_s() {
    let topo = Topology::parse("platform p: d0 bw=64MiB/s lat=0; links on").unwrap();
    let r = rig(topo);
    let (ctx, q) = r.ctx_queue(0);
    let buf = r.rt.create_buffer(ctx, &BufferDesc::new(4 << 20), None).unwrap();
    let data = vec![3u8; 4 << 20];
    let t = Instant::now();
    r.rt.write(q, buf, 0, &data).unwrap();
    let spent = t.elapsed();
    // A physical lower bound of the simulation: 4 MiB / 64 MiB/s = 62.5 ms.
    assert!(spent >= Duration::from_millis(62), "{spent:?}");
    assert_eq!(r.links.host_link("d0").unwrap().bytes, 4 << 20);
}

#[test]
fn failed_allocation_is_exactly_the_nth() {
    let r = rig(Topology::two_platforms());
    let (c0, _) = r.ctx_queue(0);
    let (c1, _) = r.ctx_queue(1);
    r.faults.fail_nth_allocation_on("b0", 2).unwrap();
    let before = r.faults.allocations();
    assert!(r.rt.create_buffer(c1, &BufferDesc::new(8), None).is_ok());
    assert!(
        r.rt.create_buffer(c0, &BufferDesc::new(8), None).is_ok(),
        "other device not counted"
    );
    let usm = UsmDesc::new(UsmKind::Device, 8).on(r.devs[1]);
    assert_eq!(r.rt.usm_alloc(c1, &usm), Err(Error::OutOfDeviceMemory));
    assert!(r.rt.usm_alloc(c1, &usm).is_ok());
    assert_eq!(r.faults.allocations() - before, 4);
}

#[test]
fn copy_fault_leaves_a_partial_destination_and_fails_the_event() {
    let r = rig(Topology::two_devices_peer());
    let ctx = r.rt.create_context(&r.devs).unwrap();
    let q = r.rt.create_queue(ctx, r.devs[1], &QueueProps::default()).unwrap();
    let src =
        r.rt.create_buffer_with_data(ctx, &BufferDesc::new(100).on(r.devs[0]), &[7u8; 100])
            .unwrap();
    let dst =
        r.rt.create_buffer(ctx, &BufferDesc::new(100).on(r.devs[1]), None)
            .unwrap();
    r.faults.fail_copy_after(30);
    let ev = r.rt.enqueue_copy(q, src, 0, dst, 0, 100, &[]).unwrap();
    match r.rt.wait(&[ev]) {
        Err(Error::Backend { code, message, .. }) => {
            assert_eq!(code, INJECTED_TRANSFER_FAULT);
            assert!(message.contains("30 of 100"), "{message}");
        }
        other => panic!("expected the injected fault, got {other:?}"),
    }
    assert!(matches!(r.rt.event_status(ev).unwrap(), EventStatus::Failed(_)));
    let mut back = [0u8; 100];
    r.rt.read(q, dst, 0, &mut back).unwrap();
    assert_eq!(&back[..30], &[7u8; 30]);
    assert_eq!(&back[30..], &[0u8; 70]);
    // One-shot: the next copy completes.
    r.rt.complete(r.rt.enqueue_copy(q, src, 0, dst, 0, 100, &[]).unwrap())
        .unwrap();
    // It went over the peer link, not the host links.
    assert_eq!(r.links.peer_link("gpu0", "gpu1").unwrap().unwrap().bytes, 130);
}

#[test]
fn lost_device_fails_everything_after() {
    let r = rig(Topology::two_platforms());
    let (c0, q0) = r.ctx_queue(0);
    let (c1, q1) = r.ctx_queue(1);
    let b0 = r.rt.create_buffer(c0, &BufferDesc::new(8), None).unwrap();
    let b1 = r.rt.create_buffer(c1, &BufferDesc::new(8), None).unwrap();
    r.faults.lose_device("a0").unwrap();
    assert_eq!(r.rt.write(q0, b0, 0, &[1; 8]), Err(Error::DeviceLost));
    assert_eq!(
        r.rt.create_buffer(c0, &BufferDesc::new(8), None),
        Err(Error::DeviceLost)
    );
    assert_eq!(r.rt.create_context(&[r.devs[0]]), Err(Error::DeviceLost));
    assert_eq!(
        r.rt.create_queue(c0, r.devs[0], &QueueProps::default()),
        Err(Error::DeviceLost)
    );
    assert_eq!(r.rt.finish(q0), Err(Error::DeviceLost));
    // The other platform's device still works.
    r.rt.write(q1, b1, 0, &[2; 8]).unwrap();
    r.faults.restore_device("a0").unwrap();
    r.rt.write(q0, b0, 0, &[1; 8]).unwrap();
}

#[test]
fn memory_cap_forces_out_of_memory_and_freed_memory_is_reusable() {
    let r = rig(Topology::single_device());
    let (ctx, _) = r.ctx_queue(0);
    r.faults.cap_memory("sim0", 1 << 20).unwrap();
    let a = r.rt.create_buffer(ctx, &BufferDesc::new(768 << 10), None).unwrap();
    let usm = UsmDesc::new(UsmKind::Device, 512 << 10).on(r.devs[0]);
    assert_eq!(r.rt.usm_alloc(ctx, &usm), Err(Error::OutOfDeviceMemory));
    assert_eq!(r.faults.memory_used("sim0").unwrap(), 768 << 10);
    r.rt.release_buffer(a).unwrap();
    assert_eq!(r.faults.memory_used("sim0").unwrap(), 0);
    let p = r.rt.usm_alloc(ctx, &usm).unwrap();
    r.rt.usm_free(ctx, p).unwrap();
    // The dyn layer's USM cache is off for the simulated adapter: freed is freed.
    assert_eq!(r.faults.memory_used("sim0").unwrap(), 0);
    r.faults.uncap_memory("sim0").unwrap();
    assert!(r.rt.create_buffer(ctx, &BufferDesc::new(2 << 20), None).is_ok());
}

#[test]
fn kernels_run_over_arena_memory() {
    let r = rig(Topology::single_device());
    let (ctx, q) = r.ctx_queue(0);
    let mut lib = HostKernelLibrary::new();
    lib.register("axpy", 3, |a: &HostArgs<'_>| {
        let k: u32 = a.scalar(2)?;
        // SAFETY: the adapter gives the kernel its two distinct buffers for the launch.
        let (x, y) = unsafe { (a.mem_mut::<u32>(0)?, a.mem_mut::<u32>(1)?) };
        for i in 0..a.range.global[0] {
            y[i] += k * x[i];
        }
        Ok(())
    });
    lib.register("fail", 0, |_: &HostArgs<'_>| Err("deliberate".into()));
    let prog =
        r.rt.create_program(ctx, &ProgramSource::Host(Arc::new(lib)), "")
            .unwrap();
    let axpy = r.rt.create_kernel(prog, "axpy").unwrap();
    let x: Vec<u8> = (0u32..16).flat_map(|v| v.to_ne_bytes()).collect();
    let xb = r.rt.create_buffer_with_data(ctx, &BufferDesc::new(64), &x).unwrap();
    let y =
        r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 64).on(r.devs[0]))
            .unwrap();
    r.rt.complete(r.rt.enqueue_usm_fill(q, y, 64, &1u32.to_ne_bytes(), &[]).unwrap())
        .unwrap();
    let args = [ArgValue::Buffer(xb), ArgValue::Usm(y), ArgValue::scalar(&3u32)];
    r.rt.complete(r.rt.enqueue_launch(q, axpy, &NdRange::d1(16), &args, &[]).unwrap())
        .unwrap();
    let mut out = [0u8; 64];
    r.rt.usm_read(q, y, &mut out).unwrap();
    let got: Vec<u32> = out
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(got, (0u32..16).map(|i| 1 + 3 * i).collect::<Vec<_>>());
    let fail = r.rt.create_kernel(prog, "fail").unwrap();
    let ev = r.rt.enqueue_launch(q, fail, &NdRange::d1(1), &[], &[]).unwrap();
    assert!(matches!(r.rt.wait(&[ev]), Err(Error::CommandFailed(m)) if m.contains("deliberate")));
    assert!(matches!(
        r.rt.create_kernel(prog, "nope"),
        Err(Error::KernelNotFound { .. })
    ));
}

#[test]
fn rects_fills_and_sub_buffers_move_real_bytes() {
    let r = rig(Topology::single_device());
    let (ctx, q) = r.ctx_queue(0);
    let buf = r.rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap();
    r.rt.complete(r.rt.enqueue_fill(q, buf, 0, 255, &[1, 2, 3], &[]).unwrap())
        .unwrap();
    let sub = r.rt.create_sub_buffer(buf, 64, 64).unwrap();
    r.rt.write(q, sub, 0, &[0xAA; 64]).unwrap();
    // A 4x4 box from the sub-buffer (row pitch 16) to a packed host box.
    let rect = RectCopy {
        src: RectSide::new([2, 0, 0], 16, 64),
        dst: RectSide::default(),
        extent: [4, 4, 1],
    };
    let mut boxed = [0u8; 16];
    r.rt.read_rect(q, sub, &rect, &mut boxed).unwrap();
    assert_eq!(boxed, [0xAA; 16]);
    let mut whole = [0u8; 256];
    r.rt.read(q, buf, 0, &mut whole).unwrap();
    assert_eq!(&whole[..6], &[1, 2, 3, 1, 2, 3]);
    assert_eq!(&whole[64..128], &[0xAA; 64]);
}

#[test]
fn asymmetric_connections_reach_the_runtime() {
    let r = rig(Topology::asymmetric_pair());
    let ca = r.rt.create_context(&[r.devs[0]]).unwrap();
    let cb = r.rt.create_context(&[r.devs[1]]).unwrap();
    let (la, lb) = (Location::new(ca, r.devs[0]), Location::new(cb, r.devs[1]));
    assert_eq!(r.rt.memory_connection(la, lb).unwrap(), MemoryConnection::Migratable);
    assert_eq!(r.rt.memory_connection(lb, la).unwrap(), MemoryConnection::None);
    let both = r.rt.create_context(&r.devs).unwrap();
    let (x, y) = (Location::new(both, r.devs[0]), Location::new(both, r.devs[1]));
    assert_eq!(r.rt.memory_connection(y, x).unwrap(), MemoryConnection::None);
    assert_eq!(r.rt.memory_connection(x, x).unwrap(), MemoryConnection::Unified);
    // The adapter copies across contexts where the answer allows it.
    let qb = r.rt.create_queue(cb, r.devs[1], &QueueProps::default()).unwrap();
    let a = r.rt.create_buffer_with_data(ca, &BufferDesc::new(4), b"asym").unwrap();
    let b = r.rt.create_buffer(cb, &BufferDesc::new(4), None).unwrap();
    r.rt.complete(r.rt.enqueue_copy(qb, a, 0, b, 0, 4, &[]).unwrap())
        .unwrap();
    let mut back = [0u8; 4];
    r.rt.read(qb, b, 0, &mut back).unwrap();
    assert_eq!(&back, b"asym");
}

#[test]
fn usm_copy_between_devices_of_one_context() {
    let r = rig(Topology::two_devices_peer());
    let ctx = r.rt.create_context(&r.devs).unwrap();
    let q = r.rt.create_queue(ctx, r.devs[0], &QueueProps::default()).unwrap();
    let a =
        r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 32).on(r.devs[0]))
            .unwrap();
    let b =
        r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, 32).on(r.devs[1]))
            .unwrap();
    r.rt.usm_write(q, a, &[4u8; 32]).unwrap();
    let mut host = [0u8; 32];
    // SAFETY: `host` outlives the blocking completion below.
    let hp = unsafe { HostPtr::new(host.as_mut_ptr(), 32) };
    let e1 =
        r.rt.enqueue_usm_copy(q, MemRef::Usm(b), MemRef::Usm(a), 32, &[])
            .unwrap();
    let e2 =
        r.rt.enqueue_usm_copy(q, MemRef::Host(hp), MemRef::Usm(b), 32, &[e1])
            .unwrap();
    r.rt.wait(&[e1, e2]).unwrap();
    assert_eq!(host, [4u8; 32]);
}

#[test]
fn memory_is_used_only_where_the_connection_allows() {
    // gpu0 -> gpu1 is `Migratable` in one context: copies yes, in place no.
    let r = rig(Topology::two_devices_peer());
    let ctx = r.rt.create_context(&r.devs).unwrap();
    let q1 = r.rt.create_queue(ctx, r.devs[1], &QueueProps::default()).unwrap();
    let a =
        r.rt.create_buffer(ctx, &BufferDesc::new(16).on(r.devs[0]), None)
            .unwrap();
    let b =
        r.rt.create_buffer(ctx, &BufferDesc::new(16).on(r.devs[1]), None)
            .unwrap();
    let refused = Error::NotAccessible {
        what: "buffer",
        connection: MemoryConnection::Migratable,
        copy: false,
    };
    assert_eq!(r.rt.write(q1, a, 0, &[1; 16]), Err(refused));
    assert!(matches!(
        r.rt.enqueue_fill(q1, a, 0, 16, &[1], &[]),
        Err(Error::NotAccessible { copy: false, .. })
    ));
    r.rt.complete(r.rt.enqueue_copy(q1, a, 0, b, 0, 16, &[]).unwrap())
        .unwrap();

    // Across platforms the answer is `None`: not even a copy.
    let r = rig(Topology::two_platforms());
    let (c0, _) = r.ctx_queue(0);
    let (c1, q1) = r.ctx_queue(1);
    let a = r.rt.create_buffer(c0, &BufferDesc::new(16), None).unwrap();
    let b = r.rt.create_buffer(c1, &BufferDesc::new(16), None).unwrap();
    assert!(matches!(
        r.rt.enqueue_copy(q1, a, 0, b, 0, 16, &[]),
        Err(Error::NotAccessible {
            connection: MemoryConnection::None,
            copy: true,
            ..
        })
    ));
}

#[test]
fn a_unified_pair_is_used_in_place() {
    // Where the topology says `Unified`, commands at the other device touch
    // the memory as it is: true of the sim, whose commands reach every arena.
    let r = rig(Topology::parse("platform p: a, b; pair a<->b same=unified").unwrap());
    let ctx = r.rt.create_context(&r.devs).unwrap();
    let qb = r.rt.create_queue(ctx, r.devs[1], &QueueProps::default()).unwrap();
    let on_a =
        r.rt.create_buffer(ctx, &BufferDesc::new(8).on(r.devs[0]), None)
            .unwrap();
    r.rt.write(qb, on_a, 0, b"in place").unwrap();
    let mut back = [0u8; 8];
    r.rt.read(qb, on_a, 0, &mut back).unwrap();
    assert_eq!(&back, b"in place");
    assert_eq!(r.links.host_link("a").unwrap().bytes, 16);
}

#[test]
fn host_registration_books_are_the_dyn_layers_and_lost_devices_refuse() {
    let r = rig(Topology::single_device());
    let (ctx, _) = r.ctx_queue(0);
    let mut mem = vec![0u8; 256];
    // SAFETY: registration never touches the memory; `mem` outlives the test
    // and every range is unregistered before it ends.
    let (all, part) = unsafe {
        (
            HostPtr::new(mem.as_mut_ptr(), 256),
            HostPtr::new(mem.as_mut_ptr().add(64), 64),
        )
    };
    let addr = r.rt.lock_host(ctx, all).unwrap();
    assert_eq!(addr.0, mem.as_ptr() as u64, "the sim's devices use the host address");
    assert_eq!(r.links.locked_host(), vec![(mem.as_ptr() as usize, 256)]);
    let info =
        r.rt.pointer_info(mem.as_ptr() as usize + 200)
            .expect("locked range found by pointer");
    assert_eq!(
        (info.base, info.size, info.kind),
        (mem.as_ptr() as usize, 256, PointerKind::Locked)
    );
    assert!(r.rt.host_register(ctx, part).is_err(), "overlap");
    assert!(r.rt.host_unregister(ctx, part).is_err(), "not registered");
    r.rt.host_unregister(ctx, all).unwrap();
    assert!(r.links.locked_host().is_empty());
    assert!(r.rt.pointer_info(mem.as_ptr() as usize).is_none());
    r.faults.lose_device("sim0").unwrap();
    assert_eq!(r.rt.host_register(ctx, part), Err(Error::DeviceLost));
}

#[test]
fn static_usm_free_while_in_flight_is_deferred() {
    use ur_api::{adapter::prelude::*, KernelArg, UsmRef};

    let sim = SimAdapter::new(Topology::single_device());
    let faults = sim.faults();
    let platform = sim.platforms().unwrap().remove(0);
    let dev = sim.devices(&platform).unwrap().remove(0);
    let ctx = sim.create_context(&[&dev]).unwrap();
    let q = sim.create_queue(&ctx, &dev, &QueueProps::default()).unwrap();
    let (gate_tx, gate_rx) = std::sync::mpsc::channel::<()>();
    let gate_rx = parking_lot::Mutex::new(gate_rx);
    let mut lib = HostKernelLibrary::new();
    lib.register("gated", 0, move |_: &HostArgs<'_>| {
        gate_rx.lock().recv().map_err(|e| e.to_string())
    });
    lib.register("add1", 1, |a: &HostArgs<'_>| {
        // SAFETY: the launch has exclusive access to its one memory argument.
        unsafe { a.mem_mut::<u8>(0)? }.iter_mut().for_each(|x| *x += 1);
        Ok(())
    });
    let prog = sim
        .create_program(&ctx, &ProgramSource::Host(Arc::new(lib)), "")
        .unwrap();
    let (gated, add1) = (
        sim.create_kernel(&prog, "gated").unwrap(),
        sim.create_kernel(&prog, "add1").unwrap(),
    );
    assert_eq!(sim.kernel_info(&add1), ur_api::KernelInfo::with_arg_count(1));
    let (usm, p) = sim
        .usm_alloc(&ctx, &UsmDesc::new(UsmKind::Device, 64).on(&dev))
        .unwrap();
    let at = |offset| UsmRef {
        alloc: &usm,
        offset,
        ptr: p.offset(offset),
    };
    // SAFETY: in this test's commands every USM range lies inside the
    // 64-byte allocation, which is at the queue's location; the kernels'
    // argument counts match.
    let last = unsafe {
        sim.enqueue_launch(&q, &gated, &NdRange::d1(1), &[], &[]).unwrap();
        sim.enqueue_usm_fill(&q, at(0), 64, &[7], &[]).unwrap();
        sim.enqueue_launch(&q, &add1, &NdRange::d1(1), &[KernelArg::Usm(at(32))], &[])
            .unwrap()
    };
    // SAFETY: `usm` was made in `ctx` and is not used by later commands.
    unsafe { sim.usm_free(&ctx, usm) }.unwrap();
    assert_eq!(faults.memory_used("sim0").unwrap(), 64, "held by the commands");
    gate_tx.send(()).unwrap();
    sim.wait(&[&last]).unwrap();
    assert_eq!(faults.memory_used("sim0").unwrap(), 0, "released after them");
}

#[test]
fn blocking_reads_whose_wait_fails_return_only_after_the_command() {
    // A wait that breaks its contract (returns at once with an error): the
    // safe `read`, `read_rect` and `usm_read` must still not return while
    // the device writes into the caller's slice (they finish the queue).
    // The link model makes each transfer take >= 100 ms.
    let topo = Topology::parse("platform p: d0 bw=64MiB/s lat=100ms; links on").unwrap();
    let r = rig(topo);
    let (ctx, q) = r.ctx_queue(0);
    let len = 1 << 20;
    let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
    let buf = r.rt.create_buffer_with_data(ctx, &BufferDesc::new(len), &data).unwrap();
    let usm =
        r.rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, len).on(r.devs[0]))
            .unwrap();
    r.rt.usm_write(q, usm, &data).unwrap();
    // Two rows of half the buffer each: the whole buffer, packed.
    let rect = RectCopy {
        extent: [len / 2, 2, 1],
        ..RectCopy::default()
    };
    type Read<'a> = &'a dyn Fn(&mut [u8]) -> ur_api::Result<()>;
    let reads: [(&str, Read<'_>); 3] = [
        ("read", &|dst| r.rt.read(q, buf, 0, dst)),
        ("read_rect", &|dst| r.rt.read_rect(q, buf, &rect, dst)),
        ("usm_read", &|dst| r.rt.usm_read(q, usm, dst)),
    ];
    let other = r.rt.create_buffer(ctx, &BufferDesc::new(4096), None).unwrap();
    let pad = vec![1u8; 4096];
    for (name, read) in reads {
        let mut back = vec![0u8; len];
        // A slow command ahead of the read on the in-order queue: the read
        // moves no byte before it ends (>= 100 ms).
        // SAFETY: `pad` outlives the command: the queue is finished below.
        let src = unsafe { HostPtr::new(pad.as_ptr().cast_mut(), pad.len()) };
        let ahead = r.rt.enqueue_write(q, other, 0, src, &[]).unwrap();
        r.faults.fail_next_wait();
        match read(&mut back) {
            Err(Error::Backend { code, .. }) => assert_eq!(code, crate::INJECTED_WAIT_FAULT, "{name}"),
            other => panic!("{name}: expected the injected wait fault, got {other:?}"),
        }
        // The error is the wait's, but the command had ended: every byte
        // is there (before the fix the call returned while it still ran).
        let whole = back == data;
        // (Had it returned early, the command must end before `back` goes.)
        r.rt.finish(q).unwrap();
        r.rt.release_event(ahead).unwrap();
        assert!(whole, "{name} returned before its command ended");
        // One-shot.
        back.fill(0);
        read(&mut back).unwrap();
        assert!(back == data, "{name}");
    }
    r.rt.usm_free(ctx, usm).unwrap();
}

#[test]
fn a_failed_wait_of_one_adapter_does_not_cut_another_adapters_wait_short() {
    let fast = SimAdapter::new(Topology::single_device());
    let fast_faults = fast.faults();
    let slow = SimAdapter::new(Topology::parse("platform p: d0 bw=64MiB/s lat=100ms; links on").unwrap());
    let mut rt = Runtime::new();
    rt.add(fast).unwrap();
    rt.add(slow).unwrap();
    let (da, db) = (rt.all_devices()[0], rt.all_devices()[1]);
    let (ca, cb) = (rt.create_context(&[da]).unwrap(), rt.create_context(&[db]).unwrap());
    let qa = rt.create_queue(ca, da, &QueueProps::default()).unwrap();
    let qb = rt.create_queue(cb, db, &QueueProps::default()).unwrap();
    let a = rt.create_buffer(ca, &BufferDesc::new(64), None).unwrap();
    let b = rt.create_buffer(cb, &BufferDesc::new(1 << 20), None).unwrap();
    let data = vec![5u8; 1 << 20];
    let ea = rt.enqueue_fill(qa, a, 0, 64, &[1], &[]).unwrap();
    // SAFETY: `data` outlives the command: `qb` is finished below, before it drops.
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    let eb = rt.enqueue_write(qb, b, 0, src, &[]).unwrap();
    fast_faults.fail_next_wait();
    assert!(rt.wait(&[ea, eb]).is_err());
    let status = rt.event_status(eb).unwrap();
    rt.finish(qb).unwrap();
    assert_eq!(
        status,
        EventStatus::Complete,
        "the other adapter's event was not waited for"
    );
    rt.finish(qa).unwrap();
}
