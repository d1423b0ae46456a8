//! `cargo xtask bench`: runs every benchmark of the workspace and collects
//! the `BENCH_ROW {json}` lines they print into `target/bench/report.json`.
//! The line's format (`Row`, parsing) is `ur-bench-row`'s, shared with the
//! benches that print it.

use std::io::{BufRead, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};
use ur_bench_row::{parse_line, Row};

use crate::cmd::{cargo, display, with_backend_env, Result, XtaskError};

/// The report file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Every row, in the order printed.
    pub rows: Vec<Row>,
}

/// The package whose bench measures an exchange between MPI ranks: under
/// `cargo bench` it would run as one process (one rank: no exchange at all),
/// so it runs under `mpirun` instead. Its only bench is [`MPI_BENCH`].
const MPI_PACKAGE: &str = "ur-reorg-mpi";
/// The MPI bench target of [`MPI_PACKAGE`].
const MPI_BENCH: &str = "corner_turn_mpi";
/// Ranks the MPI bench runs on (its matrix size, 4096, must be a multiple).
pub(crate) const MPI_RANKS: usize = 4;
/// The rows the MPI bench prints (for `--filter`).
const MPI_ROWS: [&str; 2] = [
    "reorg.corner_turn_mpi_over_alltoall",
    "reorg.corner_turn_mpi_transposed_over_alltoall",
];

/// Runs the benchmarks (of `packages`, or all) and writes the report. The
/// MPI rows run at [`MPI_RANKS`] ranks under `mpirun` (skipped with the
/// reason where `mpirun` cannot start).
pub fn bench(filter: Option<&str>, packages: &[String]) -> Result<()> {
    let (plain, mpi) = split_packages(packages);
    let mpi = mpi && filter.is_none_or(|f| MPI_ROWS.iter().any(|r| r.contains(f)));
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    if packages.is_empty() || !plain.is_empty() {
        let mut cmd = cargo();
        cmd.arg("bench");
        if packages.is_empty() {
            cmd.args(["--workspace", "--exclude", MPI_PACKAGE]);
        }
        for p in &plain {
            cmd.args(["-p", p]);
        }
        if let Some(f) = filter {
            // Harness-less benches receive it as their first free argument, libtest benches as a filter.
            cmd.args(["--", f]);
        }
        collect_rows(with_backend_env(&mut cmd), filter, &mut rows, &mut bad)?;
    }
    if mpi {
        let exe = build_mpi_bench()?;
        let mut run = mpirun(MPI_RANKS, &exe);
        match collect_rows(with_backend_env(&mut run), filter, &mut rows, &mut bad) {
            Err(XtaskError::Spawn { cmd, source }) => {
                println!("{}: skipped: cannot start `{cmd}`: {source}", MPI_ROWS.join(", "))
            }
            other => other?,
        }
    }
    if packages.is_empty() {
        // The dpctl / dpnp rows (`clients.*`), ours over UR's adapter; a
        // machine without the clients' venv skips them with the reason.
        match crate::clients::bench_rows(&crate::clients::Options::default(), filter) {
            Ok(more) => rows.extend(more),
            Err(e) => println!("clients.*: skipped: {e}"),
        }
    }
    let path = write_report(&Report { rows: rows.clone() })?;
    print!("{}", table(&rows));
    let _ = std::io::stdout().flush();
    eprintln!("bench: {} rows written to {}", rows.len(), path.display());
    if !bad.is_empty() {
        return Err(XtaskError::Other(format!(
            "{} malformed BENCH_ROW lines:\n{}",
            bad.len(),
            bad.join("\n")
        )));
    }
    Ok(())
}

/// The packages `cargo bench` runs itself, and whether the MPI bench runs
/// (all packages, or [`MPI_PACKAGE`] named).
fn split_packages(packages: &[String]) -> (Vec<String>, bool) {
    let plain: Vec<String> = packages.iter().filter(|p| *p != MPI_PACKAGE).cloned().collect();
    let mpi = packages.is_empty() || plain.len() < packages.len();
    (plain, mpi)
}

/// Runs `cmd`, echoing its output, and collects the `BENCH_ROW` lines it
/// prints (those whose name contains `filter`); malformed ones go to `bad`.
fn collect_rows(cmd: &mut Command, filter: Option<&str>, rows: &mut Vec<Row>, bad: &mut Vec<String>) -> Result<()> {
    cmd.stdout(Stdio::piped());
    let shown = display(cmd);
    eprintln!("$ {shown}");
    let mut child = cmd.spawn().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| XtaskError::Other("no stdout pipe".into()))?;
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|source| XtaskError::Io {
            what: format!("reading the output of `{shown}`"),
            source,
        })?;
        println!("{line}");
        match parse_line(&line) {
            Ok(Some(row)) if filter.is_none_or(|f| row.name.contains(f)) => rows.push(row),
            Ok(_) => {}
            Err(e) => bad.push(e.to_string()),
        }
    }
    let status = child.wait().map_err(|source| XtaskError::Io {
        what: format!("waiting for `{shown}`"),
        source,
    })?;
    if !status.success() {
        return Err(XtaskError::Failed {
            cmd: shown,
            status: status.to_string(),
        });
    }
    Ok(())
}

/// Builds the MPI bench (bench profile) and returns its executable.
fn build_mpi_bench() -> Result<PathBuf> {
    let mut cmd = cargo();
    cmd.args(["bench", "-p", MPI_PACKAGE, "--bench", MPI_BENCH, "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .stdout(Stdio::piped());
    let shown = display(&cmd);
    eprintln!("$ {shown}");
    let out = cmd.output().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    if !out.status.success() {
        return Err(XtaskError::Failed {
            cmd: shown,
            status: out.status.to_string(),
        });
    }
    bench_executable(&String::from_utf8_lossy(&out.stdout), MPI_BENCH)
        .ok_or_else(|| XtaskError::Other(format!("`{shown}` named no executable for the bench `{MPI_BENCH}`")))
}

/// The executable of bench target `name` in cargo's JSON messages.
fn bench_executable(messages: &str, name: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == name)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
}

/// `mpirun -n <ranks> --oversubscribe <exe> --bench` (the argument `cargo
/// bench` passes), allowed to run as root.
fn mpirun(ranks: usize, exe: &std::path::Path) -> Command {
    let mut c = crate::cmd::mpirun(ranks, exe);
    c.arg("--bench");
    c
}

/// The cargo target folder: `CARGO_TARGET_DIR`, else `<workspace>/target`.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target"))
}

fn write_report(report: &Report) -> Result<PathBuf> {
    let dir = target_dir().join("bench");
    let io = |what: String| move |source| XtaskError::Io { what, source };
    std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
    let path = dir.join("report.json");
    let text = serde_json::to_string_pretty(report).map_err(|e| XtaskError::Other(e.to_string()))?;
    std::fs::write(&path, text + "\n").map_err(io(format!("writing {}", path.display())))?;
    Ok(path)
}

fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

/// The rows as an aligned text table.
pub fn table(rows: &[Row]) -> String {
    let header = ["name", "value", "unit", "baseline", "baseline value", "ratio"].map(String::from);
    let mut cells = vec![header];
    for r in rows {
        cells.push([
            r.name.clone(),
            format!("{:.3}", r.value),
            r.unit.clone(),
            r.baseline_name.clone().unwrap_or_else(|| "-".into()),
            num(r.baseline_value),
            r.ratio.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}x")),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| cells.iter().map(|r| r[c].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in cells.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| match c {
                1 | 4 | 5 => format!("{s:>w$}", w = widths[c]),
                _ => format!("{s:<w$}", w = widths[c]),
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * 5));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_has_the_documented_keys() {
        let row = parse_line(r#"BENCH_ROW {"name":"a","value":1,"unit":"us"}"#)
            .unwrap()
            .unwrap();
        let v = serde_json::to_value(Report { rows: vec![row] }).unwrap();
        let obj = v["rows"][0].as_object().unwrap();
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["baseline_name", "baseline_value", "name", "ratio", "unit", "value"]
        );
    }

    #[test]
    fn the_mpi_bench_runs_under_mpirun_only() {
        let p = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(split_packages(&[]), (vec![], true));
        assert_eq!(split_packages(&p(&["ur-reorg"])), (p(&["ur-reorg"]), false));
        assert_eq!(
            split_packages(&p(&["ur-reorg-mpi", "ur-reorg"])),
            (p(&["ur-reorg"]), true)
        );
        let shown = display(&mpirun(MPI_RANKS, std::path::Path::new("/t/corner_turn_mpi-0123")));
        assert!(
            shown.ends_with("mpirun -n 4 --oversubscribe /t/corner_turn_mpi-0123 --bench"),
            "{shown}"
        );
    }

    #[test]
    fn the_bench_executable_is_found_in_cargo_messages() {
        let messages = [
            r#"{"reason":"compiler-artifact","target":{"name":"ur_reorg","kind":["lib"]},"executable":null}"#,
            "not json",
            r#"{"reason":"compiler-artifact","target":{"name":"corner_turn_mpi","kind":["bench"]},"executable":"/t/release/deps/corner_turn_mpi-ab12"}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        assert_eq!(
            bench_executable(&messages, "corner_turn_mpi"),
            Some(PathBuf::from("/t/release/deps/corner_turn_mpi-ab12"))
        );
        assert_eq!(bench_executable(&messages, "other"), None);
    }

    #[test]
    fn table_aligns_columns() {
        let rows = vec![
            parse_line(
                r#"BENCH_ROW {"name":"long-name","value":10,"unit":"us","baseline_name":"b","baseline_value":5}"#,
            )
            .unwrap()
            .unwrap(),
            parse_line(r#"BENCH_ROW {"name":"x","value":1.25,"unit":"GiB/s"}"#)
                .unwrap()
                .unwrap(),
        ];
        let t = table(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[2].starts_with("long-name  10.000  us     b"), "{t}");
        assert!(lines[2].ends_with("2.00x"), "{t}");
        assert!(lines[3].starts_with("x           1.250  GiB/s  -"), "{t}");
    }
}
