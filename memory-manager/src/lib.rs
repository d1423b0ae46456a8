//! # ur-memory-manager: logical buffers whose bytes go where they are needed
//!
//! A [`MemoryManager`] runs over a [`ur_api::Runtime`] and a list of device
//! locations (context, device); together with the host they are its
//! [`Place`]s. A [`LogicalBuffer`] has at most one allocation per place,
//! made on first use or, with [`BufferSpec`] hints, at creation. Before an
//! access ([`MemoryManager::acquire`], [`MemoryManager::acquire_async`],
//! [`MemoryManager::acquire_all`], [`MemoryManager::with_host`],
//! [`MemoryManager::read`], [`MemoryManager::write`]) the manager computes a
//! [`Plan`] that makes the accessed byte range current at that place, then
//! runs it.
//!
//! A runnable, runtime-style example (hints and initial data, kernels on
//! two devices chained on events, read-back) is the `ur-examples` crate:
//! `cargo run -p ur-examples --example pipeline` (run by `cargo xtask ci`).
//!
//! It uses only the public `Runtime` API: no native API, no adapter
//! internals.
//!
//! ## Design choices
//!
//! - **Validity is an interval set per place** ([`IntervalSet`]), byte-exact,
//!   not a page vector. A write makes its range current at one place and
//!   stale everywhere else; a [`Access::DiscardWrite`] copies nothing. Bytes
//!   never written anywhere read as zero (the plan fills them).
//! - **Routes come from the adapters' connection answers**
//!   ([`ur_api::Runtime::memory_connection`], asked once per ordered pair):
//!   `Unified`: the access uses the source's allocation in place and nothing
//!   is allocated at the destination; `Migratable`: one `enqueue_copy` on the
//!   destination's queue; `None`: a host-staged copy, chunked, several chunks
//!   in flight through a pooled ring of pinned staging buffers (USM host
//!   allocations of the source's or destination's context, plain page-aligned
//!   host memory when neither has them), so that reading chunk k+1 overlaps
//!   writing chunk k. The two queues may belong to different adapters: each
//!   hand-off is a host wait on the read's event.
//! - **Zero-copy staging** ([`Route::Mapped`], explained as
//!   `staged (mapped source, zero-copy)`): a `None` route whose two ends
//!   are both devices with `host_unified_memory` and [`ur_api::DeviceCaps::MAP`]
//!   (CPU OpenCL devices, say) maps each source chunk for reading and writes
//!   the destination straight from the mapping, one host copy instead of
//!   two, still chunked with several chunks mapped at a time. Its chunks
//!   ([`Config::mapped_chunk`], 64 MiB) are larger than the ring's: they
//!   cost no staging memory, and a large host copy streams faster. It is not used
//!   when only one end is host-unified: a discrete device's transfers from
//!   pageable (mapped) memory are slower than from the pinned ring. Every
//!   mapping is unmapped on every path, errors included; a failure leaves
//!   the source valid and the destination stale, as for any copy.
//!   [`Config::zero_copy`] can turn it off or force either end (for tests).
//! - **Sources are chosen by cost**: a range may be assembled from several
//!   places. Per elementary segment every place holding it is a candidate; a
//!   small dynamic program minimises `latency + bytes / bandwidth` over the
//!   whole range, paying a route's latency only when switching source, so
//!   small pieces are not split off for nothing. Costs are measured once per
//!   ordered pair, before the first access that may weigh it (or by
//!   [`MemoryManager::calibrate`]), and cached ([`Config::measure_routes`],
//!   off by default); with measurement off, class estimates keep plans
//!   deterministic.
//!   [`MemoryManager::plan`] has no side effects: it uses cached costs or
//!   estimates and never measures.
//! - **Routes can be named, for measurements**: [`MemoryManager::routes`]
//!   lists every route between two places (the planner's choice first:
//!   adapter copy where the connection allows, the pinned ring, zero-copy
//!   mapping either or both ends where the devices map), and
//!   [`MemoryManager::copy_via`] runs one copy by the route named, through
//!   the same execution path, into the destination's own allocation. No
//!   access takes a named route; `ur-bandwidth --route` uses them to show
//!   what the planner's choice gains.
//! - **Plans are data** ([`Plan`], [`Step`], [`Route`]); [`Plan::explain`]
//!   prints one without addresses or timings (snapshot-tested on seven sim
//!   topologies). [`MemoryManager::plan`] shows what an access would do,
//!   [`MemoryManager::plan_creation`] what a creation would do
//!   ([`PlanKind::Create`]: its allocations and the write of its initial
//!   data, [`Step::Init`], with the path the caller's slice takes); the
//!   same executor runs both kinds.
//! - **Faults lose nothing.** Out of memory at a device: evict the least
//!   recently used allocation on that device (any of its contexts) that no
//!   live guard holds, writing back to the host first whatever of it the
//!   host lacks (sole copies, and also copies whose twin sits on another
//!   device, which might be lost unnoticed), and retry; when what could go
//!   is busy in other threads, wait briefly; then fail with
//!   [`MmError::OutOfMemory`]. If eviction took one of the running plan's
//!   own sources, the access is planned again. A failed copy leaves its
//!   source valid and its destination stale ([`MmError::CopyFailed`]); the
//!   next access plans it again. A lost device is learned from any failed
//!   step and routed around; bytes whose only copy was there are
//!   [`MmError::DataLost`] until overwritten.
//! - **Threads**: every logical buffer has its own lock, held while its
//!   plan runs; different buffers proceed in parallel. An [`Acquired`] guard
//!   pins the allocation it names (never evicted while it lives) without
//!   holding the lock. Eviction only `try_lock`s other buffers, so two
//!   threads evicting for each other cannot deadlock.
//! - **Hints and initial data** ([`BufferSpec`],
//!   [`MemoryManager::create_buffer_with`]): allocation is eager at the
//!   hinted places, at creation, so out of memory surfaces there and not at
//!   a later kernel (a hint `Unified` with an earlier hint's allocation
//!   shares it). Initial data is written once, from the caller's slice
//!   straight into the first hint's allocation (no host store on the way),
//!   or into the host store without a hint. Creation is a plan like an
//!   access's; a failed step frees every allocation the creation made.
//! - **Asynchronous access** ([`MemoryManager::acquire_async`]): copies on
//!   adapter routes (host write/read, adapter copy, fill) are enqueued after
//!   the caller's wait list and the work pending on the allocations they
//!   touch, and not waited for; the call returns the guard and an event of
//!   the place's queue after which the range is current (`None`: current
//!   now). Host-staged routes (pinned ring, zero-copy) are done by the host:
//!   it waits for their inputs and runs them before returning; so do
//!   allocation and accesses at the host place. Wait-list events a queue
//!   cannot take (another adapter's, another context's: the dyn layer
//!   refuses them) are waited for on the host. [`Acquired::release_after`]
//!   ends an access once the caller's kernel event completes, without
//!   blocking: until then the allocation is pinned, and every later
//!   operation of the manager on it (a copy from or into it, a host read,
//!   its release) waits for that event. **Events follow one rule, the
//!   runtime's** ([`ur_api::Runtime`]: an `enqueue_*` borrows its wait list
//!   and returns an event the caller releases): every event the caller
//!   passes in (wait lists, [`Acquired::release_after`]) is borrowed and
//!   stays the caller's; every event the manager returns ([`Ready`]) is the
//!   caller's to release; the events the manager makes for itself (its
//!   copies, the marker `release_after` enqueues after the caller's event)
//!   it releases. A copy
//!   that fails asynchronously is learned at the buffer's next access: its
//!   range is stale at the destination again (the source kept it).
//! - **Several buffers at once** ([`MemoryManager::acquire_all`]): the
//!   buffers are locked in one global order (by id), so threads acquiring
//!   overlapping sets in any order cannot deadlock; a buffer named twice in
//!   one request is [`MmError::DuplicateBuffer`].
//! - **Handles name their manager**: a [`LogicalBuffer`] used with another
//!   manager is [`MmError::ForeignBuffer`]; offsets whose end overflows are
//!   [`MmError::RangeOverflow`].
//! - **Eviction does not scan**: per device, allocations sit in an ordered
//!   map keyed by (last use, buffer, place), updated on use; eviction walks
//!   it oldest first, `try_lock`ing owners, skipping pinned ones
//!   ([`Stats::eviction_probes`] counts the entries looked at).
//! - **Small host stores share slabs**: a host store of at most 1 KiB
//!   takes a slot of its size class (powers of two from 16 B) in a shared
//!   pinned 64 KiB slab, returned to the class's free list on release
//!   (slabs live as long as the manager); larger stores get their own
//!   page-aligned pinned block ([`Stats::host_store_bytes`]).
//! - **Caller memory goes through the host-transfer decision tree**
//!   ([`HostTransfer`], one per context: [`MemoryManager::host_transfer`]):
//!   initial data for a hinted device, and a [`MemoryManager::read`] of a
//!   range the host place lacks but one device allocation holds whole, move
//!   between the caller's slice and the device in one transfer: direct when
//!   the caller locked the memory (in that registry) or it is USM host, locked
//!   in place when large on a device that locks, through the pinned staging
//!   ring when small ([`Stats::caller_direct`], [`Stats::caller_locked`],
//!   [`Stats::caller_staged`]). Such a read leaves the host place as it was.
//! - **The host place** is pinned memory (a USM host allocation of the
//!   first location's context that offers one), else page-aligned host
//!   memory; the host is the one place that is never evicted or lost.
//!
//! ## Example: two simulated platforms, data through the host
//!
//! ```
//! use std::sync::Arc;
//! use ur_api::{Location, Runtime};
//! use ur_memory_manager::{Access, Config, MemoryManager, Place, Route, Step};
//! use ur_sim::{SimAdapter, Topology};
//!
//! let mut rt = Runtime::new();
//! rt.add(SimAdapter::new(Topology::two_platforms()))?;
//! let devs = rt.all_devices();
//! let (ca, cb) = (rt.create_context(&[devs[0]])?, rt.create_context(&[devs[1]])?);
//! let (la, lb) = (Location::new(ca, devs[0]), Location::new(cb, devs[1]));
//! let rt = Arc::new(rt);
//! let config = Config { staging_chunk: 64 << 10, measure_routes: false, ..Config::default() };
//! let mm = MemoryManager::with_config(rt.clone(), &[la, lb], config)?;
//!
//! let buf = mm.create_buffer(256 << 10)?;
//! // Produce the data on device a ...
//! let g = mm.acquire(buf, Place::Device(la), Access::DiscardWrite, 0..256 << 10)?;
//! let d = g.device()?;
//! rt.write(d.queue(), d.buffer(), 0, &vec![42u8; 256 << 10])?;
//! drop(g);
//! // ... and consume it on device b: the plan stages through host memory.
//! let plan = mm.plan(buf, Place::Device(lb), Access::Read, 0..256 << 10)?;
//! assert!(matches!(plan.steps[1], Step::Copy { route: Route::Staged { .. }, .. }));
//! print!("{}", plan.explain());
//! let g = mm.acquire(buf, Place::Device(lb), Access::Read, 0..256 << 10)?;
//! let mut back = vec![0u8; 16];
//! let d = g.device()?;
//! rt.read(d.queue(), d.buffer(), 1000, &mut back)?;
//! assert_eq!(back, [42u8; 16]);
//! assert_eq!(mm.stats().staged_copies, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod caller;
mod config;
mod error;
mod events;
mod exec;
mod forced;
mod interval;
mod manager;
mod mapped;
mod pinned;
mod plan;
mod residency;
mod route;
mod slab;
mod spec;
mod staging;
mod state;
mod transfer;

pub use access::{AccessRequest, Acquired, DeviceView, Ready};
pub use error::{MmError, Result};
pub use interval::IntervalSet;
pub use manager::{Config, LogicalBuffer, MemoryManager, Place, Stats, ZeroCopy};
pub use pinned::{Locker, PinError, Pinned, PinnedRegistry, RuntimeLocker, UnionPolicy};
pub use plan::{Access, InitPath, MapEnd, Plan, PlanKind, Route, Step};
pub use route::LinkCost;
pub use spec::BufferSpec;
pub use transfer::{HostTransfer, TransferPath, TransferThresholds};
