//! The tables people read: one per (op, dtype, shape), the fastest figures in green.

use super::*;

impl BenchReport {
    /// One table per (op, dtype, shape); a `--check-only` run's records in one table.
    pub fn tables(&self) -> Vec<(String, Table)> {
        if self.copy.is_none() {
            return vec![self.check_table()];
        }
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
                let gemm = op.flops_bound();
                let vendor = op.vendor_variant().is_some();
                let per_call = if first.flops >= 1e12 {
                    format!("{:.2} TFLOP", first.flops / 1e12)
                } else {
                    format!("{} GFLOP", fmt_sig(first.flops / 1e9))
                };
                let title = format!(
                    "{op}{} {dt} {} — {}",
                    first.params.form_suffix(),
                    shape_str(&shape),
                    if op.grammar() == crate::ops::Grammar::Gemm {
                        format!(
                            "M×N×K, {per_call} per call (2·M·N·K), {} MB at minimum",
                            fmt_sig(first.bytes as f64 / 1e6)
                        )
                    } else if gemm {
                        format!(
                            "{per_call} per call, {} MB at minimum",
                            fmt_sig(first.bytes as f64 / 1e6)
                        )
                    } else {
                        format!("{} MB moved at minimum", first.bytes as f64 / 1e6)
                    }
                );
                let memory = op.shows_peak_memory();
                // On the CPU, with --torch: every row's time against PyTorch's own kernel
                // (torch_native), PyTorch's time ÷ the row's, so above 1 is faster than it.
                let torch_ms = (self.device.kind == DeviceKind::Cpu)
                    .then(|| {
                        self.records.iter().find(|r| {
                            r.op == op
                                && r.dtype == dt
                                && r.shape == shape
                                && r.variant == "torch_native"
                                && r.status == Status::Ok
                        })
                    })
                    .flatten()
                    .and_then(|r| r.median_ms);
                let mut t = Table::new();
                t.load_preset(UTF8_FULL_CONDENSED);
                let mut header = vec![
                    "variant",
                    "tier",
                    "ms (median)",
                    "p20–p80",
                    "min · calls",
                    if gemm { "TFLOP/s" } else { "GB/s" },
                    match (gemm, vendor) {
                        (false, _) => "% copy",
                        (true, true) => "% vendor",
                        (true, false) => "% matmul",
                    },
                    "× manual",
                    "max rel err",
                    "status",
                ];
                if memory {
                    header.insert(header.len() - 1, "peak MiB");
                }
                if torch_ms.is_some() {
                    header.insert(8, "× torch");
                }
                t.set_header(header);
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
                    let mut row = vec![
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
                        Cell::new(f(
                            match (gemm, vendor) {
                                (false, _) => r.pct_of_copy,
                                (true, true) => r.pct_of_vendor,
                                (true, false) => r.pct_of_matmul,
                            },
                            1,
                        ))
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
                    ];
                    if let Some(tm) = torch_ms {
                        let ratio = r
                            .median_ms
                            .filter(|&m| m > 0.0 && r.status == Status::Ok)
                            .map(|m| format!("{:.2}×", tm / m))
                            .unwrap_or_else(|| "—".into());
                        row.insert(8, Cell::new(ratio).set_alignment(CellAlignment::Right));
                    }
                    if memory {
                        let mib = r
                            .peak_mem_bytes
                            .map(|b| format!("{:.0}", b as f64 / (1u64 << 20) as f64))
                            .unwrap_or_else(|| "—".into());
                        row.insert(
                            row.len() - 1,
                            Cell::new(mib).set_alignment(CellAlignment::Right),
                        );
                    }
                    t.add_row(row);
                }
                (title, t)
            })
            .collect()
    }
}

impl BenchReport {
    /// A `--check-only` run: a row per (op, variant, dtype, shape) with its errors.
    fn check_table(&self) -> (String, Table) {
        let mut t = Table::new();
        t.load_preset(UTF8_FULL_CONDENSED);
        t.set_header(vec![
            "op",
            "variant",
            "dtype",
            "shape",
            "max rel err",
            "rel L2",
            "status",
            "note",
        ]);
        let f = |v: Option<f64>| v.map(|v| format!("{v:.1e}")).unwrap_or_else(|| "—".into());
        for r in &self.records {
            t.add_row(vec![
                Cell::new(format!("{}{}", r.op, r.params.form_suffix())),
                Cell::new(match &r.picked {
                    Some(p) => format!("{} → {p}", r.variant),
                    None => r.variant.clone(),
                }),
                Cell::new(r.dtype.to_string()),
                Cell::new(shape_str(&r.shape)),
                Cell::new(f(r.max_rel_err)).set_alignment(CellAlignment::Right),
                Cell::new(f(r.rel_l2)).set_alignment(CellAlignment::Right),
                match r.status {
                    Status::Ok => Cell::new("ok").fg(Color::Green),
                    Status::Failed => Cell::new("FAILED").fg(Color::Red),
                    Status::Unsupported => Cell::new("unsupported").fg(Color::DarkGrey),
                    Status::Error => Cell::new("ERROR").fg(Color::Red),
                },
                Cell::new(r.note.clone().unwrap_or_default()),
            ]);
        }
        (
            "validation: each variant called twice, each output checked against the f64 reference"
                .into(),
            t,
        )
    }
}
