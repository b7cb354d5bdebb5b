//! Autotuning: measure every candidate configuration of a tunable variant with the bench
//! harness (each validated against f64 first), and keep the winner in a persistent cache,
//! keyed by device, op, variant, dtype and shape bucket. Default dispatch reads the cache and
//! falls back to a heuristic where it has no entry.
//!
//! The cache is `autotune.json` in kernlab's cache folder (`~/.cache/kernlab`, or
//! `$KERNLAB_CACHE_DIR`; `KERNLAB_CACHE_DIR=off` turns it off). It is written atomically (a
//! temporary file renamed over the old one); a corrupt or stale file (another format version)
//! is ignored with one warning, and rewritten by the next `kernlab autotune`.

use crate::bench::harness::{CudaTimer, TimingOpts};
use crate::bench::{self, Reference};
use crate::device::{nvrtc, CudaDevice, Device};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::{Op, Params};
use crate::tensor::Tensor;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One tuned choice.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// The variant that won (for `auto` entries: which numbered version to run).
    pub variant: String,
    /// Its configuration's name (tile sizes, stages, GROUP_M…); empty for untunable ones.
    pub config: String,
    /// The shape it was tuned on, and its median time there.
    pub shape: Vec<usize>,
    pub median_ms: f64,
    /// How many candidates were measured.
    pub candidates: usize,
    pub tuned_at: String,
    pub kernlab_version: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    entries: BTreeMap<String, Entry>,
}

const CACHE_VERSION: u32 = 1;

/// `autotune.json` in kernlab's cache folder ([`nvrtc::cache_root`]); None when the cache is
/// off.
pub fn cache_path() -> Option<PathBuf> {
    Some(nvrtc::cache_root()?.join("autotune.json"))
}

/// The device part of a key: model, arch, SM count and driver (a new driver tunes again).
pub fn device_key(d: &CudaDevice) -> String {
    device_key_of(
        &d.props.name,
        &d.arch,
        d.props.sm_count,
        &d.props.driver_version,
    )
}

/// [`device_key`] from its parts.
pub fn device_key_of(name: &str, arch: &str, sm_count: u32, driver: &str) -> String {
    format!("{name} · {arch} · {sm_count} SMs · CUDA driver {driver}")
}

fn pow2_bucket(n: usize) -> usize {
    n.max(1).next_power_of_two()
}

/// The shape bucket a tuned entry covers: each GEMM dimension rounded up to a power of two;
/// softmax rows and width rounded up to powers of two (so `≤ 8192 rows × ≤ 4096 columns`).
pub fn bucket(op: Op, shape: &[usize]) -> String {
    match (op.is_gemm(), shape) {
        (true, &[m, n, k]) => format!(
            "m≤{} n≤{} k≤{}",
            pow2_bucket(m),
            pow2_bucket(n),
            pow2_bucket(k)
        ),
        _ => {
            let cols = *shape.last().unwrap_or(&1);
            let rows: usize = shape[..shape.len().saturating_sub(1)].iter().product();
            format!("rows≤{} cols≤{}", pow2_bucket(rows), pow2_bucket(cols))
        }
    }
}

/// The cache key of one entry.
pub fn key(device: &str, op: Op, variant: &str, dtype: DType, bucket: &str) -> String {
    format!("{device} | {op}/{variant} | {dtype} | {bucket}")
}

/// Read a cache file: Ok(None) when absent; Err(why) when unreadable, corrupt or stale.
fn read(path: &Path) -> std::result::Result<Option<CacheFile>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let file: CacheFile =
        serde_json::from_str(&text).map_err(|e| format!("it is not valid JSON ({e})"))?;
    if file.version != CACHE_VERSION {
        return Err(format!(
            "it has format version {} (this kernlab writes {CACHE_VERSION})",
            file.version
        ));
    }
    Ok(Some(file))
}

/// One phrase about a cache file for `kernlab doctor`: its entry count, or why it is ignored.
pub fn describe_file(path: &Path) -> String {
    match read(path) {
        Ok(None) => "none yet: `kernlab autotune` writes it".into(),
        Ok(Some(f)) => format!("{} entries", f.entries.len()),
        Err(why) => format!("ignored: {why}"),
    }
}

/// What this process has read from the cache (read once, updated by `store`).
static MEMO: Mutex<Option<(PathBuf, BTreeMap<String, Entry>)>> = Mutex::new(None);

/// The cached entry for `key` in the cache at `path` (read once per process; a corrupt or
/// stale file gives one warning on stderr and no entries).
pub fn lookup_in(path: &Path, key: &str) -> Option<Entry> {
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if memo.as_ref().is_none_or(|(p, _)| p != path) {
        let entries = match read(path) {
            Ok(Some(f)) => f.entries,
            Ok(None) => BTreeMap::new(),
            Err(why) => {
                stderr_line!(
                    "warning: ignoring the autotune cache {}: {why}; default heuristics apply \
                     until `kernlab autotune` rewrites it",
                    path.display()
                );
                BTreeMap::new()
            }
        };
        *memo = Some((path.to_path_buf(), entries));
    }
    memo.as_ref().and_then(|(_, m)| m.get(key).cloned())
}

/// The tuned entry for (device, op, variant, dtype, shape's bucket), if any.
pub fn lookup(
    dev: &CudaDevice,
    op: Op,
    variant: &str,
    dtype: DType,
    shape: &[usize],
) -> Option<Entry> {
    let path = cache_path()?;
    lookup_in(
        &path,
        &key(&device_key(dev), op, variant, dtype, &bucket(op, shape)),
    )
}

/// Keep `entry` under `key`, with every other entry: written to a temporary file in the same
/// folder, then renamed over the old one. A corrupt or stale file is replaced.
pub fn store(path: &Path, key: &str, entry: &Entry) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut file = read(path).ok().flatten().unwrap_or_default();
    file.version = CACHE_VERSION;
    file.entries.insert(key.to_string(), entry.clone());
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invalid(format!("serialising the autotune cache: {e}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    let mut memo = MEMO.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, m)) = memo.as_mut() {
        if p == path {
            m.insert(key.to_string(), entry.clone());
        }
    }
    Ok(())
}

/// How a candidate runs: params, inputs, output.
pub type CandidateFn = Box<dyn Fn(&Params, &[&Tensor], &mut Tensor) -> Result<()>>;

/// One candidate: a variant in one configuration, and how to run it.
pub struct Candidate {
    pub variant: &'static str,
    pub config: String,
    pub run: CandidateFn,
}

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
    let seed = bench::fresh_seed();
    let host = bench::make_inputs(op, shape, dtype, seed, None)?;
    let reference: Reference = bench::make_reference(op, &host, params, seed)?;
    let y_shape = bench::out_shape(op, shape);
    // As `kernlab bench --rotate`: copies of the inputs and outputs, cycled call by call, so
    // that (with `--rotate auto`) no timed call finds its input still in L2.
    let copies = bench::rotated_inputs(timing.rotate, &host, &y_shape, dtype, &device)?;
    let n_buf = copies.len();
    drop(host);
    let x: Vec<&Tensor> = copies[0].iter().collect();
    let bytes = bench::min_bytes(op, shape, dtype) as f64;
    let flops = bench::flops(op, shape);
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
            Err(e @ (Error::UnsupportedShape { .. } | Error::NotContiguous { .. })) => {
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
        let check = reference.check(&y, op.is_gemm())?;
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
    let b = bucket(op, shape);
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
        stored.push((key(&dkey, op, v, dtype, &b), entry(t)));
    }
    if let Some(best) = best_of
        .values()
        .min_by(|a, b| a.median_ms.unwrap().total_cmp(&b.median_ms.unwrap()))
    {
        stored.push((key(&dkey, op, "auto", dtype, &b), entry(best)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_key_names_model_arch_sms_and_driver() {
        assert_eq!(
            device_key_of("NVIDIA H200", "sm_90a", 132, "13.0"),
            "NVIDIA H200 · sm_90a · 132 SMs · CUDA driver 13.0"
        );
    }

    fn entry(v: &str) -> Entry {
        Entry {
            variant: v.into(),
            config: "128x256x64".into(),
            shape: vec![8192, 8192, 8192],
            median_ms: 1.5,
            candidates: 4,
            tuned_at: "2026-11-30T00:00:00Z".into(),
            kernlab_version: "0".into(),
        }
    }

    #[test]
    fn buckets_round_up_to_powers_of_two() {
        assert_eq!(
            bucket(Op::Matmul, &[8192, 8000, 127]),
            "m≤8192 n≤8192 k≤128"
        );
        assert_eq!(bucket(Op::Softmax, &[4096, 12672]), "rows≤4096 cols≤16384");
        assert_eq!(bucket(Op::Softmax, &[3, 5, 33]), "rows≤16 cols≤64");
    }

    #[test]
    fn entries_round_trip_and_other_keys_survive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autotune.json");
        store(&path, "a", &entry("v5_mma")).unwrap();
        store(&path, "b", &entry("v6_wgmma")).unwrap();
        let f = read(&path).unwrap().unwrap();
        assert_eq!(f.entries.len(), 2);
        assert_eq!(f.entries["a"].variant, "v5_mma");
        assert_eq!(lookup_in(&path, "b").unwrap().variant, "v6_wgmma");
        assert!(lookup_in(&path, "c").is_none());
    }

    #[test]
    fn a_corrupt_or_stale_cache_is_reported_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("autotune.json");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(read(&path).unwrap_err().contains("not valid JSON"));
        assert!(lookup_in(&path, "a").is_none());
        store(&path, "a", &entry("v4_grouped")).unwrap();
        assert_eq!(
            read(&path).unwrap().unwrap().entries["a"].variant,
            "v4_grouped"
        );
        std::fs::write(&path, r#"{"version": 99, "entries": {}}"#).unwrap();
        assert!(read(&path).unwrap_err().contains("version 99"));
    }
}
