//! Device memory: one arena per device (a byte budget), allocations whose
//! bytes the host never addresses through the API, buffers, USM (device
//! allocations at fake addresses, host allocations in real host memory),
//! and the two data primitives every command uses: [`transfer`] and [`fill`].

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};
use ur_api::{BufferDesc, Error, HandleKind, HostPtr, MemFlags, Result, UsmDesc, UsmKind, UsmPtr};

use crate::device::{DeviceState, Shared, SimContext, SimDevice};
use crate::faults;

/// Alignment of every arena allocation, host USM allocation and staging
/// buffer (and the sub-buffer offset alignment reported).
pub(crate) const ARENA_ALIGN: usize = 64;

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

/// A device's memory budget: its topology size, optionally capped lower.
#[derive(Debug)]
pub(crate) struct Arena {
    capacity: u64,
    state: Mutex<ArenaState>,
}

#[derive(Debug, Default)]
struct ArenaState {
    used: u64,
    cap: Option<u64>,
}

impl Arena {
    pub(crate) fn new(capacity: u64) -> Arena {
        Arena {
            capacity,
            state: Mutex::new(ArenaState::default()),
        }
    }

    fn reserve(&self, size: usize) -> Result<()> {
        let mut s = self.state.lock();
        let limit = s.cap.map_or(self.capacity, |c| c.min(self.capacity));
        match s.used.checked_add(size as u64) {
            Some(n) if n <= limit => {
                s.used = n;
                Ok(())
            }
            _ => Err(Error::OutOfDeviceMemory),
        }
    }

    fn release(&self, size: usize) {
        let mut s = self.state.lock();
        s.used = s.used.saturating_sub(size as u64);
    }

    pub(crate) fn set_cap(&self, cap: Option<u64>) {
        self.state.lock().cap = cap;
    }

    pub(crate) fn used(&self) -> u64 {
        self.state.lock().used
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
    pub(crate) fn new(shared: &Shared, device: &Arc<DeviceState>, size: usize) -> Result<Arc<Allocation>> {
        device.check()?;
        shared.faults.on_allocation(device.index)?;
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
    /// The buffer's memory as a command operand, `offset` bytes in.
    pub(crate) fn mem(&self, offset: usize) -> Mem {
        Mem::Dev {
            alloc: self.alloc.clone(),
            offset: self.offset + offset,
        }
    }

    pub(crate) fn add_mapping(&self, m: Mapping) {
        self.maps.lock().push(m);
    }

    /// Removes and returns the mapping whose staging copy is `mapped`.
    pub(crate) fn take_mapping(&self, mapped: HostPtr) -> Result<Mapping> {
        let mut maps = self.maps.lock();
        let i = maps
            .iter()
            .position(|m| m.staging.as_ptr() == mapped.as_ptr() && m.size == mapped.len())
            .ok_or_else(|| Error::invalid("pointer is not a live mapping of this buffer"))?;
        Ok(maps.swap_remove(i))
    }
}

pub(crate) fn create_buffer(
    shared: &Shared,
    ctx: &SimContext,
    desc: &BufferDesc<&SimDevice>,
    init: Option<HostPtr>,
) -> Result<SimBuffer> {
    let device = desc.device_hint.map_or_else(|| ctx.first(), |d| &d.0);
    let alloc = Allocation::new(shared, device, desc.size)?;
    let buf = SimBuffer {
        alloc,
        offset: 0,
        size: desc.size,
        maps: Mutex::new(Vec::new()),
    };
    if let (true, Some(src)) = (desc.flags.contains(MemFlags::COPY_HOST_PTR), init) {
        let src = Mem::host(src);
        transfer(shared, &src, &buf.mem(0), &[(0, 0, desc.size)], false)?;
    }
    Ok(buf)
}

pub(crate) fn create_sub_buffer(parent: &SimBuffer, offset: usize, size: usize) -> SimBuffer {
    SimBuffer {
        alloc: parent.alloc.clone(),
        offset: parent.offset + offset,
        size,
        maps: Mutex::new(Vec::new()),
    }
}

/// Memory named by a command, resolved at enqueue time (it keeps the
/// allocation alive until the command has run).
#[derive(Debug, Clone)]
pub(crate) enum Mem {
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

impl Mem {
    pub(crate) fn host(p: HostPtr) -> Mem {
        Mem::Host {
            addr: p.as_ptr() as usize,
            len: p.len(),
            keep: None,
        }
    }

    pub(crate) fn device(&self) -> Option<&Arc<DeviceState>> {
        match self {
            Mem::Dev { alloc, .. } => Some(&alloc.device),
            Mem::Host { .. } => None,
        }
    }

    /// Bytes usable from this address to the end of its allocation.
    pub(crate) fn len(&self) -> usize {
        match self {
            Mem::Dev { alloc, offset } => alloc.size - offset,
            Mem::Host { len, .. } => *len,
        }
    }

    fn check(&self) -> Result<()> {
        self.device().map_or(Ok(()), |d| d.check())
    }
}

/// USM allocations of the adapter by base address.
#[derive(Debug, Default)]
pub(crate) struct UsmTable {
    map: Mutex<BTreeMap<u64, UsmEntry>>,
}

#[derive(Debug, Clone)]
enum UsmEntry {
    Device(Arc<Allocation>),
    Host(Arc<HostBlock>),
}

impl UsmTable {
    /// The memory at `ptr` (any interior address of a live allocation).
    pub(crate) fn resolve(&self, ptr: UsmPtr) -> Result<Mem> {
        let map = self.map.lock();
        let (base, entry) = map.range(..=ptr.0).next_back().ok_or(Error::InvalidHandle {
            kind: HandleKind::UsmPointer,
        })?;
        let offset = (ptr.0 - base) as usize;
        match entry {
            UsmEntry::Device(a) if offset < a.size => Ok(Mem::Dev {
                alloc: a.clone(),
                offset,
            }),
            UsmEntry::Host(b) if offset < b.len() => Ok(Mem::Host {
                addr: ptr.0 as usize,
                len: b.len() - offset,
                keep: Some(b.clone()),
            }),
            _ => Err(Error::InvalidHandle {
                kind: HandleKind::UsmPointer,
            }),
        }
    }

    /// Resolves a USM pointer or passes host memory through.
    pub(crate) fn resolve_ref(&self, m: ur_api::MemRef) -> Result<Mem> {
        match m {
            ur_api::MemRef::Usm(p) => self.resolve(p),
            ur_api::MemRef::Host(h) => Ok(Mem::host(h)),
        }
    }
}

pub(crate) fn usm_alloc(shared: &Shared, ctx: &SimContext, desc: &UsmDesc<&SimDevice>) -> Result<UsmPtr> {
    let align = desc.align.max(ARENA_ALIGN);
    match desc.kind {
        UsmKind::Device => {
            let device = desc.device.map_or_else(|| ctx.first(), |d| &d.0);
            let alloc = Allocation::new(shared, device, desc.size)?;
            let addr = {
                let mut next = device.usm_next.lock();
                let addr = next.next_multiple_of(align as u64);
                if addr + desc.size as u64 > device.usm_range().1 {
                    return Err(Error::OutOfDeviceMemory);
                }
                // Leave a gap so that no two allocations are adjacent.
                *next = addr + desc.size as u64 + ARENA_ALIGN as u64;
                addr
            };
            shared.usm.map.lock().insert(addr, UsmEntry::Device(alloc));
            Ok(UsmPtr(addr))
        }
        UsmKind::Host => {
            if let Some(d) = desc.device {
                d.0.check()?;
            }
            let block = Arc::new(HostBlock::zeroed(desc.size, align)?);
            let addr = block.as_ptr() as u64;
            shared.usm.map.lock().insert(addr, UsmEntry::Host(block));
            Ok(UsmPtr(addr))
        }
        UsmKind::Shared => Err(Error::unsupported("shared USM on simulated devices")),
    }
}

/// Forgets a USM allocation; commands already enqueued keep its memory alive.
pub(crate) fn usm_free(shared: &Shared, ptr: UsmPtr) -> Result<()> {
    shared
        .usm
        .map
        .lock()
        .remove(&ptr.0)
        .map(drop)
        .ok_or(Error::InvalidHandle {
            kind: HandleKind::UsmPointer,
        })
}

/// Registers host memory with a context. The sim moves registered and
/// pageable host memory alike; registration is bookkeeping that refuses a
/// range overlapping one already registered.
pub(crate) fn host_register(ctx: &SimContext, mem: HostPtr) -> Result<()> {
    for d in &ctx.devices {
        d.check()?;
    }
    let (start, len) = (mem.as_ptr() as usize, mem.len());
    let mut regs = ctx.registered.lock();
    if regs.iter().any(|&(s, l)| start < s + l && s < start + len) {
        return Err(Error::invalid(
            "host range overlaps memory already registered with the context",
        ));
    }
    regs.push((start, len));
    Ok(())
}

/// Undoes [`host_register`] for exactly the registered range.
pub(crate) fn host_unregister(ctx: &SimContext, mem: HostPtr) -> Result<()> {
    let mut regs = ctx.registered.lock();
    let i = regs
        .iter()
        .position(|&r| r == (mem.as_ptr() as usize, mem.len()))
        .ok_or_else(|| Error::invalid("host range is not registered with the context"))?;
    regs.swap_remove(i);
    Ok(())
}

/// Locks the allocations behind `mems` (each once, in address order) and
/// calls `f` with each operand's start address.
pub(crate) fn access<R>(mems: &[&Mem], f: impl FnOnce(&[*mut u8]) -> R) -> R {
    let mut allocs: Vec<&Arc<Allocation>> = mems
        .iter()
        .filter_map(|m| match m {
            Mem::Dev { alloc, .. } => Some(alloc),
            Mem::Host { .. } => None,
        })
        .collect();
    allocs.sort_by_key(|a| Arc::as_ptr(a) as usize);
    allocs.dedup_by_key(|a| Arc::as_ptr(a) as usize);
    let guards: Vec<MutexGuard<'_, HostBlock>> = allocs.iter().map(|a| a.data.lock()).collect();
    let ptrs: Vec<*mut u8> = mems
        .iter()
        .map(|m| match m {
            Mem::Dev { alloc, offset } => {
                let i = allocs
                    .iter()
                    .position(|a| Arc::ptr_eq(a, alloc))
                    .expect("every allocation was collected");
                // SAFETY: offset <= alloc.size, the block's length, by construction
                // of every `Mem::Dev` (validated ranges from the dyn layer).
                unsafe { guards[i].as_ptr().add(*offset) }
            }
            Mem::Host { addr, .. } => *addr as *mut u8,
        })
        .collect();
    f(&ptrs)
}

/// Copies `rows` (source offset, destination offset, length; relative to
/// the operands) from `src` to `dst` as one transfer: device-lost checks,
/// an injected fault when `faultable`, and the link model over the links
/// the transfer crosses.
pub(crate) fn transfer(
    shared: &Shared,
    src: &Mem,
    dst: &Mem,
    rows: &[(usize, usize, usize)],
    faultable: bool,
) -> Result<()> {
    src.check()?;
    dst.check()?;
    let total: usize = rows.iter().map(|r| r.2).sum();
    let (sdev, ddev) = (src.device().map(|d| d.index), dst.device().map(|d| d.index));
    let devices: Vec<usize> = sdev.into_iter().chain(ddev).collect();
    let limit = if faultable {
        shared.faults.take_copy_fault(&devices)
    } else {
        None
    };
    let budget = limit.unwrap_or(usize::MAX).min(total);
    let links = shared.links_between(sdev, ddev);
    let moved = shared.model.transfer(&links, || {
        let moved = access(&[src, dst], |p| {
            let mut left = budget;
            for &(s, d, len) in rows {
                let n = len.min(left);
                if n == 0 {
                    break;
                }
                // SAFETY: the dyn layer checked every row against both operands'
                // sizes; `Mem` keeps the memory alive; device memory is locked by
                // `access`, host memory is covered by the `HostPtr` promise.
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
pub(crate) fn fill(dst: &Mem, offset: usize, size: usize, pattern: &[u8]) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::Topology;

    #[test]
    fn arena_cap_limits_and_frees() {
        let s = Shared::new(Topology::single_device());
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
        let s = Shared::new(Topology::two_platforms());
        let a = Mem::Dev {
            alloc: Allocation::new(&s, &s.devices[0], 16).unwrap(),
            offset: 0,
        };
        let b = Mem::Dev {
            alloc: Allocation::new(&s, &s.devices[1], 16).unwrap(),
            offset: 4,
        };
        fill(&a, 0, 16, &[1, 2]).unwrap();
        transfer(&s, &a, &b, &[(2, 0, 8)], true).unwrap();
        let mut out = [0u8; 12];
        // SAFETY: `out` is a live local buffer used only by this blocking call.
        let host = Mem::host(unsafe { HostPtr::new(out.as_mut_ptr(), out.len()) });
        transfer(&s, &b, &host, &[(0, 0, 12)], true).unwrap();
        assert_eq!(out, [1, 2, 1, 2, 1, 2, 1, 2, 0, 0, 0, 0]);
        // a0 -> b0 has no peer link: both host links carried those 8 bytes.
        assert_eq!(s.devices[0].link.bytes(), 8);
        assert_eq!(s.devices[1].link.bytes(), 8 + 12);
    }

    #[test]
    fn usm_device_pointers_live_in_the_fake_space_and_resolve() {
        let s = Shared::new(Topology::two_devices_peer());
        let ctx = SimContext {
            id: 1,
            devices: s.devices.clone(),
            registered: Mutex::new(Vec::new()),
        };
        let dev1 = SimDevice(s.devices[1].clone());
        let p = usm_alloc(&s, &ctx, &UsmDesc::new(UsmKind::Device, 100).on(&dev1).aligned(4096)).unwrap();
        let (lo, hi) = s.devices[1].usm_range();
        assert!(p.0 >= lo && p.0 < hi && p.0 % 4096 == 0);
        match s.usm.resolve(p.offset(10)).unwrap() {
            Mem::Dev { alloc, offset } => assert_eq!((alloc.device.index, offset), (1, 10)),
            other => panic!("{other:?}"),
        }
        assert!(s.usm.resolve(p.offset(100)).is_err());
        usm_free(&s, p).unwrap();
        assert!(s.usm.resolve(p).is_err());
        assert_eq!(s.devices[1].arena.used(), 0);
    }
}

#[cfg(test)]
mod register_tests {
    use super::*;
    use crate::topology::Topology;

    #[test]
    fn registration_refuses_overlaps_and_unknown_ranges() {
        let s = Shared::new(Topology::single_device());
        let ctx = SimContext {
            id: 1,
            devices: s.devices.clone(),
            registered: Mutex::new(Vec::new()),
        };
        let mut mem = vec![0u8; 256];
        // SAFETY: registration never touches the memory; `mem` outlives the test.
        let (all, part) = unsafe {
            (
                HostPtr::new(mem.as_mut_ptr(), 256),
                HostPtr::new(mem.as_mut_ptr().add(64), 64),
            )
        };
        host_register(&ctx, all).unwrap();
        assert!(host_register(&ctx, part).is_err());
        assert!(host_unregister(&ctx, part).is_err());
        host_unregister(&ctx, all).unwrap();
        host_register(&ctx, part).unwrap();
    }
}
