//! Registering Intel's CPU OpenCL runtime with the ICD loader.
//!
//! The runtime (`libintelocl.so`, wheel `intel-opencl-rt`) needs libraries
//! of two other wheels (`intel-cmplr-lib-rt`: libimf, libsvml, libirng,
//! libintlc; `tbb`: libtbb.so.12). Its `RUNPATH` is `$ORIGIN`, so instead of
//! an `LD_LIBRARY_PATH` (which a process cannot change for itself, and which
//! would also put the wheel's own `libOpenCL.so` loader on the path), `setup`
//! makes one folder of symlinks holding every library of the three wheels
//! except the wheel's ICD loader, and names the symlink to `libintelocl.so`
//! in the ICD file: `$ORIGIN` is then that folder, where the dependencies
//! and the runtime's data files (`cl.cfg`, `*.rtl`) are found.
//!
//! The ICD loader (ocl-icd) reads one vendors folder, from
//! `OCL_ICD_VENDORS`; it holds copies of the system's ICD files
//! (`/etc/OpenCL/vendors`: PoCL, rusticl, Clover) plus Intel's, so all four
//! platforms show. Layout, under the wheel cache ([`crate::wheels::cache_dir`]):
//!
//! ```text
//! opencl-icd/lib/      symlinks: libintelocl.so, libtbb.so.12, libimf.so, ...
//! opencl-icd/vendors/  pocl.icd, rusticl.icd, mesa.icd, intel-cpu.icd
//! ```
//!
//! [`vendors_env`] gives the `OCL_ICD_VENDORS` value the test, bench and
//! `ur-info` steps get (see `cmd::with_backend_env`); `ur-info` and the
//! OpenCL adapter's tests find the same folder on their own when run
//! without xtask.

use std::path::{Path, PathBuf};

use crate::cmd::{Result, XtaskError};
use crate::wheels::{cache_dir, lib_dirs, unpacked, WHEELS};

/// The ICD loader's variable naming the vendors folder.
pub const VENDORS_ENV: &str = "OCL_ICD_VENDORS";

/// The system's ICD files, copied beside Intel's.
pub const SYSTEM_VENDORS: &str = "/etc/OpenCL/vendors";

/// The wheels whose libraries the runtime needs, the runtime's first.
pub const RUNTIME_WHEELS: [&str; 3] = ["intel-opencl-rt", "intel-cmplr-lib-rt", "tbb"];

/// The runtime library the ICD file names.
pub const RUNTIME_LIB: &str = "libintelocl.so";

/// Intel's ICD file in the vendors folder.
pub const INTEL_ICD: &str = "intel-cpu.icd";

/// The registration folder (`opencl-icd` in the wheel cache).
pub fn root() -> PathBuf {
    cache_dir().join("opencl-icd")
}

/// The vendors folder of a registration root.
pub fn vendors_dir(root: &Path) -> PathBuf {
    root.join("vendors")
}

/// `Some(vendors folder)` once `setup` registered Intel's runtime there.
pub fn registered() -> Option<PathBuf> {
    let vendors = vendors_dir(&root());
    vendors.join(INTEL_ICD).is_file().then_some(vendors)
}

/// The `OCL_ICD_VENDORS` the test steps get: the caller's own setting is
/// left alone, otherwise the registered folder if there is one.
pub fn vendors_env() -> Option<PathBuf> {
    if std::env::var_os(VENDORS_ENV).is_some() {
        return None;
    }
    registered()
}

/// Is this library left out of the symlink folder? The wheel's own ICD
/// loader is: one loader per process, the system's.
pub fn left_out(file_name: &str) -> bool {
    file_name.starts_with("libOpenCL.so")
}

/// The symlinks to make, `(name, target)`, from files listed per folder in
/// search order: the first folder holding a name wins, loaders are left out.
pub fn plan_links(folders: &[(PathBuf, Vec<String>)]) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for (dir, names) in folders {
        for name in names {
            if left_out(name) || out.iter().any(|(n, _)| n == name) {
                continue;
            }
            out.push((name.clone(), dir.join(name)));
        }
    }
    out
}

/// The text of an ICD file: the library's absolute path and a newline.
pub fn icd_text(lib: &Path) -> String {
    format!("{}\n", lib.display())
}

/// Makes (or remakes) the registration from the unpacked wheels. Without
/// the runtime's wheel it says so and registers nothing (the OpenCL tests
/// then see three devices and say why the fourth is missing).
pub fn register(dry_run: bool) -> Result<()> {
    let cache = cache_dir();
    let libs = lib_dirs();
    let mut folders = Vec::new();
    for name in RUNTIME_WHEELS {
        let Some(wheel) = WHEELS.iter().find(|w| w.name == name) else {
            return Err(XtaskError::Other(format!("wheel `{name}` is not pinned in wheels.rs")));
        };
        let here = unpacked(&cache, wheel);
        match libs.iter().find(|d| d.starts_with(&here)) {
            Some(dir) => {
                let names = list(dir)?;
                folders.push((dir.clone(), names));
            }
            None if dry_run => {
                eprintln!("setup: would register Intel's CPU OpenCL runtime once `{name}` is unpacked");
                return Ok(());
            }
            None => {
                eprintln!("setup: wheel `{name}` is not unpacked; Intel's CPU OpenCL runtime is not registered");
                return Ok(());
            }
        }
    }
    let links = plan_links(&folders);
    if !links.iter().any(|(n, _)| n == RUNTIME_LIB) {
        return Err(XtaskError::Other(format!(
            "no {RUNTIME_LIB} in {}",
            folders[0].0.display()
        )));
    }
    let root = root();
    if dry_run {
        eprintln!(
            "setup: would register Intel's CPU OpenCL runtime in {} ({} libraries)",
            root.display(),
            links.len()
        );
        return Ok(());
    }
    // Built beside, then swapped in, so a concurrent test never sees half a folder.
    let fresh = root.with_extension("new");
    if fresh.exists() {
        std::fs::remove_dir_all(&fresh).map_err(|e| io("clear", &fresh, e))?;
    }
    let lib = fresh.join("lib");
    let vendors = vendors_dir(&fresh);
    std::fs::create_dir_all(&lib).map_err(|e| io("create", &lib, e))?;
    std::fs::create_dir_all(&vendors).map_err(|e| io("create", &vendors, e))?;
    for (name, target) in &links {
        let at = lib.join(name);
        std::os::unix::fs::symlink(target, &at).map_err(|e| io("link", &at, e))?;
    }
    let mut system = 0;
    if let Ok(entries) = std::fs::read_dir(SYSTEM_VENDORS) {
        for e in entries.filter_map(|e| e.ok()) {
            let name = e.file_name();
            if name.to_string_lossy().ends_with(".icd") && name != INTEL_ICD {
                let to = vendors.join(&name);
                std::fs::copy(e.path(), &to).map_err(|e| io("copy", &to, e))?;
                system += 1;
            }
        }
    }
    // The final path: `$ORIGIN` of the runtime must be the symlink folder.
    let icd = vendors.join(INTEL_ICD);
    let text = icd_text(&root.join("lib").join(RUNTIME_LIB));
    std::fs::write(&icd, text).map_err(|e| io("write", &icd, e))?;
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(|e| io("clear", &root, e))?;
    }
    std::fs::rename(&fresh, &root).map_err(|e| io("rename", &fresh, e))?;
    eprintln!(
        "setup: registered Intel's CPU OpenCL runtime: {VENDORS_ENV}={} ({system} system ICDs + {INTEL_ICD}, {} libraries)",
        vendors_dir(&root).display(),
        links.len()
    );
    Ok(())
}

/// The file names in a folder, sorted (deterministic links).
fn list(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir).map_err(|e| io("list", dir, e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_unstable();
    Ok(names)
}

fn io(what: &str, path: &Path, e: std::io::Error) -> XtaskError {
    XtaskError::Io {
        what: format!("could not {what} {}", path.display()),
        source: e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_leave_out_the_wheel_loader_and_keep_the_first_of_a_name() {
        let folders = vec![
            (
                PathBuf::from("/ocl"),
                vec!["cl.cfg".into(), "libOpenCL.so.1".into(), "libintelocl.so".into()],
            ),
            (PathBuf::from("/rt"), vec!["libimf.so".into(), "cl.cfg".into()]),
            (PathBuf::from("/tbb"), vec!["libtbb.so.12".into()]),
        ];
        let links = plan_links(&folders);
        let names: Vec<&str> = links.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["cl.cfg", "libintelocl.so", "libimf.so", "libtbb.so.12"]);
        assert_eq!(links[0].1, Path::new("/ocl/cl.cfg"));
    }

    #[test]
    fn loaders_are_left_out() {
        assert!(left_out("libOpenCL.so"));
        assert!(left_out("libOpenCL.so.1.0.0"));
        assert!(!left_out("libintelocl.so"));
    }

    #[test]
    fn icd_files_name_the_library() {
        assert_eq!(icd_text(Path::new("/a/lib/libintelocl.so")), "/a/lib/libintelocl.so\n");
    }

    #[test]
    fn the_registration_lives_in_the_wheel_cache() {
        assert!(root().starts_with(cache_dir()));
        assert_eq!(vendors_dir(Path::new("/r")), Path::new("/r/vendors"));
    }
}
