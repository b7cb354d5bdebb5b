use super::*;

// ---- hand-written CUDA ------------------------------------------------------------------------
/// Register-resident versions keep K slots per thread; these are the compiled K values.
pub(super) use crate::ops::row_slots::KS;

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
pub(super) struct Rows {
    pub(super) rows: usize,
    pub(super) cols: usize,
    pub(super) ldx: i64,
    pub(super) ldy: i64,
    /// 16-byte packs usable: cols and both row strides multiples of the pack, bases aligned.
    pub(super) vec: bool,
    pub(super) pack: usize,
}

/// The device buffers of a call and their rows' layout. `y` may have its own row stride (the
/// kernels take one); it must have x's shape, and rows laid out as rows (contiguous, or rows
/// apart by a stride of at least their width), else this refuses it rather than write past it.
pub(super) fn rows_io<'a>(x: &'a Tensor, y: &'a mut Tensor) -> Result<(CudaIo<'a>, Rows)> {
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
pub(super) fn unsupported(variant: &str, why: String) -> Error {
    Error::UnsupportedShape {
        op: "softmax".into(),
        variant: variant.into(),
        why,
    }
}

pub(super) fn too_wide(variant: &str, cols: usize, max: usize) -> Error {
    unsupported(
        variant,
        format!("rows of {cols} columns are wider than the {max} it holds in registers (use v4_online or auto)"),
    )
}

/// The versions fed by TMA bulk copies (v11) run on sm_90 and later; they refuse older
/// devices, naming the device's arch.
pub(super) fn require_bulk_copies(variant: &str, io: &CudaIo) -> Result<()> {
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
pub(super) fn require_peelable(variant: &str, r: &Rows, io: &CudaIo) -> Result<()> {
    if peelable(r, io) {
        return Ok(());
    }
    Err(unsupported(
        variant,
        "x's and y's rows are not equally aligned to 16 bytes (row strides differ modulo a 16-byte pack): use v6_split or auto".into(),
    ))
}

/// Launch a row kernel with the (x, y, rows, cols, ldx, ldy, lg) arguments they all take.
pub(super) fn launch_rows(
    io: CudaIo,
    r: &Rows,
    p: &SoftmaxParams,
    name: String,
    cfg: LaunchConfig,
) -> Result<()> {
    let (rows, cols, lg) = (r.rows as i32, r.cols as i32, p.log_softmax as i32);
    launch!(
        io.dev,
        &SOURCE,
        name,
        cfg,
        [io.x, io.y, &rows, &cols, &r.ldx, &r.ldy, &lg]
    );
    Ok(())
}

pub(super) fn check_rows(x: &Tensor) -> Result<()> {
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
pub fn run_v1_block_row(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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

pub(super) fn kind(vec: bool) -> &'static str {
    if vec {
        "vec"
    } else {
        "scalar"
    }
}

/// v2: one warp per row, 4 rows per block; K = the fewest slots per lane that hold the row.
pub fn run_v2_warp_row(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
pub fn run_v3_block_regs(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    match cached_tuning("v3_block_regs", x) {
        Some(Tuning::V3(t)) => run_v3_tuned(p, x, y, t),
        _ => run_v3_tuned(p, x, y, V3Tuning::DEFAULT),
    }
}

/// v3 in the tuning given.
pub fn run_v3_tuned(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor, tuning: V3Tuning) -> Result<()> {
    let (io, r, name, cfg) = v3_launch(x, y, tuning)?;
    launch_rows(io, &r, p, name, cfg)
}

/// The kernel v3 launches for `x` into `y` in `tuning` (its form — vec, scalar, shift or
/// shiftsplit — and slots a thread), without launching it.
pub fn v3_kernel(x: &Tensor, y: &mut Tensor, tuning: V3Tuning) -> Result<String> {
    v3_launch(x, y, tuning).map(|(_, _, name, _)| name)
}

/// v3's rows, kernel and launch shape for `x` into `y` in `tuning`.
fn v3_launch<'a>(
    x: &'a Tensor,
    y: &'a mut Tensor,
    tuning: V3Tuning,
) -> Result<(CudaIo<'a>, Rows, String, LaunchConfig)> {
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
    Ok((io, r, name, cfg))
}

/// The packs v3's shifted form gives a row of `cols` columns that starts up to `pack − 1`
/// elements past a 16-byte boundary: enough for the worst start.
pub fn v3_shift_slots(cols: usize, pack: usize) -> usize {
    (cols + pack - 1).div_ceil(pack)
}

/// K (slots per thread) for v3: the block-a-row rule rmsnorm v2 shares.
pub use crate::ops::row_slots::slots_per_thread as v3_slots_per_thread;

/// v4: one block per row (up to 1024 threads), any width.
pub fn run_v4_online(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
pub(super) fn launch_rows_cluster(
    io: &CudaIo,
    r: &Rows,
    p: &SoftmaxParams,
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
    crate::runtime::launch::launch_cluster(&io.dev, f, name, cfg, c as u32, &mut args)
}

/// v6's CTAs have at most this many threads, each holding [`V6_K`] slots: 64 KB of a row
/// per CTA, two CTAs per SM (64 registers a thread).
pub const V6_THREADS: usize = 512;
pub const V6_K: usize = 8;
/// The fewest slots a v6 CTA is given when rows are split finer to fill the GPU: one warp's
/// eight slots (4 KB of packs); finer than that the merge costs more than it spreads.
pub(super) const V6_MIN_CHUNK: usize = 32 * V6_K;

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
pub fn run_v6_split(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
pub(super) fn launch_split(
    io: CudaIo,
    r: &Rows,
    p: &SoftmaxParams,
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
        crate::runtime::launch::launch_cooperative!(
            io.dev,
            &SOURCE,
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
pub(super) fn peelable(r: &Rows, io: &CudaIo) -> bool {
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

/// The widest row v6 holds on this device (elements): all resident CTAs' registers. `None`
/// when the kernel cannot be loaded or the occupancy query fails (then `auto` leaves v6 out).
pub fn v6_max_cols(
    dev: &crate::runtime::device::CudaDevice,
    dt: DType,
    packed: bool,
) -> Option<usize> {
    let resident = v6_resident(dev, &v6_symbol(dt, packed), V6_THREADS).ok()?;
    let width = if packed { 16 / dt.size() } else { 1 };
    Some(resident * V6_THREADS * V6_K * width)
}

/// v6's kernel for a dtype, packed (16-byte loads, peeled) or scalar.
pub(super) fn v6_symbol(dt: DType, packed: bool) -> String {
    format!("softmax_v6_split_{}_{dt}", kind(packed))
}

/// How many CTAs of `threads` threads of v6's kernel `name` the GPU holds at once (the
/// driver's occupancy figure × SMs): the most a cooperative launch may have.
pub(super) fn v6_resident(
    dev: &crate::runtime::device::CudaDevice,
    name: &str,
    threads: usize,
) -> Result<usize> {
    let per_sm = blocks_per_sm(&dev.function(&SOURCE, name)?, threads, 0)?;
    Ok(per_sm * dev.props.sm_count as usize)
}

/// The driver's occupancy figure: CTAs of `threads` threads and `smem` bytes of dynamic
/// shared memory that one SM holds at once.
pub(super) fn blocks_per_sm(
    f: &cudarc::driver::CudaFunction,
    threads: usize,
    smem: usize,
) -> Result<usize> {
    let n = f
        .occupancy_max_active_blocks_per_multiprocessor(threads as u32, smem, None)
        .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
    Ok(n as usize)
}

/// [`blocks_per_sm`] for kernel `f` (named `name`) launched with `smem` bytes of dynamic shared
/// memory, after opting it in to that much (past 48 KB a block must).
pub(super) fn smem_blocks_per_sm(
    dev: &crate::runtime::device::CudaDevice,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    threads: usize,
    smem: usize,
) -> Result<usize> {
    crate::runtime::launch::allow_dynamic_smem(dev, f, name, smem)?;
    blocks_per_sm(f, threads, smem)
}

/// Run `f` with the split-row kernels' (v6, v9) workspace, laid out as kernels/softmax.cu's
/// SplitHeader (16 bytes: the done count) and then `slots` 16-byte SplitSlots (so many a CTA,
/// and for v9's smpair form its places after them); `f` gets (header, slots). Zero when made,
/// and each kernel's last CTA clears what it used.
pub(super) fn with_split_workspace(
    dev: &crate::runtime::device::CudaDevice,
    name: &'static str,
    slots: usize,
    f: impl FnOnce(&CudaView<'_, u8>, &CudaView<'_, u8>) -> Result<()>,
) -> Result<()> {
    let bytes = 16 + slots * 16;
    dev.with_workspace(name, bytes, |ws| f(&ws.slice(0..16), &ws.slice(16..bytes)))
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
