//! Helpers shared by the test binaries: h5py-written files, comparisons.
#![allow(dead_code)] // reason: each test binary uses a subset.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ur_filters::h5;

pub const REQUIRE_ENV: &str = "UR_REQUIRE_H5PY";

/// `python3` (or `$UR_PYTHON`), with `~/.cache/unified-runtime/h5py` (where
/// `cargo xtask setup` installs h5py) on `PYTHONPATH` when it exists.
pub fn python() -> Command {
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

pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/h5py").join(name)
}

/// The files, written once per test binary; `None` (after printing why) when
/// h5py or libhdf5 is missing and `UR_REQUIRE_H5PY` is not set.
pub fn files() -> Option<&'static Path> {
    static DIR: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    let made = DIR.get_or_init(|| {
        h5::available().map_err(|e| format!("{e}"))?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = python()
            .arg(script("make_files.py"))
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

pub fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap()
}

pub fn assert_same_elements(what: &str, got: &[u8], want: &[u8], elem: usize) {
    assert_eq!(got.len(), want.len(), "{what}: byte length");
    if let Some(i) = got.chunks(elem).zip(want.chunks(elem)).position(|(a, b)| a != b) {
        panic!(
            "{what}: element {i} differs: ours {:?}, h5py's {:?}",
            &got[i * elem..(i + 1) * elem],
            &want[i * elem..(i + 1) * elem]
        );
    }
}

pub fn u64s(v: &serde_json::Value) -> Vec<u64> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect()
}
