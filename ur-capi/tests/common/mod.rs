//! What the loader and SYCL tests and the `urabi` bench share: the adapter
//! library under test, the wheels' libraries, SYCL program builds.

#![allow(dead_code)] // reason: each test binary uses a part.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `libur_adapter_rust.so` of this build, (re)built first: `cargo test`
/// builds the crate as an rlib for the tests, not the cdylib the loader
/// opens, and a library left over from an earlier build would test old
/// code. Building an up-to-date library is a no-op.
pub fn adapter_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("test path: {e}"))?;
    let target = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the test binary is not under target/<profile>/deps")?;
    let release = target.file_name().is_some_and(|n| n == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "-p", "ur-capi", "--lib"]);
    if release {
        build.arg("--release");
    }
    let status = build.status().map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("`cargo build -p ur-capi` failed ({status})"));
    }
    let so = target.join("libur_adapter_rust.so");
    if so.is_file() {
        Ok(so)
    } else {
        Err(format!("{} was not built", so.display()))
    }
}

/// Where `cargo xtask setup` unpacked the wheels (`UR_WHEELS_DIR` overrides).
pub fn wheels() -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    std::env::var_os("UR_WHEELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache/unified-runtime/wheels"))
}

pub fn data_dirs(kind: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for w in std::fs::read_dir(wheels()).into_iter().flatten().flatten() {
        for d in std::fs::read_dir(w.path()).into_iter().flatten().flatten() {
            let p = d.path().join("data").join(kind);
            if d.file_name().to_string_lossy().ends_with(".data") && p.is_dir() {
                out.push(p);
            }
        }
    }
    out
}

/// A folder of links to every wheel library except the ICD loader copies
/// (one OpenCL loader on the path), and an ICD folder that adds Intel's CPU
/// runtime to the system's.
pub fn environment(work: &Path) -> Result<(PathBuf, PathBuf), String> {
    let lib = work.join("lib");
    let icd = work.join("icd");
    std::fs::create_dir_all(&lib).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&icd).map_err(|e| e.to_string())?;
    for dir in data_dirs("lib") {
        for f in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = f.file_name();
            if name.to_string_lossy().starts_with("libOpenCL") {
                continue;
            }
            let link = lib.join(&name);
            let _ = std::fs::remove_file(&link);
            let _ = std::os::unix::fs::symlink(f.path(), &link);
            if name == "libintelocl.so" {
                let _ = std::fs::write(icd.join("intel.icd"), format!("{}\n", f.path().display()));
            }
        }
    }
    for f in std::fs::read_dir("/etc/OpenCL/vendors").into_iter().flatten().flatten() {
        let _ = std::fs::copy(f.path(), icd.join(f.file_name()));
    }
    if !lib.join("libsycl.so").exists() || !lib.join("libur_loader.so").exists() {
        return Err(format!(
            "no libsycl.so / libur_loader.so under {}: run `cargo xtask setup`",
            wheels().display()
        ));
    }
    Ok((lib, icd))
}

/// Builds the SYCL program `src` with g++ into `bin` against the wheels'
/// headers and `libsycl.so` (in `lib`, from [`environment`]).
pub fn build_sycl(src: &Path, bin: &Path, lib: &Path) -> Result<(), String> {
    let include = data_dirs("include")
        .into_iter()
        .find(|d| d.join("sycl/sycl.hpp").is_file())
        .ok_or_else(|| format!("no SYCL headers under {}", wheels().display()))?;
    let built = Command::new("g++")
        .args(["-std=c++17", "-O2", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING"])
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", include.join("sycl").display()))
        .arg(src)
        .arg(format!("-L{}", lib.display()))
        .args(["-lsycl", "-o"])
        .arg(bin)
        .output()
        .map_err(|e| format!("g++: {e}"))?;
    if built.status.success() {
        Ok(())
    } else {
        Err(format!("g++ failed:\n{}", String::from_utf8_lossy(&built.stderr)))
    }
}
