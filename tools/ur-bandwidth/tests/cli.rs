//! `ur-bandwidth` run as a user runs it, on small sizes: the JSON has its
//! shape (every ordered pair of locations once per size, each cell a
//! positive figure or a reason), the SVG is drawn, `--route all` adds the
//! other routes, a pair that fails (a simulated device too small for the
//! buffer) shows its reason while the run goes on, bad arguments are
//! refused.
//!
//! The binary applies the tests' OpenCL settings itself (two PoCL devices,
//! rusticl's, Intel's CPU runtime where `cargo xtask setup` registered it).
//! Without OpenCL only native and host memory are measured; where
//! `UR_REQUIRE_OPENCL` is set (CI) that is a failure.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn ur_bandwidth(args: &[&str]) -> Output {
    // Every device, whatever selector the environment holds.
    let out = Command::new(env!("CARGO_BIN_EXE_ur-bandwidth"))
        .env_remove("UR_DEVICE_SELECTOR")
        .args(args)
        .output()
        .expect("ur-bandwidth runs");
    println!(
        "$ ur-bandwidth {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON file")).expect("valid JSON")
}

fn labels(v: &Value) -> Vec<String> {
    v["locations"]
        .as_array()
        .expect("locations")
        .iter()
        .map(|l| l.as_str().expect("a label").to_owned())
        .collect()
}

/// A cell is a positive figure with min <= median <= max, or a reason.
fn check_cell(e: &Value, keys: [&str; 3]) {
    let error = e.get("error").and_then(Value::as_str);
    match error {
        Some(why) => {
            assert!(!why.trim().is_empty(), "an empty reason: {e}");
            assert!(e[keys[0]].is_null(), "a failed cell with a figure: {e}");
        }
        None => {
            let [med, min, max] = keys.map(|k| e[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {e}")));
            assert!(med.is_finite() && med > 0.0, "not a positive figure: {e}");
            assert!(min > 0.0 && min <= med && med <= max, "min <= median <= max fails: {e}");
        }
    }
}

#[test]
fn every_pair_is_measured_on_small_sizes_with_json_and_svg() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let (json, svg) = (dir.path().join("out.json"), dir.path().join("out.svg"));
    let out = ur_bandwidth(&[
        "--size",
        "4KiB",
        "--reps",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "exit status {:?}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("4 KiB: GiB/s by the manager's route"), "{stdout}");
    assert!(stdout.contains("Latency of a 4-byte move"), "{stdout}");

    let v = read_json(&json);
    for key in [
        "tool",
        "selector",
        "reps",
        "sizes",
        "locations",
        "location_info",
        "routes",
        "results",
        "latency",
        "errors",
    ] {
        assert!(v.get(key).is_some(), "`{key}` missing");
    }
    let locs = labels(&v);
    assert_eq!(locs[..2], ["host/pageable", "host/pinned"]);
    assert!(locs.contains(&"native:0/ctx0(all)/dev0".to_owned()), "{locs:?}");
    let opencl = locs.iter().filter(|l| l.starts_with("opencl:")).count();
    if opencl == 0 && std::env::var_os("UR_REQUIRE_OPENCL").is_some() {
        panic!("no OpenCL location, and UR_REQUIRE_OPENCL is set");
    }
    let letters: BTreeSet<&str> = v["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["letter"].as_str().unwrap())
        .collect();

    let results = v["results"].as_array().unwrap();
    let n = locs.len();
    assert_eq!(results.len(), n * n, "one entry per ordered pair");
    let mut pairs = BTreeSet::new();
    for e in results {
        for key in ["src", "dst", "route", "size", "gib_s_median", "gib_s_min", "gib_s_max"] {
            assert!(e.get(key).is_some(), "`{key}` missing in {e}");
        }
        assert_eq!(e["size"], 4096);
        assert_eq!(e["forced"], false);
        check_cell(e, ["gib_s_median", "gib_s_min", "gib_s_max"]);
        let route = e["route"].as_str().unwrap();
        if e.get("error").is_none() {
            assert!(letters.contains(route), "unknown route {route}");
        }
        let (s, d) = (e["src"].as_str().unwrap(), e["dst"].as_str().unwrap());
        assert!(locs.iter().any(|l| l == s) && locs.iter().any(|l| l == d), "{e}");
        assert!(pairs.insert((s.to_owned(), d.to_owned())), "pair twice: {e}");
        // A device location reaches itself in place.
        if s == d && s != "host/pageable" && e.get("error").is_none() {
            assert_eq!(route, "I", "{e}");
        }
    }
    let latency = v["latency"].as_array().unwrap();
    assert_eq!(latency.len(), n * n, "one 4-byte move per ordered pair");
    for l in latency {
        assert_eq!(l["bytes"], 4);
        check_cell(l, ["us_median", "us_min", "us_max"]);
    }

    let picture = std::fs::read_to_string(&svg).expect("the SVG file");
    assert!(picture.starts_with("<svg"), "not an SVG");
    assert!(picture.trim_end().ends_with("</svg>"), "an unfinished SVG");
    assert!(picture.contains("GiB/s"));
    for l in v["location_info"].as_array().unwrap() {
        let short = l["short"].as_str().unwrap();
        assert!(picture.contains(short), "{short} is not labelled in the SVG");
    }
    assert!(picture.matches("<rect").count() >= n * n, "fewer cells than pairs");
}

#[test]
fn forced_routes_and_size_lists() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let json = dir.path().join("out.json");
    let out = ur_bandwidth(&[
        "--devices",
        "native:*",
        "--contexts",
        "ur-info",
        "--size",
        "4KiB,8KiB",
        "--reps",
        "1",
        "--route",
        "all",
        "--no-latency",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "exit status {:?}", out.status);
    let v = read_json(&json);
    let locs = labels(&v);
    // Host memory and native's device in two contexts (ur-info's locations).
    assert_eq!(
        locs,
        [
            "host/pageable",
            "host/pinned",
            "native:0/ctx0(all)/dev0",
            "native:0/ctx1(dev0)/dev0"
        ]
    );
    let results = v["results"].as_array().unwrap();
    assert!(v["latency"].as_array().unwrap().is_empty());
    for size in [4096, 8192] {
        let chosen = results
            .iter()
            .filter(|e| e["size"] == size && e["forced"] == false)
            .count();
        assert_eq!(chosen, locs.len() * locs.len(), "{size}");
    }
    // The two native contexts share memory: the manager uses it in place,
    // and the forced routes (adapter copy, staging, mapping) are there too.
    let (a, b) = (&locs[2], &locs[3]);
    let routes: BTreeSet<(&str, bool)> = results
        .iter()
        .filter(|e| e["src"] == a.as_str() && e["dst"] == b.as_str() && e["size"] == 4096)
        .map(|e| (e["route"].as_str().unwrap(), e["forced"].as_bool().unwrap()))
        .collect();
    for want in [("I", false), ("C", true), ("S", true), ("Z", true)] {
        assert!(routes.contains(&want), "{want:?} not in {routes:?}");
    }
    for e in results {
        check_cell(e, ["gib_s_median", "gib_s_min", "gib_s_max"]);
    }
}

#[test]
fn bad_arguments_are_refused() {
    for args in [
        &["--route", "Q"][..],
        &["--size", "4KB"],
        &["--reps", "0"],
        &["--devices", "nosuch:*"],
    ] {
        let out = ur_bandwidth(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_failing_pair_shows_its_reason_and_the_run_goes_on() {
    // A simulated device with 8 KiB of memory cannot hold a 64 KiB buffer:
    // every cell into or out of it fails with the reason, the others are
    // measured, and the 4-byte moves to and from it work.
    let dir = tempfile::tempdir().expect("a temporary folder");
    let json = dir.path().join("out.json");
    let out = Command::new(env!("CARGO_BIN_EXE_ur-bandwidth"))
        .env("UR_SIM_TOPOLOGY", "platform small: tiny mem=8KiB")
        .env_remove("UR_DEVICE_SELECTOR")
        .args([
            "--devices",
            "native:*;sim:*",
            "--size",
            "64KiB",
            "--reps",
            "1",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("ur-bandwidth runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "exit status {:?}", out.status);
    assert!(
        stdout.contains("error [1]") && stdout.contains("Failed cells:"),
        "{stdout}"
    );
    let v = read_json(&json);
    let locs = labels(&v);
    let sim = locs.iter().find(|l| l.starts_with("sim:")).expect("the sim location");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), locs.len() * locs.len());
    for e in results {
        check_cell(e, ["gib_s_median", "gib_s_min", "gib_s_max"]);
        let touches_sim = e["src"] == sim.as_str() || e["dst"] == sim.as_str();
        match e.get("error").and_then(Value::as_str) {
            Some(why) => {
                assert!(touches_sim, "only the sim's cells fail: {e}");
                assert!(
                    why.contains("larger than the device"),
                    "the reason names the cause: {why}"
                );
            }
            None => assert!(!touches_sim, "a 64 KiB buffer on an 8 KiB device: {e}"),
        }
    }
    for l in v["latency"].as_array().unwrap() {
        assert!(l.get("error").is_none(), "4 bytes fit: {l}");
    }
}
