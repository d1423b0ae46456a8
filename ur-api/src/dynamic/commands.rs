//! Commands: every `enqueue_*` of the dyn layer.
//!
//! Each has the same shape, written once in [`AdapterHost::command`]:
//! resolve the queue, its wait list and the command's objects (under the
//! queue's lane's lock, which lets it read the tables, and the lane locks
//! of wait-list events from other lanes), check them (ranges, locations,
//! capabilities), then call the adapter outside every lock, discharging
//! the `# Safety` contract of its `unsafe` method, and record the event in
//! the queue's lane.

use super::check;
use super::tables::*;
use super::ArgValue;
use crate::adapter::{Adapter, KernelArg, MemArg};
use crate::error::{Error, Result};
use crate::handles::*;
use crate::types::*;
use crate::ShortList;

/// What a kernel argument resolved to.
enum Resolved<A: Adapter> {
    Buffer(Held<BufferEntry<A>>),
    Usm(UsmSpan<A>),
    Value,
}

/// One side of a USM copy, resolved.
enum Side<A: Adapter> {
    Usm(UsmSpan<A>),
    Host(HostPtr),
}

impl<A: Adapter> Side<A> {
    fn arg(&self) -> MemArg<'_, A> {
        match self {
            Side::Usm(s) => MemArg::Usm(s.as_ref()),
            Side::Host(h) => MemArg::Host(*h),
        }
    }

    /// The start address, where two sides can be compared (same space).
    fn addr(&self) -> (bool, u64) {
        match self {
            Side::Usm(s) => (true, s.entry.base + s.offset as u64),
            Side::Host(h) => (false, h.as_ptr() as u64),
        }
    }
}

impl<A: Adapter> AdapterHost<A> {
    /// The shape of every command (see the module docs).
    ///
    /// The queue, the wait list and the command's buffers are borrowed
    /// ([`Held`]), not counted: the command is an operation of its queue's
    /// lane's [`Grace`] (and of the lanes of wait-list events from other
    /// lanes) from the lookups until its event is recorded (or the call
    /// failed or panicked), so nothing it borrowed is dropped before. The
    /// objects are read under the queue's lane's lock (see `op.rs`), the
    /// only lock a command with an empty or same-lane wait list takes before
    /// the adapter's call; none is held during it.
    fn command<R>(
        &self,
        queue: QueueId,
        wait: &[EventId],
        resolve: impl FnOnce(&Tables<A>, &QueueEntry<A>) -> Result<R>,
        call: impl FnOnce(&A::Queue, &R, &[&A::Event]) -> Result<A::Event>,
    ) -> Result<EventId> {
        let (mut op, q) = self.begin_command(queue)?;
        let w = op.borrow_events(Some(q.ctx), wait)?;
        let r = resolve(op.tables(), &q)?;
        op.unlock();
        let ev = with_refs(&w, |w| call(&q.obj, &r, w))?;
        drop((w, r));
        Ok(op.record(&q, ev))
    }

    fn require_usm(&self, q: &QueueEntry<A>) -> Result<()> {
        let info = self.queue_caps(q);
        if info.usm.is_empty() {
            return Err(Error::unsupported(format!("USM on {}", info.name)));
        }
        Ok(())
    }

    fn usm_side(&self, t: &Tables<A>, q: &QueueEntry<A>, m: MemRef, len: usize) -> Result<Side<A>> {
        match m {
            MemRef::Usm(p) => Ok(Side::Usm(self.usm_at(t, q, p, len, Use::Copy)?)),
            MemRef::Host(h) if h.len() < len => Err(Error::OutOfBounds {
                what: "host memory",
                offset: 0,
                len,
                size: h.len(),
            }),
            MemRef::Host(h) => {
                check::host_range(h.as_ptr(), h.len())?;
                Ok(Side::Host(h))
            }
        }
    }

    /// The buffer of a read or a write: in place at the queue's location,
    /// `[offset, offset + host.len())` inside it; the host span non-null and
    /// not wrapping.
    fn host_transfer_buffer(
        &self,
        t: &Tables<A>,
        q: &QueueEntry<A>,
        buffer: BufferId,
        offset: usize,
        host: HostPtr,
    ) -> Result<Held<BufferEntry<A>>> {
        let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
        check::range("buffer", offset, host.len(), b.size)?;
        check::host_range(host.as_ptr(), host.len())?;
        Ok(b)
    }

    pub(super) fn enqueue_read(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| self.host_transfer_buffer(t, q, buffer, offset, dst);
        self.command(queue, wait, resolve, |q, b, w| {
            // SAFETY: the range lies inside the buffer, which is usable at the
            // queue's location; `dst` carries the HostPtr promise; the wait
            // list holds events of the queue's context.
            unsafe { self.adapter.enqueue_read(q, &b.obj, offset, dst, w) }
        })
    }

    pub(super) fn enqueue_write(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| self.host_transfer_buffer(t, q, buffer, offset, src);
        self.command(queue, wait, resolve, |q, b, w| {
            // SAFETY: as for `enqueue_read`.
            unsafe { self.adapter.enqueue_write(q, &b.obj, offset, src, w) }
        })
    }

    pub(super) fn enqueue_copy(
        &self,
        queue: QueueId,
        src: BufferId,
        src_offset: usize,
        dst: BufferId,
        dst_offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let s = self.buffer_at(t, q, src, "source buffer", Use::Copy)?;
            let d = self.buffer_at(t, q, dst, "destination buffer", Use::Copy)?;
            check::range("source buffer", src_offset, size, s.size)?;
            check::range("destination buffer", dst_offset, size, d.size)?;
            if same_memory(&s, &d) && check::overlaps(abs_offset(&s) + src_offset, abs_offset(&d) + dst_offset, size) {
                return Err(Error::invalid("source and destination regions overlap"));
            }
            Ok((s, d))
        };
        self.command(queue, wait, resolve, |q, (s, d), w| {
            // SAFETY: both ranges lie inside their buffers, which are usable
            // for a copy at the queue's location, and do not overlap.
            unsafe {
                self.adapter
                    .enqueue_copy(q, &s.obj, src_offset, &d.obj, dst_offset, size, w)
            }
        })
    }

    pub(super) fn enqueue_copy_rect(
        &self,
        queue: QueueId,
        src: BufferId,
        dst: BufferId,
        rect: &RectCopy,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let s = self.buffer_at(t, q, src, "source buffer", Use::Copy)?;
            let d = self.buffer_at(t, q, dst, "destination buffer", Use::Copy)?;
            let rect = check::rect(rect, s.size, d.size)?;
            if same_memory(&s, &d) {
                let (a, b) = (abs_offset(&s), abs_offset(&d));
                let src_span = (a + rect.src.start(), a + rect.src.end(rect.extent));
                let dst_span = (b + rect.dst.start(), b + rect.dst.end(rect.extent));
                if src_span.0 < dst_span.1 && dst_span.0 < src_span.1 {
                    return Err(Error::invalid("source and destination rect regions overlap"));
                }
            }
            Ok((s, d, rect))
        };
        self.command(queue, wait, resolve, |q, (s, d, rect), w| {
            // SAFETY: both boxes (explicit pitches) lie inside their buffers,
            // which are usable for a copy here, and their spans do not overlap.
            unsafe { self.adapter.enqueue_copy_rect(q, &s.obj, &d.obj, rect, w) }
        })
    }

    pub(super) fn enqueue_read_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
            let rect = check::rect(rect, b.size, dst.len())?;
            check::host_range(dst.as_ptr(), dst.len())?;
            Ok((b, rect))
        };
        self.command(queue, wait, resolve, |q, (b, rect), w| {
            // SAFETY: the boxes lie inside the buffer and the host span.
            unsafe { self.adapter.enqueue_read_rect(q, &b.obj, rect, dst, w) }
        })
    }

    pub(super) fn enqueue_write_rect(
        &self,
        queue: QueueId,
        buffer: BufferId,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
            let rect = check::rect(rect, src.len(), b.size)?;
            check::host_range(src.as_ptr(), src.len())?;
            Ok((b, rect))
        };
        self.command(queue, wait, resolve, |q, (b, rect), w| {
            // SAFETY: the boxes lie inside the host span and the buffer.
            unsafe { self.adapter.enqueue_write_rect(q, &b.obj, rect, src, w) }
        })
    }

    pub(super) fn enqueue_fill(
        &self,
        queue: QueueId,
        buffer: BufferId,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
            check::range("buffer", offset, size, b.size)?;
            let any = q.caps.contains(DeviceCaps::FILL_ANY_PATTERN);
            check::pattern(pattern, offset, size, any)?;
            Ok(b)
        };
        self.command(queue, wait, resolve, |q, b, w| {
            // SAFETY: the range lies inside the buffer, usable here; the
            // pattern's length suits the device and divides offset and size.
            unsafe { self.adapter.enqueue_fill(q, &b.obj, offset, size, pattern, w) }
        })
    }

    pub(super) fn enqueue_map(
        &self,
        queue: QueueId,
        buffer: BufferId,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[EventId],
    ) -> Result<(EventId, HostPtr)> {
        let mut mapped = None;
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            if !q.caps.contains(DeviceCaps::MAP) {
                return Err(Error::unsupported("buffer mapping"));
            }
            check::map_flags(flags)?;
            let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
            check::range("buffer", offset, size, b.size)?;
            Ok(b)
        };
        let ev = self.command(queue, wait, resolve, |q, b, w| {
            // SAFETY: the range lies inside the buffer, usable here; the
            // flags were checked.
            let (ev, ptr) = unsafe { self.adapter.enqueue_map(q, &b.obj, flags, offset, size, w)? };
            if ptr.len() != size {
                return Err(Error::invalid(format!(
                    "the adapter mapped {} bytes instead of {size}",
                    ptr.len()
                )));
            }
            b.maps.lock().push((ptr.as_ptr() as usize, ptr.len()));
            mapped = Some(ptr);
            Ok(ev)
        })?;
        Ok((ev, mapped.expect("a successful map returns its pointer")))
    }

    pub(super) fn enqueue_unmap(
        &self,
        queue: QueueId,
        buffer: BufferId,
        mapped: HostPtr,
        wait: &[EventId],
    ) -> Result<EventId> {
        let key = (mapped.as_ptr() as usize, mapped.len());
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let b = self.buffer_at(t, q, buffer, "buffer", Use::InPlace)?;
            // Claim the mapping now, so two threads cannot unmap it twice.
            let mut maps = b.maps.lock();
            let index = maps
                .iter()
                .position(|m| *m == key)
                .ok_or_else(|| Error::invalid("pointer is not a live mapping of this buffer"))?;
            maps.swap_remove(index);
            drop(maps);
            Ok(b)
        };
        self.command(queue, wait, resolve, |q, b, w| {
            // SAFETY: `mapped` was a live mapping of this buffer, claimed
            // above by this call alone.
            let r = unsafe { self.adapter.enqueue_unmap(q, &b.obj, mapped, w) };
            if r.is_err() {
                b.maps.lock().push(key);
            }
            r
        })
    }

    pub(super) fn enqueue_usm_copy(
        &self,
        queue: QueueId,
        dst: MemRef,
        src: MemRef,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            // A copy between two host spans needs no USM (SYCL's
            // `queue::memcpy` copies host to host on any device).
            if matches!(dst, MemRef::Usm(_)) || matches!(src, MemRef::Usm(_)) {
                self.require_usm(q)?;
            }
            if size == 0 {
                return Err(Error::InvalidSize {
                    what: "USM copy",
                    size: 0,
                });
            }
            let d = self.usm_side(t, q, dst, size)?;
            let s = self.usm_side(t, q, src, size)?;
            // Only addresses of one space can be compared: USM with USM, host with host.
            let ((du, da), (su, sa)) = (d.addr(), s.addr());
            if du == su && check::overlaps(da as usize, sa as usize, size) {
                return Err(Error::invalid("copy source and destination overlap"));
            }
            Ok((d, s))
        };
        self.command(queue, wait, resolve, |q, (d, s), w| {
            // SAFETY: both sides hold `size` bytes, USM sides are usable for
            // a copy here, and the two do not overlap.
            unsafe { self.adapter.enqueue_usm_copy(q, d.arg(), s.arg(), size, w) }
        })
    }

    pub(super) fn enqueue_usm_fill(
        &self,
        queue: QueueId,
        ptr: UsmPtr,
        size: usize,
        pattern: &[u8],
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            self.require_usm(q)?;
            if size == 0 {
                return Err(Error::InvalidSize {
                    what: "USM fill",
                    size: 0,
                });
            }
            let span = self.usm_at(t, q, ptr, size, Use::InPlace)?;
            let any = q.caps.contains(DeviceCaps::FILL_ANY_PATTERN);
            check::pattern(pattern, 0, size, any)?;
            Ok(span)
        };
        self.command(queue, wait, resolve, |q, span, w| {
            // SAFETY: the range lies in one allocation usable here; the
            // pattern suits the device and divides the size.
            unsafe { self.adapter.enqueue_usm_fill(q, span.as_ref(), size, pattern, w) }
        })
    }

    pub(super) fn enqueue_usm_prefetch(
        &self,
        queue: QueueId,
        ptr: UsmPtr,
        size: usize,
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            self.require_usm(q)?;
            self.usm_at(t, q, ptr, size, Use::Copy)
        };
        self.command(queue, wait, resolve, |q, span, w| {
            // SAFETY: the range lies in one allocation the queue's device may
            // copy from.
            unsafe { self.adapter.enqueue_usm_prefetch(q, span.as_ref(), size, w) }
        })
    }

    pub(super) fn usm_advise(&self, queue: QueueId, ptr: UsmPtr, size: usize, advice: UsmAdvice) -> Result<()> {
        let (q, span) = {
            let t = self.tables.read();
            let q = self.queue(&t, queue)?;
            self.require_usm(&q)?;
            let span = self.usm_at(&t, &q, ptr, size, Use::Copy)?;
            (q, span)
        };
        if advice.contains(UsmAdvice::PREFER_DEVICE | UsmAdvice::PREFER_HOST) {
            return Err(Error::invalid("PREFER_DEVICE and PREFER_HOST exclude each other"));
        }
        // SAFETY: the range lies in one allocation reachable from the queue;
        // the advice is consistent.
        unsafe { self.adapter.usm_advise(&q.obj, span.as_ref(), size, advice) }
    }

    pub(super) fn enqueue_launch(
        &self,
        queue: QueueId,
        kernel: KernelId,
        range: &NdRange,
        args: &[ArgValue<'_>],
        wait: &[EventId],
    ) -> Result<EventId> {
        let resolve = |t: &Tables<A>, q: &QueueEntry<A>| {
            let k = self.kernel(t, kernel)?;
            if k.ctx != q.ctx {
                return Err(Error::WrongContext { what: "kernel" });
            }
            let caps = self.queue_caps(q);
            check::nd_range(
                range,
                caps.max_work_group_size,
                caps.caps.contains(DeviceCaps::GLOBAL_OFFSET),
            )?;
            check::launch_limits(range, &caps.limits)?;
            check::kernel_args(&k.info, args, caps)?;
            let resolved = args
                .iter()
                .map(|a| {
                    Ok(match *a {
                        ArgValue::Buffer(b) => {
                            Resolved::Buffer(self.buffer_at(t, q, b, "kernel buffer argument", Use::InPlace)?)
                        }
                        ArgValue::Usm(p) => Resolved::Usm(self.usm_at(t, q, p, 1, Use::InPlace)?),
                        ArgValue::Scalar(_) | ArgValue::Local(_) => Resolved::Value,
                    })
                })
                .collect::<Result<ShortList<_>>>()?;
            Ok((k, resolved))
        };
        self.command(queue, wait, resolve, |q, (k, resolved), w| {
            if range.is_empty() {
                // Checked like any launch, but no work-item runs: the
                // command ends once its wait list has (queues are in order,
                // so a barrier is that), and adapters never see an empty
                // range (OpenCL before 2.1 and CUDA refuse one).
                return self.adapter.enqueue_barrier(q, w);
            }
            let adapter_args: ShortList<KernelArg<'_, A>> = args
                .iter()
                .zip(resolved)
                .map(|(a, r)| match (a, r) {
                    (_, Resolved::Buffer(b)) => KernelArg::Buffer(&b.obj),
                    (_, Resolved::Usm(s)) => KernelArg::Usm(s.as_ref()),
                    (ArgValue::Scalar(s), _) => KernelArg::Scalar(s),
                    (ArgValue::Local(n), _) => KernelArg::Local(*n),
                    (ArgValue::Buffer(_) | ArgValue::Usm(_), Resolved::Value) => {
                        unreachable!("memory arguments resolve to memory")
                    }
                })
                .collect();
            // SAFETY: every memory argument is usable in place at the queue's
            // location; the kernel is of the queue's context; the range and
            // the arguments were checked against the device and the kernel.
            unsafe { self.adapter.enqueue_launch(q, &k.obj, range, &adapter_args, w) }
        })
    }

    pub(super) fn enqueue_barrier(&self, queue: QueueId, wait: &[EventId]) -> Result<EventId> {
        self.command(queue, wait, |_, _| Ok(()), |q, _, w| self.adapter.enqueue_barrier(q, w))
    }
}
