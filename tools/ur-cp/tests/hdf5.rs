//! `ur-cp --hdf5 FILE:/dataset` on files written by h5py (the filters
//! crate's `tests/h5py/make_files.py`): every dataset loaded into every
//! present device (native; OpenCL where an ICD answers), the device's copy
//! dumped and compared element by element with h5py's read, the plan
//! printed; bad input fails with the chunk named.
//!
//! Without h5py or libhdf5 the tests print why and skip;
//! `UR_REQUIRE_H5PY=1` makes that a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const REQUIRE_ENV: &str = "UR_REQUIRE_H5PY";

/// `python3` (or `$UR_PYTHON`), with `~/.cache/unified-runtime/h5py`
/// (where `cargo xtask setup` installs h5py) on `PYTHONPATH`.
fn python() -> Command {
    let mut cmd = Command::new(std::env::var("UR_PYTHON").unwrap_or_else(|_| "python3".into()));
    if let Some(home) = std::env::var_os("HOME") {
        let dir = Path::new(&home).join(".cache/unified-runtime/h5py");
        if dir.is_dir() {
            let mut paths = vec![dir];
            if let Some(old) = std::env::var_os("PYTHONPATH") {
                paths.extend(std::env::split_paths(&old));
            }
            cmd.env("PYTHONPATH", std::env::join_paths(paths).expect("paths"));
        }
    }
    cmd
}

/// The h5py-written files (once per test binary), or `None` after printing why.
fn files() -> Option<&'static Path> {
    static DIR: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    let made = DIR.get_or_init(|| {
        ur_filters::h5::available().map_err(|e| e.to_string())?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../filters/tests/h5py/make_files.py");
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = python()
            .arg(&script)
            .arg(dir.path())
            .output()
            .map_err(|e| format!("python3: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "h5py could not write the files: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(dir)
    });
    match made {
        Ok(d) => Some(d.path()),
        Err(why) if std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1") => panic!("{REQUIRE_ENV}=1 but: {why}"),
        Err(why) => {
            println!("SKIP: {why} (set {REQUIRE_ENV}=1 to make this a failure)");
            None
        }
    }
}

fn ur_cp(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ur-cp"))
        .args(args)
        .output()
        .expect("ur-cp runs");
    println!(
        "$ ur-cp {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// (file, dataset, expected bytes file, element size) of every whole-dataset entry.
fn whole_datasets(dir: &Path) -> Vec<(PathBuf, String, PathBuf, usize)> {
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    m["datasets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e.get("start").is_none())
        .map(|e| {
            (
                dir.join(e["file"].as_str().unwrap()),
                e["dataset"].as_str().unwrap().to_string(),
                dir.join(e["expected"].as_str().unwrap()),
                e["elem"].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[test]
fn every_h5py_dataset_lands_on_every_present_device() {
    let Some(dir) = files() else { return };
    let dump = dir.join("ur-cp-dump.bin");
    let mut devices_run = 0;
    for selector in ["native:*", "opencl:*"] {
        for (file, name, expected, elem) in whole_datasets(dir) {
            let spec = format!("{}:{name}", file.display());
            let out = ur_cp(&[
                "--devices",
                selector,
                "--hdf5",
                &spec,
                "--plans",
                "2",
                "--verify",
                "--dump",
                dump.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if selector != "native:*" && stderr.contains("no device #0") {
                println!("SKIP: no {selector} device: {stderr}");
                break;
            }
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{selector} {spec}: {stderr}");
            assert!(stdout.contains("plan of chunk ["), "{stdout}");
            assert!(stdout.contains("copies between kinds"), "{stdout}");
            assert!(stdout.contains("verify device copy against the host read"), "{stdout}");
            let want = std::fs::read(&expected).unwrap();
            let got = std::fs::read(&dump).unwrap();
            assert_eq!(got.len(), want.len(), "{selector} {spec}: byte length");
            if let Some(i) = got.chunks(elem).zip(want.chunks(elem)).position(|(a, b)| a != b) {
                panic!("{selector} {spec}: element {i} differs from h5py's read");
            }
            assert!(stdout.contains(&format!("-> {} bytes in", want.len())), "{stdout}");
            devices_run += usize::from(name == "/d1_i32_deflate");
        }
    }
    assert!(devices_run >= 1, "not even the native device ran");
}

#[test]
fn bad_input_fails_naming_the_chunk_or_the_reason() {
    let Some(dir) = files() else { return };
    let corrupt = format!("{}:/fletcher_bad", dir.join("corrupt.h5").display());
    let out = ur_cp(&["--devices", "native:*", "--hdf5", &corrupt]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("chunk"), "{stderr}");

    let missing = format!("{}:/no_such_dataset", dir.join("filters.h5").display());
    let out = ur_cp(&["--devices", "native:*", "--hdf5", &missing]);
    assert_eq!(out.status.code(), Some(1));

    let out = ur_cp(&["--devices", "native:*", "--hdf5", "no-dataset-part.h5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("FILE:/dataset"));
}
