//! # ur-file-io: file <-> device I/O with scored backends
//!
//! A [`FileIo`] engine runs over a [`ur_api::Runtime`]. It opens files
//! ([`FileIo::open`], [`IoFile`]) and moves byte ranges between a file and
//! device memory ([`DeviceMem`]: a runtime buffer or a USM pointer, on a
//! queue), or a memory manager's logical buffer at any place
//! ([`FileIo::read_logical`], [`FileIo::write_logical`]); blocking
//! ([`FileIo::read`], [`FileIo::write`], [`FileIo::run`]) or asynchronous
//! ([`FileIo::submit`] returns an [`IoHandle`]). The `ur-cp` binary copies
//! a file through a device with it.
//!
//! ## Design choices
//!
//! - **Every request is planned, and the plan is data** ([`Explanation`],
//!   from [`FileIo::explain`]): the range is cut at end of file (a read
//!   returns the short count), split into pieces, every backend scores every
//!   piece ([`Score`]: negative is "not offered", with the reason) and the
//!   highest score wins (ties: fastpaths first). No piece ever reaches a
//!   backend that refused it.
//! - **Files are opened twice where the file system allows `O_DIRECT`**
//!   (as KvikIO does): a buffered descriptor and an `O_DIRECT` one, with
//!   the alignment `statx(STATX_DIOALIGN)` reports (512 bytes on this
//!   machine's ext4; 4096 when not reported, hipFile's default), never
//!   assumed. [`FileMode`] says which and why. On an `O_DIRECT` file a
//!   request is split into an aligned middle and unaligned head and tail.
//! - **Backends** (one small crate-internal trait: `score`, `run`):
//!   - *direct* (fastpath): file data lands in host-visible device memory
//!     with no bounce: a mapping of a buffer of a host-unified device with
//!     `MAP` (native, PoCL, rusticl), or USM host/shared memory. On an
//!     `O_DIRECT` file it is offered only where offset, size and the
//!     mapping's address are aligned (the address is learned by a one-byte
//!     map probe, and checked again on the real mapping); on a buffered
//!     file, everywhere. Each piece is mapped once and its tasks `pread`
//!     into the mapping in parallel.
//!   - *cufile* (fastpath on NVIDIA): presence-checked before cudarc may
//!     load libcufile; "not offered: libcufile not found" here. Where the
//!     library exists it is still not offered: `ur-api` exposes no CUDA
//!     context to make current (see `backend/cufile.rs`).
//!   - *bounce* (fallback, always offered, score 0): pinned page-aligned
//!     bounce buffers (USM host memory of the target's context where the
//!     device has it, else page-aligned host memory), pooled across
//!     requests, and one of two device legs ([`BounceCopy`]; `explain`
//!     says which and why). Buffered files into memory the host maps at
//!     no cost (host-unified devices' buffers, USM host memory): each
//!     thread `pread`s a cache-sized piece ([`Settings::bounce_map_size`])
//!     and copies it through the mapping itself, with streaming stores.
//!     Elsewhere (device memory apart from the host's, `O_DIRECT` files)
//!     device writes: each task moves in pieces ([`Settings::bounce_size`],
//!     4 MiB, independent of the task size) through a ring of
//!     [`Settings::bounce_ring`] buffers per thread: the device copy of a
//!     piece is enqueued without waiting, and waited on only when its
//!     buffer comes round again (writes: device reads run ahead of the
//!     `pwrite`s). Aligned pieces use `O_DIRECT`, with task-sized pieces.
//! - **Tasks on a thread pool** ([`Settings::task_size`], 4 MiB): the
//!   calling thread claims tasks too, helped by up to `threads - 1` pool
//!   workers, so a request progresses even when the pool is busy and a
//!   pool of one thread cannot deadlock. Worker threads are plain std
//!   threads fed by a crossbeam channel: the tasks block in system calls
//!   and device waits, which a work-stealing CPU pool is not built for.
//! - **A fastpath failure is retried on the fallback**: a failed direct
//!   task (or a failed map/unmap: then the whole piece) is redone by the
//!   bounce backend after the mapping is gone, counted in [`IoStats`] and
//!   [`IoReport`] and logged with `tracing::warn!`. The fastpath stays in
//!   use for later requests. [`FileIo::inject_fastpath_failures`] forces
//!   failures for tests.
//! - **Input errors before any byte moves**, in this order: closed file,
//!   write to a read-only handle, size 0 (a no-op that touches no
//!   backend), offsets that overflow, an unknown target, a target smaller
//!   than the request ([`FileIoError`]).
//! - **Settings in one place** ([`Settings`]) with `UR_FILEIO_*`
//!   environment overrides (task size, bounce piece sizes, bounce ring,
//!   bounce device leg and stores, threads, fallback only, `O_DIRECT`
//!   policy).
//! - **Only the public `ur-api` and memory-manager APIs** are used: mapping
//!   through `Runtime::enqueue_map`, copies through `enqueue_write` /
//!   `enqueue_usm_copy`, logical buffers through `MemoryManager::acquire`.
//!
//! ## Example
//!
//! ```
//! use std::sync::Arc;
//! use ur_api::{BufferDesc, QueueProps, Runtime};
//! use ur_file_io::{DeviceMem, FileIo, OpenOptions, Request, Settings};
//!
//! let mut rt = Runtime::new();
//! rt.add(ur_native::NativeAdapter::new())?;
//! let dev = rt.all_devices()[0];
//! let ctx = rt.create_context(&[dev])?;
//! let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
//! let buf = rt.create_buffer(ctx, &BufferDesc::new(8192).on(dev), None)?;
//! let io = FileIo::with_settings(Arc::new(rt), Settings::default())?;
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("in"), vec![7u8; 5000])?;
//! let f = io.open(dir.path().join("in"), OpenOptions::read())?;
//! let target = DeviceMem::Buffer { queue: q, buffer: buf, offset: 0 };
//! print!("{}", io.explain(&f, &Request::read(target, 3, 8000))?);
//! assert_eq!(io.read(&f, target, 3, 8000)?, 4997); // cut at end of file
//! let mut back = vec![0u8; 4997];
//! io.runtime().read(q, buf, 0, &mut back)?;
//! assert!(back.iter().all(|&b| b == 7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backend;
mod engine;
mod error;
mod file;
mod logical;
mod plan;
mod pool;
mod settings;
mod stats;
mod target;

pub use backend::cufile::presence as cufile_presence;
pub use engine::{FileIo, IoHandle, Request};
pub use error::{FileIoError, Result};
pub use file::{FileMode, IoFile, OpenOptions, DEFAULT_DIO_ALIGN};
pub use plan::{split as split_request, BackendChoice, BackendKind, Direction, Explanation, PlannedPiece, Score};
pub use settings::{
    BounceCopy, DirectIo, Settings, BOUNCE_COPY_ENV, BOUNCE_MAP_SIZE_ENV, BOUNCE_RING_ENV, BOUNCE_SIZE_ENV,
    BOUNCE_STREAM_ENV, DIRECT_IO_ENV, FALLBACK_ONLY_ENV, TASK_SIZE_ENV, THREADS_ENV,
};
pub use stats::{IoReport, IoStats};
pub use target::DeviceMem;
