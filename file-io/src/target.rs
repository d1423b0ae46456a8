//! [`DeviceMem`]: where the bytes of a request live on the device side, and
//! what the engine learns about it before planning ([`Resolved`]).

use ur_api::{
    Backend, BufferId, ContextId, DeviceCaps, DeviceInfo, HostPtr, MapFlags, QueueId, Runtime, UsmCaps, UsmKind, UsmPtr,
};

use crate::error::{FileIoError, Result};
use crate::plan::Direction;

/// Device memory a request reads into or writes from, with the queue that
/// orders the transfers (its device must be able to use the memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceMem {
    /// A runtime buffer, from byte `offset` on.
    Buffer {
        /// The queue the copies and mappings are enqueued on.
        queue: QueueId,
        /// The buffer.
        buffer: BufferId,
        /// Byte offset in the buffer of the request's first byte.
        offset: usize,
    },
    /// A USM allocation, from `ptr` on. The caller keeps commands that use
    /// the range from running while the request does.
    Usm {
        /// The queue the copies are enqueued on.
        queue: QueueId,
        /// The address of the request's first byte.
        ptr: UsmPtr,
    },
}

impl DeviceMem {
    /// The queue.
    pub fn queue(&self) -> QueueId {
        match *self {
            DeviceMem::Buffer { queue, .. } | DeviceMem::Usm { queue, .. } => queue,
        }
    }
}

/// Whether file data can land in the target without a bounce, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostVisible {
    /// A buffer of a host-unified device that can be mapped: the mapping is
    /// the device's own memory.
    Mapped,
    /// USM host or shared memory: host addresses the device uses in place.
    UsmHost,
    /// Not host-visible, and why.
    No(String),
}

/// A target after the runtime answered: its device, capacity and, for
/// direct transfers, its host address.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    pub(crate) mem: DeviceMem,
    pub(crate) context: ContextId,
    pub(crate) backend: Backend,
    pub(crate) info: DeviceInfo,
    /// Bytes usable from the target's start.
    pub(crate) capacity: usize,
    pub(crate) visible: HostVisible,
    /// The host address of the request's first byte, where known (USM host
    /// memory; a mapped buffer after [`Resolved::probe_address`]).
    pub(crate) addr: Option<usize>,
}

impl Resolved {
    pub(crate) fn new(rt: &Runtime, mem: DeviceMem) -> Result<Self> {
        let loc = rt.queue_location(mem.queue())?;
        let info = rt.device_info(loc.device)?;
        let backend = rt.backend_of(loc.device)?;
        let (capacity, visible, addr) = match mem {
            DeviceMem::Buffer { buffer, offset, .. } => {
                let b = rt.buffer_info(buffer)?;
                let capacity = b.size.saturating_sub(offset);
                let visible = if !info.host_unified_memory {
                    HostVisible::No("the device's memory is not host memory (no zero-copy mapping)".into())
                } else if !info.caps.contains(DeviceCaps::MAP) {
                    HostVisible::No("the device cannot map buffers".into())
                } else {
                    HostVisible::Mapped
                };
                (capacity, visible, None)
            }
            DeviceMem::Usm { ptr, .. } => {
                let p = rt.usm_pointer_info(loc.context, ptr)?;
                let end = p.base.0 + p.size as u64;
                let capacity = end.saturating_sub(ptr.0) as usize;
                match p.kind {
                    UsmKind::Host | UsmKind::Shared => (capacity, HostVisible::UsmHost, Some(ptr.0 as usize)),
                    UsmKind::Device => (
                        capacity,
                        HostVisible::No("device USM is not host-addressable".into()),
                        None,
                    ),
                }
            }
        };
        Ok(Resolved {
            mem,
            context: loc.context,
            backend,
            info,
            capacity,
            visible,
            addr,
        })
    }

    /// Whether the device offers USM host allocations (pinned bounce buffers).
    pub(crate) fn usm_host(&self) -> bool {
        self.info.usm.contains(UsmCaps::HOST)
    }

    /// A short description for `explain`.
    pub(crate) fn describe(&self) -> String {
        let what = match self.mem {
            DeviceMem::Buffer { offset, .. } => format!("buffer at offset {offset}"),
            DeviceMem::Usm { ptr, .. } => format!("USM at {ptr}"),
        };
        let vis = match &self.visible {
            HostVisible::Mapped => "host-unified, mappable".to_string(),
            HostVisible::UsmHost => "USM host memory".to_string(),
            HostVisible::No(r) => format!("not host-visible: {r}"),
        };
        format!("{} device \"{}\", {what} ({vis})", self.backend, self.info.name)
    }

    /// Learns the host address a mapping of the request's first byte gets
    /// (a one-byte map and unmap), for the alignment check of direct
    /// transfers. A failure leaves the address unknown.
    pub(crate) fn probe_address(&mut self, rt: &Runtime) {
        if self.visible != HostVisible::Mapped || self.capacity == 0 {
            return;
        }
        match map(rt, self.mem, 0, 1, MapFlags::READ).and_then(|m| {
            let a = m.as_ptr() as usize;
            unmap(rt, self.mem, m).map(|()| a)
        }) {
            Ok(a) => self.addr = Some(a),
            Err(e) => tracing::debug!(error = %e, "address probe failed; direct transfers not offered"),
        }
    }
}

/// Maps `len` bytes of a buffer target from `delta` past its start, and
/// waits. Only called for [`DeviceMem::Buffer`].
pub(crate) fn map(rt: &Runtime, mem: DeviceMem, delta: usize, len: usize, flags: MapFlags) -> Result<HostPtr> {
    let DeviceMem::Buffer { queue, buffer, offset } = mem else {
        return Err(FileIoError::Runtime(ur_api::Error::invalid("only buffers are mapped")));
    };
    let at = offset.checked_add(delta).ok_or(FileIoError::OffsetOverflow {
        offset: offset as u64,
        size: delta,
    })?;
    let (ev, ptr) = rt.enqueue_map(queue, buffer, flags, at, len, &[])?;
    rt.complete(ev)?;
    Ok(ptr)
}

/// Where the host reaches `[delta, delta + len)` of a host-visible target:
/// its start address, and the mapping to hand back to [`unmap`] once done
/// (`None` for USM host memory, used in place after the queue's earlier
/// commands finished). `None`: the target is not host-visible.
pub(crate) fn host_range(
    rt: &Runtime,
    target: &Resolved,
    delta: usize,
    len: usize,
    dir: Direction,
) -> Option<Result<(usize, Option<HostPtr>)>> {
    Some(match target.visible {
        HostVisible::Mapped => map(rt, target.mem, delta, len, map_flags(dir)).map(|m| (m.as_ptr() as usize, Some(m))),
        HostVisible::UsmHost => {
            // Earlier commands of the queue may still use the range.
            let addr = target.addr.expect("USM host targets have an address");
            rt.finish(target.mem.queue())
                .map(|()| (addr + delta, None))
                .map_err(FileIoError::from)
        }
        HostVisible::No(_) => return None,
    })
}

/// Unmaps a mapping made by [`map`] and waits.
pub(crate) fn unmap(rt: &Runtime, mem: DeviceMem, mapped: HostPtr) -> Result<()> {
    let DeviceMem::Buffer { queue, buffer, .. } = mem else {
        return Ok(());
    };
    let ev = rt.enqueue_unmap(queue, buffer, mapped, &[])?;
    rt.complete(ev)?;
    Ok(())
}

/// The map flags for a direction: the device range is overwritten when
/// reading a file into it, only read when writing a file from it.
pub(crate) fn map_flags(dir: Direction) -> MapFlags {
    match dir {
        Direction::Read => MapFlags::WRITE_INVALIDATE,
        Direction::Write => MapFlags::READ,
    }
}
