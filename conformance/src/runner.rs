//! Runs test cases on device targets and turns outcomes into results.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ur_api::Runtime;

use crate::expectations::Expectations;
use crate::{DeviceEnv, DeviceTarget, TestCase, TestError, TestResult};

/// The final status of one test on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Passed.
    Pass,
    /// Failed (including a known failure that passed).
    Fail,
    /// Did not run on this device; the reason says why.
    Skip,
    /// Failed as declared in the expectations.
    Xfail,
}

impl Status {
    /// `pass`, `fail`, `skip` or `xfail`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Skip => "skip",
            Status::Xfail => "xfail",
        }
    }
}

/// One result: a test on a device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestRecord {
    /// `[backend/device#N] group::name`.
    pub test: String,
    /// The backend name.
    pub backend: String,
    /// `device-name#N`.
    pub device: String,
    /// The test group.
    pub group: String,
    /// The test's name in its group.
    pub name: String,
    /// The outcome.
    pub status: Status,
    /// True for tests of bad input.
    pub negative: bool,
    /// Why it failed, skipped or was expected to fail.
    pub reason: Option<String>,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
}

/// `[backend/device#N] group::name`.
pub fn full_name(target: &DeviceTarget, case: &TestCase) -> String {
    format!("[{}] {}", target.label(), case.id())
}

/// Runs a body, turning a panic into a failure.
pub fn run_body(rt: &Runtime, target: &DeviceTarget, case: &TestCase) -> TestResult {
    let env = DeviceEnv::new(rt, target);
    let result = catch_unwind(AssertUnwindSafe(|| (case.body)(&env))).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".to_owned());
        Err(TestError::Fail(format!("panicked: {msg}")))
    });
    env.cleanup();
    result
}

/// Combines a body's outcome with the expectation covering it.
pub fn classify(result: &TestResult, known: Option<&str>) -> (Status, Option<String>) {
    classify_on(result, known, None)
}

/// [`classify`] on a device that may move no data (`data_less`: why).
pub fn classify_on(result: &TestResult, known: Option<&str>, data_less: Option<&str>) -> (Status, Option<String>) {
    match (result, known) {
        (Err(TestError::DataMismatch(m)), _) if data_less.is_some() => {
            (Status::Skip, Some(format!("{} ({m})", data_less.unwrap_or_default())))
        }
        (Err(TestError::DataMismatch(m)), None) => (Status::Fail, Some(m.clone())),
        (Err(TestError::DataMismatch(m)), Some(why)) => (Status::Xfail, Some(format!("known failure ({why}): {m}"))),
        (Ok(()), None) => (Status::Pass, None),
        (Ok(()), Some(why)) => (
            Status::Fail,
            Some(format!(
                "declared as a known failure ({why}) but passed: remove the stale expectation"
            )),
        ),
        (Err(TestError::Skip(r)), _) => (Status::Skip, Some(r.clone())),
        (Err(TestError::Fail(m)), None) => (Status::Fail, Some(m.clone())),
        (Err(TestError::Fail(m)), Some(why)) => (Status::Xfail, Some(format!("known failure ({why}): {m}"))),
    }
}

/// Runs one case on one target.
pub fn run_case(rt: &Runtime, target: &DeviceTarget, case: &TestCase, expectations: &Expectations) -> TestRecord {
    let start = Instant::now();
    let result = run_body(rt, target, case);
    let elapsed: Duration = start.elapsed();
    let known = expectations
        .lookup(target.backend, &target.info.name, &case.id())
        .map(|k| k.reason);
    let data_less = crate::expectations::data_less(target.backend, &target.info.name);
    let (status, reason) = classify_on(&result, known, data_less);
    tracing::debug!(test = %full_name(target, case), status = status.as_str(), "finished");
    TestRecord {
        test: full_name(target, case),
        backend: target.backend.name().to_owned(),
        device: format!("{}#{}", target.info.name, target.index),
        group: case.group.to_owned(),
        name: case.name.to_owned(),
        status,
        negative: case.negative,
        reason,
        duration_ms: elapsed.as_secs_f64() * 1e3,
    }
}

/// Every (target, case) pair whose full name contains `filter`.
pub fn plan<'a>(
    targets: &'a [DeviceTarget],
    cases: &'a [TestCase],
    filter: Option<&str>,
) -> Vec<(&'a DeviceTarget, &'a TestCase)> {
    targets
        .iter()
        .flat_map(|t| cases.iter().map(move |c| (t, c)))
        .filter(|(t, c)| filter.is_none_or(|f| full_name(t, c).contains(f)))
        .collect()
}

/// Runs a plan in order, calling `progress` after each test.
pub fn run_plan(
    rt: &Runtime,
    plan: &[(&DeviceTarget, &TestCase)],
    expectations: &Expectations,
    mut progress: impl FnMut(&TestRecord),
) -> Vec<TestRecord> {
    plan.iter()
        .map(|(t, c)| {
            let r = run_case(rt, t, c, expectations);
            progress(&r);
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        assert_eq!(classify(&Ok(()), None).0, Status::Pass);
        assert_eq!(classify(&Ok(()), Some("x")).0, Status::Fail, "stale expectation fails");
        assert_eq!(classify(&Err(TestError::Fail("m".into())), Some("x")).0, Status::Xfail);
        assert_eq!(classify(&Err(TestError::Fail("m".into())), None).0, Status::Fail);
        let (s, r) = classify(&Err(TestError::Skip("no USM".into())), Some("x"));
        assert_eq!((s, r.as_deref()), (Status::Skip, Some("no USM")));
    }
}
