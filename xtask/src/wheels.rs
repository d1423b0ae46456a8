//! Intel's runtimes from the Python package registry, as plain wheels.
//!
//! Intel ships its CPU OpenCL runtime, the Unified Runtime loader and the
//! DPC++ SYCL runtime as wheels whose libraries sit under
//! `<name>.data/data/lib`. No Python install is needed to use them: `setup`
//! downloads each pinned wheel with `pip download --no-deps` and unzips it
//! into the wheel cache ([`cache_dir`]), once; later runs find it there.
//!
//! Other tasks (OpenCL ICD registration, the UR C ABI tests) find the
//! unpacked libraries with [`lib_dirs`] and headers with [`include_dirs`].

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd::{run, Result, XtaskError};

/// Overrides where wheels are cached and unpacked.
pub const CACHE_ENV: &str = "UR_WHEEL_CACHE";

/// One pinned wheel and why the project needs it.
#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    /// The package name on the registry.
    pub name: &'static str,
    /// The exact version (pinned: CI must see what was tested).
    pub version: &'static str,
    /// What it gives the project.
    pub purpose: &'static str,
}

/// Every wheel `setup` fetches.
pub const WHEELS: [Wheel; 6] = [
    Wheel {
        name: "intel-opencl-rt",
        version: "2026.2.0",
        purpose: "Intel's CPU OpenCL runtime (USM extension, SPIR-V)",
    },
    Wheel {
        name: "intel-cmplr-lib-rt",
        version: "2026.2.0",
        purpose: "compiler runtime libraries Intel's runtimes load (libimf, libsvml, ...)",
    },
    Wheel {
        name: "tbb",
        version: "2023.2.0",
        purpose: "oneTBB (libtbb.so.12), needed by Intel's CPU OpenCL runtime",
    },
    Wheel {
        name: "intel-cmplr-lib-ur",
        version: "2026.2.0",
        purpose: "Intel's Unified Runtime loader (libur_loader.so) and its adapters",
    },
    Wheel {
        name: "umf",
        version: "1.2.0",
        purpose: "the Unified Memory Framework (libumf.so.1), needed by UR's adapters",
    },
    Wheel {
        name: "intel-sycl-rt",
        version: "2026.2.0",
        purpose: "the DPC++ SYCL runtime (libsycl.so), SYCL and UR C headers",
    },
];

/// Where wheels are unpacked: `$UR_WHEEL_CACHE`, else
/// `$XDG_CACHE_HOME/unified-runtime/wheels`, else
/// `~/.cache/unified-runtime/wheels` (outside `target/`, so `cargo clean`
/// does not throw the downloads away).
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("cache"));
    base.join("unified-runtime").join("wheels")
}

/// The folder a wheel is unpacked into: `<cache>/<name>-<version>`.
pub fn unpacked(cache: &Path, wheel: &Wheel) -> PathBuf {
    cache.join(format!("{}-{}", wheel.name, wheel.version))
}

/// Marks a completely unpacked wheel (an interrupted unzip leaves none).
const DONE: &str = ".unpacked";

/// Downloads and unpacks every wheel that is not in the cache yet.
pub fn ensure(dry_run: bool) -> Result<()> {
    let cache = cache_dir();
    let missing: Vec<&Wheel> = WHEELS
        .iter()
        .filter(|w| !unpacked(&cache, w).join(DONE).is_file())
        .collect();
    if missing.is_empty() {
        eprintln!(
            "setup: present: {} wheels in {} ({} library and {} header folders)",
            WHEELS.len(),
            cache.display(),
            lib_dirs().len(),
            include_dirs().len()
        );
        return Ok(());
    }
    for w in &missing {
        eprintln!("setup: missing wheel: {}=={} ({})", w.name, w.version, w.purpose);
    }
    if dry_run {
        eprintln!("setup: would download them into {}", cache.display());
        return Ok(());
    }
    let downloads = cache.join("downloads");
    std::fs::create_dir_all(&downloads).map_err(|e| io("create", &downloads, e))?;
    for w in missing {
        let started = std::time::Instant::now();
        let spec = format!("{}=={}", w.name, w.version);
        run(pip()
            .args(["download", "--no-deps", "--only-binary=:all:", "--quiet", "--dest"])
            .arg(&downloads)
            .arg(&spec))?;
        let file = find_wheel(&downloads, w)?;
        let dir = unpacked(&cache, w);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| io("clear", &dir, e))?;
        }
        run(Command::new("unzip").args(["-q", "-o"]).arg(&file).arg("-d").arg(&dir))?;
        std::fs::write(dir.join(DONE), spec.as_bytes()).map_err(|e| io("mark", &dir, e))?;
        // The unpacked folder is what is used; the archive only costs disk.
        std::fs::remove_file(&file).map_err(|e| io("remove", &file, e))?;
        eprintln!(
            "setup: unpacked {spec} into {} in {:.1}s",
            dir.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// The Python packages ur-filters' tests write their HDF5 files with
/// (h5py: a writer that is not ours; hdf5plugin: the LZ4 plugin filter),
/// pinned.
pub const H5PY_PACKAGES: &[&str] = &["h5py==3.16.0", "hdf5plugin==7.1.0", "numpy==2.4.6"];

/// Where they are installed (`pip install --target`): `h5py` next to the
/// wheel cache (`~/.cache/unified-runtime/h5py`). ur-filters' tests put it
/// on `PYTHONPATH` when it exists.
pub fn h5py_dir() -> PathBuf {
    cache_dir()
        .parent()
        .map_or_else(|| cache_dir().join("h5py"), |p| p.join("h5py"))
}

/// Installs [`H5PY_PACKAGES`] into [`h5py_dir`] unless already there.
pub fn ensure_h5py(dry_run: bool) -> Result<()> {
    let dir = h5py_dir();
    let spec = H5PY_PACKAGES.join(" ");
    if std::fs::read_to_string(dir.join(DONE)).is_ok_and(|s| s == spec) {
        eprintln!("setup: present: {spec} in {}", dir.display());
        return Ok(());
    }
    if dry_run {
        eprintln!("setup: would pip install --target {} {spec}", dir.display());
        return Ok(());
    }
    run(pip()
        .args(["install", "--quiet", "--only-binary=:all:", "--upgrade", "--target"])
        .arg(&dir)
        .args(H5PY_PACKAGES))?;
    std::fs::write(dir.join(DONE), spec.as_bytes()).map_err(|e| io("mark", &dir, e))?;
    eprintln!("setup: installed {spec} into {}", dir.display());
    Ok(())
}

/// `pip` as the machine has it: `python3 -m pip`.
fn pip() -> Command {
    let mut c = Command::new("python3");
    c.args(["-m", "pip"]);
    c
}

/// The downloaded file of `wheel` (names normalise `-` to `_`).
fn find_wheel(dir: &Path, wheel: &Wheel) -> Result<PathBuf> {
    let prefix = format!("{}-{}-", wheel.name.replace('-', "_"), wheel.version);
    let entries = std::fs::read_dir(dir).map_err(|e| io("list", dir, e))?;
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        })
        .ok_or_else(|| {
            XtaskError::Other(format!(
                "pip downloaded no wheel named {prefix}*.whl into {}",
                dir.display()
            ))
        })
}

fn io(what: &str, path: &Path, e: std::io::Error) -> XtaskError {
    XtaskError::Other(format!("could not {what} {}: {e}", path.display()))
}

/// Every `*.data/data/<sub>` folder of the unpacked wheels that exists.
fn data_dirs(sub: &str) -> Vec<PathBuf> {
    let cache = cache_dir();
    let mut out = Vec::new();
    for w in &WHEELS {
        let Ok(entries) = std::fs::read_dir(unpacked(&cache, w)) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let dir = e.path().join("data").join(sub);
            if e.file_name().to_string_lossy().ends_with(".data") && dir.is_dir() {
                out.push(dir);
            }
        }
    }
    out
}

/// The unpacked wheels' library folders (for `LD_LIBRARY_PATH`).
pub fn lib_dirs() -> Vec<PathBuf> {
    data_dirs("lib")
}

/// The unpacked wheels' header folders (SYCL and UR C headers).
pub fn include_dirs() -> Vec<PathBuf> {
    data_dirs("include")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheels_are_pinned_and_named_once() {
        let mut names: Vec<&str> = WHEELS.iter().map(|w| w.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), WHEELS.len());
        assert!(WHEELS.iter().all(|w| w.version.split('.').count() == 3));
    }

    #[test]
    fn unpacked_folders_carry_name_and_version() {
        let dir = unpacked(Path::new("/c"), &WHEELS[0]);
        assert_eq!(dir, Path::new("/c/intel-opencl-rt-2026.2.0"));
    }
}
