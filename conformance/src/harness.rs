//! The suite under `cargo test`, on any adapter, without the registry.
//!
//! An adapter crate (in this workspace or out of it) runs the whole suite
//! on its own adapter with a test target declared `harness = false`:
//!
//! ```toml
//! [dev-dependencies]
//! ur-conformance = { version = "0.1", default-features = false }
//!
//! [[test]]
//! name = "conformance"
//! harness = false
//! ```
//!
//! and `tests/conformance.rs`:
//!
//! ```ignore
//! fn main() {
//!     ur_conformance::harness::run_suite(my_adapter::MyAdapter::new).exit()
//! }
//! ```
//!
//! [`run_suite`] calls the constructor twice: one instance is the adapter
//! under test, the other an independent twin whose handles the
//! foreign-handle tests pass to the first. Every test runs on every device
//! the adapter reports (and [`UR_DEVICE_SELECTOR`](ur_api::SELECTOR_ENV)
//! selects), as a libtest-mimic trial named `[backend/device#N] group::test`;
//! so `cargo test -p my-adapter -- fill::` filters as usual. A skip is an
//! ignored trial with its reason, a known failure that fails passes (with
//! an `xfail` note on stderr), and a known failure that passes fails.
//! `default-features = false` leaves out the registry (every in-tree
//! backend), which only `ur-cts`, `ur-info` and the registry-wide run need.

use std::sync::Arc;

use libtest_mimic::{Completion, Failed, Trial};
use ur_api::{Adapter, DeviceSelector, Runtime};

use crate::expectations::{Expectations, KnownFailure, KNOWN_FAILURES, RUN_KNOWN_FAILURES_ENV};
use crate::runner::{full_name, run_case};
use crate::{DeviceTarget, Status, TestCase};

pub use libtest_mimic::{Arguments, Conclusion};

/// Runs the suite on the adapter `make` builds, with the built-in
/// expectations, and returns libtest-mimic's conclusion (call
/// [`Conclusion::exit`] on it in `main`).
///
/// Panics (failing the test binary with the message) if the device
/// selector in the environment does not parse or the runtime refuses the
/// adapter.
pub fn run_suite<A: Adapter>(make: impl Fn() -> A) -> Conclusion {
    run_suite_with(make, &[])
}

/// Like [`run_suite`], also declaring the adapter's own known failures
/// (in addition to the built-in list; `UR_CTS_RUN_KNOWN_FAILURES=1` turns
/// both off).
pub fn run_suite_with<A: Adapter>(make: impl Fn() -> A, known_failures: &[KnownFailure]) -> Conclusion {
    let selector = selector_from_env();
    let rt = runtime_of(make(), &selector);
    let twin = runtime_of(make(), &selector);
    run_runtimes(rt, Some(twin), expectations_with(known_failures))
}

/// Runs the suite on every selected device of `rt` (the registry's
/// runtime, or one built by hand), with command-line arguments from the
/// process. `twin` is a second runtime over independent instances of the
/// same adapters, for the foreign-handle tests (without it they skip).
pub fn run_runtimes(rt: Runtime, twin: Option<Runtime>, expectations: Expectations) -> Conclusion {
    let args = Arguments::from_args();
    let targets = DeviceTarget::discover(&rt, twin.as_ref());
    if targets.is_empty() {
        eprintln!(
            "ur-conformance: no device selected (selector `{}`); nothing to test",
            rt.selector()
        );
    }
    let trials = trials(Arc::new(rt), &targets, &crate::tests::all(), Arc::new(expectations));
    libtest_mimic::run(&args, trials)
}

/// One libtest-mimic trial per (target, case), named by
/// [`full_name`]; negative tests have the kind `negative`.
pub fn trials(
    rt: Arc<Runtime>,
    targets: &[DeviceTarget],
    cases: &[TestCase],
    expectations: Arc<Expectations>,
) -> Vec<Trial> {
    let mut trials = Vec::with_capacity(targets.len() * cases.len());
    for target in targets {
        for &case in cases {
            let (rt, target, expectations) = (rt.clone(), target.clone(), expectations.clone());
            let trial = Trial::ignorable_test(full_name(&target, &case), move || {
                let r = run_case(&rt, &target, &case, &expectations);
                let reason = r.reason.unwrap_or_default();
                match r.status {
                    Status::Pass => Ok(Completion::Completed),
                    Status::Xfail => {
                        // Test-runner output, next to libtest-mimic's own.
                        eprintln!("xfail {}: {reason}", r.test);
                        Ok(Completion::Completed)
                    }
                    Status::Skip => Ok(Completion::ignored_with(reason)),
                    Status::Fail => Err(Failed::from(reason)),
                }
            });
            trials.push(trial.with_kind(if case.negative { "negative" } else { "" }));
        }
    }
    trials
}

/// The built-in known failures plus `extra`, or none at all when
/// [`RUN_KNOWN_FAILURES_ENV`] is `1`.
pub fn expectations_with(extra: &[KnownFailure]) -> Expectations {
    let off = std::env::var(RUN_KNOWN_FAILURES_ENV).is_ok_and(|v| v.trim() == "1");
    if off {
        return Expectations::new(Vec::new());
    }
    Expectations::new(KNOWN_FAILURES.iter().chain(extra).copied().collect())
}

/// The selector from [`UR_DEVICE_SELECTOR`](ur_api::SELECTOR_ENV); panics
/// with the parse error (a test binary's way to report bad setup).
pub fn selector_from_env() -> DeviceSelector {
    DeviceSelector::from_env().unwrap_or_else(|e| panic!("{}: {e}", ur_api::SELECTOR_ENV))
}

/// A runtime holding only `adapter`, showing the devices `selector` picks.
fn runtime_of<A: Adapter>(adapter: A, selector: &DeviceSelector) -> Runtime {
    let mut rt = Runtime::with_selector(selector.clone());
    let backend = adapter.backend();
    rt.add(adapter)
        .unwrap_or_else(|e| panic!("the runtime refused the {backend} adapter: {e}"));
    rt
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expectations::KnownFailure;
    use ur_api::Backend;

    #[test]
    fn extra_known_failures_join_the_built_in_list() {
        let extra = KnownFailure {
            backend: Backend::Other("mine"),
            device: "",
            test: "fill::patterns",
            reason: "r",
        };
        let e = expectations_with(&[extra]);
        let off = std::env::var(RUN_KNOWN_FAILURES_ENV).is_ok_and(|v| v.trim() == "1");
        assert_eq!(
            e.lookup(Backend::Other("mine"), "any", "fill::patterns").is_some(),
            !off
        );
        assert!(e.lookup(Backend::Native, "any", "fill::patterns").is_none());
    }

    #[test]
    fn an_empty_runtime_has_no_trials() {
        let rt = Runtime::new();
        let targets = DeviceTarget::discover(&rt, None);
        let t = trials(
            Arc::new(rt),
            &targets,
            &crate::tests::all(),
            Arc::new(Expectations::new(vec![])),
        );
        assert!(t.is_empty());
    }
}
