//! `cargo xtask bench`: runs every benchmark of the workspace and collects
//! the `BENCH_ROW {json}` lines they print into `target/bench/report.json`.
//! The line's format (`Row`, parsing) is `ur-bench-row`'s, shared with the
//! benches that print it.

use std::io::{BufRead, BufReader, Write as _};
use std::path::PathBuf;
use std::process::Stdio;

use serde::{Deserialize, Serialize};
use ur_bench_row::{parse_line, Row};

use crate::cmd::{cargo, display, with_backend_env, Result, XtaskError};

/// The report file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Every row, in the order printed.
    pub rows: Vec<Row>,
}

/// Runs the benchmarks (of `packages`, or all) and writes the report.
pub fn bench(filter: Option<&str>, packages: &[String]) -> Result<()> {
    let mut cmd = cargo();
    cmd.arg("bench");
    if packages.is_empty() {
        cmd.arg("--workspace");
    }
    for p in packages {
        cmd.args(["-p", p]);
    }
    if let Some(f) = filter {
        // Harness-less benches receive it as their first free argument, libtest benches as a filter.
        cmd.args(["--", f]);
    }
    with_backend_env(&mut cmd).stdout(Stdio::piped());
    let shown = display(&cmd);
    eprintln!("$ {shown}");
    let mut child = cmd.spawn().map_err(|source| XtaskError::Spawn {
        cmd: shown.clone(),
        source,
    })?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| XtaskError::Other("no stdout pipe".into()))?;
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|source| XtaskError::Io {
            what: "reading benchmark output".into(),
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
        what: "waiting for cargo bench".into(),
        source,
    })?;
    if !status.success() {
        return Err(XtaskError::Failed {
            cmd: shown,
            status: status.to_string(),
        });
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
