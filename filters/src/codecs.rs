//! Host implementations of HDF5's filters: deflate (1), shuffle (2),
//! Fletcher-32 (3) and the LZ4 plugin (32004), each bit-exact with HDF5's
//! stored format.

use std::io::Write as _;

use crate::error::FilterError;
use crate::filter::{Direction, Filter, FILTER_DEFLATE, FILTER_FLETCHER32, FILTER_LZ4, FILTER_SHUFFLE};
use crate::kind::KindDecl;

fn corrupt(filter: &'static str, reason: impl Into<String>) -> FilterError {
    FilterError::Corrupt {
        filter,
        reason: reason.into(),
    }
}

/// HDF5 filter 1: a zlib stream (header, deflate data, Adler-32), as zlib's
/// `compress2` writes it. Uses `flate2` on the zlib-rs backend.
#[derive(Debug, Clone, Copy)]
pub struct Deflate {
    level: u32,
}

impl Deflate {
    /// With this compression level (0-9, HDF5's `cd_values[0]`).
    pub fn new(level: u32) -> Self {
        Deflate { level: level.min(9) }
    }
}

impl Filter for Deflate {
    fn id(&self) -> u32 {
        FILTER_DEFLATE
    }
    fn name(&self) -> &'static str {
        "deflate"
    }
    fn kinds(&self, _: Direction) -> KindDecl {
        KindDecl::host_codec()
    }
    fn keeps_size(&self) -> bool {
        false
    }
    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, FilterError> {
        let mut e = flate2::write::ZlibEncoder::new(
            Vec::with_capacity(input.len() / 2),
            flate2::Compression::new(self.level),
        );
        e.write_all(&input).map_err(|e| corrupt("deflate", e.to_string()))?;
        e.finish().map_err(|e| corrupt("deflate", e.to_string()))
    }
    fn decode(&self, input: Vec<u8>, raw_size: usize) -> Result<Vec<u8>, FilterError> {
        // One byte of room more than the chunk holds: filling it means the
        // stream inflates past the chunk, which is corruption too.
        let mut out = Vec::with_capacity(raw_size + 1);
        let mut d = flate2::Decompress::new(true);
        let status = d
            .decompress_vec(&input, &mut out, flate2::FlushDecompress::Finish)
            .map_err(|e| corrupt("deflate", e.to_string()))?;
        if out.len() > raw_size {
            return Err(corrupt(
                "deflate",
                format!("inflates past the chunk's {raw_size} bytes"),
            ));
        }
        if status != flate2::Status::StreamEnd {
            return Err(corrupt(
                "deflate",
                format!(
                    "stream ends early ({} of {} input bytes, {} bytes out)",
                    d.total_in(),
                    input.len(),
                    out.len()
                ),
            ));
        }
        Ok(out)
    }
}

/// HDF5 filter 2: byte `j` of element `i` goes to `j * n + i`; bytes past the
/// last whole element are kept as they are.
#[derive(Debug, Clone, Copy)]
pub struct Shuffle {
    size: usize,
}

impl Shuffle {
    /// For elements of `size` bytes (HDF5's `cd_values[0]`).
    pub fn new(size: usize) -> Self {
        Shuffle { size }
    }
}

/// Shuffles `src` into `dst` (same length) for elements of `size` bytes.
pub fn shuffle_into(src: &[u8], dst: &mut [u8], size: usize) {
    let n = if size > 1 { src.len() / size } else { 0 };
    if n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    for (j, plane) in dst[..n * size].chunks_exact_mut(n).enumerate() {
        for (i, b) in plane.iter_mut().enumerate() {
            *b = src[i * size + j];
        }
    }
    dst[n * size..].copy_from_slice(&src[n * size..]);
}

/// Undoes [`shuffle_into`].
pub fn unshuffle_into(src: &[u8], dst: &mut [u8], size: usize) {
    let n = if size > 1 { src.len() / size } else { 0 };
    if n <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    match size {
        2 => unshuffle_fixed::<2>(src, dst, n),
        4 => unshuffle_fixed::<4>(src, dst, n),
        8 => unshuffle_fixed::<8>(src, dst, n),
        _ => {
            for (j, plane) in src[..n * size].chunks_exact(n).enumerate() {
                for (i, b) in plane.iter().enumerate() {
                    dst[i * size + j] = *b;
                }
            }
        }
    }
    dst[n * size..].copy_from_slice(&src[n * size..]);
}

/// [`unshuffle_into`] for `S`-byte elements: one pass over the output,
/// gathering byte `j` of element `i` from plane `j` (no bounds checks in
/// the loop: the planes are exactly `n` long).
fn unshuffle_fixed<const S: usize>(src: &[u8], dst: &mut [u8], n: usize) {
    let planes: [&[u8]; S] = std::array::from_fn(|j| &src[j * n..(j + 1) * n]);
    for (i, out) in dst[..n * S].chunks_exact_mut(S).enumerate() {
        for (o, plane) in out.iter_mut().zip(&planes) {
            *o = plane[i];
        }
    }
}

impl Filter for Shuffle {
    fn id(&self) -> u32 {
        FILTER_SHUFFLE
    }
    fn name(&self) -> &'static str {
        "shuffle"
    }
    fn kinds(&self, _: Direction) -> KindDecl {
        KindDecl::host_codec()
    }
    fn keeps_size(&self) -> bool {
        true
    }
    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, FilterError> {
        let mut out = vec![0; input.len()];
        shuffle_into(&input, &mut out, self.size);
        Ok(out)
    }
    fn decode(&self, input: Vec<u8>, _: usize) -> Result<Vec<u8>, FilterError> {
        let mut out = vec![0; input.len()];
        unshuffle_into(&input, &mut out, self.size);
        Ok(out)
    }
}

/// HDF5's Fletcher-32: over 16-bit words read *big-endian* (the first byte
/// is the high half), an odd last byte as the high half of a word, sums
/// folded every 360 words; result `sum2 << 16 | sum1`.
pub fn fletcher32(data: &[u8]) -> u32 {
    let fold = |s: u32| (s & 0xffff) + (s >> 16);
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.chunks_exact(2);
    let odd = words.remainder().first().copied();
    let words: Vec<&[u8]> = words.collect();
    for block in words.chunks(360) {
        for w in block {
            sum1 += (u32::from(w[0]) << 8) | u32::from(w[1]);
            sum2 += sum1;
        }
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    if let Some(b) = odd {
        sum1 += u32::from(b) << 8;
        sum2 += sum1;
        sum1 = fold(sum1);
        sum2 = fold(sum2);
    }
    sum1 = fold(sum1);
    sum2 = fold(sum2);
    (sum2 << 16) | sum1
}

/// HDF5 filter 3: the data followed by its [`fletcher32`] stored
/// little-endian. Reading also accepts the checksum with the bytes of each
/// 16-bit half swapped (what HDF5 before 1.6.3 wrote on little-endian
/// machines; HDF5 accepts both).
#[derive(Debug, Clone, Copy)]
pub struct Fletcher32;

impl Filter for Fletcher32 {
    fn id(&self) -> u32 {
        FILTER_FLETCHER32
    }
    fn name(&self) -> &'static str {
        "fletcher32"
    }
    fn kinds(&self, _: Direction) -> KindDecl {
        // Checks or appends in place.
        KindDecl::host_in_place()
    }
    fn keeps_size(&self) -> bool {
        false
    }
    fn encode(&self, mut input: Vec<u8>) -> Result<Vec<u8>, FilterError> {
        let sum = fletcher32(&input);
        input.extend_from_slice(&sum.to_le_bytes());
        Ok(input)
    }
    fn decode(&self, mut input: Vec<u8>, _: usize) -> Result<Vec<u8>, FilterError> {
        let Some(data_len) = input.len().checked_sub(4) else {
            return Err(corrupt(
                "fletcher32",
                format!("{} bytes, shorter than the checksum", input.len()),
            ));
        };
        let stored = u32::from_le_bytes(input[data_len..].try_into().expect("4 bytes"));
        let computed = fletcher32(&input[..data_len]);
        let b = computed.to_le_bytes();
        let reversed = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
        if stored != computed && stored != reversed {
            return Err(FilterError::Checksum { stored, computed });
        }
        input.truncate(data_len);
        Ok(input)
    }
}

/// The LZ4 plugin's default block size (1 GiB: one block per chunk).
pub const LZ4_DEFAULT_BLOCK: usize = 1 << 30;

/// HDF5 plugin filter 32004 (`H5Zlz4`): a 12-byte header (the raw size as a
/// big-endian u64, the block size as a big-endian u32), then per block a
/// big-endian u32 compressed size and an LZ4 block; a block whose
/// compressed size equals its raw size is stored raw.
#[derive(Debug, Clone, Copy)]
pub struct Lz4 {
    block: usize,
}

impl Lz4 {
    /// With this block size in bytes (`cd_values[0]`; 0: the default).
    pub fn new(block: usize) -> Self {
        Lz4 {
            block: if block == 0 { LZ4_DEFAULT_BLOCK } else { block },
        }
    }
}

impl Filter for Lz4 {
    fn id(&self) -> u32 {
        FILTER_LZ4
    }
    fn name(&self) -> &'static str {
        "lz4"
    }
    fn kinds(&self, _: Direction) -> KindDecl {
        KindDecl::host_codec()
    }
    fn keeps_size(&self) -> bool {
        false
    }
    fn encode(&self, input: Vec<u8>) -> Result<Vec<u8>, FilterError> {
        let block = self.block.min(input.len()).max(1);
        let mut out = Vec::with_capacity(12 + input.len() / 2);
        out.extend_from_slice(&(input.len() as u64).to_be_bytes());
        out.extend_from_slice(&(block as u32).to_be_bytes());
        for raw in input.chunks(block) {
            let c = lz4_flex::block::compress(raw);
            if c.is_empty() || c.len() >= raw.len() {
                out.extend_from_slice(&(raw.len() as u32).to_be_bytes());
                out.extend_from_slice(raw);
            } else {
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(&c);
            }
        }
        Ok(out)
    }
    fn decode(&self, input: Vec<u8>, raw_size: usize) -> Result<Vec<u8>, FilterError> {
        let be32 = |b: &[u8]| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize;
        if input.len() < 12 {
            return Err(corrupt(
                "lz4",
                format!("{} bytes, shorter than the 12-byte header", input.len()),
            ));
        }
        let total = u64::from_be_bytes(input[..8].try_into().expect("8 bytes"));
        let block = be32(&input[8..12]);
        if total > raw_size as u64 || (block == 0 && total > 0) {
            return Err(corrupt(
                "lz4",
                format!("header says {total} bytes in blocks of {block}, chunk holds {raw_size}"),
            ));
        }
        let total = total as usize;
        let mut out = vec![0u8; total];
        let (mut at, mut done) = (12usize, 0usize);
        while done < total {
            let this = block.min(total - done);
            let Some(size) = input.get(at..at + 4).map(be32) else {
                return Err(corrupt("lz4", format!("block at raw offset {done}: size missing")));
            };
            at += 4;
            let Some(data) = input.get(at..at + size) else {
                return Err(corrupt(
                    "lz4",
                    format!("block at raw offset {done}: {size} bytes, input ends"),
                ));
            };
            let dst = &mut out[done..done + this];
            if size == this {
                dst.copy_from_slice(data);
            } else {
                let n = lz4_flex::block::decompress_into(data, dst)
                    .map_err(|e| corrupt("lz4", format!("block at raw offset {done}: {e}")))?;
                if n != this {
                    return Err(corrupt(
                        "lz4",
                        format!("block at raw offset {done}: {n} bytes, expected {this}"),
                    ));
                }
            }
            at += size;
            done += this;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| ((i * 31) % 251) as u8 ^ ((i / 97) as u8)).collect()
    }

    #[test]
    fn shuffle_matches_the_definition_and_keeps_the_tail() {
        let raw: Vec<u8> = (0..11).collect();
        let s = Shuffle::new(4).encode(raw.clone()).unwrap();
        assert_eq!(s, vec![0, 4, 1, 5, 2, 6, 3, 7, 8, 9, 10]);
        assert_eq!(Shuffle::new(4).decode(s, 11).unwrap(), raw);
    }

    #[test]
    fn unshuffle_fast_paths_match_the_definition() {
        for size in [2usize, 3, 4, 8] {
            let raw = sample(8 * 37 + 5);
            let mut shuffled = vec![0; raw.len()];
            shuffle_into(&raw, &mut shuffled, size);
            let n = raw.len() / size;
            for i in 0..n {
                for j in 0..size {
                    assert_eq!(shuffled[j * n + i], raw[i * size + j]);
                }
            }
            let mut back = vec![0; raw.len()];
            unshuffle_into(&shuffled, &mut back, size);
            assert_eq!(back, raw, "size {size}");
        }
    }

    #[test]
    fn fletcher32_known_values() {
        // Worked by hand: words 0x0102, 0x0304 -> sum1 0x0406, sum2 0x0508.
        assert_eq!(fletcher32(&[1, 2, 3, 4]), 0x0508_0406);
        // Odd length: last byte is the high half of a word: sum1 0x0102 + 0x0300, sum2 0x0102 + 0x0402.
        assert_eq!(fletcher32(&[1, 2, 3]), 0x0504_0402);
        assert_eq!(fletcher32(&[]), 0);
    }

    #[test]
    fn fletcher32_detects_corruption_and_accepts_the_reversed_sum() {
        let f = Fletcher32;
        let data = sample(1000);
        let stored = f.encode(data.clone()).unwrap();
        assert_eq!(f.decode(stored.clone(), 1000).unwrap(), data);
        let mut bad = stored.clone();
        bad[10] ^= 1;
        assert!(matches!(f.decode(bad, 1000), Err(FilterError::Checksum { .. })));
        let sum = fletcher32(&data).to_le_bytes();
        let mut old = data.clone();
        old.extend_from_slice(&[sum[1], sum[0], sum[3], sum[2]]);
        assert_eq!(f.decode(old, 1000).unwrap(), data);
    }

    #[test]
    fn deflate_roundtrip_and_truncation() {
        let d = Deflate::new(4);
        let data = sample(50_000);
        let z = d.encode(data.clone()).unwrap();
        assert_eq!(&z[..1], &[0x78], "zlib header");
        assert_eq!(d.decode(z.clone(), data.len()).unwrap(), data);
        let cut = z[..z.len() / 2].to_vec();
        assert!(matches!(d.decode(cut, data.len()), Err(FilterError::Corrupt { .. })));
        assert!(matches!(d.decode(z, data.len() - 1), Err(FilterError::Corrupt { .. })));
    }

    #[test]
    fn lz4_blocks_header_and_raw_blocks() {
        let l = Lz4::new(1000);
        let mut data = sample(2500);
        data[1000..2000].fill(9); // compressible middle block
        let z = l.encode(data.clone()).unwrap();
        assert_eq!(&z[..8], &2500u64.to_be_bytes());
        assert_eq!(&z[8..12], &1000u32.to_be_bytes());
        assert_eq!(l.decode(z.clone(), 2500).unwrap(), data);
        assert!(matches!(
            l.decode(z[..z.len() - 3].to_vec(), 2500),
            Err(FilterError::Corrupt { .. })
        ));
        // Default block: clamped to the chunk.
        let z = Lz4::new(0).encode(data.clone()).unwrap();
        assert_eq!(&z[8..12], &2500u32.to_be_bytes());
        assert_eq!(Lz4::new(0).decode(z, 2500).unwrap(), data);
    }
}
