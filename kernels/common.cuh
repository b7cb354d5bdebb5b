// common.cuh — what every kernlab kernel shares. Self-contained: NVRTC has no CUDA headers.
//
// Storage types are 16-bit bit patterns (bf16, f16) or float; arithmetic is always f32.
// Conversions go through `cvt` in inline PTX (sm_80+), so no cuda_bf16.h is needed.
#pragma once

typedef unsigned int u32;
typedef unsigned short u16;
typedef long long i64;

struct __align__(2) bf16 { u16 bits; };
struct __align__(2) f16 { u16 bits; };

// ---- scalar conversions -------------------------------------------------------------
__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(bf16 v) { return __uint_as_float(((u32)v.bits) << 16); }
__device__ __forceinline__ float to_f32(f16 v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
}

template <class T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ bf16 from_f32<bf16>(float v) {
    bf16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(v));
    return r;
}
template <> __device__ __forceinline__ f16 from_f32<f16>(float v) {
    f16 r;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(v));
    return r;
}

// ---- 16-byte packs ---------------------------------------------------------------------
// A pack is 16 bytes: 4 floats or 8 sixteen-bit values, moved with one ld/st.global.v4.
template <class T> struct Pack { static constexpr int N = 16 / sizeof(T); };

// Streaming 16-byte load: read-only path, no L1 allocation (each byte is read once).
__device__ __forceinline__ uint4 ld_stream16(const void* p) {
    uint4 r;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}
// Plain 16-byte load (data that may be read again soon, e.g. a row re-read from L2).
__device__ __forceinline__ uint4 ld16(const void* p) {
    uint4 r;
    asm volatile("ld.global.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
}
// A 16-byte load whose line L2 keeps in preference to others (an evict_last cache policy,
// sm_80+), as Inductor marks a row's first read. The softmax kernels that hold their rows on
// chip load them this way: it ran them faster with no L2 flush and a fresh input each call
// (docs/perf-notes.md, "softmax cache hints"). Each load makes its own policy (one
// createpolicy a load, as measured). The lines outlive the kernel, and even a flush: flushed
// timings of problems that fit in L2 then find part of the input still cached (time those with
// --rotate).
__device__ __forceinline__ uint4 ld16_row(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint4 r;
    asm volatile("{\n\t.reg .b64 pol;\n\t"
                 "createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                 "ld.global.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], pol;\n\t}"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
    return r;
#else
    return ld16(p);
#endif
}
__device__ __forceinline__ void st16(void* p, uint4 v) {
    asm volatile("st.global.v4.u32 [%0], {%1,%2,%3,%4};"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// Unpack 16 bytes into f32 values, and pack f32 values back (round to nearest even).
__device__ __forceinline__ void unpack(uint4 u, float* v, const float*) {
    v[0] = __uint_as_float(u.x); v[1] = __uint_as_float(u.y);
    v[2] = __uint_as_float(u.z); v[3] = __uint_as_float(u.w);
}
__device__ __forceinline__ void unpack_pair(u32 w, float* v, const bf16*) {
    v[0] = __uint_as_float(w << 16);
    v[1] = __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ void unpack_pair(u32 w, float* v, const f16*) {
    u16 lo = (u16)(w & 0xffffu), hi = (u16)(w >> 16);
    asm("cvt.f32.f16 %0, %1;" : "=f"(v[0]) : "h"(lo));
    asm("cvt.f32.f16 %0, %1;" : "=f"(v[1]) : "h"(hi));
}
template <class T> __device__ __forceinline__ void unpack(uint4 u, float* v, const T* tag) {
    unpack_pair(u.x, v + 0, tag); unpack_pair(u.y, v + 2, tag);
    unpack_pair(u.z, v + 4, tag); unpack_pair(u.w, v + 6, tag);
}

__device__ __forceinline__ uint4 pack(const float* v, const float*) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]),
                      __float_as_uint(v[2]), __float_as_uint(v[3]));
}
__device__ __forceinline__ u32 pack_pair(float a, float b, const bf16*) {
    u32 r;  // cvt.rn.bf16x2.f32 d, hi, lo
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
}
__device__ __forceinline__ u32 pack_pair(float a, float b, const f16*) {
    u32 r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(b), "f"(a));
    return r;
}
template <class T> __device__ __forceinline__ uint4 pack(const float* v, const T* tag) {
    return make_uint4(pack_pair(v[0], v[1], tag), pack_pair(v[2], v[3], tag),
                      pack_pair(v[4], v[5], tag), pack_pair(v[6], v[7], tag));
}

// ---- math --------------------------------------------------------------------------------
#define KL_LOG2E 1.4426950408889634f
#define KL_NEG_INF __int_as_float(0xff800000)

// exp(x) as one ex2.approx (rel. error ~2^-22): what every fast softmax uses.
__device__ __forceinline__ float fast_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * KL_LOG2E));
    return y;
}

// 2^x as one ex2.approx.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// GeLU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
// Written as x·sigmoid(2u) = x / (1 + e^(−2u)), the same function without the cancellation
// of 1 + tanh(u) for x ≪ 0. Cost: ~6 FLOPs, one ex2, one fast divide.
__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f;  // sqrt(2/pi)
    float u = k * fmaf(0.044715f * x, x * x, x);
    return __fdividef(x, 1.0f + fast_exp(-2.0f * u));
}
// GeLU, exact: 0.5·x·(1 + erf(x/√2)) = 0.5·x·erfc(−x/√2) (erfc keeps precision for x ≪ 0).
__device__ __forceinline__ float gelu_erf(float x) {
    return 0.5f * x * erfcf(-0.7071067811865476f * x);
}

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

// ---- reductions ---------------------------------------------------------------------
__device__ __forceinline__ float warp_max(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
__device__ __forceinline__ float warp_sum(float v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
// Block-wide reductions through shared memory (`scratch` holds 32 floats); every thread
// gets the result. Safe to call back to back (the leading barrier protects `scratch`).
__device__ __forceinline__ float block_max(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : KL_NEG_INF;
    return warp_max(v);
}
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < nw ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

// Online-softmax state (running max m, running sum s of e^(x−m)). A state whose max is
// −inf holds no finite element yet and contributes nothing (so e^(−inf − −inf) = NaN never
// enters); a row of all −inf then ends with s = 0 and its outputs e^(x − m)/s are NaN,
// as PyTorch gives.
// max that propagates NaN (fmaxf drops it): a NaN element must reach the running max, or a
// state holding it could be discarded as "no finite element yet".
__device__ __forceinline__ float fmax_nan(float a, float b) {
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
// The same on two 16-bit values a word (sm_80+), without unpacking them.
__device__ __forceinline__ u32 max2_nan(u32 a, u32 b, const bf16*) {
    u32 r;
    asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
__device__ __forceinline__ u32 max2_nan(u32 a, u32 b, const f16*) {
    u32 r;
    asm("max.NaN.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}
// A generic pointer into this CTA's shared memory as the 32-bit shared address PTX wants.
__device__ __forceinline__ u32 smem_addr(const void* p) {
    return (u32)__cvta_generic_to_shared(p);
}

// ---- cp.async (sm_80+) ------------------------------------------------------------------
// 16-byte global → shared copy; src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async16(u32 dst, const void* src, u32 src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
                 :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
// A row's scalar (an element of its unaligned head or tail) copied to this thread's 4-byte
// shared slot with the row's other cp.async copies, so that cp.async.wait_all also waits for
// it. Loaded by a plain ld.global after the 16-byte loads, ptxas issued it only after the
// cp.async wait or the first use of their data, and a row waited for a second trip to memory
// (docs/perf-notes.md, "softmax v8"). cp.async moves 4-byte words from 4-byte-aligned
// addresses, so a 16-bit element goes with its word's other half, which must lie in the row
// too (scalar_word): the row's first element in an upper half and its last in a lower half are
// instead prefetched to L1 here and loaded plainly by scalar_read. (A cp.async of 2 of the
// word's bytes is a read of all 4 to memcheck, past the allocation where the row ends it;
// docs/reliability.md.)
template <class T>
__device__ __forceinline__ bool scalar_word(const T* p, const T* row, int cols) {
    if (sizeof(T) == 4) return true;
    return ((unsigned long long)p & 2) ? p > row : p + 1 < row + cols;
}
template <class T> __device__ __forceinline__ void scalar_copy(u32* slot, const T* p, bool word) {
    if (word)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;"
                     :: "r"(smem_addr(slot)), "l"((unsigned long long)p & ~3ull) : "memory");
    else
        asm volatile("prefetch.global.L1 [%0];" :: "l"(p));
}
// The element scalar_copy put in `slot` (after cp_async_wait_all), as f32.
__device__ __forceinline__ float scalar_read(const u32* slot, const float*, bool) {
    return __uint_as_float(*slot);
}
template <class T>
__device__ __forceinline__ float scalar_read(const u32* slot, const T* p, bool word) {
    if (!word) return to_f32(*p);
    T v;
    v.bits = (u16)(((unsigned long long)p & 2) ? (*slot >> 16) : (*slot & 0xffffu));
    return to_f32(v);
}
// Wait until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
// Wait for all of this thread's copies, committed or not; they are then visible to this
// thread (only).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

struct MaxSum { float m, s; };
__device__ __forceinline__ MaxSum maxsum_merge(MaxSum a, MaxSum b) {
    float m = fmax_nan(a.m, b.m);
    float sa = a.m == KL_NEG_INF ? 0.0f : a.s * fast_exp(a.m - m);
    float sb = b.m == KL_NEG_INF ? 0.0f : b.s * fast_exp(b.m - m);
    return MaxSum{m, sa + sb};
}
__device__ __forceinline__ MaxSum maxsum_add(MaxSum a, float x) {
    return maxsum_merge(a, MaxSum{x, 1.0f});
}
__device__ __forceinline__ MaxSum warp_maxsum(MaxSum v) {
    #pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum w{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = maxsum_merge(v, w);
    }
    return v;
}

// (max, sum) merges with a single barrier over a block whose rows are each held by W
// consecutive warps (W ≤ 32): each warp merges by shuffles, lane 0 of each warp publishes its
// state, one __syncthreads, then every warp merges the W states of its row, warps
// [base, base + W). `scratch` holds 64 floats and is written once (the caller must not reuse
// it without another barrier).
__device__ __forceinline__ MaxSum rows_maxsum(MaxSum v, float* scratch, int base, int W) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_maxsum(v);
    if (lane == 0) { scratch[warp] = v.m; scratch[32 + warp] = v.s; }
    __syncthreads();
    v = lane < W ? MaxSum{scratch[base + lane], scratch[32 + base + lane]} : MaxSum{KL_NEG_INF, 0.0f};
    return warp_maxsum(v);
}
// The block-wide merge: one row held by every warp.
__device__ __forceinline__ MaxSum block_maxsum(MaxSum v, float* scratch) {
    return rows_maxsum(v, scratch, 0, (blockDim.x + 31) >> 5);
}
