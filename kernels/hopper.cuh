// hopper.cuh — shared memory barriers (mbarrier) and bulk copies (TMA), sm_90 and later.
// Shared by matmul_sm90.cu (tensor-map copies feeding wgmma) and softmax.cu (v11's 1-D bulk
// copies). Below sm_90 nothing here is defined; the kernels that use it compile to a
// __trap() there and their launchers refuse older devices.
#pragma once
#include "common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KL_HOPPER 1

__device__ __forceinline__ void mbar_init(u32 bar, u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
// Make the initialised barriers visible to the async proxy (the TMA unit) and the cluster.
__device__ __forceinline__ void mbar_init_fence() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
// Arrive once and expect `bytes` more of transactions in the current phase.
__device__ __forceinline__ void mbar_expect_tx(u32 bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Whether the phase of parity `parity` has completed (one test, no wait).
__device__ __forceinline__ bool mbar_test(u32 bar, u32 parity) {
    u32 done;
    asm volatile(
        "{ .reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
// Wait until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity) {
    while (!mbar_test(bar, parity)) {}
}
// A 1-D bulk copy of `bytes` (a multiple of 16; both addresses 16-byte aligned) from global
// into shared memory by the TMA unit; completes `bytes` of transactions on mbarrier `bar`.
__device__ __forceinline__ void bulk_load(u32 dst, const void* src, u32 bytes, u32 bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
// Order this thread's earlier generic-proxy accesses to shared memory before later
// async-proxy ones: writes before a TMA store reads them, reads of a stage before the bulk
// copy that refills it.
__device__ __forceinline__ void fence_proxy_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
#else
#define KL_HOPPER 0
#endif
