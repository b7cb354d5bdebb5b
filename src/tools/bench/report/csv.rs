//! The CSV form of a report: one line per record.

use super::*;

/// One record's fields in the order of [`CSV_COLUMNS`].
/// `rows`, `cols` and `numel` are the output's: for a GEMM `M×N×K`, M, N and M·N.
pub fn csv_row(r: &Record) -> Vec<String> {
    let out = r.op.out_shape(&r.shape, &r.params);
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
        r.params.form_column(),
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
    use crate::ops::{linear, matmul, softmax, Params, Tier};
    use crate::runtime::device::DeviceKind;
    use crate::runtime::dtype::DType;

    /// A CSV line has a field per column, and `auto`'s choice lands in `picked` (quoted when
    /// it holds a comma), so a sweep's CSV says which version ran at each point.
    #[test]
    fn csv_rows_carry_what_auto_picked() {
        let p = softmax::OP.default_params();
        let mut r = Record::blank(
            softmax::OP,
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

    #[test]
    fn csv_rows_of_a_gemm_give_its_output_shape() {
        let r = Record::blank(
            linear::OP,
            "v7_wgmma_tma_store",
            RecordTier::Kernlab(Tier::Cuda),
            DeviceKind::Cuda,
            DType::BF16,
            &[512, 256, 64],
            &Params::new(matmul::GemmParams {
                act: matmul::Activation::None,
                bias: true,
            }),
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
