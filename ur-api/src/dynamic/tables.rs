//! The dyn layer's tables: one entry type per object kind, and the lookups
//! and location checks every [`AdapterHost`] method shares.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use slotmap::SlotMap;

use super::check;
use crate::adapter::{Adapter, UsmRef};
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;

pub(super) struct PlatformEntry<A: Adapter> {
    #[allow(dead_code)] // reason: kept so the adapter's platform outlives its devices.
    pub(super) obj: A::Platform,
    pub(super) info: PlatformInfo,
    pub(super) devices: Vec<DeviceKey>,
}

pub(super) struct DeviceEntry<A: Adapter> {
    pub(super) obj: A::Device,
    pub(super) info: DeviceInfo,
    pub(super) platform: PlatformKey,
}

pub(super) struct ContextEntry<A: Adapter> {
    pub(super) obj: A::Context,
    pub(super) devices: Vec<DeviceKey>,
    /// Host ranges registered with the context: start address -> length.
    pub(super) registered: Mutex<BTreeMap<usize, usize>>,
}

pub(super) struct BufferEntry<A: Adapter> {
    pub(super) obj: A::Buffer,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) size: usize,
    pub(super) flags: MemFlags,
    /// The device the memory was placed for: its location is (ctx, device).
    pub(super) device: DeviceKey,
    /// Parent key, offset in it, and the parent kept alive.
    pub(super) parent: Option<(BufferKey, usize, Arc<BufferEntry<A>>)>,
    /// Live mappings: (address, length).
    pub(super) maps: Mutex<Vec<(usize, usize)>>,
}

pub(super) struct QueueEntry<A: Adapter> {
    pub(super) obj: A::Queue,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) device: DeviceKey,
    pub(super) profiling: bool,
}

/// An event's entry. It enters the table as a placeholder in the same
/// critical section that resolves its command (one table lock per
/// enqueue), and the adapter's event is published into it after the
/// adapter call returns, by the enqueueing thread, before the handle is
/// handed out.
///
/// `obj` is written only through `&mut self` (the entry is unique: fresh
/// or pooled) or once by [`EventEntry::publish`] while `ready` is false;
/// it is read only after `ready` was seen true (`Acquire`, pairing with
/// publish's `Release`), or through `&mut self`.
pub(super) struct EventEntry<A: Adapter> {
    /// The adapter's event: `None` while the entry waits in the pool.
    obj: std::cell::UnsafeCell<Option<A::Event>>,
    /// `obj` holds the event and no longer changes while shared.
    ready: std::sync::atomic::AtomicBool,
    pub(super) ctx: ContextKey,
    pub(super) profiling: bool,
}

// SAFETY: `obj` is only accessed as the type's docs say: written once
// before `ready` is set (Release) or through `&mut`, read after `ready` is
// seen (Acquire); `A::Event` is `Send + Sync`, so sharing `&A::Event`
// across threads is sound.
unsafe impl<A: Adapter> Sync for EventEntry<A> {}

impl<A: Adapter> EventEntry<A> {
    /// An empty entry (no event yet).
    pub(super) fn empty(ctx: ContextKey, profiling: bool) -> Self {
        EventEntry {
            obj: std::cell::UnsafeCell::new(None),
            ready: std::sync::atomic::AtomicBool::new(false),
            ctx,
            profiling,
        }
    }

    /// Whether the event was published (a placeholder is not yet).
    pub(super) fn is_ready(&self) -> bool {
        self.ready.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The adapter's event of a published entry (lookups hand out only
    /// those: see [`AdapterHost::event`]).
    pub(super) fn event(&self) -> &A::Event {
        assert!(self.is_ready(), "only published event entries are looked up");
        // SAFETY: `ready` was seen true with Acquire: `obj` was written
        // before it was set and is not written again while shared.
        unsafe { &*self.obj.get() }
            .as_ref()
            .expect("a published entry holds an event")
    }

    /// Publishes the adapter's event into a placeholder.
    ///
    /// # Safety
    ///
    /// Called once, by the thread that inserted the placeholder, before its
    /// handle is handed out, and only on an entry not yet published.
    pub(super) unsafe fn publish(&self, obj: A::Event) {
        // SAFETY: the caller's promise: nobody reads `obj` before `ready` is
        // set, and nobody else writes it.
        unsafe { *self.obj.get() = Some(obj) };
        self.ready.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Takes the event out of a unique entry (for the pool).
    pub(super) fn take(&mut self) -> Option<A::Event> {
        *self.ready.get_mut() = false;
        self.obj.get_mut().take()
    }

    /// Resets a unique (pooled or fresh) entry for a new command.
    pub(super) fn reset(&mut self, ctx: ContextKey, profiling: bool) {
        debug_assert!(self.obj.get_mut().is_none());
        *self.ready.get_mut() = false;
        self.ctx = ctx;
        self.profiling = profiling;
    }
}

/// An event entry reserved for a command being enqueued (see
/// [`AdapterHost::reserve_event`]).
pub(super) struct Reserved<A: Adapter> {
    key: EventKey,
    entry: *const EventEntry<A>,
}

/// How many released event entries are kept for reuse: an enqueue then
/// allocates nothing in the dyn layer.
pub(super) const EVENT_POOL: usize = 1024;

pub(super) struct ProgramEntry<A: Adapter> {
    pub(super) obj: A::Program,
    pub(super) ctx: ContextKey,
    #[allow(dead_code)] // reason: keeps the context alive while the program lives.
    pub(super) context: Arc<ContextEntry<A>>,
}

pub(super) struct KernelEntry<A: Adapter> {
    pub(super) obj: A::Kernel,
    pub(super) ctx: ContextKey,
    /// Argument count and sizes, as the adapter reported them.
    pub(super) info: KernelInfo,
    #[allow(dead_code)] // reason: keeps the program alive while the kernel lives.
    pub(super) program: Arc<ProgramEntry<A>>,
}

pub(super) struct UsmEntry<A: Adapter> {
    pub(super) obj: A::Usm,
    pub(super) base: u64,
    pub(super) ctx: ContextKey,
    pub(super) context: Arc<ContextEntry<A>>,
    pub(super) kind: UsmKind,
    pub(super) size: usize,
    pub(super) device: Option<DeviceKey>,
}

pub(super) struct Tables<A: Adapter> {
    pub(super) contexts: SlotMap<ContextKey, Arc<ContextEntry<A>>>,
    pub(super) buffers: SlotMap<BufferKey, Arc<BufferEntry<A>>>,
    pub(super) queues: SlotMap<QueueKey, Arc<QueueEntry<A>>>,
    pub(super) events: SlotMap<EventKey, Arc<EventEntry<A>>>,
    /// Released event entries (unique, empty) kept for reuse.
    pub(super) event_pool: Vec<Arc<EventEntry<A>>>,
    pub(super) programs: SlotMap<ProgramKey, Arc<ProgramEntry<A>>>,
    pub(super) kernels: SlotMap<KernelKey, Arc<KernelEntry<A>>>,
    /// USM allocations by base address. Commands hold an entry only while
    /// the adapter's enqueue call runs.
    pub(super) usm: BTreeMap<u64, Arc<UsmEntry<A>>>,
}

pub(super) fn lookup<K: slotmap::Key, V: Clone>(map: &SlotMap<K, V>, key: K, kind: HandleKind) -> Result<V> {
    map.get(key).cloned().ok_or(Error::InvalidHandle { kind })
}

pub(super) fn refs<A: Adapter>(events: &[Arc<EventEntry<A>>]) -> Vec<&A::Event> {
    if events.is_empty() {
        return Vec::new();
    }
    events.iter().map(|e| e.event()).collect()
}

/// How memory is used by a command: in place (reads, writes, fills, maps,
/// kernel arguments), or as a side of a copy between two memories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Use {
    /// Touched by the command at the queue's location: needs `Unified`.
    InPlace,
    /// Copied from or to by the adapter: `Unified` or `Migratable`.
    Copy,
}

/// A USM range resolved to its allocation (held while the command is enqueued).
pub(super) struct UsmSpan<A: Adapter> {
    pub(super) entry: Arc<UsmEntry<A>>,
    pub(super) offset: usize,
}

impl<A: Adapter> UsmSpan<A> {
    pub(super) fn as_ref(&self) -> UsmRef<'_, A> {
        UsmRef {
            alloc: &self.entry.obj,
            offset: self.offset,
            ptr: UsmPtr(self.entry.base + self.offset as u64),
        }
    }
}

/// Wraps an [`Adapter`] as a [`DynAdapter`](super::DynAdapter): handle tables and every check.
///
/// ```
/// # fn demo<A: ur_api::Adapter>(adapter: A) -> ur_api::Result<()> {
/// use ur_api::{AdapterHost, DynAdapter};
/// let host = AdapterHost::new(adapter)?;
/// for p in host.platforms() {
///     println!("{} devices", host.devices(p)?.len());
/// }
/// # Ok(()) }
/// ```
pub struct AdapterHost<A: Adapter> {
    pub(super) id: u32,
    pub(super) adapter: A,
    pub(super) platforms: SlotMap<PlatformKey, PlatformEntry<A>>,
    pub(super) platform_order: Vec<PlatformKey>,
    pub(super) devices: SlotMap<DeviceKey, DeviceEntry<A>>,
    pub(super) tables: Mutex<Tables<A>>,
}

impl<A: Adapter> std::fmt::Debug for AdapterHost<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterHost")
            .field("id", &self.id)
            .field("backend", &self.adapter.backend())
            .field("devices", &self.devices.len())
            .finish_non_exhaustive()
    }
}

impl<A: Adapter> AdapterHost<A> {
    /// Enumerates the adapter's platforms and devices once; platforms with
    /// no devices are skipped.
    pub fn new(adapter: A) -> Result<Self> {
        let mut platforms = SlotMap::with_key();
        let mut platform_order = Vec::new();
        let mut devices = SlotMap::with_key();
        for p in adapter.platforms()? {
            let info = adapter.platform_info(&p)?;
            let devs = adapter.devices(&p)?;
            if devs.is_empty() {
                tracing::debug!(platform = %info.name, "skipping platform with no devices");
                continue;
            }
            let pkey = platforms.insert_with_key(|_| PlatformEntry {
                obj: p,
                info,
                devices: Vec::new(),
            });
            let mut keys = Vec::new();
            for d in devs {
                let dinfo = adapter.device_info(&d)?;
                keys.push(devices.insert(DeviceEntry {
                    obj: d,
                    info: dinfo,
                    platform: pkey,
                }));
            }
            platforms[pkey].devices = keys;
            platform_order.push(pkey);
        }
        Ok(AdapterHost {
            id: next_host_id(),
            adapter,
            platforms,
            platform_order,
            devices,
            tables: Mutex::new(Tables {
                contexts: SlotMap::with_key(),
                buffers: SlotMap::with_key(),
                queues: SlotMap::with_key(),
                events: SlotMap::with_key(),
                event_pool: Vec::new(),
                programs: SlotMap::with_key(),
                kernels: SlotMap::with_key(),
                usm: BTreeMap::new(),
            }),
        })
    }

    /// The wrapped adapter (for benchmarks and adapter-specific extras).
    pub fn adapter(&self) -> &A {
        &self.adapter
    }
}

impl<A: Adapter> AdapterHost<A> {
    pub(super) fn own<H: Handle>(&self, h: H) -> Result<()> {
        if h.adapter_id() == self.id {
            Ok(())
        } else {
            Err(Error::InvalidHandle { kind: H::KIND })
        }
    }

    pub(super) fn device(&self, id: DeviceId) -> Result<&DeviceEntry<A>> {
        self.own(id)?;
        self.devices.get(id.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Device,
        })
    }

    pub(super) fn context(&self, t: &Tables<A>, id: ContextId) -> Result<Arc<ContextEntry<A>>> {
        self.own(id)?;
        lookup(&t.contexts, id.key, HandleKind::Context)
    }

    pub(super) fn buffer(&self, t: &Tables<A>, id: BufferId) -> Result<Arc<BufferEntry<A>>> {
        self.own(id)?;
        lookup(&t.buffers, id.key, HandleKind::Buffer)
    }

    pub(super) fn queue(&self, t: &Tables<A>, id: QueueId) -> Result<Arc<QueueEntry<A>>> {
        self.own(id)?;
        lookup(&t.queues, id.key, HandleKind::Queue)
    }

    /// A published event (a placeholder whose command is still being
    /// enqueued has no handle out yet: its key is treated as unknown).
    pub(super) fn event(&self, t: &Tables<A>, id: EventId) -> Result<Arc<EventEntry<A>>> {
        self.own(id)?;
        match t.events.get(id.key) {
            Some(e) if e.is_ready() => Ok(e.clone()),
            _ => Err(Error::InvalidHandle {
                kind: HandleKind::Event,
            }),
        }
    }

    pub(super) fn kernel(&self, t: &Tables<A>, id: KernelId) -> Result<Arc<KernelEntry<A>>> {
        self.own(id)?;
        lookup(&t.kernels, id.key, HandleKind::Kernel)
    }

    /// Events of a wait list: alive, of this adapter, of the queue's context.
    pub(super) fn wait_list(
        &self,
        t: &Tables<A>,
        ctx: ContextKey,
        wait: &[EventId],
    ) -> Result<Vec<Arc<EventEntry<A>>>> {
        if wait.is_empty() {
            return Ok(Vec::new());
        }
        wait.iter()
            .map(|&id| {
                let e = self.event(t, id)?;
                if e.ctx != ctx {
                    return Err(Error::WrongContext {
                        what: "wait-list event",
                    });
                }
                Ok(e)
            })
            .collect()
    }

    /// A context and one of its devices.
    pub(super) fn location(&self, t: &Tables<A>, loc: Location) -> Result<(Arc<ContextEntry<A>>, &DeviceEntry<A>)> {
        let c = self.context(t, loc.context)?;
        let d = self.device(loc.device)?;
        if !c.devices.contains(&loc.device.key) {
            return Err(Error::DeviceNotInContext);
        }
        Ok((c, d))
    }

    /// Memory allocated at (`ctx`, `dev`) may be used on queue `q`: at its
    /// own location, or where the adapter answers `Unified` (or, for a
    /// copy, `Migratable`). `dev == None` is memory every device of its
    /// context reaches (host and shared USM).
    ///
    /// This is the central invariant's check: a command never makes an
    /// adapter or driver move data between locations behind the memory
    /// manager's back (OpenCL's implicit migration, CUDA's peer copies).
    pub(super) fn usable_at(
        &self,
        what: &'static str,
        ctx: &ContextEntry<A>,
        ctx_key: ContextKey,
        dev: Option<DeviceKey>,
        q: &QueueEntry<A>,
        how: Use,
    ) -> Result<()> {
        if ctx_key == q.ctx && dev.is_none_or(|d| d == q.device) {
            return Ok(());
        }
        let src_dev = dev.unwrap_or(ctx.devices[0]);
        let connection = self.adapter.memory_connection(
            (&ctx.obj, &self.devices[src_dev].obj),
            (&q.context.obj, &self.devices[q.device].obj),
        );
        match (connection, how) {
            (MemoryConnection::Unified, _) | (MemoryConnection::Migratable, Use::Copy) => Ok(()),
            _ => Err(Error::NotAccessible {
                what,
                connection,
                copy: how == Use::Copy,
            }),
        }
    }

    /// A buffer usable on `q` for `how`.
    pub(super) fn buffer_at(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        id: BufferId,
        what: &'static str,
        how: Use,
    ) -> Result<Arc<BufferEntry<A>>> {
        let b = self.buffer(t, id)?;
        self.usable_at(what, &b.context, b.ctx, Some(b.device), q, how)?;
        Ok(b)
    }

    pub(super) fn queue_caps(&self, q: &QueueEntry<A>) -> &DeviceInfo {
        &self.devices[q.device].info
    }

    /// Inserts a placeholder event entry for a command being enqueued on
    /// `q` (called under the table lock that resolved the command); the
    /// adapter's event is published into it with [`AdapterHost::publish`],
    /// or it is removed with [`AdapterHost::unreserve`] if the call fails.
    ///
    /// The returned [`Reserved`] points into the table without holding a
    /// count: a placeholder stays in the table until this thread publishes
    /// or unreserves it, since nothing else removes an entry that is not
    /// published (`release_event` refuses it, no handle to it is out).
    pub(super) fn reserve_event(&self, t: &mut Tables<A>, q: &QueueEntry<A>) -> Reserved<A> {
        let entry = match t.event_pool.pop() {
            Some(mut pooled) => {
                Arc::get_mut(&mut pooled)
                    .expect("pooled event entries are unique")
                    .reset(q.ctx, q.profiling);
                pooled
            }
            None => Arc::new(EventEntry::empty(q.ctx, q.profiling)),
        };
        let entry_ptr = Arc::as_ptr(&entry);
        let key = t.events.insert(entry);
        Reserved { key, entry: entry_ptr }
    }

    /// Publishes the adapter's event into a reserved entry and hands out
    /// its handle.
    pub(super) fn publish(&self, r: Reserved<A>, obj: A::Event) -> EventId {
        // SAFETY: the entry is alive (see `reserve_event`: only this thread
        // removes it, and it has not); this thread reserved it, has not
        // handed out its handle, and publishes once.
        unsafe { (*r.entry).publish(obj) };
        EventId {
            host: self.id,
            key: r.key,
        }
    }

    /// Removes a reserved entry whose command failed.
    pub(super) fn unreserve(&self, r: Reserved<A>) {
        let mut t = self.tables.lock();
        if let Some(mut entry) = t.events.remove(r.key) {
            if Arc::get_mut(&mut entry).is_some() && t.event_pool.len() < EVENT_POOL {
                t.event_pool.push(entry);
            }
        }
    }

    /// The USM allocation containing `[ptr, ptr + len)`, usable on `q` for `how`.
    pub(super) fn usm_at(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        ptr: UsmPtr,
        len: usize,
        how: Use,
    ) -> Result<UsmSpan<A>> {
        let entry = t
            .usm
            .range(..=ptr.0)
            .next_back()
            .filter(|(b, e)| ptr.0 - **b < e.size as u64)
            .map(|(_, e)| e.clone())
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            })?;
        let offset = (ptr.0 - entry.base) as usize;
        check::range("USM allocation", offset, len, entry.size)?;
        let dev = match entry.kind {
            // Device memory lives on its device; host and shared memory is
            // reached by every device of its context.
            UsmKind::Device => entry.device,
            UsmKind::Host | UsmKind::Shared => None,
        };
        self.usable_at("USM pointer", &entry.context, entry.ctx, dev, q, how)?;
        Ok(UsmSpan { entry, offset })
    }
}

/// The root buffer of a buffer or sub-buffer.
pub(super) fn root<A: Adapter>(b: &BufferEntry<A>) -> *const BufferEntry<A> {
    match &b.parent {
        Some((_, _, p)) => Arc::as_ptr(p),
        None => b,
    }
}

/// A buffer's offset in its root buffer.
pub(super) fn abs_offset<A: Adapter>(b: &BufferEntry<A>) -> usize {
    b.parent.as_ref().map_or(0, |(_, off, _)| *off)
}

/// Two buffers are views of the same memory.
pub(super) fn same_memory<A: Adapter>(a: &BufferEntry<A>, b: &BufferEntry<A>) -> bool {
    std::ptr::eq(root(a), root(b))
}

/// Takes the value out of an `Arc` whose other holders are transient (an
/// enqueue call in another thread that resolved the entry just before it
/// was removed from its table): yields until they are done.
pub(super) fn into_unique<T>(mut arc: Arc<T>) -> T {
    loop {
        match Arc::try_unwrap(arc) {
            Ok(v) => return v,
            Err(shared) => {
                arc = shared;
                std::thread::yield_now();
            }
        }
    }
}
