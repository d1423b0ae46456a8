//! The UR C ABI's argument checking (`ur-capi`, called through its public
//! Rust items, the `extern "C"` entry points, on the native device only):
//! buffer reads, writes, copies and fills, buffer creation and
//! `urMemGetInfo` with random handles (live, released, null, of the wrong
//! kind, or an address no handle ever had), offsets, sizes, patterns and
//! wait lists. Host memory is an exact-size allocation of the size the
//! call names, so AddressSanitizer sees any byte touched outside it.
//!
//! Every call returns a `ur_result_t`: success exactly where the model says
//! the arguments are valid, an error code (never `UR_RESULT_ERROR_UNKNOWN`,
//! the code a panic caught at the ABI would get) everywhere else; data a
//! successful write put in is what a later read gets back.
#![no_main]

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use ur_adapter_rust::context::urContextCreate;
use ur_adapter_rust::device::urDeviceGet;
use ur_adapter_rust::enqueue::{
    urEnqueueMemBufferCopy, urEnqueueMemBufferFill, urEnqueueMemBufferRead, urEnqueueMemBufferWrite,
};
use ur_adapter_rust::memory::{urMemBufferCreate, urMemGetInfo, urMemRelease};
use ur_adapter_rust::platform::{urAdapterGet, urPlatformGet};
use ur_adapter_rust::queue::urQueueCreate;
use ur_adapter_rust::sys::*;

/// The size of the two live buffers.
const SIZE: usize = 256;

/// A handle argument.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum H {
    /// A live handle of the right kind (the first or second buffer).
    Live(bool),
    /// A handle released before.
    Released,
    /// Null.
    Null,
    /// A live handle of another kind (the queue for a buffer and back).
    WrongKind,
    /// An address no handle ever had (never dereferenced by the ABI: it
    /// looks handles up by address).
    Bogus(u16),
}

#[derive(Debug, Arbitrary)]
enum Op {
    Read {
        q: H,
        b: H,
        off: usize,
        len: u16,
        wait: bool,
    },
    Write {
        q: H,
        b: H,
        off: usize,
        len: u16,
        v: u8,
    },
    Copy {
        q: H,
        s: H,
        d: H,
        so: usize,
        dof: usize,
        len: u16,
    },
    Fill {
        q: H,
        b: H,
        pat: Vec<u8>,
        off: usize,
        len: u16,
    },
    Create {
        flags: u32,
        size: u8,
        huge: bool,
    },
    Info {
        b: H,
        prop: u8,
        size: u8,
    },
}

struct World {
    queue: ur_queue_handle_t,
    context: ur_context_handle_t,
    buffers: [ur_mem_handle_t; 2],
    released: ur_mem_handle_t,
}

// SAFETY (impls below): the handles are addresses the ABI looks up in its
// own thread-safe table; the fuzzer calls from one thread anyway.
unsafe impl Send for World {}
// SAFETY: as above.
unsafe impl Sync for World {}

fn ok(r: ur_result_t, what: &str) {
    assert_eq!(r, UR_RESULT_SUCCESS, "{what}");
}

fn world() -> World {
    // Only the host CPU: the target checks arguments, not backends (and
    // discovering every OpenCL runtime per fuzz process is slow). Set
    // before the ABI's state is first built, on the one fuzzing thread.
    std::env::set_var("UR_DEVICE_SELECTOR", "native:*");
    let mut adapter = null_mut();
    let mut platform = null_mut();
    let mut device = null_mut();
    let mut context = null_mut();
    let mut queue = null_mut();
    let mut buffers = [null_mut(); 3];
    // SAFETY: every out pointer is a local of the right type, counts are 1,
    // property pointers null; the handles passed are the ones returned.
    unsafe {
        ok(urAdapterGet(1, &mut adapter, null_mut()), "urAdapterGet");
        ok(urPlatformGet(adapter, 1, &mut platform, null_mut()), "urPlatformGet");
        ok(
            urDeviceGet(platform, UR_DEVICE_TYPE_ALL, 1, &mut device, null_mut()),
            "urDeviceGet",
        );
        ok(urContextCreate(1, &device, null(), &mut context), "urContextCreate");
        ok(urQueueCreate(context, device, null(), &mut queue), "urQueueCreate");
        for b in &mut buffers {
            ok(
                urMemBufferCreate(context, UR_MEM_FLAG_READ_WRITE, SIZE, null(), b),
                "urMemBufferCreate",
            );
        }
        ok(urMemRelease(buffers[2]), "urMemRelease");
    }
    World {
        queue,
        context,
        buffers: [buffers[0], buffers[1]],
        released: buffers[2],
    }
}

impl World {
    /// A buffer argument and whether it is a live buffer (its index).
    fn buffer(&self, h: H) -> (ur_mem_handle_t, Option<usize>) {
        match h {
            H::Live(second) => (self.buffers[usize::from(second)], Some(usize::from(second))),
            H::Released => (self.released, None),
            H::Null => (null_mut(), None),
            H::WrongKind => (self.queue.cast(), None),
            H::Bogus(a) => (bogus(a), None),
        }
    }

    /// A queue argument and whether it is the live queue.
    fn queue(&self, h: H) -> (ur_queue_handle_t, bool) {
        match h {
            H::Live(_) => (self.queue, true),
            H::Released | H::Null => (null_mut(), false),
            H::WrongKind => (self.buffers[0].cast(), false),
            H::Bogus(a) => (bogus(a), false),
        }
    }
}

/// An address no handle has: far from the heap, aligned like a handle.
fn bogus<T>(a: u16) -> *mut T {
    (0x7e00_0000_0000usize + usize::from(a) * 16) as *mut T
}

/// `[off, off + len)` is a non-empty range inside a buffer.
fn fits(off: usize, len: usize) -> bool {
    len > 0 && off.checked_add(len).is_some_and(|end| end <= SIZE)
}

fn check(r: ur_result_t, valid: bool, what: &str) {
    assert_ne!(r, UR_RESULT_ERROR_UNKNOWN, "{what}: a panic or an unmapped error");
    assert_eq!(r == UR_RESULT_SUCCESS, valid, "{what}: result {r}");
}

fuzz_target!(|ops: Vec<Op>| {
    let w = ur_fuzz::once!(World, world());
    // What the model knows of each live buffer's bytes (None: not written
    // by this input, so unknown).
    let mut model: [Vec<Option<u8>>; 2] = [vec![None; SIZE], vec![None; SIZE]];
    for op in ops.into_iter().take(32) {
        match op {
            Op::Read { q, b, off, len, wait } => {
                let ((qh, ql), (bh, bi), len) = (w.queue(q), w.buffer(b), usize::from(len));
                let mut host = vec![0u8; len];
                // A wait list of one with a null list is invalid.
                let n = u32::from(wait);
                // SAFETY: `host` holds `len` bytes, the call is blocking,
                // the event out pointer is null.
                let r = unsafe {
                    urEnqueueMemBufferRead(qh, bh, true, off, len, host.as_mut_ptr().cast(), n, null(), null_mut())
                };
                let valid = ql && bi.is_some() && fits(off, len) && !wait;
                check(r, valid, "read");
                if valid {
                    let m = &model[bi.unwrap()][off..off + len];
                    for (i, (&got, want)) in host.iter().zip(m).enumerate() {
                        if let Some(want) = want {
                            assert_eq!(got, *want, "byte {} of the read", off + i);
                        }
                    }
                }
            }
            Op::Write { q, b, off, len, v } => {
                let ((qh, ql), (bh, bi), len) = (w.queue(q), w.buffer(b), usize::from(len));
                let host = vec![v; len];
                // SAFETY: `host` holds `len` bytes, the call is blocking.
                let r = unsafe {
                    urEnqueueMemBufferWrite(qh, bh, true, off, len, host.as_ptr().cast(), 0, null(), null_mut())
                };
                let valid = ql && bi.is_some() && fits(off, len);
                check(r, valid, "write");
                if valid {
                    model[bi.unwrap()][off..off + len].fill(Some(v));
                }
            }
            Op::Copy { q, s, d, so, dof, len } => {
                let ((qh, ql), (sh, si), (dh, di), len) = (w.queue(q), w.buffer(s), w.buffer(d), usize::from(len));
                // SAFETY: no host memory; the event out pointer is null.
                let r = unsafe { urEnqueueMemBufferCopy(qh, sh, dh, so, dof, len, 0, null(), null_mut()) };
                let overlap = si == di && so < dof.saturating_add(len) && dof < so.saturating_add(len);
                let valid = ql && si.is_some() && di.is_some() && fits(so, len) && fits(dof, len) && !overlap;
                // Copies within one buffer that overlap are refused; the
                // model does not guess which error code other refusals get.
                check(r, valid, "copy");
                if valid {
                    let src: Vec<Option<u8>> = model[si.unwrap()][so..so + len].to_vec();
                    model[di.unwrap()][dof..dof + len].copy_from_slice(&src);
                }
            }
            Op::Fill { q, b, pat, off, len } => {
                let ((qh, ql), (bh, bi), len) = (w.queue(q), w.buffer(b), usize::from(len));
                let ps = pat.len();
                let ptr: *const c_void = if pat.is_empty() { null() } else { pat.as_ptr().cast() };
                // SAFETY: `pat` holds `ps` bytes (or the pointer is null
                // with a size of 0); the event out pointer is null.
                let r = unsafe { urEnqueueMemBufferFill(qh, bh, ptr, ps, off, len, 0, null(), null_mut()) };
                // UR: the pattern size is a power of two (no upper limit:
                // longer than a backend fill takes is written as replicated
                // data), size and offset multiples of it; anything else is
                // refused (`INVALID_SIZE`).
                let valid = ql
                    && bi.is_some()
                    && fits(off, len)
                    && ps.is_power_of_two()
                    && len % ps == 0
                    && off % ps == 0;
                check(r, valid, "fill");
                if valid {
                    for (i, byte) in model[bi.unwrap()][off..off + len].iter_mut().enumerate() {
                        *byte = Some(pat[i % ps]);
                    }
                }
            }
            Op::Create { flags, size, huge } => {
                let size = if huge {
                    usize::MAX - usize::from(size)
                } else {
                    usize::from(size)
                };
                let mut out = null_mut();
                // SAFETY: `out` is a local handle; no host pointer is named
                // unless a flag asks for one, and then null is passed, which
                // the ABI must refuse.
                let r = unsafe { urMemBufferCreate(w.context, flags, size, null(), &mut out) };
                assert_ne!(r, UR_RESULT_ERROR_UNKNOWN, "create: a panic or an unmapped error");
                if size == 0 || huge {
                    assert_ne!(r, UR_RESULT_SUCCESS, "create of {size} bytes");
                }
                if r == UR_RESULT_SUCCESS {
                    // SAFETY: the handle just returned.
                    assert_eq!(unsafe { urMemRelease(out) }, UR_RESULT_SUCCESS);
                }
            }
            Op::Info { b, prop, size } => {
                let (bh, bi) = w.buffer(b);
                let mut value = vec![0u8; usize::from(size)];
                let mut size_ret = 0usize;
                let vp: *mut c_void = if value.is_empty() {
                    null_mut()
                } else {
                    value.as_mut_ptr().cast()
                };
                // SAFETY: `value` holds `size` bytes (null when 0).
                let r = unsafe { urMemGetInfo(bh, ur_mem_info_t::from(prop), value.len(), vp, &mut size_ret) };
                assert_ne!(r, UR_RESULT_ERROR_UNKNOWN, "info: a panic or an unmapped error");
                if bi.is_none() {
                    assert_ne!(r, UR_RESULT_SUCCESS, "info on a dead handle");
                }
                if bi.is_some() && prop == UR_MEM_INFO_SIZE as u8 && value.len() >= 8 {
                    assert_eq!(r, UR_RESULT_SUCCESS, "size query");
                    assert_eq!(usize::from_ne_bytes(value[..8].try_into().unwrap()), SIZE);
                }
            }
        }
    }
});
