//! `kernlab bench`: validate, then time, every variant of the ops named, at their shapes.

use super::run_args::{
    check_interrupted, config, start_run, write_notes, write_outputs, PartialCsv, RunArgs,
};
use super::{parse_ops, parse_shapes};
use crate::ops::{FlagValues, Grammar, Op};
use crate::tools::bench;
use anyhow::{bail, Result};
use clap::Args;
use std::io::Write;

#[derive(Args)]
pub(super) struct BenchArgs {
    /// An op (gelu, softmax, matmul, linear, rmsnorm: `kernlab list`), a comma list of them,
    /// or all
    #[arg(default_value = "all")]
    op: String,
    /// Tensor shape, e.g. 16384x16384 (row ops run over the last dimension), or M×N×K for
    /// matmul and linear (8192x8192x8192: a [M,K] · w[N,K]ᵀ); repeat the flag for several
    /// shapes. Default: the lecture's sizes on a GPU, smaller ones on the CPU
    #[arg(long, allow_hyphen_values = true)]
    shape: Vec<String>,
    /// Row stride in elements for the input (row ops on strided rows); default: contiguous
    #[arg(long, allow_negative_numbers = true)]
    row_stride: Option<usize>,
    /// Validate every variant and time nothing: each is called twice on the same inputs, each
    /// call into a fresh NaN-poisoned output checked against the f64 reference (the second
    /// catches state a call leaves behind); no ceilings, no timed calls. Exits non-zero if any
    /// variant fails. Quick, and what tools/sanitize.sh runs under compute-sanitizer
    #[arg(long, conflicts_with_all = ["torch", "graph", "repeat", "fresh_ceilings"])]
    check_only: bool,
    #[command(flatten)]
    run: RunArgs,
}

pub(super) fn run(a: BenchArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    let ops = parse_ops(&a.op)?;
    let shapes = parse_shapes(&a.shape)?;
    let (mut cfg, dev, line) = config(&a.run, flags, ops, shapes)?;
    cfg.row_stride = a.row_stride;
    cfg.check_only = a.check_only;
    // A row stride is for rows (softmax's, and GeLU's reference): the ops of other grammars
    // (GEMMs, the MLP) that `all` brought in are left out, and one named with it is an error
    // before any work starts.
    let strideless = |ops: &[Op]| -> Vec<String> {
        ops.iter()
            .filter(|o| o.grammar() != Grammar::Rows)
            .map(|o| o.to_string())
            .collect()
    };
    let gemm_names = |ops: &[Op]| -> Vec<String> {
        ops.iter()
            .filter(|o| o.grammar() == Grammar::Gemm)
            .map(|o| o.to_string())
            .collect()
    };
    if let Some(ld) = cfg.row_stride {
        let gemms = strideless(&cfg.ops);
        // Left out only where `all` alone brought them in: one named beside it is refused.
        let names = || a.op.split(',').map(str::trim);
        let named_all = names().any(|o| o.eq_ignore_ascii_case("all"))
            && !names().any(|o| {
                o.parse::<Op>()
                    .is_ok_and(|op| op.grammar() != Grammar::Rows)
            });
        let leave_out = named_all && gemms.len() < cfg.ops.len();
        if !gemms.is_empty() && !leave_out {
            bail!(
                "--row-stride {ld} applies to rows (softmax's; of GeLU's variants only `reference` takes them), not to {}",
                gemms.join(" or ")
            );
        }
        if !gemms.is_empty() {
            cfg.ops.retain(|o| o.grammar() == Grammar::Rows);
            stderr_line!(
                "  … {} left out: --row-stride applies to softmax and GeLU rows",
                gemms.join(" and ")
            );
        }
    }
    stderr_line!("{line}");
    // With several ops, a GEMM runs only the M×N×K shapes among --shape: say so when none is.
    if cfg.ops.len() > 1 && !cfg.shapes.is_empty() && cfg.shapes.iter().all(|s| s.len() != 3) {
        let gemms = gemm_names(&cfg.ops);
        if !gemms.is_empty() {
            stderr_line!(
                "  … {} left out: they take M×N×K shapes (e.g. --shape 1024x1024x1024)",
                gemms.join(" and ")
            );
        }
    }
    start_run(&a.run, &[])?;
    let mut partial = PartialCsv::new(a.run.csv.as_deref());
    let report = bench::run(&cfg, &dev, &mut |e| match e {
        bench::Event::Note(m) => stderr_line!("  … {m}"),
        bench::Event::Point(so_far) => partial.write(so_far),
        bench::Event::Step { .. } => {}
    })?;
    // The files first, so that a reader that stops early (`| head`) does not lose them; the
    // tables shown even when a file cannot be written.
    let files = write_outputs(
        &a.run,
        || Ok(serde_json::to_string_pretty(&report)?),
        &report.to_csv(),
    );
    let shown = (|| -> Result<()> {
        writeln!(out, "{}", report.header())?;
        for (title, table) in report.tables() {
            writeln!(out, "\n{title}\n{table}")?;
        }
        write_notes(&report, out)
    })();
    files?;
    shown?;
    check_interrupted(&report)?;
    if a.check_only {
        let checked = report.records.iter().filter(|r| r.validated).count();
        let refused = report
            .records
            .iter()
            .filter(|r| r.status == bench::Status::Unsupported)
            .count();
        if let Some(why) = report.failure_summary() {
            bail!("{why} (every note is above)");
        }
        if checked == 0 {
            bail!("nothing was checked: every variant refused its input (see the notes above)");
        }
        writeln!(
            out,
            "\nchecked: {checked} (variant, dtype, shape) cases passed twice{}",
            if refused > 0 {
                format!("; {refused} refused their input (see the notes)")
            } else {
                String::new()
            }
        )?;
        return Ok(());
    }
    if let Some(why) = report.failure_summary() {
        bail!("{why}; they were not timed (every note is above)");
    }
    if !report.any_timed() {
        bail!("nothing was timed: every variant refused its input (see the notes above)");
    }
    Ok(())
}
