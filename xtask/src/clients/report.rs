//! What a run of a client suite counted, and the comparison table.

use std::fmt::Write as _;
use std::time::Duration;

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::cmd::{human, Result, XtaskError};

/// Test counts of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests whose call failed.
    pub failed: u64,
    /// Tests skipped (and expected failures, as junit counts them).
    pub skipped: u64,
    /// Errors in setup, teardown or collection.
    pub errors: u64,
    /// pytest's own duration, seconds.
    pub time_s: f64,
}

/// Reads the counts of a pytest JUnit XML report: the sum over its
/// `<testsuite>` elements of `tests`, `failures`, `errors`, `skipped` and
/// `time` (passed = tests - failures - errors - skipped).
pub fn parse_junit(xml: &str) -> Result<Counts> {
    let bad = |why: String| XtaskError::Other(format!("junit report: {why}"));
    let mut reader = Reader::from_str(xml);
    let mut counts = Counts::default();
    let mut suites = 0;
    loop {
        match reader.read_event().map_err(|e| bad(e.to_string()))? {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == b"testsuite" => {
                suites += 1;
                let mut tests = 0u64;
                let mut not_passed = 0u64;
                for attr in e.attributes() {
                    let attr = attr.map_err(|e| bad(e.to_string()))?;
                    let value = attr.unescape_value().map_err(|e| bad(e.to_string()))?;
                    let key = attr.key.as_ref();
                    if key == b"time" {
                        counts.time_s += value.parse::<f64>().map_err(|_| bad(format!("time={value:?}")))?;
                        continue;
                    }
                    let slot = match key {
                        b"tests" => &mut tests,
                        b"failures" => &mut counts.failed,
                        b"errors" => &mut counts.errors,
                        b"skipped" => &mut counts.skipped,
                        _ => continue,
                    };
                    let n: u64 = value
                        .parse()
                        .map_err(|_| bad(format!("{}={value:?}", String::from_utf8_lossy(key))))?;
                    *slot += n;
                    if key != b"tests" {
                        not_passed += n;
                    }
                }
                counts.passed += tests.saturating_sub(not_passed);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if suites == 0 {
        return Err(bad("no <testsuite> element".into()));
    }
    Ok(counts)
}

/// One test of a JUnit report: its id and outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// `classname::name`.
    pub id: String,
    /// `passed`, `skipped`, `failure` or `error`.
    pub kind: String,
    /// The skip or failure message (shortened), empty when it passed.
    pub message: String,
}

/// How bad an outcome is: a later, worse child element of a test case (an
/// error in teardown after a failure) decides.
fn rank(kind: &str) -> u8 {
    match kind {
        "error" => 3,
        "failure" => 2,
        "skipped" => 1,
        _ => 0,
    }
}

/// Reads every test case of a JUnit report.
pub fn parse_cases(xml: &str) -> Result<Vec<Case>> {
    let bad = |why: String| XtaskError::Other(format!("junit report: {why}"));
    let attr = |e: &quick_xml::events::BytesStart<'_>, key: &[u8]| -> Result<String> {
        for a in e.attributes() {
            let a = a.map_err(|e| bad(e.to_string()))?;
            if a.key.as_ref() == key {
                return Ok(a.unescape_value().map_err(|e| bad(e.to_string()))?.into_owned());
            }
        }
        Ok(String::new())
    };
    let new_case = |e: &quick_xml::events::BytesStart<'_>| -> Result<Case> {
        Ok(Case {
            id: format!("{}::{}", attr(e, b"classname")?, attr(e, b"name")?),
            kind: "passed".into(),
            message: String::new(),
        })
    };
    let mut reader = Reader::from_str(xml);
    let mut cases = Vec::new();
    let mut open: Option<Case> = None;
    loop {
        match reader.read_event().map_err(|e| bad(e.to_string()))? {
            // `<testcase/>` has no end: a test that passed.
            Event::Empty(e) if e.name().as_ref() == b"testcase" => cases.push(new_case(&e)?),
            Event::Start(e) if e.name().as_ref() == b"testcase" => open = Some(new_case(&e)?),
            Event::Start(e) | Event::Empty(e) => {
                let kind = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                if let Some(case) = open.as_mut().filter(|c| rank(&kind) > rank(&c.kind)) {
                    case.message = attr(&e, b"message")?.chars().take(160).collect();
                    case.kind = kind;
                }
            }
            Event::End(e) if e.name().as_ref() == b"testcase" => cases.extend(open.take()),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(cases)
}

/// The tests whose outcome differs between two reports (a test only one
/// report has shows as `absent` on the other side), sorted by id.
pub fn differing<'a>(ur: &'a [Case], ours: &'a [Case]) -> Vec<(&'a str, Option<&'a Case>, Option<&'a Case>)> {
    let mut by_id: std::collections::BTreeMap<&str, (Option<&Case>, Option<&Case>)> = Default::default();
    for c in ur {
        by_id.entry(&c.id).or_default().0 = Some(c);
    }
    for c in ours {
        by_id.entry(&c.id).or_default().1 = Some(c);
    }
    by_id
        .into_iter()
        .filter(|(_, (u, o))| u.map(|c| &c.kind) != o.map(|c| &c.kind))
        .map(|(id, (u, o))| (id, u, o))
        .collect()
}

/// The differences as text, one test a line: `id: UR's outcome -> ours`.
pub fn diff_text(diffs: &[(&str, Option<&Case>, Option<&Case>)]) -> String {
    let show = |c: Option<&Case>| match c {
        None => "absent".to_owned(),
        Some(c) if c.message.is_empty() => c.kind.clone(),
        Some(c) => format!("{} ({})", c.kind, c.message),
    };
    let mut out = String::new();
    for (id, u, o) in diffs {
        let _ = writeln!(out, "{id}: {} -> {}", show(*u), show(*o));
    }
    out
}

/// What the progress plugin recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// Tests finished.
    pub done: u64,
    /// Outcomes so far (time left at 0).
    pub counts: Counts,
    /// The test started last and not finished: where a crash happened.
    pub running: Option<String>,
}

/// Reads the plugin's lines (`start`, an outcome, `done`, each with a node
/// id). A failing teardown after a passing call counts once in each.
pub fn parse_progress(text: &str) -> Progress {
    let mut p = Progress::default();
    let mut running: Option<&str> = None;
    for line in text.lines() {
        let Some((kind, id)) = line.split_once(' ') else {
            continue;
        };
        match kind {
            "start" => running = Some(id),
            "done" => {
                p.done += 1;
                running = None;
            }
            "passed" => p.counts.passed += 1,
            "failed" => p.counts.failed += 1,
            "skipped" => p.counts.skipped += 1,
            "error" => p.counts.errors += 1,
            _ => {}
        }
    }
    p.running = running.map(str::to_owned);
    p
}

/// The tests the plugin found failing because the device lacks a feature
/// (its `lacks` lines: node id and reason).
pub fn parse_lacks(text: &str) -> Vec<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Lack {
        id: String,
        why: String,
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("lacks "))
        .filter_map(|json| serde_json::from_str::<Lack>(json).ok())
        .map(|l| (l.id, l.why))
        .collect()
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// pytest exited and wrote its report.
    Finished {
        /// The report's counts.
        counts: Counts,
        /// pytest's exit code (0 all passed, 1 some failed, ...).
        code: i32,
    },
    /// Killed by a signal (an abort, a segfault).
    Crashed {
        /// The signal.
        signal: i32,
        /// What the progress plugin recorded.
        progress: Progress,
    },
    /// Ran past the time limit; killed with its children.
    TimedOut {
        /// The limit.
        limit: Duration,
        /// What the progress plugin recorded.
        progress: Progress,
    },
    /// Exited without a report (a usage error, an import failure).
    NoReport {
        /// The exit code.
        code: i32,
        /// What the progress plugin recorded.
        progress: Progress,
    },
    /// Not run, and why.
    NotRun(String),
    /// Not run because the device lacks what the suite needs, and what.
    Skipped(String),
}

impl Outcome {
    /// Did every test that ran pass (no failure, error, crash or hang)?
    pub fn clean(&self) -> bool {
        match self {
            Outcome::Finished { counts, code } => *code == 0 && counts.failed == 0 && counts.errors == 0,
            // The device lacks a feature: nothing failed.
            Outcome::Skipped(_) => true,
            _ => false,
        }
    }
}

/// A test that aborted the process in an attempt of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aborted {
    /// Its node id.
    pub id: String,
    /// What the next attempts report for it.
    pub why: String,
    /// Alone it fails because the device lacks a feature: skipped with
    /// `why`. Otherwise a crash: it errors with `why`.
    pub lack: bool,
}

/// One run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The wall time of its processes (every attempt).
    pub wall: Duration,
    /// The selector it ran with.
    pub selector: String,
    /// The tests that aborted the process in an earlier attempt (the run
    /// then started again without them).
    pub aborted: Vec<Aborted>,
}

/// The table cell of a run: `passed/failed/skipped/errors time`, or what
/// went wrong.
pub fn cell(r: &RunResult) -> String {
    let after = |p: &Progress| {
        if p.done == 0 && p.running.is_none() {
            // Nothing started: collection (importing, parametrising) died.
            return "before any test started".to_owned();
        }
        let mut s = format!("after {} tests", p.done);
        let c = p.counts;
        let _ = write!(s, " ({}/{}/{}/{})", c.passed, c.failed, c.skipped, c.errors);
        s
    };
    match &r.outcome {
        Outcome::Finished { counts: c, code } => {
            let mut s = format!("{}/{}/{}/{} {}", c.passed, c.failed, c.skipped, c.errors, human(r.wall));
            // 0: all passed, 1: some failed; anything else (interrupted,
            // internal error, usage error, nothing collected) is said.
            if !matches!(code, 0 | 1) {
                let _ = write!(s, " (pytest exit {code})");
            }
            if !r.aborted.is_empty() {
                let lacks = r.aborted.iter().filter(|a| a.lack).count();
                let _ = write!(
                    s,
                    " ({} aborts, rerun without them: {lacks} device lacks skipped, {} crashes as errors)",
                    r.aborted.len(),
                    r.aborted.len() - lacks
                );
            }
            s
        }
        Outcome::Crashed { signal, progress } => {
            format!("crashed (signal {signal}) {} {}", after(progress), human(r.wall))
        }
        Outcome::TimedOut { limit, progress } => format!("timed out ({}) {}", human(*limit), after(progress)),
        Outcome::NoReport { code, progress } => format!("exit {code}, no report, {}", after(progress)),
        Outcome::NotRun(why) => format!("not run: {why}"),
        Outcome::Skipped(why) => format!("skipped: {why}"),
    }
}

/// The comparison table: one row per suite, a column per side run.
pub fn table(rows: &[(&str, Option<RunResult>, Option<RunResult>)]) -> String {
    let header = [
        "suite".to_owned(),
        "UR's adapter: passed/failed/skipped/errors time".to_owned(),
        "ours: passed/failed/skipped/errors time".to_owned(),
    ];
    let mut cells = vec![header];
    for (name, ur, ours) in rows {
        let show = |r: &Option<RunResult>| r.as_ref().map_or_else(|| "-".to_owned(), cell);
        cells.push([(*name).to_owned(), show(ur), show(ours)]);
    }
    let widths: Vec<usize> = (0..3)
        .map(|c| cells.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| format!("{s:<w$}", w = widths[c]))
            .collect();
        out.push_str(line.join(" | ").trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("-|-"));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const JUNIT: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="2" skipped="1906" tests="3333" time="37.660" timestamp="2026-11-26T14:13:01" hostname="h"><testcase classname="a" name="b" time="0.1"><skipped type="pytest.skip" message="no gpu">x</skipped></testcase><testcase classname="a" name="c" time="0.2" /></testsuite></testsuites>"#;

    #[test]
    fn junit_counts_come_from_the_testsuite_attributes() {
        let c = parse_junit(JUNIT).unwrap();
        assert_eq!((c.passed, c.failed, c.skipped, c.errors), (1424, 2, 1906, 1));
        assert!((c.time_s - 37.66).abs() < 1e-9);
    }

    #[test]
    fn junit_sums_several_suites_and_rejects_garbage() {
        let two = r#"<testsuites><testsuite tests="3" failures="1" errors="0" skipped="0" time="1"/><testsuite tests="2" failures="0" errors="0" skipped="2" time="0.5"/></testsuites>"#;
        let c = parse_junit(two).unwrap();
        assert_eq!((c.passed, c.failed, c.skipped), (2, 1, 2));
        assert!((c.time_s - 1.5).abs() < 1e-9);
        assert!(parse_junit("<testsuites/>").is_err());
        assert!(parse_junit(r#"<testsuite tests="x"/>"#).is_err());
    }

    #[test]
    fn cases_take_their_worst_outcome_and_differences_are_listed() {
        let ur = parse_cases(JUNIT).unwrap();
        assert_eq!(ur.len(), 2);
        assert_eq!(
            (ur[0].id.as_str(), ur[0].kind.as_str(), ur[0].message.as_str()),
            ("a::b", "skipped", "no gpu")
        );
        assert_eq!((ur[1].kind.as_str(), ur[1].message.as_str()), ("passed", ""));
        let ours = parse_cases(
            r#"<testsuites><testsuite><testcase classname="a" name="b"><skipped message="x"/></testcase><testcase classname="a" name="c"><failure message="boom">t</failure><error message="teardown"/></testcase><testcase classname="a" name="d"/></testsuite></testsuites>"#,
        )
        .unwrap();
        assert_eq!(ours[1].kind, "error");
        let diffs = differing(&ur, &ours);
        let ids: Vec<&str> = diffs.iter().map(|d| d.0).collect();
        assert_eq!(
            ids,
            ["a::c", "a::d"],
            "a skip on both sides is no difference, whatever the message"
        );
        assert_eq!(
            diff_text(&diffs),
            "a::c: passed -> error (teardown)\na::d: absent -> passed\n"
        );
    }

    #[test]
    fn progress_counts_and_names_the_running_test() {
        let text = "start t::a\npassed t::a\ndone t::a\nstart t::b\nskipped t::b\ndone t::b\nstart t::c\nfailed t::c\ndone t::c\nstart t::d\n";
        let p = parse_progress(text);
        assert_eq!(p.done, 3);
        assert_eq!((p.counts.passed, p.counts.skipped, p.counts.failed), (1, 1, 1));
        assert_eq!(p.running.as_deref(), Some("t::d"));
        assert_eq!(parse_progress("start x\ndone x\n").running, None);
    }

    fn result(outcome: Outcome, secs: u64) -> RunResult {
        RunResult {
            outcome,
            wall: Duration::from_secs(secs),
            selector: "*:2".into(),
            aborted: Vec::new(),
        }
    }

    #[test]
    fn lacks_lines_name_the_test_and_the_reason() {
        let text = "start a b[x y]\nlacks {\"id\": \"a b[x y]\", \"why\": \"device lacks a feature: z\"}\n\
                    skipped a b[x y]\ndone a b[x y]\nlacks {not json\n";
        assert_eq!(
            parse_lacks(text),
            vec![("a b[x y]".to_owned(), "device lacks a feature: z".to_owned())]
        );
        // The progress counts ignore them.
        assert_eq!(parse_progress(text).counts.skipped, 1);
        assert_eq!(parse_progress(text).done, 1);
    }

    #[test]
    fn cells_say_counts_or_what_went_wrong() {
        let counts = Counts {
            passed: 1423,
            failed: 0,
            skipped: 1906,
            errors: 1,
            time_s: 37.7,
        };
        let ok = result(Outcome::Finished { counts, code: 1 }, 40);
        assert_eq!(cell(&ok), "1423/0/1906/1 40.0s");
        assert!(!ok.outcome.clean());
        let abort = |lack| Aborted {
            id: "t".into(),
            why: "w".into(),
            lack,
        };
        let rerun = RunResult {
            aborted: vec![abort(true), abort(false), abort(true)],
            ..ok.clone()
        };
        assert_eq!(
            cell(&rerun),
            "1423/0/1906/1 40.0s (3 aborts, rerun without them: 2 device lacks skipped, 1 crashes as errors)"
        );
        let progress = parse_progress("start a\npassed a\ndone a\nstart b\n");
        let crashed = result(
            Outcome::Crashed {
                signal: 6,
                progress: progress.clone(),
            },
            3,
        );
        assert_eq!(cell(&crashed), "crashed (signal 6) after 1 tests (1/0/0/0) 3.0s");
        let hung = result(
            Outcome::TimedOut {
                limit: Duration::from_secs(600),
                progress,
            },
            600,
        );
        assert!(
            cell(&hung).starts_with("timed out (10m00s) after 1 tests"),
            "{}",
            cell(&hung)
        );
        assert!(cell(&result(Outcome::NotRun("no lib".into()), 0)).contains("no lib"));
        let internal = result(Outcome::Finished { counts, code: 3 }, 1);
        assert!(cell(&internal).ends_with("1.0s (pytest exit 3)"), "{}", cell(&internal));
        let clean = Outcome::Finished {
            counts: Counts { errors: 0, ..counts },
            code: 0,
        };
        assert!(clean.clean());
    }

    #[test]
    fn the_table_aligns_both_sides() {
        let counts = Counts {
            passed: 5387,
            ..Counts::default()
        };
        let rows = [
            (
                "sum",
                Some(result(Outcome::Finished { counts, code: 0 }, 74)),
                Some(result(
                    Outcome::Crashed {
                        signal: 11,
                        progress: Progress::default(),
                    },
                    1,
                )),
            ),
            ("dpctl", Some(result(Outcome::Finished { counts, code: 0 }, 5)), None),
        ];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[0].starts_with("suite | UR's adapter"), "{t}");
        assert!(lines[2].starts_with("sum   | 5387/0/0/0 1m14s"), "{t}");
        assert!(
            lines[2].contains("| crashed (signal 11) before any test started 1.0s"),
            "{t}"
        );
        assert!(lines[3].ends_with("| -"), "{t}");
        let bar = lines[0].find(" | ").unwrap();
        assert!(lines.iter().all(|l| l.len() > bar), "{t}");
    }
}
