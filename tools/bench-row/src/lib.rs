//! The benchmark result line, in one place.
//!
//! Every bench of the workspace prints its results as lines
//! `BENCH_ROW {json}` on stdout, and `cargo xtask bench` collects them into
//! `target/bench/report.json`. This crate owns that format: the [`Row`]
//! type (the JSON object's keys), the [`PREFIX`], printing a row
//! ([`Row::print`], [`print_row`]: the JSON is written by `serde_json`, so
//! any name is escaped correctly), reading one back ([`parse_line`]) and the
//! [`median`] the benches report.
//!
//! ```
//! use ur_bench_row::{median, parse_line, Row};
//!
//! let ours = median([2.0, 4.0, 9.0]); // 4
//! let base = median(vec![2.0, 1.0, 2.5]); // 2
//! let row = Row::new("copy.ours_over_memcpy", ours, "GiB/s").with_baseline("the \"plain\" memcpy", base);
//! assert_eq!(row.ratio, Some(2.0));
//! // `row.print()` prints this line; the collector reads it back unchanged.
//! let line = row.line();
//! assert!(line.starts_with("BENCH_ROW {"));
//! assert_eq!(parse_line(&line).unwrap(), Some(row));
//! assert_eq!(parse_line("some other output").unwrap(), None);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// The prefix of a result line on a benchmark's stdout.
pub const PREFIX: &str = "BENCH_ROW ";

/// One measured result, compared with its baseline.
///
/// Its fields are the keys of the JSON object of a `BENCH_ROW` line and of
/// each row of `target/bench/report.json` (absent options are `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What was measured.
    pub name: String,
    /// The measurement.
    pub value: f64,
    /// Its unit (`GiB/s`, `us`, ...).
    pub unit: String,
    /// What it is compared with.
    #[serde(default)]
    pub baseline_name: Option<String>,
    /// The baseline's measurement, in the same unit.
    #[serde(default)]
    pub baseline_value: Option<f64>,
    /// `value / baseline_value` as the benchmark computed it.
    #[serde(default)]
    pub ratio: Option<f64>,
}

/// `value / baseline`, where that is a number (not for a zero baseline).
fn ratio_of(value: f64, baseline: f64) -> Option<f64> {
    Some(value / baseline).filter(|r| baseline != 0.0 && r.is_finite())
}

impl Row {
    /// A row with no baseline.
    ///
    /// ```
    /// let row = ur_bench_row::Row::new("decode", 1.5, "ms");
    /// assert_eq!((row.baseline_value, row.ratio), (None, None));
    /// ```
    pub fn new(name: impl Into<String>, value: f64, unit: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value,
            unit: unit.into(),
            baseline_name: None,
            baseline_value: None,
            ratio: None,
        }
    }

    /// The row compared with `baseline_value` (same unit): sets the
    /// baseline and the ratio `value / baseline_value` (none where the
    /// baseline is zero).
    ///
    /// ```
    /// let row = ur_bench_row::Row::new("a", 3.0, "us").with_baseline("b", 2.0);
    /// assert_eq!(row.ratio, Some(1.5));
    /// ```
    pub fn with_baseline(mut self, baseline_name: impl Into<String>, baseline_value: f64) -> Self {
        self.baseline_name = Some(baseline_name.into());
        self.baseline_value = Some(baseline_value);
        self.ratio = ratio_of(self.value, baseline_value);
        self
    }

    /// The `BENCH_ROW {json}` line (no newline).
    pub fn line(&self) -> String {
        self.to_string()
    }

    /// Prints [`line`](Self::line) to stdout, where `cargo xtask bench`
    /// reads it.
    pub fn print(&self) {
        println!("{self}");
    }
}

/// The `BENCH_ROW {json}` line.
impl fmt::Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Strings and numbers always serialize (a non-finite number as `null`).
        let json = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        write!(f, "{PREFIX}{json}")
    }
}

/// Prints the row `name` (`value` in `unit`) compared with `baseline_name`
/// (`baseline_value`, same unit), the ratio `value / baseline_value`
/// computed: `Row::new(..).with_baseline(..).print()` in one call.
///
/// ```
/// ur_bench_row::print_row("copy.ours_over_memcpy", 7.5, "GiB/s", "memcpy", 10.0);
/// // prints: BENCH_ROW {"name":"copy.ours_over_memcpy","value":7.5,"unit":"GiB/s","baseline_name":"memcpy","baseline_value":10.0,"ratio":0.75}
/// ```
pub fn print_row(name: &str, value: f64, unit: &str, baseline_name: &str, baseline_value: f64) {
    Row::new(name, value, unit)
        .with_baseline(baseline_name, baseline_value)
        .print();
}

/// A `BENCH_ROW` line whose JSON is not a row.
#[derive(Debug, thiserror::Error)]
#[error("malformed BENCH_ROW line ({source}): {line}")]
pub struct ParseError {
    /// The line as read.
    pub line: String,
    /// What `serde_json` found wrong.
    #[source]
    pub source: serde_json::Error,
}

/// Parses one stdout line: `Ok(None)` for a line that is not a result row
/// (it must start with [`PREFIX`]), an error for a `BENCH_ROW` line whose
/// JSON is malformed. A row with a baseline but no ratio gets
/// `value / baseline_value`.
///
/// ```
/// let row = ur_bench_row::parse_line(r#"BENCH_ROW {"name":"a","value":3,"unit":"us","baseline_name":"b","baseline_value":2}"#)
///     .unwrap()
///     .unwrap();
/// assert_eq!(row.ratio, Some(1.5));
/// assert!(ur_bench_row::parse_line("BENCH_ROW {oops").is_err());
/// ```
pub fn parse_line(line: &str) -> Result<Option<Row>, ParseError> {
    let Some(json) = line.trim_end().strip_prefix(PREFIX) else {
        return Ok(None);
    };
    let mut row: Row = serde_json::from_str(json.trim()).map_err(|source| ParseError {
        line: line.to_owned(),
        source,
    })?;
    if row.ratio.is_none() {
        row.ratio = row.baseline_value.and_then(|b| ratio_of(row.value, b));
    }
    Ok(Some(row))
}

/// The median of the samples as the benches report it: the middle one
/// after sorting (`total_cmp`), for an even count the upper of the two
/// middle ones.
///
/// # Panics
///
/// With no samples.
///
/// ```
/// use ur_bench_row::median;
/// assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
/// assert_eq!(median((1..=5).map(f64::from)), 3.0);
/// ```
pub fn median(samples: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = samples.into_iter().collect();
    assert!(!v.is_empty(), "median of no samples");
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_rows_parse_back() {
        let rows = [
            Row::new("copy/1MiB", 3.5, "GiB/s").with_baseline("memcpy", 7.0),
            Row::new("lone", 0.1 + 0.2, "us"),
            Row::new("tiny", 1e-300, "s").with_baseline("huge", 1e300),
        ];
        for row in rows {
            let line = row.line();
            assert!(line.starts_with(PREFIX), "{line}");
            assert!(!line.contains('\n'), "{line}");
            assert_eq!(parse_line(&line).unwrap(), Some(row), "{line}");
        }
    }

    #[test]
    fn parses_a_full_row() {
        let line = r#"BENCH_ROW {"name":"copy/1MiB","value":3.5,"unit":"GiB/s","baseline_name":"memcpy","baseline_value":7.0,"ratio":0.5}"#;
        let row = parse_line(line).unwrap().unwrap();
        assert_eq!(row.name, "copy/1MiB");
        assert_eq!(row.value, 3.5);
        assert_eq!(row.unit, "GiB/s");
        assert_eq!(row.baseline_name.as_deref(), Some("memcpy"));
        assert_eq!(row.baseline_value, Some(7.0));
        assert_eq!(row.ratio, Some(0.5));
    }

    #[test]
    fn names_with_quotes_and_backslashes_are_escaped() {
        let name = "UR's OpenCL adapter (a \"quoted\" \\ path\tand a tab)";
        let row = Row::new("urabi.x", 1.0, "ns").with_baseline(name, 2.0);
        let line = row.line();
        assert!(line.contains(r#"\"quoted\" \\ path\t"#), "{line}");
        let back = parse_line(&line).unwrap().unwrap();
        assert_eq!(back.baseline_name.as_deref(), Some(name));
        // The hand-written format this replaces broke on such a name.
        let by_hand =
            format!("BENCH_ROW {{\"name\":\"urabi.x\",\"value\":1,\"unit\":\"ns\",\"baseline_name\":\"{name}\"}}");
        assert!(parse_line(&by_hand).is_err());
    }

    #[test]
    fn computes_a_missing_ratio() {
        let row = parse_line(r#"BENCH_ROW {"name":"a","value":3,"unit":"us","baseline_name":"b","baseline_value":2}"#)
            .unwrap()
            .unwrap();
        assert_eq!(row.ratio, Some(1.5));
        let lone = parse_line(r#"BENCH_ROW {"name":"a","value":3,"unit":"us"}"#)
            .unwrap()
            .unwrap();
        assert_eq!(lone.baseline_value, None);
        assert_eq!(lone.ratio, None);
        let zero = parse_line(r#"BENCH_ROW {"name":"a","value":3,"unit":"us","baseline_value":0}"#)
            .unwrap()
            .unwrap();
        assert_eq!(zero.ratio, None);
    }

    #[test]
    fn a_printed_ratio_is_kept() {
        let row = parse_line(r#"BENCH_ROW {"name":"a","value":3,"unit":"us","baseline_value":2,"ratio":0.25}"#)
            .unwrap()
            .unwrap();
        assert_eq!(row.ratio, Some(0.25));
    }

    #[test]
    fn the_builder_computes_the_ratio() {
        let row = Row::new("a", 3.0, "us").with_baseline("b", 4.0);
        assert_eq!(row.baseline_name.as_deref(), Some("b"));
        assert_eq!(row.baseline_value, Some(4.0));
        assert_eq!(row.ratio, Some(0.75));
        let zero = Row::new("a", 3.0, "us").with_baseline("b", 0.0);
        assert_eq!(zero.ratio, None);
        assert!(
            zero.line().ends_with(r#""baseline_value":0.0,"ratio":null}"#),
            "{}",
            zero.line()
        );
    }

    #[test]
    fn ignores_other_lines() {
        assert_eq!(parse_line("running 3 benches").unwrap(), None);
        assert_eq!(parse_line("").unwrap(), None);
        assert_eq!(parse_line(r#"  BENCH_ROW {"name":"indented"}"#).unwrap(), None);
        assert_eq!(parse_line("BENCH_ROWS 1").unwrap(), None);
    }

    #[test]
    fn rejects_malformed_rows() {
        let err = parse_line("BENCH_ROW {not json").unwrap_err();
        assert_eq!(err.line, "BENCH_ROW {not json");
        assert!(err.to_string().starts_with("malformed BENCH_ROW line ("), "{err}");
        assert!(
            parse_line(r#"BENCH_ROW {"name":"x","unit":"us"}"#).is_err(),
            "value is required"
        );
        assert!(parse_line(r#"BENCH_ROW {"name":"x","value":"fast","unit":"us"}"#).is_err());
        // A non-finite value serializes as null, which is no measurement.
        assert!(parse_line(&Row::new("x", f64::NAN, "us").line()).is_err());
        // What the hand-written lines printed for a zero baseline.
        assert!(parse_line(r#"BENCH_ROW {"name":"x","value":1,"unit":"us","ratio":inf}"#).is_err());
    }

    #[test]
    fn median_is_the_upper_middle() {
        assert_eq!(median([5.0]), 5.0);
        assert_eq!(median([2.0, 1.0]), 2.0);
        assert_eq!(median(vec![9.0, -1.0, 3.0, 4.0, 0.5]), 3.0);
        assert_eq!(median([1.0, f64::NAN, 2.0]), 2.0, "NaN sorts last");
    }

    #[test]
    #[should_panic(expected = "median of no samples")]
    fn median_of_nothing_panics() {
        median(Vec::new());
    }
}
