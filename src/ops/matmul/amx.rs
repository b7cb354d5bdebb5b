//! `cpu/amx`: the bf16 GEMM on AMX's tile unit (`TDPBF16PS`), with f32 accumulators and the
//! bias and GeLU applied to each 32×32 output block as it leaves the tiles.
//!
//! Layout (docs/cpu.md, "The bf16 GEMM on AMX"): both operands are packed, zero-padded, into
//! 1 KiB tiles: `a` as 16 rows × 32 k (64 bytes a row), `w` in the pairs layout the instruction
//! takes (16 rows of k-pairs × 16 columns, each a pair of bf16). The 8 tile registers hold a 2×2
//! block of 16×16 f32 accumulators, two tiles of `a` and two of `w`. The output is cut into
//! blocks of MB rows × NC columns, one rayon task each; a task walks K in slices of `KC_TILES`
//! tiles, keeping its partial sums in an f32 buffer of MB × NC between slices.
//!
//! The tile instructions are written with `asm!`: Rust's AMX intrinsics are unstable.

use super::{packed::Lines, Gemm};
use crate::ops::gelu::GeluApprox;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{CpuData, Tensor};
use half::bf16;

/// The registry name of the products here.
pub const VARIANT: &str = "amx";

/// Bytes of one tile: 16 rows of 64 bytes.
const TILE: usize = 1024;
/// K a tile covers: 32 bf16 a row.
const TK: usize = 32;
/// The k-tiles of one slice: 2048 of K, so a task's slice of `w` (NC × 2048 bf16, 1 MiB) and of
/// `a` (MB × 2048, 512 KiB) stay in a core's L2 together.
const KC_TILES: usize = 64;

/// Why `cpu/amx` cannot run here, or None when it can.
fn unavailable() -> Option<String> {
    if crate::runtime::simd::amx_bf16() {
        return None;
    }
    Some(
        if crate::runtime::simd::cap() != crate::runtime::simd::CpuPath::Best {
            format!(
                "AMX is off under --cpu-path {}",
                crate::runtime::simd::cap().name()
            )
        } else {
            "this CPU (or its kernel) offers no AMX bf16 tiles (AMX-TILE and AMX-BF16, Linux on x86-64)"
            .into()
        },
    )
}

/// The blocking of one call: rows and columns of a task, padded sizes, tile counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Blocking {
    /// Rows of a task (a multiple of 32).
    mb: usize,
    /// Columns of a task (a multiple of 32).
    nc: usize,
    /// M and N padded to a multiple of 32, K to a multiple of 32.
    mp: usize,
    np: usize,
    kt: usize,
}

impl Blocking {
    /// The largest blocks that still give every thread a few tasks.
    fn new(m: usize, n: usize, k: usize, threads: usize) -> Blocking {
        let up = |x: usize, q: usize| x.div_ceil(q) * q;
        let (mp, np, kt) = (up(m.max(1), 32), up(n.max(1), 32), k.max(1).div_ceil(TK));
        let want = 2 * threads.max(1);
        let mut best = (32, 32);
        'search: for mb in [128, 64, 32] {
            for nc in [256, 128, 64, 32] {
                let (mb, nc) = (mb.min(mp), nc.min(np));
                if mp.div_ceil(mb) * np.div_ceil(nc) >= want {
                    best = (mb, nc);
                    break 'search;
                }
            }
        }
        Blocking {
            mb: best.0,
            nc: best.1,
            mp,
            np,
            kt,
        }
    }
}

/// One tile row: 32 values of K from `src` (zeros past its end) into `dst`.
#[inline(always)]
fn tile_row(dst: &mut [bf16], src: &[bf16]) {
    let dst: &mut [bf16; TK] = (&mut dst[..TK]).try_into().expect("a tile row");
    match <&[bf16; TK]>::try_from(src) {
        Ok(full) => *dst = *full,
        Err(_) => {
            dst.fill(bf16::ZERO);
            dst[..src.len()].copy_from_slice(src);
        }
    }
}

/// `a [m, k]` (row-major bf16) into `out` as tiles of 16 rows × 32 k: tile (g, t) at
/// `(g·kt + t)·1024` bytes holds rows 16g.. and k 32t.., zeros past m and k. Every element of
/// `out` is written.
fn pack_a(out: &mut [bf16], a: &[bf16], m: usize, k: usize, b: &Blocking) {
    use rayon::prelude::*;
    let per_group = b.kt * TILE / 2;
    out.par_chunks_mut(per_group)
        .enumerate()
        .for_each(|(g, tiles)| {
            for r in 0..16 {
                let row = 16 * g + r;
                for t in 0..b.kt {
                    let at = t * TILE / 2 + r * TK;
                    let src = if row < m {
                        &a[row * k..(row + 1) * k][(t * TK).min(k)..((t + 1) * TK).min(k)]
                    } else {
                        &[]
                    };
                    tile_row(&mut tiles[at..at + TK], src);
                }
            }
        });
}

/// `w [n, k]` into `out` in the pairs layout: tile (j, t) at `(j·kt + t)·1024` bytes holds
/// columns 16j.. and k 32t..; its row r is k 32t + 2r and 32t + 2r + 1 of each of the 16
/// columns, side by side (column c at bytes 4c, 4c + 2). Zeros past n and k; every element of
/// `out` is written.
fn pack_w(out: &mut [bf16], w: &[bf16], n: usize, k: usize, b: &Blocking) {
    use rayon::prelude::*;
    let per_group = b.kt * TILE / 2;
    out.par_chunks_mut(per_group)
        .enumerate()
        .for_each(|(j, tiles)| {
            for (t, tile) in tiles.chunks_exact_mut(TILE / 2).enumerate() {
                #[cfg(target_arch = "x86_64")]
                if 16 * j + 16 <= n && (t + 1) * TK <= k && crate::runtime::simd::avx512() {
                    // SAFETY: AVX-512F is there (`simd::avx512`); the 16 columns are whole rows
                    // of w (2k bytes apart), each with 16 pairs (64 bytes) from k 32t; the tile
                    // holds 16 rows of 16 pairs. The pairs layout is those pairs transposed.
                    unsafe {
                        super::packed::transpose16(
                            w[16 * j * k + t * TK..][..15 * k + TK].as_ptr().cast(),
                            2 * k,
                            16,
                            tile.as_mut_ptr().cast(),
                            64,
                            16,
                        )
                    };
                    continue;
                }
                // The 16 columns' 32 values of this k-tile, then interleaved by pairs.
                let mut cols = [[bf16::ZERO; TK]; 16];
                for (c, dst) in cols.iter_mut().enumerate() {
                    let col = 16 * j + c;
                    if col < n {
                        let src = &w[col * k..(col + 1) * k];
                        tile_row(dst, &src[(t * TK).min(k)..((t + 1) * TK).min(k)]);
                    }
                }
                for (r, row) in tile.chunks_exact_mut(TK).enumerate() {
                    for (c, col) in cols.iter().enumerate() {
                        row[2 * c] = col[2 * r];
                        row[2 * c + 1] = col[2 * r + 1];
                    }
                }
            }
        });
}

/// The packed operands' storage, kept between calls.
static PACKED: super::packed::Kept = super::packed::Kept::new();

thread_local! {
    /// A task's f32 sums, kept by each thread between tasks and calls.
    static SUMS: std::cell::RefCell<Lines> = const { std::cell::RefCell::new(Lines::new()) };
}

/// The epilogue of one output block: `rows × cols` f32 sums from `acc` (row stride `ld`), plus
/// the bias, through the activation, rounded to bf16 into `out` (row stride `ldo`).
#[inline(always)]
fn finish_block_body<const FMA: bool>(
    acc: &[f32],
    ld: usize,
    bias: &[f32],
    act: Option<GeluApprox>,
    out: &mut [bf16],
    ldo: usize,
) {
    use crate::ops::gelu::gelu_f32;
    use crate::runtime::dtype::Element;
    let cols = bias.len();
    let mut v = [0f32; 32];
    for (r, src) in acc.chunks(ld).enumerate() {
        let Some(dst) = out.get_mut(r * ldo..r * ldo + cols) else {
            break;
        };
        let v = &mut v[..cols];
        match act {
            None => v
                .iter_mut()
                .zip(&src[..cols])
                .zip(bias)
                .for_each(|((o, &s), &b)| *o = s + b),
            Some(GeluApprox::Tanh) => v
                .iter_mut()
                .zip(&src[..cols])
                .zip(bias)
                .for_each(|((o, &s), &b)| *o = gelu_f32::<FMA>(s + b, GeluApprox::Tanh)),
            Some(GeluApprox::Erf) => v
                .iter_mut()
                .zip(&src[..cols])
                .zip(bias)
                .for_each(|((o, &s), &b)| *o = gelu_f32::<FMA>(s + b, GeluApprox::Erf)),
        }
        // Rounded here, inside this twin's vector loop: a call to the shared conversion a row
        // (its own dispatch each time) cost more than the rest of the epilogue.
        for (o, &x) in dst.iter_mut().zip(v.iter()) {
            *o = <bf16 as Element>::from_f32(x);
        }
    }
}

crate::ops::cpu_prims::avx2_twin!(
    fn finish_block(
        acc: &[f32],
        ld: usize,
        bias: &[f32],
        act: Option<GeluApprox>,
        out: &mut [bf16],
        ldo: usize,
    ) => finish_block_body
);

/// `cpu/amx`: the product of bf16 `a` and `w` on AMX tiles, bias and GeLU on each block.
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run(g: &Gemm, c: &mut Tensor) -> Result<()> {
    if let Some(why) = unavailable() {
        return Err(Error::Unavailable {
            what: format!("cpu/{VARIANT}"),
            why,
        });
    }
    fn view(t: &Tensor) -> Result<&[bf16]> {
        match t.cpu_data() {
            Some(CpuData::BF16(v)) if t.is_contiguous() => Ok(&v[..t.numel()]),
            _ => Err(Error::Invalid(
                "cpu/amx takes contiguous bf16 CPU tensors".into(),
            )),
        }
    }
    let (a, w) = (view(g.a)?, view(g.w)?);
    // `gemm_args` (the registry's checks) gave a bias of N values and no empty dimension.
    let bias: Vec<f32> = match g.bias {
        Some(b) => view(b)?.iter().map(|v| v.to_f32()).collect(),
        None => vec![0.0; g.n],
    };
    let act = g.act.gelu();
    let (m, n, k) = (g.m, g.n, g.k);
    let out = match c.cpu_data_mut() {
        Some(CpuData::BF16(v)) => &mut v[..m * n],
        _ => return Err(Error::Invalid("cpu/amx writes a bf16 CPU tensor".into())),
    };
    // The calling thread touches the tiles too, so that every thread of the call has used AMX:
    // Linux keeps AMX's first-use trap (XFD) per thread and rewrites its MSR at a switch between
    // a thread that has and one that has not, a VM exit each (docs/perf-notes.md, "CPU tier:
    // bf16 on AMX").
    drop(tiles::Config::load());
    let b = Blocking::new(m, n, k, rayon::current_num_threads());
    PACKED.with(|a_lines, w_lines| {
        let half = TILE / 2;
        let ap = a_lines.view::<bf16>(b.mp / 16 * b.kt * half);
        let wp = w_lines.view::<bf16>(b.np / 16 * b.kt * half);
        rayon::join(|| pack_a(ap, a, m, k, &b), || pack_w(wp, w, n, k, &b));
        let (tm, tn) = (b.mp.div_ceil(b.mb), b.np.div_ceil(b.nc));
        let (ap, wp) = (&*ap, &*wp);
        let dst = super::packed::OutPtr(out.as_mut_ptr());
        use rayon::prelude::*;
        (0..tm * tn).into_par_iter().for_each(|task| {
            let (i, j) = (task / tn, task % tn);
            let (row0, col0) = (i * b.mb, j * b.nc);
            let rows = b.mb.min(b.mp - row0);
            let cols = b.nc.min(b.np - col0);
            SUMS.with_borrow_mut(|sums| {
                let acc = sums.view::<f32>(rows * cols);
                let _tiles = tiles::Config::load();
                let slices = b.kt.div_ceil(KC_TILES);
                for s in 0..slices {
                    let t0 = s * KC_TILES;
                    let nk = KC_TILES.min(b.kt - t0);
                    let last = s + 1 == slices;
                    for ms in (0..rows).step_by(32) {
                        if row0 + ms >= m {
                            break;
                        }
                        let g0 = (row0 + ms) / 16;
                        for ns in (0..cols).step_by(32) {
                            if col0 + ns >= n {
                                break;
                            }
                            let j0 = (col0 + ns) / 16;
                            let at = |group: usize| ap[(group * b.kt + t0) * TILE / 2..].as_ptr();
                            let wt = |group: usize| wp[(group * b.kt + t0) * TILE / 2..].as_ptr();
                            let block = &mut acc[ms * cols + ns..];
                            // SAFETY: the tiles are configured (`_tiles`); each pointer starts nk tiles
                            // of its packed operand (g0 + 1 < mp/16 and j0 + 1 < np/16: both padded to
                            // 32); the block holds 32 rows of `cols` from `ns`.
                            unsafe {
                                tiles::block_2x2(
                                    [at(g0), at(g0 + 1)],
                                    [wt(j0), wt(j0 + 1)],
                                    nk,
                                    block.as_mut_ptr(),
                                    cols,
                                    s > 0,
                                )
                            };
                            if last {
                                let (r0, c0) = (row0 + ms, col0 + ns);
                                let (nr, nc) = ((m - r0).min(32), (n - c0).min(32));
                                // SAFETY: this task alone writes rows r0..r0 + nr, columns
                                // c0..c0 + nc of the m × n output (tasks cover disjoint blocks).
                                let o = unsafe { dst.slice(r0 * n + c0, (nr - 1) * n + nc) };
                                finish_block(
                                    &block[..(nr - 1) * cols + nc],
                                    cols,
                                    &bias[c0..c0 + nc],
                                    act,
                                    o,
                                    n,
                                );
                            }
                        }
                    }
                }
            });
        });
    });
    Ok(())
}

/// The tile registers: their configuration and the 2×2 block product.
#[cfg(target_arch = "x86_64")]
mod tiles {
    use half::bf16;
    use std::arch::asm;

    /// `LDTILECFG`'s 64 bytes: palette 1, tiles 0–7 of 16 rows × 64 bytes.
    #[repr(C, align(64))]
    struct Layout {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    static LAYOUT: Layout = Layout {
        palette: 1,
        start_row: 0,
        reserved: [0; 14],
        colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
        rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
    };

    /// The configuration, loaded on this thread while it lives (released when dropped).
    pub struct Config(());

    impl Config {
        /// Load the tile configuration. Callers have checked `simd::amx_bf16`.
        pub fn load() -> Config {
            // SAFETY: AMX is there and granted (`amx_bf16`, checked by `run`); LAYOUT is a
            // valid palette-1 configuration, 64-byte aligned.
            unsafe { asm!("ldtilecfg [{}]", in(reg) &LAYOUT, options(nostack, readonly)) };
            Config(())
        }
    }

    impl Drop for Config {
        fn drop(&mut self) {
            // SAFETY: releases the state `load` configured.
            unsafe { asm!("tilerelease", options(nostack, nomem)) };
        }
    }

    /// acc[32 × 32] (row stride `ld` f32) = (load ? acc : 0) + a·w over `nk` k-tiles: `a[0..2]`
    /// the two row groups' first tiles, `w[0..2]` the two column groups', each followed by its
    /// next k-tiles at 1 KiB steps.
    ///
    /// # Safety
    /// The tile configuration is loaded on this thread; every pointer has `nk` tiles after it;
    /// `acc` has 32 rows of at least 32 f32 at stride `ld`; nk ≥ 1.
    pub unsafe fn block_2x2(
        a: [*const bf16; 2],
        w: [*const bf16; 2],
        nk: usize,
        acc: *mut f32,
        ld: usize,
        load: bool,
    ) {
        let ldb = ld * 4;
        let c = [acc, acc.add(16), acc.add(16 * ld), acc.add(16 * ld + 16)];
        if load {
            asm!(
                "tileloadd tmm0, [{c0} + {ld}*1]",
                "tileloadd tmm1, [{c1} + {ld}*1]",
                "tileloadd tmm2, [{c2} + {ld}*1]",
                "tileloadd tmm3, [{c3} + {ld}*1]",
                c0 = in(reg) c[0], c1 = in(reg) c[1], c2 = in(reg) c[2], c3 = in(reg) c[3],
                ld = in(reg) ldb,
                options(nostack, readonly),
            );
        } else {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem)
            );
        }
        asm!(
            "2:",
            "tileloadd tmm4, [{a0} + {s}*1]",
            "tileloadd tmm6, [{w0} + {s}*1]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tileloadd tmm7, [{w1} + {s}*1]",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tileloadd tmm5, [{a1} + {s}*1]",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            "add {a0}, 1024",
            "add {a1}, 1024",
            "add {w0}, 1024",
            "add {w1}, 1024",
            "dec {nk}",
            "jnz 2b",
            a0 = inout(reg) a[0] => _, a1 = inout(reg) a[1] => _,
            w0 = inout(reg) w[0] => _, w1 = inout(reg) w[1] => _,
            nk = inout(reg) nk => _,
            s = in(reg) 64usize,
            options(nostack, readonly),
        );
        asm!(
            "tilestored [{c0} + {ld}*1], tmm0",
            "tilestored [{c1} + {ld}*1], tmm1",
            "tilestored [{c2} + {ld}*1], tmm2",
            "tilestored [{c3} + {ld}*1], tmm3",
            c0 = in(reg) c[0], c1 = in(reg) c[1], c2 = in(reg) c[2], c3 = in(reg) c[3],
            ld = in(reg) ldb,
            options(nostack),
        );
    }
}

/// Elsewhere there are no tiles: `run` refuses before reaching these.
#[cfg(not(target_arch = "x86_64"))]
mod tiles {
    use half::bf16;
    pub struct Config(());
    impl Config {
        pub fn load() -> Config {
            unreachable!("cpu/amx runs on x86-64 only")
        }
    }
    impl Drop for Config {
        fn drop(&mut self) {}
    }
    pub unsafe fn block_2x2(
        _: [*const bf16; 2],
        _: [*const bf16; 2],
        _: usize,
        _: *mut f32,
        _: usize,
        _: bool,
    ) {
        unreachable!("cpu/amx runs on x86-64 only")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_split_the_work_among_the_threads_and_pad_to_tiles() {
        let b = Blocking::new(2048, 2048, 2048, 2);
        assert_eq!((b.mb, b.nc, b.mp, b.np, b.kt), (128, 256, 2048, 2048, 64));
        // One row: one 32-row block, columns split so both threads have work.
        let b = Blocking::new(1, 100, 33, 2);
        assert_eq!((b.mb, b.mp, b.np, b.kt), (32, 32, 128, 2));
        assert!(b.np.div_ceil(b.nc) >= 4, "{b:?}");
    }

    #[test]
    fn packing_puts_each_value_where_the_tiles_read_it() {
        // Whole tiles (the shuffled path where the CPU has AVX-512) and cut ones.
        for (m, n, k) in [(17, 18, 35), (40, 50, 100)] {
            packing_case(m, n, k);
        }
    }

    fn packing_case(m: usize, n: usize, k: usize) {
        // Distinct bit patterns (all finite below 0x7f80), so a value out of place shows.
        let val = |i: usize| bf16::from_bits(i as u16);
        let a: Vec<bf16> = (0..m * k).map(val).collect();
        let w: Vec<bf16> = (0..n * k).map(val).collect();
        let b = Blocking::new(m, n, k, 1);
        // Storage that held other values: every element is written.
        let mut ap = vec![bf16::NAN; b.mp / 16 * b.kt * TILE / 2];
        let mut wp = vec![bf16::NAN; b.np / 16 * b.kt * TILE / 2];
        pack_a(&mut ap, &a, m, k, &b);
        pack_w(&mut wp, &w, n, k, &b);
        let half = TILE / 2;
        for row in 0..b.mp {
            for kk in 0..b.kt * TK {
                let (g, r, t, i) = (row / 16, row % 16, kk / TK, kk % TK);
                let got = ap[(g * b.kt + t) * half + r * TK + i];
                let want = if row < m && kk < k {
                    a[row * k + kk]
                } else {
                    bf16::ZERO
                };
                assert_eq!(got, want, "a row {row} k {kk}");
            }
        }
        for col in 0..b.np {
            for kk in 0..b.kt * TK {
                let (j, c, t, i) = (col / 16, col % 16, kk / TK, kk % TK);
                let got = wp[(j * b.kt + t) * half + (i / 2) * 32 + 2 * c + i % 2];
                let want = if col < n && kk < k {
                    w[col * k + kk]
                } else {
                    bf16::ZERO
                };
                assert_eq!(got, want, "w col {col} k {kk}");
            }
        }
    }
}
