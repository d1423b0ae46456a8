//! Platforms, devices, contexts, queues, events, programs and kernels in
//! the dyn layer.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::tables::*;
use super::usm_cache::{self, UsmCache};
use crate::adapter::Adapter;
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;

impl<A: Adapter> AdapterHost<A> {
    pub(super) fn platforms(&self) -> Vec<PlatformId> {
        self.platform_order
            .iter()
            .map(|&key| PlatformId { host: self.id, key })
            .collect()
    }

    fn platform(&self, platform: PlatformId) -> Result<&PlatformEntry<A>> {
        self.own(platform)?;
        self.platforms.get(platform.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Platform,
        })
    }

    pub(super) fn platform_info(&self, platform: PlatformId) -> Result<PlatformInfo> {
        Ok(self.platform(platform)?.info.clone())
    }

    pub(super) fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>> {
        let p = self.platform(platform)?;
        Ok(p.devices.iter().map(|&key| DeviceId { host: self.id, key }).collect())
    }

    pub(super) fn device_info(&self, device: DeviceId) -> Result<DeviceInfo> {
        Ok(self.device(device)?.info.clone())
    }

    pub(super) fn partition_device(&self, device: DeviceId, how: &Partition) -> Result<Vec<DeviceId>> {
        let parent = self.device(device)?;
        how.check(&parent.info.limits.partition, parent.info.max_compute_units)?;
        let subs = self.adapter.partition_device(&parent.obj, how)?;
        let mut ids = Vec::with_capacity(subs.len());
        for obj in subs {
            let info = self.adapter.device_info(&obj)?;
            let key = self.subs.push(DeviceEntry {
                obj,
                info,
                platform: parent.platform,
            })?;
            ids.push(DeviceId { host: self.id, key });
        }
        tracing::debug!(?device, ?how, sub_devices = ids.len(), "device partitioned");
        Ok(ids)
    }

    pub(super) fn device_platform(&self, device: DeviceId) -> Result<PlatformId> {
        Ok(PlatformId {
            host: self.id,
            key: self.device(device)?.platform,
        })
    }

    pub(super) fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId> {
        self.context_over(devices, |objs| self.adapter.create_context(objs))
    }

    pub(super) fn create_context_from_native(
        &self,
        devices: &[DeviceId],
        handle: NativeHandle,
        owned: bool,
    ) -> Result<ContextId> {
        self.context_over(devices, |objs| self.adapter.context_from_native(objs, handle, owned))
    }

    /// A context over `devices` (checked: at least one, none twice, of one
    /// platform) that `make` makes from their adapter objects.
    fn context_over(
        &self,
        devices: &[DeviceId],
        make: impl FnOnce(&[&A::Device]) -> Result<A::Context>,
    ) -> Result<ContextId> {
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
        let obj = make(&objs)?;
        let entry = ContextEntry {
            obj,
            devices: keys,
            registered: Mutex::new(BTreeMap::new()),
            usm_cache: UsmCache::new(usm_cache::enabled_for(
                &self.adapter.backend(),
                std::env::var(usm_cache::ENV).ok().as_deref(),
            )),
        };
        let key = self.write_tables().contexts.insert(Arc::new(entry));
        Ok(ContextId { host: self.id, key })
    }

    pub(super) fn context_devices(&self, context: ContextId) -> Result<Vec<DeviceId>> {
        let c = self.context(&self.tables.read(), context)?;
        Ok(c.devices.iter().map(|&key| DeviceId { host: self.id, key }).collect())
    }

    /// Releases the handle. Buffers, queues, programs and kernels keep the
    /// context alive until they are released; USM allocations and host
    /// registrations are named by raw addresses that need the context
    /// handle to be freed, so while any remains the release is refused
    /// with [`Error::InUse`] (a memory manager's pinned host stores, say:
    /// freeing them here would leave it reading freed memory).
    pub(super) fn release_context(&self, context: ContextId) -> Result<()> {
        self.own(context)?;
        let mut t = self.write_tables();
        let c = self.context(&t, context)?;
        let usm = t.usm.values().filter(|e| e.ctx == context.key).count();
        if usm > 0 {
            return Err(Error::InUse {
                what: "context",
                users: usm,
                by: "USM allocations (free them first)",
            });
        }
        let registered = c.registered.lock().len();
        if registered > 0 {
            return Err(Error::InUse {
                what: "context",
                users: registered,
                by: "host registrations (unregister them first)",
            });
        }
        t.contexts.remove(context.key);
        drop(t);
        self.free_cached(&c, c.usm_cache.drain());
        Ok(())
    }

    pub(super) fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection> {
        let t = self.tables.read();
        let (sc, sd) = self.location(&t, src)?;
        let (dc, dd) = self.location(&t, dst)?;
        drop(t);
        Ok(self.adapter.memory_connection((&sc.obj, &sd.obj), (&dc.obj, &dd.obj)))
    }

    pub(super) fn create_queue(&self, context: ContextId, device: DeviceId, props: &QueueProps) -> Result<QueueId> {
        self.add_queue(context, device, props.profiling, |c, d| {
            if props.profiling && !d.info.caps.contains(DeviceCaps::PROFILING) {
                return Err(Error::unsupported(format!("profiling on {}", d.info.name)));
            }
            self.adapter.create_queue(&c.obj, &d.obj, props)
        })
    }

    pub(super) fn create_queue_from_native(
        &self,
        context: ContextId,
        device: DeviceId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<QueueId> {
        self.add_queue(context, device, false, |c, d| {
            self.adapter.queue_from_native(&c.obj, &d.obj, handle, owned)
        })
    }

    /// Records the queue `make` gives at (`context`, `device`), in the lane
    /// of its slot: a new queue or one adopted from the backend.
    fn add_queue(
        &self,
        context: ContextId,
        device: DeviceId,
        profiling: bool,
        make: impl FnOnce(&ContextEntry<A>, &DeviceEntry<A>) -> Result<A::Queue>,
    ) -> Result<QueueId> {
        let (c, d) = self.location(&self.tables.read(), Location::new(context, device))?;
        let obj = make(&c, d)?;
        let caps = d.info.caps;
        let key = self.write_tables().queues.insert_with_key(|key| {
            Arc::new(QueueEntry {
                obj,
                ctx: context.key,
                context: c,
                device: device.key,
                profiling,
                caps,
                lane: queue_lane(key),
            })
        });
        Ok(QueueId { host: self.id, key })
    }

    pub(super) fn queue_location(&self, queue: QueueId) -> Result<Location> {
        let q = self.queue(&self.tables.read(), queue)?;
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

    pub(super) fn release_queue(&self, queue: QueueId) -> Result<()> {
        self.own(queue)?;
        let q = self
            .write_tables()
            .queues
            .remove(queue.key)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Queue,
            })?;
        // Pending work still runs; make sure it was submitted.
        let flushed = self.adapter.flush(&q.obj);
        // Commands in flight may still borrow it (see `Held`).
        self.retire_everywhere(q);
        flushed
    }

    pub(super) fn flush(&self, queue: QueueId) -> Result<()> {
        let q = self.queue(&self.tables.read(), queue)?;
        self.adapter.flush(&q.obj)
    }

    pub(super) fn finish(&self, queue: QueueId) -> Result<()> {
        let q = self.queue(&self.tables.read(), queue)?;
        self.adapter.finish(&q.obj)
    }

    pub(super) fn queue_empty(&self, queue: QueueId) -> Result<bool> {
        let q = self.queue(&self.tables.read(), queue)?;
        self.adapter.queue_empty(&q.obj)
    }

    /// Runs `f` on borrowed events of this adapter, as one operation of
    /// their lanes' grace (see [`Held`]): a concurrent release cannot drop
    /// them under `f`.
    fn with_events<T>(&self, events: &[EventId], f: impl FnOnce(&[&A::Event]) -> Result<T>) -> Result<T> {
        let first = events.first().map_or(0, |e| unlane(e.key).0);
        let mut op = self.begin_op(first);
        let es = op.borrow_events(None, events)?;
        let r = with_refs(&es, f);
        drop((es, op));
        r
    }

    /// Runs `f` on one borrowed event, as [`AdapterHost::with_events`]
    /// does for several, without building a list.
    fn with_one_event<T>(&self, event: EventId, f: impl FnOnce(&A::Event) -> Result<T>) -> Result<T> {
        let (op, e) = self.begin_event_op(event)?;
        let r = f(e.event());
        drop((e, op));
        r
    }

    pub(super) fn event_status(&self, event: EventId) -> Result<EventStatus> {
        self.with_one_event(event, |e| self.adapter.event_status(e))
    }

    pub(super) fn wait(&self, events: &[EventId]) -> Result<()> {
        match events {
            [] => Ok(()),
            [one] => self.with_one_event(*one, |e| self.adapter.wait(&[e])),
            _ => self.with_events(events, |es| self.adapter.wait(es)),
        }
    }

    pub(super) fn event_profiling(&self, event: EventId) -> Result<ProfilingInfo> {
        let profiling = self.with_event(event, |e| e.profiling)?;
        if !profiling {
            return Err(Error::ProfilingUnavailable(
                "the event's queue was created without profiling",
            ));
        }
        self.with_one_event(event, |e| self.adapter.event_profiling(e))
    }

    pub(super) fn event_context(&self, event: EventId) -> Result<ContextId> {
        let ctx = self.with_event(event, |e| e.ctx)?;
        Ok(ContextId {
            host: self.id,
            key: ctx,
        })
    }

    pub(super) fn release_event(&self, event: EventId) -> Result<()> {
        self.remove_event(event)
    }

    pub(super) fn create_event_from_native(
        &self,
        context: ContextId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<EventId> {
        let c = self.context(&self.tables.read(), context)?;
        let obj = self.adapter.event_from_native(&c.obj, handle, owned)?;
        Ok(self.insert_event(context.key, obj))
    }

    pub(super) fn create_program(
        &self,
        context: ContextId,
        source: &ProgramSource,
        options: &str,
    ) -> Result<ProgramId> {
        let c = self.context(&self.tables.read(), context)?;
        for &d in &c.devices {
            let info = &self.dev(d).info;
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
        let key = self.write_tables().programs.insert(Arc::new(ProgramEntry {
            obj,
            ctx: context.key,
            context: c,
        }));
        Ok(ProgramId { host: self.id, key })
    }

    pub(super) fn release_program(&self, program: ProgramId) -> Result<()> {
        self.own(program)?;
        self.write_tables()
            .programs
            .remove(program.key)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Program,
            })
    }

    pub(super) fn create_kernel(&self, program: ProgramId, name: &str) -> Result<KernelId> {
        self.own(program)?;
        let p = lookup(&self.tables.read().programs, program.key, HandleKind::Program)?;
        if name.is_empty() {
            return Err(Error::invalid("empty kernel name"));
        }
        let obj = self.adapter.create_kernel(&p.obj, name)?;
        let info = self.adapter.kernel_info(&obj);
        let key = self.write_tables().kernels.insert(Arc::new(KernelEntry {
            obj,
            ctx: p.ctx,
            info,
            program: p,
        }));
        Ok(KernelId { host: self.id, key })
    }

    pub(super) fn native_handle(&self, of: NativeOf) -> Result<NativeHandle> {
        let t = self.tables.read();
        match of {
            NativeOf::Platform(p) => {
                self.own(p)?;
                let e = self.platforms.get(p.key).ok_or(Error::InvalidHandle {
                    kind: HandleKind::Platform,
                })?;
                self.adapter.native_handle(NativeObj::Platform(&e.obj))
            }
            NativeOf::Device(d) => self.adapter.native_handle(NativeObj::Device(&self.device(d)?.obj)),
            NativeOf::Context(c) => self
                .adapter
                .native_handle(NativeObj::Context(&self.context(&t, c)?.obj)),
            NativeOf::Queue(q) => self.adapter.native_handle(NativeObj::Queue(&self.queue(&t, q)?.obj)),
            NativeOf::Buffer(b) => self.adapter.native_handle(NativeObj::Buffer(&self.buffer(&t, b)?.obj)),
            NativeOf::Program(p) => {
                self.own(p)?;
                let e = lookup(&t.programs, p.key, HandleKind::Program)?;
                self.adapter.native_handle(NativeObj::Program(&e.obj))
            }
            NativeOf::Kernel(k) => {
                self.own(k)?;
                let e = lookup(&t.kernels, k.key, HandleKind::Kernel)?;
                self.adapter.native_handle(NativeObj::Kernel(&e.obj))
            }
            NativeOf::Event(e) => {
                drop(t);
                self.with_one_event(e, |ev| self.adapter.native_handle(NativeObj::Event(ev)))
            }
            NativeOf::EventQueue(e) => {
                drop(t);
                self.with_one_event(e, |ev| self.adapter.native_handle(NativeObj::EventQueue(ev)))
            }
        }
    }

    pub(super) fn create_program_from_native(
        &self,
        context: ContextId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<ProgramId> {
        let c = self.context(&self.tables.read(), context)?;
        let obj = self.adapter.program_from_native(&c.obj, handle, owned)?;
        let key = self.write_tables().programs.insert(Arc::new(ProgramEntry {
            obj,
            ctx: context.key,
            context: c,
        }));
        Ok(ProgramId { host: self.id, key })
    }

    pub(super) fn create_kernel_from_native(
        &self,
        context: ContextId,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<(ProgramId, KernelId)> {
        let c = self.context(&self.tables.read(), context)?;
        let (pobj, kobj) = self.adapter.kernel_from_native(&c.obj, handle, owned)?;
        let info = self.adapter.kernel_info(&kobj);
        let mut t = self.write_tables();
        let program = Arc::new(ProgramEntry {
            obj: pobj,
            ctx: context.key,
            context: c,
        });
        let pkey = t.programs.insert(program.clone());
        let kkey = t.kernels.insert(Arc::new(KernelEntry {
            obj: kobj,
            ctx: context.key,
            info,
            program,
        }));
        Ok((
            ProgramId {
                host: self.id,
                key: pkey,
            },
            KernelId {
                host: self.id,
                key: kkey,
            },
        ))
    }

    pub(super) fn kernel_names(&self, program: ProgramId) -> Result<Vec<String>> {
        self.own(program)?;
        let p = lookup(&self.tables.read().programs, program.key, HandleKind::Program)?;
        self.adapter.kernel_names(&p.obj)
    }

    pub(super) fn kernel_info(&self, kernel: KernelId) -> Result<KernelInfo> {
        self.own(kernel)?;
        let k = lookup(&self.tables.read().kernels, kernel.key, HandleKind::Kernel)?;
        Ok(k.info.clone())
    }

    pub(super) fn kernel_group_info(&self, kernel: KernelId, device: DeviceId) -> Result<KernelGroupInfo> {
        self.own(kernel)?;
        let k = lookup(&self.tables.read().kernels, kernel.key, HandleKind::Kernel)?;
        let d = self.device(device)?;
        if !k.program.context.devices.contains(&device.key) {
            return Err(Error::DeviceNotInContext);
        }
        self.adapter.kernel_group_info(&k.obj, &d.obj)
    }

    pub(super) fn release_kernel(&self, kernel: KernelId) -> Result<()> {
        self.own(kernel)?;
        self.write_tables()
            .kernels
            .remove(kernel.key)
            .map(drop)
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Kernel,
            })
    }
}
