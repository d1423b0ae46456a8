//! Adapter-level tests: through the static trait, and through the dyn layer
//! (`ur_api::Runtime`) with this adapter added. The dyn layer's concurrency
//! (releases and lanes under commands in flight) is in `concurrency.rs`,
//! the allocation counts per command in `allocations.rs`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ur_api::adapter::prelude::*;
use ur_api::*;

use crate::*;

/// A gate a kernel can wait on; the test opens it.
#[derive(Clone, Default)]
struct Gate(Arc<(parking_lot::Mutex<bool>, parking_lot::Condvar)>);

impl Gate {
    fn wait(&self) {
        let mut open = self.0 .0.lock();
        while !*open {
            self.0 .1.wait(&mut open);
        }
    }
    fn open(&self) {
        *self.0 .0.lock() = true;
        self.0 .1.notify_all();
    }
}

/// Kernels: `gated_set(buf, u8)` waits for the gate then sets every byte;
/// `fail(buf)` fails; `add_u32(mem, u32)` adds to each u32 of the range.
fn library(gate: Gate) -> Arc<HostKernelLibrary> {
    let mut lib = HostKernelLibrary::new();
    lib.register("gated_set", 2, move |a: &HostArgs<'_>| {
        gate.wait();
        let v: u8 = a.scalar(1)?;
        // SAFETY: the launch has exclusive access to its one buffer.
        unsafe { a.mem_mut::<u8>(0)? }.fill(v);
        Ok(())
    });
    lib.register("fail", 1, |_: &HostArgs<'_>| Err("bad input in kernel".to_owned()));
    lib.register("add_u32", 2, |a: &HostArgs<'_>| {
        let k: u32 = a.scalar(1)?;
        // SAFETY: the launch has exclusive access to its one memory argument.
        let data = unsafe { a.mem_mut::<u32>(0)? };
        data.get_mut(..a.range.global[0])
            .ok_or("range larger than memory")?
            .iter_mut()
            .for_each(|x| *x += k);
        Ok(())
    });
    Arc::new(lib)
}

struct Static {
    a: NativeAdapter,
    ctx: NativeContext,
    dev: NativeDevice,
}

fn setup() -> Static {
    let a = NativeAdapter::new();
    let p = a.platforms().unwrap().remove(0);
    let dev = a.devices(&p).unwrap().remove(0);
    let ctx = a.create_context(&[&dev]).unwrap();
    Static { a, ctx, dev }
}

impl Static {
    fn queue(&self) -> NativeQueue {
        self.a
            .create_queue(&self.ctx, &self.dev, &QueueProps::default())
            .unwrap()
    }
    fn buffer(&self, size: usize) -> NativeBuffer {
        // SAFETY: a non-zero size far below the device's limit, no host memory.
        unsafe {
            self.a
                .create_buffer(&self.ctx, &BufferDesc::new(size).on(&self.dev), None)
        }
        .unwrap()
    }
    fn kernel(&self, lib: &Arc<HostKernelLibrary>, name: &str) -> NativeKernel {
        let prog = self
            .a
            .create_program(&self.ctx, &ProgramSource::Host(lib.clone()), "")
            .unwrap();
        self.a.create_kernel(&prog, name).unwrap()
    }
    fn bytes(&self, b: &NativeBuffer) -> Vec<u8> {
        let q = self.queue();
        let mut out = vec![0u8; b.size()];
        // SAFETY: `out` outlives the wait below and nothing else touches it;
        // the read covers exactly the buffer.
        unsafe {
            let dst = HostPtr::new(out.as_mut_ptr(), out.len());
            self.a.enqueue_read(&q, b, 0, dst, &[]).unwrap().wait().unwrap();
        }
        out
    }
}

#[test]
fn dependent_command_waits_for_a_slow_one_on_another_queue() {
    let s = setup();
    let gate = Gate::default();
    let lib = library(gate.clone());
    let k = s.kernel(&lib, "gated_set");
    let (q1, q2) = (s.queue(), s.queue());
    let (buf, copy) = (s.buffer(64), s.buffer(64));
    let v = 9u8;
    // SAFETY: in this test's commands every range lies inside its 64-byte
    // buffer; all memory is at the queues' (one) location.
    let slow = unsafe {
        s.a.enqueue_launch(
            &q1,
            &k,
            &NdRange::d1(64),
            &[KernelArg::Buffer(&buf), KernelArg::Scalar(&[v])],
            &[],
        )
    }
    .unwrap();
    // SAFETY: as above.
    let dependent = unsafe { s.a.enqueue_copy(&q2, &buf, 0, &copy, 0, 64, &[&slow]) }.unwrap();
    // Both enqueues returned although the kernel cannot have finished.
    std::thread::sleep(Duration::from_millis(20));
    assert_ne!(slow.status(), EventStatus::Complete);
    assert_eq!(dependent.status(), EventStatus::Queued);
    gate.open();
    s.a.wait(&[&dependent]).unwrap();
    assert_eq!(slow.status(), EventStatus::Complete);
    assert_eq!(s.bytes(&copy), vec![v; 64]);
}

#[test]
fn a_failed_dependency_fails_the_command_and_names_the_cause() {
    let s = setup();
    let lib = library(Gate::default());
    let k = s.kernel(&lib, "fail");
    let (q1, q2) = (s.queue(), s.queue());
    let buf = s.buffer(16);
    // SAFETY: in this test's commands every range lies inside the 16-byte
    // buffer, at the queues' location.
    let failed = unsafe {
        s.a.enqueue_launch(&q1, &k, &NdRange::d1(1), &[KernelArg::Buffer(&buf)], &[])
    }
    .unwrap();
    // SAFETY: as above.
    let fill = unsafe { s.a.enqueue_fill(&q2, &buf, 0, 16, &[7], &[&failed]) }.unwrap();
    assert_eq!(
        s.a.wait(&[&failed]),
        Err(Error::CommandFailed("kernel `fail`: bad input in kernel".into()))
    );
    match s.a.wait(&[&fill]) {
        Err(Error::CommandFailed(t)) => assert!(t.contains("bad input in kernel"), "{t}"),
        other => panic!("expected the dependent command to fail, got {other:?}"),
    }
    assert_eq!(s.bytes(&buf), vec![0; 16], "the failed command must not have run");
    // The queue keeps working after a failure.
    // SAFETY: as above.
    unsafe { s.a.enqueue_fill(&q2, &buf, 0, 16, &[7], &[]) }
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(s.bytes(&buf), vec![7; 16]);
}

#[test]
fn dropping_a_queue_completes_pending_work() {
    let s = setup();
    let gate = Gate::default();
    let lib = library(gate.clone());
    let k = s.kernel(&lib, "gated_set");
    let q = s.queue();
    let buf = s.buffer(4096);
    // SAFETY: in this test's commands every range lies inside the 4096-byte
    // buffer, at the queue's location.
    let slow = unsafe {
        s.a.enqueue_launch(
            &q,
            &k,
            &NdRange::d1(1),
            &[KernelArg::Buffer(&buf), KernelArg::Scalar(&[1])],
            &[],
        )
    }
    .unwrap();
    let fills: Vec<_> = (0..64u8)
        // SAFETY: as above (64 fills of 64 bytes).
        .map(|i| unsafe { s.a.enqueue_fill(&q, &buf, usize::from(i) * 64, 64, &[i], &[]) }.unwrap())
        .collect();
    let opener = {
        let g = gate.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            g.open();
        })
    };
    drop(q); // joins the worker after it ran everything
    opener.join().unwrap();
    assert_eq!(slow.status(), EventStatus::Complete);
    assert!(fills.iter().all(|e| e.status() == EventStatus::Complete));
    let bytes = s.bytes(&buf);
    assert!(bytes.iter().enumerate().all(|(i, &b)| usize::from(b) == i / 64));
}

#[test]
fn usm_free_while_in_flight_is_deferred() {
    let s = setup();
    let gate = Gate::default();
    let lib = library(gate.clone());
    let k = s.kernel(&lib, "gated_set");
    let q = s.queue();
    let blocker = s.buffer(8);
    let (usm, p) =
        s.a.usm_alloc(&s.ctx, &UsmDesc::new(UsmKind::Device, 256).on(&s.dev).aligned(1024))
            .unwrap();
    assert_eq!(p.0 % 1024, 0);
    let whole = UsmRef {
        alloc: &usm,
        offset: 0,
        ptr: p,
    };
    // SAFETY: in this test's commands every range lies inside its buffer or
    // the 256-byte allocation, at the queue's location.
    unsafe {
        s.a.enqueue_launch(
            &q,
            &k,
            &NdRange::d1(8),
            &[KernelArg::Buffer(&blocker), KernelArg::Scalar(&[1])],
            &[],
        )
    }
    .unwrap();
    // SAFETY: as above.
    let fill = unsafe { s.a.enqueue_usm_fill(&q, whole, 256, &[1, 2, 3, 4], &[]) }.unwrap();
    let mut out = vec![0u8; 256];
    // SAFETY: `out` outlives the wait below; 256 bytes on both sides.
    let read = unsafe {
        let host = HostPtr::new(out.as_mut_ptr(), 256);
        s.a.enqueue_usm_copy(&q, MemArg::Host(host), MemArg::Usm(whole), 256, &[])
    }
    .unwrap();
    // SAFETY: made in this context; no command is enqueued with it from now on.
    unsafe { s.a.usm_free(&s.ctx, usm) }.unwrap();
    gate.open();
    s.a.wait(&[&fill, &read]).unwrap();
    assert!(out.chunks(4).all(|c| c == [1, 2, 3, 4]));
}

#[test]
fn every_location_is_unified_and_host_pointers_are_used_in_place() {
    let s = setup();
    let other = s.a.create_context(&[&s.dev]).unwrap();
    assert_eq!(
        s.a.memory_connection((&s.ctx, &s.dev), (&other, &s.dev)),
        MemoryConnection::Unified
    );
    let mut host = vec![0u8; 32];
    let desc = BufferDesc::new(32).with_flags(MemFlags::USE_HOST_PTR).on(&s.dev);
    // SAFETY: `host` is exactly 32 bytes and outlives the buffer (dropped
    // below, before `host` is read).
    let buf = unsafe {
        s.a.create_buffer(&other, &desc, Some(HostPtr::new(host.as_mut_ptr(), 32)))
    }
    .unwrap();
    let q = s.queue(); // a queue of the first context uses the other's buffer
                       // SAFETY: the fill lies inside the buffer, whose location is Unified
                       // with the queue's (asserted above).
    unsafe { s.a.enqueue_fill(&q, &buf, 8, 16, &[5], &[]) }
        .unwrap()
        .wait()
        .unwrap();
    drop(buf);
    assert_eq!(&host[..8], &[0; 8]);
    assert_eq!(&host[8..24], &[5; 16]);
    let desc = BufferDesc::new(4)
        .with_flags(MemFlags::COPY_HOST_PTR | MemFlags::ALLOC_HOST_PTR)
        .on(&s.dev);
    let mut init = [1u8, 2, 3, 4];
    // SAFETY: `init` is exactly 4 bytes, read during the call only.
    let copied = unsafe {
        s.a.create_buffer(&s.ctx, &desc, Some(HostPtr::new(init.as_mut_ptr(), 4)))
    }
    .unwrap();
    assert_eq!(copied.at(0) as usize % PAGE_ALIGN, 0);
    assert_eq!(s.bytes(&copied), [1, 2, 3, 4]);
}

#[test]
fn kernel_lookup_and_argument_count() {
    let s = setup();
    let lib = library(Gate::default());
    let prog = s.a.create_program(&s.ctx, &ProgramSource::Host(lib), "").unwrap();
    assert_eq!(
        s.a.create_kernel(&prog, "nope").unwrap_err(),
        Error::KernelNotFound { name: "nope".into() }
    );
    let k = s.a.create_kernel(&prog, "add_u32").unwrap();
    // The dyn layer checks launches against this.
    assert_eq!(s.a.kernel_info(&k), KernelInfo::with_arg_count(2));
    let ocl =
        s.a.create_program(&s.ctx, &ProgramSource::OpenClC("kernel void f() {}".into()), "");
    assert!(matches!(ocl, Err(Error::Unsupported { .. })));
}

// ---- through the dyn layer ----

fn runtime() -> (Runtime, DeviceId, ContextId) {
    let mut rt = Runtime::new();
    rt.add(NativeAdapter::new()).unwrap();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    (rt, dev, ctx)
}

#[test]
fn runtime_reports_the_native_device() {
    let (rt, dev, _) = runtime();
    let p = rt.platforms()[0];
    assert_eq!(rt.platform_info(p).unwrap().name, PLATFORM_NAME);
    let info = rt.device_info(dev).unwrap();
    assert_eq!(info.device_type, DeviceType::Cpu);
    assert!(info
        .caps
        .contains(DeviceCaps::FILL_ANY_PATTERN | DeviceCaps::MAP | DeviceCaps::PROFILING));
    assert_eq!(info.sub_buffer_align, BASE_ALIGN);
}

#[test]
fn profiling_timestamps_are_monotonic_in_queue_order() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps { profiling: true }).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(1 << 20), None).unwrap();
    let events: Vec<_> = (0..8u8)
        .map(|i| rt.enqueue_fill(q, buf, 0, 1 << 20, &[i], &[]).unwrap())
        .collect();
    rt.wait(&events).unwrap();
    let times: Vec<ProfilingInfo> = events.iter().map(|&e| rt.event_profiling(e).unwrap()).collect();
    for t in &times {
        assert!(t.queued <= t.submit && t.submit <= t.start && t.start <= t.end, "{t:?}");
    }
    for w in times.windows(2) {
        assert!(w[0].end <= w[1].start, "in-order: {:?} then {:?}", w[0], w[1]);
    }
    let plain = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let e = rt.enqueue_barrier(plain, &[]).unwrap();
    rt.wait(&[e]).unwrap();
    assert!(matches!(rt.event_profiling(e), Err(Error::ProfilingUnavailable(_))));
}

#[test]
fn sub_buffers_alias_their_parent() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let parent = rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap();
    let sub = rt.create_sub_buffer(parent, 128, 64).unwrap();
    rt.write(q, sub, 4, &[1, 2, 3]).unwrap();
    rt.release_buffer(parent).unwrap(); // the sub-buffer keeps the memory
    let mut back = [0u8; 8];
    rt.read(q, sub, 0, &mut back).unwrap();
    assert_eq!(back, [0, 0, 0, 0, 1, 2, 3, 0]);
    let parent2 = rt.create_buffer(ctx, &BufferDesc::new(256), None).unwrap();
    let sub2 = rt.create_sub_buffer(parent2, 64, 64).unwrap();
    rt.complete(rt.enqueue_fill(q, parent2, 0, 256, &[0xAB], &[]).unwrap())
        .unwrap();
    rt.write(q, sub2, 0, &[9; 64]).unwrap();
    let mut whole = [0u8; 256];
    rt.read(q, parent2, 0, &mut whole).unwrap();
    assert!(whole[..64].iter().chain(&whole[128..]).all(|&b| b == 0xAB));
    assert!(whole[64..128].iter().all(|&b| b == 9));
}

#[test]
fn rect_copies_move_exactly_the_box() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    // Source: 3 slices of 5 rows of 16 bytes; value = index.
    let src_data: Vec<u8> = (0..240).map(|i| i as u8).collect();
    let src = rt
        .create_buffer_with_data(ctx, &BufferDesc::new(240), &src_data)
        .unwrap();
    let dst = rt.create_buffer(ctx, &BufferDesc::new(400), None).unwrap();
    let rect = RectCopy {
        src: RectSide::new([2, 1, 1], 16, 80),
        dst: RectSide::new([1, 0, 0], 10, 100),
        extent: [6, 3, 2],
    };
    rt.complete(rt.enqueue_copy_rect(q, src, dst, &rect, &[]).unwrap())
        .unwrap();
    let mut got = vec![0u8; 400];
    rt.read(q, dst, 0, &mut got).unwrap();
    let mut want = vec![0u8; 400];
    for z in 0..2 {
        for y in 0..3 {
            for x in 0..6 {
                want[z * 100 + y * 10 + 1 + x] = src_data[(z + 1) * 80 + (y + 1) * 16 + 2 + x];
            }
        }
    }
    assert_eq!(got, want);
    // Read the box back to packed host memory, and write a packed box.
    let back = RectCopy {
        src: rect.dst,
        dst: RectSide::default(),
        extent: rect.extent,
    };
    let mut packed = vec![0u8; 36];
    rt.read_rect(q, dst, &back, &mut packed).unwrap();
    let expect: Vec<u8> = (0..2)
        .flat_map(|z| (0..3).flat_map(move |y| (0..6).map(move |x| (z, y, x))))
        .map(|(z, y, x)| want[z * 100 + y * 10 + 1 + x])
        .collect();
    assert_eq!(packed, expect);
    let put = RectCopy {
        src: RectSide::default(),
        dst: RectSide::new([0, 2, 0], 16, 0),
        extent: [4, 2, 1],
    };
    rt.write_rect(q, src, &put, &[7; 8]).unwrap();
    let mut row = [0u8; 64];
    rt.read(q, src, 32, &mut row).unwrap();
    assert_eq!(&row[..4], &[7; 4]);
    assert_eq!(&row[4..16], &src_data[36..48]);
    assert_eq!(&row[16..20], &[7; 4]);
}

#[test]
fn fills_repeat_patterns_of_1_3_and_128_bytes() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    for n in [1usize, 3, 128] {
        let size = n * 40;
        let buf = rt.create_buffer(ctx, &BufferDesc::new(size + 2 * n), None).unwrap();
        let pattern: Vec<u8> = (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(1)).collect();
        rt.complete(rt.enqueue_fill(q, buf, n, size, &pattern, &[]).unwrap())
            .unwrap();
        let mut got = vec![0xFFu8; size + 2 * n];
        rt.read(q, buf, 0, &mut got).unwrap();
        assert!(
            got[..n].iter().chain(&got[n + size..]).all(|&b| b == 0),
            "pattern {n}: outside untouched"
        );
        assert!(got[n..n + size].chunks(n).all(|c| c == pattern), "pattern {n}");
    }
}

#[test]
fn mapped_memory_is_the_buffer() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(64), None).unwrap();
    let w = rt.enqueue_write(q, buf, 0, unsafe_host(&[3u8; 64]), &[]).unwrap();
    let (ev, ptr) = rt
        .enqueue_map(q, buf, MapFlags::READ | MapFlags::WRITE, 16, 32, &[])
        .unwrap();
    rt.wait(&[ev, w]).unwrap();
    // SAFETY: the mapping is live until the unmap below and nothing else runs on the buffer.
    let view = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), ptr.len()) };
    assert_eq!(view, &[3u8; 32][..], "the map sees the earlier write");
    view[..4].copy_from_slice(&[1, 2, 3, 4]);
    rt.complete(rt.enqueue_unmap(q, buf, ptr, &[]).unwrap()).unwrap();
    let mut back = [0u8; 24];
    rt.read(q, buf, 12, &mut back).unwrap();
    assert_eq!(&back[..8], &[3, 3, 3, 3, 1, 2, 3, 4]);
    assert!(rt.enqueue_unmap(q, buf, ptr, &[]).is_err(), "a second unmap is refused");
}

/// A HostPtr over a static-lifetime-in-practice slice; the test waits
/// before the slice goes away.
fn unsafe_host(data: &[u8]) -> HostPtr {
    // SAFETY: callers wait for the command before `data` is dropped.
    unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) }
}

#[test]
fn kernels_launch_on_buffers_and_usm() {
    let (rt, dev, ctx) = runtime();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let prog = rt
        .create_program(ctx, &ProgramSource::Host(library(Gate::default())), "")
        .unwrap();
    let k = rt.create_kernel(prog, "add_u32").unwrap();
    let init: Vec<u8> = (0..16u32).flat_map(u32::to_ne_bytes).collect();
    let buf = rt.create_buffer_with_data(ctx, &BufferDesc::new(64), &init).unwrap();
    let add = 5u32;
    rt.complete(
        rt.enqueue_launch(
            q,
            k,
            &NdRange::d1(16),
            &[ArgValue::Buffer(buf), ArgValue::scalar(&add)],
            &[],
        )
        .unwrap(),
    )
    .unwrap();
    let mut back = [0u8; 64];
    rt.read(q, buf, 0, &mut back).unwrap();
    let vals: Vec<u32> = back
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(vals, (5..21).collect::<Vec<u32>>());
    // USM: the kernel sees from the pointer to the end of the allocation.
    let p = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Shared, 64)).unwrap();
    rt.usm_write(q, p, &init).unwrap();
    let e = rt.enqueue_launch(
        q,
        k,
        &NdRange::d1(12),
        &[ArgValue::Usm(p.offset(16)), ArgValue::scalar(&add)],
        &[],
    );
    rt.complete(e.unwrap()).unwrap();
    let too_far = rt.enqueue_launch(
        q,
        k,
        &NdRange::d1(13),
        &[ArgValue::Usm(p.offset(16)), ArgValue::scalar(&add)],
        &[],
    );
    assert!(matches!(rt.complete(too_far.unwrap()), Err(Error::CommandFailed(_))));
    rt.usm_read(q, p, &mut back).unwrap();
    let vals: Vec<u32> = back
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(&vals[..4], &[0, 1, 2, 3]);
    assert_eq!(&vals[4..], &(9..21).collect::<Vec<u32>>()[..]);
    rt.usm_free(ctx, p).unwrap();
}

#[test]
fn host_registration_through_the_runtime() {
    let (rt, _, ctx) = runtime();
    let mut host = vec![0u8; 8192];
    // SAFETY: only registered, never accessed through the adapter.
    let (all, half) = unsafe {
        (
            HostPtr::new(host.as_mut_ptr(), 8192),
            HostPtr::new(host.as_mut_ptr(), 4096),
        )
    };
    rt.host_register(ctx, all).unwrap();
    assert!(matches!(rt.host_unregister(ctx, half), Err(Error::InvalidValue(_))));
    rt.host_unregister(ctx, all).unwrap();
}

#[test]
fn many_queues_run_concurrently_and_shut_down() {
    let (rt, dev, ctx) = runtime();
    let done = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(AtomicBool::new(false));
    let mut lib = HostKernelLibrary::new();
    let (d, s) = (done.clone(), started.clone());
    lib.register("tick", 0, move |_: &HostArgs<'_>| {
        s.store(true, Ordering::SeqCst);
        d.fetch_add(1, Ordering::SeqCst);
        Ok(())
    });
    let prog = rt.create_program(ctx, &ProgramSource::Host(Arc::new(lib)), "").unwrap();
    let k = rt.create_kernel(prog, "tick").unwrap();
    for _ in 0..8 {
        let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
        for _ in 0..10 {
            let e = rt.enqueue_launch(q, k, &NdRange::d1(1), &[], &[]).unwrap();
            rt.release_event(e).unwrap();
        }
        rt.release_queue(q).unwrap(); // pending launches still run
    }
    assert!(started.load(Ordering::SeqCst));
    assert_eq!(done.load(Ordering::SeqCst), 80);
}

mod allocations;
mod concurrency;
