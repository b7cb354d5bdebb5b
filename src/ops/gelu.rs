//! GeLU, element-wise: the tanh approximation (PyTorch `approximate="tanh"`) and the exact
//! erf form. Bytes per element: read sizeof(T) + write sizeof(T) — nothing else is needed.
//!
//! Variants: `reference` (f64), `manual` (the lecture's `manual_gelu`, one launch or pass per
//! primitive), `cuda/v1_naive`, `cuda/v2_vec16`, `cuda/v3_vec16_ilp`, `cpu/fused`.

use super::cpu_prims::{self as prim, GRAIN};
use super::{
    Flag, FlagKind, FlagValues, Grammar, Op, OpDef, OpParams, Params, SweepDefault, Tier,
    TorchCases, Variant,
};
use crate::compiler::{Expr, Graph, Layout};
use crate::runtime::device::triton::{triton_type, TritonSpec};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::{DType, Element};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::{aligned16, cfg_1d, cuda_io};
use crate::runtime::launch::{launch, launch_triton};
use crate::runtime::tensor::{row_strided_layout, Init, Tensor};
use rayon::prelude::*;
use serde::Serialize;
use std::str::FromStr;

/// The op's handle.
pub const OP: Op = Op(&Gelu);

/// The CUDA source of every numbered version.
pub static SOURCE: KernelSource = KernelSource {
    file: "gelu.cu",
    src: include_str!("../../kernels/gelu.cu"),
};
const GELU: &KernelSource = &SOURCE;

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
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "tanh" => Ok(GeluApprox::Tanh),
            "erf" | "exact" | "none" => Ok(GeluApprox::Erf),
            o => Err(format!(
                "unknown GeLU approximation '{o}' (use tanh or erf)"
            )),
        }
    }
}

/// GeLU's parameter: its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct GeluParams {
    pub gelu: GeluApprox,
}

impl OpParams for GeluParams {
    fn form(&self) -> Option<String> {
        Some(self.gelu.name().to_string())
    }
}

/// GeLU is judged in blocks of this many elements whatever its shape (it is element-wise):
/// rows of a few columns would shrink the error measure's 1e-3 · block-max term to nothing,
/// and the same values would pass or fail by how they were shaped.
pub const CHECK_BLOCK: usize = 4096;

struct Gelu;

static FLAGS: [Flag; 1] = [Flag {
    name: "gelu",
    help: "GeLU form: tanh (PyTorch's approximate=\"tanh\") or erf (exact); the gelu op's \
           default is tanh, the mlp's erf (F.gelu's); linear's epilogue takes --activation",
    kind: FlagKind::Value {
        value_name: "FORM",
        default: "tanh (gelu), erf (mlp)",
        values: Some(&["tanh", "erf"]),
    },
}];

impl OpDef for Gelu {
    fn name(&self) -> &'static str {
        "gelu"
    }
    fn about(&self) -> &'static str {
        "GeLU, element-wise: the tanh approximation or the exact erf form"
    }
    fn grammar(&self) -> Grammar {
        Grammar::Rows
    }
    fn default_shape(&self, device: DeviceKind) -> Vec<usize> {
        match device {
            DeviceKind::Cuda => vec![16384, 16384],
            DeviceKind::Cpu => vec![2048, 2048],
        }
    }
    fn default_sweep(&self, device: DeviceKind) -> SweepDefault {
        match device {
            DeviceKind::Cuda => SweepDefault::Numel("2^20..2^28:x2"),
            DeviceKind::Cpu => SweepDefault::Numel("2^16..2^22:x2"),
        }
    }
    fn flags(&self) -> &'static [Flag] {
        &FLAGS
    }
    fn params(&self, flags: &FlagValues) -> Result<Params> {
        let gelu = match flags.get("gelu") {
            Some(s) => s.parse().map_err(Error::Invalid)?,
            None => GeluApprox::default(),
        };
        Ok(Params::new(GeluParams { gelu }))
    }
    fn check_shape(&self, shape: &[usize], row_stride: Option<usize>) -> Result<()> {
        row_strided_layout(shape, row_stride).map(|_| ())
    }
    fn input_shapes(&self, shape: &[usize], _: &Params) -> Vec<Vec<usize>> {
        vec![shape.to_vec()]
    }
    /// x ~ N(0, 2): both tails of GeLU, and the region near −3 where the manual form's
    /// 1 + tanh cancels.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        row_stride: Option<usize>,
        _: &Params,
    ) -> Result<Vec<Tensor>> {
        let init = Init::Normal {
            mean: 0.0,
            std: 2.0,
        };
        Ok(vec![Tensor::random(
            shape,
            dtype,
            init,
            seed,
            row_stride,
            &Device::Cpu,
        )?])
    }
    fn out_shape(&self, shape: &[usize], _: &Params) -> Vec<usize> {
        shape.to_vec()
    }
    fn check_block(&self, _out_shape: &[usize]) -> (usize, &'static str) {
        (CHECK_BLOCK, "blocks of 4096 elements")
    }
    /// The inputs are N(0, 1), so GeLU's outputs are of order 1: a block of a few elements
    /// all near zero (a 1×1 tensor at x ≈ −5, where eager bf16's 1 + tanh cancels to 0) is
    /// judged against that scale, not element by element.
    fn min_check_scale(&self) -> f64 {
        1.0
    }
    fn reference(
        &self,
        inputs: &[Tensor],
        blocks: Option<&[usize]>,
        p: &Params,
    ) -> Result<Vec<f64>> {
        let x = match blocks {
            Some(b) => inputs[0].blocks_f64(CHECK_BLOCK, b)?,
            None => inputs[0].to_f64_vec()?,
        };
        Ok(reference(&x, p.get()?))
    }
    fn min_bytes(&self, shape: &[usize], dtype: DType, _: &Params) -> usize {
        2 * shape.iter().product::<usize>() * dtype.size()
    }
    /// 0.5·x·(1 + tanh(k·(x + 0.044715·x³))): 3 mul, 1 add, 1 mul, tanh, 1 add, 2 mul.
    fn flops(&self, shape: &[usize], _: &Params) -> f64 {
        9.0 * shape.iter().product::<usize>() as f64
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    fn graph<'g>(&self, g: &'g Graph, p: &Params) -> Option<Result<Expr<'g>>> {
        Some(p.get::<GeluParams>().and_then(|p| graph(g, p)))
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "gelu",
            args: |p| {
                let g = p.get::<GeluParams>().map_err(|e| e.to_string())?;
                Ok(vec!["--gelu".into(), g.gelu.name().into()])
            },
        })
    }
    /// The kernels of the form asked for (`gelu_v2_vec16_tanh_f32`, not `…_erf_…`).
    fn kernel_in_form(&self, symbol: &str, p: &Params) -> bool {
        let Ok(g) = p.get::<GeluParams>() else {
            return true;
        };
        let other = match g.gelu {
            GeluApprox::Tanh => "erf",
            GeluApprox::Erf => "tanh",
        };
        !symbol.split('_').any(|part| part == other)
    }
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// The f64 oracle, PyTorch's two GeLUs, in forms without cancellation for x ≪ 0: 0.5·x·(1 + tanh u) as
/// x / (1 + e^(−2u)), and 0.5·x·(1 + erf(x/√2)) as 0.5·x·erfc(−x/√2). (1 + tanh u and 1 + erf
/// round to 0 in f64 near x = −8 and −12, where GeLU is still a normal number: −3.1e-21 and
/// −2.1e-32, which a correct kernel then failed against.)
pub fn reference_f64(x: f64, approx: GeluApprox) -> f64 {
    match approx {
        GeluApprox::Tanh => {
            let u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
            x / (1.0 + (-2.0 * u).exp())
        }
        GeluApprox::Erf => 0.5 * x * libm::erfc(-x / std::f64::consts::SQRT_2),
    }
}

/// GeLU's derivative in f64 (the oracle of its backward): Φ(x) + x·φ(x) for the exact form;
/// for tanh, d/dx of 0.5·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³).
pub fn derivative_f64(x: f64, approx: GeluApprox) -> f64 {
    match approx {
        GeluApprox::Erf => {
            let cdf = 0.5 * libm::erfc(-x / std::f64::consts::SQRT_2);
            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
            cdf + x * pdf
        }
        GeluApprox::Tanh => {
            let u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
            let t = u.tanh();
            0.5 * (1.0 + t)
                + 0.5 * x * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x * x)
        }
    }
}

/// The lecture's `manual_gelu` as an expression graph over input `x`: the formula as written,
/// `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))` (x³ as x·x·x, as the eager code multiplies it),
/// or `0.5·x·(1 + erf(x/√2))`.
pub fn graph<'g>(g: &'g Graph, p: &GeluParams) -> Result<Expr<'g>> {
    Ok(of(g.input("x", Layout::Full)?, p.gelu))
}

/// The lecture's GeLU of `x` as graph operations (`manual_gelu`'s, in its order).
pub fn of(x: Expr<'_>, approx: GeluApprox) -> Expr<'_> {
    match approx {
        GeluApprox::Tanh => 0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)).tanh()),
        GeluApprox::Erf => 0.5 * x * (1.0 + (x * std::f64::consts::FRAC_1_SQRT_2).erf()),
    }
}

pub fn reference(x: &[f64], p: &GeluParams) -> Vec<f64> {
    x.par_iter().map(|&v| reference_f64(v, p.gelu)).collect()
}

/// f32 GeLU as the fused CPU loop computes it: x·sigmoid(2u) for tanh (the same function
/// without 1 + tanh(u)'s cancellation for x ≪ 0), erfc for the exact form.
/// With `FMA`, fused multiply-adds ([`super::cpu_prims::mad`]).
#[inline(always)]
pub fn gelu_f32<const FMA: bool>(x: f32, approx: GeluApprox) -> f32 {
    use super::cpu_prims::{erfc_f32, exp_f32, mad};
    match approx {
        GeluApprox::Tanh => {
            let u = 0.797_884_6_f32 * mad::<FMA>(0.044715 * x * x, x, x);
            // kernlab's own e^x, which a loop vectorises (libm's is a call an element; glibc's
            // expf, right after faer's kernels, made the linear epilogue ~4× slower still).
            x / (1.0 + exp_f32::<FMA>(-2.0 * u))
        }
        GeluApprox::Erf => 0.5 * x * erfc_f32::<FMA>(-std::f32::consts::FRAC_1_SQRT_2 * x),
    }
}

// ---- reference ------------------------------------------------------------------------
fn run_reference(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let r = reference(&x.to_f64_vec()?, p);
    let t = Tensor::from_f64(&r, x.shape(), y.dtype())?;
    *y = t;
    Ok(())
}

// ---- manual: one pass per PyTorch op ------------------------------------------------------
/// CPU: `0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x * x * x)))`, one parallel pass
/// (and one f32 temporary) per op; the erf form is `0.5 * x * (1 + erf(x * 0.70710678))`.
fn run_manual_cpu(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let x = prim::to_f32(x)?;
    let out = match p.gelu {
        GeluApprox::Tanh => manual_tanh_f32(&x),
        GeluApprox::Erf => manual_erf_f32(&x),
    };
    prim::store_f32(y, &out)
}

/// The lecture's `manual_gelu` (tanh form) on f32 values: 9 parallel passes, 8 temporaries.
pub fn manual_tanh_f32(x: &[f32]) -> Vec<f32> {
    let t1 = prim::map1(x, |a| a * 0.044715);
    let t2 = prim::map2(&t1, x, |a, b| a * b);
    let t3 = prim::map2(&t2, x, |a, b| a * b);
    let t4 = prim::map2(x, &t3, |a, b| a + b);
    let t5 = prim::map1(&t4, |a| a * 0.797_884_6);
    let t6 = prim::map1(&t5, f32::tanh);
    let t7 = prim::map1(&t6, |a| a + 1.0);
    let t8 = prim::map1(x, |a| a * 0.5);
    prim::map2(&t8, &t7, |a, b| a * b)
}

/// The exact form, `0.5 * x * (1 + erf(x * 0.70710678))`, one pass per op.
pub fn manual_erf_f32(x: &[f32]) -> Vec<f32> {
    let t1 = prim::map1(x, |a| a * std::f32::consts::FRAC_1_SQRT_2);
    let t2 = prim::map1(&t1, libm::erff);
    let t3 = prim::map1(&t2, |a| a + 1.0);
    let t4 = prim::map1(x, |a| a * 0.5);
    prim::map2(&t4, &t3, |a, b| a * b)
}

// ---- hand-written CUDA ----------------------------------------------------------------------
fn symbol(version: &str, p: &GeluParams, dt: DType) -> String {
    format!("gelu_{version}_{}_{dt}", p.gelu.name())
}

pub fn cuda_symbols(version: &'static str) -> impl Fn(DType) -> Vec<String> {
    move |dt| {
        ["tanh", "erf"]
            .iter()
            .map(|a| format!("gelu_{version}_{a}_{dt}"))
            .collect()
    }
}

/// v1: one thread per element, 256 threads per block (the lecture's launch).
pub fn run_v1_naive(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let io = cuda_io(x, y)?;
    let cfg = cfg_1d(n as u64, 256)?;
    launch!(
        io.dev,
        GELU,
        symbol("v1_naive", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

fn require_aligned(io: &crate::runtime::launch::CudaIo, variant: &str) -> Result<()> {
    if !aligned16(&io.dev, io.x) || !aligned16(&io.dev, io.y) {
        return Err(Error::UnsupportedShape {
            op: "gelu".into(),
            variant: variant.into(),
            why: "needs 16-byte aligned buffers (use v1_naive for offset views)".into(),
        });
    }
    Ok(())
}

/// v2: one 16-byte pack per thread, 256 threads per block.
pub fn run_v2_vec16(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let per_pack = (16 / x.dtype().size()) as u64;
    let io = cuda_io(x, y)?;
    require_aligned(&io, "v2_vec16")?;
    let packs = (n as u64 / per_pack).max(per_pack);
    let cfg = cfg_1d(packs, 256)?;
    launch!(
        io.dev,
        GELU,
        symbol("v2_vec16", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

/// v3: 256-thread blocks, each a contiguous tile of 4 packs per thread.
pub fn run_v3_vec16_ilp(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    const UNROLL: u64 = 4;
    let n = x.numel() as i64;
    let per_pack = (16 / x.dtype().size()) as u64;
    let io = cuda_io(x, y)?;
    require_aligned(&io, "v3_vec16_ilp")?;
    let block = 256u32;
    let packs = n as u64 / per_pack;
    let blocks = packs.div_ceil(block as u64 * UNROLL).max(1);
    let cfg = cfg_1d(blocks * block as u64, block)?;
    launch!(
        io.dev,
        GELU,
        symbol("v3_vec16_ilp", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

// ---- fused CPU --------------------------------------------------------------------------
/// A chunk of the fused CPU GeLU in f32: one loop a form, so that the compiler need not
/// unswitch the form's branch to vectorise it (the linear epilogue's loop, with the branch
/// inside, ran ~2× slower).
#[inline(always)]
fn gelu_chunk_body<const FMA: bool>(y: &mut [f32], x: &[f32], a: GeluApprox) {
    #[inline(always)]
    fn each(y: &mut [f32], x: &[f32], f: impl Fn(f32) -> f32) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = f(v);
        }
    }
    match a {
        GeluApprox::Tanh => each(y, x, |v| gelu_f32::<FMA>(v, GeluApprox::Tanh)),
        GeluApprox::Erf => each(y, x, |v| gelu_f32::<FMA>(v, GeluApprox::Erf)),
    }
}

super::cpu_prims::avx2_twin!(
    /// [`gelu_chunk_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn gelu_chunk_fma(y: &mut [f32], x: &[f32], a: GeluApprox) => gelu_chunk_body
);
/// A chunk of the fused CPU GeLU: the f32 loop with FMA for every dtype, 16-bit rows widened
/// block by block around it (docs/perf-notes.md, "16-bit rows on the CPU").
fn gelu_chunk<T: Element>(y: &mut [T], x: &[T], a: GeluApprox) {
    super::cpu_prims::map_in_f32(y, x, |y, x| gelu_chunk_fma(y, x, a))
}

/// The fused CPU GeLU of every value of a 16-bit dtype, computed once a process by
/// [`gelu_chunk`] (widen, the f32 loop, round) on the instruction path in force, and kept: a
/// 16-bit GeLU is then one table load an element, with the bits the loop gives
/// (docs/perf-notes.md, "The erf form against PyTorch's"). 128 KiB a table.
fn table16<T: Element>(a: GeluApprox) -> &'static [u16; 1 << 16] {
    use std::sync::OnceLock;
    static TABLES: [OnceLock<Box<[u16; 1 << 16]>>; 8] = [const { OnceLock::new() }; 8];
    let slot = match T::DTYPE {
        DType::BF16 => 0,
        DType::F16 => 4,
        DType::F32 => unreachable!("table16 is for 16-bit dtypes"),
    } + 2 * usize::from(a == GeluApprox::Erf)
        // FMA changes the loop's roundings; the vector width (AVX2 or AVX-512) does not.
        + usize::from(crate::runtime::simd::avx2_fma());
    TABLES[slot].get_or_init(|| {
        let bits: Vec<u16> = (0..=u16::MAX).collect();
        let x: &[T] = bytemuck::cast_slice(&bits);
        let mut y = vec![T::from_f32(0.0); x.len()];
        gelu_chunk(&mut y, x, a);
        let mut t = Box::new([0u16; 1 << 16]);
        t.copy_from_slice(bytemuck::cast_slice(&y));
        t
    })
}

/// `y[i] = t[x[i]]`.
fn lookup(y: &mut [u16], x: &[u16], t: &[u16; 1 << 16]) {
    for (o, &b) in y.iter_mut().zip(x) {
        *o = t[usize::from(b)];
    }
}

/// One parallel pass: read, convert to f32, GeLU, round, store; a 16-bit dtype through its
/// table ([`table16`]).
fn run_cpu_fused(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    struct Fused(GeluApprox, usize);
    impl super::cpu_prims::SameTypeMap for Fused {
        fn map<T: Element>(&self, x: &[T], y: &mut [T]) {
            let Fused(a, n) = *self;
            let (x, y) = (&x[..n], &mut y[..n]);
            if T::DTYPE == DType::F32 {
                y.par_chunks_mut(GRAIN)
                    .zip(x.par_chunks(GRAIN))
                    .for_each(|(y, x)| gelu_chunk(y, x, a));
                return;
            }
            let t = table16::<T>(a);
            let (x, y): (&[u16], &mut [u16]) =
                (bytemuck::cast_slice(x), bytemuck::cast_slice_mut(y));
            y.par_chunks_mut(GRAIN)
                .zip(x.par_chunks(GRAIN))
                .for_each(|(y, x)| lookup(y, x, t));
        }
    }
    super::cpu_prims::map_same_type("cpu/fused", x, y, Fused(p.gelu, x.numel()))
}

// ---- Triton -----------------------------------------------------------------------------------
static TRITON: KernelSource = KernelSource {
    file: "gelu.py",
    src: include_str!("../../kernels/triton/gelu.py"),
};
/// Elements a Triton program takes (4 warps: 8 elements a thread, two 16-byte packs at 16 bits).
const TRITON_BLOCK: i64 = 1024;

/// The Triton kernel a call compiles: `aligned`, both buffers 16-byte aligned; `n16`, the
/// element count a multiple of 16 (what Triton's own launcher specializes on).
pub fn triton_spec(p: &GeluParams, dt: DType, aligned: bool, n16: bool) -> TritonSpec {
    TritonSpec::new(&TRITON, "gelu_kernel")
        .arg_hinted("x_ptr", &triton_type(dt, true), aligned)
        .arg_hinted("y_ptr", &triton_type(dt, true), aligned)
        .arg_hinted("n", "i64", n16)
        .constexpr("BLOCK", TRITON_BLOCK)
        .constexpr("TANH", p.gelu == GeluApprox::Tanh)
        .warps(4)
        .stages(1)
}

/// triton: the same element-wise GeLU written in Triton, one program a block of 1024.
pub fn run_triton(p: &GeluParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let io = cuda_io(x, y)?;
    let aligned = aligned16(&io.dev, io.x) && aligned16(&io.dev, io.y);
    let t = io
        .dev
        .triton(&triton_spec(p, x.dtype(), aligned, n % 16 == 0))?;
    let programs = u32::try_from((n as u64).div_ceil(TRITON_BLOCK as u64))
        .map_err(|_| Error::Invalid(format!("gelu/triton: {n} elements are too many programs")))?;
    launch_triton!(io.dev, t, (programs, 1, 1), [io.x, io.y, &n]);
    Ok(())
}

// ---- the registry's rows ------------------------------------------------------------------
static VARIANTS: [Variant; 9] = [
    Variant::new(
        OP,
        "reference",
        Tier::Reference,
        DeviceKind::Cpu,
        "f64 on the CPU, PyTorch's formula: the oracle",
        |p, x, y| run_reference(p.get()?, x[0], y),
    )
    .strided(),
    Variant::new(
        OP,
        "manual",
        Tier::Manual,
        DeviceKind::Cpu,
        "the lecture's manual_gelu: one parallel pass per primitive op, f32 temporaries",
        |p, x, y| run_manual_cpu(p.get()?, x[0], y),
    ),
    Variant::new(
        OP,
        "manual",
        Tier::Manual,
        DeviceKind::Cuda,
        "the lecture's manual_gelu: one kernel launch per primitive op (9 for tanh)",
        |p, x, y| super::compiled::run_eager(OP, p, x, y),
    )
    .generated(|p, dt| super::compiled::eager_kernels(OP, p, dt))
    .strided(),
    Variant::new(
        OP,
        "v1_naive",
        Tier::Cuda,
        DeviceKind::Cuda,
        "the lecture's kernel: one thread per element, scalar loads",
        |p, x, y| run_v1_naive(p.get()?, x[0], y),
    )
    .kernels(&SOURCE, |dt| cuda_symbols("v1_naive")(dt)),
    Variant::new(
        OP,
        "v2_vec16",
        Tier::Cuda,
        DeviceKind::Cuda,
        "one 16-byte pack per thread (ld/st.global.v4)",
        |p, x, y| run_v2_vec16(p.get()?, x[0], y),
    )
    .kernels(&SOURCE, |dt| cuda_symbols("v2_vec16")(dt))
    .vec16(),
    Variant::new(
        OP,
        "v3_vec16_ilp",
        Tier::Cuda,
        DeviceKind::Cuda,
        "a contiguous tile of 4 packs per thread, all loads in flight first",
        |p, x, y| run_v3_vec16_ilp(p.get()?, x[0], y),
    )
    .kernels(&SOURCE, |dt| cuda_symbols("v3_vec16_ilp")(dt))
    .vec16(),
    Variant::new(
        OP,
        "compiled",
        Tier::Compiled,
        DeviceKind::Cuda,
        "kernlab's compiler: manual_gelu's graph (9 operations for tanh) fused into one kernel, a 16-byte pack a thread",
        |p, x, y| super::compiled::run(OP, p, x, y),
    )
    .generated(|p, dt| super::compiled::kernels(OP, p, dt))
    .strided()
    .vec16(),
    Variant::new(
        OP,
        "triton",
        Tier::Triton,
        DeviceKind::Cuda,
        "written in Triton (kernels/triton/gelu.py), compiled by Triton, launched by kernlab",
        |p, x, y| run_triton(p.get()?, x[0], y),
    )
    .triton(|p, dt, shape| {
        let n16 = shape.iter().product::<usize>().is_multiple_of(16);
        Ok(vec![triton_spec(p.get()?, dt, true, n16)])
    }),
    Variant::new(
        OP,
        "fused",
        Tier::Cpu,
        DeviceKind::Cpu,
        "one multi-threaded pass (rayon), f32 arithmetic; 16-bit dtypes through a table of that arithmetic's 65536 results",
        |p, x, y| run_cpu_fused(p.get()?, x[0], y),
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The fused CPU GeLU of a 16-bit tensor holding every bit pattern (NaNs, ±inf and
    /// subnormals included) gives, bit for bit, what the widening f32 loop gives: the table is
    /// that loop's, for the right dtype and form, and the lookup takes every element.
    #[test]
    fn sixteen_bit_gelu_by_table_is_the_f32_loop_bit_for_bit() {
        use crate::runtime::tensor::CpuData;
        fn loop_bits<T: Element>(bits: &[u16], a: GeluApprox) -> Vec<u16> {
            let x: &[T] = bytemuck::cast_slice(bits);
            let mut y = vec![T::from_f32(0.0); x.len()];
            gelu_chunk(&mut y, x, a);
            bytemuck::cast_slice(&y).to_vec()
        }
        // Every pattern, then a tail that is not a multiple of any vector width.
        let bits: Vec<u16> = (0..=u16::MAX).chain(0..37).collect();
        let bytes: &[u8] = bytemuck::cast_slice(&bits);
        for dt in [DType::BF16, DType::F16] {
            for a in [GeluApprox::Tanh, GeluApprox::Erf] {
                let data = CpuData::from_bytes(dt, bytes);
                let x = Tensor::from_cpu(data, &[1, bits.len()], &[bits.len(), 1]).unwrap();
                let mut y = Tensor::empty(&[1, bits.len()], dt, &Device::Cpu).unwrap();
                run_cpu_fused(&GeluParams { gelu: a }, &x, &mut y).unwrap();
                let got: &[u16] = bytemuck::cast_slice(y.cpu_data().unwrap().as_bytes());
                let want = match dt {
                    DType::BF16 => loop_bits::<half::bf16>(&bits, a),
                    _ => loop_bits::<half::f16>(&bits, a),
                };
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    // Either NaN payload is a NaN: compare NaN-ness there.
                    let nan = |b: u16| match dt {
                        DType::BF16 => half::bf16::from_bits(b).is_nan(),
                        _ => half::f16::from_bits(b).is_nan(),
                    };
                    assert!(
                        g == w || (nan(*g) && nan(*w)),
                        "{dt:?} {a:?}: input bits {:#06x}: {g:#06x}, the loop {w:#06x}",
                        bits[i]
                    );
                }
                assert_eq!(got.len(), want.len());
            }
        }
    }

    /// The oracle keeps GeLU's tiny negative values (1 + tanh u and 1 + erf cancelled to 0
    /// there), and agrees with PyTorch's formulas where those do not cancel.
    #[test]
    fn the_reference_keeps_tiny_negative_values() {
        let t = reference_f64(-8.0, GeluApprox::Tanh);
        assert!((-3.2e-21..-3.0e-21).contains(&t), "{t:e}");
        let e = reference_f64(-12.0, GeluApprox::Erf);
        assert!((-2.2e-32..-2.0e-32).contains(&e), "{e:e}");
        for x in [-3.0, -1.0, -0.1, 0.0, 0.5, 2.0, 6.0] {
            let u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
            let torch_tanh = 0.5 * x * (1.0 + u.tanh());
            let torch_erf = 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2));
            for (got, want) in [
                (reference_f64(x, GeluApprox::Tanh), torch_tanh),
                (reference_f64(x, GeluApprox::Erf), torch_erf),
            ] {
                assert!(
                    (got - want).abs() <= 1e-14 * want.abs().max(1e-300),
                    "{x}: {got} {want}"
                );
            }
        }
    }
}
