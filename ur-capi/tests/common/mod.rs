//! What the loader and SYCL tests share: the adapter library under test.

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
