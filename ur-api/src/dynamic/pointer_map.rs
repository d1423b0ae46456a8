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
//! the old table finish there). Values live in slots of `ArcSwapOption`
//! carrying their range, so a reader that raced with a removal and an id
//! reuse sees the mismatch and answers from the new state.
//!
//! Measured (`memory-manager/benches/pointer_lookup.rs`): see the bench rows;
//! the design targets one dependent cache miss per hit.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use arc_swap::cache::Cache;
use arc_swap::{ArcSwap, ArcSwapOption};
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
/// Value slots per chunk (a chunk is allocated on first use). Under Miri
/// chunks are smaller: creating and dropping 4,096 `arc-swap` slots costs
/// the interpreter over a minute per map; the slot logic is the same.
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
}

/// Interior pointer -> range map; see the module docs.
pub struct PointerMap<V> {
    id: u64,
    shared: Arc<Shared>,
    values: Box<[OnceLock<Box<[ArcSwapOption<Stored<V>>]>>]>,
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
        PointerMap {
            id: NEXT_MAP.fetch_add(1, Ordering::Relaxed),
            shared: Arc::new(Shared {
                tiers: TIERS.map(|(shift, _)| Arc::new(ArcSwap::from_pointee(Table::new(shift, INITIAL_BUCKETS)))),
                huge: Arc::new(ArcSwap::from_pointee(Vec::new())),
            }),
            values: (0..CHUNKS).map(|_| OnceLock::new()).collect(),
            books: Mutex::new(Books {
                ranges: BTreeMap::new(),
                free_ids: Vec::new(),
                next_id: 0,
                claimed: [0; TIERS.len()],
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

    fn slot(&self, id: u32) -> &ArcSwapOption<Stored<V>> {
        let chunk = self.values[(id >> CHUNK_BITS) as usize]
            .get_or_init(|| (0..1usize << CHUNK_BITS).map(|_| ArcSwapOption::empty()).collect());
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
        self.slot(id).store(Some(Arc::new(Stored { base, size, value })));
        books.ranges.insert(base, Book { size, id });
        match Self::tier_of(size) {
            Some(t) => {
                let claimed = self.shared.tiers[t].load().insert(base, size, id);
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
        let tier = &self.shared.tiers[t];
        let cur = tier.load();
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
        tier.store(Arc::new(table));
    }

    /// Removes the range starting exactly at `base`; returns its value.
    pub fn remove(&self, base: usize) -> Option<V> {
        self.remove_if(base, |_| true)
    }

    /// Removes the range starting exactly at `base` if `remove` says so of its
    /// value (asked under the writers' lock, so no other writer changes the
    /// range in between); returns the value removed.
    pub fn remove_if(&self, base: usize, remove: impl FnOnce(&V) -> bool) -> Option<V> {
        let mut books = self.books.lock();
        let book = *books.ranges.get(&base)?;
        let slot = self.slot(book.id);
        if !slot.load().as_ref().is_some_and(|s| remove(&s.value)) {
            return None;
        }
        books.ranges.remove(&base);
        match Self::tier_of(book.size) {
            Some(t) => self.shared.tiers[t].load().remove(base, book.size),
            None => self.publish_huge(&books),
        }
        let stored = slot.swap(None).expect("a held range has its value");
        books.free_ids.push(book.id);
        drop(books);
        // Readers may still hold the old value: cloned only then.
        Some(Arc::try_unwrap(stored).map_or_else(|s| s.value.clone(), |s| s.value))
    }

    /// Replaces the value of the range starting exactly at `base`.
    pub fn update(&self, base: usize, f: impl FnOnce(&V) -> V) -> Option<V> {
        let books = self.books.lock();
        let book = books.ranges.get(&base)?;
        let slot = self.slot(book.id);
        let old = slot.load_full().expect("a held range has its value");
        let value = f(&old.value);
        slot.store(Some(Arc::new(Stored {
            base,
            size: book.size,
            value: value.clone(),
        })));
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
            let slot = self.slot(hit.id).load();
            match &*slot {
                Some(s) if s.base == hit.base && s.size == hit.size => return Some((hit, s.value.clone())),
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
                let s = self.slot(bk.id).load_full()?;
                Some((b, bk.size, s.value.clone()))
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "pointer_map_tests.rs"]
mod tests;
