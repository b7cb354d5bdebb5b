// matmul_common.cuh — what every matmul kernel shares: the fused epilogue.
//
// c[m, n] = act(acc + bias[n]), act: 0 none, 1 GeLU tanh (PyTorch approximate="tanh"),
// 2 GeLU erf (exact). Applied to the f32 accumulator in registers, before the one store of c,
// so linear + bias + GeLU never writes the product to memory. `bias` may be null.
#pragma once
#include "common.cuh"

#define KL_ACT_NONE 0
#define KL_ACT_GELU_TANH 1
#define KL_ACT_GELU_ERF 2

template <class T>
__device__ __forceinline__ float mm_epilogue(float acc, const T* __restrict__ bias, int n, int act) {
    float v = bias ? acc + to_f32(bias[n]) : acc;
    if (act == KL_ACT_GELU_TANH) return gelu_tanh(v);
    if (act == KL_ACT_GELU_ERF) return gelu_erf(v);
    return v;
}
