//! The adapter through the dyn layer, as every user reaches it.

use ur_api::{
    BufferDesc, DeviceCaps, Error, EventStatus, MapFlags, MemoryConnection, QueueProps, Runtime, UsmDesc, UsmKind,
};

use crate::{TemplateAdapter, BACKEND};

fn runtime() -> Runtime {
    let mut rt = Runtime::new();
    rt.add(TemplateAdapter::new()).unwrap();
    rt
}

#[test]
fn one_platform_one_device() {
    let rt = runtime();
    let devices = rt.all_devices();
    assert_eq!(devices.len(), 1);
    assert_eq!(rt.backend_of(devices[0]).unwrap(), BACKEND);
    assert_eq!(rt.platforms().len(), 1);
}

#[test]
fn write_copy_fill_read_through_the_runtime() {
    let rt = runtime();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let a = rt
        .create_buffer_with_data(ctx, &BufferDesc::new(16), &[7u8; 16])
        .unwrap();
    let b = rt.create_buffer(ctx, &BufferDesc::new(16), None).unwrap();
    let copied = rt.enqueue_copy(q, a, 4, b, 0, 8, &[]).unwrap();
    // Synchronous: the event is complete as soon as the enqueue returns.
    assert_eq!(rt.event_status(copied).unwrap(), EventStatus::Complete);
    rt.complete(copied).unwrap();
    rt.complete(rt.enqueue_fill(q, b, 8, 8, &[1, 2], &[]).unwrap()).unwrap();
    let mut out = [0u8; 16];
    rt.read(q, b, 0, &mut out).unwrap();
    assert_eq!(out, [7, 7, 7, 7, 7, 7, 7, 7, 1, 2, 1, 2, 1, 2, 1, 2]);
    rt.finish(q).unwrap();
}

#[test]
fn sub_buffers_and_mapping() {
    let rt = runtime();
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(32), None).unwrap();
    let sub = rt.create_sub_buffer(buf, 8, 8).unwrap();
    rt.write(q, sub, 0, &[5u8; 8]).unwrap();
    let (ev, ptr) = rt
        .enqueue_map(q, buf, MapFlags::READ | MapFlags::WRITE, 0, 32, &[])
        .unwrap();
    rt.complete(ev).unwrap();
    // SAFETY: the mapping is open, 32 bytes, and this test is its only user
    // until the unmap below.
    let view = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), 32) };
    assert_eq!(&view[8..16], &[5u8; 8]);
    view[0] = 9;
    rt.complete(rt.enqueue_unmap(q, buf, ptr, &[]).unwrap()).unwrap();
    let mut first = [0u8; 1];
    rt.read(q, buf, 0, &mut first).unwrap();
    assert_eq!(first, [9]);
}

#[test]
fn absent_capabilities_are_unsupported_before_the_adapter() {
    let rt = runtime();
    let dev = rt.all_devices()[0];
    let info = rt.device_info(dev).unwrap();
    assert!(!info.caps.contains(DeviceCaps::KERNELS));
    let ctx = rt.create_context(&[dev]).unwrap();
    let r = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Host, 64));
    assert!(matches!(r, Err(Error::Unsupported { .. })), "{r:?}");
    let loc = ur_api::Location::new(ctx, dev);
    assert_eq!(rt.memory_connection(loc, loc).unwrap(), MemoryConnection::Unified);
}
