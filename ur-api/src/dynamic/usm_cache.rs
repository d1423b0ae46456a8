//! Freed USM allocations kept per context for reuse.
//!
//! A runtime's USM allocator is slow next to the rest of an allocation:
//! Intel's CPU OpenCL runtime maps and unmaps every allocation (`mmap` +
//! `munmap`, ~80% of an allocate-and-free pair through the C ABI), and CUDA's
//! `cuMemAlloc`/`cuMemFree` synchronise the device. SYCL programs (dpnp's
//! temporaries, dpctl's `MemoryUSM*`) allocate and free the same sizes over
//! and over. So, as UR's Level Zero adapter keeps freed memory in its pools,
//! the dyn layer keeps a context's freed allocations and hands one back to
//! the next allocation with the same shape ([`CacheKey`]: kind, device, size,
//! alignment, advice) instead of calling the adapter.
//!
//! Rules:
//! - A free that caches first waits for every queue of the context to finish
//!   (the promise of the runtime's own blocking free, made for all commands
//!   rather than those using the pointer), so a cached block is never in use
//!   when it is handed out again. A queue that fails to finish makes the free
//!   an ordinary one.
//! - Bounded per context: at most [`MAX_BLOCKS`] blocks and [`MAX_BYTES`]
//!   bytes; a block over [`MAX_BLOCK_BYTES`] is never kept. Over the bounds,
//!   the oldest blocks are freed through the adapter.
//! - An allocation that fails for lack of memory frees the context's cached
//!   blocks and, if there were any, is tried once more; releasing the
//!   context frees them too.
//! - A cached block is not an allocation: pointer queries do not find it.
//! - On by default for the hardware backends (OpenCL, CUDA, Level Zero),
//!   off for the host and simulated adapters (whose tests count live
//!   allocations); `UR_RUST_USM_CACHE=0` or `=1` decides for every backend.

use std::collections::VecDeque;

use parking_lot::Mutex;

use crate::handles::DeviceKey;
use crate::types::{Backend, UsmAdvice, UsmKind};

/// The environment variable that turns the cache off (`0`) or on (`1`) for
/// every backend.
pub const ENV: &str = "UR_RUST_USM_CACHE";

/// The most blocks a context keeps.
pub const MAX_BLOCKS: usize = 64;

/// The most bytes a context keeps.
pub const MAX_BYTES: usize = 256 << 20;

/// The largest block a context keeps.
pub const MAX_BLOCK_BYTES: usize = 64 << 20;

/// What an allocation must match to be served from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CacheKey {
    pub(super) kind: UsmKind,
    pub(super) device: Option<DeviceKey>,
    pub(super) size: usize,
    pub(super) align: usize,
    pub(super) advice: UsmAdvice,
}

/// A freed allocation kept for reuse: the adapter's object and its address.
#[derive(Debug)]
pub(super) struct Cached<U> {
    pub(super) key: CacheKey,
    pub(super) obj: U,
    pub(super) base: u64,
}

/// One context's cache (see the module docs).
#[derive(Debug)]
pub(super) struct UsmCache<U> {
    enabled: bool,
    blocks: Mutex<Blocks<U>>,
}

#[derive(Debug)]
struct Blocks<U> {
    /// Oldest first.
    list: VecDeque<Cached<U>>,
    bytes: usize,
}

/// Is the cache on for `backend`, given the value of [`ENV`] if set?
pub(super) fn enabled_for(backend: &Backend, env: Option<&str>) -> bool {
    match env.map(str::trim) {
        Some("0") => false,
        Some("1") => true,
        _ => matches!(backend, Backend::OpenCl | Backend::Cuda | Backend::LevelZero),
    }
}

impl<U> UsmCache<U> {
    /// An empty cache, on or off.
    pub(super) fn new(enabled: bool) -> Self {
        UsmCache {
            enabled,
            blocks: Mutex::new(Blocks {
                list: VecDeque::new(),
                bytes: 0,
            }),
        }
    }

    /// Would a freed block of `size` bytes be kept?
    pub(super) fn accepts(&self, size: usize) -> bool {
        self.enabled && size <= MAX_BLOCK_BYTES
    }

    /// Takes the most recently freed block matching `key`, if any.
    pub(super) fn take(&self, key: &CacheKey) -> Option<Cached<U>> {
        if !self.enabled {
            return None;
        }
        let mut b = self.blocks.lock();
        let at = b.list.iter().rposition(|c| c.key == *key)?;
        let c = b.list.remove(at)?;
        b.bytes -= c.key.size;
        Some(c)
    }

    /// Keeps `block`; answers the blocks the caller must free through the
    /// adapter instead: `block` itself when it is not accepted, else the
    /// oldest ones over the bounds.
    pub(super) fn put(&self, block: Cached<U>) -> Vec<Cached<U>> {
        if !self.accepts(block.key.size) {
            return vec![block];
        }
        let mut b = self.blocks.lock();
        b.bytes += block.key.size;
        b.list.push_back(block);
        let mut evicted = Vec::new();
        while b.list.len() > MAX_BLOCKS || b.bytes > MAX_BYTES {
            let Some(old) = b.list.pop_front() else { break };
            b.bytes -= old.key.size;
            evicted.push(old);
        }
        evicted
    }

    /// Takes every block (for the caller to free).
    pub(super) fn drain(&self) -> Vec<Cached<U>> {
        let mut b = self.blocks.lock();
        b.bytes = 0;
        b.list.drain(..).collect()
    }

    /// Blocks and bytes kept.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let b = self.blocks.lock();
        (b.list.len(), b.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(size: usize) -> CacheKey {
        CacheKey {
            kind: UsmKind::Device,
            device: None,
            size,
            align: 0,
            advice: UsmAdvice::empty(),
        }
    }

    fn block(size: usize, base: u64) -> Cached<u64> {
        Cached {
            key: key(size),
            obj: base,
            base,
        }
    }

    #[test]
    fn a_freed_block_is_handed_back_only_for_the_same_shape() {
        let c = UsmCache::new(true);
        assert!(c.put(block(4096, 0x1000)).is_empty());
        assert!(c.take(&key(8192)).is_none());
        let mut other = key(4096);
        other.kind = UsmKind::Host;
        assert!(c.take(&other).is_none());
        other = key(4096);
        other.align = 64;
        assert!(c.take(&other).is_none());
        let got = c.take(&key(4096)).expect("same shape");
        assert_eq!((got.obj, got.base), (0x1000, 0x1000));
        assert!(c.take(&key(4096)).is_none(), "handed out once");
        assert_eq!(c.held(), (0, 0));
    }

    #[test]
    fn the_newest_matching_block_is_taken_first() {
        let c = UsmCache::new(true);
        c.put(block(64, 1));
        c.put(block(64, 2));
        assert_eq!(c.take(&key(64)).map(|b| b.base), Some(2));
        assert_eq!(c.take(&key(64)).map(|b| b.base), Some(1));
    }

    #[test]
    fn bounds_evict_the_oldest_and_refuse_large_blocks() {
        let c = UsmCache::new(true);
        let refused = c.put(block(MAX_BLOCK_BYTES + 1, 7));
        assert_eq!(refused.iter().map(|b| b.base).collect::<Vec<_>>(), [7]);
        let mut evicted = Vec::new();
        for i in 0..(MAX_BLOCKS as u64 + 3) {
            evicted.extend(c.put(block(16, i)).into_iter().map(|b| b.base));
        }
        assert_eq!(evicted, [0, 1, 2]);
        assert_eq!(c.held(), (MAX_BLOCKS, MAX_BLOCKS * 16));
        let c = UsmCache::new(true);
        let big = MAX_BLOCK_BYTES;
        let mut evicted = Vec::new();
        for i in 0..(MAX_BYTES / big + 1) as u64 {
            evicted.extend(c.put(block(big, i)).into_iter().map(|b| b.base));
        }
        assert_eq!(evicted, [0]);
        assert_eq!(c.held().1, MAX_BYTES);
        let drained: Vec<u64> = c.drain().into_iter().map(|b| b.base).collect();
        assert_eq!(drained.len(), MAX_BYTES / big);
        assert_eq!(c.held(), (0, 0));
    }

    #[test]
    fn a_disabled_cache_keeps_nothing() {
        let c = UsmCache::new(false);
        assert!(!c.accepts(1));
        assert_eq!(c.put(block(16, 3)).len(), 1);
        assert!(c.take(&key(16)).is_none());
    }

    #[test]
    fn on_for_hardware_backends_unless_the_environment_decides() {
        assert!(enabled_for(&Backend::OpenCl, None));
        assert!(enabled_for(&Backend::Cuda, None));
        assert!(enabled_for(&Backend::LevelZero, None));
        assert!(!enabled_for(&Backend::Native, None));
        assert!(!enabled_for(&Backend::Sim, None));
        assert!(!enabled_for(&Backend::OpenCl, Some("0")));
        assert!(enabled_for(&Backend::Native, Some("1")));
        assert!(enabled_for(&Backend::OpenCl, Some("yes")), "anything else: the default");
    }
}
