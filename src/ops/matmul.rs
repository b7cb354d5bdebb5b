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

// ---- device buffers of a CUDA GEMM --------------------------------------------------------

/// The device and buffers of one CUDA GEMM (every CUDA tier's launcher starts from these).
pub(crate) struct GemmBufs<'a> {
    pub dev: std::sync::Arc<crate::device::CudaDevice>,
    pub a: &'a cudarc::driver::CudaSlice<u8>,
    pub w: &'a cudarc::driver::CudaSlice<u8>,
    pub bias: Option<&'a cudarc::driver::CudaSlice<u8>>,
    pub c: &'a mut cudarc::driver::CudaSlice<u8>,
}

/// The device buffers, each checked to hold what the GEMM reads or writes (a kernel or a
/// vendor library would otherwise read or write past the end without a word). `variant`
/// names the launcher in errors.
pub(crate) fn gemm_bufs<'a>(
    variant: &str,
    g: &Gemm<'a>,
    c: &'a mut Tensor,
) -> Result<GemmBufs<'a>> {
    use cudarc::driver::CudaSlice;
    let dev = g.a.device().cuda().cloned().ok_or_else(|| {
        Error::Invalid(format!(
            "matmul/{variant} was handed CPU tensors (it runs on CUDA)"
        ))
    })?;
    let es = g.dtype().size();
    let get = |t: &'a Tensor, what: &str, elems: usize| -> Result<&'a CudaSlice<u8>> {
        let b = t
            .cuda_buf()
            .ok_or_else(|| Error::Invalid(format!("matmul/{variant}: {what} is not on CUDA")))?;
        if b.len() < elems * es {
            return Err(Error::Invalid(format!(
                "matmul/{variant}: {what} holds {} bytes, the GEMM needs {}",
                b.len(),
                elems * es
            )));
        }
        Ok(b)
    };
    let a = get(g.a, "a", g.m * g.k)?;
    let w = get(g.w, "w", g.n * g.k)?;
    let bias = g.bias.map(|b| get(b, "bias", g.n)).transpose()?;
    if c.dtype() != g.dtype() {
        return Err(Error::Invalid(format!(
            "matmul/{variant}: c is {} but the operands are {}",
            c.dtype(),
            g.dtype()
        )));
    }
    let need = g.m * g.n * es;
    let c = c
        .cuda_buf_mut()
        .ok_or_else(|| Error::Invalid(format!("matmul/{variant}: c is not on CUDA")))?;
    if c.len() < need {
        return Err(Error::Invalid(format!(
            "matmul/{variant}: c holds {} bytes, the GEMM writes {need}",
            c.len()
        )));
    }
    Ok(GemmBufs { dev, a, w, bias, c })
}

// ---- reference and validation rows ------------------------------------------------------

/// Above this many multiply-adds the f64 reference covers sampled rows only.
pub const FULL_REFERENCE_MACS: f64 = (1u64 << 31) as f64;

/// The rows of `c` the f64 reference computes: all of them when `M·N·K` is small enough,
/// else the first and last rows (edge tiles), and rows spread over the middle (at least 16,
/// as many as fit in [`FULL_REFERENCE_MACS`]), picked from `seed`.
pub fn reference_rows(m: usize, n: usize, k: usize, seed: u64) -> Vec<usize> {
    // sample_rows gives every row when asked for all of them.
    crate::validate::sample_rows(m, reference_row_count(m, n, k), seed)
}

/// How many rows [`reference_rows`] gives: M when `M·N·K` ≤ [`FULL_REFERENCE_MACS`], else as
/// many as fit in it, at least 16 (at most M).
pub fn reference_row_count(m: usize, n: usize, k: usize) -> usize {
    let per_row = n as f64 * k as f64;
    if m as f64 * per_row <= FULL_REFERENCE_MACS {
        return m;
    }
    ((FULL_REFERENCE_MACS / per_row) as usize).max(16).min(m)
}

/// The epilogue in f64: bias, then the activation, as PyTorch defines them.
pub fn epilogue_f64(v: f64, act: Activation) -> f64 {
    use super::gelu::reference_f64;
    match act {
        Activation::None => v,
        Activation::GeluTanh => reference_f64(v, super::GeluApprox::Tanh),
        Activation::GeluErf => reference_f64(v, super::GeluApprox::Erf),
    }
}

/// The oracle on chosen rows: `act(a·wᵀ + bias)` in f64 from the inputs' exact (already
/// rounded to their dtype) values; row-major `[rows.len(), N]`.
pub fn reference(
    a: &[f64],
    w: &[f64],
    bias: Option<&[f64]>,
    (n, k): (usize, usize),
    rows: &[usize],
    act: Activation,
) -> Vec<f64> {
    use rayon::prelude::*;
    let mut out = vec![0.0; rows.len() * n];
    out.par_chunks_mut(n).zip(rows).for_each(|(o, &i)| {
        let ai = &a[i * k..(i + 1) * k];
        for (j, oj) in o.iter_mut().enumerate() {
            let wj = &w[j * k..(j + 1) * k];
            let dot: f64 = ai.iter().zip(wj).map(|(x, y)| x * y).sum();
            *oj = epilogue_f64(dot + bias.map_or(0.0, |b| b[j]), act);
        }
    });
    out
}

/// The reference variant: every row in f64, rounded to c's dtype.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_reference(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let a = g.a.to_f64_vec()?;
    let w = g.w.to_f64_vec()?;
    let b = g.bias.map(|b| b.to_f64_vec()).transpose()?;
    let rows: Vec<usize> = (0..g.m).collect();
    let r = reference(&a, &w, b.as_deref(), (g.n, g.k), &rows, g.act);
    *c = Tensor::from_f64(&r, &[g.m, g.n], c.dtype())?;
    Ok(())
}

// ---- CPU: faer ---------------------------------------------------------------------------

/// `a·wᵀ` in f32 with faer (rayon-parallel, cache-blocked, SIMD), row-major `[M, N]`.
fn faer_f32(a: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    let av = faer::MatRef::from_row_major_slice(a, m, k);
    let wv = faer::MatRef::from_row_major_slice(w, n, k);
    let cv = faer::MatMut::from_row_major_slice_mut(&mut c, m, n);
    faer::linalg::matmul::matmul(
        cv,
        faer::Accum::Replace,
        av,
        wv.transpose(),
        1.0f32,
        faer::Par::rayon(0),
    );
    c
}

/// `cpu/faer`: the product with faer in f32 (16-bit inputs widened once), then the fused
/// epilogue in one parallel pass while storing.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_cpu_faer(g: &Gemm, c: &mut Tensor) -> Result<()> {
    use super::cpu_prims as prim;
    use rayon::prelude::*;
    let a = prim::to_f32(g.a)?;
    let w = prim::to_f32(g.w)?;
    let mut out = faer_f32(&a, &w, g.m, g.n, g.k);
    let bias = g.bias.map(prim::to_f32).transpose()?;
    use super::GeluApprox;
    let approx = match g.act {
        Activation::GeluErf => Some(GeluApprox::Erf),
        Activation::GeluTanh => Some(GeluApprox::Tanh),
        Activation::None => None,
    };
    // One pass, rows in parallel, the bias zipped along each row (no index to check, so the
    // loop vectorises; zeros where there is no bias), one loop an activation form (with the
    // form's branch inside, the loop ran the GeLU ~2× slower).
    #[inline(always)]
    fn rows_pass_body<const FMA: bool>(rows: &mut [f32], bias: &[f32], act: Option<GeluApprox>) {
        #[inline(always)]
        fn each(rows: &mut [f32], bias: &[f32], f: impl Fn(f32) -> f32) {
            for row in rows.chunks_mut(bias.len()) {
                for (v, &b) in row.iter_mut().zip(bias) {
                    *v = f(*v + b);
                }
            }
        }
        use super::gelu::gelu_f32;
        match act {
            None => each(rows, bias, |x| x),
            Some(GeluApprox::Tanh) => each(rows, bias, |x| gelu_f32::<FMA>(x, GeluApprox::Tanh)),
            Some(GeluApprox::Erf) => each(rows, bias, |x| gelu_f32::<FMA>(x, GeluApprox::Erf)),
        }
    }
    // The same compiled for AVX2 and FMA where the CPU has them: 8 lanes, and VEX-encoded, so
    // it pays no SSE–AVX transition after faer's kernels (the SSE2 form ran the GeLU epilogue
    // ~10× slower than the same loop in `gelu/fused`: 1024² elements in ~15 ms on a 2-thread
    // EPYC).
    prim::avx2_twin!(
        fn rows_pass(rows: &mut [f32], bias: &[f32], act: Option<GeluApprox>) => rows_pass_body
    );
    if g.n > 0 && (bias.is_some() || approx.is_some()) {
        let zeros;
        let b = match bias.as_deref() {
            Some(b) if b.len() != g.n => {
                return Err(Error::ShapeMismatch {
                    op: "linear/faer".into(),
                    why: format!("a bias of {} values for N = {}", b.len(), g.n),
                })
            }
            Some(b) => b,
            None => {
                zeros = vec![0.0f32; g.n];
                &zeros
            }
        };
        // The bias is [N] (the registry's checks); rows are split by its length.
        assert!(out.len().is_multiple_of(b.len()));
        out.par_chunks_mut(b.len() * 64)
            .for_each(|rows| rows_pass(rows, b, approx));
    }
    prim::store_f32(c, &out)
}

/// `manual` on the CPU: the lecture's eager composition — the product (faer), then the bias
/// add, then the manual GeLU (one parallel pass per primitive op, f32 temporaries).
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_manual_cpu(g: &Gemm, c: &mut Tensor) -> Result<()> {
    use super::cpu_prims as prim;
    let a = prim::to_f32(g.a)?;
    let w = prim::to_f32(g.w)?;
    let mut y = faer_f32(&a, &w, g.m, g.n, g.k);
    if let Some(b) = g.bias {
        let b = prim::to_f32(b)?;
        y = prim::broadcast_cols(&y, &b, g.n, |x, b| x + b);
    }
    let y = match g.act {
        Activation::None => y,
        Activation::GeluTanh => super::gelu::manual_tanh_f32(&y),
        Activation::GeluErf => super::gelu::manual_erf_f32(&y),
    };
    prim::store_f32(c, &y)
}

// ---- manual on CUDA ----------------------------------------------------------------------

/// `manual` on CUDA, as eager PyTorch runs `gelu(x @ w.t() + b)`: the product (cuBLAS, one
/// launch), the bias add (one launch, in the dtype), then the lecture's manual GeLU (one
/// launch per primitive op, f32 intermediates). Each step writes its result to memory.
pub fn run_manual_cuda(g: &Gemm, c: &mut Tensor) -> Result<()> {
    use super::{gelu, GeluApprox, Params};
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
    let approx = match g.act {
        Activation::None => None,
        Activation::GeluTanh => Some(GeluApprox::Tanh),
        Activation::GeluErf => Some(GeluApprox::Erf),
    };
    if g.bias.is_none() && approx.is_none() {
        return super::matmul_vendor::run_cublas(&plain, c);
    }
    let mut prod = Tensor::empty(&[g.m, g.n], g.dtype(), &device)?;
    super::matmul_vendor::run_cublas(&plain, &mut prod)?;
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
                let cfg = super::launch::cfg_1d(n as u64, 256)?;
                let (x, bb) = (
                    prod.cuda_buf()
                        .ok_or_else(|| Error::Invalid("not on CUDA".into()))?,
                    b.cuda_buf()
                        .ok_or_else(|| Error::Invalid("bias not on CUDA".into()))?,
                );
                let y = dst
                    .cuda_buf_mut()
                    .ok_or_else(|| Error::Invalid("output not on CUDA".into()))?;
                crate::launch!(
                    dev,
                    &crate::kernels::ELEMENTWISE,
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
    let p = Params {
        gelu: approx.unwrap_or_default(),
        ..Params::default()
    };
    gelu::run_manual_cuda(&p, &biased, c)
}

/// The kernels `manual` on CUDA launches besides cuBLAS's own: the bias add and the manual
/// GeLU's primitives (both GeLU forms).
pub fn manual_symbols(dt: DType) -> Vec<String> {
    let mut v = vec![format!("add_bias_{dt}")];
    v.extend(super::gelu::manual_symbols(dt));
    v
}
