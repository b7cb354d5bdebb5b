//! `kernlab bench`: validate every selected variant against the f64 reference on fresh random
//! inputs, then time it, and put the figures against ceilings measured in the same run.

pub mod ceiling;
pub mod harness;
pub mod report;

use crate::device::{Device, DeviceKind};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Op, Params, Tier};
use crate::registry::{self, Variant};
use crate::tensor::{Init, Tensor};
use crate::validate::{self, Check};
use ceiling::CopyCeiling;
use harness::{CpuTimer, CudaTimer, Stats, TimingOpts};
pub use report::{BenchReport, Record, Status};

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub ops: Vec<Op>,
    /// None: the default shape for the op and device.
    pub shape: Option<Vec<usize>>,
    pub dtypes: Vec<DType>,
    /// None: every variant of the op on the device (the reference excluded).
    pub variants: Option<Vec<String>>,
    pub params: Params,
    /// None: a fresh seed from the OS, recorded in the report.
    pub seed: Option<u64>,
    pub timing: TimingOpts,
    /// Rows stride (elements) for strided-input runs (softmax).
    pub row_stride: Option<usize>,
}

/// Default shapes: the lecture's sizes on a GPU; on the CPU, sizes that keep a whole
/// `kernlab bench` under a minute on two cores.
pub fn default_shape(op: Op, device: DeviceKind) -> Vec<usize> {
    match (op, device) {
        (Op::Gelu, DeviceKind::Cuda) => vec![16384, 16384],
        (Op::Softmax, DeviceKind::Cuda) => vec![8192, 4096],
        (Op::Gelu, DeviceKind::Cpu) => vec![2048, 2048],
        (Op::Softmax, DeviceKind::Cpu) => vec![2048, 1024],
    }
}

/// The inputs each op is validated and timed on: never zeros; softmax rows carry outliers.
pub fn default_init(op: Op) -> Init {
    match op {
        Op::Gelu => Init::Normal {
            mean: 0.0,
            std: 2.0,
        },
        Op::Softmax => Init::NormalWithOutliers {
            std: 1.0,
            every: 1000,
            scale: 20.0,
        },
    }
}

/// Minimum bytes a variant must move: the input read once, the output written once.
pub fn min_bytes(op: Op, shape: &[usize], dtype: DType) -> usize {
    let n: usize = shape.iter().product();
    match op {
        Op::Gelu | Op::Softmax => 2 * n * dtype.size(),
    }
}

pub fn flops(op: Op, shape: &[usize]) -> f64 {
    shape.iter().product::<usize>() as f64 * op.flops_per_element()
}

fn select_variants(
    op: Op,
    device: DeviceKind,
    names: &Option<Vec<String>>,
) -> Result<Vec<&'static Variant>> {
    match names {
        None => Ok(registry::variants_for(op, device)
            .filter(|v| v.tier != Tier::Reference)
            .collect()),
        Some(names) => names
            .iter()
            .map(|n| registry::find(op, n, device))
            .collect(),
    }
}

enum Timer<'a> {
    Cpu(CpuTimer),
    Cuda(CudaTimer<'a>),
}

impl Timer<'_> {
    fn time(&mut self, opts: &TimingOpts, f: &mut dyn FnMut() -> Result<()>) -> Result<Stats> {
        match self {
            Timer::Cpu(t) => t.time(opts, f),
            Timer::Cuda(t) => t.time(opts, f),
        }
    }
}

/// Run a variant once into a NaN-poisoned output and compare it with the reference.
pub fn validate_variant(
    v: &Variant,
    p: &Params,
    x: &Tensor,
    reference: &[f64],
) -> Result<(Check, Tensor)> {
    let mut y = Tensor::empty(x.shape(), x.dtype(), &x.device())?;
    y.poison_nan()?;
    v.run(p, x, &mut y)?;
    if let Some(d) = x.device().cuda() {
        d.sync()?;
    }
    let out = y.to_f64_vec()?;
    let (_, cols, _) = x.rows_cols();
    Ok((validate::compare(&out, reference, cols, x.dtype()), y))
}

/// A fresh seed from the OS (time and address entropy through a hasher).
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// Progress lines go to stderr through this callback (the CLI prints them).
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// Validate then time every selected variant, for every op and dtype in `cfg`.
pub fn run(cfg: &BenchConfig, device: &Device, progress: Progress) -> Result<BenchReport> {
    let kind = device.kind();
    let mut timer = match device {
        Device::Cpu => Timer::Cpu(CpuTimer::new()),
        Device::Cuda(d) => Timer::Cuda(CudaTimer::new(d)?),
    };
    progress("measuring the copy ceiling");
    let copy: CopyCeiling = match (&mut timer, device) {
        (Timer::Cpu(t), _) => ceiling::cpu_copy(t, &cfg.timing)?,
        (Timer::Cuda(t), Device::Cuda(d)) => ceiling::cuda_copy(d, t, &cfg.timing)?,
        _ => unreachable!("the timer matches the device"),
    };
    let seed = cfg.seed.unwrap_or_else(fresh_seed);
    let mut report = BenchReport::new(device, copy, seed, &cfg.timing);
    for (oi, &op) in cfg.ops.iter().enumerate() {
        let variants = select_variants(op, kind, &cfg.variants)?;
        let shape = cfg.shape.clone().unwrap_or_else(|| default_shape(op, kind));
        for &dtype in &cfg.dtypes {
            let seed = seed.wrapping_add((oi as u64) << 32 | dtype as u64);
            progress(&format!(
                "{op} {dtype} {shape:?}: making inputs and the f64 reference"
            ));
            let x_host = Tensor::random(
                &shape,
                dtype,
                default_init(op),
                seed,
                cfg.row_stride,
                &Device::Cpu,
            )?;
            // The reference's f64 values (not rounded to the dtype) are the oracle.
            let x64 = x_host.to_f64_vec()?;
            let (_, cols, _) = x_host.rows_cols();
            let reference = match op {
                Op::Gelu => crate::ops::gelu::reference(&x64, &cfg.params),
                Op::Softmax => crate::ops::softmax::reference(&x64, cols),
            };
            drop(x64);
            let x = x_host.to_device(device)?;
            drop(x_host);
            for v in &variants {
                let mut rec = Record::new(op, v, device, dtype, &shape, &cfg.params, seed);
                rec.bytes = min_bytes(op, &shape, dtype);
                rec.flops = flops(op, &shape);
                if !v.dtypes.contains(&dtype) {
                    rec.status = Status::Unsupported;
                    rec.note = Some(format!("dtype {dtype} not supported"));
                    report.records.push(rec);
                    continue;
                }
                progress(&format!("{} {dtype}: validating", v.id()));
                let (check, mut y) = match validate_variant(v, &cfg.params, &x, &reference) {
                    Ok(r) => r,
                    Err(e @ (Error::UnsupportedShape { .. } | Error::NotContiguous { .. })) => {
                        rec.status = Status::Unsupported;
                        rec.note = Some(e.to_string());
                        report.records.push(rec);
                        continue;
                    }
                    Err(e) => {
                        rec.status = Status::Error;
                        rec.note = Some(e.to_string());
                        report.records.push(rec);
                        continue;
                    }
                };
                rec.max_rel_err = Some(check.max_rel_err);
                rec.rel_l2 = Some(check.rel_l2);
                rec.validated = check.passed;
                if !check.passed {
                    rec.status = Status::Failed;
                    rec.note = Some(check.describe());
                    report.records.push(rec);
                    continue;
                }
                progress(&format!("{} {dtype}: timing", v.id()));
                let p = cfg.params;
                match timer.time(&cfg.timing, &mut || v.run(&p, &x, &mut y)) {
                    Ok(stats) => rec.set_stats(stats, report.copy.gbps),
                    Err(e) => {
                        rec.status = Status::Error;
                        rec.note = Some(format!("timing failed: {e}"));
                    }
                }
                report.records.push(rec);
            }
        }
    }
    report.fill_speedups();
    Ok(report)
}
