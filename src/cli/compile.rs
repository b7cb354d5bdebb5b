//! `kernlab compile`: the graph, fusion plan, generated CUDA and ptxas report of an op.

use super::check_op_flags;
use crate::ops::{FlagValues, Op};
use crate::runtime::dtype::DType;
use crate::tools::compile::compile;
use crate::tools::inspect::DEFAULT_ARCH;
use anyhow::Result;
use clap::Args;
use std::io::Write;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  kernlab compile gelu                      # manual_gelu's 9 operations, fused into one kernel\n  kernlab compile softmax --dtype bf16 --source\n  kernlab compile rmsnorm --eps 1e-6 --arch sm_80\n\nWorks without a GPU: NVRTC compiles the generated kernel for --arch (and reports its ptxas\nregisters and spills) wherever libnvrtc loads."
)]
pub(super) struct CompileArgs {
    /// The op (gelu, softmax, rmsnorm: the ops written as graphs)
    op: String,
    /// The storage dtype of the generated kernel: f32, bf16 or f16
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// NVRTC target, e.g. sm_80 or sm_90a
    #[arg(long, default_value = DEFAULT_ARCH)]
    arch: String,
    /// Also print the generated CUDA source
    #[arg(long)]
    source: bool,
}

pub(super) fn run(a: CompileArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    let op: Op = a.op.parse()?;
    let dtype: DType = a.dtype.parse().map_err(anyhow::Error::msg)?;
    check_op_flags(&[op], "compile", flags)?;
    let params = op.params(flags)?;
    let report = compile(op, &params, dtype, &a.arch)?;
    let form = params.form().map_or(String::new(), |f| format!(" ({f})"));
    writeln!(out, "kernlab compile {op}{form}, {dtype}, for {}\n", a.arch)?;
    write!(out, "{}", report.render(a.source))?;
    Ok(())
}
