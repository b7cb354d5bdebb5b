//! The GEMM ops' compiled tier: their graph, `act(x·wᵀ + bias)` (matmul: `x·wᵀ`), through
//! kernlab's compiler ([`crate::compiler::gemm`]), the tail generated as the epilogue of the
//! v6/v7 template instead of the hand kernels' bias + activation code, run in the schedule
//! (tile, GROUP_M) autotune chose for v7 at the shape. Built once a process for each epilogue
//! and dtype.

use super::sm90;
use super::{Activation, Gemm, GemmParams};
use crate::compiler::gemm::{self, GemmKernel};
use crate::compiler::kernel::Memo;
use crate::compiler::{Expr, Graph, Layout};
use crate::ops::gelu::{self, GeluApprox};
use crate::ops::params::Params;
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::kernels::KernelSource;
use crate::runtime::tensor::Tensor;
use std::sync::Arc;

/// The graph of a GEMM op with parameters `p`: inputs `x` `[M, K]`, `w` `[N, K]` and, with a
/// bias, `bias` `[N]`; the activation written as its primitive operations (the manual GeLU's).
pub fn graph<'g>(g: &'g Graph, p: &GemmParams) -> Result<Expr<'g>> {
    let x = g.input("x", Layout::Full)?;
    let w = g.input("w", Layout::Full)?;
    let mut z = x.matmul(w);
    if p.bias {
        z = z + g.input("bias", Layout::Col)?;
    }
    Ok(match p.act {
        Activation::None => z,
        Activation::GeluTanh => gelu::of(z, GeluApprox::Tanh),
        Activation::GeluErf => gelu::of(z, GeluApprox::Erf),
    })
}

/// The stem of the kernels' names: `kl_compiled_matmul_bf16`, `kl_compiled_linear_gelu_tanh_bf16`.
fn stem(p: &GemmParams, dt: DType) -> String {
    if !p.bias && p.act == Activation::None {
        format!("kl_compiled_matmul_{dt}")
    } else {
        let bias = if p.bias { "_bias" } else { "" };
        format!("kl_compiled_linear{bias}_{}_{dt}", p.act.name()).replace('-', "_")
    }
}

/// The generated GEMM for parameters `p` in `dt` (bf16 or f16).
pub fn kernel(p: &GemmParams, dt: DType) -> Result<Arc<GemmKernel>> {
    static KERNELS: Memo<GemmKernel> = Memo::new();
    KERNELS.get_or_make(&format!("{p:?}|{dt}"), || {
        let g = Graph::new();
        let out = graph(&g, p)?;
        gemm::build(&g, out.id, dt, &stem(p, dt), &sm90::generated_tiles())
    })
}

/// The compiled variant (a `GemmFn`): the generated GEMM for the call's epilogue.
pub fn run(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let p = GemmParams {
        act: g.act,
        bias: g.bias.is_some(),
    };
    let k = kernel(&p, g.dtype())?;
    let epilogue: Vec<(&str, &Tensor)> = g.bias.map(|b| ("bias", b)).into_iter().collect();
    // The schedule autotune chose for v7 at this shape: the same template and tiles.
    let tuned = super::auto::cached(g, sm90::VARIANT_V7)
        .and_then(|e| sm90::config_v7(g.dtype(), &e.config));
    sm90::run_generated(&k, g, &epilogue, tuned, c)
}

/// The generated source and its symbols (the variant's `generated`; none for f32, which the
/// template does not run).
pub fn kernels(p: &Params, dt: DType) -> Result<Vec<(&'static KernelSource, Vec<String>)>> {
    if !matches!(dt, DType::BF16 | DType::F16) {
        return Ok(Vec::new());
    }
    let k = kernel(p.get::<GemmParams>()?, dt)?;
    Ok(vec![(k.source, k.symbols.clone())])
}
