//! `kernlab autotune`: measure every configuration of an op's tunable versions and keep the
//! winners in the tuning cache.

use super::{
    check_durations, check_op_flags, check_output_path, parse_dtypes, parse_shapes, progress_bar,
    write_file,
};
use crate::ops::{FlagValues, Grammar, Op};
use crate::runtime::device::{Device, DeviceKind, DeviceSpec};
use crate::runtime::tensor::shape_str;
use crate::tools::bench::harness::TimingOpts;
use crate::tools::tune;
use anyhow::{bail, Result};
use clap::Args;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::io::Write;
use std::path::PathBuf;

/// `autotune --help`'s closing text: examples, then what each op searches and among which of
/// its variants (from the ops' descriptors, so it names what the registry has).
pub(super) fn after_help() -> String {
    let mut s = String::from(
        "Examples:\n  kernlab autotune matmul --shape 8192x8192x8192 --dtype bf16\n  kernlab autotune linear --shape 4096x4096x1024 --variants v5_mma,v6_wgmma\n  kernlab autotune softmax --shape 4096x1280 --dtype f32\n  kernlab autotune rmsnorm --shape 4096x4096 --dtype bf16\n\nWhat each op searches:\n",
    );
    for op in Op::all() {
        if let Some(t) = op.tuning() {
            s.push_str(&format!(
                "  {op}: {} ({}; default dtype {})\n",
                t.what,
                t.versions.join(", "),
                t.default_dtype
            ));
        }
    }
    s.push_str(
        "Entries are keyed by device, op, variant, dtype and shape bucket (each size rounded up \
         to a power of two), kept in autotune.json in kernlab's cache folder (~/.cache/kernlab, or \
         $KERNLAB_CACHE_DIR), written atomically.",
    );
    s
}

#[derive(Args)]
pub(super) struct AutotuneArgs {
    /// An op with something to tune: matmul, linear, softmax or rmsnorm
    op: String,
    /// The shape to tune on, in the op's grammar (M×N×K for matmul/linear, ROWSxCOLS for
    /// the row ops; default: the op's bench shape on a GPU); repeat for several
    #[arg(long, allow_hyphen_values = true)]
    shape: Vec<String>,
    /// f32, bf16 or f16 (default: the op's, bf16 for matmul, linear and rmsnorm, f32 for softmax); comma
    /// list
    #[arg(long)]
    dtype: Option<String>,
    /// Only these versions (comma list)
    #[arg(long)]
    variants: Option<String>,
    /// cuda or cuda:N
    #[arg(long, default_value = "auto")]
    device: String,
    /// Warm-up duration per candidate, ms
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    warmup_ms: f64,
    /// Measurement duration per candidate, ms
    #[arg(long, default_value_t = 50.0, allow_negative_numbers = true)]
    rep_ms: f64,
    /// Cycle through N copies of the inputs and outputs, call by call; `auto` (the default):
    /// as many as make them 4× the L2 (at most 1024), so that no timed call finds its input
    /// still in L2, as `kernlab bench --rotate auto` times (the L2 is also flushed before
    /// each call)
    #[arg(
        long,
        value_name = "N|auto",
        default_value = "auto",
        allow_hyphen_values = true
    )]
    rotate: crate::tools::bench::harness::Rotate,
    /// Measure, show, but do not write the cache
    #[arg(long)]
    dry_run: bool,
    /// Write every trial as JSON to this path
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
}

pub(super) fn run(a: AutotuneArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    check_output_path("--json", a.json.as_deref())?;
    let op: Op = a.op.parse()?;
    let Some(tuning) = op.tuning() else {
        let tunable: Vec<&str> = Op::all()
            .iter()
            .filter(|o| o.tuning().is_some())
            .map(|o| o.name())
            .collect();
        bail!(
            "{op} has nothing to tune: autotune takes {}",
            tunable.join(", ")
        );
    };
    check_op_flags(&[op], "tune", flags)?;
    let params = op.params(flags)?;
    let dtypes = match a.dtype.as_deref() {
        Some(d) => parse_dtypes(d)?,
        None => vec![tuning.default_dtype],
    };
    let shapes = if a.shape.is_empty() {
        vec![op.default_shape(DeviceKind::Cuda)]
    } else {
        parse_shapes(&a.shape)?
    };
    for s in &shapes {
        if !op.grammar().fits(s) {
            bail!(
                "{op} tunes on shapes {}, not {}",
                op.grammar().spelling(),
                shape_str(s)
            );
        }
    }
    check_durations(a.warmup_ms, a.rep_ms)?;
    let spec: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    let (dev, line) = Device::open(spec)?;
    let Some(d) = dev.cuda().cloned() else {
        bail!("autotune measures CUDA kernels and needs a GPU; this machine has none (the CPU variants have nothing to tune)");
    };
    stderr_line!("{line}");
    let only: Option<Vec<String>> = a.variants.as_deref().map(|v| {
        v.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    });
    let timing = TimingOpts {
        warmup_ms: a.warmup_ms,
        rep_ms: a.rep_ms,
        rotate: a.rotate,
        ..TimingOpts::default()
    };
    let cache = if a.dry_run {
        None
    } else {
        crate::runtime::tuning::cache_path()
    };
    let mut reports = Vec::new();
    let mut shown: Result<()> = Ok(());
    for shape in &shapes {
        for &dt in &dtypes {
            let candidates = (tuning.candidates)(&d, dt, only.as_deref())?;
            let bar = progress_bar("candidates");
            let r = tune::tune(
                &d,
                op,
                dt,
                shape,
                &params,
                candidates,
                &timing,
                cache.as_deref(),
                &mut |done, total, what| {
                    bar.set_length(total as u64);
                    bar.set_position(done as u64);
                    bar.set_message(what.to_string());
                },
            );
            bar.finish_and_clear();
            let r = r?;
            // A reader of stdout that stopped early stops the reports, not the tuning (each
            // choice goes to the cache) nor the JSON file.
            if shown.is_ok() {
                shown = write_tune_report(&r, out);
            }
            reports.push(r);
        }
    }
    if let Some(path) = &a.json {
        write_file(path, &serde_json::to_string_pretty(&reports)?)?;
    }
    shown
}

fn write_tune_report(r: &tune::TuneReport, out: &mut dyn Write) -> Result<()> {
    let gemm = r.op.grammar() == Grammar::Gemm;
    writeln!(
        out,
        "\nautotune {} {} {} (bucket {}) on {}; timed flushed, {}",
        r.op,
        r.dtype,
        shape_str(&r.shape),
        r.bucket,
        r.device,
        match r.rotate_copies {
            1 => "one copy of the buffers".to_string(),
            n => format!("cycling through {n} copies of the buffers"),
        }
    )?;
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "variant",
        "config",
        "ms (median)",
        if gemm { "TFLOP/s" } else { "GB/s" },
        "max rel err",
        "note",
    ]);
    let mut trials: Vec<_> = r.trials.iter().collect();
    trials.sort_by(|a, b| {
        a.median_ms
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.median_ms.unwrap_or(f64::INFINITY))
    });
    for tr in trials {
        let fmt =
            |v: Option<f64>, p: usize| v.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "—".into());
        t.add_row(vec![
            tr.variant.clone(),
            tr.config.clone(),
            fmt(tr.median_ms, 4),
            if gemm {
                fmt(tr.tflops, 1)
            } else {
                fmt(tr.gbps, 0)
            },
            tr.max_rel_err
                .map(|e| format!("{e:.1e}"))
                .unwrap_or_else(|| "—".into()),
            tr.note.clone().unwrap_or_default(),
        ]);
    }
    writeln!(out, "{t}")?;
    for (k, e) in &r.stored {
        writeln!(
            out,
            "{} {}: {} {} ({:.4} ms)",
            match &r.cache {
                Some(_) => "cached",
                None => "would cache (dry run)",
            },
            k.rsplit(" | ").nth(2).unwrap_or(k),
            e.variant,
            e.config,
            e.median_ms
        )?;
    }
    if let Some(p) = &r.cache {
        writeln!(out, "autotune cache: {}", p.display())?;
    }
    Ok(())
}
