//! `kernlab bench` and `kernlab sweep`: at every (op, shape, dtype) point, validate each selected
//! variant against the f64 reference on fresh random inputs, then time it, and put the figures
//! against ceilings: the copy bandwidth measured in the same run, the vendor matmul rate
//! measured once per device and driver (`ceiling`). Optionally the PyTorch baselines join the
//! same report (`torch`). Tables, JSON and CSV are in `report`, sweeps and plots in `sweep` and
//! `plot`, the timers in `harness`.

mod baselines;
pub mod ceiling;
pub mod harness;
pub mod plot;
pub mod report;
mod rotation;
pub mod torch;

use crate::check::{self, check_point, fresh_seed, make_inputs, validate};
use crate::ops::{FlagValues, Op, Params, Tier, Variant};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::{shape_str, Tensor};
use baselines::{add_torch_baselines, triton_plan_of, wants_triton_plan, TritonPlans};
use ceiling::CopyCeiling;
use harness::{CpuTimer, CudaTimer, Rotate, Stats, TimingOpts};
pub use report::{BenchReport, Record, RecordTier, Status};
pub use rotation::{rotated_inputs, Rotation};
use std::path::{Path, PathBuf};

/// What to benchmark.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub ops: Vec<Op>,
    /// The shapes to measure, in order; empty: the default shape for the op and device.
    pub shapes: Vec<Vec<usize>>,
    pub dtypes: Vec<DType>,
    /// None: every variant of the op on the device (the reference excluded).
    pub variants: Option<Vec<String>>,
    /// The op flags given (`--gelu erf`): each op takes its parameters from them.
    pub flags: FlagValues,
    /// None: a fresh seed from the OS, recorded in the report.
    pub seed: Option<u64>,
    pub timing: TimingOpts,
    /// Rows stride (elements) for strided-input runs (softmax).
    pub row_stride: Option<usize>,
    /// Also run the PyTorch baselines (CUDA only) and merge them into the report.
    pub torch: Option<torch::TorchConfig>,
    /// Where measured matmul ceilings are kept per device and driver (None: measure each run).
    pub ceiling_cache: Option<PathBuf>,
    /// Measure the matmul ceilings again even when the cache has them.
    pub fresh_ceilings: bool,
    /// `kernlab sweep`'s swept op flag (`--layers 1..64:x2`): each value a point of its own,
    /// for the ops that take the flag.
    pub flag_sweep: Option<(&'static str, Vec<usize>)>,
    /// Validate each variant twice (the second call on a fresh NaN-poisoned output, catching
    /// state a call leaves behind) and time nothing: no ceilings, no timed calls, no baselines.
    pub check_only: bool,
}

impl BenchConfig {
    /// A configuration with the default timing and every variant, for these ops and shapes; the
    /// matmul ceilings from kernlab's cache (measured once per device and driver).
    pub fn new(ops: Vec<Op>, shapes: Vec<Vec<usize>>, dtypes: Vec<DType>) -> BenchConfig {
        BenchConfig {
            ops,
            shapes,
            dtypes,
            variants: None,
            flags: FlagValues::default(),
            seed: None,
            timing: TimingOpts::default(),
            row_stride: None,
            torch: None,
            ceiling_cache: ceiling::cache_path(),
            fresh_ceilings: false,
            flag_sweep: None,
            check_only: false,
        }
    }

    /// An op's parameters from the flags given (its own; others' are not its concern).
    pub fn params(&self, op: Op) -> Result<Params> {
        let names: Vec<&str> = op.flags().iter().map(|f| f.name).collect();
        op.params(&self.flags.only(&names))
    }

    /// Every (op, shape, dtype) point this configuration measures, in order, with the index
    /// of the op and the shape (they make each point's seed), and the op's parameters.
    pub fn points(&self, device: DeviceKind) -> Result<Vec<Point>> {
        let mut out = Vec::new();
        for (oi, &op) in self.ops.iter().enumerate() {
            // One set of parameters, or one a value of the swept flag.
            let names: Vec<&str> = op.flags().iter().map(|f| f.name).collect();
            let param_sets: Vec<Params> = match &self.flag_sweep {
                Some((name, values)) if names.contains(name) => values
                    .iter()
                    .map(|v| {
                        let mut flags = self.flags.only(&names);
                        flags.set(name, v.to_string());
                        op.params(&flags)
                    })
                    .collect::<Result<_>>()?,
                _ => vec![self.params(op)?],
            };
            // An op takes the shapes of its grammar (GEMMs M×N×K); with several ops, other
            // shapes are not theirs (and an op named alone with the wrong shapes gets its
            // clear error).
            let fits: Vec<Vec<usize>> = self
                .shapes
                .iter()
                .filter(|s| op.grammar().fits(s))
                .cloned()
                .collect();
            let shapes = if self.shapes.is_empty() {
                vec![op.default_shape(device)]
            } else if fits.is_empty() && self.ops.len() > 1 {
                continue;
            } else if fits.is_empty() {
                self.shapes.clone()
            } else {
                fits
            };
            for params in &param_sets {
                for (si, shape) in shapes.iter().enumerate() {
                    for &dtype in &self.dtypes {
                        out.push(Point {
                            op,
                            shape: shape.clone(),
                            dtype,
                            params: params.clone(),
                            op_index: oi,
                            shape_index: si,
                        });
                    }
                }
            }
        }
        Ok(out)
    }
}

/// One measured point: an op on one shape and dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub op: Op,
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub params: Params,
    pub op_index: usize,
    pub shape_index: usize,
}

impl Point {
    /// The point's input seed: the run's seed, offset by op, shape and dtype (the first shape
    /// of a run keeps the seeds of a one-shape run).
    pub fn seed(&self, run_seed: u64) -> u64 {
        run_seed.wrapping_add(
            ((self.op_index as u64) << 32) | ((self.shape_index as u64) << 8) | self.dtype as u64,
        )
    }
}

fn select_variants(
    op: Op,
    device: DeviceKind,
    names: &Option<Vec<String>>,
) -> Result<Vec<&'static Variant>> {
    match names {
        None => Ok(crate::ops::variants_for(op, device)
            .filter(|v| v.tier != Tier::Reference)
            .collect()),
        Some(names) => names
            .iter()
            .map(|n| crate::ops::find(op, n, device))
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

    /// The settled median of `f` (`CudaTimer::settled`), ms; None on the CPU.
    fn settled(&mut self, f: &mut dyn FnMut() -> Result<()>) -> Result<Option<f64>> {
        match self {
            Timer::Cpu(_) => Ok(None),
            Timer::Cuda(t) => Ok(Some(t.settled(harness::SETTLED_CALLS, f)?.median_ms)),
        }
    }

    /// The vendor matmul rates on this timer's device.
    fn matmul(&mut self, device: &Device) -> Result<Vec<ceiling::MatmulCeiling>> {
        match (self, device) {
            (Timer::Cpu(t), _) => ceiling::cpu_matmul(t),
            (Timer::Cuda(t), Device::Cuda(d)) => ceiling::cuda_matmul(d, t),
            _ => unreachable!("the timer matches the device"),
        }
    }

    /// One line saying how times were taken, for the table's header.
    fn describe(&self, o: &TimingOpts) -> String {
        let mut s = format!(
            "do_bench timing: warm-up {} ms, then {} ms of {}, each call with its own ",
            report::fmt_sig(o.warmup_ms),
            report::fmt_sig(o.rep_ms),
            if o.flush {
                "flush-and-call cycles"
            } else {
                "calls"
            }
        );
        s += match self {
            Timer::Cpu(_) => "monotonic-clock reading",
            Timer::Cuda(_) => "event pair",
        };
        match (self, o.graph) {
            (Timer::Cuda(_), Some(n)) => {
                s = format!(
                    "CUDA-graph replays of {n} calls (time per call = replay / {n}), warm-up {} ms, \
                     then {} ms of replays; the L2 is NOT flushed between replays",
                    report::fmt_sig(o.warmup_ms),
                    report::fmt_sig(o.rep_ms)
                );
            }
            (Timer::Cuda(t), None) if o.flush => {
                s += &format!(
                    "; L2 flushed before every call (a {} MiB write)",
                    t.flush_bytes >> 20
                )
            }
            (Timer::Cpu(t), _) if o.flush => {
                s += &format!(
                    "; cache flushed before every call (a {} MiB write)",
                    t.flush_bytes() >> 20
                )
            }
            _ => s += "; no cache flush",
        }
        match o.rotate {
            Rotate::Copies(n) if n > 1 => {
                s += &format!("; inputs and outputs rotated among {n} buffers")
            }
            Rotate::Copies(_) => {}
            Rotate::Auto => {
                s += &format!(
                    "; inputs and outputs rotated among as many copies as make what the calls \
                     touch (inputs and output) {}× the {} (at most {}; none where one call's \
                     buffers are that large)",
                    Rotate::AUTO_CACHE_MULTIPLE,
                    match self {
                        Timer::Cpu(_) => "last-level cache",
                        Timer::Cuda(_) => "L2",
                    },
                    Rotate::AUTO_MAX_COPIES
                )
            }
        }
        if o.repeat > 1 {
            s += &format!(
                "; whole measurement repeated {}×, ± is the spread of the medians and ~ marks a \
                 difference within it (noise)",
                o.repeat
            );
        }
        s
    }
}

/// What a run tells its caller while it works (the CLI prints notes on stderr, drives a
/// progress bar with the steps, and rewrites `--csv` with each point's records).
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// What is being done now.
    Note(&'a str),
    /// `done` of `total` points are finished.
    Step { done: usize, total: usize },
    /// A point is finished: the report so far (kernlab's records of every finished point; the
    /// PyTorch columns, which run after the last point, not yet), for a caller that keeps what
    /// a run cut short had measured.
    Point(&'a BenchReport),
}

pub type Progress<'a> = &'a mut dyn FnMut(Event);

/// Validate then time every selected variant, at every point of `cfg` (op × shape × dtype).
/// `bench` and `sweep` both run through here.
pub fn run(cfg: &BenchConfig, device: &Device, progress: Progress) -> Result<BenchReport> {
    let kind = device.kind();
    if cfg.timing.graph.is_some() && cfg.timing.rotate == Rotate::Auto {
        return Err(Error::Invalid(
            "--rotate auto needs call-by-call timing: a CUDA graph's replays reuse the buffers of \
             the N calls it captured, with no flush between them (give --rotate N with --graph N)"
                .into(),
        ));
    }
    if cfg.timing.graph.is_some() && kind != DeviceKind::Cuda {
        return Err(Error::Invalid(
            "CUDA-graph timing (--graph) needs a CUDA device".into(),
        ));
    }
    // Unknown variant names are an error before any work starts.
    for &op in &cfg.ops {
        select_variants(op, kind, &cfg.variants)?;
    }
    // So are a point's shape, row stride and host memory.
    let points = cfg.points(kind)?;
    for p in &points {
        check_point(p.op, &p.shape, p.dtype, cfg.row_stride, &p.params)?;
    }
    let mut timer = match device {
        Device::Cpu => Timer::Cpu(CpuTimer::new()),
        Device::Cuda(d) => Timer::Cuda(CudaTimer::new(d)?),
    };
    let seed = cfg.seed.unwrap_or_else(fresh_seed);
    let mut report = if cfg.check_only {
        if cfg.torch.is_some() {
            return Err(Error::Invalid(
                "--check-only times nothing, so it takes no PyTorch columns (--torch)".into(),
            ));
        }
        let mut r = BenchReport::new(device, None, seed, &cfg.timing);
        r.timing_note = "nothing timed (--check-only)".into();
        r
    } else {
        progress(Event::Note("measuring the copy ceiling"));
        // Ceilings are timed call by call, whatever --graph, --rotate or --repeat say.
        let copy_opts = TimingOpts {
            graph: None,
            rotate: Rotate::Copies(1),
            repeat: 1,
            ..cfg.timing
        };
        let copy: CopyCeiling = match (&mut timer, device) {
            (Timer::Cpu(t), _) => ceiling::cpu_copy(t, &copy_opts)?,
            (Timer::Cuda(t), Device::Cuda(d)) => ceiling::cuda_copy(d, t, &copy_opts)?,
            _ => unreachable!("the timer matches the device"),
        };
        progress(Event::Note(
            "the matmul ceiling (measured once per device and driver)",
        ));
        let (ceilings, provenance) = ceiling::cached_or_measured(
            device,
            Some(&copy),
            &mut || Ok(copy.clone()),
            &mut || timer.matmul(device),
            cfg.ceiling_cache.as_deref(),
            cfg.fresh_ceilings,
        )?;
        let mut r = BenchReport::new(device, Some(copy), seed, &cfg.timing);
        r.timing_note = timer.describe(&cfg.timing);
        r.set_matmul(&ceilings, provenance);
        r
    };
    let total = points.len();
    progress(Event::Step { done: 0, total });
    // The Triton variants' launches, for the baselines' `triton` column.
    let mut tritons = TritonPlans::default();
    for (i, point) in points.iter().enumerate() {
        // Ctrl-C: keep what was measured, skip the rest (and the baselines).
        if crate::runtime::interrupt::requested() {
            report.interrupted = Some(report::Interrupted {
                points_done: i,
                points_planned: total,
            });
            break;
        }
        let records = measure_point(
            cfg,
            device,
            &mut timer,
            point,
            seed,
            report.copy_gbps(),
            &mut tritons,
            progress,
        )?;
        report.records.extend(records);
        // The speedups against manual (and the vendor's GEMM) are filled in for the points so
        // far, as the end of the run fills them for all.
        report.fill_speedups();
        progress(Event::Point(&report));
        progress(Event::Step { done: i + 1, total });
    }
    if let (Some(t), None) = (&cfg.torch, report.interrupted) {
        add_torch_baselines(
            cfg,
            t,
            device,
            &points,
            seed,
            &tritons,
            &mut report,
            progress,
        )?;
    }
    report.fill_speedups();
    Ok(report)
}

/// A device's ceilings for `kernlab doctor`: from the cache at `cache` unless `fresh`, else
/// measured now (copy and matmul, with do_bench's default timing) and kept there.
pub fn device_ceilings(
    device: &Device,
    cache: Option<&Path>,
    fresh: bool,
) -> Result<(ceiling::Ceilings, ceiling::Provenance)> {
    if let (false, Some(p)) = (fresh, cache) {
        if let Some(c) = ceiling::load(p, &ceiling::device_key(device))
            .filter(|c| ceiling::stale(c, None, std::time::SystemTime::now()).is_none())
        {
            return Ok((c, ceiling::Provenance::Cached));
        }
    }
    let mut timer = match device {
        Device::Cpu => Timer::Cpu(CpuTimer::new()),
        Device::Cuda(d) => Timer::Cuda(CudaTimer::new(d)?),
    };
    let opts = ceiling::ceiling_timing(true);
    let copy = match (&mut timer, device) {
        (Timer::Cpu(t), _) => ceiling::cpu_copy(t, &opts)?,
        (Timer::Cuda(t), Device::Cuda(d)) => ceiling::cuda_copy(d, t, &opts)?,
        _ => unreachable!("the timer matches the device"),
    };
    ceiling::cached_or_measured(
        device,
        None,
        &mut || Ok(copy.clone()),
        &mut || timer.matmul(device),
        cache,
        true,
    )
}

/// One point: make the inputs and the f64 reference, then validate and time each variant.
#[allow(clippy::too_many_arguments)]
fn measure_point(
    cfg: &BenchConfig,
    device: &Device,
    timer: &mut Timer,
    point: &Point,
    run_seed: u64,
    copy_gbps: f64,
    tritons: &mut TritonPlans,
    progress: Progress,
) -> Result<Vec<Record>> {
    let (op, dtype, shape, params) = (point.op, point.dtype, &point.shape, &point.params);
    let variants = select_variants(op, device.kind(), &cfg.variants)?;
    let seed = point.seed(run_seed);
    progress(Event::Note(&format!(
        "{op} {dtype} {}: making inputs and the f64 reference",
        shape_str(shape)
    )));
    let host = make_inputs(op, shape, dtype, seed, cfg.row_stride, params)?;
    // The reference's f64 values (of the inputs rounded to the dtype) are the oracle.
    let reference = check::make_reference(op, shape, &host, params, seed)?;
    // `--rotate N`: N copies of the inputs and N outputs, cycled through call by call.
    let y_shape = op.out_shape(shape, params);
    let inputs = match rotated_inputs(cfg.timing.rotate, &host, &y_shape, dtype, device) {
        Ok(inputs) => inputs,
        // A point that does not fit is that point's error: the next point still runs.
        Err(e) if e.is_out_of_memory() => {
            return Ok(variants
                .iter()
                .map(|v| {
                    let mut rec = Record::new(op, v, device, dtype, shape, params, seed);
                    rec.bytes = op.min_bytes(shape, dtype, params);
                    rec.flops = op.flops(shape, params);
                    rec.status = Status::Error;
                    rec.note = Some(format!("the point does not fit: {e}"));
                    rec
                })
                .collect());
        }
        Err(e) => return Err(e),
    };
    let n_buf = inputs.len();
    drop(host);
    // The first copy: validation's input.
    let x0: Vec<&Tensor> = inputs[0].iter().collect();
    let mut records = Vec::new();
    for v in &variants {
        let mut rec = Record::new(op, v, device, dtype, shape, params, seed);
        rec.bytes = op.min_bytes(shape, dtype, params);
        rec.flops = op.flops(shape, params);
        if !v.dtypes.contains(&dtype) {
            rec.status = Status::Unsupported;
            rec.note = Some(format!("dtype {dtype} not supported"));
            records.push(rec);
            continue;
        }
        let what = format!("{} {dtype} {}", v.id(), shape_str(shape));
        // Nsight Systems shows each variant's validation and timing under its name.
        let _range = crate::runtime::nvtx::range(&what);
        progress(Event::Note(&format!("{what}: validating")));
        // A model's peak device memory (the pool's high-water mark over the validation call:
        // its inputs and output, with --rotate's copies, and the variant's temporaries). A
        // driver without memory pools leaves it unknown.
        let pool = device
            .cuda()
            .filter(|_| op.shows_peak_memory())
            .filter(|d| d.sync().is_ok() && d.reset_peak_memory().is_ok());
        let validated = validate(v, params, &x0, &reference);
        if let (Some(d), Ok(_)) = (pool, &validated) {
            rec.peak_mem_bytes = d.peak_memory().ok();
        }
        let (check, y) = match validated {
            Ok(r) => r,
            Err(
                e @ (Error::UnsupportedShape { .. }
                | Error::NotContiguous { .. }
                | Error::Unavailable { .. }),
            ) => {
                rec.status = Status::Unsupported;
                rec.note = Some(e.to_string());
                records.push(rec);
                continue;
            }
            // The context is lost: nothing after this can run, so the run stops here, naming
            // the variant (the finished points are kept by `--csv`).
            Err(e) if e.is_device_fault() => return Err(e),
            Err(e) => {
                rec.status = Status::Error;
                rec.note = Some(e.to_string());
                records.push(rec);
                continue;
            }
        };
        rec.max_rel_err = Some(check.max_rel_err);
        rec.rel_l2 = Some(check.rel_l2);
        rec.validated = check.passed;
        if !check.passed {
            rec.status = Status::Failed;
            rec.note = Some(check.describe());
            records.push(rec);
            continue;
        }
        rec.picked = v.picks.map(|pick| pick(params, &x0));
        if reference.rows.is_some() {
            rec.note = Some(format!(
                "validated on {}",
                reference.describe(y_shape.iter().product())
            ));
        }
        if cfg.check_only {
            // A second call, on a fresh poisoned output: a kernel that leaves state behind
            // (a counter, a flag, a cached plan) fails here.
            progress(Event::Note(&format!("{what}: validating again")));
            match validate(v, params, &x0, &reference) {
                Ok((again, _)) if again.passed => {}
                Ok((again, _)) => {
                    rec.status = Status::Failed;
                    rec.note = Some(format!("the second call: {}", again.describe()));
                }
                Err(e) if e.is_device_fault() => return Err(e),
                Err(e) => {
                    rec.status = Status::Error;
                    rec.note = Some(format!("the second call: {e}"));
                }
            }
            records.push(rec);
            continue;
        }
        progress(Event::Note(&format!("{what}: timing")));
        let mut y = y;
        if v.tier == Tier::Triton && wants_triton_plan(cfg, device, op, params) {
            // One more call, its Triton launch noted, for the baselines' `triton` column.
            match triton_plan_of(params, v, &x0, &mut y) {
                Ok(Ok(launch)) => tritons.0.push((
                    op,
                    dtype,
                    torch::TritonPlan {
                        shape: torch::script_dims(op, shape),
                        launch,
                    },
                )),
                Ok(Err(why)) => rec.add_note(format!("no launch for PyTorch's process: {why}")),
                Err(e) => rec.add_note(format!("its launch for PyTorch's process failed: {e}")),
            }
        }
        let mut rot = Rotation::new(&inputs, y, &y_shape, dtype, device)?;
        let mut run = |x: &[&Tensor], y: &mut Tensor| v.run(params, x, y);
        if let Err(e) = rot.warm(&mut run) {
            if e.is_device_fault() {
                return Err(e.during(v.id()));
            }
            rec.status = Status::Error;
            rec.note = Some(format!("a call on a rotated copy failed: {e}"));
            records.push(rec);
            continue;
        }
        let mut call = || rot.call(&mut run);
        let timing = &cfg.timing;
        match harness::repeated(timing, &mut || timer.time(timing, &mut call)) {
            Ok(m) => {
                rec.set_measurement(&m, copy_gbps);
                rec.rotate_copies = (n_buf > 1).then_some(n_buf);
                // A µs-sized call's time in the settled form too (GPU, flushed call by call):
                // what the verdict against PyTorch judges kernels by.
                let small = m.stats.median_ms < harness::SETTLED_BELOW_MS;
                if small && timing.flush && timing.graph.is_none() {
                    match timer.settled(&mut call) {
                        Ok(t) => rec.settled_ms = t,
                        Err(e) => rec.add_note(format!("settled timing failed: {e}")),
                    }
                }
            }
            Err(e) if e.is_device_fault() => return Err(e.during(v.id())),
            Err(e) => {
                rec.status = Status::Error;
                rec.note = Some(format!("timing failed: {e}"));
            }
        }
        records.push(rec);
    }
    Ok(records)
}
