//! Handles crossing the ABI: boxed headers registered in one table, sharded
//! by address so that threads working on their own objects rarely share a
//! lock (no process-wide lock on the command path).
//!
//! Every UR handle we hand out points at a [`Header`] whose first field is
//! a pointer to our [`ur_dditable_t`]: UR 0.12's loader reads the dispatch
//! table at offset 0 of any handle to route a call, without wrapping
//! handles. We never read through a handle ourselves: an incoming handle is
//! only an address, looked up in the registry (`LIVE`); only a registered address of the
//! expected kind reaches its object, so a released, stale, foreign or
//! mistyped handle is an `INVALID_*` result, never a dereference.
//!
//! Reference counts (`urXRetain` / `urXRelease`) live here, per handle.
//! A header's memory is never returned to the allocator while a caller may
//! still hold the address (the loader dereferences it): released headers
//! wait in a quarantine of [`QUARANTINE`] entries before they are reused, so
//! a stale handle stays a readable header pointing at the table (the loader
//! routes it to us, and we answer `INVALID_*`) and is only confused with a
//! new object after that many further releases. The quarantine is kept per
//! releasing thread (no shared free list on the command path): a header is
//! reused by the thread that released it after that thread released
//! [`QUARANTINE`] more, or, once that thread has ended, after as many
//! orphans have queued behind it in the shared pool.

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
/// a slab (256 KiB) and a thread's full quarantine queue (512 KiB) are
/// above glibc's mmap threshold, so they are not interleaved with the
/// per-command objects the OpenCL runtimes allocate and free there (one
/// small never-freed block per handle was, before). No change of the
/// `urabi` dispatch row could be measured from this on the shared machine.
const SLAB: usize = 32 * 1024;

/// Shards of the table of live handles (a power of two). A handle's shard
/// is a hash of its address, so threads working on their own objects rarely
/// meet on a lock.
const SHARDS: usize = 16;

/// Headers a thread takes from the shared pool at a time.
const CHUNK: usize = 1024;

type Live = HashMap<usize, Entry, std::hash::BuildHasherDefault<AddrHasher>>;

/// One shard of live handles, on its own cache lines.
#[repr(align(128))]
struct Shard(Mutex<Live>);

static LIVE: LazyLock<[Shard; SHARDS]> = LazyLock::new(|| std::array::from_fn(|_| Shard(Mutex::new(Live::default()))));

/// The shard of a handle's address.
fn shard(addr: usize) -> &'static Mutex<Live> {
    let h = ((addr as u64) >> 3).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    &LIVE[(h >> (64 - SHARDS.trailing_zeros())) as usize].0
}

/// Headers not handed out yet: the rest of the last slab, and released
/// headers of threads that ended (reused once more than [`QUARANTINE`]
/// of them wait, as a thread's own are).
#[derive(Default)]
struct Spare {
    slab: &'static [Header],
    orphans: VecDeque<usize>,
}

// SAFETY: the pool holds addresses and a `'static` slice of headers that
// are never written after creation; `Header`'s raw pointer names a
// `'static` table.
unsafe impl Send for Spare {}

static POOL: LazyLock<Mutex<Spare>> = LazyLock::new(|| Mutex::new(Spare::default()));

impl Spare {
    /// Up to [`CHUNK`] headers for a thread: quarantined orphans first, else
    /// never-used ones from the current slab or a new one.
    fn chunk(&mut self) -> Vec<usize> {
        if self.orphans.len() > QUARANTINE {
            let n = (self.orphans.len() - QUARANTINE).min(CHUNK);
            return self.orphans.drain(..n).collect();
        }
        if self.slab.is_empty() {
            let ddi = crate::table::ptr();
            self.slab = Box::leak((0..SLAB).map(|_| Header { ddi }).collect());
        }
        let (taken, rest) = self.slab.split_at(CHUNK.min(self.slab.len()));
        self.slab = rest;
        taken.iter().map(|h| h as *const Header as usize).collect()
    }
}

/// A thread's own headers: released ones in quarantine, and fresh ones
/// taken from the [`POOL`] a chunk at a time. Registering and releasing
/// touch no lock but the handle's shard.
#[derive(Default)]
struct Local {
    free: VecDeque<usize>,
    fresh: Vec<usize>,
}

impl Local {
    fn header(&mut self) -> usize {
        if self.free.len() > QUARANTINE {
            if let Some(a) = self.free.pop_front() {
                return a;
            }
        }
        if self.fresh.is_empty() {
            self.fresh = POOL.lock().chunk();
        }
        self.fresh.pop().expect("a chunk holds at least one header")
    }
}

impl Drop for Local {
    /// A thread that ends gives its headers back: released ones keep their
    /// place in the quarantine order, fresh ones are orphans never used.
    fn drop(&mut self) {
        let mut pool = POOL.lock();
        pool.orphans.extend(self.free.drain(..));
        pool.orphans.extend(self.fresh.drain(..));
    }
}

thread_local! {
    static LOCAL: std::cell::RefCell<Local> = std::cell::RefCell::new(Local::default());
}

/// A header for a new handle: the thread's own, or (while the thread is
/// being torn down) one straight from the pool.
fn new_header() -> usize {
    LOCAL
        .try_with(|l| l.borrow_mut().header())
        .unwrap_or_else(|_| POOL.lock().chunk()[0])
}

/// Puts a released header in the quarantine of the releasing thread.
fn quarantine(addr: usize) {
    if LOCAL.try_with(|l| l.borrow_mut().free.push_back(addr)).is_err() {
        POOL.lock().orphans.push_back(addr);
    }
}

/// Registers `obj` under a new handle with one reference.
pub fn register<H>(obj: Object) -> *mut H {
    let addr = new_header();
    shard(addr).lock().insert(addr, Entry { refs: 1, obj });
    addr as *mut H
}

/// The object of a handle, cloned out of the table.
pub fn lookup<H>(handle: *mut H, kind: Kind) -> Result<Object, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let addr = handle as usize;
    let t = shard(addr).lock();
    let e = t.get(&addr).ok_or(CapiError::Invalid(kind))?;
    if e.obj.kind() != kind {
        return Err(CapiError::Invalid(kind));
    }
    Ok(e.obj.clone())
}

/// The objects of two handles, cloned out of the table (the buffer and
/// queue of a command): one lock when both are in the same shard.
pub fn lookup2<A, B>(a: *mut A, ka: Kind, b: *mut B, kb: Kind) -> Result<(Object, Object), CapiError> {
    if a.is_null() || b.is_null() {
        return Err(CapiError::NullHandle);
    }
    let (a, b) = (a as usize, b as usize);
    let one = |t: &Live, h: usize, k: Kind| match t.get(&h) {
        Some(e) if e.obj.kind() == k => Ok(e.obj.clone()),
        _ => Err(CapiError::Invalid(k)),
    };
    let (sa, sb) = (shard(a), shard(b));
    if std::ptr::eq(sa, sb) {
        let t = sa.lock();
        return Ok((one(&t, a, ka)?, one(&t, b, kb)?));
    }
    let oa = one(&sa.lock(), a, ka)?;
    Ok((oa, one(&sb.lock(), b, kb)?))
}

/// Adds a reference.
pub fn retain<H>(handle: *mut H, kind: Kind) -> Result<(), CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let addr = handle as usize;
    let mut t = shard(addr).lock();
    match t.get_mut(&addr) {
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
    let mut t = shard(addr).lock();
    // One probe of the table: the entry is looked at and, on the last
    // release, removed through the same slot.
    let mut slot = match t.entry(addr) {
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
    drop(t);
    quarantine(addr);
    Ok(Some(obj))
}

/// The reference count of a handle.
pub fn ref_count<H>(handle: *mut H, kind: Kind) -> Result<u32, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    let addr = handle as usize;
    let t = shard(addr).lock();
    match t.get(&addr) {
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
