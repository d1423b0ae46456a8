//! Builds the host-only SYCL programs of `tests/sycl/` with g++ against the
//! `intel-sycl-rt` wheel and runs each twice: on this crate's adapter
//! library (`UR_ADAPTERS_FORCE_LOAD`) and on UR's own OpenCL adapter (the
//! loader's default) over the same devices, then compares what both print.
//!
//! Skips, saying why, where g++ or the wheels (`cargo xtask setup`) are
//! missing; `UR_REQUIRE_SYCL=1` (CI) turns a skip into a failure.
//! Programs in `KNOWN_FAILING` must fail on our library (one that passes
//! fails the run, so the list stays honest).
//!
//! Each program also runs under the UR loader's validation layer
//! (`UR_ENABLE_LAYERS=UR_LAYER_FULL_VALIDATION`: parameter, lifetime and
//! leak checks; `UR_LOG_VALIDATION` at debug level, so a silent layer is a
//! failure) on our library and on UR's own OpenCL adapter. libsycl 2026.2
//! itself trips the layer on some programs (the same reports on UR's own
//! adapter: releases of handles the layer never saw made, null optional
//! handles, handles leaked on exception paths); so the check is that our
//! library adds no kind of report UR's adapter does not also get, and both
//! counts are printed side by side.
//!
//! Leaks are compared per origin too: each leak report ("Retained N
//! reference(s) to handle") names the first libsycl frame that made the
//! handle, and our library must leak from no origin UR's adapter does not
//! leak from. Measured on `bad_input` (libsycl's exception paths): ours 6
//! leaks (3 made in the `sycl::context` constructor, 3 in the
//! `sycl::queue` constructor), UR's OpenCL adapter 7 (3 and 4): libsycl's
//! own leaks, none of them ours.

mod common;

use std::path::Path;

use common::{data_dirs, environment, wheels};
use std::process::{Command, Output};

/// Programs that must pass on our library, and what of UR's own output
/// must appear in ours (lines starting with the prefix; `""` = all lines
/// ending in `ok`).
const PROGRAMS: &[(&str, &str)] = &[
    ("device_list", "platform: "),
    ("usm", ""),
    ("buffers", ""),
    ("sub_buffers", ""),
    ("host_tasks", ""),
    ("profiling", ""),
    ("bad_input", ""),
];

/// Programs known to fail on our library, with the reason.
const KNOWN_FAILING: &[(&str, &str)] = &[];

/// The kinds of validation-layer errors in `lines` (addresses masked,
/// backtrace lines dropped), with their counts.
fn error_kinds(lines: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut kinds = std::collections::BTreeMap::new();
    for l in lines.iter().filter(|l| !l.contains("]: #")) {
        let mut masked = String::new();
        let mut rest = l.as_str();
        while let Some(at) = rest.find("0x") {
            masked.push_str(&rest[..at]);
            masked.push('X');
            rest = rest[at + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        }
        masked.push_str(rest);
        *kinds.entry(masked).or_insert(0) += 1;
    }
    kinds
}

/// The leak reports (a positive count retained at teardown) in `lines` by
/// origin: the first `sycl::` frame of the
/// backtrace of where each leaked handle was made (its mangled name), with
/// counts.
fn leaks_by_origin(lines: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut origins = std::collections::BTreeMap::new();
    let mut iter = lines.iter().peekable();
    while let Some(l) = iter.next() {
        // "Retained -1" is a release of a handle the layer never saw made
        // (libsycl's, counted with the kinds above), not a leak.
        if !l.contains(" reference(s) to handle") || l.contains("Retained -") || !l.contains("Retained ") {
            continue;
        }
        let mut origin = "unknown".to_owned();
        while let Some(frame) = iter.next_if(|f| f.contains("]: #") || f.contains("recorded for first time")) {
            let sym = frame.split_once("(_ZN4sycl").and_then(|(_, rest)| rest.split_once('+'));
            if let (Some((sym, _)), "unknown") = (sym, origin.as_str()) {
                origin = format!("_ZN4sycl{sym}");
            }
        }
        *origins.entry(origin).or_insert(0) += 1;
    }
    origins
}

/// Per key of our counts: `report(key, ours, UR's)` is called (it prints)
/// and its text is a failure where UR's adapter never reports that key.
/// One entry per key of `mine`; `None` where UR's adapter has it too.
fn compare_counts(
    mine: &std::collections::BTreeMap<String, usize>,
    reference: &std::collections::BTreeMap<String, usize>,
    mut report: impl FnMut(&str, usize, usize) -> String,
) -> Vec<Option<String>> {
    mine.iter()
        .map(|(key, &n)| {
            let r = reference.get(key).copied().unwrap_or(0);
            let text = report(key, n, r);
            (r == 0).then_some(text)
        })
        .collect()
}

/// Runs `exe` on our library under the UR loader's validation layer
/// (`UR_ENABLE_LAYERS=UR_LAYER_FULL_VALIDATION`: parameter, lifetime and
/// leak checks; `UR_LOG_VALIDATION` sends its log to stdout at debug level
/// so a run proves the layer was active) and returns its error and
/// warning lines, or why the run itself is wrong.
fn validation_errors(exe: &Path, lib: &Path, icd: &Path, ours: Option<&Path>) -> Result<Vec<String>, String> {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", lib)
        .env("OCL_ICD_VENDORS", icd)
        .env("POCL_DEVICES", "pthread pthread")
        .env("RUSTICL_ENABLE", "swrast")
        .env("UR_ENABLE_LAYERS", "UR_LAYER_FULL_VALIDATION")
        .env("UR_LOG_VALIDATION", "level:debug;flush:debug;output:stdout");
    if let Some(so) = ours {
        c.env("UR_ADAPTERS_FORCE_LOAD", so);
    }
    let out = c.output().map_err(|e| e.to_string())?;
    // The leak report at teardown goes to stderr.
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        return Err(format!("failed under the validation layer ({})", out.status));
    }
    if !text.contains("<VALIDATION>[DEBUG]") {
        return Err("the validation layer logged nothing: not active".into());
    }
    Ok(text
        .lines()
        .filter(|l| l.starts_with("<VALIDATION>[ERROR]") || l.starts_with("<VALIDATION>[WARNING]"))
        .map(str::to_owned)
        .collect())
}

fn run(exe: &Path, lib: &Path, icd: &Path, ours: Option<&Path>) -> Output {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", lib)
        .env("OCL_ICD_VENDORS", icd)
        .env("POCL_DEVICES", "pthread pthread")
        .env("RUSTICL_ENABLE", "swrast");
    if let Some(so) = ours {
        c.env("UR_ADAPTERS_FORCE_LOAD", so);
    }
    c.output().expect("the program starts")
}

/// `one_context.cpp`: one `sycl::context` over PoCL's first device and
/// Intel's CPU OpenCL device through our library's one platform over every
/// runtime (`UR_RUST_ONE_PLATFORM=1`), a 256 MiB buffer written on one and
/// read on the other, every byte checked by the program; and the same
/// program with two contexts on UR's own OpenCL adapter (the baseline of
/// the `sycl.one_context_*` bench row). The failures found.
fn one_context(src: &Path, work: &Path, lib: &Path, icd: &Path, so: &Path) -> Vec<String> {
    let bin = work.join("one_context");
    if let Err(e) = common::build_sycl(&src.join("one_context.cpp"), &bin, lib) {
        return vec![format!("one_context: {e}")];
    }
    let mut failures = Vec::new();
    for (mode, ours, expect) in [
        ("one", true, "one context over two runtimes: ok"),
        ("two", false, "two contexts: ok"),
    ] {
        let mut c = Command::new(&bin);
        c.arg(mode)
            .env("LD_LIBRARY_PATH", lib)
            .env("OCL_ICD_VENDORS", icd)
            .env("POCL_DEVICES", "pthread pthread")
            .env("UR_ONE_CONTEXT_MIB", "256");
        if ours {
            c.env("UR_ADAPTERS_FORCE_LOAD", so)
                .env("UR_RUST_ONE_PLATFORM", "1")
                .env("RUSTICL_ENABLE", "swrast");
        }
        let out = c.output().expect("the program starts");
        let text = String::from_utf8_lossy(&out.stdout);
        let side = if ours { "our library" } else { "UR's OpenCL adapter" };
        println!(
            "--- one_context {mode} on {side}:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if !out.status.success() || !text.lines().any(|l| l == expect) {
            failures.push(format!("one_context {mode} on {side}: {} ({text})", out.status));
        }
    }
    failures
}

fn main() {
    let required = std::env::var("UR_REQUIRE_SYCL").is_ok_and(|v| v == "1");
    let skip = |why: String| {
        if required {
            panic!("UR_REQUIRE_SYCL=1 but: {why}");
        }
        println!("sycl: skipped: {why}");
    };
    if Command::new("g++").arg("--version").output().is_err() {
        return skip("g++ not found (`cargo xtask setup` installs it)".into());
    }
    if !data_dirs("include").iter().any(|d| d.join("sycl/sycl.hpp").is_file()) {
        return skip(format!("no SYCL headers under {}", wheels().display()));
    }
    let so = match common::adapter_library() {
        Ok(so) => so,
        Err(e) => return skip(e),
    };
    let target = so.parent().expect("target/<profile>").to_path_buf();
    let work = target.join("sycl-tests");
    let (lib, icd) = match environment(&work) {
        Ok(x) => x,
        Err(e) => return skip(e),
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sycl");
    let mut failures = Vec::new();
    let all = PROGRAMS
        .iter()
        .map(|(p, c)| (*p, Some(*c)))
        .chain(KNOWN_FAILING.iter().map(|(p, _)| (*p, None)));
    for (name, compare) in all {
        let bin = work.join(name);
        if let Err(e) = common::build_sycl(&src.join(format!("{name}.cpp")), &bin, &lib) {
            failures.push(format!("{name}: {e}"));
            continue;
        }
        let ours = run(&bin, &lib, &icd, Some(&so));
        let text = String::from_utf8_lossy(&ours.stdout).into_owned();
        println!(
            "--- {name} on libur_adapter_rust.so:\n{text}{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let Some(prefix) = compare else {
            if ours.status.success() {
                failures.push(format!(
                    "{name}: listed as known failing, but passes: update KNOWN_FAILING"
                ));
            } else {
                println!("{name}: fails as known");
            }
            continue;
        };
        if !ours.status.success() {
            failures.push(format!("{name}: failed on our library ({})", ours.status));
            continue;
        }
        match (
            validation_errors(&bin, &lib, &icd, Some(&so)),
            validation_errors(&bin, &lib, &icd, None),
        ) {
            (Err(e), _) => failures.push(format!("{name}: on our library: {e}")),
            (_, Err(e)) => failures.push(format!("{name}: on UR's OpenCL adapter: {e}")),
            (Ok(ours_v), Ok(theirs_v)) => {
                let kinds = compare_counts(&error_kinds(&ours_v), &error_kinds(&theirs_v), |kind, n, r| {
                    println!("{name}: validation layer: ours {n}, UR's OpenCL adapter {r}: {kind}");
                    format!("{name}: validation layer reports `{kind}` ({n}x) on our library and never on UR's adapter")
                });
                if kinds.is_empty() {
                    println!("{name}: validation layer: clean");
                }
                failures.extend(kinds.into_iter().flatten());
                let leaks = compare_counts(
                    &leaks_by_origin(&ours_v),
                    &leaks_by_origin(&theirs_v),
                    |origin, n, r| {
                        println!("{name}: leaks made in {origin}: ours {n}, UR's OpenCL adapter {r}");
                        format!("{name}: our library leaks handles made in {origin} ({n}x); UR's adapter leaks none from there")
                    },
                );
                failures.extend(leaks.into_iter().flatten());
            }
        }
        let theirs = run(&bin, &lib, &icd, None);
        let reference = String::from_utf8_lossy(&theirs.stdout).into_owned();
        println!("--- {name} on UR's OpenCL adapter:\n{reference}");
        for line in reference.lines() {
            let compared = if prefix.is_empty() {
                line.ends_with(": ok")
            } else {
                line.starts_with(prefix)
            };
            if compared && !text.lines().any(|l| l == line) {
                failures.push(format!("{name}: UR's adapter printed `{line}`, ours did not"));
            }
        }
    }
    failures.extend(one_context(&src, &work, &lib, &icd, &so));
    if !failures.is_empty() {
        panic!("{} SYCL failure(s):\n{}", failures.len(), failures.join("\n"));
    }
    println!(
        "sycl: {} programs passed, {} known failing",
        PROGRAMS.len(),
        KNOWN_FAILING.len()
    );
}
