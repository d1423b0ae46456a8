//! Process isolation: run the plan in a worker process so that a test that
//! aborts the process (a non-unwinding panic or a crash inside a native
//! driver) fails alone instead of taking the whole run down.
//!
//! The worker is the runner binary itself started with [`WORKER_FLAG`] and
//! `--resume N`: it runs the same plan (same discovery, selector and filter,
//! so the same order) from entry `N`, printing one [`RECORD_PREFIX`] line
//! per result. When the worker dies, the parent records the entry it was
//! running as failed and starts a new worker after it.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::runner::{Status, TestRecord};

/// The hidden flag that makes the runner a worker.
pub const WORKER_FLAG: &str = "--worker";
/// The prefix of a result line on a worker's stdout.
pub const RECORD_PREFIX: &str = "CTS_RECORD ";

/// One result as a worker prints it.
pub fn record_line(r: &TestRecord) -> String {
    format!(
        "{RECORD_PREFIX}{}",
        serde_json::to_string(r).expect("records serialise")
    )
}

/// Parses a worker's output line; `None` for anything else.
pub fn parse_line(line: &str) -> Option<TestRecord> {
    serde_json::from_str(line.strip_prefix(RECORD_PREFIX)?).ok()
}

/// Runs `names.len()` planned tests through workers started as
/// `exe args... --worker --resume N`, calling `progress` per result.
/// `names[i]` is the full name of plan entry `i` (used for crash records).
pub fn run_isolated(
    exe: &std::path::Path,
    args: &[String],
    names: &[(String, String, String, bool)],
    mut progress: impl FnMut(&TestRecord),
) -> std::io::Result<Vec<TestRecord>> {
    let mut out: Vec<TestRecord> = Vec::with_capacity(names.len());
    while out.len() < names.len() {
        let start = out.len();
        let mut child = Command::new(exe)
            .args(args)
            .arg(WORKER_FLAG)
            .arg("--resume")
            .arg(start.to_string())
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        for line in BufReader::new(stdout).lines() {
            if let Some(r) = parse_line(&line?) {
                progress(&r);
                out.push(r);
            }
        }
        let status = child.wait()?;
        if out.len() < names.len() && (status.success() || (out.len() == start && status.code() == Some(2))) {
            // The worker stopped early without dying on a test: its plan differs.
            return Err(std::io::Error::other(format!(
                "worker exited ({status}) after {} of {} tests",
                out.len(),
                names.len()
            )));
        }
        if out.len() < names.len() {
            let (test, backend, device, negative) = names[out.len()].clone();
            let (group, name) = test
                .rsplit_once(' ')
                .and_then(|(_, id)| id.split_once("::"))
                .map(|(g, n)| (g.to_owned(), n.to_owned()))
                .unwrap_or_default();
            let r = TestRecord {
                test,
                backend,
                device,
                group,
                name,
                status: Status::Fail,
                negative,
                reason: Some(format!(
                    "the test process died ({status}); later tests ran in a new process"
                )),
                duration_ms: 0.0,
            };
            tracing::warn!(test = %r.test, %status, "worker died");
            progress(&r);
            out.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines_round_trip() {
        let r = TestRecord {
            test: "[native/cpu#0] g::n".into(),
            backend: "native".into(),
            device: "cpu#0".into(),
            group: "g".into(),
            name: "n".into(),
            status: Status::Skip,
            negative: true,
            reason: Some("why".into()),
            duration_ms: 1.5,
        };
        let back = parse_line(&record_line(&r)).unwrap();
        assert_eq!((back.test, back.status, back.negative), (r.test, r.status, r.negative));
        assert!(parse_line("PASS something").is_none());
    }
}
