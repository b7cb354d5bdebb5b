// mlp.cu — the MLP training step's kernels besides its GEMMs: the mean's gradient (a fill),
// GeLU's backward (the derivative times the incoming gradient, one pass), the bias gradient
// (column sums) and a tiled transpose (the hand GEMM's operands for backward; see
// docs/mlp.md). f32 arithmetic whatever the storage dtype.
#include "common.cuh"

#define KL_IDX const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

// d/dz gelu_erf(z) = Φ(z) + z·φ(z).
__device__ __forceinline__ float dgelu_erf(float z) {
    const float cdf = 0.5f * erfcf(-0.70710678118654752f * z);
    const float pdf = 0.39894228040143268f * expf(-0.5f * z * z);
    return cdf + z * pdf;
}

// d/dz of 0.5·z·(1 + tanh(u)), u = √(2/π)·(z + 0.044715·z³).
__device__ __forceinline__ float dgelu_tanh(float z) {
    const float k = 0.79788456080286536f;
    const float u = k * (z + 0.044715f * z * z * z);
    const float t = tanhf(u);
    return 0.5f * (1.0f + t) + 0.5f * z * (1.0f - t * t) * k * (1.0f + 3.0f * 0.044715f * z * z);
}

#define KL_MLP(TN, T)                                                                               \
    extern "C" __global__ void fill_##TN(T* out, float v, i64 n) { KL_IDX out[i] = from_f32<T>(v); } \
    extern "C" __global__ void gelu_backward_erf_##TN(const T* dh, const T* z, T* dz, i64 n) {     \
        KL_IDX dz[i] = from_f32<T>(to_f32(dh[i]) * dgelu_erf(to_f32(z[i])));                      \
    }                                                                                               \
    extern "C" __global__ void gelu_backward_tanh_##TN(const T* dh, const T* z, T* dz, i64 n) {    \
        KL_IDX dz[i] = from_f32<T>(to_f32(dh[i]) * dgelu_tanh(to_f32(z[i])));                     \
    }                                                                                               \
    /* db[c] = Σ_r dz[r, c]: a block of 32×8 threads takes 32 columns, its 8 rows of threads   */   \
    /* stride over the rows, then the 8 partial sums of a column are added in shared memory.   */   \
    extern "C" __global__ void bias_grad_##TN(const T* dz, T* db, int rows, int cols) {            \
        __shared__ float part[8][33];                                                               \
        const int c = blockIdx.x * 32 + threadIdx.x;                                                \
        float s = 0.0f;                                                                             \
        if (c < cols)                                                                               \
            for (int r = threadIdx.y; r < rows; r += 8) s += to_f32(dz[(i64)r * cols + c]);        \
        part[threadIdx.y][threadIdx.x] = s;                                                         \
        __syncthreads();                                                                            \
        if (threadIdx.y == 0 && c < cols) {                                                         \
            float t = 0.0f;                                                                         \
            for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];                                  \
            db[c] = from_f32<T>(t);                                                                 \
        }                                                                                           \
    }                                                                                               \
    /* out[c, r] = in[r, c] for a rows×cols input, through a 32×33 shared tile. */                 \
    extern "C" __global__ void transpose_##TN(const T* in, T* out, int rows, int cols) {           \
        __shared__ T tile[32][33];                                                                  \
        const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;                                       \
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
KL_MLP(f32, float)
KL_MLP(bf16, bf16)
KL_MLP(f16, f16)
