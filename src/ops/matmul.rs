//! Matmul and linear: `c[M,N] = act(a[M,K] · w[N,K]ᵀ + bias[N])`.
//!
//! One layout everywhere: `a` row-major (K contiguous), `w` stored as PyTorch stores a Linear
//! weight (out × in, K contiguous), `c` row-major. `matmul(a, b)` is the same computation with
//! `b = wᵀ` (so `b` is a `[K, N]` column-major view of a contiguous `[N, K]` tensor, as
//! `w.t()` is in PyTorch); `linear(x, w, bias, act)` adds the fused epilogue. Every hand
//! kernel shares one epilogue (bias, then GeLU tanh / erf / none), applied to the f32
//! accumulator before the single store.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use serde::Serialize;
use std::str::FromStr;

/// The epilogue's activation. Kernels receive it as an `int` (`code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Activation {
    #[default]
    None,
    /// PyTorch's `gelu(approximate="tanh")`.
    GeluTanh,
    /// PyTorch's exact `gelu` (erf).
    GeluErf,
}

impl Activation {
    /// The value the kernels' `act` parameter takes: 0 none, 1 GeLU tanh, 2 GeLU erf.
    pub fn code(self) -> i32 {
        match self {
            Activation::None => 0,
            Activation::GeluTanh => 1,
            Activation::GeluErf => 2,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Activation::None => "none",
            Activation::GeluTanh => "gelu-tanh",
            Activation::GeluErf => "gelu-erf",
        }
    }
}

impl FromStr for Activation {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "identity" => Ok(Activation::None),
            "gelu" | "gelu-tanh" | "tanh" => Ok(Activation::GeluTanh),
            "gelu-erf" | "erf" => Ok(Activation::GeluErf),
            o => Err(format!(
                "unknown activation '{o}' (use none, gelu-tanh or gelu-erf)"
            )),
        }
    }
}

/// The operands of one call, already checked: `a` `[M, K]` row-major, `w` `[N, K]` row-major
/// (contiguous), `bias` `[N]` or none, all of one dtype on one device; `c` is `[M, N]`.
#[derive(Clone, Copy)]
pub struct Gemm<'a> {
    pub a: &'a Tensor,
    pub w: &'a Tensor,
    pub bias: Option<&'a Tensor>,
    pub act: Activation,
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

impl<'a> Gemm<'a> {
    pub fn dtype(&self) -> DType {
        self.a.dtype()
    }
}

/// A hand variant's launcher: compute `c = act(a·wᵀ + bias)` into the contiguous `c`.
pub type GemmFn = fn(&Gemm, &mut Tensor) -> Result<()>;

/// `(M, N, K)` from `a [M, K]` and `w [N, K]`, with a clear error when they disagree.
pub fn dims(op: &str, a: &Tensor, w: &Tensor) -> Result<(usize, usize, usize)> {
    let (sa, sw) = (a.shape(), w.shape());
    if sa.len() != 2 || sw.len() != 2 || sa[1] != sw[1] {
        return Err(Error::ShapeMismatch {
            op: op.to_string(),
            why: format!(
                "a must be [M, K] and w [N, K] with the same K; got a {sa:?} and w {sw:?}"
            ),
        });
    }
    Ok((sa[0], sw[0], sa[1]))
}
