use super::*;

// ---- manual ---------------------------------------------------------------------------------
/// CPU: `x_max = x.max(dim=-1)`, `x = x - x_max[:, None]`, `num = exp(x)`,
/// `den = num.sum(dim=-1)`, `y = num / den[:, None]` — one parallel pass each
/// (log_softmax: `y = x - log(den)[:, None]`).
/// Crate-only: the registry checks its arguments (shapes, dtypes, layout, device) first.
pub(crate) fn run_manual_cpu(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
pub fn run_manual_cuda(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
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
    let xf_own = manual_x_f32(&dev, io.x, dt, n, cfg, "manual softmax: x as f32")?;
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
    with_casts(
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
