//! [`PointerMap`]: any interior pointer -> the range holding it, with reads
//! that never wait on a writer.
//!
//! Ranges are indexed by the *granules* they touch: a range of at most
//! [`FINE_MAX`] bytes in the fine tier (64 KiB granules), one of at most
//! [`MEDIUM_MAX`] in the medium tier (1 MiB granules), one of at most
//! [`COARSE_MAX`] in the coarse tier (16 MiB granules), anything larger in a
//! short sorted list. A range touches at most 5, 17 or 65 granules of its
//! tier (each written on insert and removal), and a granule holds ranges of
//! at least a sixteenth of its tier's granule size, except in the fine tier
//! (so probe chains stay short). A 1 MiB USM allocation, SYCL's common
//! case, is one or two medium granules rather than 16 fine ones. Each tier is an open-addressing table of 64-byte
//! buckets: one granule key and up to three entries stored inline (start,
//! length, id), so a lookup that hits costs one hash and, on a loaded table,
//! one cache miss; a granule with more ranges continues in the next bucket
//! of its probe sequence.
//!
//! Concurrency: writers are serialised by one mutex over the authoritative
//! books (a `BTreeMap`, also used for the overlap check). Readers take no
//! lock: every bucket is a seqlock (a version, odd while a writer is inside)
//! whose words are atomics, so a torn read is detected and retried, never
//! undefined. Entries never move inside a table; a table that fills past half
//! is rebuilt from the books and published with `arc-swap` (RCU: readers on
//! the old table finish there). Values live inline in `ValueSlot`s
//! carrying their range, so a reader that raced with a removal and an id
//! reuse sees the mismatch and answers from the new state. A slot has two
//! cells and a reader count per cell: a reader counts itself into the
//! current cell, clones the value and leaves; a writer fills the other cell,
//! flips, and waits only for the readers still inside the old one before
//! dropping its value (no allocation per range, no `arc-swap` debts to pay
//! on every store; readers never wait for a writer).
//!
//! Measured (`memory-manager/benches/pointer_lookup.rs`): see the bench rows;
//! the design targets one dependent cache miss per hit.

use std::cell::{RefCell, UnsafeCell};
use std::collections::BTreeMap;
use std::mem::MaybeUninit;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::cache::Cache;
use arc_swap::ArcSwap;
use parking_lot::Mutex;

/// Largest range kept in the fine tier (64 KiB granules).
pub const FINE_MAX: usize = 1 << 18;
/// Largest range kept in the medium tier (1 MiB granules).
pub const MEDIUM_MAX: usize = 1 << 24;
/// Largest range kept in the coarse tier (16 MiB granules).
pub const COARSE_MAX: usize = 1 << 30;
/// The tiers, smallest granules first: granule size (log2) and the largest
/// range each keeps.
const TIERS: [(u32, usize); 3] = [(16, FINE_MAX), (20, MEDIUM_MAX), (24, COARSE_MAX)];
const SLOTS: usize = 3;
/// Value slots per chunk (a chunk is allocated, zeroed, on first use). Under
/// Miri chunks are smaller (the interpreter pays for every byte); the slot
/// logic is the same.
#[cfg(not(miri))]
const CHUNK_BITS: u32 = 12;
#[cfg(miri)]
const CHUNK_BITS: u32 = 6;
const CHUNKS: usize = 1 << 12;
/// Most ranges one map holds at once (ids are 24 bits).
pub const MAX_RANGES: usize = CHUNKS << CHUNK_BITS;

/// Why a range cannot be inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// The range is empty.
    #[error("empty range at {0:#x}")]
    Empty(usize),
    /// The range starts at null.
    #[error("range at null")]
    Null,
    /// `base + size` wraps the address space.
    #[error("range {base:#x}+{size} wraps the address space")]
    Wraps {
        /// Start.
        base: usize,
        /// Length.
        size: usize,
    },
    /// The range overlaps one already in the map.
    #[error("range {base:#x}+{size} overlaps {existing_base:#x}+{existing_size}")]
    Overlap {
        /// Start of the refused range.
        base: usize,
        /// Its length.
        size: usize,
        /// Start of the range it overlaps.
        existing_base: usize,
        /// Length of that range.
        existing_size: usize,
    },
    /// [`MAX_RANGES`] ranges are already held.
    #[error("the pointer map is full ({MAX_RANGES} ranges)")]
    Full,
}

/// A lookup's answer without the value: the range and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// Start of the range holding the pointer.
    pub base: usize,
    /// Its length.
    pub size: usize,
    /// The id the map gave it (reused after removal).
    pub id: u32,
}

#[repr(C, align(64))]
#[derive(Default)]
struct Bucket {
    seq: AtomicU64,
    /// Granule index + 1; 0 = never used. Set once per table.
    key: AtomicU64,
    /// (start, len << 24 | id); start 0 = free slot.
    slots: [[AtomicU64; 2]; SLOTS],
}

struct Table {
    shift: u32,
    buckets: Box<[Bucket]>,
    /// Entries in the table (readers skip an empty tier).
    entries: AtomicUsize,
}

fn pack(len: usize, id: u32) -> u64 {
    ((len as u64) << 24) | u64::from(id)
}

impl Table {
    fn new(shift: u32, buckets: usize) -> Self {
        Table {
            shift,
            buckets: (0..buckets).map(|_| Bucket::default()).collect(),
            entries: AtomicUsize::new(0),
        }
    }

    /// The first bucket of granule `g`'s probe sequence: a multiplicative
    /// hash mapped onto any table size by multiply-shift (no power-of-two
    /// rounding, so the table stays as small as the load allows).
    fn home(&self, g: u64) -> usize {
        let h = g.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((u128::from(h) * self.buckets.len() as u128) >> 64) as usize
    }

    fn next(&self, i: usize) -> usize {
        if i + 1 == self.buckets.len() {
            0
        } else {
            i + 1
        }
    }

    fn lookup(&self, p: usize) -> Option<Hit> {
        if self.entries.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let key = (p as u64 >> self.shift) + 1;
        let mut i = self.home(key - 1);
        loop {
            let b = &self.buckets[i];
            loop {
                let s1 = b.seq.load(Ordering::Acquire);
                if s1 & 1 == 1 {
                    std::hint::spin_loop();
                    continue;
                }
                let k = b.key.load(Ordering::Relaxed);
                let mut words = [[0u64; 2]; SLOTS];
                for (w, s) in words.iter_mut().zip(&b.slots) {
                    *w = [s[0].load(Ordering::Relaxed), s[1].load(Ordering::Relaxed)];
                }
                fence(Ordering::Acquire);
                if b.seq.load(Ordering::Relaxed) != s1 {
                    continue;
                }
                if k == 0 {
                    return None;
                }
                if k == key {
                    for [start, packed] in words {
                        let len = packed >> 24;
                        if start != 0 && (p as u64).wrapping_sub(start) < len {
                            return Some(Hit {
                                base: start as usize,
                                size: len as usize,
                                id: (packed & 0xff_ffff) as u32,
                            });
                        }
                    }
                }
                break;
            }
            i = self.next(i);
        }
    }

    /// Writes one bucket under its seqlock (writers are serialised outside).
    fn write(b: &Bucket, f: impl FnOnce(&Bucket)) {
        let s = b.seq.load(Ordering::Relaxed);
        b.seq.store(s + 1, Ordering::Relaxed);
        fence(Ordering::Release);
        f(b);
        b.seq.store(s + 2, Ordering::Release);
    }

    /// Adds an entry to every granule of `[start, start + len)`; returns the
    /// number of buckets newly claimed.
    fn insert(&self, start: usize, len: usize, id: u32) -> usize {
        let mut claimed = 0;
        for g in (start as u64 >> self.shift)..=((start + len - 1) as u64 >> self.shift) {
            let key = g + 1;
            let mut i = self.home(g);
            loop {
                let b = &self.buckets[i];
                let k = b.key.load(Ordering::Relaxed);
                if k == 0 || k == key {
                    if let Some(slot) = b.slots.iter().find(|s| s[0].load(Ordering::Relaxed) == 0) {
                        Table::write(b, |b| {
                            b.key.store(key, Ordering::Relaxed);
                            slot[1].store(pack(len, id), Ordering::Relaxed);
                            slot[0].store(start as u64, Ordering::Relaxed);
                        });
                        claimed += usize::from(k == 0);
                        break;
                    }
                }
                i = self.next(i);
            }
        }
        self.entries.fetch_add(1, Ordering::Relaxed);
        claimed
    }

    fn remove(&self, start: usize, len: usize) {
        for g in (start as u64 >> self.shift)..=((start + len - 1) as u64 >> self.shift) {
            let key = g + 1;
            let mut i = self.home(g);
            'probe: loop {
                let b = &self.buckets[i];
                match b.key.load(Ordering::Relaxed) {
                    0 => break,
                    k if k == key => {
                        for slot in &b.slots {
                            if slot[0].load(Ordering::Relaxed) == start as u64 {
                                Table::write(b, |_| slot[0].store(0, Ordering::Relaxed));
                                break 'probe;
                            }
                        }
                    }
                    _ => {}
                }
                i = self.next(i);
            }
        }
        self.entries.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The published tables, shared with the readers' per-thread caches.
struct Shared {
    tiers: [Arc<ArcSwap<Table>>; TIERS.len()],
    huge: Arc<ArcSwap<Vec<(usize, usize, u32)>>>,
}

type TableCache = Cache<Arc<ArcSwap<Table>>, Arc<Table>>;

/// One thread's view of one map: `arc-swap` caches, whose check is one
/// relaxed load (a plain `ArcSwap::load` costs a full fence on x86, which
/// serialises the cache misses of back-to-back lookups).
struct View {
    map: u64,
    owner: Arc<Shared>,
    tiers: [TableCache; TIERS.len()],
    huge: Cache<Arc<ArcSwap<Vec<(usize, usize, u32)>>>, Arc<Vec<(usize, usize, u32)>>>,
}

thread_local! {
    static VIEWS: RefCell<Vec<View>> = const { RefCell::new(Vec::new()) };
}

static NEXT_MAP: AtomicU64 = AtomicU64::new(1);

fn huge_lookup(huge: &[(usize, usize, u32)], p: usize) -> Option<Hit> {
    let i = huge.partition_point(|&(b, _, _)| b <= p);
    let &(base, size, id) = huge.get(i.checked_sub(1)?)?;
    (p - base < size).then_some(Hit { base, size, id })
}

/// `ValueSlot::state`: the slot holds a value.
const LIVE: u64 = 1 << 63;
/// `ValueSlot::state`: the current cell is cell 1.
const CUR: u64 = 1 << 62;
/// `ValueSlot::state`: one reader inside cell 0 / cell 1 (31-bit counts).
const READER: [u64; 2] = [1, 1 << 31];
const COUNT_MASK: u64 = (1 << 31) - 1;

/// One value of the map, readable without a lock (see the module docs).
///
/// `state` holds [`LIVE`], [`CUR`] (which cell is current) and the number of
/// readers inside each cell. Writers are serialised by the map's books lock.
/// A cell is written only while no reader can enter it: a reader reads the
/// cell it counted itself into only if, after counting, the slot is live and
/// that cell is current; the writer fills the cell that is not current (its
/// last readers were waited out when it stopped being current) and drops a
/// cell's value only after it stopped being current and its count fell to
/// zero. An all-zero slot is empty (chunks are allocated zeroed).
struct ValueSlot<V> {
    state: AtomicU64,
    cells: [UnsafeCell<MaybeUninit<Stored<V>>>; 2],
}

// SAFETY: the cells are shared between threads only as described on
// `ValueSlot`: values are moved in and out by the one writer (hence `Send`)
// and read through `&` by readers (hence `Sync`).
unsafe impl<V: Send + Sync> Sync for ValueSlot<V> {}

fn cell_of(state: u64) -> usize {
    usize::from(state & CUR != 0)
}

impl<V> ValueSlot<V> {
    /// `f` of the value, if the slot holds one. Never waits: a reader that
    /// meets a writer's flip retries on the new current cell.
    fn read<R>(&self, f: impl FnOnce(&Stored<V>) -> R) -> Option<R> {
        let mut seen = self.state.load(Ordering::Relaxed);
        loop {
            if seen & LIVE == 0 {
                return None;
            }
            let c = cell_of(seen);
            let now = self.state.fetch_add(READER[c], Ordering::Acquire);
            if now & LIVE != 0 && cell_of(now) == c {
                // SAFETY: counted into cell `c` while it is current and the
                // slot live: the writer filled it before publishing (release,
                // synchronised by the acquire above) and neither overwrites
                // nor drops it until this reader has left.
                let r = f(unsafe { (*self.cells[c].get()).assume_init_ref() });
                self.state.fetch_sub(READER[c], Ordering::Release);
                return Some(r);
            }
            // Emptied or flipped meanwhile: leave without touching the cell.
            self.state.fetch_sub(READER[c], Ordering::Relaxed);
            seen = now;
        }
    }

    /// Waits until no reader is inside cell `c` (writer side; new readers of
    /// `c` leave at once, the cell is not current or the slot not live).
    fn drain(&self, c: usize) {
        let shift = if c == 0 { 0 } else { 31 };
        let mut spins = 0u32;
        while (self.state.load(Ordering::Acquire) >> shift) & COUNT_MASK != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// The value, to a writer (who holds the books lock: no other writer
    /// changes the slot meanwhile).
    fn peek(&self) -> Option<&Stored<V>> {
        let s = self.state.load(Ordering::Relaxed);
        // SAFETY: only writers change a live slot's current cell, and the
        // caller is the one writer.
        (s & LIVE != 0).then(|| unsafe { (*self.cells[cell_of(s)].get()).assume_init_ref() })
    }

    /// Fills an empty slot (writer side).
    fn put(&self, value: Stored<V>) {
        let s = self.state.load(Ordering::Relaxed);
        debug_assert_eq!(s & LIVE, 0, "a slot is filled once until emptied");
        // SAFETY: the slot is empty, so no reader reads any cell (see
        // `read`); the current cell's last value was dropped by `take`.
        unsafe { (*self.cells[cell_of(s)].get()).write(value) };
        self.state.fetch_or(LIVE, Ordering::Release);
    }

    /// Replaces a live slot's value (writer side); returns the old one.
    fn replace(&self, value: Stored<V>) -> Stored<V> {
        let s = self.state.load(Ordering::Relaxed);
        debug_assert_ne!(s & LIVE, 0, "only a live slot is replaced");
        let (old, new) = (cell_of(s), 1 - cell_of(s));
        // SAFETY: cell `new` is not current: readers counted into it leave
        // without reading, and its previous readers were drained when it
        // stopped being current.
        unsafe { (*self.cells[new].get()).write(value) };
        self.state.fetch_xor(CUR, Ordering::AcqRel);
        self.drain(old);
        // SAFETY: cell `old` is no longer current and no reader is inside
        // it; its value is moved out once (the cell counts as empty now).
        unsafe { (*self.cells[old].get()).assume_init_read() }
    }

    /// Empties a live slot (writer side); returns its value.
    fn take(&self) -> Stored<V> {
        let s = self.state.fetch_and(!LIVE, Ordering::AcqRel);
        debug_assert_ne!(s & LIVE, 0, "only a live slot is emptied");
        let c = cell_of(s);
        self.drain(c);
        // SAFETY: the slot is empty and no reader is inside cell `c`; the
        // value is moved out once.
        unsafe { (*self.cells[c].get()).assume_init_read() }
    }
}

impl<V> Drop for ValueSlot<V> {
    fn drop(&mut self) {
        let s = *self.state.get_mut();
        if s & LIVE != 0 {
            // SAFETY: a live slot's current cell holds a value; `&mut self`
            // excludes every reader.
            unsafe { self.cells[cell_of(s)].get_mut().assume_init_drop() };
        }
    }
}

/// `n` empty slots, zeroed (untouched pages cost nothing).
fn empty_slots<V>(n: usize) -> Box<[ValueSlot<V>]> {
    let layout = std::alloc::Layout::array::<ValueSlot<V>>(n).expect("a chunk's layout");
    // SAFETY: a non-zero-sized layout (a slot holds an `AtomicU64`).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<ValueSlot<V>>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a fresh allocation of the global allocator with the
    // layout of `[ValueSlot<V>; n]`, and all-zero bytes are an empty slot
    // (state 0; the cells are `MaybeUninit`).
    unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) }
}

struct Stored<V> {
    base: usize,
    size: usize,
    value: V,
}

#[derive(Clone, Copy)]
struct Book {
    size: usize,
    id: u32,
}

struct Books {
    ranges: BTreeMap<usize, Book>,
    free_ids: Vec<u32>,
    next_id: u32,
    /// Buckets claimed per tier (fine, medium, coarse) in the current tables.
    claimed: [usize; TIERS.len()],
    /// The published tables, as the writer sees them (no `arc-swap` load on
    /// the writer's path; replaced together with the published ones).
    tables: [Arc<Table>; TIERS.len()],
}

/// Interior pointer -> range map; see the module docs.
pub struct PointerMap<V> {
    id: u64,
    shared: Arc<Shared>,
    values: Box<[OnceLock<Box<[ValueSlot<V>]>>]>,
    books: Mutex<Books>,
}

impl<V> std::fmt::Debug for PointerMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointerMap")
            .field("len", &self.books.lock().ranges.len())
            .finish()
    }
}

impl<V: Clone + Send + Sync> Default for PointerMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

const INITIAL_BUCKETS: usize = 256;

impl<V: Clone + Send + Sync> PointerMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        let tables = TIERS.map(|(shift, _)| Arc::new(Table::new(shift, INITIAL_BUCKETS)));
        PointerMap {
            id: NEXT_MAP.fetch_add(1, Ordering::Relaxed),
            shared: Arc::new(Shared {
                tiers: tables.clone().map(|t| Arc::new(ArcSwap::new(t))),
                huge: Arc::new(ArcSwap::from_pointee(Vec::new())),
            }),
            values: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            books: Mutex::new(Books {
                ranges: BTreeMap::new(),
                free_ids: Vec::new(),
                next_id: 0,
                claimed: [0; TIERS.len()],
                tables,
            }),
        }
    }

    /// Ranges held.
    pub fn len(&self) -> usize {
        self.books.lock().ranges.len()
    }

    /// True when no range is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn slot(&self, id: u32) -> &ValueSlot<V> {
        let chunk = self.values[(id >> CHUNK_BITS) as usize].get_or_init(|| empty_slots(1 << CHUNK_BITS));
        &chunk[(id & ((1 << CHUNK_BITS) - 1)) as usize]
    }

    /// The tier a range of `size` bytes lives in; `None`: the huge list.
    fn tier_of(size: usize) -> Option<usize> {
        TIERS.iter().position(|&(_, max)| size <= max)
    }

    /// Adds `[base, base + size)` with `value`; refuses empty, null, wrapping
    /// and overlapping ranges. Returns the range's id.
    pub fn insert(&self, base: usize, size: usize, value: V) -> Result<u32, MapError> {
        if size == 0 {
            return Err(MapError::Empty(base));
        }
        if base == 0 {
            return Err(MapError::Null);
        }
        let end = base.checked_add(size).ok_or(MapError::Wraps { base, size })?;
        let mut books = self.books.lock();
        let before = books.ranges.range(..end).next_back().map(|(&b, bk)| (b, bk.size));
        if let Some((b, s)) = before.filter(|&(b, s)| b + s > base) {
            return Err(MapError::Overlap {
                base,
                size,
                existing_base: b,
                existing_size: s,
            });
        }
        let id = match books.free_ids.pop() {
            Some(id) => id,
            None if (books.next_id as usize) < MAX_RANGES => {
                books.next_id += 1;
                books.next_id - 1
            }
            None => return Err(MapError::Full),
        };
        self.slot(id).put(Stored { base, size, value });
        books.ranges.insert(base, Book { size, id });
        match Self::tier_of(size) {
            Some(t) => {
                let claimed = books.tables[t].insert(base, size, id);
                books.claimed[t] += claimed;
                self.maybe_grow(&mut books, t);
            }
            None => self.publish_huge(&books),
        }
        Ok(id)
    }

    fn publish_huge(&self, books: &Books) {
        let huge = books
            .ranges
            .iter()
            .filter(|(_, b)| b.size > COARSE_MAX)
            .map(|(&base, b)| (base, b.size, b.id))
            .collect();
        self.shared.huge.store(Arc::new(huge));
    }

    /// Rebuilds tier `t` (dropping stale keys, resizing to the live ranges)
    /// once more than 60% of its buckets are claimed.
    fn maybe_grow(&self, books: &mut Books, t: usize) {
        let cur = &books.tables[t];
        if books.claimed[t] * 5 <= cur.buckets.len() * 3 {
            return;
        }
        let shift = cur.shift;
        let members: Vec<(usize, Book)> = books
            .ranges
            .iter()
            .filter(|(_, b)| Self::tier_of(b.size) == Some(t))
            .map(|(&s, &b)| (s, b))
            .collect();
        // Buckets the live ranges need (three entries per bucket and
        // granule), at a load of 40% after the rebuild (rebuilt again at 60%).
        let mut per_granule: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        for (s, b) in &members {
            for g in (*s as u64 >> shift)..=((s + b.size - 1) as u64 >> shift) {
                *per_granule.entry(g).or_default() += 1;
            }
        }
        let needed: usize = per_granule.values().map(|n| n.div_ceil(SLOTS)).sum();
        let buckets = (needed * 5 / 2).max(INITIAL_BUCKETS);
        let table = Table::new(shift, buckets);
        let mut claimed = 0;
        for (s, b) in members {
            claimed += table.insert(s, b.size, b.id);
        }
        tracing::debug!(tier = t, buckets, needed, "pointer map: tier rebuilt");
        books.claimed[t] = claimed;
        let table = Arc::new(table);
        books.tables[t] = table.clone();
        self.shared.tiers[t].store(table);
    }

    /// Removes the range starting exactly at `base`; returns its value.
    pub fn remove(&self, base: usize) -> Option<V> {
        self.remove_if(base, |_| true)
    }

    /// Removes the range starting exactly at `base` if `remove` says so of its
    /// value (asked under the writers' lock, so no other writer changes the
    /// range in between); returns the value removed.
    pub fn remove_if(&self, base: usize, remove: impl FnOnce(&V) -> bool) -> Option<V> {
        let mut guard = self.books.lock();
        let books = &mut *guard;
        // One search: asked and removed through the same entry.
        let std::collections::btree_map::Entry::Occupied(entry) = books.ranges.entry(base) else {
            return None;
        };
        let book = *entry.get();
        let slot = self.slot(book.id);
        if !slot.peek().is_some_and(|s| remove(&s.value)) {
            return None;
        }
        entry.remove();
        match Self::tier_of(book.size) {
            Some(t) => books.tables[t].remove(base, book.size),
            None => self.publish_huge(books),
        }
        let stored = slot.take();
        books.free_ids.push(book.id);
        drop(guard);
        Some(stored.value)
    }

    /// Replaces the value of the range starting exactly at `base`.
    pub fn update(&self, base: usize, f: impl FnOnce(&V) -> V) -> Option<V> {
        let books = self.books.lock();
        let book = books.ranges.get(&base)?;
        let slot = self.slot(book.id);
        let value = f(&slot.peek().expect("a held range has its value").value);
        let old = slot.replace(Stored {
            base,
            size: book.size,
            value: value.clone(),
        });
        drop(books);
        drop(old);
        Some(value)
    }

    /// The range holding `p`, without its value: the fast path (no lock, no
    /// fence; a lookup racing with a change answers from the state before or
    /// after it).
    #[inline]
    pub fn lookup(&self, p: usize) -> Option<Hit> {
        VIEWS
            .try_with(|views| {
                let mut views = views.borrow_mut();
                let i = match views.iter().position(|v| v.map == self.id) {
                    Some(i) => i,
                    None => {
                        // Forget the views of maps dropped since.
                        views.retain(|v| Arc::strong_count(&v.owner) > 1);
                        views.push(View {
                            map: self.id,
                            owner: self.shared.clone(),
                            tiers: self.shared.tiers.clone().map(Cache::new),
                            huge: Cache::new(self.shared.huge.clone()),
                        });
                        views.len() - 1
                    }
                };
                let View {
                    tiers: [fine, medium, coarse],
                    huge,
                    ..
                } = &mut views[i];
                fine.load()
                    .lookup(p)
                    .or_else(|| medium.load().lookup(p))
                    .or_else(|| coarse.load().lookup(p))
                    .or_else(|| huge_lookup(huge.load(), p))
            })
            .unwrap_or_else(|_| self.lookup_fresh(p))
    }

    /// As [`PointerMap::lookup`], loading the published tables afresh.
    fn lookup_fresh(&self, p: usize) -> Option<Hit> {
        let [fine, medium, coarse] = &self.shared.tiers;
        fine.load()
            .lookup(p)
            .or_else(|| medium.load().lookup(p))
            .or_else(|| coarse.load().lookup(p))
            .or_else(|| huge_lookup(&self.shared.huge.load(), p))
    }

    /// The range holding `p` and its value.
    pub fn get(&self, p: usize) -> Option<(Hit, V)> {
        let mut hit = self.lookup(p)?;
        loop {
            let value = self
                .slot(hit.id)
                .read(|s| (s.base == hit.base && s.size == hit.size).then(|| s.value.clone()));
            match value {
                Some(Some(v)) => return Some((hit, v)),
                // The range went (and its id may have been reused) between
                // the two reads: ask the published tables again.
                _ => hit = self.lookup_fresh(p)?,
            }
        }
    }

    /// Every range overlapping `[base, base + size)`, in address order
    /// (writer side: takes the books' lock).
    pub fn overlapping(&self, base: usize, size: usize) -> Vec<(usize, usize, V)> {
        let books = self.books.lock();
        let end = base.saturating_add(size);
        let first = books
            .ranges
            .range(..=base)
            .next_back()
            .filter(|(&b, bk)| b + bk.size > base)
            .map(|(&b, _)| b)
            .unwrap_or(base);
        books
            .ranges
            .range(first..end)
            .filter_map(|(&b, bk)| {
                let s = self.slot(bk.id).peek()?;
                Some((b, bk.size, s.value.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "pointer_map_tests.rs"]
mod tests;
