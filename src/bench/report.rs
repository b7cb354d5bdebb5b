//! Bench results: one record per (op, variant, dtype), a table for people and JSON for tools.
//! Every derived figure (GB/s, % of copy, TFLOP/s, speedup) is computed from the measured
//! time and the counted bytes/FLOPs, never typed in.

use super::ceiling::{fmt_flops, matmul_for, Ceilings, CopyCeiling, MatmulCeiling, Provenance};
use super::harness::{within_noise, Measurement, TimingOpts};
use crate::device::{Device, DeviceKind};
use crate::dtype::DType;
use crate::ops::{Op, Params, Tier};
use crate::registry::Variant;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Color, Table};
use serde::{Serialize, Serializer};
use std::fmt;

/// The tier a record comes from: one of kernlab's own, or the PyTorch baselines
/// (`baselines/torch_baselines.py`: eager PyTorch, torch.compile and the lecture's Triton).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordTier {
    Kernlab(Tier),
    Torch,
}

impl fmt::Display for RecordTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordTier::Kernlab(t) => t.fmt(f),
            RecordTier::Torch => f.write_str("torch"),
        }
    }
}

impl Serialize for RecordTier {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl From<Tier> for RecordTier {
    fn from(t: Tier) -> Self {
        RecordTier::Kernlab(t)
    }
}

/// GB/s with the digits that matter: `2841`, `45.3`, `0.82`.
pub fn fmt_gbps(g: f64) -> String {
    if g >= 100.0 {
        format!("{g:.0}")
    } else if g >= 10.0 {
        format!("{g:.1}")
    } else {
        format!("{g:.2}")
    }
}

/// A figure to three significant digits, trailing zeros dropped (`2841`, `45.3`, `0.82`,
/// `0.000524`; `1e-300` and `1.5e10` outside 1e-4 to 1e7), for labels and headers where a
/// fixed number of decimals would print small values as 0; `0`, `inf` and `NaN` as Rust prints
/// them.
pub fn fmt_sig(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        return format!("{v}");
    }
    if !(1e-4..1e7).contains(&a) {
        // 1.5e-300, 1e10: three significant digits, trailing zeros dropped from the mantissa.
        let s = format!("{v:.2e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        return format!("{m}e{e}");
    }
    if a >= 100.0 {
        return format!("{v:.0}");
    }
    let decimals = (2 - a.log10().floor() as i64).clamp(0, 17) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

pub use crate::tensor::shape_str;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Validated, then timed.
    Ok,
    /// Ran, but its output disagreed with the reference: not timed.
    Failed,
    /// Does not handle this dtype or shape (the note says why): not run.
    Unsupported,
    /// Raised an error (the note holds it).
    Error,
}

#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub op: Op,
    pub variant: String,
    pub tier: RecordTier,
    pub device: DeviceKind,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub params: Params,
    pub seed: u64,
    pub status: Status,
    pub validated: bool,
    pub max_rel_err: Option<f64>,
    pub rel_l2: Option<f64>,
    pub median_ms: Option<f64>,
    pub p20_ms: Option<f64>,
    pub p80_ms: Option<f64>,
    pub min_ms: Option<f64>,
    /// PyTorch's records (calls under 1 ms): the median of do_bench's loop with every launch
    /// queued ahead of the GPU, the call's GPU time with no host time in it (`host_check` in
    /// the baselines script); None elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_ms: Option<f64>,
    /// GPU calls under 1 ms, kernlab's and PyTorch's alike: the median of the settled form
    /// (`CudaTimer::settled`, `settled_check` in the baselines script: the stream parked behind
    /// each flush until it has finished, then the events and the call freed as one batch), the
    /// call's time with the host's pace out of it; None elsewhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_ms: Option<f64>,
    pub calls: Option<usize>,
    /// With `--rotate`: how many copies of the inputs and output the timed calls cycled through
    /// (`auto` chooses it point by point); None without rotation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotate_copies: Option<usize>,
    /// With `--repeat K`: each repeat's median, and their (max − min) / median.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repeat_medians_ms: Vec<f64>,
    pub spread: Option<f64>,
    /// Minimum traffic: each input read once, each output written once.
    pub bytes: usize,
    pub flops: f64,
    pub gbps: Option<f64>,
    pub pct_of_copy: Option<f64>,
    pub tflops: Option<f64>,
    /// TFLOP/s against the vendor matmul rate for the dtype (exact f32 for f32, bf16 else).
    pub pct_of_matmul: Option<f64>,
    /// manual's median time / this one's (same op, dtype and device).
    pub speedup_vs_manual: Option<f64>,
    /// GEMMs: this record's TFLOP/s against the vendor variant of the same point in the same
    /// run (cuBLAS for matmul, cuBLASLt with its fused epilogue for linear), in %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pct_of_vendor: Option<f64>,
    /// The speedup is within the run-to-run spread (only known with `--repeat`).
    pub speedup_is_noise: bool,
    pub note: Option<String>,
    /// For a dispatching variant (`auto`): the variant it ran.
    pub picked: Option<String>,
}

impl Record {
    pub fn new(
        op: Op,
        v: &Variant,
        device: &Device,
        dtype: DType,
        shape: &[usize],
        p: &Params,
        seed: u64,
    ) -> Record {
        Record::blank(
            op,
            v.name,
            v.tier.into(),
            device.kind(),
            dtype,
            shape,
            p,
            seed,
        )
    }

    /// Append `note` to the record's note, "; " between notes (as the baselines script's
    /// `add_note`).
    pub fn add_note(&mut self, note: String) {
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {note}"),
            None => note,
        });
    }

    /// A record with nothing measured yet.
    #[allow(clippy::too_many_arguments)]
    pub fn blank(
        op: Op,
        variant: &str,
        tier: RecordTier,
        device: DeviceKind,
        dtype: DType,
        shape: &[usize],
        p: &Params,
        seed: u64,
    ) -> Record {
        Record {
            op,
            variant: variant.to_string(),
            tier,
            device,
            dtype,
            shape: shape.to_vec(),
            params: *p,
            seed,
            status: Status::Ok,
            validated: false,
            max_rel_err: None,
            rel_l2: None,
            median_ms: None,
            p20_ms: None,
            p80_ms: None,
            min_ms: None,
            queued_ms: None,
            settled_ms: None,
            calls: None,
            repeat_medians_ms: Vec::new(),
            spread: None,
            bytes: 0,
            flops: 0.0,
            gbps: None,
            pct_of_copy: None,
            tflops: None,
            pct_of_matmul: None,
            speedup_vs_manual: None,
            pct_of_vendor: None,
            speedup_is_noise: false,
            note: None,
            picked: None,
            rotate_copies: None,
        }
    }

    /// The record's label in tables, plots and CSV: `v2_vec16`, or `v2_vec16 bf16` when a
    /// report holds several dtypes.
    pub fn label(&self, with_dtype: bool) -> String {
        if with_dtype {
            format!("{} {}", self.variant, self.dtype)
        } else {
            self.variant.clone()
        }
    }

    /// Fill the times and every figure derived from them (bytes and FLOPs must be set).
    pub fn set_measurement(&mut self, m: &Measurement, copy_gbps: f64) {
        let s = m.stats;
        self.median_ms = Some(s.median_ms);
        self.p20_ms = Some(s.p20_ms);
        self.p80_ms = Some(s.p80_ms);
        self.min_ms = Some(s.min_ms);
        self.calls = Some(s.calls);
        if m.medians_ms.len() > 1 {
            self.repeat_medians_ms = m.medians_ms.clone();
            self.spread = Some(m.spread);
        }
        self.derive(copy_gbps);
    }

    /// GB/s, % of the copy ceiling and TFLOP/s from the median time, bytes and FLOPs.
    pub fn derive(&mut self, copy_gbps: f64) {
        if let Some(ms) = self.median_ms {
            let secs = ms * 1e-3;
            let gbps = self.bytes as f64 / secs / 1e9;
            self.gbps = Some(gbps);
            self.pct_of_copy = Some(100.0 * gbps / copy_gbps);
            self.tflops = Some(self.flops / secs / 1e12);
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct DeviceInfo {
    pub kind: DeviceKind,
    pub description: String,
    pub props: Option<crate::device::DeviceProps>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub kernlab_version: &'static str,
    pub date: String,
    pub device: DeviceInfo,
    pub copy: CopyCeiling,
    /// The vendor matmul rates (cuBLAS bf16 and exact f32; faer on the CPU).
    pub matmul: Vec<MatmulCeiling>,
    /// Where the matmul rates came from, and when they were measured.
    pub matmul_provenance: Option<Provenance>,
    pub matmul_measured_at: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub matmul_notes: Vec<String>,
    pub seed: u64,
    pub timing: TimingOpts,
    /// How the times were taken, in words (the table header's timing line).
    pub timing_note: String,
    /// Lines about the PyTorch baselines (versions, or why there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub torch_notes: Vec<String>,
    pub records: Vec<Record>,
}

impl BenchReport {
    pub fn new(device: &Device, copy: CopyCeiling, seed: u64, timing: &TimingOpts) -> Self {
        BenchReport {
            kernlab_version: env!("CARGO_PKG_VERSION"),
            date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
            device: DeviceInfo {
                kind: device.kind(),
                description: device.describe(),
                props: device.cuda().map(|d| d.props.clone()),
            },
            copy,
            matmul: Vec::new(),
            matmul_provenance: None,
            matmul_measured_at: None,
            matmul_notes: Vec::new(),
            seed,
            timing: *timing,
            timing_note: String::new(),
            torch_notes: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Take the matmul ceilings (measured or cached) into the report.
    pub fn set_matmul(&mut self, c: &Ceilings, p: Provenance) {
        self.matmul = c.matmul.clone();
        self.matmul_provenance = Some(p);
        self.matmul_measured_at = Some(c.measured_at.clone());
        self.matmul_notes = c.notes.clone();
    }

    /// Each record's speedup over kernlab's `manual` variant at the same op, dtype and shape,
    /// flagged as noise when it is within the run-to-run spread of either.
    pub fn fill_speedups(&mut self) {
        let manual: Vec<(Op, DType, Vec<usize>, f64, f64)> = self
            .records
            .iter()
            .filter(|r| r.tier == RecordTier::Kernlab(Tier::Manual))
            .filter_map(|r| {
                r.median_ms
                    .map(|t| (r.op, r.dtype, r.shape.clone(), t, r.spread.unwrap_or(0.0)))
            })
            .collect();
        // The vendor's time at each GEMM point: cuBLAS for matmul, cuBLASLt for linear.
        let vendor: Vec<(Op, DType, Vec<usize>, f64)> = self
            .records
            .iter()
            .filter(|r| {
                r.tier == RecordTier::Kernlab(Tier::Vendor)
                    && r.status == Status::Ok
                    && matches!(
                        (r.op, r.variant.as_str()),
                        (Op::Matmul, "cublas") | (Op::Linear, "cublaslt")
                    )
            })
            .filter_map(|r| r.median_ms.map(|t| (r.op, r.dtype, r.shape.clone(), t)))
            .collect();
        for r in &mut self.records {
            if let (Some(t), Some((_, _, _, v))) = (
                r.median_ms,
                vendor
                    .iter()
                    .find(|(o, d, s, _)| *o == r.op && *d == r.dtype && *s == r.shape),
            ) {
                r.pct_of_vendor = Some(100.0 * v / t);
            }
            if let (Some(t), Some(m)) = (r.tflops, matmul_for(&self.matmul, r.dtype)) {
                r.pct_of_matmul = Some(100.0 * t / m.tflops);
            }
            let base = manual
                .iter()
                .find(|(o, d, s, _, _)| *o == r.op && *d == r.dtype && *s == r.shape);
            if let (Some(t), Some((_, _, _, m, ms))) = (r.median_ms, base) {
                r.speedup_vs_manual = Some(m / t);
                // manual against itself is 1× exactly, not a measurement.
                r.speedup_is_noise = r.tier != RecordTier::Kernlab(Tier::Manual)
                    && within_noise(*m, *ms, t, r.spread.unwrap_or(0.0));
            }
        }
    }

    /// The header every table carries: device, driver, clocks, kernlab version, date, ceiling.
    pub fn header(&self) -> String {
        let mut h = format!(
            "kernlab {} · {} · {}",
            self.kernlab_version, self.date, self.device.description
        );
        if let Some(p) = &self.device.props {
            h += &format!(
                "\ndriver {} · SM clock {} MHz (max) · memory clock {} MHz · L2 {} MiB",
                p.driver_version,
                p.sm_clock_khz / 1000,
                p.mem_clock_khz / 1000,
                p.l2_bytes >> 20
            );
        }
        h += &format!(
            "\ncopy ceiling {:.0} GB/s ({}, median of {} calls) · seed {}",
            self.copy.gbps, self.copy.how, self.copy.stats.calls, self.seed
        );
        if !self.matmul.is_empty() {
            h += &format!(
                "\nmatmul ceiling {} ({}{}): {}",
                if self.matmul_provenance == Some(Provenance::Cached) {
                    "cached"
                } else {
                    "measured"
                },
                self.matmul_measured_at.as_deref().unwrap_or("?"),
                if self.matmul_provenance == Some(Provenance::Cached) {
                    "; --fresh-ceilings measures again"
                } else {
                    ""
                },
                self.matmul
                    .iter()
                    .map(|m| format!("{} {}³ {}", m.name, m.n, fmt_flops(m.tflops)))
                    .collect::<Vec<_>>()
                    .join(" · ")
            );
        }
        for n in &self.matmul_notes {
            h += &format!("\n{n}");
        }
        if !self.timing_note.is_empty() {
            h += &format!("\n{}", self.timing_note);
        }
        for n in &self.torch_notes {
            h += &format!("\n{n}");
        }
        h
    }

    /// One table per (op, dtype).
    pub fn tables(&self) -> Vec<(String, Table)> {
        let mut groups: Vec<(Op, DType, Vec<usize>)> = Vec::new();
        for r in &self.records {
            if !groups
                .iter()
                .any(|(o, d, s)| *o == r.op && *d == r.dtype && *s == r.shape)
            {
                groups.push((r.op, r.dtype, r.shape.clone()));
            }
        }
        groups
            .into_iter()
            .map(|(op, dt, shape)| {
                let first = self
                    .records
                    .iter()
                    .find(|r| r.op == op && r.dtype == dt && r.shape == shape)
                    .expect("a group comes from a record");
                let gemm = op.is_gemm();
                let title = format!(
                    "{op}{} {dt} {} — {}",
                    form_suffix(op, &first.params),
                    shape_str(&shape),
                    if gemm {
                        format!(
                            "M×N×K, {} per call (2·M·N·K), {} MB at minimum",
                            if first.flops >= 1e12 {
                                format!("{:.2} TFLOP", first.flops / 1e12)
                            } else {
                                format!("{} GFLOP", fmt_sig(first.flops / 1e9))
                            },
                            fmt_sig(first.bytes as f64 / 1e6)
                        )
                    } else {
                        format!("{} MB moved at minimum", first.bytes as f64 / 1e6)
                    }
                );
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED);
                t.set_header(vec![
                    "variant",
                    "tier",
                    "ms (median)",
                    "p20–p80",
                    "min · calls",
                    if gemm { "TFLOP/s" } else { "GB/s" },
                    if gemm { "% vendor" } else { "% copy" },
                    "× manual",
                    "max rel err",
                    "status",
                ]);
                for r in self
                    .records
                    .iter()
                    .filter(|r| r.op == op && r.dtype == dt && r.shape == shape)
                {
                    let f = |v: Option<f64>, p: usize| {
                        v.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "—".into())
                    };
                    let status = match r.status {
                        Status::Ok => Cell::new("ok").fg(Color::Green),
                        Status::Failed => Cell::new("FAILED").fg(Color::Red),
                        Status::Unsupported => Cell::new("unsupported").fg(Color::DarkGrey),
                        Status::Error => Cell::new("ERROR").fg(Color::Red),
                    };
                    let ms_digits = match r.median_ms {
                        Some(m) if m < 0.1 => 4,
                        Some(m) if m < 10.0 => 3,
                        _ => 1,
                    };
                    let median = match (r.median_ms, r.spread) {
                        (Some(m), Some(sp)) => format!("{m:.ms_digits$} ±{:.1}%", 100.0 * sp),
                        (m, _) => f(m, ms_digits),
                    };
                    t.add_row(vec![
                        Cell::new(match &r.picked {
                            Some(p) => format!("{} → {p}", r.variant),
                            None => r.variant.clone(),
                        }),
                        Cell::new(r.tier.to_string()),
                        Cell::new(median).set_alignment(CellAlignment::Right),
                        Cell::new(match (r.p20_ms, r.p80_ms) {
                            (Some(a), Some(b)) => format!("{a:.ms_digits$}–{b:.ms_digits$}"),
                            _ => "—".into(),
                        })
                        .set_alignment(CellAlignment::Right),
                        Cell::new(match (r.min_ms, r.calls) {
                            (Some(m), Some(n)) => format!("{m:.ms_digits$} · {n}"),
                            _ => "—".into(),
                        })
                        .set_alignment(CellAlignment::Right),
                        Cell::new(if gemm {
                            r.tflops
                                .map(|t| match t {
                                    t if t >= 10.0 => format!("{t:.1}"),
                                    t if t >= 0.1 => format!("{t:.2}"),
                                    t => format!("{t:.4}"),
                                })
                                .unwrap_or_else(|| "—".into())
                        } else {
                            r.gbps.map(fmt_gbps).unwrap_or_else(|| "—".into())
                        })
                        .set_alignment(CellAlignment::Right),
                        Cell::new(f(if gemm { r.pct_of_vendor } else { r.pct_of_copy }, 1))
                            .set_alignment(CellAlignment::Right),
                        Cell::new(
                            r.speedup_vs_manual
                                .map(|s| {
                                    format!("{s:.2}×{}", if r.speedup_is_noise { " ~" } else { "" })
                                })
                                .unwrap_or_else(|| "—".into()),
                        )
                        .set_alignment(CellAlignment::Right),
                        Cell::new(
                            r.max_rel_err
                                .map(|e| format!("{e:.1e}"))
                                .unwrap_or_else(|| "—".into()),
                        )
                        .set_alignment(CellAlignment::Right),
                        status,
                    ]);
                }
                (title, t)
            })
            .collect()
    }

    /// Notes for records that did not run cleanly, one line each.
    pub fn problems(&self) -> Vec<String> {
        self.records
            .iter()
            .filter(|r| r.status != Status::Ok)
            .map(|r| {
                format!(
                    "{}/{} {} {}: {:?}: {}",
                    r.op,
                    r.variant,
                    r.dtype,
                    shape_str(&r.shape),
                    r.status,
                    r.note.as_deref().unwrap_or("")
                )
            })
            .collect()
    }

    /// Every record as CSV (a header line, then one line per record; RFC 4180 quoting).
    pub fn to_csv(&self) -> String {
        let mut out = CSV_COLUMNS.join(",") + "\n";
        for r in &self.records {
            out += &csv_row(r)
                .iter()
                .map(|f| csv_field(f))
                .collect::<Vec<_>>()
                .join(",");
            out.push('\n');
        }
        out
    }

    /// Whether one of kernlab's own variants failed validation or raised an error (a PyTorch
    /// baseline that failed is in the notes, but is not kernlab's failure).
    pub fn any_failed(&self) -> bool {
        self.records.iter().any(|r| {
            r.tier != RecordTier::Torch && matches!(r.status, Status::Failed | Status::Error)
        })
    }

    /// [`against_pytorch`] over this report's records.
    pub fn against_pytorch(&self) -> Vec<String> {
        against_pytorch(&self.records, &self.timing)
    }

    /// Whether one of kernlab's own variants was validated and timed (a run where every one
    /// refused its input measured nothing).
    pub fn any_timed(&self) -> bool {
        self.records
            .iter()
            .any(|r| r.tier != RecordTier::Torch && r.status == Status::Ok)
    }
}

/// The PyTorch columns kernlab's dispatch is set against (issue 5's "never slower than PyTorch
/// native or torch.compile"): at each point, the faster of the two that was timed.
pub const PYTORCH_RIVALS: [&str; 2] = ["torch_native", "torch_compile"];

/// The word the baselines script puts in a record's note (`HOST_BOUND` there) where an
/// iteration of do_bench's loop took the host as long as the flush and the call took the GPU:
/// its time then holds host time, not only the GPU's.
pub const HOST_BOUND: &str = "host-bound";

fn host_bound(r: &Record) -> bool {
    r.note.as_deref().is_some_and(|n| n.contains(HOST_BOUND))
}

/// Where `auto` and its same-process replay (`kernlab_do_bench`) stand against
/// [`PYTORCH_RIVALS`], point by point, in µs a call: one line for each of the two that was
/// timed beside a rival, listing the points where it was slower (by how much, and against
/// which), and saying at how many of the points it was judged the time on either side was
/// [`HOST_BOUND`]. A gap under 0.005 µs is level. Where kernlab's own calls were not timed as
/// do_bench times PyTorch's (`timing`: without the flush, or as CUDA graphs), `auto`'s line says
/// so. Where both sides were timed in rounds (`--repeat`: kernlab's repeats, the script's
/// rounds), a gap within the larger of their spreads counts as level, and the line says how
/// many. Where the script timed a call again with every launch queued ahead
/// (`Record::queued_ms`: the call's GPU time, no host time in it), a second line judges the
/// same points with those queued medians in place of do_bench's: kernel against kernel, as
/// kernlab's harness, which queues its calls, times its own. Where both sides have settled
/// medians (`Record::settled_ms`: calls under 1 ms, timed with the stream parked behind each
/// flush, so that the host's pace is out of the time), a third line judges by those alone, a
/// point only where every rival timed there has one; a gap under [`SETTLED_LEVEL_US`] is level.
/// Empty when no rival was timed (no `--torch`, or PyTorch missing).
pub fn against_pytorch(records: &[Record], timing: &super::harness::TimingOpts) -> Vec<String> {
    let us = |r: &Record| match (r.status, r.median_ms) {
        (Status::Ok, Some(ms)) if ms > 0.0 => Some(ms * 1e3),
        _ => None,
    };
    // The time a record stands at: do_bench's median (`gpu` false), or, where the baselines
    // script also timed the call with every launch queued ahead, that queued median; and
    // whether it was swapped. kernlab's own calls have no queued median: its harness queues
    // them already (a few µs of host work a call against the flush's ~60 µs of GPU time).
    // In the settled form every call stands at its settled median, or is not judged.
    let at = |r: &Record, form: Form| -> Option<(f64, bool)> {
        let t = us(r)?;
        match (form, r.queued_ms, r.settled_ms) {
            (Form::Settled, _, Some(q)) if q > 0.0 => Some((q * 1e3, true)),
            (Form::Settled, _, _) => None,
            (Form::Queued, Some(q), _) if q > 0.0 => Some((q * 1e3, true)),
            _ => Some((t, false)),
        }
    };
    // The same op, dtype and shape, computing the same thing (`form`: the GeLU form, log_softmax,
    // linear's epilogue; parameters an op ignores, such as matmul's activation, do not count).
    let same_point = |a: &Record, b: &Record| {
        a.op == b.op
            && a.dtype == b.dtype
            && a.shape == b.shape
            && form(a.op, &a.params) == form(b.op, &b.params)
    };
    let unlike = match (timing.flush, timing.graph) {
        (_, Some(_)) => Some("kernlab's calls were timed as CUDA graphs (--graph)"),
        (false, None) => Some("kernlab's calls were timed without the L2 flush (--no-flush)"),
        (true, None) => None,
    };
    let several_ops = records.iter().any(|r| r.op != records[0].op);
    let points = |n: usize| {
        if n == 1 {
            "1 point".to_string()
        } else {
            format!("{n} points")
        }
    };
    let mut lines = Vec::new();
    // (variant, whether it is a record of the PyTorch script, how the line names it)
    for (mine, in_torch, what) in [
        ("auto", false, "`auto`"),
        (
            super::torch::REPLAY_VARIANT,
            true,
            "`kernlab_do_bench` (auto's launch, timed in PyTorch's process)",
        ),
    ] {
        // The points judged, those slower, those with a host-bound time on either side, those
        // where a queued median stood in for one, and those slower by less than the spread of
        // both sides' rounds (`--repeat`), which count as level.
        let judge = |form: Form| {
            let (mut judged, mut behind, mut hosted, mut swapped, mut noise) =
                (0, Vec::new(), 0, 0, 0);
            for r in records
                .iter()
                .filter(|r| r.variant == mine && (r.tier == RecordTier::Torch) == in_torch)
            {
                let Some((t, mine_swapped)) = at(r, form) else {
                    continue;
                };
                let timed: Vec<_> = records
                    .iter()
                    .filter(|o| {
                        o.tier == RecordTier::Torch
                            && PYTORCH_RIVALS.contains(&o.variant.as_str())
                            && same_point(o, r)
                            && us(o).is_some()
                    })
                    .collect();
                let rivals: Vec<_> = timed
                    .iter()
                    .filter_map(|&o| at(o, form).map(|(u, sw)| (u, sw, o)))
                    .collect();
                // The settled form judges a point only where every rival has its settled time.
                if form == Form::Settled && rivals.len() < timed.len() {
                    continue;
                }
                let Some(&(best, best_swapped, o)) =
                    rivals.iter().min_by(|a, b| a.0.total_cmp(&b.0))
                else {
                    continue;
                };
                judged += 1;
                let hb = host_bound(r) || host_bound(o);
                hosted += hb as usize;
                swapped += (mine_swapped || best_swapped) as usize;
                // Both sides timed in rounds, and neither time a queued median (the spread is
                // the do_bench medians'): a gap within the larger spread is noise.
                let within = match (r.spread, o.spread, mine_swapped || best_swapped) {
                    _ if form == Form::Settled => t - best < SETTLED_LEVEL_US,
                    (Some(a), Some(b), false) => super::harness::within_noise(t, a, best, b),
                    _ => false,
                };
                if t - best < 0.005 {
                    continue;
                }
                if within {
                    noise += 1;
                    continue;
                }
                let name = o.variant.strip_prefix("torch_").unwrap_or(&o.variant);
                let at = if several_ops {
                    format!("{} {} {}", r.op, r.dtype, shape_str(&r.shape))
                } else {
                    format!("{} {}", r.dtype, shape_str(&r.shape))
                };
                let mark = if hb && form == Form::DoBench {
                    format!("; {HOST_BOUND}")
                } else {
                    String::new()
                };
                behind.push(format!(
                    "{at} ({} against {name}'s {}, +{}{mark})",
                    fmt_us(t),
                    fmt_us(best),
                    fmt_us(t - best),
                ));
            }
            (judged, behind, hosted, swapped, noise)
        };
        let tally = |judged: usize, behind: &[String]| {
            if behind.is_empty() {
                if judged == 1 {
                    "the one point".to_string()
                } else {
                    format!("all {judged} points")
                }
            } else {
                format!("{} of {}", judged - behind.len(), points(judged))
            }
        };
        let slower = |behind: &[String]| {
            if behind.is_empty() {
                String::new()
            } else {
                format!("; slower, in µs a call, at {}", behind.join(", "))
            }
        };
        let (judged, behind, hosted, _, noise) = judge(Form::DoBench);
        if judged == 0 {
            continue;
        }
        let noise_note = |noise: usize| {
            format!(
                "{noise} of them behind by less than the spread of both sides' rounds (--repeat), \
                 counted level"
            )
        };
        let mut notes = Vec::new();
        if noise > 0 {
            notes.push(noise_note(noise));
        }
        if hosted > 0 {
            notes.push(format!(
                "{hosted} of them with a {HOST_BOUND} time on one side or both: see its note"
            ));
        }
        if let (false, Some(u)) = (in_torch, unlike) {
            notes.push(format!(
                "{u}, PyTorch's by do_bench with its flush: not like for like"
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        lines.push(format!(
            "{what} against PyTorch native and torch.compile: at or ahead at {}{notes}{}",
            tally(judged, &behind),
            slower(&behind)
        ));
        let (kjudged, kbehind, _, swapped, knoise) = judge(Form::Queued);
        if swapped > 0 {
            let mut knotes = vec![format!(
                "at {}, {}",
                points(swapped),
                if in_torch {
                    "both sides' calls timed again with every launch queued ahead of the GPU"
                } else {
                    "PyTorch's calls timed again with every launch queued ahead of the GPU, as \
                     kernlab's harness queues its own"
                }
            )];
            if knoise > 0 {
                knotes.push(noise_note(knoise));
            }
            if let (false, Some(u)) = (in_torch, unlike) {
                knotes.push(format!("{u}: not like for like"));
            }
            lines.push(format!(
                "{what} against their queued times: at or ahead at {} ({}){}",
                tally(kjudged, &kbehind),
                knotes.join("; "),
                slower(&kbehind)
            ));
        }
        let (sjudged, sbehind, _, _, snoise) = judge(Form::Settled);
        if sjudged > 0 {
            let mut snotes = vec![format!(
                "{} timed again in the settled form, the stream parked behind each flush until it \
                 finished: no host pace in the time",
                if in_torch {
                    "both sides' calls"
                } else {
                    "kernlab's calls and PyTorch's"
                }
            )];
            if snoise > 0 {
                snotes.push(format!(
                    "{snoise} of them behind by less than {SETTLED_LEVEL_US} µs, the settled \
                     form's reach, counted level"
                ));
            }
            // (kernlab takes settled medians only flushed call by call, never with --graph or
            // --no-flush, so `unlike` has nothing to add here.)
            if !in_torch {
                snotes.push(
                    "kernlab's process against PyTorch's, where the same kernel has read up to \
                     0.7 µs apart: the replay's line is kernel against kernel"
                        .into(),
                );
            }
            lines.push(format!(
                "{what} against their settled times: at or ahead at {} ({}){}",
                tally(sjudged, &sbehind),
                snotes.join("; "),
                slower(&sbehind)
            ));
        }
    }
    lines
}

/// Which time of a call the verdict judges by: do_bench's median; the queued median where the
/// script took one (do_bench's elsewhere); the settled median (calls without one not judged).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    DoBench,
    Queued,
    Settled,
}

/// A settled time behind a rival's by less than this (µs) counts as level: within one process
/// the settled form's medians of one call move by less than that between rounds
/// (docs/perf-notes.md, "timing").
pub const SETTLED_LEVEL_US: f64 = 0.1;

/// µs with two decimals below 100, whole µs above.
fn fmt_us(v: f64) -> String {
    if v.abs() < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
}

/// What `op` computed with `params` beyond its name, where a title names it: the GeLU form,
/// log_softmax, linear's epilogue; `None` for plain softmax and matmul.
fn form(op: Op, params: &Params) -> Option<String> {
    match op {
        Op::Gelu => Some(params.gelu.name().to_string()),
        Op::Softmax if params.log_softmax => Some("log_softmax".into()),
        Op::Linear => Some(format!("bias + {}", params.act.name())),
        Op::Softmax | Op::Matmul => None,
    }
}

/// `form` for a title: ` (…)`, or nothing.
pub fn form_suffix(op: Op, params: &Params) -> String {
    form(op, params)
        .map(|f| format!(" ({f})"))
        .unwrap_or_default()
}

/// The `form` column: [`form`], `softmax` for plain softmax, empty for matmul.
fn form_column(op: Op, params: &Params) -> String {
    form(op, params).unwrap_or_else(|| match op {
        Op::Softmax => "softmax".into(),
        _ => String::new(),
    })
}

/// One record's fields in the order of [`CSV_COLUMNS`].
/// `rows`, `cols` and `numel` are the output's: for a GEMM `M×N×K`, M, N and M·N.
pub fn csv_row(r: &Record) -> Vec<String> {
    let out = crate::bench::out_shape(r.op, &r.shape);
    let (rows, cols) = match out.as_slice() {
        [] => (1, 1),
        [n] => (1, *n),
        s => (s[..s.len() - 1].iter().product(), s[s.len() - 1]),
    };
    let o = |v: Option<f64>| v.map(|v| format!("{v:?}")).unwrap_or_default();
    vec![
        r.op.to_string(),
        r.variant.clone(),
        r.tier.to_string(),
        r.device.to_string(),
        r.dtype.to_string(),
        shape_str(&r.shape).replace('×', "x"),
        rows.to_string(),
        cols.to_string(),
        out.iter().product::<usize>().to_string(),
        format!("{:?}", r.status).to_lowercase(),
        r.validated.to_string(),
        o(r.max_rel_err),
        o(r.median_ms),
        o(r.p20_ms),
        o(r.p80_ms),
        o(r.min_ms),
        r.calls.map(|c| c.to_string()).unwrap_or_default(),
        r.rotate_copies.map(|c| c.to_string()).unwrap_or_default(),
        o(r.spread),
        r.bytes.to_string(),
        format!("{:?}", r.flops),
        o(r.gbps),
        o(r.pct_of_copy),
        o(r.tflops),
        o(r.pct_of_matmul),
        o(r.speedup_vs_manual),
        form_column(r.op, &r.params),
        r.note.clone().unwrap_or_default(),
        r.picked.clone().unwrap_or_default(),
        o(r.queued_ms),
        o(r.settled_ms),
    ]
}

/// The columns of `BenchReport::to_csv`, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "op",
    "variant",
    "tier",
    "device",
    "dtype",
    "shape",
    "rows",
    "cols",
    "numel",
    "status",
    "validated",
    "max_rel_err",
    "median_ms",
    "p20_ms",
    "p80_ms",
    "min_ms",
    "calls",
    // With --rotate: the copies the calls cycled through; empty without rotation.
    "rotate_copies",
    "spread",
    "bytes",
    "flops",
    "gbps",
    "pct_of_copy",
    "tflops",
    "pct_of_matmul",
    "speedup_vs_manual",
    // What the op computed beyond its name: gelu's form (tanh, erf), softmax or log_softmax,
    // linear's epilogue (bias + gelu-tanh, …); empty for matmul.
    "form",
    "note",
    // A dispatching variant's (`auto`'s) choice for this point; empty for the others.
    "picked",
    // PyTorch's calls under 1 ms: do_bench's loop again with every launch queued ahead of the
    // GPU, its median (the call's GPU time); empty for kernlab's and longer calls.
    "queued_ms",
    // GPU calls under 1 ms, kernlab's and PyTorch's: the settled form's median (the stream
    // parked behind each flush until it finished; the host's pace out of the time).
    "settled_ms",
];

/// One CSV field, quoted when it holds a comma, a quote or a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_three_significant_digits() {
        let cases = [
            (2841.4, "2841"),
            (100.0, "100"),
            (45.31, "45.3"),
            (0.82, "0.82"),
            (0.5, "0.5"),
            (0.000524288, "0.000524"),
            (3.0, "3"),
            (-0.0123, "-0.0123"),
            (0.0, "0"),
            (1e-300, "1e-300"),
            (1.5e10, "1.5e10"),
            (-2.346e-7, "-2.35e-7"),
        ];
        for (v, want) in cases {
            assert_eq!(fmt_sig(v), want, "{v}");
        }
        assert_eq!(fmt_sig(f64::NAN), "NaN");
    }

    /// A CSV line has a field per column, and `auto`'s choice lands in `picked` (quoted when
    /// it holds a comma), so a sweep's CSV says which version ran at each point.
    #[test]
    fn csv_rows_carry_what_auto_picked() {
        let p = Params::default();
        let mut r = Record::blank(
            Op::Softmax,
            "auto",
            RecordTier::Kernlab(Tier::Cuda),
            DeviceKind::Cuda,
            DType::BF16,
            &[2048, 131072],
            &p,
            1,
        );
        r.picked = Some("v8_onchip".into());
        let row = csv_row(&r);
        assert_eq!(row.len(), CSV_COLUMNS.len());
        let at = |name: &str| &row[CSV_COLUMNS.iter().position(|c| *c == name).unwrap()];
        assert_eq!(at("picked"), "v8_onchip");
        assert_eq!(at("variant"), "auto");
        assert_eq!(at("form"), "softmax");
        assert_eq!(
            (at("rows").as_str(), at("cols").as_str()),
            ("2048", "131072")
        );
        r.picked = None;
        assert_eq!(csv_row(&r)[CSV_COLUMNS.len() - 1], "");
        assert_eq!(csv_field("v3, autotuned"), "\"v3, autotuned\"");
    }

    fn timed(
        op: Op,
        variant: &str,
        tier: RecordTier,
        shape: &[usize],
        p: &Params,
        us: Option<f64>,
    ) -> Record {
        let mut r = Record::blank(op, variant, tier, DeviceKind::Cuda, DType::F32, shape, p, 1);
        r.median_ms = us.map(|u| u / 1e3);
        r.status = if us.is_some() {
            Status::Ok
        } else {
            Status::Failed
        };
        r
    }

    #[test]
    fn notes_are_appended_after_a_semicolon() {
        let mut r = Record::blank(
            Op::Softmax,
            "auto",
            RecordTier::Kernlab(Tier::Cuda),
            DeviceKind::Cuda,
            DType::F32,
            &[4, 4],
            &Params::default(),
            1,
        );
        r.add_note("validated on 2 rows".into());
        r.add_note("settled timing failed: x".into());
        assert_eq!(
            r.note.as_deref(),
            Some("validated on 2 rows; settled timing failed: x")
        );
    }

    /// The verdict against PyTorch counts only points where `auto` (or its replay) and a rival
    /// (native or compile, not Triton) were both timed, at the same op, dtype, shape and
    /// params, and names the faster rival and the gap where kernlab was slower.
    #[test]
    fn the_verdict_against_pytorch_takes_the_faster_rival_at_the_same_point() {
        let p = Params::default();
        let lsm = Params {
            log_softmax: true,
            ..Params::default()
        };
        let k = RecordTier::Kernlab(Tier::Cuda);
        let t = RecordTier::Torch;
        let s = Op::Softmax;
        let mut recs = vec![
            // 4096×256: compile the faster rival and ahead of auto by 0.33 µs; Triton faster
            // still, but not a rival.
            timed(s, "auto", k, &[4096, 256], &p, Some(6.94)),
            timed(s, "torch_native", t, &[4096, 256], &p, Some(7.2)),
            timed(s, "torch_compile", t, &[4096, 256], &p, Some(6.61)),
            timed(s, "triton", t, &[4096, 256], &p, Some(5.0)),
            timed(s, "kernlab_do_bench", t, &[4096, 256], &p, Some(7.31)),
            // 4096×512: compile failed, so native is the rival, and auto is ahead of it.
            timed(s, "auto", k, &[4096, 512], &p, Some(8.0)),
            timed(s, "torch_native", t, &[4096, 512], &p, Some(9.0)),
            timed(s, "torch_compile", t, &[4096, 512], &p, None),
            timed(s, "kernlab_do_bench", t, &[4096, 512], &p, Some(8.5)),
            // 4096×1024: no rival timed; not judged.
            timed(s, "auto", k, &[4096, 1024], &p, Some(12.0)),
            timed(s, "torch_native", t, &[4096, 1024], &p, None),
            // 4096×2048: auto failed; not judged, though native was timed.
            timed(s, "auto", k, &[4096, 2048], &p, None),
            timed(s, "torch_native", t, &[4096, 2048], &p, Some(1.0)),
            // log_softmax at 4096×4096: native's plain softmax there is not its rival.
            timed(s, "auto", k, &[4096, 4096], &lsm, Some(30.0)),
            timed(s, "torch_native", t, &[4096, 4096], &p, Some(20.0)),
            // A kernlab variant that happens to be named like the replay is not the replay.
            timed(s, "kernlab_do_bench", k, &[4096, 512], &p, Some(99.0)),
        ];
        let flushed = crate::bench::harness::TimingOpts::default();
        let verdict = |recs: &[Record]| against_pytorch(recs, &flushed);
        let v = verdict(&recs);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(
            v[0],
            "`auto` against PyTorch native and torch.compile: at or ahead at 1 of 2 points; \
             slower, in µs a call, at f32 4096×256 (6.94 against compile's 6.61, +0.33)"
        );
        assert!(
            v[1].starts_with("`kernlab_do_bench` (auto's launch"),
            "{}",
            v[1]
        );
        // The replay's line where it is behind compile at 4096×256 (here and with rounds below).
        let replay_behind = "at or ahead at 1 of 2 points; slower, in µs a call, at f32 4096×256 \
                             (7.31 against compile's 6.61, +0.70)";
        assert!(v[1].ends_with(replay_behind), "{}", v[1]);

        // A host-bound time on either side is counted, and marked where kernlab was slower.
        let mut hb = recs.clone();
        for r in hb
            .iter_mut()
            .filter(|r| r.variant == "kernlab_do_bench" && r.shape == [4096, 256])
        {
            r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."));
        }
        let v = verdict(&hb);
        assert_eq!(v[0], verdict(&recs)[0], "auto's line moved");
        assert!(
            v[1].contains(
                "1 of 2 points (1 of them with a host-bound time on one side or both: see its \
                 note); slower"
            ) && v[1].ends_with("(7.31 against compile's 6.61, +0.70; host-bound)"),
            "{}",
            v[1]
        );
        assert_eq!(v.len(), 2, "no queued median, no second line: {v:?}");

        // With queued medians, a second line judges kernel against kernel, each PyTorch-side
        // call at its queued median where it has one (kernlab's own at its median). At 256 the
        // replay's host-bound 7.31 µs stands at its queued 6.50, ahead of compile's queued 6.70;
        // auto's 6.94 is behind that 6.70. At 512 native's host-bound 9.00 stands at its queued
        // 7.90, ahead of auto's 8.00 and the replay's queued 8.40. Native's host-bound 7.20 at
        // 256, not the faster rival there, marks nothing in the first lines.
        let mut q = hb.clone();
        for r in q.iter_mut() {
            match (r.variant.as_str(), r.shape[1]) {
                ("kernlab_do_bench", 256) => r.queued_ms = Some(6.5e-3),
                ("kernlab_do_bench", 512) => r.queued_ms = Some(8.4e-3),
                ("torch_compile", 256) => r.queued_ms = Some(6.7e-3),
                ("torch_native", 256) => {
                    r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."))
                }
                ("torch_native", 512) => {
                    r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."));
                    r.queued_ms = Some(7.9e-3);
                }
                _ => {}
            }
        }
        let v = verdict(&q);
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(
            v[0].contains("at or ahead at 1 of 2 points (1 of them with a host-bound time")
                && v[0].ends_with("at f32 4096×256 (6.94 against compile's 6.61, +0.33)"),
            "{}",
            v[0]
        );
        assert!(
            v[2].contains("at or ahead at 1 of 2 points (2 of them with a host-bound time")
                && v[2].ends_with("(7.31 against compile's 6.61, +0.70; host-bound)"),
            "{}",
            v[2]
        );
        assert_eq!(
            v[1],
            "`auto` against their queued times: at or ahead at 0 of 2 points (at 2 points, \
             PyTorch's calls timed again with every launch queued ahead of the GPU, as kernlab's \
             harness queues its own); slower, in µs a call, at f32 4096×256 (6.94 against \
             compile's 6.70, +0.24), f32 4096×512 (8.00 against native's 7.90, +0.10)"
        );
        assert_eq!(
            v[3],
            "`kernlab_do_bench` (auto's launch, timed in PyTorch's process) against their queued \
             times: at or ahead at 1 of 2 points (at 2 points, both sides' calls timed again \
             with every launch queued ahead of the GPU); slower, in µs a call, at f32 4096×512 \
             (8.40 against native's 7.90, +0.50)"
        );
        // Timed as graphs, auto's second line says it too.
        let graphs = crate::bench::harness::TimingOpts {
            graph: Some(10),
            ..Default::default()
        };
        let v = against_pytorch(&q, &graphs);
        assert!(v[1].contains("(--graph): not like for like)"), "{}", v[1]);

        // The settled form: a line for each side wherever it and every rival timed at a point
        // have settled medians (no mixing with other times). At 256 auto's settled 6.10 is
        // behind compile's 6.05 by less than SETTLED_LEVEL_US (level); the replay's 6.30 is
        // behind by 0.25. At 512 compile failed and native settled at 8.20: auto's 8.10 is
        // ahead; the replay has no settled median there, so it is not judged.
        let mut st = q.clone();
        for r in st.iter_mut() {
            r.settled_ms = match (r.variant.as_str(), r.shape[1], r.tier) {
                ("auto", 256, RecordTier::Kernlab(_)) => Some(6.10e-3),
                ("auto", 512, RecordTier::Kernlab(_)) => Some(8.10e-3),
                ("torch_compile", 256, _) => Some(6.05e-3),
                ("torch_native", 256, _) => Some(6.60e-3),
                ("torch_native", 512, _) => Some(8.20e-3),
                ("kernlab_do_bench", 256, RecordTier::Torch) => Some(6.30e-3),
                _ => None,
            };
        }
        let v = verdict(&st);
        assert_eq!(v.len(), 6, "{v:?}");
        assert_eq!(
            v[2],
            "`auto` against their settled times: at or ahead at all 2 points (kernlab's calls \
             and PyTorch's timed again in the settled form, the stream parked behind each flush \
             until it finished: no host pace in the time; 1 of them behind by less than 0.1 µs, \
             the settled form's reach, counted level; kernlab's process against PyTorch's, where \
             the same kernel has read up to 0.7 µs apart: the replay's line is kernel against \
             kernel)"
        );
        // `auto` without its settled time at a point is not judged there, though its rivals
        // have theirs.
        let mut no_auto = st.clone();
        no_auto
            .iter_mut()
            .filter(|r| r.variant == "auto" && r.shape[1] == 512)
            .for_each(|r| r.settled_ms = None);
        let v = verdict(&no_auto);
        assert!(
            v[2].starts_with("`auto` against their settled times: at or ahead at the one point"),
            "{}",
            v[2]
        );
        assert_eq!(
            v[5],
            "`kernlab_do_bench` (auto's launch, timed in PyTorch's process) against their \
             settled times: at or ahead at 0 of 1 point (both sides' calls timed again in the \
             settled form, the stream parked behind each flush until it finished: no host pace \
             in the time); slower, in µs a call, at f32 4096×256 (6.30 against compile's 6.05, \
             +0.25)"
        );
        // A rival without its settled time keeps the point out of the settled line: native at
        // 256 is slower, but compile's settled time is missing, so only 512 is judged.
        st.iter_mut()
            .filter(|r| r.variant == "torch_compile")
            .for_each(|r| r.settled_ms = None);
        let v = verdict(&st);
        assert!(
            v[2].starts_with("`auto` against their settled times: at or ahead at the one point"),
            "{}",
            v[2]
        );

        // Both sides in rounds: auto's 0.33 µs behind compile is within auto's 10% spread
        // (0.69 µs) and counts as level; the replay's 0.70 is not (band 0.33 µs).
        let mut rounds = recs.clone();
        for r in rounds.iter_mut() {
            match (r.variant.as_str(), r.shape[1]) {
                ("auto", 256) => r.spread = Some(0.1),
                ("torch_compile", 256) => r.spread = Some(0.05),
                ("kernlab_do_bench", 256) => r.spread = Some(0.01),
                _ => {}
            }
        }
        let v = verdict(&rounds);
        assert_eq!(
            v[0],
            "`auto` against PyTorch native and torch.compile: at or ahead at all 2 points (1 of \
             them behind by less than the spread of both sides' rounds (--repeat), counted level)"
        );
        assert!(v[1].ends_with(replay_behind), "{}", v[1]);
        // One side without rounds: no noise band.
        rounds[2].spread = None;
        assert!(verdict(&rounds)[0].contains("at or ahead at 1 of 2 points;"));

        // Timed as graphs or unflushed, kernlab's side is not like for like: `auto`'s line says
        // so; the replay, timed by do_bench, does not.
        let v = against_pytorch(&recs, &graphs);
        assert!(v[0].contains("(kernlab's calls were timed as CUDA graphs (--graph), PyTorch's by do_bench with its flush: not like for like)"), "{}", v[0]);
        assert!(!v[1].contains("like for like"), "{}", v[1]);
        let unflushed = crate::bench::harness::TimingOpts {
            flush: false,
            ..Default::default()
        };
        assert!(against_pytorch(&recs, &unflushed)[0].contains("without the L2 flush"));

        // With another op in the report, a point names its op; level (or within 0.005 µs) is
        // not slower.
        recs.push(timed(Op::Gelu, "auto", k, &[8, 8], &p, Some(3.0)));
        recs.push(timed(Op::Gelu, "torch_compile", t, &[8, 8], &p, Some(3.0)));
        recs.push(timed(Op::Gelu, "auto", k, &[8, 16], &p, Some(3.004)));
        recs.push(timed(Op::Gelu, "torch_compile", t, &[8, 16], &p, Some(3.0)));
        let v = verdict(&recs);
        assert!(v[0].contains("at or ahead at 3 of 4 points"), "{}", v[0]);
        assert!(v[0].contains("at softmax f32 4096×256 (6.94"), "{}", v[0]);

        // matmul: kernlab's records carry the default activation, PyTorch's none; matmul
        // ignores it, so they are one point (linear does not: its epilogue is its form).
        let gelu_act = Params {
            act: crate::ops::matmul::Activation::GeluTanh,
            ..Params::default()
        };
        let no_act = Params::default();
        assert_ne!(gelu_act, no_act, "the test needs two different activations");
        let mm = [
            timed(Op::Matmul, "auto", k, &[64, 64, 64], &gelu_act, Some(10.0)),
            timed(
                Op::Matmul,
                "torch_native",
                t,
                &[64, 64, 64],
                &no_act,
                Some(9.0),
            ),
            timed(Op::Linear, "auto", k, &[64, 64, 64], &gelu_act, Some(10.0)),
            timed(
                Op::Linear,
                "torch_native",
                t,
                &[64, 64, 64],
                &no_act,
                Some(9.0),
            ),
        ];
        let v = verdict(&mm);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("at or ahead at 0 of 1 point;")
                && v[0].contains("matmul f32 64×64×64 (10.00 against native's 9.00"),
            "{}",
            v[0]
        );

        // Ahead everywhere: one short line; no rival at all: nothing.
        let ahead = [
            timed(s, "auto", k, &[1, 32], &p, Some(4.0)),
            timed(s, "torch_native", t, &[1, 32], &p, Some(4.5)),
        ];
        assert_eq!(
            verdict(&ahead),
            ["`auto` against PyTorch native and torch.compile: at or ahead at the one point"]
        );
        assert!(verdict(&ahead[..1]).is_empty());
        assert!(verdict(&[]).is_empty());
    }

    /// The word the verdict looks for is the one the baselines script writes.
    #[test]
    fn the_host_bound_word_is_the_baselines_script_s() {
        let script = include_str!("../../baselines/torch_baselines.py");
        assert!(
            script.contains(&format!("HOST_BOUND = \"{HOST_BOUND}\"")),
            "baselines/torch_baselines.py no longer defines HOST_BOUND = \"{HOST_BOUND}\""
        );
    }

    #[test]
    fn csv_rows_of_a_gemm_give_its_output_shape() {
        let r = Record::blank(
            Op::Linear,
            "v7_wgmma_tma_store",
            RecordTier::Kernlab(Tier::Cuda),
            DeviceKind::Cuda,
            DType::BF16,
            &[512, 256, 64],
            &Params::default(),
            1,
        );
        let row = csv_row(&r);
        let at = |name: &str| row[CSV_COLUMNS.iter().position(|c| *c == name).unwrap()].clone();
        assert_eq!(at("shape"), "512x256x64");
        assert_eq!(at("form"), "bias + none");
        assert_eq!(
            (at("rows"), at("cols"), at("numel")),
            ("512".into(), "256".into(), "131072".into())
        );
    }
}
