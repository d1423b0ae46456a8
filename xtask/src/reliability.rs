//! Reliability steps of `cargo xtask ci` (issue #16): the host-side crates'
//! tests under AddressSanitizer (and LeakSanitizer), the concurrent ones
//! under ThreadSanitizer, the pure parts under Miri, the bounded fuzz runs,
//! and the `setup` helper that installs what they need (the nightly
//! toolchain with Miri and rust-src, cargo-fuzz).
//!
//! All need the nightly toolchain (`-Zsanitizer`, Miri, libFuzzer); they
//! run it through the rustup proxy (`cargo +nightly`), in their own target
//! folders (`target/asan`, `target/tsan`, `target/miri`, `fuzz/target`) so
//! the stable build is not invalidated.
//!
//! A fuzz crash fails its step and leaves the input in
//! `fuzz/artifacts/<target>/`; once the cause is fixed, the input goes into
//! `fuzz/regressions/<target>/`, which every later run replays first.

use std::process::Command;

use crate::cmd::{with_backend_env, Result, XtaskError};

/// The crates whose tests run under AddressSanitizer with leak detection
/// off: those whose tests load the OpenCL runtimes (the ICDs keep
/// process-lifetime allocations LeakSanitizer would report). Every other
/// host-side crate runs once, under [`lsan_step`] (AddressSanitizer with
/// LeakSanitizer on), instead of twice: leak detection adds a check at exit,
/// not less instrumentation.
pub const ASAN_CRATES: [&str; 4] = ["ur-memory-manager", "ur-file-io", "ur-filters", "ur-reliability"];

/// `ASAN_OPTIONS` of the step. `use_sigaltstack=0`: the OpenCL runtimes
/// (LLVM inside PoCL and rusticl) install their own alternate signal stack on
/// threads they create, which ASan would then try to unmap as its own at
/// thread exit and abort ("unable to unmmap"). `detect_leaks=0`: the OpenCL
/// ICDs keep process-lifetime allocations LeakSanitizer reports; the
/// project's own crates are run with leak detection by [`lsan_step`].
pub const ASAN_OPTIONS: &str = "detect_leaks=0:use_sigaltstack=0:abort_on_error=1:strict_string_checks=1";

/// `ASAN_OPTIONS` of [`lsan_step`]: [`ASAN_OPTIONS`] with leak detection on.
pub const LSAN_OPTIONS: &str = "detect_leaks=1:use_sigaltstack=0:abort_on_error=1:strict_string_checks=1";

/// The crates [`lsan_step`] runs under AddressSanitizer with LeakSanitizer
/// on and no OpenCL runtime: every host-side crate that needs none, and the
/// memory manager again (its paths over native and sim devices, for leaks).
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
pub const FUZZ_TARGETS: [&str; 8] = [
    "device_selector",
    "sim_topology",
    "interval_set",
    "mm_plan",
    "file_io_split",
    "reorg_dist",
    "dyn_args",
    "capi_args",
];

/// Overrides the seconds each fuzz target runs ([`DEFAULT_FUZZ_SECS`]).
pub const FUZZ_SECS_ENV: &str = "XTASK_FUZZ_SECS";

/// Seconds per fuzz target when [`FUZZ_SECS_ENV`] is unset: each run
/// starts from the committed corpus, so twenty seconds per target keeps
/// finding new paths while the eight targets stay under three minutes of
/// CI (at 60 s they were eight of its ~50 minutes; at 30 s four of 46
/// once CI also ran dpctl on PoCL).
pub const DEFAULT_FUZZ_SECS: u64 = 20;

/// The version of cargo-fuzz `setup` installs (from crates.io, `--locked`).
pub const CARGO_FUZZ_VERSION: &str = "0.13.2";

/// The nightly components the steps need: Miri and the standard library's
/// source (Miri builds its own sysroot from it, the ThreadSanitizer step an
/// instrumented `std`).
pub const NIGHTLY_COMPONENTS: [&str; 2] = ["miri", "rust-src"];

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

/// The sanitizers the test steps build with.
#[derive(Debug, Clone, Copy)]
enum Sanitizer {
    Address,
    Thread,
}

impl Sanitizer {
    /// Its `-Zsanitizer=` name.
    fn name(self) -> &'static str {
        match self {
            Sanitizer::Address => "address",
            Sanitizer::Thread => "thread",
        }
    }

    /// The environment variable its runtime reads its options from.
    fn options_env(self) -> &'static str {
        match self {
            Sanitizer::Address => "ASAN_OPTIONS",
            Sanitizer::Thread => "TSAN_OPTIONS",
        }
    }

    /// Whether `std` must be built instrumented too: ThreadSanitizer sees
    /// the synchronisation of `std`'s own `Arc`, `Mutex` and channels only
    /// then, and reports false races through them otherwise.
    fn builds_std(self) -> bool {
        matches!(self, Sanitizer::Thread)
    }
}

/// `crates`' unit tests and their integration tests (all of them, or only
/// `tests` where given) under sanitizer `san` with `options`, in
/// `target_dir`.
fn sanitized_test(san: Sanitizer, crates: &[&str], tests: Option<&[&str]>, options: &str, target_dir: &str) -> Command {
    let mut cmd = nightly_cargo();
    cmd.arg("test");
    if san.builds_std() {
        cmd.arg("-Zbuild-std");
    }
    cmd.args(["--target", "x86_64-unknown-linux-gnu"]);
    for c in crates {
        cmd.args(["-p", c]);
    }
    // Unit and integration tests; doctests would need RUSTDOCFLAGS too and
    // add nothing the sanitizer sees.
    cmd.arg("--lib");
    match tests {
        None => {
            cmd.arg("--tests");
        }
        Some(tests) => {
            for t in tests {
                cmd.args(["--test", t]);
            }
        }
    }
    let flag = format!("-Zsanitizer={}", san.name());
    cmd.arg("--no-fail-fast")
        .env("RUSTFLAGS", &flag)
        .env("RUSTDOCFLAGS", &flag)
        .env(san.options_env(), options)
        .env("CARGO_TARGET_DIR", target_dir)
        // The bad-input census checks the committed table, never rewrites it.
        .env("UR_CENSUS_CHECK", "1");
    with_backend_env(&mut cmd);
    cmd
}

/// [`ASAN_CRATES`]' unit and integration tests under AddressSanitizer
/// (nightly, `target/asan`). Any report fails the step.
pub fn asan_step() -> Command {
    sanitized_test(Sanitizer::Address, &ASAN_CRATES, None, ASAN_OPTIONS, "target/asan")
}

/// The C ABI's (`ur-capi`) integration tests that [`asan_capi_step`] runs
/// beside its unit tests: every one in `ur-capi/tests/` but the two the
/// tests' `ASAN_CAPI_LEFT_OUT` names with the reason (a unit test checks
/// that each file there is in one list or the other).
pub const ASAN_CAPI_TESTS: [&str; 10] = [
    "cts",
    "deleters",
    "handle_sweep",
    "kernels",
    "managed",
    "native_devices",
    "native_events",
    "one_platform",
    "partition",
    "threads",
];

/// The C ABI's integration tests left out of [`asan_capi_step`], and why.
#[cfg(test)]
const ASAN_CAPI_LEFT_OUT: [(&str, &str); 2] = [
    (
        "loader",
        "builds the adapter library with a nested `cargo build`, which inherits the sanitizer flags \
         without the sanitizer's target and fails to build",
    ),
    (
        "sycl",
        "loads the adapter library into SYCL programs and UR's loader, which are not built with the sanitizer",
    ),
];

/// The C ABI's unit tests and [`ASAN_CAPI_TESTS`] under AddressSanitizer
/// (`target/asan`, shared with [`asan_step`]), with the OpenCL runtimes
/// loaded: its handle arenas, out-pointers and info queries over every
/// device. Any report fails the step.
pub fn asan_capi_step() -> Command {
    sanitized_test(
        Sanitizer::Address,
        &["ur-capi"],
        Some(&ASAN_CAPI_TESTS),
        ASAN_OPTIONS,
        "target/asan",
    )
}

/// Where [`lsan_step`] points the OpenCL ICD loader: a folder that does not
/// exist, so no OpenCL runtime is loaded (their process-lifetime
/// allocations, in modules unloaded by the time LeakSanitizer looks, would
/// be reported as leaks of `<unknown module>`) and the OpenCL paths of the
/// tests skip.
pub const LSAN_NO_OPENCL_VENDORS: &str = "target/asan/no-opencl-vendors";

/// [`LSAN_CRATES`] under ASan with LeakSanitizer on (`detect_leaks=1`),
/// sharing `target/asan`, with no OpenCL runtime loaded. Together with
/// [`asan_step`] it covers every host-side crate under the sanitizer.
pub fn lsan_step() -> Command {
    let mut cmd = sanitized_test(Sanitizer::Address, &LSAN_CRATES, None, LSAN_OPTIONS, "target/asan");
    cmd.env("OCL_ICD_VENDORS", crate::workspace_root().join(LSAN_NO_OPENCL_VENDORS));
    cmd
}

/// The crates whose tests run under ThreadSanitizer ([`tsan_step`]): the
/// ones with hand-written concurrency (the dyn layer's lanes, grace
/// periods, event slab and spin lock; the C ABI's handle arenas and
/// per-thread quarantine; the native adapter's worker and lock-free
/// timeline; the memory manager's pinned registry and asynchronous
/// accesses; the sim adapter's queues and link model; data reorganisation's
/// executor threads; file I/O's engine, pool and bounce buffers; the
/// many-thread device stress test).
pub const TSAN_CRATES: [&str; 8] = [
    "ur-api",
    "ur-native",
    "ur-capi",
    "ur-memory-manager",
    "ur-sim",
    "ur-reorg",
    "ur-file-io",
    "ur-reliability",
];

/// The integration tests of [`TSAN_CRATES`] that [`tsan_step`] runs beside
/// their unit tests: those that drive several threads at once.
pub const TSAN_TESTS: [&str; 5] = ["threads", "stress", "async_access", "behaviour", "stress_devices"];

/// Where [`tsan_step`] points the OpenCL ICD loader: a folder that does not
/// exist, so no OpenCL runtime is loaded. The runtimes are not built with
/// ThreadSanitizer, which then sees their libc calls (`free`, mutex
/// destruction) but not how they synchronise them, and reports races
/// between those calls and ours (539 such reports in a run with PoCL,
/// rusticl and Intel's runtime loaded, none with both sides in this
/// project's code; none at all without them).
pub const TSAN_NO_OPENCL_VENDORS: &str = "target/tsan/no-opencl-vendors";

/// `TSAN_OPTIONS` of the step: every report printed (the test binary then
/// exits 66, which fails the step), with the second stack of a lock-order
/// report.
pub const TSAN_OPTIONS: &str = "halt_on_error=0:second_deadlock_stack=1";

/// Seconds the device stress test runs under [`tsan_step`] (its default, 20,
/// is for an uninstrumented build; ThreadSanitizer slows it 5-15 times).
pub const TSAN_STRESS_SECS: &str = "5";

/// [`TSAN_CRATES`]' unit tests and [`TSAN_TESTS`] under ThreadSanitizer, in
/// `target/tsan`, with the standard library built instrumented
/// (`-Zbuild-std`: an uninstrumented `std` hides the synchronisation of its
/// own `Arc`, `Mutex` and channels, and TSan reports false races through
/// them), on the native and sim devices (no OpenCL runtime, see
/// [`TSAN_NO_OPENCL_VENDORS`]). Any report fails the step.
pub fn tsan_step() -> Command {
    let mut cmd = sanitized_test(
        Sanitizer::Thread,
        &TSAN_CRATES,
        Some(&TSAN_TESTS),
        TSAN_OPTIONS,
        "target/tsan",
    );
    cmd.env("UR_STRESS_SECS", TSAN_STRESS_SECS)
        .env("OCL_ICD_VENDORS", crate::workspace_root().join(TSAN_NO_OPENCL_VENDORS));
    cmd
}

/// The crates Miri runs, and the test-path filters that select their pure
/// parts: the dyn layer's parameter checks, its grace periods and event
/// slab (raw-pointer borrows that outlive the table lock), the pointer map's small
/// tests (its model and growth tests are too long for the interpreter;
/// `ur-reliability`'s `miri_pure` races readers against a writer on a
/// small map instead), the device selector parser, the memory manager's
/// interval sets and plans, the native adapter's queue (its worker
/// thread, the timeline's lock-free counters and wake-ups, commands moved
/// by value). Not the pinned registry: it asks the kernel which pages are
/// mapped (`mincore`), a foreign call Miri cannot run.
pub const MIRI_CRATES: [&str; 4] = ["ur-api", "ur-memory-manager", "ur-reliability", "ur-native"];

/// See [`MIRI_CRATES`].
pub const MIRI_FILTERS: [&str; 12] = [
    "dynamic::check::",
    "dynamic::grace::",
    "dynamic::slab::",
    "dynamic::pointer_map::tests::bad_ranges_are_refused",
    "dynamic::pointer_map::tests::every_tier_answers",
    "selector::",
    "interval::",
    "plan::",
    "miri_pure::",
    "timeline::tests::",
    "command::tests::",
    "queue::tests::",
];

/// `MIRIFLAGS` of the step: proptest reads the working directory (for its
/// failure files), so isolation is off; the pointer map packs addresses
/// into integers, so provenance is permissive.
pub const MIRIFLAGS: &str = "-Zmiri-disable-isolation -Zmiri-permissive-provenance";

/// The pure parts' unit tests under Miri (undefined behaviour, aliasing,
/// data races, leaks), in `target/miri`, with proptest's default case
/// count cut to 16 (each case is interpreted).
pub fn miri_step() -> Command {
    let mut cmd = nightly_cargo();
    cmd.args(["miri", "test"]);
    for c in MIRI_CRATES {
        cmd.args(["-p", c]);
    }
    cmd.args(["--lib", "--no-fail-fast", "--"])
        .args(MIRI_FILTERS)
        .env("MIRIFLAGS", MIRIFLAGS)
        .env("PROPTEST_CASES", "16")
        .env("CARGO_TARGET_DIR", "target/miri");
    cmd
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

/// Builds every fuzz target once (libFuzzer, ASan, release with debug
/// assertions), so the runs that follow time fuzzing, not compiling.
pub fn fuzz_build_step() -> Command {
    let mut cmd = nightly_cargo();
    cmd.args(["fuzz", "build", "--fuzz-dir", "fuzz"]);
    cmd
}

/// The committed inputs of `target` a run starts from: its seed corpus and,
/// where there is one, its folder of regression inputs (crashes found and
/// fixed).
fn committed_inputs(target: &str) -> Vec<String> {
    let mut dirs = vec![format!("fuzz/corpus/{target}")];
    let regressions = format!("fuzz/regressions/{target}");
    if crate::workspace_root().join(&regressions).is_dir() {
        dirs.push(regressions);
    }
    dirs
}

/// One bounded run per fuzz target: `cargo +nightly fuzz run <target>
/// fuzz/target/corpus/<target> fuzz/corpus/<target> [fuzz/regressions/<target>]
/// -- -max_total_time=<secs>`. libFuzzer first runs every committed input,
/// then mutates for `secs` seconds and prints its execution count
/// (`stat::number_of_executed_units`). New inputs go to the first folder,
/// a scratch one under `fuzz/target`, so a run leaves the committed
/// corpus as it is. A crash fails the step and leaves the input in
/// `fuzz/artifacts/<target>/`.
pub fn fuzz_steps(secs: u64) -> Vec<(String, Command)> {
    FUZZ_TARGETS
        .iter()
        .map(|t| {
            let mut cmd = nightly_cargo();
            cmd.args(["fuzz", "run", "--fuzz-dir", "fuzz", t])
                .arg(format!("fuzz/target/corpus/{t}"))
                .args(committed_inputs(t))
                .arg("--")
                .arg("-create_missing_dirs=1")
                .arg(format!("-max_total_time={secs}"))
                .arg("-print_final_stats=1")
                .env("ASAN_OPTIONS", "detect_leaks=0:use_sigaltstack=0");
            (format!("fuzz-{t}"), cmd)
        })
        .collect()
}

/// Does `cmd` run and exit 0 (output discarded)?
fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Is `cargo-fuzz` installed (for the nightly toolchain's cargo)?
pub fn cargo_fuzz_installed() -> bool {
    succeeds(nightly_cargo().args(["fuzz", "--version"]))
}

/// Is the nightly toolchain installed (through rustup)?
pub fn nightly_installed() -> bool {
    succeeds(Command::new("rustup").args(["run", "nightly", "rustc", "--version"]))
}

/// The [`NIGHTLY_COMPONENTS`] the nightly toolchain lacks.
fn missing_components() -> Vec<&'static str> {
    let installed = Command::new("rustup")
        .args(["component", "list", "--installed", "--toolchain", "nightly"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    NIGHTLY_COMPONENTS
        .into_iter()
        .filter(|c| !installed.lines().any(|l| l.starts_with(&format!("{c}-")) || l == *c))
        .collect()
}

/// Why a reliability step cannot run here (a tool `cargo xtask setup`
/// installs is missing), or `None` when it can.
pub fn missing_tool(step: &str) -> Option<String> {
    if !nightly_installed() {
        return Some("no nightly toolchain (`cargo xtask setup` installs it)".to_owned());
    }
    if (step == "miri" || step == "tsan") && !missing_components().is_empty() {
        return Some(format!(
            "nightly lacks {} (`cargo xtask setup` adds them)",
            missing_components().join(", ")
        ));
    }
    if step.starts_with("fuzz") && !cargo_fuzz_installed() {
        return Some("no cargo-fuzz (`cargo xtask setup` installs it)".to_owned());
    }
    None
}

/// Installs what these steps need, idempotently: the nightly toolchain
/// (minimal profile) with [`NIGHTLY_COMPONENTS`], and cargo-fuzz
/// [`CARGO_FUZZ_VERSION`] from crates.io (`cargo install --locked`),
/// skipped when `cargo +nightly fuzz --version` already answers. Needs
/// rustup and its distribution server (static.rust-lang.org) and
/// crates.io; nothing from GitHub.
pub fn setup(dry_run: bool) -> Result<()> {
    if !nightly_installed() {
        let mut cmd = Command::new("rustup");
        // `--allow-downgrade`: the newest nightly that has every component.
        cmd.args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
            "--allow-downgrade",
        ])
        .arg("--component")
        .arg(NIGHTLY_COMPONENTS.join(","));
        run_or_show(&mut cmd, dry_run)?;
    } else {
        let missing = missing_components();
        if missing.is_empty() {
            eprintln!(
                "setup: present: nightly toolchain with {}",
                NIGHTLY_COMPONENTS.join(", ")
            );
        } else {
            let mut cmd = Command::new("rustup");
            cmd.args(["component", "add", "--toolchain", "nightly"]).args(&missing);
            run_or_show(&mut cmd, dry_run)?;
        }
    }
    if cargo_fuzz_installed() {
        eprintln!("setup: present: cargo-fuzz");
        return Ok(());
    }
    let mut cmd = Command::new("cargo");
    cmd.args(["install", "cargo-fuzz", "--locked", "--version", CARGO_FUZZ_VERSION]);
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
#[cfg(test)]
fn fuzz_dir() -> std::path::PathBuf {
    crate::workspace_root().join("fuzz")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::display;

    #[test]
    fn every_c_abi_test_runs_under_asan_or_says_why_not() {
        let dir = crate::workspace_root().join("ur-capi/tests");
        let mut found: Vec<String> = std::fs::read_dir(&dir)
            .expect("ur-capi/tests")
            .filter_map(|e| {
                let name = e.ok()?.file_name().into_string().ok()?;
                name.strip_suffix(".rs").map(str::to_owned)
            })
            .collect();
        found.sort();
        let mut listed: Vec<String> = ASAN_CAPI_TESTS
            .iter()
            .chain(ASAN_CAPI_LEFT_OUT.iter().map(|(t, _)| t))
            .map(|t| (*t).to_owned())
            .collect();
        listed.sort();
        assert_eq!(
            found, listed,
            "a test in ur-capi/tests is in neither ASAN_CAPI_TESTS nor ASAN_CAPI_LEFT_OUT"
        );
        let s = display(&asan_capi_step());
        assert!(
            s.contains("RUSTFLAGS=-Zsanitizer=address") && s.contains("-p ur-capi --lib"),
            "{s}"
        );
        for t in ASAN_CAPI_TESTS {
            assert!(s.contains(&format!("--test {t} ")), "{t} missing: {s}");
        }
    }

    #[test]
    fn tsan_step_runs_the_concurrent_crates_with_an_instrumented_std_and_no_opencl() {
        let s = display(&tsan_step());
        assert!(
            s.contains("cargo +nightly test -Zbuild-std --target x86_64-unknown-linux-gnu"),
            "{s}"
        );
        assert!(s.contains("RUSTFLAGS=-Zsanitizer=thread"), "{s}");
        assert!(s.contains(TSAN_NO_OPENCL_VENDORS), "{s}");
        for c in TSAN_CRATES {
            assert!(s.contains(&format!("-p {c} ")), "{c} missing: {s}");
        }
        for t in TSAN_TESTS {
            assert!(s.contains(&format!("--test {t} ")), "{t} missing: {s}");
        }
    }

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
        let lsan = display(&lsan_step());
        assert!(lsan.contains("detect_leaks=1"), "{lsan}");
        assert!(lsan.contains("strict_string_checks=1"), "{lsan}");
        assert!(lsan.contains(LSAN_NO_OPENCL_VENDORS), "{lsan}");
        // Every host-side crate runs under the sanitizer in one of the two steps.
        for c in [
            "ur-api",
            "ur-native",
            "ur-sim",
            "ur-template",
            "ur-memory-manager",
            "ur-reorg",
            "ur-file-io",
            "ur-filters",
            "ur-reliability",
        ] {
            let p = format!("-p {c} ");
            assert!(s.contains(&p) || lsan.contains(&p), "{c} runs under neither step");
        }
        assert!(s.contains("UR_CENSUS_CHECK=1"), "{s}");
    }

    #[test]
    fn miri_runs_the_pure_parts_of_the_host_crates() {
        let s = display(&miri_step());
        assert!(
            s.contains("cargo +nightly miri test -p ur-api -p ur-memory-manager -p ur-reliability -p ur-native --lib"),
            "{s}"
        );
        for f in MIRI_FILTERS {
            assert!(s.contains(f), "{f} missing: {s}");
        }
    }

    #[test]
    fn every_fuzz_target_has_a_step_a_source_and_a_corpus() {
        let steps = fuzz_steps(7);
        assert_eq!(steps.len(), FUZZ_TARGETS.len());
        for ((name, cmd), t) in steps.iter().zip(FUZZ_TARGETS) {
            assert_eq!(name, &format!("fuzz-{t}"));
            let s = display(cmd);
            // New inputs go to the scratch folder, the committed ones are read.
            assert!(
                s.contains(&format!(
                    "fuzz run --fuzz-dir fuzz {t} fuzz/target/corpus/{t} fuzz/corpus/{t}"
                )),
                "{s}"
            );
            let regressions = fuzz_dir().join("regressions").join(t);
            assert_eq!(
                s.contains(&format!("fuzz/regressions/{t}")),
                regressions.is_dir(),
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
    }
}
