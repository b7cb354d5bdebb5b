//! `kernlab autotune`: measure every candidate configuration of an op's tunable variants with
//! the bench harness (each validated against f64 first), and keep the winners in the tuning
//! cache (`runtime::tuning`), which default dispatch reads.

use crate::check::{fresh_seed, make_inputs, make_reference};
use crate::ops::{Candidate, Op, Params};
use crate::runtime::device::{CudaDevice, Device};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use crate::runtime::tuning::{device_key, key, store, Entry};
use crate::tools::bench::{
    self,
    harness::{CudaTimer, TimingOpts},
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The outcome of one candidate.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    pub variant: String,
    pub config: String,
    /// None when it failed validation or could not run (see `note`).
    pub median_ms: Option<f64>,
    pub tflops: Option<f64>,
    pub gbps: Option<f64>,
    pub max_rel_err: Option<f64>,
    pub note: Option<String>,
}

/// What `kernlab autotune` found.
#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    pub device: String,
    pub op: Op,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub bucket: String,
    pub trials: Vec<Trial>,
    /// The copies of the inputs and outputs the timed calls cycled through (`--rotate`).
    pub rotate_copies: usize,
    /// The keys written, with their entries (one per variant's best, one for `auto`).
    pub stored: Vec<(String, Entry)>,
    pub cache: Option<PathBuf>,
}

/// Validate, then time, every candidate on one shape; keep each variant's best configuration
/// and the overall best (as the op's `auto` choice) in the cache at `cache`.
#[allow(clippy::too_many_arguments)]
pub fn tune(
    dev: &std::sync::Arc<CudaDevice>,
    op: Op,
    dtype: DType,
    shape: &[usize],
    params: &Params,
    candidates: Vec<Candidate>,
    timing: &TimingOpts,
    cache: Option<&Path>,
    progress: &mut dyn FnMut(usize, usize, &str),
) -> Result<TuneReport> {
    let device = Device::Cuda(dev.clone());
    let seed = fresh_seed();
    let host = make_inputs(op, shape, dtype, seed, None, params)?;
    let reference = make_reference(op, shape, &host, params, seed)?;
    let y_shape = op.out_shape(shape, params);
    // As `kernlab bench --rotate`: copies of the inputs and outputs, cycled call by call, so
    // that (with `--rotate auto`) no timed call finds its input still in L2.
    let copies = bench::rotated_inputs(timing.rotate, &host, &y_shape, dtype, &device)?;
    let n_buf = copies.len();
    drop(host);
    let x: Vec<&Tensor> = copies[0].iter().collect();
    let bytes = op.min_bytes(shape, dtype, params) as f64;
    let flops = op.flops(shape, params);
    let mut timer = CudaTimer::new(dev)?;
    let mut trials = Vec::new();
    let total = candidates.len();
    for (i, c) in candidates.iter().enumerate() {
        progress(i, total, &format!("{} {}", c.variant, c.config));
        let mut t = Trial {
            variant: c.variant.to_string(),
            config: c.config.clone(),
            median_ms: None,
            tflops: None,
            gbps: None,
            max_rel_err: None,
            note: None,
        };
        let mut y = Tensor::empty(&y_shape, dtype, &device)?;
        y.poison_nan()?;
        match (c.run)(params, &x, &mut y).and_then(|_| dev.sync()) {
            Err(
                e @ (Error::UnsupportedShape { .. }
                | Error::NotContiguous { .. }
                | Error::Unavailable { .. }),
            ) => {
                t.note = Some(format!("skipped: {e}"));
                trials.push(t);
                continue;
            }
            Err(e) => {
                t.note = Some(format!("error: {e}"));
                trials.push(t);
                continue;
            }
            Ok(()) => {}
        }
        let check = reference.check(&y)?;
        t.max_rel_err = Some(check.max_rel_err);
        if !check.passed {
            t.note = Some(format!("FAILED validation: {}", check.describe()));
            trials.push(t);
            continue;
        }
        let mut rot = bench::Rotation::new(&copies, y, &y_shape, dtype, &device)?;
        let mut run = |x: &[&Tensor], y: &mut Tensor| (c.run)(params, x, y);
        if let Err(e) = rot.warm(&mut run) {
            t.note = Some(format!("error on a rotated copy: {e}"));
            trials.push(t);
            continue;
        }
        let stats = timer.time(timing, &mut || rot.call(&mut run))?;
        let ms = stats.median_ms;
        t.median_ms = Some(ms);
        t.tflops = Some(flops / (ms * 1e-3) / 1e12);
        t.gbps = Some(bytes / (ms * 1e-3) / 1e9);
        trials.push(t);
    }
    progress(total, total, "done");
    let dkey = device_key(dev);
    let b = op.bucket(shape);
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let entry = |t: &Trial| Entry {
        variant: t.variant.clone(),
        config: t.config.clone(),
        shape: shape.to_vec(),
        median_ms: t.median_ms.unwrap_or(f64::NAN),
        candidates: total,
        tuned_at: now.clone(),
        kernlab_version: env!("CARGO_PKG_VERSION").to_string(),
    };
    let mut stored = Vec::new();
    let mut best_of: BTreeMap<&str, &Trial> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.median_ms.is_some()) {
        let slot = best_of.entry(t.variant.as_str()).or_insert(t);
        if t.median_ms < slot.median_ms {
            *slot = t;
        }
    }
    for (v, t) in &best_of {
        stored.push((key(&dkey, op.name(), v, dtype, &b), entry(t)));
    }
    if let Some(best) = best_of
        .values()
        .min_by(|a, b| a.median_ms.unwrap().total_cmp(&b.median_ms.unwrap()))
    {
        stored.push((key(&dkey, op.name(), "auto", dtype, &b), entry(best)));
    }
    if stored.is_empty() {
        return Err(Error::Invalid(format!(
            "autotune {op} {dtype} {:?}: no candidate passed validation",
            shape
        )));
    }
    if let Some(path) = cache {
        for (k, e) in &stored {
            store(path, k, e)?;
        }
    }
    Ok(TuneReport {
        device: dkey,
        op,
        dtype,
        shape: shape.to_vec(),
        bucket: b,
        trials,
        rotate_copies: n_buf,
        stored,
        cache: cache.map(Path::to_path_buf),
    })
}
