//! The ops kernlab implements, one module each, every variant of an op in its module.

pub mod cpu_prims;
pub mod gelu;
pub mod launch;
pub mod matmul;
pub mod matmul_auto;
pub mod matmul_cuda;
pub mod matmul_sm90;
pub mod matmul_vendor;
pub mod softmax;

use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// An op family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Gelu,
    Softmax,
    /// `c = a·b` with `b = wᵀ` (w `[N, K]`, a Linear weight's layout): shape `M×N×K`.
    Matmul,
    /// `y = act(x·wᵀ + bias)`, the fused epilogue: shape `M×N×K`.
    Linear,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Gelu, Op::Softmax, Op::Matmul, Op::Linear];
    pub fn name(self) -> &'static str {
        match self {
            Op::Gelu => "gelu",
            Op::Softmax => "softmax",
            Op::Matmul => "matmul",
            Op::Linear => "linear",
        }
    }
    /// Matmul and linear: inputs `[a, w(, bias)]`, shape `M×N×K`, compute-bound.
    pub fn is_gemm(self) -> bool {
        matches!(self, Op::Matmul | Op::Linear)
    }
    /// FLOPs per element, counted as PyTorch's formula spells them (for TFLOP/s figures).
    pub fn flops_per_element(self) -> f64 {
        match self {
            // 0.5·x·(1 + tanh(k·(x + 0.044715·x³))): 3 mul, 1 add, 1 mul, tanh, 1 add, 2 mul
            Op::Gelu => 9.0,
            // max, subtract, exp, sum, divide
            Op::Softmax => 5.0,
            // GEMMs count 2·M·N·K (see bench::flops), not per element.
            Op::Matmul | Op::Linear => 0.0,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = crate::error::Error;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "gelu" => Ok(Op::Gelu),
            "softmax" => Ok(Op::Softmax),
            "matmul" | "gemm" => Ok(Op::Matmul),
            "linear" => Ok(Op::Linear),
            other => Err(crate::error::Error::UnknownOp(
                other.to_string(),
                Op::ALL
                    .iter()
                    .map(|o| o.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            )),
        }
    }
}

/// The lecture's tiers: five ways to write one function (plus the f64 oracle and the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// f64 on the CPU: the oracle every test and bench run compares against.
    Reference,
    /// Composed from primitive kernels, one launch (or pass) per op, as eager PyTorch runs.
    Manual,
    /// Hand-written CUDA C, numbered versions.
    Cuda,
    /// The vendor's library (cuBLAS, cuBLASLt).
    Vendor,
    /// Fused, multi-threaded CPU loops.
    Cpu,
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tier::Reference => "reference",
            Tier::Manual => "manual",
            Tier::Cuda => "cuda",
            Tier::Vendor => "vendor",
            Tier::Cpu => "cpu",
        })
    }
}

/// Which GeLU: the tanh approximation (PyTorch's `approximate="tanh"`) or the exact erf form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum GeluApprox {
    #[default]
    Tanh,
    Erf,
}

impl GeluApprox {
    pub fn name(self) -> &'static str {
        match self {
            GeluApprox::Tanh => "tanh",
            GeluApprox::Erf => "erf",
        }
    }
}

impl FromStr for GeluApprox {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tanh" => Ok(GeluApprox::Tanh),
            "erf" | "exact" | "none" => Ok(GeluApprox::Erf),
            o => Err(format!(
                "unknown GeLU approximation '{o}' (use tanh or erf)"
            )),
        }
    }
}

/// The `manual` tier's kernel names, plus the casts in and out of f32 a 16-bit input needs.
pub fn with_casts(names: &[&str], dt: crate::DType) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    if dt != crate::DType::F32 {
        v.push(format!("cast_to_f32_{dt}"));
        v.push(format!("cast_from_f32_{dt}"));
    }
    v
}

/// The `manual` tier's x as f32, as `.float()` makes it: for a 16-bit x, a copy written by
/// `cast_to_f32_{dt}` (one of [`with_casts`]; `what` names it in an out-of-memory error);
/// `None` for an f32 x, which the caller reads as it is.
pub(crate) fn manual_x_f32(
    dev: &crate::device::CudaDevice,
    x: &cudarc::driver::CudaSlice<u8>,
    dt: crate::DType,
    n: i64,
    cfg: cudarc::driver::LaunchConfig,
    what: &str,
) -> crate::error::Result<Option<cudarc::driver::CudaSlice<u8>>> {
    if dt == crate::DType::F32 {
        return Ok(None);
    }
    let xf = dev.alloc_bytes(n as usize * 4, what)?;
    crate::launch!(
        dev,
        &crate::kernels::ELEMENTWISE,
        format!("cast_to_f32_{dt}"),
        cfg,
        [x, &xf, &n]
    );
    Ok(Some(xf))
}

/// Op parameters that are not tensors.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Params {
    pub gelu: GeluApprox,
    /// Softmax: write log_softmax (x − max − log Σ e^(x−max)) instead, from the same kernels.
    pub log_softmax: bool,
    /// Linear: the epilogue's activation after the bias (matmul ignores it).
    pub act: matmul::Activation,
}
