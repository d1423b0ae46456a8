//! Streams, events, and the memory operations enqueued on a stream.

use std::ffi::c_void;

use cudarc::driver::sys::{self, CUresult};
use ur_api::Result;

use crate::conv::{self, check};

use super::*;

// ---- streams and events ----

/// A non-blocking stream, destroyed on drop (pending work still completes;
/// the driver frees the stream afterwards).
#[derive(Debug)]
pub(crate) struct Stream(pub(super) sys::CUstream);

// SAFETY: streams may be used from any thread; the driver serialises.
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A non-blocking stream in the current context.
    pub(crate) fn new() -> Result<Stream> {
        let mut s = std::ptr::null_mut();
        let flags = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuStreamCreate(&mut s, flags) })?;
        Ok(Stream(s))
    }

    /// Waits for everything enqueued so far.
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the stream is alive.
        check(unsafe { sys::cuStreamSynchronize(self.0) })
    }

    /// Makes later work wait for `e` (an event of any device).
    pub(crate) fn wait_event(&self, e: &Event) -> Result<()> {
        // SAFETY: both handles are alive.
        check(unsafe { sys::cuStreamWaitEvent(self.0, e.0, 0) })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is owned and destroyed once.
        unsafe { sys::cuStreamDestroy_v2(self.0) };
    }
}

/// An event, destroyed on drop (destroying a pending event is allowed:
/// its resources are released once it completes).
#[derive(Debug)]
pub(crate) struct Event(sys::CUevent);

// SAFETY: CUDA events may be used from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    /// An event with timing or without, in the current context.
    pub(crate) fn new(timing: bool) -> Result<Event> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut ev = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        check(unsafe { sys::cuEventCreate(&mut ev, flags as u32) })?;
        Ok(Event(ev))
    }

    /// Records the event after the work enqueued on `s` so far.
    pub(crate) fn record(&self, s: &Stream) -> Result<()> {
        // SAFETY: both handles are alive.
        check(unsafe { sys::cuEventRecord(self.0, s.0) })
    }

    /// `true` once complete, `false` while pending.
    pub(crate) fn query(&self) -> Result<bool> {
        // SAFETY: the event is alive.
        match unsafe { sys::cuEventQuery(self.0) } {
            CUresult::CUDA_SUCCESS => Ok(true),
            CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(conv::error(other)),
        }
    }

    /// Waits until the event completed (or the context failed).
    pub(crate) fn synchronize(&self) -> Result<()> {
        // SAFETY: the event is alive.
        check(unsafe { sys::cuEventSynchronize(self.0) })
    }

    /// Milliseconds from this event to `later` (both with timing and
    /// complete; otherwise an error code).
    pub(crate) fn elapsed_ms(&self, later: &Event) -> Result<f32> {
        let mut ms = 0f32;
        // SAFETY: both events are alive; valid out-pointer.
        check(unsafe { sys::cuEventElapsedTime(&mut ms, self.0, later.0) })?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event is owned and destroyed once.
        unsafe { sys::cuEventDestroy_v2(self.0) };
    }
}

// ---- enqueued memory operations ----

/// An asynchronous device-to-host copy.
///
/// # Safety
///
/// `len` bytes at `src` are live device memory, and at `dst` host memory
/// writable until the copy completes.
pub(crate) unsafe fn memcpy_dtoh_async(dst: *mut c_void, src: DevicePtr, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyDtoHAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous host-to-device copy.
///
/// # Safety
///
/// `len` bytes at `src` are host memory readable until the copy completes,
/// and at `dst` live device memory.
pub(crate) unsafe fn memcpy_htod_async(dst: DevicePtr, src: *const c_void, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous copy within one device.
///
/// # Safety
///
/// `len` bytes at `src` and at `dst` are live memory of the stream's device
/// and do not overlap.
pub(crate) unsafe fn memcpy_dtod_async(dst: DevicePtr, src: DevicePtr, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, len, s.0) })
}

/// An asynchronous copy between devices.
///
/// # Safety
///
/// `len` bytes at `dst` (memory of `dst_ctx`'s device) and at `src` (of
/// `src_ctx`'s) are live and do not overlap.
pub(crate) unsafe fn memcpy_peer_async(
    dst: DevicePtr,
    dst_ctx: &PrimaryCtx,
    src: DevicePtr,
    src_ctx: &PrimaryCtx,
    len: usize,
    s: &Stream,
) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; contexts and stream are alive.
    check(unsafe { sys::cuMemcpyPeerAsync(dst, dst_ctx.ctx, src, src_ctx.ctx, len, s.0) })
}

/// An asynchronous copy between unified addresses (the driver infers each
/// side's kind).
///
/// # Safety
///
/// `len` bytes at each side are live memory (host sides valid until the
/// copy completes) and do not overlap.
pub(crate) unsafe fn memcpy_async(dst: u64, src: u64, len: usize, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees both ranges; the stream is alive.
    check(unsafe { sys::cuMemcpyAsync(dst, src, len, s.0) })
}

/// One side of a 2-D copy: host memory or a device address, with its row
/// pitch.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mem2d {
    Host(*mut u8),
    Device(DevicePtr),
}

impl Mem2d {
    fn parts(self) -> (sys::CUmemorytype, *mut u8, DevicePtr) {
        match self {
            Mem2d::Device(p) => (sys::CUmemorytype::CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), p),
            Mem2d::Host(h) => (sys::CUmemorytype::CU_MEMORYTYPE_HOST, h, 0),
        }
    }
}

/// An asynchronous 2-D copy of `height` rows of `width` bytes, rows
/// `src_pitch` and `dst_pitch` bytes apart.
///
/// # Safety
///
/// Both boxes lie inside live memory of their sides (host sides valid until
/// the copy completes, the destination writable) and do not overlap; the
/// pitches are within the device's limit.
pub(crate) unsafe fn memcpy_2d_async(
    dst: Mem2d,
    dst_pitch: usize,
    src: Mem2d,
    src_pitch: usize,
    width: usize,
    height: usize,
    s: &Stream,
) -> Result<()> {
    let (src_type, src_host, src_dev) = src.parts();
    let (dst_type, dst_host, dst_dev) = dst.parts();
    let m = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: src_type,
        srcHost: src_host.cast_const().cast(),
        srcDevice: src_dev,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: dst_type,
        dstHost: dst_host.cast(),
        dstDevice: dst_dev,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width,
        Height: height,
    };
    // SAFETY: the caller guarantees both boxes; the descriptor is complete
    // and the stream alive.
    check(unsafe { sys::cuMemcpy2DAsync_v2(&m, s.0) })
}

/// An asynchronous memset of `count` elements of `width` (1, 2 or 4) bytes
/// with `value` at `p`: contiguous where `pitch` is 0, otherwise one
/// element every `pitch` bytes.
///
/// # Safety
///
/// Every element lies in live device-accessible memory and is aligned to
/// its width.
pub(crate) unsafe fn memset_async(
    p: DevicePtr,
    width: usize,
    pitch: usize,
    value: u32,
    count: usize,
    s: &Stream,
) -> Result<()> {
    let s = s.0;
    // SAFETY: the caller guarantees the elements; the stream is alive.
    check(unsafe {
        match (width, pitch) {
            (1, 0) => sys::cuMemsetD8Async(p, value as u8, count, s),
            (2, 0) => sys::cuMemsetD16Async(p, value as u16, count, s),
            (4, 0) => sys::cuMemsetD32Async(p, value, count, s),
            (1, pitch) => sys::cuMemsetD2D8Async(p, pitch, value as u8, 1, count, s),
            (2, pitch) => sys::cuMemsetD2D16Async(p, pitch, value as u16, 1, count, s),
            (_, pitch) => sys::cuMemsetD2D32Async(p, pitch, value, 1, count, s),
        }
    })
}

/// An asynchronous prefetch of managed memory to `dev`.
///
/// # Safety
///
/// `[p, p + len)` lies in one live managed allocation.
pub(crate) unsafe fn mem_prefetch_async(p: DevicePtr, len: usize, dev: Device, s: &Stream) -> Result<()> {
    // SAFETY: the caller guarantees the range; the stream is alive.
    check(unsafe { sys::cuMemPrefetchAsync(p, len, dev, s.0) })
}
