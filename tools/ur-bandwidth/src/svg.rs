//! The heatmap (`--svg FILE`), drawn with plotters' SVG backend: one
//! panel per matrix (each size of the chosen routes, then each forced
//! route), sources as rows and destinations as columns, every cell
//! coloured by GiB/s on one logarithmic viridis scale shared by all panels
//! (in-place cells are orders of magnitude above copies) with its value
//! and route letter written in it; a colour bar with its GiB/s axis; below,
//! the route letters, the locations and each failed cell's reason.

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

/// The colour of `gib_s` on the shared log scale `lo..hi` (log10 GiB/s).
fn colour(gib_s: f64, lo: f64, hi: f64) -> RGBColor {
    let h = if hi > lo { (gib_s.log10() - lo) / (hi - lo) } else { 0.5 };
    ViridisRGB::get_color(h.clamp(0.0, 1.0))
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

/// The decade bounds (log10 GiB/s) covering every figure of `panels`.
fn scale(panels: &[Panel]) -> (f64, f64) {
    let values = panels
        .iter()
        .flat_map(|p| p.cells.iter().flatten())
        .filter_map(|c| match c {
            Cell::Value { gib_s, .. } if *gib_s > 0.0 && gib_s.is_finite() => Some(gib_s.log10()),
            _ => None,
        });
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo.is_finite() {
        (lo.floor(), hi.ceil().max(lo.floor() + 1.0))
    } else {
        (-1.0, 1.0)
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
    let (lo, hi) = scale(&pic.panels);

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
                    Cell::Value { gib_s, text } => {
                        let c = colour(*gib_s, lo, hi);
                        (c, text.clone(), ink(c))
                    }
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

    // The colour bar: GiB/s on a log axis, one band per 1/40 of the range.
    let mut bar_chart = ChartBuilder::on(&bar.margin(CAPTION + 10, COL_LABELS + 30, 10, 40))
        .caption("GiB/s", (FONT, 15))
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..1f64, (10f64.powf(lo)..10f64.powf(hi)).log_scale())
        .map_err(&err)?;
    bar_chart
        .configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_label_formatter(&|v| {
            if *v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            }
        })
        .label_style((FONT, 12))
        .draw()
        .map_err(&err)?;
    const BANDS: usize = 40;
    bar_chart
        .draw_series((0..BANDS).map(|k| {
            let (a, b) = (k as f64 / BANDS as f64, (k + 1) as f64 / BANDS as f64);
            let (va, vb) = (10f64.powf(lo + a * (hi - lo)), 10f64.powf(lo + b * (hi - lo)));
            Rectangle::new([(0.0, va), (1.0, vb)], colour((va * vb).sqrt(), lo, hi).filled())
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
                },
                Cell::Failed(1),
            ],
            vec![
                Cell::Absent,
                Cell::Value {
                    gib_s: 9000.0,
                    text: "9000 I".into(),
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

    #[test]
    fn the_scale_spans_whole_decades() {
        let p = Panel {
            title: String::new(),
            cells: vec![vec![
                Cell::Value {
                    gib_s: 0.3,
                    text: String::new(),
                },
                Cell::Value {
                    gib_s: 2500.0,
                    text: String::new(),
                },
            ]],
        };
        assert_eq!(scale(&[p]), (-1.0, 4.0));
        assert_eq!(scale(&[]), (-1.0, 1.0));
    }
}
