//! The `ur-cts` binary: formats, filtering, listing and exit codes.

use std::process::Command;

fn cts(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ur-cts"))
        .args(args)
        .env_remove("UR_CTS_RUN_KNOWN_FAILURES")
        .output()
        .expect("ur-cts runs")
}

#[test]
fn json_has_the_documented_shape() {
    let out = cts(&["--format", "json", "--devices", "native:*", "--filter", "buffer::"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let results = v["results"].as_array().expect("results array");
    assert!(!results.is_empty());
    for r in results {
        for key in ["test", "backend", "device", "status", "negative", "reason"] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        assert_eq!(r["backend"], "native");
        assert!(["pass", "fail", "skip", "xfail"].contains(&r["status"].as_str().unwrap()));
        assert!(r["test"].as_str().unwrap().starts_with("[native/"));
    }
    let s = &v["summary"];
    let total: u64 = ["pass", "fail", "skip", "xfail"]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum();
    assert_eq!(total, results.len() as u64);
    assert_eq!(s["fail"], 0);
}

#[test]
fn list_and_filter_agree() {
    let out = cts(&["--list", "--devices", "native:0", "--filter", "negative_handles::"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 10, "{lines:?}");
    assert!(lines
        .iter()
        .all(|l| l.starts_with("[native/") && l.contains("] negative_handles::")));
}

#[test]
fn human_ends_with_summary_line() {
    let out = cts(&["--devices", "native:*", "--filter", "platform::"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("summary: ") && last.contains(" passed, 0 failed, "),
        "{last}"
    );
    assert!(text.lines().any(|l| l.starts_with("PASS  [native/")));
}

#[test]
fn junit_is_xml_with_one_suite_per_device() {
    let out = cts(&["--format", "junit", "--devices", "native:*", "--filter", "device::"]);
    assert!(out.status.success());
    let xml = String::from_utf8(out.stdout).unwrap();
    assert!(xml.starts_with("<?xml"));
    assert!(xml.contains("<testsuite name=\"native/"));
    assert!(xml.contains("classname=\"device\""));
}

#[test]
fn bad_selector_is_an_error() {
    let out = cts(&["--devices", "vulkan:*", "--list"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("vulkan"));
}

#[test]
fn isolate_survives_a_dying_test() {
    let out = Command::new(env!("CARGO_BIN_EXE_ur-cts"))
        .args([
            "--isolate",
            "--format",
            "json",
            "--devices",
            "native:*",
            "--filter",
            "queue::",
        ])
        .env("UR_CTS_SELFTEST_ABORT", "queue::in_order_execution")
        .output()
        .expect("ur-cts runs");
    assert_eq!(out.status.code(), Some(1), "a died test fails the run");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let results = v["results"].as_array().unwrap();
    let plain = cts(&["--list", "--devices", "native:*", "--filter", "queue::"]);
    assert_eq!(results.len(), String::from_utf8(plain.stdout).unwrap().lines().count());
    for r in results {
        let died = r["test"].as_str().unwrap().ends_with("queue::in_order_execution");
        assert_eq!(r["status"], if died { "fail" } else { "pass" }, "{r}");
        if died {
            assert!(r["reason"].as_str().unwrap().contains("process died"));
        }
    }
}
