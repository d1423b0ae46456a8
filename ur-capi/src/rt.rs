//! The process's [`Runtime`]: every project adapter present
//! (`ur_adapters::discover`), made on first use. Below every module that
//! keeps objects, so an object's `Drop` can release its runtime object
//! without reaching up to the handle tables ([`crate::state`] builds the
//! platform and device handles over this runtime).

use std::sync::{Arc, OnceLock};

use ur_api::{DeviceSelector, Runtime};

static RT: OnceLock<Arc<Runtime>> = OnceLock::new();

/// The runtime, discovered on first use. `UR_DEVICE_SELECTOR` picks devices
/// (an invalid selector selects all, with a warning); `UR_SIM_TOPOLOGY`
/// adds simulated devices.
pub fn runtime() -> &'static Arc<Runtime> {
    RT.get_or_init(|| {
        let selector = DeviceSelector::from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring an invalid device selector");
            DeviceSelector::all()
        });
        Arc::new(ur_adapters::discover(&selector))
    })
}
