// matmul.cu — the hand-written matmul versions v1–v5, side by side (the CS336 kernels
// lecture's story: naive → shared-memory tiles → register blocking → L2-friendly tile order
// → tensor cores). The choice among them and their configurations live in
// src/ops/matmul_cuda.rs.
//
// Every kernel computes c[M,N] = act(a[M,K] · w[N,K]ᵀ + bias[N]):
//   a row-major [M,K] (lda = K), w row-major [N,K] (ldw = K: PyTorch's Linear weight),
//   c row-major [M,N] (ldc = N), bias [N] or null; one storage dtype, f32 accumulation.
// c is written once, through mm_epilogue (bias, then GeLU tanh / erf / none).
// Any M, N, K ≥ 1 is correct: edge tiles are masked (loads give 0, stores are skipped).
// Row offsets are 64-bit ((i64)row * K): M·K or N·K may exceed 2^31; M, N, K each < 2^31.
//
// Kernel arguments: (a, w, bias, c, M, N, K, act) for v1/v2, plus group_m for v3–v5.
// The grid is 1-D: blockIdx.x is the linear tile id, mapped to (tile row, tile column) by
// tile_coords, row-major (group_m = 1) or grouped (group_m > 1).
#include "matmul_common.cuh"

// Linear tile id → (pm, pn), the output tile's row and column among tiles_m × tiles_n.
// group_m = 1: row-major order (consecutive blocks share a row of `a` and sweep all of w).
// group_m = G > 1: Triton's "super-grouping": blocks run in groups of G tile rows, column by
// column inside a group, so a wave of blocks touches G rows of `a` and a few columns of w
// and both stay in L2 while the wave runs.
__device__ __forceinline__ void tile_coords(int id, int tiles_m, int tiles_n, int group_m,
                                            int& pm, int& pn) {
    const int per_group = group_m * tiles_n;
    const int first_m = (id / per_group) * group_m;
    const int gsize = min(tiles_m - first_m, group_m);
    const int in_group = id % per_group;
    pm = first_m + in_group % gsize;
    pn = in_group / gsize;
}

// ============================================================================================
// v1_naive — one thread per output c[m, n]: a dot product over K, straight from global memory.
// A block is 256 threads covering 8 rows × 32 columns; threadIdx.x % 32 runs along n, so the
// c store is coalesced, a[m, :] is a broadcast and w[n, k] is a stride-K gather. Every
// operand element is re-read from L2/DRAM by each thread that needs it: memory bound.
// ============================================================================================
template <class T>
__device__ __forceinline__ void mm_v1_naive(const T* __restrict__ a, const T* __restrict__ w,
                                            const T* __restrict__ bias, T* __restrict__ c,
                                            int M, int N, int K, int act) {
    const int tiles_n = (N + 31) / 32;
    const int m = (blockIdx.x / tiles_n) * 8 + threadIdx.x / 32;
    const int n = (blockIdx.x % tiles_n) * 32 + threadIdx.x % 32;
    if (m >= M || n >= N) return;
    const T* ar = a + (i64)m * K;
    const T* wr = w + (i64)n * K;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) acc = fmaf(to_f32(ar[k]), to_f32(wr[k]), acc);
    c[(i64)m * N + n] = from_f32<T>(mm_epilogue(acc, bias, n, act));
}

// ============================================================================================
// v2_smem — vs v1: the block (32 × 32 threads, one output each) stages a 32×32 tile of `a`
// and of w in shared memory per step of 32 along K, so each global element is read once per
// block instead of once per thread (32× less traffic); __syncthreads around each step.
// Loads are coalesced along K; w's tile is read column-wise, padded to 33 floats per row so
// the 32 lanes hit 32 different banks.
// ============================================================================================
template <class T>
__device__ __forceinline__ void mm_v2_smem(const T* __restrict__ a, const T* __restrict__ w,
                                           const T* __restrict__ bias, T* __restrict__ c,
                                           int M, int N, int K, int act) {
    constexpr int TS = 32;
    __shared__ float As[TS][TS + 1];
    __shared__ float Ws[TS][TS + 1];
    const int tiles_n = (N + TS - 1) / TS;
    const int m0 = (blockIdx.x / tiles_n) * TS, n0 = (blockIdx.x % tiles_n) * TS;
    const int tx = threadIdx.x % TS, ty = threadIdx.x / TS;
    // This thread loads a[m0 + ty, k0 + tx] and w[n0 + ty, k0 + tx] each step.
    const bool a_ok = m0 + ty < M, w_ok = n0 + ty < N;
    const T* ar = a + (i64)(a_ok ? m0 + ty : 0) * K;
    const T* wr = w + (i64)(w_ok ? n0 + ty : 0) * K;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TS) {
        const int k = k0 + tx;
        As[ty][tx] = a_ok && k < K ? to_f32(ar[k]) : 0.0f;
        Ws[ty][tx] = w_ok && k < K ? to_f32(wr[k]) : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int kk = 0; kk < TS; ++kk) acc = fmaf(As[ty][kk], Ws[tx][kk], acc);
        __syncthreads();
    }
    const int m = m0 + ty, n = n0 + tx;
    if (m < M && n < N) c[(i64)m * N + n] = from_f32<T>(mm_epilogue(acc, bias, n, act));
}

// ============================================================================================
// The tiled kernels' store: the block's f32 accumulators are first written to shared memory
// (a `ROWS`×`COLS` slab of the output tile at a time, `srow` floats per row), then every thread
// takes runs of 4 adjacent columns — consecutive threads, consecutive runs — applies
// mm_epilogue and stores them: coalesced (16-byte f32 / 8-byte 16-bit stores when N % 4 == 0
// and c is aligned, masked scalar stores at the right edge), and the epilogue's code (erfc is
// long) exists once per kernel instead of once per accumulator register.
// ============================================================================================
template <class T> __device__ __forceinline__ void store4(T* p, const float* o) {
    *reinterpret_cast<uint2*>(p) = make_uint2(pack_pair(o[0], o[1], (const T*)p),
                                              pack_pair(o[2], o[3], (const T*)p));
}
template <> __device__ __forceinline__ void store4<float>(float* p, const float* o) {
    *reinterpret_cast<float4*>(p) = make_float4(o[0], o[1], o[2], o[3]);
}

template <class T, int ROWS, int COLS, int NT>
__device__ __forceinline__ void mm_store_slab(const float* stage, int srow, int row0, int col0,
                                              T* __restrict__ c, const T* __restrict__ bias,
                                              int M, int N, int act) {
    constexpr int RUNS = COLS / 4;  // runs of 4 columns per slab row
    const bool vec = (N & 3) == 0 && (reinterpret_cast<unsigned long long>(c) & (4 * sizeof(T) - 1)) == 0;
    #pragma unroll 1
    for (int q = threadIdx.x; q < ROWS * RUNS; q += NT) {
        const int r = q / RUNS, cc = (q % RUNS) * 4;
        const int row = row0 + r, col = col0 + cc;
        if (row >= M || col >= N) continue;
        const float4 v = *reinterpret_cast<const float4*>(stage + r * srow + cc);
        float o[4] = {v.x, v.y, v.z, v.w};
        #pragma unroll
        for (int e = 0; e < 4; ++e) o[e] = mm_epilogue(o[e], bias, min(col + e, N - 1), act);
        T* cp = c + (i64)row * N + col;
        if (vec) {  // N % 4 == 0 and col % 4 == 0: the whole run is inside the row
            store4(cp, o);
        } else {
            #pragma unroll
            for (int e = 0; e < 4; ++e)
                if (col + e < N) cp[e] = from_f32<T>(o[e]);
        }
    }
}

// ============================================================================================
// v3_regs / v4_grouped — vs v2: 2-D register blocking. A block computes a BM×BN tile with
// (BM/TM)·(BN/TN) threads; each thread keeps a TM×TN micro-tile of accumulators in
// registers, so every value read from shared memory feeds TM or TN FMAs instead of one.
//   * Global → shared: 16-byte loads (ld.global.v4) when VEC (K a multiple of the pack and
//     16-byte aligned bases; the launcher checks), one element per load otherwise: the same
//     template, so any K is correct. Loads of tile t+1 are issued into registers before
//     tile t is computed (their latency hides behind the FMAs) and stored to the other of
//     two shared buffers at the next step: one __syncthreads per K step.
//   * Shared tiles are stored transposed, as f32 (As[k][m], Ws[k][n], padded by 4 floats),
//     so the inner loop reads each thread's TM rows and TN columns as float4 vectors.
//   * A micro-tile of 8 is two groups of 4 spaced half a tile apart, so the 8 lanes of a
//     quarter-warp read 128 contiguous bytes: no bank conflicts.
// v4 is the same kernel launched with group_m > 1 (grouped tile order, tile_coords); v3 is
// group_m = 1, the plain row-major order, so v3 vs v4 shows the L2 effect alone.
// ============================================================================================
template <bool B, class X, class Y> struct pick_t { using type = X; };
template <class X, class Y> struct pick_t<false, X, Y> { using type = Y; };

template <class T, int BM, int BN, int BK, int TM, int TN, bool VEC>
__device__ __forceinline__ void mm_regs(const T* __restrict__ a, const T* __restrict__ w,
                                        const T* __restrict__ bias, T* __restrict__ c,
                                        int M, int N, int K, int act, int group_m) {
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    constexpr int PAD = 4;
    constexpr int P = VEC ? 16 / (int)sizeof(T) : 1;  // elements per global load
    constexpr int KP = BK / P;                          // loads per tile row
    constexpr int A_LOADS = BM * KP, W_LOADS = BN * KP;
    constexpr int LA = (A_LOADS + NT - 1) / NT, LW = (W_LOADS + NT - 1) / NT;
    static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % P == 0, "micro-tiles come in float4s");
    using Stage = typename pick_t<VEC, uint4, float>::type;
    // The store goes in TM/4 passes, one per group of 4 micro-tile rows: a slab of BM/(TM/4)
    // rows × BN, in the same shared memory as the operand tiles (used after the K loop).
    constexpr int PASSES = TM / 4, SLAB_ROWS = BM / PASSES;
    constexpr int A_FLOATS = 2 * BK * (BM + PAD), W_FLOATS = 2 * BK * (BN + PAD);
    constexpr int SLAB_FLOATS = SLAB_ROWS * BN;
    constexpr int SMEM_FLOATS = A_FLOATS + W_FLOATS > SLAB_FLOATS ? A_FLOATS + W_FLOATS : SLAB_FLOATS;

    __shared__ __align__(16) float smem[SMEM_FLOATS];
    auto As = reinterpret_cast<float (*)[BK][BM + PAD]>(smem);
    auto Ws = reinterpret_cast<float (*)[BK][BN + PAD]>(smem + A_FLOATS);

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int pm, pn;
    tile_coords(blockIdx.x, tiles_m, tiles_n, group_m, pm, pn);
    const int m0 = pm * BM, n0 = pn * BN;
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;

    Stage sa[LA], sw[LW];
    // Load number q of a tile covers row q / KP, elements [(q % KP)·P, +P) of the K step.
    auto load = [&](int k0) {
        #pragma unroll
        for (int i = 0; i < LA; ++i) {
            const int q = tid + i * NT;
            if (A_LOADS % NT == 0 || q < A_LOADS) {
                const int r = q / KP, k = k0 + (q % KP) * P, gm = m0 + r;
                const bool ok = gm < M && k < K;
                if constexpr (VEC) sa[i] = ok ? ld16(a + (i64)gm * K + k) : make_uint4(0, 0, 0, 0);
                else sa[i] = ok ? to_f32(a[(i64)gm * K + k]) : 0.0f;
            }
        }
        #pragma unroll
        for (int i = 0; i < LW; ++i) {
            const int q = tid + i * NT;
            if (W_LOADS % NT == 0 || q < W_LOADS) {
                const int r = q / KP, k = k0 + (q % KP) * P, gn = n0 + r;
                const bool ok = gn < N && k < K;
                if constexpr (VEC) sw[i] = ok ? ld16(w + (i64)gn * K + k) : make_uint4(0, 0, 0, 0);
                else sw[i] = ok ? to_f32(w[(i64)gn * K + k]) : 0.0f;
            }
        }
    };
    auto store = [&](int buf) {
        #pragma unroll
        for (int i = 0; i < LA; ++i) {
            const int q = tid + i * NT;
            if (A_LOADS % NT == 0 || q < A_LOADS) {
                const int r = q / KP, kc = (q % KP) * P;
                float v[P];
                if constexpr (VEC) unpack(sa[i], v, a); else v[0] = sa[i];
                #pragma unroll
                for (int j = 0; j < P; ++j) As[buf][kc + j][r] = v[j];
            }
        }
        #pragma unroll
        for (int i = 0; i < LW; ++i) {
            const int q = tid + i * NT;
            if (W_LOADS % NT == 0 || q < W_LOADS) {
                const int r = q / KP, kc = (q % KP) * P;
                float v[P];
                if constexpr (VEC) unpack(sw[i], v, w); else v[0] = sw[i];
                #pragma unroll
                for (int j = 0; j < P; ++j) Ws[buf][kc + j][r] = v[j];
            }
        }
    };

    float acc[TM][TN];
    #pragma unroll
    for (int i = 0; i < TM; ++i)
        #pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    // Step t: the registers hold K-step t; store it to buffer t % 2, barrier, issue the loads
    // of step t + 1, compute step t. Buffer t % 2 was last read in step t − 2, and every
    // thread has passed step t − 1's barrier since: one __syncthreads per step suffices.
    const int ktiles = (K + BK - 1) / BK;
    load(0);
    for (int t = 0; t < ktiles; ++t) {
        const int buf = t & 1;
        store(buf);
        __syncthreads();
        if (t + 1 < ktiles) load((t + 1) * BK);
        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            float ra[TM], rb[TN];
            #pragma unroll
            for (int g = 0; g < TM / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&As[buf][kk][g * TY * 4 + ty * 4]);
                ra[g * 4 + 0] = v.x; ra[g * 4 + 1] = v.y; ra[g * 4 + 2] = v.z; ra[g * 4 + 3] = v.w;
            }
            #pragma unroll
            for (int g = 0; g < TN / 4; ++g) {
                const float4 v = *reinterpret_cast<const float4*>(&Ws[buf][kk][g * TX * 4 + tx * 4]);
                rb[g * 4 + 0] = v.x; rb[g * 4 + 1] = v.y; rb[g * 4 + 2] = v.z; rb[g * 4 + 3] = v.w;
            }
            #pragma unroll
            for (int i = 0; i < TM; ++i)
                #pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
    }
    __syncthreads();  // every thread is done with the operand tiles: the store reuses them

    // Micro-tile element (i, j) is tile row (i/4)·TY·4 + ty·4 + i%4, column
    // (j/4)·TX·4 + tx·4 + j%4. Pass p stages row group i/4 == p, then the whole block
    // stores the slab.
    #pragma unroll 1
    for (int p = 0; p < PASSES; ++p) {
        if (p > 0) __syncthreads();  // the previous slab has been read
        #pragma unroll
        for (int gi = 0; gi < PASSES; ++gi) {
            if (gi != p) continue;
            #pragma unroll
            for (int ii = 0; ii < 4; ++ii)
                #pragma unroll
                for (int gj = 0; gj < TN / 4; ++gj) {
                    const float* v = &acc[gi * 4 + ii][gj * 4];
                    *reinterpret_cast<float4*>(&smem[(ty * 4 + ii) * BN + gj * TX * 4 + tx * 4]) =
                        make_float4(v[0], v[1], v[2], v[3]);
                }
        }
        __syncthreads();
        mm_store_slab<T, SLAB_ROWS, BN, NT>(smem, BN, m0 + p * SLAB_ROWS, n0, c, bias, M, N, act);
    }
}

// ============================================================================================
// v5_mma — vs v4: tensor cores. Each warp computes a WM×WN tile with
// mma.sync.m16n8k16 (bf16 or f16 in, f32 accumulators), fed from shared memory by ldmatrix;
// global → shared copies are cp.async (16 bytes, .cg: L2 only) in a STAGES-deep ring of
// commit groups, so STAGES − 1 K-steps are in flight while one is computed. Grouped tile
// order as v4; the accumulators go through shared memory to mm_store_slab (bias, GeLU,
// one coalesced store of c).
//   * BK = 32: a tile row is 64 bytes, four 16-byte chunks. Chunk ch of row r lives at
//     r·64 + ((ch ^ ((r >> 1) & 3)) · 16): an XOR swizzle, so the 8 row addresses of every
//     ldmatrix 8×8 matrix (and every cp.async quarter-warp) fall in 8 distinct bank groups.
//   * a tile is [BM][32] (M rows, K contiguous) = the "row" A operand; w tile is [BN][32]
//     (N rows, K contiguous) = exactly the "col" B operand, so both load with plain
//     (non-.trans) ldmatrix.
//   * Edges: rows past M / N and chunks past K are cp.async with src-size 0 (zero-fill), so
//     they add nothing. Needs K % 8 == 0 and 16-byte aligned bases (every chunk is a whole
//     16-byte copy); the launcher runs v4's scalar kernel otherwise.
// Needs sm_80+ (the launcher refuses older devices; the body is compiled out there).
// ============================================================================================
// smem_addr and the cp.async helpers are in common.cuh.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// Four 8×8 b16 matrices; lanes 8i..8i+7 give the row addresses of matrix i, register i
// receives matrix i (lane l holds row l/4, columns 2·(l%4), +1).
__device__ __forceinline__ void ldsm_x4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr) : "memory");
}
// d += a·b for one 16×8×16 step: a 4 registers (row-major 16×16), b 2 (column-major 16×8).
__device__ __forceinline__ void mma_16816(float* d, const u32* a, const u32* b, const bf16*) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma_16816(float* d, const u32* a, const u32* b, const f16*) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

extern __shared__ __align__(128) unsigned char kl_dyn_smem[];

template <class T, int BM, int BN, int WM, int WN, int STAGES>
__device__ __forceinline__ void mm_v5_mma(const T* __restrict__ a, const T* __restrict__ w,
                                          const T* __restrict__ bias, T* __restrict__ c,
                                          int M, int N, int K, int act, int group_m) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr int BK = 32, ROW = BK * 2;  // a tile row: 64 bytes = 4 chunks of 16
    constexpr int WARPS_N = BN / WN, NT = 32 * (BM / WM) * WARPS_N;
    constexpr int MT = WM / 16, NTL = WN / 8;  // m16 and n8 mma tiles per warp
    constexpr int A_BYTES = BM * ROW, STAGE_BYTES = (BM + BN) * ROW;
    constexpr int RSTEP = NT / 4;              // rows one pass of cp.async covers
    constexpr int LA = BM / RSTEP, LW = BN / RSTEP;
    static_assert(BM % RSTEP == 0 && BN % RSTEP == 0 && RSTEP % 8 == 0, "whole passes");
    static_assert(WM % 16 == 0 && WN % 16 == 0 && STAGES >= 2, "warp tile");

    const u32 smem = smem_addr(kl_dyn_smem);
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int pm, pn;
    tile_coords(blockIdx.x, tiles_m, tiles_n, group_m, pm, pn);
    const int m0 = pm * BM, n0 = pn * BN;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;

    // cp.async: thread tid copies chunk ch = tid % 4 of rows r = tid / 4 + i·RSTEP. RSTEP is
    // a multiple of 8, so every such row has the same swizzle: one shared offset + i·RSTEP·64.
    const int ch = tid & 3, r0 = tid >> 2;
    const u32 cp_dst = r0 * ROW + ((ch ^ ((r0 >> 1) & 3)) << 4);
    const T* a_row = a + (i64)(m0 + r0) * K + ch * 8;  // row i: + i·RSTEP·K (used only if valid)
    const T* w_row = w + (i64)(n0 + r0) * K + ch * 8;
    const i64 row_step = (i64)RSTEP * K;
    const int ktiles = (K + BK - 1) / BK;

    auto load_stage = [&](int kt, int stage) {
        const int k0 = kt * BK;
        const bool k_ok = k0 + ch * 8 < K;  // K % 8 == 0: a chunk is all in or all out
        const u32 dst = smem + stage * STAGE_BYTES + cp_dst;
        #pragma unroll
        for (int i = 0; i < LA; ++i) {
            const bool ok = k_ok && m0 + r0 + i * RSTEP < M;
            cp_async16(dst + i * RSTEP * ROW, ok ? a_row + i * row_step + k0 : a, ok ? 16 : 0);
        }
        #pragma unroll
        for (int i = 0; i < LW; ++i) {
            const bool ok = k_ok && n0 + r0 + i * RSTEP < N;
            cp_async16(dst + A_BYTES + i * RSTEP * ROW, ok ? w_row + i * row_step + k0 : w,
                       ok ? 16 : 0);
        }
    };

    // ldmatrix addresses. Lanes' rows all have (row >> 1) & 3 == (lane >> 1) & 3 (tile and
    // warp offsets are multiples of 8), so the swizzle term is one per lane.
    //   A (x4 = a0..a3 of one m16 tile): matrix lane/8 → rows +8·(lane/8 % 2), k +8·(lane/16);
    //     lane's row = lane % 16, chunk = 2·kk + lane / 16.
    //   B (x4 = b0, b1 of two n8 tiles): matrix lane/8 → k +8·(lane/8 % 2), n +8·(lane/16);
    //     lane's row (n) = lane % 8 + 8·(lane / 16), chunk = 2·kk + (lane / 8) % 2.
    const int sw = (lane >> 1) & 3;
    const u32 a_ld = (wm * WM + (lane & 15)) * ROW;
    const u32 b_ld = A_BYTES + (wn * WN + (lane & 7) + ((lane >> 4) << 3)) * ROW;
    const int a_hi = lane >> 4, b_hi = (lane >> 3) & 1;

    float acc[MT][NTL][4];
    #pragma unroll
    for (int i = 0; i < MT; ++i)
        #pragma unroll
        for (int j = 0; j < NTL; ++j)
            #pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    // Prologue: K-steps 0 .. STAGES−2 in flight (one commit group each, empty past the end,
    // so the group count stays in step with kt).
    #pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, s);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; ++kt) {
        // Groups committed so far: STAGES − 1 + kt; ≤ STAGES − 2 pending ⇒ groups 0..kt done.
        cp_async_wait<STAGES - 2>();
        // Everyone's copies of step kt are visible, and everyone has finished step kt − 1,
        // whose buffer ((kt − 1) % STAGES) the next load overwrites.
        __syncthreads();
        {
            const int nk = kt + STAGES - 1;
            if (nk < ktiles) load_stage(nk, nk % STAGES);
            cp_async_commit();
        }
        const u32 st = smem + (kt % STAGES) * STAGE_BYTES;
        #pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            u32 af[MT][4], bf[NTL][2];
            #pragma unroll
            for (int i = 0; i < MT; ++i)
                ldsm_x4(st + a_ld + i * 16 * ROW + (((kk * 2 + a_hi) ^ sw) << 4),
                        af[i][0], af[i][1], af[i][2], af[i][3]);
            #pragma unroll
            for (int j = 0; j < NTL / 2; ++j)
                ldsm_x4(st + b_ld + j * 16 * ROW + (((kk * 2 + b_hi) ^ sw) << 4),
                        bf[2 * j][0], bf[2 * j][1], bf[2 * j + 1][0], bf[2 * j + 1][1]);
            #pragma unroll
            for (int i = 0; i < MT; ++i)
                #pragma unroll
                for (int j = 0; j < NTL; ++j) mma_16816(acc[i][j], af[i], bf[j], a);
        }
    }
    cp_async_wait<0>();  // only empty groups can remain; leave nothing in flight
    __syncthreads();     // every warp is done with the pipeline buffers: reuse them

    // Store: one warp row (WM × BN) at a time through shared memory (SROW = BN + 8 floats:
    // the float2 fragment writes of a warp then take the minimal 2 wavefronts).
    // Accumulator fragment (m16n8, f32): e = 0, 1 → row g, columns 2·t, 2·t + 1;
    // e = 2, 3 → row g + 8, same columns (g = lane / 4, t = lane % 4).
    constexpr int SROW = BN + 8;
    static_assert(WM * SROW * 4 <= STAGES * STAGE_BYTES, "the slab fits the pipeline buffers");
    float* slab = reinterpret_cast<float*>(kl_dyn_smem);
    const int g = lane >> 2, t = lane & 3;
    #pragma unroll 1
    for (int p = 0; p < BM / WM; ++p) {
        if (p > 0) __syncthreads();  // the previous slab has been read
        if (wm == p) {
            #pragma unroll
            for (int i = 0; i < MT; ++i)
                #pragma unroll
                for (int j = 0; j < NTL; ++j)
                    #pragma unroll
                    for (int h = 0; h < 2; ++h)
                        *reinterpret_cast<float2*>(&slab[(i * 16 + g + h * 8) * SROW + wn * WN + j * 8 + t * 2]) =
                            make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        }
        __syncthreads();
        mm_store_slab<T, WM, BN, NT>(slab, SROW, m0 + p * WM, n0, c, bias, M, N, act);
    }
#else
    __trap();  // mma.sync on bf16/f16 and cp.async need sm_80; the launcher refuses older GPUs
#endif
}

// ============================================================================================
// v8_skinny — few rows (M ≤ 8: batch-1 inference, the MLP's batch-1 forward). A tiled kernel
// gives such a product M/BM of a tile's work per CTA and leaves most SMs idle; here the
// product is a stream of w, read once. A warp owns one output column n for all M rows: its
// lanes read w[n, :] in 16-byte packs (two packs a lane in flight, coalesced 1 KB a warp),
// multiply them with the same packs of each row of `a` (M·K elements, L1/L2-resident),
// accumulate in f32, reduce across the warp, and lane m stores row m through the epilogue.
// `vec` = 0 (K not a multiple of the pack, or a base not 16-byte aligned): scalar loads.
// ============================================================================================
#define KL_SKINNY_ROWS 8
template <class T>
__device__ __forceinline__ void mm_v8_skinny(const T* __restrict__ a, const T* __restrict__ w,
                                             const T* __restrict__ bias, T* __restrict__ c,
                                             int M, int N, int K, int act, int vec) {
    const int n = (int)(((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (n >= N) return;
    float acc[KL_SKINNY_ROWS];
#pragma unroll
    for (int m = 0; m < KL_SKINNY_ROWS; ++m) acc[m] = 0.0f;
    const T* wr = w + (i64)n * K;
    if (vec) {
        constexpr int P = Pack<T>::N;
        constexpr int U = 2;
        const int packs = K / P;
        for (int p0 = lane; p0 < packs; p0 += 32 * U) {
            uint4 wp[U];
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int p = p0 + 32 * u;
                wp[u] = p < packs ? ld_stream16(wr + (i64)p * P) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int p = p0 + 32 * u;
                float wv[P];
                unpack(wp[u], wv, (const T*)nullptr);
#pragma unroll
                for (int m = 0; m < KL_SKINNY_ROWS; ++m) {
                    if (m < M && p < packs) {
                        float av[P];
                        unpack(ld16(a + (i64)m * K + (i64)p * P), av, (const T*)nullptr);
#pragma unroll
                        for (int j = 0; j < P; ++j) acc[m] = fmaf(av[j], wv[j], acc[m]);
                    }
                }
            }
        }
    } else {
        for (int k = lane; k < K; k += 32) {
            const float wv = to_f32(wr[k]);
#pragma unroll
            for (int m = 0; m < KL_SKINNY_ROWS; ++m)
                if (m < M) acc[m] = fmaf(to_f32(a[(i64)m * K + k]), wv, acc[m]);
        }
    }
#pragma unroll
    for (int m = 0; m < KL_SKINNY_ROWS; ++m) {
        if (m < M) {
            const float s = warp_sum(acc[m]);
            if (lane == m) c[(i64)m * N + n] = from_f32<T>(mm_epilogue(s, bias, n, act));
        }
    }
}

// ---- exported symbols ----------------------------------------------------------------------
#define KL_MM_ARGS(T) const T* a, const T* w, const T* bias, T* c, int M, int N, int K, int act
#define KL_MM_PASS a, w, bias, c, M, N, K, act

#define KL_V1(TN, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(256) matmul_v1_naive_##TN(KL_MM_ARGS(T)) {     \
        mm_v1_naive<T>(KL_MM_PASS); }
#define KL_V2(TN, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(1024) matmul_v2_smem_##TN(KL_MM_ARGS(T)) {     \
        mm_v2_smem<T>(KL_MM_PASS); }
#define KL_V8(TN, T)                                                                            \
    extern "C" __global__ void __launch_bounds__(256) matmul_v8_skinny_##TN(KL_MM_ARGS(T),      \
                                                                           int vec) {           \
        mm_v8_skinny<T>(KL_MM_PASS, vec); }

// v3 (row-major order: group_m fixed at 1) and v4 (group_m an argument) of one tile shape,
// with 16-byte loads (KIND vec, VEC true) or scalar loads (KIND scalar, VEC false).
// TAG names the shape: BMxBNxBK_TMxTN.
#define KL_REGS(TAG, KIND, VEC, TN, T, BM, BN, BK, TM, TNN, MINB)                               \
    extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TNN), MINB)                  \
    matmul_v3_regs_##TAG##_##KIND##_##TN(KL_MM_ARGS(T)) {                                      \
        mm_regs<T, BM, BN, BK, TM, TNN, VEC>(KL_MM_PASS, 1); }                                  \
    extern "C" __global__ void __launch_bounds__((BM / TM) * (BN / TNN), MINB)                  \
    matmul_v4_grouped_##TAG##_##KIND##_##TN(KL_MM_ARGS(T), int group_m) {                      \
        mm_regs<T, BM, BN, BK, TM, TNN, VEC>(KL_MM_PASS, group_m); }

// v5 of one shape: TAG = BMxBNx32_wWMxWN_sSTAGES; dynamic shared memory STAGES·(BM+BN)·64 B.
#define KL_V5(TAG, TN, T, BM, BN, WM, WN, S, MINB)                                              \
    extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), MINB)              \
    matmul_v5_mma_##TAG##_##TN(KL_MM_ARGS(T), int group_m) {                                   \
        mm_v5_mma<T, BM, BN, WM, WN, S>(KL_MM_PASS, group_m); }

// Every tile shape has a 16-byte-load kernel; the scalar-load fallback (K not a multiple
// of the pack, or unaligned bases) exists for the 64×64 shape only, whichever shape was
// asked for: it is the correctness path, and one shape keeps the compile short.
#define KL_SIMT_ALL(TN, T)                                                                      \
    KL_V1(TN, T)                                                                                \
    KL_V2(TN, T)                                                                                \
    KL_V8(TN, T)                                                                                \
    KL_REGS(128x128x8_8x8, vec, true, TN, T, 128, 128, 8, 8, 8, 2)                              \
    KL_REGS(128x64x8_8x4, vec, true, TN, T, 128, 64, 8, 8, 4, 2)                                \
    KL_REGS(64x64x8_4x4, vec, true, TN, T, 64, 64, 8, 4, 4, 2)                                  \
    KL_REGS(64x64x8_4x4, scalar, false, TN, T, 64, 64, 8, 4, 4, 2)

#define KL_MMA_ALL(TN, T)                                                                       \
    KL_V5(128x128x32_w64x32_s4, TN, T, 128, 128, 64, 32, 4, 2)                                  \
    KL_V5(128x128x32_w64x32_s3, TN, T, 128, 128, 64, 32, 3, 2)                                  \
    KL_V5(128x256x32_w64x64_s4, TN, T, 128, 256, 64, 64, 4, 1)                                  \
    KL_V5(128x64x32_w64x32_s4, TN, T, 128, 64, 64, 32, 4, 4)                                    \
    KL_V5(64x64x32_w32x32_s4, TN, T, 64, 64, 32, 32, 4, 4)

KL_SIMT_ALL(f32, float)
KL_SIMT_ALL(bf16, bf16)
KL_SIMT_ALL(f16, f16)
KL_MMA_ALL(bf16, bf16)
KL_MMA_ALL(f16, f16)
