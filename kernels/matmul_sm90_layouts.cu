// Matmul v7 for Hopper (sm_90a) with either operand transposed: c = op(a) · op(b), each
// operand read K-major or MN-major by wgmma's transpose bits (the layouts a GEMM's backward
// needs: dX = dZ·W is "nn", dW = dZᵀ·H is "tn"). The body is v7's (matmul_sm90.cuh); the
// epilogue stores the product, or multiplies it by GeLU's derivative at z (GradSwitch), which
// fuses GeLU's backward into the product that gives its incoming gradient.
//
// matmul_v7_aux_*: the training forward of a Linear layer, c = act(a·wᵀ + bias) with the
// pre-activation a·wᵀ + bias also written to z (two outputs from one product, AuxSwitch).
//
// Layout names read as BLAS's row-major ones: the first letter says whether a is transposed
// (n: a is [M, K]; t: a is stored [K, M]), the second whether b is (n: b is [K, N], so the
// kernel's w operand is MN-major; t: b is [N, K], K-major). "nt" is v7's own c = a·bᵀ.
#include "matmul_sm90.cuh"

// Parameters: a's and b's tensor maps, c's, then z (null for a plain product), M, N, K, the
// epilogue code and group_m. z has c's shape and pitch.
#define KL_V7L_KERNEL(LAYOUT, TA, TB, T, BN, STAGES)                                         \
    extern "C" __global__ void __launch_bounds__(384, 1)                                     \
        matmul_v7_##LAYOUT##_128x##BN##x64_s##STAGES##_##T(                                  \
            const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tw,          \
            const __grid_constant__ TmaDesc tc, const T* __restrict__ z, int M, int N, int K, \
            int act, int group_m) {                                                          \
        v7_body<T, BN, STAGES, GradSwitch<T>, TA, TB>(&ta, &tw, &tc, GradSwitch<T>{z, N, act}, \
                                                      M, N, K, group_m);                     \
    }
#define KL_V7L_LAYOUT(LAYOUT, TA, TB)                                                        \
    KL_V7L_KERNEL(LAYOUT, TA, TB, bf16, 256, 3)                                              \
    KL_V7L_KERNEL(LAYOUT, TA, TB, f16, 256, 3)                                               \
    KL_V7L_KERNEL(LAYOUT, TA, TB, bf16, 128, 5)                                              \
    KL_V7L_KERNEL(LAYOUT, TA, TB, f16, 128, 5)

KL_V7L_LAYOUT(nt, 0, 0)
KL_V7L_LAYOUT(nn, 0, 1)
KL_V7L_LAYOUT(tn, 1, 1)
KL_V7L_LAYOUT(tt, 1, 0)

// The training forward: (ta, tw, tc, bias, z, M, N, K, act, group_m); z has c's shape and pitch.
#define KL_V7_AUX_KERNEL(T, BN, STAGES)                                                      \
    extern "C" __global__ void __launch_bounds__(384, 1)                                     \
        matmul_v7_aux_128x##BN##x64_s##STAGES##_##T(                                         \
            const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tw,          \
            const __grid_constant__ TmaDesc tc, const T* __restrict__ bias, T* __restrict__ z, \
            int M, int N, int K, int act, int group_m) {                                     \
        v7_body<T, BN, STAGES, AuxSwitch<T>>(&ta, &tw, &tc, AuxSwitch<T>{bias, z, N, act}, M, N, \
                                             K, group_m);                                    \
    }
KL_V7_AUX_KERNEL(bf16, 256, 3)
KL_V7_AUX_KERNEL(f16, 256, 3)
KL_V7_AUX_KERNEL(bf16, 128, 5)
KL_V7_AUX_KERNEL(f16, 128, 5)
