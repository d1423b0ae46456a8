//! Handles crossing the ABI: headers in never-freed slabs, each holding
//! its object under its own lock.
//!
//! Every UR handle we hand out points at a [`Header`] whose first field is
//! a pointer to our [`ur_dditable_t`]: UR 0.12's loader reads the dispatch
//! table at offset 0 of any handle to route a call, without wrapping
//! handles. An incoming handle is first checked to be the address of one
//! of our headers (inside a slab, on a header boundary: a few compares, no
//! lock, nothing read through it); only then is its header read, and only
//! an occupied header of the expected kind reaches its object, so a
//! released, stale, foreign or mistyped handle is an `INVALID_*` result,
//! never a dereference of memory we do not own.
//!
//! No process-wide lock: a lookup takes the lock of its own header (never
//! contended unless two threads use the same handle at that instant), a
//! new handle comes from an atomic counter over the slabs (a lock only to
//! add a slab, once per [`SLAB`] handles) or from the quarantine, a
//! lock-free queue. One translation per handle: the header holds the
//! object itself (ids of the runtime, `Arc`s of what the C API keeps).
//!
//! Reference counts (`urXRetain` / `urXRelease`) live in the header. A
//! header's memory is never returned to the allocator while a caller may
//! still hold the address (the loader dereferences it): released headers
//! wait in a quarantine of [`QUARANTINE`] entries before they are reused, so
//! a stale handle stays a readable header pointing at the table (the loader
//! routes it to us, and we answer `INVALID_*`) and is only confused with a
//! new object after that many further releases.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use crossbeam_queue::SegQueue;
use parking_lot::Mutex;

use crate::conv::CapiError;
use crate::objects::{Kind, Object};
use crate::sys::ur_dditable_t;

/// Released headers kept before reuse.
pub const QUARANTINE: usize = 1 << 16;

/// What every handle points at.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// Read by the UR loader to route calls on this handle.
    ddi: *const ur_dditable_t,
    /// The object, while the handle is live.
    slot: Mutex<Option<Entry>>,
}

// SAFETY: `ddi` names a `'static` table that is never written after
// creation; the slot is behind its lock, and every object kind is `Send`.
unsafe impl Sync for Header {}
// SAFETY: as above.
unsafe impl Send for Header {}

/// A live object and its reference count.
#[derive(Debug)]
struct Entry {
    refs: u32,
    obj: Object,
}

/// Headers per slab: one allocation serves this many new handles (headers
/// are never returned to the allocator, see the module docs, so nothing is
/// lost by allocating them together). A slab is a few MiB, above glibc's
/// mmap threshold, so these long-lived blocks are not interleaved with the
/// per-command objects the OpenCL runtimes allocate and free.
pub const SLAB: usize = 1 << 15;

/// Most slabs: 2^31 headers in all, far past any process's handles.
const MAX_SLABS: usize = 1 << 16;

/// Every header ever made, and the released ones waiting for reuse.
struct Headers {
    /// Base address of each slab, `count` of them set.
    bases: Box<[AtomicUsize]>,
    /// Slabs allocated (published after their base).
    count: AtomicUsize,
    /// Headers handed out fresh so far (the next one's index).
    next: AtomicUsize,
    /// Serialises adding a slab.
    grow: Mutex<()>,
    /// Released headers, oldest first.
    quarantine: SegQueue<usize>,
}

static HEADERS: LazyLock<Headers> = LazyLock::new(|| Headers {
    bases: (0..MAX_SLABS).map(|_| AtomicUsize::new(0)).collect(),
    count: AtomicUsize::new(0),
    next: AtomicUsize::new(0),
    grow: Mutex::new(()),
    quarantine: SegQueue::new(),
});

const HEADER: usize = std::mem::size_of::<Header>();

impl Headers {
    /// The header at `addr`, if `addr` is the address of one of ours.
    fn get(&self, addr: usize) -> Option<&'static Header> {
        let n = self.count.load(Ordering::Acquire);
        for base in self.bases[..n].iter().rev() {
            let base = base.load(Ordering::Relaxed);
            let off = addr.wrapping_sub(base);
            if off < SLAB * HEADER {
                if off % HEADER != 0 {
                    return None;
                }
                // SAFETY: `addr` is on a header boundary inside a slab,
                // and slabs are leaked: a live, initialised `Header` for
                // the rest of the process.
                return Some(unsafe { &*(addr as *const Header) });
            }
        }
        None
    }

    /// A header never used before: the next of the current slab, or of a
    /// new one.
    fn fresh(&self) -> &'static Header {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let (slab, j) = (i / SLAB, i % SLAB);
        if slab >= self.count.load(Ordering::Acquire) {
            let _g = self.grow.lock();
            while self.count.load(Ordering::Acquire) <= slab {
                let ddi = crate::ddi::table();
                let headers: &'static [Header] = Box::leak(
                    (0..SLAB)
                        .map(|_| Header {
                            ddi,
                            slot: Mutex::new(None),
                        })
                        .collect(),
                );
                let k = self.count.load(Ordering::Relaxed);
                assert!(k < MAX_SLABS, "more than {} UR handles", MAX_SLABS * SLAB);
                self.bases[k].store(headers.as_ptr() as usize, Ordering::Relaxed);
                self.count.store(k + 1, Ordering::Release);
            }
        }
        let base = self.bases[slab].load(Ordering::Relaxed);
        // SAFETY: slab `slab` is published (count > slab, acquired above
        // or under the lock) and `j < SLAB`: an initialised header.
        unsafe { &*((base + j * HEADER) as *const Header) }
    }
}

/// Registers `obj` under a new handle with one reference.
pub fn register<H>(obj: Object) -> *mut H {
    let h = &*HEADERS;
    let header = match (h.quarantine.len() > QUARANTINE).then(|| h.quarantine.pop()).flatten() {
        // SAFETY (of the pointer): quarantined addresses are headers of ours.
        Some(addr) => h.get(addr).expect("quarantined addresses are headers"),
        None => h.fresh(),
    };
    *header.slot.lock() = Some(Entry { refs: 1, obj });
    header as *const Header as *mut H
}

/// The header of a handle, or the error for its kind.
fn header_of<H>(handle: *mut H, kind: Kind) -> Result<&'static Header, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    HEADERS.get(handle as usize).ok_or(CapiError::Invalid(kind))
}

/// The object of a handle, cloned out of its header.
pub fn lookup<H>(handle: *mut H, kind: Kind) -> Result<Object, CapiError> {
    match &*header_of(handle, kind)?.slot.lock() {
        Some(e) if e.obj.kind() == kind => Ok(e.obj.clone()),
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// The objects of two handles (the buffer and queue of a command).
pub fn lookup2<A, B>(a: *mut A, ka: Kind, b: *mut B, kb: Kind) -> Result<(Object, Object), CapiError> {
    if a.is_null() || b.is_null() {
        return Err(CapiError::NullHandle);
    }
    Ok((lookup(a, ka)?, lookup(b, kb)?))
}

/// Adds a reference.
pub fn retain<H>(handle: *mut H, kind: Kind) -> Result<(), CapiError> {
    match &mut *header_of(handle, kind)?.slot.lock() {
        Some(e) if e.obj.kind() == kind => {
            e.refs = e.refs.saturating_add(1);
            Ok(())
        }
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Drops a reference; returns the object when that was the last one (the
/// handle is then unregistered and its header quarantined). `permanent`
/// handles (adapter, platforms, devices) never go away.
pub fn release<H>(handle: *mut H, kind: Kind) -> Result<Option<Object>, CapiError> {
    let header = header_of(handle, kind)?;
    let obj = {
        let mut slot = header.slot.lock();
        let e = match &mut *slot {
            Some(e) if e.obj.kind() == kind => e,
            _ => return Err(CapiError::Invalid(kind)),
        };
        if e.obj.permanent() {
            e.refs = e.refs.saturating_sub(1);
            return Ok(None);
        }
        e.refs -= 1;
        if e.refs > 0 {
            return Ok(None);
        }
        slot.take().map(|e| e.obj)
    };
    HEADERS.quarantine.push(handle as usize);
    Ok(obj)
}

/// The reference count of a handle.
pub fn ref_count<H>(handle: *mut H, kind: Kind) -> Result<u32, CapiError> {
    match &*header_of(handle, kind)?.slot.lock() {
        Some(e) if e.obj.kind() == kind => Ok(e.refs),
        _ => Err(CapiError::Invalid(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_across_a_slab_boundary_are_distinct_and_route_to_our_table() {
        let n = SLAB + 3;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..n {
            let h = register::<u8>(Object::Adapter);
            assert_eq!(h as usize % std::mem::align_of::<Header>(), 0);
            assert!(seen.insert(h as usize), "a live header was handed out twice");
            // SAFETY: `h` is a header this table just allocated; headers are
            // never freed.
            let ddi = unsafe { (*(h as *const Header)).ddi };
            assert_eq!(ddi, crate::ddi::table());
            assert_eq!(ref_count(h, Kind::Adapter), Ok(1));
        }
    }

    #[test]
    fn foreign_stale_and_mistyped_handles_are_refused_without_a_read() {
        let mut local = 0u64;
        assert_eq!(
            lookup(&raw mut local, Kind::Queue).unwrap_err(),
            CapiError::Invalid(Kind::Queue)
        );
        let h = register::<u8>(Object::Adapter);
        // Inside our slab but not on a header boundary.
        assert_eq!(
            lookup(h.wrapping_add(1), Kind::Adapter).unwrap_err(),
            CapiError::Invalid(Kind::Adapter)
        );
        assert_eq!(lookup(h, Kind::Queue).unwrap_err(), CapiError::Invalid(Kind::Queue));
        assert!(lookup(h, Kind::Adapter).is_ok());
    }

    #[test]
    fn threads_register_look_up_and_release_concurrently() {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..20_000 {
                        let h = register::<u8>(Object::Adapter);
                        retain(h, Kind::Adapter).unwrap();
                        assert_eq!(ref_count(h, Kind::Adapter), Ok(2));
                        assert!(matches!(lookup(h, Kind::Adapter), Ok(Object::Adapter)));
                    }
                });
            }
        });
    }
}
