//! `ur-bandwidth`: what every route of the memory manager costs on this
//! machine, like `nvbandwidth` or `clpeak`, but over every present adapter.
//!
//! Locations are host memory (`host/pageable`: caller memory;
//! `host/pinned`: the manager's host place) and the (context, device)
//! locations `ur-info` creates, with its labels and its selector
//! (`--devices`, `UR_DEVICE_SELECTOR`); see [`locations`] for which
//! contexts (`--contexts`). For every ordered pair, each `--size` (default
//! 64 MiB) is moved `--reps` times (after one warm-up) by the route the
//! manager chooses, and with `--route` by every other route the pair allows
//! ([`ur_memory_manager::MemoryManager::copy_via`]); a 4-byte move gives
//! the latency. What a cell times exactly is in [`measure`].
//!
//! Output: tables on stdout (rows = sources, columns = destinations,
//! GiB/s and the route letter), `--json FILE`, and `--svg FILE`, a heatmap
//! drawn with plotters. A progress bar runs on stderr while it measures.
//! A cell that fails shows `error [k]` with its reason listed under the
//! tables (in the JSON, its `error`), and the run goes on.
//!
//! ```text
//! cargo run --release -p ur-bandwidth -- --size 64MiB --json out.json --svg out.svg
//! cargo run --release -p ur-bandwidth -- --size 4KiB,1MiB,256MiB --route all --devices 'native:*;opencl:0'
//! ```

mod error;
mod locations;
mod measure;
mod report;
mod size;
mod svg;

use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use ur_adapters::{discover_with, DiscoverOptions};
use ur_api::{DeviceSelector, SELECTOR_ENV};
use ur_memory_manager::{Config, MemoryManager};

use crate::error::BwError;
use crate::locations::{Contexts, Kind, Loc};
use crate::measure::{Bench, Code, Way};
use crate::report::{gib_s, Entry, Latency, Report, RouteInfo};

/// Measures the memory manager's routes between every pair of locations.
#[derive(Debug, Parser)]
#[command(name = "ur-bandwidth", version, about)]
struct Cli {
    /// Device selector, e.g. `opencl:cpu;native:*` or `!cuda:*` (as ur-info).
    #[arg(long, env = SELECTOR_ENV, value_name = "SELECTOR")]
    devices: Option<String>,
    /// Bytes per move: one size or a list (`4KiB,1MiB,256MiB`); binary units.
    #[arg(long = "size", value_name = "SIZES", value_delimiter = ',', default_value = "64MiB", value_parser = size_arg)]
    sizes: Vec<usize>,
    /// Timed repetitions per cell (after one warm-up); median, min and max are reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// Also force other routes: `all` (every route each pair allows), or
    /// letters of the route legend (`C,S,Z`); `chosen` (the default) measures
    /// only the manager's choice.
    #[arg(long, value_name = "ROUTES", default_value = "chosen")]
    route: String,
    /// Which contexts hold the device locations.
    #[arg(long, value_enum, default_value_t = Contexts::Platform)]
    contexts: Contexts,
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw the heatmap into this SVG file.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Skip the 4-byte latency moves.
    #[arg(long)]
    no_latency: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Do not apply the OpenCL defaults (`POCL_DEVICES`, `RUSTICL_ENABLE`,
    /// `OCL_ICD_VENDORS`) when unset.
    #[arg(long)]
    no_opencl_defaults: bool,
}

fn size_arg(s: &str) -> Result<usize, String> {
    size::parse(s).map_err(|e| e.to_string())
}

/// Which routes `--route` asks for besides the manager's choice.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Forced {
    /// None.
    Chosen,
    /// Every route each pair allows.
    All,
    /// These, where a pair allows them.
    Only(Vec<Code>),
}

impl Forced {
    fn parse(s: &str) -> Result<Self, BwError> {
        match s.trim() {
            "chosen" => Ok(Forced::Chosen),
            "all" => Ok(Forced::All),
            list => list
                .split(',')
                .map(|l| Code::parse(l).ok_or_else(|| BwError::Route(l.trim().to_owned())))
                .collect::<Result<Vec<_>, _>>()
                .map(Forced::Only),
        }
    }

    fn wants(&self, c: Code) -> bool {
        match self {
            Forced::Chosen => false,
            Forced::All => true,
            Forced::Only(l) => l.contains(&c),
        }
    }
}

/// The OpenCL settings the project's tests and `ur-info` run with: two
/// PoCL CPU devices in one platform and rusticl's software device.
const OPENCL_DEFAULTS: [(&str, &str); 2] = [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")];

/// Sets each unset [`OPENCL_DEFAULTS`] variable, and `OCL_ICD_VENDORS` to
/// the folder `cargo xtask setup` registered; returns what it set. Runs
/// first in `main`, before any thread exists and any OpenCL call.
fn apply_opencl_defaults() -> Vec<String> {
    let mut set = Vec::new();
    for (key, value) in OPENCL_DEFAULTS {
        if std::env::var_os(key).is_none() {
            // Edition 2021: safe; no other thread exists yet.
            std::env::set_var(key, value);
            set.push(format!("{key}={value:?}"));
        }
    }
    if std::env::var_os("OCL_ICD_VENDORS").is_none() {
        if let Some(vendors) = ur_opencl::registered_icd_vendors() {
            std::env::set_var("OCL_ICD_VENDORS", &vendors);
            set.push(format!("OCL_ICD_VENDORS={:?}", vendors.display().to_string()));
        }
    }
    set
}

/// One measurement to make.
#[derive(Debug, Clone, Copy)]
struct Job {
    src: usize,
    dst: usize,
    size: usize,
    latency: bool,
    way: Way,
    /// The route expected (reported if the measurement fails).
    code: Code,
}

/// Bytes of a latency move.
const LATENCY_BYTES: usize = 4;

/// The jobs of every ordered pair: per size (then the latency move) the
/// manager's choice and the forced routes asked for.
fn jobs(bench: &Bench<'_>, locs: &[Loc], cli: &Cli, forced: &Forced, early: &mut Vec<Entry>) -> Vec<Job> {
    let mut out = Vec::new();
    let mut sizes: Vec<(usize, bool)> = cli.sizes.iter().map(|&s| (s, false)).collect();
    if !cli.no_latency {
        sizes.push((LATENCY_BYTES, true));
    }
    for (i, s) in locs.iter().enumerate() {
        for (j, d) in locs.iter().enumerate() {
            for &(size, latency) in &sizes {
                let code = match bench.chosen(s.kind, d.kind, size) {
                    Ok(c) => c,
                    Err(e) => {
                        // Reported as this cell's reason; nothing to measure.
                        if !latency {
                            early.push(failed(s, d, "?", false, size, cli.reps as usize, &e));
                        }
                        continue;
                    }
                };
                out.push(Job {
                    src: i,
                    dst: j,
                    size,
                    latency,
                    way: Way::Chosen,
                    code,
                });
                if *forced == Forced::Chosen {
                    continue;
                }
                match bench.alternatives(s.kind, d.kind, size) {
                    Ok(alts) => out.extend(alts.into_iter().filter(|(c, _)| forced.wants(*c)).map(|(c, way)| Job {
                        src: i,
                        dst: j,
                        size,
                        latency,
                        way,
                        code: c,
                    })),
                    Err(e) => tracing::warn!(src = %s.label, dst = %d.label, error = %e, "listing the routes failed"),
                }
            }
        }
    }
    out
}

fn failed(s: &Loc, d: &Loc, route: &str, forced: bool, size: usize, reps: usize, e: &BwError) -> Entry {
    Entry {
        src: s.label.clone(),
        dst: d.label.clone(),
        route: route.to_owned(),
        forced,
        size,
        gib_s_median: None,
        gib_s_min: None,
        gib_s_max: None,
        reps,
        error: Some(e.to_string()),
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned())
}

fn progress(len: usize, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

fn run(cli: &Cli) -> Result<Report, BwError> {
    let forced = Forced::parse(&cli.route)?;
    let selector = match cli.devices.as_deref().map(str::trim) {
        None | Some("") => DeviceSelector::all(),
        Some(s) => s
            .parse::<DeviceSelector>()
            .map_err(|e| BwError::Selector(e.to_string()))?,
    };
    ur_adapters::check_selector(&selector).map_err(BwError::Selector)?;
    let (rt, reports) = discover_with(&selector, &DiscoverOptions::default());
    for r in &reports {
        if let Err(why) = &r.outcome {
            tracing::info!(backend = r.backend.name(), %why, "adapter not loaded");
        }
    }
    let made = locations::device_locations(&rt, cli.contexts);
    let rt = Arc::new(rt);
    let device_locs: Vec<ur_api::Location> = made
        .locs
        .iter()
        .filter_map(|l| match l.kind {
            Kind::Device(at) => Some(at),
            _ => None,
        })
        .collect();
    // Route costs are not measured: a cell's bytes have one source, so the
    // route does not depend on them, and probing would add to first moves.
    let config = Config {
        measure_routes: false,
        ..Config::default()
    };
    let mm = MemoryManager::with_config(rt.clone(), &device_locs, config)?;
    let mut locs: Vec<Loc> = locations::host_locations(String::new()).into();
    locs.extend(made.locs.iter().cloned());

    let reps = cli.reps as usize;
    let latency_reps = reps.max(10);
    let max = cli
        .sizes
        .iter()
        .copied()
        .max()
        .unwrap_or(LATENCY_BYTES)
        .max(LATENCY_BYTES);
    let mut bench = Bench::new(&mm, max);
    let mut results = Vec::new();
    let todo = jobs(&bench, &locs, cli, &forced, &mut results);
    let bar = progress(todo.len(), cli.quiet);
    let mut latency = Vec::new();
    for job in &todo {
        let (s, d) = (&locs[job.src], &locs[job.dst]);
        let is_forced = job.way != Way::Chosen;
        bar.set_message(format!(
            "{} -> {} {} {}{}",
            s.short,
            d.short,
            size::format(job.size),
            job.code.letter(),
            if is_forced { " (forced)" } else { "" }
        ));
        let n = if job.latency { latency_reps } else { reps };
        let out = std::panic::catch_unwind(AssertUnwindSafe(|| bench.measure(s.kind, d.kind, job.way, job.size, n)))
            .unwrap_or_else(|p| Err(BwError::Panic(panic_message(p))));
        if let Err(e) = &out {
            tracing::debug!(src = %s.label, dst = %d.label, error = %e, "cell failed");
        }
        if job.latency {
            latency.push(match out {
                Ok(sample) => {
                    let us: Vec<f64> = sample.seconds.iter().map(|t| t * 1e6).collect();
                    let (med, min, max) = measure::stats(&us);
                    Latency {
                        src: s.label.clone(),
                        dst: d.label.clone(),
                        route: sample.code.letter().into(),
                        forced: is_forced,
                        bytes: job.size,
                        us_median: Some(med),
                        us_min: Some(min),
                        us_max: Some(max),
                        reps: n,
                        error: None,
                    }
                }
                Err(e) => Latency {
                    src: s.label.clone(),
                    dst: d.label.clone(),
                    route: job.code.letter().into(),
                    forced: is_forced,
                    bytes: job.size,
                    us_median: None,
                    us_min: None,
                    us_max: None,
                    reps: n,
                    error: Some(e.to_string()),
                },
            });
        } else {
            results.push(match out {
                Ok(sample) => {
                    let (t_med, t_min, t_max) = measure::stats(&sample.seconds);
                    Entry {
                        src: s.label.clone(),
                        dst: d.label.clone(),
                        route: sample.code.letter().into(),
                        forced: is_forced,
                        size: job.size,
                        gib_s_median: Some(gib_s(job.size, t_med)),
                        // The slowest repetition gives the lowest figure.
                        gib_s_min: Some(gib_s(job.size, t_max)),
                        gib_s_max: Some(gib_s(job.size, t_min)),
                        reps: n,
                        error: None,
                    }
                }
                Err(e) => failed(s, d, job.code.letter(), is_forced, job.size, n, &e),
            });
        }
        bar.inc(1);
    }
    bar.finish_and_clear();

    let pinned = if mm.stats().pinned_host_stores > 0 {
        "the memory manager's host place: USM host memory of the first context offering it (pinned)"
    } else {
        "the memory manager's host place: page-aligned host memory (no context offered USM host memory)"
    };
    locs[1].what = pinned.to_owned();
    drop(bench);
    drop(mm);
    let mut errors = made.errors;
    for c in made.contexts {
        if let Err(e) = rt.release_context(c) {
            errors.push(format!("releasing a context: {e}"));
        }
    }
    // Matrix order: results sorted by source, destination, size; chosen first.
    let order = |label: &str| locs.iter().position(|l| l.label == label).unwrap_or(usize::MAX);
    results.sort_by_key(|e| (order(&e.src), order(&e.dst), e.size, e.forced));
    latency.sort_by_key(|l| (order(&l.src), order(&l.dst), l.forced));
    Ok(Report {
        tool: "ur-bandwidth",
        selector: rt.selector().to_string(),
        contexts: cli.contexts,
        reps,
        sizes: cli.sizes.clone(),
        locations: locs.iter().map(|l| l.label.clone()).collect(),
        location_info: locs.iter().map(Loc::info).collect(),
        routes: Code::ALL
            .iter()
            .map(|c| RouteInfo {
                letter: c.letter(),
                meaning: c.describe(),
            })
            .collect(),
        results,
        latency,
        errors,
    })
}

fn write_outputs(cli: &Cli, report: &Report) -> Result<(), BwError> {
    if let Some(path) = &cli.json {
        let json = serde_json::to_string_pretty(report)? + "\n";
        std::fs::write(path, json).map_err(|source| BwError::Write {
            path: path.clone(),
            source,
        })?;
    }
    if let Some(path) = &cli.svg {
        let shorts = report.shorts();
        let pic = svg::Picture {
            title: format!(
                "ur-bandwidth: the memory manager's routes, GiB/s (row = source, column = destination; {} repetitions)",
                report.reps
            ),
            labels: &shorts,
            panels: report.panels(),
            notes: std::iter::once(
                "Cells: coloured by GiB/s; grey: in place (I), off the scale; red: failed (reason below); ·: the pair does not offer the route"
                    .to_owned(),
            )
            .chain(report.notes())
            .collect(),
        };
        svg::draw(path, &pic)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.no_opencl_defaults {
        let set = apply_opencl_defaults();
        if !set.is_empty() {
            eprintln!(
                "ur-bandwidth: using {} (the tests' OpenCL settings; set them, or pass --no-opencl-defaults, to change)",
                set.join(", ")
            );
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let report = match run(&cli) {
        Ok(r) => r,
        Err(e @ (BwError::Selector(_) | BwError::Route(_))) => {
            eprintln!("ur-bandwidth: {e}");
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("ur-bandwidth: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report.text());
    if let Err(e) = write_outputs(&cli, &report) {
        eprintln!("ur-bandwidth: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn route_lists_parse() {
        assert_eq!(Forced::parse("chosen").unwrap(), Forced::Chosen);
        assert_eq!(Forced::parse("all").unwrap(), Forced::All);
        assert_eq!(
            Forced::parse("C, s,Zd").unwrap(),
            Forced::Only(vec![Code::Copy, Code::Staged, Code::MapDestination])
        );
        assert!(matches!(Forced::parse("C,Q"), Err(BwError::Route(q)) if q == "Q"));
    }

    #[test]
    fn cli_accepts_size_lists() {
        let cli = Cli::try_parse_from(["ur-bandwidth", "--size", "4KiB,1MiB,256MiB", "--reps", "3"]).unwrap();
        assert_eq!(cli.sizes, [4096, 1 << 20, 256 << 20]);
        assert_eq!(cli.reps, 3);
        assert!(Cli::try_parse_from(["ur-bandwidth", "--size", "4KB"]).is_err());
        assert!(Cli::try_parse_from(["ur-bandwidth", "--reps", "0"]).is_err());
        let default = Cli::try_parse_from(["ur-bandwidth"]).unwrap();
        assert_eq!(default.sizes, [64 << 20]);
    }
}
