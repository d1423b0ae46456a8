//! `cargo xtask ci`: the checks CI runs, in order, failing fast.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd::{cargo, human, run_limited, step, with_backend_env, Result, XtaskError, OPENCL_ENV};
use crate::reliability;

/// Overrides the per-step time limit, in seconds.
pub const STEP_TIMEOUT_ENV: &str = "XTASK_STEP_TIMEOUT_SECS";

/// The per-step time limit when [`STEP_TIMEOUT_ENV`] is unset: far above a
/// normal run, so only a hang reaches it.
const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(45 * 60);

/// Whether CI runs the `clients` step: dpctl's suite and dpnp's
/// `test_sum.py` on Intel's CPU OpenCL device and on PoCL, dpctl's suite on rusticl,
/// through our adapter library only (`cargo xtask clients --ci`), failing on a crash or time-out, on a failed test not in
/// `clients::KNOWN_FAILING`, and on a known failure that passes. THE
/// switch (`XTASK_CI_CLIENTS=1` / `=0` overrides it for one run).
pub const CLIENTS_STEP: bool = true;

/// Overrides [`CLIENTS_STEP`] for one run (`1` on, `0` off).
pub const CLIENTS_STEP_ENV: &str = "XTASK_CI_CLIENTS";

/// The `clients` step's command. Measured here (2 shared cores, loaded,
/// 2026-11-26): 2m15s in all, of which 44 s the incremental `cargo build
/// --release -p ur-capi` after a merge (7 s when only ur-capi changed,
/// about 5 minutes from nothing), dpctl 24-35 s and test_sum.py 56-80 s
/// (through UR's own adapter 31-48 s and 66-80 s); dpctl on PoCL added
/// 26 s (2m14s in all with no build), test_sum.py on PoCL 1m28s
/// (2026-11-28, its reductions built with the group builtins); each suite run is killed
/// after `clients::known::CI_RUN_LIMIT` (15 minutes).
fn clients_step() -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap_or_else(|_| "xtask".into()));
    c.args(["clients", "--ci"]);
    c
}

/// Is the `clients` step on ([`CLIENTS_STEP`], or its override), and is
/// the clients' venv there? Without the venv it is a skip with the reason
/// outside CI and a failure in CI (where setup ran first).
fn clients_step_on() -> Result<bool> {
    let on = match std::env::var(CLIENTS_STEP_ENV).as_deref().map(str::trim) {
        Ok("1") => true,
        Ok("0") => false,
        _ => CLIENTS_STEP,
    };
    if !on {
        eprintln!("xtask: skipping step `clients`: off (CLIENTS_STEP in xtask/src/ci.rs, or {CLIENTS_STEP_ENV}=1)");
        return Ok(false);
    }
    if crate::clients::venv_ready() {
        return Ok(true);
    }
    let why = format!(
        "no clients venv at {} (`cargo xtask setup` makes it)",
        crate::clients::venv_dir().display()
    );
    if in_ci() {
        return Err(XtaskError::Other(why));
    }
    eprintln!("xtask: skipping step `clients`: {why}");
    Ok(false)
}

/// The steps, in order: a name and the command it runs.
fn steps() -> Result<Vec<(String, Command)>> {
    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    let mut clippy = cargo();
    clippy.args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]);
    let mut test = cargo();
    // Unit tests, the conformance suite on every present device, doctests;
    // every test target runs even after one fails, so CI shows all failures.
    with_backend_env(test.args(["test", "--workspace", "--no-fail-fast"]));
    if in_ci() {
        // `setup` ran first: an OpenCL runtime, the wheels and g++ the
        // SYCL programs of the UR C ABI tests need, or h5py and libhdf5
        // for the HDF5 filter tests, missing here is a failure, not a skip.
        for key in [REQUIRE_OPENCL_ENV, REQUIRE_SYCL_ENV, REQUIRE_H5PY_ENV] {
            if std::env::var_os(key).is_none() {
                test.env(key, "1");
            }
        }
    }
    // The bad-input census compares its table with the committed one
    // instead of rewriting it (a stale docs/bad-input-census.md fails).
    test.env("UR_CENSUS_CHECK", "1");
    // File <-> device round trips of 256 MiB + 5 bytes on every device and
    // backend, in release (too slow in debug).
    let mut big_io = cargo();
    with_backend_env(big_io.args([
        "test",
        "-p",
        "ur-file-io",
        "--release",
        "--test",
        "roundtrip",
        "--",
        "big",
    ]));
    // The committed Level Zero bindings are what codegen makes of the headers.
    let mut bindings = Command::new(std::env::current_exe().unwrap_or_else(|_| "xtask".into()));
    bindings.args(["codegen", "--check"]);
    // The suite again on the Level Zero loader's null driver (built by
    // `setup`): every API-flow and negative test, data checks as skips.
    let mut null_driver = cargo();
    with_backend_env(null_driver.args(["test", "-p", "ur-conformance", "--test", "conformance"]));
    null_driver
        .env("ZE_ENABLE_NULL_DRIVER", "1")
        .env("UR_DEVICE_SELECTOR", "level_zero:*")
        .env("LD_LIBRARY_PATH", null_driver_path());
    // Data reorganisation across processes: DRI's example #1 (5 senders,
    // 5 receivers, every element checked) and random distributions over 4
    // ranks against a global model. Root may run mpirun only when told.
    let mut mpi_examples = cargo();
    mpi_examples.args(["build", "-p", "ur-reorg-mpi", "--examples"]);
    let dri = mpirun(10, "dri_example1", &[]);
    let prop = mpirun(4, "mpi_prop", &["60"]);
    // The runtime-style example (documentation that must keep running).
    let mut example = cargo();
    with_backend_env(example.args(["run", "-p", "ur-examples", "--example", "pipeline"]));
    let mut doc = cargo();
    doc.args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", rustdocflags());
    let mut steps: Vec<(String, Command)> = [
        ("fmt", fmt),
        ("clippy", clippy),
        ("codegen", bindings),
        ("test", test),
        ("ze-null", null_driver),
        ("file-io-big", big_io),
        ("mpi-build", mpi_examples),
        ("mpi-dri", dri),
        ("mpi-prop", prop),
        ("example", example),
        // dpctl and dpnp through our adapter library (when CLIENTS_STEP is on).
        ("clients", clients_step()),
        ("doc", doc),
        // Reliability (issue #16), on nightly: the host-side crates' tests
        // under AddressSanitizer, again with LeakSanitizer where no OpenCL
        // runtime is loaded, the pure parts under Miri, the crates with
        // hand-written concurrency under ThreadSanitizer, then every fuzz
        // target for a bounded time after replaying its committed inputs.
        ("asan", reliability::asan_step()),
        ("asan-capi", reliability::asan_capi_step()),
        ("lsan", reliability::lsan_step()),
        ("miri", reliability::miri_step()),
        ("tsan", reliability::tsan_step()),
        ("fuzz-build", reliability::fuzz_build_step()),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_owned(), c))
    .collect();
    steps.extend(reliability::fuzz_steps(reliability::fuzz_secs()?));
    Ok(steps)
}

/// Whether a reliability step's tools are there. Missing, it is a skip with
/// the reason outside CI and a failure in CI (where setup ran first).
fn reliability_tools(step: &str) -> Result<bool> {
    let nightly = ["asan", "asan-capi", "lsan", "miri", "tsan"].contains(&step) || step.starts_with("fuzz");
    let Some(why) = nightly.then(|| reliability::missing_tool(step)).flatten() else {
        return Ok(true);
    };
    if in_ci() {
        return Err(XtaskError::Other(format!("step `{step}`: {why}")));
    }
    eprintln!("xtask: skipping step `{step}`: {why}");
    Ok(false)
}

/// Whether the null driver `setup` builds is there. Missing, it is a skip
/// with the reason outside CI and a failure in CI (where setup ran first).
fn null_driver_built() -> Result<bool> {
    let lib = crate::setup::ze_null_lib(&crate::workspace_root());
    if lib.join("libze_null.so.1").is_file() {
        return Ok(true);
    }
    let why = format!(
        "no Level Zero null driver in {} (`cargo xtask setup` builds it)",
        lib.display()
    );
    if in_ci() {
        return Err(XtaskError::Other(why));
    }
    eprintln!("xtask: skipping step `ze-null`: {why}");
    Ok(false)
}

/// `mpirun -n <ranks> --oversubscribe` of an example of `ur-reorg-mpi`
/// (built by the `mpi-build` step), allowed to run as root.
fn mpirun(ranks: usize, example: &str, args: &[&str]) -> Command {
    let exe = crate::workspace_root().join("target/debug/examples").join(example);
    let mut c = crate::cmd::mpirun(ranks, &exe);
    c.args(args);
    c
}

/// `LD_LIBRARY_PATH` with the null driver's folder first.
fn null_driver_path() -> std::ffi::OsString {
    let lib = crate::setup::ze_null_lib(&crate::workspace_root());
    let mut paths = vec![lib];
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_default()
}

/// fmt, clippy, the bindings check, tests (unit, conformance, doctests),
/// the suite on the Level Zero null driver, the MPI examples, the pipeline
/// example, dpctl and dpnp through our adapter library (when
/// [`CLIENTS_STEP`] is on), docs, then the reliability steps (ASan, LSan, Miri, bounded
/// fuzzing).
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
    let mut done: Vec<(String, Duration, bool)> = Vec::new();
    for (name, mut cmd) in steps()? {
        let skip = (name == "ze-null" && !null_driver_built()?)
            || !reliability_tools(&name)?
            || (name == "clients" && !clients_step_on()?);
        if !skip {
            if let Some(free) = disk_free_gib() {
                eprintln!("xtask: {free:.1} GiB free on disk before `{name}`");
            }
            let t = Instant::now();
            let outcome = step(&name, || run_limited(&mut cmd, limit));
            done.push((name.clone(), t.elapsed(), outcome.is_ok()));
            if outcome.is_err() {
                eprint!("{}", summary(&done));
                return outcome;
            }
        }
        if in_ci() {
            free_build_folders_after(&name);
        }
    }
    eprint!("{}", summary(&done));
    eprintln!("xtask: ci passed in {}", human(start.elapsed()));
    Ok(())
}

/// Build folders no later step reads, by the step after which CI removes
/// them. A fresh CI machine has limited disk: a run that kept every folder
/// (about 16 GiB of build output, 3 of it incremental state) ran out of
/// space building the fuzz targets. The stable debug build's outputs go after
/// `doc`, its last user (this program, `target/debug/xtask`, stays), the
/// sanitizer build after `lsan`, Miri's after `miri`. Only in CI: a
/// developer's `cargo xtask ci` keeps its builds.
const FREED_AFTER: &[(&str, &[&str])] = &[
    (
        "doc",
        &[
            "target/debug/deps",
            "target/debug/build",
            "target/debug/examples",
            "target/debug/incremental",
            "target/debug/.fingerprint",
        ],
    ),
    ("lsan", &["target/asan"]),
    ("miri", &["target/miri"]),
    ("tsan", &["target/tsan"]),
];

/// Removes the folders [`FREED_AFTER`] lists for `step`, saying how much
/// disk that gave back. A folder that cannot be removed is reported and left
/// (the next step may still fit).
fn free_build_folders_after(step: &str) {
    let root = crate::workspace_root();
    for (_, folders) in FREED_AFTER.iter().filter(|(s, _)| *s == step) {
        let before = disk_free_gib();
        for folder in *folders {
            let path = root.join(folder);
            if !path.exists() {
                continue;
            }
            if let Err(e) = std::fs::remove_dir_all(&path) {
                eprintln!("xtask: could not remove {}: {e}", path.display());
            }
        }
        if let (Some(before), Some(after)) = (before, disk_free_gib()) {
            eprintln!(
                "xtask: removed {} after `{step}`: {:.1} GiB given back, {after:.1} GiB free",
                folders.join(", "),
                after - before
            );
        }
    }
}

/// GiB available on the workspace's file system (`df -Pk`), when `df` answers.
fn disk_free_gib() -> Option<f64> {
    let out = Command::new("df")
        .arg("-Pk")
        .arg(crate::workspace_root())
        .output()
        .ok()?;
    df_available_gib(&String::from_utf8_lossy(&out.stdout))
}

/// The "Available" column of `df -P`'s one data row, in GiB.
fn df_available_gib(df: &str) -> Option<f64> {
    let kib: f64 = df.lines().nth(1)?.split_whitespace().nth(3)?.parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// Makes the OpenCL adapter's tests fail, not skip, without an OpenCL device.
const REQUIRE_OPENCL_ENV: &str = "UR_REQUIRE_OPENCL";

/// Makes the UR C ABI's loader and SYCL tests fail, not skip, without the
/// wheels or g++.
const REQUIRE_SYCL_ENV: &str = "UR_REQUIRE_SYCL";

/// Makes the HDF5 tests (`ur-filters`, `ur-cp --hdf5`) fail, not skip,
/// without h5py (which writes their files) or libhdf5.
const REQUIRE_H5PY_ENV: &str = "UR_REQUIRE_H5PY";

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
fn summary<S: AsRef<str>>(done: &[(S, Duration, bool)]) -> String {
    let mut s = String::from("xtask: ci summary\n");
    for (name, took, ok) in done {
        s.push_str(&format!(
            "  {:<22} {:<6} {:>8}\n",
            name.as_ref(),
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
        let steps = steps().unwrap();
        let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "fmt",
                "clippy",
                "codegen",
                "test",
                "ze-null",
                "file-io-big",
                "mpi-build",
                "mpi-dri",
                "mpi-prop",
                "example",
                "clients",
                "doc",
                "asan",
                "asan-capi",
                "lsan",
                "miri",
                "tsan",
                "fuzz-build",
                "fuzz-device_selector",
                "fuzz-sim_topology",
                "fuzz-interval_set",
                "fuzz-mm_plan",
                "fuzz-file_io_split",
                "fuzz-reorg_dist",
                "fuzz-dyn_args",
                "fuzz-capi_args",
            ]
        );
        let test = display(&steps[3].1);
        assert!(test.contains("test --workspace --no-fail-fast"), "{test}");
        for (key, _) in OPENCL_ENV {
            // Set by us, or left to the caller's environment.
            assert!(test.contains(key) || std::env::var_os(key).is_some(), "{test}");
        }
        assert!(display(&steps[1].1).ends_with("clippy --workspace --all-targets -- -D warnings"));
        assert!(display(&steps[2].1).ends_with("codegen --check"));
        let null = display(&steps[4].1);
        assert!(
            null.contains("ZE_ENABLE_NULL_DRIVER=1") && null.contains("level_zero:*"),
            "{null}"
        );
        assert!(display(&steps[5].1).contains("-p ur-file-io --release"));
        assert!(display(&steps[7].1).contains("mpirun -n 10 --oversubscribe"));
        assert!(display(&steps[9].1).contains("--example pipeline"));
        assert!(display(&steps[10].1).ends_with("clients --ci"));
        assert!(display(&steps[11].1).contains("RUSTDOCFLAGS="));
        let asan = display(&steps[12].1);
        assert!(
            asan.contains("RUSTFLAGS=-Zsanitizer=address") && asan.contains("CARGO_TARGET_DIR=target/asan"),
            "{asan}"
        );
        assert!(display(&steps[13].1).contains("-p ur-capi --lib"));
        assert!(display(&steps[14].1).contains("detect_leaks=1"));
        assert!(display(&steps[15].1).contains("cargo +nightly miri test"));
        assert!(display(&steps[16].1).contains("RUSTFLAGS=-Zsanitizer=thread"));
        assert!(display(&steps[17].1).ends_with("fuzz build --fuzz-dir fuzz"));
        assert!(display(&steps[18].1).contains("-max_total_time="));
    }

    #[test]
    fn build_folders_are_freed_only_after_their_last_user() {
        let names: Vec<String> = steps().unwrap().into_iter().map(|(n, _)| n).collect();
        let at = |step: &str| names.iter().position(|n| n == step).unwrap();
        for (step, folders) in FREED_AFTER {
            assert!(names.iter().any(|n| n == step), "{step} is not a step");
            for folder in *folders {
                assert!(!"target/debug/xtask".starts_with(folder), "{folder} holds this program");
            }
        }
        // The stable debug build is freed after every step that builds or
        // runs it; the sanitizer and Miri folders after their own steps.
        for user in ["clippy", "test", "ze-null", "mpi-build", "mpi-prop", "example", "doc"] {
            assert!(at(user) <= at("doc"), "{user} runs after target/debug is freed");
        }
        assert!(at("asan") < at("lsan") && at("lsan") < at("miri") && at("miri") < at("fuzz-build"));
        assert!(at("tsan") < at("fuzz-build") && at("asan-capi") < at("lsan"));
    }

    #[test]
    fn df_output_is_read_in_gib() {
        let df = "Filesystem     1024-blocks      Used Available Capacity Mounted on\n\
                  /dev/vda        263174212  79091304  16777216      83% /\n";
        assert_eq!(df_available_gib(df), Some(16.0));
        assert_eq!(df_available_gib("garbage"), None);
    }

    #[test]
    fn summary_marks_the_failed_step() {
        let s = summary(&[
            ("fmt", Duration::from_millis(900), true),
            ("clippy", Duration::from_secs(61), false),
        ]);
        assert!(s.contains("fmt                    ok"), "{s}");
        assert!(s.contains("clippy                 FAILED"), "{s}");
        assert!(s.contains("1m01s"), "{s}");
    }
}
