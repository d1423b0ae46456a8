//! Transfers between the caller's memory and device allocations, through
//! each context's [`HostTransfer`] decision tree: memory the caller locked
//! (or a USM host allocation) goes direct, a large pageable range is locked
//! in place on devices that lock, a small one goes through the pinned
//! staging ring (thresholds: [`crate::TransferThresholds::for_device`]).
//!
//! Where the manager moves caller bytes to or from a device:
//!
//! - [`MemoryManager::read`] of a range the host place lacks but one live
//!   device allocation holds whole: one transfer from that device straight
//!   into the caller's slice, instead of a device -> host store copy plus a
//!   memcpy (the host store is not allocated for it, and stays as it was).
//! - Initial data of [`MemoryManager::create_buffer_with`] for a hinted
//!   device: one transfer from the caller's slice, the creation plan's
//!   [`Step::Init`](crate::Step::Init) (the path chosen when planning).
//!
//! The transfer itself is the executor's (`exec::caller_io`); this module
//! holds the manager's side of it.
//!
//! The host place's own stores and the staging ring are pinned memory
//! already (USM host of a context where one offers it), so transfers from
//! them take the direct route in the tree; they keep their own paths.

use std::ops::Range;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use ur_api::Error;

use crate::error::{MmError, Result};
use crate::exec::caller_io::{transfer, Dir};
use crate::manager::{MemoryManager, Place};
use crate::residency::Mem;
use crate::route::HOST;
use crate::transfer::HostTransfer;

impl MemoryManager {
    /// The decision tree for transfers between caller memory and `place`'s
    /// context (one per context). Lock long-lived caller memory in its
    /// [`registry`](HostTransfer::registry): the manager's transfers from and
    /// into it then go direct.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ur_api::{Location, Runtime};
    /// use ur_memory_manager::{MemoryManager, Place, TransferPath};
    /// use ur_sim::{SimAdapter, Topology};
    ///
    /// let mut rt = Runtime::new();
    /// rt.add(SimAdapter::new(Topology::single_device()))?;
    /// let dev = rt.all_devices()[0];
    /// let at = Location::new(rt.create_context(&[dev])?, dev);
    /// let mm = MemoryManager::new(Arc::new(rt), &[at])?;
    /// let x = mm.host_transfer(Place::Device(at))?;
    /// let small = vec![0u8; 4096];
    /// assert_eq!(x.choose(small.as_ptr() as usize, small.len()), TransferPath::Staged);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn host_transfer(&self, place: Place) -> Result<Arc<HostTransfer>> {
        let p = self.index(place)?;
        self.inner.transfers[p]
            .clone()
            .ok_or_else(|| MmError::Runtime(Error::invalid("the host place has no host transfer")))
    }

    /// [`MemoryManager::read`] straight from a device: taken when the host
    /// place lacks part of `range` and one live device allocation holds all
    /// of it. Returns false when it does not apply (or the device was just
    /// found lost): the caller then reads through the host place.
    pub(crate) fn read_from_device(
        &self,
        buf: crate::LogicalBuffer,
        range: Range<usize>,
        dst: &mut [u8],
    ) -> Result<bool> {
        let (_, mut g) = self.locked(buf)?;
        Self::check_range(&g, &range)?;
        let inner = &self.inner;
        let failed = g.confirm();
        inner.counters.failed_copies.fetch_add(failed, Relaxed);
        for s in g.slots.iter_mut().flatten() {
            s.reap();
        }
        let holds = |g: &crate::residency::Residency, p: usize| {
            g.slots[p].as_ref().is_some_and(|s| s.valid.contains(range.clone()))
        };
        if holds(&g, HOST) {
            return Ok(false);
        }
        let Some(p) = (1..g.slots.len()).find(|&p| !inner.is_lost(p) && holds(&g, p)) else {
            return Ok(false);
        };
        // Work still pending on that allocation (asynchronous copies into
        // it, kernels handed over with `release_after`) finishes first; a
        // copy into it that failed makes the range stale there: then the
        // host place's path plans the read.
        let busy: Vec<ur_api::EventId> = g.slots[p].as_ref().map(|s| s.busy_ids().collect()).unwrap_or_default();
        if !busy.is_empty() {
            if let Err(e) = inner.rt.wait(&busy) {
                // A failed copy is learned by `confirm` below; a lost device
                // by the transfer, which then falls back.
                tracing::debug!(error = %e, "work pending on the source allocation failed");
            }
        }
        let failed = g.confirm();
        inner.counters.failed_copies.fetch_add(failed, Relaxed);
        if let Some(s) = g.slots[p].as_mut() {
            s.reap();
        }
        if !holds(&g, p) {
            return Ok(false);
        }
        let Some(Mem::Device(b)) = g.slots[p].as_ref().map(|s| &s.mem) else {
            return Ok(false);
        };
        let b = *b;
        match transfer(inner, &g.name, p, b, range.start, Dir::Read(dst)) {
            Ok(()) => {
                inner.touch(&mut g, p);
                Ok(true)
            }
            // The device went away under the transfer: the host place's
            // path routes around it (or reports the bytes lost).
            Err(MmError::CopyFailed { source, .. }) if *source == Error::DeviceLost && inner.check_lost(p) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
