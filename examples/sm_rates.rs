//! Each SM's share of the memory system with every SM streaming at once: does the H200 give
//! some SMs more than others? v9's row traces (twenty-fourth session) found the same 24 SMs
//! finishing their parts of a row ~4 µs before the rest in launch after launch, and SMs 2k
//! and 2k + 1 late together. This measures it without v9: a cooperative grid of two 512-thread
//! CTAs an SM (v9's shape), each CTA streaming its own `MIB` MiB (16-byte loads, eight in
//! flight a thread) once, reading only or copying, timed on the GPU's clock from its first
//! load to its last; each SM's rate is its two CTAs' bytes over their mean time.
//!
//! `cargo run --release --example sm_rates -- [MIB] [REPS]` (on the GPU machine:
//! `.gpu/bin/sm_rates`); defaults 4 MiB a CTA, 3 repetitions. Prints, for each mode, every
//! SM's rate (GB/s), the fastest and slowest SMs, the SMs ≥ 10% over the median, and how well
//! repetitions agree. A measurement tool: nothing here is a kernlab variant.
use anyhow::{bail, ensure, Context, Result};
use kernlab::kernels::KernelSource;
use kernlab::{Device, DeviceSpec};

static PROBE: KernelSource = KernelSource {
    file: "sm_rates.cu",
    src: r#"
// CTA b streams packs [b·n, (b + 1)·n) of x (and with `copy` writes them to y); out[3b ..]:
// its SM, its first and its last %globaltimer (ns).
extern "C" __global__ void __launch_bounds__(512, 2)
sm_rates(const uint4* __restrict__ x, uint4* __restrict__ y, long long n, int copy,
         unsigned long long* out) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    unsigned long long t0, t1;
    __syncthreads();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0) :: "memory");
    const uint4* xb = x + (long long)blockIdx.x * n;
    uint4* yb = y + (long long)blockIdx.x * n;
    unsigned acc = 0;
    const long long step = (long long)blockDim.x * 8;
    for (long long i = threadIdx.x; i < n; i += step) {
        uint4 v[8];
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const long long j = i + (long long)k * blockDim.x;
            v[k] = j < n ? xb[j] : make_uint4(0u, 0u, 0u, 0u);
        }
        #pragma unroll
        for (int k = 0; k < 8; ++k) {
            const long long j = i + (long long)k * blockDim.x;
            if (copy) {
                if (j < n) yb[j] = v[k];
            } else {
                acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
            }
        }
    }
    __syncthreads();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1) :: "memory");
    // Keeps the read-only loads (never true for the zero-filled input).
    if (!copy && acc == 0x9e3779b9u) yb[threadIdx.x] = make_uint4(acc, 0u, 0u, 0u);
    if (threadIdx.x == 0) {
        out[3 * blockIdx.x] = sm;
        out[3 * blockIdx.x + 1] = t0;
        out[3 * blockIdx.x + 2] = t1;
    }
}
"#,
};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let mib: usize = a.first().map_or(Ok(4), |s| s.parse()).context("MIB")?;
    let reps: usize = a.get(1).map_or(Ok(3), |s| s.parse()).context("REPS")?;
    ensure!((1..=64).contains(&mib), "MIB must be 1 to 64");
    ensure!((1..=20).contains(&reps), "REPS must be 1 to 20");
    let (dev, line) = Device::open(DeviceSpec::Auto)?;
    eprintln!("{line}");
    let Some(cuda) = dev.cuda().cloned() else {
        bail!("sm_rates measures the GPU's SMs and needs a GPU");
    };
    let sms = cuda.props.sm_count as usize;
    let grid = 2 * sms;
    let per = mib << 20;
    let mut x = cuda.alloc_bytes(grid * per, "sm_rates input")?;
    cuda.memset_pattern(&mut x, 4, 0, grid * per / 4)?;
    let mut y = cuda.alloc_bytes(grid * per, "sm_rates output")?;
    let mut out = cuda.alloc_bytes(grid * 3 * 8, "sm_rates stamps")?;
    let n = (per / 16) as i64;
    let cfg = cudarc::driver::LaunchConfig {
        grid_dim: (grid as u32, 1, 1),
        block_dim: (512, 1, 1),
        shared_mem_bytes: 0,
    };
    for (mode, copy) in [("read", 0i32), ("copy", 1i32)] {
        let mut runs: Vec<Vec<f64>> = Vec::new();
        for _ in 0..=reps {
            kernlab::launch_cooperative!(
                cuda,
                &PROBE,
                "sm_rates",
                cfg,
                [&x, &mut y, &n, &copy, &mut out]
            );
            cuda.sync()?;
            let raw = cuda.dtoh(&out, grid * 3 * 8)?;
            let w: Vec<u64> = raw
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            // Per SM: bytes moved over the mean of its CTAs' times (a copy moves twice).
            let mut time = vec![(0.0f64, 0usize); sms];
            for b in 0..grid {
                let (sm, t0, t1) = (w[3 * b] as usize, w[3 * b + 1], w[3 * b + 2]);
                ensure!(sm < sms && t1 > t0, "CTA {b}: SM {sm}, stamps {t0}..{t1}");
                time[sm].0 += (t1 - t0) as f64;
                time[sm].1 += 1;
            }
            let moved = per as f64 * if copy == 1 { 2.0 } else { 1.0 };
            let rate: Vec<f64> = time
                .iter()
                .map(|&(t, c)| {
                    if c == 0 {
                        f64::NAN
                    } else {
                        c as f64 * moved / (t / c as f64)
                    }
                })
                .collect();
            runs.push(rate);
        }
        runs.remove(0); // the first launch warms the module and the TLB
        let mean: Vec<f64> = (0..sms)
            .map(|s| runs.iter().map(|r| r[s]).sum::<f64>() / runs.len() as f64)
            .collect();
        let mut sorted: Vec<(usize, f64)> = mean.iter().copied().enumerate().collect();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
        let med = sorted[sorted.len() / 2].1;
        let total: f64 = mean.iter().filter(|r| r.is_finite()).sum();
        println!(
            "{mode}: {sms} SMs, {mib} MiB a CTA; per SM GB/s: median {med:.1}, max {:.1} (SM {}), \
             min {:.1} (SM {}); sum {total:.0}",
            sorted[0].1,
            sorted[0].0,
            sorted[sorted.len() - 1].1,
            sorted[sorted.len() - 1].0
        );
        let fast: Vec<String> = sorted
            .iter()
            .filter(|s| s.1 >= 1.1 * med)
            .map(|s| s.0.to_string())
            .collect();
        println!(
            "  {} SMs ≥ 10% over the median: {}",
            fast.len(),
            fast.join(" ")
        );
        if runs.len() > 1 {
            println!(
                "  repetitions agree: correlation of SMs' rates, run 1 with run 2: {:.2}",
                kernlab::ops::softmax_trace::pearson(
                    &runs[0]
                        .iter()
                        .copied()
                        .zip(runs[1].iter().copied())
                        .collect::<Vec<_>>()
                )
            );
        }
        let all: Vec<String> = mean
            .iter()
            .enumerate()
            .map(|(s, r)| format!("{s}:{r:.1}"))
            .collect();
        println!("  every SM (SM:GB/s): {}", all.join(" "));
    }
    Ok(())
}
