//! The runtime's pointer map: every USM allocation and host lock made
//! through a [`Runtime`], found from any interior pointer without a lock
//! ([`Runtime::pointer_info`]); and the calls that keep it.

use std::sync::Arc;

use crate::dynamic::{MapError, PointerMap};
use crate::error::{Error, Result};
use crate::handles::{ContextId, DeviceId};
use crate::types::{DeviceAddr, HostPtr, UsmDesc, UsmKind, UsmPtr};

use super::Runtime;

/// What a pointer belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointerKind {
    /// A USM allocation of this kind.
    Usm(UsmKind),
    /// Host memory locked with [`Runtime::lock_host`].
    Locked,
}

/// The answer of [`Runtime::pointer_info`]: the allocation or locked range
/// holding a pointer (what a SYCL runtime needs for `get_pointer_type` and
/// `get_pointer_device`, and the memory manager to route a raw pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointerInfo {
    /// Start of the allocation or locked range.
    pub base: usize,
    /// Its length.
    pub size: usize,
    /// USM (and which kind) or a host lock.
    pub kind: PointerKind,
    /// The context it was made in (for a lock held in several contexts, the
    /// first; all of them are in `locks`).
    pub context: ContextId,
    /// The device of a USM allocation, if it has one.
    pub device: Option<DeviceId>,
    /// Where the devices of `context` reach `base`: the USM address itself,
    /// or what [`Runtime::lock_host`] answered.
    pub device_addr: DeviceAddr,
    /// For a lock: every context holding exactly this range locked, with
    /// its device address. Empty for USM.
    pub locks: Arc<[(ContextId, DeviceAddr)]>,
}

impl Runtime {
    /// The allocation or locked range holding `ptr` (any interior pointer),
    /// among those made through this runtime. Never waits on a writer.
    pub fn pointer_info(&self, ptr: usize) -> Option<PointerInfo> {
        self.pointers.get(ptr).map(|(_, info)| info)
    }

    /// The map behind [`Runtime::pointer_info`] (for its id-only fast path,
    /// [`PointerMap::lookup`]).
    pub fn pointer_map(&self) -> &PointerMap<PointerInfo> {
        &self.pointers
    }

    fn record(&self, info: PointerInfo) {
        let (base, size) = (info.base, info.size);
        if let Err(e) = self.pointers.insert(base, size, info) {
            // Device address spaces of separate adapters may coincide (the
            // sim's synthetic USM addresses): such an allocation works, it is
            // only not found by pointer.
            tracing::warn!(%e, "pointer map: allocation not recorded");
        }
    }

    /// Allocates USM memory and records it in the pointer map.
    pub fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr> {
        let ptr = self.adapter_of(context)?.usm_alloc(context, desc)?;
        self.record(PointerInfo {
            base: ptr.0 as usize,
            size: desc.size,
            kind: PointerKind::Usm(desc.kind),
            context,
            device: desc.device,
            device_addr: DeviceAddr(ptr.0),
            // The shared empty slice: no allocation per USM allocation.
            locks: Arc::default(),
        });
        Ok(ptr)
    }

    /// Frees a USM allocation by its base pointer.
    pub fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()> {
        self.adapter_of(context)?.usm_free(context, ptr)?;
        // Only this context's allocation at exactly `ptr` (one lock, no lookup).
        self.pointers.remove_if(ptr.0 as usize, |i| i.context == context);
        Ok(())
    }

    /// Locks (pins) `mem` for the devices of `context` and answers the
    /// address they reach it at ([`crate::DeviceCaps::HOST_REGISTER`]).
    ///
    /// The same range may be locked in several contexts; a range partly
    /// overlapping a lock of another context, or a USM allocation, is
    /// refused with both ranges named. Within a context a range is locked
    /// once: reference-counted locks of sub-ranges are the memory manager's
    /// registry (`ur_memory_manager::PinnedRegistry`).
    pub fn lock_host(&self, context: ContextId, mem: HostPtr) -> Result<DeviceAddr> {
        let adapter = self.adapter_of(context)?;
        let (base, size) = (mem.as_ptr() as usize, mem.len());
        // Refuse a clash with another context's lock before pinning anything.
        if let Some((hit, other)) = self
            .pointers
            .overlapping(base, size)
            .into_iter()
            .next()
            .map(|(b, s, i)| ((b, s), i))
        {
            if hit != (base, size) || other.kind != PointerKind::Locked {
                return Err(clash(base, size, hit.0, hit.1));
            }
        }
        let addr = adapter.lock_host(context, mem)?;
        let entry = (context, addr);
        let added = self.pointers.update(base, |old| PointerInfo {
            locks: old.locks.iter().copied().chain([entry]).collect(),
            ..old.clone()
        });
        if added.is_none() {
            let info = PointerInfo {
                base,
                size,
                kind: PointerKind::Locked,
                context,
                device: None,
                device_addr: addr,
                locks: Arc::new([entry]),
            };
            if let Err(e) = self.pointers.insert(base, size, info) {
                // Lost a race with another thread's clashing lock: undo ours.
                adapter.unlock_host(context, mem)?;
                return Err(match e {
                    MapError::Overlap {
                        existing_base,
                        existing_size,
                        ..
                    } => clash(base, size, existing_base, existing_size),
                    other => Error::invalid(other.to_string()),
                });
            }
        }
        Ok(addr)
    }

    /// Unlocks exactly a range [`Runtime::lock_host`] locked in `context`.
    pub fn unlock_host(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        self.adapter_of(context)?.unlock_host(context, mem)?;
        let base = mem.as_ptr() as usize;
        let left = self.pointers.update(base, |old| PointerInfo {
            locks: old.locks.iter().copied().filter(|(c, _)| *c != context).collect(),
            ..old.clone()
        });
        match left {
            Some(info) if info.locks.is_empty() => {
                self.pointers.remove(base);
            }
            Some(info) if info.context == context => {
                let (c, a) = info.locks[0];
                self.pointers.update(base, |old| PointerInfo {
                    context: c,
                    device_addr: a,
                    ..old.clone()
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// [`Runtime::lock_host`] without the address (the older name).
    pub fn host_register(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        self.lock_host(context, mem).map(drop)
    }

    /// [`Runtime::unlock_host`] (the older name).
    pub fn host_unregister(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        self.unlock_host(context, mem)
    }
}

fn clash(base: usize, size: usize, other: usize, other_size: usize) -> Error {
    Error::invalid(format!(
        "host range {base:#x}+{size} overlaps {other:#x}+{other_size}, held by another context or a USM allocation"
    ))
}
