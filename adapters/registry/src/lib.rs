//! Finds every compiled-in adapter that is present on this machine and
//! builds a [`Runtime`] over them.
//!
//! Each backend loads its native library at run time, so an absent runtime
//! (no OpenCL ICD loader, no CUDA driver) means zero platforms for that
//! backend, never a failure to start.
//!
//! ```
//! let rt = ur_adapters::discover(&ur_api::DeviceSelector::all());
//! assert!(!rt.all_devices().is_empty(), "the native adapter is always there");
//! ```

use ur_api::{Adapter, Backend, DeviceSelector, Runtime};

/// What [`discover_with`] includes beyond what the machine has.
#[derive(Debug, Clone, Default)]
pub struct DiscoverOptions {
    /// Include the simulated-device adapter with its default test topology
    /// even when `UR_SIM_TOPOLOGY` is unset (tests do; users do not).
    pub sim_for_tests: bool,
}

/// One adapter that was looked for, and what came of it.
#[derive(Debug, Clone)]
pub struct AdapterReport {
    /// The backend.
    pub backend: Backend,
    /// `Ok(n)`: present with `n` platforms; `Err(reason)`: absent or skipped.
    pub outcome: Result<usize, String>,
}

fn add<A: Adapter>(rt: &mut Runtime, reports: &mut Vec<AdapterReport>, backend: Backend, made: Result<A, String>) {
    let outcome = made.and_then(|a| {
        let before = rt.adapters().len();
        rt.add(a).map_err(|e| e.to_string())?;
        let added = &rt.adapters()[before];
        Ok(added.platforms().len())
    });
    if let Err(reason) = &outcome {
        tracing::info!(%backend, %reason, "adapter not loaded");
    }
    reports.push(AdapterReport { backend, outcome });
}

/// The backends this registry can load (whether or not present here).
pub const COMPILED_IN: &[Backend] = &[
    Backend::Native,
    Backend::Sim,
    Backend::OpenCl,
    Backend::Cuda,
    Backend::LevelZero,
];

/// Refuses a selector that names a backend no adapter of this registry
/// serves (a typo such as `opencI:*` would otherwise select nothing,
/// silently).
///
/// ```
/// let ok: ur_api::DeviceSelector = "native:*;!opencl:1".parse().unwrap();
/// assert!(ur_adapters::check_selector(&ok).is_ok());
/// let typo: ur_api::DeviceSelector = "vulkan:*".parse().unwrap();
/// assert!(ur_adapters::check_selector(&typo).unwrap_err().contains("vulkan"));
/// ```
pub fn check_selector(selector: &DeviceSelector) -> Result<(), String> {
    let known: Vec<&str> = COMPILED_IN.iter().map(|b| b.name()).collect();
    match selector.backend_names().into_iter().find(|n| !known.contains(n)) {
        Some(unknown) => Err(format!(
            "the selector names backend `{unknown}`, which no adapter here serves (known: {})",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// Every present adapter, devices filtered by `selector`.
pub fn discover(selector: &DeviceSelector) -> Runtime {
    discover_with(selector, &DiscoverOptions::default()).0
}

/// Like [`discover`], with options, also reporting what was looked for.
pub fn discover_with(selector: &DeviceSelector, options: &DiscoverOptions) -> (Runtime, Vec<AdapterReport>) {
    let _ = options;
    let mut rt = Runtime::with_selector(selector.clone());
    let mut reports = Vec::new();
    if selector.may_select_backend(Backend::Native) {
        add(
            &mut rt,
            &mut reports,
            Backend::Native,
            Ok(ur_native::NativeAdapter::new()),
        );
    }
    if selector.may_select_backend(Backend::Sim) {
        // Simulated devices are for tests: only with UR_SIM_TOPOLOGY or when asked.
        let sim = match ur_sim::Topology::from_env() {
            Ok(Some(topology)) => Some(Ok(ur_sim::SimAdapter::new(topology))),
            Ok(None) if options.sim_for_tests => {
                Some(Ok(ur_sim::SimAdapter::new(ur_sim::Topology::default_for_tests())))
            }
            Ok(None) => None,
            Err(e) => Some(Err(format!("{}: {e}", ur_sim::TOPOLOGY_ENV))),
        };
        match sim {
            Some(made) => add(&mut rt, &mut reports, Backend::Sim, made),
            None => reports.push(AdapterReport {
                backend: Backend::Sim,
                outcome: Err(format!("skipped: {} is not set", ur_sim::TOPOLOGY_ENV)),
            }),
        }
    }
    if selector.may_select_backend(Backend::OpenCl) {
        // No libOpenCL or no ICD is zero platforms, not a failure.
        add(
            &mut rt,
            &mut reports,
            Backend::OpenCl,
            Ok(ur_opencl::OpenClAdapter::new()),
        );
    }
    if selector.may_select_backend(Backend::Cuda) {
        // No libcuda, no GPU or a driver too old is zero platforms, never a panic.
        add(&mut rt, &mut reports, Backend::Cuda, Ok(ur_cuda::CudaAdapter::new()));
    }
    if selector.may_select_backend(Backend::LevelZero) {
        // No libze1, or no driver (zeInit fails), is zero platforms with
        // the reason in the report, never a panic.
        let made = match ur_level_zero::LevelZeroAdapter::unavailable_reason() {
            Some(why) => Err(why),
            None => Ok(ur_level_zero::LevelZeroAdapter::new()),
        };
        add(&mut rt, &mut reports, Backend::LevelZero, made);
    }
    // Further backends register here, each
    // guarded by `selector.may_select_backend(..)`.
    (rt, reports)
}
