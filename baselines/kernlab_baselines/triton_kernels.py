"""The Triton kernels, one @triton.jit function an op (the GEMM's autotuned). Imported only
where a Triton variant is built (`ops.*.triton_fn`): this module imports triton itself, so the
rest of the package imports without it. Each kernel reads `tl` and literals alone from its
module, as @triton.jit wants."""

import triton
import triton.language as tl

from .gemm_configs import GEMM_CONFIGS, gemm_configs_for


def erf_available():
    return hasattr(tl, "math") and hasattr(tl.math, "erf")


@triton.jit
def gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if WIDE:
        block_start = pid.to(tl.int64) * BLOCK_SIZE
    else:
        block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    # tanh(a) = (exp(2a) - 1) / (exp(2a) + 1), as the lecture writes it; 2a is clamped at 80
    # (exp(80) is finite in f32 and the quotient is exactly 1 there) because exp(2a) = inf for
    # x >~ 10 would make it inf/inf = NaN.
    a = 0.79788456 * (x + 0.044715 * x * x * x)
    e = tl.exp(tl.minimum(2.0 * a, 80.0))
    t = (e - 1.0) / (e + 1.0)
    y = 0.5 * x * (1.0 + t)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gelu_erf_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if WIDE:
        block_start = pid.to(tl.int64) * BLOCK_SIZE
    else:
        block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, num_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row is loaded once (BLOCK_SIZE >= num_cols).
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < num_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, x_row_stride, y_row_stride, num_cols, eps,
                   BLOCK_SIZE: tl.constexpr):
    # One program per row, as the softmax kernel: the row loaded once (BLOCK_SIZE >= num_cols),
    # its lanes past num_cols read as 0 so that they add nothing to the sum of squares.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < num_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / num_cols
    r = tl.rsqrt(mean_sq + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    y = x * r * w
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def config_tuple(cfg):
    """A triton.Config of the GEMM as (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps)."""
    kw = cfg.kwargs
    return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"], cfg.num_stages, cfg.num_warps)


def _gemm_prune(configs, named_args, **kwargs):
    """triton.autotune's early_config_prune: drop the configs that cannot fit this dtype."""
    a = named_args.get("a_ptr") if isinstance(named_args, dict) else None
    elsize = a.element_size() if hasattr(a, "element_size") else 4
    by_tuple = {config_tuple(c): c for c in configs}
    return [by_tuple[t] for t in gemm_configs_for(list(by_tuple), elsize)]


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g},
                           num_stages=st, num_warps=w)
             for bm, bn, bk, g, st, w in GEMM_CONFIGS],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": _gemm_prune})
@triton.jit
def gemm_kernel(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K,
                stride_am, stride_ak, stride_wn, stride_wk, stride_cm, stride_cn,
                HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, DOT_MODE: tl.constexpr,
                WIDE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]), one BLOCK_M x BLOCK_N tile of c per program.

    ACTIVATION: 0 none, 1 GeLU tanh, 2 GeLU erf (kernlab's codes). DOT_MODE: 0 the dtype's
    tensor-core dot (bf16/f16 in, f32 accumulate), 1 f32 with input_precision="ieee", 2 f32
    with allow_tf32=False (Triton before input_precision). WIDE: 64-bit row/column offsets.
    """
    # Tile order: the programs of one band of GROUP_M tile-rows go down the band's column of
    # tiles before moving one tile right, so programs running together share the same few
    # rows of `a` and columns of `w^T` while those are still in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_band = GROUP_M * tiles_n
    first_m = (pid // per_band) * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last band may be shorter
    in_band = pid % per_band
    tile_m = first_m + in_band % band_rows
    tile_n = in_band // band_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WIDE:
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    # a's tile is [BLOCK_M, BLOCK_K]; w's is read as w^T, [BLOCK_K, BLOCK_N] (K contiguous in both).
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    w_tile = w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0  # the last K step may be partial; masked lanes add 0
        a = tl.load(a_tile, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        if DOT_MODE == 1:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        elif DOT_MODE == 2:
            acc = tl.dot(a, b, acc, allow_tf32=False)
        else:
            acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        w_tile += BLOCK_K * stride_wk

    # Epilogue on the f32 accumulator: bias, activation, one rounding to the output dtype.
    if HAS_BIAS:
        bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    if ACTIVATION == 1:
        # 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)): no cancellation for
        # x << 0 and no inf/inf (exp(-2u) = inf gives -0, exp(-2u) = 0 gives x).
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc / (1.0 + tl.exp(-2.0 * u))
    elif ACTIVATION == 2:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])
