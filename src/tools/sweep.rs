//! `kernlab sweep`: one op over a range of sizes, every point validated then timed through
//! `bench::run` (the same path as `bench`), shown as one table (rows: sizes; columns: variants,
//! GB/s) and one plot of GB/s against the swept size, one line per variant — in the spirit of
//! Triton's `perf_report`.
//!
//! Size specs (`--rows`, `--cols`, `--numel`) are comma lists of items; an item is a number
//! (`4096`, `1_000`, `2^20`) or an inclusive range with a step: `A..B:STEP` adds STEP
//! (`256..12672:128`), `A..B:xF` multiplies by F (`2^20..2^28:x2`).

use super::bench::harness::within_noise;
use super::bench::plot::{PlotSpec, Series};
use super::bench::report::{fmt_gbps, fmt_sig, shape_str, BenchReport, Record, RecordTier, Status};
use crate::ops::{Grammar, Op, SweepDefault};
use crate::runtime::device::DeviceKind;
use crate::runtime::error::{Error, Result};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Color, Table};
use serde::Serialize;

/// At most this many sizes in one spec (a typo like `1..1000000:1` is an error, not a day).
pub const MAX_POINTS: usize = 10_000;

fn spec_err(spec: &str, why: impl Into<String>) -> Error {
    Error::Invalid(format!("bad size spec '{spec}': {}", why.into()))
}

/// `4096`, `1_000` or `2^20`.
fn parse_num(spec: &str, s: &str) -> Result<usize> {
    let s = s.trim().replace('_', "");
    let whole = |t: &str| {
        t.parse::<usize>()
            .map_err(|_| spec_err(spec, format!("'{t}' is not a whole number")))
    };
    let n = match s.split_once('^') {
        Some((b, e)) => {
            let (b, e) = (whole(b)?, whole(e)?);
            u32::try_from(e)
                .ok()
                .and_then(|e| b.checked_pow(e))
                .ok_or_else(|| spec_err(spec, format!("{b}^{e} is too large")))?
        }
        None => whole(&s)?,
    };
    if n == 0 {
        return Err(spec_err(spec, "sizes must be at least 1"));
    }
    Ok(n)
}

/// Parse a size spec into its sizes, in order, without repeats.
pub fn parse_sizes(spec: &str) -> Result<Vec<usize>> {
    let mut out: Vec<usize> = Vec::new();
    if spec.trim().is_empty() {
        return Err(spec_err(spec, "it is empty"));
    }
    for item in spec.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(spec_err(spec, "an empty item between commas"));
        }
        let values = match item.split_once("..") {
            None => vec![parse_num(spec, item)?],
            Some((a, rest)) => {
                let (b, step) = match rest.split_once(':') {
                    Some((b, step)) => (b, Some(step)),
                    None => (rest, None),
                };
                // The ends first: a backwards range or a bad size is the first thing to fix.
                let (a, b) = (parse_num(spec, a)?, parse_num(spec, b)?);
                if a > b {
                    return Err(spec_err(spec, format!("the range '{item}' runs backwards")));
                }
                let step = step.ok_or_else(|| {
                    spec_err(
                        spec,
                        format!("the range '{item}' needs a step: A..B:STEP or A..B:xFACTOR"),
                    )
                })?;
                let step = step.trim();
                let mut v = Vec::new();
                let mut x = a;
                if let Some(f) = step.strip_prefix(['x', 'X', '*']) {
                    let f = parse_num(spec, f)?;
                    if f < 2 {
                        return Err(spec_err(spec, "a factor must be at least 2"));
                    }
                    while x <= b && v.len() <= MAX_POINTS {
                        v.push(x);
                        x = match x.checked_mul(f) {
                            Some(n) => n,
                            None => break,
                        };
                    }
                } else {
                    let d = parse_num(spec, step)?;
                    while x <= b && v.len() <= MAX_POINTS {
                        v.push(x);
                        x = match x.checked_add(d) {
                            Some(n) => n,
                            None => break,
                        };
                    }
                }
                v
            }
        };
        for n in values {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        if out.len() > MAX_POINTS {
            return Err(spec_err(spec, format!("more than {MAX_POINTS} sizes")));
        }
    }
    Ok(out)
}

/// What a sweep's x axis is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "swept")]
pub enum Axis {
    /// Row width swept at a fixed number of rows.
    Cols { rows: usize },
    /// Number of rows swept at a fixed width.
    Rows { cols: usize },
    /// Element count (1-D tensors, or rows and columns both swept).
    Numel,
    /// Square GEMMs, M = N = K swept (matmul, linear); the figure is TFLOP/s.
    Square,
    /// Row width swept; `rows` rows, fewer where rows × cols would pass `cap` elements.
    ColsCapped { rows: usize, cap: usize },
    /// An op flag swept at one shape (the MLP's `--layers`, `--steps`).
    Flag { name: &'static str },
}

/// The figure a sweep shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Figure {
    /// Minimum bytes / median time.
    Gbps,
    /// 2·M·N·K (the op's FLOPs) / median time.
    Tflops,
    /// The median time of a call (a model's scaling: linear in steps and layers).
    Ms,
}

impl Figure {
    /// The figure for a record.
    pub fn value(self, r: &Record) -> Option<f64> {
        match self {
            Figure::Gbps => r.gbps,
            Figure::Tflops => r.tflops,
            Figure::Ms => r.median_ms,
        }
    }

    /// How the table and plot name it.
    pub fn metric(self) -> &'static str {
        match self {
            Figure::Gbps => "GB/s (minimum bytes / median time)",
            Figure::Tflops => "TFLOP/s (2·M·N·K / median time)",
            Figure::Ms => "ms per call (median)",
        }
    }

    /// A value as the table prints it.
    pub fn format(self, v: f64) -> String {
        match self {
            Figure::Gbps => fmt_gbps(v),
            Figure::Tflops if v >= 10.0 => format!("{v:.1}"),
            Figure::Tflops => format!("{v:.3}"),
            Figure::Ms => format!("{v:.3}"),
        }
    }
}

impl Axis {
    /// The swept size of a shape (a flag sweep's value is in the record: [`Axis::x_of`]).
    pub fn x(&self, shape: &[usize]) -> usize {
        match self {
            Axis::Cols { .. } | Axis::ColsCapped { .. } => *shape.last().unwrap_or(&1),
            Axis::Rows { .. } => shape[..shape.len().saturating_sub(1)].iter().product(),
            Axis::Numel => shape.iter().product(),
            Axis::Square => shape[0],
            Axis::Flag { .. } => 0,
        }
    }

    /// The swept value of a record: its shape's, or its parameters' value of the flag.
    pub fn x_of(&self, r: &Record) -> usize {
        match self {
            Axis::Flag { name } => serde_json::to_value(&r.params)
                .ok()
                .and_then(|v| v.get(name.replace('-', "_"))?.as_u64())
                .unwrap_or(0) as usize,
            _ => self.x(&r.shape),
        }
    }

    pub fn label(&self) -> String {
        match self {
            Axis::Cols { rows } => format!("columns (rows = {rows})"),
            Axis::Rows { cols } => format!("rows (columns = {cols})"),
            Axis::Numel => "elements".into(),
            Axis::Square => "M = N = K".into(),
            Axis::ColsCapped { rows, cap } => {
                format!("columns (rows = {rows}, fewer where rows × cols > {cap})")
            }
            Axis::Flag { name } => format!("--{name}"),
        }
    }

    /// The column header of the size column in the sweep table.
    pub fn short(&self) -> &'static str {
        match self {
            Axis::Cols { .. } | Axis::ColsCapped { .. } => "cols",
            Axis::Rows { .. } => "rows",
            Axis::Numel => "elements",
            Axis::Square => "size",
            Axis::Flag { name } => name,
        }
    }
}

/// The shapes of a sweep and its axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepPlan {
    pub shapes: Vec<Vec<usize>>,
    pub axis: Axis,
    /// What the table and plot show.
    pub figure: Figure,
    /// Plot x on a log scale (a geometric sweep).
    pub log_x: bool,
}

impl SweepPlan {
    /// A sweep of op flag `name` over `values` at one shape.
    pub fn flag(name: &'static str, values: &[usize], shape: Vec<usize>, figure: Figure) -> Self {
        let (lo, hi) = (
            values.iter().copied().min().unwrap_or(1),
            values.iter().copied().max().unwrap_or(1),
        );
        SweepPlan {
            shapes: vec![shape],
            axis: Axis::Flag { name },
            figure,
            log_x: hi as f64 / lo.max(1) as f64 >= 64.0,
        }
    }
}

/// The plan from `--rows`/`--cols` (rows × cols shapes) or `--numel` (1-D shapes).
pub fn plan(rows: Option<&str>, cols: Option<&str>, numel: Option<&str>) -> Result<SweepPlan> {
    // Each spec parses on its own first, so a typo is named before a missing flag.
    for spec in [rows, cols, numel].into_iter().flatten() {
        parse_sizes(spec)?;
    }
    let (shapes, axis, xs): (Vec<Vec<usize>>, Axis, Vec<usize>) = match (rows, cols, numel) {
        (None, None, Some(n)) => {
            let ns = parse_sizes(n)?;
            (ns.iter().map(|&n| vec![n]).collect(), Axis::Numel, ns)
        }
        (_, _, Some(_)) => {
            return Err(Error::Invalid(
                "give either --numel or --rows/--cols, not both".into(),
            ))
        }
        (Some(r), Some(c), None) => {
            let (rs, cs) = (parse_sizes(r)?, parse_sizes(c)?);
            let shapes: Vec<Vec<usize>> = rs
                .iter()
                .flat_map(|&r| cs.iter().map(move |&c| (r, c)))
                .map(|(r, c)| match r.checked_mul(c) {
                    Some(_) => Ok(vec![r, c]),
                    None => Err(Error::Invalid(format!(
                        "{r} rows × {c} columns: too many elements"
                    ))),
                })
                .collect::<Result<_>>()?;
            if shapes.len() > MAX_POINTS {
                return Err(Error::Invalid(format!(
                    "{} shapes: at most {MAX_POINTS}",
                    shapes.len()
                )));
            }
            let axis = match (rs.len(), cs.len()) {
                (1, _) => Axis::Cols { rows: rs[0] },
                (_, 1) => Axis::Rows { cols: cs[0] },
                _ => Axis::Numel,
            };
            let xs = shapes.iter().map(|s| axis.x(s)).collect();
            (shapes, axis, xs)
        }
        _ => {
            return Err(Error::Invalid(
                "a sweep needs --rows and --cols (e.g. --rows 4096 --cols 256..12672:128) \
                 or --numel (e.g. --numel 2^20..2^28:x2)"
                    .into(),
            ))
        }
    };
    let (lo, hi) = (
        xs.iter().copied().min().unwrap_or(1),
        xs.iter().copied().max().unwrap_or(1),
    );
    Ok(SweepPlan {
        shapes,
        axis,
        figure: Figure::Gbps,
        log_x: hi as f64 / lo.max(1) as f64 >= 64.0,
    })
}

/// The sweep `kernlab sweep` runs: the sizes given, with a missing `--rows` or `--cols` taken
/// from the defaults (4096 rows on a GPU, 1024 on the CPU; 1024 columns), or with none given,
/// the op's default sweep: Triton's softmax tutorial sizes, and GeLU from 1 Mi to 256 Mi
/// elements on a GPU; smaller on the CPU.
pub fn plan_for(
    op: Op,
    device: DeviceKind,
    rows: Option<&str>,
    cols: Option<&str>,
    numel: Option<&str>,
) -> Result<SweepPlan> {
    if op.grammar() == Grammar::Gemm {
        return Err(Error::Invalid(format!(
            "{op} sweeps square sizes: use --square (e.g. --square 1024..16384:x2)"
        )));
    }
    let default_rows = match device {
        DeviceKind::Cuda => "4096",
        DeviceKind::Cpu => "1024",
    };
    match (rows, cols, numel) {
        (None, None, None) => match op.default_sweep(device) {
            SweepDefault::Rows { rows, cols } => plan(Some(rows), Some(cols), None),
            SweepDefault::Numel(n) => plan(None, None, Some(n)),
            SweepDefault::Square(_) => Err(Error::Invalid(format!(
                "{op}'s default sweep is square (M = N = K): use --square"
            ))),
        },
        (r, c, None) => plan(
            Some(r.unwrap_or(default_rows)),
            Some(c.unwrap_or("1024")),
            None,
        ),
        (r, c, n) => plan(r, c, n),
    }
}

/// Cap every shape of a rows × cols plan at `cap` elements by taking fewer rows (at least
/// one): wide rows keep their width and lose rows. The axis then says so.
pub fn cap_elements(plan: &mut SweepPlan, cap: usize) {
    let mut capped = false;
    for s in plan.shapes.iter_mut() {
        if let [rows, cols] = s.as_mut_slice() {
            let most = (cap / (*cols).max(1)).max(1);
            if *rows > most {
                *rows = most;
                capped = true;
            }
        }
    }
    if let (true, Axis::Cols { rows }) = (capped, plan.axis) {
        plan.axis = Axis::ColsCapped { rows, cap };
    }
}

/// A square GEMM sweep, M = N = K over `spec` (a range without a step doubles:
/// `1024..16384` is `1024..16384:x2`); none given, the op's default sweep.
pub fn plan_square(op: Op, device: DeviceKind, spec: Option<&str>) -> Result<SweepPlan> {
    let spec = match spec {
        Some(s) => s
            .split(',')
            .map(|item| {
                if item.contains("..") && !item.contains(':') {
                    format!("{}:x2", item.trim())
                } else {
                    item.trim().to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        None => match op.default_sweep(device) {
            SweepDefault::Square(s) => s.into(),
            _ => {
                return Err(Error::Invalid(format!(
                    "{op} sweeps --rows/--cols or --numel, not --square"
                )))
            }
        },
    };
    let sizes = parse_sizes(&spec)?;
    let (lo, hi) = (
        sizes.iter().copied().min().unwrap_or(1),
        sizes.iter().copied().max().unwrap_or(1),
    );
    Ok(SweepPlan {
        shapes: sizes.iter().map(|&s| vec![s, s, s]).collect(),
        axis: Axis::Square,
        figure: Figure::Tflops,
        log_x: hi as f64 / lo.max(1) as f64 >= 8.0,
    })
}

/// One line per (variant, tier, dtype), in the order the report holds them.
fn series_keys(report: &BenchReport) -> Vec<(String, RecordTier, crate::runtime::dtype::DType)> {
    let mut keys = Vec::new();
    for r in &report.records {
        let k = (r.variant.clone(), r.tier, r.dtype);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

fn several_dtypes(report: &BenchReport) -> bool {
    report
        .records
        .iter()
        .any(|r| r.dtype != report.records[0].dtype)
}

fn records_of<'a>(
    report: &'a BenchReport,
    key: &'a (String, RecordTier, crate::runtime::dtype::DType),
) -> impl Iterator<Item = &'a Record> {
    report
        .records
        .iter()
        .filter(move |r| r.variant == key.0 && r.tier == key.1 && r.dtype == key.2)
}

/// The plot's lines: GB/s against the swept size, one per variant (and dtype); the copy
/// ceiling as a dashed line.
pub fn plot_spec(report: &BenchReport, plan: &SweepPlan, title: &str) -> PlotSpec {
    let dt = several_dtypes(report);
    let series = series_keys(report)
        .iter()
        .map(|k| Series {
            label: records_of(report, k)
                .next()
                .map(|r| r.label(dt))
                .unwrap_or_default(),
            tier: k.1.to_string(),
            points: records_of(report, k)
                .filter_map(|r| Some((plan.axis.x_of(r) as f64, plan.figure.value(r)?)))
                .collect(),
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    PlotSpec {
        title: title.to_string(),
        x_label: plan.axis.label(),
        y_label: plan.figure.metric().into(),
        log_x: plan.log_x,
        series,
        hlines: if plan.figure == Figure::Ms {
            Vec::new()
        } else if plan.figure == Figure::Tflops {
            report
                .matmul
                .iter()
                .filter(|m| {
                    report
                        .records
                        .iter()
                        .any(|r| r.dtype.to_string() == m.dtype)
                })
                .map(|m| {
                    (
                        format!("{} {} TFLOP/s", m.name, fmt_sig(m.tflops)),
                        m.tflops,
                    )
                })
                .collect()
        } else {
            vec![(
                format!("copy ceiling {} GB/s", fmt_sig(report.copy_gbps())),
                report.copy_gbps(),
            )]
        },
    }
}

/// The sweep table: one row per size, one GB/s column per variant (and dtype), and the
/// fastest variant. With `--repeat`, a `~` marks a time within the run-to-run spread of the
/// row's fastest (a difference that is noise).
pub fn table(report: &BenchReport, plan: &SweepPlan) -> Table {
    let dt = several_dtypes(report);
    let keys = series_keys(report);
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    let mut header = vec![plan.axis.short().to_string(), "shape".into()];
    for k in &keys {
        header.push(
            records_of(report, k)
                .next()
                .map(|r| r.label(dt))
                .unwrap_or_default(),
        );
    }
    header.push("fastest".into());
    t.set_header(header);
    // A row a point: its shape and parameters (a flag sweep's points share the shape).
    let mut points: Vec<(Vec<usize>, crate::ops::Params, usize)> = Vec::new();
    for r in &report.records {
        if !points
            .iter()
            .any(|(s, p, _)| *s == r.shape && *p == r.params)
        {
            points.push((r.shape.clone(), r.params.clone(), plan.axis.x_of(r)));
        }
    }
    for (shape, params, x) in points {
        let row: Vec<Option<&Record>> = keys
            .iter()
            .map(|k| records_of(report, k).find(|r| r.shape == shape && r.params == params))
            .collect();
        let best = row
            .iter()
            .flatten()
            .filter(|r| r.status == Status::Ok && r.median_ms.is_some())
            .min_by(|a, b| a.median_ms.unwrap().total_cmp(&b.median_ms.unwrap()));
        let mut cells = vec![
            Cell::new(x).set_alignment(CellAlignment::Right),
            Cell::new(shape_str(&shape)),
        ];
        for r in &row {
            let cell = match r {
                None => Cell::new("—"),
                Some(r) => match (r.status, plan.figure.value(r)) {
                    (Status::Ok, Some(g)) => {
                        let is_best = best.is_some_and(|b| std::ptr::eq(*b, *r));
                        let noise = !is_best
                            && best.is_some_and(|b| {
                                within_noise(
                                    b.median_ms.unwrap(),
                                    b.spread.unwrap_or(0.0),
                                    r.median_ms.unwrap(),
                                    r.spread.unwrap_or(0.0),
                                )
                            });
                        let v = plan.figure.format(g);
                        let c = Cell::new(format!("{v}{}", if noise { " ~" } else { "" }));
                        if is_best {
                            c.fg(Color::Green)
                        } else {
                            c
                        }
                    }
                    (Status::Failed, _) => Cell::new("FAILED").fg(Color::Red),
                    (Status::Error, _) => Cell::new("ERROR").fg(Color::Red),
                    (Status::Unsupported, _) => Cell::new("n/a").fg(Color::DarkGrey),
                    (Status::Ok, None) => Cell::new("—"),
                },
            };
            cells.push(cell.set_alignment(CellAlignment::Right));
        }
        cells.push(Cell::new(
            best.map(|b| b.label(dt)).unwrap_or_else(|| "—".into()),
        ));
        t.add_row(cells);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_specs_parse() {
        assert_eq!(
            parse_sizes("256..1024:256").unwrap(),
            vec![256, 512, 768, 1024]
        );
        assert_eq!(parse_sizes("256..1000:256").unwrap(), vec![256, 512, 768]);
        assert_eq!(
            parse_sizes("2^20..2^23:x2").unwrap(),
            vec![1 << 20, 1 << 21, 1 << 22, 1 << 23]
        );
        assert_eq!(
            parse_sizes("256, 1024,4_096").unwrap(),
            vec![256, 1024, 4096]
        );
        assert_eq!(parse_sizes("1..4:1,2,8").unwrap(), vec![1, 2, 3, 4, 8]);
        assert_eq!(parse_sizes("7").unwrap(), vec![7]);
        assert_eq!(parse_sizes("256..12672:128").unwrap().len(), 98);
        for (bad, why) in [
            ("", "empty"),
            ("1,,2", "empty item"),
            ("10..1:1", "backwards"),
            ("1..10", "needs a step"),
            ("1..10:x1", "at least 2"),
            ("0", "at least 1"),
            ("1..10:0", "at least 1"),
            ("abc", "not a whole number"),
            ("2^99", "too large"),
            ("1..100000:1", "more than"),
        ] {
            let e = parse_sizes(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn capped_plans_keep_the_width_and_drop_rows() {
        let mut p = plan(Some("4096"), Some("1024,1048576"), None).unwrap();
        cap_elements(&mut p, 1 << 28);
        assert_eq!(p.shapes, vec![vec![4096, 1024], vec![256, 1048576]]);
        assert!(p.axis.label().contains("fewer where"));
        let mut q = plan(Some("4"), Some("8"), None).unwrap();
        cap_elements(&mut q, 1 << 28);
        assert_eq!(
            q.axis,
            Axis::Cols { rows: 4 },
            "nothing capped, axis unchanged"
        );
    }

    #[test]
    fn plans_pick_the_swept_axis() {
        let p = plan(Some("4096"), Some("256..1024:256"), None).unwrap();
        assert_eq!(p.axis, Axis::Cols { rows: 4096 });
        assert_eq!(p.shapes[1], vec![4096, 512]);
        assert!(!p.log_x);
        let p = plan(Some("1,2,4"), Some("100"), None).unwrap();
        assert_eq!(p.axis, Axis::Rows { cols: 100 });
        assert_eq!(p.axis.x(&[4, 100]), 4);
        let p = plan(None, None, Some("2^10..2^20:x4")).unwrap();
        assert_eq!(p.axis, Axis::Numel);
        assert_eq!(p.shapes[0], vec![1024]);
        assert!(p.log_x);
        let p = plan(Some("2,4"), Some("8,16"), None).unwrap();
        assert_eq!((p.axis, p.shapes.len()), (Axis::Numel, 4));
        assert!(plan(Some("4"), None, None).is_err());
        assert!(plan(Some("4"), Some("4"), Some("4")).is_err());
    }
}
