//! The adapter on the real loader, in child processes (the loader's
//! `zeInit` answer is fixed for a process's life):
//!
//! - with no driver (`ZE_ENABLE_NULL_DRIVER` removed, and no GPU driver on
//!   the machine): zero platforms, a reason, no panic;
//! - with the loader's null driver (`ZE_ENABLE_NULL_DRIVER=1` and
//!   `libze_null.so.1` from `cargo xtask setup` on the library path): one
//!   "Null Device", and a full API flow through the `Runtime` that checks
//!   no bytes (the null driver moves none).
//!
//! Each `probe_*` test does its work only when the parent sets `PROBE`.

use std::path::PathBuf;
use std::process::Command;

use ur_api::{
    adapter::prelude::*, Backend, BufferDesc, DeviceSelector, MemoryConnection, QueueProps, UsmDesc, UsmKind,
};
use ur_level_zero::LevelZeroAdapter;

const PROBE: &str = "UR_L0_TEST_PROBE";

/// Where `cargo xtask setup` puts the null driver.
fn null_driver_dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("ze-null/lib")
}

/// Is a GPU driver the loader would find installed (then "no driver" cannot
/// be arranged here)?
fn real_driver_installed() -> bool {
    ["libze_intel_gpu.so.1", "libze_intel_vpu.so.1"].iter().any(|name| {
        // SAFETY: only checks whether the library opens; it is closed at once.
        unsafe { libloading::Library::new(name) }.is_ok()
    })
}

fn run_probe(name: &str, configure: impl FnOnce(&mut Command)) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(PROBE, "1")
        .env_remove("ZE_ENABLE_NULL_DRIVER");
    configure(&mut cmd);
    let out = cmd.output().expect("the test binary runs itself");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "probe {name} failed:\n{text}");
    assert!(text.contains("1 passed"), "probe {name} did not run:\n{text}");
}

#[test]
fn without_a_driver_zero_platforms_with_a_reason() {
    if real_driver_installed() {
        eprintln!("skipped: a Level Zero GPU driver is installed here");
        return;
    }
    run_probe("probe_no_driver", |_| {});
}

#[test]
fn with_the_null_driver_the_api_flows() {
    let dir = null_driver_dir();
    if !dir.join("libze_null.so.1").exists() {
        eprintln!("skipped: no null driver at {} (run `cargo xtask setup`)", dir.display());
        return;
    }
    let path = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("{}:{p}", dir.display()),
        _ => dir.display().to_string(),
    };
    run_probe("probe_null_driver", |c| {
        c.env("ZE_ENABLE_NULL_DRIVER", "1").env("LD_LIBRARY_PATH", path);
    });
}

#[test]
fn probe_no_driver() {
    if std::env::var_os(PROBE).is_none() {
        return;
    }
    let a = LevelZeroAdapter::new();
    assert!(a.platforms().expect("never an error").is_empty());
    let why = LevelZeroAdapter::unavailable_reason().expect("a reason");
    assert!(why.contains("zeInit") || why.contains("not installed"), "reason: {why}");
    let (rt, reports) = ur_adapters::discover_with(&"level_zero:*".parse().unwrap(), &Default::default());
    assert!(rt.all_devices().is_empty());
    let r = reports.iter().find(|r| r.backend == Backend::LevelZero).unwrap();
    assert_eq!(r.outcome, Err(why));
}

#[test]
fn probe_null_driver() -> ur_api::Result<()> {
    if std::env::var_os(PROBE).is_none() {
        return Ok(());
    }
    assert_eq!(LevelZeroAdapter::unavailable_reason(), None);
    let selector: DeviceSelector = "level_zero:*".parse().unwrap();
    let rt = ur_adapters::discover(&selector);
    let devs = rt.all_devices();
    assert_eq!(devs.len(), 1, "one null device");
    let dev = devs[0];
    let info = rt.device_info(dev)?;
    assert_eq!(info.name, "Null Device");
    assert!(info.max_alloc_size > 0, "zero limits read as defaults");

    let ctx = rt.create_context(&[dev])?;
    let other = rt.create_context(&[dev])?;
    let here = ur_api::Location::new(ctx, dev);
    assert_eq!(rt.memory_connection(here, here)?, MemoryConnection::Unified);
    let there = ur_api::Location::new(other, dev);
    assert_eq!(rt.memory_connection(here, there)?, MemoryConnection::None);

    let q = rt.create_queue(ctx, dev, &QueueProps { profiling: true })?;
    let buf = rt.create_buffer(ctx, &BufferDesc::new(256), None)?;
    let sub = rt.create_sub_buffer(buf, 64, 64)?;
    let fill = rt.enqueue_fill(q, buf, 0, 256, &[1, 2, 3, 4], &[])?;
    let copy = rt.enqueue_copy(q, buf, 0, sub, 0, 64, &[fill])?;
    let barrier = rt.enqueue_barrier(q, &[copy])?;
    rt.wait(&[barrier])?;
    let p = rt.event_profiling(copy)?;
    assert!(p.queued <= p.start && p.start <= p.end);
    let mut back = [0u8; 16];
    rt.read(q, buf, 0, &mut back)?; // Moves no data on the null driver: no byte check.
    for kind in [UsmKind::Device, UsmKind::Host, UsmKind::Shared] {
        let usm = rt.usm_alloc(ctx, &UsmDesc::new(kind, 128).on(dev))?;
        rt.complete(rt.enqueue_usm_fill(q, usm, 128, &[7], &[])?)?;
        rt.usm_free(ctx, usm)?;
    }
    rt.finish(q)?;
    for e in [fill, copy, barrier] {
        rt.release_event(e)?;
    }
    rt.release_buffer(sub)?;
    rt.release_buffer(buf)?;
    rt.release_queue(q)?;
    rt.release_context(other)?;
    rt.release_context(ctx)?;
    Ok(())
}
