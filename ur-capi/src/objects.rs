//! What a handle names: the project's ids plus what the C API asks about
//! them (the context of a queue, a buffer's flags and host pointer, ...).

use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::{BufferId, ContextId, DeviceId, EventId, KernelId, PlatformId, ProgramId, QueueId};
use ur_memory_manager::{LogicalBuffer, MemoryManager};

pub use crate::conv::Kind;
use crate::sys::*;

/// A context.
#[derive(Debug)]
pub struct Context {
    /// The runtime's context (the first of `parts`).
    pub id: ContextId,
    /// One runtime context per runtime platform its devices belong to, with
    /// those devices: one part, except in the one platform over every
    /// runtime (`state::ONE_PLATFORM_ENV`), where a context may hold
    /// devices of several runtimes.
    pub parts: Vec<(ContextId, Vec<ur_api::DeviceId>)>,
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
    /// `urContextSetExtendedDeleter`'s callbacks and their data (as an
    /// address), called in order once the context is dropped: after its
    /// last handle reference and every object holding it are released.
    pub deleters: parking_lot::Mutex<Vec<(unsafe extern "C" fn(*mut std::ffi::c_void), usize)>>,
}

impl Drop for Context {
    fn drop(&mut self) {
        for (deleter, data) in self.deleters.get_mut().drain(..) {
            tracing::trace!(data, "context deleter");
            // SAFETY: the caller's callback with its own data, called once
            // as `urContextSetExtendedDeleter` promises, with no lock held.
            unsafe { deleter(data as *mut std::ffi::c_void) };
        }
    }
}

impl Context {
    /// The runtime context that holds `device` (the first part for a
    /// device the context does not hold: the runtime then refuses it).
    pub fn part_of(&self, device: ur_api::DeviceId) -> ContextId {
        self.parts
            .iter()
            .find(|(_, ds)| ds.contains(&device))
            .map_or(self.id, |(c, _)| *c)
    }

    /// Does the context span several runtime contexts?
    pub fn is_split(&self) -> bool {
        self.parts.len() > 1
    }
}

/// A buffer or sub-buffer.
#[derive(Debug)]
pub struct Mem {
    /// Where the bytes live.
    pub backing: Backing,
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
    /// `queue` is a handle the event made for itself (an adopted event's
    /// queue over its backend queue, [`crate::native`]) and holds a
    /// reference on, given back with the event's last release.
    pub holds_queue: bool,
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
    Program(Arc<Program>),
    /// A kernel.
    Kernel(Arc<Kernel>),
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

/// Where a UR memory object's bytes live.
#[derive(Debug)]
pub enum Backing {
    /// A runtime buffer (or sub-buffer) of a one-device context.
    Direct(BufferId),
    /// A range of a logical buffer of the context's memory manager.
    Managed {
        /// The context's manager.
        mm: Arc<MemoryManager>,
        /// The root buffer's logical buffer.
        buf: LogicalBuffer,
        /// Where this object starts in it (0 for a root buffer).
        offset: usize,
        /// Whether this object owns `buf` (a root buffer).
        root: bool,
    },
}

/// Where a program is in its life.
#[derive(Debug, Default)]
pub struct Build {
    /// The runtime program, once built (in the context's first runtime
    /// context).
    pub id: Option<ProgramId>,
    /// In a context over several runtimes: the same module built in each
    /// other runtime context, with that context.
    pub others: Vec<(ContextId, ProgramId)>,
    /// Options of the last build (or compile).
    pub options: String,
    /// The backend's log of the last failed build.
    pub log: String,
    /// `urProgramCompile` was called and no build since.
    pub compiled: bool,
    /// The last build failed.
    pub failed: bool,
}

/// A program.
#[derive(Debug)]
pub struct Program {
    /// Its context's handle and object.
    pub context: (ur_context_handle_t, Arc<Context>),
    /// Its SPIR-V: the module it was created from, or the modules it was
    /// linked from (`urProgramLink` of several programs). A program made
    /// from a native handle has one empty module (nothing to build again).
    pub modules: Arc<[Arc<[u8]>]>,
    /// Build state.
    pub build: Mutex<Build>,
}

// SAFETY: the raw context handle is an address used only as an answer and a
// table key; everything else is owned data behind a lock.
unsafe impl Send for Program {}
// SAFETY: as above.
unsafe impl Sync for Program {}

impl Drop for Program {
    fn drop(&mut self) {
        let b = self.build.get_mut();
        for id in b.id.take().into_iter().chain(b.others.drain(..).map(|(_, p)| p)) {
            if let Err(e) = crate::rt::runtime().release_program(id) {
                tracing::warn!(error = %e, "releasing a program");
            }
        }
    }
}

/// A kernel.
#[derive(Debug)]
pub struct Kernel {
    /// The runtime's kernel.
    pub id: KernelId,
    /// Its program's handle and object (kept alive by the kernel).
    pub program: (ur_program_handle_t, Arc<Program>),
    /// The kernel's name.
    pub name: String,
    /// Its argument count, as the backend reported it.
    pub num_args: u32,
    /// For a kernel made from a native handle without a program of ours:
    /// the program made for it (no handle), kept with the kernel.
    pub _native_program: Option<Arc<Program>>,
    /// In a context over several runtimes: the kernel in each other
    /// runtime context's program, with that context.
    pub others: Vec<(ContextId, KernelId)>,
}

impl Kernel {
    /// The runtime kernel to launch in runtime context `ctx` (a queue's).
    pub fn id_for(&self, ctx: ContextId) -> KernelId {
        self.others.iter().find(|(c, _)| *c == ctx).map_or(self.id, |(_, k)| *k)
    }
}

// SAFETY: the raw program handle is an address used only as an answer;
// everything else is owned, immutable data.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

impl Drop for Kernel {
    fn drop(&mut self) {
        for id in std::iter::once(self.id).chain(self.others.iter().map(|(_, k)| *k)) {
            if let Err(e) = crate::rt::runtime().release_kernel(id) {
                tracing::warn!(error = %e, "releasing a kernel");
            }
        }
    }
}
