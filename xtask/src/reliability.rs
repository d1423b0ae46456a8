//! Reliability steps of `cargo xtask ci` (issue #16): the host-side crates'
//! tests under AddressSanitizer, the bounded fuzz runs, and the `setup`
//! helper that installs cargo-fuzz.
//!
//! Both need the nightly toolchain (`-Zsanitizer`, libFuzzer); they run it
//! through the rustup proxy (`cargo +nightly`), in their own target folders
//! (`target/asan`, `fuzz/target`) so the stable build is not invalidated.

use std::path::PathBuf;
use std::process::Command;

use crate::cmd::{with_backend_env, Result, XtaskError};

/// The crates whose tests run under AddressSanitizer: every crate that needs
/// no GPU (the OpenCL CPU devices are loaded where a test asks for them).
pub const ASAN_CRATES: [&str; 8] = [
    "ur-api",
    "ur-native",
    "ur-sim",
    "ur-template",
    "ur-memory-manager",
    "ur-reorg",
    "ur-file-io",
    "ur-reliability",
];

/// `ASAN_OPTIONS` of the step. `use_sigaltstack=0`: the OpenCL runtimes
/// (LLVM inside PoCL and rusticl) install their own alternate signal stack on
/// threads they create, which ASan would then try to unmap as its own at
/// thread exit and abort ("unable to unmmap"). `detect_leaks=0`: the OpenCL
/// ICDs keep process-lifetime allocations LeakSanitizer reports; the
/// project's own crates are run with leak detection by [`lsan_step`].
pub const ASAN_OPTIONS: &str = "detect_leaks=0:use_sigaltstack=0:abort_on_error=1:strict_string_checks=1";

/// The crates [`lsan_step`] runs with LeakSanitizer on (no OpenCL loaded).
pub const LSAN_CRATES: [&str; 6] = [
    "ur-api",
    "ur-native",
    "ur-sim",
    "ur-template",
    "ur-memory-manager",
    "ur-reorg",
];

/// The fuzz targets of `fuzz/` (`fuzz/fuzz_targets/<name>.rs`, corpus in
/// `fuzz/corpus/<name>/`).
pub const FUZZ_TARGETS: [&str; 7] = [
    "device_selector",
    "sim_topology",
    "interval_set",
    "mm_plan",
    "file_io_split",
    "reorg_dist",
    "dyn_args",
];

/// Overrides the seconds each fuzz target runs ([`DEFAULT_FUZZ_SECS`]).
pub const FUZZ_SECS_ENV: &str = "XTASK_FUZZ_SECS";

/// Seconds per fuzz target when [`FUZZ_SECS_ENV`] is unset.
pub const DEFAULT_FUZZ_SECS: u64 = 60;

/// `cargo +nightly ...` through the rustup proxy, in the workspace root,
/// without the toolchain the outer `cargo xtask` was started with.
fn nightly_cargo() -> Command {
    let mut cmd = Command::new("cargo");
    cmd.arg("+nightly")
        .current_dir(crate::workspace_root())
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTC")
        .env_remove("RUSTDOC")
        .env_remove("CARGO");
    cmd
}

fn asan_test(crates: &[&str], options: &str, target_dir: &str) -> Command {
    let mut cmd = nightly_cargo();
    cmd.args(["test", "--target", "x86_64-unknown-linux-gnu"]);
    for c in crates {
        cmd.args(["-p", c]);
    }
    // Unit and integration tests; doctests would need RUSTDOCFLAGS too and
    // add nothing the sanitizer sees.
    cmd.args(["--lib", "--tests", "--no-fail-fast"])
        .env("RUSTFLAGS", "-Zsanitizer=address")
        .env("RUSTDOCFLAGS", "-Zsanitizer=address")
        .env("ASAN_OPTIONS", options)
        .env("CARGO_TARGET_DIR", target_dir);
    with_backend_env(&mut cmd);
    cmd
}

/// The host-side crates' unit and integration tests under AddressSanitizer
/// (nightly, `target/asan`). Any report fails the step.
pub fn asan_step() -> Command {
    asan_test(&ASAN_CRATES, ASAN_OPTIONS, "target/asan")
}

/// The crates that load no OpenCL runtime, under ASan with LeakSanitizer
/// on (`detect_leaks=1`), sharing `target/asan`.
pub fn lsan_step() -> Command {
    asan_test(
        &LSAN_CRATES,
        "detect_leaks=1:use_sigaltstack=0:abort_on_error=1",
        "target/asan",
    )
}

/// Seconds each fuzz target runs: [`FUZZ_SECS_ENV`] or [`DEFAULT_FUZZ_SECS`].
pub fn fuzz_secs() -> Result<u64> {
    match std::env::var(FUZZ_SECS_ENV) {
        Ok(v) => v
            .trim()
            .parse()
            .map_err(|_| XtaskError::Other(format!("{FUZZ_SECS_ENV}={v:?} is not a number of seconds"))),
        Err(_) => Ok(DEFAULT_FUZZ_SECS),
    }
}

/// One bounded run per fuzz target: `cargo +nightly fuzz run <target>
/// fuzz/corpus/<target> -- -max_total_time=<secs>`, after which libFuzzer
/// prints its execution count (`Done N runs in S second(s)`). A crash
/// fails the step and leaves the input in `fuzz/artifacts/<target>/`.
pub fn fuzz_steps(secs: u64) -> Vec<(String, Command)> {
    FUZZ_TARGETS
        .iter()
        .map(|t| {
            let mut cmd = nightly_cargo();
            cmd.args(["fuzz", "run", "--fuzz-dir", "fuzz", t])
                .arg(format!("fuzz/corpus/{t}"))
                .arg("--")
                .arg(format!("-max_total_time={secs}"))
                .arg("-print_final_stats=1")
                .env("ASAN_OPTIONS", "detect_leaks=0:use_sigaltstack=0");
            (format!("fuzz-{t}"), cmd)
        })
        .collect()
}

/// Replays every committed corpus and regression input once per target
/// (`-runs=0`): quick, and what a test run of the fuzz crate amounts to.
pub fn fuzz_replay_steps() -> Vec<(String, Command)> {
    FUZZ_TARGETS
        .iter()
        .map(|t| {
            let mut cmd = nightly_cargo();
            cmd.args(["fuzz", "run", "--fuzz-dir", "fuzz", t])
                .arg(format!("fuzz/corpus/{t}"))
                .arg(format!("fuzz/regressions/{t}"))
                .args(["--", "-runs=0"])
                .env("ASAN_OPTIONS", "detect_leaks=0:use_sigaltstack=0");
            (format!("fuzz-replay-{t}"), cmd)
        })
        .collect()
}

/// Is `cargo-fuzz` installed (for the nightly toolchain's cargo)?
pub fn cargo_fuzz_installed() -> bool {
    nightly_cargo()
        .args(["fuzz", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs what these steps need, idempotently: the nightly toolchain
/// (with rust-src, which `-Zsanitizer` builds of std do not need but Miri
/// does) and `cargo-fuzz` (`cargo install cargo-fuzz --locked`, skipped
/// when `cargo fuzz --version` already answers).
pub fn setup(dry_run: bool) -> Result<()> {
    let have_nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have_nightly {
        let mut cmd = Command::new("rustup");
        cmd.args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
            "--component",
            "rust-src,miri",
        ]);
        run_or_show(&mut cmd, dry_run)?;
    }
    if cargo_fuzz_installed() {
        eprintln!("xtask: cargo-fuzz present");
        return Ok(());
    }
    let mut cmd = Command::new("cargo");
    cmd.args(["install", "cargo-fuzz", "--locked"]);
    run_or_show(&mut cmd, dry_run)
}

fn run_or_show(cmd: &mut Command, dry_run: bool) -> Result<()> {
    if dry_run {
        eprintln!("xtask: would run: {}", crate::cmd::display(cmd));
        Ok(())
    } else {
        crate::cmd::run(cmd)
    }
}

/// The folder of the fuzz crate.
pub fn fuzz_dir() -> PathBuf {
    crate::workspace_root().join("fuzz")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::display;

    #[test]
    fn asan_step_runs_the_host_crates_on_nightly_with_the_sanitizer() {
        let s = display(&asan_step());
        assert!(
            s.contains("cargo +nightly test --target x86_64-unknown-linux-gnu"),
            "{s}"
        );
        assert!(s.contains("RUSTFLAGS=-Zsanitizer=address"), "{s}");
        assert!(s.contains("use_sigaltstack=0"), "{s}");
        for c in ASAN_CRATES {
            assert!(s.contains(&format!("-p {c} ")), "{c} missing: {s}");
        }
        assert!(!s.contains("ur-opencl") && !s.contains("ur-cuda"), "{s}");
        assert!(display(&lsan_step()).contains("detect_leaks=1"));
    }

    #[test]
    fn every_fuzz_target_has_a_step_a_source_and_a_corpus() {
        let steps = fuzz_steps(7);
        assert_eq!(steps.len(), FUZZ_TARGETS.len());
        for ((name, cmd), t) in steps.iter().zip(FUZZ_TARGETS) {
            assert_eq!(name, &format!("fuzz-{t}"));
            let s = display(cmd);
            assert!(
                s.contains(&format!("fuzz run --fuzz-dir fuzz {t} fuzz/corpus/{t}")),
                "{s}"
            );
            assert!(s.ends_with("-max_total_time=7 -print_final_stats=1"), "{s}");
            assert!(
                fuzz_dir().join("fuzz_targets").join(format!("{t}.rs")).is_file(),
                "{t}.rs"
            );
            let corpus = fuzz_dir().join("corpus").join(t);
            let seeds = std::fs::read_dir(&corpus).map(|d| d.count()).unwrap_or(0);
            assert!(seeds > 0, "no committed seeds in {}", corpus.display());
        }
        assert_eq!(fuzz_replay_steps().len(), FUZZ_TARGETS.len());
    }
}
