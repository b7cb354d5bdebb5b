// matmul_sm90.cuh — the bodies of matmul v6 and v7 for Hopper (sm_90a): wgmma.mma_async fed
// by TMA through an mbarrier pipeline.
//
// c[m, n] = epi(Σ_k a[m, k] · w[n, k], m, n): bf16 or f16 in, f32 accumulate, one store of c.
// The epilogue `epi` is a functor (matmul_common.cuh): the hand kernels' bias + activation
// (matmul_sm90.cu), or one kernlab's compiler generates from a graph's element-wise tail.
//
// Shape of the kernel
// - One CTA per SM, persistent: it walks the output tiles t = blockIdx.x, + gridDim.x, …
//   in a grouped order (GROUP_M tile rows share each band of w, so the CTAs running at the
//   same time reuse a and w through L2).
// - 384 threads, three warpgroups. Warpgroup 0 is the producer: it gives back registers
//   (setmaxnreg.dec to 40) and one thread issues the TMA copies. Warpgroups 1 and 2 are the
//   consumers (setmaxnreg.inc to 232); each owns 64 rows of the 128-row tile and all BN
//   columns, so its accumulator is one m64nBNk16 wgmma fragment (BN/2 floats per thread).
// - STAGES shared-memory stages, each one 128×64 tile of a and one BN×64 tile of w, written
//   by TMA with the 128-byte swizzle (rows of 64 elements = 128 bytes, the 16-byte chunks of
//   row r XOR-ed with r mod 8), which is the K-major layout wgmma reads with swizzle mode 1.
// - Two mbarriers per stage. full[s]: the producer arrives once with expect_tx(stage bytes)
//   and the TMA unit completes the transaction. empty[s]: lane 0 of each of the 8 consumer
//   warps arrives once its wgmma reading the stage has finished (wgmma.wait_group).
//   Use number u of a stage waits for phase parity u & 1 on full and (u & 1) ^ 1 on empty
//   (a fresh barrier counts its "previous" phase, parity 1, as complete).
// - The consumers keep one wgmma group in flight: issue the 4 k16 steps of stage kb, commit,
//   wait until at most one group is pending (so kb − 1 is done), release kb − 1's stage.
// - Tails: the tensor maps fill out-of-range rows and K columns with zeros, so any M and N
//   work and K only needs a 16-byte row pitch (K multiple of 8; the launcher checks). The
//   epilogue masks the stores.
// - Epilogue straight from registers: wgmma's D fragment gives thread t of a warpgroup rows
//   16·warp + lane/4 (+8) and columns 8·i + 2·(lane%4) (+1) for chunk i; the epilogue
//   is applied in f32 and pairs are stored as one 32-bit word when N is even.
//
// The Hopper body is compiled only for sm_90a (wgmma and setmaxnreg exist only there); for
// every other target the kernels are a __trap() so that the symbols exist everywhere. The
// launcher never launches them on anything but compute capability 9.0.
#pragma once
#include "matmul_common.cuh"
#include "hopper.cuh"

typedef unsigned long long u64;

// A CUtensorMap as the driver encodes it (128 opaque bytes, 64-byte aligned); NVRTC has no
// cuda.h. Passed by value as a __grid_constant__ kernel parameter, so TMA reads it in place.
struct __align__(64) TmaDesc {
    u64 opaque[16];
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KL_V6_HOPPER 1
#else
#define KL_V6_HOPPER 0
#endif

#if KL_V6_HOPPER
// ---- TMA (the mbarrier helpers are in hopper.cuh) -----------------------------------------
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* d) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(d) : "memory");
}
// One 2-D box of the tensor map into shared memory; completes `bytes` on mbarrier `bar`.
// x is the inner (K) coordinate in elements, y the row.
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDesc* d, int x, int y, u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];"
        ::"r"(dst), "l"(d), "r"(x), "r"(y), "r"(bar) : "memory");
}

// ---- wgmma -------------------------------------------------------------------------------
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Pin the accumulator registers in program order (the compiler must not move reads of them
// across a wgmma.wait_group, nor writes across the next wgmma.fence).
template <int R> __device__ __forceinline__ void fence_regs(float (&d)[R]) {
    #pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R> __device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R> __device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// Shared-memory matrix descriptor for a K-major operand in the 128-byte swizzle: start
// address >> 4 in bits 0–13, leading byte offset (unused for swizzled K-major; 1 by
// convention) in bits 16–29, stride byte offset 1024 B >> 4 (eight 128-byte rows, one
// swizzle atom) in bits 32–45, base offset 0 (tiles are 1024-byte aligned), swizzle mode 1
// (128 B) in bits 62–63. A k16 step is 32 bytes along the row: +2 in the address field.
__device__ __forceinline__ u64 desc_sw128(u32 addr) {
    const u64 hi = (1ull << 62) | ((u64)(1024 >> 4) << 32) | ((u64)1 << 16);
    return hi | (u64)((addr & 0x3FFFF) >> 4);
}

// The same for an MN-major operand (a 16-bit operand stored with its M or N index contiguous,
// read with wgmma's transpose bit): the tile is 64-element (128-byte) wide column chunks,
// each `rows` K-rows deep in the 128-byte swizzle (one TMA box each). Leading byte offset:
// from one 64-element chunk of M or N to the next, 64 rows × 128 B = 8 KiB; stride byte
// offset: from one group of eight K-rows to the next, 1024 B. A k16 step is 16 rows,
// 2048 bytes: +128 in the address field.
__device__ __forceinline__ u64 desc_mn_sw128(u32 addr) {
    const u64 hi = (1ull << 62) | ((u64)(1024 >> 4) << 32) | ((u64)(8192 >> 4) << 16);
    return hi | (u64)((addr & 0x3FFFF) >> 4);
}

#define KL_D8(i)                                                                             \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
        "+f"(d[i + 6]), "+f"(d[i + 7])

// wgmma.mma_async m64nNk16, f32 += A(smem) · B(smem), scale-d = (acc != 0): 0 overwrites d
// (the first k-step of a tile). TA / TB are the transpose bits: 0 for a K-major operand, 1 for
// an MN-major one. One wrapper per (N, element type); bf16 and f16 differ only in the
// instruction's type suffix.
#define KL_REGS64                                                                            \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                \
    " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"     \
    " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"     \
    " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define KL_REGS128_HI                                                                        \
    " %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"     \
    " %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"     \
    " %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
    " %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"

#define KL_WGMMA_N256(T, TY)                                                                 \
    template <int TA, int TB>                                                                \
    __device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], u64 da, u64 db, int acc, \
                                                     const T*) {                             \
        asm volatile(                                                                        \
            "{\n.reg .pred p;\n"                                                             \
            "setp.ne.b32 p, %130, 0;\n"                                                      \
            "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " "                     \
            "{" KL_REGS64 "," KL_REGS128_HI "}, "                                            \
            "%128, %129, p, 1, 1, %131, %132; }\n"                                           \
            : KL_D8(0), KL_D8(8), KL_D8(16), KL_D8(24),                                      \
              KL_D8(32), KL_D8(40), KL_D8(48), KL_D8(56),                                    \
              KL_D8(64), KL_D8(72), KL_D8(80), KL_D8(88),                                    \
              KL_D8(96), KL_D8(104), KL_D8(112), KL_D8(120)                                  \
            : "l"(da), "l"(db), "r"(acc), "n"(TA), "n"(TB)                                  \
            : "memory");                                                                     \
    }
#define KL_WGMMA_N128(T, TY)                                                                 \
    template <int TA, int TB>                                                                \
    __device__ __forceinline__ void wgmma_m64n128k16(float (&d)[64], u64 da, u64 db, int acc, \
                                                     const T*) {                             \
        asm volatile(                                                                        \
            "{\n.reg .pred p;\n"                                                             \
            "setp.ne.b32 p, %66, 0;\n"                                                       \
            "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " "                     \
            "{" KL_REGS64 "}, "                                                              \
            "%64, %65, p, 1, 1, %67, %68; }\n"                                               \
            : KL_D8(0), KL_D8(8), KL_D8(16), KL_D8(24),                                      \
              KL_D8(32), KL_D8(40), KL_D8(48), KL_D8(56)                                     \
            : "l"(da), "l"(db), "r"(acc), "n"(TA), "n"(TB)                                  \
            : "memory");                                                                     \
    }
KL_WGMMA_N256(bf16, "bf16")
KL_WGMMA_N256(f16, "f16")
KL_WGMMA_N128(bf16, "bf16")
KL_WGMMA_N128(f16, "f16")

template <int BN> struct Wgmma;
template <> struct Wgmma<256> {
    template <class T, int TA, int TB>
    static __device__ __forceinline__ void mma(float (&d)[128], u64 da, u64 db, int acc) {
        wgmma_m64n256k16<TA, TB>(d, da, db, acc, (const T*)nullptr);
    }
};
template <> struct Wgmma<128> {
    template <class T, int TA, int TB>
    static __device__ __forceinline__ void mma(float (&d)[64], u64 da, u64 db, int acc) {
        wgmma_m64n128k16<TA, TB>(d, da, db, acc, (const T*)nullptr);
    }
};

// Tile t of the grouped order: bands of `group_m` tile rows, column-major inside a band.
__device__ __forceinline__ void tile_coords(int t, int tiles_m, int tiles_n, int group_m,
                                            int& tm, int& tn) {
    const int per_band = group_m * tiles_n;
    const int band = t / per_band;
    const int first = band * group_m;
    const int rows = min(tiles_m - first, group_m);
    const int r = t - band * per_band;
    tm = first + r % rows;
    tn = r / rows;
}

// Store two neighbouring outputs (row r, columns n and n + 1) after the epilogue `epi`.
template <class T, class Epi>
__device__ __forceinline__ void store_pair(T* __restrict__ c, const Epi& epi, int M, int N, int r,
                                          int n, float v0, float v1, bool pairs) {
    if (r >= M || n >= N) return;
    T* p = c + (i64)r * N + n;
    const float e0 = epi(v0, r, n);
    if (pairs && n + 1 < N) {
        // N even and n even: the pair is one aligned 32-bit word.
        const float e1 = epi(v1, r, n + 1);
        *reinterpret_cast<u32*>(p) = pack_pair(e0, e1, (const T*)nullptr);
    } else {
        p[0] = from_f32<T>(e0);
        if (n + 1 < N) p[1] = from_f32<T>(epi(v1, r, n + 1));
    }
}

// The epilogue of one consumer warpgroup's 64 × BN fragment. Fragment layout of wgmma's D
// (m64nNk16, f32): for column chunk i (8 wide), d[4i], d[4i+1] sit at row 16·warp + lane/4,
// columns 8i + 2·(lane%4) and +1; d[4i+2], d[4i+3] at the row 8 below.
template <class T, class Epi, int R>
__device__ __forceinline__ void store_fragment(const float (&d)[R], T* __restrict__ c,
                                               const Epi& epi, int M, int N, int r0, int n0,
                                               bool pairs) {
    #pragma unroll
    for (int i = 0; i < R / 4; ++i) {
        store_pair<T>(c, epi, M, N, r0, n0 + 8 * i, d[4 * i], d[4 * i + 1], pairs);
        store_pair<T>(c, epi, M, N, r0 + 8, n0 + 8 * i, d[4 * i + 2], d[4 * i + 3], pairs);
    }
}

// The fragment store through an epilogue functor: a generated one as it is; the hand
// kernels' ActSwitch by its run-time activation code, each branch an instantiation that
// carries only its own math.
template <class T, class Epi, int R>
__device__ __forceinline__ void store_fragment_with(const float (&d)[R], T* __restrict__ c,
                                                    const Epi& epi, int M, int N, int r0, int n0,
                                                    bool pairs) {
    store_fragment<T>(d, c, epi, M, N, r0, n0, pairs);
}
template <class T, int R>
__device__ __forceinline__ void store_fragment_with(const float (&d)[R], T* __restrict__ c,
                                                    const ActSwitch<T>& s, int M, int N, int r0,
                                                    int n0, bool pairs) {
    if (s.act == KL_ACT_GELU_TANH)
        store_fragment<T>(d, c, ActEpilogue<T, KL_ACT_GELU_TANH>{s.bias}, M, N, r0, n0, pairs);
    else if (s.act == KL_ACT_GELU_ERF)
        store_fragment<T>(d, c, ActEpilogue<T, KL_ACT_GELU_ERF>{s.bias}, M, N, r0, n0, pairs);
    else
        store_fragment<T>(d, c, ActEpilogue<T, KL_ACT_NONE>{s.bias}, M, N, r0, n0, pairs);
}
// What v6 and v7 share. Barriers sit after the tiles: full[s] at bars + 8·s, empty[s] at
// bars + 8·(STAGES + s).
template <int STAGES> __device__ __forceinline__ u32 bar_full(u32 bars, int s) { return bars + 8u * s; }
template <int STAGES> __device__ __forceinline__ u32 bar_empty(u32 bars, int s) {
    return bars + 8u * (STAGES + s);
}

// Thread 0 initialises every stage's barriers (full: the producer's one arrival with its
// transaction bytes; empty: lane 0 of each of the 8 consumer warps), then the CTA syncs.
template <int STAGES> __device__ __forceinline__ void pipeline_init(u32 bars, int tid) {
    constexpr int CONSUMERS = 2;
    if (tid == 0) {
        #pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bar_full<STAGES>(bars, s), 1);
            mbar_init(bar_empty<STAGES>(bars, s), CONSUMERS * 4);
        }
        mbar_init_fence();
    }
    __syncthreads();
}

// One k-block of an operand tile into shared memory: a K-major operand (a [M, K] or w [N, K])
// as one box of `rows` rows × 64 K-columns at (k0, mn0); an MN-major one (stored [K, M] or
// [K, N]) as rows / 64 boxes of 64 K-rows × 64 columns at (mn0 + 64·j, k0), box j at 8 KiB·j
// (the layout desc_mn_sw128 describes).
template <int ROWS, int MN_MAJOR>
__device__ __forceinline__ void tma_load_operand(u32 dst, const TmaDesc* d, int k0, int mn0,
                                                 u32 bar) {
    if constexpr (MN_MAJOR) {
        #pragma unroll
        for (int j = 0; j < ROWS / 64; ++j) tma_load_2d(dst + j * 8192u, d, mn0 + 64 * j, k0, bar);
    } else {
        tma_load_2d(dst, d, k0, mn0, bar);
    }
}

// The producer warpgroup: it gives its registers back; one thread drives TMA, loading every
// k-block of every tile this CTA owns into the stages as the consumers free them. TA / TB:
// whether a / w are MN-major (see tma_load_operand).
template <int BN, int STAGES, int TA = 0, int TB = 0>
__device__ __forceinline__ void produce(const TmaDesc* ta, const TmaDesc* tw, u32 sa, u32 sb,
                                        u32 bars, int tid, int tiles, int tiles_m, int tiles_n,
                                        int nk, int group_m) {
    constexpr int BM = 128, BK = 64;
    constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    setmaxnreg_dec<40>();
    if (tid == 0) {
        tma_prefetch_desc(ta);
        tma_prefetch_desc(tw);
        // The empty barriers' parity to wait for: a fresh barrier counts its "previous" phase,
        // parity 1, as complete, so the first use of each stage passes at once.
        int s = 0;
        u32 eph = 1;
        for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
            int tm, tn;
            tile_coords(t, tiles_m, tiles_n, group_m, tm, tn);
            for (int kb = 0; kb < nk; ++kb) {
                mbar_wait(bar_empty<STAGES>(bars, s), eph);
                mbar_expect_tx(bar_full<STAGES>(bars, s), A_BYTES + B_BYTES);
                tma_load_operand<BM, TA>(sa + s * A_BYTES, ta, kb * BK, tm * BM,
                                         bar_full<STAGES>(bars, s));
                tma_load_operand<BN, TB>(sb + s * B_BYTES, tw, kb * BK, tn * BN,
                                         bar_full<STAGES>(bars, s));
                if (++s == STAGES) { s = 0; eph ^= 1u; }
            }
        }
    }
}

// One consumer warpgroup's main loop over a tile's k-blocks: its 64 rows × BN columns
// accumulate in d; each stage is released once the wgmma group that read it is done.
// (s, ph) carry the pipeline position from tile to tile. TA / TB: whether a / w are MN-major.
// Consumer cw's 64 rows of a start 8 KiB into the a tile in either layout.
template <class T, int BN, int STAGES, int TA = 0, int TB = 0, int R>
__device__ __forceinline__ void consume_tile(float (&d)[R], u32 sa, u32 sb, u32 bars, int cw,
                                             int lane, int nk, int& s, u32& ph) {
    constexpr int BM = 128, BK = 64;
    constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    fence_regs(d);
    int prev = 0;
    for (int kb = 0; kb < nk; ++kb) {
        mbar_wait(bar_full<STAGES>(bars, s), ph);
        const u32 a_at = sa + s * A_BYTES + cw * (64 * 128), b_at = sb + s * B_BYTES;
        const u64 da = TA ? desc_mn_sw128(a_at) : desc_sw128(a_at);
        const u64 db = TB ? desc_mn_sw128(b_at) : desc_sw128(b_at);
        // A k16 step: 32 bytes along a K-major row (+2), 16 rows of an MN-major tile (+128).
        constexpr u64 STEP_A = TA ? 128 : 2, STEP_B = TB ? 128 : 2;
        wg_fence();
        #pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
            Wgmma<BN>::template mma<T, TA, TB>(d, da + STEP_A * kk, db + STEP_B * kk,
                                               (kb | kk) != 0);
        wg_commit();
        wg_wait<1>();  // the group of kb − 1 is done: its stage can be refilled
        if (kb > 0 && lane == 0) mbar_arrive(bar_empty<STAGES>(bars, prev));
        prev = s;
        if (++s == STAGES) { s = 0; ph ^= 1u; }
    }
    wg_wait<0>();
    fence_regs(d);
    if (lane == 0) mbar_arrive(bar_empty<STAGES>(bars, prev));
}
#endif  // KL_V6_HOPPER

// Shared memory of one configuration: STAGES × (a tile + w tile), 1 KiB of alignment slack,
// then the 2 × STAGES mbarriers. The launcher computes the same figure.
template <int BN, int STAGES> struct V6Smem {
    static constexpr int BM = 128, BK = 64;
    static constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    static constexpr u32 BYTES = STAGES * (A_BYTES + B_BYTES) + 1024 + 2 * STAGES * 8;
};

template <class T, int BN, int STAGES, class Epi>
__device__ __forceinline__ void v6_body(const TmaDesc* ta, const TmaDesc* tw, T* __restrict__ c,
                                        const Epi& epi, int M, int N, int K, int group_m) {
#if KL_V6_HOPPER
    using S = V6Smem<BN, STAGES>;
    constexpr int BM = S::BM, BK = S::BK;
    constexpr u32 A_BYTES = S::A_BYTES, B_BYTES = S::B_BYTES;
    extern __shared__ unsigned char v6_smem[];
    // Tiles must start on a 1024-byte boundary (the swizzle atom; descriptor base offset 0).
    const u32 base = (smem_addr(v6_smem) + 1023u) & ~1023u;
    const u32 sa = base, sb = base + STAGES * A_BYTES;
    const u32 bars = sb + STAGES * B_BYTES;
    const int tid = threadIdx.x;
    pipeline_init<STAGES>(bars, tid);

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n, nk = (K + BK - 1) / BK;
    const int wg = tid / 128;

    if (wg == 0) {
        produce<BN, STAGES>(ta, tw, sa, sb, bars, tid, tiles, tiles_m, tiles_n, nk, group_m);
    } else {
        // Consumer warpgroups: 64 rows × BN columns each.
        setmaxnreg_inc<232>();
        const int cw = wg - 1, t = tid & 127, warp = t >> 5, lane = t & 31;
        const bool pairs = (N & 1) == 0;
        float d[BN / 2];
        int s = 0;
        u32 ph = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, group_m, tm, tn);
            consume_tile<T, BN, STAGES>(d, sa, sb, bars, cw, lane, nk, s, ph);

            const int r0 = tm * BM + cw * 64 + warp * 16 + (lane >> 2);
            const int n0 = tn * BN + (lane & 3) * 2;
            store_fragment_with<T>(d, c, epi, M, N, r0, n0, pairs);
        }
    }
#else
    __trap();
#endif
}

// =========================================================================================
// Matmul v7 (v7_wgmma_tma_store): v6 with an asynchronous epilogue.
//
// Same producer, mainloop and tile order as v6. The difference is the store of c: v6 writes
// each consumer's 64 × BN fragment from registers to global memory with 4-byte stores, so the
// tensor cores idle while a tile's worth of c goes out. Here each consumer warpgroup
// - waits until its previous TMA store has finished reading its C buffer in shared memory
//   (the thread that issued it runs cp.async.bulk.wait_group.read 0, then a named barrier),
// - applies the epilogue in registers, converts to T and writes its sub-tile into that buffer
//   in the layout of the c tensor map: 64-column chunks of 64 rows × 128 bytes with the
//   128-byte swizzle (16-byte chunk q of row r stored at position q ^ (r mod 8)), which also
//   makes the 4-byte shared stores of a warp conflict-free (8 rows × 4 words hit 32 banks),
// - fences the generic-proxy writes for the async proxy (fence.proxy.async.shared::cta),
//   syncs the warpgroup (bar.sync 1 + consumer, 128), and one thread issues one
//   cp.async.bulk.tensor store per in-range 64 × 64 chunk and commits them as one bulk group,
// - and goes straight on to the next tile's mainloop while the TMA unit writes c.
// The c tensor map clips rows ≥ M and columns ≥ N, so edge tiles need no masking (the
// epilogue runs for columns < N only, and for rows < M where it reads by row). It needs N·sizeof(T) to be a multiple of 16 and c 16-byte
// aligned; the launcher falls back to v6 otherwise.
// =========================================================================================

#if KL_V6_HOPPER
// One 2-D box from shared memory to the tensor map at (x = column, y = row), tracked by the
// issuing thread's bulk async-groups.
__device__ __forceinline__ void tma_store_2d(const TmaDesc* d, u32 src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 ::"l"(d), "r"(x), "r"(y), "r"(src) : "memory");
}
__device__ __forceinline__ void bulk_commit() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Wait until at most N of this thread's bulk groups still read their shared-memory source.
template <int N> __device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// Wait until at most N of this thread's bulk groups are still incomplete (writes done).
template <int N> __device__ __forceinline__ void bulk_wait_all() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
// Named barrier over the 128 threads of one consumer warpgroup (id 0 is __syncthreads).
__device__ __forceinline__ void wg_bar_sync(int id) {
    asm volatile("bar.sync %0, 128;" ::"r"(id) : "memory");
}
__device__ __forceinline__ void st_shared_u32(u32 addr, u32 v) {
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// Where one consumer thread's part of its 64 × BN fragment goes in the C buffer `cbuf`
// (BN/64 chunks of 64 rows × 128 bytes, 128-byte swizzle). Fragment layout as in v6: for
// column chunk i (8 wide), d[4i], d[4i+1] sit at row r = 16·warp + lane/4, columns
// 8i + 2·(lane%4) and +1; d[4i+2], d[4i+3] at row r + 8 (same r mod 8). Those two columns
// are 4 bytes of the 16-byte chunk i mod 8 of the 64-column chunk i / 8. Every v7 staging
// loop goes through this and `put`, so the layout is written once.
struct V7Frag {
    int row;       // the output row of d[4i], d[4i+1]; row + 8 holds d[4i+2], d[4i+3]
    bool in0, in8; // whether row and row + 8 are below M
    int lane_col;  // 2·(lane%4): the pair's column within a chunk
    u32 row0, row8;
    int sw;
    __device__ __forceinline__ V7Frag(u32 cbuf, int M, int m0, int warp, int lane) {
        const int r = warp * 16 + (lane >> 2);
        row = m0 + r;
        in0 = row < M;
        in8 = row + 8 < M;
        lane_col = 2 * (lane & 3);
        row0 = cbuf + r * 128u + 4u * (lane & 3);
        row8 = row0 + 8u * 128u;
        sw = r & 7;
    }
    // The first of chunk i's two columns.
    __device__ __forceinline__ int col(int n_tile, int i) const { return n_tile + 8 * i + lane_col; }
    // Chunk i's four values into the C buffer: (e0, e1) at row, (e2, e3) at row + 8.
    template <class T>
    __device__ __forceinline__ void put(int i, float e0, float e1, float e2, float e3) const {
        const u32 off = (u32)(i / 8) * (64u * 128u) + ((u32)((i & 7) ^ sw) << 4);
        st_shared_u32(row0 + off, pack_pair(e0, e1, (const T*)nullptr));
        st_shared_u32(row8 + off, pack_pair(e2, e3, (const T*)nullptr));
    }
};

// Stage one consumer's fragment through an epilogue functor. Rows past M are clipped by the
// store; an epilogue that reads by row skips them. N is a multiple of 8 here, so n < N
// implies n + 1 < N.
template <class T, class Epi, int R>
__device__ __forceinline__ void v7_stage_fragment(const float (&d)[R], u32 cbuf, const Epi& epi,
                                                  int M, int N, int m0, int n_tile, int warp,
                                                  int lane) {
    const V7Frag f(cbuf, M, m0, warp, lane);
    const bool in0 = !Epi::READS_ROWS || f.in0, in8 = !Epi::READS_ROWS || f.in8;
    #pragma unroll
    for (int i = 0; i < R / 4; ++i) {
        const int n = f.col(n_tile, i);
        float e0 = 0.f, e1 = 0.f, e2 = 0.f, e3 = 0.f;
        if (n < N && in0) {
            e0 = epi(d[4 * i], f.row, n);
            e1 = epi(d[4 * i + 1], f.row, n + 1);
        }
        if (n < N && in8) {
            e2 = epi(d[4 * i + 2], f.row + 8, n);
            e3 = epi(d[4 * i + 3], f.row + 8, n + 1);
        }
        f.put<T>(i, e0, e1, e2, e3);
    }
}
// GeLU's derivative at z (DGeluEpilogue's arithmetic), with z read in 32-bit pairs and a batch
// of up to 16 chunks' pairs loaded before any is used: the staging stores (asm with a memory
// clobber) would otherwise hold each load behind the previous chunk's stores, one global-load
// latency a chunk, with nothing to hide it at one tile a CTA. z is 4-byte aligned, ld even.
template <class T, int ACT, int R>
__device__ __forceinline__ void v7_stage_dgelu(const float (&d)[R], u32 cbuf, const T* __restrict__ z,
                                               int ld, int M, int N, int m0, int n_tile, int warp,
                                               int lane) {
    constexpr int CHUNKS = R / 4, CH = CHUNKS < 16 ? CHUNKS : 16;
    const V7Frag f(cbuf, M, m0, warp, lane);
    const u32* z0 = reinterpret_cast<const u32*>(z + (i64)(f.in0 ? f.row : 0) * ld);
    const u32* z8 = reinterpret_cast<const u32*>(z + (i64)(f.in8 ? f.row + 8 : 0) * ld);
    #pragma unroll
    for (int i0 = 0; i0 < CHUNKS; i0 += CH) {
        u32 za[CH], zb[CH];
        #pragma unroll
        for (int j = 0; j < CH; ++j) {
            const int n = f.col(n_tile, i0 + j);
            za[j] = (n < N && f.in0) ? __ldg(z0 + n / 2) : 0u;
            zb[j] = (n < N && f.in8) ? __ldg(z8 + n / 2) : 0u;
        }
        #pragma unroll
        for (int j = 0; j < CH; ++j) {
            const int i = i0 + j;
            float va[2], vb[2];
            unpack_pair(za[j], va, (const T*)nullptr);
            unpack_pair(zb[j], vb, (const T*)nullptr);
            // Out-of-range rows and columns hold a zero product (TMA's zero fill) and are
            // clipped by the store.
            f.put<T>(i, d[4 * i] * DGeluEpilogue<T, ACT>::dgelu(va[0]),
                     d[4 * i + 1] * DGeluEpilogue<T, ACT>::dgelu(va[1]),
                     d[4 * i + 2] * DGeluEpilogue<T, ACT>::dgelu(vb[0]),
                     d[4 * i + 3] * DGeluEpilogue<T, ACT>::dgelu(vb[1]));
        }
    }
}
// v7_stage_fragment through an epilogue functor (see store_fragment_with).
template <class T, class Epi, int R>
__device__ __forceinline__ void v7_stage_with(const float (&d)[R], u32 cbuf, const Epi& epi, int M,
                                              int N, int m0, int n_tile, int warp, int lane) {
    v7_stage_fragment<T>(d, cbuf, epi, M, N, m0, n_tile, warp, lane);
}
template <class T, int R>
__device__ __forceinline__ void v7_stage_with(const float (&d)[R], u32 cbuf, const ActSwitch<T>& s,
                                              int M, int N, int m0, int n_tile, int warp,
                                              int lane) {
    if (s.act == KL_ACT_GELU_TANH)
        v7_stage_fragment<T>(d, cbuf, ActEpilogue<T, KL_ACT_GELU_TANH>{s.bias}, M, N, m0, n_tile,
                             warp, lane);
    else if (s.act == KL_ACT_GELU_ERF)
        v7_stage_fragment<T>(d, cbuf, ActEpilogue<T, KL_ACT_GELU_ERF>{s.bias}, M, N, m0, n_tile,
                             warp, lane);
    else
        v7_stage_fragment<T>(d, cbuf, ActEpilogue<T, KL_ACT_NONE>{s.bias}, M, N, m0, n_tile, warp,
                             lane);
}
template <class T, int R>
__device__ __forceinline__ void v7_stage_with(const float (&d)[R], u32 cbuf, const GradSwitch<T>& s,
                                              int M, int N, int m0, int n_tile, int warp,
                                              int lane) {
    if (s.act == KL_ACT_GELU_TANH)
        v7_stage_dgelu<T, KL_ACT_GELU_TANH>(d, cbuf, s.z, s.ld, M, N, m0, n_tile, warp, lane);
    else if (s.act == KL_ACT_GELU_ERF)
        v7_stage_dgelu<T, KL_ACT_GELU_ERF>(d, cbuf, s.z, s.ld, M, N, m0, n_tile, warp, lane);
    else
        v7_stage_fragment<T>(d, cbuf, ActEpilogue<T, KL_ACT_NONE>{nullptr}, M, N, m0, n_tile, warp,
                             lane);
}
// v7_stage_fragment for AuxSwitch: per pair of columns, v = acc + bias goes to z as one 32-bit
// store (rows < M; N is a multiple of 8, so n + 1 < N), and act(v) into the C buffer.
template <class T, int ACT, int R>
__device__ __forceinline__ void v7_stage_aux(const float (&d)[R], u32 cbuf, const AuxSwitch<T>& s,
                                             int M, int N, int m0, int n_tile, int warp,
                                             int lane) {
    const V7Frag f(cbuf, M, m0, warp, lane);
    T* z0 = s.z + (i64)f.row * s.ld;
    T* z8 = z0 + (i64)8 * s.ld;
    #pragma unroll
    for (int i = 0; i < R / 4; ++i) {
        const int n = f.col(n_tile, i);
        float e0 = 0.f, e1 = 0.f, e2 = 0.f, e3 = 0.f;
        if (n < N) {
            const float b0 = s.bias ? to_f32(s.bias[n]) : 0.f;
            const float b1 = s.bias ? to_f32(s.bias[n + 1]) : 0.f;
            const float v0 = d[4 * i] + b0, v1 = d[4 * i + 1] + b1;
            const float v2 = d[4 * i + 2] + b0, v3 = d[4 * i + 3] + b1;
            if (f.in0) *reinterpret_cast<u32*>(z0 + n) = pack_pair(v0, v1, (const T*)nullptr);
            if (f.in8) *reinterpret_cast<u32*>(z8 + n) = pack_pair(v2, v3, (const T*)nullptr);
            e0 = mm_epilogue<T>(v0, nullptr, n, ACT);
            e1 = mm_epilogue<T>(v1, nullptr, n, ACT);
            e2 = mm_epilogue<T>(v2, nullptr, n, ACT);
            e3 = mm_epilogue<T>(v3, nullptr, n, ACT);
        }
        f.put<T>(i, e0, e1, e2, e3);
    }
}
template <class T, int R>
__device__ __forceinline__ void v7_stage_with(const float (&d)[R], u32 cbuf, const AuxSwitch<T>& s,
                                              int M, int N, int m0, int n_tile, int warp,
                                              int lane) {
    if (s.act == KL_ACT_GELU_TANH)
        v7_stage_aux<T, KL_ACT_GELU_TANH>(d, cbuf, s, M, N, m0, n_tile, warp, lane);
    else if (s.act == KL_ACT_GELU_ERF)
        v7_stage_aux<T, KL_ACT_GELU_ERF>(d, cbuf, s, M, N, m0, n_tile, warp, lane);
    else
        v7_stage_aux<T, KL_ACT_NONE>(d, cbuf, s, M, N, m0, n_tile, warp, lane);
}
#endif  // KL_V6_HOPPER

// Shared memory of one v7 configuration: STAGES × (a tile + w tile), two C buffers (one per
// consumer, 64 × BN × 2 bytes), 1 KiB of alignment slack, then the 2 × STAGES mbarriers. The
// launcher computes the same figure (Config::smem_bytes_v7).
template <int BN, int STAGES> struct V7Smem {
    static constexpr int BM = 128, BK = 64;
    static constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
    static constexpr u32 C_BYTES = 64 * BN * 2;
    static constexpr u32 BYTES = STAGES * (A_BYTES + B_BYTES) + 2 * C_BYTES + 1024 + 2 * STAGES * 8;
};

template <class T, int BN, int STAGES, class Epi, int TA = 0, int TB = 0>
__device__ __forceinline__ void v7_body(const TmaDesc* ta, const TmaDesc* tw, const TmaDesc* tc,
                                        const Epi& epi, int M, int N, int K, int group_m) {
#if KL_V6_HOPPER
    using S = V7Smem<BN, STAGES>;
    constexpr int BM = S::BM, BK = S::BK;
    constexpr u32 A_BYTES = S::A_BYTES, B_BYTES = S::B_BYTES, C_BYTES = S::C_BYTES;
    extern __shared__ unsigned char v7_smem[];
    // Tiles and C buffers start on 1024-byte boundaries (the 128-byte swizzle atom).
    const u32 base = (smem_addr(v7_smem) + 1023u) & ~1023u;
    const u32 sa = base, sb = base + STAGES * A_BYTES;
    const u32 sc = sb + STAGES * B_BYTES;
    const u32 bars = sc + 2 * C_BYTES;
    const int tid = threadIdx.x;
    pipeline_init<STAGES>(bars, tid);

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int tiles = tiles_m * tiles_n, nk = (K + BK - 1) / BK;
    const int wg = tid / 128;

    if (wg == 0) {
        produce<BN, STAGES, TA, TB>(ta, tw, sa, sb, bars, tid, tiles, tiles_m, tiles_n, nk,
                                    group_m);
    } else {
        // Consumer warpgroups: 64 rows × BN columns each, stored through their C buffer.
        setmaxnreg_inc<232>();
        const int cw = wg - 1, t = tid & 127, warp = t >> 5, lane = t & 31;
        const u32 cbuf = sc + cw * C_BYTES;
        const int bar_id = 1 + cw;
        if (t == 0) tma_prefetch_desc(tc);
        float d[BN / 2];
        int s = 0;
        u32 ph = 0;
        for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            int tm, tn;
            tile_coords(tile, tiles_m, tiles_n, group_m, tm, tn);
            consume_tile<T, BN, STAGES, TA, TB>(d, sa, sb, bars, cw, lane, nk, s, ph);

            // The previous tile's store must have read the C buffer before it is rewritten.
            // Only the issuing thread can wait on its bulk groups; the barrier passes that on.
            if (t == 0) bulk_wait_read<0>();
            wg_bar_sync(bar_id);

            const int n_tile = tn * BN;
            v7_stage_with<T>(d, cbuf, epi, M, N, tm * BM + cw * 64, n_tile, warp, lane);

            // Every writer makes its writes visible to the async proxy, then one thread
            // stores the sub-tile; the others go on to the next tile's mainloop.
            fence_proxy_async_smem();
            wg_bar_sync(bar_id);
            if (t == 0) {
                const int row = tm * BM + cw * 64;
                if (row < M) {
                    #pragma unroll
                    for (int j = 0; j < BN / 64; ++j) {
                        const int col = n_tile + 64 * j;
                        if (col < N) tma_store_2d(tc, cbuf + j * (64u * 128u), col, row);
                    }
                }
                bulk_commit();
            }
        }
        // Shared memory must outlive the last store's reads; wait for full completion.
        if (t == 0) bulk_wait_all<0>();
    }
#else
    __trap();
#endif
}
