// softmax.cu — every numbered softmax version (over the last dimension), side by side.
// The list of versions and the choice among them live in the Rust registry
// (src/ops/softmax.rs), not here.
//
// Every kernel takes (x, y, rows, cols, ldx, ldy, lg): row r starts at x + r·ldx; only `cols`
// elements of it are read; lg ≠ 0 writes log_softmax, x − (max + log Σ e^(x−max)), from the
// same passes. Minimum traffic: read rows·cols, write rows·cols elements.
// Semantics as PyTorch: a row of all −inf, or holding NaN or +inf, gives NaN outputs.
#include "common.cuh"

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

template <class T, int VEC, int K> struct RowRegs {
    static constexpr bool PACKED = VEC > 1;
    uint4 raw[PACKED ? K : 1];
    float val[PACKED ? 1 : K];

    // Slot k of this thread covers columns [(k·stride + tid)·VEC, … + VEC).
    __device__ __forceinline__ void load(const T* row, int cols, int tid, int stride) {
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c0 = (k * stride + tid) * VEC;
            if constexpr (PACKED) raw[k] = c0 < cols ? ld16(row + c0) : neg_inf_pack<T>();
            else val[k] = c0 < cols ? to_f32(row[c0]) : KL_NEG_INF;
        }
    }
    // The empty volatile asm makes each pass unpack afresh: without it the compiler keeps
    // all K·VEC unpacked floats live across the passes (64 for bf16 at K = 8) and spills.
    __device__ __forceinline__ void get(int k, float* v, const T* tag) const {
        if constexpr (PACKED) {
            uint4 u = raw[k];
            asm volatile("" : "+r"(u.x), "+r"(u.y), "+r"(u.z), "+r"(u.w));
            unpack(u, v, tag);
        } else {
            v[0] = val[k];
        }
    }
    // The max over this thread's slots (NaN-propagating; a NaN also reaches the sum).
    __device__ __forceinline__ float max() const {
        float m = KL_NEG_INF;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            float v[VEC];
            get(k, v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) m = fmax_nan(m, v[j]);
        }
        return m;
    }
    // Σ e^(x − m). With a finite m the −inf padding adds exactly 0; with m = −inf (a row of
    // all −inf) every term is NaN, and so is every output, as PyTorch gives.
    __device__ __forceinline__ float sum_exp(float m) const {
        float s = 0.0f;
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            float v[VEC];
            get(k, v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) s += fast_exp(v[j] - m);
        }
        return s;
    }
    // This thread's online-softmax state over its slots (a thread holding only padding has
    // max −inf and counts for nothing in the merge).
    // One pass over the slots: per slot a local max and sum, merged into the running state
    // (one unpack per slot keeps register pressure at K = 8 within the 64 a 1024-thread block
    // allows).
    __device__ __forceinline__ MaxSum maxsum() const {
        MaxSum st{KL_NEG_INF, 0.0f};
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            float v[VEC];
            get(k, v, (const T*)nullptr);
            st = maxsum_merge(st, pack_maxsum<VEC>(v));
        }
        return st;
    }
    __device__ __forceinline__ void store(T* row, int cols, int tid, int stride, float m, float s, int lg) const {
        const float inv = 1.0f / s, ls = logf(s);
        #pragma unroll
        for (int k = 0; k < K; ++k) {
            const int c0 = (k * stride + tid) * VEC;
            if (c0 >= cols) continue;
            float v[VEC];
            get(k, v, (const T*)nullptr);
            #pragma unroll
            for (int j = 0; j < VEC; ++j) v[j] = softmax_out(v[j], m, inv, ls, lg);
            if constexpr (PACKED) st16(row + c0, pack(v, row));
            else row[c0] = from_f32<T>(v[0]);
        }
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
    const float s = group_sum<W>(r.sum_exp(m));
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
    const float s = block_sum(r.sum_exp(m), scratch);
    r.store(y + (i64)blockIdx.x * ldy, cols, threadIdx.x, blockDim.x, m, s, lg);
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
    int head = (int)(((16u - (unsigned)((unsigned long long)xr & 15u)) & 15u) / sizeof(T));
    if (head > cols) head = cols;
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

// v5_cluster — what changed: a row is split across a thread-block cluster of C CTAs (C ≤ 16,
// Hopper), each holding its 1/C of the row in registers (as v3 does a whole row). Each CTA
// reduces its part to one (max, sum) state, publishes it in its shared memory, and after a
// cluster barrier every CTA reads the C states through distributed shared memory (mapa +
// ld.shared::cluster) and merges them. One read and one write of each element for rows up to
// C · blockDim · K · 16 bytes (2 MB at C = 16, 1024 threads, K = 8), and smaller CTAs than v3
// for medium rows, so several rows share an SM and one row's loads overlap another's
// reductions. The grid is C·rows CTAs in clusters of C along x.
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// Read two floats at the same shared-memory offset in CTA `rank` of this cluster.
__device__ __forceinline__ MaxSum ld_peer_maxsum(const float* local, unsigned rank) {
    u32 addr, remote;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(addr) : "l"(local));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
    MaxSum v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.m), "=f"(v.s) : "r"(remote) : "memory");
    return v;
}

template <class T, int VEC, int K>
__device__ void softmax_v5_cluster(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                   i64 ldx, i64 ldy, int lg, int csize) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float scratch[64];
    __shared__ __align__(8) float state[2];
    const unsigned rank = cluster_ctarank();
    const i64 row = blockIdx.x / csize;
    // This CTA's columns: [c0, c0 + n), chunks a whole number of VEC-packs wide.
    const int slots = (cols + VEC - 1) / VEC;
    const int chunk = (slots + csize - 1) / csize;
    const int c0 = (int)rank * chunk * VEC;
    const int n = max(0, min(cols - c0, chunk * VEC));
    RowRegs<T, VEC, K> r;
    r.load(x + row * ldx + c0, n, threadIdx.x, blockDim.x);
    MaxSum st = block_maxsum(r.maxsum(), scratch);
    if (threadIdx.x == 0) { state[0] = st.m; state[1] = st.s; }
    cluster_sync_all();  // every CTA's state is published
    const int lane = threadIdx.x & 31;
    MaxSum mine = lane < csize ? ld_peer_maxsum(state, lane) : MaxSum{KL_NEG_INF, 0.0f};
    st = warp_maxsum(mine);
    cluster_sync_all();  // no CTA leaves (freeing its shared memory) while a peer still reads it
    r.store(y + row * ldy + c0, n, threadIdx.x, blockDim.x, st.m, st.s, lg);
#else
    __trap();  // clusters need sm_90; the launcher refuses older devices before launching
#endif
}

// v6_split — what changed: a row is split across G CTAs that need not form a cluster, so
// a row of any width up to the whole GPU's registers (≈ 264 CTAs × 64 KB: 4 Mi f32) stays on
// chip: one read, one write. Each CTA holds its chunk in registers (as v3 does a whole row),
// reduces it to one (max, sum), publishes that in a global slot with a release store, waits
// (acquire loads) for the other G − 1 slots of its row, merges them and writes its chunk.
// The grid is persistent: groups of G CTAs, each group taking rows g, g + groups, …, all
// resident at once (a cooperative launch checks it), so the wait cannot deadlock.
// Slots are double-buffered by row parity: a CTA can run at most one row ahead of a slower
// peer (it waits for that peer's state of the current row), so it never overwrites a slot
// the peer still has to read. Each slot carries a sequence number (epoch, row counter); the
// epoch lives in the workspace and the last CTA to finish bumps it, so the next launch —
// or the next replay of a captured graph — never mistakes an old state for a new one.
// Rows that do not start on a 16-byte boundary but are equally misaligned in x and y get a
// scalar head and tail (held by CTA 0 of the group), as in v4's peeled kernel.
// Measured on the H200 (docs/perf-notes.md): 2.8–3.1 TB/s for f32 rows up to 2 MB, against
// v4's 2.7; each row's wait for the slowest peer keeps it short of v3's 4.0.
struct __align__(16) SplitSlot { float m, s; unsigned long long seq; };
struct SplitHeader { unsigned epoch, done; };

__device__ __forceinline__ void split_publish(SplitSlot* slot, MaxSum st, unsigned long long seq) {
    asm volatile("st.relaxed.gpu.global.v2.f32 [%0], {%1, %2};" :: "l"(slot), "f"(st.m), "f"(st.s) : "memory");
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(&slot->seq), "l"(seq) : "memory");
}
__device__ __forceinline__ MaxSum split_wait(const SplitSlot* slot, unsigned long long seq) {
    unsigned long long v;
    do {
        asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(&slot->seq) : "memory");
    } while (v != seq);
    MaxSum r;
    asm volatile("ld.relaxed.gpu.global.v2.f32 {%0, %1}, [%2];" : "=f"(r.m), "=f"(r.s) : "l"(slot) : "memory");
    return r;
}

// Where CTA `rank` of the G splitting a row works: the row's scalar head (up to its first
// 16-byte boundary) and tail, and this CTA's part [p0, p0 + n) of the packed body.
struct SplitPart { int head, tail0, p0, n; };
template <class T, int VEC>
__device__ __forceinline__ SplitPart split_part(const T* xr, int cols, int G, int rank) {
    int head = 0;
    if constexpr (VEC > 1) {
        head = (int)(((16u - (unsigned)((unsigned long long)xr & 15u)) & 15u) / sizeof(T));
        head = min(head, cols);
    }
    const int packs = (cols - head) / VEC;
    const int chunk = (packs + G - 1) / G;
    const int p0 = min(packs, rank * chunk);
    return SplitPart{head, head + packs * VEC, p0, (min(packs, p0 + chunk) - p0) * VEC};
}

// The last CTA out bumps the epoch (and resets the count) for the next launch. Every CTA
// read the epoch before counting itself done, so none can see the new one.
__device__ __forceinline__ void split_finish(SplitHeader* hdr) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&hdr->done, 1u) == gridDim.x - 1) {
            hdr->done = 0;
            __threadfence();
            atomicAdd(&hdr->epoch, 1u);
        }
    }
}

template <class T, int VEC, int K>
__device__ void softmax_v6_split(const T* __restrict__ x, T* __restrict__ y, int rows, int cols,
                                 i64 ldx, i64 ldy, int lg, int G, SplitHeader* hdr,
                                 SplitSlot* slots) {
    __shared__ float scratch[2][64];
    __shared__ unsigned epoch_s;
    const int groups = gridDim.x / G;
    const int g = blockIdx.x / G, rank = blockIdx.x % G;
    if (threadIdx.x == 0) {
        unsigned e;
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(e) : "l"(&hdr->epoch) : "memory");
        epoch_s = e;
    }
    __syncthreads();
    const unsigned epoch = epoch_s;
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
        MaxSum st = cur.maxsum();
        if (rank == 0 && threadIdx.x < pc.head + (cols - pc.tail0))
            st = maxsum_add(st, to_f32(xr[threadIdx.x < pc.head ? threadIdx.x : pc.tail0 + (threadIdx.x - pc.head)]));
        // block_maxsum has no leading barrier: with G > 1 the exchange's reduction (on
        // scratch[1]) separates one row's reads of scratch[0] from the next row's writes; with
        // G = 1 there is none, so rows alternate between the two buffers instead.
        st = block_maxsum(st, scratch[G > 1 ? 0 : (iter & 1)]);
        SplitSlot* s = slots + (size_t)(iter & 1) * gridDim.x;
        const unsigned long long seq = ((unsigned long long)epoch << 32) | (iter + 1);
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
            if (rank == 0 && threadIdx.x < pq.head + (cols - pq.tail0)) {
                const int c = threadIdx.x < pq.head ? threadIdx.x : pq.tail0 + (threadIdx.x - pq.head);
                yq[c] = from_f32<T>(softmax_out(to_f32(xq[c]), st.m, 1.0f / st.s, logf(st.s), lg));
            }
        }
        if (next < rows) load_part(cur, next);
    }
    split_finish(hdr);
}

// ---- exported symbols ------------------------------------------------------------------
#define KL_ARGS(T) const T* x, T* y, int rows, int cols, i64 ldx, i64 ldy, int lg
#define KL_PASS x, y, rows, cols, ldx, ldy, lg

#define KL_V1(TN, T) \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v1_block_row_##TN(KL_ARGS(T)) { softmax_v1_block_row<T>(KL_PASS); }

#define KL_V2(TN, T, K)                                                                        \
    extern "C" __global__ void __launch_bounds__(128) softmax_v2_warp_row_vec_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, Pack<T>::N, K, 32>(KL_PASS); }                                      \
    extern "C" __global__ void __launch_bounds__(128) softmax_v2_warp_row_scalar_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, 1, K, 32>(KL_PASS); }
// Several rows per warp: W lanes a row, one slot each.
#define KL_V2W(TN, T, W)                                                                       \
    extern "C" __global__ void __launch_bounds__(128) softmax_v2_warp_row_vec_w##W##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, Pack<T>::N, 1, W>(KL_PASS); }                                       \
    extern "C" __global__ void __launch_bounds__(128) softmax_v2_warp_row_scalar_w##W##_##TN(KL_ARGS(T)) { \
        softmax_v2_warp_row<T, 1, 1, W>(KL_PASS); }

// v3's K = 8 instances run 1024-thread blocks holding 128 KB rows: one block per SM, so they
// may take all 64 registers (launch bounds (1024, 1)); the smaller K run several blocks per
// SM and keep the default bound, which lets ptxas aim for two 1024-thread blocks.
#define KL_V3_BOUNDS_1 __launch_bounds__(1024)
#define KL_V3_BOUNDS_2 __launch_bounds__(1024)
#define KL_V3_BOUNDS_4 __launch_bounds__(1024)
#define KL_V3_BOUNDS_8 __launch_bounds__(1024, 1)
#define KL_V3(TN, T, K)                                                                          \
    extern "C" __global__ void KL_V3_BOUNDS_##K softmax_v3_block_regs_vec_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs<T, Pack<T>::N, K>(KL_PASS); }                                          \
    extern "C" __global__ void KL_V3_BOUNDS_##K softmax_v3_block_regs_scalar_k##K##_##TN(KL_ARGS(T)) { \
        softmax_v3_block_regs<T, 1, K>(KL_PASS); }

#define KL_V4(TN, T)                                                                           \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_vec_##TN(KL_ARGS(T)) { \
        softmax_v4_online<T, Pack<T>::N>(KL_PASS); }                                             \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_scalar_##TN(KL_ARGS(T)) { \
        softmax_v4_online<T, 1>(KL_PASS); }                                                      \
    extern "C" __global__ void __launch_bounds__(1024) softmax_v4_online_peel_##TN(KL_ARGS(T)) { \
        softmax_v4_peel<T>(KL_PASS); }

#define KL_V5(TN, T, K)                                                                              \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v5_cluster_vec_k##K##_##TN(KL_ARGS(T), int csize) { \
        softmax_v5_cluster<T, Pack<T>::N, K>(KL_PASS, csize); }                                          \
    extern "C" __global__ void __launch_bounds__(1024, 1) softmax_v5_cluster_scalar_k##K##_##TN(KL_ARGS(T), int csize) { \
        softmax_v5_cluster<T, 1, K>(KL_PASS, csize); }


// Two CTAs of 512 threads per SM (64 registers) on sm_90; sm_80's code needs a few more
// registers than that for the f32 kernel, so one CTA per SM there rather than spills.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define KL_V6_MIN_BLOCKS 1
#else
#define KL_V6_MIN_BLOCKS 2
#endif
#define KL_V6_ONE(NAME, TN, T, VEC)                                                              \
    extern "C" __global__ void __launch_bounds__(512, KL_V6_MIN_BLOCKS) NAME##_##TN(                                 \
        KL_ARGS(T), int ctas_per_row, SplitHeader* hdr, SplitSlot* slots) {                           \
        softmax_v6_split<T, VEC, 8>(KL_PASS, ctas_per_row, hdr, slots); }
#define KL_V6(TN, T)                                                  \
    KL_V6_ONE(softmax_v6_split_vec, TN, T, Pack<T>::N)                \
    KL_V6_ONE(softmax_v6_split_scalar, TN, T, 1)

#define KL_ALL(TN, T)                                                        \
    KL_V1(TN, T)                                                             \
    KL_V2(TN, T, 1) KL_V2(TN, T, 2) KL_V2(TN, T, 4) KL_V2(TN, T, 8)          \
    KL_V2W(TN, T, 4) KL_V2W(TN, T, 8) KL_V2W(TN, T, 16)                      \
    KL_V3(TN, T, 1) KL_V3(TN, T, 2) KL_V3(TN, T, 4) KL_V3(TN, T, 8)          \
    KL_V4(TN, T)                                                             \
    KL_V5(TN, T, 2) KL_V5(TN, T, 4) KL_V5(TN, T, 8)                          \
    KL_V6(TN, T)

KL_ALL(f32, float)
KL_ALL(bf16, bf16)
KL_ALL(f16, f16)
