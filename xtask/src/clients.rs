//! Real SYCL clients on the project's UR adapter library: dpctl's and
//! dpnp's own test suites (from their PyPI wheels, in a project-local venv
//! that `setup` makes), run through UR's own OpenCL adapter and through
//! ours on the same device, side by side (`cargo xtask clients`), and
//! through ours alone as CI's `clients` step.
//!
//! The device: Intel's CPU OpenCL runtime, `ONEAPI_DEVICE_SELECTOR=opencl:3`
//! on our library (PoCL 0, PoCL 1, rusticl, Intel) and `*:3` on UR's
//! adapter, with rusticl hidden there (UR's OpenCL adapter crashes in
//! `urDevicePartition` whenever rusticl is visible): see [`selector`].

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, run, with_backend_env, Result, XtaskError};

/// The clients and their test runner, pinned (dpctl and dpnp pull the same
/// 2026.2 `libsycl`, UR loader and Intel CPU OpenCL runtime as the wheels
/// `setup` unpacks).
pub const PACKAGES: &[&str] = &["dpctl==0.22.1", "dpnp==0.20.0", "pytest==9.2.0"];

/// Tests that fail (or error) through our library, each with the reason. CI fails
/// if any of them passes (so the list stays honest) or any other fails.
pub const KNOWN_FAILING: &[(&str, &str)] = &[
    (
        "test_sycl_context.py::test_context_multi_device",
        "device partitioning (urDevicePartition) is not supported: the project's runtime has root devices only",
    ),
    (
        "test_sycl_queue.py::test_cython_api",
        "needs Cython, which is not a dependency of dpctl's wheel: an error through UR's own adapter too",
    ),
    (
        "test_sycl_usm.py::test_memory_copy_between_contexts",
        "device partitioning (urDevicePartition) is not supported: the project's runtime has root devices only",
    ),
];

/// The venv: `clients-venv` beside the wheel cache
/// (`~/.cache/unified-runtime/clients-venv`).
pub fn venv() -> PathBuf {
    let wheels = crate::wheels::cache_dir();
    wheels
        .parent()
        .map_or_else(|| wheels.join("clients-venv"), |p| p.join("clients-venv"))
}

const DONE: &str = ".xtask-installed";

/// Makes the venv with [`PACKAGES`] unless it is there.
pub fn ensure(dry_run: bool) -> Result<()> {
    let dir = venv();
    let spec = PACKAGES.join(" ");
    if std::fs::read_to_string(dir.join(DONE)).is_ok_and(|s| s == spec) {
        eprintln!("setup: present: {spec} in {}", dir.display());
        return Ok(());
    }
    if dry_run {
        eprintln!("setup: would make a venv at {} with {spec}", dir.display());
        return Ok(());
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
    run(Command::new(dir.join("bin/pip"))
        .args(["install", "--quiet", "--only-binary=:all:"])
        .args(PACKAGES))?;
    std::fs::write(dir.join(DONE), spec.as_bytes())
        .map_err(|e| XtaskError::Other(format!("marking {}: {e}", dir.display())))?;
    eprintln!("setup: installed {spec} into {}", dir.display());
    Ok(())
}

/// A suite: its name and pytest's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    /// Short name (`--suites`).
    pub name: &'static str,
    /// dpctl's package, or a dpnp test file.
    target: &'static str,
}

/// dpctl's suite and the four dpnp files.
pub const SUITES: [Suite; 5] = [
    Suite {
        name: "dpctl",
        target: "dpctl",
    },
    Suite {
        name: "sycl_queue",
        target: "test_sycl_queue.py",
    },
    Suite {
        name: "sum",
        target: "test_sum.py",
    },
    Suite {
        name: "linalg",
        target: "test_linalg.py",
    },
    Suite {
        name: "arraycreation",
        target: "test_arraycreation.py",
    },
];

/// Which adapter a run goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// UR's own OpenCL adapter (the loader's default).
    Ur,
    /// This project's library.
    Ours,
}

/// One run's outcome.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Passed, failed, skipped, errors (pytest's junit counts).
    pub passed: u64,
    /// Failed.
    pub failed: u64,
    /// Skipped.
    pub skipped: u64,
    /// Errors (collection or fixture).
    pub errors: u64,
    /// The process ended by a signal (a crash), or without a report.
    pub crashed: Option<String>,
    /// Names of failed tests (`file.py::test`).
    pub failures: Vec<String>,
    /// Wall time.
    pub time: Duration,
}

/// The counts of a junit report (`<testsuite tests= failures= errors= skipped=`).
pub fn parse_junit(xml: &str) -> Option<(u64, u64, u64, u64)> {
    let start = xml.find("<testsuite ")?;
    let tag = &xml[start..start + xml[start..].find('>')?];
    let attr = |name: &str| -> Option<u64> {
        let key = format!(" {name}=\"");
        let at = tag.find(&key)? + key.len();
        tag[at..].split('"').next()?.parse().ok()
    };
    let (tests, failures, errors, skipped) = (attr("tests")?, attr("failures")?, attr("errors")?, attr("skipped")?);
    Some((
        tests.saturating_sub(failures + errors + skipped),
        failures,
        skipped,
        errors,
    ))
}

/// Failed test names from pytest's `-rfE` summary (`FAILED path::name - ...`).
pub fn parse_failures(out: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix("FAILED ").or_else(|| l.strip_prefix("ERROR ")))
        .map(|l| {
            let id = l.split(" - ").next().unwrap_or(l).trim();
            // Keep `file.py::test[...]`, whatever the path before it.
            id.rsplit('/').next().unwrap_or(id).to_owned()
        })
        .collect()
}

/// `ONEAPI_DEVICE_SELECTOR` for Intel's CPU OpenCL device on each side.
/// Ours lists PoCL 0, PoCL 1, rusticl, Intel (opencl:3). UR's adapter runs
/// with rusticl hidden and lists PoCL 0, PoCL 1, Intel, which `*:2` names;
/// UR's loader pre-filter fails on `opencl:*` here (it cannot find
/// libsvml), so its side uses the backend wildcard.
pub fn selector(side: Side) -> &'static str {
    match side {
        Side::Ours => "opencl:3",
        Side::Ur => "*:2",
    }
}

fn venv_python() -> PathBuf {
    venv().join("bin/python")
}

fn dpnp_tests() -> PathBuf {
    venv().join("lib/python3.11/site-packages/dpnp/tests")
}

/// Runs one suite on one side, with a time limit.
pub fn run_suite(suite: Suite, side: Side, limit: Duration, extra: &[String]) -> Result<Outcome> {
    let root = crate::workspace_root();
    let logs = root.join("target/clients");
    std::fs::create_dir_all(&logs).map_err(|e| XtaskError::Other(format!("{}: {e}", logs.display())))?;
    let tag = match side {
        Side::Ur => "ur",
        Side::Ours => "ours",
    };
    let junit = logs.join(format!("{}-{tag}.xml", suite.name));
    let _ = std::fs::remove_file(&junit);
    let mut cmd = Command::new("timeout");
    cmd.arg(limit.as_secs().to_string()).arg(venv_python());
    cmd.args(["-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider"]);
    if suite.name == "dpctl" {
        cmd.args(["--pyargs", "dpctl"]);
    } else {
        cmd.arg(dpnp_tests().join(suite.target));
    }
    cmd.arg(format!("--junitxml={}", junit.display())).args(extra);
    with_backend_env(&mut cmd);
    cmd.env("ONEAPI_DEVICE_SELECTOR", selector(side)).current_dir(&logs);
    match side {
        Side::Ours => {
            cmd.env(
                "UR_ADAPTERS_FORCE_LOAD",
                root.join("target/release/libur_adapter_rust.so"),
            );
        }
        Side::Ur => {
            cmd.env_remove("RUSTICL_ENABLE");
        }
    }
    eprintln!("clients: {} through {tag} ...", suite.name);
    let t0 = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| XtaskError::Other(format!("running pytest: {e}")))?;
    let time = t0.elapsed();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log = logs.join(format!("{}-{tag}.log", suite.name));
    std::fs::write(&log, &text).map_err(|e| XtaskError::Other(format!("{}: {e}", log.display())))?;
    let mut o = Outcome {
        failures: parse_failures(&text),
        time,
        ..Outcome::default()
    };
    match std::fs::read_to_string(&junit).ok().as_deref().and_then(parse_junit) {
        Some((p, f, s, e)) => (o.passed, o.failed, o.skipped, o.errors) = (p, f, s, e),
        None => {
            o.crashed = Some(match out.status.code() {
                Some(124) => format!("timed out after {} s", limit.as_secs()),
                Some(c) => format!("exit {c}, no report (see {})", log.display()),
                None => format!("killed by a signal, no report (see {})", log.display()),
            })
        }
    }
    Ok(o)
}

/// One row of the table.
pub fn row(suite: &str, ur: Option<&Outcome>, ours: Option<&Outcome>) -> String {
    let cell = |o: Option<&Outcome>| match o {
        None => "-".to_owned(),
        Some(o) => match &o.crashed {
            Some(why) => format!("crashed: {why}"),
            None => format!(
                "{} passed / {} failed / {} skipped / {} errors, {:.0} s",
                o.passed,
                o.failed,
                o.skipped,
                o.errors,
                o.time.as_secs_f64()
            ),
        },
    };
    format!("| {suite} | {} | {} |", cell(ur), cell(ours))
}

/// Builds the adapter library (release).
fn build_library() -> Result<()> {
    run(cargo().args(["build", "--release", "-p", "ur-capi"]))
}

/// `cargo xtask clients`: the suites through UR's adapter and ours, and
/// the comparison table.
pub fn clients(suites: &[String], ours_only: bool, extra: &[String]) -> Result<()> {
    if !venv_python().is_file() {
        return Err(XtaskError::Other(format!(
            "no clients venv at {} (run `cargo xtask setup`)",
            venv().display()
        )));
    }
    build_library()?;
    let picked: Vec<Suite> = SUITES
        .into_iter()
        .filter(|s| suites.is_empty() || suites.iter().any(|n| n == s.name))
        .collect();
    let mut rows = Vec::new();
    for s in picked {
        let limit = Duration::from_secs(1800);
        let ur = if ours_only {
            None
        } else {
            Some(run_suite(s, Side::Ur, limit, extra)?)
        };
        let ours = run_suite(s, Side::Ours, limit, extra)?;
        rows.push(row(s.name, ur.as_ref(), Some(&ours)));
        for f in &ours.failures {
            eprintln!("clients: {} failed through ours: {f}", s.name);
        }
    }
    println!("| suite | UR's OpenCL adapter | ours |\n|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

/// CI's `clients` step: dpctl's suite and dpnp's `test_sum.py` through our
/// library; fails on a crash, on a failure not in [`KNOWN_FAILING`], and on
/// a known failure that passes.
pub fn ci_step() -> Result<()> {
    build_library()?;
    let mut problems = Vec::new();
    for name in ["dpctl", "sum"] {
        let s = SUITES.into_iter().find(|s| s.name == name).expect("a listed suite");
        let o = run_suite(s, Side::Ours, Duration::from_secs(900), &[])?;
        println!("{}", row(name, None, Some(&o)));
        if let Some(why) = &o.crashed {
            problems.push(format!("{name}: {why}"));
            continue;
        }
        problems.extend(check(name, &o));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(XtaskError::Other(problems.join("\n")))
    }
}

/// What is wrong with an outcome against [`KNOWN_FAILING`].
pub fn check(suite: &str, o: &Outcome) -> Vec<String> {
    let known = |f: &str| KNOWN_FAILING.iter().any(|(k, _)| f == *k);
    let mut problems: Vec<String> = o
        .failures
        .iter()
        .filter(|f| !known(f))
        .map(|f| format!("{suite}: {f} failed"))
        .collect();
    if o.errors + o.failed > o.failures.len() as u64 {
        problems.push(format!(
            "{suite}: {} failures and errors, {} named in pytest's summary",
            o.errors + o.failed,
            o.failures.len()
        ));
    }
    if suite == "dpctl" {
        for (k, why) in KNOWN_FAILING {
            if !o.failures.iter().any(|f| f == k) {
                problems.push(format!("{suite}: {k} is listed as failing ({why}) but did not fail"));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_counts() {
        let xml = r#"<?xml version="1.0"?><testsuites><testsuite name="pytest" errors="1" failures="2" skipped="30" tests="100" time="3.1">"#;
        assert_eq!(parse_junit(xml), Some((67, 2, 30, 1)));
        assert_eq!(parse_junit("<testsuites/>"), None);
    }

    #[test]
    fn failures_from_the_summary() {
        let out = "x\nFAILED tests/test_sycl_context.py::test_context_multi_device - dpctl.Err\nERROR a/b.py::t[1]\n";
        assert_eq!(
            parse_failures(out),
            ["test_sycl_context.py::test_context_multi_device", "b.py::t[1]"]
        );
    }

    #[test]
    fn known_failures_must_fail_and_others_must_not() {
        let o = Outcome {
            failures: KNOWN_FAILING.iter().map(|(k, _)| k.to_string()).collect(),
            failed: KNOWN_FAILING.len() as u64,
            ..Outcome::default()
        };
        assert!(check("dpctl", &o).is_empty());
        let none = Outcome::default();
        assert_eq!(check("dpctl", &none).len(), KNOWN_FAILING.len());
        let other = Outcome {
            failures: vec!["x.py::t".into()],
            ..Outcome::default()
        };
        assert!(check("sum", &other)[0].contains("x.py::t"));
    }

    #[test]
    fn table_row_shows_crashes() {
        let crashed = Outcome {
            crashed: Some("killed by a signal".into()),
            ..Outcome::default()
        };
        assert!(row("dpctl", None, Some(&crashed)).contains("crashed: killed"));
    }
}
