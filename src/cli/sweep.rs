//! `kernlab sweep`: one op over a range of sizes, a table of GB/s (or TFLOP/s) and a plot.

use super::run_args::{
    check_interrupted, config, start_run, write_notes, write_outputs, PartialCsv, RunArgs,
};
use super::{check_distinct_outputs, check_output_path, progress_bar};
use crate::ops::{FlagValues, Grammar, Op};
use crate::tools::{bench, sweep};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

/// The help's closing lines: how sizes read, and each op's default sweep (from its
/// descriptor).
pub(super) fn after_help() -> String {
    use crate::ops::SweepDefault;
    use crate::runtime::device::DeviceKind;
    let mut s = "SIZES: a comma list of numbers (4096, 1_000, 2^20) and ranges with a step: \
A..B:STEP adds STEP (256..12672:128), A..B:xF multiplies by F (2^20..2^28:x2); both ends are \
included when the step lands on them. A missing --rows is 4096 on a GPU (1024 on the CPU), a \
missing --cols 1024.\n\nAn op flag that takes a whole number may be given SIZES instead (mlp: \
--layers 1..64:x2, --steps 1..16:x2): the sweep then varies that flag at one shape (--rows R \
--cols C, or the op's bench shape), and a model's table shows its time per call.\n\nDefault \
sweeps (on a GPU; on the CPU):"
        .to_string();
    let flags = |d: SweepDefault| match d {
        SweepDefault::Rows { rows, cols } => format!("--rows {rows} --cols {cols}"),
        SweepDefault::Numel(n) => format!("--numel {n}"),
        SweepDefault::Square(q) => format!("--square {q}"),
    };
    for op in Op::all() {
        s += &format!(
            "\n  {}: {}; {}",
            op.name(),
            flags(op.default_sweep(DeviceKind::Cuda)),
            flags(op.default_sweep(DeviceKind::Cpu))
        );
    }
    s
}

#[derive(Args)]
pub(super) struct SweepArgs {
    /// The op (see `kernlab list`)
    op: String,
    /// matmul / linear: square sizes M = N = K (SIZES; a range without a step doubles:
    /// 1024..16384 is 1024, 2048, … 16384). The table and plot show TFLOP/s
    #[arg(long, value_name = "SIZES", allow_hyphen_values = true)]
    square: Option<String>,
    /// Rows (SIZES): the rows of a row op (softmax, rmsnorm), or the leading dimension of a
    /// 2-D GeLU input
    #[arg(long, value_name = "SIZES", allow_hyphen_values = true)]
    rows: Option<String>,
    /// Columns (SIZES): the row width
    #[arg(long, value_name = "SIZES", allow_hyphen_values = true)]
    cols: Option<String>,
    /// Element counts (SIZES) of 1-D inputs, e.g. 2^20..2^28:x2 (for GeLU)
    #[arg(long, value_name = "SIZES", allow_hyphen_values = true)]
    numel: Option<String>,
    /// Plot GB/s against the swept size to this file, .svg or .png
    #[arg(long, value_name = "PATH")]
    plot: Option<PathBuf>,
    /// With --rows/--cols: at most this many elements per input (e.g. 2^28): wide rows get
    /// fewer rows (rows = min(ROWS, N / cols)), so a sweep to millions of columns fits memory
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    max_elements: Option<String>,
    #[command(flatten)]
    run: RunArgs,
}

/// Whether a value is a list of sizes (`1,2,4`, `1..64:x2`) rather than one.
fn is_list(v: &str) -> bool {
    v.contains(',') || v.contains("..")
}

/// The op flag given a list of values (`--layers 1..64:x2`): its name and values, and the
/// other flags; an error for more than one such flag, or for a value the op does not take.
type FlagSweep = Option<(&'static str, Vec<usize>)>;
fn swept_flag(op: Op, flags: &FlagValues) -> Result<(FlagSweep, FlagValues)> {
    let lists: Vec<&str> = op
        .flags()
        .iter()
        .map(|f| f.name)
        .filter(|n| flags.get(n).is_some_and(is_list))
        .collect();
    if let [first, second, ..] = lists.as_slice() {
        bail!("--{first} and --{second} are both lists: a sweep varies one flag at a time");
    }
    let mut swept: FlagSweep = None;
    for f in op.flags() {
        let Some(v) = flags.get(f.name).filter(|v| is_list(v)) else {
            continue;
        };
        let values = sweep::parse_sizes(v).with_context(|| format!("--{} {v}", f.name))?;
        for x in &values {
            let mut one = flags.clone();
            one.set(f.name, x.to_string());
            let names: Vec<&str> = op.flags().iter().map(|f| f.name).collect();
            op.params(&one.only(&names))
                .with_context(|| format!("--{} {v}", f.name))?;
        }
        swept = Some((f.name, values));
    }
    let others = match &swept {
        Some((name, _)) => flags.only(&flags.names().filter(|n| n != name).collect::<Vec<_>>()),
        None => flags.clone(),
    };
    Ok((swept, others))
}

pub(super) fn run(a: SweepArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    let op: Op = a.op.parse()?;
    let (flag_sweep, flags) = swept_flag(op, flags)?;
    let flags = &flags;
    if let Some((name, _)) = &flag_sweep {
        let ranged = [&a.rows, &a.cols].into_iter().flatten().any(|v| is_list(v));
        if ranged || a.numel.is_some() || a.square.is_some() || a.max_elements.is_some() {
            bail!(
                "--{name} is swept: a sweep varies one thing at a time, so give one shape \
                 (--rows R --cols C) or none (the op's bench shape)"
            );
        }
    }
    check_distinct_outputs(&[
        ("--plot", a.plot.as_deref()),
        ("--json", a.run.json.as_deref()),
        ("--csv", a.run.csv.as_deref()),
    ])?;
    check_output_path("--plot", a.plot.as_deref())?;
    if let Some(p) = &a.plot {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !ext.eq_ignore_ascii_case("svg") && !ext.eq_ignore_ascii_case("png") {
            bail!("--plot {}: the file must end in .svg or .png", p.display());
        }
    }
    // Parse the sizes before opening the device: a typo fails at once.
    for spec in [&a.rows, &a.cols, &a.numel].into_iter().flatten() {
        sweep::parse_sizes(spec)?;
    }
    if (op.grammar() == Grammar::Gemm)
        && (a.rows.is_some() || a.cols.is_some() || a.numel.is_some())
    {
        bail!("{op} sweeps square sizes M = N = K: use --square (e.g. --square 1024..16384)");
    }
    if !(op.grammar() == Grammar::Gemm) && a.square.is_some() {
        bail!("--square is for matmul and linear; {op} sweeps --rows/--cols or --numel");
    }
    let (mut cfg, dev, line) = config(&a.run, flags, vec![op], Vec::new())?;
    let plan = if let Some((name, values)) = &flag_sweep {
        // One shape: the one given, else the op's bench shape.
        let shape = match (&a.rows, &a.cols) {
            (Some(r), Some(c)) => vec![sweep::parse_sizes(r)?[0], sweep::parse_sizes(c)?[0]],
            (None, None) => op.default_shape(dev.kind()),
            _ => bail!("with a flag swept, give the shape as both --rows and --cols (or neither: the op's bench shape)"),
        };
        let figure = if op.flops_bound() {
            sweep::Figure::Ms
        } else {
            sweep::Figure::Gbps
        };
        sweep::SweepPlan::flag(name, values, shape, figure)
    } else if op.grammar() == Grammar::Gemm {
        sweep::plan_square(op, dev.kind(), a.square.as_deref())?
    } else {
        sweep::plan_for(
            op,
            dev.kind(),
            a.rows.as_deref(),
            a.cols.as_deref(),
            a.numel.as_deref(),
        )?
    };
    let mut plan = plan;
    // A model's scaling is its time (linear in steps and layers), not a rate.
    if op.grammar() == Grammar::Batch {
        plan.figure = sweep::Figure::Ms;
    }
    cfg.flag_sweep = flag_sweep.clone();
    if let Some(cap) = &a.max_elements {
        let sizes = sweep::parse_sizes(cap).with_context(|| format!("--max-elements {cap}"))?;
        let &[cap] = sizes.as_slice() else {
            bail!("--max-elements takes one number (such as 2^28), not a list or range: {cap}");
        };
        if (op.grammar() == Grammar::Gemm) || a.numel.is_some() {
            bail!("--max-elements applies to --rows/--cols sweeps");
        }
        sweep::cap_elements(&mut plan, cap);
        // cap_elements keeps at least one row: say where one row is already past the cap.
        let over: Vec<String> = plan
            .shapes
            .iter()
            .filter(|s| s.iter().product::<usize>() > cap)
            .map(|s| crate::runtime::tensor::shape_str(s))
            .collect();
        if !over.is_empty() {
            stderr_line!(
                "note: one row is more than --max-elements {cap} at {}: those run a single row",
                over.join(", ")
            );
        }
    }
    cfg.shapes = plan.shapes.clone();
    stderr_line!("{line}");
    let bar = progress_bar("points");
    start_run(&a.run, &[a.plot.as_deref()])?;
    let mut partial = PartialCsv::new(a.run.csv.as_deref());
    let report = bench::run(&cfg, &dev, &mut |e| match e {
        bench::Event::Note(m) => bar.set_message(m.to_string()),
        bench::Event::Point(so_far) => bar.suspend(|| partial.write(so_far)),
        bench::Event::Step { done, total } => {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    });
    bar.finish_and_clear();
    let report = report?;
    let dtypes = cfg
        .dtypes
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let title = match &flag_sweep {
        // The parameters of the first and the last point, which differ in the swept flag.
        Some((name, _)) => {
            let points = cfg.points(dev.kind())?;
            let form =
                |p: Option<&bench::Point>| p.map(|p| p.params.form_suffix()).unwrap_or_default();
            format!(
                "{op} {dtypes} on {}, --{name} swept:{} …{}",
                report.device.description,
                form(points.first()),
                form(points.last())
            )
        }
        None => format!(
            "{op}{} {dtypes} on {}",
            cfg.params(op)?.form_suffix(),
            report.device.description
        ),
    };
    // The files first, so that a reader that stops early (`| head`) does not lose them; the
    // table shown even when a file cannot be written.
    #[derive(serde::Serialize)]
    struct SweepJson<'a> {
        sweep: &'a sweep::Axis,
        x_label: String,
        #[serde(flatten)]
        report: &'a bench::BenchReport,
    }
    let files = write_outputs(
        &a.run,
        || {
            Ok(serde_json::to_string_pretty(&SweepJson {
                sweep: &plan.axis,
                x_label: plan.axis.label(),
                report: &report,
            })?)
        },
        &report.to_csv(),
    )
    .and_then(|()| {
        if let Some(path) = &a.plot {
            let spec = sweep::plot_spec(&report, &plan, &title);
            bench::plot::render(&spec, path)?;
            stderr_line!("wrote {}", path.display());
        }
        Ok(())
    });
    let shown = (|| -> Result<()> {
        writeln!(out, "{}", report.header())?;
        writeln!(
            out,
            "\n{title}: {} against {}\n{}",
            plan.figure.metric(),
            plan.axis.label(),
            sweep::table(&report, &plan)
        )?;
        write_notes(&report, out)
    })();
    files?;
    shown?;
    check_interrupted(&report)?;
    if let Some(why) = report.failure_summary() {
        bail!("{why}; they were not timed (every note is above)");
    }
    if !report.any_timed() {
        bail!("nothing was timed: every variant refused every point (see the notes above)");
    }
    Ok(())
}
