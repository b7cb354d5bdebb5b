// mlp.cu — the MLP training step's kernels besides its GEMMs: the mean's gradient (a fill),
// GeLU's backward (the derivative times the incoming gradient, one pass), the bias gradient
// (column sums: on its own, or fused with GeLU's backward as partial sums then a finishing
// pass) and a tiled transpose (the hand GEMM's operands for backward; see docs/mlp.md). f32
// arithmetic whatever the storage dtype.
#include "common.cuh"

#define KL_IDX const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

#define KL_MLP(TN, T)                                                                               \
    extern "C" __global__ void fill_##TN(T* out, float v, i64 n) { KL_IDX out[i] = from_f32<T>(v); } \
    extern "C" __global__ void gelu_backward_erf_##TN(const T* dh, const T* z, T* dz, i64 n) {     \
        KL_IDX dz[i] = from_f32<T>(to_f32(dh[i]) * dgelu_erf(to_f32(z[i])));                      \
    }                                                                                               \
    extern "C" __global__ void gelu_backward_tanh_##TN(const T* dh, const T* z, T* dz, i64 n) {    \
        KL_IDX dz[i] = from_f32<T>(to_f32(dh[i]) * dgelu_tanh(to_f32(z[i])));                     \
    }                                                                                               \
    /* out[c, r] = in[r, c] for a rows×cols input, through a 32×33 shared tile; blockIdx.x      */   \
    /* walks the rows' tiles (the long side: a batch), blockIdx.y the columns'.                */   \
    extern "C" __global__ void transpose_##TN(const T* in, T* out, int rows, int cols) {           \
        __shared__ T tile[32][33];                                                                  \
        const int r0 = blockIdx.x * 32, c0 = blockIdx.y * 32;                                       \
        for (int k = threadIdx.y; k < 32; k += 8) {                                                 \
            const int r = r0 + k, c = c0 + threadIdx.x;                                             \
            if (r < rows && c < cols) tile[k][threadIdx.x] = in[(i64)r * cols + c];                 \
        }                                                                                           \
        __syncthreads();                                                                            \
        for (int k = threadIdx.y; k < 32; k += 8) {                                                 \
            const int c = c0 + k, r = r0 + threadIdx.x;                                             \
            if (r < rows && c < cols) out[(i64)c * rows + r] = tile[threadIdx.x][k];                \
        }                                                                                           \
    }
// GeLU's backward fused with the bias gradient's first stage: dz = dh·gelu'(z), written, and
// each block's column sums of dz over its rows. A block is 8 warps over the same columns: a
// lane holds one 16-byte pack of columns (VEC) or one column, the warps take rows r ≡ warp
// (mod 8) of the block's row segment [blockIdx.y·seg, +seg), and the 8 partial sums of a
// column meet in shared memory. part[blockIdx.y, c] is the segment's sum; bias_grad_finish
// adds the segments.
// MODE 0: only the column sums of dh (z and dz unused); 1: GeLU erf; 2: GeLU tanh.
template <class T, bool VEC, int MODE>
__device__ __forceinline__ void dgelu_db(const T* __restrict__ dh, const T* __restrict__ z,
                                         T* __restrict__ dz, float* __restrict__ part, int rows,
                                         int cols, int seg) {
    constexpr int P = VEC ? Pack<T>::N : 1;
    __shared__ float sums[8][32 * P];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int c = (blockIdx.x * 32 + lane) * P;
    const int r0 = blockIdx.y * seg, r1 = min(rows, r0 + seg);
    float acc[P];
#pragma unroll
    for (int j = 0; j < P; ++j) acc[j] = 0.0f;
    if (c < cols) {
        for (int r = r0 + warp; r < r1; r += 8) {
            const i64 at = (i64)r * cols + c;
            float g[P], v[P], o[P];
            if constexpr (VEC) {
                unpack(ld_stream16(dh + at), g, (const T*)nullptr);
            } else {
                g[0] = to_f32(dh[at]);
            }
            if constexpr (MODE == 0) {
#pragma unroll
                for (int j = 0; j < P; ++j) acc[j] += g[j];
                continue;
            }
            if constexpr (VEC) {
                unpack(ld_stream16(z + at), v, (const T*)nullptr);
            } else {
                v[0] = to_f32(z[at]);
            }
#pragma unroll
            for (int j = 0; j < P; ++j) {
                o[j] = g[j] * (MODE == 1 ? dgelu_erf(v[j]) : dgelu_tanh(v[j]));
            }
            if constexpr (VEC) {
                const uint4 packed = pack(o, (const T*)nullptr);
                st16(dz + at, packed);
                // Sum what was stored (rounded to T), as a reduction over dz would.
                unpack(packed, o, (const T*)nullptr);
            } else {
                const T q = from_f32<T>(o[0]);
                dz[at] = q;
                o[0] = to_f32(q);
            }
#pragma unroll
            for (int j = 0; j < P; ++j) acc[j] += o[j];
        }
    }
#pragma unroll
    for (int j = 0; j < P; ++j) sums[warp][lane * P + j] = acc[j];
    __syncthreads();
    for (int i = threadIdx.x; i < 32 * P; i += blockDim.x) {
        const int col = blockIdx.x * 32 * P + i;
        if (col < cols) {
            float t = 0.0f;
#pragma unroll
            for (int k = 0; k < 8; ++k) t += sums[k][i];
            part[(i64)blockIdx.y * cols + col] = t;
        }
    }
}

#define KL_DGELU_DB_ONE(NAME, TN, T, VEC, MODE)                                                     \
    extern "C" __global__ void __launch_bounds__(256) NAME##_##TN(                                  \
        const T* dh, const T* z, T* dz, float* part, int rows, int cols, int seg) {                \
        dgelu_db<T, VEC, MODE>(dh, z, dz, part, rows, cols, seg); }
#define KL_DGELU_DB(TN, T)                                                                          \
    KL_DGELU_DB_ONE(col_sum_vec, TN, T, true, 0)                                                    \
    KL_DGELU_DB_ONE(col_sum_scalar, TN, T, false, 0)                                                \
    KL_DGELU_DB_ONE(dgelu_db_erf_vec, TN, T, true, 1)                                               \
    KL_DGELU_DB_ONE(dgelu_db_erf_scalar, TN, T, false, 1)                                           \
    KL_DGELU_DB_ONE(dgelu_db_tanh_vec, TN, T, true, 2)                                              \
    KL_DGELU_DB_ONE(dgelu_db_tanh_scalar, TN, T, false, 2)                                          \
    /* db[c] = Σ_s part[s, c] (f32), stored in T. */                                               \
    extern "C" __global__ void bias_grad_finish_##TN(const float* part, T* db, int segs, int cols) {\
        const int c = blockIdx.x * blockDim.x + threadIdx.x;                                        \
        if (c >= cols) return;                                                                      \
        float t = 0.0f;                                                                             \
        for (int s = 0; s < segs; ++s) t += part[(i64)s * cols + c];                                \
        db[c] = from_f32<T>(t);                                                                     \
    }

KL_DGELU_DB(f32, float)
KL_DGELU_DB(bf16, bf16)
KL_DGELU_DB(f16, f16)

KL_MLP(f32, float)
KL_MLP(bf16, bf16)
KL_MLP(f16, f16)
