//! Running one suite on one side: pytest processes until the suite has
//! run to its end, with the tests that aborted the process in earlier
//! attempts skipped (a device lack) or made to error (a crash); see
//! [`run_suite`].

use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::report::{cell, parse_junit, parse_lacks, parse_progress, Aborted, Outcome, Progress, RunResult};
use super::{known, out_dir, pytest_command, run_logged, side_env, Ctx, Options, Side, Suite, SELECTOR_ENV, SKIP_ENV};
use crate::cmd::{display, Result};

/// How many times a run starts again after a test aborted the process
/// (skipped for a device lack, or counted as an error).
const MAX_RESTARTS: usize = 8;

/// How many times a test that aborted the process runs alone to learn why
/// it fails: its failure is thrown where dpctl does not catch it only when
/// its enqueue was deferred, which alone happens in a third to two thirds
/// of the runs (dpnp's `TestCond::test_basic` on PoCL: 1 of 3 and 5 of 8),
/// so that twelve tries all aborting is rare (0.7^12 < 2%).
const DIAGNOSE_TRIES: usize = 12;

/// The variable naming the tests the plugin lets run (a JSON list).
const ONLY_ENV: &str = "UR_CLIENTS_ONLY";

/// One pytest process of a suite: its outcome, read from its report or
/// from the plugin's progress file, and the progress file's text.
fn run_attempt(
    cmd: &mut Command,
    log: &Path,
    junit: &Path,
    progress: &Path,
    limit: Duration,
) -> Result<(Outcome, String)> {
    for f in [junit, progress] {
        let _ = std::fs::remove_file(f);
    }
    let (status, _) = run_logged(cmd, log, limit)?;
    let text = std::fs::read_to_string(progress).unwrap_or_default();
    let progress = parse_progress(&text);
    let outcome = match status {
        None => Outcome::TimedOut { limit, progress },
        Some(s) => match (s.signal(), std::fs::read_to_string(junit)) {
            (Some(signal), _) => Outcome::Crashed { signal, progress },
            (None, Ok(xml)) => Outcome::Finished {
                counts: parse_junit(&xml)?,
                code: s.code().unwrap_or(-1),
            },
            (None, Err(_)) => Outcome::NoReport {
                code: s.code().unwrap_or(-1),
                progress,
            },
        },
    };
    Ok((outcome, text))
}

/// Runs one suite on one side.
///
/// When a test aborts the process, [`diagnose`] learns why; the suite then
/// runs again from the start with that test skipped with the reason (a
/// device lack) or made to error with it (a crash), at most
/// [`MAX_RESTARTS`] times within the one time limit, so that the report
/// counts every other test. The logs of aborted attempts are kept as
/// `<suite>-<side>.abortN.log`.
pub(super) fn run_suite(suite: &Suite, side: Side, selector: &str, opts: &Options, ctx: &Ctx) -> Result<RunResult> {
    let dir = out_dir();
    let stem = format!("{}-{}", suite.name, side.tag());
    let file = |ext: &str| dir.join(format!("{stem}.{ext}"));
    let (log, junit, progress) = (file("log"), file("xml"), file("progress"));
    let started = Instant::now();
    let mut aborted: Vec<Aborted> = Vec::new();
    loop {
        let mut cmd = command(suite, side, selector, opts, ctx, &aborted, &junit, &progress)?;
        eprintln!("clients: {stem}: {} (log {})", display(&cmd), log.display());
        let limit = opts.timeout.saturating_sub(started.elapsed());
        let (mut outcome, text) = run_attempt(&mut cmd, &log, &junit, &progress, limit)?;
        if let Outcome::TimedOut { limit, .. } = &mut outcome {
            // Say the run's limit, not what was left of it.
            *limit = opts.timeout;
        }
        if let Outcome::Crashed {
            progress: Progress {
                running: Some(test), ..
            },
            ..
        } = &outcome
        {
            if aborted.len() < MAX_RESTARTS {
                let kept = file(&format!("abort{}.log", aborted.len() + 1));
                let _ = std::fs::rename(&log, &kept);
                eprintln!(
                    "clients: {stem}: {test} aborted the process (log {}); running it alone to learn why",
                    kept.display()
                );
                let alone = |tests: &[&str]| -> Result<(Outcome, String)> {
                    let (xml, prog) = (file("alone.xml"), file("alone.progress"));
                    let mut cmd = command(suite, side, selector, opts, ctx, &aborted, &xml, &prog)?;
                    cmd.env(ONLY_ENV, serde_json::json!(tests).to_string());
                    let limit = opts.timeout.saturating_sub(started.elapsed());
                    run_attempt(&mut cmd, &file("alone.log"), &xml, &prog, limit)
                };
                // The last test before it that failed for a device lack.
                let earlier = parse_lacks(&text).pop();
                let found = diagnose(test, earlier.as_ref(), alone, &kept)?;
                eprintln!(
                    "clients: {stem}: {test}: {}; running the suite again without it",
                    found.why
                );
                aborted.push(found);
                continue;
            }
        }
        let result = RunResult {
            outcome,
            wall: started.elapsed(),
            selector: selector.to_owned(),
            aborted,
        };
        eprintln!("clients: {stem}: {}", cell(&result));
        if let Outcome::Crashed { progress: p, .. } | Outcome::TimedOut { progress: p, .. } = &result.outcome {
            if let Some(t) = &p.running {
                eprintln!("clients: {stem}: was running {t}");
            }
        }
        return Ok(result);
    }
}

/// A suite's pytest command on a side, with the tests of `aborted` handed
/// to the plugin.
#[allow(clippy::too_many_arguments)] // reason: the suite's run, as run_suite has it; a struct would only rename them.
fn command(
    suite: &Suite,
    side: Side,
    selector: &str,
    opts: &Options,
    ctx: &Ctx,
    aborted: &[Aborted],
    junit: &Path,
    progress: &Path,
) -> Result<Command> {
    let mut cmd = pytest_command(suite, side, opts, junit, &ctx.py, progress)?;
    side_env(&mut cmd, side, ctx)
        .env(SELECTOR_ENV, selector)
        .env(SKIP_ENV, known::skip_json(&opts.device, suite.name, aborted));
    Ok(cmd)
}

/// Why `test` aborted the process, learnt by running it again through
/// `run` (a pytest process of the given tests only):
///
/// - alone (up to [`DIAGNOSE_TRIES`] times) it fails because the device
///   lacks a feature (a [`known::DEVICE_LACKS`] pattern): skipped with
///   [`known::aborted_for`];
/// - alone it does not abort, but after `earlier` (the last test before it
///   that failed for a device lack) it does: skipped with
///   [`known::aborted_after`];
/// - otherwise a crash: it errors with [`known::crashed`] (`log`: the
///   aborted attempt's).
fn diagnose(
    test: &str,
    earlier: Option<&(String, String)>,
    run: impl Fn(&[&str]) -> Result<(Outcome, String)>,
    log: &Path,
) -> Result<Aborted> {
    let found = |why: String, lack: bool| Aborted {
        id: test.to_owned(),
        why,
        lack,
    };
    let mut aborts_alone = true;
    for _ in 0..DIAGNOSE_TRIES {
        let (how, text) = run(&[test])?;
        if let Some((_, lack)) = parse_lacks(&text).into_iter().find(|(id, _)| id == test) {
            return Ok(found(known::aborted_for(&lack), true));
        }
        if !matches!(how, Outcome::Crashed { .. }) {
            // Alone it passes (or fails otherwise): the abort came from an
            // earlier test.
            aborts_alone = false;
            break;
        }
    }
    if let (false, Some((first, lack))) = (aborts_alone, earlier) {
        for _ in 0..DIAGNOSE_TRIES {
            let (how, text) = run(&[first, test])?;
            let aborted_in_it =
                matches!(&how, Outcome::Crashed { progress, .. } if progress.running.as_deref() == Some(test));
            if aborted_in_it && parse_lacks(&text).iter().any(|(id, _)| id == first) {
                return Ok(found(known::aborted_after(first, lack), true));
            }
        }
    }
    Ok(found(known::crashed(log), false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn crashed_in(test: &str) -> Outcome {
        Outcome::Crashed {
            signal: 6,
            progress: Progress {
                running: Some(test.to_owned()),
                ..Progress::default()
            },
        }
    }

    fn finished() -> Outcome {
        Outcome::Finished {
            counts: Default::default(),
            code: 0,
        }
    }

    fn lacks(id: &str) -> String {
        format!("start {id}\nlacks {{\"id\": \"{id}\", \"why\": \"device lacks a feature: x\"}}\n")
    }

    #[test]
    fn a_test_that_fails_alone_for_a_lack_is_skipped_for_it() {
        // Aborts alone twice, then fails for the lack.
        let tries = RefCell::new(0);
        let run = |tests: &[&str]| {
            assert_eq!(tests, ["t"]);
            *tries.borrow_mut() += 1;
            Ok(if *tries.borrow() < 3 {
                (crashed_in("t"), String::new())
            } else {
                (finished(), lacks("t"))
            })
        };
        let a = diagnose("t", None, run, Path::new("l")).unwrap();
        assert!(a.lack && a.why.starts_with("device lacks a feature: x;"), "{a:?}");
        assert_eq!(*tries.borrow(), 3);
    }

    #[test]
    fn a_test_that_passes_alone_is_tried_after_the_earlier_lack() {
        let earlier = ("e".to_owned(), "device lacks a feature: y".to_owned());
        let run = |tests: &[&str]| {
            Ok(match tests {
                ["t"] => (finished(), String::new()),
                ["e", "t"] => (crashed_in("t"), lacks("e")),
                other => panic!("{other:?}"),
            })
        };
        let a = diagnose("t", Some(&earlier), run, Path::new("l")).unwrap();
        assert!(
            a.lack && a.why.starts_with("aborts the process when run after e"),
            "{a:?}"
        );
    }

    #[test]
    fn anything_else_is_a_crash() {
        // Always aborts alone: the pair is not tried.
        let run = |tests: &[&str]| {
            assert_eq!(tests, ["t"]);
            Ok((crashed_in("t"), String::new()))
        };
        let earlier = ("e".to_owned(), "device lacks a feature: y".to_owned());
        let a = diagnose("t", Some(&earlier), run, Path::new("t.abort1.log")).unwrap();
        assert!(!a.lack && a.why.contains("t.abort1.log"), "{a:?}");
        // Passes alone and after the earlier test: no lack explains it.
        let run = |_: &[&str]| Ok((finished(), String::new()));
        assert!(!diagnose("t", Some(&earlier), run, Path::new("l")).unwrap().lack);
        // Passes alone, nothing earlier lacked anything.
        let run = |_: &[&str]| Ok((finished(), String::new()));
        assert!(!diagnose("t", None, run, Path::new("l")).unwrap().lack);
    }
}
