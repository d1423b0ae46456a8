//! The process-wide runtime behind the adapter handle: every project
//! adapter present (`ur_adapters::discover`), its platforms and root devices
//! registered once as permanent handles.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;
use ur_api::{DeviceId, DeviceInfo, Partition, PlatformId, Runtime};

use crate::conv::CapiError;
use crate::handles::register;
use crate::objects::Object;
use crate::sys::*;

/// One platform and its devices' handles (stored as addresses).
#[derive(Debug)]
pub struct Platform {
    /// The handle.
    pub handle: usize,
    /// The runtime's platform.
    pub id: PlatformId,
    /// Its root devices: handle and id.
    pub devices: Vec<(usize, DeviceId)>,
    /// The `ur_backend_t` it reports ([`crate::conv::ur_backend`]).
    pub backend: ur_backend_t,
    /// For the one platform over every runtime ([`ONE_PLATFORM_ENV`]):
    /// the runtime platforms it holds (`id` is the first). Empty for a
    /// runtime's own platform.
    pub members: Vec<PlatformId>,
}

impl Platform {
    /// Does this platform list the runtime platform `id`'s devices?
    pub fn holds(&self, id: PlatformId) -> bool {
        self.id == id || self.members.contains(&id)
    }

    /// Is this the one platform over every runtime?
    pub fn is_union(&self) -> bool {
        !self.members.is_empty()
    }
}

/// What the C API answers about one device, fixed when its handle is
/// made: device queries and `urDeviceSelectBinary` (tens of thousands of
/// calls per SYCL device selection) read it without asking the runtime.
#[derive(Debug)]
pub struct Device {
    /// The handle.
    pub handle: usize,
    /// The runtime's device.
    pub id: DeviceId,
    /// Its platform's handle.
    pub platform: usize,
    /// The `ur_backend_t` of its platform.
    pub backend: ur_backend_t,
    /// The runtime's description.
    pub info: DeviceInfo,
    /// The device-image targets it runs ([`crate::conv::binary_targets`]).
    pub targets: &'static [&'static [u8]],
    /// For a sub-device: its parent's handle and the partition that made it.
    pub parent: Option<(usize, Partition)>,
}

impl Device {
    /// The record of a device of `rt` on the platform `platform`.
    pub fn new(
        rt: &Runtime,
        handle: usize,
        id: DeviceId,
        platform: &Platform,
        parent: Option<(usize, Partition)>,
    ) -> Result<Self, CapiError> {
        let info = rt.device_info(id)?;
        Ok(Device {
            handle,
            id,
            platform: platform.handle,
            backend: platform.backend,
            targets: crate::conv::binary_targets(platform.backend, info.program_formats),
            info,
            parent,
        })
    }

    /// Is this a root device (not made by partitioning)?
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }
}

/// Set to `1` to list the project's host-only platforms (native, sim)
/// beside the others; they are listed by default only when no other
/// platform is present.
pub const HOST_PLATFORMS_ENV: &str = "UR_RUST_HOST_PLATFORMS";

/// Set to `1` to list one platform holding the devices of every runtime
/// (PoCL's, rusticl's, Intel's, ...) instead of one platform per runtime:
/// a SYCL context may then hold devices of several runtimes, and the
/// memory manager moves its buffers between them. Opt-in: a device belongs
/// to one platform in SYCL, and tools that count or name platforms per
/// vendor (dpctl's filter strings) expect one per runtime.
pub const ONE_PLATFORM_ENV: &str = "UR_RUST_ONE_PLATFORM";

/// The runtime and the permanent handles.
#[derive(Debug)]
pub struct State {
    /// Every adapter of the project present here (shared with the
    /// memory managers of multi-device contexts, [`crate::managed`]).
    pub rt: Arc<Runtime>,
    /// The one adapter handle.
    pub adapter: usize,
    /// The backend the adapter reports: its platforms' when they all
    /// report one, else the first platform's.
    pub backend: ur_backend_t,
    /// Platforms with their devices.
    pub platforms: Vec<Platform>,
    /// Root devices by id (fixed at start: read without a lock).
    pub devices: HashMap<DeviceId, Arc<Device>>,
    /// Sub-devices by id, added by `urDevicePartition`, never removed.
    pub sub_devices: RwLock<HashMap<DeviceId, Arc<Device>>>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, built on first use over [`crate::rt::runtime`]. The host-only platforms (native, sim) are listed
/// only where nothing else is, or with [`HOST_PLATFORMS_ENV`]`=1`: they
/// run no SYCL device image, and SYCL tools (dpctl) do not know their
/// backend, so beside real devices they only get in the way of device
/// selection.
pub fn state() -> &'static State {
    STATE.get_or_init(|| {
        let rt = crate::rt::runtime().clone();
        let adapter = register::<ur_adapter_handle_t_>(Object::Adapter) as usize;
        let mut platforms = Vec::new();
        let mut records = HashMap::new();
        let backend = |p| rt.backend_of(p).map_or(UR_BACKEND_NATIVE_CPU, crate::conv::ur_backend);
        let all = rt.platforms();
        let others = all.iter().any(|&p| backend(p) != UR_BACKEND_NATIVE_CPU);
        let host = std::env::var(HOST_PLATFORMS_ENV).is_ok_and(|v| v == "1") || !others;
        for p in all {
            let backend = backend(p);
            if backend == UR_BACKEND_NATIVE_CPU && !host {
                tracing::debug!(platform = ?p, "host-only platform not listed (set {HOST_PLATFORMS_ENV}=1)");
                continue;
            }
            let handle = register::<ur_platform_handle_t_>(Object::Platform(p)) as usize;
            let mut plat = Platform {
                handle,
                id: p,
                devices: Vec::new(),
                backend,
                members: Vec::new(),
            };
            for d in rt.devices(p).unwrap_or_default() {
                let h = register::<ur_device_handle_t_>(Object::Device(d)) as usize;
                match Device::new(&rt, h, d, &plat, None) {
                    Ok(rec) => {
                        records.insert(d, Arc::new(rec));
                        plat.devices.push((h, d));
                    }
                    Err(e) => tracing::warn!(device = ?d, error = ?e, "device without a description: not listed"),
                }
            }
            platforms.push(plat);
        }
        if std::env::var(ONE_PLATFORM_ENV).is_ok_and(|v| v == "1") && platforms.len() > 1 {
            platforms = vec![one_platform(platforms, &mut records)];
        }
        let backend = platforms.first().map_or(UR_BACKEND_NATIVE_CPU, |p| p.backend);
        State {
            rt,
            adapter,
            backend,
            platforms,
            devices: records,
            sub_devices: RwLock::new(HashMap::new()),
        }
    })
}

/// The runtime, once the adapter was obtained.
pub fn rt() -> Result<&'static Runtime, CapiError> {
    Ok(&state().rt)
}

/// The handle of a device id (null for a device without a handle).
pub fn device_handle(id: DeviceId) -> ur_device_handle_t {
    device(id).map_or(std::ptr::null_mut(), |d| d.handle as ur_device_handle_t)
}

/// The record of a device (root or sub-device).
pub fn device(id: DeviceId) -> Result<Arc<Device>, CapiError> {
    let st = state();
    match st.devices.get(&id) {
        Some(d) => Ok(Arc::clone(d)),
        None => st
            .sub_devices
            .read()
            .get(&id)
            .cloned()
            .ok_or(CapiError::Invalid(crate::objects::Kind::Device)),
    }
}

/// The one platform over every runtime's `platforms` (their devices keep
/// their handles, and their own backend for binary selection); it answers
/// the first platform's backend, or OpenCL where the runtimes differ but
/// OpenCL is among them (libsycl offers SPIR-V images to OpenCL platforms).
fn one_platform(platforms: Vec<Platform>, records: &mut HashMap<DeviceId, Arc<Device>>) -> Platform {
    let first = &platforms[0];
    let backend = if platforms.iter().all(|p| p.backend == first.backend) {
        first.backend
    } else if platforms.iter().any(|p| p.backend == UR_BACKEND_OPENCL) {
        UR_BACKEND_OPENCL
    } else {
        first.backend
    };
    let handle = first.handle;
    let members: Vec<PlatformId> = platforms.iter().map(|p| p.id).collect();
    let devices: Vec<(usize, DeviceId)> = platforms.iter().flat_map(|p| p.devices.iter().copied()).collect();
    for (_, d) in &devices {
        if let Some(rec) = records.get_mut(d) {
            if let Some(rec) = Arc::get_mut(rec) {
                rec.platform = handle;
            }
        }
    }
    for p in &platforms[1..] {
        // The other runtimes' platform handles are not listed; they stay
        // registered (handles are never reused) but name no platform.
        tracing::debug!(platform = ?p.id, "held by the one platform");
    }
    Platform {
        handle,
        id: first.id,
        devices,
        backend,
        members,
    }
}

/// The listed platform that holds the runtime platform `id`.
pub fn platform_of(id: PlatformId) -> Option<&'static Platform> {
    state().platforms.iter().find(|p| p.holds(id))
}
