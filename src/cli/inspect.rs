//! `kernlab inspect`: what the compiler made of a variant's kernels.

use super::{check_op_flags, check_output_path, write_file};
use crate::ops::{FlagValues, Op};
use crate::runtime::device::DeviceSpec;
use crate::runtime::dtype::DType;
use anyhow::{bail, Result};
use clap::Args;
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  kernlab inspect gelu --variant v1_naive,v3_vec16_ilp   # 4-byte vs 16-byte loads, side by side\n  kernlab inspect softmax --variant auto --dtype bf16 --sass\n  kernlab inspect gelu --variant v2_vec16 --kernel gelu_v2_vec16_tanh_f32 --out v2.ptx\n  kernlab inspect softmax --variant triton --shape 1024x131072 --ir ttgir   # Triton's stages, its spills\n\nWorks without a GPU for everything NVRTC alone can answer (PTX, ptxas report, census);\noccupancy needs a GPU, the SASS census needs cuobjdump or nvdisasm on the PATH.\nTriton variants need Python with Triton ($KERNLAB_PYTHON, else python3); their kernels are\ncompiled by Triton's compiler for --arch, no GPU needed."
)]
pub(super) struct InspectArgs {
    /// The op (see `kernlab list`)
    op: String,
    /// Comma-separated CUDA variants, compared side by side (default: every CUDA variant)
    #[arg(long)]
    variant: Option<String>,
    /// f32, bf16 or f16
    #[arg(long, default_value = "f32")]
    dtype: String,
    /// NVRTC target, e.g. sm_80 or sm_90a (default: the GPU's own, else sm_90a)
    #[arg(long)]
    arch: Option<String>,
    /// Only this kernel symbol
    #[arg(long)]
    kernel: Option<String>,
    /// The GPU for occupancy: auto, cpu (none) or cuda:N
    #[arg(long, default_value = "auto")]
    device: String,
    /// Threads per block for the occupancy figures (default 256)
    #[arg(long, allow_negative_numbers = true)]
    block: Option<u32>,
    /// Disassemble the CUBIN (cuobjdump or nvdisasm) and census the SASS
    #[arg(long)]
    sass: bool,
    /// Print each kernel's PTX in the report
    #[arg(long)]
    ptx: bool,
    /// Print each kernel's SASS in the report (implies --sass)
    #[arg(long)]
    show_sass: bool,
    /// The shape a Triton variant's kernels are compiled for (their block sizes follow it),
    /// e.g. 1024x131072 (default: the op's default GPU shape)
    #[arg(long, allow_hyphen_values = true)]
    shape: Option<String>,
    /// Print one stage of each kernel: ttir, ttgir or llir (Triton's kernels), ptx or sass
    /// (every kernel; sass implies --sass)
    #[arg(long, value_parser = ["ttir", "ttgir", "llir", "ptx", "sass"])]
    ir: Option<String>,
    /// Write the PTX (or, with --show-sass, the SASS) of the kernels to this file
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the report as JSON
    #[arg(long)]
    json: bool,
}

pub(super) fn run(a: InspectArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    use crate::tools::inspect::{inspect, InspectRequest};
    let op: Op = a.op.parse()?;
    let dtype: DType = a.dtype.parse().map_err(anyhow::Error::msg)?;
    check_op_flags(&[op], "inspect", flags)?;
    let params = op.params(flags)?;
    check_output_path("--out", a.out.as_deref())?;
    let device: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    let mut req = InspectRequest::new(op, "");
    req.variants = match a.variant.as_deref() {
        // As bench's --variants: a list with no name in it is a mistake, not "every variant".
        Some(v) => {
            let names: Vec<String> = v
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                bail!("--variant names no variant (see `kernlab list --op {op}`); leave it out for every one");
            }
            names
        }
        None => Vec::new(),
    };
    req.dtype = dtype;
    req.params = params;
    req.arch = a.arch;
    req.kernel = a.kernel;
    req.device = device;
    req.block_size = a.block;
    let ir = a.ir.as_deref();
    req.sass = a.sass || a.show_sass || ir == Some("sass");
    req.show_ptx = a.ptx || ir == Some("ptx");
    req.show_sass = a.show_sass || ir == Some("sass");
    req.ir = ir
        .filter(|s| matches!(*s, "ttir" | "ttgir" | "llir"))
        .map(str::to_string);
    req.shape = a
        .shape
        .as_deref()
        .map(crate::runtime::tensor::parse_shape)
        .transpose()?;
    let report = inspect(&req)?;
    // The file first (a reader of stdout that stops early does not lose it), and the report
    // shown even when the file cannot be written.
    let file = a.out.as_ref().map_or(Ok(()), |path| {
        let text = if a.show_sass {
            report.sass().ok_or_else(|| {
                anyhow::anyhow!("no SASS: neither cuobjdump nor nvdisasm was found")
            })?
        } else {
            report.ptx()
        };
        write_file(path, &text)
    });
    let shown = if a.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)
    } else {
        write!(out, "{report}")
    };
    file?;
    Ok(shown?)
}
