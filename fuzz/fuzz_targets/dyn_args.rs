//! The dyn layer's argument checks, through `Runtime`, on native and sim:
//! random reads, writes, copies, rect copies, fills and maps with random
//! offsets, sizes, pitches, patterns and host spans (each host span its
//! own exact-size allocation, so AddressSanitizer sees any byte outside
//! it), on random queues and buffers (of the same or another adapter). A
//! call either fails with a typed error and changes nothing, or succeeds
//! and does exactly what the model says; nothing panics.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ur_api::{BufferDesc, BufferId, HostPtr, MapFlags, QueueId, QueueProps, RectCopy, RectSide, Runtime};

const SIZE: usize = 512;

#[derive(Debug, Arbitrary)]
enum Op {
    Read {
        q: u8,
        b: u8,
        off: u16,
        len: u16,
    },
    Write {
        q: u8,
        b: u8,
        off: u16,
        len: u16,
        v: u8,
    },
    Copy {
        q: u8,
        s: u8,
        d: u8,
        so: u16,
        dof: u16,
        len: u16,
    },
    Fill {
        q: u8,
        b: u8,
        off: u16,
        len: u16,
        pat: Vec<u8>,
    },
    CopyRect {
        q: u8,
        s: u8,
        d: u8,
        rect: [u16; 11],
    },
    ReadRect {
        q: u8,
        b: u8,
        rect: [u16; 11],
        host: u16,
    },
    Map {
        q: u8,
        b: u8,
        off: u16,
        len: u16,
    },
    SubBuffer {
        b: u8,
        off: u16,
        len: u16,
    },
}

struct World {
    rt: Runtime,
    queues: Vec<QueueId>,
    /// (buffer, queue index of its device)
    buffers: Vec<(BufferId, usize)>,
}

fn world() -> World {
    let mut rt = Runtime::new();
    rt.add(ur_native::NativeAdapter::new()).unwrap();
    rt.add(ur_sim::SimAdapter::new(ur_sim::Topology::two_devices_peer()))
        .unwrap();
    let mut queues = Vec::new();
    let mut buffers = Vec::new();
    for p in rt.platforms() {
        let devs = rt.devices(p).unwrap();
        let ctx = rt.create_context(&devs).unwrap();
        for d in devs {
            let q = rt.create_queue(ctx, d, &QueueProps::default()).unwrap();
            for _ in 0..2 {
                let b = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(d), None).unwrap();
                buffers.push((b, queues.len()));
            }
            queues.push(q);
        }
    }
    World { rt, queues, buffers }
}

fn side(v: &[u16]) -> RectSide {
    RectSide {
        origin: [v[0] as usize % 600, v[1] as usize % 40, v[2] as usize % 8],
        row_pitch: v[3] as usize % 600,
        slice_pitch: v[4] as usize % 2000,
    }
}

fn rect(v: &[u16; 11]) -> RectCopy {
    RectCopy {
        src: side(&v[0..5]),
        dst: side(&v[5..10]),
        extent: [
            v[10] as usize % 64,
            (v[10] >> 6) as usize % 8,
            (v[10] >> 9) as usize % 4,
        ],
    }
}

/// The rect with zero pitches made packed, as the dyn layer documents.
fn packed(r: &RectCopy) -> RectCopy {
    let fix = |s: RectSide| {
        let row = if s.row_pitch == 0 { r.extent[0] } else { s.row_pitch };
        let slice = if s.slice_pitch == 0 {
            row * r.extent[1]
        } else {
            s.slice_pitch
        };
        RectSide {
            origin: s.origin,
            row_pitch: row,
            slice_pitch: slice,
        }
    };
    RectCopy {
        src: fix(r.src),
        dst: fix(r.dst),
        extent: r.extent,
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let w = ur_fuzz::once!(World, world());
    let rt = &w.rt;
    let nb = w.buffers.len();
    let nq = w.queues.len();
    // Reset every buffer and its model.
    let mut model: Vec<Vec<u8>> = vec![vec![0u8; SIZE]; nb];
    for (i, &(b, qi)) in w.buffers.iter().enumerate() {
        rt.write(w.queues[qi], b, 0, &model[i]).unwrap();
    }
    for op in ops.into_iter().take(16) {
        match op {
            Op::Read { q, b, off, len } => {
                let (bi, qi) = (b as usize % nb, q as usize % nq);
                let (off, len) = (off as usize % 700, len as usize % 700);
                let mut host = vec![0xEEu8; len];
                if rt.read(w.queues[qi], w.buffers[bi].0, off, &mut host).is_ok() {
                    assert_eq!(host, model[bi][off..off + len], "read {off}+{len}");
                }
            }
            Op::Write { q, b, off, len, v } => {
                let (bi, qi) = (b as usize % nb, q as usize % nq);
                let (off, len) = (off as usize % 700, len as usize % 700);
                let host = vec![v; len];
                if rt.write(w.queues[qi], w.buffers[bi].0, off, &host).is_ok() {
                    model[bi][off..off + len].copy_from_slice(&host);
                }
            }
            Op::Copy { q, s, d, so, dof, len } => {
                let (si, di, qi) = (s as usize % nb, d as usize % nb, q as usize % nq);
                let (so, dof, len) = (so as usize % 700, dof as usize % 700, len as usize % 700);
                if let Ok(e) = rt.enqueue_copy(w.queues[qi], w.buffers[si].0, so, w.buffers[di].0, dof, len, &[]) {
                    rt.complete(e).unwrap();
                    let src = model[si][so..so + len].to_vec();
                    model[di][dof..dof + len].copy_from_slice(&src);
                }
            }
            Op::Fill { q, b, off, len, pat } => {
                let (bi, qi) = (b as usize % nb, q as usize % nq);
                let (off, len) = (off as usize % 700, len as usize % 700);
                let pat: Vec<u8> = pat.into_iter().take(130).collect();
                if let Ok(e) = rt.enqueue_fill(w.queues[qi], w.buffers[bi].0, off, len, &pat, &[]) {
                    rt.complete(e).unwrap();
                    for (i, x) in model[bi][off..off + len].iter_mut().enumerate() {
                        *x = pat[i % pat.len()];
                    }
                }
            }
            Op::CopyRect { q, s, d, rect: r } => {
                let (si, di, qi) = (s as usize % nb, d as usize % nb, q as usize % nq);
                let r = rect(&r);
                if let Ok(e) = rt.enqueue_copy_rect(w.queues[qi], w.buffers[si].0, w.buffers[di].0, &r, &[]) {
                    rt.complete(e).unwrap();
                    let before = model.clone();
                    packed(&r).for_each_row(|so, dof, n| {
                        model[di][dof..dof + n].copy_from_slice(&before[si][so..so + n]);
                    });
                }
            }
            Op::ReadRect { q, b, rect: r, host } => {
                let (bi, qi) = (b as usize % nb, q as usize % nq);
                let r = rect(&r);
                let mut dst = vec![0xEEu8; host as usize % 3000];
                let expect_from = dst.clone();
                if rt.read_rect(w.queues[qi], w.buffers[bi].0, &r, &mut dst).is_ok() {
                    let mut want = expect_from;
                    packed(&r).for_each_row(|so, dof, n| want[dof..dof + n].copy_from_slice(&model[bi][so..so + n]));
                    assert_eq!(dst, want, "read_rect {r:?}");
                }
            }
            Op::Map { q, b, off, len } => {
                let (bi, qi) = (b as usize % nb, q as usize % nq);
                let (off, len) = (off as usize % 700, len as usize % 700);
                let queue = w.queues[qi];
                if let Ok((e, p)) = rt.enqueue_map(queue, w.buffers[bi].0, MapFlags::READ, off, len, &[]) {
                    rt.complete(e).unwrap();
                    assert_eq!(p.len(), len);
                    // SAFETY: a completed READ mapping of `len` bytes is readable until unmapped.
                    let seen = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) }.to_vec();
                    assert_eq!(seen, model[bi][off..off + len], "map {off}+{len}");
                    let e = rt.enqueue_unmap(queue, w.buffers[bi].0, p, &[]).unwrap();
                    rt.complete(e).unwrap();
                }
                // A made-up mapping is refused.
                let mut fake = [0u8; 8];
                // SAFETY: `fake` outlives the call, which must refuse it.
                let fake = unsafe { HostPtr::new(fake.as_mut_ptr(), 8) };
                assert!(rt.enqueue_unmap(queue, w.buffers[bi].0, fake, &[]).is_err());
            }
            Op::SubBuffer { b, off, len } => {
                let bi = b as usize % nb;
                let (off, len) = (off as usize % 700, len as usize % 700);
                if let Ok(sub) = rt.create_sub_buffer(w.buffers[bi].0, off, len) {
                    let info = rt.buffer_info(sub).unwrap();
                    assert_eq!(info.size, len);
                    let qi = w.buffers[bi].1;
                    let mut host = vec![0u8; len];
                    rt.read(w.queues[qi], sub, 0, &mut host).unwrap();
                    assert_eq!(host, model[bi][off..off + len]);
                    rt.release_buffer(sub).unwrap();
                }
            }
        }
    }
});
