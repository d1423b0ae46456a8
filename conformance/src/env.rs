//! The per-device environment a test body gets: the runtime, the device
//! under test, helpers to create objects, and cleanup of what was created.

use std::cell::RefCell;
use std::sync::Arc;

use ur_api::{
    Backend, BufferDesc, BufferId, ContextId, DeviceCaps, DeviceId, DeviceInfo, DynAdapter, EventId, KernelId,
    ProgramFormats, ProgramId, QueueId, QueueProps, Runtime, UsmCaps, UsmDesc, UsmKind, UsmPtr,
};

use crate::{kernels, skip, TestResult};

/// The same device seen through a second, independent adapter instance
/// (for tests that mix handles of two adapters).
#[derive(Clone)]
pub struct ForeignDevice {
    /// The second adapter instance.
    pub adapter: Arc<dyn DynAdapter>,
    /// The device in that instance.
    pub device: DeviceId,
}

impl std::fmt::Debug for ForeignDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForeignDevice")
            .field("adapter", &self.adapter.adapter_id())
            .field("device", &self.device)
            .finish()
    }
}

/// One selected device: what tests run on.
#[derive(Debug, Clone)]
pub struct DeviceTarget {
    /// Its backend.
    pub backend: Backend,
    /// Its handle in the runtime.
    pub device: DeviceId,
    /// Its description.
    pub info: DeviceInfo,
    /// Index among all devices of its backend (as selectors count).
    pub index: usize,
    /// The same device in a second adapter instance, when one could be made.
    pub foreign: Option<ForeignDevice>,
}

impl DeviceTarget {
    /// `backend/device-name#N`.
    pub fn label(&self) -> String {
        format!("{}/{}#{}", self.backend, self.info.name, self.index)
    }

    /// Every selected device of `rt`, each with its per-backend index; when
    /// `second` (another runtime over the same adapters) is given, each target
    /// also names its twin there.
    pub fn discover(rt: &Runtime, second: Option<&Runtime>) -> Vec<DeviceTarget> {
        let selected = rt.all_devices();
        let mut out = Vec::new();
        for (ai, adapter) in rt.adapters().iter().enumerate() {
            let backend = adapter.backend();
            let twin = second.and_then(|s| {
                s.adapters()
                    .iter()
                    .filter(|a| a.backend() == backend)
                    .nth(rt.adapters()[..ai].iter().filter(|a| a.backend() == backend).count())
                    .cloned()
            });
            let twin_devices: Vec<DeviceId> = twin.as_ref().map(|t| all_devices_of(t.as_ref())).unwrap_or_default();
            for (index, device) in all_devices_of(adapter.as_ref()).into_iter().enumerate() {
                if !selected.contains(&device) {
                    continue;
                }
                let Ok(info) = adapter.device_info(device) else {
                    tracing::warn!(%device, "device without info skipped");
                    continue;
                };
                let foreign = match (&twin, twin_devices.get(index)) {
                    (Some(a), Some(&d)) => Some(ForeignDevice {
                        adapter: a.clone(),
                        device: d,
                    }),
                    _ => None,
                };
                out.push(DeviceTarget {
                    backend,
                    device,
                    info,
                    index,
                    foreign,
                });
            }
        }
        out
    }
}

/// Every device of an adapter, over its platforms in order.
pub fn all_devices_of(adapter: &dyn DynAdapter) -> Vec<DeviceId> {
    adapter
        .platforms()
        .into_iter()
        .flat_map(|p| adapter.devices(p).unwrap_or_default())
        .collect()
}

#[derive(Debug, Clone, Copy)]
enum Owned {
    Context(ContextId),
    Buffer(BufferId),
    Queue(QueueId),
    Event(EventId),
    Program(ProgramId),
    Kernel(KernelId),
    Usm(ContextId, UsmPtr),
}

/// What a test body works with. Objects made through its helpers are
/// released when the environment is dropped, newest first; objects a test
/// released itself are skipped silently.
#[derive(Debug)]
pub struct DeviceEnv<'a> {
    /// The runtime (every selected adapter).
    pub rt: &'a Runtime,
    /// The device under test.
    pub target: &'a DeviceTarget,
    owned: RefCell<Vec<Owned>>,
}

impl<'a> DeviceEnv<'a> {
    /// An environment for one test on one device.
    pub fn new(rt: &'a Runtime, target: &'a DeviceTarget) -> Self {
        DeviceEnv {
            rt,
            target,
            owned: RefCell::new(Vec::new()),
        }
    }

    /// The device under test.
    pub fn device(&self) -> DeviceId {
        self.target.device
    }

    /// Its description.
    pub fn info(&self) -> &DeviceInfo {
        &self.target.info
    }

    /// The adapter serving the device.
    pub fn adapter(&self) -> Result<&Arc<dyn DynAdapter>, ur_api::Error> {
        self.rt.adapter_of(self.device())
    }

    /// Skips unless the device has every capability in `caps`.
    pub fn require_caps(&self, caps: DeviceCaps) -> TestResult {
        if self.info().caps.contains(caps) {
            Ok(())
        } else {
            Err(skip(format!("device lacks {:?}", caps.difference(self.info().caps))))
        }
    }

    /// Skips unless the device supports USM allocations of `kind`.
    pub fn require_usm(&self, kind: UsmKind) -> TestResult {
        if self.info().usm.contains(usm_cap(kind)) {
            Ok(())
        } else {
            Err(skip(format!("device has no {kind:?} USM")))
        }
    }

    /// Skips unless kernels can be launched from the kernel library.
    pub fn require_kernels(&self) -> TestResult {
        self.require_caps(DeviceCaps::KERNELS)?;
        if kernels::source_for(self.info().program_formats).is_none() {
            return Err(skip(format!(
                "no kernel library source for program formats {:?}",
                self.info().program_formats
            )));
        }
        Ok(())
    }

    /// Another device of the same adapter and platform, or a skip.
    pub fn peer_device(&self) -> Result<DeviceId, crate::TestError> {
        let platform = self.rt.device_platform(self.device())?;
        let adapter = self.adapter()?;
        adapter
            .devices(platform)?
            .into_iter()
            .find(|&d| d != self.device())
            .ok_or_else(|| skip("the platform has only one device"))
    }

    /// Another device of the same adapter (any platform), or a skip: a
    /// device the adapter knows that a context over this device lacks.
    pub fn other_device(&self) -> Result<DeviceId, crate::TestError> {
        all_devices_of(self.adapter()?.as_ref())
            .into_iter()
            .find(|&d| d != self.device())
            .ok_or_else(|| skip("the adapter has only one device"))
    }

    /// The device's twin in a second adapter instance, or a skip.
    pub fn foreign(&self) -> Result<&ForeignDevice, crate::TestError> {
        self.target
            .foreign
            .as_ref()
            .ok_or_else(|| skip("no second adapter instance for this backend"))
    }

    /// A runtime holding this device's adapter and its foreign twin, so
    /// handles of both can be passed to one `Runtime`.
    pub fn mixed_runtime(&self) -> Result<(Runtime, &ForeignDevice), crate::TestError> {
        let foreign = self.foreign()?;
        let mut rt = Runtime::new();
        rt.add_dyn(self.adapter()?.clone());
        rt.add_dyn(foreign.adapter.clone());
        Ok((rt, foreign))
    }

    fn own(&self, o: Owned) {
        self.owned.borrow_mut().push(o);
    }

    /// A context over the device under test.
    pub fn context(&self) -> ur_api::Result<ContextId> {
        let c = self.rt.create_context(&[self.device()])?;
        self.own(Owned::Context(c));
        Ok(c)
    }

    /// A queue on the device under test.
    pub fn queue(&self, ctx: ContextId) -> ur_api::Result<QueueId> {
        self.queue_with(ctx, &QueueProps::default())
    }

    /// A queue with properties.
    pub fn queue_with(&self, ctx: ContextId, props: &QueueProps) -> ur_api::Result<QueueId> {
        let q = self.rt.create_queue(ctx, self.device(), props)?;
        self.own(Owned::Queue(q));
        Ok(q)
    }

    /// A context and a queue on the device under test.
    pub fn setup(&self) -> ur_api::Result<(ContextId, QueueId)> {
        let c = self.context()?;
        Ok((c, self.queue(c)?))
    }

    /// A read-write buffer placed for the device under test.
    pub fn buffer(&self, ctx: ContextId, size: usize) -> ur_api::Result<BufferId> {
        self.buffer_desc(ctx, &BufferDesc::new(size).on(self.device()))
    }

    /// A buffer from a description (no initial data).
    pub fn buffer_desc(&self, ctx: ContextId, desc: &BufferDesc<DeviceId>) -> ur_api::Result<BufferId> {
        let b = self.rt.create_buffer(ctx, desc, None)?;
        self.own(Owned::Buffer(b));
        Ok(b)
    }

    /// A buffer initialised from `data`.
    pub fn buffer_with(&self, ctx: ContextId, data: &[u8]) -> ur_api::Result<BufferId> {
        let b = self
            .rt
            .create_buffer_with_data(ctx, &BufferDesc::new(data.len()).on(self.device()), data)?;
        self.own(Owned::Buffer(b));
        Ok(b)
    }

    /// A sub-buffer.
    pub fn sub_buffer(&self, parent: BufferId, offset: usize, size: usize) -> ur_api::Result<BufferId> {
        let b = self.rt.create_sub_buffer(parent, offset, size)?;
        self.own(Owned::Buffer(b));
        Ok(b)
    }

    /// A USM allocation of `kind` (for the device under test unless host).
    pub fn usm(&self, ctx: ContextId, kind: UsmKind, size: usize) -> ur_api::Result<UsmPtr> {
        let mut desc = UsmDesc::new(kind, size);
        if kind != UsmKind::Host {
            desc = desc.on(self.device());
        }
        self.usm_desc(ctx, &desc)
    }

    /// A USM allocation from a description.
    pub fn usm_desc(&self, ctx: ContextId, desc: &UsmDesc<DeviceId>) -> ur_api::Result<UsmPtr> {
        let p = self.rt.usm_alloc(ctx, desc)?;
        self.own(Owned::Usm(ctx, p));
        Ok(p)
    }

    /// Records an event for release at the end of the test.
    pub fn track(&self, event: EventId) -> EventId {
        self.own(Owned::Event(event));
        event
    }

    /// A program built from the kernel library in the device's format.
    pub fn program(&self, ctx: ContextId) -> Result<ProgramId, crate::TestError> {
        let source = kernels::source_for(self.info().program_formats).ok_or_else(|| {
            skip(format!(
                "no kernel library source for program formats {:?}",
                self.info().program_formats
            ))
        })?;
        let p = self.rt.create_program(ctx, &source, "")?;
        self.own(Owned::Program(p));
        Ok(p)
    }

    /// A kernel of the library, built for `ctx`.
    pub fn kernel(&self, ctx: ContextId, name: &str) -> Result<KernelId, crate::TestError> {
        self.require_kernels()?;
        let p = self.program(ctx)?;
        let k = self.rt.create_kernel(p, name)?;
        self.own(Owned::Kernel(k));
        Ok(k)
    }

    /// Creates a kernel of an existing program and records it.
    pub fn kernel_of(&self, program: ProgramId, name: &str) -> ur_api::Result<KernelId> {
        let k = self.rt.create_kernel(program, name)?;
        self.own(Owned::Kernel(k));
        Ok(k)
    }

    /// Reads `len` bytes from the start of a buffer.
    pub fn read_all(&self, q: QueueId, buf: BufferId, len: usize) -> ur_api::Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.rt.read(q, buf, 0, &mut out)?;
        Ok(out)
    }

    /// Reads `len` bytes of USM memory.
    pub fn usm_read_all(&self, q: QueueId, ptr: UsmPtr, len: usize) -> ur_api::Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.rt.usm_read(q, ptr, &mut out)?;
        Ok(out)
    }

    /// Releases everything recorded, newest first.
    pub fn cleanup(&self) {
        let owned: Vec<Owned> = self.owned.borrow_mut().drain(..).collect();
        for o in owned.into_iter().rev() {
            let r = match o {
                Owned::Context(c) => self.rt.release_context(c),
                Owned::Buffer(b) => self.rt.release_buffer(b),
                Owned::Queue(q) => {
                    let _ = self.rt.finish(q);
                    self.rt.release_queue(q)
                }
                Owned::Event(e) => self.rt.release_event(e),
                Owned::Program(p) => self.rt.release_program(p),
                Owned::Kernel(k) => self.rt.release_kernel(k),
                Owned::Usm(c, p) => self.rt.usm_free(c, p),
            };
            match r {
                Ok(()) | Err(ur_api::Error::InvalidHandle { .. }) => {}
                Err(e) => tracing::debug!(object = ?o, error = %e, "cleanup failed"),
            }
        }
    }
}

impl Drop for DeviceEnv<'_> {
    fn drop(&mut self) {
        self.cleanup();
    }
}

/// The capability flag a USM kind needs.
pub fn usm_cap(kind: UsmKind) -> UsmCaps {
    match kind {
        UsmKind::Host => UsmCaps::HOST,
        UsmKind::Device => UsmCaps::DEVICE,
        UsmKind::Shared => UsmCaps::SHARED,
    }
}

/// A program format the device does not accept, if any.
pub fn unsupported_format(formats: ProgramFormats) -> Option<ProgramFormats> {
    [
        ProgramFormats::PTX,
        ProgramFormats::SPIRV,
        ProgramFormats::CUDA_C,
        ProgramFormats::OPENCL_C,
        ProgramFormats::HOST,
    ]
    .into_iter()
    .find(|f| !formats.contains(*f))
}
