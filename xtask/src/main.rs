//! `cargo xtask`: the project's own tooling, written in Rust so it runs
//! wherever cargo does.
//!
//! - `cargo xtask setup`: installs the system packages the real backends need
//!   and unpacks Intel's runtimes from their wheels (`wheels.rs`).
//! - `cargo xtask ci`: the checks CI runs (fmt, clippy, tests, docs, then
//!   AddressSanitizer, LeakSanitizer, Miri and bounded fuzzing on nightly).
//! - `cargo xtask clients`: dpctl's and dpnp's own test suites through
//!   UR's own OpenCL adapter and through ours, same device, as a table
//!   (`clients/`); `--ci` is CI's check, `--bench` the `clients.*` rows.
//! - `cargo xtask codegen [--check]`: regenerates (or checks) the committed
//!   Level Zero bindings of `level-zero-sys` with bindgen.
//! - `cargo xtask bench [--filter NAME]`: runs the benchmarks and collects
//!   their `BENCH_ROW` lines into `target/bench/report.json` (the MPI
//!   corner turn under `mpirun -n 4 --oversubscribe`).

mod bench;
mod ci;
mod clients;
mod cmd;
mod codegen;
mod icd;
mod reliability;
mod setup;
mod wheels;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The project's tasks.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "Project tasks: setup, ci, bench, codegen, clients")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, Subcommand)]
enum Task {
    /// Install the system packages the backends need (apt-get) and the nightly tools (a no-op when present).
    Setup {
        /// Show what would be installed without installing it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run the CI checks: fmt, clippy, tests (with the conformance suite), docs, sanitizers, Miri, fuzzing.
    Ci,
    /// Regenerate the Level Zero bindings of level-zero-sys from the headers (bindgen).
    Codegen {
        /// Only check that the committed bindings match what codegen makes.
        #[arg(long)]
        check: bool,
    },
    /// Run `cargo bench --workspace` (and the `clients.*` rows) and write target/bench/report.json.
    Bench {
        /// Only keep rows (and run benchmarks) whose name contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Only bench these packages (default: the whole workspace).
        #[arg(long, short = 'p', value_name = "PACKAGE")]
        package: Vec<String>,
    },
    /// Run dpctl's and dpnp's test suites through UR's own OpenCL adapter and through ours, and compare.
    Clients(ClientsArgs),
}

/// `cargo xtask clients` options.
#[derive(Debug, clap::Args)]
struct ClientsArgs {
    /// Suites to run, comma-separated (default: all): dpctl, sycl_queue, sum, linalg, arraycreation.
    #[arg(long, value_delimiter = ',')]
    suites: Vec<String>,
    /// Only run through our adapter library.
    #[arg(long, conflicts_with = "ur_only")]
    ours_only: bool,
    /// Only run through UR's own OpenCL adapter.
    #[arg(long)]
    ur_only: bool,
    /// The device, the same on both sides: intel, pocl, rusticl, or text of "platform / device name"; `#K` for the K-th match.
    #[arg(long, default_value = "intel")]
    device: String,
    /// ONEAPI_DEVICE_SELECTOR for UR's side instead of the one computed from --device.
    #[arg(long)]
    selector_ur: Option<String>,
    /// ONEAPI_DEVICE_SELECTOR for our side instead of the one computed from --device.
    #[arg(long)]
    selector_ours: Option<String>,
    /// Time limit of each run, seconds (the run is killed with its children).
    #[arg(long, default_value_t = 1200)]
    timeout_secs: u64,
    /// pytest -k expression (the suites' own deselections are added).
    #[arg(short = 'k')]
    k: Option<String>,
    /// Do not build the adapter library (`cargo build --release -p ur-capi`) first.
    #[arg(long)]
    no_build: bool,
    /// Our side's adapter library instead of target/release/libur_adapter_rust.so (no build then).
    #[arg(long, value_name = "PATH")]
    adapter: Option<std::path::PathBuf>,
    /// Fail unless every run finished with no failed test, error, crash or time-out.
    #[arg(long)]
    strict: bool,
    /// CI's check: the runs of clients::CI_RUNS (dpctl's suite and dpnp files on Intel's device, PoCL and rusticl) through ours; fails on a crash, on a failure
    /// not in clients::KNOWN_FAILING, and on a known failure that passes.
    #[arg(long)]
    ci: bool,
    /// Measure the `clients.*` bench rows (ours over UR's adapter) instead of running the suites.
    #[arg(long)]
    bench: bool,
    /// More pytest arguments, after `--`.
    #[arg(last = true)]
    pytest_args: Vec<String>,
}

/// The workspace root (the parent of this crate's folder).
pub(crate) fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.task {
        Task::Setup { dry_run } => setup::setup(dry_run),
        Task::Ci => ci::ci(),
        Task::Codegen { check } => codegen::codegen(check),
        Task::Bench { filter, package } => bench::bench(filter.as_deref(), &package),
        Task::Clients(a) if a.ci => clients::ci_step(),
        Task::Clients(a) => clients::clients(&clients::Options {
            suites: a.suites,
            ur: !a.ours_only,
            ours: !a.ur_only,
            device: a.device,
            selector_ur: a.selector_ur,
            selector_ours: a.selector_ours,
            timeout: std::time::Duration::from_secs(a.timeout_secs),
            k: a.k,
            pytest_args: a.pytest_args,
            no_build: a.no_build,
            adapter: a.adapter,
            strict: a.strict,
            bench: a.bench,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
