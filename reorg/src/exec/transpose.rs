//! Out-of-place 2-d transposes between strided host memories:
//! `dst[d + a * da + i] = src[s + i * si + a]` for `i < ni`, `a < na`.
//!
//! The destination is written in full lines along `i`; the source is read
//! along `a`. With AVX2 (detected at run time), units of 4, 8 and 16 bytes
//! go through in-register micro-kernels (8x8 of 4 bytes, 4x4 of 8 bytes,
//! 4x4 of 16 bytes with 256-bit shuffles) in cache/TLB-sized tiles, and a
//! destination larger than the caches is written with non-temporal
//! (streaming) stores, so it costs one write instead of a read for
//! ownership plus a write-back. Every other unit size, machine or rim of
//! the matrix (sizes that are not multiples of the kernel) takes the scalar
//! tiled path.

use std::ops::Range;

/// Edge of the square tiles of the scalar path, in units.
const TILE: usize = 16;

/// Edge of a tile of the SIMD path, in bytes along each side (a tile
/// touches at most this many / unit rows of each side: pages for the TLB).
const SIMD_TILE_BYTES: usize = 512;

/// Destination bytes from which the SIMD path streams its stores past the
/// caches (a destination this big would not stay cached anyway).
const STREAM_MIN_BYTES: usize = 4 << 20;

/// Where the transpose reads and writes, in units of the slices.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Transpose {
    /// Source offset of element `(i, a) = (0, 0)`.
    pub s: usize,
    /// Source stride along `i` (the stride along `a` is 1).
    pub si: usize,
    /// Destination offset of element `(0, 0)`.
    pub d: usize,
    /// Destination stride along `a` (the stride along `i` is 1).
    pub da: usize,
    /// Extent along `i` (contiguous in the destination).
    pub ni: usize,
    /// Extent along `a` (contiguous in the source).
    pub na: usize,
}

/// Which kernels the transpose may use (tests force the scalar path and
/// both store kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // reason: the forced kernels are for the tests.
pub(crate) enum Kernels {
    /// SIMD where the machine has it; streaming stores for big
    /// destinations.
    Auto,
    /// Scalar tiles only.
    Scalar,
    /// SIMD with ordinary stores (if the machine has it).
    SimdCached,
    /// SIMD with streaming stores wherever aligned (if the machine has it).
    SimdStream,
}

impl Transpose {
    /// Runs the transpose.
    ///
    /// # Panics
    ///
    /// If an element lies outside `src` or `dst` (a plan bug, not input).
    pub(crate) fn run<T: bytemuck::Pod>(&self, src: &[T], dst: &mut [T], kernels: Kernels) {
        let t = *self;
        if t.ni == 0 || t.na == 0 {
            return;
        }
        // Every access below lies within these two bounds (strides and
        // extents are non-negative), so checking the last elements once
        // covers the unchecked SIMD path.
        assert!(
            t.s + (t.ni - 1) * t.si + (t.na - 1) < src.len(),
            "transpose reads past the source"
        );
        assert!(
            t.d + (t.na - 1) * t.da + (t.ni - 1) < dst.len(),
            "transpose writes past the destination"
        );
        if kernels != Kernels::Scalar && simd::run(t, src, dst, kernels) {
            return;
        }
        scalar(src, dst, t, 0..t.ni, 0..t.na);
    }
}

/// The scalar tiled transpose of the sub-rectangle `is` x `as_`.
fn scalar<T: Copy>(src: &[T], dst: &mut [T], t: Transpose, is: Range<usize>, as_: Range<usize>) {
    for a0 in as_.clone().step_by(TILE) {
        let a1 = (a0 + TILE).min(as_.end);
        for i0 in is.clone().step_by(TILE) {
            let i1 = (i0 + TILE).min(is.end);
            for a in a0..a1 {
                let row = &mut dst[t.d + a * t.da + i0..t.d + a * t.da + i1];
                for (k, x) in row.iter_mut().enumerate() {
                    *x = src[t.s + (i0 + k) * t.si + a];
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    use super::{scalar, Kernels, Transpose, SIMD_TILE_BYTES, STREAM_MIN_BYTES};

    /// A micro-kernel: transposes a block of `KI` x `KA` units from
    /// `src` (rows of stride `si` bytes along `i`) to `dst` (rows of stride
    /// `da` bytes along `a`).
    type Kernel = unsafe fn(*const u8, usize, *mut u8, usize);

    /// Runs `t` with the AVX2 kernels if the machine and the unit size
    /// allow; false if it did nothing.
    pub(super) fn run<T: bytemuck::Pod>(t: Transpose, src: &[T], dst: &mut [T], kernels: Kernels) -> bool {
        let u = std::mem::size_of::<T>();
        if !matches!(u, 4 | 8 | 16) || !is_x86_feature_detected!("avx2") {
            return false;
        }
        // Kernel block: KI units along i (one 64-byte destination line),
        // KA along a.
        let (ki, ka) = match u {
            4 => (16, 8),
            8 => (8, 4),
            _ => (4, 4),
        };
        if t.ni < ki || t.na < ka {
            return false;
        }
        let dbytes = t.na * t.ni * u;
        let stream = match kernels {
            Kernels::SimdStream => true,
            Kernels::SimdCached | Kernels::Scalar => false,
            Kernels::Auto => dbytes >= STREAM_MIN_BYTES,
        };
        let dbase = dst.as_mut_ptr() as usize + t.d * u;
        // Streaming stores need every stored 32 bytes aligned: all rows
        // alike (row stride a multiple of 32 bytes), the first peeled to
        // a 64-byte line where units allow.
        let stream = stream && (t.da * u) % 32 == 0 && dbase % u == 0;
        let peel = if stream {
            let mis = dbase % 64;
            let p = if mis == 0 { 0 } else { (64 - mis) / u };
            if (dbase + p * u) % 32 != 0 {
                return false;
            }
            p
        } else {
            0
        };
        if peel + ki > t.ni {
            return false;
        }
        let i_hi = peel + (t.ni - peel) / ki * ki;
        let a_hi = t.na / ka * ka;
        let kernel: Kernel = match (u, stream) {
            (4, false) => k4::<false>,
            (4, true) => k4::<true>,
            (8, false) => k8::<false>,
            (8, true) => k8::<true>,
            (_, false) => k16::<false>,
            (_, true) => k16::<true>,
        };
        let (bi, ba) = (SIMD_TILE_BYTES / u, SIMD_TILE_BYTES / u);
        let (sp, dp) = (src.as_ptr().cast::<u8>(), dst.as_mut_ptr().cast::<u8>());
        let (sib, dab) = (t.si * u, t.da * u);
        for a0 in (0..a_hi).step_by(ba) {
            let a1 = (a0 + ba).min(a_hi);
            for i0 in (peel..i_hi).step_by(bi) {
                let i1 = (i0 + bi).min(i_hi);
                for i in (i0..i1).step_by(ki) {
                    for a in (a0..a1).step_by(ka) {
                        // SAFETY: AVX2 was detected above. The block reads
                        // source units (i..i + ki, a..a + ka) and writes
                        // destination units (a..a + ka, i..i + ki), all
                        // within i < ni and a < na, which `Transpose::run`
                        // checked lie inside `src` and `dst`; streaming
                        // stores are chosen only when every destination
                        // row from `peel` on is 32-byte aligned.
                        unsafe {
                            kernel(
                                sp.add((t.s + i * t.si + a) * u),
                                sib,
                                dp.add((t.d + a * t.da + i) * u),
                                dab,
                            )
                        };
                    }
                }
            }
        }
        if stream {
            // SAFETY: SSE2 is part of x86_64; the fence orders the
            // streaming stores before whatever the caller does next.
            unsafe { _mm_sfence() };
        }
        scalar(src, dst, t, 0..peel, 0..t.na);
        scalar(src, dst, t, i_hi..t.ni, 0..t.na);
        scalar(src, dst, t, peel..i_hi, a_hi..t.na);
        true
    }

    /// Stores 32 bytes, streaming (aligned) or not (unaligned).
    ///
    /// # Safety
    ///
    /// `p` is valid for writes of 32 bytes, 32-byte aligned when `NT`; AVX2
    /// is available.
    #[inline(always)]
    unsafe fn store<const NT: bool>(p: *mut u8, v: __m256i) {
        if NT {
            // SAFETY: the caller passes a 32-byte aligned, writable address.
            unsafe { _mm256_stream_si256(p.cast(), v) }
        } else {
            // SAFETY: the caller passes 32 writable bytes.
            unsafe { _mm256_storeu_si256(p.cast(), v) }
        }
    }

    /// Loads 32 bytes (unaligned).
    ///
    /// # Safety
    ///
    /// `p` is valid for reads of 32 bytes; AVX2 is available.
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256i {
        // SAFETY: the caller passes 32 readable bytes.
        unsafe { _mm256_loadu_si256(p.cast()) }
    }

    /// 4x4 transpose of 64-bit lanes.
    #[inline(always)]
    fn t4x4_64(r: [__m256i; 4]) -> [__m256i; 4] {
        // SAFETY: register-only AVX2 shuffles; callers are compiled with
        // AVX2 enabled and run only where it was detected.
        unsafe {
            let t0 = _mm256_unpacklo_epi64(r[0], r[1]);
            let t1 = _mm256_unpackhi_epi64(r[0], r[1]);
            let t2 = _mm256_unpacklo_epi64(r[2], r[3]);
            let t3 = _mm256_unpackhi_epi64(r[2], r[3]);
            [
                _mm256_permute2x128_si256::<0x20>(t0, t2),
                _mm256_permute2x128_si256::<0x20>(t1, t3),
                _mm256_permute2x128_si256::<0x31>(t0, t2),
                _mm256_permute2x128_si256::<0x31>(t1, t3),
            ]
        }
    }

    /// 8-byte units: 8 (i) x 4 (a) -> each of 4 destination rows gets 64
    /// bytes (two 4x4 transposes side by side).
    ///
    /// # Safety
    ///
    /// AVX2 is available; 8 source rows of 32 readable bytes at stride
    /// `si` from `s`, 4 destination rows of 64 writable bytes at stride `da`
    /// from `d` (32-byte aligned when `NT`), not overlapping the source.
    #[target_feature(enable = "avx2")]
    unsafe fn k8<const NT: bool>(s: *const u8, si: usize, d: *mut u8, da: usize) {
        // SAFETY: the caller guarantees 8 source rows of 32 bytes at
        // stride `si` and 4 destination rows of 64 bytes at stride `da`
        // (32-byte aligned if NT).
        unsafe {
            let lo = t4x4_64([load(s), load(s.add(si)), load(s.add(2 * si)), load(s.add(3 * si))]);
            let hi = t4x4_64([
                load(s.add(4 * si)),
                load(s.add(5 * si)),
                load(s.add(6 * si)),
                load(s.add(7 * si)),
            ]);
            for k in 0..4 {
                let row = d.add(k * da);
                store::<NT>(row, lo[k]);
                store::<NT>(row.add(32), hi[k]);
            }
        }
    }

    /// 8x8 transpose of 32-bit lanes.
    #[inline(always)]
    fn t8x8_32(r: [__m256i; 8]) -> [__m256i; 8] {
        // SAFETY: register-only AVX2 shuffles, as in `t4x4_64`.
        unsafe {
            let a0 = _mm256_unpacklo_epi32(r[0], r[1]);
            let a1 = _mm256_unpackhi_epi32(r[0], r[1]);
            let a2 = _mm256_unpacklo_epi32(r[2], r[3]);
            let a3 = _mm256_unpackhi_epi32(r[2], r[3]);
            let a4 = _mm256_unpacklo_epi32(r[4], r[5]);
            let a5 = _mm256_unpackhi_epi32(r[4], r[5]);
            let a6 = _mm256_unpacklo_epi32(r[6], r[7]);
            let a7 = _mm256_unpackhi_epi32(r[6], r[7]);
            let b0 = _mm256_unpacklo_epi64(a0, a2);
            let b1 = _mm256_unpackhi_epi64(a0, a2);
            let b2 = _mm256_unpacklo_epi64(a1, a3);
            let b3 = _mm256_unpackhi_epi64(a1, a3);
            let b4 = _mm256_unpacklo_epi64(a4, a6);
            let b5 = _mm256_unpackhi_epi64(a4, a6);
            let b6 = _mm256_unpacklo_epi64(a5, a7);
            let b7 = _mm256_unpackhi_epi64(a5, a7);
            [
                _mm256_permute2x128_si256::<0x20>(b0, b4),
                _mm256_permute2x128_si256::<0x20>(b1, b5),
                _mm256_permute2x128_si256::<0x20>(b2, b6),
                _mm256_permute2x128_si256::<0x20>(b3, b7),
                _mm256_permute2x128_si256::<0x31>(b0, b4),
                _mm256_permute2x128_si256::<0x31>(b1, b5),
                _mm256_permute2x128_si256::<0x31>(b2, b6),
                _mm256_permute2x128_si256::<0x31>(b3, b7),
            ]
        }
    }

    /// 4-byte units: 16 (i) x 8 (a) -> each of 8 destination rows gets 64
    /// bytes (two 8x8 transposes side by side).
    ///
    /// # Safety
    ///
    /// AVX2 is available; 16 source rows of 32 readable bytes at stride
    /// `si`, 8 destination rows of 64 writable bytes at stride `da` (32-byte
    /// aligned when `NT`), not overlapping the source.
    #[target_feature(enable = "avx2")]
    unsafe fn k4<const NT: bool>(s: *const u8, si: usize, d: *mut u8, da: usize) {
        // SAFETY: the caller guarantees 16 source rows of 32 bytes at
        // stride `si` and 8 destination rows of 64 bytes at stride `da`
        // (32-byte aligned if NT).
        unsafe {
            for h in 0..2 {
                let b = s.add(8 * h * si);
                let r = t8x8_32(std::array::from_fn(|k| load(b.add(k * si))));
                for (k, v) in r.into_iter().enumerate() {
                    store::<NT>(d.add(k * da + 32 * h), v);
                }
            }
        }
    }

    /// 16-byte units: 4 (i) x 4 (a) -> each of 4 destination rows gets 64
    /// bytes, moving 128-bit halves.
    ///
    /// # Safety
    ///
    /// AVX2 is available; 4 source rows of 64 readable bytes at stride
    /// `si`, 4 destination rows of 64 writable bytes at stride `da` (32-byte
    /// aligned when `NT`), not overlapping the source.
    #[target_feature(enable = "avx2")]
    unsafe fn k16<const NT: bool>(s: *const u8, si: usize, d: *mut u8, da: usize) {
        // SAFETY: the caller guarantees 4 source rows of 64 bytes at
        // stride `si` and 4 destination rows of 64 bytes at stride `da`
        // (32-byte aligned if NT).
        unsafe {
            // Row k of the source: units a0 a1 (half 0) and a2 a3 (half 1).
            let half = |h: usize| -> [__m256i; 4] { std::array::from_fn(|k| load(s.add(k * si + 32 * h))) };
            for (h, r) in [half(0), half(1)].into_iter().enumerate() {
                // Destination rows 2h and 2h + 1: units from source rows
                // 0, 1 (first 32 bytes) and 2, 3 (second 32 bytes).
                let e01 = _mm256_permute2x128_si256::<0x20>(r[0], r[1]);
                let o01 = _mm256_permute2x128_si256::<0x31>(r[0], r[1]);
                let e23 = _mm256_permute2x128_si256::<0x20>(r[2], r[3]);
                let o23 = _mm256_permute2x128_si256::<0x31>(r[2], r[3]);
                let (de, dodd) = (d.add(2 * h * da), d.add((2 * h + 1) * da));
                store::<NT>(de, e01);
                store::<NT>(de.add(32), e23);
                store::<NT>(dodd, o01);
                store::<NT>(dodd.add(32), o23);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod simd {
    use super::{Kernels, Transpose};

    /// No SIMD kernels off x86_64.
    pub(super) fn run<T: bytemuck::Pod>(_: Transpose, _: &[T], _: &mut [T], _: Kernels) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Kernels; 4] = [Kernels::Auto, Kernels::Scalar, Kernels::SimdCached, Kernels::SimdStream];

    /// Transposes a pattern with every kernel choice, at every offset of
    /// the destination's first unit within a 64-byte line (streaming-store
    /// alignment and peeling), and checks every unit of `dst`: the
    /// transposed box, and untouched padding around it.
    fn check<T: bytemuck::Pod + PartialEq + std::fmt::Debug>(
        mk: impl Fn(usize) -> T,
        ni: usize,
        na: usize,
        pad: usize,
    ) {
        let u = std::mem::size_of::<T>();
        let (si, da) = (na + pad, ni + pad);
        let s = 3;
        let src: Vec<T> = (0..s + ni * si + 1).map(&mk).collect();
        let fill = mk(usize::MAX / 2);
        for kernels in ALL {
            for d in 0..=64 / u {
                let mut dst = vec![fill; d + na * da + 1];
                Transpose { s, si, d, da, ni, na }.run(&src, &mut dst, kernels);
                for (k, x) in dst.iter().enumerate() {
                    let inside = k >= d && (k - d) % da < ni && (k - d) / da < na;
                    let want = if inside {
                        let (a, i) = ((k - d) / da, (k - d) % da);
                        src[s + i * si + a]
                    } else {
                        fill
                    };
                    assert_eq!(*x, want, "{kernels:?} unit {u} ni {ni} na {na} pad {pad} d {d} at {k}");
                }
            }
        }
    }

    const SIZES: [(usize, usize); 12] = [
        (1, 1),
        (1, 9),
        (9, 1),
        (3, 5),
        (8, 4),
        (16, 8),
        (4, 4),
        (17, 9),
        (33, 31),
        (64, 64),
        (100, 70),
        (130, 257),
    ];

    #[test]
    fn every_unit_size_shape_and_stride() {
        for (ni, na) in SIZES {
            for pad in [0, 1, 4, 8] {
                check(|k| k as u8, ni, na, pad);
                check(|k| k as u16, ni, na, pad);
                check(|k| k as u32, ni, na, pad);
                check(|k| k as u64, ni, na, pad);
                check(|k| k as u128 | (!(k as u128) << 64), ni, na, pad);
                // Byte arrays: the unaligned views `with_units` falls back to.
                check(|k| (k as u16).to_le_bytes(), ni, na, pad);
                check(|k| (k as u32).to_le_bytes(), ni, na, pad);
                check(|k| (k as u64).to_le_bytes(), ni, na, pad);
                check(|k| (k as u128 | (!(k as u128) << 64)).to_le_bytes(), ni, na, pad);
            }
        }
    }

    #[test]
    fn big_enough_to_stream_by_default() {
        // 8-byte units, 4 MiB of destination: `Auto` picks streaming stores.
        let (ni, na) = (1024 + 3, 512 + 1);
        check(|k| k as u64, ni, na, 5);
    }

    #[test]
    fn empty_is_nothing() {
        let src = [1u64; 4];
        let mut dst = [0u64; 4];
        for kernels in ALL {
            let t = Transpose {
                s: 0,
                si: 1,
                d: 0,
                da: 1,
                ni: 0,
                na: 3,
            };
            t.run(&src, &mut dst, kernels);
            Transpose { ni: 3, na: 0, ..t }.run(&src, &mut dst, kernels);
        }
        assert_eq!(dst, [0; 4]);
    }
}
