// gelu.cu — every numbered GeLU version, side by side. The list of versions lives in the
// Rust registry (src/ops/gelu.rs), not here.
//
// Cost per element: read sizeof(T), write sizeof(T), ~10 FLOPs: memory-bound at any size
// (16384² f32 is 2 GiB of traffic, ~0.5 ms at 4.25 TB/s; the FLOPs take ~0.04 ms).
#include "common.cuh"

template <int APPROX> __device__ __forceinline__ float gelu(float x) {
    return APPROX == 0 ? gelu_tanh(x) : gelu_erf(x);
}

// v1_naive — the lecture's kernel: one thread per element, one load and one store of
// sizeof(T) each. Correct for any n and any alignment; the loads are 4 (or 2) bytes wide.
template <class T, int APPROX>
__device__ void gelu_v1_naive(const T* __restrict__ x, T* __restrict__ y, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = from_f32<T>(gelu<APPROX>(to_f32(x[i])));
}

// v2_vec16 — what changed: each thread moves one 16-byte pack (4 f32 or 8 bf16/f16) with
// ld/st.global.v4, so a warp issues 512-byte transactions and 4–8× fewer instructions per
// byte. The tail (n mod pack) is done by the first threads, scalar. Needs 16-byte aligned
// pointers (the launcher checks).
template <class T, int APPROX>
__device__ void gelu_v2_vec16(const T* __restrict__ x, T* __restrict__ y, i64 n) {
    constexpr int N = Pack<T>::N;
    i64 packs = n / N;
    i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p < packs) {
        float v[N];
        unpack(ld16(x + p * N), v, x);
        #pragma unroll
        for (int j = 0; j < N; ++j) v[j] = gelu<APPROX>(v[j]);
        st16(y + p * N, pack(v, y));
    }
    i64 t = packs * N + p;  // tail
    if (p < N && t < n) y[t] = from_f32<T>(gelu<APPROX>(to_f32(x[t])));
}

// v3_vec16_ilp — what changed: each block owns a contiguous tile of UNROLL·blockDim packs and
// every thread issues its UNROLL 16-byte loads (blockDim packs apart, so each one is still
// coalesced across the warp) before it computes or stores anything: UNROLL× the bytes in
// flight per thread (Little's law: ~30 KB per SM must be in flight to cover HBM latency).
// The grid is n / (UNROLL·blockDim·pack) blocks. (Streaming cache hints — no L1 allocation on
// load, evict-first on store — measured slower on the H200: docs/perf-notes.md.)
template <class T, int APPROX, int UNROLL>
__device__ void gelu_v3_vec16_ilp(const T* __restrict__ x, T* __restrict__ y, i64 n) {
    constexpr int N = Pack<T>::N;
    const i64 packs = n / N;
    const i64 base = (i64)blockIdx.x * blockDim.x * UNROLL + threadIdx.x;
    if (base + (i64)(UNROLL - 1) * blockDim.x < packs) {
        uint4 raw[UNROLL];
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) raw[u] = ld16(x + (base + u * blockDim.x) * N);
        #pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            float v[N];
            unpack(raw[u], v, x);
            #pragma unroll
            for (int j = 0; j < N; ++j) v[j] = gelu<APPROX>(v[j]);
            st16(y + (base + u * blockDim.x) * N, pack(v, y));
        }
    } else {
        // The last, partial tile.
        for (int u = 0; u < UNROLL; ++u) {
            const i64 p = base + (i64)u * blockDim.x;
            if (p >= packs) break;
            float v[N];
            unpack(ld16(x + p * N), v, x);
            #pragma unroll
            for (int j = 0; j < N; ++j) v[j] = gelu<APPROX>(v[j]);
            st16(y + p * N, pack(v, y));
        }
    }
    // The tail (n mod pack elements): the first threads of block 0.
    const i64 t = packs * N + threadIdx.x;
    if (blockIdx.x == 0 && threadIdx.x < N && t < n) y[t] = from_f32<T>(gelu<APPROX>(to_f32(x[t])));
}

// One extern "C" symbol per (version, approximation, dtype): gelu_v2_vec16_tanh_bf16, ...
#define KL_GELU_SYMBOLS(VER, CALL, TNAME, T)                                                  \
    extern "C" __global__ void gelu_##VER##_tanh_##TNAME(const T* x, T* y, i64 n) { CALL(T, 0); } \
    extern "C" __global__ void gelu_##VER##_erf_##TNAME(const T* x, T* y, i64 n) { CALL(T, 1); }

#define KL_V1(T, A) gelu_v1_naive<T, A>(x, y, n)
#define KL_V2(T, A) gelu_v2_vec16<T, A>(x, y, n)
#define KL_V3(T, A) gelu_v3_vec16_ilp<T, A, 4>(x, y, n)

#define KL_GELU_ALL_DTYPES(VER, CALL)      \
    KL_GELU_SYMBOLS(VER, CALL, f32, float) \
    KL_GELU_SYMBOLS(VER, CALL, bf16, bf16) \
    KL_GELU_SYMBOLS(VER, CALL, f16, f16)

KL_GELU_ALL_DTYPES(v1_naive, KL_V1)
KL_GELU_ALL_DTYPES(v2_vec16, KL_V2)
KL_GELU_ALL_DTYPES(v3_vec16_ilp, KL_V3)
