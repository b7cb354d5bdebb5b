//! Linear: `y = act(x·wᵀ + bias)`, the fused epilogue of the lecture's MLP layer — x `[M, K]`,
//! w `[N, K]` (a Linear weight), bias `[N]`, shape `M×N×K`. Every matmul kernel runs it, the
//! bias and the activation applied to the f32 accumulator before the single store (see
//! `ops::matmul`); `manual` composes it as eager PyTorch does.

use super::matmul::{auto, cuda, sm90};
use super::matmul::{
    auto_symbols, def, faer_f32, gemm_call, gemm_def_methods, gemm_rows, run_cpu_faer,
    run_reference, vendor, Activation, Gemm, GemmParams,
};
use super::primitives::ELEMENTWISE;
use super::{
    Flag, FlagKind, FlagValues, Op, OpDef, Params, Tier, TorchCases, Tuning, Variant, HALF_DTYPES,
};
use crate::runtime::device::DeviceKind;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;

/// The op's handle.
pub const OP: Op = Op(&Linear);

struct Linear;

static FLAGS: [Flag; 1] = [Flag {
    name: "activation",
    help:
        "Linear: the activation after the bias in the fused epilogue: gelu-tanh, gelu-erf or none",
    kind: FlagKind::Value {
        value_name: "ACT",
        default: "gelu-tanh",
        values: Some(&["gelu-tanh", "gelu-erf", "none"]),
    },
}];

impl OpDef for Linear {
    gemm_def_methods!("linear", true);
    fn name(&self) -> &'static str {
        "linear"
    }
    fn about(&self) -> &'static str {
        "y = act(x·wᵀ + bias), the fused epilogue: shape M×N×K"
    }
    fn flags(&self) -> &'static [Flag] {
        &FLAGS
    }
    fn params(&self, flags: &FlagValues) -> Result<Params> {
        let act = match flags.get("activation") {
            Some(s) => s.parse().map_err(Error::Invalid)?,
            None => Activation::GeluTanh,
        };
        Ok(Params::new(GemmParams { act, bias: true }))
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    fn vendor_variant(&self) -> Option<&'static str> {
        Some("cublaslt")
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "linear",
            args: |p| {
                let g = p.get::<GemmParams>().map_err(|e| e.to_string())?;
                Ok(vec!["--activation".into(), g.act.name().into()])
            },
        })
    }
    fn tuning(&self) -> Option<Tuning> {
        Some(def::tuning(|d, dt, only| auto::candidates(OP, dt, d, only)))
    }
}

/// `manual` on the CPU: the lecture's eager composition — the product (faer), then the bias
/// add, then the manual GeLU (one parallel pass per primitive op, f32 temporaries).
fn run_manual_cpu(g: &Gemm, c: &mut Tensor) -> Result<()> {
    use crate::ops::cpu_prims as prim;
    let a = prim::to_f32(g.a)?;
    let w = prim::to_f32(g.w)?;
    let mut y = faer_f32(&a, &w, g.m, g.n, g.k);
    if let Some(b) = g.bias {
        let b = prim::to_f32(b)?;
        y = prim::broadcast_cols(&y, &b, g.n, |x, b| x + b);
    }
    let y = match g.act {
        Activation::None => y,
        Activation::GeluTanh => crate::ops::gelu::manual_tanh_f32(&y),
        Activation::GeluErf => crate::ops::gelu::manual_erf_f32(&y),
    };
    prim::store_f32(c, &y)
}

// ---- manual on CUDA ----------------------------------------------------------------------

/// `manual` on CUDA, as eager PyTorch runs `gelu(x @ w.t() + b)`: the product (cuBLAS, one
/// launch), the bias add (one launch, in the dtype), then the lecture's manual GeLU (one
/// launch per primitive op, f32 intermediates). Each step writes its result to memory.
fn run_manual_cuda(g: &Gemm, c: &mut Tensor) -> Result<()> {
    use crate::ops::gelu::{self, GeluParams};
    let dev =
        g.a.device()
            .cuda()
            .cloned()
            .ok_or_else(|| Error::Invalid("manual CUDA linear was handed CPU tensors".into()))?;
    let device = g.a.device();
    let plain = Gemm {
        bias: None,
        act: Activation::None,
        ..*g
    };
    let approx = g.act.gelu();
    if g.bias.is_none() && approx.is_none() {
        return vendor::run_cublas(&plain, c);
    }
    let mut prod = Tensor::empty(&[g.m, g.n], g.dtype(), &device)?;
    vendor::run_cublas(&plain, &mut prod)?;
    let biased = match g.bias {
        None => prod,
        Some(b) => {
            let mut out = if approx.is_none() {
                None
            } else {
                Some(Tensor::empty(&[g.m, g.n], g.dtype(), &device)?)
            };
            {
                let dst = out.as_mut().unwrap_or(c);
                let n = (g.m * g.n) as i64;
                let cols = g.n as i32;
                let cfg = crate::runtime::launch::cfg_1d(n as u64, 256)?;
                let (x, bb) = (
                    prod.cuda_buf()
                        .ok_or_else(|| Error::Invalid("not on CUDA".into()))?,
                    b.cuda_buf()
                        .ok_or_else(|| Error::Invalid("bias not on CUDA".into()))?,
                );
                let y = dst
                    .cuda_buf_mut()
                    .ok_or_else(|| Error::Invalid("output not on CUDA".into()))?;
                crate::runtime::launch::launch!(
                    dev,
                    &ELEMENTWISE,
                    format!("add_bias_{}", g.dtype()),
                    cfg,
                    [x, bb, y, &n, &cols]
                );
            }
            match out {
                None => return Ok(()),
                Some(t) => t,
            }
        }
    };
    let p = GeluParams {
        gelu: approx.unwrap_or_default(),
    };
    super::compiled::run_eager(gelu::OP, &Params::new(p), &[&biased], c)
}

/// The bias add `manual` on CUDA launches after cuBLAS's product.
fn manual_symbols(dt: DType) -> Vec<String> {
    vec![format!("add_bias_{dt}")]
}

/// The manual GeLU's launches after the bias add (both GeLU forms).
fn manual_gelu_kernels(
    _: &Params,
    dt: DType,
) -> Result<Vec<(&'static crate::runtime::kernels::KernelSource, Vec<String>)>> {
    use crate::ops::gelu::{self, GeluApprox, GeluParams};
    let mut v = Vec::new();
    for gelu in [GeluApprox::Tanh, GeluApprox::Erf] {
        v.extend(super::compiled::eager_kernels(
            gelu::OP,
            &Params::new(GeluParams { gelu }),
            dt,
        )?);
    }
    Ok(v)
}

// ---- the registry's rows ------------------------------------------------------------------
/// Linear's rows: the manual composition, then the rows every GEMM op has (the macro writes
/// the whole list, so the length cannot leave one out).
static VARIANTS: [Variant; 20] = gemm_rows!(
    OP,
    [
        Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cpu,
            "eager composition: faer product, then the bias add, then the manual GeLU, one pass each",
            |p, x, y| gemm_call(run_manual_cpu, p, x, y)),
        Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cuda,
            "eager composition: cuBLAS product, bias-add kernel, then the manual GeLU's launches",
            |p, x, y| gemm_call(run_manual_cuda, p, x, y))
            .kernels(&ELEMENTWISE, manual_symbols)
            .generated(manual_gelu_kernels),
    ],
    []
);

#[cfg(test)]
mod tests {
    /// The GEMM dispatch keys linear's tuning entries by this name without importing this
    /// module.
    /// Every GEMM row is linear's and matmul's (a fixed-length list once dropped the last
    /// two, cuBLASLt and faer, without a word).
    #[test]
    fn linear_and_matmul_both_have_every_shared_row() {
        for name in [
            "cublaslt",
            "faer",
            "cutlass",
            "triton",
            "compiled",
            "auto",
            "v8_skinny",
        ] {
            for op in [super::OP, crate::ops::matmul::OP] {
                assert!(
                    op.variants().iter().any(|v| v.name == name),
                    "{op} has no {name}"
                );
            }
        }
    }

    #[test]
    fn the_gemm_dispatch_names_this_op_as_it_is_named() {
        assert_eq!(crate::ops::matmul::LINEAR, super::OP.name());
    }
}
