//! The process-wide runtime behind the adapter handle: every project
//! adapter present (`ur_adapters::discover`), its platforms and root devices
//! registered once as permanent handles.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use ur_api::{DeviceId, DeviceSelector, PlatformId, Runtime};

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
}

/// Set to `1` to list the project's host-only platforms (native, sim)
/// beside the others; they are listed by default only when no other
/// platform is present.
pub const HOST_PLATFORMS_ENV: &str = "UR_RUST_HOST_PLATFORMS";

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
    /// Device id to handle address.
    pub device_handles: HashMap<DeviceId, usize>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, built on first use. `UR_DEVICE_SELECTOR` picks devices (an
/// invalid selector selects all, with a warning); `UR_SIM_TOPOLOGY` adds
/// simulated devices. The host-only platforms (native, sim) are listed
/// only where nothing else is, or with [`HOST_PLATFORMS_ENV`]`=1`: they
/// run no SYCL device image, and SYCL tools (dpctl) do not know their
/// backend, so beside real devices they only get in the way of device
/// selection.
pub fn state() -> &'static State {
    STATE.get_or_init(|| {
        let selector = DeviceSelector::from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring an invalid device selector");
            DeviceSelector::all()
        });
        let rt = Arc::new(ur_adapters::discover(&selector));
        let adapter = register::<ur_adapter_handle_t_>(Object::Adapter) as usize;
        let mut platforms = Vec::new();
        let mut device_handles = HashMap::new();
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
            let mut devices = Vec::new();
            for d in rt.devices(p).unwrap_or_default() {
                let h = register::<ur_device_handle_t_>(Object::Device(d)) as usize;
                device_handles.insert(d, h);
                devices.push((h, d));
            }
            platforms.push(Platform {
                handle,
                id: p,
                devices,
                backend,
            });
        }
        let backend = platforms.first().map_or(UR_BACKEND_NATIVE_CPU, |p| p.backend);
        State {
            rt,
            adapter,
            backend,
            platforms,
            device_handles,
        }
    })
}

/// The runtime, once the adapter was obtained.
pub fn rt() -> Result<&'static Runtime, CapiError> {
    Ok(&state().rt)
}

/// The handle of a device id.
pub fn device_handle(id: DeviceId) -> ur_device_handle_t {
    state()
        .device_handles
        .get(&id)
        .map_or(std::ptr::null_mut(), |h| *h as ur_device_handle_t)
}

/// The platform entry of a platform id.
pub fn platform_of(id: PlatformId) -> Option<&'static Platform> {
    state().platforms.iter().find(|p| p.id == id)
}
