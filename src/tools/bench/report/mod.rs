//! Bench results: one record per (op, variant, dtype), a table for people and JSON for tools.
//! Every derived figure (GB/s, % of copy, TFLOP/s, speedup) is computed from the measured
//! time and the counted bytes/FLOPs, never typed in.

use super::ceiling::{fmt_flops, matmul_for, Ceilings, CopyCeiling, MatmulCeiling, Provenance};
use super::harness::{within_noise, Measurement, TimingOpts};
use crate::ops::Variant;
use crate::ops::{Op, Params, Tier};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::DType;
mod csv;
mod table;
mod verdict;

pub use csv::*;
pub use verdict::*;

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

pub use crate::runtime::tensor::shape_str;

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
    /// CUDA, ops that show it (the MLP): the most device memory held at once during the
    /// validation call, in bytes: the inputs and outputs (with `--rotate`'s copies), the
    /// variant's temporaries, and cuBLAS's workspace once a variant has made it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_mem_bytes: Option<u64>,
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
            params: p.clone(),
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
            peak_mem_bytes: None,
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
    pub props: Option<crate::runtime::device::DeviceProps>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub kernlab_version: &'static str,
    pub date: String,
    pub device: DeviceInfo,
    /// None in a `--check-only` run, which times nothing.
    pub copy: Option<CopyCeiling>,
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
    /// Stopped by Ctrl-C: the points after the last record were not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interrupted>,
}

/// How far an interrupted run got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Interrupted {
    pub points_done: usize,
    pub points_planned: usize,
}

impl BenchReport {
    /// The copy ceiling's GB/s (NaN in a `--check-only` run, which has none and times nothing).
    pub fn copy_gbps(&self) -> f64 {
        self.copy.as_ref().map_or(f64::NAN, |c| c.gbps)
    }

    pub fn new(device: &Device, copy: Option<CopyCeiling>, seed: u64, timing: &TimingOpts) -> Self {
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
            interrupted: None,
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
        // The vendor's time at each point of an op that names one (cuBLAS for matmul,
        // cuBLASLt for linear).
        let vendor: Vec<(Op, DType, Vec<usize>, f64)> = self
            .records
            .iter()
            .filter(|r| {
                r.tier == RecordTier::Kernlab(Tier::Vendor)
                    && r.status == Status::Ok
                    && r.op.vendor_variant() == Some(r.variant.as_str())
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
        h += &match &self.copy {
            Some(c) => format!(
                "\ncopy ceiling {:.0} GB/s ({}, median of {} calls) · seed {}",
                c.gbps, c.how, c.stats.calls, self.seed
            ),
            None => format!(
                "\n--check-only: each variant validated twice, nothing timed · seed {}",
                self.seed
            ),
        };
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

    /// How many of kernlab's own records failed or raised an error, and the first of them in
    /// words (`op/variant dtype shape: note`), for the run's closing error.
    pub fn failure_summary(&self) -> Option<String> {
        let failed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| {
                r.tier != RecordTier::Torch && matches!(r.status, Status::Failed | Status::Error)
            })
            .collect();
        let first = failed.first()?;
        Some(format!(
            "{} FAILED validation or raised errors; the first: {}/{} {} {}: {}",
            match failed.len() {
                1 => "1 case".to_string(),
                n => format!("{n} cases"),
            },
            first.op,
            first.variant,
            first.dtype,
            shape_str(&first.shape),
            first.note.as_deref().unwrap_or("(no note)")
        ))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{softmax, Tier};
    use crate::runtime::device::DeviceKind;
    use crate::runtime::dtype::DType;

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

    #[test]
    fn notes_are_appended_after_a_semicolon() {
        let mut r = Record::blank(
            softmax::OP,
            "auto",
            RecordTier::Kernlab(Tier::Cuda),
            DeviceKind::Cuda,
            DType::F32,
            &[4, 4],
            &softmax::OP.default_params(),
            1,
        );
        r.add_note("validated on 2 rows".into());
        r.add_note("settled timing failed: x".into());
        assert_eq!(
            r.note.as_deref(),
            Some("validated on 2 rows; settled timing failed: x")
        );
    }
}
