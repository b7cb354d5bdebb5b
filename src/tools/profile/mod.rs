//! `kernlab profile`: run one variant N times under CUPTI's activity API and show what the
//! GPU did, as torch.profiler does: every kernel (demangled name, grid, block, registers,
//! shared memory, start and end), every memcpy and memset, and the driver-API calls that
//! launched them, so the CPU-side launch cost sits next to the GPU time.
//!
//! The layers, so that everything but the recording runs without a GPU:
//! - `cupti`: the only part that talks to CUPTI; it turns raw activity records into the plain
//!   records below ([`KernelRecord`], [`MemRecord`], [`ApiRecord`]), all serde.
//! - `summary`: key_averages: one row per kernel (or copy, or driver call), sorted by GPU time.
//! - `trace`: a Chrome trace-event file (Perfetto, chrome://tracing): a track per CUDA
//!   stream, one for the driver-API calls, one for kernlab's own ranges.
//! - [`run`]: the workload: inputs made and checked as `bench` makes them, a warm-up call
//!   outside the recording, N plain iterations (the overhead's baseline), then N recorded ones.
//!
//! kernlab's ranges (the workload, each iteration) are recorded on the host with CUPTI's clock
//! and written to the trace, and emitted as NVTX ranges too (`nvtx`) where libnvToolsExt or
//! libnvtx3interop loads, so Nsight Systems shows them. The profiler never runs during `bench`.

pub mod cupti;
pub mod summary;
pub mod trace;

use crate::check::{fresh_seed, make_inputs, make_reference, validate};
use crate::ops::{Op, Params};
use crate::runtime::device::{Device, DeviceSpec};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::nvtx;
use crate::runtime::tensor::{shape_str, Tensor};
use serde::{Deserialize, Serialize};

/// One kernel execution on the GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelRecord {
    /// Demangled (C++ names such as cuBLAS's); kernlab's `extern "C"` kernels are as written.
    pub name: String,
    /// The raw symbol, when it differs from `name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mangled: Option<String>,
    /// GPU timestamps, ns (CUPTI's clock).
    pub start_ns: u64,
    pub end_ns: u64,
    pub device: u32,
    pub stream: u32,
    /// Joins the kernel to the driver-API call that launched it.
    pub correlation: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers: u32,
    pub static_smem: u32,
    pub dynamic_smem: u32,
}

/// A memcpy or memset on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemKind {
    Memcpy,
    Memset,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemRecord {
    pub kind: MemKind,
    /// For copies: HtoD, DtoH, DtoD, HtoH, PtoP or other; empty for memsets.
    #[serde(default)]
    pub direction: String,
    pub bytes: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub device: u32,
    pub stream: u32,
    pub correlation: u32,
}

impl MemRecord {
    /// The name its row and trace slice carry: `[memcpy HtoD]`, `[memset]`.
    pub fn label(&self) -> String {
        match self.kind {
            MemKind::Memcpy => format!("[memcpy {}]", self.direction),
            MemKind::Memset => "[memset]".to_string(),
        }
    }
}

/// One driver-API call on the CPU (`cuLaunchKernel`, `cuMemcpyHtoDAsync_v2`, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApiRecord {
    pub name: String,
    /// CUPTI's callback id in the driver-API domain.
    pub cbid: u32,
    /// Host timestamps, ns (CUPTI's clock, the same as the GPU records').
    pub start_ns: u64,
    pub end_ns: u64,
    pub thread: u32,
    pub correlation: u32,
}

impl ApiRecord {
    /// Whether this call launches a kernel (its time is the "CPU launch" column).
    pub fn is_launch(&self) -> bool {
        self.name.starts_with("cuLaunch") || self.name.starts_with("cudaLaunch")
    }
}

/// A kernlab range, recorded on the host: depth 0 is the whole workload, depth 1 one
/// iteration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RangeRecord {
    pub name: String,
    pub depth: u32,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// Everything one profiled run recorded. `kernlab profile --json` writes it (inside the
/// report); the tests read hand-written ones from tests/data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub kernels: Vec<KernelRecord>,
    #[serde(default)]
    pub memops: Vec<MemRecord>,
    #[serde(default)]
    pub api: Vec<ApiRecord>,
    #[serde(default)]
    pub ranges: Vec<RangeRecord>,
    /// Records CUPTI dropped for want of buffer space (0 in a sound run).
    #[serde(default)]
    pub dropped: u64,
}

impl Recording {
    /// The iteration ranges (depth 1), in order.
    pub fn iterations(&self) -> Vec<&RangeRecord> {
        let mut it: Vec<_> = self.ranges.iter().filter(|r| r.depth == 1).collect();
        it.sort_by_key(|r| r.start_ns);
        it
    }

    /// The kernels launched within each iteration: a kernel belongs to the iteration in which
    /// its launch call started (its GPU execution may come later: launches are asynchronous);
    /// a kernel without a launch record counts where it started on the GPU.
    pub fn kernels_per_iteration(&self) -> Vec<Vec<&KernelRecord>> {
        let launch: std::collections::HashMap<u32, u64> = self
            .api
            .iter()
            .map(|a| (a.correlation, a.start_ns))
            .collect();
        self.iterations()
            .iter()
            .map(|r| {
                self.kernels
                    .iter()
                    .filter(|k| {
                        let t = launch.get(&k.correlation).copied().unwrap_or(k.start_ns);
                        r.start_ns <= t && t <= r.end_ns
                    })
                    .collect()
            })
            .collect()
    }

    /// How far the host runs ahead of the GPU: the kernels launched (their launch call
    /// returned) and not yet finished, over time, as `(timestamp, depth)` steps in time order.
    /// A kernel without a launch record is left out.
    pub fn queue_depth(&self) -> Vec<(u64, i64)> {
        let launched: std::collections::HashMap<u32, u64> = self
            .api
            .iter()
            .filter(|a| a.is_launch())
            .map(|a| (a.correlation, a.end_ns))
            .collect();
        let mut events: Vec<(u64, i64)> = Vec::new();
        for k in &self.kernels {
            if let Some(&t) = launched.get(&k.correlation) {
                // A kernel may start before its launch call returns: count it from the
                // earlier of the two, and its end after that (a zero-length kernel too), so
                // the depth never goes negative.
                let from = t.min(k.start_ns);
                events.push((from, 1));
                events.push((k.end_ns.max(from + 1), -1));
            }
        }
        // At one timestamp, finishes before launches (a conservative depth).
        events.sort();
        let mut depth = 0i64;
        events
            .into_iter()
            .map(|(t, d)| {
                depth += d;
                (t, depth)
            })
            .collect()
    }

    /// [`Recording::queue_depth`] summarised: the largest depth, and the time-weighted mean
    /// from the first launch to the last kernel's end (None without launch records).
    pub fn queue_summary(&self) -> Option<(i64, f64)> {
        let steps = self.queue_depth();
        let (first, last) = (steps.first()?.0, steps.last()?.0);
        let max = steps.iter().map(|s| s.1).max()?;
        let span = last.saturating_sub(first);
        if span == 0 {
            return Some((max, max as f64));
        }
        let area: f64 = steps
            .windows(2)
            .map(|w| w[0].1 as f64 * w[1].0.saturating_sub(w[0].0) as f64)
            .sum();
        Some((max, area / span as f64))
    }

    /// The earliest timestamp in the recording (the trace's zero).
    pub fn t0(&self) -> u64 {
        let k = self.kernels.iter().map(|k| k.start_ns);
        let m = self.memops.iter().map(|m| m.start_ns);
        let a = self.api.iter().map(|a| a.start_ns);
        let r = self.ranges.iter().map(|r| r.start_ns);
        k.chain(m).chain(a).chain(r).min().unwrap_or(0)
    }
}

/// Demangle a C++ symbol (`_Z...`); anything else comes back as it is.
pub fn demangle(name: &str) -> String {
    if !name.starts_with("_Z") {
        return name.to_string();
    }
    cpp_demangle::Symbol::new(name.as_bytes())
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

/// What the profiler costs: the same N iterations timed without CUPTI and with it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub iters: usize,
    /// Host wall time from before the first launch to after the final sync, ms.
    pub plain_wall_ms: f64,
    pub profiled_wall_ms: f64,
    /// GPU time between two events around the N iterations, ms.
    pub plain_gpu_ms: f64,
    pub profiled_gpu_ms: f64,
}

impl std::fmt::Display for Overhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |a: f64, b: f64| {
            if a > 0.0 {
                format!("{:+.1}%", 100.0 * (b - a) / a)
            } else {
                "n/a".into()
            }
        };
        write!(
            f,
            "profiler overhead on {} iterations: host wall {:.3} ms without CUPTI, {:.3} ms with \
             ({}); GPU (events) {:.3} ms without, {:.3} ms with ({})",
            self.iters,
            self.plain_wall_ms,
            self.profiled_wall_ms,
            pct(self.plain_wall_ms, self.profiled_wall_ms),
            self.plain_gpu_ms,
            self.profiled_gpu_ms,
            pct(self.plain_gpu_ms, self.profiled_gpu_ms),
        )
    }
}

/// What to profile: one variant of an op, on one shape and dtype.
#[derive(Debug, Clone)]
pub struct ProfileRequest {
    pub op: Op,
    pub variant: String,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub params: Params,
    /// Recorded iterations (and as many plain ones for the overhead).
    pub iters: usize,
    pub seed: Option<u64>,
    pub device: DeviceSpec,
    /// Synchronise after every kernel launch (both timed loops), as a loop that reads a
    /// result back after each step would: the GPU then idles between launches.
    pub sync_each_launch: bool,
}

/// A profiled run: the recording and what it ran on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileReport {
    /// `gelu/manual f32 8192x8192 (tanh)`.
    pub workload: String,
    pub device: String,
    pub seed: u64,
    pub iters: usize,
    /// The warm-up call's check against the f64 reference.
    pub validation: String,
    pub cupti_version: u32,
    pub overhead: Overhead,
    pub recording: Recording,
}

impl ProfileReport {
    /// The header lines and the key_averages table, `row_limit` rows at most.
    pub fn render(&self, row_limit: Option<usize>) -> String {
        let mut s = format!(
            "profile: {} on {} · {} iterations recorded with CUPTI {} · seed {}\n\
             warm-up call (not recorded): {}\n",
            self.workload, self.device, self.iters, self.cupti_version, self.seed, self.validation
        );
        s += &summary::render(&self.recording, self.iters, row_limit);
        s += &format!("{}\n", self.overhead);
        s += &format!("{}\n", nvtx::describe());
        s
    }
}

/// Open the device, check CUPTI, make the inputs, then: one warm-up call (validated against
/// the f64 reference, not recorded), N plain iterations timed (the overhead's baseline), and
/// N iterations recorded with CUPTI, each inside a kernlab range.
pub fn run(req: &ProfileRequest, note: &mut dyn FnMut(&str)) -> Result<ProfileReport> {
    if req.iters == 0 {
        return Err(Error::Invalid("--iters must be at least 1".into()));
    }
    // Before anything touches CUDA: the driver, then CUPTI (cudarc panics on a missing one).
    crate::runtime::device::cuda_probe().map_err(|why| {
        Error::NoCuda(format!(
            "kernlab profile records CUDA activity with CUPTI and needs a CUDA GPU: {why}"
        ))
    })?;
    cupti::available().map_err(|why| Error::MissingLibrary {
        lib: "CUPTI",
        why: format!("CUPTI not found: {why}"),
    })?;
    let spec = match req.device {
        DeviceSpec::Cpu => {
            return Err(Error::Invalid(
                "kernlab profile records CUDA activity; --device cpu has none".into(),
            ))
        }
        s => s,
    };
    let (device, _) = Device::open(spec)?;
    let Some(dev) = device.cuda().cloned() else {
        return Err(Error::NoCuda(
            "kernlab profile needs a CUDA GPU (the device opened is the CPU)".into(),
        ));
    };
    let v = crate::ops::find(req.op, &req.variant, device.kind())?;
    let seed = req.seed.unwrap_or_else(fresh_seed);
    let workload = format!(
        "{} {} {}{}",
        v.id(),
        req.dtype,
        shape_str(&req.shape),
        req.params.form_suffix()
    );
    note(&format!("{workload}: making inputs and the f64 reference"));
    let host = make_inputs(req.op, &req.shape, req.dtype, seed, None, &req.params)?;
    let reference = make_reference(req.op, &req.shape, &host, &req.params, seed)?;
    let inputs = host
        .iter()
        .map(|t| t.to_device(&device))
        .collect::<Result<Vec<_>>>()?;
    drop(host);
    let x: Vec<&Tensor> = inputs.iter().collect();
    note(&format!("{workload}: warm-up call, validated"));
    let (check, mut y) = validate(v, &req.params, &x, &reference)?;
    drop(reference);
    if !check.passed {
        return Err(Error::Validation {
            op: req.op.to_string(),
            variant: v.name.to_string(),
            why: check.describe(),
        });
    }
    let validation = format!(
        "validated against f64, max rel err {:.2e}, rel L2 {:.2e}",
        check.max_rel_err, check.rel_l2
    );
    let p = req.params.clone();
    let ev = || {
        dev.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| Error::driver("cuEventCreate", e))
    };
    let (e0, e1) = (ev()?, ev()?);
    // Times N iterations: host wall (launches to the final sync) and GPU (events); `mark`
    // is called around each iteration.
    let mut timed = |mark: &mut dyn FnMut(usize, bool)| -> Result<(f64, f64)> {
        dev.sync()?;
        let t = std::time::Instant::now();
        e0.record(&dev.stream)
            .map_err(|e| Error::driver("cuEventRecord", e))?;
        for i in 0..req.iters {
            mark(i, true);
            v.run(&p, &x, &mut y)?;
            mark(i, false);
        }
        e1.record(&dev.stream)
            .map_err(|e| Error::driver("cuEventRecord", e))?;
        dev.sync()?;
        let wall = t.elapsed().as_secs_f64() * 1e3;
        let gpu = e0
            .elapsed_ms(&e1)
            .map_err(|e| Error::driver("cuEventElapsedTime", e))? as f64;
        Ok((wall, gpu))
    };
    dev.set_sync_each_launch(req.sync_each_launch);
    note(&format!("{workload}: {} plain iterations", req.iters));
    let (plain_wall_ms, plain_gpu_ms) = timed(&mut |_, _| {})?;
    note(&format!("{workload}: {} iterations under CUPTI", req.iters));
    let subscription = cupti::Subscription::start()?;
    let mut ranges = Vec::with_capacity(req.iters + 1);
    let mut open = 0u64;
    let whole = nvtx::range(&workload);
    let mut iter_range: Option<nvtx::Range> = None;
    let t_start = cupti::timestamp_ns();
    let result = timed(&mut |i, starting| {
        let now = cupti::timestamp_ns();
        if starting {
            open = now;
            iter_range = Some(nvtx::range(&format!("iter {i}")));
        } else {
            iter_range = None;
            ranges.push(RangeRecord {
                name: format!("iter {i}"),
                depth: 1,
                start_ns: open,
                end_ns: now,
            });
        }
    });
    let t_end = cupti::timestamp_ns();
    drop(iter_range);
    whole.end();
    dev.set_sync_each_launch(false);
    let mut recording = subscription.stop()?;
    let (profiled_wall_ms, profiled_gpu_ms) = result?;
    ranges.insert(
        0,
        RangeRecord {
            name: workload.clone(),
            depth: 0,
            start_ns: t_start,
            end_ns: t_end,
        },
    );
    recording.ranges = ranges;
    Ok(ProfileReport {
        workload,
        device: device.describe(),
        seed,
        iters: req.iters,
        validation,
        cupti_version: cupti::version().unwrap_or(0),
        overhead: Overhead {
            iters: req.iters,
            plain_wall_ms,
            profiled_wall_ms,
            plain_gpu_ms,
            profiled_gpu_ms,
        },
        recording,
    })
}
