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
    /// or all; or `collectives` (the flags under "bench collectives")
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
    coll: CollectiveArgs,
    #[command(flatten)]
    run: RunArgs,
}

/// `kernlab bench collectives`: all-reduce, reduce-scatter and all-gather over the GPUs here,
/// through NCCL (docs/parallel.md).
#[derive(Args)]
#[command(next_help_heading = "bench collectives")]
struct CollectiveArgs {
    /// Ranks: GPUs through NCCL (default: every GPU here), or threads with --backend cpu
    /// (default 2)
    #[arg(long, value_name = "N")]
    ranks: Option<usize>,
    /// Sizes in bytes, each the collective's larger buffer as nccl-tests counts it: a comma
    /// list and ranges (A..B:xF, 2^10..2^30:x4)
    #[arg(long, value_name = "SPEC", default_value = "2^10..2^30:x4")]
    bytes: String,
    /// Comma list of all-reduce, reduce-scatter, all-gather, broadcast
    #[arg(long, default_value = "all-reduce,reduce-scatter,all-gather")]
    collectives: String,
    /// nccl (one rank a GPU), or cpu: the test backend, threads exchanging through memory,
    /// whose times are no link's
    #[arg(long, default_value = "nccl")]
    backend: String,
    /// Timed calls a size, on every rank (fixed, as every rank must make the same calls)
    #[arg(long, default_value_t = 20)]
    iters: usize,
    /// Untimed calls before them
    #[arg(long, default_value_t = 5)]
    warmup_calls: usize,
    /// Plot bus bandwidth against size to this .svg or .png (a line a collective and dtype)
    #[arg(long, value_name = "PATH")]
    plot: Option<std::path::PathBuf>,
}

fn collectives(a: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    use crate::runtime::comm::Collective;
    use crate::tools::collectives::{self as coll, Backend, Plan};
    let r = &a.run;
    let unused = [
        ("--shape", !a.shape.is_empty()),
        ("--row-stride", a.row_stride.is_some()),
        ("--check-only", a.check_only),
        ("--variants", r.variants.is_some()),
        ("--graph", r.graph.is_some()),
        ("--torch", r.torch.is_some()),
        ("--csv", r.csv.is_some()),
    ];
    if let Some((flag, _)) = unused.iter().find(|(_, on)| *on) {
        bail!("bench collectives takes no {flag} (its own flags: kernlab bench --help, \"bench collectives\")");
    }
    let c = &a.coll;
    if let Some(p) = &c.plot {
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !ext.eq_ignore_ascii_case("svg") && !ext.eq_ignore_ascii_case("png") {
            bail!("--plot {}: the file must end in .svg or .png", p.display());
        }
    }
    let backend = match c.backend.as_str() {
        "nccl" => Backend::Nccl,
        "cpu" => Backend::Cpu,
        other => bail!("--backend {other}: nccl or cpu"),
    };
    // NCCL runs one rank a GPU: the GPUs here bound the ranks, and are the default.
    let gpus = match backend {
        Backend::Cpu => None,
        Backend::Nccl => Some(crate::runtime::device::cuda_probe().map_err(|why| {
            anyhow::anyhow!(
                "bench collectives runs over NCCL on this machine's GPUs, and there is none \
                 ({why}); --backend cpu runs the test backend"
            )
        })?),
    };
    let ranks = match (c.ranks, gpus) {
        (Some(0), _) => bail!("--ranks takes a whole number ≥ 1"),
        (Some(n), Some(g)) if n > g => {
            bail!("--ranks {n}: this machine has {g} GPU(s), and NCCL runs one rank a GPU")
        }
        (Some(n), _) => n,
        (None, Some(g)) => g,
        (None, None) => 2,
    };
    let collectives = c
        .collectives
        .split(',')
        .map(|name| {
            let name = name.trim();
            Collective::ALL
                .into_iter()
                .find(|k| k.name() == name)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown collective '{name}' (known: all-reduce, reduce-scatter, all-gather, broadcast)"
                    )
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let bytes = crate::tools::sweep::parse_sizes(&c.bytes)?;
    if c.iters == 0 {
        bail!("--iters takes a whole number ≥ 1");
    }
    let dtypes = super::parse_dtypes(&r.dtype)?;
    let plan = Plan {
        backend,
        ranks,
        collectives: collectives.clone(),
        bytes: bytes.clone(),
        dtypes: dtypes.clone(),
        warmup: c.warmup_calls,
        iters: c.iters,
    };
    stderr_line!(
        "  … {} over {ranks} rank(s) of {}, {}: {} size(s), validated then timed",
        collectives
            .iter()
            .map(|k| k.name())
            .collect::<Vec<_>>()
            .join(", "),
        backend.name(),
        dtypes
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        bytes.len()
    );
    // One group for the whole run: NCCL's set-up is paid once, whatever the dtypes.
    let rows = coll::run(&plan)?;
    let mut all = vec![];
    for dtype in dtypes {
        let rows: Vec<_> = rows.iter().filter(|r| r.dtype == dtype).cloned().collect();
        writeln!(
            out,
            "\n{} over {ranks} rank(s), {dtype}; {} timed calls a size on every rank (after {} \
             untimed); busbw = algbw × nccl-tests' factor (docs/parallel.md){}",
            backend.name(),
            c.iters,
            c.warmup_calls,
            if backend == Backend::Cpu {
                "; the cpu backend is a test backend: no link is timed"
            } else {
                ""
            }
        )?;
        writeln!(out, "{}", coll::table(&rows))?;
        all.push((dtype.to_string(), rows));
    }
    if let Some(path) = &r.json {
        std::fs::write(path, serde_json::to_string_pretty(&all)?)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    if let Some(path) = &c.plot {
        crate::tools::bench::plot::render(&coll::plot_spec(&all, backend, ranks), path)?;
        stderr_line!("wrote {}", path.display());
    }
    Ok(())
}

pub(super) fn run(a: BenchArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    if a.op.trim() == "collectives" {
        return collectives(&a, out);
    }
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
