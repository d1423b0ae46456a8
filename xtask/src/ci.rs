//! `cargo xtask ci`: the checks CI runs, in order, failing fast.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, human, run_limited, step, with_backend_env, Result, XtaskError, OPENCL_ENV};

/// Overrides the per-step time limit, in seconds.
pub const STEP_TIMEOUT_ENV: &str = "XTASK_STEP_TIMEOUT_SECS";

/// The per-step time limit when [`STEP_TIMEOUT_ENV`] is unset: far above a
/// normal run, so only a hang reaches it.
const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(45 * 60);

/// The steps, in order: a name and the command it runs.
fn steps() -> Vec<(&'static str, Command)> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    let mut test = cargo();
    // Unit tests, the conformance suite on every present device, doctests;
    // every test target runs even after one fails, so CI shows all failures.
    with_backend_env(test.args(["test", "--workspace", "--no-fail-fast"]));
    if in_ci() && std::env::var_os(REQUIRE_OPENCL_ENV).is_none() {
        // `setup` ran first: an OpenCL runtime missing here is a failure, not a skip.
        test.env(REQUIRE_OPENCL_ENV, "1");
    }
    // The runtime-style example (documentation that must keep running).
    let mut example = cargo();
    with_backend_env(example.args(["run", "-p", "ur-examples", "--example", "pipeline"]));
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", rustdocflags());
    vec![
        ("fmt", fmt),
        ("clippy", clippy),
        ("test", test),
        ("example", example),
        ("doc", doc),
    ]
}

/// fmt, clippy, tests (unit, conformance, doctests), the pipeline example, docs.
pub fn ci() -> Result<()> {
    let start = Instant::now();
    let limit = step_timeout()?;
    if in_ci() {
        eprintln!("xtask: CI is set: {REQUIRE_OPENCL_ENV}=1 for the tests (a missing OpenCL runtime fails them)");
    }
    eprintln!(
        "xtask: each step is killed after {} ({STEP_TIMEOUT_ENV} to change)",
        human(limit)
    );
    for (key, value) in OPENCL_ENV {
        match std::env::var(key) {
            Ok(v) => eprintln!("xtask: {key}={v:?} (from the environment)"),
            Err(_) => eprintln!("xtask: {key}={value:?} (default for the real OpenCL backends)"),
        }
    }
    let mut done: Vec<(&str, Duration, bool)> = Vec::new();
    for (name, mut cmd) in steps() {
        let t = Instant::now();
        let outcome = step(name, || run_limited(&mut cmd, limit));
        done.push((name, t.elapsed(), outcome.is_ok()));
        if outcome.is_err() {
            eprint!("{}", summary(&done));
            return outcome;
        }
    }
    eprint!("{}", summary(&done));
    eprintln!("xtask: ci passed in {}", human(start.elapsed()));
    Ok(())
}

/// Makes the OpenCL adapter's tests fail, not skip, without an OpenCL device.
const REQUIRE_OPENCL_ENV: &str = "UR_REQUIRE_OPENCL";

/// Is this a CI run (`CI` set to anything but `false` or `0`)?
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "false" | "0"))
}

fn step_timeout() -> Result<Duration> {
    match std::env::var(STEP_TIMEOUT_ENV) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map(Duration::from_secs)
            .map_err(|_| XtaskError::Other(format!("{STEP_TIMEOUT_ENV}={v:?} is not a number of seconds"))),
        Err(_) => Ok(DEFAULT_STEP_TIMEOUT),
    }
}

/// One line per step run: name, outcome, duration.
fn summary(done: &[(&str, Duration, bool)]) -> String {
    let mut s = String::from("xtask: ci summary\n");
    for (name, took, ok) in done {
        s.push_str(&format!(
            "  {name:<7} {:<6} {:>8}\n",
            if *ok { "ok" } else { "FAILED" },
            human(*took)
        ));
    }
    s
}

/// `-D warnings` added to whatever RUSTDOCFLAGS the caller set.
fn rustdocflags() -> String {
    match std::env::var("RUSTDOCFLAGS") {
        Ok(v) if !v.trim().is_empty() => format!("{} -D warnings", v.trim()),
        _ => "-D warnings".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::display;

    #[test]
    fn steps_run_in_the_documented_order_with_the_backend_env_on_tests() {
        let steps = steps();
        let names: Vec<&str> = steps.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["fmt", "clippy", "test", "example", "doc"]);
        let test = display(&steps[2].1);
        assert!(test.contains("test --workspace --no-fail-fast"), "{test}");
        for (key, _) in OPENCL_ENV {
            // Set by us, or left to the caller's environment.
            assert!(test.contains(key) || std::env::var_os(key).is_some(), "{test}");
        }
        assert!(display(&steps[1].1).ends_with("clippy --workspace --all-targets -- -D warnings"));
        assert!(display(&steps[3].1).contains("--example pipeline"));
        assert!(display(&steps[4].1).contains("RUSTDOCFLAGS="));
    }

    #[test]
    fn summary_marks_the_failed_step() {
        let s = summary(&[
            ("fmt", Duration::from_millis(900), true),
            ("clippy", Duration::from_secs(61), false),
        ]);
        assert!(s.contains("fmt     ok"), "{s}");
        assert!(s.contains("clippy  FAILED"), "{s}");
        assert!(s.contains("1m01s"), "{s}");
    }
}
