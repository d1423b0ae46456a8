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
}

/// The runtime and the permanent handles.
#[derive(Debug)]
pub struct State {
    /// Every adapter of the project present here (shared with the
    /// memory managers of multi-device contexts, [`crate::managed`]).
    pub rt: Arc<Runtime>,
    /// The one adapter handle.
    pub adapter: usize,
    /// Platforms with their devices.
    pub platforms: Vec<Platform>,
    /// Device id to handle address.
    pub device_handles: HashMap<DeviceId, usize>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, built on first use. `UR_DEVICE_SELECTOR` picks devices (an
/// invalid selector selects all, with a warning); `UR_SIM_TOPOLOGY` adds
/// simulated devices.
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
        for p in rt.platforms() {
            let handle = register::<ur_platform_handle_t_>(Object::Platform(p)) as usize;
            let mut devices = Vec::new();
            for d in rt.devices(p).unwrap_or_default() {
                let h = register::<ur_device_handle_t_>(Object::Device(d)) as usize;
                device_handles.insert(d, h);
                devices.push((h, d));
            }
            platforms.push(Platform { handle, id: p, devices });
        }
        State {
            rt,
            adapter,
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
