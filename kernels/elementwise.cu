// elementwise.cu — the primitive kernels the `manual` tier composes, one launch per op,
// as eager PyTorch runs `0.5 * x * (1 + torch.tanh(...))` or `x - x.max(dim=-1)[0][:, None]`.
// Intermediates are f32 (first op casts in, last op casts out), so `manual` computes the same
// function as the fused kernels and only the number of passes over memory differs.
// Each launch reads its inputs and writes its output once: n·4 bytes per operand.
#include "common.cuh"

#define KL_IDX const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

#define KL_CAST(TN, T)                                                                              \
    extern "C" __global__ void cast_to_f32_##TN(const T* x, float* y, i64 n) { KL_IDX y[i] = to_f32(x[i]); } \
    extern "C" __global__ void cast_from_f32_##TN(const float* x, T* y, i64 n) { KL_IDX y[i] = from_f32<T>(x[i]); }
KL_CAST(f32, float)
KL_CAST(bf16, bf16)
KL_CAST(f16, f16)

// Binary ops: out = a ∘ b.
extern "C" __global__ void mul_f32(const float* a, const float* b, float* out, i64 n) { KL_IDX out[i] = a[i] * b[i]; }
extern "C" __global__ void add_f32(const float* a, const float* b, float* out, i64 n) { KL_IDX out[i] = a[i] + b[i]; }
// Scalar ops: out = a ∘ s (PyTorch's tensor-scalar kernels).
extern "C" __global__ void mul_scalar_f32(const float* a, float s, float* out, i64 n) { KL_IDX out[i] = a[i] * s; }
extern "C" __global__ void add_scalar_f32(const float* a, float s, float* out, i64 n) { KL_IDX out[i] = a[i] + s; }
// Unary special functions (accurate library versions, as torch.tanh/erf/exp).
extern "C" __global__ void tanh_f32(const float* a, float* out, i64 n) { KL_IDX out[i] = tanhf(a[i]); }
extern "C" __global__ void erf_f32(const float* a, float* out, i64 n) { KL_IDX out[i] = erff(a[i]); }
extern "C" __global__ void exp_f32(const float* a, float* out, i64 n) { KL_IDX out[i] = expf(a[i]); }
extern "C" __global__ void log_f32(const float* a, float* out, i64 n) { KL_IDX out[i] = logf(a[i]); }

// Row reductions over the last dimension (one block per row, as a generic reduction runs):
// read rows·cols, write rows.
extern "C" __global__ void row_max_f32(const float* a, float* out, int rows, int cols) {
    __shared__ float scratch[32];
    const float* r = a + (i64)blockIdx.x * cols;
    float m = KL_NEG_INF;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, r[c]);
    m = block_max(m, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = m;
}
extern "C" __global__ void row_sum_f32(const float* a, float* out, int rows, int cols) {
    __shared__ float scratch[32];
    const float* r = a + (i64)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += r[c];
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}
// Broadcast a per-row vector over the columns: out[r, c] = a[r, c] ∘ v[r].
extern "C" __global__ void sub_rowvec_f32(const float* a, const float* v, float* out, i64 n, int cols) {
    KL_IDX out[i] = a[i] - v[i / cols];
}
extern "C" __global__ void div_rowvec_f32(const float* a, const float* v, float* out, i64 n, int cols) {
    KL_IDX out[i] = a[i] / v[i / cols];
}
// Bias add for the manual linear: out[r, c] = x[r, c] + b[c], in the tensors' own dtype (as
// eager PyTorch's `y + b` reads and writes bf16), f32 arithmetic.
#define KL_BIAS(TN, T)                                                                              \
    extern "C" __global__ void add_bias_##TN(const T* x, const T* b, T* out, i64 n, int cols) {     \
        KL_IDX out[i] = from_f32<T>(to_f32(x[i]) + to_f32(b[i % cols]));                            \
    }
KL_BIAS(f32, float)
KL_BIAS(bf16, bf16)
KL_BIAS(f16, f16)
// The mean over the last dimension (rmsnorm's `.mean(-1)`): the row sum over cols.
extern "C" __global__ void row_mean_f32(const float* a, float* out, int rows, int cols) {
    __shared__ float scratch[32];
    const float* r = a + (i64)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += r[c];
    s = block_sum(s, scratch);
    if (threadIdx.x == 0) out[blockIdx.x] = s / (float)cols;
}
extern "C" __global__ void rsqrt_f32(const float* a, float* out, i64 n) { KL_IDX out[i] = rsqrtf(a[i]); }
// out[r, c] = a[r, c] · v[r] (a per-row scale), and out[r, c] = a[r, c] · v[c] (a per-column
// one: rmsnorm's weight).
extern "C" __global__ void mul_rowvec_f32(const float* a, const float* v, float* out, i64 n, int cols) {
    KL_IDX out[i] = a[i] * v[i / cols];
}
extern "C" __global__ void mul_colvec_f32(const float* a, const float* v, float* out, i64 n, int cols) {
    KL_IDX out[i] = a[i] * v[i % cols];
}
