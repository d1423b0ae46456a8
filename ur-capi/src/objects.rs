//! What a handle names: the project's ids plus what the C API asks about
//! them (the context of a queue, a buffer's flags and host pointer, ...).

use std::sync::Arc;

use ur_api::{ContextId, DeviceId, EventId, HandleKind, PlatformId, QueueId};

use crate::sys::*;

/// The kinds of handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ur_adapter_handle_t`.
    Adapter,
    /// `ur_platform_handle_t`.
    Platform,
    /// `ur_device_handle_t`.
    Device,
    /// `ur_context_handle_t`.
    Context,
    /// `ur_mem_handle_t`.
    Mem,
    /// `ur_queue_handle_t`.
    Queue,
    /// `ur_event_handle_t`.
    Event,
    /// `ur_usm_pool_handle_t`.
    Pool,
    /// `ur_program_handle_t`.
    Program,
    /// `ur_kernel_handle_t`.
    Kernel,
}

impl Kind {
    /// The result of a handle that is not a live object of this kind.
    pub fn invalid(self) -> ur_result_t {
        let kind = match self {
            Kind::Adapter | Kind::Pool => return UR_RESULT_ERROR_INVALID_NULL_HANDLE,
            Kind::Platform => HandleKind::Platform,
            Kind::Device => HandleKind::Device,
            Kind::Context => HandleKind::Context,
            Kind::Mem => HandleKind::Buffer,
            Kind::Queue => HandleKind::Queue,
            Kind::Event => HandleKind::Event,
            Kind::Program => HandleKind::Program,
            Kind::Kernel => HandleKind::Kernel,
        };
        crate::conv::invalid_handle(kind)
    }
}

/// A context.
#[derive(Debug)]
pub struct Context {
    /// The runtime's context.
    pub id: ContextId,
    /// Its devices' handles, in creation order.
    pub devices: Vec<ur_device_handle_t>,
    /// For a context of several devices: the memory manager its buffers
    /// live in, made on the first buffer ([`crate::managed`]).
    pub mm: std::sync::OnceLock<Arc<ur_memory_manager::MemoryManager>>,
    /// The largest buffer every device of the context allocates (the
    /// smallest of their `max_alloc_size`): larger buffers are refused at
    /// creation.
    pub max_alloc: u64,
    /// Whether the first device keeps `USE_HOST_PTR` buffers over the
    /// caller's memory (`DeviceCaps::USE_HOST_PTR`).
    pub use_host_ptr: bool,
}

/// A buffer or sub-buffer.
#[derive(Debug)]
pub struct Mem {
    /// Where the bytes live.
    pub backing: crate::managed::Backing,
    /// Its context's handle and object.
    pub context: (ur_context_handle_t, Arc<Context>),
    /// Size in bytes.
    pub size: usize,
    /// Creation flags as given.
    pub flags: ur_mem_flags_t,
    /// The host pointer given at creation (`USE_HOST_PTR`), else null.
    pub host_ptr: usize,
    /// For a sub-buffer: its parent's handle and its offset there.
    pub parent: Option<(ur_mem_handle_t, usize)>,
}

/// A queue: plain data, stored in the handle table by value, as events
/// are: every command looks its queue up, and a copy of these few words
/// costs less than an `Arc`'s reference-count traffic.
#[derive(Debug, Clone, Copy)]
pub struct Queue {
    /// The runtime's queue.
    pub id: QueueId,
    /// Its context's handle and runtime id.
    pub context: (ur_context_handle_t, ContextId),
    /// Its device's handle.
    pub device: ur_device_handle_t,
    /// Creation flags.
    pub flags: ur_queue_flags_t,
}

/// An event: plain data, stored in the handle table by value. An event is
/// made and released once per command (the hot path of every enqueue), so
/// it holds no `Arc`: no allocation, no reference-count traffic; the
/// context is named by its handle and runtime id, which is all an event
/// is asked about.
#[derive(Debug, Clone, Copy)]
pub struct Event {
    /// The runtime's event; `None` for an event made from native handle 0
    /// (`urEventCreateWithNativeHandle`): complete from the start, with no
    /// runtime event behind it ([`crate::native`]).
    pub id: Option<EventId>,
    /// The context's handle and runtime id.
    pub context: (ur_context_handle_t, ContextId),
    /// The queue's handle (may be stale once the queue is released; only
    /// reported, never looked through without a table lookup).
    pub queue: ur_queue_handle_t,
    /// What command made it.
    pub command: ur_command_t,
    /// Host time ([`crate::device::now_ns`]) when the event was handed out:
    /// the anchor that puts the device's profiling times on the clock of
    /// `urDeviceGetGlobalTimestamps` (see `urEventGetProfilingInfo`); taken
    /// only on queues with `UR_QUEUE_FLAG_PROFILING_ENABLE` (0 otherwise:
    /// such events have no profiling information to anchor).
    pub host_ts: u64,
}

/// A USM pool: allocations through it are plain allocations of its context.
#[derive(Debug)]
pub struct Pool {
    /// The context's handle and object.
    pub context: (ur_context_handle_t, Arc<Context>),
    /// Creation flags.
    pub flags: ur_usm_pool_flags_t,
}

/// What a handle names.
#[derive(Debug, Clone)]
pub enum Object {
    /// Our one adapter.
    Adapter,
    /// A platform.
    Platform(PlatformId),
    /// A root device.
    Device(DeviceId),
    /// A context.
    Context(Arc<Context>),
    /// A buffer.
    Mem(Arc<Mem>),
    /// A queue.
    Queue(Queue),
    /// An event.
    Event(Event),
    /// A USM pool.
    Pool(Arc<Pool>),
    /// A program.
    Program(Arc<crate::program::Program>),
    /// A kernel.
    Kernel(Arc<crate::kernel::Kernel>),
}

macro_rules! addresses_only {
    ($($t:ty),*) => {$(
        // SAFETY: the raw handles inside are addresses used only as table
        // keys and answers; nothing is ever read through them.
        unsafe impl Send for $t {}
        // SAFETY: as above; the other fields are immutable plain data.
        unsafe impl Sync for $t {}
    )*};
}

addresses_only!(Context, Mem, Queue, Event, Pool);

impl Object {
    /// The kind of handle naming this object.
    pub fn kind(&self) -> Kind {
        match self {
            Object::Adapter => Kind::Adapter,
            Object::Platform(_) => Kind::Platform,
            Object::Device(_) => Kind::Device,
            Object::Context(_) => Kind::Context,
            Object::Mem(_) => Kind::Mem,
            Object::Queue(_) => Kind::Queue,
            Object::Event(_) => Kind::Event,
            Object::Pool(_) => Kind::Pool,
            Object::Program(_) => Kind::Program,
            Object::Kernel(_) => Kind::Kernel,
        }
    }

    /// Objects that live as long as the process (adapter, platforms, root
    /// devices): their reference counts are kept but never free them.
    pub fn permanent(&self) -> bool {
        matches!(self, Object::Adapter | Object::Platform(_) | Object::Device(_))
    }
}

/// Typed lookups: `get::<Queue>(h)`.
pub trait FromObject: Sized {
    /// The handle kind.
    const KIND: Kind;
    /// The typed object, if `o` is one.
    fn from_object(o: Object) -> Option<Self>;
}

macro_rules! from_object {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl FromObject for $t {
            const KIND: Kind = Kind::$variant;
            fn from_object(o: Object) -> Option<Self> {
                match o {
                    Object::$variant(x) => Some(x),
                    _ => None,
                }
            }
        }
    )*};
}

from_object! {
    PlatformId => Platform,
    DeviceId => Device,
    Arc<Context> => Context,
    Arc<Mem> => Mem,
    Queue => Queue,
    Event => Event,
    Arc<Pool> => Pool,
    Arc<crate::program::Program> => Program,
    Arc<crate::kernel::Kernel> => Kernel,
}

/// The objects of handles `a` and `b` as an `A` and a `B` (one table
/// lookup), or the `INVALID_*` error of the first that is not.
pub fn get2<A: FromObject, B: FromObject, HA, HB>(a: *mut HA, b: *mut HB) -> Result<(A, B), crate::conv::CapiError> {
    let (oa, ob) = crate::handles::lookup2(a, A::KIND, b, B::KIND)?;
    let a = A::from_object(oa).ok_or(crate::conv::CapiError::Invalid(A::KIND))?;
    let b = B::from_object(ob).ok_or(crate::conv::CapiError::Invalid(B::KIND))?;
    Ok((a, b))
}

/// The object of handle `h` as a `T`, or the `INVALID_*` error of `T`'s kind.
pub fn get<T: FromObject, H>(h: *mut H) -> Result<T, crate::conv::CapiError> {
    let o = crate::handles::lookup(h, T::KIND)?;
    T::from_object(o).ok_or(crate::conv::CapiError::Invalid(T::KIND))
}
