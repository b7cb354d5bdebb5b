"""The Triton GEMM's autotune list and the shared-memory rule that prunes it per dtype: read by
`triton_kernels` (the kernel's autotune decorator) and by `ops.gemm` (which re-exports them);
imports nothing, so neither depends on the other for it."""

# The Triton GEMM's autotune list (H100/H200): (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps).
GEMM_CONFIGS = (
    (128, 256, 64, 8, 3, 8),
    (256, 128, 64, 8, 3, 8),
    (128, 128, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 64, 32, 8, 4, 4),
)
# Shared memory one block may use on sm_90 (227 KiB); configs whose operand ring would not fit
# for the dtype are dropped before autotuning (f32 keeps the smaller tiles).
GEMM_SMEM_LIMIT = 232448


def gemm_config_fits(cfg, elsize, limit=GEMM_SMEM_LIMIT):
    """Whether a (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps) config's ring of operand
    tiles (stages x (a tile + w tile)) fits in one block's shared memory for `elsize`-byte
    elements. An estimate: exact for the 16-bit wgmma path (Triton 3.9, sm_90); the f32 'ieee'
    path keeps one stage fewer, but the f32 tiles this drops (128x128x64 and larger) would
    spill their accumulator heavily anyway (ptxas: ~13 KB of stack per thread). Configs that
    still do not fit are skipped by the autotuner itself (OutOfResources)."""
    bm, bn, bk, _group, stages, _warps = cfg
    return (bm * bk + bk * bn) * elsize * stages <= limit


def gemm_configs_for(configs, elsize):
    """The configs worth compiling for this element size; never none (the smallest ring)."""
    keep = [c for c in configs if gemm_config_fits(c, elsize)]
    if keep:
        return keep
    return [min(configs, key=lambda c: (c[0] * c[2] + c[2] * c[1]) * c[4])]
