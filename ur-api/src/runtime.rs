//! [`Runtime`]: every adapter of a process behind one set of handles.

use std::sync::Arc;

use crate::adapter::Adapter;
use crate::dynamic::{dyn_entry_points, AdapterHost, ArgValue, BufferInfo, DynAdapter};
use crate::error::{Error, HandleKind, Result};
use crate::handles::*;
use crate::selector::DeviceSelector;
use crate::types::*;

mod pointers;

use crate::dynamic::PointerMap;
pub use pointers::{PointerInfo, PointerKind};

/// `Runtime`'s face of the list (`dynamic/entry_points.rs`): a method
/// for each `routed(arg)` entry, calling it on the adapter that issued
/// `arg`. The other entries are written by hand ([`runtime_checks!`]) or
/// are not on `Runtime`.
macro_rules! runtime_forwarders {
    ($(
        $(#[$m:meta])*
        [$($on:tt)*] fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty $(= $body:block)?;
    )*) => {$(
        runtime_forwarder! { [$($on)*] $(#[$m])* fn $name(&$self $(, $arg: $aty)*) -> $ret }
    )*};
}

/// One entry of [`runtime_forwarders!`].
macro_rules! runtime_forwarder {
    ([routed($by:ident)] $(#[$m:meta])* fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty) => {
        $(#[$m])*
        #[doc = ""]
        #[doc = concat!(
            "Routed to the adapter that issued `", stringify!($by), "` ([`DynAdapter::", stringify!($name), "`])."
        )]
        #[inline]
        pub fn $name(&$self $(, $arg: $aty)*) -> $ret {
            $self.adapter_of($by)?.$name($($arg),*)
        }
    };
    ([$($on:tt)*] $($rest:tt)*) => {};
}

/// Checks at compile time that every `hand_written` entry of the list has
/// a `Runtime` method of the same signature.
macro_rules! runtime_checks {
    ($(
        $(#[$m:meta])*
        [$($on:tt)*] fn $name:ident(&$self:ident $(, $arg:ident: $aty:ty)*) -> $ret:ty $(= $body:block)?;
    )*) => {$(
        runtime_check! { [$($on)*] fn $name($($aty),*) -> $ret }
    )*};
}

/// One entry of [`runtime_checks!`].
macro_rules! runtime_check {
    ([hand_written] fn $name:ident($($aty:ty),*) -> $ret:ty) => {
        const _: fn(&Runtime $(, $aty)*) -> $ret = Runtime::$name;
    };
    ([$($on:tt)*] $($rest:tt)*) => {};
}

/// The adapters of a process and the devices a selector picked.
///
/// Handles of every adapter can be passed to one `Runtime`; mixing handles
/// of two adapters in one call is an [`Error::InvalidHandle`] (or, for
/// [`Runtime::memory_connection`], the answer `None`).
///
/// ```
/// # fn demo<A: ur_api::Adapter>(adapter: A) -> ur_api::Result<()> {
/// use ur_api::{BufferDesc, QueueProps, Runtime};
/// let mut rt = Runtime::new();
/// rt.add(adapter)?;
/// let dev = rt.all_devices()[0];
/// let ctx = rt.create_context(&[dev])?;
/// let q = rt.create_queue(ctx, dev, &QueueProps::default())?;
/// let buf = rt.create_buffer(ctx, &BufferDesc::new(16).on(dev), None)?;
/// rt.write(q, buf, 0, &[7u8; 16])?;
/// let mut back = [0u8; 16];
/// rt.read(q, buf, 0, &mut back)?;
/// assert_eq!(back, [7u8; 16]);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Runtime {
    adapters: Vec<Arc<dyn DynAdapter>>,
    /// `adapters[i].adapter_id()`, so routing a handle makes no dyn call.
    ids: Vec<u32>,
    selector: DeviceSelector,
    /// USM allocations and host locks made through this runtime.
    pointers: PointerMap<PointerInfo>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field(
                "adapters",
                &self.adapters.iter().map(|a| a.backend()).collect::<Vec<_>>(),
            )
            .field("selector", &self.selector.to_string())
            .finish()
    }
}

impl Runtime {
    /// An empty runtime selecting every device.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty runtime that will only show devices `selector` picks.
    pub fn with_selector(selector: DeviceSelector) -> Self {
        Runtime {
            adapters: Vec::new(),
            ids: Vec::new(),
            selector,
            pointers: PointerMap::new(),
        }
    }

    /// The selector in force.
    pub fn selector(&self) -> &DeviceSelector {
        &self.selector
    }

    /// Adds an adapter through the dyn layer.
    pub fn add<A: Adapter>(&mut self, adapter: A) -> Result<()> {
        self.add_dyn(Arc::new(AdapterHost::new(adapter)?));
        Ok(())
    }

    /// Adds an already wrapped adapter.
    pub fn add_dyn(&mut self, adapter: Arc<dyn DynAdapter>) {
        self.ids.push(adapter.adapter_id());
        self.adapters.push(adapter);
    }

    /// The adapters, in the order added.
    pub fn adapters(&self) -> &[Arc<dyn DynAdapter>] {
        &self.adapters
    }

    /// The adapter owning a handle.
    #[inline]
    pub fn adapter_of<H: Handle>(&self, handle: H) -> Result<&Arc<dyn DynAdapter>> {
        let id = handle.adapter_id();
        match self.ids.iter().position(|&a| a == id) {
            Some(i) => Ok(&self.adapters[i]),
            None => Err(Error::InvalidHandle { kind: H::KIND }),
        }
    }

    /// The backend's own handle of an object (interoperation; adapters that
    /// hand none out answer [`Error::Unsupported`]).
    pub fn native_handle(&self, of: NativeOf) -> Result<NativeHandle> {
        let adapter = match of {
            NativeOf::Platform(h) => self.adapter_of(h)?,
            NativeOf::Device(h) => self.adapter_of(h)?,
            NativeOf::Context(h) => self.adapter_of(h)?,
            NativeOf::Queue(h) => self.adapter_of(h)?,
            NativeOf::Buffer(h) => self.adapter_of(h)?,
            NativeOf::Program(h) => self.adapter_of(h)?,
            NativeOf::Kernel(h) => self.adapter_of(h)?,
            NativeOf::Event(h) | NativeOf::EventQueue(h) => self.adapter_of(h)?,
        };
        adapter.native_handle(of)
    }

    /// The backend of the adapter owning a handle.
    pub fn backend_of<H: Handle>(&self, handle: H) -> Result<Backend> {
        Ok(self.adapter_of(handle)?.backend())
    }

    fn selected(&self, adapter: &dyn DynAdapter) -> Vec<(PlatformId, Vec<DeviceId>)> {
        let backend = adapter.backend();
        let mut index = 0;
        let mut out = Vec::new();
        for p in adapter.platforms() {
            let mut devs = Vec::new();
            for d in adapter.devices(p).unwrap_or_default() {
                let ty = adapter
                    .device_info(d)
                    .map(|i| i.device_type)
                    .unwrap_or(DeviceType::Custom);
                if self.selector.selects(backend, index, ty) {
                    devs.push(d);
                }
                index += 1;
            }
            if !devs.is_empty() {
                out.push((p, devs));
            }
        }
        out
    }

    /// Platforms with at least one selected device, over all adapters.
    pub fn platforms(&self) -> Vec<PlatformId> {
        self.adapters
            .iter()
            .flat_map(|a| self.selected(a.as_ref()))
            .map(|(p, _)| p)
            .collect()
    }

    /// The selected devices of a platform.
    pub fn devices(&self, platform: PlatformId) -> Result<Vec<DeviceId>> {
        let a = self.adapter_of(platform)?;
        a.platform_info(platform)?;
        Ok(self
            .selected(a.as_ref())
            .into_iter()
            .find(|(p, _)| *p == platform)
            .map(|(_, d)| d)
            .unwrap_or_default())
    }

    /// Every selected device of every adapter, in order.
    pub fn all_devices(&self) -> Vec<DeviceId> {
        self.adapters
            .iter()
            .flat_map(|a| self.selected(a.as_ref()))
            .flat_map(|(_, d)| d)
            .collect()
    }

    /// Creates a context over devices of one platform.
    pub fn create_context(&self, devices: &[DeviceId]) -> Result<ContextId> {
        self.adapter_of_context_devices(devices)?.create_context(devices)
    }

    /// The adapter a context over `devices` is made by: its first device's.
    fn adapter_of_context_devices(&self, devices: &[DeviceId]) -> Result<&Arc<dyn DynAdapter>> {
        let first = devices
            .first()
            .ok_or_else(|| Error::invalid("a context needs at least one device"))?;
        self.adapter_of(*first)
    }

    /// A context over a context got from the backend itself (an OpenCL
    /// `cl_context`) and `devices` of it, which must all be the backend
    /// context's; a reference of its own is taken unless `owned`.
    pub fn create_context_from_native(
        &self,
        devices: &[DeviceId],
        handle: NativeHandle,
        owned: bool,
    ) -> Result<ContextId> {
        self.adapter_of_context_devices(devices)?
            .create_context_from_native(devices, handle, owned)
    }

    /// The connection between two locations; `None` across adapters.
    pub fn memory_connection(&self, src: Location, dst: Location) -> Result<MemoryConnection> {
        let a = self.adapter_of(src)?;
        let b = self.adapter_of(dst)?;
        if a.adapter_id() != b.adapter_id() {
            // Both must still be valid locations of their adapters.
            a.memory_connection(src, src)?;
            b.memory_connection(dst, dst)?;
            return Ok(MemoryConnection::None);
        }
        a.memory_connection(src, dst)
    }

    /// Waits for events, of any adapters. As [`Commands::wait`](crate::adapter::Commands::wait)
    /// promises, it returns only when every event is complete (or failed,
    /// or its device lost), reporting the first failure: a failure of one
    /// adapter's events does not cut the wait for another's short.
    pub fn wait(&self, events: &[EventId]) -> Result<()> {
        let Some(first) = events.first() else {
            return Ok(());
        };
        // All of one adapter (the usual case): one pass, no per-adapter copy.
        if events.iter().all(|e| e.adapter_id() == first.adapter_id()) {
            return self.adapter_of(*first)?.wait(events);
        }
        if events.iter().any(|e| self.adapter_of(*e).is_err()) {
            return Err(Error::InvalidHandle {
                kind: HandleKind::Event,
            });
        }
        let mut result = Ok(());
        for a in &self.adapters {
            let mine: Vec<EventId> = events
                .iter()
                .copied()
                .filter(|e| e.adapter_id() == a.adapter_id())
                .collect();
            if !mine.is_empty() {
                let r = a.wait(&mine);
                if result.is_ok() {
                    result = r;
                }
            }
        }
        result
    }

    dyn_entry_points!(runtime_forwarders);

    /// Waits for `event` and releases it. Trusts the wait's contract
    /// ([`Commands::wait`](crate::adapter::Commands::wait)): an error means the
    /// command failed or its device was lost. (The blocking helpers,
    /// [`Runtime::read`] and the others, which know the command's queue,
    /// also finish it after a failed wait.)
    pub fn complete(&self, event: EventId) -> Result<()> {
        let waited = self.wait(&[event]);
        self.release_event(event)?;
        waited
    }

    /// Waits for `event`, a command of `queue` just enqueued by one of the
    /// blocking helpers below, and releases it. When the wait fails,
    /// `queue` is finished before the wait's error is returned, so that the
    /// command no longer runs when this returns even if the adapter's wait
    /// broke its contract and gave up early: the helpers lend caller memory
    /// to the command on that basis. (A finish that fails too means the
    /// device is lost; its error is logged.)
    fn complete_on(&self, queue: QueueId, event: EventId) -> Result<()> {
        let waited = self.wait(&[event]);
        if let Err(e) = &waited {
            tracing::debug!(error = %e, "wait failed: finishing the queue before returning");
            if let Err(f) = self.finish(queue) {
                tracing::warn!(wait = %e, finish = %f, "finishing the queue after a failed wait failed too");
            }
        }
        self.release_event(event)?;
        waited
    }

    /// Creates a buffer initialised from `data` (`COPY_HOST_PTR`).
    pub fn create_buffer_with_data(
        &self,
        context: ContextId,
        desc: &BufferDesc<DeviceId>,
        data: &[u8],
    ) -> Result<BufferId> {
        let desc = desc.with_flags(desc.flags | MemFlags::COPY_HOST_PTR);
        // SAFETY: COPY_HOST_PTR only reads `data` during the call.
        let init = unsafe { HostPtr::new(data.as_ptr().cast_mut(), data.len()) };
        self.create_buffer(context, &desc, Some(init))
    }

    /// Writes `src` at `offset` of `buffer` and waits.
    pub fn write(&self, queue: QueueId, buffer: BufferId, offset: usize, src: &[u8]) -> Result<()> {
        // SAFETY: the borrow outlives the call, which returns only once the
        // command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(src.as_ptr().cast_mut(), src.len()) };
        self.complete_on(queue, self.enqueue_write(queue, buffer, offset, p, &[])?)
    }

    /// Reads into `dst` from `offset` of `buffer` and waits.
    pub fn read(&self, queue: QueueId, buffer: BufferId, offset: usize, dst: &mut [u8]) -> Result<()> {
        // SAFETY: the exclusive borrow outlives the call, which returns only once
        // the command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(dst.as_mut_ptr(), dst.len()) };
        self.complete_on(queue, self.enqueue_read(queue, buffer, offset, p, &[])?)
    }

    /// Reads a box into `dst` (laid out as `rect.dst`) and waits.
    pub fn read_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, dst: &mut [u8]) -> Result<()> {
        // SAFETY: the exclusive borrow outlives the call, which returns only once
        // the command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(dst.as_mut_ptr(), dst.len()) };
        self.complete_on(queue, self.enqueue_read_rect(queue, buffer, rect, p, &[])?)
    }

    /// Writes a box from `src` (laid out as `rect.src`) and waits.
    pub fn write_rect(&self, queue: QueueId, buffer: BufferId, rect: &RectCopy, src: &[u8]) -> Result<()> {
        // SAFETY: the borrow outlives the call, which returns only once the
        // command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(src.as_ptr().cast_mut(), src.len()) };
        self.complete_on(queue, self.enqueue_write_rect(queue, buffer, rect, p, &[])?)
    }

    /// Copies `src` into USM memory at `dst` and waits.
    pub fn usm_write(&self, queue: QueueId, dst: UsmPtr, src: &[u8]) -> Result<()> {
        // SAFETY: the borrow outlives the call, which returns only once the
        // command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(src.as_ptr().cast_mut(), src.len()) };
        self.complete_on(
            queue,
            self.enqueue_usm_copy(queue, MemRef::Usm(dst), MemRef::Host(p), src.len(), &[])?,
        )
    }

    /// Copies USM memory at `src` into `dst` and waits.
    pub fn usm_read(&self, queue: QueueId, src: UsmPtr, dst: &mut [u8]) -> Result<()> {
        // SAFETY: the exclusive borrow outlives the call, which returns only once
        // the command has ended (`complete_on`: the wait, or a finish after a failed one).
        let p = unsafe { HostPtr::new(dst.as_mut_ptr(), dst.len()) };
        self.complete_on(
            queue,
            self.enqueue_usm_copy(queue, MemRef::Host(p), MemRef::Usm(src), dst.len(), &[])?,
        )
    }
}

dyn_entry_points!(runtime_checks);
