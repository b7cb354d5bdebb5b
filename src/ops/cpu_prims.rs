//! CPU building blocks: one parallel pass per primitive (the `manual` tier on the CPU), and
//! conversions between storage dtypes and f32 working buffers.

use crate::runtime::dtype::Element;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{CpuData, Tensor};
use rayon::prelude::*;

/// Elements per rayon task: large enough that scheduling costs nothing next to the work.
pub const GRAIN: usize = 1 << 14;

pub fn map1(a: &[f32], f: impl Fn(f32) -> f32 + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; a.len()];
    out.par_chunks_mut(GRAIN)
        .zip(a.par_chunks(GRAIN))
        .for_each(|(o, a)| o.iter_mut().zip(a).for_each(|(o, &a)| *o = f(a)));
    out
}

pub fn map2(a: &[f32], b: &[f32], f: impl Fn(f32, f32) -> f32 + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; a.len()];
    out.par_chunks_mut(GRAIN)
        .zip(a.par_chunks(GRAIN).zip(b.par_chunks(GRAIN)))
        .for_each(|(o, (a, b))| {
            o.iter_mut()
                .zip(a.iter().zip(b))
                .for_each(|(o, (&a, &b))| *o = f(a, b))
        });
    out
}

/// A fused CPU op's body over one storage type: `y` from `x`, both of the same [`Element`].
pub trait SameTypeMap {
    fn map<T: Element>(&self, x: &[T], y: &mut [T]);
}

/// Runs `f` on `x`'s and `y`'s CPU storage as their common element type; an error where either
/// is not on the CPU or their dtypes differ. `what` names the variant in the error.
pub fn map_same_type(what: &str, x: &Tensor, y: &mut Tensor, f: impl SameTypeMap) -> Result<()> {
    let needs = || Error::Invalid(format!("{what} needs CPU tensors"));
    let xd = x.cpu_data().ok_or_else(needs)?;
    let yd = y.cpu_data_mut().ok_or_else(needs)?;
    match (xd, yd) {
        (CpuData::F32(x), CpuData::F32(y)) => f.map(x, y),
        (CpuData::BF16(x), CpuData::BF16(y)) => f.map(x, y),
        (CpuData::F16(x), CpuData::F16(y)) => f.map(x, y),
        _ => return Err(Error::Invalid("input and output dtypes differ".into())),
    }
    Ok(())
}

/// Whether this build has fused multiply-adds everywhere (aarch64, or an x86-64 build for a
/// CPU with FMA): then [`mad`] may fuse outside the AVX2 twins too.
pub const BUILT_WITH_FMA: bool = cfg!(any(target_arch = "aarch64", target_feature = "fma"));

/// a·b + c: one fused multiply-add with `FMA` (only in code built with the instruction, such as
/// an [`avx2_twin`]'s AVX2 form: elsewhere `mul_add` is a libm call an element), else a
/// multiply and an add (Rust does not contract them).
#[inline(always)]
pub fn mad<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `avx2_twin!(fn name<T: Bound>(a: A, …) -> R => body)` defines `name`, which runs `body` (an
/// `#[inline(always)]` function of the same arguments and generics, and one more last,
/// `const FMA: bool`) compiled for AVX-512 (F, BW, VL) and FMA where the CPU has them (16
/// lanes), else for AVX2 and FMA (8 lanes): fused multiply-adds ([`mad`]), VEX- or EVEX-encoded,
/// so no SSE–AVX transition after AVX code such as faer's. `avx2_twin!(avx2_only fn …)` builds
/// the twins with `FMA` false (AVX-512, else AVX2 alone), for loops that LLVM compiles worse
/// with FMA on. Elsewhere `name` runs `body` as built (SSE2 on x86-64), with FMA where the
/// build has it (aarch64; `-C target-feature=+fma`). The hot loops of the fused CPU tier are
/// written once, as `body`, and dispatched through such a twin; `runtime::simd` says which
/// paths may run.
macro_rules! avx2_twin {
    (@twin $feat:literal, $has:ident, $fma:literal; $(#[$m:meta])* $vis:vis fn $name:ident
        $(<$($g:ident: $b:path),+>)? ($($a:ident: $t:ty),* $(,)?) $(-> $r:ty)? => $body:ident;
        wide $feat512:literal) => {
        $(#[$m])*
        $vis fn $name $(<$($g: $b),+>)? ($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = $feat512)]
                fn wide $(<$($g: $b),+>)? ($($a: $t),*) $(-> $r)? {
                    $body::<$($($g,)+)? $fma>($($a),*)
                }
                if $crate::runtime::simd::avx512() {
                    // SAFETY: the CPU runs what the twin is built for (`avx512`).
                    return unsafe { wide($($a),*) };
                }
                #[target_feature(enable = $feat)]
                fn twin $(<$($g: $b),+>)? ($($a: $t),*) $(-> $r)? {
                    $body::<$($($g,)+)? $fma>($($a),*)
                }
                if $crate::runtime::simd::$has() {
                    // SAFETY: the CPU runs what the twin is built for (`$has`).
                    return unsafe { twin($($a),*) };
                }
            }
            $body::<$($($g,)+)? { $crate::ops::cpu_prims::BUILT_WITH_FMA }>($($a),*)
        }
    };
    (avx2_only $($rest:tt)*) => {
        $crate::ops::cpu_prims::avx2_twin!(@twin "avx2", avx2, false; $($rest)*;
            wide "avx512f,avx512bw,avx512vl,avx2");
    };
    ($($rest:tt)*) => {
        $crate::ops::cpu_prims::avx2_twin!(@twin "avx2,fma", avx2_fma, true; $($rest)*;
            wide "avx512f,avx512bw,avx512vl,avx2,fma");
    };
}
pub(crate) use avx2_twin;

/// Cody–Waite reduction for the e^x forms: x = n·ln 2 + r with n the nearest integer to
/// x·log2(e) and |r| ≤ ln 2 / 2, ln 2 in two parts so that n·ln 2 is exact to the bit. For
/// |x| ≤ 88.8 (callers clamp); NaN gives a NaN r.
#[inline(always)]
fn ln2_reduce<const FMA: bool>(x: f32) -> (i32, f32) {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4; // 355/512: n·LN2_HI is exact for |n| ≤ 2^14
    const LN2_LO: f32 = -2.121_944_4e-4; // ln 2 − LN2_HI
    const SHIFTER: f32 = 12_582_912.0; // 1.5·2^23: adding it rounds to an integer
    let t = mad::<FMA>(x, LOG2E, SHIFTER);
    let nf = t - SHIFTER;
    // t's low mantissa bits hold n past SHIFTER's.
    let n = (t.to_bits() as i32).wrapping_sub(SHIFTER.to_bits() as i32);
    (n, mad::<FMA>(nf, -LN2_LO, mad::<FMA>(nf, -LN2_HI, x)))
}

/// e^x in f32, written so that a loop over a slice vectorises (no branch, no call): x clamped
/// to [−87.3, 88.8], x = n·ln 2 + r with |r| ≤ ln 2 / 2 (Cody–Waite: ln 2 in two parts), e^r by
/// a degree-7 polynomial (the constant and linear terms exact, the rest the Taylor
/// coefficients, which at |r| ≤ 0.347 leave under 2e-8 relative), then p·2^n with 2^n as two
/// factors built from exponent bits (n = 128 does not fit one; with p < 1 the product is still
/// finite, past f32::MAX it is +inf). Within 1.5 ulp of e^x for x ≥ −87.3 (the tests check a
/// grid against f64; an exhaustive check found 1.22 at most); 0 below −87.3, where e^x is
/// under 1.22e-38 (subnormal arithmetic costs a microcode assist an element on x86; the linear
/// epilogue's GeLU sends its exponents far below). NaN gives NaN, +inf +inf, −inf 0. libm's
/// `expf` is exact to the ulp but a call per element, which the compiler cannot vectorise.
/// With `FMA`, the reduction and the polynomial take fused multiply-adds ([`mad`]).
#[inline(always)]
pub fn exp_f32<const FMA: bool>(x: f32) -> f32 {
    const LO: f32 = -87.3;
    let (n, r) = ln2_reduce::<FMA>(x.clamp(LO, 88.8));
    // Horner, from 1/7! down to the two exact 1s.
    let mut p = mad::<FMA>(1.0 / 5040.0, r, 1.0 / 720.0);
    p = mad::<FMA>(p, r, 1.0 / 120.0);
    p = mad::<FMA>(p, r, 1.0 / 24.0);
    p = mad::<FMA>(p, r, 1.0 / 6.0);
    p = mad::<FMA>(p, r, 0.5);
    p = mad::<FMA>(p, r, 1.0);
    p = mad::<FMA>(p, r, 1.0);
    let n1 = n >> 1;
    let n2 = n - n1;
    let s1 = f32::from_bits(((n1 + 127) as u32) << 23);
    let s2 = f32::from_bits(((n2 + 127) as u32) << 23);
    let e = p * s1 * s2;
    if x.is_nan() {
        x
    } else if x < LO {
        0.0
    } else {
        e
    }
}

/// e^x for x ≤ 0 in f32 (softmax's e^(x − max), erfc's e^(−a²)), cheaper than [`exp_f32`]: x
/// clamped to [−87.3, 0] (a NaN stays NaN), the same Cody–Waite reduction, e^r by a degree-5
/// polynomial fitted for this project (minimax-weighted least squares of the relative error
/// over |r| ≤ ln 2 / 2: 9.2e-8 before rounding), and 2^n as one factor (n ∈ [−126, 0] fits
/// one). Within 2.5 ulp of e^x for −87.3 ≤ x ≤ 0 (2.0 with FMA, 2.24 without, on the tests'
/// sweep of the f32 values against f64); 0 below −87.3 and for −inf; NaN gives NaN; x > 0 is
/// taken as 0 (gives 1). Less than half [`exp_f32`]'s time a vector (no overflow path, no NaN
/// select, two fewer multiply-adds).
/// With `FMA`, fused multiply-adds ([`mad`]).
#[inline(always)]
pub fn exp_nonpos_f32<const FMA: bool>(x: f32) -> f32 {
    const LO: f32 = -87.3;
    const C: [f32; 5] = [
        0.999_999_7,
        0.499_991_48,
        0.166_676_39,
        0.041_898_116,
        0.008_290_242,
    ];
    let (n, r) = ln2_reduce::<FMA>(x.clamp(LO, 0.0));
    let mut p = C[4];
    for &c in C[..4].iter().rev() {
        p = mad::<FMA>(p, r, c);
    }
    p = mad::<FMA>(p, r, 1.0);
    // n ∈ [−126, 0]: 2^n is one normal factor.
    let s = f32::from_bits(((n + 127) as u32) << 23);
    if x < LO {
        0.0
    } else {
        p * s
    }
}

/// erfc(z) in f32, written so that a loop vectorises (no branch, no call; libm's `erfcf` is a
/// call an element): for a = |z|, erfc(a) = e^(−a²)·R(a), R = P/Q a rational of degree (3, 4)
/// fitted for this project to erfc(a)·e^(a²) over a ∈ [0, 9.35] (a weighted least-squares fit
/// of the linearised relative error, reweighted towards minimax: 3.5e-7 relative before rounding
/// the coefficients to f32; R's argument is clamped there, where e^(−a²) has flushed); erfc(−a) =
/// 2 − erfc(a). Within 5e-6 relative of erfc wherever erfc(z) ≥ 1.2e-38, 1.5e-6 for |z| ≤ 4
/// (past that, a² rounded in f32 is most of it: the tests sweep the f32 values against f64); 0
/// from about z = 9.3, where erfc is under 1.2e-38 ([`exp_nonpos_f32`]'s flush). NaN gives NaN,
/// −inf 2, +inf 0. One e^x, one division and seven multiply-adds (docs/perf-notes.md, "The erf
/// form against PyTorch's"). With `FMA`, fused multiply-adds ([`mad`]).
#[inline(always)]
pub fn erfc_f32<const FMA: bool>(z: f32) -> f32 {
    const P: [f32; 4] = [0.999_999_64, 1.019_532_4, 0.474_659_47, 0.095_276_4];
    const Q: [f32; 5] = [1.0, 2.147_887, 1.898_568_9, 0.840_700_15, 0.168_895];
    let a = z.abs();
    // R's argument only: past 9.35, e^(−a²) is 0 in f32 anyway. A NaN stays NaN in e^(−a²).
    let ar = a.min(9.35);
    let mut p = P[3];
    for &c in P[..3].iter().rev() {
        p = mad::<FMA>(p, ar, c);
    }
    let mut q = Q[4];
    for &c in Q[..4].iter().rev() {
        q = mad::<FMA>(q, ar, c);
    }
    let e = exp_nonpos_f32::<FMA>(-a * a) * p / q;
    if z < 0.0 {
        2.0 - e
    } else {
        e
    }
}

/// The largest value of `v` in f32, NaNs skipped (−inf for an empty slice or all NaN). Each
/// lane keeps `x > a ? x : a`, which skips a NaN x as `f32::max` does but is one `maxps` (LLVM
/// does not vectorise `f32::max`'s NaN rule: the loop ran scalar, 0.27 ns an element, about
/// half of a hot f32 softmax row); 64 lanes, so that AVX-512's four vectors hide the latency.
#[inline(always)]
pub fn max_f32<T: Element>(v: &[T]) -> f32 {
    const L: usize = 64;
    let mut acc = [f32::NEG_INFINITY; L];
    let mut it = v.chunks_exact(L);
    for c in &mut it {
        for (a, &x) in acc.iter_mut().zip(c) {
            let x = x.to_f32();
            *a = if x > *a { x } else { *a };
        }
    }
    let tail = it
        .remainder()
        .iter()
        .fold(f32::NEG_INFINITY, |a, x| a.max(x.to_f32()));
    acc.iter().fold(tail, |a, &b| a.max(b))
}

/// Sum in f32 with bounded error: 8 interleaved accumulators within blocks of 512, then the
/// block sums (what PyTorch's CPU cascade sum does; a plain running sum over 70 000 terms
/// drifts by ~1e-4 relative). The 8 lanes also let the compiler vectorise the loop.
pub fn sum_f32(v: &[f32]) -> f32 {
    let mut total = 0.0f32;
    for block in v.chunks(512) {
        let mut acc = [0.0f32; 8];
        let mut it = block.chunks_exact(8);
        for c in &mut it {
            for (a, &x) in acc.iter_mut().zip(c) {
                *a += x;
            }
        }
        let tail: f32 = it.remainder().iter().sum();
        total += acc.iter().sum::<f32>() + tail;
    }
    total
}

/// Row sums of a `rows × cols` buffer (cascade sum per row).
pub fn row_sum(a: &[f32], cols: usize) -> Vec<f32> {
    a.par_chunks(cols).map(sum_f32).collect()
}

/// One value per row of a `rows × cols` buffer.
pub fn row_reduce(
    a: &[f32],
    cols: usize,
    init: f32,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Vec<f32> {
    a.par_chunks(cols)
        .map(|r| r.iter().fold(init, |acc, &v| f(acc, v)))
        .collect()
}

/// `out[r, c] = f(a[r, c], v[c])` (a bias add: `y + b` with b broadcast over rows).
pub fn broadcast_cols(
    a: &[f32],
    v: &[f32],
    cols: usize,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Vec<f32> {
    let mut out = vec![0.0f32; a.len()];
    out.par_chunks_mut(cols)
        .zip(a.par_chunks(cols))
        .for_each(|(o, a)| {
            o.iter_mut()
                .zip(a.iter().zip(v))
                .for_each(|(o, (&a, &v))| *o = f(a, v))
        });
    out
}

/// `out[r, c] = f(a[r, c], v[r])`.
pub fn broadcast_rows(
    a: &[f32],
    v: &[f32],
    cols: usize,
    f: impl Fn(f32, f32) -> f32 + Sync,
) -> Vec<f32> {
    let mut out = vec![0.0f32; a.len()];
    out.par_chunks_mut(cols)
        .zip(a.par_chunks(cols).zip(v.par_iter()))
        .for_each(|(o, (a, &v))| o.iter_mut().zip(a).for_each(|(o, &a)| *o = f(a, v)));
    out
}

/// Elements of a block that a 16-bit row is widened into for f32 arithmetic (two 2 KiB
/// buffers: they stay in L1).
pub const WIDEN_BLOCK: usize = 512;

#[inline(always)]
fn widen_body<T: Element, const FMA: bool>(out: &mut [f32], v: &[T]) {
    for (o, &x) in out.iter_mut().zip(v) {
        *o = x.to_f32();
    }
}
#[inline(always)]
fn narrow_body<T: Element, const FMA: bool>(out: &mut [T], v: &[f32]) {
    for (o, &x) in out.iter_mut().zip(v) {
        *o = T::from_f32(x);
    }
}
avx2_twin!(avx2_only
    /// [`widen_body`] in AVX-512 or AVX2 where the CPU has it.
    fn widen_loop<T: Element>(out: &mut [f32], v: &[T]) => widen_body
);
avx2_twin!(avx2_only
    /// [`narrow_body`] in AVX-512 or AVX2 where the CPU has it.
    fn narrow_loop<T: Element>(out: &mut [T], v: &[f32]) => narrow_body
);

/// F16C's conversions, eight lanes an instruction, written with `std::arch`: `half` has the
/// same instructions behind its slice conversions, but as a call per eight elements that
/// cannot inline into the loop, which left the f16 GeLU about a third slower than here.
#[cfg(target_arch = "x86_64")]
mod f16c {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx2,f16c")]
    pub fn widen(out: &mut [f32], v: &[half::f16]) {
        let n = v.len().min(out.len());
        let (mut i, src, dst) = (0, v.as_ptr() as *const u16, out.as_mut_ptr());
        while i + 8 <= n {
            // SAFETY: i + 8 ≤ n elements of both slices; unaligned loads and stores.
            unsafe {
                let h = _mm_loadu_si128(src.add(i) as *const __m128i);
                _mm256_storeu_ps(dst.add(i), _mm256_cvtph_ps(h));
            }
            i += 8;
        }
        for j in i..n {
            out[j] = super::Element::to_f32(v[j]);
        }
    }

    #[target_feature(enable = "avx2,f16c")]
    pub fn narrow(out: &mut [half::f16], v: &[f32]) {
        let n = v.len().min(out.len());
        let (mut i, src, dst) = (0, v.as_ptr(), out.as_mut_ptr() as *mut u16);
        while i + 8 <= n {
            // SAFETY: as in `widen`. Rounding to nearest even (immediate 0), as `half` does.
            unsafe {
                let h = _mm256_cvtps_ph::<0>(_mm256_loadu_ps(src.add(i)));
                _mm_storeu_si128(dst.add(i) as *mut __m128i, h);
            }
            i += 8;
        }
        for j in i..n {
            out[j] = super::Element::from_f32(v[j]);
        }
    }
}

/// `out[i] = v[i]` as f32, eight lanes at a time: f16 by F16C where the CPU has it; bf16 (a
/// shift and a NaN select), and f16 elsewhere, in a loop the compiler vectorises (AVX2 where
/// the CPU has it: hand-written AVX2 for bf16 measured no faster).
pub fn widen<T: Element>(out: &mut [f32], v: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::runtime::dtype::DType;
        if T::DTYPE == DType::F16 && crate::runtime::simd::f16c() {
            // SAFETY: the CPU has AVX2 and F16C (`simd::f16c`).
            return unsafe { f16c::widen(out, bytemuck::cast_slice(v)) };
        }
    }
    widen_loop(out, v)
}

/// `out[i] = v[i]` rounded to `T` (to nearest even; NaN stays NaN), eight lanes at a time as
/// in [`widen`].
pub fn narrow<T: Element>(out: &mut [T], v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::runtime::dtype::DType;
        if T::DTYPE == DType::F16 && crate::runtime::simd::f16c() {
            // SAFETY: as in `widen`.
            return unsafe { f16c::narrow(bytemuck::cast_slice_mut(out), v) };
        }
    }
    narrow_loop(out, v)
}

/// `f` over `x` into `y` in f32: directly for f32 storage; for 16-bit storage a block of
/// [`WIDEN_BLOCK`] at a time, widened into an L1-resident buffer, computed there in f32, then
/// rounded into `y`. The arithmetic then runs in the same (FMA) loop for every dtype, and the
/// conversions are vector loops of their own: a loop that converts as it computes keeps fewer
/// lanes busy (docs/perf-notes.md, "16-bit rows on the CPU").
#[inline(always)]
pub fn map_in_f32<T: Element>(y: &mut [T], x: &[T], f: impl Fn(&mut [f32], &[f32])) {
    use crate::runtime::dtype::DType;
    if T::DTYPE == DType::F32 {
        // T is f32 here: a checked cast (bytemuck), no copy.
        let y: &mut [f32] = bytemuck::cast_slice_mut(y);
        let x: &[f32] = bytemuck::cast_slice(x);
        return f(y, x);
    }
    let mut xb = [0f32; WIDEN_BLOCK];
    let mut yb = [0f32; WIDEN_BLOCK];
    for (y, x) in y.chunks_mut(WIDEN_BLOCK).zip(x.chunks(WIDEN_BLOCK)) {
        let n = x.len();
        widen(&mut xb[..n], x);
        f(&mut yb[..n], &xb[..n]);
        narrow(y, &yb[..n]);
    }
}

/// The logical elements of a CPU tensor as f32 (one pass: PyTorch's `.float()`).
pub fn to_f32(t: &Tensor) -> Result<Vec<f32>> {
    let data = t
        .cpu_data()
        .ok_or_else(|| Error::Invalid("expected a CPU tensor".into()))?;
    if !t.is_contiguous() {
        return Ok(t.to_f64_vec()?.into_iter().map(|v| v as f32).collect());
    }
    let n = t.numel();
    fn conv<T: Element>(v: &[T]) -> Vec<f32> {
        v.par_iter().map(|x| x.to_f32()).collect()
    }
    Ok(match data {
        CpuData::F32(v) => v[..n].to_vec(),
        CpuData::BF16(v) => conv(&v[..n]),
        CpuData::F16(v) => conv(&v[..n]),
    })
}

/// Store f32 values into a contiguous CPU tensor, rounding to its dtype (one pass).
pub fn store_f32(y: &mut Tensor, v: &[f32]) -> Result<()> {
    let data = y
        .cpu_data_mut()
        .ok_or_else(|| Error::Invalid("expected a CPU tensor".into()))?;
    fn conv<T: Element>(out: &mut [T], v: &[f32]) {
        out.par_chunks_mut(GRAIN)
            .zip(v.par_chunks(GRAIN))
            .for_each(|(o, v)| o.iter_mut().zip(v).for_each(|(o, &v)| *o = T::from_f32(v)));
    }
    match data {
        CpuData::F32(o) => conv(o, v),
        CpuData::BF16(o) => conv(o, v),
        CpuData::F16(o) => conv(o, v),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `widen` and `narrow` (F16C, and the 8-lane loops) agree bit for bit with `Element`'s
    /// scalar conversions: every 16-bit pattern widened, and f32 values around every 16-bit
    /// value (ties, NaNs, infinities, subnormals) narrowed, from unaligned starts and with
    /// tails of every length under eight.
    fn widen_and_narrow_match_the_scalar_conversions<T: Element>(of_bits: fn(u16) -> T) {
        let all: Vec<T> = (0..=u16::MAX).map(of_bits).collect();
        let wanted: Vec<u32> = all.iter().map(|v| v.to_f32().to_bits()).collect();
        for start in 0..3 {
            for tail in [0, 1, 7] {
                let src = &all[start..all.len() - tail];
                let mut out = vec![0f32; src.len()];
                widen(&mut out, src);
                for (i, o) in out.iter().enumerate() {
                    assert_eq!(
                        o.to_bits(),
                        wanted[start + i],
                        "widen of pattern {}",
                        start + i
                    );
                }
            }
        }
        let probes: Vec<f32> = wanted
            .iter()
            .flat_map(|&c| {
                [
                    c,
                    c.wrapping_add(1),
                    c.wrapping_sub(1),
                    c | 0x7FFF,
                    c | 0x8000,
                    c | 0x1000,
                ]
            })
            .chain([0x7F80_0001, 0xFF80_0001, 0x0000_0001, 0x8000_0001])
            .map(f32::from_bits)
            .collect();
        for start in 0..3 {
            let src = &probes[start..probes.len() - start];
            let mut out = vec![of_bits(0x1234); src.len()];
            narrow(&mut out, src);
            for (o, &v) in out.iter().zip(src) {
                let want = T::from_f32(v);
                assert_eq!(
                    bytemuck::bytes_of(o),
                    bytemuck::bytes_of(&want),
                    "narrow of {:#010x}",
                    v.to_bits()
                );
            }
        }
    }

    #[test]
    fn bf16_widen_and_narrow_match_the_scalar_conversions() {
        widen_and_narrow_match_the_scalar_conversions(half::bf16::from_bits);
    }

    #[test]
    fn f16_widen_and_narrow_match_the_scalar_conversions() {
        widen_and_narrow_match_the_scalar_conversions(half::f16::from_bits);
    }

    /// `map_in_f32` gives the same result for every dtype as computing in f32 element by
    /// element, across block boundaries and a partial last block.
    #[test]
    fn map_in_f32_runs_blocks_and_the_partial_last_one() {
        let n = 3 * WIDEN_BLOCK + 5;
        let x: Vec<half::bf16> = (0..n)
            .map(|i| half::bf16::from_f32(i as f32 * 0.37 - 100.0))
            .collect();
        let mut y = vec![half::bf16::from_f32(f32::NAN); n];
        map_in_f32(&mut y, &x, |y, x| {
            for (o, &v) in y.iter_mut().zip(x) {
                *o = 2.0 * v + 1.0;
            }
        });
        for (i, (o, v)) in y.iter().zip(&x).enumerate() {
            assert_eq!(
                o.to_bits(),
                half::bf16::from_f32(2.0 * v.to_f32() + 1.0).to_bits(),
                "{i}"
            );
        }
    }

    /// f32 values of [lo, hi) a fixed number of bit patterns apart (same-sign bounds): a dense
    /// sweep, every binade visited.
    fn f32_sweep(lo: f32, hi: f32, step: u32) -> impl Iterator<Item = f32> {
        let (a, b) = (lo.to_bits(), hi.to_bits());
        let (a, b) = (a.min(b), a.max(b));
        (a..b).step_by(step as usize).map(f32::from_bits)
    }

    /// In ulps of `want`'s binade (f32; 2^−149 below the normal range).
    fn ulps(got: f64, want: f64) -> f64 {
        let ulp = 2f64.powi((want.abs().log2().floor() as i32 - 23).max(-149));
        (got - want).abs() / ulp
    }

    #[test]
    fn erfc_f32_is_within_5e6_of_f64_over_the_f32_range_and_keeps_the_special_values() {
        erfc_within_5e6::<false>();
        erfc_within_5e6::<true>();
    }

    fn erfc_within_5e6<const FMA: bool>() {
        let (mut worst, mut worst_to_4) = (0.0f64, 0.0f64);
        // Every 101st f32 from the smallest subnormal to 12 (every binade, ~10 M values), both
        // signs.
        for a in f32_sweep(f32::from_bits(1), 12.0, 101) {
            for z in [a, -a] {
                let want = libm::erfc(z as f64);
                let got = erfc_f32::<FMA>(z) as f64;
                if want < 1.2e-38 {
                    assert!(
                        (0.0..1.2e-38).contains(&got),
                        "erfc({z}) = {got}, want {want}"
                    );
                    continue;
                }
                let rel = (got - want).abs() / want;
                assert!(
                    rel < 5e-6,
                    "erfc({z:e}) = {got:e}, want {want:e}: {rel:.2e} relative"
                );
                worst = worst.max(rel);
                if a <= 4.0 {
                    assert!(
                        rel < 1.5e-6,
                        "erfc({z:e}) = {got:e}, want {want:e}: {rel:.2e} relative"
                    );
                    worst_to_4 = worst_to_4.max(rel);
                }
            }
        }
        // Not loose by accident: the bounds are what the sweep reaches.
        assert!(
            worst > 2e-6 && worst_to_4 > 5e-7,
            "worst {worst:.2e}, to 4: {worst_to_4:.2e}"
        );
        for z in [0.0f32, -0.0, 1e-30, -1e-30] {
            assert!(
                (erfc_f32::<FMA>(z) - 1.0).abs() < 6e-7,
                "erfc({z}) = {}",
                erfc_f32::<FMA>(z)
            );
        }
        assert!(erfc_f32::<FMA>(f32::NAN).is_nan());
        assert_eq!(erfc_f32::<FMA>(f32::NEG_INFINITY), 2.0);
        assert_eq!(erfc_f32::<FMA>(f32::INFINITY), 0.0);
        assert_eq!(erfc_f32::<FMA>(-40.0), 2.0);
        assert_eq!(erfc_f32::<FMA>(40.0), 0.0);
    }

    #[test]
    fn exp_f32_is_within_one_and_a_half_ulp_of_f64_and_keeps_the_special_values() {
        exp_within_one_and_a_half_ulp::<false>();
        exp_within_one_and_a_half_ulp::<true>();
    }

    fn exp_within_one_and_a_half_ulp<const FMA: bool>() {
        let mut worst = 0.0f64;
        // Every 1/4096 from −110 to 90, every 61st f32 of either sign up to 110 in magnitude
        // (every binade, ~18 M values), and the f32 values around the overflow and underflow
        // edges.
        let grid = (-110 * 4096..=90 * 4096)
            .map(|i| i as f32 / 4096.0)
            .chain(f32_sweep(f32::from_bits(1), 110.0, 61).flat_map(|a| [a, -a]));
        let edges = [88.72283f32, 88.72284, 88.7, -87.3, -87.33655, -103.97208]
            .into_iter()
            .flat_map(|e| (-64..=64).map(move |k| f32::from_bits((e.to_bits() as i64 + k) as u32)));
        for x in grid.chain(edges) {
            let want = (x as f64).exp();
            let got = exp_f32::<FMA>(x) as f64;
            if want > f32::MAX as f64 {
                // Rounds to f32::MAX or past it: either is within the ulp; past it is inf.
                assert!(
                    got == f64::INFINITY || got == f32::MAX as f64,
                    "exp({x}) = {got}"
                );
                continue;
            }
            if x < -87.3 {
                // Flushed: e^x is under 1.22e-38 there.
                assert_eq!(got, 0.0, "exp({x})");
                assert!(want < 1.22e-38);
                continue;
            }
            let e = ulps(got, want);
            worst = worst.max(e);
            assert!(e <= 1.5, "exp({x}) = {got:e}, want {want:e}: {e:.2} ulp");
        }
        assert!(worst > 0.0, "nothing compared");
        assert!(exp_f32::<FMA>(f32::NAN).is_nan());
        assert_eq!(exp_f32::<FMA>(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32::<FMA>(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32::<FMA>(-200.0), 0.0);
        assert_eq!(exp_f32::<FMA>(0.0), 1.0);
        assert_eq!(exp_f32::<FMA>(-0.0), 1.0);
    }

    #[test]
    fn exp_nonpos_f32_is_within_2_5_ulp_of_f64_and_keeps_the_special_values() {
        exp_nonpos_within_2_5_ulp::<false>();
        exp_nonpos_within_2_5_ulp::<true>();
    }

    fn exp_nonpos_within_2_5_ulp<const FMA: bool>() {
        let mut worst = 0.0f64;
        // Every 13th f32 of [−87.3, −1e-30] (every binade, ~30 M values), and the f32 values
        // around the flush.
        let edge = (-64..=64).map(|k| f32::from_bits((87.3f32.to_bits() as i64 + k) as u32));
        for a in f32_sweep(1e-30, 87.3, 13).chain(edge) {
            let x = -a;
            let got = exp_nonpos_f32::<FMA>(x) as f64;
            if x < -87.3 {
                assert_eq!(got, 0.0, "exp({x})");
                continue;
            }
            let e = ulps(got, (x as f64).exp());
            worst = worst.max(e);
            assert!(e <= 2.5, "exp({x}) = {got:e}: {e:.2} ulp");
        }
        // Not loose by accident: the bound is what the sweep reaches.
        assert!(worst > 1.5, "worst {worst:.2} ulp");
        for x in [0.0f32, -0.0, -1e-45, 3.0, f32::INFINITY] {
            assert_eq!(exp_nonpos_f32::<FMA>(x), 1.0, "exp({x})");
        }
        assert_eq!(exp_nonpos_f32::<FMA>(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_nonpos_f32::<FMA>(-200.0), 0.0);
        assert!(exp_nonpos_f32::<FMA>(f32::NAN).is_nan());
    }

    #[test]
    fn max_f32_skips_nans_and_takes_every_lane_and_the_tail() {
        for n in [0usize, 1, 7, 8, 9, 16, 17, 63, 64, 65, 100, 129, 200] {
            for at in 0..n {
                let mut v: Vec<f32> = (0..n).map(|i| -(i as f32) - 1.0).collect();
                v[at] = 5.0;
                if n > 1 {
                    v[(at + 1) % n] = f32::NAN;
                }
                assert_eq!(max_f32(&v), 5.0, "n {n}, max at {at}");
            }
        }
        assert_eq!(max_f32::<f32>(&[]), f32::NEG_INFINITY);
        assert_eq!(max_f32(&[f32::NAN; 130]), f32::NEG_INFINITY);
        assert_eq!(max_f32(&[1.0, f32::INFINITY, 2.0]), f32::INFINITY);
    }
}
