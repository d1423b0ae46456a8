//! The dyn layer's tables: one entry type per object kind, and the lookups
//! and location checks every [`AdapterHost`] method shares.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use slotmap::SlotMap;

use super::check;
pub(super) use super::grace::{Grace, Held, Ticket};
use super::slab::Slab;
use super::sub_devices::SubDevices;
use crate::adapter::{Adapter, UsmRef};
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::types::*;

pub(super) struct PlatformEntry<A: Adapter> {
    /// Kept so the adapter's platform outlives its devices; asked for its
    /// native handle.
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
    /// The device's capabilities, read by every command (fixed for a queue).
    pub(super) caps: DeviceCaps,
}

/// An event's entry, inserted once the adapter returned its event, in a
/// [`Slab`] slot that never moves (so a [`Held`] borrow of it stays valid).
pub(super) struct EventEntry<A: Adapter> {
    /// The adapter's event.
    obj: A::Event,
    pub(super) ctx: ContextKey,
    pub(super) profiling: bool,
}

impl<A: Adapter> EventEntry<A> {
    /// The adapter's event.
    pub(super) fn event(&self) -> &A::Event {
        &self.obj
    }
}

/// An operation in flight (see [`AdapterHost::begin_op`]).
pub(super) struct OpGuard<'h, A: Adapter> {
    host: &'h AdapterHost<A>,
    ticket: Option<Ticket>,
}

impl<A: Adapter> OpGuard<'_, A> {
    /// Records a command's event and ends the operation.
    #[inline(always)]
    pub(super) fn record(self, q: &QueueEntry<A>, obj: A::Event) -> EventId {
        // The guard holds nothing but the ticket: skip its drop.
        let mut this = std::mem::ManuallyDrop::new(self);
        let ticket = this.ticket.take().expect("an operation ends once");
        this.host.record_event(ticket, q, obj)
    }
}

impl<A: Adapter> Drop for OpGuard<'_, A> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.host.end_op(ticket);
        }
    }
}

/// An entry removed from its table while operations may still borrow it.
pub(super) enum Retired<A: Adapter> {
    Queue(#[allow(dead_code)] Arc<QueueEntry<A>>), // reason: held only to be dropped later.
    Buffer(#[allow(dead_code)] Arc<BufferEntry<A>>), // reason: as above.
    Event(#[allow(dead_code)] EventEntry<A>),      // reason: as above.
    /// A removed event's slot, its entry still in place: reclaimed (its
    /// entry taken out, then dropped) when its grace period ends.
    EventSlot(u32),
}

pub(super) struct ProgramEntry<A: Adapter> {
    pub(super) obj: A::Program,
    pub(super) ctx: ContextKey,
    /// Keeps the context alive while the program lives; its device list
    /// answers which devices a kernel may be asked about.
    pub(super) context: Arc<ContextEntry<A>>,
}

pub(super) struct KernelEntry<A: Adapter> {
    pub(super) obj: A::Kernel,
    pub(super) ctx: ContextKey,
    /// Argument count and sizes, as the adapter reported them.
    pub(super) info: KernelInfo,
    /// Keeps the program (and its context) alive while the kernel lives.
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
    pub(super) events: Slab<EventEntry<A>>,
    /// Operations borrowing entries, and entries retired under them.
    pub(super) grace: Grace<Retired<A>>,
    pub(super) programs: SlotMap<ProgramKey, Arc<ProgramEntry<A>>>,
    pub(super) kernels: SlotMap<KernelKey, Arc<KernelEntry<A>>>,
    /// USM allocations by base address. Commands hold an entry only while
    /// the adapter's enqueue call runs.
    pub(super) usm: BTreeMap<u64, Arc<UsmEntry<A>>>,
}

impl<A: Adapter> Tables<A> {
    /// Ends an operation; what may be dropped now (outside the lock).
    #[inline]
    pub(super) fn end(&mut self, ticket: Ticket) -> Option<Vec<Retired<A>>> {
        let free = self.grace.end(ticket)?;
        Some(self.settle(free))
    }

    /// Takes the entries of event slots whose grace period ended out of
    /// their slots (freeing the slots), to be dropped outside the lock.
    fn settle(&mut self, mut free: Vec<Retired<A>>) -> Vec<Retired<A>> {
        for r in &mut free {
            if let Retired::EventSlot(slot) = *r {
                *r = Retired::Event(self.events.reclaim(slot));
            }
        }
        free
    }
}

pub(super) fn lookup<K: slotmap::Key, V: Clone>(map: &SlotMap<K, V>, key: K, kind: HandleKind) -> Result<V> {
    map.get(key).cloned().ok_or(Error::InvalidHandle { kind })
}

pub(super) fn refs<A: Adapter>(events: &[Held<EventEntry<A>>]) -> Vec<&A::Event> {
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
    pub(super) subs: SubDevices<A>,
    pub(super) tables: Mutex<Tables<A>>,
}

impl<A: Adapter> std::fmt::Debug for AdapterHost<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdapterHost")
            .field("id", &self.id)
            .field("backend", &self.adapter.backend())
            .field("devices", &self.devices.len())
            .field("sub_devices", &self.subs.len())
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
            subs: SubDevices::default(),
            tables: Mutex::new(Tables {
                contexts: SlotMap::with_key(),
                buffers: SlotMap::with_key(),
                queues: SlotMap::with_key(),
                events: Slab::default(),
                grace: Grace::default(),
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
    #[inline]
    pub(super) fn own<H: Handle>(&self, h: H) -> Result<()> {
        if h.adapter_id() == self.id {
            Ok(())
        } else {
            Err(Error::InvalidHandle { kind: H::KIND })
        }
    }

    pub(super) fn device(&self, id: DeviceId) -> Result<&DeviceEntry<A>> {
        self.own(id)?;
        self.devices
            .get(id.key)
            .or_else(|| self.subs.get(id.key))
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Device,
            })
    }

    /// The entry of a device key this host handed out (root or sub-device).
    pub(super) fn dev(&self, key: DeviceKey) -> &DeviceEntry<A> {
        match self.devices.get(key) {
            Some(e) => e,
            None => self
                .subs
                .get(key)
                .expect("device keys in the tables are ones this host made"),
        }
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

    /// An event, borrowed for an operation (see [`Held`]).
    pub(super) fn event(&self, t: &Tables<A>, id: EventId) -> Result<Held<EventEntry<A>>> {
        self.own(id)?;
        t.events
            .get(id.key)
            // SAFETY: a live entry found under the lock (`t` borrows the
            // locked tables), in a slab slot; callers either begin
            // their operation before that lock is released and drop the
            // `Held` before it ends (`command`, `with_events`), or use it
            // only while the lock is held (`event_profiling`, `event_context`).
            .map(|e| unsafe { Held::new(e) })
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Event,
            })
    }

    /// A queue, borrowed for an operation (see [`Held`]).
    pub(super) fn queue_held(&self, t: &Tables<A>, id: QueueId) -> Result<Held<QueueEntry<A>>> {
        self.own(id)?;
        t.queues
            .get(id.key)
            // SAFETY: a live entry in its own `Arc` allocation, found under
            // the lock; the caller (`command`) begins its operation before
            // releasing the lock and drops the `Held` before ending it.
            .map(|q| unsafe { Held::new(&**q) })
            .ok_or(Error::InvalidHandle {
                kind: HandleKind::Queue,
            })
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
    ) -> Result<Vec<Held<EventEntry<A>>>> {
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
    #[inline]
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
        self.usable_elsewhere(what, ctx, dev, q, how)
    }

    /// [`AdapterHost::usable_at`] for memory of another location: asks the adapter.
    #[inline(never)]
    fn usable_elsewhere(
        &self,
        what: &'static str,
        ctx: &ContextEntry<A>,
        dev: Option<DeviceKey>,
        q: &QueueEntry<A>,
        how: Use,
    ) -> Result<()> {
        let src_dev = dev.unwrap_or(ctx.devices[0]);
        let connection = self.adapter.memory_connection(
            (&ctx.obj, &self.dev(src_dev).obj),
            (&q.context.obj, &self.dev(q.device).obj),
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

    /// A buffer usable on `q` for `how`, borrowed for an operation (see [`Held`]).
    #[inline]
    pub(super) fn buffer_at(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        id: BufferId,
        what: &'static str,
        how: Use,
    ) -> Result<Held<BufferEntry<A>>> {
        self.own(id)?;
        let b = t.buffers.get(id.key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Buffer,
        })?;
        self.usable_at(what, &b.context, b.ctx, Some(b.device), q, how)?;
        // SAFETY: a live entry in its own `Arc` allocation, found under the
        // lock; the caller (`command`'s resolve step) begins its operation
        // before releasing the lock and drops the `Held` before ending it.
        Ok(unsafe { Held::new(&**b) })
    }

    pub(super) fn queue_caps(&self, q: &QueueEntry<A>) -> &DeviceInfo {
        &self.dev(q.device).info
    }

    /// Records the adapter's event of a command and ends its operation
    /// (one critical section); the handle is handed out after it.
    #[inline(always)]
    pub(super) fn record_event(&self, ticket: Ticket, q: &QueueEntry<A>, obj: A::Event) -> EventId {
        let entry = EventEntry {
            obj,
            ctx: q.ctx,
            profiling: q.profiling,
        };
        let mut t = self.tables.lock();
        let key = t.events.insert(entry);
        let free = t.end(ticket);
        drop(t);
        drop(free);
        EventId { host: self.id, key }
    }

    /// Ends an operation that recorded no event.
    pub(super) fn end_op(&self, ticket: Ticket) {
        let free = self.tables.lock().end(ticket);
        drop(free);
    }

    /// Starts an operation (under the lock that made its borrows); it ends
    /// when the guard is dropped or [`OpGuard::record`]s an event, so an
    /// adapter call that panics still ends it.
    pub(super) fn begin_op<'h>(&'h self, t: &mut Tables<A>) -> OpGuard<'h, A> {
        OpGuard {
            host: self,
            ticket: Some(t.grace.begin()),
        }
    }

    /// Retires a removed entry: dropped now (outside the lock) if no
    /// operation may borrow it, else once they have ended.
    pub(super) fn retire(&self, t: &mut Tables<A>, r: Retired<A>) -> Vec<Retired<A>> {
        let free = t.grace.retire(r);
        t.settle(free)
    }

    /// Releases an event while operations may borrow it: its entry stays
    /// in its slot until they end. What may be dropped now (outside the lock).
    #[cold]
    pub(super) fn remove_event(&self, t: &mut Tables<A>, key: EventKey) -> Result<Vec<Retired<A>>> {
        let slot = t.events.remove(key).ok_or(Error::InvalidHandle {
            kind: HandleKind::Event,
        })?;
        Ok(self.retire(t, Retired::EventSlot(slot)))
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
