//! UR memory objects of multi-device contexts, backed by the project's
//! memory manager (`ur-memory-manager`).
//!
//! A UR buffer belongs to a context, not a device: a SYCL program may use
//! one buffer on every device of its context, and UR puts the migration in
//! the adapter. The project's runtime refuses that (its location rule: a
//! buffer lives at one (context, device) location and a command never moves
//! data behind the memory manager's back), so this layer puts the
//! migration where the project puts it, in the memory manager:
//!
//! - a buffer of a context with one device is a runtime buffer at that
//!   location ([`Backing::Direct`]): nothing can migrate, nothing changes;
//! - a buffer of a context with several devices is a [`LogicalBuffer`] of
//!   the context's [`MemoryManager`] (one per context, over the locations
//!   (context, device) of its devices, made on the first such buffer):
//!   [`Backing::Managed`]; a sub-buffer is a byte range of its parent's
//!   logical buffer, not a runtime sub-buffer;
//! - each command on such a buffer first acquires the range it touches at
//!   the queue's location (`acquire_async`, chained on the command's wait
//!   list): the manager copies the bytes along its routes (`Unified`: in
//!   place; `Migratable`: a device copy; `None`: host-staged) and gives the
//!   runtime buffer to use there and a ready event; the command runs on
//!   that buffer after the ready event, and the access is handed back with
//!   `release_after` on the command's event (borrowed: the manager follows
//!   it with a barrier of its own), so the manager's next move of those
//!   bytes waits for it;
//! - writes make the range current at the queue's location only (reads
//!   keep other copies valid); initial host data is written at the host
//!   place; a mapping holds its access until it is unmapped.
//!
//! What this costs: a command on a managed buffer is one acquire (a lock
//! and a plan) plus a barrier; commands on single-device contexts (the
//! common SYCL case: `sycl::queue q(dev)` on a one-device platform) take
//! the direct path.

use std::ops::Range;
use std::sync::Arc;

use ur_api::{BufferId, EventId, Location};
use ur_memory_manager::{Access, Acquired, LogicalBuffer, MemoryManager, MmError, Place};

use crate::conv::CapiError;
use crate::objects::{Context, Kind, Mem, Object, Queue};
use crate::state::state;
use crate::sys::{ur_context_handle_t, ur_mem_handle_t};

pub use crate::objects::Backing;

/// A manager error as an ABI error.
pub fn mm_error(e: MmError) -> CapiError {
    match e {
        MmError::Runtime(e) => CapiError::Api(e),
        MmError::OutOfBounds { .. } | MmError::RangeOverflow { .. } => CapiError::InvalidSize,
        other => CapiError::Api(ur_api::Error::invalid(other.to_string())),
    }
}

/// The context's memory manager, made on first use; `None` for a context
/// of one device.
pub fn manager(ctx: &Context) -> Result<Option<Arc<MemoryManager>>, CapiError> {
    if ctx.devices.len() < 2 {
        return Ok(None);
    }
    if let Some(mm) = ctx.mm.get() {
        return Ok(Some(mm.clone()));
    }
    let rt = &state().rt;
    let mut locations = Vec::new();
    for (part, _) in &ctx.parts {
        locations.extend(rt.context_devices(*part)?.into_iter().map(|d| Location::new(*part, d)));
    }
    let mm = Arc::new(MemoryManager::new(rt.clone(), &locations).map_err(mm_error)?);
    Ok(Some(ctx.mm.get_or_init(|| mm).clone()))
}

/// A new managed buffer of `size` bytes, with initial data.
pub fn create(mm: &Arc<MemoryManager>, size: usize, init: Option<&[u8]>) -> Result<Backing, CapiError> {
    let buf = mm.create_buffer(size).map_err(mm_error)?;
    if let Some(data) = init {
        if let Err(e) = mm.write(buf, 0, data) {
            let _ = mm.release(buf);
            return Err(mm_error(e));
        }
    }
    Ok(Backing::Managed {
        mm: mm.clone(),
        buf,
        offset: 0,
        root: true,
    })
}

/// A command's memory object as the command uses it, copied out of its
/// handle under the header's lock ([`MemArg::of`]): a direct buffer is the
/// few words a command reads (no reference count taken and dropped per
/// command: the runtime buffer is released by `urMemRelease` whoever holds
/// the object, and the runtime checks the buffer id itself, so a buffer
/// released meanwhile is an `INVALID_*` answer either way); a managed one
/// is its object, whose manager the command acquires through.
#[derive(Debug, Clone)]
pub enum MemArg {
    /// A runtime buffer of a one-device context.
    Direct {
        /// The runtime buffer (or sub-buffer).
        id: BufferId,
        /// Its context's handle.
        context: ur_context_handle_t,
        /// Size in bytes.
        size: usize,
    },
    /// A range of a logical buffer of the context's memory manager.
    Managed(Arc<Mem>),
}

impl MemArg {
    /// The memory object of handle `m`, or `INVALID_MEM_OBJECT`.
    #[inline]
    pub fn of(m: ur_mem_handle_t) -> Result<MemArg, CapiError> {
        crate::handles::read(m, Kind::Mem, |o| match o {
            Object::Mem(mem) => Some(match mem.backing {
                Backing::Direct(id) => MemArg::Direct {
                    id,
                    context: mem.context.0,
                    size: mem.size,
                },
                Backing::Managed { .. } => MemArg::Managed(mem.clone()),
            }),
            _ => None,
        })
    }

    /// Its size in bytes.
    pub fn size(&self) -> usize {
        match self {
            MemArg::Direct { size, .. } => *size,
            MemArg::Managed(m) => m.size,
        }
    }

    /// The object of a managed buffer (`None` for a direct one).
    pub fn managed(&self) -> Option<&Mem> {
        match self {
            MemArg::Direct { .. } => None,
            MemArg::Managed(m) => Some(m),
        }
    }
}

/// A command's wait list (inline up to 8 events: no allocation per command).
pub type WaitIds = ur_api::ShortList<EventId>;

/// The buffer operands of one command and what it holds for them.
#[derive(Debug)]
pub struct Prepared {
    /// The command's wait list: the caller's plus the ready events.
    pub wait: WaitIds,
    /// What managed operands hold, made on the first one: a command on
    /// direct operands only (the common case) carries no more than its
    /// wait list, and dropping it checks one pointer.
    held: Option<Box<Held>>,
}

/// The accesses a command's managed operands hold until it is enqueued.
#[derive(Debug, Default)]
struct Held {
    /// Ready events added to the wait list, released after the command.
    ready: Vec<EventId>,
    /// The accesses, handed back after the command (or at once if it fails).
    guards: Vec<(Arc<MemoryManager>, Acquired)>,
}

impl Prepared {
    /// Starts from the command's own wait list.
    #[inline]
    pub fn new(wait: WaitIds) -> Prepared {
        Prepared { wait, held: None }
    }

    /// The runtime buffer and offset to use on `q` for bytes `range` of
    /// `m`, made current there for `access`. A memory object of another
    /// context than the queue's is refused ([`same_context`]).
    #[inline]
    pub fn operand(
        &mut self,
        q: &Queue,
        m: &Mem,
        access: Access,
        range: Range<usize>,
    ) -> Result<(BufferId, usize), CapiError> {
        same_context(q, m)?;
        match &m.backing {
            Backing::Direct(id) => Ok((*id, 0)),
            Backing::Managed { mm, buf, offset, .. } => self.managed(q, mm, *buf, *offset, access, range),
        }
    }

    /// [`Prepared::operand`] of a memory object as a command has it
    /// ([`MemArg`]).
    #[inline]
    pub fn arg(
        &mut self,
        q: &Queue,
        m: &MemArg,
        access: Access,
        range: Range<usize>,
    ) -> Result<(BufferId, usize), CapiError> {
        match m {
            MemArg::Direct { id, context, .. } => {
                same_context_handle(q, *context)?;
                Ok((*id, 0))
            }
            MemArg::Managed(m) => self.operand(q, m, access, range),
        }
    }

    /// [`Prepared::operand`] of a managed buffer: acquired at the queue's
    /// location, its ready event added to the wait list.
    #[inline(never)]
    fn managed(
        &mut self,
        q: &Queue,
        mm: &Arc<MemoryManager>,
        buf: LogicalBuffer,
        offset: usize,
        access: Access,
        range: Range<usize>,
    ) -> Result<(BufferId, usize), CapiError> {
        let loc = state().rt.queue_location(q.id)?;
        let r = offset + range.start..offset + range.end;
        let (g, ready) = mm
            .acquire_async(buf, Place::Device(loc), access, r, &self.wait)
            .map_err(mm_error)?;
        let id = g.buffer().ok_or(CapiError::InvalidValue)?;
        let held = self.held.get_or_insert_with(Box::default);
        if let Some(e) = ready {
            held.ready.push(e);
            self.wait.push(e);
        }
        held.guards.push((mm.clone(), g));
        Ok((id, offset))
    }

    /// Hands the accesses back after `cmd` (the command's event, which
    /// stays the caller's) and releases the ready events; a command on
    /// direct operands only drops its wait list.
    #[inline(always)]
    pub fn finish(self, cmd: EventId) {
        let Prepared { wait, held } = self;
        drop(wait);
        if let Some(mut held) = held {
            Self::finish_held(&mut held, cmd);
        }
    }

    /// [`Prepared::finish`] of a command with managed operands.
    #[inline(never)]
    fn finish_held(held: &mut Held, cmd: EventId) {
        for (_, g) in std::mem::take(&mut held.guards) {
            g.release_after(cmd);
        }
    }

    /// Ends the accesses at once (a failed command), keeping one of them
    /// (a mapping) out: returns it.
    pub fn take_guard(&mut self) -> Option<(Arc<MemoryManager>, Acquired)> {
        self.held.as_mut()?.guards.pop()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        for e in self.ready.drain(..) {
            let _ = state().rt.release_event(e);
        }
    }
}

/// The rule every command follows, whatever the adapter: a memory object
/// is used only through queues of its own context (UR: the queue and the
/// memory object of a command share a context; `clEnqueue*` answer
/// `CL_INVALID_CONTEXT`). `INVALID_CONTEXT` otherwise, checked here before
/// any adapter sees the command: the native adapter would otherwise run
/// it, OpenCL refuse it.
pub fn same_context(q: &Queue, m: &Mem) -> Result<(), CapiError> {
    same_context_handle(q, m.context.0)
}

/// [`same_context`] for a memory object of context handle `context`.
#[inline]
fn same_context_handle(q: &Queue, context: ur_context_handle_t) -> Result<(), CapiError> {
    // The UR context handles: a context over several runtimes has one
    // runtime context per runtime, and its queues each use their device's.
    if context == q.context.0 {
        Ok(())
    } else {
        Err(CapiError::WrongContext)
    }
}

/// A read of managed bytes that are not current at the queue's location:
/// read where they are (the manager's [`MemoryManager::read`]: straight
/// from the device allocation that holds them all, one copy), instead of
/// moving them to the queue's device first and reading them there (two
/// copies, three across runtimes). The caller's wait list and the queue's
/// earlier work are waited for on the host first (the read may come from
/// another runtime's device, whose queues cannot wait on this queue's
/// events), and the read completes before this returns; the command's
/// event is a barrier on the queue. `None` where the bytes are current at
/// the queue's location (or the buffer is not managed): the caller reads
/// there as usual.
///
/// # Safety
///
/// `dst` is valid for writes of `size` bytes for the call.
pub unsafe fn read_where_current(
    q: &Queue,
    m: &Mem,
    offset: usize,
    dst: *mut u8,
    size: usize,
    wait: &[EventId],
) -> Result<Option<EventId>, CapiError> {
    let Backing::Managed {
        mm, buf, offset: base, ..
    } = &m.backing
    else {
        return Ok(None);
    };
    same_context(q, m)?;
    let rt = &state().rt;
    let here = Place::Device(rt.queue_location(q.id)?);
    let range = base + offset..base + offset + size;
    if size == 0 || mm.is_current(*buf, here, range.clone()).map_err(mm_error)? {
        return Ok(None);
    }
    rt.wait(wait)?;
    rt.finish(q.id)?;
    // SAFETY: the caller's promise on `dst`.
    let out = unsafe { std::slice::from_raw_parts_mut(dst, size) };
    mm.read(*buf, range.start, out).map_err(mm_error)?;
    Ok(Some(rt.enqueue_barrier(q.id, &[])?))
}

/// Releases a managed root buffer's logical buffer.
pub fn release(b: &Backing) -> Result<(), CapiError> {
    match b {
        Backing::Direct(id) => Ok(state().rt.release_buffer(*id)?),
        Backing::Managed {
            mm, buf, root: true, ..
        } => mm.release(*buf).map_err(mm_error),
        Backing::Managed { .. } => Ok(()),
    }
}
