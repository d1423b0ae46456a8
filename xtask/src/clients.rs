//! `cargo xtask clients`: real SYCL applications (dpctl's and dpnp's own
//! test suites) through UR's own OpenCL adapter and through ours, side by
//! side, on the same device.
//!
//! The applications come from the Python registry: `setup` makes a virtual
//! environment with [`CLIENT_PACKAGES`] (pinned) at [`venv_dir`]. Their
//! wheels bring Intel's SYCL runtime and UR loader, which load UR's own
//! OpenCL adapter by default, or only ours with
//! `UR_ADAPTERS_FORCE_LOAD=<target>/release/libur_adapter_rust.so`.
//!
//! **The same device on both sides.** Each side lists its devices first
//! (`dpctl.get_devices()` in a child process, no selector set), the device
//! is picked by platform and name ([`pick_device`]: `intel` is Intel's CPU
//! OpenCL runtime, `pocl`, `rusticl`, or any text of "platform / name"),
//! and the suite runs with `ONEAPI_DEVICE_SELECTOR='*:N'`, N being that
//! device's index among the side's devices of its backend. The numbering
//! differs between the sides: UR's adapter runs without rusticl
//! (`RUSTICL_ENABLE` removed: the adapter has crashed with rusticl
//! visible), so Intel's device is `*:2` there (PoCL 0, PoCL 1, Intel) and
//! `*:3` through ours (PoCL 0, PoCL 1, rusticl, Intel; our native host
//! device is not a SYCL device). `opencl:N` is not used: through UR's
//! adapter the loader's `opencl` pre-filter fails with
//! `UR_RESULT_ERROR_UNINITIALIZED` here. `--selector-ur` / `--selector-ours`
//! override the computed selector (e.g. when listing crashes).
//!
//! **Counting.** pytest writes a JUnit XML report (`--junitxml`), parsed
//! with quick-xml ([`parse_junit`]). A process killed by a signal (the SYCL
//! runtime aborting, a segfault) writes none; the pytest plugin
//! `xtask/py/ur_clients_progress.py` writes a line per test as it goes, so
//! the runner still says how many tests finished and which one was running
//! ([`parse_progress`]). Logs: `target/clients/<suite>-<side>.log`.

use std::fmt::Write as _;
use std::fs::File;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use quick_xml::events::Event;
use quick_xml::Reader;
use serde::Deserialize;

use crate::cmd::{cargo, descendants, display, human, run, Result, XtaskError, OPENCL_ENV};

/// The Python packages of the clients, pinned (CI must see what was
/// measured). dpctl and dpnp pull Intel's SYCL runtime, UR loader, OpenCL
/// runtime and oneMKL wheels (2026.2.0) into the venv.
pub const CLIENT_PACKAGES: &[&str] = &["dpctl==0.22.1", "dpnp==0.20.0", "pytest==9.2.0"];

/// Marks a venv whose packages are [`CLIENT_PACKAGES`] (its content).
const INSTALLED: &str = ".ur-clients-installed";

/// The pytest plugin that records progress (see the module docs).
const PROGRESS_PLUGIN: &str = include_str!("../py/ur_clients_progress.py");

/// The plugin's module name.
const PROGRESS_MODULE: &str = "ur_clients_progress";

/// The variable naming the plugin's output file.
const PROGRESS_ENV: &str = "UR_CLIENTS_PROGRESS";

/// The variable that makes the UR loader load only the named adapter.
pub const FORCE_LOAD_ENV: &str = "UR_ADAPTERS_FORCE_LOAD";

/// The SYCL runtime's device selector.
pub const SELECTOR_ENV: &str = "ONEAPI_DEVICE_SELECTOR";

/// Our adapter library, as `cargo build --release -p ur-capi` names it.
pub const ADAPTER_LIB: &str = "libur_adapter_rust.so";

/// Where the clients' virtual environment lives: `clients-venv` next to the
/// wheel cache (`~/.cache/unified-runtime/clients-venv`).
pub fn venv_dir() -> PathBuf {
    let cache = crate::wheels::cache_dir();
    cache
        .parent()
        .map_or_else(|| cache.join("clients-venv"), |p| p.join("clients-venv"))
}

/// The venv's Python.
pub fn venv_python() -> PathBuf {
    venv_dir().join("bin").join("python")
}

/// Does the venv hold exactly [`CLIENT_PACKAGES`] (per its marker)?
pub fn venv_ready() -> bool {
    std::fs::read_to_string(venv_dir().join(INSTALLED)).is_ok_and(|s| s == CLIENT_PACKAGES.join(" "))
}

/// Makes the venv and installs [`CLIENT_PACKAGES`] into it, unless its
/// marker says they are there (then it does nothing).
pub fn ensure_venv(dry_run: bool) -> Result<()> {
    let dir = venv_dir();
    let spec = CLIENT_PACKAGES.join(" ");
    if venv_ready() {
        eprintln!("setup: present: {spec} in {}", dir.display());
        return Ok(());
    }
    if dry_run {
        eprintln!("setup: would make the venv {} with {spec}", dir.display());
        return Ok(());
    }
    let started = Instant::now();
    if !venv_python().is_file() {
        run(Command::new("python3").args(["-m", "venv"]).arg(&dir))?;
    }
    run(Command::new(venv_python())
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--only-binary=:all:"])
        .args(CLIENT_PACKAGES))?;
    std::fs::write(dir.join(INSTALLED), spec.as_bytes()).map_err(|source| XtaskError::Io {
        what: format!("marking {}", dir.display()),
        source,
    })?;
    eprintln!(
        "setup: installed {spec} into {} in {}",
        dir.display(),
        human(started.elapsed())
    );
    Ok(())
}

/// What a suite runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `pytest --pyargs <package>`: the tests a package ships.
    Package(&'static str),
    /// One file of dpnp's tests (`site-packages/dpnp/tests/<file>`).
    DpnpFile(&'static str),
}

/// One client test suite.
#[derive(Debug, Clone, Copy)]
pub struct Suite {
    /// The name `--suites` takes and logs carry.
    pub name: &'static str,
    /// What pytest runs.
    pub target: Target,
    /// Tests left out on both sides (`-k "not ..."`), with why in the table
    /// below.
    pub deselect: &'static [&'static str],
}

/// Every suite, in the order they run.
///
/// Left out of dpctl: `test_context_multi_device` hangs through UR's own
/// adapter on this 2-core machine (partitions the CPU into two sub-devices
/// of one compute unit; stuck in a futex wait, measured past 10 minutes);
/// `test_cython_api` needs Cython, which the venv does not have.
pub const SUITES: [Suite; 5] = [
    Suite {
        name: "dpctl",
        target: Target::Package("dpctl"),
        deselect: &["test_context_multi_device", "test_cython_api"],
    },
    Suite {
        name: "sycl_queue",
        target: Target::DpnpFile("test_sycl_queue.py"),
        deselect: &[],
    },
    Suite {
        name: "sum",
        target: Target::DpnpFile("test_sum.py"),
        deselect: &[],
    },
    Suite {
        name: "linalg",
        target: Target::DpnpFile("test_linalg.py"),
        deselect: &[],
    },
    Suite {
        name: "arraycreation",
        target: Target::DpnpFile("test_arraycreation.py"),
        deselect: &[],
    },
];

/// Which UR adapter a run goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// UR's own OpenCL adapter (the loader's default).
    Ur,
    /// Ours, `libur_adapter_rust.so`, force-loaded alone.
    Ours,
}

impl Side {
    /// The tag in file names and messages.
    pub fn tag(self) -> &'static str {
        match self {
            Side::Ur => "ur",
            Side::Ours => "ours",
        }
    }
}

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
                    let n: u64 = value.parse().map_err(|_| {
                        bad(format!("{}={value:?}", String::from_utf8_lossy(key)))
                    })?;
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

/// One device a side lists (from `dpctl.get_devices()`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Listed {
    /// The SYCL backend (`opencl`, `level_zero`, ...).
    pub backend: String,
    /// The platform's name.
    pub platform: String,
    /// The device's name.
    pub name: String,
}

/// Short names for `--device`: the text they look for in
/// "platform / device name".
const DEVICE_ALIASES: [(&str, &str); 3] = [
    ("intel", "Intel(R) OpenCL /"),
    ("pocl", "Portable Computing Language /"),
    ("rusticl", "rusticl /"),
];

/// Picks the device `choice` names among `devices`: an alias of
/// [`DEVICE_ALIASES`] or any text of "platform / device name" (case
/// ignored), optionally `#K` for the K-th match (from 0). Returns the
/// selector that picks it alone, `*:N` with N its index among the devices
/// of its backend, and its position in `devices`.
pub fn pick_device(devices: &[Listed], choice: &str) -> std::result::Result<(String, usize), String> {
    let (what, nth) = match choice.rsplit_once('#') {
        Some((w, k)) => (w, k.parse::<usize>().map_err(|_| format!("`{choice}`: `#{k}` is not a number"))?),
        None => (choice, 0),
    };
    let needle = DEVICE_ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(what))
        .map_or(what, |(_, text)| text)
        .to_lowercase();
    let pos = devices
        .iter()
        .enumerate()
        .filter(|(_, d)| format!("{} / {}", d.platform, d.name).to_lowercase().contains(&needle))
        .map(|(i, _)| i)
        .nth(nth)
        .ok_or_else(|| {
            let seen: Vec<String> = devices.iter().map(|d| format!("{} / {}", d.platform, d.name)).collect();
            format!("no device matches `{choice}` among [{}]", seen.join("; "))
        })?;
    let backend = &devices[pos].backend;
    let index = devices[..pos].iter().filter(|d| &d.backend == backend).count();
    Ok((format!("*:{index}"), pos))
}

/// Adds `not <test>` for each deselected test to a `-k` expression.
pub fn k_expression(user: Option<&str>, deselect: &[&str]) -> Option<String> {
    let mut parts: Vec<String> = user.map(|k| format!("({k})")).into_iter().collect();
    parts.extend(deselect.iter().map(|t| format!("not {t}")));
    (!parts.is_empty()).then(|| parts.join(" and "))
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
}

impl Outcome {
    /// Did every test that ran pass (no failure, error, crash or hang)?
    pub fn clean(&self) -> bool {
        match self {
            Outcome::Finished { counts, code } => *code == 0 && counts.failed == 0 && counts.errors == 0,
            _ => false,
        }
    }
}

/// One run's result.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// How it ended.
    pub outcome: Outcome,
    /// The process's wall time.
    pub wall: Duration,
    /// The selector it ran with.
    pub selector: String,
}

/// The table cell of a run: `passed/failed/skipped/errors time`, or what
/// went wrong.
pub fn cell(r: &RunResult) -> String {
    let after = |p: &Progress| {
        let mut s = format!("after {} tests", p.done);
        let c = p.counts;
        let _ = write!(s, " ({}/{}/{}/{})", c.passed, c.failed, c.skipped, c.errors);
        s
    };
    match &r.outcome {
        Outcome::Finished { counts: c, .. } => format!(
            "{}/{}/{}/{} {}",
            c.passed,
            c.failed,
            c.skipped,
            c.errors,
            human(r.wall)
        ),
        Outcome::Crashed { signal, progress } => {
            format!("crashed (signal {signal}) {} {}", after(progress), human(r.wall))
        }
        Outcome::TimedOut { limit, progress } => format!("timed out ({}) {}", human(*limit), after(progress)),
        Outcome::NoReport { code, progress } => format!("exit {code}, no report, {}", after(progress)),
        Outcome::NotRun(why) => format!("not run: {why}"),
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

/// What `cargo xtask clients` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Suite names (empty: all).
    pub suites: Vec<String>,
    /// Run through UR's own adapter.
    pub ur: bool,
    /// Run through ours.
    pub ours: bool,
    /// The device (see [`pick_device`]).
    pub device: String,
    /// Selector overrides per side.
    pub selector_ur: Option<String>,
    /// Selector override for ours.
    pub selector_ours: Option<String>,
    /// Each run's time limit.
    pub timeout: Duration,
    /// pytest's `-k`.
    pub k: Option<String>,
    /// More pytest arguments.
    pub pytest_args: Vec<String>,
    /// Skip `cargo build --release -p ur-capi`.
    pub no_build: bool,
    /// Fail unless every run finished with no failure or error.
    pub strict: bool,
}

/// The suites `names` pick (all when empty), or which name is unknown.
pub fn select_suites(names: &[String]) -> Result<Vec<Suite>> {
    if names.is_empty() {
        return Ok(SUITES.to_vec());
    }
    names
        .iter()
        .map(|n| {
            SUITES.iter().copied().find(|s| s.name == n).ok_or_else(|| {
                let known: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
                XtaskError::Other(format!("unknown suite `{n}` (known: {})", known.join(", ")))
            })
        })
        .collect()
}

/// `target/clients` (or under `CARGO_TARGET_DIR`).
fn out_dir() -> PathBuf {
    crate::bench::target_dir().join("clients")
}

/// Our adapter library in the release build.
pub fn adapter_lib() -> PathBuf {
    crate::bench::target_dir().join("release").join(ADAPTER_LIB)
}

/// dpnp's tests folder in the venv.
fn dpnp_tests() -> Result<PathBuf> {
    let lib = venv_dir().join("lib");
    let entries = std::fs::read_dir(&lib).map_err(|source| XtaskError::Io {
        what: format!("listing {}", lib.display()),
        source,
    })?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/dpnp/tests"))
        .find(|p| p.is_dir())
        .ok_or_else(|| XtaskError::Other(format!("no site-packages/dpnp/tests under {}", lib.display())))
}

/// The environment of a side: the OpenCL ICDs `setup` registered, the
/// loader's adapter choice, no inherited selector.
fn side_env(cmd: &mut Command, side: Side) -> &mut Command {
    for (key, value) in OPENCL_ENV {
        if std::env::var_os(key).is_none() {
            cmd.env(key, value);
        }
    }
    if let Some(vendors) = crate::icd::vendors_env() {
        cmd.env(crate::icd::VENDORS_ENV, vendors);
    }
    cmd.env_remove(SELECTOR_ENV).env_remove("SYCL_DEVICE_FILTER");
    match side {
        Side::Ur => {
            cmd.env_remove(FORCE_LOAD_ENV).env_remove("RUSTICL_ENABLE");
        }
        Side::Ours => {
            cmd.env(FORCE_LOAD_ENV, adapter_lib());
        }
    }
    cmd
}

/// The device listing a side's child prints, one JSON object per line.
const LIST_SCRIPT: &str = r#"
import json, dpctl
for d in dpctl.get_devices():
    print("UR_CLIENTS_DEVICE " + json.dumps({"backend": d.backend.name, "platform": d.sycl_platform.name, "name": d.name}), flush=True)
"#;

/// Lists a side's devices in a child process.
fn list_devices(side: Side) -> std::result::Result<Vec<Listed>, String> {
    let log = out_dir().join(format!("devices-{}.log", side.tag()));
    let mut cmd = Command::new(venv_python());
    side_env(cmd.args(["-c", LIST_SCRIPT]), side);
    let (status, _) = run_logged(&mut cmd, &log, Duration::from_secs(120)).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let devices: Vec<Listed> = text
        .lines()
        .filter_map(|l| l.strip_prefix("UR_CLIENTS_DEVICE "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    match status {
        Some(s) if s.success() && !devices.is_empty() => Ok(devices),
        Some(s) => Err(format!(
            "listing devices ended with {} ({} listed; see {})",
            status_text(s),
            devices.len(),
            log.display()
        )),
        None => Err(format!("listing devices timed out (see {})", log.display())),
    }
}

fn status_text(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(sig)) => format!("signal {sig}"),
        _ => s.to_string(),
    }
}

/// Runs `cmd` with stdout and stderr into `log`, killing it and its
/// children after `limit`. `None` status: it timed out.
fn run_logged(cmd: &mut Command, log: &Path, limit: Duration) -> Result<(Option<ExitStatus>, Duration)> {
    let io = |what: String| move |source| XtaskError::Io { what, source };
    let out = File::create(log).map_err(io(format!("creating {}", log.display())))?;
    let err = out.try_clone().map_err(io(format!("cloning {}", log.display())))?;
    let shown = display(cmd);
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|source| XtaskError::Spawn { cmd: shown.clone(), source })?;
    loop {
        if let Some(status) = child.try_wait().map_err(io(format!("waiting for `{shown}`")))? {
            return Ok((Some(status), start.elapsed()));
        }
        if start.elapsed() >= limit {
            for pid in descendants(child.id()) {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
            let _ = child.kill();
            let _ = child.wait();
            return Ok((None, start.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pytest command of a suite (without the side's environment).
fn pytest_command(suite: &Suite, opts: &Options, junit: &Path, plugin_dir: &Path, progress: &Path) -> Result<Command> {
    let mut cmd = Command::new(venv_python());
    cmd.args(["-m", "pytest"]);
    match suite.target {
        Target::Package(p) => {
            cmd.args(["--pyargs", p]);
        }
        Target::DpnpFile(f) => {
            cmd.arg(dpnp_tests()?.join(f));
        }
    }
    cmd.args(["-q", "-rfE", "-p", "no:cacheprovider", "-p", PROGRESS_MODULE])
        .arg(format!("--junitxml={}", junit.display()));
    if let Some(k) = k_expression(opts.k.as_deref(), suite.deselect) {
        cmd.args(["-k", &k]);
    }
    cmd.args(&opts.pytest_args)
        .env("PYTHONPATH", plugin_dir)
        .env(PROGRESS_ENV, progress)
        .current_dir(out_dir());
    Ok(cmd)
}

/// Runs one suite on one side.
fn run_suite(suite: &Suite, side: Side, selector: &str, opts: &Options, plugin_dir: &Path) -> Result<RunResult> {
    let dir = out_dir();
    let stem = format!("{}-{}", suite.name, side.tag());
    let log = dir.join(format!("{stem}.log"));
    let junit = dir.join(format!("{stem}.xml"));
    let progress = dir.join(format!("{stem}.progress"));
    for f in [&junit, &progress] {
        let _ = std::fs::remove_file(f);
    }
    let mut cmd = pytest_command(suite, opts, &junit, plugin_dir, &progress)?;
    side_env(&mut cmd, side).env(SELECTOR_ENV, selector);
    eprintln!("clients: {stem}: {} (log {})", display(&cmd), log.display());
    let (status, wall) = run_logged(&mut cmd, &log, opts.timeout)?;
    let progress = parse_progress(&std::fs::read_to_string(&progress).unwrap_or_default());
    let outcome = match status {
        None => Outcome::TimedOut {
            limit: opts.timeout,
            progress,
        },
        Some(s) => match (s.signal(), std::fs::read_to_string(&junit)) {
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
    let result = RunResult {
        outcome,
        wall,
        selector: selector.to_owned(),
    };
    eprintln!("clients: {stem}: {}", cell(&result));
    if let Outcome::Crashed { progress: p, .. } | Outcome::TimedOut { progress: p, .. } = &result.outcome {
        if let Some(t) = &p.running {
            eprintln!("clients: {stem}: was running {t}");
        }
    }
    Ok(result)
}

/// The selector of a side: the override, or the chosen device's index.
fn side_selector(side: Side, opts: &Options) -> std::result::Result<String, String> {
    let forced = match side {
        Side::Ur => &opts.selector_ur,
        Side::Ours => &opts.selector_ours,
    };
    if let Some(s) = forced {
        return Ok(s.clone());
    }
    let devices = list_devices(side)?;
    let (selector, pos) = pick_device(&devices, &opts.device)?;
    let d = &devices[pos];
    eprintln!(
        "clients: {}: device `{}` = {} / {} ({}), {SELECTOR_ENV}='{selector}'",
        side.tag(),
        opts.device,
        d.platform,
        d.name,
        d.backend
    );
    Ok(selector)
}

/// `cargo xtask clients`: runs the suites on each side asked for and prints
/// the comparison table.
pub fn clients(opts: &Options) -> Result<()> {
    let suites = select_suites(&opts.suites)?;
    if !venv_ready() {
        return Err(XtaskError::Other(format!(
            "no clients venv at {} with {} (`cargo xtask setup` makes it)",
            venv_dir().display(),
            CLIENT_PACKAGES.join(" ")
        )));
    }
    let dir = out_dir();
    let plugin_dir = dir.join("plugin");
    std::fs::create_dir_all(&plugin_dir).map_err(|source| XtaskError::Io {
        what: format!("creating {}", plugin_dir.display()),
        source,
    })?;
    let plugin = plugin_dir.join(format!("{PROGRESS_MODULE}.py"));
    std::fs::write(&plugin, PROGRESS_PLUGIN).map_err(|source| XtaskError::Io {
        what: format!("writing {}", plugin.display()),
        source,
    })?;
    if opts.ours && !opts.no_build {
        run(cargo().args(["build", "--release", "-p", "ur-capi"]))?;
    }
    let mut sides = Vec::new();
    if opts.ur {
        sides.push(Side::Ur);
    }
    if opts.ours {
        if !adapter_lib().is_file() {
            return Err(XtaskError::Other(format!("no {}", adapter_lib().display())));
        }
        sides.push(Side::Ours);
    }
    let selectors: Vec<(Side, std::result::Result<String, String>)> =
        sides.iter().map(|&s| (s, side_selector(s, opts))).collect();
    let mut rows: Vec<(&str, Option<RunResult>, Option<RunResult>)> = Vec::new();
    for suite in &suites {
        let mut row = (suite.name, None, None);
        for (side, selector) in &selectors {
            let result = match selector {
                Ok(sel) => run_suite(suite, *side, sel, opts, &plugin_dir)?,
                Err(why) => RunResult {
                    outcome: Outcome::NotRun(why.clone()),
                    wall: Duration::ZERO,
                    selector: String::new(),
                },
            };
            match side {
                Side::Ur => row.1 = Some(result),
                Side::Ours => row.2 = Some(result),
            }
        }
        rows.push(row);
    }
    let text = table(&rows);
    print!("{text}");
    let report = dir.join("table.txt");
    let _ = std::fs::write(&report, &text);
    eprintln!(
        "clients: device `{}`; logs, junit reports and this table in {}",
        opts.device,
        dir.display()
    );
    if opts.strict {
        let bad: Vec<String> = rows
            .iter()
            .flat_map(|(n, u, o)| [(n, Side::Ur, u), (n, Side::Ours, o)])
            .filter_map(|(n, side, r)| {
                r.as_ref()
                    .filter(|r| !r.outcome.clean())
                    .map(|r| format!("{n} ({}): {}", side.tag(), cell(r)))
            })
            .collect();
        if !bad.is_empty() {
            return Err(XtaskError::Other(format!("client suites not clean: {}", bad.join("; "))));
        }
    }
    Ok(())
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
    fn progress_counts_and_names_the_running_test() {
        let text = "start t::a\npassed t::a\ndone t::a\nstart t::b\nskipped t::b\ndone t::b\nstart t::c\nfailed t::c\ndone t::c\nstart t::d\n";
        let p = parse_progress(text);
        assert_eq!(p.done, 3);
        assert_eq!((p.counts.passed, p.counts.skipped, p.counts.failed), (1, 1, 1));
        assert_eq!(p.running.as_deref(), Some("t::d"));
        assert_eq!(parse_progress("start x\ndone x\n").running, None);
    }

    fn dev(backend: &str, platform: &str, name: &str) -> Listed {
        Listed {
            backend: backend.into(),
            platform: platform.into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_same_device_gets_each_sides_own_index() {
        let pocl = "Portable Computing Language";
        let ur = [
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", "Intel(R) OpenCL", "AMD EPYC"),
        ];
        let ours = [
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", "rusticl", "llvmpipe (LLVM 15.0.6, 256 bits)"),
            dev("opencl", "Intel(R) OpenCL", "AMD EPYC"),
        ];
        assert_eq!(pick_device(&ur, "intel").unwrap(), ("*:2".into(), 2));
        assert_eq!(pick_device(&ours, "intel").unwrap(), ("*:3".into(), 3));
        assert_eq!(pick_device(&ours, "pocl#1").unwrap(), ("*:1".into(), 1));
        assert_eq!(pick_device(&ours, "RUSTICL").unwrap(), ("*:2".into(), 2));
        assert_eq!(pick_device(&ours, "llvmpipe").unwrap().0, "*:2");
        assert!(pick_device(&ur, "rusticl").unwrap_err().contains("no device matches"));
        assert!(pick_device(&ur, "pocl#x").is_err());
    }

    #[test]
    fn the_index_counts_only_the_devices_of_the_chosen_backend() {
        let devices = [
            dev("level_zero", "L0", "gpu"),
            dev("opencl", "Portable Computing Language", "p"),
            dev("opencl", "Intel(R) OpenCL", "cpu"),
        ];
        assert_eq!(pick_device(&devices, "intel").unwrap(), ("*:1".into(), 2));
    }

    #[test]
    fn k_expressions_keep_the_users_and_add_deselections() {
        assert_eq!(k_expression(None, &[]), None);
        assert_eq!(k_expression(Some("float32"), &[]).unwrap(), "(float32)");
        assert_eq!(
            k_expression(Some("a or b"), &["x", "y"]).unwrap(),
            "(a or b) and not x and not y"
        );
        assert_eq!(k_expression(None, &["x"]).unwrap(), "not x");
    }

    fn result(outcome: Outcome, secs: u64) -> RunResult {
        RunResult {
            outcome,
            wall: Duration::from_secs(secs),
            selector: "*:2".into(),
        }
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
        assert!(cell(&hung).starts_with("timed out (10m00s) after 1 tests"), "{}", cell(&hung));
        assert!(cell(&result(Outcome::NotRun("no lib".into()), 0)).contains("no lib"));
        let clean = Outcome::Finished {
            counts: Counts {
                errors: 0,
                ..counts
            },
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
        assert!(lines[2].contains("| crashed (signal 11) after 0 tests"), "{t}");
        assert!(lines[3].ends_with("| -"), "{t}");
        let bar = lines[0].find(" | ").unwrap();
        assert!(lines.iter().all(|l| l.len() > bar), "{t}");
    }

    #[test]
    fn suites_are_named_once_and_picked_by_name() {
        let mut names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SUITES.len());
        let picked = select_suites(&["sum".into(), "dpctl".into()]).unwrap();
        assert_eq!(picked[0].target, Target::DpnpFile("test_sum.py"));
        assert_eq!(picked[1].target, Target::Package("dpctl"));
        assert!(select_suites(&["nope".into()]).unwrap_err().to_string().contains("known: dpctl"));
        assert_eq!(select_suites(&[]).unwrap().len(), SUITES.len());
    }

    #[test]
    fn packages_are_pinned_and_the_venv_sits_beside_the_wheel_cache() {
        assert!(CLIENT_PACKAGES.iter().all(|p| p.contains("==")));
        assert_eq!(venv_dir().parent(), crate::wheels::cache_dir().parent());
    }
}
