//! Plots of a sweep: GB/s against the swept size, one line per variant, the copy ceiling
//! dashed; PyTorch baselines dashed too. SVG or PNG by the file's extension.
//!
//! Text is laid out (and drawn, in PNGs) with a font embedded in the binary — DejaVu Sans cut
//! down to Latin-1 and a few symbols (`fonts/`, with its licence) — so no system font is needed.

use crate::runtime::error::{Error, Result};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("fonts/DejaVuSans-subset.ttf");

/// Plot size in pixels.
pub const SIZE: (u32, u32) = (1100, 650);

/// Tableau's ten categorical colours: distinct from one another, in print and on screen.
const TABLEAU10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// One line of a plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub label: String,
    /// `torch` lines are dashed.
    pub tier: String,
    /// (x, y), in the sweep's order.
    pub points: Vec<(f64, f64)>,
}

/// Everything a plot shows.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSpec {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub series: Vec<Series>,
    /// Horizontal reference lines (label, y): the ceilings.
    pub hlines: Vec<(String, f64)>,
}

fn register_font() -> Result<()> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, FONT).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::Invalid("the embedded plot font did not load".into()))
    }
}

/// `4096`, `1Mi`, `128Ki`: whole binary units read better than long numbers (from 64Ki up).
pub fn fmt_size(x: f64) -> String {
    let n = x.round().max(0.0) as u64;
    for (unit, v) in [("Gi", 1u64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
        if n >= 1 << 16 && n >= v && n.is_multiple_of(v) {
            return format!("{}{unit}", n / v);
        }
    }
    n.to_string()
}

/// Draw `spec` into `path`: `.svg` or `.png`.
pub fn render(spec: &PlotSpec, path: &Path) -> Result<()> {
    register_font()?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    let fail = |e: String| Error::Invalid(format!("drawing {}: {e}", path.display()));
    match ext.as_deref() {
        Some("svg") => {
            let root = SVGBackend::new(path, SIZE).into_drawing_area();
            draw(spec, &root).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Some("png") => {
            let root = BitMapBackend::new(path, SIZE).into_drawing_area();
            draw(spec, &root).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        _ => Err(Error::Invalid(format!(
            "--plot {}: the file must end in .svg or .png",
            path.display()
        ))),
    }
}

/// Draw `spec` into an RGB buffer (SIZE, row-major, 3 bytes a pixel).
pub fn render_rgb(spec: &PlotSpec) -> Result<Vec<u8>> {
    register_font()?;
    let mut buf = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
        draw(spec, &root).map_err(Error::Invalid)?;
        root.present().map_err(|e| Error::Invalid(e.to_string()))?;
    }
    Ok(buf)
}

fn draw<DB: DrawingBackend>(spec: &PlotSpec, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
    let xs = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !x0.is_finite() {
        (x0, x1) = (1.0, 2.0);
    }
    if x1 <= x0 {
        (x0, x1) = (x0 * 0.5, x1 * 1.5 + 1.0);
    }
    if spec.log_x {
        draw_in(spec, root, (x0 / 1.15..x1 * 1.15).log_scale())
    } else {
        let pad = (x1 - x0) * 0.02;
        draw_in(spec, root, (x0 - pad)..(x1 + pad))
    }
}

fn draw_in<DB, X>(spec: &PlotSpec, root: &DrawingArea<DB, Shift>, x: X) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let y_max = spec
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(spec.hlines.iter().map(|h| h.1))
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.08;
    let mut chart = ChartBuilder::on(root)
        .caption(&spec.title, ("sans-serif", 22))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x, 0.0..y_max)
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc(&spec.x_label)
        .y_desc(&spec.y_label)
        .x_label_formatter(&|v| fmt_size(*v))
        .y_label_formatter(&|v| super::report::fmt_sig(*v))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(|x| e(&x))?;
    let (xa, xb) = {
        let r = chart.x_range();
        (r.start, r.end)
    };
    for (label, y) in &spec.hlines {
        let style = RGBColor(90, 90, 90).stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(vec![(xa, *y), (xb, *y)], 8, 6, style))
            .map_err(|x| e(&x))?
            .label(label.as_str())
            .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 22, py)], style));
    }
    for (i, s) in spec.series.iter().enumerate() {
        let torch = s.tier == "torch";
        let color = TABLEAU10[i % TABLEAU10.len()];
        let style = color.stroke_width(2);
        let pts = s.points.clone();
        let drawn = if torch {
            chart
                .draw_series(DashedLineSeries::new(pts.clone(), 10, 5, style))
                .map_err(|x| e(&x))?
        } else {
            chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(|x| e(&x))?
        };
        drawn
            .label(s.label.as_str())
            .legend(move |(px, py)| PathElement::new(vec![(px, py), (px + 22, py)], style));
        if pts.len() <= 40 {
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|x| e(&x))?;
        }
    }
    chart
        .configure_series_labels()
        .position(legend_corner(spec, y_max))
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(160, 160, 160))
        .draw()
        .map_err(|x| e(&x))?;
    Ok(())
}

/// The corner of the plot where the legend hides the fewest points.
fn legend_corner(spec: &PlotSpec, y_max: f64) -> SeriesLabelPosition {
    let pts: Vec<(f64, f64)> = spec.series.iter().flat_map(|s| s.points.clone()).collect();
    let (x0, x1) = pts
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.0), b.max(p.0))
        });
    let fx = |x: f64| {
        if x1 <= x0 {
            0.5
        } else if spec.log_x {
            (x / x0).ln() / (x1 / x0).ln()
        } else {
            (x - x0) / (x1 - x0)
        }
    };
    // The legend box: about a third of the width, and a line of height per entry.
    let h = (0.06 * (spec.series.len() + spec.hlines.len()) as f64 + 0.04).min(0.9);
    let corners = [
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::LowerLeft, false, false),
        (SeriesLabelPosition::UpperRight, true, true),
    ];
    // The ceilings' dashed lines count too, at both ends.
    let mut all = pts.clone();
    for (_, y) in &spec.hlines {
        all.extend([(x0, *y), (x1, *y)]);
    }
    let mut best = (usize::MAX, 0);
    for (i, &(_, right, upper)) in corners.iter().enumerate() {
        let inside = all
            .iter()
            .filter(|p| {
                let (x, y) = (fx(p.0), p.1 / y_max);
                let in_x = if right { x >= 0.62 } else { x <= 0.38 };
                let in_y = if upper { y >= 1.0 - h } else { y <= h };
                in_x && in_y
            })
            .count();
        if inside < best.0 {
            best = (inside, i);
        }
    }
    corners[best.1].0.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(fmt_size(4096.0), "4096");
        assert_eq!(fmt_size(1048576.0), "1Mi");
        assert_eq!(fmt_size(268435456.0), "256Mi");
        assert_eq!(fmt_size(131072.0), "128Ki");
        assert_eq!(fmt_size(12672.0), "12672");
        assert_eq!(fmt_size(1.5 * 1048576.0), "1536Ki");
    }
}
