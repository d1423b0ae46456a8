//! CI's check of the clients through our adapter library (`cargo xtask
//! clients --ci`): dpctl's suite and dpnp's `test_sum.py` through ours
//! only, against the list of tests known to fail there.

use std::time::Duration;

use super::report::{cell, table, Case, Outcome, RunResult};
use super::{prepare, read_cases, run_suite, select_suites, side_selector, Options, Side};
use crate::cmd::{Result, XtaskError};

/// A test known to fail (or error) through our library.
#[derive(Debug, Clone, Copy)]
pub struct Known {
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
pub const KNOWN_FAILING: &[Known] = &[Known {
    suite: "dpctl",
    module: "test_sycl_queue",
    test: "test_cython_api",
    why: "needs Cython, which is not a dependency of dpctl's wheel: an error through UR's own adapter too",
}];

/// The suites CI runs.
pub const CI_SUITES: [&str; 2] = ["dpctl", "sum"];

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
pub fn check(suite: &str, result: &RunResult, cases: &[Case]) -> Vec<String> {
    if !matches!(result.outcome, Outcome::Finished { .. }) {
        return vec![format!("{suite}: {}", cell(result))];
    }
    let known: Vec<&Known> = KNOWN_FAILING.iter().filter(|k| k.suite == suite).collect();
    let mut problems: Vec<String> = cases
        .iter()
        .filter(|c| failing(c) && !known.iter().any(|k| is_known(k, c)))
        .map(|c| format!("{suite}: {} {} ({})", c.id, c.kind, c.message))
        .collect();
    for k in known {
        if !cases.iter().any(|c| failing(c) && is_known(k, c)) {
            problems.push(format!(
                "{suite}: {}::{} is listed as failing ({}) but did not fail",
                k.module, k.test, k.why
            ));
        }
    }
    problems
}

/// CI's `clients` step: [`CI_SUITES`] through our library only; fails on
/// what [`check`] finds.
pub fn ci_step() -> Result<()> {
    let opts = Options {
        ur: false,
        suites: CI_SUITES.iter().map(|s| (*s).to_owned()).collect(),
        timeout: CI_RUN_LIMIT,
        ..Options::default()
    };
    let ctx = prepare(&opts)?;
    let selector = side_selector(Side::Ours, &opts, &ctx).map_err(XtaskError::Other)?;
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for suite in select_suites(&opts.suites)? {
        let result = run_suite(&suite, Side::Ours, &selector, &opts, &ctx)?;
        let cases = match result.outcome {
            Outcome::Finished { .. } => read_cases(suite.name, Side::Ours)?,
            _ => Vec::new(),
        };
        problems.extend(check(suite.name, &result, &cases));
        rows.push((suite.name, None, Some(result)));
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
        let all_known: Vec<Case> = KNOWN_FAILING
            .iter()
            .map(|k| case(&format!("tests.{}::{}", k.module, k.test), "failure"))
            .collect();
        assert!(check("dpctl", &finished(), &all_known).is_empty());
        let none = check("dpctl", &finished(), &[]);
        assert_eq!(none.len(), KNOWN_FAILING.len());
        assert!(none[0].contains("did not fail"), "{none:?}");
        let other = check(
            "sum",
            &finished(),
            &[case("tests.test_sum::test_x[f4]", "failure"), case("a::b", "passed")],
        );
        assert_eq!(other.len(), 1);
        assert!(
            other[0].starts_with("sum: tests.test_sum::test_x[f4] failure"),
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
        let p = check("dpctl", &crashed, &[]);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("crashed (signal 6)"), "{p:?}");
    }

    #[test]
    fn ci_runs_listed_suites() {
        assert!(select_suites(&CI_SUITES.map(String::from)).is_ok());
        assert!(KNOWN_FAILING.iter().all(|k| CI_SUITES.contains(&k.suite)));
    }
}
