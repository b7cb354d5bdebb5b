// rmsnorm.cu — every numbered RMSNorm version (over the last dimension), side by side. The
// list of versions and the choice among them live in the Rust registry (src/ops/rmsnorm.rs).
//
// y = x · rsqrt(mean(x²) + eps) · w, as PyTorch's F.rms_norm, in f32 arithmetic whatever the
// storage type, rounded once into y. Every kernel takes (x, w, y, rows, cols, ldx, ldy, eps):
// row r starts at x + r·ldx (and y + r·ldy); w holds `cols` elements.
// Minimum traffic: read rows·cols + cols, write rows·cols elements; ~4 FLOPs an element.
// Semantics as PyTorch's: x² overflows f32 past |x| ≈ 1.8e19 (the row's scale is then 0, and
// an infinite element gives NaN), a NaN anywhere in a row makes the row NaN.
#include "rows.cuh"

// The row's scale from its sum of squares.
__device__ __forceinline__ float rms_scale(float sum_sq, int cols, float eps) {
    return rsqrtf(sum_sq / (float)cols + eps);
}

// v[j] ← v[j] · s · w[c0 + j]: the weight's pack at the slot's columns (a plain load: every
// row reads the same weights, so they stay in L1/L2).
template <class T, int VEC>
__device__ __forceinline__ void scale_by_weight(float* v, const T* __restrict__ w, int c0, float s) {
    float wv[VEC];
    if constexpr (VEC > 1) unpack(ld16(w + c0), wv, w);
    else wv[0] = to_f32(w[c0]);
    #pragma unroll
    for (int j = 0; j < VEC; ++j) v[j] = v[j] * s * wv[j];
}

__device__ __forceinline__ uint4 zero_pack() { return make_uint4(0u, 0u, 0u, 0u); }

// v1_warp_row — a warp per row (4 rows a 128-thread block), the row in registers (K slots of
// VEC elements a lane: cols ≤ 32·VEC·K), 16-byte loads, the sum of squares by shuffles: one
// read and one write of each element. For rows up to 1024 f32 / 2048 bf16 columns.
template <class T, int VEC, int K>
__device__ void rmsnorm_v1_warp_row(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                    int rows, int cols, i64 ldx, i64 ldy, float eps) {
    const int lane = threadIdx.x & 31;
    const i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (row >= rows) return;  // the whole warp: one row a warp
    RowSlots<T, VEC, K> r;
    r.load(x + row * ldx, cols, lane, 32, zero_pack(), 0.0f);
    const float s = rms_scale(warp_sum(r.sum_with([](float v) { return v * v; })), cols, eps);
    r.store_each(y + row * ldy, cols, lane, 32, [&](float* v, int c0) { scale_by_weight<T, VEC>(v, w, c0, s); });
}

// v2_block_regs — what changed: a block (up to 1024 threads) per row, the row in registers
// across the block (cols ≤ blockDim·VEC·K: 32768 f32 / 65536 bf16 at K = 8), the sum through
// shared memory. Small blocks for medium rows let several rows share an SM, so one row's loads
// overlap another's reduction (softmax's v3 layout: docs/perf-notes.md, "Softmax v3_block_regs").
template <class T, int VEC, int K>
__device__ void rmsnorm_v2_block_regs(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                      int rows, int cols, i64 ldx, i64 ldy, float eps) {
    __shared__ float scratch[32];
    RowSlots<T, VEC, K> r;
    r.load(x + (i64)blockIdx.x * ldx, cols, threadIdx.x, blockDim.x, zero_pack(), 0.0f);
    const float s = rms_scale(block_sum(r.sum_with([](float v) { return v * v; }), scratch), cols, eps);
    r.store_each(y + (i64)blockIdx.x * ldy, cols, threadIdx.x, blockDim.x,
                 [&](float* v, int c0) { scale_by_weight<T, VEC>(v, w, c0, s); });
}

// v3_two_pass — what changed: any width. A block per row streams the row twice: the sum of
// squares (loads marked evict_last), then a second read that the L2 mostly serves, scaled
// and written. 2 reads + 1 write of HBM in the worst case.
template <class T, int VEC>
__device__ void rmsnorm_v3_two_pass(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                    int rows, int cols, i64 ldx, i64 ldy, float eps) {
    __shared__ float scratch[32];
    const T* xr = x + (i64)blockIdx.x * ldx;
    T* yr = y + (i64)blockIdx.x * ldy;
    const int step = blockDim.x * VEC;
    float sum_sq = 0.0f;
    for (int c0 = threadIdx.x * VEC; c0 < cols; c0 += step) {
        float v[VEC];
        if constexpr (VEC > 1) unpack(ld16_row(xr + c0), v, xr);
        else v[0] = to_f32(xr[c0]);
        #pragma unroll
        for (int j = 0; j < VEC; ++j) sum_sq += v[j] * v[j];
    }
    const float s = rms_scale(block_sum(sum_sq, scratch), cols, eps);
    for (int c0 = threadIdx.x * VEC; c0 < cols; c0 += step) {
        float v[VEC];
        if constexpr (VEC > 1) unpack(ld16(xr + c0), v, xr);
        else v[0] = to_f32(xr[c0]);
        scale_by_weight<T, VEC>(v, w, c0, s);
        if constexpr (VEC > 1) st16(yr + c0, pack(v, yr));
        else yr[c0] = from_f32<T>(v[0]);
    }
}

// ---- exported symbols ------------------------------------------------------------------
#define KL_RMS_ARGS(T) const T* x, const T* w, T* y, int rows, int cols, i64 ldx, i64 ldy, float eps
#define KL_RMS_PASS x, w, y, rows, cols, ldx, ldy, eps

#define KL_RMS_V1(TN, T, K)                                                                         \
    extern "C" __global__ void __launch_bounds__(128) rmsnorm_v1_warp_row_vec_k##K##_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v1_warp_row<T, Pack<T>::N, K>(KL_RMS_PASS); }                                         \
    extern "C" __global__ void __launch_bounds__(128) rmsnorm_v1_warp_row_scalar_k##K##_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v1_warp_row<T, 1, K>(KL_RMS_PASS); }
// K = 8 holds the widest rows in 1024-thread blocks, one a SM: all 64 registers are theirs.
#define KL_RMS_V2_BOUNDS_1 __launch_bounds__(1024)
#define KL_RMS_V2_BOUNDS_2 __launch_bounds__(1024)
#define KL_RMS_V2_BOUNDS_4 __launch_bounds__(1024)
#define KL_RMS_V2_BOUNDS_8 __launch_bounds__(1024, 1)
#define KL_RMS_V2(TN, T, K)                                                                         \
    extern "C" __global__ void KL_RMS_V2_BOUNDS_##K rmsnorm_v2_block_regs_vec_k##K##_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v2_block_regs<T, Pack<T>::N, K>(KL_RMS_PASS); }                                       \
    extern "C" __global__ void KL_RMS_V2_BOUNDS_##K rmsnorm_v2_block_regs_scalar_k##K##_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v2_block_regs<T, 1, K>(KL_RMS_PASS); }
#define KL_RMS_V3(TN, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) rmsnorm_v3_two_pass_vec_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v3_two_pass<T, Pack<T>::N>(KL_RMS_PASS); }                                            \
    extern "C" __global__ void __launch_bounds__(1024) rmsnorm_v3_two_pass_scalar_##TN(KL_RMS_ARGS(T)) { \
        rmsnorm_v3_two_pass<T, 1>(KL_RMS_PASS); }

#define KL_RMS_ALL(TN, T)                                                                           \
    KL_RMS_V1(TN, T, 1) KL_RMS_V1(TN, T, 2) KL_RMS_V1(TN, T, 4) KL_RMS_V1(TN, T, 8)                 \
    KL_RMS_V2(TN, T, 1) KL_RMS_V2(TN, T, 2) KL_RMS_V2(TN, T, 4) KL_RMS_V2(TN, T, 8)                 \
    KL_RMS_V3(TN, T)
KL_RMS_ALL(f32, float)
KL_RMS_ALL(bf16, bf16)
KL_RMS_ALL(f16, f16)
