//! Softmax over the last dimension. Minimum traffic: read rows·cols and write rows·cols
//! elements; FLOPs ≈ 5 per element. Semantics as PyTorch: a row of all −inf, or one holding
//! NaN or +inf, gives NaN outputs.
//!
//! Variants: `reference` (f64), `manual` (the lecture's `manual_softmax`: row max, subtract,
//! exp, row sum, divide — one launch or pass each), `cuda/v1_block_row` … `cuda/v10_l2pass`,
//! `cuda/auto` (the autotuned choice where `kernlab autotune softmax` cached one, else the
//! width heuristic, [`heuristic_choice`]), `cpu/fused`.

use super::cpu_prims::{self as prim};
use super::launch::{aligned16, cfg_1d, cuda_io, CudaIo};
use super::Params;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::{ELEMENTWISE, SOFTMAX};
use crate::launch;
use crate::tensor::{CpuData, Tensor};
use cudarc::driver::{CudaView, LaunchConfig};
use rayon::prelude::*;

/// The oracle: softmax (or log_softmax) of one row in f64, three passes exactly as the
/// definition reads: m = max, s = Σ e^(x−m), then e^(x−m)/s or (x − m) − ln s.
pub fn reference_row(x: &[f64], out: &mut [f64], log: bool) {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = x.iter().map(|&v| (v - m).exp()).sum();
    let ln_s = s.ln();
    for (o, &v) in out.iter_mut().zip(x) {
        *o = if log {
            (v - m) - ln_s
        } else {
            (v - m).exp() / s
        };
    }
}

/// The f64 softmax of `x`'s rows of `cols` (a short last row is a row too); with `cols` = 0
/// there are no rows, and any values given are answered with NaN, which never passes.
pub fn reference(x: &[f64], cols: usize, p: &Params) -> Vec<f64> {
    if cols == 0 {
        return vec![f64::NAN; x.len()];
    }
    let mut out = vec![0.0; x.len()];
    out.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(o, r)| reference_row(r, o, p.log_softmax));
    out
}

/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_reference(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let (_, cols, _) = x.rows_cols();
    let r = reference(&x.to_f64_vec()?, cols, p);
    *y = Tensor::from_f64(&r, x.shape(), y.dtype())?;
    Ok(())
}

// ---- manual ---------------------------------------------------------------------------------
/// CPU: `x_max = x.max(dim=-1)`, `x = x - x_max[:, None]`, `num = exp(x)`,
/// `den = num.sum(dim=-1)`, `y = num / den[:, None]` — one parallel pass each
/// (log_softmax: `y = x - log(den)[:, None]`).
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_manual_cpu(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let (_, cols, _) = x.rows_cols();
    let x = prim::to_f32(x)?;
    let x_max = prim::row_reduce(&x, cols, f32::NEG_INFINITY, f32::max);
    let shifted = prim::broadcast_rows(&x, &x_max, cols, |a, m| a - m);
    let num = prim::map1(&shifted, f32::exp);
    let den = prim::row_sum(&num, cols);
    let out = if p.log_softmax {
        let ln_den = prim::map1(&den, f32::ln);
        prim::broadcast_rows(&shifted, &ln_den, cols, |a, l| a - l)
    } else {
        prim::broadcast_rows(&num, &den, cols, |a, d| a / d)
    };
    prim::store_f32(y, &out)
}

/// CUDA: the same five ops, one launch each (plus casts for 16-bit inputs); log_softmax
/// replaces the divide by a log of the sums and a subtract (six launches).
pub fn run_manual_cuda(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (rows, cols, _) = x.rows_cols();
    let n = x.numel() as i64;
    let (rows_i, cols_i) = (rows as i32, cols as i32);
    let dt = x.dtype();
    if x.shape() != y.shape() {
        return Err(Error::ShapeMismatch {
            op: "softmax".into(),
            why: format!("input is {:?}, output is {:?}", x.shape(), y.shape()),
        });
    }
    if !x.is_contiguous() || !y.is_contiguous() {
        return Err(unsupported(
            "manual",
            "the five-op composition takes a contiguous input and output".into(),
        ));
    }
    let io = cuda_io(x, y)?;
    let dev = io.dev.clone();
    let cfg = cfg_1d(n as u64, 256)?;
    let per_row = LaunchConfig {
        grid_dim: (rows as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let xf_own;
    let xf = if dt == DType::F32 {
        io.x
    } else {
        xf_own = dev.alloc_bytes(n as usize * 4, "manual softmax: x as f32")?;
        launch!(
            dev,
            &ELEMENTWISE,
            format!("cast_to_f32_{dt}"),
            cfg,
            [io.x, &xf_own, &n]
        );
        &xf_own
    };
    let mut row_vec = dev.alloc_bytes(rows * 4, "manual softmax: per-row values")?;
    let mut a = dev.alloc_bytes(n as usize * 4, "manual softmax temporary")?;
    let mut b = dev.alloc_bytes(n as usize * 4, "manual softmax temporary")?;
    launch!(
        dev,
        &ELEMENTWISE,
        "row_max_f32",
        per_row,
        [xf, &mut row_vec, &rows_i, &cols_i]
    );
    launch!(
        dev,
        &ELEMENTWISE,
        "sub_rowvec_f32",
        cfg,
        [xf, &row_vec, &mut a, &n, &cols_i]
    );
    launch!(dev, &ELEMENTWISE, "exp_f32", cfg, [&a, &mut b, &n]);
    launch!(
        dev,
        &ELEMENTWISE,
        "row_sum_f32",
        per_row,
        [&b, &mut row_vec, &rows_i, &cols_i]
    );
    // The last op: num / den, or (x − max) − log(den) for log_softmax.
    let (last, lhs) = if p.log_softmax {
        let rows_n = rows as i64;
        let row_cfg = cfg_1d(rows as u64, 256)?;
        let rv = &row_vec;
        launch!(dev, &ELEMENTWISE, "log_f32", row_cfg, [rv, rv, &rows_n]);
        ("sub_rowvec_f32", &a)
    } else {
        ("div_rowvec_f32", &b)
    };
    if dt == DType::F32 {
        launch!(
            dev,
            &ELEMENTWISE,
            last,
            cfg,
            [lhs, &row_vec, io.y, &n, &cols_i]
        );
    } else {
        // The f32 result goes to whichever temporary is not the left operand, then is cast.
        let mut out = dev.alloc_bytes(n as usize * 4, "manual softmax result")?;
        launch!(
            dev,
            &ELEMENTWISE,
            last,
            cfg,
            [lhs, &row_vec, &mut out, &n, &cols_i]
        );
        let a = out;
        launch!(
            dev,
            &ELEMENTWISE,
            format!("cast_from_f32_{dt}"),
            cfg,
            [&a, io.y, &n]
        );
    }
    Ok(())
}

pub fn manual_symbols(dt: DType) -> Vec<String> {
    super::with_casts(
        &[
            "log_f32",
            "row_max_f32",
            "sub_rowvec_f32",
            "exp_f32",
            "row_sum_f32",
            "div_rowvec_f32",
        ],
        dt,
    )
}

// ---- hand-written CUDA ------------------------------------------------------------------------
/// Register-resident versions keep K slots per thread; these are the compiled K values.
const KS: [usize; 4] = [1, 2, 4, 8];

/// Largest row (in elements) each register-resident version holds.
pub fn v2_max_cols(dt: DType, vec: bool) -> usize {
    32 * if vec { 16 / dt.size() } else { 1 } * 8
}
pub fn v3_max_cols(dt: DType, vec: bool) -> usize {
    1024 * if vec { 16 / dt.size() } else { 1 } * 8
}
/// Largest row v3's shifted form holds (rows off a 16-byte boundary, equally in x and y): its
/// packs, less the pack a misaligned row may start part-way into.
pub fn v3_max_cols_shift(dt: DType) -> usize {
    let pack = 16 / dt.size();
    1024 * pack * 8 - (pack - 1)
}

/// The layout facts every launcher needs.
struct Rows {
    rows: usize,
    cols: usize,
    ldx: i64,
    ldy: i64,
    /// 16-byte packs usable: cols and both row strides multiples of the pack, bases aligned.
    vec: bool,
    pack: usize,
}

/// The device buffers of a call and their rows' layout. `y` may have its own row stride (the
/// kernels take one); it must have x's shape, and rows laid out as rows (contiguous, or rows
/// apart by a stride of at least their width), else this refuses it rather than write past it.
fn rows_io<'a>(x: &'a Tensor, y: &'a mut Tensor) -> Result<(CudaIo<'a>, Rows)> {
    let (rows, cols, ldx) = x.rows_cols();
    let in_rows = |t: &Tensor| t.is_contiguous() || t.is_row_strided();
    if !in_rows(x) {
        return Err(unsupported(
            "cuda",
            format!("the input's layout (strides {:?}) is not rows", x.strides()),
        ));
    }
    if y.shape() != x.shape() || !in_rows(y) {
        return Err(Error::ShapeMismatch {
            op: "softmax".into(),
            why: format!(
                "the output ({:?}, strides {:?}) must have the input's shape {:?} in rows",
                y.shape(),
                y.strides(),
                x.shape()
            ),
        });
    }
    let ldy = y.rows_cols().2;
    let io = cuda_io(x, y)?;
    let pack = 16 / x.dtype().size();
    let vec = cols.is_multiple_of(pack)
        && ldx.is_multiple_of(pack)
        && ldy.is_multiple_of(pack)
        && aligned16(&io.dev, io.x)
        && aligned16(&io.dev, io.y);
    let r = Rows {
        rows,
        cols,
        ldx: ldx as i64,
        ldy: ldy as i64,
        vec,
        pack,
    };
    Ok((io, r))
}

/// The refusal of a shape by `variant`, saying why.
fn unsupported(variant: &str, why: String) -> Error {
    Error::UnsupportedShape {
        op: "softmax".into(),
        variant: variant.into(),
        why,
    }
}

fn too_wide(variant: &str, cols: usize, max: usize) -> Error {
    unsupported(
        variant,
        format!("rows of {cols} columns are wider than the {max} it holds in registers (use v4_online or auto)"),
    )
}

/// The versions that move only 16-byte packs (v7's bulk copies, v8's and v9's cp.async) take
/// rows that are packs, or that x and y misalign alike (peeled); they refuse the rest.
fn require_peelable(variant: &str, r: &Rows, io: &CudaIo) -> Result<()> {
    if peelable(r, io) {
        return Ok(());
    }
    Err(unsupported(
        variant,
        "x's and y's rows are not equally aligned to 16 bytes (row strides differ modulo a 16-byte pack): use v6_split or auto".into(),
    ))
}

/// Launch a row kernel with the (x, y, rows, cols, ldx, ldy, lg) arguments they all take.
fn launch_rows(io: CudaIo, r: &Rows, p: &Params, name: String, cfg: LaunchConfig) -> Result<()> {
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    note_row_launch(|| RowLaunch::new(&name, cfg, r, lg, None));
    launch!(
        io.dev,
        &SOFTMAX,
        name,
        cfg,
        [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg]
    );
    Ok(())
}

/// One launch of a row kernel, with all a replay needs: the kernel's name, its launch shape
/// and the arguments after (x, y). `bench --torch` replays `auto`'s launch in the PyTorch
/// baselines' process (their `kernlab_do_bench` column), so that at µs-sized calls kernlab's
/// kernel and PyTorch's are timed by one harness in one process (docs/perf-notes.md,
/// twenty-sixth session: across processes a call's time moved by up to 1.2 µs).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RowLaunch {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory, bytes (a replay past 48 KB must allow it on the function first).
    pub smem: u32,
    /// The arguments after x and y, in order: rows and cols (i32), ldx and ldy (i64, elements),
    /// lg (i32), then v8's csize (i32) where the kernel takes it.
    pub rows: i32,
    pub cols: i32,
    pub ldx: i64,
    pub ldy: i64,
    pub lg: i32,
    pub csize: Option<i32>,
}

impl RowLaunch {
    fn new(kernel: &str, cfg: LaunchConfig, r: &Rows, lg: i32, csize: Option<i32>) -> RowLaunch {
        let (g, b) = (cfg.grid_dim, cfg.block_dim);
        RowLaunch {
            kernel: kernel.to_string(),
            grid: [g.0, g.1, g.2],
            block: [b.0, b.1, b.2],
            smem: cfg.shared_mem_bytes,
            rows: r.rows as i32,
            cols: r.cols as i32,
            ldx: r.ldx,
            ldy: r.ldy,
            lg,
            csize,
        }
    }
}

thread_local! {
    /// While [`record_row_launch`] runs: the row launches made so far on this thread.
    static ROW_LAUNCHES: std::cell::RefCell<Option<Vec<RowLaunch>>> =
        const { std::cell::RefCell::new(None) };
}

fn note_row_launch(l: impl FnOnce() -> RowLaunch) {
    ROW_LAUNCHES.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push(l());
        }
    });
}

/// Run `f` (one call of a softmax variant on this thread) and say how it launched:
/// `Ok(Ok(launch))` when it made exactly one launch and that was a row kernel's plain launch
/// (cuLaunchKernel with (x, y, rows, cols, ldx, ldy, lg[, csize]): v1–v4, v8's one-CTA rows);
/// `Ok(Err(why))` for anything a replay could not repeat (a cluster or cooperative launch, a
/// workspace, several kernels); `Err` when `f` fails.
pub fn record_row_launch(
    f: impl FnOnce() -> Result<()>,
) -> Result<std::result::Result<RowLaunch, String>> {
    // Recording ends with this call even if `f` panics (nothing is noted after it).
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            ROW_LAUNCHES.with(|c| c.borrow_mut().take());
        }
    }
    let before = crate::device::cuda::launches_on_this_thread();
    ROW_LAUNCHES.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let stop = Stop;
    let ran = f();
    let rows = ROW_LAUNCHES
        .with(|c| c.borrow_mut().take())
        .unwrap_or_default();
    drop(stop);
    ran?;
    let launches = crate::device::cuda::launches_on_this_thread() - before;
    Ok(one_row_launch(launches, rows))
}

/// [`record_row_launch`]'s verdict from the launches counted and the row launches noted.
fn one_row_launch(
    launches: u64,
    mut rows: Vec<RowLaunch>,
) -> std::result::Result<RowLaunch, String> {
    match (launches, rows.len()) {
        (1, 1) => Ok(rows.remove(0)),
        (0, _) => Err("no kernel launched".into()),
        (n, _) => Err(format!(
            "{n} launch(es), {} of them a row kernel's plain launch (a replay repeats one: not a cluster, a cooperative grid or several kernels)",
            rows.len()
        )),
    }
}

fn check_rows(x: &Tensor) -> Result<()> {
    let (rows, cols, _) = x.rows_cols();
    if rows > i32::MAX as usize || cols > MAX_COLS {
        return Err(unsupported(
            "cuda",
            format!(
                "{rows} rows × {cols} columns: rows must be below 2^31 and columns at most {MAX_COLS}"
            ),
        ));
    }
    Ok(())
}

/// The widest row the CUDA kernels take: 2^31 − 2^16. Their column loops count in 32-bit
/// ints, stepping up to 8192 at a time (v4: 1024 threads × 8 16-bit elements), and must not
/// pass 2^31 − 1.
pub const MAX_COLS: usize = (1 << 31) - (1 << 16);
const _: () = assert!(MAX_COLS + 8192 <= i32::MAX as usize);

/// v1: one block per row, blockDim = the row width rounded up to a power of two (32..1024).
pub fn run_v1_block_row(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let block = r.cols.next_power_of_two().clamp(32, 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (r.rows as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    };
    launch_rows(
        io,
        &r,
        p,
        format!("softmax_v1_block_row_{}", x.dtype()),
        cfg,
    )
}

fn kind(vec: bool) -> &'static str {
    if vec {
        "vec"
    } else {
        "scalar"
    }
}

/// v2: one warp per row, 4 rows per block; K = the fewest slots per lane that hold the row.
pub fn run_v2_warp_row(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, mut r) = rows_io(x, y)?;
    // The forced scalar form only where it holds the row (≤ 256 columns); wider rows keep packs.
    r.vec &= !(v2_forced_scalar() && v2_shape(r.cols).is_some());
    let width = if r.vec { r.pack } else { 1 };
    let (lanes, shape) = v2_shape(r.cols.div_ceil(width))
        .ok_or_else(|| too_wide("v2_warp_row", r.cols, v2_max_cols(x.dtype(), r.vec)))?;
    let threads = v2_threads();
    let cfg = cfg_1d(r.rows as u64 * lanes as u64, threads)?;
    let name = format!("softmax_v2_warp_row_{}_{shape}_{}", kind(r.vec), x.dtype());
    if threads != V2_THREADS {
        // The kernels' launch bounds are KL_V2_THREADS (128 unless defined otherwise).
        let f = io.dev.function(&SOFTMAX, &name)?;
        let most = f
            .get_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )
            .map_err(|e| crate::error::Error::driver("cuFuncGetAttribute", e))?;
        if threads as i32 > most {
            return Err(unsupported(
                "v2_warp_row",
                format!(
                    "KERNLAB_V2=threads={threads}, but {name} was compiled for at most {most} \
                     threads a block: set KERNLAB_NVRTC_DEFINES=KL_V2_THREADS={threads} too"
                ),
            ));
        }
    }
    launch_rows(io, &r, p, name, cfg)
}

/// v2's threads a block: 128 (four rows of a warp, or more of W lanes).
pub const V2_THREADS: u32 = 128;

/// v2's threads a block, from `KERNLAB_V2`'s `threads=N` (experiments: N a power of two from
/// 32 to 1024, with the kernels compiled for it by `KERNLAB_NVRTC_DEFINES=KL_V2_THREADS=N`);
/// [`V2_THREADS`] unset, or for any other value (with a warning).
fn v2_threads() -> u32 {
    static THREADS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    tuning_from_env(&THREADS, "KERNLAB_V2", |spec| {
        match tuning_pairs(spec).find(|&(k, _, _)| k == "threads") {
            None => V2_THREADS,
            Some((_, _, Some(n))) if (32..=1024).contains(&n) && n.is_power_of_two() => n as u32,
            Some((_, v, _)) => {
                stderr_line!(
                    "kernlab: KERNLAB_V2: ignoring threads={v} (expected a power of two from 32 to 1024)"
                );
                V2_THREADS
            }
        }
    })
}

/// `KERNLAB_V2=scalar` (experiments): v2 takes its scalar form (one element a slot, more lanes
/// a row) also for rows that move 16-byte packs, where that form holds them (≤ 256 columns).
fn v2_forced_scalar() -> bool {
    static FORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    tuning_from_env(&FORCED, "KERNLAB_V2", |spec| {
        spec.split(',').any(|kv| kv.trim() == "scalar")
    })
}

/// v2's lanes per row and kernel suffix for rows of `slots` slots: W = 4, 8 or 16 lanes of
/// one slot for rows of up to 16 slots (several rows per warp), else a warp of K slots a lane.
pub fn v2_shape(slots: usize) -> Option<(usize, String)> {
    if slots <= 16 {
        let w = slots.next_power_of_two().max(4);
        return Some((w, format!("w{w}")));
    }
    KS.iter()
        .copied()
        .find(|&k| 32 * k >= slots)
        .map(|k| (32, format!("k{k}")))
}

/// v3: one block per row. K slots per thread by [`v3_slots_per_thread`] (1 or 2 for rows of
/// at most 64 slots, 4 — four 16-byte loads in flight — when that needs at most 1024 threads,
/// else 8); threads = the slots the row needs / K, rounded up to a warp. Small blocks let several rows share an SM, so one row's loads overlap another's
/// reductions (one 1024-thread block per row with a slot each reached only 2.9 TB/s at
/// 8192×4096 f32: see docs/perf-notes.md).
///
/// Rows that are not pack-aligned but equally misaligned in x and y (contiguous rows of an odd
/// width) take the shifted form: the same 16-byte packs, aligned to memory, each row's first and
/// last moved lane by lane; one slot more a row at most ([`v3_max_cols_shift`]).
pub fn run_v3_block_regs(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let shift = !r.vec && peelable(&r, &io);
    let (slots, most) = if r.vec {
        (r.cols / r.pack, v3_max_cols(x.dtype(), true))
    } else if shift {
        (v3_shift_slots(r.cols, r.pack), v3_max_cols_shift(x.dtype()))
    } else {
        (r.cols, v3_max_cols(x.dtype(), false))
    };
    let k = v3_slots_per_thread(slots).ok_or_else(|| too_wide("v3_block_regs", r.cols, most))?;
    let k = v3_forced_k(slots).unwrap_or(k);
    let threads = (slots.div_ceil(k).div_ceil(32) * 32).clamp(32, 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (r.rows as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let form = if shift { "shift" } else { kind(r.vec) };
    let name = format!("softmax_v3_block_regs_{form}_k{k}_{}", x.dtype());
    launch_rows(io, &r, p, name, cfg)
}

/// The packs v3's shifted form gives a row of `cols` columns that starts up to `pack − 1`
/// elements past a 16-byte boundary: enough for the worst start.
pub fn v3_shift_slots(cols: usize, pack: usize) -> usize {
    (cols + pack - 1).div_ceil(pack)
}

/// `KERNLAB_V3=k=N` (experiments): v3 takes N slots a thread (1, 2, 4 or 8) wherever that
/// needs at most 1024 threads; elsewhere, or unset, [`v3_slots_per_thread`]'s choice. Any other
/// value is ignored with a warning.
fn v3_forced_k(slots: usize) -> Option<usize> {
    static FORCED: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    let forced = *FORCED.get_or_init(|| {
        match v3_parse_k(&std::env::var("KERNLAB_V3").unwrap_or_default())? {
            Ok(k) => Some(k),
            Err(v) => {
                stderr_line!("kernlab: KERNLAB_V3: ignoring k={v} (expected 1, 2, 4 or 8)");
                None
            }
        }
    });
    forced.filter(|&k| slots.div_ceil(k) <= 1024)
}

/// `KERNLAB_V3`'s `k=N`: `None` without a `k` setting, else N where it is 1, 2, 4 or 8, or the
/// value given where it is not.
fn v3_parse_k(spec: &str) -> Option<std::result::Result<usize, String>> {
    let (_, v, k) = tuning_pairs(spec).find(|&(k, _, _)| k == "k")?;
    Some(k.filter(|k| KS.contains(k)).ok_or_else(|| v.to_string()))
}

/// K (slots per thread) for v3: 4 — four loads in flight — unless the row is so short that
/// a warp would then idle (1 or 2), or so long that 4 would need more than 1024 threads (8);
/// `None` when even 8 would.
pub fn v3_slots_per_thread(slots: usize) -> Option<usize> {
    if slots.div_ceil(8) > 1024 {
        return None;
    }
    if slots.div_ceil(4) > 1024 {
        return Some(8);
    }
    Some(match slots {
        0..=32 => 1,
        33..=64 => 2,
        _ => 4,
    })
}

/// v4: one block per row (up to 1024 threads), any width.
pub fn run_v4_online(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    // Rows that are not pack-aligned but equally misaligned in x and y (contiguous rows of an
    // odd width) take the peeled kernel: scalar head and tail, 16-byte packs between.
    let peel = !r.vec && r.cols >= 4 * r.pack && peelable(&r, &io);
    let width = if r.vec || peel { r.pack } else { 1 };
    let threads = (r.cols.div_ceil(width).div_ceil(32) * 32).clamp(32, 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (r.rows as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let name = if peel {
        format!("softmax_v4_online_peel_{}", x.dtype())
    } else {
        format!("softmax_v4_online_{}_{}", kind(r.vec), x.dtype())
    };
    launch_rows(io, &r, p, name, cfg)
}

/// v5's shape for a row of `slots` packs: (cluster size C, threads per CTA, K slots per
/// thread). The smallest power-of-two cluster whose CTAs hold their share in 256 threads × 8
/// slots (32 KB of packs: small CTAs, several rows per SM); past C = 16, CTAs of up to 1024
/// threads. (Clusters of 8 larger CTAs before 16 small ones measured no better: f32
/// 1024×262144 2221 against 2156 GB/s, bf16 2849 against 2953.) `None` when a row is wider
/// than 16 CTAs × 1024 threads × 8 slots.
pub fn v5_config(slots: usize) -> Option<(usize, usize, usize)> {
    let pick = |per: usize, max_threads: usize| -> Option<(usize, usize)> {
        let k = if per > 1024 {
            8
        } else if per > 256 {
            4
        } else {
            2
        };
        let threads = (per.div_ceil(k).div_ceil(32) * 32).max(32);
        (threads <= max_threads).then_some((threads, k))
    };
    for c in [1usize, 2, 4, 8, 16] {
        if let Some((t, k)) = pick(slots.div_ceil(c), 256) {
            return Some((c, t, k));
        }
    }
    pick(slots.div_ceil(16), 1024).map(|(t, k)| (16, t, k))
}

/// Widest row v5 holds on chip (elements).
pub fn v5_max_cols(dt: DType, vec: bool) -> usize {
    16 * 1024 * 8 * if vec { 16 / dt.size() } else { 1 }
}

/// v5: a thread-block cluster per row (Hopper), the row in the cluster's registers.
pub fn run_v5_cluster(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    if io.dev.props.compute_capability.0 < 9 {
        return Err(unsupported(
            "v5_cluster",
            format!(
                "thread-block clusters need sm_90 or newer (this is {})",
                io.dev.arch
            ),
        ));
    }
    let width = if r.vec { r.pack } else { 1 };
    let (c, threads, k) = v5_config(r.cols.div_ceil(width))
        .ok_or_else(|| too_wide("v5_cluster", r.cols, v5_max_cols(x.dtype(), r.vec)))?;
    let name = format!("softmax_v5_cluster_{}_k{k}_{}", kind(r.vec), x.dtype());
    let f = io.dev.function(&SOFTMAX, &name)?;
    let grid = (r.rows as u64) * c as u64;
    if grid > i32::MAX as u64 {
        return Err(unsupported(
            "v5_cluster",
            format!("{} rows × {c} CTAs a row: over the grid limit", r.rows),
        ));
    }
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    if c > 1 && super::launch::max_active_clusters(&io.dev, &f, &name, cfg, c as u32)? == 0 {
        return Err(unsupported(
            "v5_cluster",
            format!(
                "this GPU cannot place a cluster of {c} CTAs of {threads} threads (use v8_onchip or auto)"
            ),
        ));
    }
    launch_rows_cluster(&io, &r, p, &f, &name, cfg, c)
}

/// Launch a row kernel that takes a cluster size after the (x, y, rows, cols, ldx, ldy, lg)
/// arguments (v5, v8) in clusters of `c` CTAs.
fn launch_rows_cluster(
    io: &CudaIo,
    r: &Rows,
    p: &Params,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    cfg: LaunchConfig,
    c: usize,
) -> Result<()> {
    use cudarc::driver::DevicePtr;
    let (xp, _gx) = io.x.device_ptr(&io.dev.stream);
    let (yp, _gy) = io.y.device_ptr(&io.dev.stream);
    let (mut xp, mut yp) = (xp, yp);
    let (mut rows, mut cols, mut ldx, mut ldy, mut lg, mut cs) = (
        r.rows as i32,
        r.cols as i32,
        r.ldx,
        r.ldy,
        p.log_softmax as i32,
        c as i32,
    );
    let mut args: [*mut std::ffi::c_void; 8] = [
        &mut xp as *mut _ as *mut _,
        &mut yp as *mut _ as *mut _,
        &mut rows as *mut _ as *mut _,
        &mut cols as *mut _ as *mut _,
        &mut ldx as *mut _ as *mut _,
        &mut ldy as *mut _ as *mut _,
        &mut lg as *mut _ as *mut _,
        &mut cs as *mut _ as *mut _,
    ];
    super::launch::launch_cluster(&io.dev, f, name, cfg, c as u32, &mut args)
}

pub fn symbols_v5(dt: DType) -> Vec<String> {
    [2, 4, 8]
        .iter()
        .flat_map(|k| ["vec", "scalar"].map(|v| format!("softmax_v5_cluster_{v}_k{k}_{dt}")))
        .collect()
}

/// v6's CTAs have at most this many threads, each holding [`V6_K`] slots: 64 KB of a row
/// per CTA, two CTAs per SM (64 registers a thread).
pub const V6_THREADS: usize = 512;
pub const V6_K: usize = 8;
/// The fewest slots a v6 CTA is given when rows are split finer to fill the GPU: one warp's
/// eight slots (4 KB of packs); finer than that the merge costs more than it spreads.
const V6_MIN_CHUNK: usize = 32 * V6_K;

/// v6's shape for rows of `slots` slots (16-byte packs, or elements on the scalar path):
/// (CTAs per row G, threads per CTA), given `resident`, how many CTAs of [`V6_THREADS`]
/// threads the GPU holds at once. G is the fewest CTAs that hold a row in registers, raised
/// until the groups of G fill the GPU when there are few rows. `None` when a row is wider
/// than every resident CTA together holds.
pub fn v6_config(slots: usize, rows: usize, resident: usize) -> Option<(usize, usize)> {
    let slots = slots.max(1);
    let mut g = slots.div_ceil(V6_THREADS * V6_K);
    if g > resident {
        return None;
    }
    if rows * g < resident {
        let fill = resident / rows.max(1);
        g = g.max(fill.min(slots.div_ceil(V6_MIN_CHUNK))).min(resident);
    }
    let chunk = slots.div_ceil(g);
    let threads = (chunk.div_ceil(V6_K).div_ceil(32) * 32).clamp(32, V6_THREADS);
    Some((g, threads))
}

/// v6: a row split across G co-resident CTAs, the row in their registers, (max, sum)
/// exchanged through global memory; a persistent cooperative grid of groups of G CTAs walks
/// the rows.
pub fn run_v6_split(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    // Rows equally misaligned in x and y (odd widths) take the packed kernel with a scalar
    // head and tail, as v4's peeled kernel does.
    let packed = peelable(&r, &io);
    let width = if packed { r.pack } else { 1 };
    let slots = r.cols.div_ceil(width);
    let name = v6_symbol(x.dtype(), packed);
    let most = v6_resident(&io.dev, &name, V6_THREADS)?;
    let (g, threads) = v6_config(slots, r.rows, most).ok_or_else(|| unsupported(
        "v6_split",
        format!(
            "rows of {} columns are wider than the {} all {most} resident CTAs hold in registers (use v4_online or auto)",
            r.cols,
            most * V6_THREADS * V6_K * width
        ),
    ))?;
    let groups = (v6_resident(&io.dev, &name, threads)? / g)
        .min(r.rows)
        .max(1);
    let grid = groups * g;
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    launch_split(io, &r, p, name, cfg, g, "softmax v6 workspace", 0)
}

/// Launch a split-row kernel taking v6's arguments (the row arguments, G, the workspace's
/// header and slots) cooperatively: the exchange waits on peers, so every CTA of `cfg`'s grid
/// must be resident. Two slots per CTA, one per row parity, then `extra_slots` more 16-byte
/// slots (v9's smpair places).
#[allow(clippy::too_many_arguments)]
fn launch_split(
    io: CudaIo,
    r: &Rows,
    p: &Params,
    name: String,
    cfg: LaunchConfig,
    g: usize,
    workspace: &'static str,
    extra_slots: usize,
) -> Result<()> {
    let (rows, cols, lg, gi) = (r.rows as i32, r.cols as i32, p.log_softmax as i32, g as i32);
    let dev = io.dev.clone();
    let grid = cfg.grid_dim.0 as usize;
    with_split_workspace(&dev, workspace, 2 * grid + extra_slots, |hdr, slots| {
        crate::launch_cooperative!(
            io.dev,
            &SOFTMAX,
            name,
            cfg,
            [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &gi, hdr, slots]
        );
        Ok(())
    })
}

pub fn symbols_v6(dt: DType) -> Vec<String> {
    [true, false].iter().map(|&p| v6_symbol(dt, p)).collect()
}

/// v8's CTAs: 1024 threads holding [`V8_K`] 16-byte packs each in registers (128 KB), the
/// rest of their part in shared memory; one CTA an SM at this size (smaller shares take fewer
/// threads, and [`v8_fill_cta`] sizes CTAs for two or more an SM).
pub const V8_THREADS: usize = 1024;
pub const V8_K: usize = 8;
/// Cluster sizes v8 tries, smallest first (past 8 they are non-portable; the H200 runs 16).
const V8_CLUSTERS: [usize; 5] = [1, 2, 4, 8, 16];

/// The 16-byte packs one v8 CTA holds: its registers' and what fits in `smem_optin` bytes of
/// shared memory (the device's opt-in maximum a block, less 1 KB for the kernel's own).
pub fn v8_cta_packs(smem_optin: usize) -> usize {
    V8_THREADS * V8_K + smem_optin.saturating_sub(1024) / 16
}

/// v8's shape for rows of at most `packs` 16-byte packs: (cluster size C, threads a CTA,
/// dynamic shared memory bytes a CTA) — the smallest C whose CTAs hold their share, at most
/// `max_c`; a share that fits in registers takes only the threads it needs (a warp's multiple),
/// so narrower rows run several CTAs an SM. `None` when the row is wider than `max_c` CTAs hold.
pub fn v8_config(packs: usize, smem_optin: usize, max_c: usize) -> Option<(usize, usize, usize)> {
    let cap = v8_cta_packs(smem_optin);
    let c = V8_CLUSTERS
        .iter()
        .copied()
        .filter(|&c| c <= max_c)
        .find(|&c| packs.div_ceil(c) <= cap)?;
    let share = packs.div_ceil(c);
    let threads = (share.div_ceil(V8_K).div_ceil(32) * 32).clamp(32, V8_THREADS);
    Some((c, threads, share.saturating_sub(V8_THREADS * V8_K) * 16))
}

/// What bounds the CTAs an SM holds at once, as [`v8_fill_cta`] counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmLimits {
    /// 32-bit registers an SM.
    pub regs: usize,
    /// Threads an SM.
    pub threads: usize,
    /// CTAs an SM.
    pub ctas: usize,
    /// Shared memory a CTA may opt in to, bytes (an SM has 1 KB more).
    pub smem_optin: usize,
}

impl SmLimits {
    /// The H200's (and every sm_90 GPU's): 64 K registers, 2048 threads, 32 CTAs, 227 KB.
    pub const H200: SmLimits = SmLimits {
        regs: 65_536,
        threads: 2048,
        ctas: 32,
        smem_optin: 232_448,
    };

    pub fn of(props: &crate::device::cuda::DeviceProps) -> SmLimits {
        SmLimits {
            regs: props.regs_per_sm as usize,
            threads: props.max_threads_per_sm as usize,
            ctas: props.max_blocks_per_sm as usize,
            smem_optin: props.max_smem_per_block_optin,
        }
    }

    /// v8's CTAs of `threads` threads (64 registers each) and `smem` bytes of dynamic shared
    /// memory that fit an SM at once: bounded by its registers, its shared memory (1 KB more
    /// than the opt-in, 1.5 KB counted a CTA for the system's reserve and the kernel's own),
    /// its threads and its CTA limit.
    pub fn v8_ctas(&self, threads: usize, smem: usize) -> usize {
        (self.regs / (threads * 64))
            .min((self.smem_optin + 1024) / (smem + 1024 + 512))
            .min(self.threads / threads)
            .min(self.ctas)
    }
}

/// v8's CTA for a row one CTA holds, chosen to put the most rows on an SM at once (more rows'
/// loads in flight, and one row's reduction overlapping others' traffic): (threads, dynamic
/// shared memory bytes). Threads are a warp's multiple with [`V8_K`] packs each in registers
/// (64 registers a thread), the rest of the row in shared memory but at most as much as the
/// registers hold; CTAs an SM counted by [`SmLimits::v8_ctas`]. Ties go to more threads.
/// `None` when no such CTA holds the row.
pub fn v8_fill_cta(packs: usize, sm: SmLimits) -> Option<(usize, usize)> {
    let optin = sm.smem_optin;
    let mut best: Option<(usize, usize, usize)> = None;
    for t in (32..=V8_THREADS).step_by(32) {
        let in_regs = t * V8_K;
        if packs > 2 * in_regs {
            continue;
        }
        let smem = packs.saturating_sub(in_regs) * 16;
        if smem + 1024 > optin {
            continue;
        }
        let ctas = sm.v8_ctas(t, smem);
        if ctas == 0 {
            continue;
        }
        if best.is_none_or(|(c, _, _)| ctas >= c) {
            best = Some((ctas, t, smem));
        }
    }
    best.map(|(_, t, smem)| (t, smem))
}

/// The shares (16-byte packs a CTA) at which [`v8_wide16_cluster`] sizes 16-bit clusters for
/// two CTAs an SM: from three quarters of, up to, what two 512-thread CTAs an SM hold (eight
/// packs a thread in registers and as much again in shared memory).
pub const V8_WIDE16_SHARES: std::ops::RangeInclusive<usize> = 6144..=8192;

/// v8's cluster for 16-bit rows that need two or more CTAs (`needed`, the smallest cluster
/// that holds the row): 4 or 8 CTAs, the first whose share is in [`V8_WIDE16_SHARES`], sized
/// by [`v8_fill_cta`] for two CTAs an SM; `None` (the default shape) elsewhere. Measured on
/// the H200 (fifteenth session, `scripts/gpu-w16-68.sh`, 2^28 elements, two interleaved runs,
/// GB/s, against the same binary with the rule off): bf16 196608 (C = 4) 3668 / 3674 against
/// 3583 / 3584 (v8, C = 2), 262144 (C = 4) 3687 / 3678 against 3624 / 3617, 393216 (C = 8)
/// 3428 / 3428 against 3414 / 3425 (v9), 458752 (C = 8) 3509 / 3491 against 3369 / 3364 (v9),
/// 524288 (C = 8) 3512 / 3530 against 3418 / 3404 (v9); f16 262144 +1.6%, 524288 +4.3%.
/// Smaller shares lost (fourteenth session: 262144 at C = 8, a share of 4096, 3442 / 3433
/// against 3606 / 3604), as did 786432 at C = 8 (a share of 12288, one CTA an SM: 3192 against
/// v9's 3375); f32 gained nothing beyond 1.5% and keeps the default shape.
pub fn v8_wide16_cluster(packs: usize, needed: usize) -> Option<usize> {
    if needed < 2 {
        return None;
    }
    [4, 8]
        .into_iter()
        .find(|&c| c >= needed && V8_WIDE16_SHARES.contains(&packs.div_ceil(c)))
}

/// v8's CTAs under its f32 rule ([`v8_f32_cluster`]): 256 threads, four an SM.
pub const V8_F32_THREADS: usize = 256;
/// The smallest share (16-byte packs a CTA of eight) [`v8_f32_cluster`] takes: rows from
/// 8 × 3840 = 30720 packs (122880 f32 columns, up to 122883 with a peeled head and tail).
/// Below it the rule measured behind (twenty-fifth session, 2048 rows: 98304 3732
/// against 3996 GB/s, 100003 3660 against 3799, 90625 level).
pub const V8_F32_MIN_SHARE: usize = 3840;

/// v8's shape for f32 rows of `packs` 16-byte packs that need two CTAs (`needed`, the smallest
/// cluster that holds the row: 22657–45312 packs, about 90630–181250 columns, on the H200)
/// from 8 × [`V8_F32_MIN_SHARE`] packs: a cluster of eight CTAs of [`V8_F32_THREADS`] threads, four an
/// SM, so a row still spans two SMs (as two 1024-thread CTAs do) but each SM holds four of its
/// CTAs, each with eight packs a thread in registers and the rest of its share in shared
/// memory: (8, threads, dynamic shared memory bytes). `None` (the default shape) elsewhere,
/// and where four such CTAs do not fit an SM (past 44800 packs, 179200 f32 columns, on the
/// H200).
///
/// Measured on the H200 (twenty-fifth session, 2048 rows, one process a setting, GB/s, against
/// the default shape in the same run; docs/perf-notes.md): 131072 3949 against 3876 (and
/// 3932 / 3846, 3952 / 3890 in two other runs), 132096 3966 / 3852, 147456 3991 / 3936,
/// 163840 3914 / 3940, 179200 3929 / 3754; 1024×131072 3882 / 3820. Sized by [`v8_fill_cta`]
/// instead (three or five CTAs an SM where it differs, so a cluster spans three SMs) it ran
/// 2–7% behind outside 122880–131072.
pub fn v8_f32_cluster(packs: usize, needed: usize, sm: SmLimits) -> Option<(usize, usize, usize)> {
    if needed != 2 || packs < 8 * V8_F32_MIN_SHARE {
        return None;
    }
    let share = packs.div_ceil(8);
    let t = V8_F32_THREADS;
    let smem = share.saturating_sub(t * V8_K) * 16;
    (sm.v8_ctas(t, smem) >= 4 && smem + 1024 <= sm.smem_optin).then_some((8, t, smem))
}

/// v8's tuning, from `KERNLAB_V8` ("fill=0|1,cluster=N,threads=T,wide16=0|1,f32c8=0|1") for experiments: `fill`,
/// whether a CTA's threads are chosen by [`v8_fill_cta`] (the most CTAs an SM) instead of the
/// fewest that hold its share in registers — forced off or on, and with `fill=1` for clusters
/// too (by default only for one-CTA rows past 512 threads, [`V8Tuning::fill_for`]); `cluster`,
/// the cluster size forced up to N (a power of two, 2–16) where the row's smallest is below
/// it; `wide16=0` turns off the 16-bit cluster rule ([`v8_wide16_cluster`]) and `f32c8=0` the
/// f32 one ([`v8_f32_cluster`]), which either of the first two also overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct V8Tuning {
    pub fill: Option<bool>,
    pub cluster: Option<usize>,
    pub wide16: Option<bool>,
    pub f32c8: Option<bool>,
    /// With `cluster`: the threads a CTA (a warp's multiple up to 1024), the rest of each
    /// share in shared memory.
    pub threads: Option<usize>,
}

impl V8Tuning {
    pub fn parse(spec: &str) -> Self {
        let mut t = V8Tuning::default();
        for (k, _, n) in tuning_pairs(spec) {
            match (k, n) {
                ("fill", Some(n @ (0 | 1))) => t.fill = Some(n == 1),
                ("cluster", Some(n)) if V8_CLUSTERS[1..].contains(&n) => t.cluster = Some(n),
                ("wide16", Some(n @ (0 | 1))) => t.wide16 = Some(n == 1),
                ("f32c8", Some(n @ (0 | 1))) => t.f32c8 = Some(n == 1),
                ("threads", Some(n)) if n % 32 == 0 && (32..=V8_THREADS).contains(&n) => {
                    t.threads = Some(n)
                }
                _ => {}
            }
        }
        t
    }
    /// `KERNLAB_V8`'s settings, read once per process.
    pub fn from_env() -> Self {
        static T: std::sync::OnceLock<V8Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&T, "KERNLAB_V8", V8Tuning::parse)
    }
    /// Whether v8 sizes the CTAs of a `c`-CTA row by [`v8_fill_cta`], where the fewest threads
    /// that hold a share in registers are `threads`: by default for one-CTA rows past 512 threads
    /// (one CTA an SM). Measured on the H200 (4096 rows, tenth session, first of two interleaved
    /// runs, GB/s): f32 24577 3448 → 3924, 32769 3694 → 3901, 40001 3783 → 3790, bf16 40001
    /// 3282 → 3834. Where two or more CTAs an SM already fit it was mostly slower (f32 16385
    /// 3915 → 3803, bf16 4097 2930 → 2506), though f32 12345 gained (3543 → 3761).
    pub fn fill_for(&self, c: usize, threads: usize) -> bool {
        match self.fill {
            Some(f) => f,
            None => c == 1 && threads > 512,
        }
    }
    /// Whether the 16-bit cluster rule ([`v8_wide16_cluster`]) applies: unless `wide16=0`, or
    /// `fill` or `cluster` is set.
    pub fn wide16_rule(&self) -> bool {
        self.wide16 != Some(false) && self.fill.is_none() && self.cluster.is_none()
    }
    /// Whether the f32 cluster rule ([`v8_f32_cluster`]) applies: unless `f32c8=0`, or `fill`
    /// or `cluster` is set.
    pub fn f32_rule(&self) -> bool {
        self.f32c8 != Some(false) && self.fill.is_none() && self.cluster.is_none()
    }
}

/// v8's launch shape for rows of `packs` 16-byte packs (of 16-bit elements where `sixteen`) on
/// an SM of `sm`'s limits, clusters (up to 16) only where `hopper`: (cluster size C, threads a
/// CTA, dynamic shared memory bytes a CTA). [`v8_config`]'s, with the 16-bit cluster rule
/// ([`v8_wide16_cluster`]) or the f32 one ([`v8_f32_cluster`]) where `tuning` leaves them on,
/// else `tuning`'s forced cluster size (where larger than the row needs), its fill rule
/// ([`V8Tuning::fill_for`]) and, with a forced size, its threads. `None` when the row is wider
/// than the largest cluster holds.
pub fn v8_shape(
    packs: usize,
    sm: SmLimits,
    hopper: bool,
    sixteen: bool,
    tuning: V8Tuning,
) -> Option<(usize, usize, usize)> {
    let (c, threads, smem) = v8_config(packs, sm.smem_optin, if hopper { 16 } else { 1 })?;
    if hopper && sixteen && tuning.wide16_rule() {
        if let Some(c) = v8_wide16_cluster(packs, c) {
            if let Some((t, m)) = v8_fill_cta(packs.div_ceil(c), sm) {
                return Some((c, t, m));
            }
        }
    }
    if hopper && !sixteen && tuning.f32_rule() {
        if let Some(shape) = v8_f32_cluster(packs, c, sm) {
            return Some(shape);
        }
    }
    let (c, threads, smem) = match tuning.cluster {
        Some(n) if hopper && n > c => v8_config(packs.div_ceil(n), sm.smem_optin, 1)
            .map_or((c, threads, smem), |(_, t, m)| (n, t, m)),
        _ => (c, threads, smem),
    };
    let (threads, smem) = if tuning.fill_for(c, threads) {
        v8_fill_cta(packs.div_ceil(c), sm).unwrap_or((threads, smem))
    } else {
        (threads, smem)
    };
    // `threads=N` with a forced cluster that took effect: N threads a CTA, where the rest of
    // the share fits in shared memory (threads past the share hold nothing).
    if let (Some(t), true) = (tuning.threads, tuning.cluster == Some(c)) {
        let m = packs.div_ceil(c).saturating_sub(t * V8_K) * 16;
        if hopper && m + 1024 <= sm.smem_optin {
            return Some((c, t, m));
        }
    }
    Some((c, threads, smem))
}

/// The widest row v8 holds on a device (elements): 16 CTAs' worth on sm_90 (clusters), one
/// CTA's elsewhere.
pub fn v8_max_cols(dt: DType, props: &crate::device::cuda::DeviceProps) -> usize {
    let c = if props.compute_capability.0 >= 9 {
        16
    } else {
        1
    };
    c * v8_cta_packs(props.max_smem_per_block_optin) * (16 / dt.size())
}

/// v8: a row per CTA (or per cluster of C CTAs on sm_90), held in registers and shared
/// memory; clusters merge (max, sum) through DSMEM.
pub fn run_v8_onchip(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let refuse = |why: String| unsupported("v8_onchip", why);
    require_peelable("v8_onchip", &r, &io)?;
    let props = &io.dev.props;
    let hopper = props.compute_capability.0 >= 9;
    let packs = r.cols / r.pack;
    let sm = SmLimits::of(props);
    let sixteen = x.dtype().size() == 2;
    let tuning = V8Tuning::from_env();
    let (c, threads, smem) = v8_shape(packs, sm, hopper, sixteen, tuning).ok_or_else(|| {
        refuse(format!(
            "rows of {} columns are wider than the {} it holds on chip{}",
            r.cols,
            v8_max_cols(x.dtype(), props),
            if hopper {
                " (16 CTAs' registers and shared memory; use v6_split or auto)"
            } else {
                " (one CTA's registers and shared memory: clusters need sm_90; use v6_split or auto)"
            }
        ))
    })?;
    let grid = r.rows as u64 * c as u64;
    if grid > i32::MAX as u64 {
        return Err(refuse(format!(
            "{} rows × {c} CTAs a row: over the grid limit",
            r.rows
        )));
    }
    // Rows with no scalar head or tail run the kernel built without that code (PEEL = false):
    // with it, bf16 4096×65536 and ×131072 ran 2.3% and 3.6% slower (docs/perf-notes.md,
    // nineteenth session).
    let name = if r.vec {
        format!("softmax_v8_packed_{}", x.dtype())
    } else {
        format!("softmax_v8_onchip_{}", x.dtype())
    };
    let f = io.dev.function(&SOFTMAX, &name)?;
    super::launch::allow_dynamic_smem(&io.dev, &f, &name, smem)?;
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (threads as u32, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    if c == 1 {
        let (rows, cols, lg, cs) = (r.rows as i32, r.cols as i32, p.log_softmax as i32, 1i32);
        note_row_launch(|| RowLaunch::new(&name, cfg, &r, lg, Some(cs)));
        launch!(
            io.dev,
            &SOFTMAX,
            name,
            cfg,
            [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &cs]
        );
        return Ok(());
    }
    if super::launch::max_active_clusters(&io.dev, &f, &name, cfg, c as u32)? == 0 {
        return Err(refuse(format!(
            "this GPU cannot place a cluster of {c} CTAs of {threads} threads and {} KB of shared memory each (use v6_split or auto)",
            smem >> 10
        )));
    }
    launch_rows_cluster(&io, &r, p, &f, &name, cfg, c)
}

pub fn symbols_v8(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v8_onchip_{dt}"),
        format!("softmax_v8_packed_{dt}"),
    ]
}

/// v9's CTAs: [`V9_THREADS`] / `per_sm` threads holding [`V9_K`] 16-byte packs each in
/// registers, the rest of their part in shared memory; one or two CTAs an SM.
pub const V9_THREADS: usize = 1024;
pub const V9_K: usize = 8;
/// v9 runs its ping-pong form (sm_90 and later) from this many CTAs a row (H200: +3% at f32
/// 1 Mi, G = 33, and +10% at 4 Mi, G = 132; −3% at 262144, G = 8; docs/perf-notes.md).
pub const V9_PINGPONG_MIN_G: usize = 16;
/// The fewest packs a v9 CTA is given when rows are split finer to fill the GPU (4 KB).
const V9_MIN_PART: usize = 256;

/// v9's shape: G CTAs a row, `groups` groups of G in the persistent grid, threads and
/// dynamic shared memory bytes a CTA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V9Config {
    pub g: usize,
    pub groups: usize,
    pub threads: usize,
    pub smem: usize,
}

/// v9's shape for `rows` rows of `packs` 16-byte packs, CTAs of at most `threads` threads and
/// `smem` bytes of dynamic shared memory, `resident` of them on the GPU at once. A part keeps
/// at most `pref` bytes in shared memory while the row fits that way (parts at most half in
/// shared memory measured faster on the H200, docs/perf-notes.md), else up to `smem`. G starts
/// as the fewest CTAs that hold a row; the groups of G that fit are then given the whole GPU
/// (G raised to `resident / groups`, parts of at least `V9_MIN_PART` packs), so no SM
/// idles for want of a whole row's worth of CTAs. A part that fits in registers takes only the
/// threads it needs (a warp's multiple). `None` when a row is wider than every resident CTA
/// together holds.
pub fn v9_config(
    packs: usize,
    rows: usize,
    threads: usize,
    smem: usize,
    pref: usize,
    resident: usize,
) -> Option<V9Config> {
    let packs = packs.max(1);
    let regs = threads * V9_K;
    let pref = pref.min(smem);
    let smem = if packs.div_ceil(regs + pref / 16) <= resident {
        pref
    } else {
        smem
    };
    let g_min = packs.div_ceil(regs + smem / 16);
    if g_min > resident || resident == 0 {
        return None;
    }
    let groups = (resident / g_min).min(rows.max(1));
    let g = (resident / groups)
        .min(packs.div_ceil(V9_MIN_PART))
        .max(g_min);
    let share = packs.div_ceil(g);
    let t = (share.div_ceil(V9_K).div_ceil(32) * 32).clamp(32, threads);
    Some(V9Config {
        g,
        groups,
        threads: t,
        smem: share.saturating_sub(t * V9_K) * 16,
    })
}

/// An experiment's tuning from the environment variable `var`, parsed by `parse` once per
/// process and kept in `cell` (the launchers ask on every call).
fn tuning_from_env<T: Copy>(
    cell: &'static std::sync::OnceLock<T>,
    var: &str,
    parse: fn(&str) -> T,
) -> T {
    *cell.get_or_init(|| parse(&std::env::var(var).unwrap_or_default()))
}

/// A tuning spec's comma-separated `key=value` settings (`KERNLAB_V3`, `_V7` to `_V10`): each key and value
/// trimmed (a bare key has the value ""), with the value as a count where it is one.
fn tuning_pairs(spec: &str) -> impl Iterator<Item = (&str, &str, Option<usize>)> {
    spec.split(',').map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v = v.trim();
        (k.trim(), v, v.parse().ok())
    })
}

/// A tuning setting's on/off value: a count (0 is off), or true|false, on|off, yes|no in any
/// case; `None` for anything else.
fn switch(v: &str, n: Option<usize>) -> Option<bool> {
    match (n, v.to_ascii_lowercase().as_str()) {
        (Some(n), _) => Some(n != 0),
        (None, "true" | "on" | "yes") => Some(true),
        (None, "false" | "off" | "no") => Some(false),
        _ => None,
    }
}

/// v9's tuning, from `KERNLAB_V9` ("per_sm=N,smem_kb=M,pp=0|1") for experiments:
/// `per_sm` CTAs an SM (1 or 2, each with its share of the SM's shared memory; default 2: one
/// 1024-thread CTA an SM measured 10–25% slower on the H200); `smem_kb`, the shared memory a
/// part prefers (KiB; 0: all it can have; default: as much as its registers hold, 64 KiB at
/// two an SM); `pp`, the ping-pong form forced on or off (default: by G; besides 0|1 it
/// takes off|on, false|true and no|yes); `smpair`, the ping-pong form with SM-paired places
/// forced on wherever it can run or off (default: by the groups, [`V9Tuning::smpair_for`];
/// the same on/off words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V9Tuning {
    pub per_sm: usize,
    pub smem_kb: Option<usize>,
    /// Ping-pong (half the groups read while the other half exchange and write): forced on
    /// or off; `None` lets [`V9Tuning::pingpong_for`] decide by G.
    pub pingpong: Option<bool>,
    /// The smpair form where the ping-pong form runs and the grid allows it (exactly two CTAs
    /// on every SM, an even number of groups): each CTA takes its group and rank from its SM
    /// so that an SM's two CTAs are ping-pong partners. Forced on or off; `None` lets
    /// [`V9Tuning::smpair_for`] decide by the groups.
    pub smpair: Option<bool>,
}

impl V9Tuning {
    pub fn parse(spec: &str) -> Self {
        let mut t = V9Tuning {
            per_sm: 2,
            smem_kb: None,
            pingpong: None,
            smpair: None,
        };
        for (k, v, n) in tuning_pairs(spec) {
            match (k, n) {
                ("per_sm", Some(n)) => t.per_sm = n.clamp(1, 2),
                ("smem_kb", Some(n)) => t.smem_kb = Some(n),
                ("pp", _) => {
                    if let Some(b) = switch(v, n) {
                        t.pingpong = Some(b);
                    }
                }
                ("smpair", _) => {
                    if let Some(b) = switch(v, n) {
                        t.smpair = Some(b);
                    }
                }
                _ => {}
            }
        }
        t
    }
    /// `KERNLAB_V9`'s settings, read once per process.
    pub fn from_env() -> Self {
        static T: std::sync::OnceLock<V9Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&T, "KERNLAB_V9", V9Tuning::parse)
    }
    /// Whether groups of `g` CTAs, `groups` of them, run v9's ping-pong form: only where
    /// there is a pair of groups to alternate and rows are split; by default from
    /// [`V9_PINGPONG_MIN_G`] CTAs a row.
    pub fn pingpong_for(&self, g: usize, groups: usize) -> bool {
        g > 1 && groups >= 2 && self.pingpong.unwrap_or(g >= V9_PINGPONG_MIN_G)
    }
    /// Whether the ping-pong form of `groups` groups asks for the smpair form (which the
    /// launcher then runs where the grid allows): by default with two groups only. On the
    /// H200 (twenty-third session, docs/perf-notes.md), against plain ping-pong, it ran +1–3%
    /// at f32 4 Mi columns (2 groups of 132) in three runs, level at 8 groups (f32 and bf16
    /// 1 Mi, bf16 2 Mi) and at f32 2 Mi (4 groups), and 1.6% slower at bf16 4 Mi (4 groups).
    pub fn smpair_for(&self, groups: usize) -> bool {
        self.smpair.unwrap_or(groups == 2)
    }
    /// The shared memory a part of a CTA of `threads` threads prefers, in bytes.
    pub fn pref_bytes(&self, threads: usize) -> usize {
        match self.smem_kb {
            None => threads * V9_K * 16,
            Some(0) => usize::MAX,
            Some(kb) => kb << 10,
        }
    }
}

/// The dynamic shared memory a v9 CTA asks for with `per_sm` CTAs an SM, on a device whose
/// block opt-in maximum is `optin` bytes (as v7: a share, less 3 KB for what the kernel and
/// the driver keep, with one an SM 1 KB).
pub fn v9_smem(optin: usize, per_sm: usize) -> usize {
    if per_sm <= 1 {
        optin.saturating_sub(1024)
    } else {
        (optin / per_sm).saturating_sub(3072)
    }
}

/// v9's largest CTA (threads, dynamic shared memory) and how many of those the GPU holds at
/// once (the driver's occupancy figure × SMs, for its plain kernel), with the shared-memory
/// opt-in set.
fn v9_resident(dev: &crate::device::CudaDevice, dt: DType) -> Result<(usize, usize, usize)> {
    let name = format!("softmax_v9_gridsync_{dt}");
    let f = dev.function(&SOFTMAX, &name)?;
    let per_sm = V9Tuning::from_env().per_sm;
    let (threads, smem) = (
        V9_THREADS / per_sm,
        v9_smem(dev.props.max_smem_per_block_optin, per_sm),
    );
    let n = smem_blocks_per_sm(dev, &f, &name, threads, smem)?.min(per_sm)
        * dev.props.sm_count as usize;
    Ok((threads, smem, n))
}

/// The widest row v9 holds on this device (elements): every resident CTA's registers and
/// shared memory. `None` when the kernel cannot be loaded or the occupancy query fails.
pub fn v9_max_cols(dev: &crate::device::CudaDevice, dt: DType) -> Option<usize> {
    let (threads, smem, n) = v9_resident(dev, dt).ok()?;
    Some(v9_cols_held(n, threads, smem, 16 / dt.size()))
}

/// The columns `resident` v9 CTAs of `threads` threads and `smem` bytes of shared memory hold
/// together, at `pack` elements a 16-byte pack.
fn v9_cols_held(resident: usize, threads: usize, smem: usize, pack: usize) -> usize {
    resident * (threads * V9_K + smem / 16) * pack
}

/// v9: a row split across G co-resident CTAs (cooperative launch), each holding its part in
/// registers and shared memory as v8 does; (max, sum) exchanged through global memory as v6
/// does; a persistent grid of groups of G CTAs walks the rows.
pub fn run_v9_gridsync(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    run_v9_tuned(p, x, y, V9Tuning::from_env(), false)
}

/// v9 in its plain form wherever it runs (for tests and experiments).
pub fn run_v9_plain(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    run_v9_form(p, x, y, false)
}

/// v9 in its ping-pong form wherever that can run: sm_90 or later, rows split across CTAs,
/// two groups or more (for tests and experiments).
pub fn run_v9_pingpong(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    run_v9_form(p, x, y, true)
}

/// v9's smpair form (ping-pong with SM-paired places), refused where it cannot run: before
/// sm_90, rows with a scalar head or tail (odd widths), rows in one CTA, an odd number of
/// groups, or a grid that is not two CTAs on every SM (for tests and experiments).
pub fn run_v9_smpair(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let t = V9Tuning {
        pingpong: Some(true),
        smpair: Some(true),
        ..V9Tuning::from_env()
    };
    run_v9_tuned(p, x, y, t, true)
}

/// v9 with its ping-pong form forced on or off. A forced form is that form: KERNLAB_V9's
/// `smpair` applies only where the launcher chooses (run_v9_gridsync).
fn run_v9_form(p: &Params, x: &Tensor, y: &mut Tensor, pingpong: bool) -> Result<()> {
    let tuning = V9Tuning {
        pingpong: Some(pingpong),
        smpair: Some(false),
        ..V9Tuning::from_env()
    };
    run_v9_tuned(p, x, y, tuning, false)
}

/// v9 as `tuning` has it; with `only_smpair`, refused unless that is the smpair form.
fn run_v9_tuned(
    p: &Params,
    x: &Tensor,
    y: &mut Tensor,
    tuning: V9Tuning,
    only_smpair: bool,
) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let refuse = |why: String| unsupported("v9_gridsync", why);
    require_peelable("v9_gridsync", &r, &io)?;
    let (threads, smem, resident) = v9_resident(&io.dev, x.dtype())?;
    let pref = tuning.pref_bytes(threads);
    let c = v9_config(r.cols / r.pack, r.rows, threads, smem, pref, resident).ok_or_else(|| {
        refuse(format!(
            "rows of {} columns are wider than the {} all {resident} resident CTAs hold in registers and shared memory (use v4_online or auto)",
            r.cols,
            v9_cols_held(resident, threads, smem, r.pack)
        ))
    })?;
    let grid = c.groups * c.g;
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (c.threads as u32, 1, 1),
        shared_mem_bytes: c.smem as u32,
    };
    // The driver's count of kernel `sym`'s CTAs an SM holds at this size; `None` if it cannot
    // be loaded or asked.
    let per_sm = |sym: &str| -> Option<usize> {
        let f = io.dev.function(&SOFTMAX, sym).ok()?;
        smem_blocks_per_sm(&io.dev, &f, sym, c.threads, c.smem).ok()
    };
    let sms = io.dev.props.sm_count as usize;
    // Whether the driver confirms the whole grid resident with kernel `sym` (the grid waits on
    // itself); false if it cannot be loaded or asked.
    let resident_with = |sym: &str| per_sm(sym).is_some_and(|n| n * sms >= grid);
    let dt = x.dtype();
    // The ping-pong form (built for sm_90 and later; measured on the H200) has the same launch
    // bounds. It runs only where the driver confirms the same grid is resident with it; if it
    // cannot be loaded or set up, the plain form runs.
    let pp = io.dev.props.compute_capability.0 >= 9 && tuning.pingpong_for(c.g, c.groups);
    // The smpair form also needs rows with no scalar (it is built without the peel: aligned
    // rows of whole packs), exactly two CTAs on every SM (a grid of twice the SMs that the
    // driver holds at two an SM and no more, so the cooperative launch puts two on each) and an
    // even number of groups (each lower place's partner in the upper half).
    let wanted = pp && tuning.smpair_for(c.groups) && r.vec;
    let occupancy = wanted
        .then(|| per_sm(&format!("softmax_v9_smpair_{dt}")))
        .flatten();
    let form = if wanted && v9_smpair_fits(grid, c.groups, sms, occupancy) {
        "smpair"
    } else if pp && resident_with(&format!("softmax_v9_pingpong_{dt}")) {
        "pingpong"
    } else {
        "gridsync"
    };
    if only_smpair && form != "smpair" {
        return Err(refuse(format!(
            "the smpair form needs sm_90 or later, aligned rows of whole 16-byte packs split \
             across CTAs in an even number of groups, and two CTAs on every SM; here {} rows \
             of {} columns ({}) in {} groups of {} CTAs on {} SMs, {} CTAs an SM at most \
             (compute capability {}.{}), take the {form} form",
            r.rows,
            r.cols,
            if r.vec {
                "whole packs"
            } else {
                "scalars to peel"
            },
            c.groups,
            c.g,
            io.dev.props.sm_count,
            occupancy.map_or("unknown".into(), |n| n.to_string()),
            io.dev.props.compute_capability.0,
            io.dev.props.compute_capability.1
        )));
    }
    let name = format!("softmax_v9_{form}_{dt}");
    let extra = if form == "smpair" {
        V9_PAIRING_SLOTS
    } else {
        0
    };
    launch_split(io, &r, p, name, cfg, c.g, "softmax v9 workspace", extra)
}

/// Whether v9's smpair form can place a grid of `grid` CTAs in `groups` groups on `sms` SMs
/// that hold at most `per_sm` of its CTAs each (the driver's occupancy; `None` unknown): the
/// cooperative launch puts every CTA on an SM at once, so with two at most and a grid of
/// twice the SMs every SM holds exactly two; and every lower group needs its partner in the
/// upper half (an even count, more than one CTA a group so rows are exchanged).
pub fn v9_smpair_fits(grid: usize, groups: usize, sms: usize, per_sm: Option<usize>) -> bool {
    per_sm == Some(2)
        && grid == 2 * sms
        && groups >= 2
        && groups.is_multiple_of(2)
        && grid.is_multiple_of(groups)
        && grid / groups > 1
}

/// The 16-byte slots v9's smpair form keeps its places in, after the exchange's slots:
/// kernels/softmax.cu's KL_V9_PAIRING_SLOTS (a ticket and two words for each of 1024 SMs).
pub const V9_PAIRING_SLOTS: usize = ((1 + 2 * 1024) * 4usize).div_ceil(16);

pub fn symbols_v9(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v9_gridsync_{dt}"),
        format!("softmax_v9_pingpong_{dt}"),
        format!("softmax_v9_smpair_{dt}"),
    ]
}

/// v10's CTAs: 512 threads, two an SM (its launch bounds).
pub const V10_THREADS: usize = 512;

/// v10's shape: `grid` co-resident CTAs, a row cut into `cpr` tiles of `tile` 16-byte packs,
/// the second pass `lag` iterations behind the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V10Config {
    pub grid: usize,
    pub cpr: usize,
    pub lag: usize,
    pub tile: usize,
}

impl V10Config {
    /// Bytes of input L2 must keep between a tile's two reads: the tiles read in the last
    /// lag + 1 iterations.
    pub fn l2_window(&self) -> usize {
        (self.lag + 1) * self.grid * self.tile * 16
    }
}

/// v10's shape for `rows` rows of at most `packs` 16-byte packs, tiles of `tile` packs and
/// `resident` co-resident CTAs: the grid is the resident CTAs (no more than the tiles), and
/// the lag the least that keeps every wait pointing back in time —
/// ⌈(cpr − 1) / grid⌉ + 1 — plus `extra`. `None` with no resident CTA.
pub fn v10_config(
    packs: usize,
    rows: usize,
    tile: usize,
    resident: usize,
    extra: usize,
) -> Option<V10Config> {
    if resident == 0 || tile == 0 {
        return None;
    }
    let cpr = packs.div_ceil(tile).max(1);
    let grid = resident.min(rows.max(1) * cpr);
    Some(V10Config {
        grid,
        cpr,
        lag: (cpr - 1).div_ceil(grid) + 1 + extra,
        tile,
    })
}

/// v10's tuning, from `KERNLAB_V10` ("u=2|4,lag=N,grid=G") for experiments: `u`, the 16-byte
/// packs a thread loads a pass (a tile is 512·u packs; default 4); `lag`, iterations added to
/// the least safe lag (default 0); `grid`, at most this many CTAs (default: all resident).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V10Tuning {
    pub u: usize,
    pub extra_lag: usize,
    pub max_grid: Option<usize>,
}

impl V10Tuning {
    pub fn parse(spec: &str) -> Self {
        let mut t = V10Tuning {
            u: 4,
            extra_lag: 0,
            max_grid: None,
        };
        for (k, _, n) in tuning_pairs(spec) {
            match (k, n) {
                ("u", Some(n)) => t.u = if n <= 2 { 2 } else { 4 },
                ("lag", Some(n)) => t.extra_lag = n.min(64),
                ("grid", Some(n)) if n > 0 => t.max_grid = Some(n),
                _ => {}
            }
        }
        t
    }
    /// v10's shape under these settings ([`v10_config`]) for `rows` rows of at most `packs`
    /// 16-byte packs, `resident` CTAs on the device: tiles of 512·u packs, the grid capped at
    /// `max_grid`, `extra_lag` added to the lag.
    pub fn shape(&self, packs: usize, rows: usize, resident: usize) -> Option<V10Config> {
        let resident = resident.min(self.max_grid.unwrap_or(usize::MAX));
        v10_config(packs, rows, V10_THREADS * self.u, resident, self.extra_lag)
    }
    /// `KERNLAB_V10`'s settings, read once per process.
    pub fn from_env() -> Self {
        static T: std::sync::OnceLock<V10Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&T, "KERNLAB_V10", V10Tuning::parse)
    }
}

/// v10: rows cut into tiles dealt out to a persistent co-resident grid (cooperative launch);
/// each tile read twice, the second time from L2 `lag` iterations later, once its row's
/// (max, sum) is known. One HBM read and one write while L2 holds the window
/// ([`V10Config::l2_window`]).
pub fn run_v10_l2pass(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    run_v10_tuned(p, x, y, V10Tuning::from_env())
}

/// v10 with the tuning given rather than `KERNLAB_V10`'s (for tests and experiments).
pub fn run_v10_tuned(p: &Params, x: &Tensor, y: &mut Tensor, tuning: V10Tuning) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    require_peelable("v10_l2pass", &r, &io)?;
    let name = format!("softmax_v10_l2pass_u{}_{}", tuning.u, x.dtype());
    let f = io.dev.function(&SOFTMAX, &name)?;
    let resident = blocks_per_sm(&f, V10_THREADS, 0)? * io.dev.props.sm_count as usize;
    let c = tuning
        .shape(r.cols / r.pack, r.rows, resident)
        .ok_or_else(|| {
            unsupported(
            "v10_l2pass",
            "no CTA to run on (the device holds none of its kernel, or the grid is capped at 0)"
                .into(),
        )
        })?;
    let cfg = LaunchConfig {
        grid_dim: (c.grid as u32, 1, 1),
        block_dim: (V10_THREADS as u32, 1, 1),
        shared_mem_bytes: 0,
    };
    // Two workspaces: the header (done count, launch tag), always at the same place, and a
    // tagged 16-byte state slot a tile.
    let tile_bytes = r.rows * c.cpr * 16;
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    let (cpr, lag) = (c.cpr as i32, c.lag as i32);
    let dev = io.dev.clone();
    dev.with_workspaces(
        [
            ("softmax v10 header", V10_HEADER),
            ("softmax v10 tiles", tile_bytes.max(16)),
        ],
        |[hdr, tiles]| {
            let (hdr, tiles) = (&*hdr, &*tiles);
            crate::launch_cooperative!(
                io.dev,
                &SOFTMAX,
                name,
                cfg,
                [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &cpr, &lag, hdr, tiles]
            );
            Ok(())
        },
    )
}

/// v10's header (kernels/softmax.cu's L2PassHeader).
const V10_HEADER: usize = 32;

pub fn symbols_v10(dt: DType) -> Vec<String> {
    vec![
        format!("softmax_v10_l2pass_u2_{dt}"),
        format!("softmax_v10_l2pass_u4_{dt}"),
    ]
}

/// v7's CTAs: 512 threads, one or two an SM (`V7Tuning::per_sm`).
pub const V7_THREADS: usize = 512;
/// At most this many stages (the kernel's mbarrier array).
const V7_MAX_STAGES: usize = 8;
/// The fewest packs a v7 CTA is given of a row split to fill the GPU (1 KB).
const V7_MIN_PART: usize = 64;

/// v7's shape: G CTAs a row, R rows a tile, a row part's room in a stage (16-byte packs),
/// the stages in flight, and the units (groups of G CTAs) of the persistent grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V7Config {
    pub g: usize,
    pub r: usize,
    pub part_packs: usize,
    pub stages: usize,
    pub units: usize,
}

impl V7Config {
    pub fn stage_bytes(&self) -> usize {
        self.r * self.part_packs * 16
    }
    pub fn smem_bytes(&self) -> usize {
        self.stages * self.stage_bytes()
    }
    pub fn grid(&self) -> usize {
        self.units * self.g
    }
}

/// v7's tuning: a whole row (G = 1) while it is at most `whole` bytes; split rows in parts
/// of about `part` bytes; tiles of whole rows of up to `tile` bytes; `per_sm` CTAs an SM
/// sharing its shared memory; `lag` tiles between a split row's reduction and its write.
/// `KERNLAB_V7` may set them ("whole=64,part=64,tile=32,per_sm=2,lag=1", sizes in KiB) for
/// experiments; the defaults are the best measured on the H200 (docs/perf-notes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V7Tuning {
    pub whole: usize,
    pub part: usize,
    pub tile: usize,
    /// CTAs an SM (each gets its share of the shared memory).
    pub per_sm: usize,
    /// Tiles a CTA reduces ahead of the one it writes, when rows are split (≤ 3).
    pub lag: usize,
}

impl Default for V7Tuning {
    fn default() -> Self {
        V7Tuning {
            whole: 64 << 10,
            part: 64 << 10,
            tile: 32 << 10,
            per_sm: 2,
            lag: 1,
        }
    }
}

impl V7Tuning {
    /// The defaults with `spec`'s settings over them (sizes in KiB; others ignored).
    pub fn parse(spec: &str) -> Self {
        let mut t = V7Tuning::default();
        for (k, _, n) in tuning_pairs(spec) {
            match (k, n) {
                ("whole", Some(v)) => t.whole = v << 10,
                ("part", Some(v)) => t.part = v << 10,
                ("tile", Some(v)) => t.tile = v << 10,
                ("per_sm", Some(v)) => t.per_sm = v.clamp(1, 2),
                ("lag", Some(v)) => t.lag = v.min(3),
                _ => {}
            }
        }
        t
    }
    /// The defaults with `KERNLAB_V7`'s settings over them, read once per process (v7's
    /// launcher asks on every call).
    pub fn from_env() -> Self {
        static TUNING: std::sync::OnceLock<V7Tuning> = std::sync::OnceLock::new();
        tuning_from_env(&TUNING, "KERNLAB_V7", V7Tuning::parse)
    }
}

/// v7's shape for rows of at most `packs` 16-byte packs of body, `rows` rows, `ctas`
/// resident CTAs and `smem` bytes of shared memory a CTA. `None` when a row's part would not
/// fit one stage even split across every CTA.
pub fn v7_config(
    packs: usize,
    rows: usize,
    ctas: usize,
    smem: usize,
    t: V7Tuning,
) -> Option<V7Config> {
    let packs = packs.max(1);
    let rows = rows.max(1);
    let ctas = ctas.max(1);
    let (mut g, mut r) = if packs * 16 <= t.whole {
        let fit = (t.tile / (packs * 16)).clamp(1, 16);
        (1, 1 << fit.ilog2())
    } else {
        (packs.div_ceil((t.part / 16).max(1)).min(ctas), 1)
    };
    // Too few tiles to fill the GPU: one row a tile, each split across more CTAs.
    if rows.div_ceil(r) * g < ctas {
        r = 1;
        let fill = ctas / rows;
        g = g.max(fill.min(packs.div_ceil(V7_MIN_PART))).min(ctas);
    }
    let units = (ctas / g).min(rows.div_ceil(r)).max(1);
    if g > 1 {
        // Spread the parts over every CTA the units leave (a few idle SMs cost more than a
        // few smaller parts).
        g = (ctas / units).min(packs.div_ceil(V7_MIN_PART)).max(g);
    }
    let part_packs = packs.div_ceil(g);
    let stage = r * part_packs * 16;
    let stages = (smem / stage).min(V7_MAX_STAGES);
    (stages >= 1).then_some(V7Config {
        g,
        r,
        part_packs,
        stages,
        units,
    })
}

/// Whether the packed kernels that peel (v4's and v6's peeled kernels, v7–v10) can move this
/// call's rows in 16-byte packs: x's and y's row strides equal modulo the pack, so that their
/// rows are equally misaligned, and both bases aligned. [`packs_layout_ok`] is the same test for the
/// contiguous output the registry's callers pass.
fn peelable(r: &Rows, io: &CudaIo) -> bool {
    r.ldx.abs_diff(r.ldy).is_multiple_of(r.pack as u64)
        && aligned16(&io.dev, io.x)
        && aligned16(&io.dev, io.y)
}

/// v7: a persistent grid streams tiles of rows (or parts of split rows) through shared
/// memory, filled by TMA bulk copies `stages` tiles ahead; rows split across CTAs exchange
/// (max, sum) as v6 does. sm_90 and later.
pub fn run_v7_stream(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    check_rows(x)?;
    let (io, r) = rows_io(x, y)?;
    let refuse = |why: String| unsupported("v7_stream", why);
    if io.dev.props.compute_capability.0 < 9 {
        return Err(refuse(format!(
            "bulk copies need sm_90 or later; this device is sm_{}{}",
            io.dev.props.compute_capability.0, io.dev.props.compute_capability.1
        )));
    }
    require_peelable("v7_stream", &r, &io)?;
    // Tiles of 16 rows: keep tile indices (and rows + 15) within i32.
    if r.rows > i32::MAX as usize - 16 {
        return Err(refuse(format!("{} rows: at most 2^31 − 17", r.rows)));
    }
    let name = format!("softmax_v7_stream_{}", x.dtype());
    let f = io.dev.function(&SOFTMAX, &name)?;
    let tune = V7Tuning::from_env();
    let packs = r.cols / r.pack;
    // per_sm CTAs an SM share its shared memory; each also needs its static shared memory
    // (barriers, scratch: ~1.2 KB) and the 1 KB the driver reserves per block. The driver's
    // occupancy figure confirms they fit (a cooperative launch needs every CTA resident);
    // if not, fewer CTAs an SM take more each.
    let mut chosen = None;
    for per_sm in (1..=tune.per_sm).rev() {
        let budget = (io.dev.props.max_smem_per_block_optin / per_sm).saturating_sub(3072);
        let ctas = per_sm * io.dev.props.sm_count as usize;
        let Some(c) = v7_config(packs, r.rows, ctas, budget, tune) else {
            continue;
        };
        if smem_blocks_per_sm(&io.dev, &f, &name, V7_THREADS, c.smem_bytes())? >= per_sm {
            chosen = Some(c);
            break;
        }
    }
    let c = chosen.ok_or_else(|| {
        refuse(format!(
            "rows of {} columns need more shared memory than all {} SMs hold at once (use v6_split or auto)",
            r.cols, io.dev.props.sm_count
        ))
    })?;
    let grid = c.grid();
    let cfg = LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (V7_THREADS as u32, 1, 1),
        shared_mem_bytes: c.smem_bytes() as u32,
    };
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    let (gi, ri, chunk, stages) = (
        c.g as i32,
        c.r as i32,
        (c.part_packs * r.pack) as i32,
        c.stages as i32,
    );
    // A tile stays in its stage from its reduction until `lag` tiles later it is written;
    // keep a stage free for the next load beyond that.
    let lag = tune.lag.min(c.stages.saturating_sub(2)) as i32;
    let dev = io.dev.clone();
    // A slot per CTA for each of the last 8 tiles (KL_V7_SLOT_TILES).
    with_split_workspace(&dev, "softmax v7 workspace", 8 * grid, |hdr, slots| {
        crate::launch_cooperative!(
            io.dev,
            &SOFTMAX,
            name,
            cfg,
            [
                io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg, &gi, &ri, &chunk, &stages, &lag,
                hdr, slots
            ]
        );
        Ok(())
    })
}

/// Whether this input's rows can be moved in 16-byte packs, peeled where they start off a
/// 16-byte boundary, into a contiguous output (as the registry's callers pass): x's row stride
/// equal to y's (cols) modulo the pack, so both rows are equally misaligned (aligned rows,
/// with cols and ldx multiples of the pack, are the case of no misalignment). `auto`'s
/// heuristic and the tests read it; the launchers test the call's own strides (`peelable`),
/// and the bases apart (cuMemAlloc'd ones are aligned). With a strided y (the unchecked
/// launchers only) the heuristic may pick a version that refuses it; `auto` then runs v4.
pub fn packs_layout_ok(x: &Tensor) -> bool {
    let (_, cols, ldx) = x.rows_cols();
    ldx.abs_diff(cols) % (16 / x.dtype().size()) == 0
}

pub fn symbols_v7(dt: DType) -> Vec<String> {
    vec![format!("softmax_v7_stream_{dt}")]
}

/// The register-resident version that holds a row of this width (and whether 16-byte packs
/// apply): v2, v3, else v4. [`heuristic_choice`] starts from it and moves rows to v6, v8 or v9
/// where they measured faster.
pub fn dispatch(dt: DType, cols: usize, vec: bool) -> &'static str {
    if cols <= v2_max_cols(dt, vec) {
        "v2_warp_row"
    } else if cols <= v3_max_cols(dt, vec) {
        "v3_block_regs"
    } else {
        "v4_online"
    }
}

/// The versions `auto` chooses among (and `kernlab autotune softmax` measures).
pub const AUTO_CANDIDATES: [&str; 9] = [
    "v2_warp_row",
    "v3_block_regs",
    "v4_online",
    "v5_cluster",
    "v6_split",
    "v7_stream",
    "v8_onchip",
    "v9_gridsync",
    "v10_l2pass",
];

/// Run one of [`AUTO_CANDIDATES`] by name.
pub fn run_named(name: &str, p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match name {
        "v2_warp_row" => run_v2_warp_row(p, x, y),
        "v3_block_regs" => run_v3_block_regs(p, x, y),
        "v5_cluster" => run_v5_cluster(p, x, y),
        "v4_online" => run_v4_online(p, x, y),
        "v6_split" => run_v6_split(p, x, y),
        "v7_stream" => run_v7_stream(p, x, y),
        "v8_onchip" => run_v8_onchip(p, x, y),
        "v9_gridsync" => run_v9_gridsync(p, x, y),
        "v10_l2pass" => run_v10_l2pass(p, x, y),
        other => Err(Error::Invalid(format!("softmax has no version '{other}'"))),
    }
}

/// The numbered version `auto` tries first for this input: the choice `kernlab autotune
/// softmax` cached for this device, dtype and shape bucket when there is one, else the
/// heuristic.
pub fn auto_choice(x: &Tensor) -> &'static str {
    auto_decision(x).0
}

/// [`auto_choice`], and whether the autotune cache made it.
fn auto_decision(x: &Tensor) -> (&'static str, bool) {
    if let Some(d) = x.device().cuda() {
        if let Some(e) =
            crate::autotune::lookup(d, super::Op::Softmax, "auto", x.dtype(), x.shape())
        {
            if let Some(v) = AUTO_CANDIDATES.iter().find(|v| **v == e.variant) {
                return (v, true);
            }
        }
    }
    (heuristic_choice(x), false)
}

/// The layout `run_auto` ran on: dtype, rows, columns, row stride (plain numbers: `run_auto`
/// records it on every timed call, so no allocation).
type AutoKey = (DType, usize, usize, usize);

fn auto_key(x: &Tensor) -> AutoKey {
    let (rows, cols, ld) = x.rows_cols();
    (x.dtype(), rows, cols, ld)
}

thread_local! {
    /// What [`run_auto`] last ran on this thread, and on what layout: [`auto_label`] names it,
    /// so a fallback past a choice that refused the shape is reported as what ran.
    static AUTO_RAN: std::cell::Cell<Option<(AutoKey, &'static str)>> =
        const { std::cell::Cell::new(None) };
}

/// What bench shows as `auto`'s pick: the version `run_auto` last ran on this layout (on this
/// thread), else its first choice; marked where the autotune cache chose it or where the choice
/// refused the shape and a fallback ran.
pub fn auto_label(x: &Tensor) -> String {
    let (choice, tuned) = auto_decision(x);
    let key = auto_key(x);
    let ran = AUTO_RAN.get().filter(|(k, _)| *k == key).map(|(_, v)| v);
    pick_label(choice, tuned, ran)
}

/// `auto`'s label for its first `choice` (from the autotune cache where `tuned`) and the version
/// that `ran`, where known.
fn pick_label(choice: &str, tuned: bool, ran: Option<&str>) -> String {
    let by = if tuned { ", autotuned," } else { "" };
    match ran {
        Some(v) if v != choice => format!("{v} ({choice}{by} refused the shape)"),
        _ if tuned => format!("{choice} (autotuned)"),
        _ => choice.to_string(),
    }
}

/// The narrowest odd (unpackable) width `auto` sends to v8 on sm_90 rather than v3: the
/// narrowest measured where v8 led v3's scalar path (H200, measurements at
/// [`heuristic_choice`]); 16-bit rows go past [`V3_SHIFT_16_UPTO`].
pub const V8_ODD_FROM: usize = 641;

/// The widest 16-bit odd row `auto` keeps on v3's shifted form on sm_90 rather than v8: its
/// packs (one more than the row's own at most) fill one warp of four slots a thread.
pub const V3_SHIFT_16_UPTO: usize = 32 * 4 * 8 - 7;

/// Whether a 16-bit row of `cols` columns (odd: not a pack multiple; one v8 takes, so its x and
/// y rows are misaligned alike and v3 shifts it) stays on v3 by [`V3_SHIFT_16_UPTO`].
fn v3_shift_16(dt: DType, cols: usize) -> bool {
    dt != DType::F32 && cols <= V3_SHIFT_16_UPTO
}

/// Packed f32 rows from 16385 columns up to (not including) this many go to v8 on sm_90
/// rather than v3 (H200, measurements at [`heuristic_choice`]).
pub const V8_F32_PACKED_BELOW: usize = 28_672;

/// The width heuristic, from the H200 measurements in docs/perf-notes.md: v2 for rows a
/// warp holds, v3 for rows a block holds; on sm_90, v8 (a row per CTA in registers and shared
/// memory, clusters of up to 8 past that for f32, up to 2 for 16-bit rows and up to 8 where
/// [`v8_wide16_cluster`] sizes them) for odd widths from
/// [`V8_ODD_FROM`] (16-bit ones past [`V3_SHIFT_16_UPTO`]), for 16-bit rows of 16385–65536 and f32 rows of 16385 to
/// [`V8_F32_PACKED_BELOW`] − 1 (where v3 runs four or eight slots a thread slowly) and for
/// every wider row it holds;
/// then v9 (v8's parts across co-resident CTAs) for the rows all resident CTAs hold; v6 (rows
/// split across CTAs, in registers, where its resident CTAs hold the row) for odd widths past
/// 4096 that peel, and on sm_90 for the rows v9 does not take, before sm_90 for rows of at
/// most 2 MB or fewer rows than SMs; v4 beyond.
pub fn heuristic_choice(x: &Tensor) -> &'static str {
    let (rows, cols, ldx) = x.rows_cols();
    let dt = x.dtype();
    let pack = 16 / dt.size();
    // Alignment of cuMemAlloc'd bases is 256 bytes, so the pack test is cols and strides.
    let vec = cols % pack == 0 && ldx % pack == 0;
    // v6 and v8 also pack rows whose start is misaligned alike in x and y (contiguous y):
    // they peel.
    let peelable = packs_layout_ok(x);
    let cuda = x.device().cuda().cloned();
    let hopper = cuda
        .as_ref()
        .is_some_and(|d| d.props.compute_capability.0 >= 9);
    // v8 in clusters of at most 8 for f32: at 16 (1 Mi f32, 2 Mi bf16) it measured no better
    // than v6 (f32 256×1048576: 2928 against 2898 GB/s; bf16 128×2097152: 2556 against 2661).
    // 16-bit rows in clusters of at most 2: past that v9 led v8 in two sessions' runs (bf16
    // 512×524288: 3359 / 3377 against 3314 / 3299 GB/s; 256×1048576: 3241 / 3216 against
    // 3179 / 3164), while f32 stayed with v8 (512×524288: 3632 against 3488).
    // Past two CTAs, 16-bit rows take v8 where its 16-bit cluster rule sizes eight CTAs for two
    // an SM (`v8_wide16_cluster`: bf16 393216–524288 columns, level with v9 to 4% ahead of it,
    // fifteenth session).
    let v8_max_c = if dt == DType::F32 { 8 } else { 2 };
    let v8_takes = hopper
        && peelable
        && cuda.as_ref().is_some_and(|d| {
            let (packs, optin) = (cols / pack, d.props.max_smem_per_block_optin);
            v8_config(packs, optin, v8_max_c).is_some()
                || (dt != DType::F32
                    && V8Tuning::from_env().wide16_rule()
                    && v8_config(packs, optin, 16)
                        .and_then(|(c, _, _)| v8_wide16_cluster(packs, c))
                        .is_some())
        });
    // v6's capacity costs an occupancy query; two rules may ask for the same form.
    let fits = [std::cell::OnceCell::new(), std::cell::OnceCell::new()];
    let v6_fits = |packed: bool| {
        *fits[packed as usize].get_or_init(|| {
            cuda.as_ref()
                .and_then(|d| v6_max_cols(d, dt, packed))
                .is_some_and(|m| cols <= m)
        })
    };
    match dispatch(dt, cols, vec) {
        // Odd widths past v2's reach (from V8_ODD_FROM columns on sm_90): v3 took its scalar
        // path when these were measured (it shifts its packs since the thirty-first session,
        // below); v8 and v6 peel a scalar head and tail around 16-byte packs. v8 led v6
        // at every odd width measured past 4096 (4096×16385: f32 3876 against 3119 GB/s, bf16
        // 3544 against 3067; 4096×4097: f32 3433 against 2885, bf16 2669 against 2057), and
        // v3's scalar path below it down to 641 columns (4096×3001: f32 3201 against 2053,
        // bf16 2557 against 1156; 4096×1025: f32 2499 against 2018, bf16 1535 against 1096;
        // 4096×641: f32 1919 against 1705, bf16 1010 against 935), but not at 511 (f32 1521
        // against 1571, bf16 798 against 938) or 385 (tenth session).
        // 16-bit odd widths up to V3_SHIFT_16_UPTO stay on v3's shifted form (its packs fill
        // one warp at four a thread), which led v8 there (thirty-first session,
        // `scripts/gpu-shift-148.sh 150`, two rounds, H200, 4096 rows, GB/s: bf16 641 1013 /
        // 1083 against 940 / 998, 781 1234 / 1315 against 1176 / 1105, 901 1437 / 1437 against
        // 1257 / 1329, 1001 1477 / 1577 against 1385 / 1381; f16 alike, level at 1001). At
        // 1025 (a second warp, mostly idle) v8 led, 1504 / 1415 against 1256 / 1322. f32 stays
        // on v8 (`… 149`, one round: 781 2167 against 2234).
        "v3_block_regs" if !vec && cols >= V8_ODD_FROM && v8_takes && !v3_shift_16(dt, cols) => {
            "v8_onchip"
        }
        "v3_block_regs" if !vec && cols > 4096 && peelable && v6_fits(true) => "v6_split",
        // 16-bit rows of 16385–65536 columns: v3 holds them four or eight slots a thread and
        // ran bf16 4096×32768 at 3014 GB/s, v6 at 3573, v8 (512 threads of eight) at 3845.
        // Twelfth session (`scripts/gpu-softmax-b16wide53.sh`, two repeats each): v8 led v3 at
        // every 16-bit width from 32768 to 65536, bf16 4033 / 3999 / 4037 / 3998 against
        // 2967 / 3324 / 3512 / 3724 GB/s at 32768 / 40960 / 49152 / 65536 (f16 alike).
        "v3_block_regs" if vec && dt != DType::F32 && (16_385..=65_536).contains(&cols) => {
            if v8_takes {
                "v8_onchip"
            } else if hopper && v6_fits(true) {
                "v6_split"
            } else {
                "v3_block_regs"
            }
        }
        // Packed f32 rows of 16385 to V8_F32_PACKED_BELOW − 1 columns: v3 runs them eight slots
        // a thread in blocks of 544–896 threads, and v8 led it (twelfth session,
        // `scripts/gpu-softmax-f32mid55.sh`, two repeats: 18432 4067 against 3527 GB/s, 22528
        // 4094 / 3769, 26624 4071 / 3977); level at 16384 and 28672, v3 ahead from 30720.
        "v3_block_regs"
            if vec
                && dt == DType::F32
                && (16_385..V8_F32_PACKED_BELOW).contains(&cols)
                && v8_takes =>
        {
            "v8_onchip"
        }
        // Past what a block's registers hold: v8 led v6 and v5 at every width to 1 Mi bf16
        // (2048×131072: f32 3947 against 3420 GB/s, bf16 3768 against 3220; 1024×262144 f32
        // 3800 against 3237; 256×1048576 bf16 3161 against 2810).
        "v4_online" if v8_takes => "v8_onchip",
        // Past that, on sm_90, v9 (v8's parts split across co-resident CTAs) wherever every
        // resident CTA together holds the row: it led v6 and v8 (clusters of 16) at every
        // width measured past v8's eight CTAs (H200, two CTAs an SM, parts at most half in
        // shared memory: f32 256×1048576 3322 against v6's 2927 GB/s (v8: 2900, seventh
        // session); 64×4194304 2892 against 2512; bf16 128×2097152 3139 against 2658 and
        // v8's 2566).
        "v4_online"
            if hopper
                && peelable
                && cuda
                    .as_ref()
                    .and_then(|d| v9_max_cols(d, dt))
                    .is_some_and(|m| cols <= m) =>
        {
            "v9_gridsync"
        }
        // Then v6 wherever its resident CTAs hold the row: with the tagged exchange it beats
        // v4 from 65536 to 4 Mi f32 columns on the H200 (256×1048576: 2844 against 2697 GB/s;
        // 64×4194304: 2443 against 1686). Elsewhere (not measured) the earlier rule: rows up
        // to 2 MB, or fewer rows than SMs.
        "v4_online"
            if v6_fits(peelable)
                && (hopper
                    || cols * dt.size() <= 2 << 20
                    || cuda
                        .as_ref()
                        .is_some_and(|d| rows < d.props.sm_count as usize)) =>
        {
            "v6_split"
        }
        other => other,
    }
}

/// The widest row v6 holds on this device (elements): all resident CTAs' registers. `None`
/// when the kernel cannot be loaded or the occupancy query fails (then `auto` leaves v6 out).
pub fn v6_max_cols(dev: &crate::device::CudaDevice, dt: DType, packed: bool) -> Option<usize> {
    let resident = v6_resident(dev, &v6_symbol(dt, packed), V6_THREADS).ok()?;
    let width = if packed { 16 / dt.size() } else { 1 };
    Some(resident * V6_THREADS * V6_K * width)
}

/// v6's kernel for a dtype, packed (16-byte loads, peeled) or scalar.
fn v6_symbol(dt: DType, packed: bool) -> String {
    format!("softmax_v6_split_{}_{dt}", kind(packed))
}

/// How many CTAs of `threads` threads of v6's kernel `name` the GPU holds at once (the
/// driver's occupancy figure × SMs): the most a cooperative launch may have.
fn v6_resident(dev: &crate::device::CudaDevice, name: &str, threads: usize) -> Result<usize> {
    let per_sm = blocks_per_sm(&dev.function(&SOFTMAX, name)?, threads, 0)?;
    Ok(per_sm * dev.props.sm_count as usize)
}

/// The driver's occupancy figure: CTAs of `threads` threads and `smem` bytes of dynamic
/// shared memory that one SM holds at once.
fn blocks_per_sm(f: &cudarc::driver::CudaFunction, threads: usize, smem: usize) -> Result<usize> {
    let n = f
        .occupancy_max_active_blocks_per_multiprocessor(threads as u32, smem, None)
        .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
    Ok(n as usize)
}

/// [`blocks_per_sm`] for kernel `f` (named `name`) launched with `smem` bytes of dynamic shared
/// memory, after opting it in to that much (past 48 KB a block must).
fn smem_blocks_per_sm(
    dev: &crate::device::CudaDevice,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    threads: usize,
    smem: usize,
) -> Result<usize> {
    super::launch::allow_dynamic_smem(dev, f, name, smem)?;
    blocks_per_sm(f, threads, smem)
}

/// Run `f` with the split-row kernels' (v6, v7, v9) workspace, laid out as kernels/softmax.cu's
/// SplitHeader (16 bytes: the done count) and then `slots` 16-byte SplitSlots (so many a CTA,
/// and for v9's smpair form its places after them); `f` gets (header, slots). Zero when made,
/// and each kernel's last CTA clears what it used.
fn with_split_workspace(
    dev: &crate::device::CudaDevice,
    name: &'static str,
    slots: usize,
    f: impl FnOnce(&CudaView<'_, u8>, &CudaView<'_, u8>) -> Result<()>,
) -> Result<()> {
    let bytes = 16 + slots * 16;
    dev.with_workspace(name, bytes, |ws| f(&ws.slice(0..16), &ws.slice(16..bytes)))
}

/// auto: runs what [`auto_choice`] picks. A tuned choice that cannot take this exact shape
/// (a bucket spans widths) falls back to the heuristic, and anything refused to v4, which
/// takes every width.
pub fn run_auto(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    AUTO_RAN.set(None);
    let ran = run_auto_steps(p, x, y)?;
    AUTO_RAN.set(Some((auto_key(x), ran)));
    Ok(())
}

/// [`run_auto`]'s steps; the version that ran.
fn run_auto_steps(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<&'static str> {
    let choice = auto_choice(x);
    if choice != "v4_online" {
        match run_named(choice, p, x, y) {
            Err(Error::UnsupportedShape { .. }) => {}
            r => return r.map(|_| choice),
        }
        // Only now the heuristic (a call costs host time, and tiny problems are launch-bound).
        let h = heuristic_choice(x);
        if h != choice && h != "v4_online" {
            match run_named(h, p, x, y) {
                Err(Error::UnsupportedShape { .. }) => {}
                r => return r.map(|_| h),
            }
        }
    }
    run_v4_online(p, x, y).map(|_| "v4_online")
}

pub fn symbols_v1(dt: DType) -> Vec<String> {
    vec![format!("softmax_v1_block_row_{dt}")]
}
pub fn symbols_v2(dt: DType) -> Vec<String> {
    let shapes = KS
        .iter()
        .map(|k| format!("k{k}"))
        .chain([4, 8, 16].iter().map(|w| format!("w{w}")));
    shapes
        .flat_map(|s| ["vec", "scalar"].map(|v| format!("softmax_v2_warp_row_{v}_{s}_{dt}")))
        .collect()
}
pub fn symbols_v3(dt: DType) -> Vec<String> {
    KS.iter()
        .flat_map(|k| {
            ["vec", "scalar", "shift"].map(|v| format!("softmax_v3_block_regs_{v}_k{k}_{dt}"))
        })
        .collect()
}
pub fn symbols_v4(dt: DType) -> Vec<String> {
    ["vec", "scalar", "peel"]
        .iter()
        .map(|v| format!("softmax_v4_online_{v}_{dt}"))
        .collect()
}
pub fn symbols_auto(dt: DType) -> Vec<String> {
    let mut v = symbols_v2(dt);
    v.extend(symbols_v3(dt));
    v.extend(symbols_v4(dt));
    v.extend(symbols_v5(dt));
    v.extend(symbols_v6(dt));
    v.extend(symbols_v7(dt));
    v.extend(symbols_v8(dt));
    v.extend(symbols_v9(dt));
    v.extend(symbols_v10(dt));
    v
}

// ---- fused CPU ----------------------------------------------------------------------------------
/// One row of the fused CPU softmax: the max, e^(x − max) into `buf` and its sum, then the
/// outputs. NaNs are skipped by the max and reach the sum through e^(NaN − max).
#[inline(always)]
fn cpu_softmax_row<T: Element>(row: &[T], out: &mut [T], buf: &mut [f32], log: bool) {
    let m = prim::max_f32(row);
    for (b, v) in buf.iter_mut().zip(row) {
        *b = prim::exp_f32(v.to_f32() - m);
    }
    let s = prim::sum_f32(buf);
    if log {
        // (x − m) − ln Σ: x − m is exact near the max, where outputs are near 0.
        let ls = s.ln();
        for (o, v) in out.iter_mut().zip(row) {
            *o = T::from_f32((v.to_f32() - m) - ls);
        }
    } else {
        let inv = 1.0 / s;
        for (o, b) in out.iter_mut().zip(buf.iter()) {
            *o = T::from_f32(b * inv);
        }
    }
}

/// [`cpu_softmax_row`] compiled for AVX2 (8 lanes, not SSE2's 4).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn cpu_softmax_row_avx2<T: Element>(row: &[T], out: &mut [T], buf: &mut [f32], log: bool) {
    cpu_softmax_row(row, out, buf, log)
}

/// Rows in parallel; each row: max, e^(x − max) into a buffer and its sum, scale — the row
/// stays in cache (log_softmax: (x − max) − ln Σ). Outputs under ~1.2e-38 come out 0
/// ([`prim::exp_f32`]).
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_cpu_fused(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    fn go<T: Element>(x: &[T], y: &mut [T], cols: usize, ldx: usize, log: bool) {
        let avx2 = prim::has_avx2();
        let mut tmp_rows: Vec<&mut [T]> = y.chunks_mut(cols).collect();
        tmp_rows.par_iter_mut().enumerate().for_each_init(
            || vec![0.0f32; cols],
            |buf, (r, out)| {
                let row = &x[r * ldx..r * ldx + cols];
                #[cfg(target_arch = "x86_64")]
                if avx2 {
                    // SAFETY: the CPU has AVX2 (`has_avx2`).
                    return unsafe { cpu_softmax_row_avx2(row, out, buf, log) };
                }
                let _ = avx2;
                cpu_softmax_row(row, out, buf, log)
            },
        );
    }
    let (_, cols, ldx) = x.rows_cols();
    let xd = x
        .cpu_data()
        .ok_or_else(|| Error::Invalid("cpu/fused needs CPU tensors".into()))?;
    let yd = y
        .cpu_data_mut()
        .ok_or_else(|| Error::Invalid("cpu/fused needs CPU tensors".into()))?;
    match (xd, yd) {
        (CpuData::F32(x), CpuData::F32(y)) => go(x, y, cols, ldx, p.log_softmax),
        (CpuData::BF16(x), CpuData::BF16(y)) => go(x, y, cols, ldx, p.log_softmax),
        (CpuData::F16(x), CpuData::F16(y)) => go(x, y, cols, ldx, p.log_softmax),
        _ => return Err(Error::Invalid("input and output dtypes differ".into())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_row_launch(kernel: &str) -> RowLaunch {
        let r = Rows {
            rows: 4096,
            cols: 64,
            ldx: 64,
            ldy: 64,
            vec: true,
            pack: 4,
        };
        RowLaunch::new(kernel, cfg_1d(4096 * 16, 128).unwrap(), &r, 0, None)
    }

    #[test]
    fn only_one_plain_row_launch_is_replayable() {
        let l = a_row_launch("softmax_v2_warp_row_vec_w16_f32");
        assert_eq!(l.grid, [512, 1, 1]);
        assert_eq!(l.block, [128, 1, 1]);
        assert_eq!(
            (l.rows, l.cols, l.ldx, l.ldy, l.lg, l.csize),
            (4096, 64, 64, 64, 0, None)
        );
        assert_eq!(one_row_launch(1, vec![l.clone()]), Ok(l.clone()));
        // A cluster or cooperative launch is counted but noted as no row launch.
        let e = one_row_launch(1, vec![]).unwrap_err();
        assert!(e.contains("1 launch(es), 0 of them"), "{e}");
        let e = one_row_launch(2, vec![l.clone(), l.clone()]).unwrap_err();
        assert!(e.contains("2 launch(es)"), "{e}");
        assert!(one_row_launch(0, vec![]).unwrap_err().contains("no kernel"));
        let e = one_row_launch(3, vec![l]).unwrap_err();
        assert!(e.contains("3 launch(es), 1 of them"), "{e}");
    }

    #[test]
    fn recording_is_off_outside_record_row_launch() {
        // Noted outside a recording: nothing is kept for the next one.
        note_row_launch(|| a_row_launch("outside"));
        assert!(ROW_LAUNCHES.with(|c| c.borrow().is_none()));
        let got = record_row_launch(|| {
            note_row_launch(|| a_row_launch("inside"));
            let noted: Vec<String> = ROW_LAUNCHES.with(|c| {
                c.borrow()
                    .as_ref()
                    .map(|v| v.iter().map(|l| l.kernel.clone()).collect())
                    .unwrap_or_default()
            });
            assert_eq!(noted, vec!["inside".to_string()]);
            Ok(())
        })
        .unwrap();
        // The note was made without a launch, so it is not replayable, and "outside" is gone.
        assert!(got.unwrap_err().contains("no kernel"));
        assert!(ROW_LAUNCHES.with(|c| c.borrow().is_none()));
        // A failing call is an error, and the recording ends with it.
        let e = record_row_launch(|| Err(Error::Invalid("boom".into()))).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert!(ROW_LAUNCHES.with(|c| c.borrow().is_none()));
        // So does a panicking one.
        let caught = std::panic::catch_unwind(|| {
            let _ = record_row_launch(|| panic!("inside the call"));
        });
        assert!(caught.is_err());
        assert!(ROW_LAUNCHES.with(|c| c.borrow().is_none()));
    }

    #[test]
    fn v3_keeps_four_loads_in_flight_where_it_can() {
        assert_eq!(v3_slots_per_thread(1), Some(1));
        assert_eq!(v3_slots_per_thread(33), Some(2));
        assert_eq!(v3_slots_per_thread(1024), Some(4)); // 4096 f32: 256 threads × 4
        assert_eq!(v3_slots_per_thread(4096), Some(4)); // 1024 threads × 4
        assert_eq!(v3_slots_per_thread(4097), Some(8));
        assert_eq!(v3_slots_per_thread(8192), Some(8));
        assert_eq!(v3_slots_per_thread(8193), None);
    }

    /// The shifted form's packs cover a row that starts pack − 1 elements in (the worst
    /// start); V3_SHIFT_16_UPTO is the widest 16-bit row whose packs fill one warp at four a
    /// thread (the rule's premise); v3_max_cols_shift is the widest row eight packs a thread
    /// of 1024 threads hold.
    #[test]
    fn v3_shift_takes_the_packs_of_the_worst_start() {
        assert_eq!(v3_shift_slots(4097, 8), 513); // 4096 + 1: its last element a pack alone
        assert_eq!(v3_shift_slots(4089, 8), 512); // a start at most 7 in still ends by 4096
        assert_eq!(v3_shift_slots(4095, 8), 513); // one that starts 7 in ends at 4102
        assert_eq!(v3_shift_slots(33, 4), 9);
        assert_eq!(v3_shift_slots(1, 8), 1);
        let upto = V3_SHIFT_16_UPTO;
        assert_eq!(v3_shift_slots(upto, 8), 128);
        assert_eq!(v3_slots_per_thread(128), Some(4)); // one warp of four
        assert_eq!(v3_shift_slots(upto + 2, 8), 129);
        let most = v3_max_cols_shift(DType::BF16);
        assert_eq!(v3_slots_per_thread(v3_shift_slots(most, 8)), Some(8));
        assert_eq!(v3_slots_per_thread(v3_shift_slots(most + 1, 8)), None);
        assert_eq!(v3_max_cols_shift(DType::F32), 32768 - 3);
    }

    #[test]
    fn v8_takes_the_fewest_ctas_whose_registers_and_shared_memory_hold_the_row() {
        let h200 = 232_448; // the H200's opt-in shared memory a block: 14464 packs past 1 KB
        assert_eq!(v8_cta_packs(h200), 8192 + 14464);
        assert_eq!(v8_config(8192, h200, 16), Some((1, 1024, 0))); // 32768 f32: registers only
        assert_eq!(v8_config(4097, h200, 16), Some((1, 544, 0))); // 16388 f32: 17 warps
        assert_eq!(v8_config(16384, h200, 16), Some((1, 1024, 8192 * 16))); // 65536 f32
        assert_eq!(v8_config(22656, h200, 16), Some((1, 1024, 14464 * 16)));
        let past = Some((2, 1024, (11329 - 8192) * 16)); // one pack more: two CTAs
        assert_eq!(v8_config(22657, h200, 16), past);
        assert_eq!(v8_config(32768, h200, 16), Some((2, 1024, 8192 * 16))); // 131072 f32
        assert_eq!(v8_config(262144, h200, 16), Some((16, 1024, 8192 * 16))); // 1 Mi f32
        assert_eq!(v8_config(262144, h200, 8), None);
        assert_eq!(v8_config(32768, h200, 1), None); // no clusters before sm_90
        assert_eq!(v8_config(16 * 22656 + 1, h200, 16), None);
        // Fewer columns than a pack.
        assert_eq!(v8_config(0, h200, 16), Some((1, 32, 0)));
        // Sized for the most rows an SM: two CTAs of 512 threads where 768 would hold it in
        // registers (4096×24577 f32), three of 320 for 5000 packs (bf16 40001), never more in
        // shared memory than in registers, ties to more threads.
        let sm = SmLimits::H200;
        assert_eq!(sm.smem_optin, h200);
        assert_eq!(v8_fill_cta(6144, sm), Some((512, 2048 * 16)));
        assert_eq!(v8_fill_cta(8192, sm), Some((512, 4096 * 16)));
        assert_eq!(v8_fill_cta(5000, sm), Some((320, (5000 - 2560) * 16)));
        assert_eq!(v8_fill_cta(256, sm), Some((32, 0)));
        assert_eq!(v8_fill_cta(16384, sm), Some((1024, 8192 * 16)));
        // More in shared memory than in registers:
        assert_eq!(v8_fill_cta(16385, sm), None);

        // An SM of 1536 threads and 24 CTAs (sm_89): one-warp CTAs stop at the CTA limit, and
        // 6144 packs still take two CTAs of 512 (three would need 96 K registers).
        let ada = SmLimits {
            threads: 1536,
            ctas: 24,
            smem_optin: 101_376,
            ..sm
        };
        assert_eq!(v8_fill_cta(256, ada), Some((32, 0)));
        assert_eq!(v8_fill_cta(6144, ada), Some((512, 2048 * 16)));
        // Half the registers: 5000 packs fit one CTA an SM whatever its size, so the tie goes
        // to the most threads that fit (512) instead of three CTAs of 320.
        let half = SmLimits { regs: 32_768, ..sm };
        assert_eq!(v8_fill_cta(5000, half), Some((512, (5000 - 4096) * 16)));
        // Too few registers for even one CTA that holds the row: none.
        let tiny = SmLimits { regs: 8192, ..sm };
        assert_eq!(v8_fill_cta(6144, tiny), None);
    }

    #[test]
    fn v8_tuning_forces_clusters_and_fill_only_where_asked() {
        let d = V8Tuning::parse("");
        assert_eq!(d, V8Tuning::default());
        assert_eq!(
            V8Tuning::parse(" fill=1 , cluster=8"),
            V8Tuning {
                fill: Some(true),
                cluster: Some(8),
                wide16: None,
                f32c8: None,
                threads: None
            }
        );
        // Cluster sizes are the powers of two v8 launches, 2–16; anything else is ignored.
        for bad in [
            "cluster=1",
            "cluster=3",
            "cluster=32",
            "cluster=x",
            "cluster",
        ] {
            assert_eq!(V8Tuning::parse(bad).cluster, None, "{bad}");
        }
        assert_eq!(V8Tuning::parse("fill=0").fill, Some(false));
        assert_eq!(V8Tuning::parse("fill=2").fill, None);
        // By default only one-CTA rows past 512 threads are filled.
        assert!(d.fill_for(1, 544) && !d.fill_for(1, 512) && !d.fill_for(2, 1024));
        assert!(V8Tuning::parse("fill=1").fill_for(4, 64));
        assert!(!V8Tuning::parse("fill=0").fill_for(1, 1024));

        let sm = SmLimits::H200;
        let shape = |packs, spec: &str| v8_shape(packs, sm, true, false, V8Tuning::parse(spec));
        // f32 131072 columns: eight 256-thread CTAs, four an SM (the f32 rule), or without
        // the rule two 1024-thread CTAs, 128 KB of each in shared memory.
        assert_eq!(shape(32768, ""), Some((8, 256, 2048 * 16)));
        assert_eq!(shape(32768, "f32c8=0"), Some((2, 1024, 8192 * 16)));
        // Forced to four CTAs sized for two an SM: 512 threads, half in shared memory.
        assert_eq!(shape(32768, "cluster=4,fill=1"), Some((4, 512, 4096 * 16)));
        // Forced to four, not filled: the fewest threads that hold a quarter in registers.
        assert_eq!(shape(32768, "cluster=4"), Some((4, 1024, 0)));
        // Threads forced with the cluster size: the rest of each share in shared memory; not
        // without a forced cluster, nor where the rest would not fit.
        assert_eq!(shape(32768, "cluster=16,threads=256"), Some((16, 256, 0)));
        assert_eq!(
            shape(32768, "cluster=8,threads=128"),
            Some((8, 128, 3072 * 16))
        );
        assert_eq!(shape(32768, "threads=256"), shape(32768, ""));
        assert_eq!(
            shape(32768, "cluster=2,threads=32"),
            shape(32768, "f32c8=0")
        );
        assert_eq!(V8Tuning::parse("threads=100").threads, None);
        assert_eq!(V8Tuning::parse("threads=2048").threads, None);
        // A forced size no larger than what the row needs changes nothing but the rule.
        assert_eq!(shape(32768, "cluster=2"), shape(32768, "f32c8=0"));
        assert_eq!(shape(8 * 32768, "cluster=4"), shape(8 * 32768, ""));
        // One-CTA rows past 512 threads are filled by default; fill=0 keeps the fewest threads.
        let (t, m) = v8_fill_cta(6144, sm).unwrap();
        assert_eq!(shape(6144, ""), Some((1, t, m)));
        assert_eq!(shape(6144, "fill=0"), Some((1, 768, 0)));
        assert_ne!((t, m), (768, 0));
        // Without clusters (before sm_90) the forced size is ignored, and wide rows refused.
        let pre = |packs, spec: &str| v8_shape(packs, sm, false, false, V8Tuning::parse(spec));
        assert_eq!(pre(4096, "cluster=4"), pre(4096, ""));
        assert_eq!(pre(32768, ""), None);
        assert_eq!(shape(17 * v8_cta_packs(sm.smem_optin), ""), None);
    }

    #[test]
    fn v8_sizes_16_bit_clusters_for_two_ctas_an_sm_where_measured_ahead() {
        let sm = SmLimits::H200;
        let s16 = |packs, spec: &str| v8_shape(packs, sm, true, true, V8Tuning::parse(spec));
        // f32 rows without their own rule (v8_f32_cluster), to compare shapes with.
        let f32_default = |packs| v8_shape(packs, sm, true, false, V8Tuning::parse("f32c8=0"));
        let cols = |bf16_cols: usize| bf16_cols / 8;
        // bf16 262144: four CTAs of 512 threads, half of each share in shared memory.
        assert_eq!(s16(cols(262_144), ""), Some((4, 512, 4096 * 16)));
        // bf16 393216 and 524288: eight such CTAs (shares of 6144 and 8192 packs).
        assert_eq!(s16(cols(393_216), ""), Some((8, 512, 2048 * 16)));
        assert_eq!(s16(cols(524_288), ""), Some((8, 512, 4096 * 16)));
        // Outside the shares measured ahead, the default shape: one CTA a row (131072), a
        // share of 9376 at C = 4 and 4688 at C = 8 (300007), more than eight CTAs' (786432).
        for c in [131_072, 300_008, 786_432] {
            assert_eq!(s16(cols(c), ""), f32_default(cols(c)), "bf16 {c}");
        }
        assert_eq!(s16(cols(300_008), "").map(|s| s.0), Some(2));
        assert_eq!(f32_default(32_768), Some((2, 1024, 8192 * 16)));
        // wide16=0, fill or cluster turn the rule off.
        assert_eq!(s16(32_768, "wide16=0"), f32_default(32_768));
        assert_eq!(s16(32_768, "fill=0").map(|s| s.0), Some(2));
        let (t, m) = v8_fill_cta(4096, sm).unwrap();
        assert_eq!(s16(32_768, "cluster=8,fill=1"), Some((8, t, m)));
        assert!(V8Tuning::parse("").wide16_rule());
        assert!(!V8Tuning::parse("wide16=0").wide16_rule());
        assert_eq!(V8Tuning::parse("wide16=2").wide16, None);
        // The rule itself: only where the row needs two or more CTAs, never fewer CTAs.
        assert_eq!(v8_wide16_cluster(32_768, 1), None);
        assert_eq!(v8_wide16_cluster(32_768, 2), Some(4));
        assert_eq!(v8_wide16_cluster(32_768, 8), None);
        assert_eq!(v8_wide16_cluster(65_536, 4), Some(8));
        assert_eq!(v8_wide16_cluster(65_537, 4), None);
    }

    #[test]
    fn v8_spreads_two_cta_f32_rows_over_eight_ctas() {
        let sm = SmLimits::H200;
        let s32 = |packs, spec: &str| v8_shape(packs, sm, true, false, V8Tuning::parse(spec));
        let cap = v8_cta_packs(sm.smem_optin);
        // The band: rows of two CTAs' packs with shares from V8_F32_MIN_SHARE, up to where
        // four 256-thread CTAs an SM hold a two-SM row (f32 122880–179200 columns): 2048 packs
        // a CTA in registers, the rest of its eighth in shared memory.
        for packs in [8 * V8_F32_MIN_SHARE, 32_768, 33_024, 37_501, 40_960, 44_800] {
            let smem = (packs.div_ceil(8) - 2048) * 16;
            assert_eq!(s32(packs, ""), Some((8, 256, smem)), "{packs} packs");
            assert!(
                4 * (smem + 1024 + 512) <= sm.smem_optin + 1024,
                "{packs}: {smem} B"
            );
            // f32c8=0, fill or cluster turn the rule off; 16-bit rows never take it.
            assert_eq!(s32(packs, "f32c8=0").map(|s| s.0), Some(2));
            assert_eq!(s32(packs, "fill=0").map(|s| s.0), Some(2));
            assert_eq!(s32(packs, "cluster=4").map(|s| s.0), Some(4));
            let s16 = v8_shape(packs, sm, true, true, V8Tuning::parse("wide16=0"));
            assert_eq!(s16, s32(packs, "f32c8=0"));
        }
        // f32 131072 columns: 32 KB of each CTA's 64 KB in shared memory.
        assert_eq!(s32(32_768, ""), Some((8, 256, 2048 * 16)));
        // Outside the band the default shape: one CTA (cap); two below the least share
        // (98304 and 100003 columns) and where four CTAs an SM no longer fit (past 44800
        // packs); four or more (2 cap + 1).
        let below = 8 * V8_F32_MIN_SHARE - 1;
        for packs in [
            cap,
            cap + 1,
            24_576,
            25_001,
            below,
            44_801,
            2 * cap,
            2 * cap + 1,
        ] {
            assert_eq!(s32(packs, ""), s32(packs, "f32c8=0"), "{packs} packs");
        }
        assert_eq!(s32(2 * cap, "").map(|s| s.0), Some(2));
        assert_eq!(s32(below, "").map(|s| s.0), Some(2));
        assert_eq!(s32(2 * cap + 1, "").map(|s| s.0), Some(4));
        // Before sm_90 (no clusters) nothing changes.
        assert_eq!(
            v8_shape(cap + 1, sm, false, false, V8Tuning::default()),
            v8_shape(cap + 1, sm, false, false, V8Tuning::parse("f32c8=0"))
        );
        assert!(V8Tuning::parse("").f32_rule());
        assert!(!V8Tuning::parse("f32c8=0").f32_rule() && !V8Tuning::parse("fill=1").f32_rule());
        assert_eq!(V8Tuning::parse("f32c8=2").f32c8, None);
        assert_eq!(v8_f32_cluster(32_768, 1, sm), None);
        assert_eq!(v8_f32_cluster(32_768 * 2, 4, sm), None);
        // An SM with half the registers holds two such CTAs, not four: no rule.
        let small = SmLimits { regs: 32_768, ..sm };
        assert_eq!(v8_f32_cluster(32_768, 2, small), None);
    }

    #[test]
    fn v9_tuning_reads_its_settings_else_two_ctas_an_sm_and_half_parts() {
        let d = V9Tuning::parse("");
        assert_eq!((d.per_sm, d.smem_kb), (2, None));
        assert_eq!(d.pref_bytes(512), 64 << 10);
        let t = V9Tuning::parse("x=3, per_sm=1,smem_kb=128");
        assert_eq!((t.per_sm, t.pref_bytes(1024)), (1, 128 << 10));
        assert_eq!(V9Tuning::parse("smem_kb=0").pref_bytes(512), usize::MAX);
        assert_eq!(V9Tuning::parse("per_sm=7").per_sm, 2);
        assert_eq!(V9Tuning::parse("per_sm=0").per_sm, 1);
        assert_eq!(V9Tuning::parse("per_sm=-1,per_sm").per_sm, 2);
        // Ping-pong from 16 CTAs a row by default, where there are two groups to alternate.
        assert!(!d.pingpong_for(15, 17) && d.pingpong_for(16, 16) && d.pingpong_for(132, 2));
        assert!(!d.pingpong_for(264, 1));
        let on = V9Tuning::parse("pp=1");
        assert!(on.pingpong_for(2, 132) && !on.pingpong_for(1, 264) && !on.pingpong_for(8, 1));
        assert!(!V9Tuning::parse("pp=0").pingpong_for(132, 2));
        assert_eq!(V9Tuning::parse("pp=true").pingpong, Some(true));
        assert_eq!(V9Tuning::parse("pp=Off").pingpong, Some(false));
        assert_eq!(V9Tuning::parse("pp=maybe").pingpong, None);
        // The smpair form with two groups by default; forced on or off; a setting it cannot
        // read leaves the default.
        assert!(d.smpair_for(2) && !d.smpair_for(4) && !d.smpair_for(8));
        let on = V9Tuning::parse("pp=1, smpair=on");
        assert!(on.smpair_for(8) && V9Tuning::parse("smpair=1").smpair_for(4));
        assert!(!V9Tuning::parse("smpair=no").smpair_for(2));
        assert!(!V9Tuning::parse("smpair=0").smpair_for(2));
        assert_eq!(V9Tuning::parse("smpair=2x").smpair, None);
    }

    #[test]
    fn v9_smpair_runs_only_with_two_ctas_on_every_sm_and_partnered_groups() {
        // The H200: 132 SMs, two v9 CTAs an SM.
        assert!(v9_smpair_fits(264, 8, 132, Some(2)));
        assert!(v9_smpair_fits(264, 2, 132, Some(2)));
        assert!(v9_smpair_fits(264, 6, 132, Some(2)));
        // An odd number of groups (3 rows of 1 Mi f32), a group with no partner.
        assert!(!v9_smpair_fits(264, 3, 132, Some(2)));
        // A grid short of the SMs' seats (5 groups of 52), or more seats than two an SM.
        assert!(!v9_smpair_fits(260, 5, 132, Some(2)));
        assert!(!v9_smpair_fits(264, 8, 132, Some(3)));
        assert!(!v9_smpair_fits(264, 8, 132, None));
        // One CTA a group (nothing to exchange), or groups that do not divide the grid.
        assert!(!v9_smpair_fits(264, 264, 132, Some(2)));
        assert!(!v9_smpair_fits(264, 10, 132, Some(2)));
        // Another GPU: 114 SMs.
        assert!(v9_smpair_fits(228, 6, 114, Some(2)) && !v9_smpair_fits(264, 8, 114, Some(2)));
    }

    #[test]
    fn v9_s_pairing_slots_match_the_kernel_s() {
        // kernels/softmax.cu: KL_V9_PAIRING_SLOTS = (KL_V9_PAIRING_WORDS · 4 + 15) / 16 with
        // KL_V9_PAIRING_WORDS = 1 + 2 · KL_V9_SMS.
        let src = crate::kernels::SOFTMAX.src;
        let define = |name: &str| -> usize {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("#define {name} in softmax.cu"));
            line.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        let sms = define("KL_V9_SMS");
        assert_eq!(V9_PAIRING_SLOTS, ((1 + 2 * sms) * 4).div_ceil(16));
        assert!(src.contains("#define KL_V9_PAIRING_WORDS (1 + 2 * KL_V9_SMS)"));
        assert!(src.contains("#define KL_V9_PAIRING_SLOTS ((KL_V9_PAIRING_WORDS * 4 + 15) / 16)"));
    }

    #[test]
    fn v9_holds_rows_in_the_fewest_ctas_then_spreads_them_over_the_gpu() {
        let h200 = 232_448;
        const ALL: usize = usize::MAX; // no preference: parts take all the shared memory they can
        let cfg = |g, groups, threads, smem| {
            Some(V9Config {
                g,
                groups,
                threads,
                smem,
            })
        };
        // One 1024-thread CTA an SM: 8192 register packs and 14464 in shared memory.
        let one = v9_smem(h200, 1);
        assert_eq!(one, h200 - 1024);
        // 1 Mi f32: 12 CTAs a row hold it, 11 groups of 12 fill the 132 SMs.
        assert_eq!(
            v9_config(262_144, 4096, 1024, one, ALL, 132),
            cfg(12, 11, 1024, (21_846 - 8192) * 16)
        );
        // 4 Mi f32: 47 CTAs hold a row, so two groups; each spreads over 66 SMs.
        assert_eq!(
            v9_config(1 << 20, 4096, 1024, one, ALL, 132),
            cfg(66, 2, 1024, (15_888 - 8192) * 16)
        );
        // One row takes the whole GPU; its parts then fit in 256 threads' registers.
        assert_eq!(
            v9_config(262_144, 1, 1024, one, ALL, 132),
            cfg(132, 1, 256, 0)
        );
        // Narrow rows: one CTA a row, no finer than a warp, no shared memory.
        assert_eq!(v9_config(0, 4, 1024, one, ALL, 132), cfg(1, 4, 32, 0));
        assert_eq!(
            v9_config(1000, 4096, 1024, one, ALL, 132),
            cfg(1, 132, 128, 0)
        );
        // Wider than every resident CTA holds; nothing resident.
        assert_eq!(v9_config(132 * 22_656 + 1, 1, 1024, one, ALL, 132), None);
        assert_eq!(v9_config(1, 1, 1024, one, ALL, 0), None);
        // Two 512-thread CTAs an SM, each with a share of the SM's shared memory.
        let two = v9_smem(h200, 2);
        assert_eq!(two, h200 / 2 - 3072);
        assert_eq!(
            v9_config(262_144, 4096, 512, two, ALL, 264),
            cfg(24, 11, 512, (10_923 - 4096) * 16)
        );
        // The default preference, parts at most half in shared memory (64 KB beside the 64 KB of
        // registers): 1 Mi f32 then takes 32 CTAs a row, 8 groups of 33.
        let half = 512 * V9_K * 16;
        assert_eq!(
            v9_config(262_144, 4096, 512, two, half, 264),
            cfg(33, 8, 512, (7944 - 4096) * 16)
        );
        // A row wider than half-parts hold takes the whole shared memory instead.
        assert_eq!(
            v9_config(264 * 8192 + 1, 1, 512, two, half, 264),
            cfg(264, 1, 512, (8193 - 4096) * 16)
        );
        assert_eq!(v9_config(264 * 11_168 + 1, 1, 512, two, half, 264), None);
    }

    #[test]
    fn v10_lags_far_enough_that_every_wait_looks_back_in_time() {
        // A row of one tile: the second pass one iteration behind the first.
        let c = v10_config(2048, 4096, 2048, 264, 0).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (264, 1, 1));
        // 4 Mi f32 (1 Mi packs) in tiles of 2048 packs: 512 a row over 264 CTAs, so a row's
        // last tile comes two iterations after its first: lag 3.
        let c = v10_config(1 << 20, 64, 2048, 264, 0).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (264, 512, 3));
        assert_eq!(c.l2_window(), 4 * 264 * 2048 * 16);
        // A partial last tile counts; the extra lag adds on.
        let c = v10_config(2049, 1, 2048, 264, 2).unwrap();
        assert_eq!((c.grid, c.cpr, c.lag), (2, 2, 4));
        // Fewer tiles than resident CTAs: one CTA a tile. An empty row still has a tile.
        assert_eq!(v10_config(100, 3, 2048, 264, 0).unwrap().grid, 3);
        assert_eq!(v10_config(0, 0, 2048, 264, 0).unwrap().cpr, 1);
        assert_eq!(v10_config(1, 1, 2048, 0, 0), None);
        // Whatever the shape: every tile of a row lies at most lag − 1 iterations after the
        // row's first tile, from any tile's iteration (tile t's is t / grid).
        for (packs, rows, resident) in [(5000, 7, 264), (1 << 20, 3, 132), (9000, 40, 17)] {
            let c = v10_config(packs, rows, 2048, resident, 0).unwrap();
            for t in 0..rows * c.cpr {
                let last = (t / c.cpr) * c.cpr + c.cpr - 1;
                assert!(
                    last / c.grid < t / c.grid + c.lag,
                    "{packs} {rows} {resident}: {t}"
                );
            }
        }
    }

    #[test]
    fn v10_tuning_reads_its_settings() {
        let t = |u, extra_lag, max_grid| V10Tuning {
            u,
            extra_lag,
            max_grid,
        };
        assert_eq!(V10Tuning::parse(""), t(4, 0, None));
        assert_eq!(V10Tuning::parse("u=2, lag=3"), t(2, 3, None));
        assert_eq!(V10Tuning::parse("u=8,lag=x,grid=0"), t(4, 0, None));
        assert_eq!(V10Tuning::parse("grid=132"), t(4, 0, Some(132)));
        // The settings reach the shape: f32 256×1 Mi (262144 packs) on 264 resident CTAs.
        let d = t(4, 0, None).shape(262_144, 256, 264).unwrap();
        assert_eq!((d.grid, d.tile, d.cpr, d.lag), (264, 2048, 128, 2));
        let c = t(2, 3, Some(132)).shape(262_144, 256, 264).unwrap();
        assert_eq!((c.grid, c.tile, c.cpr), (132, 1024, 256));
        assert_eq!(c.lag, 255usize.div_ceil(132) + 1 + 3);
        // A cap above the resident CTAs changes nothing, nor one at the tiles' count (the grid
        // is never more than the tiles); a cap of 0 leaves no CTA to run on.
        assert_eq!(t(4, 0, Some(1000)).shape(262_144, 256, 264), Some(d));
        assert_eq!(t(4, 0, None).shape(100, 1, 264).unwrap().grid, 1);
        let one_row = t(4, 0, None).shape(262_144, 1, 264).unwrap();
        assert_eq!(one_row.grid, 128);
        assert_eq!(t(4, 0, Some(128)).shape(262_144, 1, 264), Some(one_row));
        assert_eq!(t(4, 0, Some(0)).shape(262_144, 1, 264), None);
    }

    #[test]
    fn v2_gives_narrow_rows_several_to_a_warp() {
        assert_eq!(v2_shape(1), Some((4, "w4".into()))); // 1–4 slots: 8 rows a warp
        assert_eq!(v2_shape(4), Some((4, "w4".into()))); // 32 bf16 columns
        assert_eq!(v2_shape(5), Some((8, "w8".into())));
        assert_eq!(v2_shape(16), Some((16, "w16".into()))); // 64 f32 columns
        assert_eq!(v2_shape(17), Some((32, "k1".into())));
        assert_eq!(v2_shape(33), Some((32, "k2".into())));
        assert_eq!(v2_shape(256), Some((32, "k8".into())));
        assert_eq!(v2_shape(257), None);
    }

    #[test]
    fn auto_dispatch_follows_the_register_limits() {
        assert_eq!(dispatch(DType::F32, 1024, true), "v2_warp_row");
        assert_eq!(dispatch(DType::F32, 1025, false), "v3_block_regs");
        assert_eq!(dispatch(DType::F32, 32768, true), "v3_block_regs");
        assert_eq!(dispatch(DType::BF16, 65536, true), "v3_block_regs");
        assert_eq!(dispatch(DType::F32, 32769, false), "v4_online");
    }

    #[test]
    fn auto_reports_the_version_it_runs() {
        let t =
            |cols: usize, dt: DType| Tensor::empty(&[2, cols], dt, &crate::Device::Cpu).unwrap();
        assert_eq!(auto_choice(&t(512, DType::F32)), "v2_warp_row");
        assert_eq!(auto_choice(&t(4096, DType::F32)), "v3_block_regs");
        assert_eq!(auto_choice(&t(65536, DType::BF16)), "v3_block_regs");
        // Without a Hopper GPU (here: a CPU tensor) wide rows go to v4, never to v5.
        assert_eq!(auto_choice(&t(100_000, DType::BF16)), "v4_online");
        // Odd: the scalar v2 holds 256 columns.
        assert_eq!(auto_choice(&t(1001, DType::F32)), "v3_block_regs");
        // Nothing ran on these layouts: the label is the first choice.
        assert_eq!(auto_label(&t(4096, DType::F32)), "v3_block_regs");
    }

    #[test]
    fn auto_labels_what_ran_and_who_chose_it() {
        assert_eq!(pick_label("v8_onchip", false, None), "v8_onchip");
        assert_eq!(
            pick_label("v8_onchip", false, Some("v8_onchip")),
            "v8_onchip"
        );
        assert_eq!(
            pick_label("v8_onchip", true, Some("v8_onchip")),
            "v8_onchip (autotuned)"
        );
        assert_eq!(pick_label("v6_split", true, None), "v6_split (autotuned)");
        // A choice that refused the shape: the fallback that ran is named first.
        assert_eq!(
            pick_label("v9_gridsync", true, Some("v4_online")),
            "v4_online (v9_gridsync, autotuned, refused the shape)"
        );
        assert_eq!(
            pick_label("v8_onchip", false, Some("v6_split")),
            "v6_split (v8_onchip refused the shape)"
        );
    }

    #[test]
    fn v3_reads_k_and_names_a_value_it_ignores() {
        assert_eq!(v3_parse_k(""), None);
        assert_eq!(v3_parse_k("scalar"), None);
        assert_eq!(v3_parse_k("k=2"), Some(Ok(2)));
        assert_eq!(v3_parse_k(" k = 4 "), Some(Ok(4)));
        assert_eq!(v3_parse_k("k=3"), Some(Err("3".into())));
        assert_eq!(v3_parse_k("k"), Some(Err(String::new())));
    }

    #[test]
    fn v7_tuning_reads_its_settings_over_the_defaults() {
        let d = V7Tuning::default();
        assert_eq!(V7Tuning::parse(""), d);
        // Spaces around keys and values are allowed; sizes are KiB.
        let t = V7Tuning::parse(" whole = 32 , tile=16,lag= 2");
        assert_eq!((t.whole, t.tile, t.lag), (32 << 10, 16 << 10, 2));
        assert_eq!((t.part, t.per_sm), (d.part, d.per_sm));
        assert_eq!(
            V7Tuning::parse("per_sm=9,lag=9"),
            V7Tuning {
                per_sm: 2,
                lag: 3,
                ..d
            }
        );
        assert_eq!(V7Tuning::parse("part=x,whole,nothing=1"), d);
    }

    #[test]
    fn v7_tiles_whole_rows_splits_wide_ones_and_fills_the_gpu() {
        let t = V7Tuning {
            whole: 64 << 10,
            part: 32 << 10,
            tile: 32 << 10,
            per_sm: 1,
            lag: 1,
        };
        let smem = 225 << 10;
        let cfg = |packs, rows| {
            v7_config(packs, rows, 132, smem, t)
                .map(|c| (c.g, c.r, c.part_packs, c.stages, c.units))
        };
        // 4096 f32 columns: tiles of two whole rows, 7 stages of 32 KB, every SM.
        assert_eq!(cfg(1024, 4096), Some((1, 2, 1024, 7, 132)));
        // 12672 f32: one row a tile, as many 49.5 KB stages as fit.
        assert_eq!(cfg(3168, 4096), Some((1, 1, 3168, 4, 132)));
        // 131072 f32: 16 parts of 32 KB, 8 units of 16 CTAs.
        assert_eq!(cfg(32768, 2048), Some((16, 1, 2048, 7, 8)));
        // 1 Mi f32: one unit over all 132 SMs.
        assert_eq!(cfg(262144, 256), Some((132, 1, 1986, 7, 1)));
        // 4 Mi f32: parts of 127 KB, one stage; 8 Mi f32 does not fit.
        assert_eq!(cfg(1 << 20, 64), Some((132, 1, 7944, 1, 1)));
        assert_eq!(cfg(2 << 20, 64), None);
        // One 4096 f32 row: split, but no part under 1 KB.
        assert_eq!(cfg(1024, 1), Some((16, 1, 64, 8, 1)));
        // Three tiny rows: one each, whole.
        assert_eq!(cfg(4, 3), Some((1, 1, 4, 8, 3)));
        // Every configuration covers the row and fits the shared memory.
        for packs in [1, 7, 100, 1023, 4097, 33333, 262145, 999_999] {
            for rows in [1, 3, 131, 4096] {
                if let Some(c) = v7_config(packs, rows, 132, smem, t) {
                    assert!(
                        c.g * c.part_packs >= packs && c.smem_bytes() <= smem,
                        "{packs}×{rows}: {c:?}"
                    );
                    assert!(
                        c.grid() <= 132
                            && c.r.is_power_of_two()
                            && c.r <= 16
                            && (c.r == 1 || c.g == 1)
                    );
                    assert!((1..=V7_MAX_STAGES).contains(&c.stages));
                }
            }
        }
    }

    #[test]
    fn v6_holds_rows_in_the_fewest_ctas_and_fills_the_gpu() {
        // 264 resident CTAs: the H200's 132 SMs × 2 CTAs of 512 threads.
        assert_eq!(v6_config(1024, 4096, 264), Some((1, 128))); // 4096 f32, many rows
        assert_eq!(v6_config(32768, 2048, 264), Some((8, 512))); // 131072 f32
        assert_eq!(v6_config(262145, 255, 264), Some((65, 512))); // 1048577 f32, peeled
        assert_eq!(v6_config(1 << 20, 64, 264), Some((256, 512))); // 4 Mi f32: 256 CTAs
        assert_eq!(v6_config(2 << 20, 64, 264), None); // 8 Mi f32: more than the GPU holds

        // One row of 131072 f32: split over 128 one-warp CTAs instead of 8 of 512 threads.
        assert_eq!(v6_config(32768, 1, 264), Some((128, 32)));
        // A short row is never split below one warp's slots.
        assert_eq!(v6_config(100, 1, 264), Some((1, 32)));
    }

    #[test]
    fn v5_picks_small_ctas_and_the_smallest_cluster() {
        assert_eq!(v5_config(1024), Some((1, 256, 4))); // 4096 f32: one CTA of 256 × 4
        assert_eq!(v5_config(8192), Some((4, 256, 8))); // 32768 f32: 4 CTAs of 256 × 8
        assert_eq!(v5_config(32768), Some((16, 256, 8))); // 131072 f32
        assert_eq!(v5_config(131072), Some((16, 1024, 8))); // 1 M bf16
        assert_eq!(v5_config(131073), None);
        assert_eq!(v5_config(100), Some((1, 64, 2)));
    }
}
