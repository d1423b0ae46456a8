//! The dyn layer's cache of freed USM allocations, observed on a simulated
//! device (its memory accounting and allocation count show what the
//! adapter really allocated). The cache is off for the simulated adapter by
//! default; this test binary turns it on for every backend before any
//! runtime exists (its only test, so nothing races the variable).

use ur_api::{Error, EventStatus, HostPtr, MemRef, QueueProps, Runtime, UsmDesc, UsmKind};
use ur_sim::{SimAdapter, Topology};

#[test]
fn freed_usm_is_kept_reused_and_given_back() {
    // Set before the runtime is made, in this binary's only test.
    std::env::set_var("UR_RUST_USM_CACHE", "1");
    // 512 KiB over a 16 MiB/s link: a copy from the host takes ~31 ms.
    let topo = Topology::parse("platform p: sim0 bw=16MiB/s lat=0; links on").unwrap();
    let sim = SimAdapter::new(topo);
    let faults = sim.faults();
    let mut rt = Runtime::new();
    rt.add(sim).unwrap();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    faults.cap_memory("sim0", 1 << 20).unwrap();
    let half = UsmDesc::new(UsmKind::Device, 512 << 10).on(dev);

    // A free while a copy into the allocation is still running waits for
    // the queue before keeping the block.
    let p = rt.usm_alloc(ctx, &half).unwrap();
    let data = vec![0x5au8; 512 << 10];
    // SAFETY: `data` outlives the copy (the free below finishes the queue,
    // and `data` lives to the end of the test).
    let src = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
    let ev = rt
        .enqueue_usm_copy(q, MemRef::Usm(p), MemRef::Host(src), data.len(), &[])
        .unwrap();
    assert_ne!(
        rt.event_status(ev).unwrap(),
        EventStatus::Complete,
        "the copy is still running"
    );
    rt.usm_free(ctx, p).unwrap();
    assert_eq!(
        rt.event_status(ev).unwrap(),
        EventStatus::Complete,
        "the free waited for the queue"
    );
    rt.release_event(ev).unwrap();

    // Kept: still allocated on the device, but no longer an allocation.
    assert_eq!(faults.memory_used("sim0").unwrap(), 512 << 10);
    assert!(
        rt.usm_pointer_info(ctx, p).is_err(),
        "a cached block is not an allocation"
    );

    // The same shape is served from the cache: no new device allocation.
    let allocated = faults.allocations();
    let again = rt.usm_alloc(ctx, &half).unwrap();
    assert_eq!(again, p);
    assert_eq!(faults.allocations(), allocated, "no adapter allocation");
    assert_eq!(rt.usm_pointer_info(ctx, again).unwrap().size, 512 << 10);
    let mut back = vec![0u8; 16];
    rt.usm_read(q, again, &mut back).unwrap();
    assert_eq!(back, [0x5a; 16], "the copy's bytes, all there before reuse");

    // Another shape is not: and when the device is short of memory, the
    // cached blocks go back first and the allocation is tried again.
    rt.usm_free(ctx, again).unwrap();
    let bigger = UsmDesc::new(UsmKind::Device, 768 << 10).on(dev);
    let b = rt.usm_alloc(ctx, &bigger).unwrap();
    assert_eq!(
        faults.memory_used("sim0").unwrap(),
        768 << 10,
        "the cached half went back"
    );
    rt.usm_free(ctx, b).unwrap();
    assert_eq!(faults.memory_used("sim0").unwrap(), 768 << 10, "kept");

    // A device that is truly full still says so.
    let full = UsmDesc::new(UsmKind::Device, 2 << 20).on(dev);
    assert_eq!(rt.usm_alloc(ctx, &full), Err(Error::OutOfDeviceMemory));
    assert_eq!(faults.memory_used("sim0").unwrap(), 0, "the cache was emptied trying");

    // Releasing the context gives every cached block back.
    let c = rt.usm_alloc(ctx, &half).unwrap();
    rt.usm_free(ctx, c).unwrap();
    assert_eq!(faults.memory_used("sim0").unwrap(), 512 << 10);
    rt.release_queue(q).unwrap();
    rt.release_context(ctx).unwrap();
    assert_eq!(faults.memory_used("sim0").unwrap(), 0);
}
