//! The adapter on a real GPU, through the dyn layer ([`Runtime`]).
//!
//! Every test is reported as ignored, with the reason printed once, where
//! no CUDA device exists (CI): an absent backend is a skip, not a pass.

use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use ur_api::*;
use ur_cuda::CudaAdapter;

struct Env {
    rt: Runtime,
    dev: DeviceId,
    ctx: ContextId,
    q: QueueId,
}

type TestResult = Result<(), Failed>;

fn env() -> Env {
    let mut rt = Runtime::new();
    rt.add(CudaAdapter::new()).expect("adapter");
    let dev = rt.all_devices()[0];
    let ctx = rt.create_context(&[dev]).expect("context");
    let q = rt.create_queue(ctx, dev, &QueueProps::default()).expect("queue");
    Env { rt, dev, ctx, q }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn ensure(cond: bool, msg: impl Into<String>) -> TestResult {
    if cond {
        Ok(())
    } else {
        Err(msg.into().into())
    }
}

fn e<T>(r: Result<T>) -> Result<T, Failed> {
    r.map_err(|e| Failed::from(e.to_string()))
}

const KERNELS: &str = r#"
extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void index2d(unsigned* out, unsigned w) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    out[y * w + x] = y * 1000 + x;
}
extern "C" __global__ void index3d(unsigned* out, unsigned w, unsigned h) {
    unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
    out[(z * h + y) * w + x] = z * 1000000 + y * 1000 + x;
}
extern "C" __global__ void spin(unsigned long long cycles) {
    unsigned long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
}
"#;

const PTX_ADD_ONE: &str = r#"
.version 7.0
.target sm_70
.address_size 64
.visible .entry add_one(.param .u64 p, .param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<8>;
    .reg .b64 %rd<5>;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r5, 4;
    add.s64 %rd4, %rd2, %rd3;
    ld.global.u32 %r6, [%rd4];
    add.s32 %r7, %r6, 1;
    st.global.u32 [%rd4], %r7;
DONE:
    ret;
}
"#;

fn device_info() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let platforms = rt.platforms();
    ensure(platforms.len() == 1, "one CUDA platform")?;
    let mut count = 0;
    // SAFETY: these tests run only where the adapter loaded the driver and
    // cuInit succeeded; valid out-pointer.
    let r = unsafe { cudarc::driver::sys::cuDeviceGetCount(&mut count) };
    ensure(r == cudarc::driver::sys::CUresult::CUDA_SUCCESS, "cuDeviceGetCount")?;
    ensure(rt.all_devices().len() == count as usize, "every device in the platform")?;
    let info = e(rt.device_info(env.dev))?;
    println!("{info:?}");
    let l = &info.limits;
    ensure(l.vendor_id == 0x10de, "NVIDIA's vendor id")?;
    ensure(
        l.max_work_item_sizes.iter().all(|&n| n > 0) && l.max_work_item_sizes[0] <= info.max_work_group_size,
        "work-item sizes per dimension",
    )?;
    ensure(l.sub_group_sizes == [32], "the warp as the sub-group size")?;
    ensure(
        l.max_num_sub_groups as usize * 32 == info.max_work_group_size,
        "sub-groups per work group",
    )?;
    ensure(
        l.global_mem_cache_size > 0 && l.max_constant_buffer_size > 0,
        "L2 and constant memory sizes",
    )?;
    ensure(
        info.device_type == DeviceType::Gpu && !info.name.is_empty(),
        "a named GPU",
    )?;
    ensure(
        info.usm.contains(UsmCaps::HOST | UsmCaps::DEVICE),
        "host and device USM",
    )?;
    ensure(
        info.caps
            .contains(DeviceCaps::MAP | DeviceCaps::SUB_BUFFERS | DeviceCaps::KERNELS),
        "caps",
    )?;
    ensure(info.program_formats.contains(ProgramFormats::PTX), "PTX")?;
    ensure(
        info.program_formats.contains(ProgramFormats::CUDA_C) == CudaAdapter::nvrtc_available(),
        "CUDA C exactly where NVRTC is",
    )?;
    println!("NVRTC available: {}", CudaAdapter::nvrtc_available());
    Ok(())
}

fn buffers_and_sub_buffers() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let data = pattern(1 << 20, 7);
    let hinted = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(data.len()).on(env.dev), &data))?;
    let mut back = vec![0u8; data.len()];
    e(rt.read(env.q, hinted, 0, &mut back))?;
    ensure(back == data, "COPY_HOST_PTR contents read back")?;
    let plain = e(rt.create_buffer(env.ctx, &BufferDesc::new(4096), None))?;
    ensure(
        e(rt.buffer_info(plain))?.device == env.dev,
        "no hint: the context's first device",
    )?;
    e(rt.write(env.q, plain, 0, &data[..4096]))?;
    let sub = e(rt.create_sub_buffer(plain, 512, 1024))?;
    e(rt.write(env.q, sub, 0, &[0xAB; 1024]))?;
    let mut whole = vec![0u8; 4096];
    e(rt.read(env.q, plain, 0, &mut whole))?;
    let mut want = data[..4096].to_vec();
    want[512..1536].fill(0xAB);
    ensure(whole == want, "a sub-buffer writes into its parent at its offset")?;
    let ev = e(rt.enqueue_copy(env.q, hinted, 100, plain, 0, 2000, &[]))?;
    e(rt.complete(ev))?;
    e(rt.read(env.q, plain, 0, &mut whole[..2000]))?;
    ensure(whole[..2000] == data[100..2100], "buffer copy")?;
    // Released while a command is in flight: freeing waits for the device.
    let big = e(rt.create_buffer(env.ctx, &BufferDesc::new(64 << 20), None))?;
    let ev = e(rt.enqueue_fill(env.q, big, 0, 64 << 20, &[1, 2, 3, 4], &[]))?;
    e(rt.release_buffer(big))?;
    e(rt.complete(ev))?;
    Ok(())
}

fn use_host_ptr() -> TestResult {
    let env = env();
    let rt = &env.rt;
    if !e(rt.device_info(env.dev))?.caps.contains(DeviceCaps::USE_HOST_PTR) {
        return Err("USE_HOST_PTR not offered".into());
    }
    let mut host = pattern(1 << 16, 4);
    let orig = host.clone();
    // SAFETY: `host` outlives the buffer and is only read through `span`
    // while the buffer lives.
    let span = unsafe { HostPtr::new(host.as_mut_ptr(), host.len()) };
    let desc = BufferDesc::new(host.len()).with_flags(MemFlags::USE_HOST_PTR);
    let b = e(rt.create_buffer(env.ctx, &desc, Some(span)))?;
    let mut back = vec![0u8; host.len()];
    e(rt.read(env.q, b, 0, &mut back))?;
    ensure(back == orig, "the buffer shows the caller's memory")?;
    let ev = e(rt.enqueue_fill(env.q, b, 0, 4096, &[9], &[]))?;
    e(rt.complete(ev))?;
    // SAFETY: the queue is idle; the span is valid.
    let seen = unsafe { std::slice::from_raw_parts(span.as_ptr(), 4096) };
    ensure(
        seen.iter().all(|&x| x == 9),
        "the device wrote the caller's memory in place",
    )?;
    e(rt.release_buffer(b))?;
    // Memory the caller registered stays registered after the buffer goes.
    e(rt.host_register(env.ctx, span))?;
    let b = e(rt.create_buffer(env.ctx, &desc, Some(span)))?;
    e(rt.read(env.q, b, 0, &mut back[..4096]))?;
    ensure(back[..4096].iter().all(|&x| x == 9), "a buffer over registered memory")?;
    e(rt.release_buffer(b))?;
    e(rt.host_unregister(env.ctx, span))?;
    drop(host);
    Ok(())
}

fn fills() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let size = 128 * 48;
    let buf = e(rt.create_buffer(env.ctx, &BufferDesc::new(size), None))?;
    for n in [1usize, 2, 3, 4, 6, 8, 12, 16, 24, 64, 128] {
        let pat = pattern(n, n as u8);
        e(rt.write(env.q, buf, 0, &vec![0xEE; size]))?;
        let (off, len) = (n * 3, n * 20);
        let ev = e(rt.enqueue_fill(env.q, buf, off, len, &pat, &[]))?;
        e(rt.complete(ev))?;
        let mut back = vec![0u8; size];
        e(rt.read(env.q, buf, 0, &mut back))?;
        let mut want = vec![0xEEu8; size];
        for (i, b) in want[off..off + len].iter_mut().enumerate() {
            *b = pat[i % n];
        }
        ensure(back == want, format!("fill with a {n}-byte pattern"))?;
    }
    // USM fill at an odd address (byte-wide strided memsets).
    let p = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Device, 4096).on(env.dev)))?;
    let ev = e(rt.enqueue_usm_fill(env.q, p.offset(1), 12 * 10, &pattern(12, 3), &[]))?;
    e(rt.complete(ev))?;
    let mut back = vec![0u8; 120];
    e(rt.usm_read(env.q, p.offset(1), &mut back))?;
    let want: Vec<u8> = pattern(12, 3).iter().copied().cycle().take(120).collect();
    ensure(back == want, "USM fill at an odd address")?;
    e(rt.usm_free(env.ctx, p))?;
    Ok(())
}

fn rects() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let (sw, sh, sd) = (64usize, 16usize, 4usize); // source: row pitch 64, 16 rows, 4 slices
    let src_data = pattern(sw * sh * sd, 9);
    let src = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(src_data.len()), &src_data))?;
    let dst = e(rt.create_buffer(env.ctx, &BufferDesc::new(100 * 20 * 4), None))?;
    e(rt.write(env.q, dst, 0, &vec![0; 100 * 20 * 4]))?;
    let rect = RectCopy {
        src: RectSide::new([4, 2, 1], sw, sw * sh),
        dst: RectSide::new([10, 1, 0], 100, 100 * 20),
        extent: [20, 5, 3],
    };
    let ev = e(rt.enqueue_copy_rect(env.q, src, dst, &rect, &[]))?;
    e(rt.complete(ev))?;
    let mut got = vec![0u8; 100 * 20 * 4];
    e(rt.read(env.q, dst, 0, &mut got))?;
    let mut want = vec![0u8; 100 * 20 * 4];
    rect.for_each_row(|s, d, len| want[d..d + len].copy_from_slice(&src_data[s..s + len]));
    ensure(got == want, "3-D copy_rect between buffers")?;
    // Read a box into host memory with its own pitches, then write it back elsewhere.
    let host_rect = RectCopy {
        src: rect.src,
        dst: RectSide::new([1, 0, 0], 32, 32 * 6),
        extent: [20, 5, 3],
    };
    let mut host = vec![0u8; 32 * 6 * 3];
    e(rt.read_rect(env.q, src, &host_rect, &mut host))?;
    let mut want = vec![0u8; host.len()];
    host_rect.for_each_row(|s, d, len| want[d..d + len].copy_from_slice(&src_data[s..s + len]));
    ensure(host == want, "read_rect")?;
    let back_rect = RectCopy {
        src: host_rect.dst,
        dst: rect.dst,
        extent: rect.extent,
    };
    e(rt.write(env.q, dst, 0, &vec![0; 100 * 20 * 4]))?;
    e(rt.write_rect(env.q, dst, &back_rect, &host))?;
    e(rt.read(env.q, dst, 0, &mut got))?;
    let mut want = vec![0u8; got.len()];
    back_rect.for_each_row(|s, d, len| want[d..d + len].copy_from_slice(&host[s..s + len]));
    ensure(got == want, "write_rect")?;
    Ok(())
}

fn maps() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let data = pattern(8192, 1);
    let buf = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(data.len()), &data))?;
    let (ev, ptr) = e(rt.enqueue_map(env.q, buf, MapFlags::READ | MapFlags::WRITE, 1024, 2048, &[]))?;
    e(rt.complete(ev))?;
    // SAFETY: the mapping is complete and stays valid until unmapped.
    let view = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), ptr.len()) };
    ensure(view == &data[1024..3072], "a READ map shows the buffer")?;
    view.fill(0x5A);
    let ev = e(rt.enqueue_unmap(env.q, buf, ptr, &[]))?;
    e(rt.complete(ev))?;
    let (ev, ptr) = e(rt.enqueue_map(env.q, buf, MapFlags::WRITE_INVALIDATE, 0, 16, &[]))?;
    e(rt.complete(ev))?;
    // SAFETY: as above.
    unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), 16) }.fill(0x11);
    let ev = e(rt.enqueue_unmap(env.q, buf, ptr, &[]))?;
    e(rt.release_event(ev))?; // released before completion: the staging must survive
    let mut back = vec![0u8; data.len()];
    e(rt.read(env.q, buf, 0, &mut back))?;
    let mut want = data.clone();
    want[1024..3072].fill(0x5A);
    want[..16].fill(0x11);
    ensure(back == want, "unmap writes the mapping back")?;
    Ok(())
}

fn usm_kinds() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let data = pattern(1 << 16, 5);
    for kind in [UsmKind::Device, UsmKind::Host, UsmKind::Shared] {
        for align in [0usize, 4096, 1 << 16] {
            let p = e(rt.usm_alloc(env.ctx, &UsmDesc::new(kind, data.len()).on(env.dev).aligned(align)))?;
            if align > 0 {
                ensure(p.0 % align as u64 == 0, format!("{kind:?} aligned to {align}"))?;
            }
            let info = e(rt.usm_pointer_info(env.ctx, p.offset(100)))?;
            ensure(
                info.base == p && info.kind == kind && info.size == data.len(),
                "pointer query",
            )?;
            e(rt.usm_write(env.q, p, &data))?;
            let mut back = vec![0u8; data.len()];
            e(rt.usm_read(env.q, p, &mut back))?;
            ensure(back == data, format!("{kind:?} round trip"))?;
            if kind != UsmKind::Device {
                // SAFETY: host and shared USM are host-addressable; the queue is idle.
                let host = unsafe { std::slice::from_raw_parts(p.0 as *const u8, data.len()) };
                ensure(host == &data[..], format!("{kind:?} memory is readable on the host"))?;
            }
            e(rt.usm_free(env.ctx, p))?;
        }
    }
    // Small allocations come from driver sub-allocators that align less
    // than a page: asked alignments must hold anyway.
    for kind in [UsmKind::Device, UsmKind::Host, UsmKind::Shared] {
        for align in [512usize, 4096, 1 << 16] {
            let ptrs: Vec<UsmPtr> = (0..4)
                .map(|_| rt.usm_alloc(env.ctx, &UsmDesc::new(kind, 100).on(env.dev).aligned(align)))
                .collect::<Result<_>>()
                .map_err(|e| Failed::from(e.to_string()))?;
            for &p in &ptrs {
                ensure(
                    p.0 % align as u64 == 0,
                    format!("small {kind:?} at {p} aligned to {align}"),
                )?;
                e(rt.usm_write(env.q, p, &data[..100]))?;
                let mut back = vec![0u8; 100];
                e(rt.usm_read(env.q, p, &mut back))?;
                ensure(back == data[..100], format!("small aligned {kind:?} round trip"))?;
            }
            for p in ptrs {
                e(rt.usm_free(env.ctx, p))?;
            }
        }
    }
    // Device to host USM copy.
    let d = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Device, 4096).on(env.dev)))?;
    let h = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Host, 4096)))?;
    e(rt.usm_write(env.q, d, &data[..4096]))?;
    let ev = e(rt.enqueue_usm_copy(env.q, MemRef::Usm(h), MemRef::Usm(d), 4096, &[]))?;
    e(rt.complete(ev))?;
    // SAFETY: host USM, copy complete.
    let seen = unsafe { std::slice::from_raw_parts(h.0 as *const u8, 4096) };
    ensure(seen == &data[..4096], "device to host USM")?;
    e(rt.usm_free(env.ctx, d))?;
    e(rt.usm_free(env.ctx, h))?;
    Ok(())
}

fn shared_usm_advice_and_guard() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let info = e(rt.device_info(env.dev))?;
    if !info.usm.contains(UsmCaps::SHARED) {
        return Err("shared USM not offered on this device".into());
    }
    let n = 1 << 20;
    let p = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Shared, n).on(env.dev)))?;
    e(rt.usm_advise(env.q, p, n, UsmAdvice::PREFER_DEVICE | UsmAdvice::ACCESSED_BY_HOST))?;
    e(rt.usm_advise(env.q, p, n, UsmAdvice::READ_MOSTLY))?;
    let ev = e(rt.enqueue_usm_fill(env.q, p, n, &[7], &[]))?;
    e(rt.complete(ev))?;
    let ev = e(rt.enqueue_usm_prefetch(env.q, p, n, &[]))?;
    e(rt.complete(ev))?;
    // SAFETY: shared memory, queue idle.
    let seen = unsafe { std::slice::from_raw_parts(p.0 as *const u8, n) };
    ensure(seen.iter().all(|&b| b == 7), "shared fill")?;
    e(rt.usm_free(env.ctx, p))?;
    // Advice and prefetch on device memory are accepted no-ops.
    let d = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Device, 4096).on(env.dev)))?;
    e(rt.usm_advise(env.q, d, 4096, UsmAdvice::READ_MOSTLY))?;
    let ev = e(rt.enqueue_usm_prefetch(env.q, d, 4096, &[]))?;
    e(rt.complete(ev))?;
    e(rt.usm_free(env.ctx, d))?;
    // More managed memory than is free: refused before the driver is asked.
    let too_big = (info.global_mem_size - 1) as usize;
    match rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Shared, too_big).on(env.dev)) {
        Err(Error::OutOfDeviceMemory) => Ok(()),
        other => Err(format!("oversized managed allocation: {other:?}").into()),
    }
}

fn host_registration() -> TestResult {
    let env = env();
    let rt = &env.rt;
    if !e(rt.device_info(env.dev))?.caps.contains(DeviceCaps::HOST_REGISTER) {
        return Err("HOST_REGISTER not offered".into());
    }
    let mut host = pattern(1 << 20, 11);
    // SAFETY: `host` outlives the registration and is not reallocated.
    let span = unsafe { HostPtr::new(host.as_mut_ptr(), host.len()) };
    e(rt.host_register(env.ctx, span))?;
    ensure(rt.host_register(env.ctx, span).is_err(), "registering twice is refused")?;
    let buf = e(rt.create_buffer(env.ctx, &BufferDesc::new(host.len()), None))?;
    e(rt.write(env.q, buf, 0, &host))?;
    let mut back = vec![0u8; host.len()];
    e(rt.read(env.q, buf, 0, &mut back))?;
    ensure(back == host, "copies from registered memory")?;
    e(rt.host_unregister(env.ctx, span))?;
    ensure(
        rt.host_unregister(env.ctx, span).is_err(),
        "unregistering twice is refused",
    )?;
    Ok(())
}

fn cuda_c_kernels() -> TestResult {
    let env = env();
    let rt = &env.rt;
    if !CudaAdapter::nvrtc_available() {
        return Err("NVRTC not available".into());
    }
    let prog = e(rt.create_program(env.ctx, &ProgramSource::CudaC(KERNELS.into()), ""))?;
    let axpy = e(rt.create_kernel(prog, "axpy"))?;
    let n = 10_000u32;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| 2.0 * i as f32).collect();
    let xb = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(n as usize * 4), bytes(&x)))?;
    let yu = e(rt.usm_alloc(env.ctx, &UsmDesc::new(UsmKind::Device, n as usize * 4).on(env.dev)))?;
    e(rt.usm_write(env.q, yu, bytes(&y)))?;
    let a = 3.0f32;
    let args = [
        ArgValue::scalar(&a),
        ArgValue::Buffer(xb),
        ArgValue::Usm(yu),
        ArgValue::scalar(&n),
    ];
    let ev = e(rt.enqueue_launch(env.q, axpy, &NdRange::d1(n as usize), &args, &[]))?;
    e(rt.complete(ev))?;
    let mut out = vec![0u8; n as usize * 4];
    e(rt.usm_read(env.q, yu, &mut out))?;
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    ensure(
        got.iter().enumerate().all(|(i, &v)| v == 5.0 * i as f32),
        "axpy: buffer, USM and scalar args",
    )?;
    // Wrong argument count or size, local memory, offsets.
    let short = rt.enqueue_launch(env.q, axpy, &NdRange::d1(64), &args[..3], &[]);
    println!("short argument list: {short:?}");
    ensure(
        matches!(short, Err(Error::InvalidKernelArgs(_))),
        "argument count is checked",
    )?;
    let wide = 1u64;
    let bad = [
        ArgValue::scalar(&wide),
        ArgValue::Buffer(xb),
        ArgValue::Usm(yu),
        ArgValue::scalar(&n),
    ];
    ensure(
        matches!(
            rt.enqueue_launch(env.q, axpy, &NdRange::d1(64), &bad, &[]),
            Err(Error::InvalidKernelArgs(_))
        ),
        "argument sizes are checked",
    )?;
    let local = [
        ArgValue::scalar(&a),
        ArgValue::Buffer(xb),
        ArgValue::Local(64),
        ArgValue::scalar(&n),
    ];
    ensure(
        matches!(
            rt.enqueue_launch(env.q, axpy, &NdRange::d1(64), &local, &[]),
            Err(Error::Unsupported { .. })
        ),
        "local-memory arguments are unsupported",
    )?;
    let mut off = NdRange::d1(64);
    off.offset = [1, 0, 0];
    ensure(
        matches!(
            rt.enqueue_launch(env.q, axpy, &off, &args, &[]),
            Err(Error::Unsupported { .. })
        ),
        "global offsets are unsupported",
    )?;
    // 2-D and 3-D launches, default and explicit blocks.
    let (w, h, d) = (48u32, 20u32, 6u32);
    let out2 = e(rt.create_buffer(env.ctx, &BufferDesc::new((w * h * d) as usize * 4), None))?;
    let k2 = e(rt.create_kernel(prog, "index2d"))?;
    for range in [
        NdRange::d2(w as usize, h as usize),
        NdRange::d2(w as usize, h as usize).with_local([16, 4, 1]),
    ] {
        let ev = e(rt.enqueue_launch(env.q, k2, &range, &[ArgValue::Buffer(out2), ArgValue::scalar(&w)], &[]))?;
        e(rt.complete(ev))?;
        let got = read_u32(rt, env.q, out2, (w * h) as usize)?;
        ensure(
            got.iter()
                .enumerate()
                .all(|(i, &v)| v == (i as u32 / w) * 1000 + i as u32 % w),
            "2-D launch",
        )?;
    }
    let k3 = e(rt.create_kernel(prog, "index3d"))?;
    let args3 = [ArgValue::Buffer(out2), ArgValue::scalar(&w), ArgValue::scalar(&h)];
    let ev = e(rt.enqueue_launch(env.q, k3, &NdRange::d3(w as usize, h as usize, d as usize), &args3, &[]))?;
    e(rt.complete(ev))?;
    let got = read_u32(rt, env.q, out2, (w * h * d) as usize)?;
    let ok = got.iter().enumerate().all(|(i, &v)| {
        let i = i as u32;
        v == (i / (w * h)) * 1_000_000 + (i / w % h) * 1000 + i % w
    });
    ensure(ok, "3-D launch")?;
    ensure(
        matches!(rt.create_kernel(prog, "missing"), Err(Error::KernelNotFound { .. })),
        "unknown kernel name",
    )?;
    // A virtual architecture gives PTX, JIT-compiled by the driver.
    let info = e(rt.device_info(env.dev))?;
    let cc: String = info.backend_version.chars().filter(|c| c.is_ascii_digit()).collect();
    let virt = format!("--gpu-architecture=compute_{cc}");
    let p2 = e(rt.create_program(env.ctx, &ProgramSource::CudaC(KERNELS.into()), &virt))?;
    e(rt.create_kernel(p2, "axpy"))?;
    Ok(())
}

fn read_u32(rt: &Runtime, q: QueueId, b: BufferId, n: usize) -> Result<Vec<u32>, Failed> {
    let mut raw = vec![0u8; n * 4];
    e(rt.read(q, b, 0, &mut raw))?;
    Ok(raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

fn bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding; the byte view covers the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

fn build_errors() -> TestResult {
    let env = env();
    let rt = &env.rt;
    if CudaAdapter::nvrtc_available() {
        let bad = ProgramSource::CudaC("extern \"C\" __global__ void k() { undefined_thing(); }".into());
        match rt.create_program(env.ctx, &bad, "") {
            Err(Error::ProgramBuild { log }) => ensure(log.contains("undefined_thing"), format!("NVRTC log: {log}"))?,
            other => return Err(format!("bad CUDA C: {other:?}").into()),
        }
    }
    match rt.create_program(
        env.ctx,
        &ProgramSource::Ptx(".version 7.0\n.target sm_70\nnonsense".into()),
        "",
    ) {
        Err(Error::ProgramBuild { log }) => {
            println!("PTX JIT log: {log}");
            Ok(())
        }
        other => Err(format!("bad PTX: {other:?}").into()),
    }
}

fn ptx_kernel() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let prog = e(rt.create_program(env.ctx, &ProgramSource::Ptx(PTX_ADD_ONE.into()), ""))?;
    let k = e(rt.create_kernel(prog, "add_one"))?;
    let n = 1000u32;
    let init: Vec<u8> = (0..n).flat_map(|i| i.to_le_bytes()).collect();
    let b = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(init.len()), &init))?;
    let ev = e(rt.enqueue_launch(
        env.q,
        k,
        &NdRange::d1(1024),
        &[ArgValue::Buffer(b), ArgValue::scalar(&n)],
        &[],
    ))?;
    e(rt.complete(ev))?;
    let got = read_u32(rt, env.q, b, n as usize)?;
    ensure(
        got.iter().enumerate().all(|(i, &v)| v == i as u32 + 1),
        "PTX kernel ran",
    )
}

fn events_and_profiling() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let pq = e(rt.create_queue(env.ctx, env.dev, &QueueProps { profiling: true }))?;
    let size = 256 << 20;
    let buf = e(rt.create_buffer(env.ctx, &BufferDesc::new(size), None))?;
    let ev = e(rt.enqueue_fill(pq, buf, 0, size, &[1, 2, 3, 4], &[]))?;
    e(rt.wait(&[ev]))?;
    ensure(e(rt.event_status(ev))? == EventStatus::Complete, "complete after wait")?;
    let p = e(rt.event_profiling(ev))?;
    println!("256 MiB fill: {:?}, {} ns", p, p.end - p.start);
    ensure(
        p.queued <= p.submit && p.submit <= p.start && p.start < p.end,
        "ordered timestamps",
    )?;
    ensure(
        p.end - p.start < 1_000_000_000,
        "a fill of 256 MiB takes well under a second",
    )?;
    e(rt.release_event(ev))?;
    ensure(
        matches!(
            rt.event_profiling(e(rt.enqueue_barrier(env.q, &[]))?),
            Err(Error::ProfilingUnavailable(_))
        ),
        "no profiling on a plain queue",
    )?;
    // A wait list across queues: q2 reads only after pq's write.
    let q2 = e(rt.create_queue(env.ctx, env.dev, &QueueProps::default()))?;
    let data = pattern(1 << 20, 42);
    if CudaAdapter::nvrtc_available() {
        let prog = e(rt.create_program(env.ctx, &ProgramSource::CudaC(KERNELS.into()), ""))?;
        let spin = e(rt.create_kernel(prog, "spin"))?;
        let cycles = 50_000_000u64; // tens of ms: the read must wait for it
        let s = e(rt.enqueue_launch(pq, spin, &NdRange::d1(1), &[ArgValue::scalar(&cycles)], &[]))?;
        ensure(
            e(rt.event_status(s))? != EventStatus::Complete,
            "a spinning kernel is still running",
        )?;
        e(rt.release_event(s))?;
    }
    // SAFETY: `data` outlives the wait below.
    let w = e(rt.enqueue_write(
        pq,
        buf,
        0,
        unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) },
        &[],
    ))?;
    let mut back = vec![0u8; data.len()];
    // SAFETY: `back` outlives the wait below.
    let r = e(rt.enqueue_read(q2, buf, 0, unsafe { HostPtr::new(back.as_mut_ptr(), back.len()) }, &[w]))?;
    e(rt.wait(&[r]))?;
    ensure(back == data, "the read waited for the other queue's write")?;
    e(rt.finish(pq))?;
    Ok(())
}

fn connections() -> TestResult {
    let env = env();
    let rt = &env.rt;
    let other = e(rt.create_context(&[env.dev]))?;
    let a = Location::new(env.ctx, env.dev);
    let b = Location::new(other, env.dev);
    ensure(
        e(rt.memory_connection(a, b))? == MemoryConnection::Unified,
        "same device, two contexts",
    )?;
    ensure(
        e(rt.memory_connection(a, a))? == MemoryConnection::Unified,
        "same location",
    )?;
    // Memory of one context is usable on a queue of the other.
    let data = pattern(4096, 3);
    let buf = e(rt.create_buffer_with_data(env.ctx, &BufferDesc::new(4096), &data))?;
    let q_other = e(rt.create_queue(other, env.dev, &QueueProps::default()))?;
    let mut back = vec![0u8; 4096];
    e(rt.read(q_other, buf, 0, &mut back))?;
    ensure(back == data, "a buffer read on a queue of another context")?;
    // ... and usable in place by a kernel there (Unified).
    let prog = e(rt.create_program(other, &ProgramSource::Ptx(PTX_ADD_ONE.into()), ""))?;
    let k = e(rt.create_kernel(prog, "add_one"))?;
    let n = 1024u32;
    let ev = e(rt.enqueue_launch(
        q_other,
        k,
        &NdRange::d1(1024),
        &[ArgValue::Buffer(buf), ArgValue::scalar(&n)],
        &[],
    ))?;
    e(rt.complete(ev))?;
    let got = read_u32(rt, env.q, buf, 1024)?;
    let want: Vec<u32> = data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()).wrapping_add(1))
        .collect();
    ensure(got == want, "a kernel of another context updated the buffer in place")?;
    let devices = rt.all_devices();
    if devices.len() > 1 {
        let ctx2 = e(rt.create_context(&devices[..2]))?;
        let c = e(rt.memory_connection(Location::new(ctx2, devices[0]), Location::new(ctx2, devices[1])))?;
        println!("two devices in one context: {c}");
    } else {
        println!("one GPU: peer connections not exercised");
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let tests: Vec<(&str, fn() -> TestResult)> = vec![
        ("device_info", device_info),
        ("buffers_and_sub_buffers", buffers_and_sub_buffers),
        ("use_host_ptr", use_host_ptr),
        ("fills", fills),
        ("rects", rects),
        ("maps", maps),
        ("usm_kinds", usm_kinds),
        ("shared_usm_advice_and_guard", shared_usm_advice_and_guard),
        ("host_registration", host_registration),
        ("cuda_c_kernels", cuda_c_kernels),
        ("build_errors", build_errors),
        ("ptx_kernel", ptx_kernel),
        ("events_and_profiling", events_and_profiling),
        ("connections", connections),
    ];
    let skip = CudaAdapter::unavailable_reason().or_else(|| (env_devices() == 0).then(|| "no CUDA device".to_owned()));
    if let Some(why) = &skip {
        println!("SKIP all CUDA GPU tests: {why}");
    }
    let trials = tests
        .into_iter()
        .map(|(name, f)| {
            let f = Arc::new(f);
            Trial::test(format!("cuda::{name}"), move || f()).with_ignored_flag(skip.is_some())
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

fn env_devices() -> usize {
    let mut rt = Runtime::new();
    rt.add(CudaAdapter::new()).map(|_| rt.all_devices().len()).unwrap_or(0)
}
