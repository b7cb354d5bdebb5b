//! Timing with `triton.testing.do_bench` semantics, and a little further.
//!
//! GPU: run once; estimate one call's time from 5 calls; warm up for `warmup_ms`; then time
//! `rep_ms` worth of calls, each with its own event pair, with the L2 flushed (a write of
//! max(2 × L2, 256 MiB), read from the device) before every call, outside the events.
//! CPU: the same with a monotonic clock, the last-level cache flushed by writing a buffer
//! twice its size before every call. Both report median, p20, p80, min and the call count.
//!
//! Further: `graph` times CUDA-graph replays of N captured calls (for launch-bound work; the L2
//! is not flushed between replays, nor between the calls inside one), `rotate` cycles through N
//! input/output buffers (the caller's loop does it, see `bench::run`), and `repeat` runs the
//! whole measurement K times and reports the spread of the K medians: a difference smaller than
//! that spread is noise.

use crate::device::CudaDevice;
use crate::error::{Error, Result};
use cudarc::driver::{sys, CudaSlice};
use serde::{Deserialize, Serialize};
use std::time::Instant;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct TimingOpts {
    /// Warm-up duration, ms (do_bench's `warmup`).
    pub warmup_ms: f64,
    /// Measurement duration, ms (do_bench's `rep`).
    pub rep_ms: f64,
    /// At least this many timed calls, however long each takes.
    pub min_calls: usize,
    /// At most this many timed calls.
    pub max_calls: usize,
    /// Flush the cache before every timed call.
    pub flush: bool,
    /// Run the whole measurement this many times (≥ 1) and report the spread of the medians.
    pub repeat: usize,
    /// CUDA only: capture this many calls into one CUDA graph and time its replays
    /// (per-call time = replay time / N; no L2 flush between replays).
    pub graph: Option<usize>,
    /// Cycle through copies of the input (and output) buffers, call by call.
    pub rotate: Rotate,
}

impl Default for TimingOpts {
    fn default() -> Self {
        TimingOpts {
            warmup_ms: 25.0,
            rep_ms: 100.0,
            min_calls: 5,
            max_calls: 10_000,
            flush: true,
            repeat: 1,
            graph: None,
            rotate: Rotate::Copies(1),
        }
    }
}

/// How many copies of a point's inputs (and outputs) the timed calls cycle through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotate {
    /// This many (1: no rotation).
    Copies(usize),
    /// As many as make the copies at least [`Rotate::AUTO_CACHE_MULTIPLE`] × the last-level
    /// cache (the L2 on a GPU), counting a call's inputs and output, at most
    /// [`Rotate::AUTO_MAX_COPIES`]; one (no rotation) where one call's buffers are that large.
    /// Between two calls on the same copy, the other copies then pass through the cache
    /// several times over, so no call finds its input left there by an earlier one, even lines
    /// a load with an L2::evict_last policy kept through the flush. Call-by-call timing only
    /// (not with `graph`).
    Auto,
}

impl Rotate {
    pub const AUTO_CACHE_MULTIPLE: usize = 4;
    pub const AUTO_MAX_COPIES: usize = 1024;

    /// The copies for a point whose call touches `call_bytes` (its inputs and output), on a
    /// device whose last-level cache holds `cache_bytes`.
    pub fn copies(self, call_bytes: usize, cache_bytes: usize) -> usize {
        match self {
            Rotate::Copies(n) => n.max(1),
            Rotate::Auto => (Self::AUTO_CACHE_MULTIPLE * cache_bytes)
                .div_ceil(call_bytes.max(1))
                .clamp(1, Self::AUTO_MAX_COPIES),
        }
    }
}

impl std::str::FromStr for Rotate {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Rotate, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(Rotate::Auto);
        }
        match s.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(Rotate::Copies(n)),
            _ => Err(format!(
                "--rotate takes a count of at least 1 or `auto` (got {s:?})"
            )),
        }
    }
}

impl std::fmt::Display for Rotate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rotate::Copies(n) => write!(f, "{n}"),
            Rotate::Auto => f.write_str("auto"),
        }
    }
}

/// A count as a JSON number, `auto` as the string.
impl Serialize for Rotate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Rotate::Copies(n) => s.serialize_u64(*n as u64),
            Rotate::Auto => s.serialize_str("auto"),
        }
    }
}

/// Summary statistics of one measurement, in milliseconds.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Stats {
    pub median_ms: f64,
    pub p20_ms: f64,
    pub p80_ms: f64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub calls: usize,
}

/// Quantile by linear interpolation between closest ranks (numpy's default, as do_bench's
/// `torch.quantile` uses). `sorted` must be sorted ascending and non-empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let pos = q.clamp(0.0, 1.0) * (n - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Stats {
    pub fn from_samples(samples: &[f64]) -> Result<Stats> {
        if samples.is_empty() {
            return Err(Error::Invalid("no timing samples".into()));
        }
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        Ok(Stats {
            median_ms: quantile(&s, 0.5),
            p20_ms: quantile(&s, 0.2),
            p80_ms: quantile(&s, 0.8),
            min_ms: s[0],
            mean_ms: s.iter().sum::<f64>() / s.len() as f64,
            calls: s.len(),
        })
    }
}

impl Stats {
    /// The same statistics with every time multiplied by `f` and the call count by `calls`
    /// (a graph replay of N calls: f = 1/N, calls = N).
    pub fn scaled(&self, f: f64, calls: usize) -> Stats {
        Stats {
            median_ms: self.median_ms * f,
            p20_ms: self.p20_ms * f,
            p80_ms: self.p80_ms * f,
            min_ms: self.min_ms * f,
            mean_ms: self.mean_ms * f,
            calls: self.calls * calls,
        }
    }
}

/// K repeats of one measurement: the middle one's statistics and the spread of the medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measurement {
    /// The statistics of the repeat whose median is the median of the K medians (the lower
    /// middle one for an even K).
    pub stats: Stats,
    /// Every repeat's median, in the order they ran (one entry without `--repeat`).
    pub medians_ms: Vec<f64>,
    /// (max − min) / middle median of the K medians; 0 for one repeat.
    pub spread: f64,
}

impl Measurement {
    pub fn from_repeats(mut runs: Vec<Stats>) -> Result<Measurement> {
        if runs.is_empty() {
            return Err(Error::Invalid("no repeats measured".into()));
        }
        let medians_ms: Vec<f64> = runs.iter().map(|s| s.median_ms).collect();
        runs.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        let mid = runs[(runs.len() - 1) / 2];
        let (lo, hi) = (runs[0].median_ms, runs[runs.len() - 1].median_ms);
        let spread = if mid.median_ms > 0.0 {
            (hi - lo) / mid.median_ms
        } else {
            0.0
        };
        Ok(Measurement {
            stats: mid,
            medians_ms,
            spread,
        })
    }
}

/// Run `once` `opts.repeat` times (at least once) and summarise.
pub fn repeated(opts: &TimingOpts, once: &mut dyn FnMut() -> Result<Stats>) -> Result<Measurement> {
    let runs = (0..opts.repeat.max(1))
        .map(|_| once())
        .collect::<Result<Vec<_>>>()?;
    Measurement::from_repeats(runs)
}

/// Whether two medians differ by less than the run-to-run noise: |a − b| is no larger than
/// the larger of the two spreads (each a fraction of its own median). With no spread measured
/// (one repeat) nothing is called noise.
pub fn within_noise(a_ms: f64, a_spread: f64, b_ms: f64, b_spread: f64) -> bool {
    let band = (a_spread * a_ms).max(b_spread * b_ms);
    band > 0.0 && (a_ms - b_ms).abs() <= band
}

fn calls_for(opts: &TimingOpts, estimate_ms: f64, budget_ms: f64) -> usize {
    let n = (budget_ms / estimate_ms.max(1e-4)).floor() as usize;
    n.clamp(1, opts.max_calls)
}

/// The L2 flush buffer's size for a device: max(2 × L2, 256 MiB).
pub fn flush_bytes(l2_bytes: usize) -> usize {
    (2 * l2_bytes).max(256 << 20)
}

/// How the GPU timer writes its flush buffer: the driver's memset (the default), or a
/// kernel of 16-byte stores, as do_bench's `cache.zero_()` runs PyTorch's fill kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushForm {
    Memset,
    Kernel,
}

impl FlushForm {
    /// `KERNLAB_FLUSH=memset|kernel` (experiments: whether the flush's form moves the µs-sized
    /// calls). Unset or empty is `memset`; anything else is an error naming the choices.
    pub fn from_env() -> Result<Self> {
        Self::parse(&std::env::var("KERNLAB_FLUSH").unwrap_or_default())
    }

    pub fn parse(spec: &str) -> Result<Self> {
        crate::error::knob_choice(
            "KERNLAB_FLUSH",
            spec,
            &[("memset", FlushForm::Memset), ("kernel", FlushForm::Kernel)],
        )
    }
}

/// A GPU timer: holds the flush buffer so repeated measurements reuse it.
pub struct CudaTimer<'a> {
    dev: &'a CudaDevice,
    flush: CudaSlice<u8>,
    pub flush_bytes: usize,
    pub flush_form: FlushForm,
}

impl<'a> CudaTimer<'a> {
    pub fn new(dev: &'a CudaDevice) -> Result<Self> {
        let flush_form = FlushForm::from_env()?;
        let bytes = flush_bytes(dev.props.l2_bytes);
        let flush = dev.alloc_bytes(bytes, "the L2 flush buffer")?;
        Ok(CudaTimer {
            dev,
            flush,
            flush_bytes: bytes,
            flush_form,
        })
    }

    /// Write the flush buffer once, in the timer's form (what precedes each timed call).
    pub fn flush_l2(&mut self) -> Result<()> {
        match self.flush_form {
            FlushForm::Memset => self
                .dev
                .memset_pattern(&mut self.flush, 1, 0, self.flush_bytes),
            FlushForm::Kernel => {
                // flush_bytes is a multiple of 16 (256 MiB, or twice an L2 of whole KiB).
                let words = (self.flush_bytes / 16) as i64;
                let cfg = crate::ops::launch::cfg_1d(words as u64, 256)?;
                let zero = 0u32;
                crate::launch!(
                    self.dev,
                    &crate::kernels::ELEMENTWISE,
                    "fill_u32x4",
                    cfg,
                    [&mut self.flush, &zero, &words]
                );
                Ok(())
            }
        }
    }

    /// The flush buffer's bytes (tests: what a flush wrote).
    pub fn flush_contents(&self) -> Result<Vec<u8>> {
        self.dev.dtoh(&self.flush, self.flush_bytes)
    }

    /// Fill the flush buffer with `byte` (tests: a pattern that a flush must overwrite).
    pub fn fill_flush(&mut self, byte: u8) -> Result<()> {
        self.dev
            .memset_pattern(&mut self.flush, 1, byte as u32, self.flush_bytes)
    }

    /// Time `f` (which enqueues work on the device's stream) per `opts`: call by call, or as
    /// replays of a CUDA graph of `opts.graph` calls.
    pub fn time(&mut self, opts: &TimingOpts, f: &mut dyn FnMut() -> Result<()>) -> Result<Stats> {
        match opts.graph {
            None => self.time_calls(opts, f),
            Some(n) => {
                let n = n.max(1);
                let graph = self.capture(n, f)?;
                let replay_opts = TimingOpts {
                    flush: false,
                    ..*opts
                };
                let replays = self.time_calls(&replay_opts, &mut || {
                    graph
                        .launch()
                        .map_err(|e| Error::driver("cuGraphLaunch", e))
                })?;
                Ok(replays.scaled(1.0 / n as f64, n))
            }
        }
    }

    /// Capture `n` calls of `f` on the device's stream into an instantiated CUDA graph. The
    /// first call (compilation, loading, allocations) must already have run outside capture.
    fn capture(
        &mut self,
        n: usize,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<cudarc::driver::CudaGraph> {
        let dev = self.dev;
        f()?;
        dev.sync()?;
        dev.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| Error::driver("cuStreamBeginCapture", e))?;
        let mut called = Ok(());
        for _ in 0..n {
            called = f();
            if called.is_err() {
                break;
            }
        }
        // End the capture whatever happened, so the stream is usable again.
        let ended = dev
            .stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(|e| Error::driver("cuStreamEndCapture / cuGraphInstantiate", e));
        called.map_err(|e| Error::Invalid(format!("during CUDA-graph capture: {e}")))?;
        let graph = ended?.ok_or_else(|| {
            Error::Invalid("CUDA-graph capture recorded nothing (no work was enqueued)".into())
        })?;
        graph
            .upload()
            .map_err(|e| Error::driver("cuGraphUpload", e))?;
        Ok(graph)
    }

    fn time_calls(
        &mut self,
        opts: &TimingOpts,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stats> {
        let dev = self.dev;
        let ev = || {
            dev.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| Error::driver("cuEventCreate", e))
        };
        // One call (compiles, loads, allocates), then the estimate from 5 calls.
        f()?;
        dev.sync()?;
        let mut est = Vec::new();
        for _ in 0..5 {
            if opts.flush {
                self.flush_l2()?;
            }
            let (a, b) = (ev()?, ev()?);
            a.record(&dev.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            f()?;
            b.record(&dev.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            dev.sync()?;
            est.push(
                a.elapsed_ms(&b)
                    .map_err(|e| Error::driver("cuEventElapsedTime", e))? as f64,
            );
        }
        let estimate = Stats::from_samples(&est)?.median_ms;
        let warm = calls_for(opts, estimate, opts.warmup_ms);
        for _ in 0..warm {
            f()?;
        }
        let n = calls_for(opts, estimate, opts.rep_ms).max(opts.min_calls);
        let mut events = Vec::with_capacity(n);
        for _ in 0..n {
            events.push((ev()?, ev()?));
        }
        for (a, b) in &events {
            if opts.flush {
                self.flush_l2()?;
            }
            a.record(&dev.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
            f()?;
            b.record(&dev.stream)
                .map_err(|e| Error::driver("cuEventRecord", e))?;
        }
        dev.sync()?;
        let samples = events
            .iter()
            .map(|(a, b)| {
                a.elapsed_ms(b)
                    .map(|t| t as f64)
                    .map_err(|e| Error::driver("cuEventElapsedTime", e))
            })
            .collect::<Result<Vec<_>>>()?;
        Stats::from_samples(&samples)
    }
}

/// The CPU's last-level cache size from sysfs (32 MiB when it cannot be read).
pub fn cpu_llc_bytes() -> usize {
    let mut best = 0usize;
    for i in 0..8 {
        let p = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
        if let Ok(s) = std::fs::read_to_string(p) {
            let s = s.trim();
            let (num, mult) = if let Some(k) = s.strip_suffix('K') {
                (k, 1 << 10)
            } else if let Some(m) = s.strip_suffix('M') {
                (m, 1 << 20)
            } else {
                (s, 1)
            };
            if let Ok(v) = num.parse::<usize>() {
                best = best.max(v * mult);
            }
        }
    }
    if best == 0 {
        32 << 20
    } else {
        best
    }
}

/// A CPU timer with its cache-flush buffer.
pub struct CpuTimer {
    flush: Vec<u8>,
}

impl Default for CpuTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuTimer {
    pub fn new() -> Self {
        CpuTimer {
            flush: vec![0u8; 2 * cpu_llc_bytes()],
        }
    }

    pub fn flush_bytes(&self) -> usize {
        self.flush.len()
    }

    fn flush_cache(&mut self) {
        use rayon::prelude::*;
        self.flush
            .par_chunks_mut(1 << 16)
            .for_each(|c| c.iter_mut().for_each(|b| *b = b.wrapping_add(1)));
        std::hint::black_box(&self.flush);
    }

    pub fn time(&mut self, opts: &TimingOpts, f: &mut dyn FnMut() -> Result<()>) -> Result<Stats> {
        f()?;
        let mut est = Vec::new();
        for _ in 0..3 {
            if opts.flush {
                self.flush_cache();
            }
            let t = Instant::now();
            f()?;
            est.push(t.elapsed().as_secs_f64() * 1e3);
        }
        let estimate = Stats::from_samples(&est)?.median_ms;
        for _ in 0..calls_for(opts, estimate, opts.warmup_ms) {
            f()?;
        }
        let n = calls_for(opts, estimate, opts.rep_ms).max(opts.min_calls);
        let mut samples = Vec::with_capacity(n);
        for _ in 0..n {
            if opts.flush {
                self.flush_cache();
            }
            let t = Instant::now();
            f()?;
            samples.push(t.elapsed().as_secs_f64() * 1e3);
        }
        Stats::from_samples(&samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_form_parses_its_two_names_and_refuses_others() {
        assert_eq!(FlushForm::parse("").unwrap(), FlushForm::Memset);
        assert_eq!(FlushForm::parse(" memset ").unwrap(), FlushForm::Memset);
        assert_eq!(FlushForm::parse("kernel").unwrap(), FlushForm::Kernel);
        let e = FlushForm::parse("kernels").unwrap_err().to_string();
        assert!(
            e.contains("KERNLAB_FLUSH=kernels") && e.contains("memset"),
            "{e}"
        );
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&s, 0.5), 3.0);
        assert!((quantile(&s, 0.2) - 1.8).abs() < 1e-12);
        assert!((quantile(&s, 0.8) - 4.2).abs() < 1e-12);
        assert_eq!(quantile(&[7.0], 0.2), 7.0);
        let st = Stats::from_samples(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((st.median_ms, st.min_ms, st.calls), (3.0, 1.0, 5));
        assert_eq!(st.mean_ms, 3.0);
        assert!(Stats::from_samples(&[]).is_err());
    }

    #[test]
    fn the_flush_buffer_is_at_least_twice_l2() {
        assert_eq!(flush_bytes(60 << 20), 256 << 20);
        assert_eq!(flush_bytes(200 << 20), 400 << 20);
    }

    #[test]
    fn call_counts_follow_the_duration_budget() {
        let o = TimingOpts::default();
        assert_eq!(calls_for(&o, 1.0, 100.0), 100);
        assert_eq!(calls_for(&o, 1000.0, 100.0), 1);
        assert_eq!(calls_for(&o, 1e-9, 100.0), o.max_calls);
    }

    #[test]
    fn repeats_report_the_middle_run_and_the_spread_of_medians() {
        let st = |m: f64| Stats::from_samples(&[m, m, m]).unwrap();
        let m = Measurement::from_repeats(vec![st(3.0), st(1.0), st(2.0)]).unwrap();
        assert_eq!(m.stats.median_ms, 2.0);
        assert_eq!(m.medians_ms, vec![3.0, 1.0, 2.0]);
        assert!((m.spread - 1.0).abs() < 1e-12);
        // An even count takes the lower middle.
        let m = Measurement::from_repeats(vec![st(4.0), st(1.0), st(2.0), st(3.0)]).unwrap();
        assert_eq!(m.stats.median_ms, 2.0);
        assert!((m.spread - 1.5).abs() < 1e-12);
        let one = Measurement::from_repeats(vec![st(5.0)]).unwrap();
        assert_eq!(one.spread, 0.0);
        assert!(Measurement::from_repeats(vec![]).is_err());
        let o = TimingOpts {
            repeat: 3,
            ..TimingOpts::default()
        };
        let mut k = 0.0;
        let m = repeated(&o, &mut || {
            k += 1.0;
            Ok(st(k))
        })
        .unwrap();
        assert_eq!(m.medians_ms.len(), 3);
    }

    #[test]
    fn noise_is_a_difference_within_the_larger_spread() {
        assert!(within_noise(1.00, 0.05, 1.04, 0.0));
        assert!(within_noise(1.00, 0.0, 1.04, 0.05));
        assert!(!within_noise(1.00, 0.02, 1.10, 0.02));
        // Without repeats nothing is noise, even equal times.
        assert!(!within_noise(1.0, 0.0, 1.0, 0.0));
    }

    #[test]
    fn graph_replays_scale_to_per_call_figures() {
        let s = Stats::from_samples(&[10.0, 20.0, 30.0])
            .unwrap()
            .scaled(0.1, 10);
        assert!((s.median_ms - 2.0).abs() < 1e-12 && (s.min_ms - 1.0).abs() < 1e-12);
        assert_eq!(s.calls, 30);
    }

    #[test]
    fn cpu_timer_measures_a_sleep() {
        let opts = TimingOpts {
            warmup_ms: 1.0,
            rep_ms: 10.0,
            min_calls: 3,
            max_calls: 5,
            flush: false,
            ..TimingOpts::default()
        };
        let mut t = CpuTimer { flush: vec![0; 16] };
        let st = t
            .time(&opts, &mut || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                Ok(())
            })
            .unwrap();
        assert!(st.min_ms >= 2.0 && st.median_ms < 50.0, "{st:?}");
        assert!(st.calls >= 3 && st.calls <= 5);
    }
}
