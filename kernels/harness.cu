// harness.cu — kernels the benchmark harness runs between timed calls (never timed).
//
// The L2 flush, in two launches. do_bench flushes with a plain write of 256 MiB
// (cache.zero_()). That write does not displace lines an earlier kernel loaded with an
// L2::evict_last policy, as kernlab's row loads are (ld16_row in common.cuh): they are evicted
// after every normal line. So a timed call whose input fits in L2 finds part of it still cached,
// flush or not, and reads faster than a cold call would.
//   1. l2_flush_fill writes the whole buffer with an evict_last policy itself. Its lines rank
//      with the old evict_last lines, and the buffer is several times the L2, so they displace
//      those as well as every normal line.
//   2. l2_flush_demote then sets every line of the buffer back to evict_normal
//      (applypriority), so nothing of the flush outranks the timed call's own traffic.
// Before sm_80 (no cache policies) the fill is a plain write and the demotion does nothing.
#include "common.cuh"

// Write `value` into every 16 bytes of buf[0, n16).
extern "C" __global__ void l2_flush_fill(uint4* buf, i64 n16, u32 value) {
    const uint4 v = make_uint4(value, value, value, value);
    const i64 stride = (i64)gridDim.x * blockDim.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    unsigned long long pol;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride)
        asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1,%2,%3,%4}, %5;"
                     :: "l"(buf + i), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
#else
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) buf[i] = v;
#endif
}

// Set the L2 priority of every 128-byte line of buf[0, lines · 128) back to evict_normal
// (a no-op for lines not in L2). buf must be 128-byte aligned.
extern "C" __global__ void l2_flush_demote(const char* buf, i64 lines) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const i64 stride = (i64)gridDim.x * blockDim.x;
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < lines; i += stride)
        asm volatile("applypriority.global.L2::evict_normal [%0], 128;" :: "l"(buf + i * 128) : "memory");
#endif
}
