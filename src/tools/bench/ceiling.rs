//! Ceilings measured on the device in hand: the copy bandwidth (bytes read + bytes written per
//! second), measured in every run, in the same process as the figures it judges; and the
//! vendor matmul rate (cuBLAS bf16 GemmEx and exact-f32 sgemm on a GPU, faer f32 on the CPU),
//! measured once per device and driver and kept in `ceilings.json` in kernlab's cache folder
//! (`~/.cache/kernlab`, or `$KERNLAB_CACHE_DIR`; `--fresh-ceilings` measures again).

use super::harness::{CpuTimer, CudaTimer, Stats, TimingOpts};
use crate::runtime::device::{nvrtc, CudaDevice, Device};
use crate::runtime::error::{Error, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CopyCeiling {
    /// Bytes copied per call (each is read once and written once).
    pub bytes: usize,
    pub stats: Stats,
    /// (read + written) / median time.
    pub gbps: f64,
    pub how: String,
}

/// Device-to-device copy of 1 GiB (less if memory is short), timed like any kernel.
pub fn cuda_copy(
    dev: &CudaDevice,
    timer: &mut CudaTimer,
    opts: &TimingOpts,
) -> Result<CopyCeiling> {
    let (free, _) = dev.ctx.mem_get_info().unwrap_or((1 << 32, 0));
    let bytes = (1usize << 30).min(free / 4).max(1 << 20);
    let src = dev.alloc_bytes(bytes, "the copy-ceiling source")?;
    let mut dst = dev.alloc_bytes(bytes, "the copy-ceiling destination")?;
    let stats = timer.time(opts, &mut || dev.copy_dtod(&src, &mut dst, bytes))?;
    Ok(CopyCeiling {
        bytes,
        gbps: 2.0 * bytes as f64 / (stats.median_ms * 1e-3) / 1e9,
        stats,
        how: format!("cuMemcpyDtoDAsync, {} MiB", bytes >> 20),
    })
}

/// A parallel memcpy of 256 MiB (rayon chunks), timed like any CPU variant.
pub fn cpu_copy(timer: &mut CpuTimer, opts: &TimingOpts) -> Result<CopyCeiling> {
    let bytes = 256usize << 20;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let stats = timer.time(opts, &mut || {
        dst.par_chunks_mut(1 << 20)
            .zip(src.par_chunks(1 << 20))
            .for_each(|(d, s)| d.copy_from_slice(s));
        std::hint::black_box(&dst);
        Ok(())
    })?;
    Ok(CopyCeiling {
        bytes,
        gbps: 2.0 * bytes as f64 / (stats.median_ms * 1e-3) / 1e9,
        stats,
        how: "parallel memcpy (rayon), 256 MiB".into(),
    })
}

/// The copy ceiling of a device.
pub fn copy_ceiling(device: &Device, opts: &TimingOpts) -> Result<CopyCeiling> {
    match device {
        Device::Cpu => cpu_copy(&mut CpuTimer::new(), opts),
        Device::Cuda(d) => cuda_copy(d, &mut CudaTimer::new(d)?, opts),
    }
}

/// One vendor matmul rate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MatmulCeiling {
    /// What ran: `cuBLAS GemmEx bf16 (f32 accumulate)`, `cuBLAS sgemm (exact f32)`, `faer f32`.
    pub name: String,
    /// The element type it stands for: `bf16` (also used for f16) or `f32`.
    pub dtype: String,
    /// m = n = k.
    pub n: usize,
    pub stats: Stats,
    /// 2·n³ / median time.
    pub tflops: f64,
}

impl MatmulCeiling {
    fn new(name: &str, dtype: &str, n: usize, stats: Stats) -> MatmulCeiling {
        MatmulCeiling {
            name: name.into(),
            dtype: dtype.into(),
            n,
            tflops: 2.0 * (n as f64).powi(3) / (stats.median_ms * 1e-3) / 1e12,
            stats,
        }
    }
}

/// `756.2 TFLOP/s`, or `45 GFLOP/s` below one TFLOP/s.
pub fn fmt_flops(tflops: f64) -> String {
    if tflops >= 1.0 {
        format!("{tflops:.1} TFLOP/s")
    } else {
        format!("{:.0} GFLOP/s", tflops * 1e3)
    }
}

/// The matmul ceiling that judges a dtype: exact f32 for f32, bf16 for bf16 and f16.
pub fn matmul_for(
    matmul: &[MatmulCeiling],
    dtype: crate::runtime::dtype::DType,
) -> Option<&MatmulCeiling> {
    let want = match dtype {
        crate::runtime::dtype::DType::F32 => "f32",
        _ => "bf16",
    };
    matmul
        .iter()
        .find(|m| m.dtype == want)
        .or_else(|| matmul.first())
}

/// Timing for ceilings: do_bench's defaults, whatever the run's options (a ceiling measured
/// with a 2 ms budget, or inside a CUDA graph, would be kept in the cache as if it were good).
pub fn ceiling_timing(flush: bool) -> TimingOpts {
    TimingOpts {
        flush,
        ..TimingOpts::default()
    }
}

/// Uniform values in [-1, 1) (never zeros in bulk: a matmul of zeros runs faster than real
/// data on some GPUs).
fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    use rand::{Rng, SeedableRng};
    let mut v = vec![0f32; n];
    v.par_chunks_mut(1 << 16)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rng =
                rand::rngs::SmallRng::seed_from_u64(seed ^ ((c as u64 + 1) * 0x9E37_79B9));
            for x in chunk {
                *x = rng.random_range(-1.0f32..1.0);
            }
        });
    v
}

/// cuBLAS: bf16 GemmEx (f32 accumulation) and exact-f32 sgemm (CUBLAS_DEFAULT_MATH, no TF32),
/// n³ with n = 8192 (halved while three f32 matrices would take more than half the free
/// memory). Err where cuBLAS is not installed.
pub fn cuda_matmul(dev: &CudaDevice, timer: &mut CudaTimer) -> Result<Vec<MatmulCeiling>> {
    use cudarc::cublas::{result, sys as cb, CudaBlas};
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    // cudarc panics on a missing library: look first.
    if !unsafe { cb::is_culib_present() } {
        return Err(Error::MissingLibrary {
            lib: "cuBLAS (libcublas.so)",
            why: "not found on the library path".into(),
        });
    }
    let (free, _) = dev.ctx.mem_get_info().unwrap_or((1 << 32, 0));
    let mut n = 8192usize;
    while n > 1024 && 3 * n * n * 4 > free / 2 {
        n /= 2;
    }
    let opts = ceiling_timing(true);
    let blas = CudaBlas::new(dev.stream.clone()).map_err(|e| Error::driver("cublasCreate", e))?;
    unsafe { cb::cublasSetMathMode(*blas.handle(), cb::cublasMath_t::CUBLAS_DEFAULT_MATH) }
        .result()
        .map_err(|e| Error::driver("cublasSetMathMode", e))?;
    let a32 = random_f32(n * n, 1);
    let b32 = random_f32(n * n, 2);
    let ni = n as i32;
    let nn = cb::cublasOperation_t::CUBLAS_OP_N;
    let mut out = Vec::new();
    {
        let to_bf16 = |v: &[f32]| -> Vec<half::bf16> {
            v.par_iter().map(|&x| half::bf16::from_f32(x)).collect()
        };
        let a = dev.htod(bytemuck::cast_slice(&to_bf16(&a32)), "the bf16 matmul A")?;
        let b = dev.htod(bytemuck::cast_slice(&to_bf16(&b32)), "the bf16 matmul B")?;
        let mut c = dev.alloc_bytes(n * n * 2, "the bf16 matmul C")?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let stats = timer.time(&opts, &mut || {
            let (pa, _ga) = a.device_ptr(&dev.stream);
            let (pb, _gb) = b.device_ptr(&dev.stream);
            let (pc, _gc) = c.device_ptr_mut(&dev.stream);
            unsafe {
                result::gemm_ex(
                    *blas.handle(),
                    nn,
                    nn,
                    ni,
                    ni,
                    ni,
                    &alpha as *const f32 as *const _,
                    pa as *const _,
                    cb::cudaDataType::CUDA_R_16BF,
                    ni,
                    pb as *const _,
                    cb::cudaDataType::CUDA_R_16BF,
                    ni,
                    &beta as *const f32 as *const _,
                    pc as *mut _,
                    cb::cudaDataType::CUDA_R_16BF,
                    ni,
                    cb::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    cb::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(|e| Error::driver("cublasGemmEx (bf16)", e))
        })?;
        out.push(MatmulCeiling::new(
            "cuBLAS GemmEx bf16 (f32 accumulate)",
            "bf16",
            n,
            stats,
        ));
    }
    let a = dev.htod(bytemuck::cast_slice(&a32), "the f32 matmul A")?;
    let b = dev.htod(bytemuck::cast_slice(&b32), "the f32 matmul B")?;
    let mut c = dev.alloc_bytes(n * n * 4, "the f32 matmul C")?;
    drop((a32, b32));
    let (alpha, beta) = (1.0f32, 0.0f32);
    let stats = timer.time(&opts, &mut || {
        let (pa, _ga) = a.device_ptr(&dev.stream);
        let (pb, _gb) = b.device_ptr(&dev.stream);
        let (pc, _gc) = c.device_ptr_mut(&dev.stream);
        unsafe {
            result::sgemm(
                *blas.handle(),
                nn,
                nn,
                ni,
                ni,
                ni,
                &alpha,
                pa as *const f32,
                ni,
                pb as *const f32,
                ni,
                &beta,
                pc as *mut f32,
                ni,
            )
        }
        .map_err(|e| Error::driver("cublasSgemm", e))
    })?;
    out.push(MatmulCeiling::new(
        "cuBLAS sgemm (exact f32)",
        "f32",
        n,
        stats,
    ));
    Ok(out)
}

/// faer's f32 matmul, 1024³, on the rayon pool.
pub fn cpu_matmul(timer: &mut CpuTimer) -> Result<Vec<MatmulCeiling>> {
    let n = 1024;
    let (av, bv) = (random_f32(n * n, 1), random_f32(n * n, 2));
    let a = faer::Mat::<f32>::from_fn(n, n, |i, j| av[i * n + j]);
    let b = faer::Mat::<f32>::from_fn(n, n, |i, j| bv[i * n + j]);
    let mut c = faer::Mat::<f32>::zeros(n, n);
    let stats = timer.time(&ceiling_timing(true), &mut || {
        faer::linalg::matmul::matmul(
            c.as_mut(),
            faer::Accum::Replace,
            a.as_ref(),
            b.as_ref(),
            1.0f32,
            faer::Par::rayon(0),
        );
        std::hint::black_box(&c);
        Ok(())
    })?;
    Ok(vec![MatmulCeiling::new(
        "faer f32 (rayon)",
        "f32",
        n,
        stats,
    )])
}

/// The key ceilings are kept under: the device and the driver (a new driver, or another GPU
/// model, measures again).
pub fn device_key(device: &Device) -> String {
    match device {
        Device::Cpu => format!(
            "cpu · {} · {} threads",
            crate::runtime::device::cpu_model_name(),
            rayon::current_num_threads()
        ),
        Device::Cuda(d) => format!(
            "{} · {} · {} SMs · CUDA driver {}",
            d.props.name, d.arch, d.props.sm_count, d.props.driver_version
        ),
    }
}

/// The ceilings of one device, as kept in the cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ceilings {
    pub device: String,
    pub measured_at: String,
    pub kernlab_version: String,
    pub copy: CopyCeiling,
    pub matmul: Vec<MatmulCeiling>,
    /// Why a ceiling is missing (no cuBLAS, ...).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Where a report's matmul ceilings came from.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum Provenance {
    /// Measured in this process.
    Measured,
    /// Read from the cache (measured at that date).
    Cached,
}

/// `ceilings.json` in kernlab's cache folder (`~/.cache/kernlab/ceilings.json`, or in
/// `$KERNLAB_CACHE_DIR`); None when the cache is off.
pub fn cache_path() -> Option<PathBuf> {
    Some(nvrtc::cache_root()?.join("ceilings.json"))
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    devices: BTreeMap<String, Ceilings>,
}

const CACHE_VERSION: u32 = 1;

/// The cached ceilings for `key`; None when there are none, or the file is unreadable or of
/// another version (it is then rewritten on the next store).
pub fn load(path: &Path, key: &str) -> Option<Ceilings> {
    let text = std::fs::read_to_string(path).ok()?;
    let file: CacheFile = serde_json::from_str(&text).ok()?;
    if file.version != CACHE_VERSION {
        return None;
    }
    file.devices.get(key).cloned()
}

/// Keep `c` under `key`, with the other devices' entries: under the cache's lock (one writer
/// at a time, none losing another's entry), written to a temporary file in the same folder,
/// then renamed over the old one (a reader never sees half a file).
pub fn store(path: &Path, key: &str, c: &Ceilings) -> Result<()> {
    crate::runtime::tuning::locked(path, || store_unlocked(path, key, c))
}

fn store_unlocked(path: &Path, key: &str, c: &Ceilings) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<CacheFile>(&t).ok())
        .filter(|f| f.version == CACHE_VERSION)
        .unwrap_or_default();
    file.version = CACHE_VERSION;
    file.devices.insert(key.to_string(), c.clone());
    let text = serde_json::to_string_pretty(&file)
        .map_err(|e| Error::Invalid(format!("serialising the ceilings: {e}")))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes()).map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// A cached matmul ceiling older than this is measured again.
pub const MAX_AGE_DAYS: u64 = 7;
/// A cached matmul ceiling is measured again when this run's copy rate differs from the one
/// measured beside it by more than this fraction: the device is not in the state (clocks,
/// other work) it was measured in.
pub const COPY_DRIFT: f64 = 0.10;

/// Why cached ceilings `c` cannot stand for the device now (`None`: they can): older than
/// [`MAX_AGE_DAYS`], of unreadable date, or measured beside a copy rate [`COPY_DRIFT`] away
/// from `copy_now`'s (where this run measured one).
pub fn stale(
    c: &Ceilings,
    copy_now: Option<&CopyCeiling>,
    now: std::time::SystemTime,
) -> Option<String> {
    let Ok(at) = humantime::parse_rfc3339(&c.measured_at) else {
        return Some(format!("has an unreadable date ('{}')", c.measured_at));
    };
    let age = now.duration_since(at).unwrap_or_default();
    if age.as_secs() > MAX_AGE_DAYS * 86_400 {
        return Some(format!(
            "is {} days old (kept for {MAX_AGE_DAYS})",
            age.as_secs() / 86_400
        ));
    }
    if let Some(now_copy) = copy_now {
        let then = c.copy.gbps;
        if then > 0.0 && ((now_copy.gbps - then) / then).abs() > COPY_DRIFT {
            return Some(format!(
                "was measured beside a copy rate of {then:.0} GB/s, and this run measured \
                 {:.0} GB/s (more than {:.0}% apart: the device is in another state)",
                now_copy.gbps,
                COPY_DRIFT * 100.0
            ));
        }
    }
    None
}

/// The ceilings of a device: from the cache unless `fresh`, absent there or [`stale`], else
/// `copy` with the matmul rates that `measure` measures now, kept in the cache when there is
/// one. `copy_now` is the copy rate this run measured, where it measured one.
pub fn cached_or_measured(
    device: &Device,
    copy_now: Option<&CopyCeiling>,
    copy: &mut dyn FnMut() -> Result<CopyCeiling>,
    measure: &mut dyn FnMut() -> Result<Vec<MatmulCeiling>>,
    cache: Option<&Path>,
    fresh: bool,
) -> Result<(Ceilings, Provenance)> {
    let key = device_key(device);
    if let (false, Some(c)) = (fresh, cache.and_then(|p| load(p, &key))) {
        match stale(&c, copy_now, std::time::SystemTime::now()) {
            None => return Ok((c, Provenance::Cached)),
            Some(why) => {
                stderr_line!("kernlab: the cached matmul ceiling {why}; measuring it again")
            }
        }
    }
    let copy = copy()?;
    let mut notes = Vec::new();
    // A matmul ceiling that cannot be measured (no cuBLAS, a cuBLAS error, too little
    // memory) is a note, never the end of a bench run; and it is not kept, so the next run
    // tries again.
    let matmul = match measure() {
        Ok(m) => m,
        Err(e) => {
            notes.push(format!("no matmul ceiling: {e}"));
            Vec::new()
        }
    };
    let c = Ceilings {
        device: key.clone(),
        measured_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        kernlab_version: env!("CARGO_PKG_VERSION").into(),
        copy,
        matmul,
        notes,
    };
    if let (Some(p), false) = (cache, c.matmul.is_empty()) {
        if let Err(e) = store(p, &key, &c) {
            stderr_line!(
                "kernlab: could not keep the ceilings in {} ({e})",
                p.display()
            );
        }
    }
    Ok((c, Provenance::Measured))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms]).unwrap()
    }

    fn copy() -> CopyCeiling {
        CopyCeiling {
            bytes: 1 << 20,
            stats: stats(1.0),
            gbps: 2.1,
            how: "test".into(),
        }
    }

    #[test]
    fn matmul_rates_count_two_n_cubed_flops() {
        let m = MatmulCeiling::new("x", "f32", 1000, stats(2.0));
        assert!((m.tflops - 1.0).abs() < 1e-12);
        let all = vec![m.clone(), MatmulCeiling::new("y", "bf16", 1000, stats(1.0))];
        assert_eq!(
            matmul_for(&all, crate::runtime::dtype::DType::F32)
                .unwrap()
                .name,
            "x"
        );
        assert_eq!(
            matmul_for(&all, crate::runtime::dtype::DType::F16)
                .unwrap()
                .name,
            "y"
        );
        assert_eq!(
            matmul_for(&all[..1], crate::runtime::dtype::DType::BF16)
                .unwrap()
                .name,
            "x"
        );
    }

    #[test]
    fn ceilings_are_kept_per_device_and_measured_again_when_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("ceilings.json");
        let mut runs = 0;
        let mut measure = || {
            runs += 1;
            Ok(vec![MatmulCeiling::new("m", "f32", 10, stats(runs as f64))])
        };
        let dev = Device::Cpu;
        let (a, pa) = cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut measure,
            Some(&path),
            false,
        )
        .unwrap();
        let (b, pb) = cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut measure,
            Some(&path),
            false,
        )
        .unwrap();
        assert_eq!((pa, pb), (Provenance::Measured, Provenance::Cached));
        assert_eq!(a.matmul, b.matmul);
        let (c, pc) = cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut measure,
            Some(&path),
            true,
        )
        .unwrap();
        assert_eq!(pc, Provenance::Measured);
        assert_eq!(c.matmul[0].stats.median_ms, 2.0);
        // Other devices' entries survive a store; a broken file is measured over.
        let other = Ceilings {
            device: "other".into(),
            ..c.clone()
        };
        store(&path, "other", &other).unwrap();
        assert!(load(&path, &device_key(&dev)).is_some());
        assert_eq!(load(&path, "other").unwrap().device, "other");
        std::fs::write(&path, "{ not json").unwrap();
        assert!(load(&path, "other").is_none());
        let (_, p) = cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut measure,
            Some(&path),
            false,
        )
        .unwrap();
        assert_eq!(p, Provenance::Measured);
        // No cache: always measured; a missing library is a note, and nothing is kept.
        let (d, _) = cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut || {
                Err(Error::MissingLibrary {
                    lib: "cuBLAS",
                    why: "absent".into(),
                })
            },
            None,
            false,
        )
        .unwrap();
        assert!(d.matmul.is_empty() && d.notes[0].contains("cuBLAS"));
        let fresh_path = dir.path().join("none.json");
        cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut || Err(Error::Invalid("cublasCreate failed".into())),
            Some(&fresh_path),
            false,
        )
        .unwrap();
        assert!(!fresh_path.exists());
    }

    #[test]
    fn a_cached_ceiling_is_stale_when_old_or_beside_another_copy_rate() {
        let now = std::time::SystemTime::now();
        let at = |secs_ago: u64| {
            humantime::format_rfc3339_seconds(now - std::time::Duration::from_secs(secs_ago))
                .to_string()
        };
        let c = |measured_at: String| Ceilings {
            device: "d".into(),
            measured_at,
            kernlab_version: "0".into(),
            copy: copy(),
            matmul: vec![MatmulCeiling::new("m", "f32", 10, stats(1.0))],
            notes: vec![],
        };
        assert_eq!(stale(&c(at(3600)), Some(&copy()), now), None);
        let old = stale(&c(at(8 * 86_400)), None, now).unwrap();
        assert!(old.contains("8 days old"), "{old}");
        assert!(stale(&c("yesterday".into()), None, now).is_some());
        // This run's copy 20% faster than the one measured beside the cached rate.
        let faster = CopyCeiling {
            gbps: copy().gbps * 1.2,
            ..copy()
        };
        let drift = stale(&c(at(60)), Some(&faster), now).unwrap();
        assert!(drift.contains("another state"), "{drift}");
        let near = CopyCeiling {
            gbps: copy().gbps * 1.05,
            ..copy()
        };
        assert_eq!(stale(&c(at(60)), Some(&near), now), None);
        // Through the cache: a drifted copy rate measures the matmul again.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ceilings.json");
        let mut measure = || Ok(vec![MatmulCeiling::new("m", "f32", 10, stats(1.0))]);
        let dev = Device::Cpu;
        cached_or_measured(
            &dev,
            None,
            &mut || Ok(copy()),
            &mut measure,
            Some(&path),
            false,
        )
        .unwrap();
        let (_, p) = cached_or_measured(
            &dev,
            Some(&faster),
            &mut || Ok(faster.clone()),
            &mut measure,
            Some(&path),
            false,
        )
        .unwrap();
        assert_eq!(p, Provenance::Measured);
    }
}
