//! The heatmap (`--svg FILE`), drawn with plotters' SVG backend: one
//! panel per matrix (each size of the chosen routes, then each forced
//! route), sources as rows and destinations as columns, every cell
//! coloured by GiB/s on one viridis scale shared by all panels, with its
//! value and route letter written in it; a colour bar with its GiB/s axis;
//! below, the route letters, the locations and each failed cell's reason.
//!
//! The scale spans the figures of the cells that move bytes, from the
//! lowest to the highest (logarithmic when they span more than a factor of
//! ten, linear otherwise), so the copies' differences show. In-place cells
//! (nothing moves; their figure is bookkeeping time, thousands of GiB/s)
//! are drawn light grey off the scale, failures light red, routes a pair
//! does not offer near white.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::error::BwError;

/// One cell of a panel.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A measured figure and the text written in the cell.
    Value {
        /// GiB/s (positive).
        gib_s: f64,
        /// What the cell shows (`12.3 C`).
        text: String,
        /// Coloured by the scale; `false` for in-place cells, whose figure
        /// is not a bandwidth.
        scaled: bool,
    },
    /// The measurement failed: the footnote's number.
    Failed(usize),
    /// The pair does not offer this panel's route.
    Absent,
}

/// One matrix.
#[derive(Debug, Clone)]
pub struct Panel {
    /// Its title.
    pub title: String,
    /// `cells[src][dst]`.
    pub cells: Vec<Vec<Cell>>,
}

/// What the picture shows.
#[derive(Debug)]
pub struct Picture<'a> {
    /// The title at the top.
    pub title: String,
    /// Column and row headers, in matrix order.
    pub labels: &'a [String],
    /// The matrices.
    pub panels: Vec<Panel>,
    /// Lines printed under the panels (legend, locations, failures).
    pub notes: Vec<String>,
}

const CELL_W: u32 = 104;
const CELL_H: u32 = 38;
const ROW_LABELS: u32 = 130;
const COL_LABELS: u32 = 56;
const CAPTION: u32 = 34;
const BAR_W: u32 = 190;
const TITLE_H: u32 = 46;
const NOTE_H: u32 = 17;
const FONT: &str = "sans-serif";

/// The colour scale: GiB/s to 0..1 and back.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    /// Over the scaled figures of `panels` (a default range without any).
    fn of(panels: &[Panel]) -> Scale {
        let (lo, hi) = panels
            .iter()
            .flat_map(|p| p.cells.iter().flatten())
            .filter_map(|c| match c {
                Cell::Value {
                    gib_s, scaled: true, ..
                } if *gib_s > 0.0 && gib_s.is_finite() => Some(*gib_s),
                _ => None,
            })
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
        if !lo.is_finite() {
            return Scale {
                lo: 0.1,
                hi: 10.0,
                log: true,
            };
        }
        let (lo, hi) = if hi > lo * 1.01 { (lo, hi) } else { (lo * 0.9, hi * 1.1) };
        Scale {
            lo,
            hi,
            log: hi / lo > 10.0,
        }
    }

    /// Where `v` GiB/s sits, 0 (lowest) to 1 (highest).
    fn t(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        t.clamp(0.0, 1.0)
    }

    /// The GiB/s at `t`.
    fn value(&self, t: f64) -> f64 {
        if self.log {
            (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + t * (self.hi - self.lo)
        }
    }

    fn colour(&self, v: f64) -> RGBColor {
        ViridisRGB::get_color(self.t(v))
    }
}

/// Black or white, whichever reads on `c`.
fn ink(c: RGBColor) -> RGBColor {
    let luma = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    if luma > 140.0 {
        BLACK
    } else {
        WHITE
    }
}

fn plot_err<E: std::fmt::Debug>(path: &Path) -> impl Fn(E) -> BwError + '_ {
    move |e| BwError::Svg {
        path: path.to_owned(),
        why: format!("{e:?}"),
    }
}

/// Draws `pic` into the SVG file `path`.
pub fn draw(path: &Path, pic: &Picture<'_>) -> Result<(), BwError> {
    let err = plot_err(path);
    let n = pic.labels.len().max(1);
    let map_w = ROW_LABELS + CELL_W * n as u32 + 30;
    let panel_h = CAPTION + CELL_H * n as u32 + COL_LABELS + 40;
    let width = (map_w + BAR_W).max(900);
    let panels_h = panel_h * pic.panels.len().max(1) as u32;
    let notes_h = NOTE_H * pic.notes.len() as u32 + 20;
    let height = TITLE_H + panels_h + notes_h;
    let scale = Scale::of(&pic.panels);

    let root = SVGBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, rest) = root.split_vertically(TITLE_H);
    top.draw_text(&pic.title, &(FONT, 20).into_font().color(&BLACK), (16, 14))
        .map_err(&err)?;
    let (body, foot) = rest.split_vertically(panels_h);
    let (maps, bar) = body.split_horizontally(map_w);

    let last = n as i32 - 1;
    // Segment k of an axis is row or column k; rows are drawn from the top.
    let edge = |k: i32| {
        if k > last {
            SegmentValue::Last
        } else {
            SegmentValue::Exact(k)
        }
    };
    let label = |v: &SegmentValue<i32>, flip: bool| -> String {
        let SegmentValue::CenterOf(k) = v else {
            return String::new();
        };
        let k = if flip { last - k } else { *k };
        usize::try_from(k)
            .ok()
            .and_then(|k| pic.labels.get(k))
            .cloned()
            .unwrap_or_default()
    };
    for (area, panel) in maps.split_evenly((pic.panels.len().max(1), 1)).iter().zip(&pic.panels) {
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, (FONT, 16))
            .margin_right(20)
            .x_label_area_size(COL_LABELS)
            .y_label_area_size(ROW_LABELS)
            .build_cartesian_2d((0..last).into_segmented(), (0..last).into_segmented())
            .map_err(&err)?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_labels(n)
            .y_labels(n)
            .x_desc("destination")
            .y_desc("source")
            .x_label_formatter(&|v| label(v, false))
            .y_label_formatter(&|v| label(v, true))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()
            .map_err(&err)?;
        let mut rects = Vec::new();
        let mut texts = Vec::new();
        for (i, row) in panel.cells.iter().enumerate() {
            for (j, cell) in row.iter().enumerate() {
                let (x, y) = (j as i32, last - i as i32);
                let (fill, text, fg) = match cell {
                    Cell::Value {
                        gib_s,
                        text,
                        scaled: true,
                    } => {
                        let c = scale.colour(*gib_s);
                        (c, text.clone(), ink(c))
                    }
                    Cell::Value { text, .. } => (RGBColor(222, 222, 222), text.clone(), BLACK),
                    Cell::Failed(k) => (RGBColor(235, 200, 200), format!("error [{k}]"), RGBColor(140, 0, 0)),
                    Cell::Absent => (RGBColor(245, 245, 245), "·".to_owned(), RGBColor(150, 150, 150)),
                };
                let corners = [(edge(x), edge(y)), (edge(x + 1), edge(y + 1))];
                rects.push(Rectangle::new(corners.clone(), fill.filled()));
                rects.push(Rectangle::new(corners, WHITE.stroke_width(1)));
                let style = (FONT, 14)
                    .into_font()
                    .color(&fg)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                texts.push(Text::new(
                    text,
                    (SegmentValue::CenterOf(x), SegmentValue::CenterOf(y)),
                    style,
                ));
            }
        }
        chart.draw_series(rects).map_err(&err)?;
        chart.draw_series(texts).map_err(&err)?;
    }

    // The colour bar: its axis runs over 0..1 of the scale, labelled in GiB/s.
    let mut bar_chart = ChartBuilder::on(&bar.margin(CAPTION + 10, COL_LABELS + 30, 10, 40))
        .caption(if scale.log { "GiB/s (log)" } else { "GiB/s" }, (FONT, 15))
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..1f64, 0f64..1f64)
        .map_err(&err)?;
    bar_chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(6)
        .y_label_formatter(&|t| crate::report::figure(scale.value(*t)))
        .label_style((FONT, 12))
        .draw()
        .map_err(&err)?;
    const BANDS: usize = 50;
    bar_chart
        .draw_series((0..BANDS).map(|k| {
            let (a, b) = (k as f64 / BANDS as f64, (k + 1) as f64 / BANDS as f64);
            Rectangle::new([(0.0, a), (1.0, b)], ViridisRGB::get_color((a + b) / 2.0).filled())
        }))
        .map_err(&err)?;

    for (k, line) in pic.notes.iter().enumerate() {
        foot.draw_text(
            line,
            &(FONT, 13).into_font().color(&BLACK),
            (16, 10 + NOTE_H as i32 * k as i32),
        )
        .map_err(&err)?;
    }
    root.present().map_err(&err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_values_failures_and_absent_cells() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.svg");
        let labels = vec!["pageable".to_owned(), "opencl:0".to_owned()];
        let cells = vec![
            vec![
                Cell::Value {
                    gib_s: 8.5,
                    text: "8.50 H".into(),
                    scaled: true,
                },
                Cell::Failed(1),
            ],
            vec![
                Cell::Absent,
                Cell::Value {
                    gib_s: 9000.0,
                    text: "9000 I".into(),
                    scaled: false,
                },
            ],
        ];
        let pic = Picture {
            title: "test".into(),
            labels: &labels,
            panels: vec![Panel {
                title: "64 MiB".into(),
                cells,
            }],
            notes: vec!["[1] pageable -> opencl:0: it broke".into()],
        };
        draw(&path, &pic).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100.min(svg.len())]);
        for text in [
            "pageable",
            "opencl:0",
            "8.50 H",
            "9000 I",
            "error [1]",
            "GiB/s",
            "it broke",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
    }

    fn value(gib_s: f64, scaled: bool) -> Cell {
        Cell::Value {
            gib_s,
            text: String::new(),
            scaled,
        }
    }

    #[test]
    fn the_scale_spans_the_copies_not_the_in_place_cells() {
        let panel = |cells| Panel {
            title: String::new(),
            cells: vec![cells],
        };
        let s = Scale::of(&[panel(vec![value(2.0, true), value(6.0, true), value(9000.0, false)])]);
        assert_eq!((s.lo, s.hi, s.log), (2.0, 6.0, false));
        assert_eq!(s.t(4.0), 0.5);
        assert_eq!(s.value(0.5), 4.0);
        assert_eq!(s.t(9000.0), 1.0, "clamped");
        let s = Scale::of(&[panel(vec![value(0.01, true), value(10.0, true)])]);
        assert!(s.log);
        assert!((s.t(0.316_227_766) - 0.5).abs() < 1e-6);
        assert!((s.value(1.0) - 10.0).abs() < 1e-9);
        let s = Scale::of(&[]);
        assert!(s.lo < s.hi);
    }
}
