//! `ur-cp SRC DST` on the native device: a copy that succeeds leaves DST
//! equal to SRC and nothing else; a copy whose writes fail (a file size
//! limit, `RLIMIT_FSIZE`, with `SIGXFSZ` ignored so that the write returns
//! `EFBIG` as it would return `ENOSPC` on a full file system) exits 1 and
//! leaves no DST, no temporary file, and an existing DST as it was.

use std::path::Path;
use std::process::{Command, Output};

const LEN: usize = (1 << 20) + 4099;

fn data() -> Vec<u8> {
    (0..LEN).map(|i| (i.wrapping_mul(131) >> 3) as u8).collect()
}

/// Runs ur-cp on the native device under `sh`, after `limits` (shell
/// commands such as `ulimit -f 64`).
fn ur_cp(dir: &Path, limits: &str, args: &[&str]) -> Output {
    let script = format!(r#"{limits}; exec "$0" --devices 'native:*' --no-progress "$@""#);
    let out = Command::new("sh")
        .current_dir(dir)
        .arg("-c")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ur-cp"))
        .args(args)
        .output()
        .expect("sh runs");
    println!(
        "$ {limits}; ur-cp {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_copy_writes_the_destination_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.bin"), data()).unwrap();
    let out = ur_cp(dir.path(), "true", &["--verify", "in.bin", "out.bin"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(std::fs::read(dir.path().join("out.bin")).unwrap(), data());
    assert_eq!(names(dir.path()), ["in.bin", "out.bin"]);
}

#[test]
fn a_failed_write_leaves_no_output() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.bin"), data()).unwrap();
    // 64 blocks (32 or 64 KiB, as the shell counts them): the source is
    // read, the destination's first write fails.
    let limits = "trap '' XFSZ; ulimit -f 64";
    let out = ur_cp(dir.path(), limits, &["in.bin", "out.bin"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(names(dir.path()), ["in.bin"], "a failed copy left files behind");
    // An existing destination is left as it was.
    std::fs::write(dir.path().join("out.bin"), b"old contents").unwrap();
    let out = ur_cp(dir.path(), limits, &["in.bin", "out.bin"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(names(dir.path()), ["in.bin", "out.bin"]);
    assert_eq!(std::fs::read(dir.path().join("out.bin")).unwrap(), b"old contents");
}
