//! GeLU, element-wise: the tanh approximation (PyTorch `approximate="tanh"`) and the exact
//! erf form. Bytes per element: read sizeof(T) + write sizeof(T) — nothing else is needed.
//!
//! Variants: `reference` (f64), `manual` (the lecture's `manual_gelu`, one launch or pass per
//! primitive), `cuda/v1_naive`, `cuda/v2_vec16`, `cuda/v3_vec16_ilp`, `cpu/fused`.

use super::cpu_prims::{self as prim, GRAIN};
use super::launch::{aligned16, cfg_1d, cuda_io};
use super::{GeluApprox, Params};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::{ELEMENTWISE, GELU};
use crate::launch;
use crate::tensor::Tensor;
use rayon::prelude::*;

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

pub fn reference(x: &[f64], p: &Params) -> Vec<f64> {
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
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_reference(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let r = reference(&x.to_f64_vec()?, p);
    let t = Tensor::from_f64(&r, x.shape(), y.dtype())?;
    *y = t;
    Ok(())
}

// ---- manual: one pass per PyTorch op ------------------------------------------------------
/// CPU: `0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x * x * x)))`, one parallel pass
/// (and one f32 temporary) per op; the erf form is `0.5 * x * (1 + erf(x * 0.70710678))`.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_manual_cpu(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
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

/// CUDA: the same ops, one kernel launch each, f32 intermediates (a cast in and a cast out
/// for 16-bit inputs). Tanh form: 9 launches, ~12 passes over n·4 bytes.
pub fn run_manual_cuda(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let dt = x.dtype();
    let io = cuda_io(x, y)?;
    let dev = io.dev.clone();
    let cfg = cfg_1d(n as u64, 256)?;
    let tmp = |what: &str| dev.alloc_bytes(n as usize * 4, what);
    // xf: x as f32 (a cast for 16-bit inputs, as `.float()` would be)
    let xf_own = super::manual_x_f32(&dev, io.x, dt, n, cfg, "manual gelu: x as f32")?;
    let xf = xf_own.as_ref().unwrap_or(io.x);
    let mut a = tmp("manual gelu temporary")?;
    let mut b = tmp("manual gelu temporary")?;
    // The last op writes straight into y for f32 (as eager does), else into a temporary
    // that the cast-out kernel rounds into y.
    let mut c_own = if dt == DType::F32 {
        None
    } else {
        Some(tmp("manual gelu temporary")?)
    };
    let c: &mut cudarc::driver::CudaSlice<u8> = match c_own.as_mut() {
        Some(c) => c,
        None => &mut *io.y,
    };
    // b = tanh(0.79788456 * (x + 0.044715 * x * x * x))  or  erf(x * 0.70710678)
    match p.gelu {
        GeluApprox::Tanh => {
            launch!(
                dev,
                &ELEMENTWISE,
                "mul_scalar_f32",
                cfg,
                [xf, &0.044715f32, &mut a, &n]
            );
            launch!(dev, &ELEMENTWISE, "mul_f32", cfg, [&a, xf, &mut b, &n]);
            launch!(dev, &ELEMENTWISE, "mul_f32", cfg, [&b, xf, &mut a, &n]);
            launch!(dev, &ELEMENTWISE, "add_f32", cfg, [xf, &a, &mut b, &n]);
            launch!(
                dev,
                &ELEMENTWISE,
                "mul_scalar_f32",
                cfg,
                [&b, &0.797_884_6f32, &mut a, &n]
            );
            launch!(dev, &ELEMENTWISE, "tanh_f32", cfg, [&a, &mut b, &n]);
        }
        GeluApprox::Erf => {
            let k = std::f32::consts::FRAC_1_SQRT_2;
            launch!(
                dev,
                &ELEMENTWISE,
                "mul_scalar_f32",
                cfg,
                [xf, &k, &mut a, &n]
            );
            launch!(dev, &ELEMENTWISE, "erf_f32", cfg, [&a, &mut b, &n]);
        }
    }
    // y = 0.5 * x * (1 + b)
    launch!(
        dev,
        &ELEMENTWISE,
        "add_scalar_f32",
        cfg,
        [&b, &1.0f32, &mut a, &n]
    );
    launch!(
        dev,
        &ELEMENTWISE,
        "mul_scalar_f32",
        cfg,
        [xf, &0.5f32, &mut b, &n]
    );
    launch!(dev, &ELEMENTWISE, "mul_f32", cfg, [&b, &a, c, &n]);
    if let Some(c) = &c_own {
        launch!(
            dev,
            &ELEMENTWISE,
            format!("cast_from_f32_{dt}"),
            cfg,
            [c, io.y, &n]
        );
    }
    Ok(())
}

/// Every kernel symbol the manual CUDA GeLU may launch for a dtype.
pub fn manual_symbols(dt: DType) -> Vec<String> {
    super::with_casts(
        &[
            "mul_f32",
            "add_f32",
            "mul_scalar_f32",
            "add_scalar_f32",
            "tanh_f32",
            "erf_f32",
        ],
        dt,
    )
}

// ---- hand-written CUDA ----------------------------------------------------------------------
fn symbol(version: &str, p: &Params, dt: DType) -> String {
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
pub fn run_v1_naive(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let io = cuda_io(x, y)?;
    let cfg = cfg_1d(n as u64, 256)?;
    launch!(
        io.dev,
        &GELU,
        symbol("v1_naive", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

fn require_aligned(io: &super::launch::CudaIo, variant: &str) -> Result<()> {
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
pub fn run_v2_vec16(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let n = x.numel() as i64;
    let per_pack = (16 / x.dtype().size()) as u64;
    let io = cuda_io(x, y)?;
    require_aligned(&io, "v2_vec16")?;
    let packs = (n as u64 / per_pack).max(per_pack);
    let cfg = cfg_1d(packs, 256)?;
    launch!(
        io.dev,
        &GELU,
        symbol("v2_vec16", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

/// v3: 256-thread blocks, each a contiguous tile of 4 packs per thread.
pub fn run_v3_vec16_ilp(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
        &GELU,
        symbol("v3_vec16_ilp", p, x.dtype()),
        cfg,
        [io.x, io.y, &n]
    );
    Ok(())
}

// ---- fused CPU --------------------------------------------------------------------------
/// A chunk of the fused CPU GeLU: one loop a form, so that the compiler need not unswitch
/// the form's branch to vectorise it (the linear epilogue's loop, with the branch inside, ran
/// ~2× slower).
#[inline(always)]
fn gelu_chunk_body<T: Element, const FMA: bool>(y: &mut [T], x: &[T], a: GeluApprox) {
    #[inline(always)]
    fn each<T: Element>(y: &mut [T], x: &[T], f: impl Fn(f32) -> f32) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = T::from_f32(f(v.to_f32()));
        }
    }
    match a {
        GeluApprox::Tanh => each(y, x, |v| gelu_f32::<FMA>(v, GeluApprox::Tanh)),
        GeluApprox::Erf => each(y, x, |v| gelu_f32::<FMA>(v, GeluApprox::Erf)),
    }
}

super::cpu_prims::avx2_twin!(
    /// [`gelu_chunk_body`], in AVX2 and FMA where the CPU has them.
    fn gelu_chunk_fma<T: Element>(y: &mut [T], x: &[T], a: GeluApprox) => gelu_chunk_body
);
super::cpu_prims::avx2_twin!(avx2_only
    /// [`gelu_chunk_body`], in AVX2 (no FMA) where the CPU has it.
    fn gelu_chunk_avx2<T: Element>(y: &mut [T], x: &[T], a: GeluApprox) => gelu_chunk_body
);

/// A chunk of the fused CPU GeLU in the form that runs it fastest: 16-bit rows in AVX2 without
/// FMA, where LLVM's loop with FMA took half the elements an iteration and ran slower; f32 rows
/// with FMA, which they gain from (docs/perf-notes.md, "gelu cpu").
fn gelu_chunk<T: Element>(y: &mut [T], x: &[T], a: GeluApprox) {
    if T::DTYPE == crate::dtype::DType::F32 {
        gelu_chunk_fma(y, x, a)
    } else {
        gelu_chunk_avx2(y, x, a)
    }
}

/// One parallel pass: read, convert to f32, GeLU, round, store.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_cpu_fused(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    struct Fused(GeluApprox, usize);
    impl super::cpu_prims::SameTypeMap for Fused {
        fn map<T: Element>(&self, x: &[T], y: &mut [T]) {
            let Fused(a, n) = *self;
            y[..n]
                .par_chunks_mut(GRAIN)
                .zip(x[..n].par_chunks(GRAIN))
                .for_each(|(y, x)| gelu_chunk(y, x, a));
        }
    }
    super::cpu_prims::map_same_type("cpu/fused", x, y, Fused(p.gelu, x.numel()))
}

#[cfg(test)]
mod tests {
    use super::*;

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
