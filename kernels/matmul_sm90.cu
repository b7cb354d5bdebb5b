// Matmul v6 and v7 for Hopper (sm_90a): the hand kernels, c[M,N] = act(a[M,K] · w[N,K]ᵀ +
// bias[N]). Their bodies, and the design of both, are in matmul_sm90.cuh: templates over the
// epilogue functor, which kernlab's compiler also instantiates with generated epilogues. Here
// the epilogue is bias + the activation code `act`, chosen at run time (ActSwitch).
#include "matmul_sm90.cuh"

// One entry point per (tile, stages, dtype); the launcher's Config names them.
#define KL_V6_KERNEL(NAME, T, BN, STAGES)                                                   \
    extern "C" __global__ void __launch_bounds__(384, 1)                                     \
        NAME(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tw,         \
             T* __restrict__ c, const T* __restrict__ bias, int M, int N, int K, int act,    \
             int group_m) {                                                                  \
        v6_body<T, BN, STAGES>(&ta, &tw, c, ActSwitch<T>{bias, act}, M, N, K, group_m);     \
    }

KL_V6_KERNEL(matmul_v6_128x256x64_s4_bf16, bf16, 256, 4)
KL_V6_KERNEL(matmul_v6_128x256x64_s4_f16, f16, 256, 4)
KL_V6_KERNEL(matmul_v6_128x128x64_s6_bf16, bf16, 128, 6)
KL_V6_KERNEL(matmul_v6_128x128x64_s6_f16, f16, 128, 6)

// v7 (the TMA-store epilogue): parameters as v6, with c replaced by its tensor map
// (Config::symbol_v7 names them).
#define KL_V7_KERNEL(NAME, T, BN, STAGES)                                                   \
    extern "C" __global__ void __launch_bounds__(384, 1)                                     \
        NAME(const __grid_constant__ TmaDesc ta, const __grid_constant__ TmaDesc tw,         \
             const __grid_constant__ TmaDesc tc, const T* __restrict__ bias, int M, int N,   \
             int K, int act, int group_m) {                                                  \
        v7_body<T, BN, STAGES>(&ta, &tw, &tc, ActSwitch<T>{bias, act}, M, N, K, group_m);   \
    }

KL_V7_KERNEL(matmul_v7_128x256x64_s3_bf16, bf16, 256, 3)
KL_V7_KERNEL(matmul_v7_128x256x64_s3_f16, f16, 256, 3)
KL_V7_KERNEL(matmul_v7_128x128x64_s5_bf16, bf16, 128, 5)
KL_V7_KERNEL(matmul_v7_128x128x64_s5_f16, f16, 128, 5)
