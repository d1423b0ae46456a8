//! Rectangular copies: buffer-to-buffer, reads and writes, 2-D and 3-D,
//! explicit and packed pitches, checked against a host reference.

use ur_api::{RectCopy, RectSide};

use crate::{bytes, check_bytes, DeviceEnv, TestResult};

cases!(
    "rect",
    positive: [async_rects_with_wait_lists, copy_rect_2d, copy_rect_3d, rect_3d_pitch_multiples, read_rect_2d, read_rect_3d, write_rect_3d, packed_default_pitches, copy_rect_within_one_buffer],
    negative: []
);

/// Host reference: copies the box of `r` from `src` into `dst`; zero pitches
/// mean packed.
pub(crate) fn reference(src: &[u8], dst: &mut [u8], r: &RectCopy) {
    let [w, h, d] = r.extent;
    let pitches = |s: &RectSide| {
        let rp = if s.row_pitch == 0 { w } else { s.row_pitch };
        let sp = if s.slice_pitch == 0 { rp * h } else { s.slice_pitch };
        (rp, sp)
    };
    let (srp, ssp) = pitches(&r.src);
    let (drp, dsp) = pitches(&r.dst);
    for z in 0..d {
        for y in 0..h {
            let s = (r.src.origin[2] + z) * ssp + (r.src.origin[1] + y) * srp + r.src.origin[0];
            let t = (r.dst.origin[2] + z) * dsp + (r.dst.origin[1] + y) * drp + r.dst.origin[0];
            dst[t..t + w].copy_from_slice(&src[s..s + w]);
        }
    }
}

fn check_copy_rect(env: &DeviceEnv<'_>, r: RectCopy, src_len: usize, dst_len: usize) -> TestResult {
    let (ctx, q) = env.setup()?;
    let src = bytes(src_len, 70);
    let init = bytes(dst_len, 71);
    let a = env.buffer_with(ctx, &src)?;
    let b = env.buffer_with(ctx, &init)?;
    env.rt.complete(env.rt.enqueue_copy_rect(q, a, b, &r, &[])?)?;
    let mut want = init;
    reference(&src, &mut want, &r);
    check_bytes(&format!("copy_rect {r:?}"), &env.read_all(q, b, dst_len)?, &want)
}

fn copy_rect_2d(env: &DeviceEnv<'_>) -> TestResult {
    let r = RectCopy {
        src: RectSide::new([3, 2, 0], 40, 0),
        dst: RectSide::new([5, 1, 0], 64, 0),
        extent: [17, 9, 1],
    };
    check_copy_rect(env, r, 40 * 12, 64 * 11)
}

fn copy_rect_3d(env: &DeviceEnv<'_>) -> TestResult {
    let r = RectCopy {
        src: RectSide::new([1, 2, 1], 24, 24 * 8),
        dst: RectSide::new([4, 0, 2], 32, 32 * 6 + 5),
        extent: [13, 5, 3],
    };
    check_copy_rect(env, r, 24 * 8 * 4, (32 * 6 + 5) * 5)
}

/// 3-D boxes whose slice pitches are multiples of their row pitches (the
/// layout every backend accepts), through copy, read and write.
fn rect_3d_pitch_multiples(env: &DeviceEnv<'_>) -> TestResult {
    let r = RectCopy {
        src: RectSide::new([2, 1, 1], 20, 20 * 6),
        dst: RectSide::new([3, 2, 0], 28, 28 * 7),
        extent: [15, 4, 3],
    };
    check_copy_rect(env, r, 20 * 6 * 4, 28 * 7 * 3)?;
    read_rect(env, r, 20 * 6 * 4, 28 * 7 * 3)?;
    let (ctx, q) = env.setup()?;
    let host = bytes(20 * 6 * 4, 77);
    let init = bytes(28 * 7 * 3, 78);
    let b = env.buffer_with(ctx, &init)?;
    env.rt.write_rect(q, b, &r, &host)?;
    let mut want = init;
    reference(&host, &mut want, &r);
    check_bytes(
        "write_rect with pitch multiples",
        &env.read_all(q, b, want.len())?,
        &want,
    )
}

/// `enqueue_write_rect` then `enqueue_read_rect` on two queues, ordered only
/// by a wait list.
fn async_rects_with_wait_lists(env: &DeviceEnv<'_>) -> TestResult {
    let ctx = env.context()?;
    let (q1, q2) = (env.queue(ctx)?, env.queue(ctx)?);
    let r = RectCopy {
        src: RectSide::new([0, 0, 0], 10, 0),
        dst: RectSide::new([4, 3, 0], 32, 0),
        extent: [10, 6, 1],
    };
    let back = RectCopy {
        src: r.dst,
        dst: r.src,
        extent: r.extent,
    };
    let host = bytes(60, 79);
    let b = env.buffer_with(ctx, &bytes(32 * 10, 80))?;
    let mut out = vec![0u8; 60];
    // SAFETY: `host` and `out` outlive both commands, waited for below; only
    // the read touches `out`.
    let (src, dst) = unsafe {
        (
            ur_api::HostPtr::new(host.as_ptr().cast_mut(), host.len()),
            ur_api::HostPtr::new(out.as_mut_ptr(), out.len()),
        )
    };
    let w = env.track(env.rt.enqueue_write_rect(q1, b, &r, src, &[])?);
    let rd = env.track(env.rt.enqueue_read_rect(q2, b, &back, dst, &[w])?);
    env.rt.wait(&[rd])?;
    check_bytes("rect written then read back", &out, &host)
}

fn read_rect_2d(env: &DeviceEnv<'_>) -> TestResult {
    read_rect(
        env,
        RectCopy {
            src: RectSide::new([7, 3, 0], 50, 0),
            dst: RectSide::new([2, 1, 0], 30, 0),
            extent: [20, 6, 1],
        },
        50 * 10,
        30 * 8,
    )
}

fn read_rect_3d(env: &DeviceEnv<'_>) -> TestResult {
    read_rect(
        env,
        RectCopy {
            src: RectSide::new([2, 1, 1], 16, 16 * 6),
            dst: RectSide::new([0, 0, 0], 12, 12 * 5 + 3),
            extent: [9, 4, 3],
        },
        16 * 6 * 4,
        (12 * 5 + 3) * 3,
    )
}

fn read_rect(env: &DeviceEnv<'_>, r: RectCopy, buf_len: usize, host_len: usize) -> TestResult {
    let (ctx, q) = env.setup()?;
    let src = bytes(buf_len, 72);
    let b = env.buffer_with(ctx, &src)?;
    let mut host = bytes(host_len, 73);
    let mut want = host.clone();
    env.rt.read_rect(q, b, &r, &mut host)?;
    reference(&src, &mut want, &r);
    check_bytes(&format!("read_rect {r:?}"), &host, &want)
}

fn write_rect_3d(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    let r = RectCopy {
        src: RectSide::new([1, 1, 0], 20, 20 * 4),
        dst: RectSide::new([3, 2, 1], 36, 36 * 7),
        extent: [11, 3, 2],
    };
    let host = bytes(20 * 4 * 2, 74);
    let init = bytes(36 * 7 * 3, 75);
    let b = env.buffer_with(ctx, &init)?;
    env.rt.write_rect(q, b, &r, &host)?;
    let mut want = init;
    reference(&host, &mut want, &r);
    check_bytes("write_rect", &env.read_all(q, b, want.len())?, &want)
}

fn packed_default_pitches(env: &DeviceEnv<'_>) -> TestResult {
    let r = RectCopy {
        extent: [8, 4, 2],
        ..Default::default()
    };
    check_copy_rect(env, r, 64, 64)?;
    let r = RectCopy {
        src: RectSide::new([0, 1, 0], 0, 0),
        dst: RectSide::new([0, 0, 1], 0, 0),
        extent: [6, 2, 1],
    };
    check_copy_rect(env, r, 6 * 3, 6 * 2 * 2)
}

fn copy_rect_within_one_buffer(env: &DeviceEnv<'_>) -> TestResult {
    let (ctx, q) = env.setup()?;
    // A 16x16 image; copy the top-left 8x8 block to the bottom-right.
    let r = RectCopy {
        src: RectSide::new([0, 0, 0], 16, 0),
        dst: RectSide::new([8, 8, 0], 16, 0),
        extent: [8, 8, 1],
    };
    let init = bytes(256, 76);
    let b = env.buffer_with(ctx, &init)?;
    env.rt.complete(env.rt.enqueue_copy_rect(q, b, b, &r, &[])?)?;
    let mut want = init.clone();
    reference(&init, &mut want, &r);
    check_bytes("block moved inside one buffer", &env.read_all(q, b, 256)?, &want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_copies_boxes() {
        let src: Vec<u8> = (0..16).collect();
        let mut dst = vec![0u8; 16];
        let r = RectCopy {
            src: RectSide::new([1, 1, 0], 4, 0),
            dst: RectSide::new([0, 0, 0], 2, 0),
            extent: [2, 2, 1],
        };
        reference(&src, &mut dst, &r);
        assert_eq!(&dst[..4], &[5, 6, 9, 10]);
    }
}
