//! Contexts adopted from native `cl_context`s through the dyn layer
//! (`Runtime::create_context_from_native`): on every OpenCL device, a
//! context the test made with OpenCL itself runs commands as any other,
//! answers the same native handle, and its release gives back exactly the
//! reference the adoption took (owned: the caller's; not owned: one of its
//! own); a device that is not the native context's is refused.

mod common;

use cl3::types::{cl_context, cl_device_id};
use common::{pattern, runtime};
use ur_api::{Error, NativeHandle, NativeOf, QueueProps};

fn refs(ctx: cl_context) -> u32 {
    cl3::context::get_context_info(ctx, cl3::context::CL_CONTEXT_REFERENCE_COUNT)
        .unwrap()
        .into()
}

#[test]
fn adopted_contexts_run_commands_and_give_back_their_reference() {
    let Some(rt) = runtime("native_contexts") else { return };
    let devices = rt.all_devices();
    for &d in &devices {
        let name = rt.device_info(d).unwrap().name;
        let raw_dev = rt.native_handle(NativeOf::Device(d)).unwrap().raw() as cl_device_id;
        let raw = cl3::context::create_context(&[raw_dev], std::ptr::null(), None, std::ptr::null_mut()).unwrap();
        assert_eq!(refs(raw), 1, "{name}");

        // Not owned: a reference of its own, given back with the context.
        // SAFETY: a live context of that device.
        let ctx = rt
            .create_context_from_native(&[d], unsafe { NativeHandle::new(raw as u64) }, false)
            .unwrap();
        assert_eq!(refs(raw), 2, "{name}: the adoption's own reference");
        assert_eq!(
            rt.native_handle(NativeOf::Context(ctx)).unwrap().raw(),
            raw as u64,
            "{name}"
        );
        assert_eq!(rt.context_devices(ctx).unwrap(), vec![d], "{name}");
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let data = pattern(4096, 5);
        let b = rt
            .create_buffer(ctx, &ur_api::BufferDesc::new(data.len()).on(d), None)
            .unwrap();
        rt.write(q, b, 0, &data).unwrap();
        let mut back = vec![0u8; data.len()];
        rt.read(q, b, 0, &mut back).unwrap();
        assert!(back == data, "{name}: a round trip through the adopted context");
        rt.release_buffer(b).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(ctx).unwrap();
        assert_eq!(refs(raw), 1, "{name}: the release gives it back");

        // A device of another context is not this one's.
        if let Some(&other) = devices
            .iter()
            .find(|&&o| o != d && rt.device_platform(o).ok() == rt.device_platform(d).ok())
        {
            // SAFETY: a live context.
            let r = rt.create_context_from_native(&[other], unsafe { NativeHandle::new(raw as u64) }, false);
            assert!(matches!(r, Err(Error::InvalidValue(_))), "{name}: {r:?}");
            assert_eq!(refs(raw), 1, "{name}: a refused adoption takes no reference");
        }

        // Owned: the caller's reference passes to the context.
        // SAFETY: a live context; its one reference passes on.
        let ctx = rt
            .create_context_from_native(&[d], unsafe { NativeHandle::new(raw as u64) }, true)
            .unwrap();
        assert_eq!(refs(raw), 1, "{name}: an owned adoption takes none");
        rt.release_context(ctx).unwrap();
    }
}
