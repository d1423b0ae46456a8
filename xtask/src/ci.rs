//! `cargo xtask ci`: the checks CI runs, in order, failing fast.

use std::time::Instant;

use crate::cmd::{cargo, human, run, step, with_backend_env, Result, OPENCL_ENV};

/// fmt, clippy, tests (unit, conformance, doctests), docs.
pub fn ci() -> Result<()> {
    let start = Instant::now();
    for (key, value) in OPENCL_ENV {
        match std::env::var(key) {
            Ok(v) => eprintln!("xtask: {key}={v:?} (from the environment)"),
            Err(_) => eprintln!("xtask: {key}={value:?} (default for the real OpenCL backends)"),
        }
    }
    step("fmt", || run(cargo().args(["fmt", "--all", "--check"])))?;
    step("clippy", || {
        run(cargo().args(["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"]))
    })?;
    step("test", || run(with_backend_env(cargo().args(["test", "--workspace"]))))?;
    step("doc", || {
        run(cargo()
            .args(["doc", "--workspace", "--no-deps"])
            .env("RUSTDOCFLAGS", rustdocflags()))
    })?;
    eprintln!("xtask: ci passed in {}", human(start.elapsed()));
    Ok(())
}

/// `-D warnings` added to whatever RUSTDOCFLAGS the caller set.
fn rustdocflags() -> String {
    match std::env::var("RUSTDOCFLAGS") {
        Ok(v) if !v.trim().is_empty() => format!("{} -D warnings", v.trim()),
        _ => "-D warnings".to_owned(),
    }
}
