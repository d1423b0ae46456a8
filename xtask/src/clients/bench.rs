//! Bench rows of the clients: the same dpctl / dpnp operations through our
//! adapter library and through UR's own OpenCL adapter, on the same device.
//!
//! `xtask/py/clients_bench.py` times one operation in one process (the UR
//! loader reads its adapter choice once per process); the sides alternate
//! over [`ROUNDS`] rounds (UR first in even rounds, ours first in odd ones),
//! every timed repetition of a side is pooled, and the row is the median of
//! ours over the median of UR's (milliseconds; below 1.0 ours is faster).
//! A side that cannot run is a skip with the reason, never a row.
//!
//! Rows: `clients.dpnp_add_16m_f32` (dpnp `a + b` on 16M float32),
//! `clients.kernel_submit_10k` (10,000 kernel launches of
//! `dpnp.tensor.add(x, y, out=z)` on 256 int32), `clients.sync_memcpy_4b_2k`
//! (2,000 synchronous 4-byte `SyclQueue.memcpy` between USM device
//! allocations), `clients.usm_alloc_free_1mib_1k` (1,000 x 1 MiB USM device
//! allocation made and freed through `dpctl.memory`).

use std::process::Command;
use std::time::Duration;

use serde::Deserialize;
use ur_bench_row::{median, Row};

use super::{out_dir, prepare, run_logged, selector_of, side_env, venv_python, Ctx, Options, Side};
use super::{status_text, SELECTOR_ENV};
use crate::cmd::Result;

/// The bench script, written next to the progress plugin.
pub(super) const SCRIPT: &str = include_str!("../../py/clients_bench.py");

/// Its module name.
pub(super) const SCRIPT_MODULE: &str = "clients_bench";

/// Rounds per row (each round runs both sides once).
pub const ROUNDS: usize = 3;

/// One row: the operation the script runs, timed repetitions per process,
/// and what it measures.
#[derive(Debug, Clone, Copy)]
pub struct Op {
    /// The script's operation; the row is `clients.<op>`.
    pub op: &'static str,
    /// Timed repetitions per process (after one untimed warm-up).
    pub reps: usize,
    /// The baseline's description.
    pub what: &'static str,
}

/// Every row, in order.
pub const OPS: [Op; 4] = [
    Op {
        op: "dpnp_add_16m_f32",
        reps: 10,
        what: "UR's OpenCL adapter (dpnp a+b, 16M float32)",
    },
    Op {
        op: "kernel_submit_10k",
        reps: 3,
        what: "UR's OpenCL adapter (10k dpnp.tensor.add kernel launches)",
    },
    Op {
        op: "sync_memcpy_4b_2k",
        reps: 10,
        what: "UR's OpenCL adapter (2k synchronous 4 B USM memcpy, dpctl)",
    },
    Op {
        op: "usm_alloc_free_1mib_1k",
        reps: 10,
        what: "UR's OpenCL adapter (1k x 1 MiB USM alloc+free, dpctl)",
    },
];

/// The line the script prints.
#[derive(Debug, Deserialize)]
struct Line {
    ms: Vec<f64>,
}

/// The script's prefix.
const PREFIX: &str = "UR_CLIENTS_BENCH ";

/// The timings of the script's `UR_CLIENTS_BENCH {json}` line in `text`.
pub fn parse_times(text: &str) -> Option<Vec<f64>> {
    text.lines()
        .filter_map(|l| l.strip_prefix(PREFIX))
        .find_map(|j| serde_json::from_str::<Line>(j).ok())
        .map(|l| l.ms)
        .filter(|ms| !ms.is_empty() && ms.iter().all(|t| t.is_finite()))
}

/// The sides of round `round`, in the order they run.
pub fn round_order(round: usize) -> [Side; 2] {
    if round % 2 == 0 {
        [Side::Ur, Side::Ours]
    } else {
        [Side::Ours, Side::Ur]
    }
}

/// One process of one side: its timed repetitions, or why there are none.
fn one_side(op: &Op, side: Side, selector: &str, ctx: &Ctx, limit: Duration) -> std::result::Result<Vec<f64>, String> {
    let log = out_dir().join(format!("bench-{}-{}.log", op.op, side.tag()));
    let mut cmd = Command::new(venv_python());
    cmd.arg(ctx.py.join(format!("{SCRIPT_MODULE}.py")))
        .arg(op.op)
        .arg(op.reps.to_string());
    side_env(&mut cmd, side, ctx).env(SELECTOR_ENV, selector);
    let (status, _) = run_logged(&mut cmd, &log, limit).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(s) if s.success() => parse_times(&text).ok_or_else(|| format!("no timings in {}", log.display())),
        Some(s) => Err(format!(
            "{} ended with {} (see {})",
            side.tag(),
            status_text(s),
            log.display()
        )),
        None => Err(format!("{} timed out (see {})", side.tag(), log.display())),
    }
}

/// Measures the rows whose name contains `filter` (all without one) and
/// prints each as a `BENCH_ROW` line; a row that cannot be measured is a
/// `skipped:` line with the reason. Uses `opts`' device, selectors,
/// build choice and time limit (per process).
pub fn bench_rows(opts: &Options, filter: Option<&str>) -> Result<Vec<Row>> {
    let ops: Vec<&Op> = OPS
        .iter()
        .filter(|o| filter.is_none_or(|f| format!("clients.{}", o.op).contains(f)))
        .collect();
    if ops.is_empty() {
        return Ok(Vec::new());
    }
    let ctx = prepare(&Options {
        ours: true,
        ..opts.clone()
    })?;
    let ur = selector_of(Side::Ur, &opts.device, opts.selector_ur.as_deref(), &ctx);
    let ours = selector_of(Side::Ours, &opts.device, opts.selector_ours.as_deref(), &ctx);
    let (ur, ours) = match (ur, ours) {
        (Ok(u), Ok(o)) => (u, o),
        (Err(e), _) | (_, Err(e)) => {
            println!("clients bench: skipped: {e}");
            return Ok(Vec::new());
        }
    };
    let mut rows = Vec::new();
    'ops: for op in ops {
        let name = format!("clients.{}", op.op);
        let (mut ur_ms, mut ours_ms) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            for side in round_order(round) {
                let (selector, into) = match side {
                    Side::Ur => (&ur, &mut ur_ms),
                    Side::Ours => (&ours, &mut ours_ms),
                };
                match one_side(op, side, selector, &ctx, opts.timeout) {
                    Ok(ms) => into.extend(ms),
                    Err(e) => {
                        println!("{name}: skipped: {e}");
                        continue 'ops;
                    }
                }
            }
        }
        let row = Row::new(name, median(ours_ms), "ms").with_baseline(op.what, median(ur_ms));
        row.print();
        rows.push(row);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scripts_line_is_read_among_other_output() {
        let text = "warning: x\nUR_CLIENTS_BENCH {\"op\": \"a\", \"device\": \"d\", \"ms\": [1.5, 2.0]}\n";
        assert_eq!(parse_times(text), Some(vec![1.5, 2.0]));
        assert_eq!(parse_times("UR_CLIENTS_BENCH {\"ms\": []}"), None);
        assert_eq!(parse_times("UR_CLIENTS_BENCH not json"), None);
        assert_eq!(parse_times("nothing"), None);
    }

    #[test]
    fn sides_alternate_which_goes_first() {
        assert_eq!(round_order(0), [Side::Ur, Side::Ours]);
        assert_eq!(round_order(1), [Side::Ours, Side::Ur]);
        assert_eq!(round_order(2), round_order(0));
    }

    #[test]
    fn rows_are_named_once_and_every_op_is_in_the_script() {
        let mut names: Vec<&str> = OPS.iter().map(|o| o.op).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
        for op in OPS {
            assert!(SCRIPT.contains(&format!("def {}(", op.op)), "{}", op.op);
            assert!(op.reps > 0);
        }
    }
}
