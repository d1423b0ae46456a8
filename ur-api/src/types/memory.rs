//! Memory: where it can be used ([`MemoryConnection`]), buffer and USM
//! descriptions, host spans and rectangular regions.

use std::fmt;

use bitflags::bitflags;
use serde::Serialize;

/// The answer to "can memory of location A be used at location B?".
///
/// A location is a (context, device) pair. The answer is directional:
/// `connection(a, b)` may differ from `connection(b, a)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryConnection {
    /// The adapter cannot move the data: it must travel through host memory
    /// (read to host at the source, write from host at the destination).
    None,
    /// Not usable in place, but the adapter can copy it directly
    /// (`enqueue_copy` on a queue of either location).
    Migratable,
    /// Memory allocated at the source location is usable at the destination
    /// as it is: no copy and no second allocation is needed.
    Unified,
}

impl fmt::Display for MemoryConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryConnection::None => "none",
            MemoryConnection::Migratable => "migratable",
            MemoryConnection::Unified => "unified",
        })
    }
}

bitflags! {
    /// Buffer creation flags.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct MemFlags: u32 {
        /// Kernels read and write the buffer (the default when no access flag is set).
        const READ_WRITE = 1 << 0;
        /// Kernels only read the buffer.
        const READ_ONLY = 1 << 1;
        /// Kernels only write the buffer.
        const WRITE_ONLY = 1 << 2;
        /// The buffer lives in caller-owned host memory.
        const USE_HOST_PTR = 1 << 3;
        /// Back the buffer with host-accessible (pinned) memory.
        const ALLOC_HOST_PTR = 1 << 4;
        /// Initialise the buffer from caller data.
        const COPY_HOST_PTR = 1 << 5;
    }
}

/// Describes a buffer to create. `D` is the device type: a handle in the dyn
/// layer, a reference to the adapter's device in the static trait.
#[derive(Debug, Clone, Copy)]
pub struct BufferDesc<D> {
    /// Size in bytes; must be non-zero.
    pub size: usize,
    /// Creation flags.
    pub flags: MemFlags,
    /// The device this allocation is meant for. Backends that allocate per
    /// context (OpenCL) place the memory there; backends that allocate per
    /// device (CUDA) allocate on it. `None`: the context's first device.
    pub device_hint: Option<D>,
}

impl<D> BufferDesc<D> {
    /// A read-write buffer of `size` bytes with no device hint.
    pub fn new(size: usize) -> Self {
        BufferDesc {
            size,
            flags: MemFlags::READ_WRITE,
            device_hint: None,
        }
    }

    /// The same description with a device hint.
    pub fn on(self, device: D) -> Self {
        BufferDesc {
            device_hint: Some(device),
            ..self
        }
    }

    /// The same description with these flags.
    pub fn with_flags(self, flags: MemFlags) -> Self {
        BufferDesc { flags, ..self }
    }

    /// Converts the device type.
    pub fn map_device<E>(self, f: impl FnOnce(D) -> E) -> BufferDesc<E> {
        BufferDesc {
            size: self.size,
            flags: self.flags,
            device_hint: self.device_hint.map(f),
        }
    }
}

/// USM allocation kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UsmKind {
    /// Host memory the devices of the context can access.
    Host,
    /// Device memory.
    Device,
    /// Memory that migrates between host and device on demand.
    Shared,
}

bitflags! {
    /// Advice attached to a USM allocation or range.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    #[serde(transparent)]
    pub struct UsmAdvice: u32 {
        /// Mostly read; the backend may replicate it.
        const READ_MOSTLY = 1 << 0;
        /// Prefer keeping the memory on the device.
        const PREFER_DEVICE = 1 << 1;
        /// Prefer keeping the memory on the host.
        const PREFER_HOST = 1 << 2;
        /// The host will access the memory.
        const ACCESSED_BY_HOST = 1 << 3;
    }
}

/// Describes a USM allocation. `D` as in [`BufferDesc`].
#[derive(Debug, Clone, Copy)]
pub struct UsmDesc<D> {
    /// Host, device or shared.
    pub kind: UsmKind,
    /// Size in bytes; must be non-zero.
    pub size: usize,
    /// Alignment in bytes; 0 means the adapter's default, otherwise a power of two.
    pub align: usize,
    /// The device the allocation is for (required for device allocations).
    pub device: Option<D>,
    /// Initial advice.
    pub advice: UsmAdvice,
}

impl<D> UsmDesc<D> {
    /// An allocation of `kind` and `size` with default alignment and no advice.
    pub fn new(kind: UsmKind, size: usize) -> Self {
        UsmDesc {
            kind,
            size,
            align: 0,
            device: None,
            advice: UsmAdvice::empty(),
        }
    }

    /// The same description for this device.
    pub fn on(self, device: D) -> Self {
        UsmDesc {
            device: Some(device),
            ..self
        }
    }

    /// The same description with this alignment.
    pub fn aligned(self, align: usize) -> Self {
        UsmDesc { align, ..self }
    }

    /// Converts the device type.
    pub fn map_device<E>(self, f: impl FnOnce(D) -> E) -> UsmDesc<E> {
        UsmDesc {
            kind: self.kind,
            size: self.size,
            align: self.align,
            device: self.device.map(f),
            advice: self.advice,
        }
    }
}

/// A USM address. For host and shared allocations of host-addressable
/// backends it is a host address; for device allocations it is an address
/// in the device's space that only the adapter interprets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct UsmPtr(pub u64);

impl UsmPtr {
    /// The address `bytes` further on (wrapping: only addresses inside
    /// an allocation mean anything).
    pub fn offset(self, bytes: usize) -> UsmPtr {
        UsmPtr(self.0.wrapping_add(bytes as u64))
    }
}

impl fmt::Display for UsmPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// What a pointer query returns. `D` as in [`BufferDesc`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsmPointerInfo<D> {
    /// Allocation kind.
    pub kind: UsmKind,
    /// Base address of the allocation containing the pointer.
    pub base: UsmPtr,
    /// Size of that allocation.
    pub size: usize,
    /// The device of the allocation, if any.
    pub device: Option<D>,
}

/// A span of host memory handed to an adapter for an operation that may run
/// after the call returns.
///
/// Creating one is `unsafe`: the creator promises the memory stays valid for
/// the whole operation (until its event completes), and that nothing else
/// writes it meanwhile (for operations that read it) or accesses it
/// meanwhile (for operations that write it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPtr {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a HostPtr is only an address and a length; the promise made in
// `HostPtr::new` covers use from the adapter's worker threads.
unsafe impl Send for HostPtr {}
// SAFETY: as above; sharing the address does not access the memory.
unsafe impl Sync for HostPtr {}

impl HostPtr {
    /// Wraps `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes from now until
    /// every operation given this `HostPtr` has completed (its event is
    /// complete, or the blocking call returned), and the memory must not be
    /// accessed by anything else in that time, except by other reads when the
    /// operations only read it.
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        HostPtr { ptr, len }
    }

    /// The start address.
    pub fn as_ptr(self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        self.len
    }

    /// True for a zero-length span.
    pub fn is_empty(self) -> bool {
        self.len == 0
    }

    /// The sub-span `[offset, offset + len)`, or `None` if it does not fit.
    pub fn slice(self, offset: usize, len: usize) -> Option<HostPtr> {
        let end = offset.checked_add(len)?;
        (end <= self.len).then(|| HostPtr {
            // SAFETY: offset <= self.len, so the result stays inside the span.
            ptr: unsafe { self.ptr.add(offset) },
            len,
        })
    }
}

/// The address at which the devices of a context reach locked host memory
/// (what [`HostLocking::lock_host`](crate::adapter::HostLocking::lock_host) answers): the host
/// address itself where devices share the host's address space (native, sim,
/// Level Zero imports, CUDA with unified addressing), a device pointer
/// otherwise (`cuMemHostGetDevicePointer`). Usable as a [`UsmPtr`]-like
/// address by the adapter that returned it; opaque to everything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct DeviceAddr(pub u64);

impl DeviceAddr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: usize) -> DeviceAddr {
        DeviceAddr(self.0.wrapping_add(bytes as u64))
    }
}

/// Memory named by a USM copy: a USM allocation or plain host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemRef {
    /// A USM address (any kind).
    Usm(UsmPtr),
    /// Host memory that is not a USM allocation.
    Host(HostPtr),
}

/// One side of a rectangular copy: where the box starts and how rows and
/// slices are laid out. `origin` is (byte in row, row, slice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RectSide {
    /// Start of the box: byte offset in the row, row index, slice index.
    pub origin: [usize; 3],
    /// Bytes between the starts of two rows; 0 means tightly packed (the box width).
    pub row_pitch: usize,
    /// Bytes between the starts of two slices; 0 means tightly packed (row pitch × height).
    pub slice_pitch: usize,
}

impl RectSide {
    /// A side from its origin (byte in the row, row, slice) and pitches (0 = packed).
    ///
    /// ```
    /// use ur_api::{RectCopy, RectSide};
    /// // A 4-byte-wide, 2-row box from row 1 of a 16-byte-pitch image into a packed one.
    /// let r = RectCopy {
    ///     src: RectSide::new([0, 1, 0], 16, 0),
    ///     dst: RectSide::default(),
    ///     extent: [4, 2, 1],
    /// };
    /// assert_eq!(r.src.start(), 16);
    /// ```
    pub const fn new(origin: [usize; 3], row_pitch: usize, slice_pitch: usize) -> Self {
        RectSide {
            origin,
            row_pitch,
            slice_pitch,
        }
    }

    /// Byte offset of the box's first byte.
    pub fn start(&self) -> usize {
        self.origin[2] * self.slice_pitch + self.origin[1] * self.row_pitch + self.origin[0]
    }

    /// One past the box's last byte, for a box of `extent`.
    pub fn end(&self, extent: [usize; 3]) -> usize {
        self.start() + (extent[2] - 1) * self.slice_pitch + (extent[1] - 1) * self.row_pitch + extent[0]
    }
}

/// A rectangular (2-D or 3-D) copy. `extent` is (width in bytes, rows, slices).
///
/// The dyn layer replaces zero pitches by their packed values before an
/// adapter sees the description.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RectCopy {
    /// Source layout.
    pub src: RectSide,
    /// Destination layout.
    pub dst: RectSide,
    /// Width in bytes, number of rows, number of slices.
    pub extent: [usize; 3],
}

impl RectCopy {
    /// Calls `f(src_offset, dst_offset, len)` for every contiguous row of the box.
    /// Pitches must already be explicit (non-zero).
    pub fn for_each_row(&self, mut f: impl FnMut(usize, usize, usize)) {
        let [w, h, d] = self.extent;
        for z in 0..d {
            for y in 0..h {
                let s = self.src.start() + z * self.src.slice_pitch + y * self.src.row_pitch;
                let t = self.dst.start() + z * self.dst.slice_pitch + y * self.dst.row_pitch;
                f(s, t, w);
            }
        }
    }
}
