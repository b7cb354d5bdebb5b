// softmax.cu — every numbered softmax version (over the last dimension), side by side.
// The list of versions and the choice among them live in the Rust registry
// (src/ops/softmax/mod.rs), not here.
//
// Every kernel takes (x, y, rows, cols, ldx, ldy, lg): row r starts at x + r·ldx; only `cols`
// elements of it are read; lg ≠ 0 writes log_softmax, x − (max + log Σ e^(x−max)), from the
// same passes. Minimum traffic: read rows·cols, write rows·cols elements.
// Semantics as PyTorch: a row of all −inf, or holding NaN or +inf, gives NaN outputs.
#include "rows.cuh"
#include "hopper.cuh"

// One output element from the row's max m, inv = 1/Σ and ls = log Σ. log_softmax is
// (x − m) − ls, not x − (m + ls): x − m is exact where x is near m, so the largest outputs
// (the ones near 0) keep their precision.
__device__ __forceinline__ float softmax_out(float x, float m, float inv, float ls, int lg) {
    return lg ? (x - m) - ls : fast_exp(x - m) * inv;
}

// v1_block_row — the seeds' kernel: one block per row, three passes over the row
// (max, Σ e^(x−max), write), scalar loads. Reads the row three times (the re-reads come
// from L1/L2 for modest rows) and writes it once.
template <class T>
__device__ void softmax_v1_block_row(const T* __restrict__ x, T* __restrict__ y, int rows,
                                     int cols, i64 ldx, i64 ldy, int lg) {
    __shared__ float scratch[32];
    const T* xr = x + (i64)blockIdx.x * ldx;
    T* yr = y + (i64)blockIdx.x * ldy;
    float m = KL_NEG_INF;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, to_f32(xr[c]));
    m = block_max(m, scratch);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += fast_exp(to_f32(xr[c]) - m);
    s = block_sum(s, scratch);
    const float inv = 1.0f / s, ls = logf(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = from_f32<T>(softmax_out(to_f32(xr[c]), m, inv, ls, lg));
}

// The online-softmax state of one pack: its max (NaN-propagating) and Σ e^(v − max).
template <int VEC> __device__ __forceinline__ MaxSum pack_maxsum(const float* v) {
    float pm = v[0];
    #pragma unroll
    for (int j = 1; j < VEC; ++j) pm = fmax_nan(pm, v[j]);
    float ps = 0.0f;
    #pragma unroll
    for (int j = 0; j < VEC; ++j) ps += fast_exp(v[j] - pm);
    return MaxSum{pm, ps};
}

// The register-resident kernels (v2, v3) keep the row as it came from memory — one uint4
// (16 raw bytes) per slot when VEC is the pack width, one float per slot when VEC == 1 —
// and unpack it again in each pass: a 16-bit row then costs half the registers of an
// unpacked one, and K = 8 slots of 16 bytes stay within the 64 registers a 1024-thread
// block allows, with no spills. Packed loads need cols, ld and the base 16-byte aligned
// (the launcher checks). Slots past the row end hold −inf (they add e^(−inf) = 0).
template <class T> __device__ __forceinline__ uint4 neg_inf_pack();
template <> __device__ __forceinline__ uint4 neg_inf_pack<float>() {
    return make_uint4(0xff800000u, 0xff800000u, 0xff800000u, 0xff800000u);
}
template <> __device__ __forceinline__ uint4 neg_inf_pack<bf16>() {
    return make_uint4(0xff80ff80u, 0xff80ff80u, 0xff80ff80u, 0xff80ff80u);
}
template <> __device__ __forceinline__ uint4 neg_inf_pack<f16>() {
    return make_uint4(0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u, 0xfc00fc00u);
}

// A row in registers (rows.cuh's RowSlots, padded with −inf so that it adds e^(−inf) = 0 to
// the sum), with softmax's passes over it.
template <class T, int VEC, int K> struct RowRegs : RowSlots<T, VEC, K> {
    using Base = RowSlots<T, VEC, K>;
    using Base::PACKED;
    using Base::raw;
    using Base::val;

    __device__ __forceinline__ void load(const T* row, int cols, int tid, int stride) {
        Base::load(row, cols, tid, stride, neg_inf_pack<T>(), KL_NEG_INF);
    }
    // Rows that start `off` elements past a 16-byte boundary (0 ≤ off < VEC: any odd width
    // in a contiguous tensor, where row r starts at r·cols elements), in load's layout
    // shifted back by off: slot k holds the aligned pack at row columns [c0 − off, c0 − off +
    // VEC), c0 = (k·stride + tid)·VEC, so every pack the row fills is one 16-byte load. The
    // row's first and last packs, which it fills only in part, are read lane by lane (lanes
    // outside the row hold −inf): no byte outside the row is read, and store_shift writes none.
    // SPLIT (16-bit rows only; the launcher takes it for rows wider than one warp holds at four
    // packs a thread, src/ops/softmax/mod.rs's V3_SPLIT_16_FROM) issues every whole pack's
    // 16-byte load first, as load does, and only then reads the partial packs lane by lane. In
    // one loop the lanes' merge waits for their loads inside the slot's branch, so the warp
    // holding a row's first or last pack sends its later packs' loads a memory round trip
    // late. The split form pays only for 16-bit rows past one warp (narrower 16-bit rows and
    // f32 rows keep the one loop), and a width test inside the one-loop kernels cost those, so
    // it is a kernel of its own (softmax_v3_block_regs_shiftsplit_*; docs/perf-notes.md,
    // "softmax v3").
    template <bool SPLIT = false>
    __device__ __forceinline__ void load_shift(const T* row, int off, int cols, int tid, int stride) {
        static_assert(PACKED, "load_shift moves 16-byte packs");
        static_assert(!SPLIT || HALF, "the split shifted load is built for 16-bit rows only");
        const T* base = row - off;
        const int end = off + cols;
        if constexpr (SPLIT) {
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                const int c0 = (k * stride + tid) * VEC;
                raw[k] = c0 >= off && c0 + VEC <= end ? ld16_row(base + c0) : neg_inf_pack<T>();
            }
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                const int c0 = (k * stride + tid) * VEC;
                if ((c0 < off || c0 + VEC > end) && c0 < end) raw[k] = ld_lanes(base + c0, off - c0, end - c0);
            }
        } else {
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                const int c0 = (k * stride + tid) * VEC;
                if (c0 >= off && c0 + VEC <= end) raw[k] = ld16_row(base + c0);
                else if (c0 < end) raw[k] = ld_lanes(base + c0, off - c0, end - c0);
                else raw[k] = neg_inf_pack<T>();
            }
        }
    }
    // The pack at p (16-byte aligned) with lanes [lo, hi) read one element at a time and the
    // others −inf.
    static __device__ __forceinline__ uint4 ld_lanes(const T* p, int lo, int hi) {
        const uint4 n = neg_inf_pack<T>();
        u32 w[4] = {n.x, n.y, n.z, n.w};
        #pragma unroll
        for (int j = 0; j < VEC; ++j) {
            if (j < lo || j >= hi) continue;
            if constexpr (sizeof(T) == 4) {
                w[j] = reinterpret_cast<const u32*>(p)[j];
            } else {
                const int sh = (j & 1) * 16;
                const u32 b = reinterpret_cast<const u16*>(p)[j];
                w[j >> 1] = (w[j >> 1] & ~(0xffffu << sh)) | (b << sh);
            }
        }
        return make_uint4(w[0], w[1], w[2], w[3]);
    }
    // RowSlots::get, with the pointer tag the pack helpers take.
    __device__ __forceinline__ void get(int k, float* v, const T*) const { Base::get(k, v); }
    // 16-bit rows take the shorter instruction forms below (fewer instructions an element,
    // where the work per byte is twice f32's); f32 rows keep the exact ones.
    static constexpr bool HALF = PACKED && sizeof(T) == 2;
    // The max over this thread's slots (NaN-propagating; a NaN also reaches the sum). 16-bit
    // packs are compared two values an instruction (max.NaN.bf16x2 / f16x2) without
    // unpacking; the max is exact either way.
    __device__ __forceinline__ float max() const {
        return max_from(neg_inf_pack<T>().x, KL_NEG_INF);
    }
    // max() with `seed` (a value of T, or −inf) first in the chain (v8's f32 rows).
    __device__ __forceinline__ float max_seeded(float seed) const {
        if constexpr (HALF) {
            const u32 b = from_f32<T>(seed).bits;
            return max_from(b | (b << 16), seed);
        } else {
            return max_from(0u, seed);
        }
    }
    // The chain from `a0` (two 16-bit values, for HALF) or `m0` (f32 rows).
    __device__ __forceinline__ float max_from(u32 a0, float m0) const {
        if constexpr (HALF) {
            u32 a = a0;
            #pragma unroll
            for (int k = 0; k < K; ++k) a = max_pack(a, raw[k]);
            return max_word(a);
        } else {
            float m = m0;
            #pragma unroll
            for (int k = 0; k < K; ++k) {
                float v[VEC];
                get(k, v, (const T*)nullptr);
                #pragma unroll
                for (int j = 0; j < VEC; ++j) m = fmax_nan(m, v[j]);
            }
            return m;
        }
    }
    // Σ e^(x − m). With a finite m the −inf padding adds exactly 0; with m = −inf (a row of
    // all −inf) every term is NaN, and so is every output, as PyTorch gives. For a 16-bit
    // softmax (`fold`) e^(x − m) is 2^(x·log2e − m·log2e): one FMA before the ex2 instead of
    // a subtract and a multiply. The rounding of m·log2e (≤ 2^-24 of it) is then one common
    // factor on the terms, which the write (the same form) cancels. Across threads of
    // different maxima (the split rows of v6, v8, v9, v11) it does not cancel, so the fold is taken only while
    // |m| ≤ 1024: each rounding of m·log2e is then ≤ 2^-14, and two of them move an output
    // by ≤ 2^-13·ln 2 (relative), under a fifth of f16's rounding and 1/40 of bf16's. Larger,
    // infinite or NaN maxima take the exact form, which also keeps m·log2e from overflowing
    // for bf16 values past 2.3e38. log_softmax keeps the exact form:
    // there that error would show as an offset (the largest log-probability a hair above 0).
    static __device__ __forceinline__ bool foldable(float m) { return fabsf(m) <= 1024.0f; }
    __device__ __forceinline__ float sum_exp(float m, bool fold) const {
        return sum_exp_of(*this, m, fold);
    }
    // The pieces of these rules, for other holders of packs (v8's shared-memory part):
    // 16-bit packs' max two values an instruction, into a running word of two maxima;
    static __device__ __forceinline__ u32 max_pack(u32 a, uint4 u) {
        const T* t = nullptr;
        return max2_nan(a, max2_nan(max2_nan(u.x, u.y, t), max2_nan(u.z, u.w, t), t), t);
    }
    // that word's max;
    static __device__ __forceinline__ float max_word(u32 a) {
        float v[2];
        unpack_pair(a, v, (const T*)nullptr);
        return fmax_nan(v[0], v[1]);
    }
    // Σ e^(x − m) over holder h's elements (h.sum_with(e) sums e over them), the folded
    // 2^(x·log2e − m·log2e) or the exact form by the rule above;
    template <class H> static __device__ __forceinline__ float sum_exp_of(const H& h, float m, bool fold) {
        if (HALF && fold && foldable(m)) {
            const float c = -m * KL_LOG2E;
            return h.sum_with([&](float v) { return fast_exp2(fmaf(v, KL_LOG2E, c)); });
        }
        return h.sum_with([&](float v) { return fast_exp(v - m); });
    }
    // and the write of h's elements (h.store_with(a..., out) writes out(x) for each): a 16-bit
    // softmax in the folded form the sum took, else softmax_out.
    template <class H, class... A>
    static __device__ __forceinline__ void store_of(const H& h, float m, float s, int lg, A... a) {
        const float inv = 1.0f / s, ls = logf(s);
        if (HALF && !lg && foldable(m)) {
            const float c = -m * KL_LOG2E;
            h.store_with(a..., [&](float v) { return fast_exp2(fmaf(v, KL_LOG2E, c)) * inv; });
        } else {
            h.store_with(a..., [&](float v) { return softmax_out(v, m, inv, ls, lg); });
        }
    }
    using Base::sum_with;
    // This thread's (max, sum) over its slots, in two passes over the registers (max, then
    // Σ e^(x − max)): one exponential an element, where a per-pack online merge pays two
    // more a pack. A thread holding only padding has max −inf (its NaN sum is ignored by
    // maxsum_merge: it counts for nothing). `fold` as for sum_exp.
    __device__ __forceinline__ MaxSum maxsum(bool fold) const {
        const float m = max();
        return MaxSum{m, sum_exp(m, fold)};
    }
    // The outputs, by store_of's rule (a 16-bit softmax in the folded form sum_exp took).
    __device__ __forceinline__ void store(T* row, int cols, int tid, int stride, float m, float s, int lg) const {
        store_of(*this, m, s, lg, row, cols, tid, stride);
    }
    // The outputs of a row loaded by load_shift, in its layout: the packs the row fills whole
    // as 16-byte stores, its first and last lane by lane.
    __device__ __forceinline__ void store_shift(T* row, int off, int cols, int tid, int stride, float m, float s, int lg) const {
        store_of(*this, m, s, lg, row, off, cols, tid, stride);
    }
    template <class F>
    __device__ __forceinline__ void store_with(T* row, int off, int cols, int tid, int stride, F out) const {
        static_assert(PACKED, "store_shift moves 16-byte packs");
        T* base = row - off;
        const int end = off + cols;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c0 = (k * stride + tid) * VEC;
            if (c0 >= end) continue;
            float v[VEC];
            get(k, v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = out(v[j]);
            if (c0 >= off && c0 + VEC <= end) {
                st16(base + c0, pack(v, base));
            } else {
                #pragma unroll
                for (int j = 0; j < VEC; ++j)
                    if (c0 + j >= off && c0 + j < end) base[c0 + j] = from_f32<T>(v[j]);
            }
        }
    }
    template <class F>
    __device__ __forceinline__ void store_with(T* row, int cols, int tid, int stride, F out) const {
        Base::store_each(row, cols, tid, stride, [&](float* v, int) {
            #pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = out(v[j]);
        });
    }
};

// v2_warp_row — what changed: one warp per row (4 rows per 128-thread block), the whole row
// held in registers (K slots of VEC elements per lane: cols ≤ 32·VEC·K), 16-byte loads, and
// warp shuffles instead of shared memory: one read and one write of each element. For narrow
// rows, where a block per row would leave most threads idle. Rows of at most 16 slots take
// W = 4, 8 or 16 lanes each (several rows per warp, K = 1), so no lane idles on a 32-column
// bf16 row (4 packs).
template <int W> __device__ __forceinline__ float group_max(float v) {
    #pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
template <int W> __device__ __forceinline__ float group_sum(float v) {
    #pragma unroll
    for (int o = W / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
template <class T, int VEC, int K, int W>
__device__ void softmax_v2_warp_row(const T* __restrict__ x, T* __restrict__ y, int rows,
                                    int cols, i64 ldx, i64 ldy, int lg) {
    const int lane = threadIdx.x & (W - 1);
    const i64 row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / W;
    // Lanes past the last row still take part in the shuffles (a warp may hold several
    // rows), holding only −inf padding, and store nothing.
    const bool live = row < rows;
    RowRegs<T, VEC, K> r;
    r.load(x + (live ? row : 0) * ldx, live ? cols : 0, lane, W);
    const float m = group_max<W>(r.max());
    const float s = group_sum<W>(r.sum_exp(m, !lg));
    if (live) r.store(y + row * ldy, cols, lane, W, m, s, lg);
}

// v3_block_regs — what changed: one block (up to 1024 threads) per row, the row in
// registers across the block (cols ≤ blockDim·VEC·K: 32 768 f32 / 65 536 bf16 at K = 8),
// 16-byte loads, block reductions through shared memory: one read, one write, for rows too
// wide for a warp. (A single merged (max, sum) reduction, one barrier instead of four, measured
// no faster and cost registers: docs/perf-notes.md.)
template <class T, int VEC, int K>
__device__ void softmax_v3_block_regs(const T* __restrict__ x, T* __restrict__ y, int rows,
                                      int cols, i64 ldx, i64 ldy, int lg) {
    __shared__ float scratch[32];
    RowRegs<T, VEC, K> r;
    r.load(x + (i64)blockIdx.x * ldx, cols, threadIdx.x, blockDim.x);
    const float m = block_max(r.max(), scratch);
    const float s = block_sum(r.sum_exp(m, !lg), scratch);
    r.store(y + (i64)blockIdx.x * ldy, cols, threadIdx.x, blockDim.x, m, s, lg);
}

// v3, shifted — what changed: rows that start off a 16-byte boundary but equally so in x and y
// (odd widths of contiguous rows; the launcher checks) keep v3's 16-byte packs, aligned to the
// memory rather than to the row: only each row's first and last pack, which it fills in part,
// move lane by lane (RowRegs::load_shift). v3's scalar form moved every element alone.
template <class T, int K, bool SPLIT = false>
__device__ void softmax_v3_block_regs_shift(const T* __restrict__ x, T* __restrict__ y, int rows,
                                            int cols, i64 ldx, i64 ldy, int lg) {
    __shared__ float scratch[32];
    RowRegs<T, Pack<T>::N, K> r;
    const T* xr = x + (i64)blockIdx.x * ldx;
    const int off = (int)(((unsigned long long)xr & 15u) / sizeof(T));
    r.template load_shift<SPLIT>(xr, off, cols, threadIdx.x, blockDim.x);
    const float m = block_max(r.max(), scratch);
    const float s = block_sum(r.sum_exp(m, !lg), scratch);
    r.store_shift(y + (i64)blockIdx.x * ldy, off, cols, threadIdx.x, blockDim.x, m, s, lg);
}

// v4_online — what changed: any width. One block per row streams the row twice: pass 1
// keeps an online (max, sum) per thread — per 16-byte pack, a local max and sum, merged into
// the running state with one rescale — then merges across the block; pass 2 re-reads and
// writes. 2 reads + 1 write of HBM in the worst case; while the rows in flight fit in L2
// (≈ 132 rows of up to ~100 K f32) the second read comes from L2.
template <class T, int VEC>
__device__ void softmax_v4_online(const T* __restrict__ x, T* __restrict__ y, int rows,
                                  int cols, i64 ldx, i64 ldy, int lg) {
    __shared__ float scratch[64];
    const T* xr = x + (i64)blockIdx.x * ldx;
    T* yr = y + (i64)blockIdx.x * ldy;
    const int nt = blockDim.x;
    MaxSum st{KL_NEG_INF, 0.0f};
    for (int c0 = threadIdx.x * VEC; c0 < cols; c0 += nt * VEC) {
        float v[VEC];
        if (VEC > 1) unpack(ld16(xr + c0), v, xr);
        else v[0] = to_f32(xr[c0]);
        st = maxsum_merge(st, pack_maxsum<VEC>(v));
    }
    st = block_maxsum(st, scratch);
    const float m = st.m, inv = 1.0f / st.s, ls = logf(st.s);
    for (int c0 = threadIdx.x * VEC; c0 < cols; c0 += nt * VEC) {
        float v[VEC];
        if (VEC > 1) unpack(ld16(xr + c0), v, xr);
        else v[0] = to_f32(xr[c0]);
        #pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = softmax_out(v[j], m, inv, ls, lg);
        if (VEC > 1) st16(yr + c0, pack(v, yr));
        else yr[c0] = from_f32<T>(v[0]);
    }
}

// A row's scalar head: its elements before the first 16-byte boundary (at most cols), which
// the peeled kernels handle one at a time around the row's 16-byte packs.
template <class T> __device__ __forceinline__ int row_head(const T* xr, int cols) {
    return min((int)(((16u - (unsigned)((unsigned long long)xr & 15u)) & 15u) / sizeof(T)), cols);
}

// v4, peeled — what changed: rows that do not start on a 16-byte boundary (any odd width in
// a contiguous tensor: row r starts at r·cols elements) still move 16-byte packs. Each row's
// first `head` elements (up to its first 16-byte boundary) and last `tail` ones are scalar,
// done by the first threads; the body in between is packs. The x and y rows must be equally
// misaligned (row strides equal modulo the pack, bases 16-byte aligned: the launcher checks).
template <class T>
__device__ void softmax_v4_peel(const T* __restrict__ x, T* __restrict__ y, int rows,
                                int cols, i64 ldx, i64 ldy, int lg) {
    constexpr int VEC = Pack<T>::N;
    __shared__ float scratch[64];
    const T* xr = x + (i64)blockIdx.x * ldx;
    T* yr = y + (i64)blockIdx.x * ldy;
    const int nt = blockDim.x;
    const int head = row_head(xr, cols);
    const int tail0 = head + ((cols - head) / VEC) * VEC;  // scalar again from here
    const int n_scalar = head + (cols - tail0);
    MaxSum st{KL_NEG_INF, 0.0f};
    for (int i = threadIdx.x; i < n_scalar; i += nt) {
        const int c = i < head ? i : tail0 + (i - head);
        st = maxsum_add(st, to_f32(xr[c]));
    }
    for (int c0 = head + threadIdx.x * VEC; c0 < tail0; c0 += nt * VEC) {
        float v[VEC];
        unpack(ld16(xr + c0), v, xr);
        st = maxsum_merge(st, pack_maxsum<VEC>(v));
    }
    st = block_maxsum(st, scratch);
    const float m = st.m, inv = 1.0f / st.s, ls = logf(st.s);
    for (int i = threadIdx.x; i < n_scalar; i += nt) {
        const int c = i < head ? i : tail0 + (i - head);
        yr[c] = from_f32<T>(softmax_out(to_f32(xr[c]), m, inv, ls, lg));
    }
    for (int c0 = head + threadIdx.x * VEC; c0 < tail0; c0 += nt * VEC) {
        float v[VEC];
        unpack(ld16(xr + c0), v, xr);
        #pragma unroll
        for (int j = 0; j < VEC; ++j) v[j] = softmax_out(v[j], m, inv, ls, lg);
        st16(yr + c0, pack(v, yr));
    }
}

// Thread-block clusters (sm_90), for v8's rows of several CTAs: a CTA's rank in its cluster,
// the cluster's index, a cluster-wide barrier, and a (max, sum) read from a peer CTA's shared
// memory through distributed shared memory (mapa + ld.shared::cluster).
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// This CTA's cluster's index in the grid (clusters along x): blockIdx.x / cluster size.
__device__ __forceinline__ unsigned cluster_index() {
    unsigned r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Read two floats at the same shared-memory offset in CTA `rank` of this cluster.
__device__ __forceinline__ MaxSum ld_peer_maxsum(const float* local, unsigned rank) {
    u32 remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(local)), "r"(rank));
    MaxSum v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.m), "=f"(v.s) : "r"(remote) : "memory");
    return v;
}

// The row's (max, sum) from its cluster's C CTAs: thread 0 publishes this CTA's `st` in
// `state` (two floats of its shared memory), a cluster barrier, then every warp reads the C
// states through DSMEM and merges them (every thread gets the result). The peers read
// `state` after the barrier: the caller keeps the CTA alive (another cluster barrier) until
// they are done.
__device__ __forceinline__ MaxSum cluster_maxsum(MaxSum st, float* state, int csize) {
    if (threadIdx.x == 0) { state[0] = st.m; state[1] = st.s; }
    cluster_sync_all();  // every CTA's state is published
    const int lane = threadIdx.x & 31;
    return warp_maxsum(lane < csize ? ld_peer_maxsum(state, lane) : MaxSum{KL_NEG_INF, 0.0f});
}

// v6_split — what changed: a row is split across G CTAs that need not form a cluster, so
// a row of any width up to the whole GPU's registers (≈ 264 CTAs × 64 KB: 4 Mi f32) stays on
// chip: one read, one write. Each CTA holds its chunk in registers (as v3 does a whole row),
// reduces it to one (max, sum), publishes that in a global slot, waits for the other G − 1
// slots of its row, merges them and writes its chunk.
// The grid is persistent: groups of G CTAs, each group taking rows g, g + groups, …, all
// resident at once (a cooperative launch checks it), so the wait cannot deadlock.
// Slots are double-buffered by row parity: a CTA can run at most one row ahead of a slower
// peer (it waits for that peer's state of the current row), so it never overwrites a slot
// the peer still has to read. Each slot carries the row's sequence number in the launch, and
// the last CTA to finish zeroes the slots, so the next launch — or the next replay of a
// captured graph — never mistakes an old state for a new one.
// Rows that do not start on a 16-byte boundary but are equally misaligned in x and y get a
// scalar head and tail (held by CTA 0 of the group), as in v4's peeled kernel.
// Each row waits for its slowest peer, which keeps v6 behind the versions that hold a row in
// one CTA (docs/perf-notes.md, "softmax v6").
// A slot holds one CTA's state for one row: two 64-bit words, (tag << 32 | max bits) and
// (tag << 32 | sum bits), where the tag counts the rows its group has taken in this launch,
// from 1.
// Each word is written and read whole (a 64-bit relaxed access is single-copy atomic), so a
// reader that sees the expected tag in both words has the state: no release/acquire fence,
// which measured slower (docs/perf-notes.md, "softmax v6"). The last
// CTA out zeroes the slots, so the next launch (or graph replay) never sees a stale tag.
struct __align__(16) SplitSlot { unsigned long long m, s; };
struct SplitHeader { unsigned done, pad; };

__device__ __forceinline__ void split_publish(SplitSlot* slot, MaxSum st, unsigned tag) {
    const unsigned long long hi = (unsigned long long)tag << 32;
    asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};"
                 :: "l"(slot), "l"(hi | __float_as_uint(st.m)), "l"(hi | __float_as_uint(st.s)) : "memory");
}
// Poll `slot` until it carries `tag`; SLEEP > 0 sleeps that many ns between polls (v11's
// write warps, which may wait out a whole row).
template <int SLEEP = 0>
__device__ __forceinline__ MaxSum split_wait(const SplitSlot* slot, unsigned tag) {
    unsigned long long a, b;
    for (;;) {
        asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(slot) : "memory");
        if ((unsigned)(a >> 32) == tag && (unsigned)(b >> 32) == tag) break;
        if (SLEEP > 0) __nanosleep(SLEEP);
    }
    return MaxSum{__uint_as_float((unsigned)a), __uint_as_float((unsigned)b)};
}

// Where CTA `rank` of the G splitting a row works: the row's scalar head (up to its first
// 16-byte boundary) and tail, and this CTA's part [p0, p0 + n) of the packed body.
struct SplitPart {
    int head, tail0, p0, n;
    // The row's scalar elements, the head and then the tail past the packs: how many, and
    // the column of the i-th.
    __device__ __forceinline__ int scalars(int cols) const { return head + (cols - tail0); }
    __device__ __forceinline__ int scalar_col(int i) const { return i < head ? i : tail0 + (i - head); }
};
// split_part for a row with no scalar head or tail (the caller knows it starts on a 16-byte
// boundary and is a whole number of packs).
template <int VEC>
__device__ __forceinline__ SplitPart split_packed(int cols, int G, int rank) {
    const int packs = cols / VEC;
    const int chunk = (packs + G - 1) / G;
    const int p0 = min(packs, rank * chunk);
    return SplitPart{0, cols, p0, (min(packs, p0 + chunk) - p0) * VEC};
}
template <class T, int VEC>
__device__ __forceinline__ SplitPart split_part(const T* xr, int cols, int G, int rank) {
    int head = 0;
    if constexpr (VEC > 1) head = row_head(xr, cols);
    const int packs = (cols - head) / VEC;
    const int chunk = (packs + G - 1) / G;
    const int p0 = min(packs, rank * chunk);
    return SplitPart{head, head + packs * VEC, p0, (min(packs, p0 + chunk) - p0) * VEC};
}

// Whether this CTA is the grid's last out (every thread gets the answer): each CTA counts
// itself done on `done` once all its threads are through; the last one's fence then puts its
// peers' work (their publishes and reads, seen through the count) before what it does next.
__device__ __forceinline__ bool last_cta_out(unsigned* done) {
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return false;
    __threadfence();
    return true;
}

// The last CTA out zeroes the launch's `n` slots (every other CTA has finished reading
// them: it counted itself done after its last wait) and resets the count for the next launch.
// With G = 1 nothing was published and the caller passes n = 0.
__device__ __forceinline__ void split_finish(SplitHeader* hdr, SplitSlot* slots, int n) {
    if (last_cta_out(&hdr->done)) {
        for (int i = threadIdx.x; i < n; i += blockDim.x) slots[i] = SplitSlot{0ull, 0ull};
        if (threadIdx.x == 0) hdr->done = 0;
    }
}

template <class T, int VEC, int K>
__device__ void softmax_v6_split(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                 i64 ldx, i64 ldy, int lg, int G, SplitHeader* hdr,
                                 SplitSlot* slots) {
    __shared__ float scratch[2][64];
    const int groups = gridDim.x / G;
    const int g = blockIdx.x / G, rank = blockIdx.x % G;
    i64 row = g;
    RowRegs<T, VEC, K> cur;
    // A row's part is recomputed where needed (a few integer ops) rather than kept.
    auto load_part = [&](RowRegs<T, VEC, K>& regs, i64 r) {
        const SplitPart p = split_part<T, VEC>(x + r * ldx, cols, G, rank);
        regs.load(x + r * ldx + p.head + (i64)p.p0 * VEC, p.n, threadIdx.x, blockDim.x);
    };
    if (g < groups && row < rows) load_part(cur, row);
    for (unsigned iter = 0; g < groups && row < rows; row += groups, ++iter) {
        const T* xr = x + row * ldx;
        const SplitPart pc = split_part<T, VEC>(xr, cols, G, rank);
        // CTA 0 of the group also does the scalar head and tail, one element per thread; it
        // reads its element again to write it rather than keep it (a register it lacks).
        MaxSum st = cur.maxsum(!lg);
        if (rank == 0 && threadIdx.x < pc.scalars(cols))
            st = maxsum_add(st, to_f32(xr[pc.scalar_col(threadIdx.x)]));
        // block_maxsum has no leading barrier: with G > 1 the exchange's reduction (on
        // scratch[1]) separates one row's reads of scratch[0] from the next row's writes; with
        // G = 1 there is none, so rows alternate between the two buffers instead.
        st = block_maxsum(st, scratch[G > 1 ? 0 : (iter & 1)]);
        SplitSlot* s = slots + (size_t)(iter & 1) * gridDim.x;
        const unsigned seq = iter + 1;
        if (G > 1 && threadIdx.x == 0) split_publish(s + blockIdx.x, st, seq);
        const i64 next = row + groups;
        if (G > 1) {
            MaxSum all{KL_NEG_INF, 0.0f};
            for (int q = threadIdx.x; q < G; q += blockDim.x)
                all = maxsum_merge(all, split_wait(s + g * G + q, seq));
            st = block_maxsum(all, scratch[1]);
        }
        {
            // The row's geometry again, from an opaque copy of the row index so that the
            // compiler recomputes it rather than keep it in registers through the exchange.
            i64 rr = row;
            asm volatile("" : "+l"(rr));
            const T* xq = x + rr * ldx;
            T* yq = y + rr * ldy;
            const SplitPart pq = split_part<T, VEC>(xq, cols, G, rank);
            cur.store(yq + pq.head + (i64)pq.p0 * VEC, pq.n, threadIdx.x, blockDim.x, st.m, st.s, lg);
            if (rank == 0 && threadIdx.x < pq.scalars(cols)) {
                const int c = pq.scalar_col(threadIdx.x);
                yq[c] = from_f32<T>(softmax_out(to_f32(xq[c]), st.m, 1.0f / st.s, logf(st.s), lg));
            }
        }
        if (next < rows) load_part(cur, next);
    }
    split_finish(hdr, slots, G > 1 ? 2 * gridDim.x : 0);
}

// v8_onchip — what changed: a CTA holds up to ~350 KB of a row, not 128 KB: up to 1024
// threads × K = 8 packs in registers (as v3's widest rows) and the rest of its part in shared
// memory, copied there by cp.async (16 bytes a copy, no register held while it is in flight)
// while the register packs load. Rows of up to ~90 K f32 / ~180 K 16-bit columns then take
// one CTA each and no CTA waits for another (v6 splits them across CTAs on other SMs and each
// waits for its slowest peer); wider rows take a cluster of C = 2–16 such CTAs (sm_90), which
// merge their (max, sum) through distributed shared memory (cluster_maxsum). Smaller parts take fewer threads (several CTAs an SM). Rows that start off a
// 16-byte boundary are peeled as in v6 (CTA rank 0 does the scalar head and tail); rows with
// no scalar at all run a second kernel built without that code (softmax_v8_packed_*). One
// read and one write of each element.
// The packs of a row part held in shared memory: thread tid owns packs tid, tid + nt, … —
// the ones it copied itself, so after its own cp.async.wait_all it reads them with no
// barrier. RowRegs's rules (its packed max and its choice of exponent and output), so both
// halves of a part give the same outputs for the same inputs.
template <class T> struct SmemPart {
    static constexpr int VEC = Pack<T>::N;
    using Regs = RowRegs<T, VEC, 1>;
    const uint4* buf;
    int n, tid, nt;
    __device__ __forceinline__ float max() const {
        if constexpr (Regs::HALF) {
            u32 a = neg_inf_pack<T>().x;
            for (int p = tid; p < n; p += nt) a = Regs::max_pack(a, buf[p]);
            return Regs::max_word(a);
        } else {
            float m = KL_NEG_INF;
            for (int p = tid; p < n; p += nt) {
                float v[VEC];
                unpack(buf[p], v, (const T*)nullptr);
                #pragma unroll
                for (int j = 0; j < VEC; ++j) m = fmax_nan(m, v[j]);
            }
            return m;
        }
    }
    __device__ __forceinline__ float sum_exp(float m, bool fold) const {
        return Regs::sum_exp_of(*this, m, fold);
    }
    template <class F> __device__ __forceinline__ float sum_with(F e) const {
        float s = 0.0f;
        for (int p = tid; p < n; p += nt) {
            float v[VEC];
            unpack(buf[p], v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) s += e(v[j]);
        }
        return s;
    }
    // Pack p goes to row + p·VEC.
    __device__ __forceinline__ void store(T* row, float m, float s, int lg) const {
        Regs::store_of(*this, m, s, lg, row);
    }
    template <class F> __device__ __forceinline__ void store_with(T* row, F out) const {
        for (int p = tid; p < n; p += nt) {
            float v[VEC];
            unpack(buf[p], v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = out(v[j]);
            st16(row + (i64)p * VEC, pack(v, row));
        }
    }
};

// A CTA's part of a row held on chip (v9; v8 does the same inline): split_part's packs for
// CTA `rank` of G, the first nt·K in registers, the rest (sp.n) in shared memory `buf`, copied
// there by cp.async — issued first: they hold no registers while in flight. CTA rank 0 also
// holds the row's scalar head and tail, one element a thread.
// PEEL = false: the caller vouches that the row has no scalar (16-byte aligned, a whole number
// of packs), and the part drops that code (v9's smpair form, whose places from shared memory
// cost the registers the peel's values had held).
template <class T, int K, bool PEEL = true> struct OnchipPart {
    static constexpr int VEC = Pack<T>::N;
    SplitPart pt;
    int rpk;  // packs in registers
    SmemPart<T> sp;
    bool sc;  // this thread holds a scalar
    RowRegs<T, VEC, K> r;
    float xs;
    __device__ __forceinline__ OnchipPart(const T* xr, int cols, int G, int rank, uint4* buf)
        : pt(PEEL ? split_part<T, VEC>(xr, cols, G, rank) : split_packed<VEC>(cols, G, rank)),
          rpk(min(pt.n / VEC, (int)blockDim.x * K)),
          sp{buf, pt.n / VEC - rpk, (int)threadIdx.x, (int)blockDim.x},
          sc(PEEL && rank == 0 && (int)threadIdx.x < pt.scalars(cols)) {
        const T* xb = xr + pt.head + (i64)pt.p0 * VEC;
        // Without this prefetch ptxas issues the scalar load below after the cp.async wait, a
        // second trip to memory that the row's other CTAs wait for; with it the load goes first.
        if (sc) asm volatile("prefetch.global.L1 [%0];" :: "l"(xr + pt.scalar_col(sp.tid)));
        for (int p = sp.tid; p < sp.n; p += sp.nt) cp_async16(smem_addr(buf + p), xb + (i64)(rpk + p) * VEC, 16);
        r.load(xb, rpk * VEC, sp.tid, sp.nt);
        xs = sc ? to_f32(xr[pt.scalar_col(sp.tid)]) : KL_NEG_INF;
    }
    // This thread's (max, sum) over its part: the register packs' max while the copies land,
    // then the shared packs', then both sums against that max.
    __device__ __forceinline__ MaxSum maxsum(int lg) const {
        const float mr = r.max();
        cp_async_wait_all();
        const float mt = fmax_nan(mr, sp.max());
        const MaxSum st{mt, r.sum_exp(mt, !lg) + sp.sum_exp(mt, !lg)};
        return sc ? maxsum_add(st, xs) : st;
    }
    // The outputs of the part, for the row's (max, sum) = (m, s); yr is the row's start in y.
    __device__ __forceinline__ void store(T* yr, float m, float s, int lg) const {
        T* yb = yr + pt.head + (i64)pt.p0 * VEC;
        r.store(yb, rpk * VEC, sp.tid, sp.nt, m, s, lg);
        sp.store(yb + (i64)rpk * VEC, m, s, lg);
        if (sc) yr[pt.scalar_col(sp.tid)] = from_f32<T>(softmax_out(xs, m, 1.0f / s, logf(s), lg));
    }
};

// PEEL = false: the launcher vouches that no row has a scalar head or tail (16-byte aligned
// bases and row strides, widths a multiple of the pack), and the kernel drops that code.
template <class T, int K, bool PEEL>
__device__ void softmax_v8_onchip(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                  i64 ldx, i64 ldy, int lg, int csize) {
    constexpr int VEC = Pack<T>::N;
    extern __shared__ __align__(16) uint4 v8_part[];
    __shared__ float scratch[64];
    __shared__ __align__(8) float state[2];
    __shared__ u32 v8_scalar[16];  // a row has at most 2·(VEC − 1) ≤ 14 scalars
    const int tid = threadIdx.x, nt = blockDim.x;
    // The row and this CTA's rank in it. The peeling kernel takes them with no integer
    // division (a CTA's block index at one CTA a row, the cluster's index and rank otherwise):
    // its prologue's divisions by csize stalled it. The packed kernel divides, which measured
    // faster there than reading %clusterid.x (docs/perf-notes.md, "softmax v8").
    int rank = 0;
    i64 row = blockIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (!PEEL) {
        if (csize > 1) rank = (int)cluster_ctarank();
        row = blockIdx.x / csize;
    } else if (csize > 1) {
        rank = (int)cluster_ctarank();
        row = cluster_index();
    }
#else
    if (csize > 1) __trap();  // clusters need sm_90; the launcher refuses older devices
#endif
    // v8 spells out what v9's OnchipPart does rather than sharing it: NVRTC's code for v8
    // through the shared struct ran slower (docs/perf-notes.md, "softmax v8"). Same steps,
    // same order, but for the scalars (below; v9 ran slower with v8's form of them).
    const T* xr = x + row * ldx;
    T* yr = y + row * ldy;
    // This CTA's packs: the first nt·K in registers, the rest (spk) in shared memory.
    const SplitPart pt = !PEEL     ? split_packed<VEC>(cols, csize, rank)
                         : csize == 1 ? split_part<T, VEC>(xr, cols, 1, 0)
                                      : split_part<T, VEC>(xr, cols, csize, rank);
    const int npk = pt.n / VEC, rpk = min(npk, nt * K), spk = npk - rpk;
    const T* xb = xr + pt.head + (i64)pt.p0 * VEC;
    // CTA 0 of the row also does the scalar head and tail, one element a thread. ptxas issued
    // a plain load of it only once the packs had landed (a second trip to memory), so 16-bit
    // rows copy it to shared memory with the packs (scalar_copy); f32 rows load it plainly
    // and seed the register max with it, which has ptxas issue it first. (Seeded, 16-bit rows
    // ran slower: ptxas reassociates their max chain; docs/perf-notes.md, "softmax v8".)
    const bool sc = PEEL && rank == 0 && tid < pt.scalars(cols);
    const T* xsp = xr + (sc ? pt.scalar_col(tid) : 0);
    constexpr bool plain = sizeof(T) == 4;
    const bool sw = !plain && sc && scalar_word(xsp, xr, cols);
    if (!plain && sc) scalar_copy(v8_scalar + tid, xsp, sw);
    const float xs1 = plain && sc ? to_f32(*xsp) : KL_NEG_INF;
    // The shared-memory copies go out first: they hold no registers while in flight.
    for (int p = tid; p < spk; p += nt) cp_async16(smem_addr(v8_part + p), xb + (i64)(rpk + p) * VEC, 16);
    RowRegs<T, VEC, K> r;
    r.load(xb, rpk * VEC, tid, nt);
    const SmemPart<T> sp{v8_part, spk, tid, nt};
    // The register packs' max while the copies land.
    const float mr = plain ? r.max_seeded(xs1) : r.max();
    cp_async_wait_all();
    const float xs = plain ? xs1 : sc ? scalar_read(v8_scalar + tid, xsp, sw) : KL_NEG_INF;
    const float mt = fmax_nan(mr, sp.max());
    // Each thread's (max, sum) at once, then one merged block reduction. Taking the block's
    // max first and the sums against it (as v3 does: cheaper merges, but the sums wait for a
    // barrier) measured slower here: with one 1024-thread CTA an SM, each warp's exponentials
    // overlap the other warps' last loads only when they need no barrier first
    // (docs/perf-notes.md, "softmax v8").
    MaxSum st{mt, r.sum_exp(mt, !lg) + sp.sum_exp(mt, !lg)};
    if (sc) st = maxsum_add(st, xs);
    st = block_maxsum(st, scratch);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (csize > 1) {
        st = cluster_maxsum(st, state, csize);
        // This CTA is done reading its peers' shared memory; it waits for them to be done
        // with its own only before it exits, so the write does not wait.
        asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
    }
#endif
    T* yb = yr + pt.head + (i64)pt.p0 * VEC;
    r.store(yb, rpk * VEC, tid, nt, st.m, st.s, lg);
    sp.store(yb + (i64)rpk * VEC, st.m, st.s, lg);
    if (sc)
        yr[pt.scalar_col(tid)] = from_f32<T>(softmax_out(xs, st.m, 1.0f / st.s, logf(st.s), lg));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (csize > 1) asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// v9_gridsync — what changed: v8's on-chip row parts (registers, then shared memory filled by
// cp.async) with v6's exchange instead of a cluster's. A row is split across G CTAs that need
// not form a cluster — up to every CTA resident on the GPU, not 16 — each holding its part on
// chip; they publish their (max, sum) in v6's tagged global slots, wait for the G − 1 others
// and write. The grid is v6's persistent cooperative one: groups of G CTAs walk the rows, a
// group's rows alternate between two slot sets. So a row of up to ~45 MB is read once and
// written once, in parts 2× v6's by default (two 512-thread CTAs an SM, each holding 64 KB in
// registers and up to as much again in shared memory; more shared memory when a row needs it):
// a row takes half v6's CTAs, each waits for fewer peers, and the wait is a smaller share of
// each part's time. Odd widths are peeled as in v6 (CTA rank 0 does the
// scalar head and tail).
// A thread's shared-memory packs are the ones it copied itself, read by it alone, so a row's
// copies need no barrier against the previous row's reads either.
// It leads v6 and v8's clusters of 16 on the widest rows and trails v8 where clusters of ≤ 8
// hold the row; two CTAs an SM with parts at most half in shared memory beat one CTA an SM and
// parts mostly in shared memory (stalls on shared-memory reads; docs/perf-notes.md, "softmax v9").
// PP, the ping-pong form: with few groups they load, wait and write in step, so the DRAM idles
// through every exchange. PP pairs group g with g + groups/2 and has them take turns to read:
// one half reads while the other exchanges and writes. It gains where few groups walk the rows
// and loses a little where many groups are out of step anyway, so the launcher runs it from 16
// CTAs a row (docs/perf-notes.md, "softmax v9").
// SMPAIR (v9's smpair form, sm_90 and later; the launcher's choice with two groups where it
// can run, and a tuning that forces it off or on): a CTA's place in the grid (its group and
// rank, so its row's part and its ping-pong partner) comes from the SM it runs on rather than
// its block index, so that the two CTAs an SM holds are partners — one reads while the other
// exchanges and writes. The block scheduler never puts partners by block index on one SM, and
// an SM holding two CTAs of one row is its row's latest, which every row then waits for
// (docs/perf-notes.md, "softmax v9").
// The first CTA to reach an SM takes the next of grid/2 "lower" places (a ticket) and posts it
// for the SM; the second takes the same place in the upper half. The launcher runs this only
// with exactly two CTAs on every SM (a cooperative grid of 2 × SMs, the driver's occupancy 2)
// and an even number of groups, so each lower place v (group v / G, rank v % G) has its upper
// partner grid/2 + v (group v / G + groups/2, the same rank). `pairing` (zero at launch; the
// last CTA clears it with the slots): [0] the ticket, [1 + s] SM s's arrivals, [1 + V9_MAX_SMS
// + s] SM s's lower place + 1.
#define V9_MAX_SMS 1024
#define V9_PAIRING_WORDS (1 + 2 * V9_MAX_SMS)
#define V9_PAIRING_SLOTS ((V9_PAIRING_WORDS * 4 + 15) / 16)  // in 16-byte slots
// The CTA's group, rank and place, posted in shared memory by thread 0 for the block.
__device__ __forceinline__ int* v9_place() {
    __shared__ int place[3];  // group, rank, place
    return place;
}
__device__ __forceinline__ void v9_take_place(unsigned* pairing, int G) {
    if (threadIdx.x == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        const unsigned half = gridDim.x / 2;
        // Unreachable under the launcher's conditions; a wrong place would be a wrong answer.
        if (sm >= V9_MAX_SMS) __trap();
        const unsigned seat = atomicAdd(pairing + 1 + sm, 1u);
        unsigned* posted = pairing + 1 + V9_MAX_SMS + sm;
        unsigned lower;
        if (seat == 0) {
            lower = atomicAdd(pairing, 1u);
            asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(posted), "r"(lower + 1) : "memory");
        } else {
            unsigned v;
            do {
                asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(posted) : "memory");
            } while (v == 0);
            lower = v - 1;
        }
        if (seat > 1 || lower >= half) __trap();
        const int place = (int)(seat == 0 ? lower : half + lower);
        v9_place()[0] = place / G;
        v9_place()[1] = place % G;
        v9_place()[2] = place;
    }
    __syncthreads();
}

template <class T, int K, bool PP, bool SMPAIR>
__device__ void softmax_v9_gridsync(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                    i64 ldx, i64 ldy, int lg, int G, SplitHeader* hdr,
                                    SplitSlot* slots) {
    extern __shared__ __align__(16) uint4 v9_part[];
    __shared__ float scratch[2][64];
    const int tid = threadIdx.x, nt = blockDim.x;
    const int groups = gridDim.x / G;
    // This CTA's group and rank: from its block index, or with SMPAIR from its SM.
    // SMPAIR reads them from shared memory where used. They cannot be recomputed from the
    // block index as the other forms' are, and with the scalar peel that pushed its 64
    // registers into spills (4–28 bytes, ptxas sm_90a), so SMPAIR parts are built without it.
    int g0 = 0, rank0 = 0;
    if constexpr (SMPAIR) {
        v9_take_place(reinterpret_cast<unsigned*>(slots + 2 * gridDim.x), G);
    } else {
        g0 = blockIdx.x / G;
        rank0 = blockIdx.x % G;
    }
    const auto g = [&]() -> int {
        if constexpr (SMPAIR) return v9_place()[0];
        else return g0;
    };
    const auto rank = [&]() -> int {
        if constexpr (SMPAIR) return v9_place()[1];
        else return rank0;
    };
    const auto cta = [&]() -> unsigned {
        if constexpr (SMPAIR) return (unsigned)v9_place()[2];
        else return blockIdx.x;
    };
    // Ping-pong: groups g and g + half take turns to read. A group of the upper half reads
    // its row of step i once its partner's CTA of the same rank has read (published) step i;
    // one of the lower half reads step i once its partner has published step i − 1. So one
    // half reads while the other exchanges and writes. Each wait is for an earlier publish,
    // and a partner that waits has a row at that step, so nothing waits in a cycle.
    const int half = G > 1 ? groups / 2 : 0;
    unsigned iter = 0;
    for (i64 row = g(); g() < groups && row < rows; row += groups, ++iter) {
        if constexpr (PP) {
            if (g() < 2 * half && (g() >= half || iter > 0)) {
                if (tid == 0) {
                    const bool upper = g() >= half;
                    const unsigned it = upper ? iter : iter - 1;
                    const int p = upper ? g() - half : g() + half;
                    (void)split_wait(slots + (size_t)(it & 1) * gridDim.x + p * G + rank(), it + 1);
                }
                __syncthreads();
            }
        }
        const OnchipPart<T, K, !SMPAIR> part(x + row * ldx, cols, G, rank(), v9_part);
        MaxSum st = part.maxsum(lg);
        // Scratch buffers as in v6: with G > 1 the exchange's reduction (scratch[1]) separates
        // one row's reads of scratch[0] from the next row's writes; with G = 1 rows alternate.
        st = block_maxsum(st, scratch[G > 1 ? 0 : (iter & 1)]);
        if (G > 1) {
            SplitSlot* s = slots + (size_t)(iter & 1) * gridDim.x;
            const unsigned seq = iter + 1;
            if (tid == 0) split_publish(s + cta(), st, seq);
            MaxSum all{KL_NEG_INF, 0.0f};
            for (int q = tid; q < G; q += nt) all = maxsum_merge(all, split_wait(s + g() * G + q, seq));
            st = block_maxsum(all, scratch[1]);
        }
        part.store(y + row * ldy, st.m, st.s, lg);
    }
    split_finish(hdr, slots, SMPAIR ? 2 * gridDim.x + V9_PAIRING_SLOTS : G > 1 ? 2 * gridDim.x : 0);
}

// Where chunk c of a row lies, at tp packs a chunk (v11): the row's scalar head and tail (as
// SplitPart), and packs [q0, q0 + n / VEC) of its packed body, n elements (≤ 0: the chunk is
// past the row's end).
template <class T, int VEC>
__device__ __forceinline__ SplitPart tile_part(const T* xr, int cols, int c, int tp) {
    const int head = row_head(xr, cols);
    const int packs = (cols - head) / VEC;
    const int q0 = min(packs, c * tp);
    return SplitPart{head, head + packs * VEC, q0, (min(packs, q0 + tp) - q0) * VEC};
}

// v11_deal — what changed: no row is split evenly over the SMs, so no SM waits for the
// slowest one's even share. Rows are cut into chunks of CP 16-byte packs, numbered row by row,
// and a persistent grid (one CTA an SM, cooperative launch) deals them out on demand: each
// CTA's producer lane claims the next chunk with one atomicAdd on a counter as soon as one of
// its `ns` shared-memory slots is free, and fills the slot with one TMA bulk copy. An SM that
// streams faster claims more chunks (v9's parts are fixed, and its row waits for the SMs that
// stream slowest; docs/perf-notes.md, "softmax v11"). Each chunk is
// read once from HBM and held on chip until its row is done. Every warp works alone, a chunk
// at a time (no barrier inside the loop), so a warp waiting on memory or on a row leaves the
// SM to the others:
// - warp 0, lane 0: claims and copies, slot by slot in order, claiming only for free slots
//   (several with one atomicAdd where several are free);
// - NA "stats" warps, warp a taking chunks a, a + NA, …: the chunk's (max, Σ e^(x−max))
//   (RowRegs' rules), published in the chunk's tagged slot (v6's relaxed 64-bit words), then
//   one relaxed atomicAdd on the row's count; the warp whose add completes the row merges the
//   row's chunk states and publishes the row's (max, sum) in the row's tagged slot;
// - NB "write" warps, warp b taking chunks b, b + NB, …: once the row's slot carries the
//   launch's tag (lane 0 polls it), write the chunk's outputs from the slot and free it.
// The stats warps never wait for a row, so a CTA publishes every chunk it has loaded while
// its writes wait. No deadlock: chunks are claimed in order and loaded with no dependency,
// so the oldest incomplete row is fully claimed unless every slot of the grid holds a chunk
// of it, which the launcher's rule (chunks a row ≤ grid · ns) rules out.
// The row counts and the claim counter are cleared, and the launch tag bumped, by the last
// CTA out (DealHeader), so graph replays and later launches of any shape start clean; the
// tagged slots need no clearing. Rows off a 16-byte boundary are peeled as in v6: chunk 0 of
// a row also takes its scalar head and tail.
#define KL_V11_NA 4
#define KL_V11_NB 8
#define KL_V11_BATCH 4
#define KL_V11_MAX_SLOTS 24
#define KL_V11_THREADS (32 * (1 + KL_V11_NA + KL_V11_NB))
struct __align__(16) DealHeader { unsigned next, done, epoch, pad; };

// A consumer warp's wait for its n-th claim's chunk, false once the claims ran out before
// n. Warps take every NA-th or NB-th claim, so one may reach claim n while the slot's
// previous fill (claim n − ns, another warp's) is still in flight, and a parity test alone
// would then answer for the fill before that one. seq[s] == n says the fill of claim n was
// issued (so the one before it completed); read before the parity test, it makes the test's
// answer the one for claim n.
#if KL_HOPPER
__device__ __forceinline__ bool v11_wait(int n, int ns, unsigned long long* full, int* seq, int* end_n) {
    const int s = n % ns;
    const u32 bar = smem_addr(&full[s]), par = (u32)(n / ns) & 1u;
    for (;;) {
        if (*(volatile int*)end_n <= n) return false;
        if (*(volatile int*)&seq[s] == n && mbar_test(bar, par)) return true;
    }
}
#endif

// Pass j of a warp over a slot of np packs: lane l's 8 packs j·256 + k·32 + l (−inf past np).
template <class T, int VEC>
__device__ __forceinline__ void v11_pass(RowRegs<T, VEC, 8>& a, const uint4* sp, int j, int np, int lane) {
    #pragma unroll
    for (int k = 0; k < 8; ++k) {
        const int q = (j * 8 + k) * 32 + lane;
        a.raw[k] = q < np ? sp[q] : neg_inf_pack<T>();
    }
}

template <class T, int CP>
__device__ void softmax_v11_deal(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                 i64 ldx, i64 ldy, int lg, int cpr, int ns, DealHeader* hdr,
                                 unsigned* cnt, SplitSlot* state, SplitSlot* rowst) {
#if KL_HOPPER
    constexpr int VEC = Pack<T>::N;
    // A warp moves a chunk in KS passes of 8 packs a lane (32 registers of raw packs).
    constexpr int KS = CP / (32 * 8);
    static_assert(CP % 256 == 0, "a chunk is whole passes of 8 packs a lane");
    extern __shared__ __align__(128) uint4 v11_slots[];
    __shared__ __align__(8) unsigned long long full[KL_V11_MAX_SLOTS], empty[KL_V11_MAX_SLOTS];
    // ids[s]: the chunk in slot s; seq[s]: its place in this CTA's claims (the n that filled
    // it); end_n: the first place with no chunk (2^31 − 1 until the claims run out).
    __shared__ int ids[KL_V11_MAX_SLOTS], seq[KL_V11_MAX_SLOTS];
    __shared__ int end_n;
    __shared__ unsigned tag_s;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int total = rows * cpr;  // the launcher keeps total + 8·grid below 2^31
    if (tid == 0) {
        for (int s = 0; s < ns; ++s) {
            mbar_init(smem_addr(&full[s]), 1);
            mbar_init(smem_addr(&empty[s]), 1);
            seq[s] = -1;
        }
        end_n = 0x7fffffff;
        mbar_init_fence();
        tag_s = *(volatile unsigned*)&hdr->epoch + 1u;
    }
    __syncthreads();
    const unsigned tag = tag_s;
    if (warp == 0) {
        if (lane == 0) {
            // Claims are batched: once slot n is free, the slots after it that are free too
            // (up to KL_V11_BATCH in all) are claimed with the same atomicAdd, consecutive
            // chunks, so a producer that fell behind catches up a round trip for several.
            // Only free slots are claimed for: a claim held while waiting for a slot could be
            // the one chunk its own row waits for (a CTA holding ns chunks of that row).
            int base = 0, have = 0;
            for (int n = 0;; ++n) {
                const int s = n % ns;
                const unsigned u = (unsigned)(n / ns);
                if (have == 0) {
                    if (n >= ns) mbar_wait(smem_addr(&empty[s]), (u - 1u) & 1u);
                    int k = 1;
                    while (k < KL_V11_BATCH && k < ns) {
                        const int m = n + k;
                        if (m >= ns && !mbar_test(smem_addr(&empty[m % ns]), ((unsigned)(m / ns) - 1u) & 1u)) break;
                        ++k;
                    }
                    base = (int)atomicAdd(&hdr->next, (unsigned)k);
                    have = k;
                }
                const int id = base++;
                --have;
                if (id >= total) {
                    *(volatile int*)&end_n = n;
                    break;
                }
                const int r = id / cpr, c = id - r * cpr;
                const T* xr = x + r * ldx;
                const SplitPart g = tile_part<T, VEC>(xr, cols, c, CP);
                *(volatile int*)&ids[s] = id;
                *(volatile int*)&seq[s] = n;
                const u32 bytes = (u32)(g.n / VEC) * 16u, bar = smem_addr(&full[s]);
                if (bytes) {
                    mbar_expect_tx(bar, bytes);
                    bulk_load(smem_addr(v11_slots + (size_t)s * CP), xr + g.head + (i64)g.p0 * VEC, bytes, bar);
                } else {
                    mbar_arrive(bar);
                }
            }
        }
    } else if (warp <= KL_V11_NA) {
        for (int n = warp - 1;; n += KL_V11_NA) {
            const int s = n % ns;
            if (!v11_wait(n, ns, full, seq, &end_n)) break;
            const int id = ids[s];
            const int r = id / cpr, c = id - r * cpr;
            const T* xr = x + r * ldx;
            const SplitPart g = tile_part<T, VEC>(xr, cols, c, CP);
            const int np = g.n / VEC;
            const uint4* sp = v11_slots + (size_t)s * CP;
            MaxSum st{KL_NEG_INF, 0.0f};
            #pragma unroll 1
            for (int j = 0; j < KS; ++j) {
                RowRegs<T, VEC, 8> a;
                v11_pass(a, sp, j, np, lane);
                st = maxsum_merge(st, a.maxsum(!lg));
            }
            if (c == 0 && lane < g.scalars(cols)) st = maxsum_add(st, to_f32(xr[g.scalar_col(lane)]));
            st = warp_maxsum(st);
            unsigned done = 0;
            if (lane == 0) {
                split_publish(state + id, st, tag);
                done = atomicAdd(cnt + r, 1u);
            }
            done = __shfl_sync(0xffffffffu, done, 0);
            // The warp whose add completes the row merges its chunks' states.
            if (done == (unsigned)cpr - 1u) {
                // 16 loads a lane in flight (a poll only for a state not yet visible).
                MaxSum all{KL_NEG_INF, 0.0f};
                const SplitSlot* rs0 = state + (i64)r * cpr;
                for (int q0 = 0; q0 < cpr; q0 += 32 * 16) {
                    unsigned long long va[16], vb[16];
                    #pragma unroll
                    for (int i = 0; i < 16; ++i) {
                        const int q = q0 + i * 32 + lane;
                        va[i] = vb[i] = 0ull;
                        if (q < cpr)
                            asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
                                         : "=l"(va[i]), "=l"(vb[i]) : "l"(rs0 + q) : "memory");
                    }
                    #pragma unroll
                    for (int i = 0; i < 16; ++i) {
                        const int q = q0 + i * 32 + lane;
                        if (q >= cpr) continue;
                        const MaxSum v = (unsigned)(va[i] >> 32) == tag && (unsigned)(vb[i] >> 32) == tag
                            ? MaxSum{__uint_as_float((unsigned)va[i]), __uint_as_float((unsigned)vb[i])}
                            : split_wait(rs0 + q, tag);
                        all = maxsum_merge(all, v);
                    }
                }
                all = warp_maxsum(all);
                if (lane == 0) split_publish(rowst + r, all, tag);
            }
        }
    } else {
        int cur = -1;
        float rm = 0.0f, rs = 0.0f;
        for (int n = warp - 1 - KL_V11_NA;; n += KL_V11_NB) {
            const int s = n % ns;
            if (!v11_wait(n, ns, full, seq, &end_n)) break;
            const int id = ids[s];
            const int r = id / cpr, c = id - r * cpr;
            if (r != cur) {
                MaxSum all{0.0f, 0.0f};
                if (lane == 0) all = split_wait<32>(rowst + r, tag);
                rm = __shfl_sync(0xffffffffu, all.m, 0);
                rs = __shfl_sync(0xffffffffu, all.s, 0);
                cur = r;
            }
            const T* xr = x + r * ldx;
            T* yr = y + r * ldy;
            const SplitPart g = tile_part<T, VEC>(xr, cols, c, CP);
            const int np = g.n / VEC;
            const uint4* sp = v11_slots + (size_t)s * CP;
            T* yb = yr + g.head + (i64)g.p0 * VEC;
            #pragma unroll 1
            for (int j = 0; j < KS; ++j) {
                RowRegs<T, VEC, 8> b;
                v11_pass(b, sp, j, np, lane);
                if (j == KS - 1) {
                    // The slot's last reads are done (in registers): free it for the next claim.
                    __syncwarp();
                    if (lane == 0) mbar_arrive(smem_addr(&empty[s]));
                }
                b.store(yb + (i64)j * 256 * VEC, g.n - j * 256 * VEC, lane, 32, rm, rs, lg);
            }
            if (c == 0 && lane < g.scalars(cols)) {
                const int col = g.scalar_col(lane);
                yr[col] = from_f32<T>(softmax_out(to_f32(xr[col]), rm, 1.0f / rs, logf(rs), lg));
            }
        }
    }
    // KL_V11_BATCH must stay ≤ 8 (the launcher keeps total + 8·grid claims within i32).
    // The last CTA out clears the row counts and the claim counter and bumps the launch tag
    // (every CTA read it at its start; every count was last used before its user's CTA counted
    // itself done).
    if (last_cta_out(&hdr->done)) {
        for (int i = tid; i < rows; i += blockDim.x) cnt[i] = 0u;
        if (tid == 0) {
            hdr->next = 0u;
            hdr->done = 0u;
            hdr->epoch = tag;
        }
    }
#else
    __trap();
#endif
}

// ---- exported symbols ------------------------------------------------------------------
#define KL_ARGS(T) const T* x, T* y, int rows, int cols, i64 ldx, i64 ldy, int lg
#define KL_PASS x, y, rows, cols, ldx, ldy, lg

#define KL_V1(TN, T) \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v1_block_row_##TN(KL_ARGS(T)) { softmax_v1_block_row<T>(KL_PASS); }

// v2's blocks are 128 threads (the launcher's V2_THREADS).
#define KL_V2_THREADS 128
#define KL_V2(TN, T, K)                                                                        \
    extern "C" __global__ void __launch_bounds__(KL_V2_THREADS) softmax_v2_warp_row_vec_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, Pack<T>::N, K, 32>(KL_PASS); }                                      \
    extern "C" __global__ void __launch_bounds__(KL_V2_THREADS) softmax_v2_warp_row_scalar_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, 1, K, 32>(KL_PASS); }
// Several rows per warp: W lanes a row, one slot each.
#define KL_V2W(TN, T, W)                                                                       \
    extern "C" __global__ void __launch_bounds__(KL_V2_THREADS) softmax_v2_warp_row_vec_w##W##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, Pack<T>::N, 1, W>(KL_PASS); }                                       \
    extern "C" __global__ void __launch_bounds__(KL_V2_THREADS) softmax_v2_warp_row_scalar_w##W##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, 1, 1, W>(KL_PASS); }

// v3's K = 8 instances launch 1024-thread blocks holding 128 KB rows: one block per SM, so they
// may take all 64 registers (launch bounds (1024, 1)); the smaller K run several blocks per
// SM and keep the default bound, which lets ptxas aim for two 1024-thread blocks. The 16-bit
// K = 4 instances are held to 40 registers (no spills): left to the default bound ptxas gave
// them 55–64, where f32's take 32. That adds resident blocks of up to ~800 threads (rows up
// to ~25600 bf16 columns: at 512 threads, two blocks an SM become three); a 1024-thread
// block stays alone on its SM either way.
#define KL_V3_BOUNDS_1(TN) __launch_bounds__(1024)
#define KL_V3_BOUNDS_2(TN) __launch_bounds__(1024)
#define KL_V3_BOUNDS_4(TN) KL_V3_BOUNDS_4_##TN
#define KL_V3_BOUNDS_4_f32 __launch_bounds__(1024)
#define KL_V3_BOUNDS_4_bf16 __maxnreg__(40)
#define KL_V3_BOUNDS_4_f16 __maxnreg__(40)
#define KL_V3_BOUNDS_8(TN) __launch_bounds__(1024, 1)
#define KL_V3(TN, T, K)                                                                          \
    extern "C" __global__ void KL_V3_BOUNDS_##K(TN) softmax_v3_block_regs_vec_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs<T, Pack<T>::N, K>(KL_PASS); }                                          \
    extern "C" __global__ void KL_V3_BOUNDS_##K(TN) softmax_v3_block_regs_scalar_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs<T, 1, K>(KL_PASS); }                                                   \
    extern "C" __global__ void KL_V3_BOUNDS_##K(TN) softmax_v3_block_regs_shift_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs_shift<T, K>(KL_PASS); }
// v3's shifted form with the split load (RowRegs::load_shift<true>), 16-bit rows only.
#define KL_V3S(TN, T, K)                                                                         \
    extern "C" __global__ void KL_V3_BOUNDS_##K(TN) softmax_v3_block_regs_shiftsplit_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs_shift<T, K, true>(KL_PASS); }

#define KL_V4(TN, T)                                                                           \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_vec_##TN(KL_ARGS(T)) { \
        softmax_v4_online<T, Pack<T>::N>(KL_PASS); }                                             \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_scalar_##TN(KL_ARGS(T)) { \
        softmax_v4_online<T, 1>(KL_PASS); }                                                      \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_peel_##TN(KL_ARGS(T)) { \
        softmax_v4_peel<T>(KL_PASS); }


// Two CTAs of 512 threads per SM (64 registers) on sm_90; sm_80's code needs a few more
// registers than that for the f32 kernel, so one CTA per SM there rather than spills.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KL_V6_MIN_BLOCKS 1
#else
#define KL_V6_MIN_BLOCKS 2
#endif
#define KL_V6_ONE(NAME, TN, T, VEC)                                                              \
    extern "C" __global__ void __launch_bounds__(512, KL_V6_MIN_BLOCKS) NAME##_##TN(                                 \
        KL_ARGS(T), int ctas_per_row, SplitHeader* hdr, SplitSlot* slots) {                   \
        softmax_v6_split<T, VEC, 8>(KL_PASS, ctas_per_row, hdr, slots); }
#define KL_V6(TN, T)                                                  \
    KL_V6_ONE(softmax_v6_split_vec, TN, T, Pack<T>::N)                \
    KL_V6_ONE(softmax_v6_split_scalar, TN, T, 1)

// v8: one 1024-thread CTA an SM, all 64 registers (as v3 at K = 8).
// softmax_v8_packed_*: rows with no scalar head or tail (the launcher's `vec` rows).
#define KL_V8(TN, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v8_onchip_##TN(KL_ARGS(T), int csize) { \
        softmax_v8_onchip<T, 8, true>(KL_PASS, csize); }                                          \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v8_packed_##TN(KL_ARGS(T), int csize) { \
        softmax_v8_onchip<T, 8, false>(KL_PASS, csize); }

// v9: 1024 or 512 threads (one or two CTAs an SM), 64 registers as v8. The ping-pong form and
// the smpair form (ping-pong with SM-paired places) are built for sm_90 and later (for sm_80
// ptxas spilled ping-pong at 64 registers; the launcher runs them from sm_90 on, and their
// sm_80 symbols are the plain form). Kernels built without the peel, as v8's packed one,
// measured no faster (docs/perf-notes.md, "softmax v9").
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define KL_V9_PP true
#else
#define KL_V9_PP false
#endif
#define KL_V9(TN, T)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v9_gridsync_##TN(                 \
        KL_ARGS(T), int ctas_per_row, SplitHeader* hdr, SplitSlot* slots) {                       \
        softmax_v9_gridsync<T, 8, false, false>(KL_PASS, ctas_per_row, hdr, slots); }         \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v9_pingpong_##TN(                 \
        KL_ARGS(T), int ctas_per_row, SplitHeader* hdr, SplitSlot* slots) {                       \
        softmax_v9_gridsync<T, 8, KL_V9_PP, false>(KL_PASS, ctas_per_row, hdr, slots); }      \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v9_smpair_##TN(                   \
        KL_ARGS(T), int ctas_per_row, SplitHeader* hdr, SplitSlot* slots) {                       \
        softmax_v9_gridsync<T, 8, KL_V9_PP, KL_V9_PP>(KL_PASS, ctas_per_row, hdr, slots); }

// v11: one CTA an SM: a producer warp, KL_V11_NA stats warps and KL_V11_NB write warps;
// chunks of CP = 512, 1024 or 2048 16-byte packs (8, 16 or 32 KB).
#define KL_V11(TN, T, CP)                                                                         \
    extern "C" __global__ void __launch_bounds__(KL_V11_THREADS, 1) softmax_v11_deal_c##CP##_##TN( \
        KL_ARGS(T), int cpr, int ns, DealHeader* hdr, unsigned* cnt, SplitSlot* state,              \
        SplitSlot* rowst) {                                                                         \
        softmax_v11_deal<T, CP>(KL_PASS, cpr, ns, hdr, cnt, state, rowst); }

#define KL_ALL(TN, T)                                                        \
    KL_V1(TN, T)                                                             \
    KL_V2(TN, T, 1) KL_V2(TN, T, 2) KL_V2(TN, T, 4) KL_V2(TN, T, 8)          \
    KL_V2W(TN, T, 4) KL_V2W(TN, T, 8) KL_V2W(TN, T, 16)                      \
    KL_V3(TN, T, 1) KL_V3(TN, T, 2) KL_V3(TN, T, 4) KL_V3(TN, T, 8)          \
    KL_V4(TN, T)                                                             \
    KL_V6(TN, T)                                                             \
    KL_V8(TN, T)                                                             \
    KL_V9(TN, T)                                                             \
    KL_V11(TN, T, 512) KL_V11(TN, T, 1024) KL_V11(TN, T, 2048)

#define KL_HALF(TN, T) KL_V3S(TN, T, 1) KL_V3S(TN, T, 2) KL_V3S(TN, T, 4) KL_V3S(TN, T, 8)

KL_ALL(f32, float)
KL_ALL(bf16, bf16)
KL_ALL(f16, f16)
KL_HALF(bf16, bf16)
KL_HALF(f16, f16)
