//! `cpu/fused`: the fused softmax on the CPU (rayon; AVX-512 or AVX2, and FMA, where the CPU
//! has them).
//! Rows that a core's cache holds run whole, one task a row: the max, the exponentials and
//! their sum, then the outputs, while the row is in cache. An f32 row's exponentials go into
//! its output and are scaled there; log_softmax's and a 16-bit row's into a buffer (a 16-bit
//! row is widened into it first, and computed there in f32). Wider rows, and rows too
//! few to give every core one, are cut into chunks that all cores share (the split-row form,
//! as v6, v9 and v11 cut rows on the GPU): each chunk's (max, Σ e^(x − max)) and its
//! exponentials (written into y), the row's states merged, then each chunk scaled in place.
//! Rows are taken in batches whose output the last-level cache holds, so the scaling pass
//! finds them there.

use super::*;

/// Columns a task of the split form reduces and writes: its x stays in L1 between the max and
/// the exponentials.
pub const CPU_CHUNK: usize = 4096;

/// Rows wider than this take the split form: a whole row's x and f32 buffer (8 bytes a column
/// at f32) no longer share the last-level cache with the other threads' rows: the whole form
/// led up to 524288 columns and the split form past it (docs/perf-notes.md, "softmax cpu").
pub const CPU_SPLIT_FROM: usize = 524_288;

/// The output bytes a batch of the split form covers: its exponentials are still in the
/// last-level cache when the batch is scaled.
const CPU_BATCH_BYTES: usize = 4 << 20;

/// Whether `rows` rows of `cols` take the split form on `threads` threads: rows of more than
/// one chunk that are wider than [`CPU_SPLIT_FROM`], or too few to keep the threads busy
/// whole. The split form costs about 15% more than the whole one where both keep every
/// thread busy (its second pass over y), so it takes rows whose whole form leaves more than
/// 15% of the threads' rounds idle (3 rows on 2 threads: 25%; 5: 17%; 7: 12.5%).
pub fn cpu_split_form(rows: usize, cols: usize, threads: usize) -> bool {
    let threads = threads.max(1);
    let rounds = rows.div_ceil(threads);
    let idle = 20 * rows < 17 * threads * rounds;
    cols > CPU_CHUNK && (cols > CPU_SPLIT_FROM || idle)
}

/// e^(x − shift) of each of `x` into `buf`, and their sum (both forms' exponentials), in one
/// pass: 16 lanes of partial sums within blocks of 512, then the block sums (the bounded error
/// of `prim::sum_f32`, without its second pass over `buf`).
#[inline(always)]
fn exps_and_sum<T: Element, const FMA: bool>(x: &[T], shift: f32, buf: &mut [f32]) -> f32 {
    const L: usize = 16;
    let mut total = 0.0f32;
    for (xb, bb) in x.chunks(512).zip(buf.chunks_mut(512)) {
        let mut acc = [0.0f32; L];
        let mut xi = xb.chunks_exact(L);
        let mut bi = bb.chunks_exact_mut(L);
        for (xc, bc) in (&mut xi).zip(&mut bi) {
            for ((b, v), a) in bc.iter_mut().zip(xc).zip(acc.iter_mut()) {
                let e = prim::exp_nonpos_f32::<FMA>(v.to_f32() - shift);
                *b = e;
                *a += e;
            }
        }
        let mut tail = 0.0f32;
        for (b, v) in bi.into_remainder().iter_mut().zip(xi.remainder()) {
            *b = prim::exp_nonpos_f32::<FMA>(v.to_f32() - shift);
            tail += *b;
        }
        total += acc.iter().sum::<f32>() + tail;
    }
    total
}

/// log_softmax's outputs, (x − m) − ln Σ, for both forms: x − m is exact near the max, where
/// outputs are near 0.
#[inline(always)]
fn write_log<T: Element>(x: &[T], out: &mut [T], m: f32, ln_sum: f32) {
    for (o, v) in out.iter_mut().zip(x) {
        *o = T::from_f32((v.to_f32() - m) - ln_sum);
    }
}

/// One row, whole: the max, e^(x − max) into `buf` and its sum, then the outputs. NaNs are
/// skipped by the max and reach the sum through e^(NaN − max).
#[inline(always)]
fn row_body<T: Element, const FMA: bool>(row: &[T], out: &mut [T], buf: &mut [f32], log: bool) {
    let m = prim::max_f32(row);
    if !log && T::DTYPE == DType::F32 {
        // An f32 row's exponentials go into its output and are scaled there: the row's
        // working set is x and y, not a third buffer beside them.
        let s = exps_and_sum::<T, FMA>(row, m, bytemuck::cast_slice_mut(out));
        return chunk_finish_body::<T, FMA>(row, out, 1.0 / s, m, 0.0, false);
    }
    let s = exps_and_sum::<T, FMA>(row, m, buf);
    if log {
        write_log(row, out, m, s.ln());
    } else {
        let inv = 1.0 / s;
        for (o, b) in out.iter_mut().zip(buf.iter()) {
            *o = T::from_f32(b * inv);
        }
    }
}
prim::avx2_twin!(
    /// [`row_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn row_whole<T: Element>(row: &[T], out: &mut [T], buf: &mut [f32], log: bool) => row_body
);

/// A chunk's state: its max (−inf where it holds no finite value or +inf; NaNs skipped) and
/// Σ e^(x − max) (e^(x − 0) where the max is −inf, so that a chunk of −inf sums to 0, not to
/// e^(−inf + inf) = NaN; a NaN or +inf in the chunk makes it NaN). Its exponentials are left
/// in `buf`; for softmax they are also rounded into `out` where `out` is given (empty, they
/// stay in `buf` alone; log_softmax writes nothing here). An f32 `out` takes them directly,
/// `buf` untouched.
#[inline(always)]
fn chunk_stats_body<T: Element, const FMA: bool>(
    x: &[T],
    out: &mut [T],
    buf: &mut [f32],
    log: bool,
) -> (f32, f32) {
    let m = prim::max_f32(x);
    let shift = if m == f32::NEG_INFINITY { 0.0 } else { m };
    if !log && T::DTYPE == DType::F32 && out.len() == x.len() {
        // f32 exponentials straight into the output, as a whole row's (`row_body`).
        return (
            m,
            exps_and_sum::<T, FMA>(x, shift, bytemuck::cast_slice_mut(out)),
        );
    }
    let s = exps_and_sum::<T, FMA>(x, shift, buf);
    if !log {
        for (o, &b) in out.iter_mut().zip(buf.iter()) {
            *o = T::from_f32(b);
        }
    }
    (m, s)
}
prim::avx2_twin!(
    /// [`chunk_stats_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn chunk_stats<T: Element>(x: &[T], out: &mut [T], buf: &mut [f32], log: bool) -> (f32, f32)
        => chunk_stats_body
);

/// A row's state from its chunks' (max, sum): the max M and Σ sum·e^(max − M), in f64. A row
/// with no value above −inf (all −inf, or −inf and NaN) gives a NaN sum, so that its outputs
/// are NaN as PyTorch's are.
pub fn merge_chunks(states: &[(f32, f32)]) -> (f32, f64) {
    let m = states
        .iter()
        .fold(f32::NEG_INFINITY, |a, &(cm, _)| a.max(cm));
    if m == f32::NEG_INFINITY {
        return (m, f64::NAN);
    }
    let s = states
        .iter()
        .map(|&(cm, cs)| cs as f64 * (cm as f64 - m as f64).exp())
        .sum();
    (m, s)
}

/// A chunk's outputs once its row's state (`m`, `s`) is known: softmax scales the
/// exponentials that [`chunk_stats`] left in `out` by e^(chunk max − m)/s; log_softmax writes
/// (x − m) − ln s.
#[inline(always)]
fn chunk_finish_body<T: Element, const FMA: bool>(
    x: &[T],
    out: &mut [T],
    scale: f32,
    m: f32,
    ls: f32,
    log: bool,
) {
    if log {
        write_log(x, out, m, ls);
    } else {
        for o in out.iter_mut() {
            *o = T::from_f32(o.to_f32() * scale);
        }
    }
}
prim::avx2_twin!(
    /// [`chunk_finish_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn chunk_finish<T: Element>(x: &[T], out: &mut [T], scale: f32, m: f32, ls: f32, log: bool)
        => chunk_finish_body
);

/// [`chunk_finish`] for an f16 chunk: a block at a time widened into L1 (F16C), the f32 loop
/// there, rounded back.
fn chunk_finish_widened<T: Element>(
    x: &[T],
    out: &mut [T],
    scale: f32,
    m: f32,
    ls: f32,
    log: bool,
) {
    if log {
        return prim::map_in_f32(out, x, |o, x| chunk_finish::<f32>(x, o, scale, m, ls, true));
    }
    // Softmax scales, in place, the exponentials that the first pass left in y (x is not read).
    let mut a = [0f32; prim::WIDEN_BLOCK];
    for o in out.chunks_mut(prim::WIDEN_BLOCK) {
        let a = &mut a[..o.len()];
        prim::widen(a, o);
        chunk_finish::<f32>(&[], a, scale, m, ls, false);
        prim::narrow(o, a);
    }
}

/// A 16-bit row's state, from the row widened into `buf`: its max and Σ e^(x − max), the
/// exponentials left in `buf` for softmax (log_softmax keeps x there and sums the
/// exponentials a block at a time).
#[inline(always)]
fn stats_f32_body<const FMA: bool>(buf: &mut [f32], log: bool) -> (f32, f32) {
    let m = prim::max_f32(buf);
    if log {
        let mut t = [0.0f32; prim::WIDEN_BLOCK];
        let mut s = 0.0f32;
        for b in buf.chunks(prim::WIDEN_BLOCK) {
            let t = &mut t[..b.len()];
            for (e, &v) in t.iter_mut().zip(b) {
                *e = prim::exp_nonpos_f32::<FMA>(v - m);
            }
            s += prim::sum_f32(t);
        }
        (m, s)
    } else {
        for b in buf.iter_mut() {
            *b = prim::exp_nonpos_f32::<FMA>(*b - m);
        }
        (m, prim::sum_f32(buf))
    }
}
prim::avx2_twin!(
    /// [`stats_f32_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn stats_f32(buf: &mut [f32], log: bool) -> (f32, f32) => stats_f32_body
);

/// One 16-bit row, whole: widened into `buf` once, the f32 arithmetic there (the same loops
/// with FMA as f32 rows), then the outputs a block at a time, scaled (or shifted) in L1 and
/// rounded into `out` (docs/perf-notes.md, "16-bit rows on the CPU").
fn row_whole_16<T: Element>(row: &[T], out: &mut [T], buf: &mut [f32], log: bool) {
    prim::widen(buf, row);
    let (m, s) = stats_f32(buf, log);
    let (inv, ls) = (1.0 / s, s.ln());
    for (o, b) in out
        .chunks_mut(prim::WIDEN_BLOCK)
        .zip(buf.chunks_mut(prim::WIDEN_BLOCK))
    {
        if log {
            b.iter_mut().for_each(|v| *v = (*v - m) - ls);
        } else {
            b.iter_mut().for_each(|v| *v *= inv);
        }
        prim::narrow(o, b);
    }
}

/// Rows whole, in parallel (see the module's doc).
fn rows_whole<T: Element>(x: &[T], y: &mut [T], cols: usize, ldx: usize, log: bool) {
    let mut rows: Vec<&mut [T]> = y.chunks_mut(cols).collect();
    let sixteen = T::DTYPE != crate::runtime::dtype::DType::F32;
    // f32 softmax rows work in their output (`row_body`): no buffer.
    let buf_cols = if sixteen || log { cols } else { 0 };
    rows.par_iter_mut().enumerate().for_each_init(
        || vec![0.0f32; buf_cols],
        |buf, (r, out)| {
            let row = &x[r * ldx..r * ldx + cols];
            if sixteen {
                row_whole_16(row, out, buf, log)
            } else {
                row_whole(row, out, buf, log)
            }
        },
    );
}

/// Rows cut into chunks of [`CPU_CHUNK`] that all threads share, batch by batch (see the
/// module's doc). The chunks' exponentials are rounded to `T` in y and rounded again when
/// scaled: two roundings of the dtype, within its tolerance (16-bit: 2^-8 and 2^-10 at most).
fn rows_split<T: Element>(x: &[T], y: &mut [T], cols: usize, ldx: usize, log: bool) {
    let per_row = cols.div_ceil(CPU_CHUNK);
    let batch = (CPU_BATCH_BYTES / (cols * std::mem::size_of::<T>())).max(1);
    for (b, yb) in y.chunks_mut(batch * cols).enumerate() {
        let first = b * batch;
        // The batch's chunks, row by row: chunk k is row first + k / per_row, from column
        // (k % per_row)·CPU_CHUNK.
        let mut chunks: Vec<&mut [T]> = yb
            .chunks_mut(cols)
            .flat_map(|row| row.chunks_mut(CPU_CHUNK))
            .collect();
        let xs = |k: usize, len: usize| {
            let start = (first + k / per_row) * ldx + (k % per_row) * CPU_CHUNK;
            &x[start..start + len]
        };
        // f16 chunks are widened with F16C first: converted in the loop, an f16 takes ~15
        // operations; a bf16 takes a shift, and its chunks ran level or faster unwidened
        // (docs/perf-notes.md, "Softmax CPU tier").
        let f16 = T::DTYPE == crate::runtime::dtype::DType::F16;
        let states: Vec<(f32, f32)> = chunks
            .par_iter_mut()
            .enumerate()
            .map_init(
                || vec![0.0f32; if f16 { 2 } else { 1 } * CPU_CHUNK],
                |buf, (k, out)| {
                    let n = out.len();
                    if !f16 {
                        return chunk_stats(xs(k, n), out, &mut buf[..n], log);
                    }
                    // Widened once and computed in f32: with no f32 output given, the
                    // exponentials stay in `exps`, and are rounded from there into y.
                    let (exps, wide) = buf.split_at_mut(CPU_CHUNK);
                    prim::widen(&mut wide[..n], xs(k, n));
                    let st = chunk_stats::<f32>(&wide[..n], &mut [], &mut exps[..n], log);
                    if !log {
                        prim::narrow(out, &exps[..n]);
                    }
                    st
                },
            )
            .collect();
        // Each row's (max, Σ, ln Σ).
        let rows: Vec<(f32, f64, f32)> = states
            .chunks(per_row)
            .map(|st| {
                let (m, s) = merge_chunks(st);
                (m, s, s.ln() as f32)
            })
            .collect();
        chunks.par_iter_mut().enumerate().for_each(|(k, out)| {
            let (m, s, ls) = rows[k / per_row];
            let scale = ((states[k].0 as f64 - m as f64).exp() / s) as f32;
            if f16 {
                chunk_finish_widened(xs(k, out.len()), out, scale, m, ls, log)
            } else {
                chunk_finish(xs(k, out.len()), out, scale, m, ls, log)
            }
        });
    }
}

/// The fused CPU softmax (log_softmax with `p.log_softmax`), every row of `x` into the
/// contiguous `y`. Outputs under ~1.2e-38 come out 0 ([`prim::exp_nonpos_f32`]).
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_cpu_fused(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    struct Fused {
        rows: usize,
        cols: usize,
        ldx: usize,
        log: bool,
    }
    impl prim::SameTypeMap for Fused {
        fn map<T: Element>(&self, x: &[T], y: &mut [T]) {
            let Fused {
                rows,
                cols,
                ldx,
                log,
            } = *self;
            if rows == 0 || cols == 0 {
                return;
            }
            let y = &mut y[..rows * cols];
            if cpu_split_form(rows, cols, rayon::current_num_threads()) {
                rows_split(x, y, cols, ldx, log)
            } else {
                rows_whole(x, y, cols, ldx, log)
            }
        }
    }
    let (rows, cols, ldx) = x.rows_cols();
    let log = p.log_softmax;
    prim::map_same_type(
        "cpu/fused",
        x,
        y,
        Fused {
            rows,
            cols,
            ldx,
            log,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_form_takes_wide_rows_and_too_few_rows() {
        assert!(!cpu_split_form(4096, 1024, 2));
        assert!(!cpu_split_form(1, CPU_CHUNK, 64), "one chunk a row: whole");
        assert!(
            cpu_split_form(1, CPU_CHUNK + 1, 2),
            "fewer rows than threads"
        );
        assert!(
            cpu_split_form(3, CPU_CHUNK + 1, 2),
            "a round a quarter idle"
        );
        assert!(cpu_split_form(5, CPU_CHUNK + 1, 2), "a sixth idle");
        assert!(!cpu_split_form(7, CPU_CHUNK + 1, 2), "an eighth idle");
        assert!(!cpu_split_form(2, CPU_CHUNK + 1, 2));
        assert!(!cpu_split_form(64, CPU_CHUNK + 1, 64));
        assert!(!cpu_split_form(63, CPU_CHUNK + 1, 64), "1.6% idle");
        assert!(cpu_split_form(48, CPU_CHUNK + 1, 64), "a quarter idle");
        assert!(cpu_split_form(4096, CPU_SPLIT_FROM + 1, 2));
        assert!(!cpu_split_form(4096, CPU_SPLIT_FROM, 2));
        assert!(
            !cpu_split_form(0, CPU_SPLIT_FROM, 0),
            "no rows, no threads: no panic"
        );
    }

    #[test]
    fn chunk_states_merge_as_one_row() {
        // Three chunks of one row: the merged (max, sum) is the whole row's.
        let row: Vec<f32> = (0..300)
            .map(|i| ((i * 37) % 101) as f32 * 0.13 - 4.0)
            .collect();
        let m = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        let s: f64 = row.iter().map(|&v| ((v - m) as f64).exp()).sum();
        let mut out = vec![0.0f32; 300];
        let mut buf = vec![0.0f32; 300];
        let states: Vec<(f32, f32)> = [0..100, 100..250, 250..300]
            .into_iter()
            .map(|r| {
                let n = r.len();
                chunk_stats(&row[r.clone()], &mut out[r], &mut buf[..n], false)
            })
            .collect();
        let (mm, ms) = merge_chunks(&states);
        assert_eq!(mm, m);
        assert!((ms - s).abs() <= 1e-6 * s, "{ms} against {s}");
    }

    #[test]
    fn chunks_of_minus_inf_and_nan_merge_as_pytorch() {
        // A chunk of −inf beside finite chunks contributes nothing.
        let (m, s) = merge_chunks(&[(f32::NEG_INFINITY, 0.0), (2.0, 3.0)]);
        assert_eq!((m, s), (2.0, 3.0));
        // All −inf: a NaN sum, so NaN outputs.
        assert!(merge_chunks(&[(f32::NEG_INFINITY, 0.0); 3]).1.is_nan());
        // A NaN in any chunk (its sum) makes the row's sum NaN.
        assert!(merge_chunks(&[(1.0, f32::NAN), (2.0, 3.0)]).1.is_nan());
        // A chunk of −inf computes its exponentials from 0: zeros, not NaN.
        let x = [f32::NEG_INFINITY; 8];
        let (mut out, mut buf) = ([1.0f32; 8], [0.0f32; 8]);
        let (cm, cs) = chunk_stats(&x, &mut out, &mut buf, false);
        assert_eq!((cm, cs), (f32::NEG_INFINITY, 0.0));
        assert!(out.iter().all(|&v| v == 0.0));
    }

    /// Both forms, forced, on rows of several chunks holding every special case (a chunk of
    /// −inf beside finite ones, all −inf, a NaN in one chunk, +inf in the last, one dominant
    /// value, ordinary values), in every dtype, softmax and log_softmax, against the f64
    /// reference; a strided x (its gap NaN) too.
    #[test]
    fn both_forms_match_the_reference_on_special_rows() {
        use half::{bf16, f16};
        fn run<T: Element>(x64: &[f64], rows: usize, cols: usize, ldx: usize, log: bool) {
            let x: Vec<T> = x64.iter().map(|&v| T::from_f64(v)).collect();
            // The reference sees the values as stored (rounded to T), its rows unstrided.
            let xs: Vec<f64> = (0..rows)
                .flat_map(|r| x[r * ldx..r * ldx + cols].iter().map(|v| v.to_f64()))
                .collect();
            let p = SoftmaxParams { log_softmax: log };
            let want = reference(&xs, cols, &p);
            for split in [false, true] {
                let mut y = vec![T::from_f64(f64::NAN); rows * cols];
                if split {
                    rows_split(&x, &mut y, cols, ldx, log)
                } else {
                    rows_whole(&x, &mut y, cols, ldx, log)
                }
                let got: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
                let c = crate::check::compare::compare(&got, &want, cols, T::DTYPE);
                assert!(
                    c.passed,
                    "{} {cols} cols (ldx {ldx}) log {log} split {split}: {c:?}",
                    T::DTYPE
                );
            }
        }
        let ninf = f64::NEG_INFINITY;
        for cols in [CPU_CHUNK + 1, 3 * CPU_CHUNK + 5, 70_000] {
            let rows: Vec<Box<dyn Fn(usize) -> f64>> = vec![
                Box::new(move |c| if c < cols / 2 { ninf } else { (c % 7) as f64 }),
                Box::new(move |_| ninf),
                Box::new(move |c| if c == cols - 3 { f64::NAN } else { 1.0 }),
                Box::new(move |c| if c == cols - 1 { f64::INFINITY } else { 0.5 }),
                Box::new(move |c| if c == CPU_CHUNK + 1 { 80.0 } else { -80.0 }),
                Box::new(move |c| (c as f64 * 0.37).sin() * 5.0),
            ];
            for ldx in [cols, cols + 3] {
                let mut x64 = vec![f64::NAN; rows.len() * ldx];
                for (r, f) in rows.iter().enumerate() {
                    for c in 0..cols {
                        x64[r * ldx + c] = f(c);
                    }
                }
                for log in [false, true] {
                    run::<f32>(&x64, rows.len(), cols, ldx, log);
                    run::<bf16>(&x64, rows.len(), cols, ldx, log);
                    run::<f16>(&x64, rows.len(), cols, ldx, log);
                }
            }
        }
    }
}
