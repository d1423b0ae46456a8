//! `cargo xtask setup`: installs the system packages the real backends need.
//!
//! Idempotent: packages already installed are left alone, and `apt-get
//! update` runs only when something is missing. Works as root with no
//! terminal (CI); as another user it goes through `sudo`.

use std::process::{Command, Stdio};

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
pub const GROUPS: [Group; 4] = [
    Group {
        purpose: "OpenCL: ICD loader, PoCL (CPU) and Mesa rusticl platforms, clinfo",
        packages: &["pocl-opencl-icd", "mesa-opencl-icd", "ocl-icd-opencl-dev", "clinfo"],
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
        purpose: "unzip, to unpack Intel's runtimes from their wheels",
        packages: &["unzip"],
    },
];

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
    crate::wheels::ensure(dry_run)?;
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
