//! `cpu/avx512`: the f32 GEMM on AVX-512 FMA, with the bias and GeLU applied to each output
//! tile as its last slice of K is stored.
//!
//! Layout (docs/cpu.md, "The f32 GEMM on AVX-512"): `a` is packed into panels of `MR` rows,
//! k-major (the `MR` values of one k side by side), `w` into panels of `NR` columns, k-major
//! too; both zero-padded past M and N, so the inner kernel never meets an edge. The kernel
//! keeps an `MR` × `NR` block of sums in 28 of the 32 vector registers: each k loads two
//! vectors of `w`'s panel and broadcasts each of `a`'s `MR` values into two FMAs. The output
//! is cut into blocks of rows × columns, one rayon task each; a task walks K in slices of
//! `KC`, so that one panel of `a` (KC × MR, 14 KiB) stays in L1 while the task's panels of `w`
//! (up to 8 × 32 KiB) stream past it from L2, and adds each slice's sums into the output
//! (masked at its edges), whose block stays in L2 from slice to slice.

use super::Gemm;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{CpuData, Tensor};

/// The registry name of the products here.
pub const VARIANT: &str = "avx512";

/// Rows of a panel of `a` (the values each k broadcasts).
const MR: usize = 14;
/// Columns of a panel of `w`: two vectors of 16 f32.
const NR: usize = 32;
/// K of one slice: a panel of `a` and one of `w` are then 14 and 32 KiB, inside a 48 KiB L1
/// (128 to 1024 timed within the noise of a 2-thread VM, docs/perf-notes.md).
const KC: usize = 256;

/// Why `cpu/avx512` cannot run here, or None when it can.
fn unavailable() -> Option<String> {
    use crate::runtime::simd;
    if simd::avx512() {
        return None;
    }
    Some(if simd::cap() != simd::CpuPath::Best {
        format!("AVX-512 is off under --cpu-path {}", simd::cap().name())
    } else {
        "this CPU offers no AVX-512 (F, BW and VL, with FMA)".into()
    })
}

/// The blocking of one call: a task's panels of `a` and of `w`, and the panel counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Blocking {
    /// Panels of `a` (of MR rows) a task covers.
    ma: usize,
    /// Panels of `w` (of NR columns) a task covers.
    nw: usize,
    /// Panels of `a` and of `w` in all.
    pa: usize,
    pw: usize,
}

impl Blocking {
    /// The largest blocks that still give every thread a few tasks: up to 8 panels of `a`
    /// (112 rows, 112 KiB of a slice, in L2) by 8 of `w` (256 columns).
    fn new(m: usize, n: usize, threads: usize) -> Blocking {
        let (pa, pw) = (m.max(1).div_ceil(MR), n.max(1).div_ceil(NR));
        let want = 3 * threads.max(1);
        let mut best = (1, 1);
        'search: for ma in [8, 4, 2, 1] {
            for nw in [8, 4, 2, 1] {
                let (ma, nw) = (ma.min(pa), nw.min(pw));
                if pa.div_ceil(ma) * pw.div_ceil(nw) >= want {
                    best = (ma, nw);
                    break 'search;
                }
            }
        }
        Blocking {
            ma: best.0,
            nw: best.1,
            pa,
            pw,
        }
    }
}

/// `src [rows, k]` (row-major, `rows` ≤ `width`) into `out` as one panel: k-major, the
/// `width` values of each k side by side, zeros past `rows`. Every element of `out`
/// (`k · width`) is written.
fn pack_panel(out: &mut [f32], src: &[f32], rows: usize, k: usize, width: usize) {
    // 16 k at a time: 16 × 16 blocks transposed in registers, where AVX-512 is there.
    const B: usize = 16;
    let whole = if cfg!(target_arch = "x86_64") && crate::runtime::simd::avx512() {
        k / B * B
    } else {
        0
    };
    #[cfg(target_arch = "x86_64")]
    for k0 in (0..whole).step_by(B) {
        for g in (0..width).step_by(B) {
            let rows_here = rows.saturating_sub(g).min(B);
            let cols = (width - g).min(B);
            let from = if rows_here > 0 {
                &src[g * k + k0..(g + rows_here - 1) * k + k0 + B]
            } else {
                &[][..]
            };
            let to = &mut out[k0 * width + g..(k0 + B - 1) * width + g + cols];
            // SAFETY: AVX-512F is there (`simd::avx512`); source rows g.. (rows_here of them)
            // hold 16 values from k0, k apart (`from`); the 16 panel rows from k0 hold `cols`
            // values from g, `width` apart (`to`).
            unsafe {
                super::packed::transpose16(
                    from.as_ptr().cast(),
                    4 * k,
                    rows_here,
                    to.as_mut_ptr().cast(),
                    4 * width,
                    cols,
                )
            };
        }
    }
    for k0 in (whole..k).step_by(B) {
        let kb = B.min(k - k0);
        let dst = &mut out[k0 * width..(k0 + kb) * width];
        for r in 0..width {
            if r < rows {
                let line = &src[r * k + k0..r * k + k0 + kb];
                for (i, &v) in line.iter().enumerate() {
                    dst[i * width + r] = v;
                }
            } else {
                for i in 0..kb {
                    dst[i * width + r] = 0.0;
                }
            }
        }
    }
}

/// Every panel of `x [len, k]` (panels of `width` rows) into `out`, in parallel.
fn pack(out: &mut [f32], x: &[f32], len: usize, k: usize, width: usize) {
    use rayon::prelude::*;
    out.par_chunks_mut(k * width)
        .enumerate()
        .for_each(|(p, panel)| {
            let r0 = (p * width).min(len);
            let rows = (len - r0).min(width);
            pack_panel(panel, &x[r0 * k..(r0 + rows) * k], rows, k, width);
        });
}

/// The packed operands' storage, kept between calls (docs/perf-notes.md, "CPU tier: bf16 on
/// AMX": a fresh allocation a call costs page faults and a TLB shootdown at each free).
static PACKED: super::packed::Kept = super::packed::Kept::new();

/// `cpu/avx512`: the product of f32 `a` and `w` on AVX-512, bias and GeLU on each tile.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run(g: &Gemm, c: &mut Tensor) -> Result<()> {
    if let Some(why) = unavailable() {
        return Err(Error::Unavailable {
            what: format!("cpu/{VARIANT}"),
            why,
        });
    }
    fn view(t: &Tensor) -> Result<&[f32]> {
        match t.cpu_data() {
            Some(CpuData::F32(v)) if t.is_contiguous() => Ok(&v[..t.numel()]),
            _ => Err(Error::Invalid(
                "cpu/avx512 takes contiguous f32 CPU tensors".into(),
            )),
        }
    }
    let (a, w) = (view(g.a)?, view(g.w)?);
    // `gemm_args` (the registry's checks) gave a bias of N values and no empty dimension.
    let bias = g.bias.map(view).transpose()?;
    let act = g.act.gelu();
    let (m, n, k) = (g.m, g.n, g.k);
    let out = match c.cpu_data_mut() {
        Some(CpuData::F32(v)) => &mut v[..m * n],
        _ => return Err(Error::Invalid("cpu/avx512 writes an f32 CPU tensor".into())),
    };
    let b = Blocking::new(m, n, rayon::current_num_threads());
    PACKED.with(|a_lines, w_lines| {
        let ap = a_lines.view::<f32>(b.pa * MR * k);
        let wp = w_lines.view::<f32>(b.pw * NR * k);
        rayon::join(|| pack(ap, a, m, k, MR), || pack(wp, w, n, k, NR));
        let (ap, wp) = (&*ap, &*wp);
        let dst = super::packed::OutPtr(out.as_mut_ptr());
        let epilogue = bias.is_some() || act.is_some();
        let zeros;
        let bias = match bias {
            Some(b) => b,
            None => {
                zeros = vec![0.0f32; if epilogue { n } else { 0 }];
                &zeros
            }
        };
        let (ta, tw) = (b.pa.div_ceil(b.ma), b.pw.div_ceil(b.nw));
        use rayon::prelude::*;
        (0..ta * tw).into_par_iter().for_each(|task| {
            let (i, j) = (task / tw, task % tw);
            let (pa0, pa1) = (i * b.ma, ((i + 1) * b.ma).min(b.pa));
            let (pw0, pw1) = (j * b.nw, ((j + 1) * b.nw).min(b.pw));
            for k0 in (0..k).step_by(KC) {
                let kc = KC.min(k - k0);
                let last = k0 + kc == k;
                for p in pa0..pa1 {
                    let row0 = p * MR;
                    if row0 >= m {
                        break;
                    }
                    let rows = MR.min(m - row0);
                    let a_panel = &ap[p * MR * k + k0 * MR..][..kc * MR];
                    for q in pw0..pw1 {
                        let col0 = q * NR;
                        let cols = NR.min(n - col0);
                        let w_panel = &wp[q * NR * k + k0 * NR..][..kc * NR];
                        // SAFETY: this task alone writes rows row0..row0 + rows, columns
                        // col0..col0 + cols of the m × n output (tasks cover disjoint blocks).
                        let tile = unsafe { dst.slice(row0 * n + col0, (rows - 1) * n + cols) };
                        kernel::block(a_panel, w_panel, kc, tile, n, rows, cols, k0 > 0);
                        if last && epilogue {
                            super::bias_act(tile, n, &bias[col0..col0 + cols], act);
                        }
                    }
                }
            }
        });
    });
    Ok(())
}

/// The register-blocked inner product.
mod kernel {
    use super::{MR, NR};

    /// `tile` (rows × cols at row stride `ldc`) = (its values where `accumulate`, else 0) +
    /// the product of one panel of `a` (`kc` × MR) and one of `w` (`kc` × NR).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn block(
        a: &[f32],
        w: &[f32],
        kc: usize,
        tile: &mut [f32],
        ldc: usize,
        rows: usize,
        cols: usize,
        accumulate: bool,
    ) {
        assert!(a.len() >= kc * MR && w.len() >= kc * NR);
        assert!((1..=MR).contains(&rows) && (1..=NR).contains(&cols));
        assert!(tile.len() >= (rows - 1) * ldc + cols);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `run` calls here only where `simd::avx512` holds; the asserts above bound
        // every access.
        unsafe {
            block_avx512(
                a.as_ptr(),
                w.as_ptr(),
                kc,
                tile.as_mut_ptr(),
                ldc,
                rows,
                cols,
                accumulate,
            )
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("cpu/avx512 refuses to run off x86-64 (accumulate {accumulate})");
    }

    /// # Safety
    /// AVX-512F is there; `a` holds kc·MR values, `w` kc·NR, `c` (rows − 1)·ldc + cols.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block_avx512(
        a: *const f32,
        w: *const f32,
        kc: usize,
        c: *mut f32,
        ldc: usize,
        rows: usize,
        cols: usize,
        accumulate: bool,
    ) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        let (mut a, mut w) = (a, w);
        for _ in 0..kc {
            let w0 = _mm512_loadu_ps(w);
            let w1 = _mm512_loadu_ps(w.add(16));
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm512_set1_ps(*a.add(r));
                acc[0] = _mm512_fmadd_ps(x, w0, acc[0]);
                acc[1] = _mm512_fmadd_ps(x, w1, acc[1]);
            }
            a = a.add(MR);
            w = w.add(NR);
        }
        let m0: __mmask16 = if cols >= 16 { 0xffff } else { (1 << cols) - 1 };
        let m1: __mmask16 = if cols >= NR {
            0xffff
        } else if cols > 16 {
            (1 << (cols - 16)) - 1
        } else {
            0
        };
        for (r, acc) in acc.iter().enumerate() {
            if r < rows {
                let p = c.add(r * ldc);
                let (mut x0, mut x1) = (acc[0], acc[1]);
                if accumulate {
                    x0 = _mm512_add_ps(x0, _mm512_maskz_loadu_ps(m0, p));
                    x1 = _mm512_add_ps(x1, _mm512_maskz_loadu_ps(m1, p.add(16)));
                }
                _mm512_mask_storeu_ps(p, m0, x0);
                _mm512_mask_storeu_ps(p.add(16), m1, x1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_the_work_among_the_threads() {
        let b = Blocking::new(2048, 2048, 2);
        assert_eq!((b.ma, b.nw, b.pa, b.pw), (8, 8, 147, 64));
        // One row: one panel of a, columns split so both threads have work.
        let b = Blocking::new(1, 100, 2);
        assert_eq!((b.ma, b.pa, b.pw), (1, 1, 4));
        assert!(b.pw.div_ceil(b.nw) >= 4, "{b:?}");
    }

    #[test]
    fn packing_puts_each_value_where_the_kernel_reads_it() {
        for (len, k, width) in [(17usize, 35, MR), (40, 100, NR), (3, 1, NR), (30, 64, MR)] {
            // Distinct values, so one out of place shows.
            let x: Vec<f32> = (0..len * k).map(|i| i as f32 + 1.0).collect();
            let panels = len.div_ceil(width);
            // Storage that held other values: every element is written.
            let mut out = vec![f32::NAN; panels * width * k];
            pack(&mut out, &x, len, k, width);
            for p in 0..panels {
                for kk in 0..k {
                    for r in 0..width {
                        let row = p * width + r;
                        let want = if row < len { x[row * k + kk] } else { 0.0 };
                        let got = out[p * width * k + kk * width + r];
                        assert_eq!(got, want, "row {row} k {kk} (width {width})");
                    }
                }
            }
        }
    }
}
