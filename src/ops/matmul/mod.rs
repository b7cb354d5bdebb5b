//! Matmul and linear: `c[M,N] = act(a[M,K] · w[N,K]ᵀ + bias[N])`.
//!
//! One layout everywhere: `a` row-major (K contiguous), `w` stored as PyTorch stores a Linear
//! weight (out × in, K contiguous), `c` row-major. `matmul(a, b)` is the same computation with
//! `b = wᵀ` (so `b` is a `[K, N]` column-major view of a contiguous `[N, K]` tensor, as
//! `w.t()` is in PyTorch); `linear(x, w, bias, act)` adds the fused epilogue. Every hand
//! kernel shares one epilogue (bias, then GeLU tanh / erf / none), applied to the f32
//! accumulator before the single store.

pub mod amx;
pub mod auto;
pub mod avx512;
pub mod compiled;
pub mod cuda;
pub mod cutlass;
mod packed;
pub mod sm90;
pub mod triton;
pub mod vendor;

use super::{
    FlagValues, Op, OpDef, OpParams, Params, SweepDefault, Tier, TorchCases, Tuning, Variant,
    HALF_DTYPES,
};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{shape_str, Init, Tensor};
use serde::Serialize;
use std::str::FromStr;

/// The op's handle.
pub const OP: Op = Op(&Matmul);

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
    /// The GeLU form it applies, if any.
    pub fn gelu(self) -> Option<crate::ops::gelu::GeluApprox> {
        use crate::ops::gelu::GeluApprox;
        match self {
            Activation::None => None,
            Activation::GeluTanh => Some(GeluApprox::Tanh),
            Activation::GeluErf => Some(GeluApprox::Erf),
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

    /// The op the call is, by its registry (and tuning-cache) name: linear where it has a
    /// bias or an activation, else matmul.
    pub fn op_name(&self) -> &'static str {
        if self.bias.is_some() || self.act != Activation::None {
            LINEAR
        } else {
            OP.name()
        }
    }
}

/// The linear op's name (`ops/linear.rs` builds on this module and is not imported by it).
pub const LINEAR: &str = "linear";

/// A hand variant's launcher: compute `c = act(a·wᵀ + bias)` into the contiguous `c`.
pub type GemmFn = fn(&Gemm, &mut Tensor) -> Result<()>;

/// The GEMM ops' parameters: whether the epilogue adds a bias, and its activation after it
/// (linear's; matmul has neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GemmParams {
    pub act: Activation,
    pub bias: bool,
}

impl OpParams for GemmParams {
    fn form(&self) -> Option<String> {
        self.bias.then(|| format!("bias + {}", self.act.name()))
    }
}

/// The checked GEMM operands of a call: `[a, w]` or `[a, w, bias]`: a `[M, K]`, w `[N, K]` (a
/// Linear weight), bias `[N]`, y `[M, N]`, one dtype, one device, all contiguous; matmul
/// takes no bias.
pub fn gemm_args<'a>(
    v: &Variant,
    p: &Params,
    inputs: &[&'a Tensor],
    y: &Tensor,
) -> Result<Gemm<'a>> {
    let op = v.op.to_string();
    let (a, w, bias) = match inputs {
        [a, w] => (*a, *w, None),
        [a, w, b] => (*a, *w, Some(*b)),
        _ => {
            return Err(Error::Invalid(format!(
                "{} takes [a, w] or [a, w, bias], got {} tensors",
                v.id(),
                inputs.len()
            )))
        }
    };
    let act = p.get::<GemmParams>()?.act;
    if v.op == OP && bias.is_some() {
        return Err(Error::Invalid(
            "matmul takes no bias; use linear for a fused bias (and activation)".into(),
        ));
    }
    let (m, n, k) = dims(&op, a, w)?;
    if let Some(b) = bias {
        if b.shape() != [n] {
            return Err(Error::ShapeMismatch {
                op,
                why: format!("bias must be [N] = [{n}], got {:?}", b.shape()),
            });
        }
    }
    if m == 0 || n == 0 || k == 0 {
        return Err(Error::EmptyTensor {
            op,
            shape: vec![m, n, k],
        });
    }
    let operands = [
        ("operand a", Some(a)),
        ("operand w", Some(w)),
        ("bias", bias),
        ("output", Some(y)),
    ];
    for (name, t) in operands.into_iter().filter_map(|(n, t)| Some((n, t?))) {
        v.check_dtype_device(t)?;
        if t.dtype() != a.dtype() {
            return Err(Error::ShapeMismatch {
                op,
                why: format!(
                    "every operand must have one dtype: a is {}, {name} is {}",
                    a.dtype(),
                    t.dtype()
                ),
            });
        }
        if !t.is_contiguous() {
            return Err(v.not_contiguous(t, name));
        }
    }
    if y.shape() != [m, n] {
        return Err(Error::ShapeMismatch {
            op,
            why: format!("output must be [M, N] = [{m}, {n}], got {:?}", y.shape()),
        });
    }
    Ok(Gemm {
        a,
        w,
        bias,
        act,
        m,
        n,
        k,
    })
}

/// A registry row's run: the call's GEMM operands (checked already), then `f`.
pub fn gemm_call(f: GemmFn, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let (a, w) = (inputs[0], inputs[1]);
    let (m, n, k) = dims("gemm", a, w)?;
    let g = Gemm {
        a,
        w,
        bias: inputs.get(2).copied(),
        act: p.get::<GemmParams>()?.act,
        m,
        n,
        k,
    };
    f(&g, y)
}

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
    pub dev: std::sync::Arc<crate::runtime::device::CudaDevice>,
    pub a: &'a cudarc::driver::CudaSlice<u8>,
    pub w: &'a cudarc::driver::CudaSlice<u8>,
    pub bias: Option<&'a cudarc::driver::CudaSlice<u8>>,
    pub c: &'a mut cudarc::driver::CudaSlice<u8>,
}

// ---- row-major operands of the products that take them as they lie (cuBLAS, cuBLASLt, v7's
// layout kernels) ------------------------------------------------------------------------------

/// A contiguous 2-D tensor's rows and columns; else an error naming `who` (the product) and
/// `what` (the operand).
pub(crate) fn dims2(who: &str, t: &Tensor, what: &str) -> Result<(usize, usize)> {
    match *t.shape() {
        [r, c] if t.is_contiguous() => Ok((r, c)),
        _ => Err(Error::Invalid(format!(
            "{who} takes contiguous 2-D tensors; {what} is {:?}",
            t.shape()
        ))),
    }
}

/// The CUDA device of a product's operand `t`, or an error naming the product (`who`).
pub(crate) fn device_of(
    who: &str,
    t: &Tensor,
) -> Result<std::sync::Arc<crate::runtime::device::CudaDevice>> {
    t.device()
        .cuda()
        .cloned()
        .ok_or_else(|| Error::Invalid(format!("{who} was handed CPU tensors")))
}

/// The device address of an operand the product reads.
pub(crate) fn read_ptr(
    who: &str,
    t: &Tensor,
    what: &str,
    dev: &crate::runtime::device::CudaDevice,
) -> Result<u64> {
    let b = t
        .cuda_buf()
        .ok_or_else(|| Error::Invalid(format!("{who}: {what} is not on CUDA")))?;
    Ok(cudarc::driver::DevicePtr::device_ptr(b, &dev.stream).0)
}

/// The device address of an operand the product writes.
pub(crate) fn write_ptr(
    who: &str,
    t: &mut Tensor,
    what: &str,
    dev: &crate::runtime::device::CudaDevice,
) -> Result<u64> {
    let b = t
        .cuda_buf_mut()
        .ok_or_else(|| Error::Invalid(format!("{who}: {what} is not on CUDA")))?;
    Ok(cudarc::driver::DevicePtrMut::device_ptr_mut(b, &dev.stream).0)
}

/// The (M, K, N) of `c[c_row..] = op(a)·op(b)` for row-major operands (`op(x)` is `xᵀ` when its
/// flag is set), checked to agree in shape and dtype; errors name the product (`who`).
pub(crate) fn row_major_dims(
    who: &str,
    a: &Tensor,
    ta: bool,
    b: &Tensor,
    tb: bool,
    c: &Tensor,
    c_row: usize,
) -> Result<(usize, usize, usize)> {
    let (ar, ac) = dims2(who, a, "a")?;
    let (br, bc) = dims2(who, b, "b")?;
    let (cr, cc) = dims2(who, c, "c")?;
    let (m, k) = if ta { (ac, ar) } else { (ar, ac) };
    let (kb, n) = if tb { (bc, br) } else { (br, bc) };
    let dt = a.dtype();
    let fits = cc == n && c_row.checked_add(m).is_some_and(|end| end <= cr);
    if kb != k || !fits || b.dtype() != dt || c.dtype() != dt {
        return Err(Error::ShapeMismatch {
            op: "matmul".into(),
            why: format!(
                "{who}: op(a) {m}x{k} · op(b) {kb}x{n} into rows {c_row}.. of c {cr}x{cc} ({dt} {} {})",
                b.dtype(),
                c.dtype()
            ),
        });
    }
    Ok((m, k, n))
}

/// `t` (`what`, a second output or input of the product, such as a GeLU's pre-activation) must
/// be `[m, n]`, contiguous, in the product's dtype.
pub(crate) fn like_product(
    who: &str,
    t: &Tensor,
    what: &str,
    m: usize,
    n: usize,
    dt: DType,
) -> Result<()> {
    let ts = dims2(who, t, what)?;
    if ts != (m, n) || t.dtype() != dt {
        return Err(Error::ShapeMismatch {
            op: "matmul".into(),
            why: format!(
                "{who}: {what} must be {m}x{n} {dt} like the product; it is {}x{} {}",
                ts.0,
                ts.1,
                t.dtype()
            ),
        });
    }
    Ok(())
}

/// A product's bias must be `[n]` in its dtype.
pub(crate) fn bias_of_product(who: &str, bias: &Tensor, n: usize, dt: DType) -> Result<()> {
    if bias.shape() != [n] || bias.dtype() != dt {
        return Err(Error::ShapeMismatch {
            op: LINEAR.into(),
            why: format!(
                "{who}: bias must be [{n}] {dt}; it is {:?} {}",
                bias.shape(),
                bias.dtype()
            ),
        });
    }
    Ok(())
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
    crate::ops::sample_rows(m, reference_row_count(m, n, k), seed)
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
    use crate::ops::gelu::{reference_f64, GeluApprox};
    match act {
        Activation::None => v,
        Activation::GeluTanh => reference_f64(v, GeluApprox::Tanh),
        Activation::GeluErf => reference_f64(v, GeluApprox::Erf),
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
pub(crate) fn faer_f32(a: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
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
    use crate::ops::cpu_prims as prim;
    use rayon::prelude::*;
    let a = prim::to_f32(g.a)?;
    let w = prim::to_f32(g.w)?;
    let mut out = faer_f32(&a, &w, g.m, g.n, g.k);
    let bias = g.bias.map(prim::to_f32).transpose()?;
    let approx = g.act.gelu();
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
            .for_each(|rows| bias_act(rows, b.len(), b, approx));
    }
    prim::store_f32(c, &out)
}

/// Rows of `c` at row stride `ld`, the first `bias.len()` values of each (the last row may end
/// there): plus the bias, through the activation, in place. The bias is zipped along each row
/// (no index to check, so the loop vectorises), one loop an activation form (with the form's
/// branch inside, the loop ran the GeLU ~2× slower).
#[inline(always)]
fn bias_act_body<const FMA: bool>(
    c: &mut [f32],
    ld: usize,
    bias: &[f32],
    act: Option<crate::ops::gelu::GeluApprox>,
) {
    use crate::ops::gelu::{gelu_f32, GeluApprox};
    #[inline(always)]
    fn each(c: &mut [f32], ld: usize, bias: &[f32], f: impl Fn(f32) -> f32) {
        for row in c.chunks_mut(ld) {
            for (v, &b) in row.iter_mut().zip(bias) {
                *v = f(*v + b);
            }
        }
    }
    match act {
        None => each(c, ld, bias, |x| x),
        Some(GeluApprox::Tanh) => each(c, ld, bias, |x| gelu_f32::<FMA>(x, GeluApprox::Tanh)),
        Some(GeluApprox::Erf) => each(c, ld, bias, |x| gelu_f32::<FMA>(x, GeluApprox::Erf)),
    }
}

// Compiled for AVX-512 or AVX2, and FMA, where the CPU has them: 16 or 8 lanes, VEX- or
// EVEX-encoded, so it pays no SSE–AVX transition after the GEMM kernels (the SSE2 form ran
// faer's GeLU epilogue ~10× slower than the same loop in `gelu/fused`).
crate::ops::cpu_prims::avx2_twin!(
    pub(crate) fn bias_act(
        c: &mut [f32],
        ld: usize,
        bias: &[f32],
        act: Option<crate::ops::gelu::GeluApprox>,
    ) => bias_act_body
);

/// Which CPU product `cpu/auto` runs for operands of `dt`: `amx` for bf16 where the CPU has
/// AMX's bf16 tiles, `avx512` for f32 where it has AVX-512 (both only where `--cpu-path`
/// allows them), else `faer`.
fn cpu_auto_pick(dt: DType) -> &'static str {
    use crate::runtime::simd;
    match dt {
        DType::BF16 if simd::amx_bf16() => amx::VARIANT,
        DType::F32 if simd::avx512() => avx512::VARIANT,
        _ => "faer",
    }
}

/// `cpu/auto`: the product [`cpu_auto_pick`] names.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_cpu_auto(g: &Gemm, c: &mut Tensor) -> Result<()> {
    match cpu_auto_pick(g.dtype()) {
        amx::VARIANT => amx::run(g, c),
        avx512::VARIANT => avx512::run(g, c),
        _ => run_cpu_faer(g, c),
    }
}

/// `cpu/auto`'s pick for bench's `picked`, from the raw inputs.
pub fn cpu_auto_label(_: &Params, x: &[&Tensor]) -> String {
    x.first()
        .map_or("(no operands)", |a| cpu_auto_pick(a.dtype()))
        .to_string()
}

// ---- what matmul and linear share as ops ---------------------------------------------------
/// Both GEMM ops' descriptor methods, written once: `bias` says whether the op has one.
pub(crate) mod def {
    use super::*;

    pub fn check_shape(op: &str, shape: &[usize], row_stride: Option<usize>) -> Result<()> {
        if shape.len() != 3 {
            return Err(Error::BadShape {
                shape: shape_str(shape),
                why: format!("{op} takes M×N×K (three sizes), e.g. 8192x8192x8192"),
            });
        }
        if row_stride.is_some() {
            return Err(Error::Invalid(format!(
                "--row-stride applies to the row ops (shapes ROWSxCOLS: `kernlab list`), not to {op} (M×N×K)"
            )));
        }
        Ok(())
    }

    pub fn input_shapes(shape: &[usize], bias: bool) -> Vec<Vec<usize>> {
        let &[m, n, k] = shape else {
            return Vec::new();
        };
        let mut v = vec![vec![m, k], vec![n, k]];
        if bias {
            v.push(vec![n]);
        }
        v
    }

    /// a ~ N(0, 1), w ~ N(0, 1/K) so outputs are O(1) whatever K, bias ~ N(0, 0.5).
    pub fn inputs(
        op: &str,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        bias: bool,
    ) -> Result<Vec<Tensor>> {
        let &[m, n, k] = shape else {
            return Err(Error::BadShape {
                shape: shape_str(shape),
                why: format!("{op} takes M×N×K (three sizes), e.g. 8192x8192x8192"),
            });
        };
        let cpu = Device::Cpu;
        let normal = |std: f64| Init::Normal { mean: 0.0, std };
        let mut v = vec![
            Tensor::random(&[m, k], dtype, normal(1.0), seed, None, &cpu)?,
            Tensor::random(
                &[n, k],
                dtype,
                normal(1.0 / (k.max(1) as f64).sqrt()),
                seed ^ 0x5eed_0001,
                None,
                &cpu,
            )?,
        ];
        if bias {
            v.push(Tensor::random(
                &[n],
                dtype,
                normal(0.5),
                seed ^ 0x5eed_0002,
                None,
                &cpu,
            )?);
        }
        Ok(v)
    }

    pub fn out_shape(shape: &[usize]) -> Vec<usize> {
        match shape {
            &[m, n, _] => vec![m, n],
            s => s.to_vec(),
        }
    }

    pub fn reference_block_count(shape: &[usize]) -> usize {
        match shape {
            &[m, n, k] => reference_row_count(m, n, k),
            _ => 0,
        }
    }

    pub fn reference_blocks(shape: &[usize], seed: u64) -> Option<Vec<usize>> {
        let &[m, n, k] = shape else { return None };
        let rows = reference_rows(m, n, k, seed);
        (rows.len() < m).then_some(rows)
    }

    /// W whole, and the checked rows of A.
    pub fn reference_input_elems(shape: &[usize], rows: usize) -> usize {
        match shape {
            &[_, n, k] => n.saturating_mul(k).saturating_add(rows.saturating_mul(k)),
            _ => 0,
        }
    }

    pub fn reference(inputs: &[Tensor], rows: Option<&[usize]>, p: &Params) -> Result<Vec<f64>> {
        let (m, n, k) = dims("gemm", &inputs[0], &inputs[1])?;
        let all: Vec<usize>;
        let rows = match rows {
            Some(r) => r,
            None => {
                all = (0..m).collect();
                &all
            }
        };
        // Only the checked rows of A, in order: the oracle takes them as rows 0, 1, ….
        let a = inputs[0].blocks_f64(k, rows)?;
        let w = inputs[1].to_f64_vec()?;
        let b = inputs.get(2).map(|b| b.to_f64_vec()).transpose()?;
        let at: Vec<usize> = (0..rows.len()).collect();
        let act = p.get::<GemmParams>()?.act;
        Ok(super::reference(&a, &w, b.as_deref(), (n, k), &at, act))
    }

    pub fn min_bytes(shape: &[usize], dtype: DType, bias: bool) -> usize {
        match shape {
            &[m, n, k] => (m * k + n * k + m * n + if bias { n } else { 0 }) * dtype.size(),
            _ => 0,
        }
    }

    /// 2·M·N·K (the epilogue's few FLOPs per output not counted, as every GEMM benchmark).
    pub fn flops(shape: &[usize]) -> f64 {
        match shape {
            &[m, n, k] => 2.0 * m as f64 * n as f64 * k as f64,
            _ => 0.0,
        }
    }

    pub fn default_shape(device: DeviceKind) -> Vec<usize> {
        match device {
            // The lecture's 8192³ on a GPU; 1024³ keeps the CPU's f64 check quick.
            DeviceKind::Cuda => vec![8192, 8192, 8192],
            DeviceKind::Cpu => vec![1024, 1024, 1024],
        }
    }

    pub fn default_sweep(device: DeviceKind) -> SweepDefault {
        match device {
            DeviceKind::Cuda => SweepDefault::Square("1024..16384:x2"),
            DeviceKind::Cpu => SweepDefault::Square("128..1024:x2"),
        }
    }

    pub fn tuning(candidates: crate::ops::CandidatesFn) -> Tuning {
        Tuning {
            default_dtype: DType::BF16,
            what: "every configuration (tiles, stages, warps, GROUP_M; CUTLASS's kernel, raster \
                   order and swizzle) of each version (the wgmma ones and CUTLASS on sm_90), and \
                   which one `auto` runs",
            versions: &auto::TUNABLE,
            candidates,
        }
    }
}

struct Matmul;

/// The methods of [`OpDef`] that matmul and linear share (everything about an M×N×K GEMM
/// but its name, flags, parameters, variants and PyTorch cases): `$name` names the op in
/// errors, `$bias` says whether it takes a bias.
macro_rules! gemm_def_methods {
    ($name:literal, $bias:literal) => {
        fn grammar(&self) -> $crate::ops::Grammar {
            $crate::ops::Grammar::Gemm
        }
        fn default_shape(&self, device: $crate::runtime::device::DeviceKind) -> Vec<usize> {
            $crate::ops::matmul::def::default_shape(device)
        }
        fn default_sweep(
            &self,
            device: $crate::runtime::device::DeviceKind,
        ) -> $crate::ops::SweepDefault {
            $crate::ops::matmul::def::default_sweep(device)
        }
        fn check_shape(
            &self,
            shape: &[usize],
            row_stride: Option<usize>,
        ) -> $crate::runtime::error::Result<()> {
            $crate::ops::matmul::def::check_shape($name, shape, row_stride)
        }
        fn input_shapes(&self, shape: &[usize], _: &$crate::ops::Params) -> Vec<Vec<usize>> {
            $crate::ops::matmul::def::input_shapes(shape, $bias)
        }
        fn inputs(
            &self,
            shape: &[usize],
            dtype: $crate::runtime::dtype::DType,
            seed: u64,
            _: Option<usize>,
            _: &$crate::ops::Params,
        ) -> $crate::runtime::error::Result<Vec<Tensor>> {
            $crate::ops::matmul::def::inputs($name, shape, dtype, seed, $bias)
        }
        fn out_shape(&self, shape: &[usize], _: &$crate::ops::Params) -> Vec<usize> {
            $crate::ops::matmul::def::out_shape(shape)
        }
        fn graph<'g>(
            &self,
            g: &'g $crate::compiler::Graph,
            p: &$crate::ops::Params,
        ) -> Option<$crate::runtime::error::Result<$crate::compiler::Expr<'g>>> {
            Some(
                p.get::<$crate::ops::matmul::GemmParams>()
                    .and_then(|p| $crate::ops::matmul::compiled::graph(g, p)),
            )
        }
        fn call_out_shape(
            &self,
            inputs: &[&$crate::runtime::tensor::Tensor],
            _: &$crate::ops::Params,
        ) -> Vec<usize> {
            vec![
                inputs[0].shape()[0],
                inputs.get(1).map_or(0, |w| w.shape()[0]),
            ]
        }
        fn reference_block_count(
            &self,
            shape: &[usize],
            _: usize,
            _: &$crate::ops::Params,
        ) -> usize {
            $crate::ops::matmul::def::reference_block_count(shape)
        }
        fn reference_blocks(
            &self,
            shape: &[usize],
            seed: u64,
            _: usize,
            _: &$crate::ops::Params,
        ) -> Option<Vec<usize>> {
            $crate::ops::matmul::def::reference_blocks(shape, seed)
        }
        fn reference_input_elems(
            &self,
            shape: &[usize],
            rows: usize,
            _: &$crate::ops::Params,
        ) -> usize {
            $crate::ops::matmul::def::reference_input_elems(shape, rows)
        }
        fn reference(
            &self,
            inputs: &[$crate::runtime::tensor::Tensor],
            rows: Option<&[usize]>,
            p: &$crate::ops::Params,
        ) -> $crate::runtime::error::Result<Vec<f64>> {
            $crate::ops::matmul::def::reference(inputs, rows, p)
        }
        fn compare(&self) -> $crate::ops::Compare {
            $crate::ops::Compare::RowsL2
        }
        fn min_bytes(
            &self,
            shape: &[usize],
            dtype: $crate::runtime::dtype::DType,
            _: &$crate::ops::Params,
        ) -> usize {
            $crate::ops::matmul::def::min_bytes(shape, dtype, $bias)
        }
        fn flops(&self, shape: &[usize], _: &$crate::ops::Params) -> f64 {
            $crate::ops::matmul::def::flops(shape)
        }
        fn check_call(
            &self,
            v: &$crate::ops::Variant,
            p: &$crate::ops::Params,
            inputs: &[&$crate::runtime::tensor::Tensor],
            y: &$crate::runtime::tensor::Tensor,
        ) -> $crate::runtime::error::Result<()> {
            $crate::ops::matmul::gemm_args(v, p, inputs, y).map(|_| ())
        }
    };
}
pub(crate) use gemm_def_methods;

impl OpDef for Matmul {
    gemm_def_methods!("matmul", false);
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["gemm"]
    }
    fn about(&self) -> &'static str {
        "c = a·wᵀ (a [M,K], w [N,K] as a Linear weight): shape M×N×K"
    }
    fn params(&self, _flags: &FlagValues) -> Result<Params> {
        Ok(Params::new(GemmParams::default()))
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    fn vendor_variant(&self) -> Option<&'static str> {
        Some("cublas")
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "matmul",
            args: |_| Ok(Vec::new()),
        })
    }
    fn tuning(&self) -> Option<Tuning> {
        Some(def::tuning(|d, dt, only| auto::candidates(OP, dt, d, only)))
    }
}

/// Every kernel `auto` may launch from kernels/matmul.cu (v6's and v7's live in
/// matmul_sm90.cu, which CI checks under their own rows).
pub(crate) fn auto_symbols(dt: DType) -> Vec<String> {
    let mut v = cuda::symbols("v4_grouped", dt);
    if dt != DType::F32 {
        v.extend(cuda::symbols("v5_mma", dt));
    }
    v
}

/// The rows every GEMM op has, in the lecture's order (matmul and linear share every kernel;
/// linear adds the epilogue).
macro_rules! gemm_rows {
    ($op:expr, [$($before:expr),* $(,)?], [$($after:expr),* $(,)?]) => {
        [
            $($before,)*
            Variant::new($op, "reference", Tier::Reference, DeviceKind::Cpu,
                "f64 dot products on the CPU (sampled rows for large shapes): the oracle",
                |p, x, y| gemm_call(run_reference, p, x, y)),
            Variant::new($op, "v1_naive", Tier::Cuda, DeviceKind::Cuda,
                "the lecture's kernel: one thread per output, dot product from global memory",
                |p, x, y| gemm_call(cuda::run_v1, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v1_naive", dt)),
            Variant::new($op, "v2_smem", Tier::Cuda, DeviceKind::Cuda,
                "shared-memory tiles: each input element loaded once per tile, reused by a tile row/column",
                |p, x, y| gemm_call(cuda::run_v2, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v2_smem", dt)),
            Variant::new($op, "v3_regs", Tier::Cuda, DeviceKind::Cuda,
                "2-D register blocking (a micro-tile per thread), 16-byte loads, row-major tile order",
                |p, x, y| gemm_call(auto::run_v3, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v3_regs", dt)),
            Variant::new($op, "v4_grouped", Tier::Cuda, DeviceKind::Cuda,
                "v3 with the grouped (L2-friendly) tile order, GROUP_M tile rows per group",
                |p, x, y| gemm_call(auto::run_v4, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v4_grouped", dt)),
            Variant::new($op, "v5_mma", Tier::Cuda, DeviceKind::Cuda,
                "tensor cores: mma.sync m16n8k16, ldmatrix, a cp.async multi-stage pipeline (sm_80+)",
                |p, x, y| gemm_call(auto::run_v5, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v5_mma", dt))
                .dtypes(HALF_DTYPES)
                .claims(&["mma.sync", "ldmatrix", "cp.async"]),
            Variant::new($op, "v6_wgmma", Tier::Cuda, DeviceKind::Cuda,
                "Hopper: wgmma fed by TMA into swizzled shared memory, mbarrier pipeline, warp-specialised (sm_90a)",
                |p, x, y| gemm_call(auto::run_v6, p, x, y))
                .kernels(&sm90::MATMUL_SM90, sm90::symbols)
                .dtypes(HALF_DTYPES)
                .min_arch(90)
                .claims(&["wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier"]),
            Variant::new($op, "v7_wgmma_tma_store", Tier::Cuda, DeviceKind::Cuda,
                "v6 with an asynchronous epilogue: the tile goes through shared memory and leaves by TMA store while the next tile computes (sm_90a)",
                |p, x, y| gemm_call(auto::run_v7, p, x, y))
                .kernels(&sm90::MATMUL_SM90, sm90::symbols_v7)
                .dtypes(HALF_DTYPES)
                .min_arch(90)
                .claims(&["wgmma.mma_async", "cp.async.bulk.tensor", "cp.async.bulk.commit_group"]),
            Variant::new($op, "v8_skinny", Tier::Cuda, DeviceKind::Cuda,
                "few rows (M ≤ 8, batch-1 inference): a warp per output column, w streamed once in 16-byte packs",
                |p, x, y| gemm_call(cuda::run_v8, p, x, y))
                .kernels(&cuda::MATMUL, |dt| cuda::symbols("v8_skinny", dt))
                .vec16(),
            Variant::new($op, "auto", Tier::Cuda, DeviceKind::Cuda,
                "the autotuned (version, configuration) for the device, dtype and shape bucket, else v8 for M ≤ 8, v6 on sm_90 / v5 / v4 (f32)",
                |p, x, y| gemm_call(auto::run_auto, p, x, y))
                .kernels(&cuda::MATMUL, auto_symbols)
                .picks(auto::label_inputs),
            Variant::new($op, "compiled", Tier::Compiled, DeviceKind::Cuda,
                "kernlab's compiler: the graph's element-wise tail generated as the epilogue of v7's template (v6's where c cannot take a TMA store; sm_90a)",
                |p, x, y| gemm_call($crate::ops::matmul::compiled::run, p, x, y))
                .generated($crate::ops::matmul::compiled::kernels)
                .dtypes(HALF_DTYPES)
                .min_arch(90)
                .claims(&["wgmma.mma_async", "cp.async.bulk.tensor"]),
            Variant::new($op, "triton", Tier::Triton, DeviceKind::Cuda,
                "the lecture's tiled matmul in Triton (kernels/triton/matmul.py): GROUP_M tile order, tl.dot, bias + GeLU epilogue; configurations autotuned",
                |p, x, y| gemm_call(auto::run_triton, p, x, y))
                .triton(|p, dt, shape| {
                    let gp = p.get::<GemmParams>()?;
                    Ok(vec![$crate::ops::matmul::triton::default_spec(dt, gp.bias, gp.act.code(), shape)])
                }),
            Variant::new($op, "cutlass", Tier::Cutlass, DeviceKind::Cuda,
                "a CUTLASS 3.x Hopper GEMM (CollectiveBuilder: TMA, wgmma, warp-specialised cooperative or ping-pong, persistent), bias + GeLU in CUTLASS's fused epilogue; built with nvcc at first use (sm_90); kernel, raster order and swizzle autotuned",
                |p, x, y| gemm_call(auto::run_cutlass, p, x, y))
                .dtypes(HALF_DTYPES)
                .min_arch(90),
            Variant::new($op, "cublaslt", Tier::Vendor, DeviceKind::Cuda,
                "cuBLASLt matmul with its fused epilogue (bias, GELU), heuristic algorithm cached",
                |p, x, y| gemm_call(vendor::run_cublaslt, p, x, y)),
            Variant::new($op, "faer", Tier::Cpu, DeviceKind::Cpu,
                "faer's f32 matmul (rayon, cache-blocked SIMD), then the epilogue in one pass",
                |p, x, y| gemm_call(run_cpu_faer, p, x, y)),
            Variant::new($op, $crate::ops::matmul::amx::VARIANT, Tier::Cpu, DeviceKind::Cpu,
                "bf16 on AMX's tile unit (TDPBF16PS, f32 sums): both operands packed into tiles, bias and GeLU on each 32×32 block as it leaves them; CPUs with AMX-BF16 (Intel Xeon from Sapphire Rapids)",
                |p, x, y| gemm_call($crate::ops::matmul::amx::run, p, x, y))
                .dtypes(&[DType::BF16]),
            Variant::new($op, $crate::ops::matmul::avx512::VARIANT, Tier::Cpu, DeviceKind::Cpu,
                "f32 on AVX-512 FMA: both operands packed into panels, a 14×32 block of sums in registers, bias and GeLU on each block as its last slice of K is stored; CPUs with AVX-512",
                |p, x, y| gemm_call($crate::ops::matmul::avx512::run, p, x, y))
                .dtypes(&[DType::F32]),
            Variant::new($op, "auto", Tier::Cpu, DeviceKind::Cpu,
                "amx for bf16 where the CPU has AMX's bf16 tiles, avx512 for f32 where it has AVX-512, else faer",
                |p, x, y| gemm_call($crate::ops::matmul::run_cpu_auto, p, x, y))
                .picks($crate::ops::matmul::cpu_auto_label),
            $($after,)*
        ]
    };
}
pub(crate) use gemm_rows;

/// Matmul's rows: the shared ones, and cuBLAS (no epilogue). The macro writes the whole list,
/// so a row added to the shared ones that the length leaves out is a compile error.
static VARIANTS: [Variant; 19] = gemm_rows!(
    OP,
    [],
    [Variant::new(
        OP,
        "cublas",
        Tier::Vendor,
        DeviceKind::Cuda,
        "cuBLAS: exact-f32 sgemm, bf16/f16 GemmEx with f32 accumulation",
        |p, x, y| gemm_call(vendor::run_cublas, p, x, y),
    )]
);
