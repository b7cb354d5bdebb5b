//! CPU building blocks: one parallel pass per primitive (the `manual` tier on the CPU), and
//! conversions between storage dtypes and f32 working buffers.

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::tensor::{CpuData, Tensor};
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

/// out[r, c] = f(a[r, c], v[c]) (a bias add: `y + b` with b broadcast over rows).
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

/// out[r, c] = f(a[r, c], v[r]).
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
