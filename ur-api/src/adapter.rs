//! The static face of the API, for adapter authors.
//!
//! An adapter is a set of plain Rust types with `Drop`. It never validates
//! handles, sizes or regions (the dyn layer did that before calling), never
//! picks a route between locations and never stages through host memory on
//! its own: it answers [`Adapter::memory_connection`] and performs primitive
//! operations.
//!
//! ## Safe and unsafe methods (the wgpu-hal model)
//!
//! Methods whose arguments cannot break memory safety however they are
//! chosen (queries, object creation without host memory, waits) are safe.
//! Every method that trusts the dyn layer's checks (regions inside their
//! objects, objects usable at the queue's location, host memory valid for
//! the command) is an `unsafe fn` whose `# Safety` section lists what the
//! caller guarantees. [`AdapterHost`](crate::AdapterHost) is the one caller
//! in the project that discharges those contracts; safe code reaches an
//! adapter only through it, so no safe call can make an adapter read or
//! write out of bounds.
//!
//! ## Optional parts
//!
//! What a device may lack sits behind a capability flag and has a default
//! here, so an adapter never writes an "unsupported" body: sub-buffers
//! ([`DeviceCaps::SUB_BUFFERS`]), mapping ([`DeviceCaps::MAP`]), host
//! locking ([`DeviceCaps::HOST_REGISTER`]), profiling
//! ([`DeviceCaps::PROFILING`]), programs and kernels
//! ([`DeviceCaps::KERNELS`]), USM (a non-empty [`UsmCaps`](crate::UsmCaps)).
//! The defaults are never reached where the flag is absent: the dyn layer
//! answers [`Error::Unsupported`] first. Rect copies have working defaults
//! (one copy per row) that an adapter overrides when its backend has a
//! native rect copy.
//!
//! [`DeviceCaps::SUB_BUFFERS`]: crate::DeviceCaps::SUB_BUFFERS
//! [`DeviceCaps::MAP`]: crate::DeviceCaps::MAP
//! [`DeviceCaps::HOST_REGISTER`]: crate::DeviceCaps::HOST_REGISTER
//! [`DeviceCaps::PROFILING`]: crate::DeviceCaps::PROFILING
//! [`DeviceCaps::KERNELS`]: crate::DeviceCaps::KERNELS

use crate::error::{Error, Result};
use crate::types::{
    Backend, BufferDesc, DeviceAddr, DeviceInfo, EventStatus, HostPtr, KernelGroupInfo, KernelInfo, MapFlags,
    MemoryConnection, NativeHandle, NativeObj, NdRange, PlatformInfo, ProfilingInfo, ProgramSource, QueueProps,
    RectCopy, UsmAdvice, UsmDesc, UsmPtr,
};

/// A resolved USM range as an adapter receives it: the allocation (the
/// adapter's own object, looked up by the dyn layer), the offset in it and
/// the address at that offset.
pub struct UsmRef<'a, A: Adapter + ?Sized> {
    /// The allocation.
    pub alloc: &'a A::Usm,
    /// Byte offset of the range in the allocation.
    pub offset: usize,
    /// The address at `offset` (the allocation's base plus `offset`).
    pub ptr: UsmPtr,
}

impl<A: Adapter + ?Sized> Clone for UsmRef<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: Adapter + ?Sized> Copy for UsmRef<'_, A> {}

impl<A: Adapter + ?Sized> std::fmt::Debug for UsmRef<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UsmRef({} at offset {})", self.ptr, self.offset)
    }
}

/// One side of a USM copy as an adapter receives it.
pub enum MemArg<'a, A: Adapter + ?Sized> {
    /// A range of a USM allocation.
    Usm(UsmRef<'a, A>),
    /// Host memory that is not a USM allocation.
    Host(HostPtr),
}

impl<A: Adapter + ?Sized> Clone for MemArg<'_, A> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A: Adapter + ?Sized> Copy for MemArg<'_, A> {}

impl<A: Adapter + ?Sized> std::fmt::Debug for MemArg<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemArg::Usm(u) => u.fmt(f),
            MemArg::Host(h) => write!(f, "Host({:p}, {} bytes)", h.as_ptr(), h.len()),
        }
    }
}

/// One kernel argument as an adapter receives it.
pub enum KernelArg<'a, A: Adapter + ?Sized> {
    /// A buffer (or sub-buffer).
    Buffer(&'a A::Buffer),
    /// A USM pointer, resolved to its allocation.
    Usm(UsmRef<'a, A>),
    /// A by-value argument's bytes.
    Scalar(&'a [u8]),
    /// Work-group local memory of this many bytes.
    Local(usize),
}

impl<A: Adapter + ?Sized> std::fmt::Debug for KernelArg<'_, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelArg::Buffer(_) => f.write_str("Buffer"),
            KernelArg::Usm(p) => write!(f, "Usm({})", p.ptr),
            KernelArg::Scalar(b) => write!(f, "Scalar({} bytes)", b.len()),
            KernelArg::Local(n) => write!(f, "Local({n})"),
        }
    }
}

/// A location as an adapter sees it: a context and one of its devices.
pub type Loc<'a, A> = (&'a <A as Adapter>::Context, &'a <A as Adapter>::Device);

/// The trait every backend implements.
///
/// Guarantees the dyn layer gives every call (safe or not):
/// - every object passed belongs to this adapter and is alive (it holds a
///   reference until the call returns);
/// - optional operations are only called when the device's
///   [`DeviceCaps`](crate::DeviceCaps) / [`UsmCaps`](crate::UsmCaps) say so.
///
/// The `unsafe` methods state in their `# Safety` sections what else the
/// caller guarantees; the common conditions, referred to below as **the
/// command contract**, are:
/// - sizes are non-zero and every region (`offset + size`, rect boxes with
///   explicit, consistent pitches, USM ranges) lies inside its buffer,
///   allocation or host span;
/// - every buffer and USM allocation is usable at the queue's location:
///   allocated at that (context, device), or at one this adapter answered
///   `Unified` for, or (for the copy operations only) `Migratable`;
/// - wait-list events belong to the queue's context;
/// - host memory ([`HostPtr`]) is valid for the whole command, as
///   [`HostPtr::new`] promises.
///
/// A test or benchmark may call the static trait directly; it then takes
/// these obligations on itself in an `unsafe` block.
pub trait Adapter: Send + Sync + 'static {
    /// A platform (a driver / vendor implementation).
    type Platform: Send + Sync + 'static;
    /// A device of a platform.
    type Device: Send + Sync + 'static;
    /// A context over one or more devices of one platform.
    type Context: Send + Sync + 'static;
    /// A buffer or sub-buffer.
    type Buffer: Send + Sync + 'static;
    /// A USM allocation. Dropping it must not free memory that commands
    /// already enqueued still use (free it in [`Adapter::usm_free`], or
    /// keep the memory alive from the commands).
    type Usm: Send + Sync + 'static;
    /// An in-order queue on one device of a context.
    type Queue: Send + Sync + 'static;
    /// The completion of one command.
    type Event: Send + Sync + 'static;
    /// A built program.
    type Program: Send + Sync + 'static;
    /// A kernel of a program.
    type Kernel: Send + Sync + 'static;

    /// The backend this adapter drives.
    fn backend(&self) -> Backend;

    /// The platforms present. An absent runtime is `Ok(vec![])`, not an error.
    fn platforms(&self) -> Result<Vec<Self::Platform>>;
    /// Describes a platform.
    fn platform_info(&self, platform: &Self::Platform) -> Result<PlatformInfo>;
    /// The devices of a platform (may be empty; the dyn layer skips such platforms).
    fn devices(&self, platform: &Self::Platform) -> Result<Vec<Self::Device>>;
    /// Describes a device.
    fn device_info(&self, device: &Self::Device) -> Result<DeviceInfo>;
    /// Splits a device into sub-devices of its platform, each usable as a
    /// device of its own (contexts, queues, memory, kernels). The dyn
    /// layer checks `how` against the device's
    /// [`DeviceLimits::partition`](crate::DeviceLimits::partition) first.
    /// Default: devices cannot be partitioned.
    fn partition_device(&self, device: &Self::Device, how: &crate::Partition) -> Result<Vec<Self::Device>> {
        let _ = (device, how);
        Err(Error::unsupported("device partitioning"))
    }

    /// Creates a context over devices of one platform (at least one, no
    /// device twice).
    fn create_context(&self, devices: &[&Self::Device]) -> Result<Self::Context>;

    /// Can memory allocated at `src` be used at `dst`? Directional. The dyn
    /// layer asks this before letting any buffer or USM allocation be used
    /// at another location than its own, so the answer must be true to the
    /// backend: `Unified` only where a kernel or command at `dst` may touch
    /// the memory as it is, with no copy the adapter or driver makes.
    fn memory_connection(&self, src: Loc<'_, Self>, dst: Loc<'_, Self>) -> MemoryConnection;

    /// Creates a buffer in `ctx`, placed for `desc.device_hint` (always
    /// set: the dyn layer fills in the context's first device).
    ///
    /// # Safety
    ///
    /// `desc.size` is non-zero and at most the device's largest allocation;
    /// the flags are consistent. With `COPY_HOST_PTR`, `init` is readable
    /// for exactly `desc.size` bytes during the call; with `USE_HOST_PTR` it
    /// is exactly `desc.size` bytes valid for the buffer's whole life (the
    /// [`HostPtr::new`] promise); otherwise `init` is `None`.
    unsafe fn create_buffer(
        &self,
        ctx: &Self::Context,
        desc: &BufferDesc<&Self::Device>,
        init: Option<HostPtr>,
    ) -> Result<Self::Buffer>;

    /// Creates a sub-buffer over `[offset, offset + size)` of `parent`
    /// ([`DeviceCaps::SUB_BUFFERS`](crate::DeviceCaps::SUB_BUFFERS)).
    ///
    /// # Safety
    ///
    /// `parent` is not itself a sub-buffer; `size > 0`, the range lies
    /// inside it and `offset` is a multiple of every context device's
    /// `sub_buffer_align`.
    unsafe fn create_sub_buffer(&self, parent: &Self::Buffer, offset: usize, size: usize) -> Result<Self::Buffer> {
        let _ = (parent, offset, size);
        Err(Error::unsupported("sub-buffers"))
    }

    /// Allocates USM memory in `ctx` (a non-empty [`UsmCaps`](crate::UsmCaps));
    /// returns the allocation and its base address. The dyn layer checked
    /// that the kind is supported, the size non-zero and within the largest
    /// allocation, the alignment 0 or a power of two no larger than the
    /// device's largest allocation, and that a device allocation names a device.
    fn usm_alloc(&self, ctx: &Self::Context, desc: &UsmDesc<&Self::Device>) -> Result<(Self::Usm, UsmPtr)> {
        let _ = (ctx, desc);
        Err(Error::unsupported("USM allocations"))
    }

    /// Frees a USM allocation. Commands already enqueued may still use it:
    /// the memory must stay valid until they complete (wait for them, or
    /// let them hold it). The default drops `alloc`.
    ///
    /// # Safety
    ///
    /// `alloc` was made by [`Adapter::usm_alloc`] in `ctx`, and no command
    /// is enqueued with it from now on.
    unsafe fn usm_free(&self, ctx: &Self::Context, alloc: Self::Usm) -> Result<()> {
        let _ = ctx;
        drop(alloc);
        Ok(())
    }

    /// Locks (pins) existing host memory for the devices of `ctx`
    /// ([`DeviceCaps::HOST_REGISTER`](crate::DeviceCaps::HOST_REGISTER)) and
    /// answers the address those devices reach it at: the host address
    /// where they share the host's address space, a device pointer
    /// otherwise. Reference counts, sub-ranges and merging live above (the
    /// memory manager's registry); here a range is locked once.
    ///
    /// # Safety
    ///
    /// `mem` is non-empty, not null, does not wrap the address space, is
    /// mapped in the process, overlaps no range locked with `ctx`, and stays
    /// valid until [`Adapter::unlock_host`] of the same range.
    unsafe fn lock_host(&self, ctx: &Self::Context, mem: HostPtr) -> Result<DeviceAddr> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory locking"))
    }

    /// Undoes [`Adapter::lock_host`].
    ///
    /// # Safety
    ///
    /// `mem` is exactly a range locked with `ctx` and not yet unlocked.
    unsafe fn unlock_host(&self, ctx: &Self::Context, mem: HostPtr) -> Result<()> {
        let _ = (ctx, mem);
        Err(Error::unsupported("host memory locking"))
    }

    /// Creates an in-order queue on `device` of `ctx`. `props.profiling`
    /// is set only on devices with [`DeviceCaps::PROFILING`](crate::DeviceCaps::PROFILING).
    fn create_queue(&self, ctx: &Self::Context, device: &Self::Device, props: &QueueProps) -> Result<Self::Queue>;
    /// Submits pending work without waiting.
    fn flush(&self, queue: &Self::Queue) -> Result<()>;
    /// Waits for all work on the queue. Like [`Adapter::wait`], returns
    /// only when every command enqueued before it has ended (completed or
    /// failed) or the device is lost; an error does not end the wait early.
    fn finish(&self, queue: &Self::Queue) -> Result<()>;

    /// Current status of an event.
    fn event_status(&self, event: &Self::Event) -> Result<EventStatus>;
    /// Waits for all events (at least one); returns the first failure.
    ///
    /// **The contract**: it returns, `Ok` or `Err`, only when every one of
    /// `events` has ended, completed or failed (its command will touch no
    /// memory any more), or when the device is lost. A failed command, a
    /// failed flush or any other error on the way is reported after the
    /// waiting is done, never instead of it: callers lend memory to
    /// commands until their wait returns (the `Runtime`'s safe blocking
    /// `read`, `write`, `read_rect`, `write_rect`, `usm_read`,
    /// `usm_write`), so a wait that returns early lets a device write into
    /// memory that is no longer the command's. Where the backend's own
    /// wait gives up early, fall back to a stronger one (a wait per event,
    /// then finishing the events' queues) before returning the error.
    fn wait(&self, events: &[&Self::Event]) -> Result<()>;
    /// Profiling timestamps of an event of a profiling queue
    /// ([`DeviceCaps::PROFILING`](crate::DeviceCaps::PROFILING)).
    fn event_profiling(&self, event: &Self::Event) -> Result<ProfilingInfo> {
        let _ = event;
        Err(Error::unsupported("profiling"))
    }

    /// Builds a program for every device of the context
    /// ([`DeviceCaps::KERNELS`](crate::DeviceCaps::KERNELS); the source's
    /// format is one every device accepts).
    fn create_program(&self, ctx: &Self::Context, source: &ProgramSource, options: &str) -> Result<Self::Program> {
        let _ = (ctx, source, options);
        Err(Error::unsupported("programs"))
    }
    /// Looks up a kernel by (non-empty) name.
    fn create_kernel(&self, program: &Self::Program, name: &str) -> Result<Self::Kernel> {
        let _ = (program, name);
        Err(Error::unsupported("kernels"))
    }
    /// What the dyn layer checks launches of `kernel` against: its argument
    /// count and, where the backend knows them, argument sizes. The default
    /// knows nothing (launches are then checked by the backend alone).
    fn kernel_info(&self, kernel: &Self::Kernel) -> KernelInfo {
        let _ = kernel;
        KernelInfo::default()
    }

    /// Reads `dst.len()` bytes at `offset` of `buffer` into host memory.
    ///
    /// # Safety
    ///
    /// The command contract (see the trait docs).
    unsafe fn enqueue_read(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Writes `src.len()` bytes of host memory at `offset` of `buffer`.
    ///
    /// # Safety
    ///
    /// The command contract (see the trait docs).
    unsafe fn enqueue_write(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;
    /// Copies `size` bytes between buffers.
    ///
    /// # Safety
    ///
    /// The command contract; when both are views of one buffer, the two
    /// regions do not overlap.
    unsafe fn enqueue_copy(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        src_offset: usize,
        dst: &Self::Buffer,
        dst_offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;

    /// Copies a 2-D/3-D box between buffers. The default issues one
    /// [`Adapter::enqueue_copy`] per row (the queue is in order, so the last
    /// row's event completes after all of them).
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches; when both are views of
    /// one buffer, the two boxes' spans do not overlap.
    unsafe fn enqueue_copy_rect(
        &self,
        queue: &Self::Queue,
        src: &Self::Buffer,
        dst: &Self::Buffer,
        rect: &RectCopy,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            // SAFETY: every row lies inside the checked box of each side.
            unsafe { self.enqueue_copy(queue, src, s, dst, d, len, w) }
        })
    }

    /// Reads a box of `buffer` (`rect.src`) into host memory laid out as
    /// `rect.dst`. The default issues one [`Adapter::enqueue_read`] per row.
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches.
    unsafe fn enqueue_read_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        dst: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            let row = dst
                .slice(d, len)
                .ok_or_else(|| Error::invalid("rect row outside host memory"))?;
            // SAFETY: the row lies inside the checked box of both sides.
            unsafe { self.enqueue_read(queue, buffer, s, row, w) }
        })
    }

    /// Writes a box of host memory laid out as `rect.src` into `buffer`
    /// (`rect.dst`). The default issues one [`Adapter::enqueue_write`] per row.
    ///
    /// # Safety
    ///
    /// The command contract, with explicit pitches.
    unsafe fn enqueue_write_rect(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        rect: &RectCopy,
        src: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        per_row(rect, wait, |s, d, len, w| {
            let row = src
                .slice(s, len)
                .ok_or_else(|| Error::invalid("rect row outside host memory"))?;
            // SAFETY: the row lies inside the checked box of both sides.
            unsafe { self.enqueue_write(queue, buffer, d, row, w) }
        })
    }

    /// Fills `[offset, offset + size)` with a repeated pattern.
    ///
    /// # Safety
    ///
    /// The command contract; the pattern is 1..=128 bytes (a power of two
    /// unless the device has
    /// [`DeviceCaps::FILL_ANY_PATTERN`](crate::DeviceCaps::FILL_ANY_PATTERN)),
    /// and `offset` and `size` are multiples of its length.
    unsafe fn enqueue_fill(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        offset: usize,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event>;

    /// Maps a range of a buffer into host memory
    /// ([`DeviceCaps::MAP`](crate::DeviceCaps::MAP)). The returned span must
    /// be exactly `size` bytes, valid until unmapped.
    ///
    /// # Safety
    ///
    /// The command contract; `flags` are non-empty and `WRITE_INVALIDATE`
    /// stands alone.
    unsafe fn enqueue_map(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        flags: MapFlags,
        offset: usize,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<(Self::Event, HostPtr)> {
        let _ = (queue, buffer, flags, offset, size, wait);
        Err(Error::unsupported("buffer mapping"))
    }
    /// Unmaps a mapping made by [`Adapter::enqueue_map`].
    ///
    /// # Safety
    ///
    /// The command contract; `mapped` is exactly a live mapping of `buffer`
    /// returned by [`Adapter::enqueue_map`], unmapped once.
    unsafe fn enqueue_unmap(
        &self,
        queue: &Self::Queue,
        buffer: &Self::Buffer,
        mapped: HostPtr,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, buffer, mapped, wait);
        Err(Error::unsupported("buffer mapping"))
    }

    /// Copies `size` bytes between USM and/or host memory.
    ///
    /// # Safety
    ///
    /// The command contract; the two ranges do not overlap.
    unsafe fn enqueue_usm_copy(
        &self,
        queue: &Self::Queue,
        dst: MemArg<'_, Self>,
        src: MemArg<'_, Self>,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, dst, src, size, wait);
        Err(Error::unsupported("USM copies"))
    }
    /// Fills `size` bytes of USM memory with a pattern.
    ///
    /// # Safety
    ///
    /// As [`Adapter::enqueue_fill`], for the USM range.
    unsafe fn enqueue_usm_fill(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        pattern: &[u8],
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, ptr, size, pattern, wait);
        Err(Error::unsupported("USM fills"))
    }
    /// Hints that `size` bytes of USM memory will be used on the queue's
    /// device soon. The default is a barrier (a prefetch is only a hint;
    /// its ordering is all that must hold).
    ///
    /// # Safety
    ///
    /// The command contract.
    unsafe fn enqueue_usm_prefetch(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (ptr, size);
        self.enqueue_barrier(queue, wait)
    }
    /// Attaches advice to `size` bytes of USM memory. The default ignores it
    /// (advice is a hint).
    ///
    /// # Safety
    ///
    /// The command contract; `PREFER_DEVICE` and `PREFER_HOST` are not both set.
    unsafe fn usm_advise(
        &self,
        queue: &Self::Queue,
        ptr: UsmRef<'_, Self>,
        size: usize,
        advice: UsmAdvice,
    ) -> Result<()> {
        let _ = (queue, ptr, size, advice);
        Ok(())
    }

    /// The backend's own handle of an object, for interoperation. Default:
    /// the backend's objects are not handed out.
    fn native_handle(&self, obj: NativeObj<'_, Self>) -> Result<NativeHandle> {
        let _ = obj;
        Err(Error::unsupported("native handles"))
    }
    /// A program of `ctx` over a program the caller built with the backend
    /// itself (`handle`); the adapter takes a reference of its own unless
    /// `owned` (the caller's reference passes to the program).
    fn program_from_native(&self, ctx: &Self::Context, handle: NativeHandle, owned: bool) -> Result<Self::Program> {
        let _ = (ctx, handle, owned);
        Err(Error::unsupported("programs from native handles"))
    }
    /// A kernel of `ctx` over a kernel the caller made with the backend
    /// itself (`handle`), with its program; references taken as in
    /// [`Adapter::program_from_native`].
    fn kernel_from_native(
        &self,
        ctx: &Self::Context,
        handle: NativeHandle,
        owned: bool,
    ) -> Result<(Self::Program, Self::Kernel)> {
        let _ = (ctx, handle, owned);
        Err(Error::unsupported("kernels from native handles"))
    }
    /// The names of a built program's kernels. Default: not known.
    fn kernel_names(&self, program: &Self::Program) -> Result<Vec<String>> {
        let _ = program;
        Err(Error::unsupported("listing a program's kernels"))
    }
    /// A kernel's work-group and sub-group figures on `device`, a device of
    /// the kernel's context. Default: nothing reported.
    fn kernel_group_info(&self, kernel: &Self::Kernel, device: &Self::Device) -> Result<KernelGroupInfo> {
        let _ = (kernel, device);
        Ok(KernelGroupInfo::default())
    }
    /// Launches a kernel ([`DeviceCaps::KERNELS`](crate::DeviceCaps::KERNELS)).
    ///
    /// # Safety
    ///
    /// The command contract for every buffer and USM argument; the kernel
    /// belongs to the queue's context; the range is well formed (1..=3
    /// dimensions, non-zero sizes, work-group sizes dividing the global
    /// sizes within the device limit, no overflow of `offset + global` or
    /// of the total item count); the argument count (and sizes, where
    /// [`Adapter::kernel_info`] gave them) match; a non-zero offset only
    /// with [`DeviceCaps::GLOBAL_OFFSET`](crate::DeviceCaps::GLOBAL_OFFSET)
    /// and local-memory arguments only with
    /// [`DeviceCaps::LOCAL_MEMORY_ARGS`](crate::DeviceCaps::LOCAL_MEMORY_ARGS).
    unsafe fn enqueue_launch(
        &self,
        queue: &Self::Queue,
        kernel: &Self::Kernel,
        range: &NdRange,
        args: &[KernelArg<'_, Self>],
        wait: &[&Self::Event],
    ) -> Result<Self::Event> {
        let _ = (queue, kernel, range, args, wait);
        Err(Error::unsupported("kernel launches"))
    }

    /// An event that completes when everything before it (and `wait`) has.
    fn enqueue_barrier(&self, queue: &Self::Queue, wait: &[&Self::Event]) -> Result<Self::Event>;
}

/// The row-by-row defaults of the rect copies: `op(src_offset, dst_offset,
/// len, wait)` once per contiguous row, the first row after `wait`; the
/// queue is in order, so the last row's event completes after all of them.
fn per_row<E>(rect: &RectCopy, wait: &[&E], mut op: impl FnMut(usize, usize, usize, &[&E]) -> Result<E>) -> Result<E> {
    let mut rows = Vec::new();
    rect.for_each_row(|s, d, len| rows.push((s, d, len)));
    let mut last = None;
    for (i, (s, d, len)) in rows.into_iter().enumerate() {
        last = Some(op(s, d, len, if i == 0 { wait } else { &[] })?);
    }
    last.ok_or_else(|| Error::invalid("empty rect"))
}
