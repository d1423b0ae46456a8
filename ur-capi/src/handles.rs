//! Handles crossing the ABI: boxed headers registered in one table.
//!
//! Every UR handle we hand out points at a [`Header`] whose first field is
//! a pointer to our [`ur_dditable_t`]: UR 0.12's loader reads the dispatch
//! table at offset 0 of any handle to route a call, without wrapping
//! handles. We never read through a handle ourselves: an incoming handle is
//! only an address, looked up in the registry (`TABLE`); only a registered address of the
//! expected kind reaches its object, so a released, stale, foreign or
//! mistyped handle is an `INVALID_*` result, never a dereference.
//!
//! Reference counts (`urXRetain` / `urXRelease`) live here, per handle.
//! A header's memory is never returned to the allocator while a caller may
//! still hold the address (the loader dereferences it): released headers
//! wait in a quarantine of [`QUARANTINE`] entries before they are reused, so
//! a stale handle stays a readable header pointing at the table (the loader
//! routes it to us, and we answer `INVALID_*`) and is only confused with a
//! new object after that many further releases.

use std::collections::hash_map::Entry::Occupied;
use std::collections::{HashMap, VecDeque};
use std::sync::LazyLock;

use crate::conv::CapiError;
use crate::conv::Kind;
use crate::objects::{Context, Event, Kernel, Mem, Object, Pool, Program, Queue};
use crate::sys::ur_dditable_t;
use parking_lot::Mutex;
use std::sync::Arc;
use ur_api::{DeviceId, PlatformId};

/// Released headers kept before reuse.
pub const QUARANTINE: usize = 1 << 16;

/// What every handle points at.
#[repr(C)]
#[derive(Debug)]
pub struct Header {
    /// Read by the UR loader to route calls on this handle.
    ddi: *const ur_dditable_t,
}

/// A live object and its reference count.
#[derive(Debug)]
struct Entry {
    refs: u32,
    obj: Object,
}

/// Hashes a handle address: headers are 8-byte aligned heap addresses, so
/// a multiplicative mix of the address is spread enough, and costs a
/// fraction of SipHash on the hot path (two lookups per command). Keys are
/// addresses we allocated, so there is no hash flooding to defend against.
#[derive(Debug, Default, Clone, Copy)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = ((v as u64) >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

/// Headers allocated at once when none is spare: one allocation serves
/// this many new handles (headers are never returned to the allocator, see
/// the module docs, so nothing is lost by allocating them together).
///
/// The size also keeps these long-lived blocks out of the small-object heap:
/// a slab (256 KiB) and the quarantine queue (512 KiB, reserved once) are
/// above glibc's mmap threshold, so they are not interleaved with the
/// per-command objects the OpenCL runtimes allocate and free there (one
/// small never-freed block per handle was, before). No change of the
/// `urabi` dispatch row could be measured from this on the shared machine.
const SLAB: usize = 32 * 1024;

/// Registered handles, and released headers waiting for reuse.
#[derive(Debug, Default)]
struct Table {
    live: HashMap<usize, Entry, std::hash::BuildHasherDefault<AddrHasher>>,
    free: VecDeque<usize>,
    /// Headers of the last slab never handed out yet.
    fresh: &'static [Header],
}

impl Table {
    /// A header never used before, from the current slab or a new one.
    fn new_header(&mut self) -> usize {
        if self.fresh.is_empty() {
            let ddi = crate::table::ptr();
            self.fresh = Box::leak((0..SLAB).map(|_| Header { ddi }).collect());
        }
        let (first, rest) = self.fresh.split_at(1);
        self.fresh = rest;
        &first[0] as *const Header as usize
    }
}

// SAFETY: the table only stores addresses of headers it owns; `Header`'s
// raw pointer names a `'static` table that is never written after creation.
unsafe impl Send for Table {}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(|| {
    Mutex::new(Table {
        free: VecDeque::with_capacity(QUARANTINE + 2),
        ..Table::default()
    })
});

/// Registers `obj` under a new handle with one reference.
pub fn register<H>(obj: Object) -> *mut H {
    let mut t = TABLE.lock();
    let reused = if t.free.len() > QUARANTINE {
        t.free.pop_front()
    } else {
        None
    };
    let addr = match reused {
        Some(a) => a,
        None => t.new_header(),
    };
    t.live.insert(addr, Entry { refs: 1, obj });
    addr as *mut H
}

/// The object of a handle, cloned out of the table.
pub fn lookup<H>(handle: *mut H, kind: Kind) -> Result<Object, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let t = TABLE.lock();
    let e = t.live.get(&(handle as usize)).ok_or(CapiError::Invalid(kind))?;
    if e.obj.kind() != kind {
        return Err(CapiError::Invalid(kind));
    }
    Ok(e.obj.clone())
}

/// The objects of two handles, cloned out of the table under one lock
/// (the buffer and queue of a command).
pub fn lookup2<A, B>(a: *mut A, ka: Kind, b: *mut B, kb: Kind) -> Result<(Object, Object), CapiError> {
    if a.is_null() || b.is_null() {
        return Err(CapiError::NullHandle);
    }
    let t = TABLE.lock();
    let one = |h: usize, k: Kind| match t.live.get(&h) {
        Some(e) if e.obj.kind() == k => Ok(e.obj.clone()),
        _ => Err(CapiError::Invalid(k)),
    };
    Ok((one(a as usize, ka)?, one(b as usize, kb)?))
}

/// Adds a reference.
pub fn retain<H>(handle: *mut H, kind: Kind) -> Result<(), CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let mut t = TABLE.lock();
    match t.live.get_mut(&(handle as usize)) {
        Some(e) if e.obj.kind() == kind => {
            e.refs = e.refs.saturating_add(1);
            Ok(())
        }
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Drops a reference; returns the object when that was the last one (the
/// handle is then unregistered and its header quarantined). `permanent`
/// handles (adapter, platforms, root devices) never go away.
pub fn release<H>(handle: *mut H, kind: Kind) -> Result<Option<Object>, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let addr = handle as usize;
    let mut t = TABLE.lock();
    // One probe of the table: the entry is looked at and, on the last
    // release, removed through the same slot.
    let mut slot = match t.live.entry(addr) {
        Occupied(o) if o.get().obj.kind() == kind => o,
        _ => return Err(CapiError::Invalid(kind)),
    };
    let e = slot.get_mut();
    if e.obj.permanent() {
        e.refs = e.refs.saturating_sub(1);
        return Ok(None);
    }
    e.refs -= 1;
    if e.refs > 0 {
        return Ok(None);
    }
    let obj = slot.remove().obj;
    t.free.push_back(addr);
    Ok(Some(obj))
}

/// The reference count of a handle.
pub fn ref_count<H>(handle: *mut H, kind: Kind) -> Result<u32, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let t = TABLE.lock();
    match t.live.get(&(handle as usize)) {
        Some(e) if e.obj.kind() == kind => Ok(e.refs),
        _ => Err(CapiError::Invalid(kind)),
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
    Arc<Program> => Program,
    Arc<Kernel> => Kernel,
}

/// The objects of handles `a` and `b` as an `A` and a `B` (one table
/// lookup), or the `INVALID_*` error of the first that is not.
pub fn get2<A: FromObject, B: FromObject, HA, HB>(a: *mut HA, b: *mut HB) -> Result<(A, B), CapiError> {
    let (oa, ob) = lookup2(a, A::KIND, b, B::KIND)?;
    let a = A::from_object(oa).ok_or(CapiError::Invalid(A::KIND))?;
    let b = B::from_object(ob).ok_or(CapiError::Invalid(B::KIND))?;
    Ok((a, b))
}

/// The object of handle `h` as a `T`, or the `INVALID_*` error of `T`'s kind.
pub fn get<T: FromObject, H>(h: *mut H) -> Result<T, CapiError> {
    let o = lookup(h, T::KIND)?;
    T::from_object(o).ok_or(CapiError::Invalid(T::KIND))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_across_a_slab_boundary_are_distinct_and_route_to_our_table() {
        crate::ddi::table();
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
}
