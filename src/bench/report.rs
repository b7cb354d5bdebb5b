//! Bench results: one record per (op, variant, dtype), a table for people and JSON for tools.
//! Every derived figure (GB/s, % of copy, TFLOP/s, speedup) is computed from the measured
//! time and the counted bytes/FLOPs, never typed in.

use super::ceiling::CopyCeiling;
use super::harness::{Stats, TimingOpts};
use crate::device::{Device, DeviceKind};
use crate::dtype::DType;
use crate::ops::{Op, Params, Tier};
use crate::registry::Variant;
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Color, Table};
use serde::Serialize;

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
    pub tier: Tier,
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
    pub calls: Option<usize>,
    /// Minimum traffic: each input read once, each output written once.
    pub bytes: usize,
    pub flops: f64,
    pub gbps: Option<f64>,
    pub pct_of_copy: Option<f64>,
    pub tflops: Option<f64>,
    /// manual's median time / this one's (same op, dtype and device).
    pub speedup_vs_manual: Option<f64>,
    pub note: Option<String>,
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
        Record {
            op,
            variant: v.name.to_string(),
            tier: v.tier,
            device: device.kind(),
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
            calls: None,
            bytes: 0,
            flops: 0.0,
            gbps: None,
            pct_of_copy: None,
            tflops: None,
            speedup_vs_manual: None,
            note: None,
        }
    }

    pub fn set_stats(&mut self, s: Stats, copy_gbps: f64) {
        let secs = s.median_ms * 1e-3;
        self.median_ms = Some(s.median_ms);
        self.p20_ms = Some(s.p20_ms);
        self.p80_ms = Some(s.p80_ms);
        self.min_ms = Some(s.min_ms);
        self.calls = Some(s.calls);
        let gbps = self.bytes as f64 / secs / 1e9;
        self.gbps = Some(gbps);
        self.pct_of_copy = Some(100.0 * gbps / copy_gbps);
        self.tflops = Some(self.flops / secs / 1e12);
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
    pub seed: u64,
    pub timing: TimingOpts,
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
            seed,
            timing: *timing,
            records: Vec::new(),
        }
    }

    pub fn fill_speedups(&mut self) {
        let manual: Vec<(Op, DType, f64)> = self
            .records
            .iter()
            .filter(|r| r.tier == Tier::Manual)
            .filter_map(|r| r.median_ms.map(|t| (r.op, r.dtype, t)))
            .collect();
        for r in &mut self.records {
            if let (Some(t), Some(&(_, _, m))) = (
                r.median_ms,
                manual.iter().find(|(o, d, _)| *o == r.op && *d == r.dtype),
            ) {
                r.speedup_vs_manual = Some(m / t);
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
                    .find(|r| r.op == op && r.dtype == dt)
                    .unwrap();
                let title = format!(
                    "{op}{} {dt} {} — {} MB moved at minimum",
                    if op == Op::Gelu {
                        format!(" ({})", first.params.gelu.name())
                    } else {
                        String::new()
                    },
                    shape
                        .iter()
                        .map(|d| d.to_string())
                        .collect::<Vec<_>>()
                        .join("×"),
                    first.bytes as f64 / 1e6
                );
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED);
                t.set_header(vec![
                    "variant",
                    "tier",
                    "ms (median)",
                    "p20–p80",
                    "GB/s",
                    "% copy",
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
                    t.add_row(vec![
                        Cell::new(&r.variant),
                        Cell::new(r.tier.to_string()),
                        Cell::new(f(r.median_ms, ms_digits)).set_alignment(CellAlignment::Right),
                        Cell::new(match (r.p20_ms, r.p80_ms) {
                            (Some(a), Some(b)) => format!("{a:.ms_digits$}–{b:.ms_digits$}"),
                            _ => "—".into(),
                        })
                        .set_alignment(CellAlignment::Right),
                        Cell::new(f(r.gbps, 0)).set_alignment(CellAlignment::Right),
                        Cell::new(f(r.pct_of_copy, 1)).set_alignment(CellAlignment::Right),
                        Cell::new(
                            r.speedup_vs_manual
                                .map(|s| format!("{s:.2}×"))
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
                    "{}/{} {}: {:?}: {}",
                    r.op,
                    r.variant,
                    r.dtype,
                    r.status,
                    r.note.as_deref().unwrap_or("")
                )
            })
            .collect()
    }

    pub fn any_failed(&self) -> bool {
        self.records
            .iter()
            .any(|r| matches!(r.status, Status::Failed | Status::Error))
    }
}
