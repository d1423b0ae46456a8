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
//! with quick-xml ([`parse_junit`](report::parse_junit)). A process killed by a signal (the SYCL
//! runtime aborting, a segfault) writes none; the pytest plugin
//! `xtask/py/ur_clients_progress.py` writes a line per test as it goes, so
//! the runner still says how many tests finished and which one was running
//! ([`parse_progress`](report::parse_progress)). Logs: `target/clients/<suite>-<side>.log`.
//!
//! **A test that aborts the process** runs again alone; when alone it fails
//! because the device lacks a feature (the same patterns that turn such
//! failures into skips, [`known::DEVICE_LACKS`]), the suite runs again with
//! it skipped with that reason, so that one client bug on a device without
//! a feature (dpctl not catching a failure thrown in `queue.wait()`) does
//! not hide the rest of the suite. Any other abort is a crash: the suite
//! runs again with that test made to error, so it counts as an error
//! (`run.rs`).

mod bench;
mod known;
mod report;
mod run;
mod select;

use std::fs::File;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::cmd::{cargo, descendants, display, human, run, Result, XtaskError, OPENCL_ENV};

pub use bench::bench_rows;
pub use known::ci_step;
use report::{cell, table, Outcome, RunResult};
use run::run_suite;
use select::{k_expression, pick_device, Listed};

/// The Python packages of the clients, pinned (CI must see what was
/// measured). dpctl and dpnp pull Intel's SYCL runtime, UR loader, OpenCL
/// runtime and oneMKL wheels (2026.2.0) into the venv.
pub const CLIENT_PACKAGES: &[&str] = &["dpctl==0.22.1", "dpnp==0.20.0", "pytest==9.2.0"];

/// Marks a venv whose packages are [`CLIENT_PACKAGES`] (its content).
const INSTALLED: &str = ".xtask-installed";

/// The device listing through the UR loader (see [`list_devices`]).
const UR_DEVICES: &str = include_str!("../../py/ur_devices.py");

/// Its module name.
const UR_DEVICES_MODULE: &str = "ur_devices";

/// The pytest plugin that records progress (see the module docs).
const PROGRESS_PLUGIN: &str = include_str!("../../py/ur_clients_progress.py");

/// The plugin's module name.
const PROGRESS_MODULE: &str = "ur_clients_progress";

/// The variable naming the plugin's output file.
const PROGRESS_ENV: &str = "UR_CLIENTS_PROGRESS";

/// The variable that hands the plugin the tests to skip on the device
/// ([`known::skip_json`]).
const SKIP_ENV: &str = "UR_CLIENTS_SKIP";

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
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--only-binary=:all:",
        ])
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
    /// Tests left out through UR's own adapter (`-k "not ..."`), with why
    /// in the table below.
    pub deselect_ur: &'static [&'static str],
    /// Needs USM device and host allocations: dpnp's arrays are USM
    /// allocations, and dpctl's pybind11 modules (which dpnp's test set-up
    /// calls) abort the process on a device without host USM (see
    /// [`KNOWN_ABORTING`](known::KNOWN_ABORTING)). On a device without USM
    /// the suite is not run and shows as skipped, with that reason.
    pub needs_usm: bool,
}

/// Every suite, in the order they run.
///
/// Left out of dpctl through UR's own adapter: `test_context_multi_device`
/// hangs there on this 2-core machine (partitions the CPU into two
/// sub-devices of one compute unit; stuck in a futex wait, measured past 10
/// minutes). Through ours it runs (and passes where the device can be
/// partitioned; rusticl's cannot: see [`KNOWN_LACKING`](known::KNOWN_LACKING)).
pub const SUITES: [Suite; 7] = [
    Suite {
        name: "dpctl",
        target: Target::Package("dpctl"),
        deselect_ur: &["test_context_multi_device"],
        needs_usm: false,
    },
    Suite {
        name: "sycl_queue",
        target: Target::DpnpFile("test_sycl_queue.py"),
        deselect_ur: &[],
        needs_usm: true,
    },
    Suite {
        name: "sum",
        target: Target::DpnpFile("test_sum.py"),
        deselect_ur: &[],
        needs_usm: true,
    },
    Suite {
        name: "linalg",
        target: Target::DpnpFile("test_linalg.py"),
        deselect_ur: &[],
        needs_usm: true,
    },
    Suite {
        name: "arraycreation",
        target: Target::DpnpFile("test_arraycreation.py"),
        deselect_ur: &[],
        needs_usm: true,
    },
    // Reductions over empty arrays launch empty ranges.
    Suite {
        name: "logic",
        target: Target::DpnpFile("test_logic.py"),
        deselect_ur: &[],
        needs_usm: true,
    },
    // `modf` on float16 calls oneMKL VM kernels linked from several
    // device images (`urProgramLink` of several programs).
    Suite {
        name: "unary_two_outputs",
        target: Target::DpnpFile("test_unary_two_outputs_ufuncs.py"),
        deselect_ur: &[],
        needs_usm: true,
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
    /// Our side's adapter library instead of the release build's.
    pub adapter: Option<PathBuf>,
    /// Fail unless every run finished with no failure or error.
    pub strict: bool,
    /// Run the bench rows instead of the suites.
    pub bench: bool,
}

impl Default for Options {
    /// All suites, both sides, Intel's CPU OpenCL device, 20 minutes a run.
    fn default() -> Self {
        Self {
            suites: Vec::new(),
            ur: true,
            ours: true,
            device: "intel".into(),
            selector_ur: None,
            selector_ours: None,
            timeout: Duration::from_secs(1200),
            k: None,
            pytest_args: Vec::new(),
            no_build: false,
            adapter: None,
            strict: false,
            bench: false,
        }
    }
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
fn side_env<'c>(cmd: &'c mut Command, side: Side, ctx: &Ctx) -> &'c mut Command {
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
            cmd.env(FORCE_LOAD_ENV, &ctx.adapter);
        }
    }
    cmd
}

/// The device listing a side's child prints, one JSON object per line.
const LIST_SCRIPT: &str = r#"
import json, dpctl
for d in dpctl.get_devices():
    usm = d.has_aspect_usm_device_allocations and d.has_aspect_usm_host_allocations
    print("UR_CLIENTS_DEVICE " + json.dumps({"backend": d.backend.name, "platform": d.sycl_platform.name, "name": d.name, "usm": usm}), flush=True)
"#;

/// Lists a side's devices: with dpctl (the SYCL runtime's own numbering),
/// or, when that process fails (the SYCL runtime aborting on the adapter),
/// through the UR loader's C API (`xtask/py/ur_devices.py`: adapters,
/// platforms, devices in the order the SYCL runtime walks them; a platform
/// the SYCL runtime would drop still counts there).
fn list_devices(side: Side, ctx: &Ctx) -> std::result::Result<Vec<Listed>, String> {
    let sycl = list_with(side, "sycl", Command::new(venv_python()).args(["-c", LIST_SCRIPT]), ctx);
    let Err(why) = sycl else {
        return sycl;
    };
    let script = ctx.py.join(format!("{UR_DEVICES_MODULE}.py"));
    let devices = list_with(side, "ur", Command::new(venv_python()).arg(script), ctx)
        .map_err(|e| format!("{why}; through UR: {e}"))?;
    eprintln!("clients: {}: {why}; listed through the UR loader instead", side.tag());
    Ok(devices)
}

/// Runs a device-listing child and reads its `UR_CLIENTS_DEVICE` lines.
fn list_with(side: Side, how: &str, cmd: &mut Command, ctx: &Ctx) -> std::result::Result<Vec<Listed>, String> {
    let log = out_dir().join(format!("devices-{}-{how}.log", side.tag()));
    side_env(cmd, side, ctx);
    let (status, _) = run_logged(cmd, &log, Duration::from_secs(120)).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let devices: Vec<Listed> = text
        .lines()
        .filter_map(|l| l.strip_prefix("UR_CLIENTS_DEVICE "))
        .filter_map(|j| serde_json::from_str(j).ok())
        .collect();
    match status {
        Some(s) if s.success() && !devices.is_empty() => Ok(devices),
        Some(s) => Err(format!(
            "listing devices ({how}) ended with {} ({} listed; see {})",
            status_text(s),
            devices.len(),
            log.display()
        )),
        None => Err(format!("listing devices ({how}) timed out (see {})", log.display())),
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
        .map_err(|source| XtaskError::Spawn {
            cmd: shown.clone(),
            source,
        })?;
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
fn pytest_command(
    suite: &Suite,
    side: Side,
    opts: &Options,
    junit: &Path,
    py: &Path,
    progress: &Path,
) -> Result<Command> {
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
    let deselect = match side {
        Side::Ur => suite.deselect_ur,
        Side::Ours => &[],
    };
    if let Some(k) = k_expression(opts.k.as_deref(), deselect) {
        cmd.args(["-k", &k]);
    }
    cmd.args(&opts.pytest_args)
        .env("PYTHONPATH", py)
        .env(PROGRESS_ENV, progress)
        .current_dir(out_dir());
    Ok(cmd)
}

/// The test cases of a side's last JUnit report of `suite`.
fn read_cases(suite: &str, side: Side) -> Result<Vec<report::Case>> {
    let path = out_dir().join(format!("{suite}-{}.xml", side.tag()));
    let xml = std::fs::read_to_string(&path).map_err(|source| XtaskError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    report::parse_cases(&xml)
}

/// Writes `target/clients/<suite>-diff.txt`: the tests whose outcome
/// differs between the two sides' reports, and says how many there are.
fn compare_cases(suite: &str) -> Result<()> {
    let dir = out_dir();
    let read = |side: Side| read_cases(suite, side);
    let (ur, ours) = (read(Side::Ur)?, read(Side::Ours)?);
    let diffs = report::differing(&ur, &ours);
    let path = dir.join(format!("{suite}-diff.txt"));
    std::fs::write(&path, report::diff_text(&diffs)).map_err(|source| XtaskError::Io {
        what: format!("writing {}", path.display()),
        source,
    })?;
    eprintln!(
        "clients: {suite}: {} of {} tests end differently through ours (list: {})",
        diffs.len(),
        ur.len().max(ours.len()),
        path.display()
    );
    Ok(())
}

/// The selector of a side (the override, or the chosen device's index),
/// and the chosen device as listed (`None` with an override).
fn side_selector(side: Side, opts: &Options, ctx: &Ctx) -> std::result::Result<(String, Option<Listed>), String> {
    let forced = match side {
        Side::Ur => &opts.selector_ur,
        Side::Ours => &opts.selector_ours,
    };
    choose(side, &opts.device, forced.as_deref(), ctx)
}

/// The selector that picks `device` on `side` alone, unless `forced`.
fn selector_of(side: Side, device: &str, forced: Option<&str>, ctx: &Ctx) -> std::result::Result<String, String> {
    choose(side, device, forced, ctx).map(|(selector, _)| selector)
}

/// Why `suite` cannot run on `device` (it lacks what the suite needs), if
/// it cannot: the run is then reported as skipped with this reason.
fn lacking(suite: &Suite, device: Option<&Listed>) -> Option<String> {
    let d = device?;
    (suite.needs_usm && d.usm == Some(false)).then(|| {
        format!(
            "{} / {} has no USM device or host allocations (dpnp's arrays are USM; dpctl's pybind11 modules abort \
             the process without host USM)",
            d.platform, d.name
        )
    })
}

/// A suite's run, or its skip when the device lacks what it needs.
fn run_or_skip(
    suite: &Suite,
    side: Side,
    (selector, device): &(String, Option<Listed>),
    opts: &Options,
    ctx: &Ctx,
) -> Result<RunResult> {
    if let Some(why) = lacking(suite, device.as_ref()) {
        eprintln!("clients: {}-{}: skipped: {why}", suite.name, side.tag());
        return Ok(RunResult {
            outcome: Outcome::Skipped(why),
            wall: Duration::ZERO,
            selector: selector.clone(),
            aborted: Vec::new(),
        });
    }
    run_suite(suite, side, selector, opts, ctx)
}

/// [`selector_of`], with the device as listed.
fn choose(
    side: Side,
    device: &str,
    forced: Option<&str>,
    ctx: &Ctx,
) -> std::result::Result<(String, Option<Listed>), String> {
    if let Some(s) = forced {
        return Ok((s.to_owned(), None));
    }
    let devices = list_devices(side, ctx)?;
    let (selector, pos) = pick_device(&devices, device)?;
    let d = &devices[pos];
    eprintln!(
        "clients: {}: device `{}` = {} / {} ({}), {SELECTOR_ENV}='{selector}'",
        side.tag(),
        device,
        d.platform,
        d.name,
        d.backend
    );
    Ok((selector, Some(d.clone())))
}

/// What every child of a run needs: the Python helpers' folder and our
/// adapter library.
#[derive(Debug, Clone)]
struct Ctx {
    /// `target/clients/py`: the progress plugin, the device listing through
    /// UR, the bench script.
    py: PathBuf,
    /// The adapter library our side force-loads.
    adapter: PathBuf,
}

/// Checks the venv, writes the Python helpers into `target/clients/py`
/// and, when our side runs, builds our adapter library (`cargo build
/// --release -p ur-capi`: nothing to do when it is fresh) unless told not
/// to or given another library, and checks it is there.
fn prepare(opts: &Options) -> Result<Ctx> {
    if !venv_ready() {
        return Err(XtaskError::Other(format!(
            "no clients venv at {} with {} (`cargo xtask setup` makes it)",
            venv_dir().display(),
            CLIENT_PACKAGES.join(" ")
        )));
    }
    let py = out_dir().join("py");
    let io = |what: String| move |source| XtaskError::Io { what, source };
    std::fs::create_dir_all(&py).map_err(io(format!("creating {}", py.display())))?;
    for (name, text) in [
        (PROGRESS_MODULE, PROGRESS_PLUGIN),
        (UR_DEVICES_MODULE, UR_DEVICES),
        (bench::SCRIPT_MODULE, bench::SCRIPT),
    ] {
        let file = py.join(format!("{name}.py"));
        std::fs::write(&file, text).map_err(io(format!("writing {}", file.display())))?;
    }
    let adapter = opts.adapter.clone().unwrap_or_else(adapter_lib);
    if opts.ours {
        if opts.adapter.is_none() && !opts.no_build {
            run(cargo().args(["build", "--release", "-p", "ur-capi"]))?;
        }
        if !adapter.is_file() {
            return Err(XtaskError::Other(format!("no {}", adapter.display())));
        }
    }
    Ok(Ctx { py, adapter })
}

/// `cargo xtask clients`: runs the suites on each side asked for and prints
/// the comparison table.
pub fn clients(opts: &Options) -> Result<()> {
    if opts.bench {
        let rows = bench_rows(opts, None)?;
        print!("{}", crate::bench::table(&rows));
        return Ok(());
    }
    let suites = select_suites(&opts.suites)?;
    let ctx = prepare(opts)?;
    let mut sides = Vec::new();
    if opts.ur {
        sides.push(Side::Ur);
    }
    if opts.ours {
        sides.push(Side::Ours);
    }
    let selectors: Vec<(Side, std::result::Result<(String, Option<Listed>), String>)> =
        sides.iter().map(|&s| (s, side_selector(s, opts, &ctx))).collect();
    let mut rows: Vec<(&str, Option<RunResult>, Option<RunResult>)> = Vec::new();
    for suite in &suites {
        let mut row = (suite.name, None, None);
        for (side, selector) in &selectors {
            let result = match selector {
                Ok(chosen) => run_or_skip(suite, *side, chosen, opts, &ctx)?,
                Err(why) => RunResult {
                    outcome: Outcome::NotRun(why.clone()),
                    wall: Duration::ZERO,
                    selector: String::new(),
                    aborted: Vec::new(),
                },
            };
            match side {
                Side::Ur => row.1 = Some(result),
                Side::Ours => row.2 = Some(result),
            }
        }
        let finished = |r: &Option<RunResult>| {
            matches!(
                r,
                Some(RunResult {
                    outcome: Outcome::Finished { .. },
                    ..
                })
            )
        };
        if finished(&row.1) && finished(&row.2) {
            compare_cases(suite.name)?;
        }
        rows.push(row);
    }
    let text = table(&rows);
    print!("{text}");
    let dir = out_dir();
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
            return Err(XtaskError::Other(format!(
                "client suites not clean: {}",
                bad.join("; ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_are_named_once_and_picked_by_name() {
        let mut names: Vec<&str> = SUITES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SUITES.len());
        let picked = select_suites(&["sum".into(), "dpctl".into()]).unwrap();
        assert_eq!(picked[0].target, Target::DpnpFile("test_sum.py"));
        assert_eq!(picked[1].target, Target::Package("dpctl"));
        assert!(select_suites(&["nope".into()])
            .unwrap_err()
            .to_string()
            .contains("known: dpctl"));
        assert_eq!(select_suites(&[]).unwrap().len(), SUITES.len());
    }

    #[test]
    fn suites_needing_usm_are_skipped_on_a_device_without_it() {
        let dev = |usm| Listed {
            backend: "opencl".into(),
            platform: "rusticl".into(),
            name: "llvmpipe".into(),
            usm,
        };
        let [dpctl, sum] = [SUITES[0], SUITES[2]];
        assert!(!dpctl.needs_usm && sum.needs_usm);
        assert!(SUITES
            .iter()
            .all(|s| s.needs_usm == matches!(s.target, Target::DpnpFile(_))));
        let why = lacking(&sum, Some(&dev(Some(false)))).unwrap();
        assert!(why.starts_with("rusticl / llvmpipe has no USM"), "{why}");
        assert_eq!(lacking(&dpctl, Some(&dev(Some(false)))), None);
        assert_eq!(lacking(&sum, Some(&dev(Some(true)))), None);
        // Not known (listed through UR, or a forced selector): run it.
        assert_eq!(lacking(&sum, Some(&dev(None))), None);
        assert_eq!(lacking(&sum, None), None);
        let listed: Listed =
            serde_json::from_str(r#"{"backend": "opencl", "platform": "p", "name": "n", "usm": false}"#).unwrap();
        assert_eq!(listed.usm, Some(false));
        let old: Listed = serde_json::from_str(r#"{"backend": "opencl", "platform": "p", "name": "n"}"#).unwrap();
        assert_eq!(old.usm, None);
    }

    #[test]
    fn packages_are_pinned_and_the_venv_sits_beside_the_wheel_cache() {
        assert!(CLIENT_PACKAGES.iter().all(|p| p.contains("==")));
        assert_eq!(venv_dir().parent(), crate::wheels::cache_dir().parent());
    }
}
