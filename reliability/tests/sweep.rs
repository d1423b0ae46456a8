//! The stale / foreign handle sweep (issue #16): every entry point of
//! [`Runtime`] and of [`DynAdapter`], for every handle it takes, called with
//!
//! - a **released** handle (its slot reused by a newer object where the
//!   kind can be released),
//! - a handle of **another runtime** (an independent native adapter),
//! - a handle of **another adapter of the same runtime** (sim; only where
//!   the call also holds a handle of the first adapter, since a lone
//!   handle of the sim adapter is a valid call on it),
//!
//! and each must return `Error::InvalidHandle` of the substituted kind: no
//! panic, no success, no other error. Every call goes through `Runtime` and,
//! where `DynAdapter` has the method, straight through the native adapter's
//! `DynAdapter` too (no routing in front of its checks).
//!
//! Coverage is checked against the sources: the `DynAdapter` methods come
//! from [`ENTRY_POINTS`], the list the trait itself expands from
//! (ur-api/src/dynamic/entry_points.rs), which also says which of them
//! `Runtime` offers; `Runtime`'s own methods (the blocking helpers,
//! routing, constructors) are parsed from its `impl Runtime` blocks
//! (ur-api/src/runtime.rs, runtime/pointers.rs). Each must be swept or
//! listed in [`NO_HANDLES`] with its reason, so a new entry point fails
//! this test until it is covered; and the rows of each entry point must
//! substitute every handle kind its arguments carry (the argument types in
//! [`ENTRY_POINTS`]), so a new handle argument fails it too.

use std::collections::BTreeSet;
use std::sync::Arc;

use ur_api::dynamic::{OnRuntime, ENTRY_POINTS};
use ur_api::{
    ArgValue, BufferDesc, BufferId, ContextId, DeviceId, DynAdapter, Error, EventId, HandleKind, HostPtr, KernelId,
    Location, MapFlags, MemRef, NativeHandle, NativeOf, NdRange, PlatformId, ProgramId, ProgramSource, QueueId,
    QueueProps, RectCopy, RectSide, Runtime, UsmAdvice, UsmDesc, UsmKind, UsmPtr,
};
use ur_native::NativeAdapter;
use ur_reliability::{methods_of, no_panic};
use ur_sim::{SimAdapter, Topology};

/// One position a handle can take in a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Slot {
    Platform,
    Device,
    Device2,
    Context,
    Context2,
    Buffer,
    Buffer2,
    Queue,
    Event,
    Program,
    Kernel,
    Usm,
    Usm2,
}

impl Slot {
    fn kind(self) -> HandleKind {
        match self {
            Slot::Platform => HandleKind::Platform,
            Slot::Device | Slot::Device2 => HandleKind::Device,
            Slot::Context | Slot::Context2 => HandleKind::Context,
            Slot::Buffer | Slot::Buffer2 => HandleKind::Buffer,
            Slot::Queue => HandleKind::Queue,
            Slot::Event => HandleKind::Event,
            Slot::Program => HandleKind::Program,
            Slot::Kernel => HandleKind::Kernel,
            Slot::Usm | Slot::Usm2 => HandleKind::UsmPointer,
        }
    }
}

/// How a handle is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bad {
    /// Released (platforms and devices are never released).
    Stale,
    /// Issued by an adapter of another runtime.
    Foreign,
    /// Issued by another adapter of the same runtime.
    OtherAdapter,
}

/// One handle of every slot.
#[derive(Debug, Clone, Copy)]
struct H {
    plat: PlatformId,
    dev: DeviceId,
    dev2: DeviceId,
    ctx: ContextId,
    ctx2: ContextId,
    buf: BufferId,
    buf2: BufferId,
    q: QueueId,
    ev: EventId,
    prog: ProgramId,
    kern: KernelId,
    usm: UsmPtr,
    usm2: UsmPtr,
}

impl H {
    /// `self` with the handle of `slot` taken from `other`.
    fn with(mut self, slot: Slot, other: &H) -> H {
        match slot {
            Slot::Platform => self.plat = other.plat,
            Slot::Device => self.dev = other.dev,
            Slot::Device2 => self.dev2 = other.dev2,
            Slot::Context => self.ctx = other.ctx,
            Slot::Context2 => self.ctx2 = other.ctx2,
            Slot::Buffer => self.buf = other.buf,
            Slot::Buffer2 => self.buf2 = other.buf2,
            Slot::Queue => self.q = other.q,
            Slot::Event => self.ev = other.ev,
            Slot::Program => self.prog = other.prog,
            Slot::Kernel => self.kern = other.kern,
            Slot::Usm => self.usm = other.usm,
            Slot::Usm2 => self.usm2 = other.usm2,
        }
        self
    }
}

/// Host memory every call may use (kept alive to the end, so that a call
/// that wrongly succeeds still touches valid memory).
struct Mem {
    bytes: Vec<u8>,
}

impl Mem {
    fn host(&self, len: usize) -> HostPtr {
        assert!(len <= self.bytes.len());
        // SAFETY: `bytes` lives until the end of the test, after every queue
        // finished; nothing else reads or writes it meanwhile.
        unsafe { HostPtr::new(self.bytes.as_ptr().cast_mut(), len) }
    }
}

fn host_source() -> ProgramSource {
    ProgramSource::Host(Arc::new(ur_conformance::kernels::host_library()))
}

const SIZE: usize = 256;

/// Live objects of every kind on the first device of `rt` owned by `adapter`.
fn live(rt: &Runtime, adapter: usize) -> H {
    let a = &rt.adapters()[adapter];
    let plat = a.platforms()[0];
    let dev = a.devices(plat).unwrap()[0];
    let ctx = rt.create_context(&[dev]).unwrap();
    let q = rt.create_queue(ctx, dev, &QueueProps { profiling: true }).unwrap();
    let buf = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None).unwrap();
    let buf2 = rt.create_buffer(ctx, &BufferDesc::new(SIZE).on(dev), None).unwrap();
    let ev = rt.enqueue_barrier(q, &[]).unwrap();
    rt.wait(&[ev]).unwrap();
    let prog = rt.create_program(ctx, &host_source(), "").unwrap();
    let kern = rt.create_kernel(prog, "add_one").unwrap();
    let usm = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, SIZE).on(dev)).unwrap();
    let usm2 = rt.usm_alloc(ctx, &UsmDesc::new(UsmKind::Device, SIZE).on(dev)).unwrap();
    H {
        plat,
        dev,
        dev2: dev,
        ctx,
        ctx2: ctx,
        buf,
        buf2,
        q,
        ev,
        prog,
        kern,
        usm,
        usm2,
    }
}

/// Released handles of every releasable kind of `rt`'s first adapter (each
/// slot reused by a newer object where the tables reuse slots); platform
/// and device are `good`'s.
fn stale(rt: &Runtime, good: &H, keep: &mut Vec<Box<dyn FnOnce(&Runtime)>>) -> H {
    let fresh = live(rt, 0);
    let H {
        ctx,
        q,
        buf,
        buf2,
        ev,
        prog,
        kern,
        usm,
        usm2,
        ..
    } = fresh;
    rt.release_kernel(kern).unwrap();
    rt.release_program(prog).unwrap();
    rt.release_event(ev).unwrap();
    rt.release_buffer(buf).unwrap();
    rt.release_buffer(buf2).unwrap();
    rt.release_queue(q).unwrap();
    // Newer objects in the freed slots: a stale handle must not reach them.
    // (Made before the USM is freed: a new allocation at a freed address
    // would be that address's rightful owner, not a stale use.)
    let newer = live(rt, 0);
    rt.usm_free(ctx, usm).unwrap();
    rt.usm_free(ctx, usm2).unwrap();
    rt.release_context(ctx).unwrap();
    let newer_ctx = rt.create_context(&[good.dev]).unwrap();
    keep.push(Box::new(move |rt: &Runtime| {
        release_all(rt, &newer);
        rt.release_context(newer_ctx).unwrap();
    }));
    H {
        plat: good.plat,
        dev: good.dev,
        dev2: good.dev2,
        ctx,
        ctx2: ctx,
        buf,
        buf2,
        q,
        ev,
        prog,
        kern,
        usm,
        usm2,
    }
}

fn release_all(rt: &Runtime, h: &H) {
    rt.finish(h.q).unwrap();
    rt.release_kernel(h.kern).unwrap();
    rt.release_program(h.prog).unwrap();
    rt.release_event(h.ev).unwrap();
    rt.release_buffer(h.buf).unwrap();
    rt.release_buffer(h.buf2).unwrap();
    rt.release_queue(h.q).unwrap();
    rt.usm_free(h.ctx, h.usm).unwrap();
    rt.usm_free(h.ctx, h.usm2).unwrap();
    rt.release_context(h.ctx).unwrap();
}

type RtCall = fn(&Runtime, &H, &Mem) -> Result<(), Error>;
type DynCall = fn(&dyn DynAdapter, &H, &Mem) -> Result<(), Error>;

/// One swept call: the entry point's name, its handle slots (the first is
/// the one `Runtime` routes by), the call through `Runtime` and, where the
/// trait has the method, through `DynAdapter`.
struct Row {
    name: &'static str,
    slots: &'static [Slot],
    rt: RtCall,
    dy: Option<DynCall>,
}

/// A row calling the same body through `Runtime` and `DynAdapter`.
macro_rules! both {
    ($name:literal, [$($slot:ident),*], |$api:ident, $h:ident, $m:ident| $body:expr) => {
        Row {
            name: $name,
            slots: &[$(Slot::$slot),*],
            rt: |$api: &Runtime, $h: &H, $m: &Mem| { let _ = $m; ($body).map(drop) },
            dy: Some(|$api: &dyn DynAdapter, $h: &H, $m: &Mem| { let _ = $m; ($body).map(drop) }),
        }
    };
}

/// A row of a `Runtime`-only entry point (the blocking helpers, routing).
macro_rules! rt_only {
    ($name:literal, [$($slot:ident),*], |$api:ident, $h:ident, $m:ident| $body:expr) => {
        Row {
            name: $name,
            slots: &[$(Slot::$slot),*],
            rt: |$api: &Runtime, $h: &H, $m: &Mem| { let _ = $m; ($body).map(drop) },
            dy: None,
        }
    };
}

fn rect() -> RectCopy {
    let side = RectSide::new([0, 0, 0], 16, 64);
    RectCopy {
        src: side,
        dst: side,
        extent: [8, 2, 2],
    }
}

/// A native handle the sweep's calls never reach: their context is bad,
/// which is refused first (and the native adapter has no native objects).
fn unused_native() -> NativeHandle {
    // SAFETY: never used (see above): no backend object is named.
    unsafe { NativeHandle::new(0) }
}

fn rows() -> Vec<Row> {
    vec![
        rt_only!("adapter_of", [Queue], |rt, h, m| rt.adapter_of(h.q)),
        rt_only!("backend_of", [Buffer], |rt, h, m| rt.backend_of(h.buf)),
        both!("platform_info", [Platform], |a, h, m| a.platform_info(h.plat)),
        both!("devices", [Platform], |a, h, m| a.devices(h.plat)),
        both!("device_info", [Device], |a, h, m| a.device_info(h.dev)),
        both!("device_platform", [Device], |a, h, m| a.device_platform(h.dev)),
        both!("partition_device", [Device], |a, h, m| a
            .partition_device(h.dev, &ur_api::Partition::Equally(1))),
        both!("create_context", [Device, Device2], |a, h, m| a
            .create_context(&[h.dev, h.dev2])),
        both!("context_devices", [Context], |a, h, m| a.context_devices(h.ctx)),
        both!("release_context", [Context], |a, h, m| a.release_context(h.ctx)),
        both!("memory_connection", [Context, Device, Context2, Device2], |a, h, m| a
            .memory_connection(
                Location::new(h.ctx, h.dev),
                Location::new(h.ctx2, h.dev2)
            )),
        both!("create_buffer", [Context, Device], |a, h, m| a.create_buffer(
            h.ctx,
            &BufferDesc::new(64).on(h.dev),
            None
        )),
        rt_only!("create_buffer_with_data", [Context, Device], |rt, h, m| rt
            .create_buffer_with_data(
                h.ctx,
                &BufferDesc::new(64).on(h.dev),
                &m.bytes[..64]
            )),
        both!("create_sub_buffer", [Buffer], |a, h, m| a
            .create_sub_buffer(h.buf, 0, 64)),
        both!("buffer_info", [Buffer], |a, h, m| a.buffer_info(h.buf)),
        both!("release_buffer", [Buffer], |a, h, m| a.release_buffer(h.buf)),
        both!("usm_alloc", [Context, Device], |a, h, m| a
            .usm_alloc(h.ctx, &UsmDesc::new(UsmKind::Device, 64).on(h.dev))),
        both!("usm_free", [Context, Usm], |a, h, m| a.usm_free(h.ctx, h.usm)),
        both!("usm_pointer_info", [Context, Usm], |a, h, m| a
            .usm_pointer_info(h.ctx, h.usm)),
        both!("lock_host", [Context], |a, h, m| a.lock_host(h.ctx, m.host(64))),
        both!("unlock_host", [Context], |a, h, m| a.unlock_host(h.ctx, m.host(64))),
        both!("host_register", [Context], |a, h, m| a.host_register(h.ctx, m.host(64))),
        both!("host_unregister", [Context], |a, h, m| a
            .host_unregister(h.ctx, m.host(64))),
        both!("create_queue", [Context, Device], |a, h, m| a.create_queue(
            h.ctx,
            h.dev,
            &QueueProps::default()
        )),
        both!("queue_location", [Queue], |a, h, m| a.queue_location(h.q)),
        both!("release_queue", [Queue], |a, h, m| a.release_queue(h.q)),
        both!("flush", [Queue], |a, h, m| a.flush(h.q)),
        both!("finish", [Queue], |a, h, m| a.finish(h.q)),
        both!("queue_empty", [Queue], |a, h, m| a.queue_empty(h.q)),
        both!("event_status", [Event], |a, h, m| a.event_status(h.ev)),
        both!("wait", [Event], |a, h, m| a.wait(&[h.ev])),
        rt_only!("complete", [Event], |rt, h, m| rt.complete(h.ev)),
        both!("event_profiling", [Event], |a, h, m| a.event_profiling(h.ev)),
        both!("event_context", [Event], |a, h, m| a.event_context(h.ev)),
        both!("release_event", [Event], |a, h, m| a.release_event(h.ev)),
        both!("create_program", [Context], |a, h, m| a.create_program(
            h.ctx,
            &host_source(),
            ""
        )),
        both!("release_program", [Program], |a, h, m| a.release_program(h.prog)),
        both!("create_kernel", [Program], |a, h, m| a.create_kernel(h.prog, "add_one")),
        both!("release_kernel", [Kernel], |a, h, m| a.release_kernel(h.kern)),
        both!("kernel_info", [Kernel], |a, h, m| a.kernel_info(h.kern)),
        both!("kernel_group_info", [Kernel, Device], |a, h, m| a
            .kernel_group_info(h.kern, h.dev)),
        both!("kernel_names", [Program], |a, h, m| a.kernel_names(h.prog)),
        both!("native_handle", [Context], |a, h, m| a
            .native_handle(NativeOf::Context(h.ctx))),
        both!("create_program_from_native", [Context], |a, h, m| a
            .create_program_from_native(h.ctx, unused_native(), false)),
        both!("create_kernel_from_native", [Context], |a, h, m| a
            .create_kernel_from_native(h.ctx, unused_native(), false)),
        both!("create_event_from_native", [Context], |a, h, m| a
            .create_event_from_native(h.ctx, unused_native(), false)),
        both!("create_buffer_from_native", [Context], |a, h, m| a
            .create_buffer_from_native(h.ctx, unused_native(), false)),
        both!("create_context_from_native", [Device], |a, h, m| a
            .create_context_from_native(&[h.dev], unused_native(), false)),
        both!("create_queue_from_native", [Context, Device], |a, h, m| a
            .create_queue_from_native(h.ctx, h.dev, unused_native(), false)),
        both!("enqueue_read", [Queue, Buffer, Event], |a, h, m| a.enqueue_read(
            h.q,
            h.buf,
            0,
            m.host(64),
            &[h.ev]
        )),
        rt_only!("read", [Queue, Buffer], |rt, h, m| rt.read(
            h.q,
            h.buf,
            0,
            &mut [0u8; 64]
        )),
        both!("enqueue_write", [Queue, Buffer, Event], |a, h, m| a.enqueue_write(
            h.q,
            h.buf,
            0,
            m.host(64),
            &[h.ev]
        )),
        rt_only!("write", [Queue, Buffer], |rt, h, m| rt.write(h.q, h.buf, 0, &[1u8; 64])),
        both!("enqueue_copy", [Queue, Buffer, Buffer2, Event], |a, h, m| a
            .enqueue_copy(h.q, h.buf, 0, h.buf2, 0, 64, &[h.ev])),
        both!("enqueue_copy_rect", [Queue, Buffer, Buffer2, Event], |a, h, m| a
            .enqueue_copy_rect(h.q, h.buf, h.buf2, &rect(), &[h.ev])),
        both!("enqueue_read_rect", [Queue, Buffer, Event], |a, h, m| a
            .enqueue_read_rect(h.q, h.buf, &rect(), m.host(128), &[h.ev])),
        rt_only!("read_rect", [Queue, Buffer], |rt, h, m| rt.read_rect(
            h.q,
            h.buf,
            &rect(),
            &mut [0u8; 128]
        )),
        both!("enqueue_write_rect", [Queue, Buffer, Event], |a, h, m| a
            .enqueue_write_rect(h.q, h.buf, &rect(), m.host(128), &[h.ev])),
        rt_only!("write_rect", [Queue, Buffer], |rt, h, m| rt.write_rect(
            h.q,
            h.buf,
            &rect(),
            &[2u8; 128]
        )),
        both!("enqueue_fill", [Queue, Buffer, Event], |a, h, m| a.enqueue_fill(
            h.q,
            h.buf,
            0,
            64,
            &[1, 2, 3, 4],
            &[h.ev]
        )),
        both!("enqueue_map", [Queue, Buffer, Event], |a, h, m| a.enqueue_map(
            h.q,
            h.buf,
            MapFlags::READ,
            0,
            64,
            &[h.ev]
        )),
        both!("enqueue_unmap", [Queue, Buffer, Event], |a, h, m| a.enqueue_unmap(
            h.q,
            h.buf,
            m.host(64),
            &[h.ev]
        )),
        both!("enqueue_usm_copy", [Queue, Usm, Usm2, Event], |a, h, m| a
            .enqueue_usm_copy(
                h.q,
                MemRef::Usm(h.usm2),
                MemRef::Usm(h.usm),
                64,
                &[h.ev]
            )),
        rt_only!("usm_write", [Queue, Usm], |rt, h, m| rt
            .usm_write(h.q, h.usm, &[3u8; 64])),
        rt_only!("usm_read", [Queue, Usm], |rt, h, m| rt.usm_read(
            h.q,
            h.usm,
            &mut [0u8; 64]
        )),
        both!("enqueue_usm_fill", [Queue, Usm, Event], |a, h, m| a.enqueue_usm_fill(
            h.q,
            h.usm,
            64,
            &[0, 1, 2, 3],
            &[h.ev]
        )),
        both!("enqueue_usm_prefetch", [Queue, Usm, Event], |a, h, m| a
            .enqueue_usm_prefetch(h.q, h.usm, 64, &[h.ev])),
        both!("usm_advise", [Queue, Usm], |a, h, m| a.usm_advise(
            h.q,
            h.usm,
            64,
            UsmAdvice::READ_MOSTLY
        )),
        both!("enqueue_launch", [Queue, Kernel, Buffer, Event], |a, h, m| a
            .enqueue_launch(
                h.q,
                h.kern,
                &NdRange::d1(4),
                &[ArgValue::Buffer(h.buf)],
                &[h.ev]
            )),
        both!("enqueue_launch", [Queue, Kernel, Usm, Event], |a, h, m| a
            .enqueue_launch(
                h.q,
                h.kern,
                &NdRange::d1(4),
                &[ArgValue::Usm(h.usm)],
                &[h.ev]
            )),
        both!("enqueue_barrier", [Queue, Event], |a, h, m| a
            .enqueue_barrier(h.q, &[h.ev])),
    ]
}

/// Entry points that only route: they name the adapter that issued a
/// handle (released or not, of any adapter of the runtime), so only a
/// handle of another runtime is an error for them.
const ROUTING_ONLY: [&str; 2] = ["adapter_of", "backend_of"];

/// A bad location (context and device of different adapters, or one of
/// them bad) may be named by either part.
const LOCATION: [HandleKind; 2] = [HandleKind::Context, HandleKind::Device];

/// Entry points that take no handle, with the reason they are not swept.
const NO_HANDLES: [(&str, &str); 16] = [
    ("new", "constructor"),
    ("pointer_info", "looks a raw address up; takes no handle"),
    ("pointer_map", "returns the pointer map"),
    ("record", "private bookkeeping of the pointer map"),
    ("with_selector", "constructor"),
    ("selector", "returns the selector"),
    ("add", "adds an adapter"),
    ("add_dyn", "adds an adapter"),
    ("adapters", "lists the adapters"),
    ("platforms", "lists every platform, takes no handle"),
    ("all_devices", "lists every device, takes no handle"),
    ("selected", "private helper of `platforms`/`devices`"),
    (
        "adapter_of_context_devices",
        "private helper of `create_context`/`create_context_from_native`, swept through them",
    ),
    (
        "complete_on",
        "private helper of `read`/`write`/..., after their enqueue checked the handles",
    ),
    ("adapter_id", "the adapter's own id, takes no handle"),
    ("backend", "the adapter's backend, takes no handle"),
];

fn source(rel: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_entry_point_is_swept() {
    // The trait's methods, and those `Runtime` offers too, from the list.
    let dyn_methods: Vec<String> = ENTRY_POINTS.iter().map(|e| e.name.to_owned()).collect();
    let mut rt_methods: Vec<String> = ENTRY_POINTS
        .iter()
        .filter(|e| e.on_runtime != OnRuntime::DynOnly)
        .map(|e| e.name.to_owned())
        .collect();
    // `Runtime`'s hand-written methods live in runtime.rs and, for pointers
    // and host locks, in runtime/pointers.rs.
    let mut written = methods_of(&source("ur-api/src/runtime.rs"), "impl Runtime");
    written.extend(methods_of(&source("ur-api/src/runtime/pointers.rs"), "impl Runtime"));
    // The parse must still see the entries the list says are hand-written.
    let unseen: Vec<&str> = ENTRY_POINTS
        .iter()
        .filter(|e| e.on_runtime == OnRuntime::HandWritten && !written.iter().any(|m| m == e.name))
        .map(|e| e.name)
        .collect();
    assert!(
        unseen.is_empty(),
        "hand-written Runtime entry points not found in the parsed `impl Runtime` blocks: {unseen:?}"
    );
    for m in written {
        if !rt_methods.contains(&m) {
            rt_methods.push(m);
        }
    }
    assert!(
        dyn_methods.len() >= 45,
        "too few DynAdapter entry points: {dyn_methods:?}"
    );
    assert!(rt_methods.len() >= 45, "too few Runtime methods: {rt_methods:?}");
    let rows = rows();
    let swept: BTreeSet<&str> = rows.iter().map(|r| r.name).collect();
    let through_dyn: BTreeSet<&str> = rows.iter().filter(|r| r.dy.is_some()).map(|r| r.name).collect();
    let exempt: BTreeSet<&str> = NO_HANDLES.iter().map(|(n, _)| *n).collect();
    let mut missing = Vec::new();
    for m in &rt_methods {
        if !swept.contains(m.as_str()) && !exempt.contains(m.as_str()) {
            missing.push(format!("Runtime::{m}"));
        }
    }
    for m in &dyn_methods {
        if !through_dyn.contains(m.as_str()) && !exempt.contains(m.as_str()) {
            missing.push(format!("DynAdapter::{m}"));
        }
    }
    assert!(
        missing.is_empty(),
        "entry points the stale/foreign handle sweep does not cover (add a row to rows() in {}): {missing:?}",
        file!()
    );
    // And no row names an entry point that no longer exists.
    for name in &swept {
        assert!(
            rt_methods.iter().any(|m| m == name),
            "row `{name}` names no Runtime method"
        );
    }
    eprintln!(
        "sweep covers {} Runtime entry points ({} also through DynAdapter); {} exempt",
        swept.len(),
        through_dyn.len(),
        NO_HANDLES.len()
    );
}

/// The handle kinds an argument of this type (as [`ENTRY_POINTS`] writes
/// it) carries, for [`every_handle_argument_is_swept`]. `NativeOf` names
/// one object of any kind: its row sweeps one kind, enough for the routing.
fn kinds_of(ty: &str) -> Vec<HandleKind> {
    let table = [
        ("PlatformId", HandleKind::Platform),
        ("DeviceId", HandleKind::Device),
        ("ContextId", HandleKind::Context),
        ("BufferId", HandleKind::Buffer),
        ("QueueId", HandleKind::Queue),
        ("EventId", HandleKind::Event),
        ("ProgramId", HandleKind::Program),
        ("KernelId", HandleKind::Kernel),
        ("UsmPtr", HandleKind::UsmPointer),
        ("MemRef", HandleKind::UsmPointer),
        ("Location", HandleKind::Context),
        ("Location", HandleKind::Device),
        ("ArgValue", HandleKind::Buffer),
        ("ArgValue", HandleKind::UsmPointer),
    ];
    table.iter().filter(|(t, _)| ty.contains(t)).map(|(_, k)| *k).collect()
}

/// Every handle argument of every entry point is swept: the rows of an
/// entry point, together, take a bad handle of each kind its arguments
/// carry (a new handle argument fails here until a row substitutes it),
/// and each row starts with the slot `Runtime` routes by.
#[test]
fn every_handle_argument_is_swept() {
    let rows = rows();
    let mut gaps = Vec::new();
    for e in ENTRY_POINTS {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.name == e.name && r.dy.is_some()).collect();
        if mine.is_empty() {
            continue; // exempt, or reported by `every_entry_point_is_swept`
        }
        let swept: Vec<HandleKind> = mine.iter().flat_map(|r| r.slots.iter().map(|s| s.kind())).collect();
        for (arg, ty) in e.args {
            for kind in kinds_of(ty) {
                if !swept.contains(&kind) {
                    gaps.push(format!("{}({arg}: {ty}): no row substitutes a bad {kind:?}", e.name));
                }
            }
        }
        if let OnRuntime::Routed { by } = e.on_runtime {
            let (_, ty) = e.args.iter().find(|(a, _)| *a == by).expect("routed by an argument");
            let want = kinds_of(ty);
            for r in &mine {
                if !want.contains(&r.slots[0].kind()) {
                    gaps.push(format!(
                        "{}: Runtime routes by `{by}` but the row's first slot is {:?}",
                        e.name, r.slots[0]
                    ));
                }
            }
        }
    }
    assert!(
        gaps.is_empty(),
        "handle arguments the sweep misses:\n{}",
        gaps.join("\n")
    );
}

#[test]
fn stale_and_foreign_handles_are_invalid_handle_errors_everywhere() {
    let mut rt = Runtime::new();
    rt.add(NativeAdapter::new()).unwrap();
    rt.add(SimAdapter::new(Topology::single_device())).unwrap();
    let mut other = Runtime::new();
    other.add(NativeAdapter::new()).unwrap();

    let mem = Mem { bytes: vec![0u8; 4096] };
    let good = live(&rt, 0);
    let mut cleanup: Vec<Box<dyn FnOnce(&Runtime)>> = Vec::new();
    let stale_h = stale(&rt, &good, &mut cleanup);
    let foreign_h = live(&other, 0);
    let sim_h = live(&rt, 1);
    let native_dyn = Arc::clone(&rt.adapters()[0]);

    let mut failures = Vec::new();
    let mut calls = 0usize;
    for row in rows() {
        for (i, &slot) in row.slots.iter().enumerate() {
            for bad in [Bad::Stale, Bad::Foreign, Bad::OtherAdapter] {
                let substitute = match bad {
                    Bad::Stale if matches!(slot, Slot::Platform | Slot::Device | Slot::Device2) => continue,
                    Bad::Stale => &stale_h,
                    Bad::Foreign => &foreign_h,
                    Bad::OtherAdapter => &sim_h,
                };
                if ROUTING_ONLY.contains(&row.name) && bad != Bad::Foreign {
                    continue;
                }
                let h = good.with(slot, substitute);
                let want = slot.kind();
                let mut check = |via: &str, outcome: Result<Result<(), Error>, String>| {
                    calls += 1;
                    let ok = matches!(&outcome, Ok(Err(Error::InvalidHandle { kind }))
                        if *kind == want || (row.name == "memory_connection" && LOCATION.contains(kind)));
                    if !ok {
                        failures.push(format!(
                            "{via}::{} with a {bad:?} {slot:?}: want InvalidHandle({want:?}), got {outcome:?}",
                            row.name
                        ));
                    }
                };
                // Through Runtime: a lone handle of the sim adapter in the
                // routing slot is a valid call on the sim adapter.
                if !(bad == Bad::OtherAdapter && i == 0) {
                    check("Runtime", no_panic(|| (row.rt)(&rt, &h, &mem)));
                }
                if let Some(dy) = row.dy {
                    check("DynAdapter", no_panic(|| dy(native_dyn.as_ref(), &h, &mem)));
                }
            }
        }
    }
    // The good objects are intact and usable after the sweep.
    rt.write(good.q, good.buf, 0, &[9u8; SIZE]).unwrap();
    let mut back = [0u8; SIZE];
    rt.read(good.q, good.buf, 0, &mut back).unwrap();
    assert_eq!(back, [9u8; SIZE]);
    for f in cleanup {
        f(&rt);
    }
    release_all(&rt, &good);
    release_all(&rt, &sim_h);
    release_all(&other, &foreign_h);
    eprintln!("sweep: {calls} calls with bad handles, {} failures", failures.len());
    assert!(
        failures.is_empty(),
        "{} of {calls} calls:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
