//! CI's check of the clients through our adapter library (`cargo xtask
//! clients --ci`): dpctl's suite and dpnp's `test_sum.py` on Intel's CPU
//! OpenCL device, and dpctl's suite on PoCL (its kernels reach PoCL as
//! SPIR translated from SPIR-V), through ours only, against the list of
//! tests known to fail there.

use std::time::Duration;

use super::report::{cell, table, Case, Outcome, RunResult};
use super::{prepare, read_cases, run_suite, select_suites, side_selector, Options, Side};
use crate::cmd::{Result, XtaskError};

/// A test known to fail (or error) through our library.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The device (`--device` name) it fails on; `None`: every device.
    pub device: Option<&'static str>,
    /// The suite (`--suites` name).
    pub suite: &'static str,
    /// The test's module (`test_sycl_context`).
    pub module: &'static str,
    /// The test function (every parametrisation of it).
    pub test: &'static str,
    /// Why it fails.
    pub why: &'static str,
}

/// Tests that fail (or error) through our library, each with the reason.
/// CI fails if any of them passes (so the list stays honest) or any other
/// test fails.
pub const KNOWN_FAILING: &[Known] = &[
    Known {
        device: None,
        suite: "dpctl",
        module: "test_sycl_queue",
        test: "test_cython_api",
        why: "needs Cython, which is not a dependency of dpctl's wheel: an error through UR's own adapter too",
    },
    Known {
        device: Some("pocl"),
        suite: "dpctl",
        module: "test_sycl_program",
        test: "test_create_program_from_spirv_ocl",
        why: "dpctl calls clCreateProgramWithIL itself (OpenCL interop), and PoCL 3.1 takes no IL: the device lacks it",
    },
];

/// The runs CI makes: (device, suite).
pub const CI_RUNS: [(&str, &str); 3] = [("intel", "dpctl"), ("intel", "sum"), ("pocl", "dpctl")];

/// Each CI run's time limit.
pub const CI_RUN_LIMIT: Duration = Duration::from_secs(900);

/// Is `case` (`tests.test_module[.Class]::test[params]`) the known test?
pub fn is_known(k: &Known, case: &Case) -> bool {
    let Some((class, name)) = case.id.split_once("::") else {
        return false;
    };
    let function = name.split('[').next().unwrap_or(name);
    function == k.test && class.split('.').any(|part| part == k.module)
}

/// Did the test fail (a failure or an error)?
fn failing(case: &Case) -> bool {
    matches!(case.kind.as_str(), "failure" | "error")
}

/// What is wrong with a CI run of `suite`: no finished report (a crash, a
/// time-out), a failing test that is not known, a known test that did not
/// fail.
pub fn check(device: &str, suite: &str, result: &RunResult, cases: &[Case]) -> Vec<String> {
    if !matches!(result.outcome, Outcome::Finished { .. }) {
        return vec![format!("{suite} on {device}: {}", cell(result))];
    }
    let known: Vec<&Known> = KNOWN_FAILING
        .iter()
        .filter(|k| k.suite == suite && k.device.is_none_or(|d| d == device))
        .collect();
    let mut problems: Vec<String> = cases
        .iter()
        .filter(|c| failing(c) && !known.iter().any(|k| is_known(k, c)))
        .map(|c| format!("{suite} on {device}: {} {} ({})", c.id, c.kind, c.message))
        .collect();
    for k in known {
        if !cases.iter().any(|c| failing(c) && is_known(k, c)) {
            problems.push(format!(
                "{suite} on {device}: {}::{} is listed as failing ({}) but did not fail",
                k.module, k.test, k.why
            ));
        }
    }
    problems
}

/// CI's `clients` step: [`CI_RUNS`] through our library only; fails on
/// what [`check`] finds. A device that is not present fails the step (CI
/// installs both).
pub fn ci_step() -> Result<()> {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    let mut built = false;
    for device in CI_RUNS.iter().map(|(d, _)| *d).fold(Vec::new(), |mut v, d| {
        if !v.contains(&d) {
            v.push(d);
        }
        v
    }) {
        let opts = Options {
            ur: false,
            suites: CI_RUNS
                .iter()
                .filter(|(d, _)| *d == device)
                .map(|(_, s)| (*s).to_owned())
                .collect(),
            device: device.to_owned(),
            timeout: CI_RUN_LIMIT,
            // One build for every device.
            no_build: built,
            ..Options::default()
        };
        let ctx = prepare(&opts)?;
        built = true;
        let selector = side_selector(Side::Ours, &opts, &ctx).map_err(XtaskError::Other)?;
        for suite in select_suites(&opts.suites)? {
            let result = run_suite(&suite, Side::Ours, &selector, &opts, &ctx)?;
            let cases = match result.outcome {
                Outcome::Finished { .. } => read_cases(suite.name, Side::Ours)?,
                _ => Vec::new(),
            };
            problems.extend(check(device, suite.name, &result, &cases));
            rows.push((suite.name, None, Some(result)));
        }
    }
    print!("{}", table(&rows));
    if problems.is_empty() {
        Ok(())
    } else {
        Err(XtaskError::Other(format!(
            "clients through ours:\n  {}",
            problems.join("\n  ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::Counts;
    use super::*;

    fn case(id: &str, kind: &str) -> Case {
        Case {
            id: id.into(),
            kind: kind.into(),
            message: "m".into(),
        }
    }

    fn finished() -> RunResult {
        RunResult {
            outcome: Outcome::Finished {
                counts: Counts::default(),
                code: 1,
            },
            wall: Duration::from_secs(1),
            selector: "*:3".into(),
        }
    }

    #[test]
    fn known_tests_match_by_module_and_function_whatever_the_parameters() {
        let k = Known {
            device: None,
            suite: "dpctl",
            module: "test_sycl_context",
            test: "test_context_multi_device",
            why: "an example",
        };
        assert!(is_known(
            &k,
            &case("tests.test_sycl_context::test_context_multi_device", "failure")
        ));
        assert!(is_known(
            &k,
            &case("tests.test_sycl_context.TestX::test_context_multi_device[a-1]", "error")
        ));
        assert!(!is_known(
            &k,
            &case("tests.test_sycl_queue::test_context_multi_device", "failure")
        ));
        assert!(!is_known(
            &k,
            &case("tests.test_sycl_context::test_context_multi_device_2", "failure")
        ));
    }

    #[test]
    fn known_failures_must_fail_and_others_must_not() {
        let on = |device: &str| -> Vec<Case> {
            KNOWN_FAILING
                .iter()
                .filter(|k| k.device.is_none_or(|d| d == device))
                .map(|k| case(&format!("tests.{}::{}", k.module, k.test), "failure"))
                .collect()
        };
        for device in ["intel", "pocl"] {
            assert!(check(device, "dpctl", &finished(), &on(device)).is_empty(), "{device}");
            let none = check(device, "dpctl", &finished(), &[]);
            assert_eq!(none.len(), on(device).len());
            assert!(none[0].contains("did not fail"), "{none:?}");
        }
        // A failure known on PoCL is a problem on Intel's device.
        let intel = check("intel", "dpctl", &finished(), &on("pocl"));
        assert_eq!(intel.len(), 1, "{intel:?}");
        assert!(intel[0].contains("test_create_program_from_spirv_ocl"), "{intel:?}");
        let other = check(
            "intel",
            "sum",
            &finished(),
            &[case("tests.test_sum::test_x[f4]", "failure"), case("a::b", "passed")],
        );
        assert_eq!(other.len(), 1);
        assert!(
            other[0].starts_with("sum on intel: tests.test_sum::test_x[f4] failure"),
            "{other:?}"
        );
    }

    #[test]
    fn a_crash_is_a_problem_on_its_own() {
        let crashed = RunResult {
            outcome: Outcome::Crashed {
                signal: 6,
                progress: Default::default(),
            },
            ..finished()
        };
        let p = check("pocl", "dpctl", &crashed, &[]);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("crashed (signal 6)"), "{p:?}");
    }

    #[test]
    fn ci_runs_listed_suites() {
        assert!(select_suites(&CI_RUNS.map(|(_, s)| s.to_owned())).is_ok());
        assert!(KNOWN_FAILING.iter().all(|k| CI_RUNS
            .iter()
            .any(|&(d, s)| s == k.suite && k.device.is_none_or(|kd| kd == d))));
    }
}
