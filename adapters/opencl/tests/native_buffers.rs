//! Buffers adopted from native `cl_mem`s through the dyn layer
//! (`Runtime::create_buffer_from_native`): on every OpenCL device, a
//! buffer the test made and filled with OpenCL itself keeps its bytes, its
//! size and its access flag, answers the same native handle, and its
//! release gives back exactly the reference the adoption took; another
//! context's buffer is refused.

mod common;

use cl3::types::{cl_context, cl_mem};
use common::{pattern, runtime};
use ur_api::{Error, MemFlags, NativeHandle, NativeOf, QueueProps};

fn refs(mem: cl_mem) -> u32 {
    cl3::memory::get_mem_object_info(mem, cl3::memory::CL_MEM_REFERENCE_COUNT)
        .unwrap()
        .into()
}

#[test]
fn adopted_buffers_keep_their_bytes_and_give_back_their_reference() {
    let Some(rt) = runtime("native_buffers") else { return };
    for d in rt.all_devices() {
        let name = rt.device_info(d).unwrap().name;
        let ctx = rt.create_context(&[d]).unwrap();
        let raw_ctx = rt.native_handle(NativeOf::Context(ctx)).unwrap().raw() as cl_context;
        let data = pattern(4096, 11);
        // SAFETY: `data` is read during the call (COPY_HOST_PTR) and holds
        // the 4096 bytes asked for.
        let mem = unsafe {
            cl3::memory::create_buffer(
                raw_ctx,
                cl3::memory::CL_MEM_READ_ONLY | cl3::memory::CL_MEM_COPY_HOST_PTR,
                data.len(),
                data.as_ptr().cast_mut().cast(),
            )
        }
        .unwrap();
        assert_eq!(refs(mem), 1, "{name}");

        // SAFETY: a live buffer of the context.
        let b = rt
            .create_buffer_from_native(ctx, unsafe { NativeHandle::new(mem as u64) }, false)
            .unwrap();
        assert_eq!(refs(mem), 2, "{name}: the adoption's own reference");
        let info = rt.buffer_info(b).unwrap();
        assert_eq!(
            (info.size, info.flags, info.device),
            (4096, MemFlags::READ_ONLY, d),
            "{name}"
        );
        assert_eq!(
            rt.native_handle(NativeOf::Buffer(b)).unwrap().raw(),
            mem as u64,
            "{name}"
        );
        let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
        let mut back = vec![0u8; data.len()];
        rt.read(q, b, 0, &mut back).unwrap();
        assert!(back == data, "{name}: the bytes OpenCL put there");
        rt.release_buffer(b).unwrap();
        rt.finish(q).unwrap();
        assert_eq!(refs(mem), 1, "{name}: the release gives it back");

        // Another context's buffer is not this context's.
        let other = rt.create_context(&[d]).unwrap();
        // SAFETY: a live buffer (of another context).
        let r = rt.create_buffer_from_native(other, unsafe { NativeHandle::new(mem as u64) }, false);
        assert!(matches!(r, Err(Error::WrongContext { .. })), "{name}: {r:?}");
        assert_eq!(refs(mem), 1, "{name}: a refused adoption takes no reference");

        // Owned: the caller's reference passes to the buffer.
        // SAFETY: a live buffer of the context; its one reference passes on.
        let b = rt
            .create_buffer_from_native(ctx, unsafe { NativeHandle::new(mem as u64) }, true)
            .unwrap();
        assert_eq!(refs(mem), 1, "{name}: an owned adoption takes none");
        rt.release_buffer(b).unwrap();
        rt.release_queue(q).unwrap();
        rt.release_context(other).unwrap();
        rt.release_context(ctx).unwrap();
    }
}
