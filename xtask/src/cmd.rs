//! Running commands with clear errors, and the environment the real
//! backends need.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

/// Everything that can go wrong in a task.
#[derive(Debug, thiserror::Error)]
pub enum XtaskError {
    /// A command could not be started at all (not installed, not executable).
    #[error("could not start `{cmd}`: {source}")]
    Spawn {
        /// The command line.
        cmd: String,
        /// Why.
        source: std::io::Error,
    },
    /// A command ran and failed.
    #[error("`{cmd}` failed ({status})")]
    Failed {
        /// The command line.
        cmd: String,
        /// Its exit status, as text.
        status: String,
    },
    /// A command ran past its time limit and was killed with its children.
    #[error("`{cmd}` did not finish within {limit}; killed it and {children} child process(es)")]
    TimedOut {
        /// The command line.
        cmd: String,
        /// The limit, as text.
        limit: String,
        /// How many descendants were killed with it.
        children: usize,
    },
    /// A named step of a task failed.
    #[error("step `{step}` failed after {secs:.1}s: {source}")]
    Step {
        /// The step.
        step: String,
        /// How long it ran.
        secs: f64,
        /// The failure.
        source: Box<XtaskError>,
    },
    /// Reading or writing a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Anything else, said in words.
    #[error("{0}")]
    Other(String),
}

/// Result of a task.
pub type Result<T, E = XtaskError> = std::result::Result<T, E>;

/// OpenCL settings the project's real backends need on a machine without a
/// GPU: two PoCL CPU devices in one platform, and rusticl's llvmpipe device.
pub const OPENCL_ENV: [(&str, &str); 2] = [("POCL_DEVICES", "pthread pthread"), ("RUSTICL_ENABLE", "swrast")];

/// Sets the [`OPENCL_ENV`] variables on `cmd`, except those the caller's
/// environment already sets, and `OCL_ICD_VENDORS` to the folder where
/// `setup` registered Intel's CPU OpenCL runtime beside the system's ICDs
/// (see `icd.rs`), unless the caller sets it or nothing is registered.
pub fn with_backend_env(cmd: &mut Command) -> &mut Command {
    for (key, value) in OPENCL_ENV {
        if std::env::var_os(key).is_none() {
            cmd.env(key, value);
        }
    }
    if let Some(vendors) = crate::icd::vendors_env() {
        cmd.env(crate::icd::VENDORS_ENV, vendors);
    }
    cmd
}

/// The command line as a shell user would type it.
pub fn display(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            let _ = write!(s, "{}={} ", k.to_string_lossy(), quote(v));
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&quote(a));
    }
    s
}

fn quote(s: &OsStr) -> String {
    let s = s.to_string_lossy();
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c)) {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Runs `cmd` with inherited stdio, echoing it first; an error names the
/// command and its exit status.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = display(cmd);
    eprintln!("$ {shown}");
    let status = cmd.status().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(XtaskError::Failed {
            cmd: shown,
            status: status.to_string(),
        })
    }
}

/// Like [`run`], but kills the command and every process it started when
/// it runs longer than `limit` (a hung test must not hang CI forever).
pub fn run_limited(cmd: &mut Command, limit: Duration) -> Result<()> {
    let shown = display(cmd);
    eprintln!("$ {shown}");
    let mut child = cmd.spawn().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    let start = Instant::now();
    let io = |source| XtaskError::Io {
        what: format!("waiting for `{shown}`"),
        source,
    };
    loop {
        if let Some(status) = child.try_wait().map_err(io)? {
            return if status.success() {
                Ok(())
            } else {
                Err(XtaskError::Failed {
                    cmd: shown,
                    status: status.to_string(),
                })
            };
        }
        if start.elapsed() >= limit {
            // Children first, so none is re-parented before it is found.
            let children = descendants(child.id());
            for pid in &children {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
            let _ = child.kill();
            let _ = child.wait();
            return Err(XtaskError::TimedOut {
                cmd: shown,
                limit: human(limit),
                children: children.len(),
            });
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Every live descendant of `root` (Linux `/proc`), deepest first; empty elsewhere.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(ppid) = std::fs::read_to_string(entry.path().join("stat"))
                .ok()
                .and_then(|s| parent_pid(&s))
            {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, _) in parent_of.iter().filter(|(_, pp)| *pp == p) {
            found.push(pid);
            frontier.push(pid);
        }
    }
    found.reverse();
    found
}

/// The parent pid field of a `/proc/PID/stat` line (the command name may hold spaces and parentheses).
fn parent_pid(stat: &str) -> Option<u32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The `cargo` that runs this task (the `CARGO` cargo sets), or `cargo`.
pub fn cargo() -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(program);
    cmd.current_dir(crate::workspace_root());
    cmd
}

/// Runs `f` as a named step, printing its start and duration; a failure
/// names the step.
pub fn step<T>(name: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    eprintln!("==> {name}");
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    match out {
        Ok(v) => {
            eprintln!("<== {name}: ok in {}", human(took));
            Ok(v)
        }
        Err(e) => {
            eprintln!("<== {name}: FAILED after {}", human(took));
            Err(XtaskError::Step {
                step: name.to_owned(),
                secs: took.as_secs_f64(),
                source: Box::new(e),
            })
        }
    }
}

/// A duration as `1.2s` or `2m03s`.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        let whole = d.as_secs();
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// `mpirun -n <ranks> --oversubscribe <exe>`, allowed to run as root (CI
/// machines and this one are root); arguments follow.
pub fn mpirun(ranks: usize, exe: &std::path::Path) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["-n", &ranks.to_string(), "--oversubscribe"])
        .arg(exe)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_quotes_what_needs_it() {
        let mut c = Command::new("cargo");
        c.args(["test", "--workspace", "a b"])
            .env("POCL_DEVICES", "pthread pthread");
        assert_eq!(
            display(&c),
            "POCL_DEVICES='pthread pthread' cargo test --workspace 'a b'"
        );
    }

    #[test]
    fn run_reports_the_failed_command() {
        let err = run(Command::new("false").arg("x")).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("`false x` failed"), "{text}");
    }

    #[test]
    fn run_reports_a_missing_program() {
        let err = run(&mut Command::new("/nonexistent/xtask-no-such-program")).unwrap_err();
        assert!(matches!(err, XtaskError::Spawn { .. }), "{err}");
    }

    #[test]
    fn step_names_the_failed_step() {
        let err = step("clippy", || -> Result<()> { Err(XtaskError::Other("boom".into())) }).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("step `clippy` failed after"), "{text}");
        assert!(text.ends_with("boom"), "{text}");
    }

    #[test]
    fn run_limited_kills_the_command_and_its_children() {
        let start = Instant::now();
        let err = run_limited(
            Command::new("sh").args(["-c", "sleep 30 & sleep 30; wait"]),
            Duration::from_millis(500),
        )
        .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(10), "killed promptly");
        match err {
            XtaskError::TimedOut { children, .. } => assert!(children >= 2, "both sleeps found: {children}"),
            other => panic!("expected a timeout, got {other}"),
        }
    }

    #[test]
    fn run_limited_passes_through_success_and_failure() {
        run_limited(&mut Command::new("true"), Duration::from_secs(30)).unwrap();
        let err = run_limited(&mut Command::new("false"), Duration::from_secs(30)).unwrap_err();
        assert!(matches!(err, XtaskError::Failed { .. }), "{err}");
    }

    #[test]
    fn parent_pid_survives_odd_command_names() {
        assert_eq!(parent_pid("123 (a b) c) S 45 123 123 0"), Some(45));
        assert_eq!(parent_pid("garbage"), None);
    }

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_millis(1234)), "1.2s");
        assert_eq!(human(Duration::from_secs(123)), "2m03s");
    }
}
