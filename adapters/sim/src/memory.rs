//! Device memory: allocations in a device's arena (its budget is in
//! `state.rs`) whose bytes the host never addresses through the API,
//! buffers, USM allocations (device allocations at fake addresses, host
//! allocations in real host memory), command operands, and the two data
//! primitives every command uses: [`transfer`] and [`fill`].
//!
//! Nothing here re-checks what the dyn layer guarantees (regions in bounds,
//! live USM ranges, registrations, pattern lengths); what remains are the
//! sim's own behaviours: lost devices, injected faults, arena budgets.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use ur_api::{BufferDesc, Error, HostPtr, MemArg, MemFlags, Result, UsmDesc, UsmKind, UsmPtr, UsmRef};

use crate::device::{SimContext, SimDevice};
use crate::faults;
use crate::rect_rows;
use crate::state::{DeviceState, SimState, ARENA_ALIGN};
use crate::SimAdapter;
use crate::SimEvent;
use crate::SimQueue;
use ur_api::adapter::Commands;
use ur_api::{DeviceAddr, MapFlags, RectCopy, UsmAdvice};

/// A zeroed, aligned block of host memory owned by the adapter.
#[derive(Debug)]
pub(crate) struct HostBlock {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the block is plain bytes owned by this value; all access goes
// through raw pointers under the adapter's own synchronisation.
unsafe impl Send for HostBlock {}
// SAFETY: as above; sharing the block shares only its address.
unsafe impl Sync for HostBlock {}

impl HostBlock {
    /// `len` (non-zero) zeroed bytes aligned to `align` (a power of two).
    pub(crate) fn zeroed(len: usize, align: usize) -> Result<HostBlock> {
        let layout = Layout::from_size_align(len.max(1), align.max(1)).map_err(|_| Error::OutOfHostMemory)?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or(Error::OutOfHostMemory)?;
        Ok(HostBlock { ptr, layout })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One allocation in a device's arena. Its bytes are reached only by the
/// adapter's commands, under `data`'s lock.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub(crate) device: Arc<DeviceState>,
    data: Mutex<HostBlock>,
    pub(crate) size: usize,
}

impl Allocation {
    /// Allocates `size` bytes on `device`: lost check, injected faults, cap.
    pub(crate) fn new(state: &SimState, device: &Arc<DeviceState>, size: usize) -> Result<Arc<Allocation>> {
        device.check()?;
        state.faults.on_allocation(device.index)?;
        device.arena.reserve(size)?;
        match HostBlock::zeroed(size, ARENA_ALIGN) {
            Ok(block) => Ok(Arc::new(Allocation {
                device: device.clone(),
                data: Mutex::new(block),
                size,
            })),
            Err(e) => {
                device.arena.release(size);
                Err(e)
            }
        }
    }
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.device.arena.release(self.size);
    }
}

/// A buffer or sub-buffer: a window of an allocation.
#[derive(Debug)]
pub struct SimBuffer {
    pub(crate) alloc: Arc<Allocation>,
    pub(crate) offset: usize,
    pub(crate) size: usize,
    maps: Mutex<Vec<Mapping>>,
}

/// A live mapping: a host staging copy of `[offset, offset + size)` of the allocation.
#[derive(Debug)]
pub(crate) struct Mapping {
    pub(crate) staging: Arc<HostBlock>,
    /// Offset in the allocation.
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) write_back: bool,
}

impl SimBuffer {
    fn window(alloc: Arc<Allocation>, offset: usize, size: usize) -> SimBuffer {
        SimBuffer {
            alloc,
            offset,
            size,
            maps: Mutex::new(Vec::new()),
        }
    }

    /// The buffer's memory as a command operand, `offset` bytes in.
    pub(crate) fn operand(&self, offset: usize) -> Operand {
        Operand::Dev {
            alloc: self.alloc.clone(),
            offset: self.offset + offset,
        }
    }

    /// The device holding the buffer's memory.
    pub(crate) fn device(&self) -> &Arc<DeviceState> {
        &self.alloc.device
    }

    pub(crate) fn add_mapping(&self, m: Mapping) {
        self.maps.lock().push(m);
    }

    /// Removes and returns the mapping whose staging copy is `mapped` (the
    /// dyn layer hands each live mapping to exactly one unmap, so it is there).
    pub(crate) fn take_mapping(&self, mapped: HostPtr) -> Option<Mapping> {
        let mut maps = self.maps.lock();
        let i = maps
            .iter()
            .position(|m| m.staging.as_ptr() == mapped.as_ptr() && m.size == mapped.len())?;
        Some(maps.swap_remove(i))
    }
}

/// Creates a buffer on the hint's device, initialised from `init` with
/// `COPY_HOST_PTR` (`USE_HOST_PTR` is not offered: arenas are not host memory).
///
/// # Safety
///
/// With `COPY_HOST_PTR`, `init` is readable for `desc.size` bytes during
/// the call.
pub(crate) unsafe fn create_buffer(
    state: &SimState,
    ctx: &SimContext,
    desc: &BufferDesc<&SimDevice>,
    init: Option<HostPtr>,
) -> Result<SimBuffer> {
    let device = desc.device_hint.map_or_else(|| ctx.first(), |d| &d.0);
    let buf = SimBuffer::window(Allocation::new(state, device, desc.size)?, 0, desc.size);
    if let Some(src) = init.filter(|_| desc.flags.contains(MemFlags::COPY_HOST_PTR)) {
        // The initial copy is not a transfer command: no injected fault.
        transfer(state, &Operand::host(src), &buf.operand(0), &[(0, 0, desc.size)], false)?;
    }
    Ok(buf)
}

/// A sub-buffer over `[offset, offset + size)` of `parent` (in bounds: the
/// dyn layer's contract).
pub(crate) fn create_sub_buffer(parent: &SimBuffer, offset: usize, size: usize) -> SimBuffer {
    SimBuffer::window(parent.alloc.clone(), parent.offset + offset, size)
}

/// A USM allocation: device memory in an arena (addressed by a fake device
/// address), or a block of real host memory. Freeing drops it; commands
/// already enqueued hold the memory (`Arc`) until they have run, so the
/// arena gets the bytes back only then.
#[derive(Debug)]
pub struct SimUsm {
    backing: UsmBacking,
}

#[derive(Debug)]
enum UsmBacking {
    Device(Arc<Allocation>),
    Host(Arc<HostBlock>),
}

impl SimUsm {
    /// The device holding device USM; `None` for host USM.
    pub(crate) fn device(&self) -> Option<&Arc<DeviceState>> {
        match &self.backing {
            UsmBacking::Device(a) => Some(&a.device),
            UsmBacking::Host(_) => None,
        }
    }
}

/// Allocates device USM in the device's arena at a fresh fake address, or
/// host USM in host memory (its address is its real one).
pub(crate) fn usm_alloc(state: &SimState, ctx: &SimContext, desc: &UsmDesc<&SimDevice>) -> Result<(SimUsm, UsmPtr)> {
    let align = desc.align.max(ARENA_ALIGN);
    if desc.kind == UsmKind::Device {
        let device = desc.device.map_or_else(|| ctx.first(), |d| &d.0);
        let alloc = Allocation::new(state, device, desc.size)?;
        let addr = device.take_usm_address(desc.size, align)?;
        let usm = SimUsm {
            backing: UsmBacking::Device(alloc),
        };
        return Ok((usm, UsmPtr(addr)));
    }
    // Host USM (the only other kind the devices advertise).
    if let Some(d) = desc.device {
        d.0.check()?;
    }
    let block = Arc::new(HostBlock::zeroed(desc.size, align)?);
    let addr = block.as_ptr() as u64;
    let usm = SimUsm {
        backing: UsmBacking::Host(block),
    };
    Ok((usm, UsmPtr(addr)))
}

/// Memory named by a command, taken at enqueue time (it keeps the
/// allocation alive until the command has run).
#[derive(Debug, Clone)]
pub(crate) enum Operand {
    /// Device memory: an allocation and an offset in it.
    Dev { alloc: Arc<Allocation>, offset: usize },
    /// Host memory: an address, the bytes usable from it, and the USM block
    /// it belongs to (if any).
    Host {
        addr: usize,
        len: usize,
        #[allow(dead_code)] // reason: only held, to keep a host USM block alive while a command uses it.
        keep: Option<Arc<HostBlock>>,
    },
}

impl Operand {
    /// Caller host memory (valid for the command: the [`HostPtr`] promise).
    pub(crate) fn host(p: HostPtr) -> Operand {
        Operand::Host {
            addr: p.as_ptr() as usize,
            len: p.len(),
            keep: None,
        }
    }

    /// A USM range, from its offset to the end of its allocation.
    pub(crate) fn usm(u: UsmRef<'_, SimAdapter>) -> Operand {
        match &u.alloc.backing {
            UsmBacking::Device(alloc) => Operand::Dev {
                alloc: alloc.clone(),
                offset: u.offset,
            },
            UsmBacking::Host(block) => Operand::Host {
                addr: u.ptr.0 as usize,
                len: block.len() - u.offset,
                keep: Some(block.clone()),
            },
        }
    }

    /// One side of a USM copy.
    pub(crate) fn mem_arg(m: MemArg<'_, SimAdapter>) -> Operand {
        match m {
            MemArg::Usm(u) => Operand::usm(u),
            MemArg::Host(h) => Operand::host(h),
        }
    }

    pub(crate) fn device(&self) -> Option<&Arc<DeviceState>> {
        match self {
            Operand::Dev { alloc, .. } => Some(&alloc.device),
            Operand::Host { .. } => None,
        }
    }

    /// Bytes usable from this address to the end of its allocation.
    pub(crate) fn len(&self) -> usize {
        match self {
            Operand::Dev { alloc, offset } => alloc.size - offset,
            Operand::Host { len, .. } => *len,
        }
    }

    /// `Err(DeviceLost)` when the memory is on a lost device.
    pub(crate) fn check(&self) -> Result<()> {
        self.device().map_or(Ok(()), |d| d.check())
    }
}

/// Locks the allocations behind `mems` (each once, in address order) and
/// calls `f` with each operand's start address.
pub(crate) fn access<R>(mems: &[&Operand], f: impl FnOnce(&[*mut u8]) -> R) -> R {
    let mut allocs: Vec<&Arc<Allocation>> = mems
        .iter()
        .filter_map(|m| match m {
            Operand::Dev { alloc, .. } => Some(alloc),
            Operand::Host { .. } => None,
        })
        .collect();
    allocs.sort_by_key(|a| Arc::as_ptr(a) as usize);
    allocs.dedup_by_key(|a| Arc::as_ptr(a) as usize);
    let guards: Vec<MutexGuard<'_, HostBlock>> = allocs.iter().map(|a| a.data.lock()).collect();
    let ptrs: Vec<*mut u8> = mems
        .iter()
        .map(|m| match m {
            Operand::Dev { alloc, offset } => {
                let i = allocs
                    .iter()
                    .position(|a| Arc::ptr_eq(a, alloc))
                    .expect("every allocation was collected");
                // SAFETY: offset <= alloc.size, the block's length, by construction
                // of every `Operand::Dev` (ranges the dyn layer checked).
                unsafe { guards[i].as_ptr().add(*offset) }
            }
            Operand::Host { addr, .. } => *addr as *mut u8,
        })
        .collect();
    f(&ptrs)
}

/// Copies `rows` (source offset, destination offset, length; relative to
/// the operands) from `src` to `dst` as one transfer: device-lost checks,
/// an injected fault when `faultable`, and the link model over the links
/// the transfer crosses.
pub(crate) fn transfer(
    state: &SimState,
    src: &Operand,
    dst: &Operand,
    rows: &[(usize, usize, usize)],
    faultable: bool,
) -> Result<()> {
    src.check()?;
    dst.check()?;
    let total: usize = rows.iter().map(|r| r.2).sum();
    let (sdev, ddev) = (src.device().map(|d| d.index), dst.device().map(|d| d.index));
    let devices: Vec<usize> = sdev.into_iter().chain(ddev).collect();
    let limit = if faultable {
        state.faults.take_copy_fault(&devices)
    } else {
        None
    };
    let budget = limit.unwrap_or(usize::MAX).min(total);
    let links = state.links_between(sdev, ddev);
    let moved = state.model.transfer(&links, || {
        let moved = access(&[src, dst], |p| {
            let mut left = budget;
            for &(s, d, len) in rows {
                let n = len.min(left);
                if n == 0 {
                    break;
                }
                // SAFETY: the dyn layer checked every row against both operands'
                // sizes; `Operand` keeps the memory alive; device memory is locked
                // by `access`, host memory is covered by the `HostPtr` promise.
                // `copy` tolerates overlap within one allocation.
                unsafe { std::ptr::copy(p[0].add(s), p[1].add(d), n) };
                left -= n;
            }
            budget - left
        });
        (moved, moved)
    });
    match limit {
        Some(_) => Err(faults::transfer_fault(moved, total)),
        None => Ok(()),
    }
}

/// Fills `size` bytes at `offset` of `dst` with `pattern` repeated.
pub(crate) fn fill(dst: &Operand, offset: usize, size: usize, pattern: &[u8]) -> Result<()> {
    dst.check()?;
    access(&[dst], |p| {
        // SAFETY: `[offset, offset + size)` is inside the operand (checked by the
        // dyn layer); the memory is locked (device) or promised (host USM).
        let out = unsafe { std::slice::from_raw_parts_mut(p[0].add(offset), size) };
        for chunk in out.chunks_mut(pattern.len()) {
            chunk.copy_from_slice(&pattern[..chunk.len()]);
        }
    });
    Ok(())
}

impl ur_api::adapter::Memory for crate::SimAdapter {
    unsafe fn create_buffer(
        &self,
        ctx: &SimContext,
        desc: &BufferDesc<&SimDevice>,
        init: Option<HostPtr>,
    ) -> Result<SimBuffer> {
        // SAFETY: `init` is readable for `desc.size` bytes with COPY_HOST_PTR
        // (this method's contract, passed on).
        unsafe { create_buffer(&self.state, ctx, desc, init) }
    }

    unsafe fn enqueue_read(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let rows = vec![(0, 0, dst.len())];
        self.enqueue_transfer(queue, buffer.operand(offset), Operand::host(dst), rows, wait)
    }

    unsafe fn enqueue_write(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        src: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let rows = vec![(0, 0, src.len())];
        self.enqueue_transfer(queue, Operand::host(src), buffer.operand(offset), rows, wait)
    }

    unsafe fn enqueue_copy(
        &self,
        queue: &SimQueue,
        src: &SimBuffer,
        src_offset: usize,
        dst: &SimBuffer,
        dst_offset: usize,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let (s, d) = (src.operand(src_offset), dst.operand(dst_offset));
        self.enqueue_transfer(queue, s, d, vec![(0, 0, size)], wait)
    }

    // The rect copies are the sim's own: one transfer through the link model
    // (one latency, the link held once), not one per row as the defaults.

    unsafe fn enqueue_copy_rect(
        &self,
        queue: &SimQueue,
        src: &SimBuffer,
        dst: &SimBuffer,
        rect: &RectCopy,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, src.operand(0), dst.operand(0), rect_rows(rect), wait)
    }

    unsafe fn enqueue_read_rect(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, buffer.operand(0), Operand::host(dst), rect_rows(rect), wait)
    }

    unsafe fn enqueue_write_rect(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        self.enqueue_transfer(queue, Operand::host(src), buffer.operand(0), rect_rows(rect), wait)
    }

    unsafe fn enqueue_fill(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        buffer.device().check()?;
        let (dst, pattern) = (buffer.operand(offset), pattern.to_vec());
        self.submit(queue, wait, move |_| fill(&dst, 0, size, &pattern))
    }
}

impl ur_api::adapter::SubBuffers for crate::SimAdapter {
    unsafe fn create_sub_buffer(&self, parent: &SimBuffer, offset: usize, size: usize) -> Result<SimBuffer> {
        parent.device().check()?;
        Ok(create_sub_buffer(parent, offset, size))
    }
}

impl ur_api::adapter::Mapping for crate::SimAdapter {
    unsafe fn enqueue_map(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<(SimEvent, HostPtr)> {
        buffer.device().check()?;
        let staging = Arc::new(HostBlock::zeroed(size, ARENA_ALIGN)?);
        // SAFETY: the staging block is owned by the mapping record (and the
        // commands below) until unmap; the user owns it in between, as the map
        // contract says.
        let mapped = unsafe { HostPtr::new(staging.as_ptr(), size) };
        let read = !flags.contains(MapFlags::WRITE_INVALIDATE);
        let write_back = flags.intersects(MapFlags::WRITE | MapFlags::WRITE_INVALIDATE);
        let src = buffer.operand(offset);
        let keep = staging.clone();
        let ev = self.submit(queue, wait, move |s| {
            if !read {
                return src.check();
            }
            let dst = Operand::Host {
                addr: keep.as_ptr() as usize,
                len: size,
                keep: Some(keep.clone()),
            };
            transfer(s, &src, &dst, &[(0, 0, size)], true)
        })?;
        buffer.add_mapping(Mapping {
            staging,
            offset: buffer.offset + offset,
            size,
            write_back,
        });
        Ok((ev, mapped))
    }

    unsafe fn enqueue_unmap(
        &self,
        queue: &SimQueue,
        buffer: &SimBuffer,
        mapped: HostPtr,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        // `mapped` is a live mapping of `buffer` (the contract); a record
        // that is absent anyway has nothing to write back.
        let Some(m) = buffer.take_mapping(mapped) else {
            return self.enqueue_barrier(queue, wait);
        };
        let dst = Operand::Dev {
            alloc: buffer.alloc.clone(),
            offset: m.offset,
        };
        self.submit(queue, wait, move |s| {
            if !m.write_back {
                return Ok(());
            }
            let src = Operand::Host {
                addr: m.staging.as_ptr() as usize,
                len: m.size,
                keep: Some(m.staging.clone()),
            };
            transfer(s, &src, &dst, &[(0, 0, m.size)], true)
        })
    }
}

impl ur_api::adapter::HostLocking for crate::SimAdapter {
    unsafe fn lock_host(&self, ctx: &SimContext, mem: HostPtr) -> Result<DeviceAddr> {
        // The sim moves locked and pageable host memory alike: nothing to
        // pin, so it records the lock (tests see it through `SimLinks`) and
        // its devices reach the memory at the host address. The dyn layer
        // keeps the books (overlaps, exact unlocks).
        for d in &ctx.devices {
            d.check()?;
        }
        self.state.locked.lock().insert(mem.as_ptr() as usize, mem.len());
        Ok(DeviceAddr(mem.as_ptr() as u64))
    }

    unsafe fn unlock_host(&self, _ctx: &SimContext, mem: HostPtr) -> Result<()> {
        self.state.locked.lock().remove(&(mem.as_ptr() as usize));
        Ok(())
    }
}

impl ur_api::adapter::UnifiedMemory for crate::SimAdapter {
    fn usm_alloc(&self, ctx: &SimContext, desc: &UsmDesc<&SimDevice>) -> Result<(SimUsm, UsmPtr)> {
        usm_alloc(&self.state, ctx, desc)
    }

    unsafe fn enqueue_usm_copy(
        &self,
        queue: &SimQueue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let (src, dst) = (Operand::mem_arg(src), Operand::mem_arg(dst));
        self.enqueue_transfer(queue, src, dst, vec![(0, 0, size)], wait)
    }

    unsafe fn enqueue_usm_fill(
        &self,
        queue: &SimQueue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        let dst = Operand::usm(ptr);
        dst.check()?;
        let pattern = pattern.to_vec();
        self.submit(queue, wait, move |_| fill(&dst, 0, size, &pattern))
    }

    unsafe fn enqueue_usm_prefetch(
        &self,
        queue: &SimQueue,
        ptr: UsmRef<'_, Self>,
        _size: usize,
        wait: &[&SimEvent],
    ) -> Result<SimEvent> {
        // Device memory stays where it is and host USM is host memory:
        // nothing moves, but memory on a lost device fails the command.
        let device = ptr.alloc.device().cloned();
        self.submit(queue, wait, move |_| device.map_or(Ok(()), |d| d.check()))
    }

    unsafe fn usm_advise(
        &self,
        queue: &SimQueue,
        _ptr: UsmRef<'_, Self>,
        _size: usize,
        _advice: UsmAdvice,
    ) -> Result<()> {
        // Advice changes nothing here; a lost device still answers so.
        queue.device.check()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    #[test]
    fn allocations_take_and_give_back_arena_budget() {
        let s = SimState::new(Topology::single_device());
        let d = &s.devices[0];
        d.arena.set_cap(Some(1000));
        let a = Allocation::new(&s, d, 600).unwrap();
        assert_eq!(Allocation::new(&s, d, 600).err(), Some(Error::OutOfDeviceMemory));
        assert_eq!(d.arena.used(), 600);
        drop(a);
        assert_eq!(d.arena.used(), 0);
        assert!(Allocation::new(&s, d, 1000).is_ok());
    }

    #[test]
    fn transfer_moves_real_bytes_between_arenas() {
        let s = SimState::new(Topology::two_platforms());
        let a = Operand::Dev {
            alloc: Allocation::new(&s, &s.devices[0], 16).unwrap(),
            offset: 0,
        };
        let b = Operand::Dev {
            alloc: Allocation::new(&s, &s.devices[1], 16).unwrap(),
            offset: 4,
        };
        fill(&a, 0, 16, &[1, 2]).unwrap();
        transfer(&s, &a, &b, &[(2, 0, 8)], true).unwrap();
        let mut out = [0u8; 12];
        // SAFETY: `out` is a live local buffer used only by this blocking call.
        let host = Operand::host(unsafe { HostPtr::new(out.as_mut_ptr(), out.len()) });
        transfer(&s, &b, &host, &[(0, 0, 12)], true).unwrap();
        assert_eq!(out, [1, 2, 1, 2, 1, 2, 1, 2, 0, 0, 0, 0]);
        // a0 -> b0 has no peer link: both host links carried those 8 bytes.
        assert_eq!(s.devices[0].link.bytes(), 8);
        assert_eq!(s.devices[1].link.bytes(), 8 + 12);
    }

    #[test]
    fn device_usm_lives_in_the_fake_space_and_its_operands_hold_it() {
        let s = SimState::new(Topology::two_devices_peer());
        let ctx = SimContext {
            id: 1,
            devices: s.devices.clone(),
        };
        let dev1 = SimDevice(s.devices[1].clone());
        let desc = UsmDesc::new(UsmKind::Device, 100).on(&dev1).aligned(4096);
        let (usm, p) = usm_alloc(&s, &ctx, &desc).unwrap();
        let (lo, hi) = s.devices[1].usm_range();
        assert!(p.0 >= lo && p.0 < hi && p.0 % 4096 == 0);
        let at10 = UsmRef {
            alloc: &usm,
            offset: 10,
            ptr: p.offset(10),
        };
        let op = Operand::usm(at10);
        match &op {
            Operand::Dev { alloc, offset } => assert_eq!((alloc.device.index, *offset, op.len()), (1, 10, 90)),
            other => panic!("{other:?}"),
        }
        // Freeing (dropping) the allocation while an operand holds it defers
        // the arena's release until the operand is gone.
        drop(usm);
        assert_eq!(s.devices[1].arena.used(), 100);
        drop(op);
        assert_eq!(s.devices[1].arena.used(), 0);
    }

    #[test]
    fn host_usm_is_real_host_memory() {
        let s = SimState::new(Topology::single_device());
        let ctx = SimContext {
            id: 1,
            devices: s.devices.clone(),
        };
        let (usm, p) = usm_alloc(&s, &ctx, &UsmDesc::new(UsmKind::Host, 64)).unwrap();
        assert!(p.0 < 1 << 48 && p.0 % ARENA_ALIGN as u64 == 0);
        assert!(usm.device().is_none());
        let op = Operand::usm(UsmRef {
            alloc: &usm,
            offset: 8,
            ptr: p.offset(8),
        });
        assert_eq!(op.len(), 56);
        fill(&op, 0, 56, &[3]).unwrap();
        // SAFETY: a 64-byte host block that `usm` keeps alive; no command runs.
        assert_eq!(unsafe { *(p.0 as *const u8).add(8) }, 3);
    }
}
