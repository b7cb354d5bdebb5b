// census_probe.cu: tiny kernels that each exercise one census category, for kernlab's
// inspect tests (not part of kernlab's kernels). Compiled for sm_90a.

// Local memory: a per-thread array indexed by a run-time value lives in local memory
// (ld.local / st.local in PTX, LDL / STL in SASS).
extern "C" __global__ void probe_local(const float* __restrict__ x, float* y, int k) {
    float a[64];
    for (int i = 0; i < 64; ++i) a[i] = x[threadIdx.x + i];
    a[k & 63] += 1.0f;
    y[threadIdx.x] = a[(k + threadIdx.x) & 63];
}

// Tensor cores, Ampere style: one mma.sync m16n8k16 (HMMA in SASS), fragments from ldmatrix.
extern "C" __global__ void probe_mma(const unsigned* a, float* d) {
    __shared__ __align__(16) unsigned short tile[16 * 16];
    for (int i = threadIdx.x; i < 16 * 16 / 2; i += 32) ((unsigned*)tile)[i] = a[i];
    __syncthreads();
    unsigned a0, a1, a2, a3;
    unsigned addr = (unsigned)__cvta_generic_to_shared(&tile[(threadIdx.x % 16) * 16 + (threadIdx.x / 16) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(addr));
    float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(c0), "+f"(c1), "+f"(c2), "+f"(c3)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(a0), "r"(a1));
    d[threadIdx.x * 4 + 0] = c0;
    d[threadIdx.x * 4 + 1] = c1;
    d[threadIdx.x * 4 + 2] = c2;
    d[threadIdx.x * 4 + 3] = c3;
}

// Tensor cores, Hopper style: one wgmma m64n8k16 from shared-memory descriptors (HGMMA).
extern "C" __global__ void probe_wgmma(unsigned long long desc_a, unsigned long long desc_b, float* d) {
    float c[4] = {0, 0, 0, 0};
    asm volatile("wgmma.fence.sync.aligned;");
    asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, 0, 1, 1, 0, 0;"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "l"(desc_a), "l"(desc_b));
    asm volatile("wgmma.commit_group.sync.aligned;");
    asm volatile("wgmma.wait_group.sync.aligned 0;");
    for (int i = 0; i < 4; ++i) d[threadIdx.x * 4 + i] = c[i];
}

// Atomics and an async copy into shared memory (cp.async, LDGSTS).
extern "C" __global__ void probe_atomic_cp_async(const float4* x, float* sum, float* y) {
    __shared__ __align__(16) float4 buf[128];
    unsigned dst = (unsigned)__cvta_generic_to_shared(&buf[threadIdx.x]);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(x + threadIdx.x));
    asm volatile("cp.async.wait_all;");
    __syncthreads();
    float4 v = buf[(threadIdx.x + 1) % 128];
    atomicAdd(sum, v.x + v.y + v.z + v.w);
    y[threadIdx.x] = tanhf(v.x);
}
