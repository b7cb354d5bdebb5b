//! Timing with `triton.testing.do_bench` semantics, and a little further.
//!
//! GPU: run once; estimate one call's time from 5 calls (and, as do_bench does, the cycle of a
//! flush and a call); warm up for `warmup_ms`; then time `rep_ms` worth of cycles, each call
//! with its own event pair, with the L2 flushed (a write of max(2 × L2, 256 MiB), read from
//! the device) before every call, outside the events.
//! CPU: the same with a monotonic clock, the last-level cache flushed by writing a buffer
//! twice its size before every call. Both report median, p20, p80, min and the call count.
//!
//! Further: `graph` times CUDA-graph replays of N captured calls (for launch-bound work; the L2
//! is not flushed between replays, nor between the calls inside one), `rotate` cycles through N
//! input/output buffers (the caller's loop does it, see `bench::run`), and `repeat` runs the
//! whole measurement K times and reports the spread of the K medians: a difference smaller than
//! that spread is noise.

use crate::runtime::device::CudaDevice;
use crate::runtime::error::{Error, Result};
use cudarc::driver::{sys, CudaEvent, CudaSlice, PinnedHostSlice};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
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

/// Calls a settled median is taken over ([`CudaTimer::settled`]).
pub const SETTLED_CALLS: usize = 200;
/// Calls whose median is under this many ms get a settled median beside it.
pub const SETTLED_BELOW_MS: f64 = 1.0;
/// How long the settled form lets the stream stay parked once the flush before it has
/// finished, before it frees it itself: past this the call was waiting on the GPU from the
/// host (a synchronisation inside it), which the parked stream would never answer.
const SETTLED_WATCHDOG: std::time::Duration = std::time::Duration::from_millis(500);

/// A word of page-locked host memory, mapped for the device, that the stream can be parked on
/// (`cuStreamWaitValue32`, go on once the word ≥ a ticket) until the host writes the ticket.
struct Gate {
    _mem: PinnedHostSlice<u32>,
    /// The word, as the host writes it (an address, kept as an integer so that the watchdog
    /// thread may write it too).
    host: usize,
    dptr: sys::CUdeviceptr,
    ticket: u32,
}

impl Gate {
    fn new(dev: &CudaDevice) -> Result<Gate> {
        // SAFETY: the word is written (0) before any use; DEVICEMAP maps it for the device.
        let mut mem = unsafe {
            dev.ctx
                .alloc_pinned_with_flags::<u32>(1, sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }
        .map_err(|e| Error::driver("cuMemHostAlloc (the settled timing's gate word)", e))?;
        let host = mem.as_mut_ptr().map_err(|e| {
            Error::driver(
                "the gate word's address (cuEventSynchronize on its event)",
                e,
            )
        })?;
        // SAFETY: `host` points at one u32 of live page-locked memory, 4-byte aligned; like
        // every host access to the word (`release`), this one is atomic.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(host) }.store(0, Ordering::SeqCst);
        let mut dptr: sys::CUdeviceptr = 0;
        // SAFETY: `host` was allocated by cuMemHostAlloc with DEVICEMAP; flags must be 0.
        unsafe { sys::cuMemHostGetDevicePointer_v2(&mut dptr, host.cast(), 0) }
            .result()
            .map_err(|e| Error::driver("cuMemHostGetDevicePointer", e))?;
        Ok(Gate {
            _mem: mem,
            host: host as usize,
            dptr,
            ticket: 0,
        })
    }

    /// Park the stream: what is enqueued after this waits until the word reaches the ticket
    /// returned.
    fn park(&mut self, dev: &CudaDevice) -> Result<u32> {
        let ticket = self.ticket.checked_add(1).ok_or_else(|| {
            Error::Invalid("settled timing: the gate's tickets ran out (2^32 calls)".into())
        })?;
        // SAFETY: the stream is live; dptr is the device's address of the mapped word.
        unsafe {
            sys::cuStreamWaitValue32_v2(
                dev.stream.cu_stream(),
                self.dptr,
                ticket,
                sys::CUstreamWaitValue_flags::CU_STREAM_WAIT_VALUE_GEQ as u32,
            )
        }
        .result()
        .map_err(|e| Error::driver("cuStreamWaitValue32", e))?;
        self.ticket = ticket;
        Ok(ticket)
    }
}

/// Free the stream parked on the word at `host` (a [`Gate`]'s) for `ticket` and every earlier
/// one: the word is raised to at least `ticket`, never lowered, so that a late write of an
/// older ticket (the watchdog's) cannot park the stream again behind a newer one. An atomic
/// read-modify-write, as the main thread and the watchdog may both write it.
fn release(host: usize, ticket: u32) {
    // SAFETY: `host` is a live Gate's word, 4-byte aligned (cuMemHostAlloc), only ever
    // accessed through atomics on the host; the device reads it through its mapping.
    let word = unsafe { std::sync::atomic::AtomicU32::from_ptr(host as *mut u32) };
    word.fetch_max(ticket, Ordering::SeqCst);
    std::sync::atomic::fence(Ordering::SeqCst);
}

/// Ends a settled loop however it ends (an error or a panic included): stops the watchdog and
/// frees every ticket handed out, so that no path leaves the stream parked.
struct Unpark<'a> {
    done: &'a AtomicBool,
    host: usize,
    last: &'a std::sync::atomic::AtomicU32,
}

impl Drop for Unpark<'_> {
    fn drop(&mut self) {
        release(self.host, self.last.load(Ordering::SeqCst));
        self.done.store(true, Ordering::Release);
    }
}

/// The settled form parks the stream on its gate word: check that the stream does wait there,
/// and goes on once the word is written, or the form would measure nothing new. It polls with
/// a deadline (never a blocking synchronize, which a stream that stayed parked would never
/// answer), and frees the ticket whatever happens.
fn check_gate(dev: &CudaDevice, gate: &mut Gate) -> Result<()> {
    dev.sync()?;
    let held = dev
        .ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
        .map_err(|e| Error::driver("cuEventCreate", e))?;
    let ticket = gate.park(dev)?;
    let recorded = held
        .record(&dev.stream)
        .map_err(|e| Error::driver("cuEventRecord", e));
    std::thread::sleep(std::time::Duration::from_millis(2));
    let early = held.try_is_complete();
    release(gate.host, ticket);
    recorded?;
    let early = early.map_err(|e| Error::driver("cuEventQuery", e))?;
    let deadline = Instant::now() + std::time::Duration::from_secs(2);
    let went_on = loop {
        if held
            .try_is_complete()
            .map_err(|e| Error::driver("cuEventQuery", e))?
        {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    };
    if early || !went_on {
        return Err(Error::Invalid(format!(
            "settled timing: the stream {} its gate word (cuStreamWaitValue32 on mapped host \
             memory), so the form cannot hold the GPU back",
            if early {
                "did not wait on"
            } else {
                "stayed parked for 2 s after the host wrote"
            }
        )));
    }
    Ok(())
}

/// A GPU timer: holds the flush buffer so repeated measurements reuse it.
pub struct CudaTimer<'a> {
    dev: &'a CudaDevice,
    flush: CudaSlice<u8>,
    pub flush_bytes: usize,
    /// The settled form's gate, made (and checked) at its first use.
    gate: Option<Gate>,
}

impl<'a> CudaTimer<'a> {
    pub fn new(dev: &'a CudaDevice) -> Result<Self> {
        let bytes = flush_bytes(dev.props.l2_bytes);
        let flush = dev.alloc_bytes(bytes, "the L2 flush buffer")?;
        Ok(CudaTimer {
            dev,
            flush,
            flush_bytes: bytes,
            gate: None,
        })
    }

    /// Write the flush buffer once, by the driver's memset (what precedes each timed call).
    pub fn flush_l2(&mut self) -> Result<()> {
        self.dev
            .memset_pattern(&mut self.flush, 1, 0, self.flush_bytes)
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

    /// The settled form of a call's time: `calls` iterations of do_bench's (the flush, the start
    /// event, the call, the end event), each with the stream parked behind its flush on a host
    /// word (`cuStreamWaitValue32`) while the host enqueues the events and the call; once the
    /// flush has finished, the host frees the stream. The GPU then runs the events and the call
    /// as one batch, idle before them, and no host time falls between the events, whatever the
    /// host's pace. The same kernel reads up to about a µs more with every launch queued ahead
    /// than with the GPU idle before its events (docs/perf-notes.md, "timing"), and do_bench's
    /// own loop queues as far ahead as its host keeps up, so
    /// callers whose hosts run at different paces are not timed alike by it. The settled form
    /// times every caller alike. `f` must only enqueue: a call that waits on the GPU from the
    /// host could never end while the stream is parked (a watchdog frees it 0.5 s after the
    /// flush has finished, and the measurement fails saying so).
    pub fn settled(&mut self, calls: usize, f: &mut dyn FnMut() -> Result<()>) -> Result<Stats> {
        let dev = self.dev;
        if dev.launches_block() {
            return Err(Error::Invalid(
                "settled timing cannot run while every launch synchronises (launch-blocking \
                 mode): a launch would wait on the parked stream"
                    .into(),
            ));
        }
        if self.gate.is_none() {
            // Kept only once it passed its check: a gate that failed is made and checked
            // again at the next call, never used unchecked.
            let mut gate = Gate::new(dev)?;
            check_gate(dev, &mut gate)?;
            self.gate = Some(gate);
        }
        f()?;
        dev.sync()?;
        let flushed = dev
            .ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
            .map_err(|e| Error::driver("cuEventCreate", e))?;
        let events = event_pairs(dev, calls.max(1))?;
        let host = self.gate.as_ref().map(|g| g.host).unwrap_or_default();
        // The watchdog: (ticket parked, since when the flush before it finished), and whether
        // it had to free one; the last ticket handed out, freed whatever ends the loop. Only
        // the time after the flush counts: the flush itself may wait behind other work on the
        // GPU (another process, or other threads' streams), which no call of ours can cause.
        let parked = Mutex::new(None::<(u32, Option<Instant>)>);
        let (done, fired) = (AtomicBool::new(false), AtomicBool::new(false));
        let last = std::sync::atomic::AtomicU32::new(0);
        let outcome = std::thread::scope(|scope| {
            let _unpark = Unpark {
                done: &done,
                host,
                last: &last,
            };
            scope.spawn(|| {
                // cuEventQuery wants the context current on this thread too.
                let bound = dev.ctx.bind_to_thread().is_ok();
                while !done.load(Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    let mut p = parked.lock().unwrap_or_else(|e| e.into_inner());
                    match p.as_mut() {
                        Some((_, since @ None)) if !bound || flushed.is_complete() => {
                            *since = Some(Instant::now());
                        }
                        Some((ticket, Some(since))) if since.elapsed() > SETTLED_WATCHDOG => {
                            fired.store(true, Ordering::Release);
                            release(host, *ticket);
                        }
                        _ => {}
                    }
                }
            });
            let mut run = || -> Result<()> {
                for pair in &events {
                    self.flush_l2()?;
                    flushed
                        .record(&dev.stream)
                        .map_err(|e| Error::driver("cuEventRecord", e))?;
                    let gate = self.gate.as_mut().expect("made above");
                    let ticket = gate.park(dev)?;
                    last.store(ticket, Ordering::SeqCst);
                    *parked.lock().unwrap_or_else(|e| e.into_inner()) = Some((ticket, None));
                    let queued = between(dev, pair, f);
                    // The flush finished (or failed): free the stream, whatever happened.
                    let waited = flushed
                        .synchronize()
                        .map_err(|e| Error::driver("cuEventSynchronize", e));
                    release(host, ticket);
                    *parked.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    queued?;
                    waited?;
                    if fired.load(Ordering::Acquire) {
                        return Err(Error::Invalid(
                            "settled timing: the stream stayed parked over 0.5 s after its \
                             flush finished, while the call was being queued: the call waited on \
                             the GPU from the host (it synchronises, or its launch blocked), or \
                             the host stalled; the form cannot time it"
                                .into(),
                        ));
                    }
                }
                dev.sync()
            };
            run()
        });
        outcome?;
        pair_stats(&events)
    }

    fn time_calls(
        &mut self,
        opts: &TimingOpts,
        f: &mut dyn FnMut() -> Result<()>,
    ) -> Result<Stats> {
        let dev = self.dev;
        // One call (compiles, loads, allocates), then the estimate from 5 calls.
        f()?;
        dev.sync()?;
        let est = event_pairs(dev, 5)?;
        let t = Instant::now();
        for pair in &est {
            if opts.flush {
                self.flush_l2()?;
            }
            between(dev, pair, f)?;
            dev.sync()?;
        }
        // A timed call's cycle, the flush included, as do_bench's estimate includes its
        // cache clear: the timed calls fill `rep_ms` of wall time, not of kernel time.
        let cycle = t.elapsed().as_secs_f64() * 1e3 / est.len() as f64;
        let estimate = pair_stats(&est)?.median_ms;
        let warm = calls_for(opts, estimate, opts.warmup_ms);
        for _ in 0..warm {
            f()?;
        }
        let n = calls_for(opts, cycle.max(estimate), opts.rep_ms).max(opts.min_calls);
        let events = event_pairs(dev, n)?;
        for pair in &events {
            if opts.flush {
                self.flush_l2()?;
            }
            between(dev, pair, f)?;
        }
        dev.sync()?;
        pair_stats(&events)
    }
}

/// A timed call's two events.
pub(crate) type EventPair = (CudaEvent, CudaEvent);

/// `n` pairs of timing events on the device's context.
pub(crate) fn event_pairs(dev: &CudaDevice, n: usize) -> Result<Vec<EventPair>> {
    let ev = || {
        dev.ctx
            .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| Error::driver("cuEventCreate", e))
    };
    (0..n).map(|_| Ok((ev()?, ev()?))).collect()
}

/// Enqueue `f` between the pair's two events on the device's stream.
pub(crate) fn between(
    dev: &CudaDevice,
    (a, b): &EventPair,
    f: &mut dyn FnMut() -> Result<()>,
) -> Result<()> {
    a.record(&dev.stream)
        .map_err(|e| Error::driver("cuEventRecord", e))?;
    f()?;
    b.record(&dev.stream)
        .map_err(|e| Error::driver("cuEventRecord", e))
}

/// The statistics of the ms between each pair's events (all recorded and done).
pub(crate) fn pair_stats(pairs: &[EventPair]) -> Result<Stats> {
    let samples = pairs
        .iter()
        .map(|(a, b)| {
            a.elapsed_ms(b)
                .map(|t| t as f64)
                .map_err(|e| Error::driver("cuEventElapsedTime", e))
        })
        .collect::<Result<Vec<_>>>()?;
    Stats::from_samples(&samples)
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
        let mut cycles = Vec::new();
        for _ in 0..3 {
            let t0 = Instant::now();
            if opts.flush {
                self.flush_cache();
            }
            let t = Instant::now();
            f()?;
            est.push(t.elapsed().as_secs_f64() * 1e3);
            cycles.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        let estimate = Stats::from_samples(&est)?.median_ms;
        // A timed call's cycle, the flush included (do_bench's estimate includes its cache
        // clear): a call far shorter than the flush gets as many calls as fill `rep_ms` of wall
        // time (a 64×64 tensor: ~25 behind 4 ms flushes, not 10,000).
        let cycle = Stats::from_samples(&cycles)?.median_ms;
        for _ in 0..calls_for(opts, estimate, opts.warmup_ms) {
            f()?;
        }
        let n = calls_for(opts, cycle, opts.rep_ms).max(opts.min_calls);
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

    /// The settled form's gate word is only ever raised: a late release of an older ticket (the
    /// watchdog's) leaves a newer one in place, so it cannot park the stream again; the guard
    /// that ends a loop frees the last ticket handed out and stops the watchdog.
    #[test]
    fn the_gate_word_only_rises_and_the_guard_frees_the_last_ticket() {
        let mut word = Box::new(0u32);
        let host = &mut *word as *mut u32 as usize;
        release(host, 5);
        release(host, 3);
        assert_eq!(unsafe { *(host as *const u32) }, 5);
        let (done, last) = (AtomicBool::new(false), std::sync::atomic::AtomicU32::new(9));
        drop(Unpark {
            done: &done,
            host,
            last: &last,
        });
        assert_eq!(*word, 9);
        assert!(done.load(Ordering::Acquire));
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
