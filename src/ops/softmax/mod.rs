//! Softmax over the last dimension. Minimum traffic: read rows·cols and write rows·cols
//! elements; FLOPs ≈ 5 per element. Semantics as PyTorch: a row of all −inf, or one holding
//! NaN or +inf, gives NaN outputs.
//!
//! Variants: `reference` (f64), `manual` (the lecture's `manual_softmax`: row max, subtract,
//! exp, row sum, divide — one launch or pass each), `cuda/v1_block_row` … `cuda/v11_deal`,
//! `cuda/auto` (the autotuned (version, configuration) where `kernlab autotune softmax` cached
//! one, else the width heuristic, [`heuristic_choice`]), `cpu/fused`. v3, v8, v9 and v11 have
//! named launch configurations ([`configs`]) that autotune measures.

use super::cpu_prims::{self as prim};
use super::launch::{aligned16, cfg_1d, cuda_io, CudaIo};
use super::Params;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::kernels::{ELEMENTWISE, SOFTMAX};
use crate::launch;
use crate::tensor::Tensor;
use cudarc::driver::{CudaView, LaunchConfig};
use rayon::prelude::*;

mod cpu;
mod deal;
mod onchip;
mod tune;
pub use cpu::*;
pub use deal::*;
pub use onchip::*;
pub use tune::*;

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
    let xf_own = super::manual_x_f32(&dev, io.x, dt, n, cfg, "manual softmax: x as f32")?;
    let xf = xf_own.as_ref().unwrap_or(io.x);
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

/// The versions fed by TMA bulk copies (v11) run on sm_90 and later; they refuse older
/// devices, naming the device's arch.
fn require_bulk_copies(variant: &str, io: &CudaIo) -> Result<()> {
    let (major, minor) = io.dev.props.compute_capability;
    if major >= 9 {
        return Ok(());
    }
    Err(unsupported(
        variant,
        format!("bulk copies need sm_90 or later; this device is sm_{major}{minor}"),
    ))
}

/// The versions that move only 16-byte packs (v8's and v9's cp.async, v11's bulk copies) take
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
/// kernel and PyTorch's are timed by one harness in one process (across processes the same
/// call's time moves by about a µs; docs/perf-notes.md, "softmax against PyTorch").
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
    let (io, r) = rows_io(x, y)?;
    let width = if r.vec { r.pack } else { 1 };
    let (lanes, shape) = v2_shape(r.cols.div_ceil(width))
        .ok_or_else(|| too_wide("v2_warp_row", r.cols, v2_max_cols(x.dtype(), r.vec)))?;
    let cfg = cfg_1d(r.rows as u64 * lanes as u64, V2_THREADS)?;
    let name = format!("softmax_v2_warp_row_{}_{shape}_{}", kind(r.vec), x.dtype());
    launch_rows(io, &r, p, name, cfg)
}

/// v2's threads a block: 128 (four rows of a warp, or more of W lanes); kernels/softmax.cu's
/// KL_V2_THREADS, its kernels' launch bound.
pub const V2_THREADS: u32 = 128;

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
/// else 8; [`V3Tuning`] may force another K); threads = the slots the row needs / K, rounded
/// up to a warp. Small blocks let several rows share an SM, so one row's loads overlap
/// another's reductions (one 1024-thread block a row with a slot each ran far slower;
/// docs/perf-notes.md, "softmax v3").
///
/// Rows that are not pack-aligned but equally misaligned in x and y (contiguous rows of an odd
/// width) take the shifted form: the same 16-byte packs, aligned to memory, each row's first and
/// last moved lane by lane; one slot more a row at most ([`v3_max_cols_shift`]).
///
/// The default run: the configuration `kernlab autotune` cached for this input's bucket, else
/// [`V3Tuning::DEFAULT`].
pub fn run_v3_block_regs(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match cached_tuning("v3_block_regs", x) {
        Some(Tuning::V3(t)) => run_v3_tuned(p, x, y, t),
        _ => run_v3_tuned(p, x, y, V3Tuning::DEFAULT),
    }
}

/// v3 in the tuning given.
pub fn run_v3_tuned(p: &Params, x: &Tensor, y: &mut Tensor, tuning: V3Tuning) -> Result<()> {
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
    let k = tuning.slots_per_thread(slots).unwrap_or(k);
    let threads = (slots.div_ceil(k).div_ceil(32) * 32).clamp(32, 1024) as u32;
    let cfg = LaunchConfig {
        grid_dim: (r.rows as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let form = match shift {
        true if v3_split_16(x.dtype(), r.cols) => "shiftsplit",
        true => "shift",
        false => kind(r.vec),
    };
    let name = format!("softmax_v3_block_regs_{form}_k{k}_{}", x.dtype());
    launch_rows(io, &r, p, name, cfg)
}

/// The packs v3's shifted form gives a row of `cols` columns that starts up to `pack − 1`
/// elements past a 16-byte boundary: enough for the worst start.
pub fn v3_shift_slots(cols: usize, pack: usize) -> usize {
    (cols + pack - 1).div_ceil(pack)
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

/// Launch a row kernel that takes a cluster size after the (x, y, rows, cols, ldx, ldy, lg)
/// arguments (v8) in clusters of `c` CTAs.
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

/// Whether the packed kernels that peel (v4's and v6's peeled kernels, v8, v9, v11) can move this
/// call's rows in 16-byte packs: x's and y's row strides equal modulo the pack, so that their
/// rows are equally misaligned, and both bases aligned. [`packs_layout_ok`] is the same test for the
/// contiguous output the registry's callers pass.
fn peelable(r: &Rows, io: &CudaIo) -> bool {
    r.ldx.abs_diff(r.ldy).is_multiple_of(r.pack as u64)
        && aligned16(&io.dev, io.x)
        && aligned16(&io.dev, io.y)
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

/// The versions `auto` chooses among (and `kernlab autotune softmax` measures, each in its
/// named configurations: [`config_names`]).
pub const AUTO_CANDIDATES: [&str; 7] = [
    "v2_warp_row",
    "v3_block_regs",
    "v4_online",
    "v6_split",
    "v8_onchip",
    "v9_gridsync",
    "v11_deal",
];

/// Run one of [`AUTO_CANDIDATES`] by name, in its default run (a tunable version in its
/// cached configuration, else its default).
pub fn run_named(name: &str, p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match name {
        "v2_warp_row" => run_v2_warp_row(p, x, y),
        "v3_block_regs" => run_v3_block_regs(p, x, y),
        "v4_online" => run_v4_online(p, x, y),
        "v6_split" => run_v6_split(p, x, y),
        "v8_onchip" => run_v8_onchip(p, x, y),
        "v9_gridsync" => run_v9_gridsync(p, x, y),
        "v11_deal" => run_v11_deal(p, x, y),
        other => Err(Error::Invalid(format!(
            "softmax has no version '{other}' (versions: {})",
            AUTO_CANDIDATES.join(", ")
        ))),
    }
}

/// The numbered version `auto` tries first for this input: the choice `kernlab autotune
/// softmax` cached for this device, dtype and shape bucket when there is one, else the
/// heuristic.
pub fn auto_choice(x: &Tensor) -> &'static str {
    auto_decision(x).0
}

/// What `auto` runs first for this input: (version, configuration, whether the autotune cache
/// chose them). The cached winner where its version and configuration are known here, else
/// the heuristic's version in its default run (configuration "").
pub fn auto_decision(x: &Tensor) -> (&'static str, &'static str, bool) {
    if let Some(d) = x.device().cuda() {
        if let Some(e) =
            crate::autotune::lookup(d, super::Op::Softmax, "auto", x.dtype(), x.shape())
        {
            if let Some(v) = AUTO_CANDIDATES.iter().find(|v| **v == e.variant) {
                if let Some(c) = known_config(v, &e.config) {
                    return (v, c, true);
                }
            }
        }
    }
    (heuristic_choice(x), "", false)
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
    let (choice, config, tuned) = auto_decision(x);
    let key = auto_key(x);
    let ran = AUTO_RAN.get().filter(|(k, _)| *k == key).map(|(_, v)| v);
    pick_label(choice, config, tuned, ran)
}

/// `auto`'s label for its first `choice` in `config` (from the autotune cache where `tuned`)
/// and the version that `ran`, where known.
fn pick_label(choice: &str, config: &str, tuned: bool, ran: Option<&str>) -> String {
    let by = if tuned { ", autotuned," } else { "" };
    let first = if config.is_empty() {
        choice.to_string()
    } else {
        format!("{choice} {config}")
    };
    match ran {
        Some(v) if v != choice => format!("{v} ({first}{by} refused the shape)"),
        _ if tuned => format!("{first} (autotuned)"),
        _ => first,
    }
}

/// The widest row (bytes) `auto` sends to v11 rather than v9 on sm_90: v11 led v9 from 2 to
/// 8 MB rows and fell far behind at 16 MB, where one row holds most of the grid's slots and
/// rows barely overlap (docs/perf-notes.md, "softmax v11").
pub const V11_ROW_BYTES: usize = 8 << 20;

/// The narrowest odd (unpackable) width `auto` sends to v8 on sm_90 rather than v3: the
/// narrowest where v8 led v3's scalar path (docs/perf-notes.md, "softmax auto"); 16-bit rows
/// go past [`V3_SHIFT_16_UPTO`].
pub const V8_ODD_FROM: usize = 641;

/// The widest 16-bit odd row `auto` keeps on v3's shifted form on sm_90 rather than v8: its
/// packs (one more than the row's own at most) fill one warp of four slots a thread.
pub const V3_SHIFT_16_UPTO: usize = 32 * 4 * 8 - 7;

/// 16-bit rows from this width that v3 shifts take its split kernels
/// (`softmax_v3_block_regs_shiftsplit_*`: every whole pack's load sent before the partial
/// packs' lanes are read): their shifted packs fill more than one warp at four a thread, where
/// the split kernels led the one-loop ones (narrower 16-bit rows, and f32 rows, which have no
/// split kernels, ran level or behind; docs/perf-notes.md, "softmax v3").
pub const V3_SPLIT_16_FROM: usize = V3_SHIFT_16_UPTO + 1;

/// Whether v3's shifted form takes its split kernel for a row of `cols` columns of `dt`.
pub fn v3_split_16(dt: DType, cols: usize) -> bool {
    dt != DType::F32 && cols >= V3_SPLIT_16_FROM
}

/// 16-bit odd widths past [`V3_SHIFT_16_UPTO`] that `auto` also keeps on v3's shifted form
/// (its split kernels) on sm_90 rather than v8. From 2057 columns v8's row no longer fits 32
/// threads of [`V8_K`] packs (256 packs), so it takes 64 threads holding 4–7 packs each: half
/// the CTAs an SM, and two waves of rows; v3 leads there until v8's threads fill toward eight
/// packs (docs/perf-notes.md, "softmax auto").
pub const V3_SPLIT_16_BAND: std::ops::RangeInclusive<usize> = 2057..=3457;

/// Whether a 16-bit row of `cols` columns (odd: not a pack multiple; one v8 takes, so its x and
/// y rows are misaligned alike and v3 shifts it) stays on v3: up to [`V3_SHIFT_16_UPTO`], and
/// in [`V3_SPLIT_16_BAND`].
fn v3_shift_16(dt: DType, cols: usize) -> bool {
    dt != DType::F32 && (cols <= V3_SHIFT_16_UPTO || V3_SPLIT_16_BAND.contains(&cols))
}

/// Packed f32 rows from 16385 columns up to (not including) this many go to v8 on sm_90
/// rather than v3, which holds them eight slots a thread slowly there; level at 28672, v3
/// ahead past it (docs/perf-notes.md, "softmax auto").
pub const V8_F32_PACKED_BELOW: usize = 28_672;

/// The width heuristic (its measurements: docs/perf-notes.md, "softmax auto"): v2 for rows a
/// warp holds, v3 for rows a block holds; on sm_90, v8 (a row per CTA in registers and shared
/// memory, clusters of up to 8 past that for f32, up to 2 for 16-bit rows and up to 8 where
/// [`v8_wide16_cluster`] sizes them) for odd widths from
/// [`V8_ODD_FROM`] (16-bit ones past [`V3_SHIFT_16_UPTO`] and outside [`V3_SPLIT_16_BAND`]), for 16-bit rows of 16385–65536 and f32 rows of 16385 to
/// [`V8_F32_PACKED_BELOW`] − 1 (where v3 runs four or eight slots a thread slowly) and for
/// every wider row it holds;
/// then v11 (chunks dealt on demand) for rows of whole packs up to [`V11_ROW_BYTES`] that v9
/// and v11 hold; v9 (v8's parts across co-resident CTAs) for the rows all resident CTAs hold;
/// v6 (rows split across CTAs, in registers, where its resident CTAs hold the row) for odd
/// widths past 4096 that peel, and on sm_90 for the rows v9 does not take, before sm_90 for
/// rows of at most 2 MB or fewer rows than SMs; v4 beyond. Each version then runs in its
/// default configuration.
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
    // v8 in clusters of at most 8 for f32 (at 16 it ran no better than v6), and of at most 2
    // for 16-bit rows (past that v9 led it), except where its 16-bit cluster rule
    // (`v8_wide16_cluster`) sizes four or eight CTAs for two an SM.
    let v8_max_c = if dt == DType::F32 { 8 } else { 2 };
    let v8_takes = hopper
        && peelable
        && cuda.as_ref().is_some_and(|d| {
            let (packs, optin) = (cols / pack, d.props.max_smem_per_block_optin);
            v8_config(packs, optin, v8_max_c).is_some()
                || (dt != DType::F32
                    && V8Tuning::DEFAULT.wide16_rule()
                    && v8_config(packs, optin, 16)
                        .and_then(|(c, _, _)| v8_wide16_cluster(packs, c))
                        .is_some())
        });
    // v9's capacity (an occupancy query) bounds v11's rule and v9's own: asked once, if at all.
    let v9_holds_cell = std::cell::OnceCell::new();
    let v9_holds = || {
        *v9_holds_cell.get_or_init(|| {
            hopper
                && peelable
                && cuda
                    .as_ref()
                    .and_then(|d| v9_max_cols(d, dt))
                    .is_some_and(|m| cols <= m)
        })
    };
    // v11's own capacity (its plan: the slots shared memory holds, one CTA an SM, every chunk
    // of a row in the grid at once), so that a row v11 would refuse goes on to v9's rule.
    let v11_holds = || {
        hopper
            && peelable
            && cuda.as_ref().is_some_and(|d| {
                let t = V11Tuning::DEFAULT;
                v11_plan(d, &v11_kernel(t.chunk, dt), cols / pack, rows, t).is_ok()
            })
    };
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
        // Odd widths past v2's reach (from V8_ODD_FROM columns on sm_90): v8 and v6 peel a
        // scalar head and tail around 16-byte packs, and v8 led both v6 and v3's scalar path
        // there. 16-bit odd widths up to V3_SHIFT_16_UPTO (v3's shifted packs in one warp) and
        // in V3_SPLIT_16_BAND stay on v3, which led v8 there; f32 stays on v8.
        "v3_block_regs" if !vec && cols >= V8_ODD_FROM && v8_takes && !v3_shift_16(dt, cols) => {
            "v8_onchip"
        }
        "v3_block_regs" if !vec && cols > 4096 && peelable && v6_fits(true) => "v6_split",
        // 16-bit rows of 16385–65536 columns: v3 holds them four or eight slots a thread, and
        // v8 (512 threads of eight) and v6 both led it.
        "v3_block_regs" if vec && dt != DType::F32 && (16_385..=65_536).contains(&cols) => {
            if v8_takes {
                "v8_onchip"
            } else if hopper && v6_fits(true) {
                "v6_split"
            } else {
                "v3_block_regs"
            }
        }
        // Packed f32 rows of 16385 to V8_F32_PACKED_BELOW − 1 columns: v3 runs them eight
        // slots a thread in blocks of 544–896 threads, and v8 led it.
        "v3_block_regs"
            if vec
                && dt == DType::F32
                && (16_385..V8_F32_PACKED_BELOW).contains(&cols)
                && v8_takes =>
        {
            "v8_onchip"
        }
        // Past what a block's registers hold: v8 led v6 wherever it holds the row.
        "v4_online" if v8_takes => "v8_onchip",
        // Past that, on sm_90, rows of whole packs of at most V11_ROW_BYTES: v11 (chunks
        // dealt on demand), which led v9 there; odd widths stay on v9. It asks v11's own
        // capacity too (a row it cannot hold takes v9's rule next).
        "v4_online" if vec && cols * dt.size() <= V11_ROW_BYTES && v9_holds() && v11_holds() => {
            "v11_deal"
        }
        // Past that, on sm_90, v9 (v8's parts split across co-resident CTAs) wherever every
        // resident CTA together holds the row: it led v6 and v8's clusters of 16 there.
        "v4_online" if v9_holds() => "v9_gridsync",
        // Then v6 wherever its resident CTAs hold the row: with the tagged exchange it beats
        // v4 on sm_90 (docs/perf-notes.md, "softmax v6"). Elsewhere (not measured) the earlier
        // rule: rows up to 2 MB, or fewer rows than SMs.
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

/// Run `f` with the split-row kernels' (v6, v9) workspace, laid out as kernels/softmax.cu's
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

/// auto: runs what [`auto_decision`] picks (a version, in its cached configuration where the
/// autotune cache chose it). A tuned choice that cannot take this exact shape (a bucket spans
/// widths) falls back to the heuristic's version in its default run, and anything refused to
/// v4, which takes every width.
pub fn run_auto(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
    AUTO_RAN.set(None);
    let ran = run_auto_steps(p, x, y)?;
    AUTO_RAN.set(Some((auto_key(x), ran)));
    Ok(())
}

/// [`run_auto`]'s steps; the version that ran.
fn run_auto_steps(p: &Params, x: &Tensor, y: &mut Tensor) -> Result<&'static str> {
    let (choice, config, _) = auto_decision(x);
    if choice != "v4_online" {
        match run_config(choice, config, p, x, y) {
            Err(Error::UnsupportedShape { .. }) => {}
            r => return r.map(|_| choice),
        }
        // Only now the heuristic (a call costs host time, and tiny problems are launch-bound).
        // A named configuration that refused the shape leaves its version's default run to try.
        let h = heuristic_choice(x);
        if h != "v4_online" && (h != choice || !config.is_empty()) {
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
    let forms: &[&str] = match dt {
        DType::F32 => &["vec", "scalar", "shift"],
        _ => &["vec", "scalar", "shift", "shiftsplit"],
    };
    KS.iter()
        .flat_map(|k| {
            forms
                .iter()
                .map(move |v| format!("softmax_v3_block_regs_{v}_k{k}_{dt}"))
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
    v.extend(symbols_v6(dt));
    v.extend(symbols_v8(dt));
    v.extend(symbols_v9(dt));
    v.extend(symbols_v11(dt));
    v
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

    /// 16-bit shifted rows wider than one warp holds at four packs a thread take the split
    /// kernels, which only 16-bit dtypes have; `auto`'s band for them lies past that and below
    /// the aligned 4096 columns where v8's rule was measured.
    #[test]
    fn v3_splits_only_16_bit_rows_past_one_warp() {
        for dt in [DType::BF16, DType::F16] {
            assert!(!v3_split_16(dt, V3_SHIFT_16_UPTO));
            assert!(v3_split_16(dt, V3_SPLIT_16_FROM));
            assert!(v3_split_16(dt, v3_max_cols_shift(dt)));
            let split = symbols_v3(dt);
            assert!(split.contains(&format!("softmax_v3_block_regs_shiftsplit_k4_{dt}")));
            assert_eq!(
                split.iter().filter(|s| s.contains("shiftsplit")).count(),
                KS.len()
            );
        }
        assert!(!v3_split_16(DType::F32, 4097));
        assert!(!symbols_v3(DType::F32)
            .iter()
            .any(|s| s.contains("shiftsplit")));
        let (lo, hi) = (*V3_SPLIT_16_BAND.start(), *V3_SPLIT_16_BAND.end());
        assert!(V3_SPLIT_16_FROM < lo && lo <= hi && hi < 4096);
        assert!(v3_shift_16(DType::BF16, lo) && v3_shift_16(DType::F16, hi));
        assert!(!v3_shift_16(DType::BF16, lo - 2) && !v3_shift_16(DType::BF16, hi + 2));
        assert!(!v3_shift_16(DType::F32, lo));
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
        // Without a Hopper GPU (here: a CPU tensor) wide rows go to v4.
        assert_eq!(auto_choice(&t(100_000, DType::BF16)), "v4_online");
        // Odd: the scalar v2 holds 256 columns.
        assert_eq!(auto_choice(&t(1001, DType::F32)), "v3_block_regs");
        // Nothing ran on these layouts: the label is the first choice.
        assert_eq!(auto_label(&t(4096, DType::F32)), "v3_block_regs");
    }

    #[test]
    fn auto_labels_what_ran_and_who_chose_it() {
        assert_eq!(pick_label("v8_onchip", "", false, None), "v8_onchip");
        assert_eq!(
            pick_label("v8_onchip", "", false, Some("v8_onchip")),
            "v8_onchip"
        );
        assert_eq!(
            pick_label("v8_onchip", "fill", true, Some("v8_onchip")),
            "v8_onchip fill (autotuned)"
        );
        assert_eq!(
            pick_label("v6_split", "", true, None),
            "v6_split (autotuned)"
        );
        // A choice that refused the shape: the fallback that ran is named first.
        assert_eq!(
            pick_label("v9_gridsync", "pingpong", true, Some("v4_online")),
            "v4_online (v9_gridsync pingpong, autotuned, refused the shape)"
        );
        assert_eq!(
            pick_label("v8_onchip", "", false, Some("v6_split")),
            "v6_split (v8_onchip refused the shape)"
        );
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
}
