//! `kernlab compile`: the graph, fusion plan, generated CUDA and ptxas report of an op or of a
//! user's expression; with `--run`, the fused and the eager forms validated and timed.

use super::check_op_flags;
use crate::compiler::{parse, Graph};
use crate::ops::{FlagValues, Op};
use crate::runtime::device::{Device, DeviceSpec};
use crate::runtime::dtype::DType;
use crate::runtime::tensor::parse_shape;
use crate::tools::compile::{compile_graph, op_graph, run_graph};
use crate::tools::inspect::DEFAULT_ARCH;
use anyhow::{bail, Result};
use clap::Args;
use std::io::Write;

#[derive(Args)]
#[command(
    after_help = "Examples:\n  kernlab compile gelu                      # manual_gelu's 9 operations, fused into one kernel\n  kernlab compile softmax --dtype bf16 --source\n  kernlab compile rmsnorm --eps 1e-6 --arch sm_80\n  kernlab compile --expr 'silu(a) * b'      # SwiGLU's element-wise part\n  kernlab compile --expr 'x * sigmoid(1.702 * x)' --run --shape 4096x4096 --dtype bf16\n  kernlab compile --expr 'x - logsumexp(x)' --run\n  kernlab compile --expr 'x * rsqrt(mean(x * x) + 1e-6) * w' --input w:col --run\n  kernlab compile linear --activation gelu-erf   # bias + GeLU generated as the GEMM's epilogue\n  kernlab compile --expr 'silu(matmul(x, w) + b) * g' --input b:col --arch sm_90a\n\nExpressions: numbers, inputs (any other name; a full rows × cols tensor unless --input says\notherwise), + - * / ^ (integer powers), comparisons < <= > >= == (1 or 0), and the functions\nexp log tanh erf sqrt rsqrt sigmoid silu relu abs f32 bf16 f16 max(a, b) min(a, b)\nwhere(c, a, b), and the row reductions sum mean amax (max of one value) logsumexp, broadcast\nback along the row. matmul(x, w) is x [rows, K] times w [cols, K] transposed: the graph then\ncompiles as one GEMM (Hopper, bf16/f16) whose epilogue is the element-wise rest.\n\nWorks without a GPU: NVRTC compiles the generated kernel for --arch (and reports its ptxas\nregisters, spills and cold and cached compile times) wherever libnvrtc loads. --run needs a\nCUDA GPU."
)]
pub(super) struct CompileArgs {
    /// The op (gelu, softmax, rmsnorm, matmul, linear: the ops written as graphs); or give
    /// --expr
    op: Option<String>,
    /// A tensor expression of your own instead of an op, e.g. 'silu(a) * b'
    #[arg(long, value_name = "TEXT", conflicts_with = "op")]
    expr: Option<String>,
    /// An input of --expr that is not a full rows × cols tensor: NAME:row (a value a row),
    /// NAME:col (a value a column, as a weight), NAME:scalar; repeat for several
    #[arg(long = "input", value_name = "NAME:LAYOUT", requires = "expr")]
    inputs: Vec<String>,
    /// The storage dtype of the generated kernel: f32, bf16 or f16 (default: f32; bf16 for a
    /// graph with a matmul, which the tensor-core GEMM template takes in 16 bits)
    #[arg(long)]
    dtype: Option<String>,
    /// NVRTC target, e.g. sm_80 or sm_90a
    #[arg(long, default_value = DEFAULT_ARCH)]
    arch: String,
    /// Also print the generated CUDA source
    #[arg(long)]
    source: bool,
    /// Run it on the GPU: the fused kernel and the eager form (one launch a node), each
    /// checked against the graph's f64 interpretation, then timed
    #[arg(long)]
    run: bool,
    /// The shape --run uses: ROWSxCOLS
    #[arg(
        long,
        default_value = "4096x4096",
        requires = "run",
        allow_hyphen_values = true
    )]
    shape: String,
    /// Seed for --run's random inputs (default: a fresh one, printed)
    #[arg(long, requires = "run")]
    seed: Option<u64>,
}

pub(super) fn run(a: CompileArgs, flags: &FlagValues, out: &mut dyn Write) -> Result<()> {
    let g = Graph::new();
    // The dtype (and so the kernel's name) is settled once the graph is known.
    let given: Option<DType> = a
        .dtype
        .as_deref()
        .map(|d| d.parse().map_err(anyhow::Error::msg))
        .transpose()?;
    // The op and parameters an op's kernel is named from (an expression's is `kl_expr_`).
    let (y, title, named_from) = match (&a.op, &a.expr) {
        (Some(op), None) => {
            let op: Op = op.parse()?;
            check_op_flags(&[op], "compile", flags)?;
            let params = op.params(flags)?;
            let form = params.form().map_or(String::new(), |f| format!(" ({f})"));
            (
                op_graph(op, &params, &g)?,
                format!("{op}{form}"),
                Some((op, params)),
            )
        }
        (None, Some(text)) => {
            let layouts = a
                .inputs
                .iter()
                .map(|s| parse::input_layout(s))
                .collect::<crate::Result<Vec<_>>>()?;
            let y = parse::parse(&g, text, &layouts)?;
            for (n, _) in &layouts {
                if !g.inputs().iter().any(|(m, _)| m == n) {
                    bail!("--input {n}: the expression has no input '{n}'");
                }
            }
            (y, format!("`{text}`"), None)
        }
        _ => bail!("name an op (kernlab compile gelu) or give --expr 'TEXT'"),
    };
    let dtype = match given {
        Some(dt) => dt,
        None if crate::compiler::gemm::has_matmul(&g, y.id) => DType::BF16,
        None => DType::F32,
    };
    let name = match &named_from {
        Some((op, params)) => crate::ops::compiled::stem("compiled", *op, params, dtype),
        None => format!("kl_expr_{dtype}"),
    };
    let report = compile_graph(&g, y.id, &name, dtype, &a.arch)?;
    writeln!(out, "kernlab compile {title}, {dtype}, for {}\n", a.arch)?;
    write!(out, "{}", report.render(a.source))?;
    if a.run {
        let shape = parse_shape(&a.shape)?;
        let [rows, cols] = shape[..] else {
            bail!("--shape {}: give ROWSxCOLS", a.shape);
        };
        let seed = a.seed.unwrap_or_else(crate::check::fresh_seed);
        let (device, _) = Device::open(DeviceSpec::Cuda(0))?;
        let r = run_graph(&g, y.id, &name, dtype, (rows, cols), seed, &device)?;
        writeln!(out)?;
        write!(out, "{}", r.render())?;
        if !r.passed() {
            bail!("a tier's output failed its check against the f64 interpretation");
        }
    }
    Ok(())
}
