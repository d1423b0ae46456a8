//! The h5py-written test files: finding h5py, running the writer scripts
//! of `filters/tests/h5py/`, reading their manifest.
//!
//! One module for every user: the filters crate's tests (through
//! `common`), its `h5_read` bench and ur-cp's HDF5 test, the last two with
//! `#[path = ".../filters/tests/common/h5py.rs"] mod h5py;`. It needs
//! `ur-filters`, `tempfile` and `serde_json` in the includer's
//! dependencies.

#![allow(dead_code)] // reason: each includer uses a subset.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Set to `1` (CI does) where h5py and libhdf5 must be present: their
/// absence then fails the tests instead of skipping them.
pub const REQUIRE_ENV: &str = "UR_REQUIRE_H5PY";

/// `python3` (or `$UR_PYTHON`), with `~/.cache/unified-runtime/h5py` (where
/// `cargo xtask setup` installs h5py) first on `PYTHONPATH` when it exists.
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

/// The writer script `name` in `filters/tests/h5py/`, found from the
/// includer's manifest directory upwards (the filters crate, or another
/// crate of the same workspace).
pub fn script(name: &str) -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .map(|dir| dir.join("filters/tests/h5py"))
        .chain([manifest_dir.join("tests/h5py")])
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| panic!("no filters/tests/h5py above {}", manifest_dir.display()))
        .join(name)
}

/// The files of `make_files.py`, written once per process into a temporary
/// directory; `None` (after printing why) when h5py or libhdf5 is missing
/// and [`REQUIRE_ENV`] is not set to `1` (then it panics).
pub fn files() -> Option<&'static Path> {
    static DIR: OnceLock<Result<tempfile::TempDir, String>> = OnceLock::new();
    let made = DIR.get_or_init(|| {
        ur_filters::h5::available().map_err(|e| e.to_string())?;
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

/// `manifest.json` of the files in `dir`: the h5py and HDF5 versions and
/// the datasets (see [`entries`]).
pub fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest.json")).expect("manifest JSON")
}

/// One dataset (or hyperslab of one) that `make_files.py` wrote, with
/// h5py's read of it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The HDF5 file.
    pub file: PathBuf,
    /// The dataset's path in the file, e.g. `/d1_i32_deflate`.
    pub dataset: String,
    /// h5py's read, raw row-major bytes.
    pub expected: PathBuf,
    /// Bytes per element.
    pub elem: usize,
    /// `(start, count)` of a hyperslab; `None`: the whole dataset.
    pub hyperslab: Option<(Vec<u64>, Vec<u64>)>,
}

impl Entry {
    /// `FILE:/dataset`, as `ur-cp --hdf5` takes it.
    pub fn spec(&self) -> String {
        format!("{}:{}", self.file.display(), self.dataset)
    }

    /// The bytes h5py read.
    pub fn want(&self) -> Vec<u8> {
        std::fs::read(&self.expected).expect("h5py's read")
    }
}

/// Every entry of the manifest in `dir`, in the order the script wrote them.
pub fn entries(dir: &Path) -> Vec<Entry> {
    let u64s = |v: &serde_json::Value| -> Vec<u64> {
        v.as_array()
            .expect("an array")
            .iter()
            .map(|x| x.as_u64().expect("a number"))
            .collect()
    };
    manifest(dir)["datasets"]
        .as_array()
        .expect("datasets")
        .iter()
        .map(|e| Entry {
            file: dir.join(e["file"].as_str().expect("file")),
            dataset: e["dataset"].as_str().expect("dataset").to_owned(),
            expected: dir.join(e["expected"].as_str().expect("expected")),
            elem: e["elem"].as_u64().expect("elem") as usize,
            hyperslab: e.get("start").map(|s| (u64s(s), u64s(&e["count"]))),
        })
        .collect()
}

/// Panics naming the first element (of `elem` bytes) where `got` and
/// h5py's `want` differ.
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
