//! `ur-cts`: runs the conformance suite on every selected device.
//!
//! ```text
//! ur-cts [--format human|json|junit] [--devices SELECTOR] [--filter TEXT] [--list] [--isolate]
//! ```
//!
//! Exit status is non-zero iff a test failed (including a known failure
//! that passed). Logs go to stderr (`RUST_LOG`). With `--isolate`, tests run
//! in worker processes and a test that kills its process fails alone.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use ur_adapters::DiscoverOptions;
use ur_api::DeviceSelector;
use ur_conformance::expectations::Expectations;
use ur_conformance::isolate;
use ur_conformance::report::{self, Summary};
use ur_conformance::runner::{self, full_name};
use ur_conformance::DeviceTarget;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A progress line per test and a summary line.
    Human,
    /// `{"results":[...],"summary":{...}}`.
    Json,
    /// JUnit XML, one suite per device.
    Junit,
}

/// Runs the Unified Runtime conformance suite on every selected device.
#[derive(Debug, Parser)]
#[command(name = "ur-cts", version)]
struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// Device selector, e.g. `native:*;opencl:0` (see ur_api::DeviceSelector).
    #[arg(long, env = ur_api::SELECTOR_ENV)]
    devices: Option<String>,
    /// Only run tests whose full name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// List the tests that would run, one full name per line, and exit.
    #[arg(long)]
    list: bool,
    /// Run tests in worker processes, so a test that aborts its process
    /// (e.g. a crash in a native driver) fails alone.
    #[arg(long)]
    isolate: bool,
    /// Internal: act as an isolation worker (print one record line per test).
    #[arg(long, hide = true)]
    worker: bool,
    /// Internal: with --worker, start at this plan entry.
    #[arg(long, hide = true, default_value_t = 0)]
    resume: usize,
}

/// Self-test hook: a worker aborts when it reaches a test whose full name
/// contains this text (used by the suite's own tests of `--isolate`).
const SELFTEST_ABORT_ENV: &str = "UR_CTS_SELFTEST_ABORT";

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .init();
    let args = Args::parse();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("ur-cts: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let selector: DeviceSelector = match args.devices.as_deref().map(str::trim) {
        Some(s) if !s.is_empty() => s.parse()?,
        _ => DeviceSelector::all(),
    };
    ur_adapters::check_selector(&selector)?;
    let options = DiscoverOptions { sim_for_tests: true };
    let (rt, reports) = ur_adapters::discover_with(&selector, &options);
    for r in &reports {
        if let Err(why) = &r.outcome {
            tracing::info!(backend = %r.backend, %why, "adapter absent");
        }
    }
    // A second, independent instance of every adapter, for tests that mix handles.
    let (twin, _) = ur_adapters::discover_with(&selector, &options);
    let targets = DeviceTarget::discover(&rt, Some(&twin));
    let cases = ur_conformance::tests::all();
    let plan = runner::plan(&targets, &cases, args.filter.as_deref());

    let mut out = std::io::stdout().lock();
    if args.list {
        for (t, c) in &plan {
            writeln!(out, "{}", full_name(t, c))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if targets.is_empty() {
        tracing::warn!(%selector, "no device selected");
    }
    let expectations = Expectations::from_env();
    if args.worker {
        let abort_at = std::env::var(SELFTEST_ABORT_ENV).ok().filter(|s| !s.is_empty());
        for (t, c) in plan.iter().skip(args.resume) {
            if abort_at.as_deref().is_some_and(|a| full_name(t, c).contains(a)) {
                std::process::abort();
            }
            let r = runner::run_case(&rt, t, c, &expectations);
            writeln!(out, "{}", isolate::record_line(&r))?;
            out.flush()?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let human = args.format == Format::Human;
    let progress = |r: &ur_conformance::TestRecord| {
        if human {
            // A closed stdout is not worth aborting the run over.
            let _ = writeln!(std::io::stdout().lock(), "{}", report::human_line(r));
        }
    };
    let records = if args.isolate {
        let names: Vec<_> = plan
            .iter()
            .map(|(t, c)| {
                let device = format!("{}#{}", t.info.name, t.index);
                (full_name(t, c), t.backend.name().to_owned(), device, c.negative)
            })
            .collect();
        let mut worker_args = Vec::new();
        if let Some(d) = &args.devices {
            worker_args.extend(["--devices".to_owned(), d.clone()]);
        }
        if let Some(f) = &args.filter {
            worker_args.extend(["--filter".to_owned(), f.clone()]);
        }
        drop(out);
        let records = isolate::run_isolated(&std::env::current_exe()?, &worker_args, &names, progress)?;
        out = std::io::stdout().lock();
        records
    } else {
        runner::run_plan(&rt, &plan, &expectations, progress)
    };
    let summary = Summary::of(&records);
    match args.format {
        Format::Human => writeln!(out, "{}", summary.line())?,
        Format::Json => writeln!(out, "{}", report::json(&records))?,
        Format::Junit => writeln!(out, "{}", report::junit(&records)?)?,
    }
    Ok(if summary.fail > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
