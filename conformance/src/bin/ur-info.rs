//! `ur-info`: what this machine offers, like `sycl-ls` / `clinfo`.
//!
//! Lists every adapter that was looked for (with the reason when it is
//! absent), its platforms and devices, then the memory-connection matrix over
//! the locations it creates: one context per platform with all its selected
//! devices, plus one context per device. `--json` prints the same as JSON.
//!
//! ```text
//! cargo run -p ur-conformance --bin ur-info -- --devices 'native:*;opencl:*' --json
//! ```

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use serde::Serialize;
use ur_adapters::{discover_with, AdapterReport, DiscoverOptions};
use ur_api::{
    ContextId, DeviceId, DeviceInfo, DeviceSelector, DynAdapter, Location, PlatformInfo, Runtime, SELECTOR_ENV,
};

/// Shows adapters, platforms, devices and the memory-connection matrix.
#[derive(Debug, Parser)]
#[command(name = "ur-info", version, about)]
struct Cli {
    /// Device selector, e.g. `opencl:cpu;native:*` or `!cuda:*` (see README).
    #[arg(long, env = SELECTOR_ENV, value_name = "SELECTOR")]
    devices: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Do not apply the OpenCL defaults (`POCL_DEVICES`, `RUSTICL_ENABLE`,
    /// `OCL_ICD_VENDORS`) when unset.
    #[arg(long)]
    no_opencl_defaults: bool,
}

/// The OpenCL settings the project's tests run with (`cargo xtask ci` sets
/// the same): two PoCL CPU devices in one platform, and Mesa rusticl's
/// software device, which rusticl hides unless asked for.
const OPENCL_DEFAULTS: [(&str, &str); 2] = [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")];

/// The ICD loader's vendors-folder variable (ocl-icd reads it when the
/// first OpenCL call is made, so setting it in-process works).
const ICD_VENDORS_ENV: &str = "OCL_ICD_VENDORS";

/// The vendors folder `cargo xtask setup` makes (xtask's `icd.rs`: the
/// system's ICD files plus Intel's CPU runtime), under the wheel cache
/// (`$UR_WHEEL_CACHE`, else `$XDG_CACHE_HOME` or `~/.cache` +
/// `unified-runtime/wheels`); `None` where setup registered nothing.
fn registered_icd_vendors() -> Option<std::path::PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let cache = nonempty("UR_WHEEL_CACHE").map(std::path::PathBuf::from).or_else(|| {
        let base = nonempty("XDG_CACHE_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| nonempty("HOME").map(|h| std::path::PathBuf::from(h).join(".cache")))?;
        Some(base.join("unified-runtime").join("wheels"))
    })?;
    let vendors = cache.join("opencl-icd").join("vendors");
    vendors.join("intel-cpu.icd").is_file().then_some(vendors)
}

/// Sets each [`OPENCL_DEFAULTS`] variable that is unset, and
/// `OCL_ICD_VENDORS` to the registered folder when unset; returns what it
/// set. Must run before any other thread starts.
fn apply_opencl_defaults() -> Vec<String> {
    let mut set = Vec::new();
    for (key, value) in OPENCL_DEFAULTS {
        if std::env::var_os(key).is_none() {
            // Edition 2021: safe; called first thing in `main`, before any thread exists.
            std::env::set_var(key, value);
            set.push(format!("{key}={value:?}"));
        }
    }
    if std::env::var_os(ICD_VENDORS_ENV).is_none() {
        if let Some(vendors) = registered_icd_vendors() {
            // As above: before any thread and any OpenCL call.
            std::env::set_var(ICD_VENDORS_ENV, &vendors);
            set.push(format!("{ICD_VENDORS_ENV}={:?}", vendors.display().to_string()));
        }
    }
    set
}

/// Everything `ur-info` reports.
#[derive(Debug, Serialize)]
struct Report {
    /// The selector in force, as text.
    selector: String,
    /// Every adapter that was looked for, present or not.
    adapters: Vec<AdapterOut>,
    /// Location labels, in matrix order.
    locations: Vec<String>,
    /// One entry per ordered pair of locations (rows: `src`).
    connections: Vec<Connection>,
    /// Contexts that could not be created, and other non-fatal failures.
    errors: Vec<String>,
}

#[derive(Debug, Serialize)]
struct AdapterOut {
    backend: String,
    /// The adapter was loaded (it may still have zero platforms).
    loaded: bool,
    /// Why the adapter was not loaded or was skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    platforms: Vec<PlatformOut>,
}

#[derive(Debug, Serialize)]
struct PlatformOut {
    /// Index of the platform within its adapter.
    index: usize,
    #[serde(flatten)]
    info: PlatformInfo,
    devices: Vec<DeviceOut>,
}

#[derive(Debug, Serialize)]
struct DeviceOut {
    /// The device's index within its backend: the index a selector uses.
    index: usize,
    #[serde(flatten)]
    info: DeviceInfo,
    /// The flag sets above (`usm`, `caps`, `program_formats`) as lists of names.
    flag_names: FlagNames,
}

#[derive(Debug, Serialize)]
struct FlagNames {
    usm: Vec<&'static str>,
    caps: Vec<&'static str>,
    program_formats: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
struct Connection {
    src: String,
    dst: String,
    /// `unified`, `migratable`, `none`, or `error: ...`.
    connection: String,
}

/// A location `ur-info` created, with its label.
#[derive(Debug)]
struct Loc {
    label: String,
    location: Location,
}

/// A selected device with what the report needs to name it.
#[derive(Debug, Clone, Copy)]
struct Dev {
    id: DeviceId,
    index: usize,
}

fn names<I: Iterator<Item = (&'static str, T)>, T>(it: I) -> Vec<&'static str> {
    it.map(|(n, _)| n).collect()
}

/// The backend-wide index of each device of `adapter` (the selector's index).
fn backend_indices(adapter: &dyn DynAdapter) -> Vec<DeviceId> {
    adapter
        .platforms()
        .into_iter()
        .flat_map(|p| adapter.devices(p).unwrap_or_default())
        .collect()
}

/// Gathers the report; the contexts it creates are released before returning.
fn collect(rt: &Runtime, reports: &[AdapterReport]) -> Report {
    let mut errors = Vec::new();
    let mut adapters = Vec::new();
    // Platforms with their selected devices, per adapter, for the matrix.
    let mut groups: Vec<(String, usize, Vec<Dev>)> = Vec::new();
    let mut present = rt.adapters().iter();
    for report in reports {
        let backend = report.backend.name().to_owned();
        let adapter = match &report.outcome {
            Ok(_) => present.next(),
            Err(_) => None,
        };
        let Some(adapter) = adapter else {
            adapters.push(AdapterOut {
                backend,
                loaded: false,
                reason: report.outcome.as_ref().err().cloned(),
                platforms: Vec::new(),
            });
            continue;
        };
        let all = backend_indices(adapter.as_ref());
        let selected = rt.platforms();
        let mut platforms = Vec::new();
        for (pindex, p) in adapter.platforms().into_iter().enumerate() {
            if !selected.contains(&p) {
                continue;
            }
            let info = match adapter.platform_info(p) {
                Ok(i) => i,
                Err(e) => {
                    errors.push(format!("{backend}:{pindex}: platform info: {e}"));
                    continue;
                }
            };
            let mut devices = Vec::new();
            let mut devs = Vec::new();
            for d in rt.devices(p).unwrap_or_default() {
                let index = all.iter().position(|x| *x == d).unwrap_or(usize::MAX);
                match adapter.device_info(d) {
                    Ok(info) => {
                        let flag_names = FlagNames {
                            usm: names(info.usm.iter_names()),
                            caps: names(info.caps.iter_names()),
                            program_formats: names(info.program_formats.iter_names()),
                        };
                        devices.push(DeviceOut {
                            index,
                            info,
                            flag_names,
                        });
                        devs.push(Dev { id: d, index });
                    }
                    Err(e) => errors.push(format!("{backend}:{index}: device info: {e}")),
                }
            }
            groups.push((format!("{backend}:{pindex}"), pindex, devs));
            platforms.push(PlatformOut {
                index: pindex,
                info,
                devices,
            });
        }
        adapters.push(AdapterOut {
            backend,
            loaded: true,
            reason: None,
            platforms,
        });
    }

    let (locs, contexts) = make_locations(rt, &groups, &mut errors);
    let mut connections = Vec::with_capacity(locs.len() * locs.len());
    for src in &locs {
        for dst in &locs {
            let connection = match rt.memory_connection(src.location, dst.location) {
                Ok(c) => c.to_string(),
                Err(e) => format!("error: {e}"),
            };
            connections.push(Connection {
                src: src.label.clone(),
                dst: dst.label.clone(),
                connection,
            });
        }
    }
    for c in contexts {
        if let Err(e) = rt.release_context(c) {
            errors.push(format!("releasing a context: {e}"));
        }
    }
    Report {
        selector: rt.selector().to_string(),
        adapters,
        locations: locs.into_iter().map(|l| l.label).collect(),
        connections,
        errors,
    }
}

/// One context per platform over all its devices, then one per device.
fn make_locations(
    rt: &Runtime,
    groups: &[(String, usize, Vec<Dev>)],
    errors: &mut Vec<String>,
) -> (Vec<Loc>, Vec<ContextId>) {
    let mut locs = Vec::new();
    let mut contexts = Vec::new();
    for (platform, _, devs) in groups {
        if devs.is_empty() {
            continue;
        }
        let mut sets: Vec<(String, Vec<Dev>)> = vec![("all".to_owned(), devs.clone())];
        sets.extend(devs.iter().map(|d| (format!("dev{}", d.index), vec![*d])));
        for (what, set) in sets {
            let ids: Vec<DeviceId> = set.iter().map(|d| d.id).collect();
            let n = contexts.len();
            match rt.create_context(&ids) {
                Ok(ctx) => {
                    contexts.push(ctx);
                    for d in set {
                        locs.push(Loc {
                            label: format!("{platform}/ctx{n}({what})/dev{}", d.index),
                            location: Location::new(ctx, d.id),
                        });
                    }
                }
                Err(e) => errors.push(format!("{platform}: context over {what}: {e}")),
            }
        }
    }
    (locs, contexts)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "-".to_owned()
    } else {
        names.join(" | ")
    }
}

fn letter(connection: &str) -> &'static str {
    match connection {
        "unified" => "U",
        "migratable" => "M",
        "none" => "-",
        _ => "!",
    }
}

/// The report as text.
fn text(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Device selector: {}", r.selector);
    let _ = writeln!(s, "\nAdapters:");
    for a in &r.adapters {
        if a.loaded {
            let n: usize = a.platforms.iter().map(|p| p.devices.len()).sum();
            let _ = writeln!(
                s,
                "  {:<11} loaded: {} platform(s), {n} device(s) selected",
                a.backend,
                a.platforms.len()
            );
        } else {
            let _ = writeln!(
                s,
                "  {:<11} not loaded: {}",
                a.backend,
                a.reason.as_deref().unwrap_or("unknown")
            );
        }
    }
    for a in r.adapters.iter().filter(|a| a.loaded) {
        for p in &a.platforms {
            let i = &p.info;
            let _ = writeln!(
                s,
                "\nPlatform [{}:{}] {} ({}, {})",
                a.backend, p.index, i.name, i.vendor, i.version
            );
            for d in &p.devices {
                let i = &d.info;
                let _ = writeln!(s, "  Device [{}:{}] {}", a.backend, d.index, i.name);
                let _ = writeln!(s, "    vendor:          {}", i.vendor);
                let _ = writeln!(s, "    type:            {}", i.device_type.name());
                let _ = writeln!(s, "    global memory:   {}", bytes(i.global_mem_size));
                let _ = writeln!(s, "    max allocation:  {}", bytes(i.max_alloc_size));
                let _ = writeln!(
                    s,
                    "    host-unified:    {}",
                    if i.host_unified_memory { "yes" } else { "no" }
                );
                let _ = writeln!(s, "    USM:             {}", list(&d.flag_names.usm));
                let _ = writeln!(s, "    caps:            {}", list(&d.flag_names.caps));
                let _ = writeln!(s, "    program formats: {}", list(&d.flag_names.program_formats));
                let _ = writeln!(
                    s,
                    "    compute units:   {} (max work-group {})",
                    i.max_compute_units, i.max_work_group_size
                );
                let _ = writeln!(
                    s,
                    "    versions:        driver {}, backend {}",
                    i.driver_version, i.backend_version
                );
            }
        }
    }
    let n = r.locations.len();
    let _ = writeln!(
        s,
        "\nMemory connections ({n} locations; row = source, column = destination):"
    );
    if n == 0 {
        let _ = writeln!(s, "  (no devices selected)");
    } else {
        let _ = writeln!(
            s,
            "  U = unified (use in place), M = migratable (adapter copy), - = none (through host)"
        );
    }
    let w = format!("L{}", n.saturating_sub(1)).len();
    if n > 0 {
        let _ = write!(s, "  {:w$} ", "");
        for j in 0..n {
            let _ = write!(s, " {:>w$}", format!("L{j}"));
        }
        let _ = writeln!(s);
    }
    for i in 0..n {
        let _ = write!(s, "  {:<w$} ", format!("L{i}"));
        for j in 0..n {
            let _ = write!(s, " {:>w$}", letter(&r.connections[i * n + j].connection));
        }
        let _ = writeln!(s);
    }
    for (i, l) in r.locations.iter().enumerate() {
        let _ = writeln!(s, "  {:<w$} = {l}", format!("L{i}"));
    }
    for c in r.connections.iter().filter(|c| c.connection.starts_with("error")) {
        let _ = writeln!(s, "  ! {} -> {}: {}", c.src, c.dst, c.connection);
    }
    for e in &r.errors {
        let _ = writeln!(s, "warning: {e}");
    }
    s
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !cli.no_opencl_defaults {
        let set = apply_opencl_defaults();
        if !set.is_empty() {
            eprintln!(
                "ur-info: using {} (the tests' OpenCL settings; set them, or pass --no-opencl-defaults, to change)",
                set.join(", ")
            );
        }
    }
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let selector = match cli.devices.as_deref().map(str::trim) {
        None | Some("") => DeviceSelector::all(),
        Some(s) => match s.parse::<DeviceSelector>() {
            Ok(sel) => sel,
            Err(e) => {
                eprintln!("ur-info: {e}");
                return ExitCode::from(2);
            }
        },
    };
    if let Err(e) = ur_adapters::check_selector(&selector) {
        eprintln!("ur-info: {e}");
        return ExitCode::from(2);
    }
    let (rt, reports) = discover_with(&selector, &DiscoverOptions::default());
    let report = collect(&rt, &reports);
    let out = if cli.json {
        match serde_json::to_string_pretty(&report) {
            Ok(j) => j + "\n",
            Err(e) => {
                eprintln!("ur-info: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        text(&report)
    };
    // A closed pipe (`ur-info | head`) is not an error worth a panic.
    match std::io::stdout().lock().write_all(out.as_bytes()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ur-info: writing output: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn native_report() -> serde_json::Value {
        let sel: DeviceSelector = "native:*".parse().unwrap();
        let (rt, reports) = discover_with(&sel, &DiscoverOptions::default());
        serde_json::to_value(collect(&rt, &reports)).unwrap()
    }

    #[test]
    fn json_structure_with_the_native_adapter() {
        let v = native_report();
        for key in ["selector", "adapters", "locations", "connections", "errors"] {
            assert!(v.get(key).is_some(), "missing `{key}` in {v:#}");
        }
        assert_eq!(v["errors"].as_array().unwrap().len(), 0, "{v:#}");
        let adapters = v["adapters"].as_array().unwrap();
        let native = adapters
            .iter()
            .find(|a| a["backend"] == "native")
            .expect("native adapter listed");
        assert_eq!(native["loaded"], true);
        let dev = &native["platforms"][0]["devices"][0];
        for key in [
            "index",
            "name",
            "vendor",
            "device_type",
            "global_mem_size",
            "max_alloc_size",
            "host_unified_memory",
            "usm",
            "caps",
            "program_formats",
            "driver_version",
            "backend_version",
            "flag_names",
        ] {
            assert!(dev.get(key).is_some(), "device lacks `{key}`: {dev:#}");
        }
        assert_eq!(dev["device_type"], "cpu");
        assert!(dev["flag_names"]["program_formats"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "HOST"));
    }

    #[test]
    fn matrix_is_square_and_unified_on_the_diagonal() {
        let v = native_report();
        let locs: Vec<&str> = v["locations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        // One context over all devices plus one per device: at least two locations.
        assert!(locs.len() >= 2, "{locs:?}");
        assert!(locs[0].starts_with("native:0/ctx0(all)/dev0"), "{locs:?}");
        let conns = v["connections"].as_array().unwrap();
        assert_eq!(conns.len(), locs.len() * locs.len());
        for (i, src) in locs.iter().enumerate() {
            for (j, dst) in locs.iter().enumerate() {
                let c = &conns[i * locs.len() + j];
                assert_eq!(c["src"], *src);
                assert_eq!(c["dst"], *dst);
                let kind = c["connection"].as_str().unwrap();
                assert!(["unified", "migratable", "none"].contains(&kind), "{c}");
                if i == j {
                    assert_eq!(kind, "unified", "a location reaches itself in place: {c}");
                }
            }
        }
    }

    #[test]
    fn text_lists_every_location_in_the_legend() {
        let sel: DeviceSelector = "native:*".parse().unwrap();
        let (rt, reports) = discover_with(&sel, &DiscoverOptions::default());
        let r = collect(&rt, &reports);
        let t = text(&r);
        assert!(t.contains("Memory connections"), "{t}");
        for (i, l) in r.locations.iter().enumerate() {
            assert!(t.contains(&format!("L{i} = {l}")), "{t}");
        }
    }

    #[test]
    fn a_selector_that_excludes_everything_gives_an_empty_matrix() {
        let sel: DeviceSelector = "native:gpu".parse().unwrap();
        let (rt, reports) = discover_with(&sel, &DiscoverOptions::default());
        let r = collect(&rt, &reports);
        assert!(r.locations.is_empty());
        assert!(r.connections.is_empty());
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
        assert_eq!(bytes(1536), "1.5 KiB");
    }
}
