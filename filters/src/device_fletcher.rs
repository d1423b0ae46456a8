//! HDF5's Fletcher-32 (filter 3) as OpenCL C kernels: the chunk's checksum
//! is computed on the device, in parallel, and compared there with the one
//! stored after the data; "stripping" it is taking the first `stored - 4`
//! bytes of the same buffer (in place, nothing copied).
//!
//! HDF5's sequential sum (16-bit big-endian words, an odd last byte as the
//! high half of a word, sums folded with end-around carry) equals, for
//! `N` words `w_i`, `sum1 = Σ w_i` and `sum2 = Σ (N - i) w_i` modulo
//! 65535, represented in `1..=65535` unless every word is zero (then 0):
//! folding never makes a non-zero sum zero and never leaves more than
//! 16 bits. So each work-item sums one block of words and a second kernel
//! combines the blocks, weighting each block's `sum1` by the words after it.

use std::sync::Arc;

use ur_api::{
    ArgValue, BufferDesc, BufferId, ContextId, DeviceId, EventId, KernelId, NdRange, ProgramId, ProgramSource, QueueId,
    Runtime,
};

use crate::error::FilterError;
use crate::filter::FILTER_FLETCHER32;
use crate::kind::KindDecl;

/// Words summed by one work-item.
pub const FLETCHER_BLOCK_WORDS: usize = 1024;

/// The kernels: per-block partial sums, then one work-item combining them
/// and comparing with the stored checksum (also HDF5's accepted legacy
/// form with the bytes of each 16-bit half swapped).
pub const FLETCHER32_CL: &str = r#"
__kernel void ur_fletcher_partial(__global const uchar *src, ulong len, ulong block, __global uint *part, ulong blocks) {
    ulong k = get_global_id(0);
    if (k >= blocks) return;
    ulong words = (len + 1) / 2;
    ulong start = k * block;
    ulong end = min(start + block, words);
    ulong s1 = 0, t = 0;
    uint nz = 0;
    for (ulong i = start; i < end; ++i) {
        uint hi = src[2 * i];
        uint lo = (2 * i + 1 < len) ? src[2 * i + 1] : 0;
        ulong w = (hi << 8) | lo;
        s1 += w;
        t += (end - i) * w;
        nz |= (w != 0);
    }
    part[3 * k] = (uint)(s1 % 65535);
    part[3 * k + 1] = (uint)(t % 65535);
    part[3 * k + 2] = nz;
}
__kernel void ur_fletcher_finish(__global const uchar *src, ulong len, ulong block, __global const uint *part, ulong blocks, uint check, __global uint *out) {
    if (get_global_id(0) != 0) return;
    ulong words = (len + 1) / 2;
    ulong s1 = 0, s2 = 0;
    uint nz = 0;
    for (ulong k = 0; k < blocks; ++k) {
        ulong end = min((k + 1) * block, words);
        s1 = (s1 + part[3 * k]) % 65535;
        s2 = (s2 + part[3 * k + 1] + ((words - end) % 65535) * part[3 * k]) % 65535;
        nz |= part[3 * k + 2];
    }
    if (nz) {
        if (s1 == 0) s1 = 65535;
        if (s2 == 0) s2 = 65535;
    }
    uint sum = (uint)((s2 << 16) | s1);
    out[1] = sum;
    if (!check) { out[0] = 1; return; }
    __global const uchar *c = src + len;
    uint stored = (uint)c[0] | ((uint)c[1] << 8) | ((uint)c[2] << 16) | ((uint)c[3] << 24);
    uint legacy = (uint)c[1] | ((uint)c[0] << 8) | ((uint)c[3] << 16) | ((uint)c[2] << 24);
    out[2] = stored;
    out[0] = (stored == sum || legacy == sum) ? 1 : 0;
}
"#;

/// A device Fletcher-32 failed.
#[derive(Debug, thiserror::Error)]
pub enum DeviceFilterError {
    /// A runtime call failed.
    #[error("device call failed: {0}")]
    Runtime(#[from] ur_api::Error),
    /// The chunk is bad (checksum mismatch, too short).
    #[error(transparent)]
    Filter(#[from] FilterError),
}

/// HDF5's Fletcher-32 (filter 3) as OpenCL C kernels: device buffers only.
#[derive(Debug)]
pub struct DeviceFletcher32 {
    rt: Arc<Runtime>,
    context: ContextId,
    device: DeviceId,
    program: ProgramId,
    partial: KernelId,
    finish: KernelId,
}

impl DeviceFletcher32 {
    /// Builds the kernels for `context` (an OpenCL context holding `device`).
    pub fn new(rt: Arc<Runtime>, context: ContextId, device: DeviceId) -> ur_api::Result<Self> {
        let program = rt.create_program(context, &ProgramSource::OpenClC(FLETCHER32_CL.into()), "")?;
        let partial = rt.create_kernel(program, "ur_fletcher_partial")?;
        let finish = rt.create_kernel(program, "ur_fletcher_finish")?;
        Ok(DeviceFletcher32 {
            rt,
            context,
            device,
            program,
            partial,
            finish,
        })
    }

    /// HDF5's filter id.
    pub fn id(&self) -> u32 {
        FILTER_FLETCHER32
    }

    /// What it accepts and returns: OpenCL device memory only, in place
    /// (decoding keeps a prefix of the input).
    pub fn kinds() -> KindDecl {
        KindDecl {
            in_place: true,
            ..KindDecl::device_only("opencl")
        }
    }

    /// Runs both kernels over the first `len` bytes of `src` (compared with
    /// the 4 bytes after them when `check`); returns (matched, computed, stored).
    fn run(
        &self,
        queue: QueueId,
        src: BufferId,
        len: usize,
        check: bool,
        wait: &[EventId],
    ) -> ur_api::Result<(bool, u32, u32)> {
        let words = len.div_ceil(2);
        let blocks = words.div_ceil(FLETCHER_BLOCK_WORDS).max(1);
        let part = self
            .rt
            .create_buffer(self.context, &BufferDesc::new(blocks * 12).on(self.device), None)?;
        let out = match self
            .rt
            .create_buffer(self.context, &BufferDesc::new(12).on(self.device), None)
        {
            Ok(b) => b,
            Err(e) => {
                let _ = self.rt.release_buffer(part);
                return Err(e);
            }
        };
        let result = (|| {
            let (len64, block64, blocks64) = (len as u64, FLETCHER_BLOCK_WORDS as u64, blocks as u64);
            let args = [
                ArgValue::Buffer(src),
                ArgValue::scalar(&len64),
                ArgValue::scalar(&block64),
                ArgValue::Buffer(part),
                ArgValue::scalar(&blocks64),
            ];
            let ev = self
                .rt
                .enqueue_launch(queue, self.partial, &NdRange::d1(blocks), &args, wait)?;
            let check32 = u32::from(check);
            let args = [
                ArgValue::Buffer(src),
                ArgValue::scalar(&len64),
                ArgValue::scalar(&block64),
                ArgValue::Buffer(part),
                ArgValue::scalar(&blocks64),
                ArgValue::scalar(&check32),
                ArgValue::Buffer(out),
            ];
            let done = self
                .rt
                .enqueue_launch(queue, self.finish, &NdRange::d1(1), &args, &[ev]);
            self.rt.release_event(ev)?;
            self.rt.complete(done?)?;
            // The verdict (12 bytes of control data), not the chunk, comes back.
            let mut back = [0u8; 12];
            self.rt.read(queue, out, 0, &mut back)?;
            let word = |i: usize| u32::from_le_bytes(back[4 * i..4 * i + 4].try_into().expect("4 bytes"));
            Ok((word(0) == 1, word(1), word(2)))
        })();
        let _ = self.rt.release_buffer(part);
        let _ = self.rt.release_buffer(out);
        result
    }

    /// HDF5's Fletcher-32 of the first `len` bytes of `src`, computed on the device.
    pub fn checksum(&self, queue: QueueId, src: BufferId, len: usize, wait: &[EventId]) -> ur_api::Result<u32> {
        self.run(queue, src, len, false, wait).map(|(_, sum, _)| sum)
    }

    /// Verifies the chunk of `stored` bytes at the start of `src` (data
    /// followed by its checksum) on the device and strips the checksum in
    /// place: returns the data's length, `stored - 4`, the data being the
    /// start of `src`. A mismatch is [`FilterError::Checksum`].
    pub fn decode(
        &self,
        queue: QueueId,
        src: BufferId,
        stored: usize,
        wait: &[EventId],
    ) -> Result<usize, DeviceFilterError> {
        let Some(len) = stored.checked_sub(4) else {
            return Err(FilterError::Corrupt {
                filter: "fletcher32",
                reason: format!("{stored} stored bytes, shorter than the checksum"),
            }
            .into());
        };
        let (ok, computed, stored_sum) = self.run(queue, src, len, true, wait)?;
        if ok {
            Ok(len)
        } else {
            Err(FilterError::Checksum {
                stored: stored_sum,
                computed,
            }
            .into())
        }
    }
}

impl Drop for DeviceFletcher32 {
    fn drop(&mut self) {
        let _ = self.rt.release_kernel(self.partial);
        let _ = self.rt.release_kernel(self.finish);
        let _ = self.rt.release_program(self.program);
    }
}
