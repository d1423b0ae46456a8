//! [`PinnedRegistry`]: reference-counted locks of host ranges for one
//! context, after libomptarget's `PinnedAllocationMapTy` and UCX's
//! registration cache, over [`ur_api::Runtime::lock_host`].
//!
//! - Locking a range inside a locked region counts one more user and answers
//!   the region's device address plus the offset.
//! - A range that would extend a region is refused, naming both ranges
//!   ([`PinError::Extends`]); with [`UnionPolicy::LockUnion`] the registry
//!   instead locks the gaps between the request and the regions it touches
//!   and holds the union as one region, so no lock is dropped and no address
//!   handed out changes (taken only where the pieces' device addresses are
//!   contiguous, as on every backend whose devices use host addresses).
//! - Unlock accepts any interior pointer; at zero users the region's pieces
//!   are unlocked. Externally locked memory (USM host allocations,
//!   `cudaMallocHost`) is registered with [`PinnedRegistry::register_external`]
//!   and never unlocked here.
//! - Every bad input is a typed [`PinError`]; a failure leaves no lock
//!   behind (libomptarget keeps the vendor lock when its insert fails).
//! - Lookups ([`PinnedRegistry::find`]) go through a
//!   [`PointerMap`](ur_api::dynamic::PointerMap) and never wait on a writer;
//!   lock and unlock are serialised by one mutex.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;
use ur_api::dynamic::PointerMap;
use ur_api::{ContextId, DeviceAddr, HostPtr, Runtime};

/// What locks and unlocks single ranges: the runtime, or a model in tests.
pub trait Locker: Send + Sync {
    /// Locks exactly `mem` (which overlaps no range this locker holds).
    fn lock(&self, mem: HostPtr) -> ur_api::Result<DeviceAddr>;
    /// Unlocks exactly a range [`Locker::lock`] locked.
    fn unlock(&self, mem: HostPtr) -> ur_api::Result<()>;
}

/// The runtime's locks in one context.
#[derive(Debug, Clone)]
pub struct RuntimeLocker {
    /// The runtime.
    pub rt: Arc<Runtime>,
    /// The context whose devices get the locks.
    pub context: ContextId,
}

impl Locker for RuntimeLocker {
    fn lock(&self, mem: HostPtr) -> ur_api::Result<DeviceAddr> {
        self.rt.lock_host(self.context, mem)
    }
    fn unlock(&self, mem: HostPtr) -> ur_api::Result<()> {
        self.rt.unlock_host(self.context, mem)
    }
}

/// What a registry does with a request that would extend a locked region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnionPolicy {
    /// Refuse it, naming both ranges (libomptarget's rule).
    #[default]
    Refuse,
    /// Lock the gaps and hold the union as one region (UCX merges too, but
    /// re-registers; this keeps every existing lock and address).
    LockUnion,
}

/// Why a lock or unlock was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    /// Size 0.
    #[error("empty host range at {0:#x}")]
    Empty(usize),
    /// A range starting at null.
    #[error("host range at null")]
    Null,
    /// `base + size` wraps the address space.
    #[error("host range {base:#x}+{size} wraps the address space")]
    Wraps {
        /// Start.
        base: usize,
        /// Length.
        size: usize,
    },
    /// Part of the range is not mapped in the process.
    #[error("host range {base:#x}+{size} is not (entirely) mapped in the process")]
    NotMapped {
        /// Start.
        base: usize,
        /// Length.
        size: usize,
    },
    /// The range would extend a locked region.
    #[error("host range {base:#x}+{size} would extend the locked region {locked_base:#x}+{locked_size}")]
    Extends {
        /// Start of the refused request.
        base: usize,
        /// Its length.
        size: usize,
        /// Start of the locked region it overlaps.
        locked_base: usize,
        /// That region's length.
        locked_size: usize,
    },
    /// The union cannot keep the addresses already handed out.
    #[error("cannot lock the union {base:#x}+{size}: its pieces' device addresses are not contiguous")]
    UnionAddressesDiffer {
        /// Start of the union.
        base: usize,
        /// Its length.
        size: usize,
    },
    /// Unlock of a pointer in no locked region.
    #[error("{0:#x} is in no locked region")]
    Unknown(usize),
    /// Unlock of a region whose users are all gone (recently released).
    #[error("{ptr:#x}: region {base:#x}+{size} was already unlocked by all its users")]
    DoubleUnlock {
        /// The pointer given.
        ptr: usize,
        /// Start of the released region.
        base: usize,
        /// Its length.
        size: usize,
    },
    /// The adapter refused.
    #[error("the adapter refused to lock or unlock: {0}")]
    Adapter(#[from] ur_api::Error),
}

/// A lock handed out: where the caller's range starts for the devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pinned {
    /// The device address of the requested start.
    pub device_addr: DeviceAddr,
    /// Start of the region holding the range.
    pub region_base: usize,
    /// That region's length.
    pub region_size: usize,
    /// True when the region is externally locked.
    pub external: bool,
}

/// One adapter lock inside a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Piece {
    base: usize,
    size: usize,
    external: bool,
}

/// A locked region: what the pointer map holds.
#[derive(Debug, Clone)]
pub struct Region {
    /// Device address of the region's first byte.
    pub device_addr: DeviceAddr,
    /// Users (locks not yet unlocked).
    pub users: usize,
    /// Locked by a vendor allocator: never unlocked here.
    pub external: bool,
    pieces: Arc<[Piece]>,
}

/// How many released regions are remembered to tell a double unlock from an
/// unknown pointer.
const RELEASED_MEMORY: usize = 64;

/// Reference-counted host locks of one context; see the module docs.
pub struct PinnedRegistry {
    locker: Box<dyn Locker>,
    policy: UnionPolicy,
    regions: PointerMap<Region>,
    /// Serialises lock and unlock; recently released regions.
    writer: Mutex<VecDeque<(usize, usize)>>,
}

impl std::fmt::Debug for PinnedRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedRegistry")
            .field("policy", &self.policy)
            .field("regions", &self.regions.len())
            .finish()
    }
}

fn checked(mem: HostPtr) -> Result<(usize, usize), PinError> {
    let (base, size) = (mem.as_ptr() as usize, mem.len());
    if size == 0 {
        return Err(PinError::Empty(base));
    }
    if base == 0 {
        return Err(PinError::Null);
    }
    let end = base.checked_add(size).ok_or(PinError::Wraps { base, size })?;
    if !mapped(base, end) {
        return Err(PinError::NotMapped { base, size });
    }
    Ok((base, end))
}

/// True when every page of `[base, end)` is mapped (`mincore` answers ENOMEM
/// for a range with an unmapped page; it changes nothing).
fn mapped(base: usize, end: usize) -> bool {
    const PAGE: usize = 4096;
    const BATCH: usize = 4096;
    let mut vec = [0u8; BATCH];
    let mut at = base & !(PAGE - 1);
    while at < end {
        let len = (end - at).min(BATCH * PAGE);
        // SAFETY: `vec` holds one byte per page of the queried length
        // (at most BATCH pages); mincore only writes there and reads no memory
        // of the range.
        let r = unsafe { libc::mincore(at as *mut libc::c_void, len, vec.as_mut_ptr()) };
        if r != 0 {
            return false;
        }
        at += len;
    }
    true
}

/// A range of host memory the registry locks or unlocks by itself.
fn span(base: usize, size: usize) -> HostPtr {
    // SAFETY: only handed to the locker, which pins or unpins the pages and
    // never reads or writes them; the caller of `lock` promised the range
    // stays valid until unlocked.
    unsafe { HostPtr::new(base as *mut u8, size) }
}

impl PinnedRegistry {
    /// A registry over `locker`.
    pub fn new(locker: impl Locker + 'static, policy: UnionPolicy) -> Self {
        PinnedRegistry {
            locker: Box::new(locker),
            policy,
            regions: PointerMap::new(),
            writer: Mutex::new(VecDeque::new()),
        }
    }

    /// The policy for requests that would extend a region.
    pub fn policy(&self) -> UnionPolicy {
        self.policy
    }

    /// The locked region holding `ptr` and its device address for `ptr`:
    /// no lock taken, never waits on a writer.
    pub fn find(&self, ptr: usize) -> Option<(Pinned, usize)> {
        let (hit, r) = self.regions.get(ptr)?;
        Some((
            Pinned {
                device_addr: r.device_addr.offset(ptr - hit.base),
                region_base: hit.base,
                region_size: hit.size,
                external: r.external,
            },
            r.users,
        ))
    }

    /// Registered regions.
    pub fn len(&self) -> usize {
        self.regions.len()
    }

    /// True when nothing is locked.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Records memory a vendor allocator pinned (USM host, `cudaMallocHost`)
    /// as externally locked, reached at `device_addr`: locks inside it count
    /// users, and it is never unlocked here. Refused where it overlaps a
    /// region.
    pub fn register_external(&self, mem: HostPtr, device_addr: DeviceAddr) -> Result<(), PinError> {
        let (base, end) = checked(mem)?;
        let _w = self.writer.lock();
        if let Some((b, s, _)) = self.regions.overlapping(base, end - base).into_iter().next() {
            return Err(extends(base, end - base, b, s));
        }
        let piece = Piece {
            base,
            size: end - base,
            external: true,
        };
        self.insert(base, end - base, device_addr, 0, true, Arc::new([piece]))
    }

    /// Drops an external registration that has no users left.
    pub fn unregister_external(&self, base: usize) -> Result<(), PinError> {
        let _w = self.writer.lock();
        match self.regions.get(base) {
            Some((h, r)) if h.base == base && r.external && r.users == 0 => {
                self.regions.remove(base);
                Ok(())
            }
            Some((h, _)) => Err(extends(base, 1, h.base, h.size)),
            None => Err(PinError::Unknown(base)),
        }
    }

    fn insert(
        &self,
        base: usize,
        size: usize,
        device_addr: DeviceAddr,
        users: usize,
        external: bool,
        pieces: Arc<[Piece]>,
    ) -> Result<(), PinError> {
        let region = Region {
            device_addr,
            users,
            external,
            pieces,
        };
        // The writer lock is held and overlaps were checked: cannot clash.
        self.regions
            .insert(base, size, region)
            .map(drop)
            .map_err(|e| PinError::Adapter(ur_api::Error::invalid(e.to_string())))
    }

    /// Locks `mem` (one more user where a region holds it already) and
    /// answers where the devices reach its first byte.
    pub fn lock(&self, mem: HostPtr) -> Result<Pinned, PinError> {
        let (base, end) = checked(mem)?;
        let size = end - base;
        let _w = self.writer.lock();
        if let Some((hit, r)) = self.regions.get(base) {
            if end <= hit.base + hit.size {
                let r = self
                    .regions
                    .update(hit.base, |r| Region {
                        users: r.users + 1,
                        ..r.clone()
                    })
                    .unwrap_or(r);
                tracing::trace!(base, size, region = hit.base, users = r.users, "pinned: nested lock");
                return Ok(Pinned {
                    device_addr: r.device_addr.offset(base - hit.base),
                    region_base: hit.base,
                    region_size: hit.size,
                    external: r.external,
                });
            }
        }
        let touched = self.regions.overlapping(base, size);
        if let Some(&(b, s, _)) = touched.first() {
            return match self.policy {
                UnionPolicy::Refuse => Err(extends(base, size, b, s)),
                UnionPolicy::LockUnion => self.lock_union(base, end, touched),
            };
        }
        let addr = self.locker.lock(mem)?;
        let piece = Piece {
            base,
            size,
            external: false,
        };
        if let Err(e) = self.insert(base, size, addr, 1, false, Arc::new([piece])) {
            // Never leave the adapter's lock behind a failed insert.
            self.locker.unlock(mem)?;
            return Err(e);
        }
        tracing::debug!(base, size, addr = addr.0, "pinned: locked");
        Ok(Pinned {
            device_addr: addr,
            region_base: base,
            region_size: size,
            external: false,
        })
    }

    /// Locks the gaps between `[base, end)` and the regions it touches and
    /// replaces them by one region over the union.
    fn lock_union(&self, base: usize, end: usize, touched: Vec<(usize, usize, Region)>) -> Result<Pinned, PinError> {
        let u_base = base.min(touched[0].0);
        let u_end = touched.iter().map(|(b, s, _)| b + s).max().unwrap_or(end).max(end);
        // Device address delta (device - host) every piece must share.
        let delta = |addr: DeviceAddr, host: usize| addr.0.wrapping_sub(host as u64);
        let d0 = delta(touched[0].2.device_addr, touched[0].0);
        if touched.iter().any(|(b, _, r)| delta(r.device_addr, *b) != d0) {
            return Err(PinError::UnionAddressesDiffer {
                base: u_base,
                size: u_end - u_base,
            });
        }
        let mut gaps = Vec::new();
        let mut at = u_base;
        for (b, s, _) in &touched {
            if *b > at {
                gaps.push((at, b - at));
            }
            at = b + s;
        }
        if u_end > at {
            gaps.push((at, u_end - at));
        }
        let mut locked: Vec<Piece> = Vec::new();
        let undo = |locked: &[Piece]| {
            for p in locked {
                let _ = self.locker.unlock(span(p.base, p.size));
            }
        };
        for &(g, len) in &gaps {
            match self.locker.lock(span(g, len)) {
                Ok(a) if delta(a, g) == d0 => locked.push(Piece {
                    base: g,
                    size: len,
                    external: false,
                }),
                Ok(_) => {
                    let _ = self.locker.unlock(span(g, len));
                    undo(&locked);
                    return Err(PinError::UnionAddressesDiffer {
                        base: u_base,
                        size: u_end - u_base,
                    });
                }
                Err(e) => {
                    undo(&locked);
                    return Err(e.into());
                }
            }
        }
        let mut pieces: Vec<Piece> = touched.iter().flat_map(|(_, _, r)| r.pieces.iter().copied()).collect();
        pieces.extend(locked.iter().copied());
        pieces.sort_by_key(|p| p.base);
        let users = touched.iter().map(|(_, _, r)| r.users).sum::<usize>() + 1;
        let external = touched.iter().any(|(_, _, r)| r.external);
        for (b, _, _) in &touched {
            self.regions.remove(*b);
        }
        let addr = DeviceAddr((u_base as u64).wrapping_add(d0));
        if let Err(e) = self.insert(u_base, u_end - u_base, addr, users, external, pieces.into()) {
            undo(&locked);
            return Err(e);
        }
        tracing::debug!(
            base = u_base,
            size = u_end - u_base,
            gaps = gaps.len(),
            "pinned: union locked"
        );
        Ok(Pinned {
            device_addr: DeviceAddr((base as u64).wrapping_add(d0)),
            region_base: u_base,
            region_size: u_end - u_base,
            external,
        })
    }

    /// Drops one user of the region holding `ptr` (any interior pointer);
    /// the last user's unlock unlocks the region unless it is external.
    /// Returns the users left.
    pub fn unlock(&self, ptr: usize) -> Result<usize, PinError> {
        let mut released = self.writer.lock();
        let Some((hit, r)) = self.regions.get(ptr) else {
            return Err(match released.iter().find(|(b, s)| ptr.wrapping_sub(*b) < *s) {
                Some(&(base, size)) => PinError::DoubleUnlock { ptr, base, size },
                None => PinError::Unknown(ptr),
            });
        };
        if r.users == 0 {
            // Only an external region lives with no users.
            return Err(PinError::DoubleUnlock {
                ptr,
                base: hit.base,
                size: hit.size,
            });
        }
        if r.users > 1 || r.external {
            self.regions.update(hit.base, |r| Region {
                users: r.users - 1,
                ..r.clone()
            });
            return Ok(r.users - 1);
        }
        for p in r.pieces.iter().filter(|p| !p.external) {
            self.locker.unlock(span(p.base, p.size))?;
        }
        self.regions.remove(hit.base);
        if released.len() == RELEASED_MEMORY {
            released.pop_front();
        }
        released.push_back((hit.base, hit.size));
        tracing::debug!(base = hit.base, size = hit.size, "pinned: unlocked");
        Ok(0)
    }
}

fn extends(base: usize, size: usize, locked_base: usize, locked_size: usize) -> PinError {
    PinError::Extends {
        base,
        size,
        locked_base,
        locked_size,
    }
}

#[cfg(test)]
#[path = "pinned_tests.rs"]
mod tests;
