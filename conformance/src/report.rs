//! Output formats: human progress lines, JSON, JUnit XML (quick-junit).

use std::collections::BTreeMap;
use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase as JunitCase, TestCaseStatus, TestSuite};
use serde::Serialize;

use crate::runner::{Status, TestRecord};

/// Counts per status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Passed.
    pub pass: usize,
    /// Failed.
    pub fail: usize,
    /// Skipped.
    pub skip: usize,
    /// Known failures that failed.
    pub xfail: usize,
    /// Negative tests among all results.
    pub negative: usize,
    /// All results.
    pub total: usize,
}

impl Summary {
    /// Counts the records.
    pub fn of(records: &[TestRecord]) -> Self {
        let mut s = Summary {
            total: records.len(),
            ..Summary::default()
        };
        for r in records {
            match r.status {
                Status::Pass => s.pass += 1,
                Status::Fail => s.fail += 1,
                Status::Skip => s.skip += 1,
                Status::Xfail => s.xfail += 1,
            }
            s.negative += usize::from(r.negative);
        }
        s
    }

    /// The final line of the human format.
    ///
    /// ```
    /// let s = ur_conformance::report::Summary { pass: 3, skip: 1, ..Default::default() };
    /// assert_eq!(s.line(), "summary: 3 passed, 0 failed, 1 skipped, 0 xfail");
    /// ```
    pub fn line(&self) -> String {
        format!(
            "summary: {} passed, {} failed, {} skipped, {} xfail",
            self.pass, self.fail, self.skip, self.xfail
        )
    }
}

/// One progress line of the human format.
pub fn human_line(r: &TestRecord) -> String {
    let tag = match r.status {
        Status::Pass => "PASS ",
        Status::Fail => "FAIL ",
        Status::Skip => "SKIP ",
        Status::Xfail => "XFAIL",
    };
    match &r.reason {
        Some(why) => format!("{tag} {} ({:.1} ms): {why}", r.test, r.duration_ms),
        None => format!("{tag} {} ({:.1} ms)", r.test, r.duration_ms),
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    results: &'a [TestRecord],
    summary: Summary,
}

/// `{"results":[...],"summary":{...}}`.
pub fn json(records: &[TestRecord]) -> String {
    serde_json::to_string_pretty(&JsonReport {
        results: records,
        summary: Summary::of(records),
    })
    .expect("records serialise")
}

/// JUnit XML: one suite per device, one case per test (class name = group).
pub fn junit(records: &[TestRecord]) -> Result<String, quick_junit::SerializeError> {
    let mut report = Report::new("ur-cts");
    let mut suites: BTreeMap<String, TestSuite> = BTreeMap::new();
    for r in records {
        let mut status = match r.status {
            Status::Pass | Status::Xfail => TestCaseStatus::success(),
            Status::Fail => TestCaseStatus::non_success(NonSuccessKind::Failure),
            Status::Skip => TestCaseStatus::skipped(),
        };
        if r.status != Status::Pass {
            if let Some(why) = &r.reason {
                status.set_message(why.as_str());
            }
        }
        let mut case = JunitCase::new(r.name.as_str(), status);
        case.set_classname(r.group.as_str());
        case.set_time(Duration::from_secs_f64(r.duration_ms / 1e3));
        if r.status == Status::Xfail {
            case.set_system_out(format!("xfail: {}", r.reason.as_deref().unwrap_or("")));
        }
        suites
            .entry(format!("{}/{}", r.backend, r.device))
            .or_insert_with_key(|k| TestSuite::new(k.as_str()))
            .add_test_case(case);
    }
    report.add_test_suites(suites.into_values());
    report.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, status: Status, negative: bool) -> TestRecord {
        TestRecord {
            test: format!("[native/cpu#0] g::{name}"),
            backend: "native".into(),
            device: "cpu#0".into(),
            group: "g".into(),
            name: name.into(),
            status,
            negative,
            reason: (status != Status::Pass).then(|| "why".to_owned()),
            duration_ms: 0.5,
        }
    }

    #[test]
    fn summary_and_json_shape() {
        let rs = vec![
            rec("a", Status::Pass, true),
            rec("b", Status::Fail, false),
            rec("c", Status::Skip, false),
            rec("d", Status::Xfail, false),
        ];
        let s = Summary::of(&rs);
        assert_eq!(
            (s.pass, s.fail, s.skip, s.xfail, s.negative, s.total),
            (1, 1, 1, 1, 1, 4)
        );
        let v: serde_json::Value = serde_json::from_str(&json(&rs)).unwrap();
        assert_eq!(v["results"][1]["status"], "fail");
        assert_eq!(v["results"][0]["negative"], true);
        assert_eq!(v["results"][0]["backend"], "native");
        assert_eq!(v["summary"]["xfail"], 1);
        assert!(v["results"][2]["reason"].is_string());
    }

    #[test]
    fn junit_has_failure_and_skip() {
        let rs = vec![
            rec("a", Status::Pass, false),
            rec("b", Status::Fail, false),
            rec("c", Status::Skip, false),
        ];
        let xml = junit(&rs).unwrap();
        assert!(xml.contains("<failure"));
        assert!(xml.contains("<skipped"));
        assert!(xml.contains("native/cpu#0"));
    }

    #[test]
    fn human_lines() {
        assert!(human_line(&rec("a", Status::Pass, false)).starts_with("PASS  [native/cpu#0] g::a"));
        assert!(human_line(&rec("b", Status::Fail, false)).ends_with(": why"));
    }
}
