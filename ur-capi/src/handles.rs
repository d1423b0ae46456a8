//! Handles crossing the ABI: a handle is the address of a [`Header`] that
//! holds its object and reference count, as in UR's own adapters. One
//! translation per handle, and no table shared by every thread: a command
//! touches only the headers of its own handles.
//!
//! Every header's first field is a pointer to our [`ur_dditable_t`]: UR
//! 0.12's loader reads the dispatch table at offset 0 of any handle to route
//! a call, without wrapping handles.
//!
//! An incoming handle is validated before anything is read through it, and
//! validating is wait-free: headers live only in arenas this module
//! allocates (and never frees), whose bounds are published in `ARENAS`;
//! an address is read as a header only if it lies in one of them, on a
//! header boundary. So a foreign or garbage address is an `INVALID_*`
//! result, never a dereference; a header's object and reference count sit
//! behind the header's own lock, and a released handle (no object), a stale
//! one or a mistyped one is `INVALID_*` too.
//!
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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use crate::conv::CapiError;
use crate::conv::Kind;
use crate::objects::{Context, Event, Kernel, Mem, Object, Pool, Program, Queue};
use crate::sys::ur_dditable_t;
use parking_lot::Mutex;
use std::sync::Arc;
use ur_api::spin::SpinMutex;
use ur_api::{DeviceId, PlatformId};

/// Released headers kept (per releasing thread) before reuse: a stale
/// handle answers `INVALID_*` until its thread has released this many more
/// (UR's own adapters detect none). Not more: the ring of headers a thread
/// cycles through is `QUARANTINE` x 128 bytes, and at 65,536 (8 MiB) every
/// command's new event missed the last-level cache (callgrind's cache
/// simulation of the `urabi` dispatch child: 6.8 last-level write misses
/// per command, none at 4,096, whose 512 KiB stay in cache).
pub const QUARANTINE: usize = 1 << 12;

/// What every handle points at: the loader's routing pointer, then the
/// object the handle names. Each header has its own cache line(s), so
/// threads working on their own handles do not share one.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct Header {
    /// Read by the UR loader to route calls on this handle.
    ddi: *const ur_dditable_t,
    /// The object and its reference count; `None` while the header is
    /// spare or released. A spin lock ([`SpinMutex`]): one atomic
    /// read-modify-write per lookup, where a parking mutex takes two.
    slot: SpinMutex<Slot>,
}

/// A header's object and its reference count (`urXRetain` / `urXRelease`).
#[derive(Debug, Default)]
struct Slot {
    refs: u32,
    obj: Option<Object>,
}

// SAFETY: `ddi` names our `'static`, immutable dispatch table; the object
// is only reached through the header's lock.
unsafe impl Sync for Header {}
// SAFETY: as above.
unsafe impl Send for Header {}

/// Headers in the first arena (1 MiB); each later arena holds twice as
/// many as the one before (up to [`ARENA_MAX`]), so a process with many
/// live or quarantined handles still has few arenas to check a handle
/// against.
///
/// The size also keeps these long-lived blocks out of the small-object heap:
/// an arena is above glibc's mmap threshold, so it is not interleaved with
/// the per-command objects the OpenCL runtimes allocate and free there.
const SLAB: usize = 8 * 1024;

/// The most headers in one arena (128 MiB of headers).
const ARENA_MAX: usize = SLAB << 7;

/// The most arenas: far beyond any process (about 60 M handles).
const ARENA_SLOTS: usize = 64;

/// The arenas' bounds (base address, length in bytes), published for
/// lock-free validation: a slot is written (under [`POOL`]'s lock) before
/// `count` counts it.
struct Arenas {
    base: [AtomicUsize; ARENA_SLOTS],
    bytes: [AtomicUsize; ARENA_SLOTS],
    count: AtomicUsize,
}

static ARENAS: Arenas = Arenas {
    base: [const { AtomicUsize::new(0) }; ARENA_SLOTS],
    bytes: [const { AtomicUsize::new(0) }; ARENA_SLOTS],
    count: AtomicUsize::new(0),
};

/// The header at `addr`, if `addr` is the address of one: it lies in an
/// arena, on a header boundary. Wait-free: a handful of atomic loads.
fn header_at(addr: usize) -> Option<&'static Header> {
    let size = std::mem::size_of::<Header>();
    let n = ARENAS.count.load(Ordering::Acquire);
    // Newest arena first: it holds the headers handed out most recently.
    for i in (0..n).rev() {
        let base = ARENAS.base[i].load(Ordering::Relaxed);
        let off = addr.wrapping_sub(base);
        if off < ARENAS.bytes[i].load(Ordering::Relaxed) {
            if off % size != 0 {
                return None;
            }
            // SAFETY: `addr` is a header boundary inside arena `i`, whose
            // headers were all initialised before the arena was published
            // (the acquire load of the count above pairs with the release
            // store in `Spare::chunk`) and are never freed or moved.
            return Some(unsafe { &*(addr as *const Header) });
        }
    }
    None
}

/// Headers a thread takes from the shared pool at a time.
const CHUNK: usize = 1024;

/// Headers not handed out yet: the rest of the last arena, and released
/// headers of threads that ended (reused once more than [`QUARANTINE`]
/// of them wait, as a thread's own are).
#[derive(Default)]
struct Spare {
    slab: &'static [Header],
    orphans: VecDeque<usize>,
}

static POOL: LazyLock<Mutex<Spare>> = LazyLock::new(|| Mutex::new(Spare::default()));

impl Spare {
    /// Up to [`CHUNK`] headers for a thread: quarantined orphans first, else
    /// never-used ones from the current arena or a new one.
    fn chunk(&mut self) -> Vec<usize> {
        if self.orphans.len() > QUARANTINE {
            let n = (self.orphans.len() - QUARANTINE).min(CHUNK);
            return self.orphans.drain(..n).collect();
        }
        if self.slab.is_empty() {
            self.slab = new_arena();
        }
        let (taken, rest) = self.slab.split_at(CHUNK.min(self.slab.len()));
        self.slab = rest;
        taken.iter().map(|h| h as *const Header as usize).collect()
    }
}

/// Allocates, initialises and publishes the next arena (called under
/// [`POOL`]'s lock, so arenas are published one at a time).
fn new_arena() -> &'static [Header] {
    let i = ARENAS.count.load(Ordering::Relaxed);
    assert!(i < ARENA_SLOTS, "more than {ARENA_SLOTS} handle arenas");
    let len = (SLAB << i).min(ARENA_MAX);
    let ddi = crate::table::ptr();
    let arena: &'static [Header] = Box::leak(
        (0..len)
            .map(|_| Header {
                ddi,
                slot: SpinMutex::new(Slot::default()),
            })
            .collect(),
    );
    ARENAS.base[i].store(arena.as_ptr() as usize, Ordering::Relaxed);
    ARENAS.bytes[i].store(std::mem::size_of_val(arena), Ordering::Relaxed);
    ARENAS.count.store(i + 1, Ordering::Release);
    arena
}

/// A thread's own headers: released ones in quarantine, and fresh ones
/// taken from the [`POOL`] a chunk at a time. Registering and releasing
/// touch no lock but the handle's own.
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
    debug_assert!(header_at(addr).is_some(), "headers are handed out from the arenas");
    // SAFETY: `new_header` hands out only addresses of headers in published
    // arenas, which are initialised and never freed or moved.
    let header = unsafe { &*(addr as *const Header) };
    let mut slot = header.slot.lock();
    slot.refs = 1;
    slot.obj = Some(obj);
    addr as *mut H
}

/// The header of a non-null handle, or the `INVALID_*` error of `kind`.
fn header<H>(handle: *mut H, kind: Kind) -> Result<&'static Header, CapiError> {
    if handle.is_null() {
        return Err(CapiError::NullHandle);
    }
    header_at(handle as usize).ok_or(CapiError::Invalid(kind))
}

/// The object of a handle, cloned out of its header.
pub fn lookup<H>(handle: *mut H, kind: Kind) -> Result<Object, CapiError> {
    match &header(handle, kind)?.slot.lock().obj {
        Some(o) if o.kind() == kind => Ok(o.clone()),
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Reads the object of a handle in place, under its header's lock, without
/// cloning it: `f` copies out what it needs, so a command takes no
/// reference count for an object whose few words it uses (a queue, a
/// direct buffer). `f` runs with the header's spin lock held: it must not
/// touch another handle or block.
#[inline]
pub fn read<H, R>(handle: *mut H, kind: Kind, f: impl FnOnce(&Object) -> Option<R>) -> Result<R, CapiError> {
    match &header(handle, kind)?.slot.lock().obj {
        Some(o) if o.kind() == kind => f(o).ok_or(CapiError::Invalid(kind)),
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Adds a reference.
pub fn retain<H>(handle: *mut H, kind: Kind) -> Result<(), CapiError> {
    let mut slot = header(handle, kind)?.slot.lock();
    match &slot.obj {
        Some(o) if o.kind() == kind => {
            slot.refs = slot.refs.saturating_add(1);
            Ok(())
        }
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Drops a reference; returns the object when that was the last one (the
/// header is then emptied and quarantined). `permanent` handles (adapter,
/// platforms, root devices) never go away.
pub fn release<H>(handle: *mut H, kind: Kind) -> Result<Option<Object>, CapiError> {
    release_inline(handle, kind)
}

/// [`release`], inlined into its caller: for `urEventRelease`, once per
/// command, where the object handed back is matched at once.
#[inline(always)]
pub fn release_inline<H>(handle: *mut H, kind: Kind) -> Result<Option<Object>, CapiError> {
    let mut slot = header(handle, kind)?.slot.lock();
    let permanent = match &slot.obj {
        Some(o) if o.kind() == kind => o.permanent(),
        _ => return Err(CapiError::Invalid(kind)),
    };
    if permanent {
        slot.refs = slot.refs.saturating_sub(1);
        return Ok(None);
    }
    slot.refs -= 1;
    if slot.refs > 0 {
        return Ok(None);
    }
    let obj = slot.obj.take();
    drop(slot);
    quarantine(handle as usize);
    Ok(obj)
}

/// The reference count of a handle.
pub fn ref_count<H>(handle: *mut H, kind: Kind) -> Result<u32, CapiError> {
    let slot = header(handle, kind)?.slot.lock();
    match &slot.obj {
        Some(o) if o.kind() == kind => Ok(slot.refs),
        _ => Err(CapiError::Invalid(kind)),
    }
}

/// Typed lookups: `get::<Queue>(h)`.
pub trait FromObject: Sized {
    /// The handle kind.
    const KIND: Kind;
    /// A copy of the typed object, if `o` is one (a reference count taken
    /// for an `Arc`, plain data copied).
    fn from_ref(o: &Object) -> Option<Self>;
}

macro_rules! from_object {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl FromObject for $t {
            const KIND: Kind = Kind::$variant;
            #[inline]
            fn from_ref(o: &Object) -> Option<Self> {
                match o {
                    Object::$variant(x) => Some(x.clone()),
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

/// The objects of handles `a` and `b` as an `A` and a `B`, or the
/// `INVALID_*` error of the first that is not.
pub fn get2<A: FromObject, B: FromObject, HA, HB>(a: *mut HA, b: *mut HB) -> Result<(A, B), CapiError> {
    if a.is_null() || b.is_null() {
        return Err(CapiError::NullHandle);
    }
    Ok((get(a)?, get(b)?))
}

/// The object of handle `h` as a `T`, or the `INVALID_*` error of `T`'s kind.
pub fn get<T: FromObject, H>(h: *mut H) -> Result<T, CapiError> {
    read(h, T::KIND, T::from_ref)
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

    /// A context object over the runtime's first device (its handle
    /// fields are not looked at here).
    fn some_context() -> Arc<Context> {
        let rt = crate::rt::runtime();
        let platform = rt.platforms()[0];
        let device = rt.devices(platform).unwrap()[0];
        Arc::new(Context {
            id: rt.create_context(&[device]).unwrap(),
            parts: Vec::new(),
            devices: Vec::new(),
            mm: std::sync::OnceLock::new(),
            max_alloc: 0,
            use_host_ptr: false,
            deleters: parking_lot::Mutex::new(Vec::new()),
        })
    }

    #[test]
    fn a_header_takes_at_most_two_cache_lines() {
        // The quarantine's footprint (see `QUARANTINE`) counts on it.
        assert!(
            std::mem::size_of::<Header>() <= 128,
            "{}",
            std::mem::size_of::<Header>()
        );
        assert_eq!(std::mem::align_of::<Header>(), 64);
    }

    #[test]
    fn only_live_headers_of_the_right_kind_are_read() {
        crate::ddi::table();
        let ctx = some_context();
        let h = register::<u8>(Object::Context(ctx.clone()));
        assert!(matches!(lookup(h, Kind::Context), Ok(Object::Context(c)) if Arc::ptr_eq(&c, &ctx)));
        assert_eq!(lookup(h, Kind::Queue).unwrap_err(), CapiError::Invalid(Kind::Queue));
        // Addresses that are not headers: inside one, off by a byte, on the
        // stack, on the heap, and far away; none is read through.
        let inside = (h as usize + 8) as *mut u8;
        let off = (h as usize + 1) as *mut u8;
        let mut local = 0u64;
        let heap = Box::new([0u64; 16]);
        let bad = [
            inside,
            off,
            (&mut local as *mut u64).cast(),
            heap.as_ptr() as *mut u8,
            usize::MAX as *mut u8,
        ];
        for b in bad {
            assert_eq!(lookup(b, Kind::Context).unwrap_err(), CapiError::Invalid(Kind::Context));
            assert_eq!(retain(b, Kind::Context).unwrap_err(), CapiError::Invalid(Kind::Context));
            assert_eq!(
                release(b, Kind::Context).unwrap_err(),
                CapiError::Invalid(Kind::Context)
            );
            assert_eq!(
                ref_count(b, Kind::Context).unwrap_err(),
                CapiError::Invalid(Kind::Context)
            );
        }
        assert_eq!(
            lookup(std::ptr::null_mut::<u8>(), Kind::Context).unwrap_err(),
            CapiError::NullHandle
        );
        assert_eq!(release(h, Kind::Context).map(|o| o.is_some()), Ok(true));
    }

    #[test]
    fn reading_in_place_copies_out_only_from_a_live_header_of_the_kind() {
        crate::ddi::table();
        let ctx = some_context();
        let h = register::<u8>(Object::Context(ctx.clone()));
        let id = |o: &Object| match o {
            Object::Context(c) => Some(c.id),
            _ => None,
        };
        assert_eq!(read(h, Kind::Context, id), Ok(ctx.id));
        assert_eq!(Arc::strong_count(&ctx), 2, "a read takes no reference");
        // The wrong kind, an object `f` refuses, a foreign address.
        assert_eq!(read(h, Kind::Queue, id), Err(CapiError::Invalid(Kind::Queue)));
        assert_eq!(
            read(h, Kind::Context, |_| None::<()>),
            Err(CapiError::Invalid(Kind::Context))
        );
        let mut local = 0u64;
        let foreign: *mut u8 = (&mut local as *mut u64).cast();
        assert_eq!(read(foreign, Kind::Context, id), Err(CapiError::Invalid(Kind::Context)));
        assert_eq!(
            read(std::ptr::null_mut::<u8>(), Kind::Context, id),
            Err(CapiError::NullHandle)
        );
        // Released: invalid, and `f` never sees the emptied header.
        assert!(release(h, Kind::Context).unwrap().is_some());
        assert_eq!(
            read(h, Kind::Context, |_| -> Option<()> { panic!("read a released header") }),
            Err(CapiError::Invalid(Kind::Context))
        );
    }

    #[test]
    fn a_released_handle_is_invalid_and_its_header_waits_in_quarantine() {
        crate::ddi::table();
        let ctx = some_context();
        let h = register::<u8>(Object::Context(ctx.clone()));
        retain(h, Kind::Context).unwrap();
        assert_eq!(ref_count(h, Kind::Context), Ok(2));
        assert!(release(h, Kind::Context).unwrap().is_none());
        assert_eq!(Arc::strong_count(&ctx), 2, "the header still holds the context");
        assert!(matches!(release(h, Kind::Context), Ok(Some(Object::Context(_)))));
        assert_eq!(Arc::strong_count(&ctx), 1, "the last release hands the object back");
        assert_eq!(
            release(h, Kind::Context).unwrap_err(),
            CapiError::Invalid(Kind::Context)
        );
        assert_eq!(lookup(h, Kind::Context).unwrap_err(), CapiError::Invalid(Kind::Context));
        assert_eq!(
            ref_count(h, Kind::Context).unwrap_err(),
            CapiError::Invalid(Kind::Context)
        );
        // The next handles of this thread do not reuse the released header.
        let next: Vec<*mut u8> = (0..1000).map(|_| register(Object::Adapter)).collect();
        assert!(!next.contains(&h));
    }

    #[test]
    fn threads_register_look_up_and_release_their_own_handles() {
        crate::ddi::table();
        let ctx = some_context();
        let shared = register::<u8>(Object::Context(ctx.clone()));
        let addr = shared as usize;
        std::thread::scope(|s| {
            for _ in 0..4 {
                let ctx = ctx.clone();
                s.spawn(move || {
                    let shared = addr as *mut u8;
                    for _ in 0..5_000 {
                        let own = Arc::new(Context {
                            id: ctx.id,
                            parts: Vec::new(),
                            devices: Vec::new(),
                            mm: std::sync::OnceLock::new(),
                            max_alloc: 0,
                            use_host_ptr: false,
                            deleters: parking_lot::Mutex::new(Vec::new()),
                        });
                        let h = register::<u8>(Object::Context(own.clone()));
                        retain(shared, Kind::Context).unwrap();
                        assert!(matches!(lookup(h, Kind::Context), Ok(Object::Context(c)) if Arc::ptr_eq(&c, &own)));
                        assert!(lookup(shared, Kind::Context).is_ok());
                        release(shared, Kind::Context).unwrap();
                        assert!(release(h, Kind::Context).unwrap().is_some());
                        assert_eq!(Arc::strong_count(&own), 1);
                    }
                });
            }
        });
        assert_eq!(ref_count(shared, Kind::Context), Ok(1));
        assert_eq!(Arc::strong_count(&ctx), 2, "one clone in the shared header");
    }
}
