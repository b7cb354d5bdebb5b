//! PyTorch baselines as extra columns: `baselines/torch_baselines.py` (PyTorch manual, PyTorch
//! native, torch.compile and the lecture's Triton kernels, each validated against an f64
//! reference, then timed with `triton.testing.do_bench`) run through `python3` for the same op,
//! shapes, dtype and seed, its JSON parsed into records of tier `torch`.
//!
//! Without Python, torch, triton or a CUDA device the script exits 3 (or cannot start): the
//! run says so in one line and goes on. Its GB/s, % of copy and speedups are derived here from
//! kernlab's own byte count and the script's median time, like every other record.

use super::harness::{Rotate, TimingOpts};
use super::report::{Record, RecordTier, Status};
use crate::ops::{Grammar, Op, Params};
use crate::runtime::device::DeviceKind;
use crate::runtime::dtype::DType;
use crate::runtime::launch::TritonLaunch;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the script and the interpreter are.
#[derive(Debug, Clone, PartialEq)]
pub struct TorchConfig {
    pub python: String,
    pub script: PathBuf,
    /// The PyTorch columns to run (the script's `--variants`); `None`: every one the op has.
    pub columns: Option<Vec<String>>,
}

/// Every PyTorch column the baselines script knows (`--torch=LIST` picks among them; an op
/// runs those it has).
pub const COLUMNS: &[&str] = &[
    "torch_manual",
    "torch_native",
    "torch_compile",
    "torch_compile_ro",
    "triton",
];

/// `--torch=LIST`'s columns: known names, each once; an error naming the unknown one.
pub fn parse_columns(list: &str) -> crate::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for c in list.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        if !COLUMNS.contains(&c) {
            return Err(crate::Error::Invalid(format!(
                "--torch={list}: no PyTorch column '{c}' (the columns: {})",
                COLUMNS.join(", ")
            )));
        }
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
    }
    if out.is_empty() {
        return Err(crate::Error::Invalid(format!(
            "--torch={list}: name at least one column ({})",
            COLUMNS.join(", ")
        )));
    }
    Ok(out)
}

impl TorchConfig {
    /// `$KERNLAB_BASELINES`, else `baselines/torch_baselines.py` under the current directory;
    /// the interpreter is `$KERNLAB_PYTHON`, else `python3`.
    pub fn locate() -> TorchConfig {
        let script = match std::env::var_os("KERNLAB_BASELINES") {
            Some(p) => PathBuf::from(p),
            None => PathBuf::from("baselines/torch_baselines.py"),
        };
        let python = std::env::var("KERNLAB_PYTHON").unwrap_or_else(|_| "python3".into());
        TorchConfig {
            python,
            script,
            columns: None,
        }
    }
}

/// The script's JSON (the contract `check_contract` in the script enforces; keys kernlab
/// does not use are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct TorchDoc {
    pub available: bool,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub torch_version: Option<String>,
    #[serde(default)]
    pub triton_version: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub seed: Option<u64>,
    /// The rounds each gelu/softmax variant was timed in (`--repeat`; 1, or absent in older
    /// documents, for one).
    #[serde(default)]
    pub repeat: Option<usize>,
    /// PyTorch's `dst.copy_(src)` of 1 GiB timed by do_bench: the same copy kernlab times for
    /// its ceiling, under the other harness.
    #[serde(default)]
    pub copy: Option<TorchCopy>,
    /// A CPU run's threads (torch.get_num_threads()).
    #[serde(default)]
    pub threads: Option<usize>,
    pub records: Vec<TorchRecord>,
}

/// Where the baselines script runs PyTorch: kernlab's CUDA device (its ordinal among the
/// visible ones, and its L2 for --rotate auto), or the CPU (the run's thread count, and the
/// last-level cache the script flushes and rotates against, as kernlab's CPU timer does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScriptTarget {
    Cuda { ordinal: usize, l2_bytes: usize },
    Cpu { threads: usize, llc_bytes: usize },
}

#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct TorchCopy {
    pub bytes: u64,
    pub median_ms: f64,
    pub gbps: f64,
}

/// One line comparing PyTorch's copy_ with kernlab's copy ceiling of the same run.
pub fn copy_comparison(doc: &TorchDoc, kernlab_gbps: f64) -> Option<String> {
    let c = doc.copy.as_ref()?;
    let (device, timer) = if doc.threads.is_some() {
        ("CPU", "timed as kernlab's CPU tier is")
    } else {
        ("GPU", "do_bench")
    };
    Some(format!(
        "copy, same {device}, same run: PyTorch copy_ of {:.0} MiB ({timer}) {:.0} GB/s; kernlab's copy ceiling {:.0} GB/s ({:+.1}%)",
        c.bytes as f64 / (1u64 << 20) as f64,
        c.gbps,
        kernlab_gbps,
        100.0 * (kernlab_gbps / c.gbps - 1.0)
    ))
}

#[derive(Debug, Clone, Deserialize)]
pub struct TorchRecord {
    pub op: String,
    pub variant: String,
    pub tier: String,
    pub dtype: String,
    pub shape: Vec<usize>,
    pub gelu: Option<String>,
    /// matmul / linear: the epilogue's activation (kernlab's names).
    #[serde(default)]
    pub activation: Option<String>,
    /// matmul / linear: the rows checked against f64, and how `max_rel_err` was measured
    /// (`max_row_rel_l2`, as kernlab judges GEMMs, or `elementwise_row_scaled`).
    #[serde(default)]
    pub validated_rows: Option<usize>,
    #[serde(default)]
    pub error_metric: Option<String>,
    pub status: String,
    pub validated: bool,
    pub max_rel_err: Option<f64>,
    pub median_ms: Option<f64>,
    pub p20_ms: Option<f64>,
    pub p80_ms: Option<f64>,
    pub bytes: usize,
    pub gbps: Option<f64>,
    pub note: Option<String>,
    /// Under `--rotate`: the copies the timed calls cycled through (none: one; set on `ok`
    /// records only).
    #[serde(default)]
    pub rotate_copies: Option<usize>,
    /// `kernlab_do_bench` records: the version `auto` picked there (kernlab's own record says).
    #[serde(default)]
    pub picked: Option<String>,
    /// Calls under 1 ms: the median of do_bench's loop run again with every launch queued
    /// ahead of the GPU (the script's `host_check`), ms: the call's GPU time, no host time in it.
    #[serde(default)]
    pub queued_ms: Option<f64>,
    /// Calls under 1 ms: the median of the settled form (the script's `settled_check`: the
    /// stream parked behind each flush until it finished, then the events and the call freed as
    /// one batch), ms, as kernlab's `CudaTimer::settled`.
    #[serde(default)]
    pub settled_ms: Option<f64>,
    /// gelu/softmax under `--repeat K` > 1: every round's median (in the order they ran) and
    /// their (max − min) / the kept round's median, as kernlab's `--repeat`.
    /// (A round's median the script could not write as a number arrives as null: the rounds
    /// are then left out, not the document.)
    #[serde(default)]
    pub repeat_medians_ms: Option<Vec<Option<f64>>>,
    #[serde(default)]
    pub spread: Option<f64>,
}

/// The variant name of kernlab's own kernels called in the baselines' process, through the
/// kernlab Python package on PyTorch's tensors, and timed there by do_bench.
pub const KERNLAB_VARIANT: &str = "kernlab_do_bench";

/// A Triton variant's launch at one point, for the baselines' `triton` column: the same kernel
/// (its file written beside the plans), launched through Triton with the same constants,
/// warps, stages and grid, on PyTorch's tensors.
#[derive(Debug, Clone)]
pub struct TritonPlan {
    /// The script's dimensions of the point ([`script_dims`]).
    pub shape: Vec<usize>,
    pub launch: TritonLaunch,
}

/// Write `plans` for the script into `dir`: each kernel file once, and `triton_plans.json`
/// (format 1: `{"version": 1, "op", "dtype", "plans": [{"shape", "file", "kernel",
/// "constexprs", "num_warps", "num_stages", "grid"}]}`, one plan a shape); returns the JSON's
/// path.
pub fn write_triton_plans(
    dir: &Path,
    op: Op,
    dtype: DType,
    plans: &[TritonPlan],
) -> std::io::Result<PathBuf> {
    let mut out = Vec::new();
    let mut written = std::collections::HashSet::new();
    let mut planned = std::collections::HashSet::new();
    for p in plans.iter().filter(|p| planned.insert(p.shape.clone())) {
        let l = &p.launch;
        if written.insert(l.file) {
            std::fs::write(dir.join(l.file), l.src)?;
        }
        let mut plan = serde_json::to_value(l)?;
        plan["shape"] = serde_json::json!(p.shape);
        out.push(plan);
    }
    write_plan_file(&dir.join("triton_plans.json"), op, dtype, out)
}

/// A plan file for the script (format 1: `{"version": 1, "op", "dtype", "plans"}`, as its
/// `common.load_plan_file` reads it); returns its path.
fn write_plan_file(
    path: &Path,
    op: Op,
    dtype: DType,
    plans: Vec<serde_json::Value>,
) -> std::io::Result<PathBuf> {
    let doc = serde_json::json!({
        "version": 1,
        "op": script_op(op),
        "dtype": dtype.to_string(),
        "plans": plans,
    });
    std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    Ok(path.to_path_buf())
}

pub fn parse(json: &str) -> crate::runtime::error::Result<TorchDoc> {
    serde_json::from_str(json).map_err(|e| {
        crate::runtime::error::Error::Invalid(format!(
            "the torch baselines' JSON does not parse: {e}"
        ))
    })
}

/// The script's dimensions of a kernlab shape: a GEMM's `M, N, K` as they are, a row op's
/// `ROWS, COLS` ([`script_shape`]).
pub fn script_dims(op: Op, shape: &[usize]) -> Vec<usize> {
    if op.grammar() == Grammar::Gemm {
        return shape.to_vec();
    }
    let (r, c) = script_shape(shape);
    vec![r, c]
}

/// The script's 2-D `ROWSxCOLS` for a kernlab shape: 1-D inputs are one row, leading
/// dimensions fold into rows (softmax runs over the last one either way).
pub fn script_shape(shape: &[usize]) -> (usize, usize) {
    match shape {
        [] => (1, 1),
        [n] => (1, *n),
        s => (s[..s.len() - 1].iter().product(), s[s.len() - 1]),
    }
}

/// The records of a parsed document, on kernlab's terms: each shape mapped back to the one
/// kernlab asked for, bytes counted by kernlab, GB/s and % of copy derived from the median.
pub fn to_records(
    doc: &TorchDoc,
    shapes: &[Vec<usize>],
    params: &Params,
    copy_gbps: f64,
) -> crate::runtime::error::Result<Vec<Record>> {
    let mut out = Vec::new();
    for t in &doc.records {
        let op: Op = t.op.parse()?;
        let dtype: DType = t.dtype.parse().map_err(|e: String| {
            crate::runtime::error::Error::Invalid(format!("torch baselines: {e}"))
        })?;
        let shape = shapes
            .iter()
            .find(|s| {
                if op.grammar() == Grammar::Gemm {
                    t.shape == **s
                } else {
                    let (r, c) = script_shape(s);
                    t.shape == [r, c]
                }
            })
            .cloned()
            .unwrap_or_else(|| t.shape.clone());
        // The script ran with the run's parameters (it echoes them: `gelu`, `activation`).
        let p = params.clone();
        let mut r = Record::blank(
            op,
            &t.variant,
            RecordTier::Torch,
            DeviceKind::Cuda,
            dtype,
            &shape,
            &p,
            doc.seed.unwrap_or(0),
        );
        r.bytes = op.min_bytes(&shape, dtype, &p);
        r.flops = op.flops(&shape, &p);
        r.status = match t.status.as_str() {
            "ok" => Status::Ok,
            "failed" => Status::Failed,
            "unsupported" => Status::Unsupported,
            _ => Status::Error,
        };
        r.validated = t.validated;
        r.max_rel_err = t.max_rel_err;
        r.note = t.note.clone();
        if t.bytes != r.bytes {
            r.note = Some(format!(
                "the script counted {} bytes, kernlab {}; GB/s uses kernlab's{}",
                t.bytes,
                r.bytes,
                t.note
                    .as_deref()
                    .map(|n| format!("; {n}"))
                    .unwrap_or_default()
            ));
        }
        r.picked = t.picked.clone();
        if r.status == Status::Ok {
            r.rotate_copies = t.rotate_copies.filter(|&n| n > 1);
            r.median_ms = t.median_ms;
            r.p20_ms = t.p20_ms;
            r.p80_ms = t.p80_ms;
            let positive = |t: Option<f64>| t.filter(|q| q.is_finite() && *q > 0.0);
            r.queued_ms = positive(t.queued_ms);
            r.settled_ms = positive(t.settled_ms);
            if let (Some(m), Some(sp)) = (&t.repeat_medians_ms, t.spread) {
                let m: Option<Vec<f64>> = m.iter().map(|v| v.filter(|v| *v > 0.0)).collect();
                if let Some(m) = m.filter(|m| m.len() > 1 && sp.is_finite() && sp >= 0.0) {
                    r.repeat_medians_ms = m;
                    r.spread = Some(sp);
                }
            }
            r.derive(copy_gbps);
        }
        out.push(r);
    }
    Ok(out)
}

/// What running the script gave.
#[derive(Debug)]
pub enum Outcome {
    Ran(TorchDoc),
    /// No Python, torch, triton or CUDA (exit 3, or Python would not start): the reason.
    Unavailable(String),
    /// Anything else went wrong: one line saying what.
    Failed(String),
}

/// The op's name on the baselines' command line.
fn script_op(op: Op) -> &'static str {
    op.torch().map_or(op.name(), |t| t.op)
}

/// Run the script for one op and dtype over `shapes` on CUDA device `ordinal`, whose L2
/// holds `l2_bytes` (what `--rotate auto` counts with, on both sides), with rows `row_stride`
/// elements apart where given (row ops), `kernlab`'s variant called through the kernlab
/// package there (its `kernlab_do_bench` column), and kernlab's Triton launches.
#[allow(clippy::too_many_arguments)]
pub fn run_script(
    cfg: &TorchConfig,
    op: Op,
    op_args: &[String],
    dtype: DType,
    shapes: &[Vec<usize>],
    timing: &TimingOpts,
    seed: u64,
    target: ScriptTarget,
    row_stride: Option<usize>,
    kernlab: Option<&str>,
    tritons: &[TritonPlan],
) -> Outcome {
    if !cfg.script.is_file() {
        return Outcome::Unavailable(format!(
            "{} not found (run from the kernlab checkout, or set KERNLAB_BASELINES)",
            cfg.script.display()
        ));
    }
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => return Outcome::Failed(format!("no temporary directory: {e}")),
    };
    let json = dir.path().join("torch_baselines.json");
    let shapes_arg = shapes
        .iter()
        .map(|s| {
            script_dims(op, s)
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("x")
        })
        .collect::<Vec<_>>()
        .join(",");
    let mut cmd = Command::new(&cfg.python);
    cmd.arg(&cfg.script)
        .args(["--op", script_op(op), "--dtype", &dtype.to_string()])
        .args(["--shapes", &shapes_arg])
        .args(["--warmup-ms", &format!("{}", timing.warmup_ms.max(0.001))])
        .args(["--rep-ms", &format!("{}", timing.rep_ms)])
        .args(["--seed", &(seed % (1 << 31)).to_string()])
        .arg("--json")
        .arg(&json)
        .arg("--quiet");
    if let Some(cols) = &cfg.columns {
        cmd.args(["--variants", &cols.join(",")]);
    }
    // --repeat K: the script's rounds (row ops and the MLP; its GEMMs run once).
    if timing.repeat > 1 && op.grammar() != Grammar::Gemm {
        cmd.args(["--repeat", &timing.repeat.to_string()]);
    }
    // The MLP's baselines compile one model and time it on one input (copies would each be
    // compiled anew): no rotation there.
    let cache_bytes = match target {
        ScriptTarget::Cuda { l2_bytes, .. } => l2_bytes,
        ScriptTarget::Cpu { threads, llc_bytes } => {
            cmd.args(["--device", "cpu", "--threads", &threads.max(1).to_string()]);
            llc_bytes
        }
    };
    let rotating = timing.rotate != Rotate::Copies(1) && op.grammar() != Grammar::Batch;
    if rotating {
        cmd.args(["--rotate", &timing.rotate.to_string()]);
    }
    // The CPU's flush is sized by it too.
    if rotating || matches!(target, ScriptTarget::Cpu { .. }) {
        cmd.args(["--cache-bytes", &cache_bytes.max(1).to_string()]);
    }
    // Rows as kernlab's (row ops): the same stride, the gaps NaN there too.
    if let (Some(ld), Grammar::Rows) = (row_stride, op.grammar()) {
        cmd.args(["--row-stride", &ld.to_string()]);
    }
    if let Some(v) = kernlab {
        cmd.args(["--kernlab", v, "--kernlab-build", crate::BUILD_ID]);
    }
    if !tritons.is_empty() {
        match write_triton_plans(dir.path(), op, dtype, tritons) {
            Ok(p) => {
                cmd.arg("--triton-plans").arg(p);
            }
            Err(e) => stderr_line!(
                "kernlab: could not write the Triton launches for PyTorch's process ({e}): its triton column is left out"
            ),
        }
    }
    cmd.args(op_args);
    // torch numbers devices among the visible ones, as kernlab does: pick the same one.
    if let ScriptTarget::Cuda {
        ordinal: ordinal @ 1..,
        ..
    } = target
    {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        cmd.env(
            "CUDA_VISIBLE_DEVICES",
            visible_device(visible.as_deref(), ordinal),
        );
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Outcome::Unavailable(format!("{} not found", cfg.python))
        }
        Err(e) => return Outcome::Failed(format!("could not start {}: {e}", cfg.python)),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last_line = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    let doc = std::fs::read_to_string(&json).ok().map(|t| parse(&t));
    match (out.status.code(), doc) {
        (Some(0), Some(Ok(doc))) if doc.available => Outcome::Ran(doc),
        (Some(3), Some(Ok(doc))) => Outcome::Unavailable(
            doc.reason
                .unwrap_or_else(|| "the script says so (exit 3)".into()),
        ),
        (Some(3), _) => Outcome::Unavailable(last_line),
        (_, Some(Err(e))) => Outcome::Failed(e.to_string()),
        (code, _) => Outcome::Failed(format!(
            "{} {} exited with {}: {last_line}",
            cfg.python,
            cfg.script.display(),
            code.map(|c| c.to_string())
                .unwrap_or_else(|| "a signal".into())
        )),
    }
}

/// `CUDA_VISIBLE_DEVICES` for torch's device 0 to be kernlab's `cuda:ordinal`.
pub fn visible_device(visible: Option<&str>, ordinal: usize) -> String {
    match visible {
        Some(v) if !v.trim().is_empty() => v
            .split(',')
            .nth(ordinal)
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| ordinal.to_string()),
        _ => ordinal.to_string(),
    }
}

/// The header line about a document: versions, device and how it was timed (`rotate`: the
/// run's `--rotate`, which the script was given too; `repeat`: the run's `--repeat`, and the
/// rounds the document says it ran).
pub fn describe(doc: &TorchDoc, script: &Path, rotate: Rotate, repeat: usize) -> String {
    let repeat = match doc.repeat {
        Some(k) if k > 1 => format!(
            "; {k} rounds a shape, each timing every variant in turn, the median round kept \
             (--repeat {k})"
        ),
        _ if repeat > 1 => "; one round a shape (--repeat is for the row ops)".into(),
        _ => String::new(),
    };
    let rotated = match rotate {
        Rotate::Copies(1) => String::new(),
        r => format!(
            "; calls rotated over copies of the inputs and output as kernlab's \
             (--rotate {r}: the same count a shape)"
        ),
    };
    if doc.threads.is_some() {
        return format!(
            "PyTorch baselines ({}): torch {}, {}; timed as kernlab's CPU tier is (median; \
             the cache flushed before each call{rotated}{repeat}); torch_native through its \
             out= form where PyTorch has one",
            script.display(),
            doc.torch_version.as_deref().unwrap_or("?"),
            doc.device.as_deref().unwrap_or("?")
        );
    }
    format!(
        "PyTorch baselines ({}): torch {}, triton {}, {}; timed by triton.testing.do_bench \
         (median; L2 flushed by do_bench{rotated}{repeat}; --graph does not apply to them)",
        script.display(),
        doc.torch_version.as_deref().unwrap_or("?"),
        doc.triton_version.as_deref().unwrap_or("?"),
        doc.device.as_deref().unwrap_or("?")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torch_columns_parse_once_each_and_refuse_unknown_or_none() {
        assert_eq!(
            parse_columns("torch_native, torch_compile_ro,torch_native").unwrap(),
            ["torch_native", "torch_compile_ro"]
        );
        let e = parse_columns("torch_native,eager").unwrap_err().to_string();
        assert!(e.contains("no PyTorch column 'eager'"), "{e}");
        let e = parse_columns(",").unwrap_err().to_string();
        assert!(e.contains("name at least one column"), "{e}");
    }

    #[test]
    fn the_copy_line_compares_both_harnesses() {
        let doc = parse(r#"{"available": true, "copy": {"bytes": 1073741824, "median_ms": 0.5, "gbps": 4294.97}, "records": []}"#).unwrap();
        let line = copy_comparison(&doc, 4251.0).unwrap();
        assert!(
            line.contains("1024 MiB") && line.contains("4295 GB/s") && line.contains("4251 GB/s"),
            "{line}"
        );
        assert!(line.contains("-1.0%"), "{line}");
        let none = parse(r#"{"available": true, "records": []}"#).unwrap();
        assert!(copy_comparison(&none, 1.0).is_none());
    }

    #[test]
    fn rotated_runs_say_so_and_keep_their_copies() {
        let rec = |copies: &str| {
            format!(
                r#"{{"op": "softmax", "variant": "torch_native", "tier": "torch", "dtype": "bf16",
                "shape": [4096, 32], "gelu": null, "status": "ok", "validated": true,
                "max_rel_err": 0.001, "median_ms": 0.005, "p20_ms": 0.004, "p80_ms": 0.006,
                "bytes": 524288, "gbps": 104.9, "note": null{copies}}}"#
            )
        };
        let doc = parse(&format!(
            r#"{{"available": true, "records": [{}, {}, {}, {}]}}"#,
            rec(r#", "rotate_copies": 480"#),
            rec(""),
            rec(r#", "rotate_copies": 1"#),
            rec(r#", "rotate_copies": 480"#).replace(r#""status": "ok""#, r#""status": "error""#)
        ))
        .unwrap();
        let recs = to_records(
            &doc,
            &[vec![4096, 32]],
            &crate::ops::softmax::OP.default_params(),
            4000.0,
        )
        .unwrap();
        let copies: Vec<_> = recs.iter().map(|r| r.rotate_copies).collect();
        assert_eq!(copies, [Some(480), None, None, None]);
        // The queued and the settled median come through where the script gave one, as a
        // positive time.
        let queued: fn(&Record) -> Option<f64> = |r| r.queued_ms;
        let settled: fn(&Record) -> Option<f64> = |r| r.settled_ms;
        for (key, (given, bad), got) in [
            ("queued_ms", (0.0061, "0"), queued),
            ("settled_ms", (0.0047, "-1"), settled),
        ] {
            let doc = parse(&format!(
                r#"{{"available": true, "records": [{}, {}, {}]}}"#,
                rec(&format!(r#", "{key}": {given}"#)),
                rec(&format!(r#", "{key}": null"#)),
                rec(&format!(r#", "{key}": {bad}"#))
            ))
            .unwrap();
            let recs = to_records(
                &doc,
                &[vec![4096, 32]],
                &crate::ops::softmax::OP.default_params(),
                4000.0,
            )
            .unwrap();
            let times: Vec<_> = recs.iter().map(got).collect();
            assert_eq!(times, [Some(given), None, None], "{key}");
        }
        let script = Path::new("b.py");
        let line = describe(&doc, script, Rotate::Auto, 1);
        assert!(
            line.contains("rotated") && line.contains("--rotate auto"),
            "{line}"
        );
        assert!(
            line.ends_with("; --graph does not apply to them)"),
            "{line}"
        );
        assert!(!describe(&doc, script, Rotate::Copies(1), 1).contains("rotate"));
        // Under --repeat: the rounds the script ran, or why it ran one.
        assert!(describe(&doc, script, Rotate::Copies(1), 3)
            .contains("; one round a shape (--repeat is for the row ops)"));
        let rounds = parse(&format!(
            r#"{{"available": true, "repeat": 3, "records": [{}, {}, {}, {}]}}"#,
            rec(r#", "repeat_medians_ms": [0.006, 0.005, 0.0055], "spread": 0.2"#),
            rec(r#", "repeat_medians_ms": null, "spread": null"#),
            rec(r#", "repeat_medians_ms": [0.005], "spread": 0.0"#),
            rec(r#", "repeat_medians_ms": [0.005, null], "spread": 0.1"#)
        ))
        .unwrap();
        assert!(describe(&rounds, script, Rotate::Copies(1), 3).contains(
            "; 3 rounds a shape, each timing every variant in turn, the median round kept \
                 (--repeat 3)"
        ));
        let recs = to_records(
            &rounds,
            &[vec![4096, 32]],
            &crate::ops::softmax::OP.default_params(),
            4000.0,
        )
        .unwrap();
        assert_eq!(recs[0].repeat_medians_ms, [0.006, 0.005, 0.0055]);
        assert_eq!(recs[0].spread, Some(0.2));
        assert!(recs[1].repeat_medians_ms.is_empty() && recs[1].spread.is_none());
        assert!(recs[2].repeat_medians_ms.is_empty() && recs[2].spread.is_none());
        assert!(recs[3].repeat_medians_ms.is_empty() && recs[3].spread.is_none());
    }

    #[test]
    fn shapes_fold_to_rows_and_columns() {
        assert_eq!(script_shape(&[1 << 20]), (1, 1 << 20));
        assert_eq!(script_shape(&[4096, 256]), (4096, 256));
        assert_eq!(script_shape(&[2, 3, 8]), (6, 8));
    }

    #[test]
    fn the_visible_device_follows_the_ordinal() {
        assert_eq!(visible_device(None, 2), "2");
        assert_eq!(visible_device(Some("4,5,6"), 1), "5");
        assert_eq!(visible_device(Some(""), 1), "1");
    }
}
