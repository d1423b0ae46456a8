//! # ur-level-zero: the Level Zero adapter
//!
//! Drives oneAPI Level Zero drivers through the project's own
//! [`level_zero_sys`] bindings; the loader (`libze_loader.so.1`) is opened at
//! run time, never linked.
//!
//! ```
//! use ur_api::adapter::Devices;
//! let l0 = ur_level_zero::LevelZeroAdapter::new();
//! // With no loader or no driver this is an empty list, never a panic.
//! let platforms = l0.platforms().unwrap();
//! if platforms.is_empty() {
//!     assert!(ur_level_zero::LevelZeroAdapter::unavailable_reason().is_some());
//! }
//! ```
//!
//! ## Design choices
//!
//! - **Absent loader or driver = zero platforms.** The loader is opened and
//!   `zeInit` called once per process; any failure (no `libze1`, a loader
//!   missing an entry point, `ZE_RESULT_ERROR_UNINITIALIZED` for no driver)
//!   is kept as [`LevelZeroAdapter::unavailable_reason`] and
//!   [`Devices::platforms`](ur_api::adapter::Devices::platforms) is empty.
//! - **Drivers are platforms; devices are root devices, each followed by its
//!   sub-devices** (named "(sub-device N)"), so the selector and the memory
//!   manager see tiles.
//! - **Memory connections** (src -> dst), the pure rule in `conv.rs`: one
//!   device: `Unified`; two devices of one context: `Unified` where
//!   `zeDeviceCanAccessPeer(dst, src)` says so, else `Migratable` (a copy
//!   engine moves it); different contexts or drivers: `None` (an
//!   allocation belongs to its context).
//! - **Allocations honour the device hint.** Buffers are device allocations
//!   on the hinted device (sub-buffers are ranges of them); USM device and
//!   shared allocations go to the named device, host allocations to none.
//!   Every allocation is an `Arc` held by each command that uses it until
//!   the command completes, so releasing memory never frees it under a
//!   running command. `COPY_HOST_PTR` initial data is copied on a
//!   synchronous immediate command list before `create_buffer` returns.
//! - **Queues are immediate command lists** on the device's first compute
//!   group. The 1.4 headers have no in-order flag, so each command waits
//!   for the queue's previous command's event as well as its wait list.
//! - **Events come from per-context event pools** (host-visible; with kernel
//!   timestamps on profiling queues) and are reset and reused. An event
//!   waited on by a command stays alive (unreused) until that command's
//!   event completes; an event released before completion is recycled once
//!   it completes.
//! - **Fills** use `zeCommandListAppendMemoryFill` for patterns the compute
//!   group fills natively; a longer pattern is expanded into host memory
//!   held by the command and copied.
//! - **Programs** are SPIR-V modules built for every device of the context;
//!   build failures carry the driver's log. The argument count comes from
//!   the module's entry point (so the dyn layer checks launches even where
//!   the driver does not report it); a name that is not an entry point is
//!   [`Error::KernelNotFound`](ur_api::Error::KernelNotFound).
//! - **Host registration** uses the driver's import extension
//!   (`zexDriverImportExternalPointer`) where the driver has it;
//!   elsewhere [`DeviceCaps::HOST_REGISTER`](ur_api::DeviceCaps) is absent.
//!   Global offsets likewise need `ZE_experimental_global_offset`.
//! - **The null driver** (`ZE_ENABLE_NULL_DRIVER=1` with `libze_null.so.1`)
//!   reports zero for every limit; zero limits read as Level Zero's
//!   defaults (`conv::memory_limits`). It answers success and moves no data.

mod conv;
mod device;
mod memory;
mod program;
mod queue;

use std::sync::Arc;

use ur_api::{MemArg, RectCopy, Result};

pub use device::{LevelZeroContext, LevelZeroDevice, LevelZeroPlatform};
pub use memory::{LevelZeroBuffer, LevelZeroUsm, SUB_BUFFER_ALIGN};
pub use program::{LevelZeroKernel, LevelZeroProgram};
pub use queue::{LevelZeroEvent, LevelZeroQueue};

use queue::Held;

/// The Level Zero adapter.
#[derive(Debug, Default)]
pub struct LevelZeroAdapter {
    _private: (),
}

impl LevelZeroAdapter {
    /// The adapter. Cheap; the loader is opened at the first platform query.
    pub fn new() -> Self {
        LevelZeroAdapter::default()
    }

    /// Why there are no platforms (no loader, no driver), or `None` when
    /// Level Zero initialised.
    pub fn unavailable_reason() -> Option<String> {
        device::ze().err().map(str::to_owned)
    }
}

/// One side of a copy as a pointer, and the allocation to hold, if any.
fn mem_arg(m: &MemArg<'_, LevelZeroAdapter>, held: &mut Held) -> *mut std::ffi::c_void {
    match m {
        MemArg::Usm(u) => {
            held.mem.push(u.alloc.mem.clone());
            u.alloc.mem.at(u.offset)
        }
        MemArg::Host(h) => h.as_ptr().cast(),
    }
}

impl LevelZeroAdapter {
    /// Appends a plain copy of `size` bytes.
    ///
    /// # Safety
    ///
    /// Both ranges are valid for the command (the command contract).
    unsafe fn copy(
        &self,
        q: &LevelZeroQueue,
        dst: *mut std::ffi::c_void,
        src: *const std::ffi::c_void,
        size: usize,
        held: Held,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let ze = q.ctx.driver.ze;
        q.submit(wait, held, |a| {
            // SAFETY: the caller's ranges, held until completion; the list,
            // event and wait list `submit` prepared.
            unsafe { ze.zeCommandListAppendMemoryCopy(a.list, dst, src, size, a.signal, a.nwait(), a.wait_ptr()) }
        })
    }

    /// Appends a fill of `size` bytes at `dst`.
    ///
    /// # Safety
    ///
    /// The range is valid for the command; `size` is a multiple of the pattern.
    unsafe fn fill(
        &self,
        q: &LevelZeroQueue,
        dst: *mut std::ffi::c_void,
        size: usize,
        pattern: &[u8],
        mut held: Held,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let ze = q.ctx.driver.ze;
        if conv::native_fill(pattern.len(), q.max_fill_pattern) {
            return q.submit(wait, held, |a| {
                // SAFETY: the caller's range; the driver copies the pattern
                // at append time.
                unsafe {
                    ze.zeCommandListAppendMemoryFill(
                        a.list,
                        dst,
                        pattern.as_ptr().cast(),
                        pattern.len(),
                        size,
                        a.signal,
                        a.nwait(),
                        a.wait_ptr(),
                    )
                }
            });
        }
        let expanded: Box<[u8]> = pattern.iter().copied().cycle().take(size).collect();
        let src = expanded.as_ptr();
        held.host.push(expanded);
        // SAFETY: `src` lives in `held` until the copy completes.
        unsafe { self.copy(q, dst, src.cast(), size, held, wait) }
    }

    /// Appends a region copy (`zeCommandListAppendMemoryCopyRegion`), or
    /// one copy per row where the rect does not fit its 32-bit fields.
    ///
    /// # Safety
    ///
    /// Both boxes lie in valid memory for the command.
    unsafe fn copy_rect(
        &self,
        q: &LevelZeroQueue,
        dst: *mut u8,
        src: *const u8,
        rect: &RectCopy,
        held: Held,
        wait: &[&LevelZeroEvent],
    ) -> Result<LevelZeroEvent> {
        let ze = q.ctx.driver.ze;
        if conv::fits_copy_region(rect) {
            let [(sr, sp, ss), (dr, dp, ds)] = conv::copy_regions(rect);
            return q.submit(wait, held, |a| {
                // SAFETY: the caller's boxes with explicit pitches.
                unsafe {
                    ze.zeCommandListAppendMemoryCopyRegion(
                        a.list,
                        dst.cast(),
                        &dr,
                        dp,
                        ds,
                        src.cast(),
                        &sr,
                        sp,
                        ss,
                        a.signal,
                        a.nwait(),
                        a.wait_ptr(),
                    )
                }
            });
        }
        let mut rows = Vec::new();
        rect.for_each_row(|s, d, len| rows.push((s, d, len)));
        let mut last = None;
        let mut held = Some(held);
        for (i, (s, d, len)) in rows.into_iter().enumerate() {
            let w: &[&LevelZeroEvent] = if i == 0 { wait } else { &[] };
            // SAFETY: each row lies in the caller's boxes; the first row's
            // command holds the memory and later rows follow it in order.
            last = Some(unsafe {
                self.copy(
                    q,
                    dst.add(d).cast(),
                    src.add(s).cast(),
                    len,
                    held.take().unwrap_or_default(),
                    w,
                )?
            });
        }
        last.ok_or_else(|| ur_api::Error::invalid("empty rect"))
    }
}

fn hold(b: &LevelZeroBuffer) -> Held {
    Held {
        mem: vec![b.mem.clone()],
        ..Held::default()
    }
}

impl ur_api::Api for LevelZeroAdapter {
    type Platform = LevelZeroPlatform;
    type Device = LevelZeroDevice;
    type Context = LevelZeroContext;
    type Buffer = LevelZeroBuffer;
    type Usm = LevelZeroUsm;
    type Queue = LevelZeroQueue;
    type Event = LevelZeroEvent;
    type Program = LevelZeroProgram;
    type Kernel = LevelZeroKernel;
}

// The optional groups this adapter does not offer (its devices lack the
// capability flags, so the dyn layer never calls these defaults).
impl ur_api::adapter::Mapping for LevelZeroAdapter {}

// The adapter's types must cross threads, as the trait demands.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Arc<LevelZeroAdapter>>();
};
