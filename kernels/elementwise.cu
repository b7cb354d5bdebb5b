// elementwise.cu — the primitive kernel the manual linear launches after cuBLAS's product:
// the bias add, as eager PyTorch's `y + b` (the manual GeLU after it is the compiler's eager
// interpretation of manual_gelu's graph, one launch a node).
#include "common.cuh"

#define KL_IDX const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;

// out[r, c] = x[r, c] + b[c], in the tensors' own dtype (eager reads and writes bf16), f32
// arithmetic.
#define KL_BIAS(TN, T)                                                                              \
    extern "C" __global__ void add_bias_##TN(const T* x, const T* b, T* out, i64 n, int cols) {     \
        KL_IDX out[i] = from_f32<T>(to_f32(x[i]) + to_f32(b[i % cols]));                            \
    }
KL_BIAS(f32, float)
KL_BIAS(bf16, bf16)
KL_BIAS(f16, f16)
