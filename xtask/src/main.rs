//! `cargo xtask`: the project's own tooling, written in Rust so it runs
//! wherever cargo does.
//!
//! - `cargo xtask setup`: installs the system packages the real backends need
//!   and unpacks Intel's runtimes from their wheels (`wheels.rs`).
//! - `cargo xtask ci`: the checks CI runs (fmt, clippy, tests, docs, then
//!   AddressSanitizer, LeakSanitizer, Miri and bounded fuzzing on nightly).
//! - `cargo xtask clients`: dpctl's and dpnp's own test suites through
//!   UR's own OpenCL adapter and through ours, same device, as a table.
//! - `cargo xtask codegen [--check]`: regenerates (or checks) the committed
//!   Level Zero bindings of `level-zero-sys` with bindgen.
//! - `cargo xtask bench [--filter NAME]`: runs the benchmarks and collects
//!   their `BENCH_ROW` lines into `target/bench/report.json`.

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
#[command(name = "cargo xtask", about = "Project tasks: setup, ci, bench, codegen")]
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
    /// Run dpctl's and dpnp's test suites through UR's own OpenCL adapter and through ours, same device; print the table.
    Clients {
        /// Suites to run (dpctl, sycl_queue, sum, linalg, arraycreation); default all.
        #[arg(long, value_delimiter = ',')]
        suites: Vec<String>,
        /// Only through our library.
        #[arg(long)]
        ours_only: bool,
        /// CI's check: dpctl and dpnp's test_sum.py through ours, failing on any failure not known.
        #[arg(long)]
        ci: bool,
        /// Extra pytest arguments (after `--`).
        #[arg(last = true)]
        pytest: Vec<String>,
    },
    /// Run `cargo bench --workspace` and write target/bench/report.json.
    Bench {
        /// Only keep rows (and run benchmarks) whose name contains this text.
        #[arg(long)]
        filter: Option<String>,
        /// Only bench these packages (default: the whole workspace).
        #[arg(long, short = 'p', value_name = "PACKAGE")]
        package: Vec<String>,
    },
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
        Task::Clients {
            suites,
            ours_only,
            ci,
            pytest,
        } => {
            if ci {
                clients::ci_step()
            } else {
                clients::clients(&suites, ours_only, &pytest)
            }
        }
        Task::Codegen { check } => codegen::codegen(check),
        Task::Bench { filter, package } => bench::bench(filter.as_deref(), &package),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e}");
            ExitCode::FAILURE
        }
    }
}
