//! `kernlab profile`: one variant N times under CUPTI, as a table and a trace.

use super::{check_op_flags, check_output_path, write_file};
use crate::ops::{FlagValues, Op};
use crate::runtime::device::{DeviceKind, DeviceSpec};
use crate::runtime::dtype::DType;
use crate::runtime::tensor::parse_shape;
use anyhow::Result;
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  kernlab profile gelu --variant manual --shape 8192x8192     # 9 kernels per call\n  kernlab profile gelu --variant v2_vec16 --trace gelu.json   # 1 kernel; open in ui.perfetto.dev\n  kernlab profile softmax --variant manual --dtype bf16 --row-limit 5\n  kernlab profile matmul --variant cublas --shape 2048x2048x2048   # which cuBLAS kernel runs\n\nNeeds a CUDA GPU and CUPTI (libcupti.so). A warm-up call (validated against f64) runs outside\nthe recording; the same iterations are also timed without CUPTI, and the overhead is printed.\nkernlab's ranges are in the trace, and are NVTX ranges too where libnvToolsExt or (CUDA 13)\nlibnvtx3interop loads: Nsight Systems and `ncu --nvtx` then show them (`kernlab doctor` says\nwhether one does)."
)]
pub(super) struct ProfileArgs {
    /// The op (see `kernlab list`)
    op: String,
    /// The variant (see `kernlab list`)
    #[arg(long)]
    variant: String,
    /// Tensor shape, e.g. 8192x8192, or M×N×K for matmul/linear (default: bench's default
    /// shape on a GPU)
    #[arg(long, allow_hyphen_values = true)]
    shape: Option<String>,
    /// f32, bf16 or f16
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// auto, cuda or cuda:N
    #[arg(long, default_value = "auto")]
    device: String,
    /// Recorded iterations (after one warm-up call outside the recording)
    #[arg(long, default_value_t = 10)]
    iters: usize,
    /// Show at most this many rows
    #[arg(long)]
    row_limit: Option<usize>,
    /// Write a Chrome trace-event file (Perfetto, chrome://tracing) to this path
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Write the report with every record as JSON to this path
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Seed for the random inputs (default: a fresh one, printed)
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Synchronise after every kernel launch, as a loop that reads a value back each step
    /// would: the table's "GPU busy" line and the trace show the GPU idling between launches
    #[arg(long)]
    sync_each_launch: bool,
}

pub(super) fn run(a: ProfileArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    check_output_path("--json", a.json.as_deref())?;
    check_output_path("--trace", a.trace.as_deref())?;
    use crate::tools::profile;
    let op: Op = a.op.parse()?;
    let dtype: DType = a.dtype.parse().map_err(anyhow::Error::msg)?;
    check_op_flags(&[op], "profile", flags)?;
    let params = op.params(flags)?;
    let device: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    let shape = match &a.shape {
        Some(s) => parse_shape(s)?,
        None => op.default_shape(DeviceKind::Cuda),
    };
    let req = profile::ProfileRequest {
        op,
        variant: a.variant.clone(),
        shape,
        dtype,
        params,
        iters: a.iters,
        seed: a.seed,
        device,
        sync_each_launch: a.sync_each_launch,
    };
    let report = profile::run(&req, &mut |m| stderr_line!("  … {m}"))?;
    // The files first; the table shown even when one cannot be written.
    let files = (|| -> Result<()> {
        if let Some(path) = &a.trace {
            let trace = profile::trace::chrome_trace(&report.recording, &report.workload);
            write_file(path, &serde_json::to_string(&trace)?)?;
        }
        if let Some(path) = &a.json {
            write_file(path, &serde_json::to_string_pretty(&report)?)?;
        }
        Ok(())
    })();
    let shown = write!(out, "{}", report.render(a.row_limit));
    files?;
    Ok(shown?)
}
