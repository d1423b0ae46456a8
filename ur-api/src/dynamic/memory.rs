//! Memory objects of the dyn layer: buffers, sub-buffers, USM allocations,
//! host registrations.

use std::sync::Arc;

use parking_lot::Mutex;

use super::check;
use super::tables::*;
use super::usm_cache::{CacheKey, Cached};
use super::BufferInfo;
use crate::adapter::Adapter;
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;

impl<A: Adapter> AdapterHost<A> {
    /// A device of the context (the hint) or the context's first device.
    fn placement(&self, c: &ContextEntry<A>, hint: Option<DeviceId>) -> Result<DeviceKey> {
        match hint {
            Some(d) => {
                self.device(d)?;
                if !c.devices.contains(&d.key) {
                    return Err(Error::DeviceNotInContext);
                }
                Ok(d.key)
            }
            None => Ok(c.devices[0]),
        }
    }

    pub(super) fn create_buffer(
        &self,
        context: ContextId,
        desc: &BufferDesc<DeviceId>,
        init: Option<HostPtr>,
    ) -> Result<BufferId> {
        let c = self.context(&self.tables.read(), context)?;
        if desc.size == 0 {
            return Err(Error::InvalidSize {
                what: "buffer",
                size: 0,
            });
        }
        check::mem_flags(desc.flags, desc.size, init.map(HostPtr::len))?;
        let device = self.placement(&c, desc.device_hint)?;
        let info = &self.dev(device).info;
        if desc.size as u64 > info.max_alloc_size {
            return Err(Error::InvalidSize {
                what: "buffer (larger than the device's largest allocation)",
                size: desc.size,
            });
        }
        if desc.flags.contains(MemFlags::USE_HOST_PTR) && !info.caps.contains(DeviceCaps::USE_HOST_PTR) {
            return Err(Error::unsupported("buffers over caller memory (USE_HOST_PTR)"));
        }
        if let Some(h) = init {
            check::host_range(h.as_ptr(), h.len())?;
        }
        let dev = &self.dev(device).obj;
        let placed = BufferDesc {
            device_hint: Some(dev),
            ..desc.map_device(|_| dev)
        };
        // SAFETY: the size is non-zero and within the device's limit, the
        // flags are consistent and `init` is present exactly when they ask
        // for host memory, non-null and exactly `size` bytes, carrying the
        // HostPtr promise.
        let obj = unsafe { self.adapter.create_buffer(&c.obj, &placed, init)? };
        Ok(self.insert_buffer(context, c, (obj, desc.size, desc.flags), device))
    }

    /// Puts a new root buffer (the adapter's, its size and flags) of
    /// `context` placed for `device` in the tables.
    fn insert_buffer(
        &self,
        context: ContextId,
        c: Arc<ContextEntry<A>>,
        (obj, size, flags): (A::Buffer, usize, MemFlags),
        device: DeviceKey,
    ) -> BufferId {
        let entry = BufferEntry {
            obj,
            ctx: context.key,
            context: c,
            size,
            flags,
            device,
            parent: None,
            maps: Mutex::new(Vec::new()),
        };
        let key = self.write_tables().buffers.insert(Arc::new(entry));
        BufferId { host: self.id, key }
    }

    pub(super) fn create_buffer_from_native(
        &self,
        context: ContextId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<BufferId> {
        let c = self.context(&self.tables.read(), context)?;
        let device = self.placement(&c, None)?;
        let adopted = self
            .adapter
            .buffer_from_native(&c.obj, &self.dev(device).obj, handle, owned)?;
        Ok(self.insert_buffer(context, c, adopted, device))
    }

    pub(super) fn create_sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> Result<BufferId> {
        let p = self.buffer(&self.tables.read(), parent)?;
        if p.parent.is_some() {
            return Err(Error::invalid("a sub-buffer cannot be created from a sub-buffer"));
        }
        check::range("parent buffer", offset, size, p.size)?;
        let mut align = 1;
        for &d in &p.context.devices {
            let info = &self.dev(d).info;
            if !info.caps.contains(DeviceCaps::SUB_BUFFERS) {
                return Err(Error::unsupported(format!("sub-buffers on {}", info.name)));
            }
            align = align.max(info.sub_buffer_align);
        }
        if offset % align != 0 {
            return Err(Error::InvalidAlignment {
                align,
                why: "sub-buffer offset is not a multiple of the device's base-address alignment",
            });
        }
        // SAFETY: the parent is a whole buffer, the range is non-empty and
        // inside it, and the offset honours every device's alignment.
        let obj = unsafe { self.adapter.create_sub_buffer(&p.obj, offset, size)? };
        let entry = BufferEntry {
            obj,
            ctx: p.ctx,
            context: p.context.clone(),
            size,
            flags: p.flags,
            device: p.device,
            parent: Some((parent.key, offset, p.clone())),
            maps: Mutex::new(Vec::new()),
        };
        let key = self.write_tables().buffers.insert(Arc::new(entry));
        Ok(BufferId { host: self.id, key })
    }

    pub(super) fn buffer_info(&self, buffer: BufferId) -> Result<BufferInfo> {
        let b = self.buffer(&self.tables.read(), buffer)?;
        Ok(BufferInfo {
            context: ContextId {
                host: self.id,
                key: b.ctx,
            },
            device: DeviceId {
                host: self.id,
                key: b.device,
            },
            size: b.size,
            flags: b.flags,
            parent: b
                .parent
                .as_ref()
                .map(|(k, off, _)| (BufferId { host: self.id, key: *k }, *off)),
        })
    }

    pub(super) fn release_buffer(&self, buffer: BufferId) -> Result<()> {
        self.own(buffer)?;
        let b = self
            .write_tables()
            .buffers
            .remove(buffer.key)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Buffer,
            })?;
        // Commands in flight may still borrow it (see `Held`).
        self.retire_everywhere(b);
        Ok(())
    }

    pub(super) fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr> {
        let c = self.context(&self.tables.read(), context)?;
        if desc.size == 0 {
            return Err(Error::InvalidSize {
                what: "USM allocation",
                size: 0,
            });
        }
        let need = match desc.kind {
            UsmKind::Host => UsmCaps::HOST,
            UsmKind::Device => UsmCaps::DEVICE,
            UsmKind::Shared => UsmCaps::SHARED,
        };
        let device = match desc.device {
            Some(d) => Some(self.placement(&c, Some(d))?),
            None if desc.kind == UsmKind::Device => {
                return Err(Error::invalid("a device USM allocation needs a device"))
            }
            None => None,
        };
        let one;
        let checked: &[DeviceKey] = match device {
            Some(d) => {
                one = [d];
                &one
            }
            None => &c.devices,
        };
        for &d in checked {
            let info = &self.dev(d).info;
            if !info.usm.contains(need) {
                return Err(Error::unsupported(format!(
                    "{:?} USM allocations on {}",
                    desc.kind, info.name
                )));
            }
            if desc.size as u64 > info.max_alloc_size {
                return Err(Error::InvalidSize {
                    what: "USM allocation (larger than the device's largest allocation)",
                    size: desc.size,
                });
            }
            check::alignment(desc.align, info.max_alloc_size)?;
        }
        let key = CacheKey {
            kind: desc.kind,
            device,
            size: desc.size,
            align: desc.align,
            advice: desc.advice,
        };
        let (obj, base) = match c.usm_cache.take(&key) {
            Some(cached) => (cached.obj, cached.base),
            None => {
                let dev = device.map(|d| &self.dev(d).obj);
                let desc = desc.map_device(|_| dev.expect("checked above"));
                let alloc = match self.adapter.usm_alloc(&c.obj, &desc) {
                    // Out of memory: what the cache holds goes back, and
                    // the allocation is tried again if that was anything.
                    Err(e @ (Error::OutOfDeviceMemory | Error::OutOfHostMemory)) => {
                        let held = c.usm_cache.drain();
                        if held.is_empty() {
                            Err(e)
                        } else {
                            self.free_cached(&c, held);
                            self.adapter.usm_alloc(&c.obj, &desc)
                        }
                    }
                    other => other,
                };
                let (obj, ptr) = alloc?;
                (obj, ptr.0)
            }
        };
        let entry = UsmEntry {
            obj,
            base,
            ctx: context.key,
            context: c,
            kind: key.kind,
            size: key.size,
            device,
            align: key.align,
            advice: key.advice,
        };
        self.write_tables().usm.insert(base, Arc::new(entry));
        Ok(UsmPtr(base))
    }

    pub(super) fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()> {
        let mut t = self.write_tables();
        let c = self.context(&t, context)?;
        // One search: checked and removed through the same entry.
        let entry = match t.usm.entry(ptr.0) {
            std::collections::btree_map::Entry::Occupied(e) if e.get().ctx == context.key => e.remove(),
            _ => {
                return Err(Error::InvalidHandle {
                    kind: HandleKind::UsmPointer,
                })
            }
        };
        let keep = c.usm_cache.accepts(entry.size);
        let queues: Vec<Arc<QueueEntry<A>>> = if keep {
            t.queues.values().filter(|q| q.ctx == context.key).cloned().collect()
        } else {
            Vec::new()
        };
        drop(t);
        // No new command can resolve the allocation now; wait out the enqueue
        // calls that resolved it just before.
        let entry = into_unique(entry);
        // Kept for reuse only once no command of the context can be using it
        // (see `usm_cache`); otherwise, or when a queue fails to finish, the
        // adapter frees it, waiting for its users itself.
        if keep && queues.iter().all(|q| self.adapter.finish(&q.obj).is_ok()) {
            let block = Cached {
                key: entry.cache_key(),
                obj: entry.obj,
                base: entry.base,
            };
            self.free_cached(&c, c.usm_cache.put(block));
            return Ok(());
        }
        // SAFETY: the allocation was made in this context and no command is
        // enqueued with it any more (it left the table).
        unsafe { self.adapter.usm_free(&c.obj, entry.obj) }
    }

    /// Frees blocks the context's cache gave back (evicted, refused or
    /// drained); a failure is logged, as the caller's own free succeeded.
    pub(super) fn free_cached(&self, c: &ContextEntry<A>, blocks: Vec<Cached<A::Usm>>) {
        for b in blocks {
            // SAFETY: made by `usm_alloc` in this context; a cached block
            // left the allocation table when it was freed, and every queue
            // of the context had finished then, so no command uses it.
            if let Err(e) = unsafe { self.adapter.usm_free(&c.obj, b.obj) } {
                tracing::warn!(error = %e, base = b.base, "freeing a cached USM block failed");
            }
        }
    }

    pub(super) fn usm_pointer_info(&self, context: ContextId, ptr: UsmPtr) -> Result<UsmPointerInfo<DeviceId>> {
        let t = self.tables.read();
        self.context(&t, context)?;
        let e = t
            .usm
            .range(..=ptr.0)
            .next_back()
            .map(|(_, e)| e)
            .filter(|e| e.ctx == context.key && ptr.0 - e.base < e.size as u64)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            })?;
        Ok(UsmPointerInfo {
            kind: e.kind,
            base: UsmPtr(e.base),
            size: e.size,
            device: e.device.map(|key| DeviceId { host: self.id, key }),
        })
    }

    fn require_registration(&self, c: &ContextEntry<A>) -> Result<()> {
        if c.devices
            .iter()
            .any(|&d| !self.dev(d).info.caps.contains(DeviceCaps::HOST_REGISTER))
        {
            return Err(Error::unsupported("host memory locking"));
        }
        Ok(())
    }

    pub(super) fn lock_host(&self, context: ContextId, mem: HostPtr) -> Result<DeviceAddr> {
        let c = self.context(&self.tables.read(), context)?;
        let end = check::host_range(mem.as_ptr(), mem.len())?;
        self.require_registration(&c)?;
        let start = mem.as_ptr() as usize;
        let mut regs = c.registered.lock();
        if let Some((&s, &l)) = regs.range(..end).next_back().filter(|(&s, &l)| s + l > start) {
            return Err(Error::invalid(format!(
                "host range {start:#x}+{} overlaps the locked range {s:#x}+{l}",
                mem.len()
            )));
        }
        // SAFETY: the range is non-null, non-empty, does not wrap and
        // overlaps no lock of the context (the books are locked); the
        // HostPtr promise keeps it mapped and valid.
        let addr = unsafe { self.adapter.lock_host(&c.obj, mem)? };
        regs.insert(start, mem.len());
        tracing::trace!(start, len = mem.len(), addr = addr.0, "host range locked");
        Ok(addr)
    }

    pub(super) fn unlock_host(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        let c = self.context(&self.tables.read(), context)?;
        self.require_registration(&c)?;
        let mut regs = c.registered.lock();
        let start = mem.as_ptr() as usize;
        if regs.get(&start) != Some(&mem.len()) {
            return Err(Error::invalid(format!(
                "host range {start:#x}+{} is not locked with the context",
                mem.len()
            )));
        }
        // SAFETY: exactly a locked range of this context, unlocked once (the
        // books are locked until it is removed).
        unsafe { self.adapter.unlock_host(&c.obj, mem)? };
        regs.remove(&start);
        Ok(())
    }
}
