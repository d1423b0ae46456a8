//! The results: the JSON report (`--json`), the text tables on stdout and
//! the panels of the picture.

use std::fmt::Write as _;

use serde::Serialize;

use crate::locations::{Contexts, LocInfo};
use crate::measure::Code;
use crate::size;
use crate::svg::{Cell, Panel};

const GIB: f64 = (1u64 << 30) as f64;

/// One measured (or failed) cell of one size and route.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// Source location label.
    pub src: String,
    /// Destination location label.
    pub dst: String,
    /// The route's letter (see `routes`); for a failed chosen cell the
    /// route the manager was expected to take.
    pub route: String,
    /// A route forced with `--route`, not the manager's choice.
    pub forced: bool,
    /// Bytes moved.
    pub size: usize,
    /// Median over the repetitions; `null` when the cell failed.
    pub gib_s_median: Option<f64>,
    /// The slowest repetition.
    pub gib_s_min: Option<f64>,
    /// The fastest repetition.
    pub gib_s_max: Option<f64>,
    /// Timed repetitions.
    pub reps: usize,
    /// Why the cell failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The time of a 4-byte move of one pair by one route.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Source location label.
    pub src: String,
    /// Destination location label.
    pub dst: String,
    /// The route's letter.
    pub route: String,
    /// Forced with `--route`.
    pub forced: bool,
    /// Bytes moved (4).
    pub bytes: usize,
    /// Median over the repetitions, microseconds; `null` when it failed.
    pub us_median: Option<f64>,
    /// Fastest repetition.
    pub us_min: Option<f64>,
    /// Slowest repetition.
    pub us_max: Option<f64>,
    /// Timed repetitions.
    pub reps: usize,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A route letter and what it stands for.
#[derive(Debug, Clone, Serialize)]
pub struct RouteInfo {
    /// The letter.
    pub letter: &'static str,
    /// Its meaning.
    pub meaning: &'static str,
}

/// Everything `ur-bandwidth` reports (`--json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// `ur-bandwidth`.
    pub tool: &'static str,
    /// The device selector in force.
    pub selector: String,
    /// Which contexts the device locations are in.
    pub contexts: Contexts,
    /// Timed repetitions per cell (after one warm-up).
    pub reps: usize,
    /// The sizes measured, bytes.
    pub sizes: Vec<usize>,
    /// Location labels in matrix order (rows and columns).
    pub locations: Vec<String>,
    /// The same locations described.
    pub location_info: Vec<LocInfo>,
    /// The route letters.
    pub routes: Vec<RouteInfo>,
    /// Per ordered pair, size and route: the bandwidth, or the reason.
    pub results: Vec<Entry>,
    /// Per ordered pair and route: the time of a 4-byte move.
    pub latency: Vec<Latency>,
    /// What could not be set up (contexts, the manager), and other notes.
    pub errors: Vec<String>,
}

/// GiB/s of `bytes` in `seconds`.
pub fn gib_s(bytes: usize, seconds: f64) -> f64 {
    bytes as f64 / seconds.max(1e-12) / GIB
}

/// A figure with three significant digits or so (`0.123`, `12.3`, `1234`).
pub fn figure(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

impl Report {
    fn index(&self, label: &str) -> Option<usize> {
        self.locations.iter().position(|l| l == label)
    }

    /// The failed entries (bandwidth, then latency), numbered from 1 in
    /// this order in every table and the picture.
    pub fn failures(&self) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        for e in &self.results {
            if let Some(why) = &e.error {
                let what = if e.forced {
                    format!("{} forced, {}", e.route, size::format(e.size))
                } else {
                    size::format(e.size)
                };
                out.push((format!("{} -> {} ({what})", e.src, e.dst), why.clone(), key(e)));
            }
        }
        for l in &self.latency {
            if let Some(why) = &l.error {
                out.push((
                    format!(
                        "{} -> {} (latency, {}{})",
                        l.src,
                        l.dst,
                        l.route,
                        if l.forced { " forced" } else { "" }
                    ),
                    why.clone(),
                    lat_key(l),
                ));
            }
        }
        out
    }

    fn footnote(&self, k: &str) -> usize {
        self.failures().iter().position(|f| f.2 == k).map_or(0, |i| i + 1)
    }

    /// The matrix of one size: chosen routes (`forced: None`) or one
    /// forced route (a pair whose own choice is that route shows it, `*`).
    fn matrix(&self, size: usize, forced: Option<&str>) -> Vec<Vec<Cell>> {
        let n = self.locations.len();
        let mut m = vec![vec![Cell::Absent; n]; n];
        for e in self.results.iter().filter(|e| e.size == size) {
            let (Some(i), Some(j)) = (self.index(&e.src), self.index(&e.dst)) else {
                continue;
            };
            let cell = |star: &str| match (e.gib_s_median, &e.error) {
                (Some(v), None) => Cell::Value {
                    gib_s: v,
                    text: format!("{}{star}", figure(v)),
                    scaled: e.route != Code::InPlace.letter(),
                },
                _ => Cell::Failed(self.footnote(&key(e))),
            };
            match forced {
                None if !e.forced => {
                    m[i][j] = match cell("") {
                        Cell::Value { gib_s, text, scaled } => Cell::Value {
                            gib_s,
                            text: format!("{text} {}", e.route),
                            scaled,
                        },
                        c => c,
                    }
                }
                Some(r) if e.route == r => {
                    if e.forced {
                        m[i][j] = cell("");
                    } else if m[i][j] == Cell::Absent {
                        m[i][j] = cell("*");
                    }
                }
                _ => {}
            }
        }
        m
    }

    /// The forced route letters measured, in legend order.
    fn forced_routes(&self) -> Vec<&'static str> {
        Code::ALL
            .iter()
            .map(|c| c.letter())
            .filter(|l| self.results.iter().any(|e| e.forced && e.route == *l))
            .collect()
    }

    /// Every matrix: each size's chosen routes, then each size's forced routes.
    pub fn panels(&self) -> Vec<Panel> {
        let mut out = Vec::new();
        for &s in &self.sizes {
            out.push(Panel {
                title: format!(
                    "{}: GiB/s by the manager's route (median of {})",
                    size::format(s),
                    self.reps
                ),
                cells: self.matrix(s, None),
            });
        }
        for &s in &self.sizes {
            for r in self.forced_routes() {
                out.push(Panel {
                    title: format!(
                        "{}: GiB/s forced by route {r} (* the manager's own choice)",
                        size::format(s)
                    ),
                    cells: self.matrix(s, Some(r)),
                });
            }
        }
        out
    }

    /// The latency matrix of the chosen routes, microseconds.
    fn latency_matrix(&self) -> Vec<Vec<String>> {
        let n = self.locations.len();
        let mut m = vec![vec!["·".to_owned(); n]; n];
        for l in self.latency.iter().filter(|l| !l.forced) {
            let (Some(i), Some(j)) = (self.index(&l.src), self.index(&l.dst)) else {
                continue;
            };
            m[i][j] = match (l.us_median, &l.error) {
                (Some(v), None) => format!("{} {}", figure(v), l.route),
                _ => format!("error [{}]", self.footnote(&lat_key(l))),
            };
        }
        m
    }

    /// The column headers.
    pub fn shorts(&self) -> Vec<String> {
        self.location_info.iter().map(|l| l.short.clone()).collect()
    }

    /// Lines under the tables and the picture: route letters in use,
    /// locations, failures.
    pub fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let used: Vec<&RouteInfo> = self
            .routes
            .iter()
            .filter(|r| {
                self.results.iter().any(|e| e.route == r.letter) || self.latency.iter().any(|l| l.route == r.letter)
            })
            .collect();
        out.push("Routes:".to_owned());
        for r in used {
            out.push(format!("  {:<2} {}", r.letter, r.meaning));
        }
        out.push("Locations (row = source, column = destination):".to_owned());
        let w = self.location_info.iter().map(|l| l.short.len()).max().unwrap_or(0);
        for l in &self.location_info {
            out.push(format!("  {:<w$} = {}: {}", l.short, l.label, l.what));
        }
        let failures = self.failures();
        if !failures.is_empty() {
            out.push("Failed cells:".to_owned());
            for (k, (what, why, _)) in failures.iter().enumerate() {
                out.push(format!("  [{}] {what}: {why}", k + 1));
            }
        }
        for e in &self.errors {
            out.push(format!("warning: {e}"));
        }
        out
    }

    /// The text output.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let shorts = self.shorts();
        let _ = writeln!(
            s,
            "ur-bandwidth: {} locations, {} timed repetitions per cell after one warm-up",
            self.locations.len(),
            self.reps
        );
        for panel in self.panels() {
            let cells: Vec<Vec<String>> = panel
                .cells
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|c| match c {
                            Cell::Value { text, .. } => text.clone(),
                            Cell::Failed(k) => format!("error [{k}]"),
                            Cell::Absent => "·".to_owned(),
                        })
                        .collect()
                })
                .collect();
            let _ = writeln!(s, "\n{}", panel.title);
            s.push_str(&table(&shorts, &cells));
        }
        if !self.latency.is_empty() {
            let _ = writeln!(
                s,
                "\nLatency of a 4-byte move, µs, by the manager's route (median of {})",
                self.latency.first().map_or(0, |l| l.reps)
            );
            s.push_str(&table(&shorts, &self.latency_matrix()));
        }
        s.push('\n');
        for line in self.notes() {
            let _ = writeln!(s, "{line}");
        }
        s
    }
}

fn key(e: &Entry) -> String {
    format!("b|{}|{}|{}|{}|{}", e.src, e.dst, e.size, e.route, e.forced)
}

fn lat_key(l: &Latency) -> String {
    format!("l|{}|{}|{}|{}", l.src, l.dst, l.route, l.forced)
}

/// A right-aligned table with row and column headers.
fn table(headers: &[String], cells: &[Vec<String>]) -> String {
    let w = headers
        .iter()
        .map(|h| h.chars().count())
        .chain(cells.iter().flatten().map(|c| c.chars().count()))
        .max()
        .unwrap_or(1);
    let rw = headers.iter().map(|h| h.chars().count()).max().unwrap_or(1);
    let mut s = String::new();
    let _ = write!(s, "  {:rw$}", "");
    for h in headers {
        let _ = write!(s, "  {h:>w$}");
    }
    s.push('\n');
    for (h, row) in headers.iter().zip(cells) {
        let _ = write!(s, "  {h:<rw$}");
        for c in row {
            let _ = write!(s, "  {c:>w$}");
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(label: &str, short: &str) -> LocInfo {
        LocInfo {
            label: label.into(),
            short: short.into(),
            kind: "device",
            what: "x".into(),
        }
    }

    fn entry(src: &str, dst: &str, route: &str, forced: bool, v: Option<f64>) -> Entry {
        Entry {
            src: src.into(),
            dst: dst.into(),
            route: route.into(),
            forced,
            size: 4096,
            gib_s_median: v,
            gib_s_min: v,
            gib_s_max: v,
            reps: 1,
            error: v.is_none().then(|| "it broke".to_owned()),
        }
    }

    fn report() -> Report {
        Report {
            tool: "ur-bandwidth",
            selector: "*".into(),
            contexts: Contexts::Platform,
            reps: 1,
            sizes: vec![4096],
            locations: vec!["a".into(), "b".into()],
            location_info: vec![loc("a", "A"), loc("b", "B")],
            routes: Code::ALL
                .iter()
                .map(|c| RouteInfo {
                    letter: c.letter(),
                    meaning: c.describe(),
                })
                .collect(),
            results: vec![
                entry("a", "a", "I", false, Some(5000.0)),
                entry("a", "b", "S", false, Some(1.5)),
                entry("b", "a", "S", false, None),
                entry("b", "b", "I", false, Some(4000.0)),
                entry("a", "b", "C", true, Some(3.25)),
            ],
            latency: Vec::new(),
            errors: Vec::new(),
        }
    }

    #[test]
    fn tables_show_values_routes_and_numbered_failures() {
        let t = report().text();
        assert!(t.contains("5000 I"), "{t}");
        assert!(t.contains("1.50 S"), "{t}");
        assert!(t.contains("error [1]"), "{t}");
        assert!(t.contains("[1] b -> a (4 KiB): it broke"), "{t}");
        assert!(t.contains("forced by route C"), "{t}");
        assert!(t.contains("3.25"), "{t}");
        assert!(t.contains("A = a: x"), "{t}");
    }

    #[test]
    fn forced_panels_mark_the_managers_own_choice() {
        let r = report();
        let m = r.matrix(4096, Some("S"));
        assert_eq!(
            m[0][1],
            Cell::Value {
                gib_s: 1.5,
                text: "1.50*".into(),
                scaled: true,
            }
        );
        assert_eq!(m[0][0], Cell::Absent);
    }

    #[test]
    fn figures_keep_about_three_digits() {
        assert_eq!(figure(0.01234), "0.012");
        assert_eq!(figure(1.234), "1.23");
        assert_eq!(figure(12.34), "12.3");
        assert_eq!(figure(1234.4), "1234");
    }
}
