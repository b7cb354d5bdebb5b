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

// GeLU tanh is gelu_tanh's x·sigmoid(2u) for every output dtype: a one-instruction tanh's
// 1 + tanh(u) cancels for x ≪ 0 (docs/perf-notes.md, "Linear epilogue").
template <class T>
__device__ __forceinline__ float mm_epilogue(float acc, const T* __restrict__ bias, int n, int act) {
    float v = bias ? acc + to_f32(bias[n]) : acc;
    if (act == KL_ACT_GELU_TANH) return gelu_tanh(v);
    if (act == KL_ACT_GELU_ERF) return gelu_erf(v);
    return v;
}

// The epilogue functors the matmul bodies take: `epi(acc, m, n)` is c[m, n] from its f32
// accumulator. READS_ROWS says whether it reads anything by row, so that rows past M are not
// evaluated where a body computes whole fragments. kernlab's compiler generates others from a
// graph's element-wise tail (docs/compiled.md).
template <class T, int ACT> struct ActEpilogue {
    static constexpr bool READS_ROWS = false;
    const T* __restrict__ bias;
    __device__ __forceinline__ float operator()(float acc, int, int n) const {
        return mm_epilogue<T>(acc, bias, n, ACT);
    }
};
// The hand kernels' epilogue: bias and the activation chosen at run time (act, as above); the
// bodies branch on it once a tile, each branch an ActEpilogue.
template <class T> struct ActSwitch {
    static constexpr bool READS_ROWS = false;
    const T* __restrict__ bias;
    int act;
};
// The backward products' epilogue: c[m, n] = acc · gelu'(z[m, n]), GeLU's backward fused into
// the product that gives its incoming gradient (dZ_{l-1} = (dZ_l·W_l) ⊙ gelu'(Z_{l-1}) in the
// MLP). z is an [M, N] matrix with row pitch ld; ACT picks the form (tanh or erf).
template <class T, int ACT> struct DGeluEpilogue {
    static constexpr bool READS_ROWS = true;
    const T* __restrict__ z;
    int ld;
    static __device__ __forceinline__ float dgelu(float v) {
        return ACT == KL_ACT_GELU_TANH ? dgelu_tanh(v) : dgelu_erf(v);
    }
    __device__ __forceinline__ float operator()(float acc, int m, int n) const {
        return acc * dgelu(to_f32(z[(i64)m * ld + n]));
    }
};
// The layout kernels' epilogue, chosen at run time: act KL_ACT_NONE stores the product (z
// unused), KL_ACT_GELU_TANH / KL_ACT_GELU_ERF multiply it by GeLU's derivative at z.
template <class T> struct GradSwitch {
    static constexpr bool READS_ROWS = false;
    const T* __restrict__ z;
    int ld;
    int act;
};
// The training forward's epilogue, two outputs from one product: the pre-activation
// v = acc + bias[n] goes to z (what GeLU's backward needs) and c is act(v), as cuBLASLt's
// GELU_AUX_BIAS. z has c's shape and pitch ld. The bodies store it in pairs (v7_stage_aux).
template <class T> struct AuxSwitch {
    static constexpr bool READS_ROWS = true;
    const T* __restrict__ bias;
    T* __restrict__ z;
    int ld;
    int act;
};
