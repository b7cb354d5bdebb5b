//! Default dispatch for the GEMM ops: each tunable version runs the configuration
//! `kernlab autotune` cached for this device, op, dtype and shape bucket, else its heuristic
//! default; `auto` runs the cached overall winner, else a heuristic choice of version.

use super::{cuda, cutlass, gemm_args, sm90, triton, Gemm, GemmParams, LINEAR};
use crate::ops::{Candidate, Op, Params};
use crate::runtime::device::CudaDevice;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use crate::runtime::tuning::{self, Entry};

/// The versions with a configuration space, in the lecture's order.
pub const TUNABLE: [&str; 7] = [
    "v3_regs",
    "v4_grouped",
    "v5_mma",
    "v6_wgmma",
    "v7_wgmma_tma_store",
    triton::VARIANT,
    cutlass::VARIANT,
];

fn dev_of(g: &Gemm) -> Option<std::sync::Arc<CudaDevice>> {
    g.a.device().cuda().cloned()
}

/// The cached entry for `variant` at this GEMM's bucket: the op's own tuning first, then the
/// other GEMM op's (matmul and linear share kernels; only the epilogue differs, and both key
/// their entries by the same M×N×K bucket).
pub fn cached(g: &Gemm, variant: &str) -> Option<Entry> {
    let dev = dev_of(g)?;
    let bucket = super::OP.bucket(&[g.m, g.n, g.k]);
    let own = g.op_name();
    let other = if own == LINEAR {
        super::OP.name()
    } else {
        LINEAR
    };
    tuning::lookup(&dev, own, variant, g.dtype(), &bucket)
        .or_else(|| tuning::lookup(&dev, other, variant, g.dtype(), &bucket))
}

/// Every configuration of a tunable version for a dtype, by name.
pub fn config_names(variant: &str, dt: DType) -> Vec<String> {
    match variant {
        "v6_wgmma" => sm90::configs(dt)
            .iter()
            .map(|c| c.name.to_string())
            .collect(),
        "v7_wgmma_tma_store" => sm90::configs_v7(dt)
            .iter()
            .map(|c| c.name.to_string())
            .collect(),
        triton::VARIANT => triton::config_names(dt),
        cutlass::VARIANT if dt != DType::F32 => cutlass::config_names(),
        cutlass::VARIANT => Vec::new(),
        v => cuda::configs(v, dt)
            .iter()
            .map(|c| c.name.to_string())
            .collect(),
    }
}

/// Run a tunable version in the named configuration.
pub fn run_config(variant: &str, config: &str, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let unknown = || {
        Error::Invalid(format!(
            "{variant} has no configuration '{config}' for {} (known: {})",
            g.dtype(),
            config_names(variant, g.dtype()).join(", ")
        ))
    };
    match variant {
        "v6_wgmma" => {
            let cfg = sm90::configs(g.dtype())
                .into_iter()
                .find(|c| c.name == config)
                .ok_or_else(unknown)?;
            sm90::run_with(&cfg, g, c)
        }
        "v7_wgmma_tma_store" => {
            let cfg = sm90::config_v7(g.dtype(), config).ok_or_else(unknown)?;
            sm90::run_with_v7(&cfg, g, c)
        }
        triton::VARIANT => triton::run_config(config, g, c),
        cutlass::VARIANT => cutlass::run_config(config, g, c),
        v => {
            let cfg = cuda::configs(v, g.dtype())
                .into_iter()
                .find(|c| c.name == config)
                .ok_or_else(unknown)?;
            cuda::run_with(v, &cfg, g, c)
        }
    }
}

/// A tunable version's default run: its cached configuration, else its own heuristic.
fn run_tuned(
    variant: &str,
    g: &Gemm,
    c: &mut Tensor,
    fallback: fn(&Gemm, &mut Tensor) -> Result<()>,
) -> Result<()> {
    match cached(g, variant) {
        Some(e) if config_names(variant, g.dtype()).contains(&e.config) => {
            run_config(variant, &e.config, g, c)
        }
        _ => fallback(g, c),
    }
}

pub fn run_v3(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned("v3_regs", g, c, cuda::run_v3)
}
pub fn run_v4(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned("v4_grouped", g, c, cuda::run_v4)
}
pub fn run_v5(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned("v5_mma", g, c, cuda::run_v5)
}
pub fn run_v6(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned("v6_wgmma", g, c, sm90::run_v6)
}
pub fn run_v7(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned("v7_wgmma_tma_store", g, c, sm90::run_v7)
}
pub fn run_triton(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned(triton::VARIANT, g, c, triton::run_default)
}
pub fn run_cutlass(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_tuned(cutlass::VARIANT, g, c, cutlass::run)
}

/// Whether the Hopper version can take this GEMM: sm_90, a 16-bit dtype, and rows whose byte
/// length TMA accepts (a multiple of 16 bytes).
pub fn v6_fits(g: &Gemm) -> bool {
    let hopper = dev_of(g).is_some_and(|d| d.props.compute_capability.0 == 9);
    hopper && g.dtype() != DType::F32 && (g.k * g.dtype().size()).is_multiple_of(16)
}

/// `auto`'s heuristic when nothing is cached: the skinny version for a few rows (a tiled
/// kernel would leave most SMs idle), Hopper's wgmma with the TMA-store epilogue where it fits
/// (v7, which itself falls back to v6's register stores for an output TMA cannot write), else
/// the mma.sync version for 16-bit inputs, else (f32) the grouped register-blocked version.
pub fn heuristic(g: &Gemm) -> &'static str {
    if g.m <= cuda::SKINNY_ROWS {
        "v8_skinny"
    } else if v6_fits(g) {
        "v7_wgmma_tma_store"
    } else if g.dtype() != DType::F32 {
        "v5_mma"
    } else {
        "v4_grouped"
    }
}

/// What `auto` runs for this GEMM: `(version, configuration or "", from the cache?)`.
pub fn choice(g: &Gemm) -> (String, String, bool) {
    if let Some(e) = cached(g, "auto") {
        let fits = !e.variant.starts_with("v6") && !e.variant.starts_with("v7") || v6_fits(g);
        if fits && config_names(&e.variant, g.dtype()).contains(&e.config) {
            return (e.variant, e.config, true);
        }
    }
    let v = heuristic(g);
    let cfg = cached(g, v).map(|e| e.config).unwrap_or_default();
    (v.to_string(), cfg, false)
}

/// What bench shows as `auto`'s pick.
pub fn label(g: &Gemm) -> String {
    let (v, cfg, tuned) = choice(g);
    let mut s = v;
    if !cfg.is_empty() {
        s += &format!(" {cfg}");
    }
    if tuned {
        s += " (autotuned)";
    }
    s
}

/// `label` from the raw inputs `[a, w(, bias)]` (no output needed), for bench's `picked`.
pub fn label_inputs(p: &Params, x: &[&Tensor]) -> String {
    let (Some(a), Some(w)) = (x.first(), x.get(1)) else {
        return "(no operands)".into();
    };
    let act = p.get::<GemmParams>().map(|g| g.act).unwrap_or_default();
    match super::dims("matmul", a, w) {
        Ok((m, n, k)) => label(&Gemm {
            a,
            w,
            bias: x.get(2).copied(),
            act,
            m,
            n,
            k,
        }),
        Err(e) => format!("(none: {e})"),
    }
}

pub fn run_auto(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let (v, cfg, _) = choice(g);
    if !cfg.is_empty() {
        return run_config(&v, &cfg, g, c);
    }
    match v.as_str() {
        "v7_wgmma_tma_store" => sm90::run_v7(g, c),
        "v6_wgmma" => sm90::run_v6(g, c),
        "v5_mma" => cuda::run_v5(g, c),
        "v8_skinny" => cuda::run_v8(g, c),
        _ => cuda::run_v4(g, c),
    }
}

/// Every (version, configuration) `kernlab autotune` measures for this dtype on this device,
/// as candidates the tuner can run (`only`: restrict to these versions).
pub fn candidates(
    op: Op,
    dt: DType,
    dev: &CudaDevice,
    only: Option<&[String]>,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for v in TUNABLE {
        if only.is_some_and(|o| !o.iter().any(|n| n == v)) {
            continue;
        }
        let variant = crate::ops::find(op, v, crate::runtime::device::DeviceKind::Cuda)?;
        if !variant.dtypes.contains(&dt)
            || variant.min_arch / 10 > dev.props.compute_capability.0 as u32
        {
            continue;
        }
        // Triton's configurations where Triton is at hand (else the tier refuses each one).
        if v == triton::VARIANT && crate::runtime::device::triton::triton_version().is_err() {
            continue;
        }
        // CUTLASS's where their library can be built or is cached (else each refuses).
        let names = if v == cutlass::VARIANT {
            cutlass::obtainable_names(dt, &dev.arch)
        } else {
            config_names(v, dt)
        };
        for name in names {
            let cfg = name.clone();
            out.push(Candidate {
                variant: v,
                config: name,
                run: Box::new(move |p, x, y| {
                    let g = gemm_args(variant, p, x, y)?;
                    run_config(v, &cfg, &g, y)
                }),
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!(
            "no tunable {op} version takes {dt} on this device (tunable: {})",
            TUNABLE.join(", ")
        )));
    }
    Ok(out)
}
