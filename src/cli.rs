//! The `kernlab` command line, as a library module so tests can drive it: `kernlab::cli::run`
//! parses arguments and writes its report to the writer it is given; progress goes to stderr.

use crate::bench::{self, harness::TimingOpts, BenchConfig};
use crate::device::{self, nvrtc, Device, DeviceSpec};
use crate::ops::{GeluApprox, Op, Params};
use crate::registry;
use crate::tensor::parse_shape;
use crate::DType;
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};
use std::io::Write;

#[derive(Parser)]
#[command(
    name = "kernlab",
    version,
    about = "A laboratory for GPU kernels: GeLU and softmax in every tier, validated against f64, then timed",
    long_about = "kernlab runs every variant of an op — the lecture's manual composition of primitive \
kernels, numbered hand-written CUDA versions, fused CPU loops — validates each against an f64 \
reference on fresh random inputs, and only then times it, against the copy bandwidth measured on \
the same device in the same run. Without a GPU it runs on the CPU."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Validate, then time, every variant of an op (both ops when none is named)
    Bench(BenchArgs),
    /// List every registered variant: op, variant, tier, device, dtypes, summary
    List {
        /// Print JSON instead of a table
        #[arg(long)]
        json: bool,
        /// Only this op
        #[arg(long)]
        op: Option<String>,
    },
    /// Show the device, the CUDA libraries that load, and the kernel cache
    Doctor {
        #[arg(long, default_value = "auto")]
        device: String,
    },
}

#[derive(Args)]
struct BenchArgs {
    /// gelu, softmax or all
    #[arg(default_value = "all")]
    op: String,
    /// Tensor shape, e.g. 16384x16384 (softmax runs over the last dimension).
    /// Default: the lecture's sizes on a GPU, smaller ones on the CPU
    #[arg(long)]
    shape: Option<String>,
    /// Comma-separated dtypes: f32, bf16, f16, or all
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// auto (a CUDA GPU if there is one, else the CPU), cpu, cuda or cuda:N
    #[arg(long, default_value = "auto")]
    device: String,
    /// Comma-separated variant names (see `kernlab list`); default: all but the reference
    #[arg(long)]
    variants: Option<String>,
    /// GeLU form: tanh (PyTorch's approximate="tanh") or erf (exact)
    #[arg(long, default_value = "tanh")]
    gelu: String,
    /// Write every record as JSON to this path
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Seed for the random inputs (default: a fresh one each run, printed)
    #[arg(long)]
    seed: Option<u64>,
    /// Row stride in elements for the input (softmax on strided rows); default: contiguous
    #[arg(long)]
    row_stride: Option<usize>,
    /// Warm-up duration per variant, ms
    #[arg(long, default_value_t = 25.0)]
    warmup_ms: f64,
    /// Measurement duration per variant, ms
    #[arg(long, default_value_t = 100.0)]
    rep_ms: f64,
    /// Do not flush the cache before each timed call
    #[arg(long)]
    no_flush: bool,
}

fn parse_dtypes(s: &str) -> Result<Vec<DType>> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(DType::ALL.to_vec());
    }
    s.split(',')
        .map(|d| d.trim().parse::<DType>().map_err(anyhow::Error::msg))
        .collect()
}

fn parse_ops(s: &str) -> Result<Vec<Op>> {
    if s.eq_ignore_ascii_case("all") {
        return Ok(Op::ALL.to_vec());
    }
    s.split(',').map(|o| Ok(o.trim().parse::<Op>()?)).collect()
}

fn cmd_bench(a: BenchArgs, out: &mut dyn Write) -> Result<()> {
    let ops = parse_ops(&a.op)?;
    let dtypes = parse_dtypes(&a.dtype)?;
    let shape = a.shape.as_deref().map(parse_shape).transpose()?;
    let spec: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    let gelu: GeluApprox = a.gelu.parse().map_err(anyhow::Error::msg)?;
    if a.warmup_ms < 0.0 || a.rep_ms <= 0.0 {
        bail!("--warmup-ms must be ≥ 0 and --rep-ms > 0");
    }
    let (dev, line) = Device::open(spec)?;
    eprintln!("{line}");
    let variants = a.variants.as_deref().map(|v| {
        v.split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
    });
    // Unknown variant names are an error before any work starts.
    if let Some(names) = &variants {
        for op in &ops {
            for n in names {
                registry::find(*op, n, dev.kind())?;
            }
        }
    }
    let cfg = BenchConfig {
        ops,
        shape,
        dtypes,
        variants,
        params: Params { gelu },
        seed: a.seed,
        timing: TimingOpts {
            warmup_ms: a.warmup_ms,
            rep_ms: a.rep_ms,
            flush: !a.no_flush,
            ..TimingOpts::default()
        },
        row_stride: a.row_stride,
    };
    let report = bench::run(&cfg, &dev, &mut |m| eprintln!("  … {m}"))?;
    writeln!(out, "{}", report.header())?;
    for (title, table) in report.tables() {
        writeln!(out, "\n{title}\n{table}")?;
    }
    let problems = report.problems();
    if !problems.is_empty() {
        writeln!(out)?;
        for p in &problems {
            writeln!(out, "note: {p}")?;
        }
    }
    if let Some(path) = &a.json {
        let json = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if report.any_failed() {
        bail!("some variants FAILED validation or raised errors (see the notes above); they were not timed");
    }
    Ok(())
}

fn cmd_list(json: bool, op: Option<String>, out: &mut dyn Write) -> Result<()> {
    let op = op.map(|o| o.parse::<Op>()).transpose()?;
    let rows: Vec<_> = registry::VARIANTS
        .iter()
        .filter(|v| op.is_none_or(|o| v.op == o))
        .map(|v| v.info())
        .collect();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&rows)?)?;
        return Ok(());
    }
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec!["op", "variant", "tier", "device", "dtypes", "summary"]);
    for r in rows {
        t.add_row(vec![
            r.op.to_string(),
            r.variant.to_string(),
            r.tier.to_string(),
            r.device.to_string(),
            r.dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(","),
            r.summary.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    Ok(())
}

fn cmd_doctor(device: &str, out: &mut dyn Write) -> Result<()> {
    let spec: DeviceSpec = device.parse().map_err(anyhow::Error::msg)?;
    writeln!(out, "kernlab {}", env!("CARGO_PKG_VERSION"))?;
    let driver = match device::cuda_probe() {
        Ok(n) => format!("loaded, {n} device(s)"),
        Err(why) => why,
    };
    writeln!(out, "CUDA driver: {driver}")?;
    let nv = match nvrtc::nvrtc_version() {
        Ok((a, b)) => format!("{a}.{b}"),
        Err(e) => e.to_string(),
    };
    writeln!(out, "NVRTC: {nv}")?;
    for (name, present) in [
        ("cuBLAS", unsafe { cudarc::cublas::sys::is_culib_present() }),
        ("cuBLASLt", unsafe {
            cudarc::cublaslt::sys::is_culib_present()
        }),
        ("CUPTI", unsafe { cudarc::cupti::sys::is_culib_present() }),
    ] {
        writeln!(
            out,
            "{name}: {}",
            if present { "loads" } else { "not found" }
        )?;
    }
    match nvrtc::cache_dir() {
        Some(d) => {
            let (files, bytes) = std::fs::read_dir(&d)
                .map(|it| {
                    it.filter_map(|e| e.ok()?.metadata().ok())
                        .fold((0usize, 0u64), |(n, b), m| (n + 1, b + m.len()))
                })
                .unwrap_or((0, 0));
            writeln!(
                out,
                "kernel cache: {} ({files} entries, {:.1} MB)",
                d.display(),
                bytes as f64 / 1e6
            )?;
        }
        None => writeln!(out, "kernel cache: off")?,
    }
    let (dev, line) = Device::open(spec)?;
    writeln!(out, "{line}")?;
    if let Some(d) = dev.cuda() {
        let p = &d.props;
        writeln!(
            out,
            "  {} · compute capability {}.{} ({}) · {} SMs · L2 {} MiB · {:.1} GiB · SM clock {} MHz · memory clock {} MHz, {}-bit · driver {}",
            p.name,
            p.compute_capability.0,
            p.compute_capability.1,
            d.arch,
            p.sm_count,
            p.l2_bytes >> 20,
            p.total_mem as f64 / (1u64 << 30) as f64,
            p.sm_clock_khz / 1000,
            p.mem_clock_khz / 1000,
            p.mem_bus_bits,
            p.driver_version
        )?;
    } else {
        writeln!(
            out,
            "  {} threads · last-level cache {} MiB",
            rayon::current_num_threads(),
            bench::harness::cpu_llc_bytes() >> 20
        )?;
    }
    Ok(())
}

/// Parse `args` (the first is the program name) and run the command, writing its report to
/// `out`. Errors come back to the caller (the binary prints them and exits 1).
pub fn run<I, T>(args: I, out: &mut dyn Write) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = Cli::try_parse_from(args)?;
    match cli.cmd {
        Cmd::Bench(a) => cmd_bench(a, out),
        Cmd::List { json, op } => cmd_list(json, op, out),
        Cmd::Doctor { device } => cmd_doctor(&device, out),
    }
}
