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
