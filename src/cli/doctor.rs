//! `kernlab doctor`: the device, the CUDA libraries that load, the caches and the ceilings.

use crate::runtime::device::{self, nvrtc, Device, DeviceSpec};
use crate::tools::bench;
use anyhow::Result;
use clap::Args;
use std::io::Write;

#[derive(Args)]
pub(super) struct DoctorArgs {
    /// auto (a CUDA GPU if there is one, else the CPU), cpu, cuda or cuda:N; with cuda, a
    /// missing GPU or CUDA library is an error (exit 1)
    #[arg(long, default_value = "auto")]
    device: String,
    /// Measure the ceilings again instead of reading them from the cache
    #[arg(long)]
    fresh_ceilings: bool,
    /// Build every configuration of the CUTLASS tier's GEMM for this architecture (e.g.
    /// sm_90a) into the cache now, rather than each at its first use (needs nvcc and CUTLASS's
    /// headers; about a minute of a core a configuration)
    #[arg(long, value_name = "ARCH")]
    build_cutlass: Option<String>,
    /// With --build-cutlass: only the libraries whose names contain one of these
    /// (comma-separated), e.g. bf16_e0,bf16_e2 or pingpong (names as
    /// kl_cutlass_bf16_e2_coop_128x256_2x1: dtype, epilogue 0-3, kernel)
    #[arg(
        long,
        value_name = "NAMES",
        value_delimiter = ',',
        requires = "build_cutlass"
    )]
    cutlass_only: Vec<String>,
}

fn nvidia_kernel_driver() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    let line = text.lines().next()?;
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."
    line.split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

pub(super) fn run(a: DoctorArgs, out: &mut dyn Write) -> Result<()> {
    let fresh_ceilings = a.fresh_ceilings;
    let spec: DeviceSpec = a.device.parse().map_err(anyhow::Error::msg)?;
    writeln!(out, "kernlab {}", env!("CARGO_PKG_VERSION"))?;
    let driver = match device::cuda_probe() {
        Ok(n) => format!("loaded, {n} device(s)"),
        Err(why) => why,
    };
    writeln!(out, "CUDA driver library: {driver}")?;
    if let Some(v) = nvidia_kernel_driver() {
        writeln!(out, "NVIDIA kernel driver: {v}")?;
    }
    let nv = match nvrtc::nvrtc_version() {
        Ok((a, b)) => format!("loads, version {a}.{b}"),
        Err(e) => e.to_string(),
    };
    writeln!(out, "NVRTC: {nv}")?;
    for (name, present) in [
        ("cuBLAS", unsafe { cudarc::cublas::sys::is_culib_present() }),
        ("cuBLASLt", unsafe {
            cudarc::cublaslt::sys::is_culib_present()
        }),
        ("CUPTI", unsafe { cudarc::cupti::sys::is_culib_present() }),
        (
            "NVTX (libnvToolsExt or libnvtx3interop)",
            crate::runtime::nvtx::available(),
        ),
    ] {
        writeln!(
            out,
            "{name}: {}",
            if present { "loads" } else { "not found" }
        )?;
    }
    let cutlass = match crate::runtime::device::cutlass::Toolchain::find() {
        Ok(t) => format!(
            "{} ({}), CUTLASS headers {}: the cutlass tier builds at first use",
            t.nvcc.display(),
            t.nvcc_version().unwrap_or_default(),
            t.includes[0].display()
        ),
        Err(e) => format!("{e}: the cutlass variants refuse unless already built in the cache"),
    };
    writeln!(out, "CUTLASS: {cutlass}")?;
    if let Some(arch) = &a.build_cutlass {
        crate::tools::inspect::check_arch(arch)?;
        let built = crate::runtime::device::cutlass::build_all(arch, &a.cutlass_only)?;
        writeln!(
            out,
            "CUTLASS: {built} configuration(s) built for {arch} into the cache"
        )?;
    }
    let py = crate::runtime::device::triton::python();
    let tr = match crate::runtime::device::triton::triton_version() {
        Ok(v) => format!("{v} (for {py}): the triton tier compiles its kernels"),
        Err(e) => format!("{e}: the triton variants refuse"),
    };
    writeln!(out, "Triton: {tr}")?;
    let nccl = match crate::runtime::comm::nccl::describe() {
        Ok(v) => format!("{v}: collectives over this machine's GPUs"),
        Err(e) => format!("{e}"),
    };
    writeln!(out, "NCCL: {nccl}")?;
    match nvrtc::cache_dir() {
        Some(d) => {
            let (files, bytes) = std::fs::read_dir(&d)
                .map(|it| {
                    it.filter_map(|e| e.ok()?.metadata().ok())
                        .fold((0usize, 0u64), |(n, b), m| (n + 1, b + m.len()))
                })
                .unwrap_or((0, 0));
            writeln!(
                out,
                "kernel cache: {} ({files} entries, {:.1} MB)",
                d.display(),
                bytes as f64 / 1e6
            )?;
        }
        None => writeln!(out, "kernel cache: off")?,
    }
    match crate::runtime::tuning::cache_path() {
        Some(p) => writeln!(
            out,
            "autotune cache: {} ({})",
            p.display(),
            crate::runtime::tuning::describe_file(&p)
        )?,
        None => writeln!(out, "autotune cache: off")?,
    }
    let (dev, line) = Device::open(spec)?;
    writeln!(out, "{line}")?;
    if let Some(d) = dev.cuda() {
        let p = &d.props;
        writeln!(
            out,
            "  {} · compute capability {}.{} ({}) · {} SMs · {} threads/SM\n  \
             memory {:.1} GiB, {}-bit bus, clock {} MHz · L2 {} MiB · SM clock {} MHz (max) · \
             CUDA {} (driver API)",
            p.name,
            p.compute_capability.0,
            p.compute_capability.1,
            d.arch,
            p.sm_count,
            p.max_threads_per_sm,
            p.total_mem as f64 / (1u64 << 30) as f64,
            p.mem_bus_bits,
            p.mem_clock_khz / 1000,
            p.l2_bytes >> 20,
            p.sm_clock_khz / 1000,
            p.driver_version
        )?;
    } else {
        writeln!(
            out,
            "  {}: {} · {} threads · last-level cache {} MiB",
            if spec == DeviceSpec::Cpu {
                "the CPU"
            } else {
                "no CUDA GPU here, so the CPU"
            },
            device::cpu_model_name(),
            rayon::current_num_threads(),
            bench::harness::cpu_llc_bytes() >> 20
        )?;
    }
    let cache = bench::ceiling::cache_path();
    let cached = !fresh_ceilings
        && cache
            .as_deref()
            .and_then(|p| bench::ceiling::load(p, &bench::ceiling::device_key(&dev)))
            .is_some();
    if !cached {
        stderr_line!("measuring the ceilings (copy, matmul)…");
    }
    let (c, prov) = bench::device_ceilings(&dev, cache.as_deref(), fresh_ceilings)?;
    writeln!(
        out,
        "ceilings ({} {}; {}):",
        match prov {
            bench::ceiling::Provenance::Cached => "cached, measured",
            bench::ceiling::Provenance::Measured => "measured now,",
        },
        c.measured_at,
        match &cache {
            Some(p) => format!("kept in {}; --fresh-ceilings measures again", p.display()),
            None => "not kept: the cache is off".into(),
        }
    )?;
    writeln!(
        out,
        "  copy {:.0} GB/s (read + written; {}, median of {} calls)",
        c.copy.gbps, c.copy.how, c.copy.stats.calls
    )?;
    for m in &c.matmul {
        writeln!(
            out,
            "  matmul {} ({}, {}³, median {:.3} ms of {} calls)",
            bench::ceiling::fmt_flops(m.tflops),
            m.name,
            m.n,
            m.stats.median_ms,
            m.stats.calls
        )?;
    }
    for n in &c.notes {
        writeln!(out, "  {n}")?;
    }
    Ok(())
}
