//! The [`DynAdapter`] implementation of [`AdapterHost`]: every check, then the adapter call.

use std::sync::Arc;

use parking_lot::Mutex;

use super::check;
use super::tables::*;
use super::{ArgValue, BufferInfo, DynAdapter};
use crate::adapter::{Adapter, KernelArg};
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;

impl<A: Adapter> DynAdapter for AdapterHost<A> {
    fn adapter_id(&self) -> u32 {
        self.id
    }

    fn backend(&self) -> Backend {
        self.adapter.backend()
    }

    fn platforms(&self) -> Vec<PlatformId> {
        self.platform_order
            .iter()
            .map(|&key| PlatformId { host: self.id, key })
            .collect()
    }

    fn platform_info(&self, platform: PlatformId) -> Result<PlatformInfo> {
        self.own(platform)?;
        let p = self.platforms.get(platform.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Platform,
        })?;
        Ok(p.info.clone())
    }

    fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>> {
        self.own(platform)?;
        let p = self.platforms.get(platform.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Platform,
        })?;
        Ok(p.devices.iter().map(|&key| DeviceId { host: self.id, key }).collect())
    }

    fn device_info(&self, device: DeviceId) -> Result<DeviceInfo> {
        Ok(self.device(device)?.info.clone())
    }

    fn device_platform(&self, device: DeviceId) -> Result<PlatformId> {
        Ok(PlatformId {
            host: self.id,
            key: self.device(device)?.platform,
        })
    }

    fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId> {
        if devices.is_empty() {
            return Err(Error::invalid("a context needs at least one device"));
        }
        let mut objs = Vec::with_capacity(devices.len());
        let mut keys = Vec::with_capacity(devices.len());
        let mut platform = None;
        for &d in devices {
            let e = self.device(d)?;
            if keys.contains(&d.key) {
                return Err(Error::invalid(format!("device {d} listed twice")));
            }
            if *platform.get_or_insert(e.platform) != e.platform {
                return Err(Error::invalid("context devices must belong to one platform"));
            }
            objs.push(&e.obj);
            keys.push(d.key);
        }
        let obj = self.adapter.create_context(&objs)?;
        let key = self
            .tables
            .lock()
            .contexts
            .insert(Arc::new(ContextEntry { obj, devices: keys }));
        Ok(ContextId { host: self.id, key })
    }

    fn context_devices(&self, context: ContextId) -> Result<Vec<DeviceId>> {
        let c = self.context(&self.tables.lock(), context)?;
        Ok(c.devices.iter().map(|&key| DeviceId { host: self.id, key }).collect())
    }

    fn release_context(&self, context: ContextId) -> Result<()> {
        self.own(context)?;
        let mut t = self.tables.lock();
        let c = t.contexts.remove(context.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Context,
        })?;
        let leaked: Vec<u64> = t
            .usm
            .iter()
            .filter(|(_, e)| e.ctx == context.key)
            .map(|(&b, _)| b)
            .collect();
        for base in leaked {
            tracing::warn!(ptr = %UsmPtr(base), "freeing a USM allocation left in a released context");
            t.usm.remove(&base);
            if let Err(e) = self.adapter.usm_free(&c.obj, UsmPtr(base)) {
                tracing::warn!(error = %e, "freeing a leaked USM allocation failed");
            }
        }
        Ok(())
    }

    fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection> {
        let t = self.tables.lock();
        let (sc, sd) = self.location(&t, src)?;
        let (dc, dd) = self.location(&t, dst)?;
        drop(t);
        Ok(self.adapter.memory_connection((&sc.obj, &sd.obj), (&dc.obj, &dd.obj)))
    }

    fn create_buffer(
        &self,
        context: ContextId,
        desc: &BufferDesc<DeviceId>,
        init: Option<HostPtr>,
    ) -> Result<BufferId> {
        let c = self.context(&self.tables.lock(), context)?;
        if desc.size == 0 {
            return Err(Error::InvalidSize {
                what: "buffer",
                size: 0,
            });
        }
        check::mem_flags(desc.flags, desc.size, init.map(HostPtr::len))?;
        let device = match desc.device_hint {
            Some(d) => {
                self.device(d)?;
                if !c.devices.contains(&d.key) {
                    return Err(Error::DeviceNotInContext);
                }
                d.key
            }
            None => c.devices[0],
        };
        let info = &self.devices[device].info;
        if desc.size as u64 > info.max_alloc_size {
            return Err(Error::InvalidSize {
                what: "buffer (larger than the device's largest allocation)",
                size: desc.size,
            });
        }
        if desc.flags.contains(MemFlags::USE_HOST_PTR) && !info.caps.contains(DeviceCaps::USE_HOST_PTR) {
            return Err(Error::unsupported("buffers over caller memory (USE_HOST_PTR)"));
        }
        let dev = &self.devices[device].obj;
        let obj = self.adapter.create_buffer(&c.obj, &desc.map_device(|_| dev), init)?;
        let entry = BufferEntry {
            obj,
            ctx: context.key,
            context: c,
            size: desc.size,
            flags: desc.flags,
            device,
            parent: None,
            maps: Mutex::new(Vec::new()),
        };
        let key = self.tables.lock().buffers.insert(Arc::new(entry));
        Ok(BufferId { host: self.id, key })
    }

    fn create_sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> Result<BufferId> {
        let p = self.buffer(&self.tables.lock(), parent)?;
        if p.parent.is_some() {
            return Err(Error::invalid("a sub-buffer cannot be created from a sub-buffer"));
        }
        check::range("parent buffer", offset, size, p.size)?;
        let mut align = 1;
        for &d in &p.context.devices {
            let info = &self.devices[d].info;
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
        let obj = self.adapter.create_sub_buffer(&p.obj, offset, size)?;
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
        let key = self.tables.lock().buffers.insert(Arc::new(entry));
        Ok(BufferId { host: self.id, key })
    }

    fn buffer_info(&self, buffer: BufferId) -> Result<BufferInfo> {
        let b = self.buffer(&self.tables.lock(), buffer)?;
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

    fn release_buffer(&self, buffer: BufferId) -> Result<()> {
        self.own(buffer)?;
        self.tables
            .lock()
            .buffers
            .remove(buffer.key)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Buffer,
            })
    }

    fn usm_alloc(&self, context: ContextId, desc: &UsmDesc<DeviceId>) -> Result<UsmPtr> {
        let c = self.context(&self.tables.lock(), context)?;
        if desc.size == 0 {
            return Err(Error::InvalidSize {
                what: "USM allocation",
                size: 0,
            });
        }
        check::alignment(desc.align)?;
        let need = match desc.kind {
            UsmKind::Host => UsmCaps::HOST,
            UsmKind::Device => UsmCaps::DEVICE,
            UsmKind::Shared => UsmCaps::SHARED,
        };
        let device = match desc.device {
            Some(d) => {
                self.device(d)?;
                if !c.devices.contains(&d.key) {
                    return Err(Error::DeviceNotInContext);
                }
                Some(d.key)
            }
            None if desc.kind == UsmKind::Device => {
                return Err(Error::invalid("a device USM allocation needs a device"))
            }
            None => None,
        };
        let checked: Vec<DeviceKey> = match device {
            Some(d) => vec![d],
            None => c.devices.clone(),
        };
        for d in checked {
            let info = &self.devices[d].info;
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
        }
        let dev = device.map(|d| &self.devices[d].obj);
        let ptr = self
            .adapter
            .usm_alloc(&c.obj, &desc.map_device(|_| dev.expect("device checked above")))?;
        let entry = UsmEntry {
            ctx: context.key,
            context: c,
            kind: desc.kind,
            size: desc.size,
            device,
        };
        self.tables.lock().usm.insert(ptr.0, entry);
        Ok(ptr)
    }

    fn usm_free(&self, context: ContextId, ptr: UsmPtr) -> Result<()> {
        let mut t = self.tables.lock();
        let c = self.context(&t, context)?;
        match t.usm.get(&ptr.0) {
            Some(e) if e.ctx == context.key => {}
            _ => {
                return Err(Error::InvalidHandle {
                    kind: HandleKind::UsmPointer,
                })
            }
        }
        t.usm.remove(&ptr.0);
        drop(t);
        self.adapter.usm_free(&c.obj, ptr)
    }

    fn usm_pointer_info(&self, context: ContextId, ptr: UsmPtr) -> Result<UsmPointerInfo<DeviceId>> {
        let t = self.tables.lock();
        self.context(&t, context)?;
        let (base, e) = t
            .usm
            .range(..=ptr.0)
            .next_back()
            .filter(|(b, e)| e.ctx == context.key && ptr.0 < *b + e.size as u64)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            })?;
        Ok(UsmPointerInfo {
            kind: e.kind,
            base: UsmPtr(*base),
            size: e.size,
            device: e.device.map(|key| DeviceId { host: self.id, key }),
        })
    }

    fn host_register(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        let c = self.context(&self.tables.lock(), context)?;
        if mem.is_empty() {
            return Err(Error::InvalidSize {
                what: "host registration",
                size: 0,
            });
        }
        if c.devices
            .iter()
            .any(|&d| !self.devices[d].info.caps.contains(DeviceCaps::HOST_REGISTER))
        {
            return Err(Error::unsupported("host memory registration"));
        }
        self.adapter.host_register(&c.obj, mem)
    }

    fn host_unregister(&self, context: ContextId, mem: HostPtr) -> Result<()> {
        let c = self.context(&self.tables.lock(), context)?;
        if c.devices
            .iter()
            .any(|&d| !self.devices[d].info.caps.contains(DeviceCaps::HOST_REGISTER))
        {
            return Err(Error::unsupported("host memory registration"));
        }
        self.adapter.host_unregister(&c.obj, mem)
    }

    fn create_queue(&self, context: ContextId, device: DeviceId, props: &QueueProps) -> Result<QueueId> {
        let (c, d) = self.location(&self.tables.lock(), Location::new(context, device))?;
        if props.profiling && !d.info.caps.contains(DeviceCaps::PROFILING) {
            return Err(Error::unsupported(format!("profiling on {}", d.info.name)));
        }
        let obj = self.adapter.create_queue(&c.obj, &d.obj, props)?;
        let entry = QueueEntry {
            obj,
            ctx: context.key,
            context: c,
            device: device.key,
            profiling: props.profiling,
        };
        let key = self.tables.lock().queues.insert(Arc::new(entry));
        Ok(QueueId { host: self.id, key })
    }

    fn queue_location(&self, queue: QueueId) -> Result<Location> {
        let q = self.queue(&self.tables.lock(), queue)?;
        Ok(Location::new(
            ContextId {
                host: self.id,
                key: q.ctx,
            },
            DeviceId {
                host: self.id,
                key: q.device,
            },
        ))
    }

    fn release_queue(&self, queue: QueueId) -> Result<()> {
        self.own(queue)?;
        let q = self
            .tables
            .lock()
            .queues
            .remove(queue.key)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Queue,
            })?;
        // Pending work still runs; make sure it was submitted.
        self.adapter.flush(&q.obj)
    }

    fn flush(&self, queue: QueueId) -> Result<()> {
        let q = self.queue(&self.tables.lock(), queue)?;
        self.adapter.flush(&q.obj)
    }

    fn finish(&self, queue: QueueId) -> Result<()> {
        let q = self.queue(&self.tables.lock(), queue)?;
        self.adapter.finish(&q.obj)
    }

    fn event_status(&self, event: EventId) -> Result<EventStatus> {
        let e = self.event(&self.tables.lock(), event)?;
        self.adapter.event_status(e.event())
    }

    fn wait(&self, events: &[EventId]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let t = self.tables.lock();
        let es: Vec<_> = events.iter().map(|&e| self.event(&t, e)).collect::<Result<_>>()?;
        drop(t);
        self.adapter.wait(&refs(&es))
    }

    fn event_profiling(&self, event: EventId) -> Result<ProfilingInfo> {
        let e = self.event(&self.tables.lock(), event)?;
        if !e.profiling {
            return Err(Error::ProfilingUnavailable(
                "the event's queue was created without profiling",
            ));
        }
        self.adapter.event_profiling(e.event())
    }

    fn release_event(&self, event: EventId) -> Result<()> {
        self.own(event)?;
        let mut t = self.tables.lock();
        let mut entry = t.events.remove(event.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Event,
        })?;
        // A unique entry goes back to the pool; one a concurrent wait still
        // holds is simply dropped when that wait ends.
        let obj = Arc::get_mut(&mut entry).and_then(|e| e.obj.take());
        if obj.is_some() && t.event_pool.len() < EVENT_POOL {
            t.event_pool.push(entry);
        }
        drop(t);
        // The adapter's event is released outside the table lock.
        drop(obj);
        Ok(())
    }

    fn create_program(&self, context: ContextId, source: &ProgramSource, options: &str) -> Result<ProgramId> {
        let c = self.context(&self.tables.lock(), context)?;
        for &d in &c.devices {
            let info = &self.devices[d].info;
            if !info.caps.contains(DeviceCaps::KERNELS) {
                return Err(Error::unsupported(format!("kernels on {}", info.name)));
            }
            if !info.program_formats.contains(source.format()) {
                return Err(Error::unsupported(format!(
                    "{:?} programs on {}",
                    source.format(),
                    info.name
                )));
            }
        }
        let obj = self.adapter.create_program(&c.obj, source, options)?;
        let key = self.tables.lock().programs.insert(Arc::new(ProgramEntry {
            obj,
            ctx: context.key,
            context: c,
        }));
        Ok(ProgramId { host: self.id, key })
    }

    fn release_program(&self, program: ProgramId) -> Result<()> {
        self.own(program)?;
        self.tables
            .lock()
            .programs
            .remove(program.key)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Program,
            })
    }

    fn create_kernel(&self, program: ProgramId, name: &str) -> Result<KernelId> {
        self.own(program)?;
        let p = lookup(&self.tables.lock().programs, program.key, HandleKind::Program)?;
        if name.is_empty() {
            return Err(Error::invalid("empty kernel name"));
        }
        let obj = self.adapter.create_kernel(&p.obj, name)?;
        let key = self.tables.lock().kernels.insert(Arc::new(KernelEntry {
            obj,
            ctx: p.ctx,
            program: p,
        }));
        Ok(KernelId { host: self.id, key })
    }

    fn release_kernel(&self, kernel: KernelId) -> Result<()> {
        self.own(kernel)?;
        self.tables
            .lock()
            .kernels
            .remove(kernel.key)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Kernel,
            })
    }

    fn enqueue_read(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        check::range("buffer", offset, dst.len(), b.size)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let ev = self.adapter.enqueue_read(&q.obj, &b.obj, offset, dst, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_write(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        check::range("buffer", offset, src.len(), b.size)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let ev = self.adapter.enqueue_write(&q.obj, &b.obj, offset, src, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_copy(
        &self,
        queue: QueueId,
        src: BufferId,
        src_offset: usize,
        dst: BufferId,
        dst_offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, s, w) = self.queue_buffer_wait(queue, src, wait)?;
        let d = self.buffer(&self.tables.lock(), dst)?;
        check::range("source buffer", src_offset, size, s.size)?;
        check::range("destination buffer", dst_offset, size, d.size)?;
        self.buffer_on_queue("source buffer", &s, &q, true)?;
        self.buffer_on_queue("destination buffer", &d, &q, true)?;
        if same_memory(&s, &d) && check::overlaps(abs_offset(&s) + src_offset, abs_offset(&d) + dst_offset, size) {
            return Err(Error::invalid("source and destination regions overlap"));
        }
        let ev = self
            .adapter
            .enqueue_copy(&q.obj, &s.obj, src_offset, &d.obj, dst_offset, size, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_copy_rect(
        &self,
        queue: QueueId,
        src: BufferId,
        dst: BufferId,
        rect: &RectCopy,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, s, w) = self.queue_buffer_wait(queue, src, wait)?;
        let d = self.buffer(&self.tables.lock(), dst)?;
        let rect = check::rect(rect, s.size, d.size)?;
        self.buffer_on_queue("source buffer", &s, &q, true)?;
        self.buffer_on_queue("destination buffer", &d, &q, true)?;
        if same_memory(&s, &d) {
            let (a, b) = (abs_offset(&s), abs_offset(&d));
            let src_span = (a + rect.src.start(), a + rect.src.end(rect.extent));
            let dst_span = (b + rect.dst.start(), b + rect.dst.end(rect.extent));
            if src_span.0 < dst_span.1 && dst_span.0 < src_span.1 {
                return Err(Error::invalid("source and destination rect regions overlap"));
            }
        }
        let ev = self
            .adapter
            .enqueue_copy_rect(&q.obj, &s.obj, &d.obj, &rect, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_read_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        let rect = check::rect(rect, b.size, dst.len())?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let ev = self.adapter.enqueue_read_rect(&q.obj, &b.obj, &rect, dst, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_write_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        let rect = check::rect(rect, src.len(), b.size)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let ev = self.adapter.enqueue_write_rect(&q.obj, &b.obj, &rect, src, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_fill(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        check::range("buffer", offset, size, b.size)?;
        self.check_fill_pattern(&q, pattern, offset, size)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let ev = self
            .adapter
            .enqueue_fill(&q.obj, &b.obj, offset, size, pattern, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_map(
        &self,
        queue: QueueId,
        buffer: BufferId,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<(EventId, HostPtr)> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        if !self.queue_caps(&q).caps.contains(DeviceCaps::MAP) {
            return Err(Error::unsupported("buffer mapping"));
        }
        check::map_flags(flags)?;
        check::range("buffer", offset, size, b.size)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let (ev, ptr) = self
            .adapter
            .enqueue_map(&q.obj, &b.obj, flags, offset, size, &refs(&w))?;
        b.maps.lock().push((ptr.as_ptr() as usize, ptr.len()));
        Ok((self.new_event(ev, &q), ptr))
    }

    fn enqueue_unmap(&self, queue: QueueId, buffer: BufferId, mapped: HostPtr, wait: &[EventId]) -> Result<EventId> {
        let (q, b, w) = self.queue_buffer_wait(queue, buffer, wait)?;
        self.buffer_on_queue("buffer", &b, &q, false)?;
        let key = (mapped.as_ptr() as usize, mapped.len());
        let index = b
            .maps
            .lock()
            .iter()
            .position(|m| *m == key)
            .ok_or_else(|| Error::invalid("pointer is not a live mapping of this buffer"))?;
        let ev = self.adapter.enqueue_unmap(&q.obj, &b.obj, mapped, &refs(&w))?;
        b.maps.lock().swap_remove(index);
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_usm_copy(
        &self,
        queue: QueueId,
        dst: MemRef,
        src: MemRef,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        let w = self.wait_list(&t, q.ctx, wait)?;
        if size == 0 {
            return Err(Error::InvalidSize {
                what: "USM copy",
                size: 0,
            });
        }
        self.mem_ref(&t, &q, dst, size)?;
        self.mem_ref(&t, &q, src, size)?;
        drop(t);
        // Only addresses of one space can be compared: USM with USM, host with host.
        let span = match (src, dst) {
            (MemRef::Usm(a), MemRef::Usm(b)) => Some((a.0, b.0)),
            (MemRef::Host(a), MemRef::Host(b)) => Some((a.as_ptr() as u64, b.as_ptr() as u64)),
            _ => None,
        };
        if let Some((a, b)) = span {
            if a < b + size as u64 && b < a + size as u64 {
                return Err(Error::invalid("copy source and destination overlap"));
            }
        }
        let ev = self.adapter.enqueue_usm_copy(&q.obj, dst, src, size, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_usm_fill(
        &self,
        queue: QueueId,
        ptr: UsmPtr,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        let w = self.wait_list(&t, q.ctx, wait)?;
        if size == 0 {
            return Err(Error::InvalidSize {
                what: "USM fill",
                size: 0,
            });
        }
        self.usm_range(&t, &q, ptr, size, false)?;
        drop(t);
        self.check_fill_pattern(&q, pattern, 0, size)?;
        let ev = self.adapter.enqueue_usm_fill(&q.obj, ptr, size, pattern, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_usm_prefetch(&self, queue: QueueId, ptr: UsmPtr, size: usize, wait: &[EventId]) -> Result<EventId> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        let w = self.wait_list(&t, q.ctx, wait)?;
        self.usm_range(&t, &q, ptr, size, true)?;
        drop(t);
        let ev = self.adapter.enqueue_usm_prefetch(&q.obj, ptr, size, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn usm_advise(&self, queue: QueueId, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        self.usm_range(&t, &q, ptr, size, true)?;
        drop(t);
        if advice.contains(UsmAdvice::PREFER_DEVICE | UsmAdvice::PREFER_HOST) {
            return Err(Error::invalid("PREFER_DEVICE and PREFER_HOST exclude each other"));
        }
        self.adapter.usm_advise(&q.obj, ptr, size, advice)
    }

    fn enqueue_launch(
        &self,
        queue: QueueId,
        kernel: KernelId,
        range: &NdRange,
        args: &[ArgValue<'_>],
        wait: &[EventId],
    ) -> Result<EventId> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        self.own(kernel)?;
        let k = lookup(&t.kernels, kernel.key, HandleKind::Kernel)?;
        let w = self.wait_list(&t, q.ctx, wait)?;
        if k.ctx != q.ctx {
            return Err(Error::WrongContext { what: "kernel" });
        }
        let mut buffers = Vec::new();
        for a in args {
            match *a {
                ArgValue::Buffer(b) => buffers.push(self.buffer(&t, b)?),
                ArgValue::Usm(p) => self.usm_range(&t, &q, p, 1, false)?,
                ArgValue::Scalar([]) => return Err(Error::InvalidKernelArgs("empty scalar argument".into())),
                ArgValue::Local(0) => return Err(Error::InvalidKernelArgs("zero-sized local memory".into())),
                _ => {}
            }
        }
        drop(t);
        check::nd_range(range, self.queue_caps(&q).max_work_group_size)?;
        for b in &buffers {
            self.buffer_on_queue("kernel buffer argument", b, &q, false)?;
        }
        let mut bufs = buffers.iter();
        let adapter_args: Vec<KernelArg<'_, A>> = args
            .iter()
            .map(|a| match *a {
                ArgValue::Buffer(_) => KernelArg::Buffer(&bufs.next().expect("one entry per buffer argument").obj),
                ArgValue::Usm(p) => KernelArg::Usm(p),
                ArgValue::Scalar(s) => KernelArg::Scalar(s),
                ArgValue::Local(n) => KernelArg::Local(n),
            })
            .collect();
        let ev = self
            .adapter
            .enqueue_launch(&q.obj, &k.obj, range, &adapter_args, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }

    fn enqueue_barrier(&self, queue: QueueId, wait: &[EventId]) -> Result<EventId> {
        let t = self.tables.lock();
        let q = self.queue(&t, queue)?;
        let w = self.wait_list(&t, q.ctx, wait)?;
        drop(t);
        let ev = self.adapter.enqueue_barrier(&q.obj, &refs(&w))?;
        Ok(self.new_event(ev, &q))
    }
}
