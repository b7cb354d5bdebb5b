"""c = act(a · wᵀ + bias) in Triton (a: M×K, w: N×K, c: M×N, row-major), the lecture's tiled
matmul: each program one BLOCK_M×BLOCK_N tile of c, accumulated in f32 over BLOCK_K slices of
K by tl.dot (tensor cores for 16-bit inputs), its tiles ordered in groups of GROUP_M rows of
tiles so that the programs running together share their a and w tiles in L2. The epilogue
(linear's) adds the bias when HAS_BIAS and applies ACT: 0 none, 1 GeLU tanh, 2 GeLU erf."""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def matmul_kernel(a_ptr, w_ptr, c_ptr, bias_ptr, M, N, K, lda, ldw, ldc,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, HAS_BIAS: tl.constexpr, ACT: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # The L2-friendly order: walk GROUP_M rows of tiles column by column.
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    first_m = group * GROUP_M
    group_rows = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_rows = a_ptr + rm.to(tl.int64)[:, None] * lda
    w_rows = w_ptr + rn.to(tl.int64)[None, :] * ldw
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        kk = k0 + rk
        a = tl.load(a_rows + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        w = tl.load(w_rows + kk[:, None], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, w, acc, input_precision="ieee")
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    if ACT == 1:
        acc = 0.5 * acc * (1.0 + libdevice.tanh(0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)))
    elif ACT == 2:
        acc = 0.5 * acc * (1.0 + libdevice.erf(acc * 0.7071067811865476))
    c = c_ptr + rm.to(tl.int64)[:, None] * ldc + rn[None, :]
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
