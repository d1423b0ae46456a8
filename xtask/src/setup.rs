//! `cargo xtask setup`: installs the system packages the real backends need.
//!
//! Idempotent: packages already installed are left alone, and `apt-get
//! update` runs only when something is missing. Works as root with no
//! terminal (CI); as another user it goes through `sudo`.
//!
//! It also builds the Level Zero loader's null driver (`libze_null.so.1`,
//! which Debian does not ship) from the Debian source package of
//! `level-zero` into [`ZE_NULL_DIR`]; see [`ze_null`].

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::cmd::{run, with_backend_env, Result, XtaskError};

/// A group of packages and what it is for.
#[derive(Debug, Clone, Copy)]
pub struct Group {
    /// What the packages give the project.
    pub purpose: &'static str,
    /// Debian package names.
    pub packages: &'static [&'static str],
}

/// Everything `setup` installs.
pub const GROUPS: [Group; 8] = [
    Group {
        purpose: "OpenCL: ICD loader, PoCL (CPU) and Mesa rusticl platforms, clinfo",
        packages: &["pocl-opencl-icd", "mesa-opencl-icd", "ocl-icd-opencl-dev", "clinfo"],
    },
    Group {
        purpose: "SPIR-V -> SPIR translator matching PoCL's LLVM 15 (PoCL builds SPIR, not SPIR-V), and the clang, \
                  llvm-link and opt that build and link the group builtins PoCL lacks (adapters/opencl/src/spirv/)",
        packages: &["llvm-spirv-15", "clang-15", "llvm-15"],
    },
    Group {
        purpose: "Level Zero loader and headers",
        packages: &["libze1", "libze-dev"],
    },
    Group {
        purpose: "libclang for bindgen",
        packages: &["libclang-dev"],
    },
    Group {
        purpose: "building the Level Zero null driver",
        packages: &["cmake", "g++", "make"],
    },
    Group {
        purpose: "OpenMPI, for data reorganisation across processes (ur-reorg-mpi)",
        packages: &["libopenmpi-dev", "openmpi-bin"],
    },
    Group {
        purpose: "unzip, to unpack Intel's runtimes from their wheels",
        packages: &["unzip"],
    },
    Group {
        purpose: "libhdf5 (1.10), for ur-filters' direct chunk reads of HDF5 files",
        packages: &["libhdf5-dev"],
    },
];

/// Where the null driver is built, relative to the workspace root; its
/// `lib/` goes on `LD_LIBRARY_PATH` with `ZE_ENABLE_NULL_DRIVER=1`.
pub const ZE_NULL_DIR: &str = "target/ze-null";

/// The source package version the null driver is built from (the one
/// whose loader `libze1` installs).
pub const ZE_SOURCE: &str = "level-zero=1.8.12-1";

/// The null driver's library directory under `root`.
pub fn ze_null_lib(root: &Path) -> PathBuf {
    root.join(ZE_NULL_DIR).join("lib")
}

/// The private apt configuration that reaches Debian's source index without
/// touching the machine's sources (the machines have no deb-src entry).
fn private_apt(dir: &Path) -> Vec<String> {
    vec![
        "-o".into(),
        format!("Dir::Etc::SourceList={}", dir.join("sources.list").display()),
        "-o".into(),
        "Dir::Etc::SourceParts=/dev/null".into(),
        "-o".into(),
        format!("Dir::State::Lists={}", dir.join("lists").display()),
        "-o".into(),
        "APT::Sandbox::User=root".into(),
        "-q".into(),
    ]
}

/// A command run quietly: its output is shown only when it fails.
fn quiet(cmd: &mut Command) -> Result<()> {
    let shown = crate::cmd::display(cmd);
    let out = cmd.output().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    if out.status.success() {
        return Ok(());
    }
    eprintln!("{}", String::from_utf8_lossy(&out.stdout));
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    Err(XtaskError::Failed {
        cmd: shown,
        status: out.status.to_string(),
    })
}

/// Builds `libze_null.so.1` into [`ZE_NULL_DIR`] unless it is there:
/// `apt-get source --download-only` of [`ZE_SOURCE`] through a private
/// sources list, the upstream tarball unpacked, cmake's `ze_null` target
/// (upstream always defines it). Prints the time it took.
pub fn ze_null(root: &Path) -> Result<()> {
    let lib = ze_null_lib(root);
    if lib.join("libze_null.so.1").exists() {
        eprintln!(
            "setup: present: {}/libze_null.so.1 (Level Zero null driver)",
            lib.display()
        );
        return Ok(());
    }
    let started = Instant::now();
    let base = root.join(ZE_NULL_DIR);
    let work = base.join("work");
    let apt = work.join("apt");
    let io = |what: String| move |source| XtaskError::Io { what, source };
    std::fs::create_dir_all(apt.join("lists/partial")).map_err(io(format!("creating {}", apt.display())))?;
    std::fs::write(
        apt.join("sources.list"),
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main\n",
    )
    .map_err(io("writing the private sources list".into()))?;
    quiet(Command::new("apt-get").args(private_apt(&apt)).arg("update"))?;
    quiet(
        Command::new("apt-get")
            .current_dir(&work)
            .args(private_apt(&apt))
            .args(["source", "--download-only", ZE_SOURCE]),
    )?;
    let tarball = std::fs::read_dir(&work)
        .map_err(io(format!("listing {}", work.display())))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".orig.tar.gz"))
        .ok_or_else(|| XtaskError::Other("apt-get source fetched no .orig.tar.gz".into()))?;
    let src = work.join("src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).map_err(io(format!("creating {}", src.display())))?;
    quiet(
        Command::new("tar")
            .arg("xzf")
            .arg(&tarball)
            .arg("--strip-components=1")
            .arg("-C")
            .arg(&src),
    )?;
    let build = work.join("build");
    quiet(
        Command::new("cmake")
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build)
            .arg("-DCMAKE_BUILD_TYPE=Release"),
    )?;
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get()).to_string();
    quiet(
        Command::new("cmake")
            .arg("--build")
            .arg(&build)
            .args(["--target", "ze_null", "-j", &jobs]),
    )?;
    std::fs::create_dir_all(&lib).map_err(io(format!("creating {}", lib.display())))?;
    for entry in std::fs::read_dir(build.join("lib"))
        .map_err(io("listing the build's lib/".into()))?
        .flatten()
    {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("libze_null.so") {
            // `copy` follows the soname links, so each name is a real file.
            std::fs::copy(entry.path(), lib.join(&name)).map_err(io(format!("copying {name:?}")))?;
        }
    }
    let _ = std::fs::remove_dir_all(&work);
    eprintln!(
        "setup: built the Level Zero null driver into {} in {}",
        lib.display(),
        crate::cmd::human(started.elapsed())
    );
    Ok(())
}

/// Is this `dpkg-query` status (`${db:Status-Abbrev}`) an installed package?
pub fn is_installed_status(status: &str) -> bool {
    // First letter: desired action; second: current state (`i` = installed).
    status.as_bytes().get(1) == Some(&b'i')
}

fn installed(package: &str) -> Result<bool> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Abbrev}", package])
        .stderr(Stdio::null())
        .output()
        .map_err(|source| XtaskError::Spawn {
            cmd: format!("dpkg-query -W {package}"),
            source,
        })?;
    // dpkg-query exits 1 for a package it has never heard of.
    Ok(out.status.success() && is_installed_status(&String::from_utf8_lossy(&out.stdout)))
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// `apt-get` with no prompts, as root or through sudo.
fn apt_get() -> Command {
    let mut cmd = if is_root() {
        Command::new("apt-get")
    } else {
        let mut c = Command::new("sudo");
        c.args(["--preserve-env=DEBIAN_FRONTEND", "apt-get"]);
        c
    };
    // Wait for another apt/dpkg run to finish instead of failing at once.
    cmd.args(["-o", "DPkg::Lock::Timeout=300"]);
    cmd.env("DEBIAN_FRONTEND", "noninteractive").stdin(Stdio::null());
    cmd
}

/// Installs what is missing; with `dry_run`, only says what it would do.
pub fn setup(dry_run: bool) -> Result<()> {
    let mut missing = Vec::new();
    for group in GROUPS {
        let mut absent = Vec::new();
        for &p in group.packages {
            if !installed(p)? {
                absent.push(p);
            }
        }
        if absent.is_empty() {
            eprintln!("setup: present: {} ({})", group.packages.join(" "), group.purpose);
        } else {
            eprintln!("setup: missing: {} ({})", absent.join(" "), group.purpose);
            missing.extend(absent);
        }
    }
    if missing.is_empty() {
        eprintln!("setup: nothing to install");
    } else if dry_run {
        eprintln!(
            "setup: would run: apt-get update && apt-get install -y {}",
            missing.join(" ")
        );
        return Ok(());
    } else {
        run(apt_get().args(["update", "-q"]))?;
        run(apt_get().args(["install", "-y", "-q"]).args(&missing))?;
        for p in &missing {
            if !installed(p)? {
                return Err(XtaskError::Other(format!(
                    "apt-get finished but `{p}` is still not installed"
                )));
            }
        }
        eprintln!("setup: installed {}", missing.join(" "));
    }
    if !dry_run {
        ze_null(&crate::workspace_root())?;
    }
    crate::wheels::ensure(dry_run)?;
    crate::wheels::ensure_h5py(dry_run)?;
    // dpctl and dpnp (with pytest) for `cargo xtask clients`, in a venv.
    crate::clients::ensure_venv(dry_run)?;
    crate::icd::register(dry_run)?;
    // Nightly with Miri and rust-src, cargo-fuzz (issue #16's CI steps).
    crate::reliability::setup(dry_run)?;
    show_opencl();
    Ok(())
}

/// Lists the OpenCL platforms and devices the project's tests will see.
fn show_opencl() {
    let mut cmd = Command::new("clinfo");
    cmd.arg("-l");
    with_backend_env(&mut cmd);
    match cmd.output() {
        Ok(out) if out.status.success() => {
            eprintln!("setup: OpenCL devices (POCL_DEVICES / RUSTICL_ENABLE as the tests set them):");
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                eprintln!("  {line}");
            }
        }
        Ok(out) => eprintln!(
            "setup: `clinfo -l` failed ({}); OpenCL tests will be skipped",
            out.status
        ),
        Err(e) => eprintln!("setup: could not run clinfo ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_letters() {
        assert!(is_installed_status("ii "));
        assert!(is_installed_status("hi "));
        assert!(!is_installed_status("un "));
        assert!(!is_installed_status("rc "));
        assert!(!is_installed_status(""));
    }
}
