//! v9's row timeline from the kernel's own clock: where a wide row's time goes between its
//! CTAs' loads, the exchange and the writes. An experiment's tool. The kernels carry the
//! stamps only when built with `KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1` (kernels/softmax.cu, above
//! `softmax_v9_gridsync`); `examples/v9_trace.rs` launches v9 that way, reads the stamps back
//! and prints [`Summary`].
//!
//! Thread 0 of each CTA stamps `%globaltimer` (ns, one clock for the whole GPU) five times a
//! row: 0 at the loop's top, 1 once the ping-pong wait is over (its loads go out), 2 once its
//! part is reduced (after a block barrier: every load of the CTA has landed), 3 once the
//! exchange is done, 4 once its own stores are issued.

use crate::device::CudaDevice;
use crate::dtype::DType;
use crate::error::{Error, Result};

/// Stamps a CTA and row (`KL_V9_STAMPS`).
pub const STAMPS: usize = 5;
/// Iterations (rows a group walks) and CTAs the kernel keeps stamps for
/// (`KL_V9_TRACE_ITERS`, `KL_V9_TRACE_CTAS`).
pub const ITERS: usize = 64;
pub const CTAS: usize = 1024;

/// What a trace tool (`examples/v9_trace.rs`, `examples/v11_trace.rs`) runs on: its
/// arguments `ROWS COLS [DTYPE] [CALLS]`, the GPU, and an input on which `variant` was
/// checked against the f64 reference (its output NaN-poisoned first).
pub struct TraceRun {
    pub rows: usize,
    pub cols: usize,
    pub dtype: DType,
    pub calls: usize,
    pub cuda: std::sync::Arc<CudaDevice>,
    pub p: crate::Params,
    pub x: crate::Tensor,
    pub y: crate::Tensor,
}

/// [`TraceRun`] from the tool's arguments: `usage` is its usage line, `clear` its trace's
/// clear (called once first, so a build without the stamps fails at once, saying what to
/// set), `variant` the version it traces.
pub fn trace_run(
    args: &[String],
    usage: &str,
    variant: &str,
    clear: fn(&CudaDevice, DType) -> Result<()>,
) -> Result<TraceRun> {
    if args.len() < 2 {
        return Err(Error::Invalid(format!("usage: {usage}")));
    }
    let num = |i: usize, what: &str, default: usize| -> Result<usize> {
        args.get(i).map_or(Ok(default), |s| {
            s.parse()
                .map_err(|e| Error::Invalid(format!("{what} {s:?}: {e}")))
        })
    };
    let (rows, cols, calls) = (num(0, "ROWS", 0)?, num(1, "COLS", 0)?, num(3, "CALLS", 3)?);
    if rows == 0 || cols == 0 {
        return Err(Error::Invalid("ROWS and COLS must be at least 1".into()));
    }
    let dtype: DType = args
        .get(2)
        .map_or(Ok(DType::F32), |s| s.parse())
        .map_err(Error::Invalid)?;
    let (dev, line) = crate::Device::open(crate::DeviceSpec::Auto)?;
    eprintln!("{line}");
    let Some(cuda) = dev.cuda().cloned() else {
        return Err(Error::Invalid(format!(
            "tracing {variant} runs a CUDA kernel and needs a GPU"
        )));
    };
    clear(&cuda, dtype)?;
    let p = crate::Params::default();
    let init = crate::Init::Normal {
        mean: 0.0,
        std: 2.0,
    };
    let x = crate::Tensor::random(&[rows, cols], dtype, init, 11, None, &dev)?;
    let v = crate::registry::find(crate::Op::Softmax, variant, crate::device::DeviceKind::Cuda)?;
    let reference = crate::ops::softmax::reference(&x.to_f64_vec()?, cols, &p);
    let (check, y) = crate::bench::validate_variant(v, &p, &x, &reference)?;
    if !check.passed {
        return Err(Error::Invalid(format!(
            "{variant} {dtype} {rows}×{cols}: {}",
            check.describe()
        )));
    }
    eprintln!(
        "{variant} {dtype} {rows}×{cols}: valid (max rel err {:.1e})",
        check.max_rel_err
    );
    Ok(TraceRun {
        rows,
        cols,
        dtype,
        calls,
        cuda,
        p,
        x,
        y,
    })
}

/// The traced launch's shape, as its CTA 0 wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub grid: usize,
    /// CTAs a row.
    pub g: usize,
    pub pingpong: bool,
    /// The smpair form (ping-pong with SM-paired places; CTA indices here are places).
    pub smpair: bool,
    pub rows: usize,
}

impl Meta {
    pub fn groups(&self) -> usize {
        self.grid / self.g.max(1)
    }
}

fn trace_globals(
    dev: &CudaDevice,
    dt: DType,
) -> Result<std::sync::Arc<cudarc::driver::CudaModule>> {
    let (module, _) = dev.module(
        &crate::kernels::SOFTMAX,
        &format!("softmax_v9_gridsync_{dt}"),
    )?;
    Ok(module)
}

fn missing(e: cudarc::driver::DriverError) -> Error {
    missing_macro(e, "v9", "KL_V9_TRACE")
}

fn missing_macro(e: cudarc::driver::DriverError, what: &str, mac: &str) -> Error {
    Error::Invalid(format!(
        "no {what} trace in the loaded softmax module ({e}): the kernels were built without \
         {mac}; run with KERNLAB_NVRTC_DEFINES={mac}=1"
    ))
}

/// Zero the stamps and the shape before a traced launch.
pub fn clear(dev: &CudaDevice, dt: DType) -> Result<()> {
    clear_globals(
        dev,
        dt,
        &["kl_v9_trace", "kl_v9_trace_meta", "kl_v9_smid"],
        missing,
    )
}

fn clear_globals(
    dev: &CudaDevice,
    dt: DType,
    names: &[&str],
    miss: fn(cudarc::driver::DriverError) -> Error,
) -> Result<()> {
    let module = trace_globals(dev, dt)?;
    for &name in names {
        let mut g = module.get_global(name, &dev.stream).map_err(miss)?;
        dev.stream
            .memset_zeros(&mut g)
            .map_err(|e| Error::driver("cuMemsetD8Async (v9 trace)", e))?;
    }
    dev.sync()
}

/// `n` 64-bit words of the trace global `name`, checked against the build's size.
fn read_words(dev: &CudaDevice, dt: DType, name: &str, n: usize) -> Result<Vec<u64>> {
    read_global(dev, dt, name, n, missing)
}

/// `n` 64-bit words of the softmax module's global `name` (`miss` explains its absence).
fn read_global(
    dev: &CudaDevice,
    dt: DType,
    name: &str,
    n: usize,
    miss: fn(cudarc::driver::DriverError) -> Error,
) -> Result<Vec<u64>> {
    let module = trace_globals(dev, dt)?;
    let g = module.get_global(name, &dev.stream).map_err(miss)?;
    let mut bytes = vec![0u8; n * 8];
    if g.len() != bytes.len() {
        return Err(Error::Invalid(format!(
            "{name} holds {} bytes, this build expects {}: kernels/softmax.cu and \
             src/ops/softmax_trace.rs disagree",
            g.len(),
            bytes.len()
        )));
    }
    dev.stream
        .memcpy_dtoh(&g, &mut bytes)
        .map_err(|e| Error::driver("cuMemcpyDtoHAsync (v9 trace)", e))?;
    dev.sync()?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect())
}

/// Each CTA's SM (`%smid`) in the last traced launch, for the first [`CTAS`] CTAs; `None`
/// for a CTA that did not run.
pub fn sm_ids(dev: &CudaDevice, dt: DType) -> Result<Vec<Option<u32>>> {
    Ok(read_words(dev, dt, "kl_v9_smid", CTAS)?
        .into_iter()
        .map(|v| v.checked_sub(1).map(|sm| sm as u32))
        .collect())
}

/// The shape and the stamps of the last traced launch (after it has finished): stamp k of CTA
/// b in iteration i at `(i · CTAS + b) · STAMPS + k`, 0 where none was written.
pub fn read(dev: &CudaDevice, dt: DType) -> Result<(Meta, Vec<u64>)> {
    let get = |name: &str, n: usize| read_words(dev, dt, name, n);
    let m = get("kl_v9_trace_meta", 4)?;
    let meta = Meta {
        grid: m[0] as usize,
        g: m[1] as usize,
        pingpong: m[2] != 0,
        smpair: m[2] == 2,
        rows: m[3] as usize,
    };
    if meta.grid == 0 || meta.g == 0 {
        return Err(Error::Invalid(
            "the v9 trace is empty: no traced v9 launch ran since it was cleared".into(),
        ));
    }
    Ok((meta, get("kl_v9_trace", ITERS * CTAS * STAMPS)?))
}

/// One row's timeline, ns: means over its CTAs where a figure is per CTA.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowTimes {
    /// Loop top to loads out (the ping-pong wait).
    pub wait_turn: f64,
    /// Loads out to the part reduced.
    pub load: f64,
    /// The last CTA's reduce minus the first's.
    pub skew: f64,
    /// The last CTA's loads out minus the first's: how far apart the row's CTAs start (the
    /// ping-pong wait, the previous row's stores). The skew is at most this plus `load_spread`.
    pub start_skew: f64,
    /// The slowest CTA's loads-out-to-reduced minus the fastest's: how unevenly the memory
    /// serves the row's CTAs.
    pub load_spread: f64,
    /// The first CTA done with the exchange minus the last CTA's reduce: what the exchange
    /// costs once every part is in (publish, visibility, poll, barrier).
    pub exchange: f64,
    /// Part reduced to exchange done: a CTA's wait for its peers and the exchange.
    pub idle: f64,
    /// Exchange done to thread 0's stores issued.
    pub store: f64,
    /// Loop top to stores issued.
    pub total: f64,
}

/// The traced rows whose every CTA left all its stamps (iterations and CTAs past the kernel's
/// limits, or never reached, are skipped): each row's CTAs and their stamps, in CTA order.
fn complete_rows<'a>(
    meta: &'a Meta,
    stamps: &'a [u64],
) -> impl Iterator<Item = (std::ops::Range<usize>, Vec<[u64; STAMPS]>)> + 'a {
    (0..ITERS).flat_map(move |i| {
        (0..meta.groups()).filter_map(move |g| {
            let ctas = g * meta.g..(g + 1) * meta.g;
            if ctas.end > CTAS {
                return None;
            }
            let all: Option<Vec<[u64; STAMPS]>> = ctas
                .clone()
                .map(|b| {
                    let at = (i * CTAS + b) * STAMPS;
                    let row: [u64; STAMPS] = stamps.get(at..at + STAMPS)?.try_into().ok()?;
                    row.iter().all(|&t| t != 0).then_some(row)
                })
                .collect();
            Some((ctas, all?))
        })
    })
}

/// The rows whose every CTA left all its stamps, timed.
pub fn rows(meta: &Meta, stamps: &[u64]) -> Vec<RowTimes> {
    complete_rows(meta, stamps)
        .map(|(_, row)| {
            let s: Vec<[f64; STAMPS]> = row.iter().map(|c| c.map(|t| t as f64)).collect();
            let n = s.len() as f64;
            let mean = |f: &dyn Fn(&[f64; STAMPS]) -> f64| s.iter().map(f).sum::<f64>() / n;
            let max = |k: usize| s.iter().map(|c| c[k]).fold(f64::MIN, f64::max);
            let min = |k: usize| s.iter().map(|c| c[k]).fold(f64::MAX, f64::min);
            let spread = |f: &dyn Fn(&[f64; STAMPS]) -> f64| {
                let (lo, hi) = s
                    .iter()
                    .map(f)
                    .fold((f64::MAX, f64::MIN), |(lo, hi), d| (lo.min(d), hi.max(d)));
                hi - lo
            };
            RowTimes {
                wait_turn: mean(&|c| c[1] - c[0]),
                load: mean(&|c| c[2] - c[1]),
                skew: max(2) - min(2),
                start_skew: max(1) - min(1),
                load_spread: spread(&|c| c[2] - c[1]),
                exchange: min(3) - max(2),
                idle: mean(&|c| c[3] - c[2]),
                store: mean(&|c| c[4] - c[3]),
                total: mean(&|c| c[4] - c[0]),
            }
        })
        .collect()
}

/// Each CTA's median lateness, ns: over the traced rows it took part in, how long after its
/// row's first CTA it had its part reduced (NaN for a CTA with no complete row). If the same
/// CTAs are late row after row (their SM, their place in the grid), the medians spread as
/// widely as a row's skew; if the order is new each row, they bunch near the middle.
pub fn lateness(meta: &Meta, stamps: &[u64]) -> Vec<f64> {
    per_cta(meta, stamps, |c, row| {
        (c[2] - row.iter().map(|c| c[2]).min().unwrap_or(0)) as f64
    })
}

/// Each CTA's median, over the traced rows it took part in, of `f(its stamps, its row's
/// stamps)` (NaN for a CTA with no complete row): e.g. its load time, `c[2] − c[1]`.
pub fn per_cta(
    meta: &Meta,
    stamps: &[u64],
    f: impl Fn(&[u64; STAMPS], &[[u64; STAMPS]]) -> f64,
) -> Vec<f64> {
    let mut v: Vec<Vec<f64>> = vec![Vec::new(); meta.grid.min(CTAS)];
    for (ctas, row) in complete_rows(meta, stamps) {
        for (b, c) in ctas.zip(&row) {
            v[b].push(f(c, &row));
        }
    }
    v.into_iter().map(median).collect()
}

/// One SM's CTAs and their lateness ([`lateness`]), ns.
#[derive(Debug, Clone, PartialEq)]
pub struct SmLate {
    pub sm: u32,
    /// (CTA, its median lateness), in CTA order.
    pub ctas: Vec<(usize, f64)>,
    pub mean: f64,
}

/// The CTAs' lateness gathered by the SM they ran on (`sm_ids`), latest SM first; CTAs with
/// no SM or no lateness are left out.
pub fn lateness_by_sm(late: &[f64], sms: &[Option<u32>]) -> Vec<SmLate> {
    let mut by: std::collections::BTreeMap<u32, Vec<(usize, f64)>> = Default::default();
    for (b, (&l, sm)) in late.iter().zip(sms).enumerate() {
        if let (Some(sm), true) = (sm, l.is_finite()) {
            by.entry(*sm).or_default().push((b, l));
        }
    }
    let mut out: Vec<SmLate> = by
        .into_iter()
        .map(|(sm, ctas)| {
            let mean = ctas.iter().map(|c| c.1).sum::<f64>() / ctas.len() as f64;
            SmLate { sm, ctas, mean }
        })
        .collect();
    out.sort_by(|a, b| b.mean.total_cmp(&a.mean));
    out
}

/// Over the SMs that ran exactly two CTAs, the intraclass correlation of the two CTAs'
/// lateness (each pair entered both ways, as a pair has no order): near 1 when a slow SM
/// makes both its CTAs late, near 0 when lateness is a CTA's own. NaN with fewer than three
/// such SMs or no spread.
pub fn sm_pair_correlation(by_sm: &[SmLate]) -> f64 {
    let two: Vec<(f64, f64)> = by_sm
        .iter()
        .filter(|s| s.ctas.len() == 2)
        .map(|s| (s.ctas[0].1, s.ctas[1].1))
        .collect();
    intraclass(&two)
}

/// The intraclass correlation of SM s's mean lateness with SM `link(s)`'s, over the SMs whose
/// link is another SM present in `by_sm` (each pair once): do SMs that share something (SM
/// indices 2k and 2k + 1, which may share a TPC: `link = s ^ 1`) run late together? Compared
/// with a link that shares nothing known (`s ^ 2`, say), it tells a shared part from chance.
/// NaN with fewer than three pairs or no spread.
pub fn sm_link_correlation(by_sm: &[SmLate], link: impl Fn(u32) -> u32) -> f64 {
    let mean: std::collections::BTreeMap<u32, f64> = by_sm.iter().map(|s| (s.sm, s.mean)).collect();
    let pairs: Vec<(f64, f64)> = mean
        .iter()
        .filter_map(|(&sm, &m)| {
            let o = link(sm);
            (o > sm).then(|| mean.get(&o).map(|&n| (m, n))).flatten()
        })
        .collect();
    intraclass(&pairs)
}

/// The intraclass correlation of unordered pairs (each entered both ways); NaN with fewer than
/// three or no spread.
fn intraclass(two: &[(f64, f64)]) -> f64 {
    if two.len() < 3 {
        return f64::NAN;
    }
    let pairs: Vec<(f64, f64)> = two.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).collect();
    pearson(&pairs)
}

/// The (Pearson) correlation of the pairs' first and second values; NaN with no spread in
/// either (or no pairs).
pub fn pearson(pairs: &[(f64, f64)]) -> f64 {
    let n = pairs.len() as f64;
    let (ma, mb) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = pairs.iter().map(|p| (p.0 - ma) * (p.1 - mb)).sum();
    let va: f64 = pairs.iter().map(|p| (p.0 - ma).powi(2)).sum();
    let vb: f64 = pairs.iter().map(|p| (p.1 - mb).powi(2)).sum();
    if va > 0.0 && vb > 0.0 {
        cov / (va * vb).sqrt()
    } else {
        f64::NAN
    }
}

/// The traced rows' medians, ns, and the kernel's span (first stamp to last).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub rows: usize,
    /// Each figure's median over the rows (NaN with no row).
    pub median: RowTimes,
    /// Σ idle / Σ total over the rows: the share of a CTA's row time spent waiting.
    pub idle_share: f64,
    pub span: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    crate::bench::harness::quantile(&v, 0.5)
}

pub fn summarize(rows: &[RowTimes], stamps: &[u64]) -> Summary {
    let col = |f: fn(&RowTimes) -> f64| median(rows.iter().map(f).collect());
    let (lo, hi) = stamps
        .iter()
        .filter(|&&t| t != 0)
        .fold((u64::MAX, 0), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    let idle: f64 = rows.iter().map(|r| r.idle).sum();
    let total: f64 = rows.iter().map(|r| r.total).sum();
    Summary {
        rows: rows.len(),
        median: RowTimes {
            wait_turn: col(|r| r.wait_turn),
            load: col(|r| r.load),
            skew: col(|r| r.skew),
            start_skew: col(|r| r.start_skew),
            load_spread: col(|r| r.load_spread),
            exchange: col(|r| r.exchange),
            idle: col(|r| r.idle),
            store: col(|r| r.store),
            total: col(|r| r.total),
        },
        idle_share: if total > 0.0 { idle / total } else { f64::NAN },
        span: if hi > lo { (hi - lo) as f64 } else { 0.0 },
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let us = |ns: f64| ns / 1e3;
        let m = &self.median;
        writeln!(
            f,
            "{} rows traced; medians a row, µs (a CTA's figures averaged over the row's CTAs):",
            self.rows
        )?;
        writeln!(
            f,
            "  waiting its turn (ping-pong)   {:8.2}",
            us(m.wait_turn)
        )?;
        writeln!(f, "  loads out → part reduced       {:8.2}", us(m.load))?;
        writeln!(f, "  skew of the parts' reduce      {:8.2}", us(m.skew))?;
        writeln!(
            f,
            "    loads going out apart        {:8.2}",
            us(m.start_skew)
        )?;
        writeln!(
            f,
            "    loads' spread (slow − fast)  {:8.2}",
            us(m.load_spread)
        )?;
        writeln!(f, "  last reduce → first exchanged  {:8.2}", us(m.exchange))?;
        writeln!(f, "  a CTA's wait (reduce → exch.)  {:8.2}", us(m.idle))?;
        writeln!(f, "  stores issued (thread 0)       {:8.2}", us(m.store))?;
        writeln!(f, "  loop top → stores issued       {:8.2}", us(m.total))?;
        writeln!(
            f,
            "  share of row time waiting      {:7.1}%",
            100.0 * self.idle_share
        )?;
        write!(f, "  first stamp → last stamp       {:8.2}", us(self.span))
    }
}

/// v11's chunk timeline (`KL_V11_TRACE`, kernels/softmax.cu above `softmax_v11_deal`): for
/// each of the first [`v11::CHUNKS`] chunks, nine stamps of `%globaltimer` (ns) taken by the
/// lane that handled it — 0 claimed, 1 its bulk copy issued, 2 a stats warp found it loaded,
/// 3 its state published, 4 its row count's add returned, 5 a write warp found it loaded,
/// 6 that warp held the row's state, 7 its slot freed, 8 its stores issued — the time each
/// row's merged state was published, and the SM that took each chunk.
/// `examples/v11_trace.rs` launches v11 that way and prints [`v11::Summary`].
pub mod v11 {
    use super::*;

    pub const STAMPS: usize = 9;
    pub const CHUNKS: usize = 65536;
    pub const ROWS: usize = 4096;

    fn missing(e: cudarc::driver::DriverError) -> Error {
        missing_macro(e, "v11", "KL_V11_TRACE")
    }

    /// Zero the stamps before a traced launch.
    pub fn clear(dev: &CudaDevice, dt: DType) -> Result<()> {
        clear_globals(
            dev,
            dt,
            &["kl_v11_trace", "kl_v11_row", "kl_v11_sm"],
            missing,
        )
    }

    /// The last traced launch's stamps (after it has finished).
    #[derive(Debug, Clone, PartialEq)]
    pub struct Trace {
        /// Chunk id's stamp k at `id · STAMPS + k`, 0 where none was written.
        pub chunks: Vec<u64>,
        /// Row r's merged state published, 0 where none.
        pub rows: Vec<u64>,
        /// The SM + 1 that took chunk id, 0 where none.
        pub sm: Vec<u64>,
    }

    pub fn read(dev: &CudaDevice, dt: DType) -> Result<Trace> {
        let get = |name: &str, n: usize| read_global(dev, dt, name, n, missing);
        Ok(Trace {
            chunks: get("kl_v11_trace", CHUNKS * STAMPS)?,
            rows: get("kl_v11_row", ROWS)?,
            sm: get("kl_v11_sm", CHUNKS)?,
        })
    }

    /// A figure's mean, median and 90th percentile over the chunks or rows, ns (NaN with none).
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct Stat {
        pub mean: f64,
        pub median: f64,
        pub p90: f64,
    }

    fn stat(mut v: Vec<f64>) -> Stat {
        if v.is_empty() {
            return Stat {
                mean: f64::NAN,
                median: f64::NAN,
                p90: f64::NAN,
            };
        }
        v.sort_by(f64::total_cmp);
        Stat {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            median: crate::bench::harness::quantile(&v, 0.5),
            p90: crate::bench::harness::quantile(&v, 0.9),
        }
    }

    /// The chunk steps (`CHUNK_STEPS`' order) and the row steps (`ROW_STEPS`' order) over the
    /// traced rows whose every chunk and merge left its stamps; the span and the slots' use.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Summary {
        pub rows: usize,
        pub chunks: usize,
        pub chunk: Vec<Stat>,
        pub row: Vec<Stat>,
        /// First claim to last store issued over the traced chunks, ns.
        pub span: f64,
        /// Σ slot lives (claim to freed) / span: the slots held on average, grid-wide.
        pub slots_held: f64,
        /// Chunks an SM took: fewest, median, most (over the SMs that took any).
        pub per_sm: [usize; 3],
    }

    /// A chunk's steps: (label, from stamp, to stamp).
    pub const CHUNK_STEPS: [(&str, usize, usize); 9] = [
        ("claimed → copy issued", 0, 1),
        ("copy issued → stats warp has it", 1, 2),
        ("stats: reduce and publish", 2, 3),
        ("row count's add (round trip)", 3, 4),
        ("copy issued → write warp has it", 1, 5),
        ("write warp waits for the row", 5, 6),
        ("row state → slot freed", 6, 7),
        ("slot freed → stores issued", 7, 8),
        ("slot's life (claimed → freed)", 0, 7),
    ];
    /// A row's steps, in order.
    pub const ROW_STEPS: [&str; 5] = [
        "first claim → last claim",
        "last claim → last count add",
        "last count add → state published",
        "state published → last writer has it",
        "first claim → last store issued",
    ];

    /// `rows` rows of `cpr` chunks each, as the traced launch ran them.
    pub fn summarize(t: &Trace, rows: usize, cpr: usize) -> Summary {
        let st = |id: usize, k: usize| t.chunks[id * STAMPS + k];
        let traced = rows.min(ROWS).min(CHUNKS / cpr.max(1));
        let complete: Vec<usize> = (0..traced)
            .filter(|&r| {
                t.rows[r] != 0
                    && (r * cpr..(r + 1) * cpr).all(|id| (0..STAMPS).all(|k| st(id, k) != 0))
            })
            .collect();
        let ids = || complete.iter().flat_map(|&r| r * cpr..(r + 1) * cpr);
        let d = |id: usize, a: usize, b: usize| st(id, b) as f64 - st(id, a) as f64;
        let chunk = CHUNK_STEPS
            .iter()
            .map(|&(_, a, b)| stat(ids().map(|id| d(id, a, b)).collect()))
            .collect();
        let per_row = |f: &dyn Fn(usize, std::ops::Range<usize>) -> f64| {
            stat(
                complete
                    .iter()
                    .map(|&r| f(r, r * cpr..(r + 1) * cpr))
                    .collect(),
            )
        };
        let mx =
            |c: std::ops::Range<usize>, k: usize| c.map(|id| st(id, k)).max().unwrap_or(0) as f64;
        let mn =
            |c: std::ops::Range<usize>, k: usize| c.map(|id| st(id, k)).min().unwrap_or(0) as f64;
        let row = vec![
            per_row(&|_, c| mx(c.clone(), 0) - mn(c, 0)),
            per_row(&|_, c| mx(c.clone(), 4) - mx(c, 0)),
            per_row(&|r, c| t.rows[r] as f64 - mx(c, 4)),
            per_row(&|r, c| mx(c, 6) - t.rows[r] as f64),
            per_row(&|_, c| mx(c.clone(), 8) - mn(c, 0)),
        ];
        let (lo, hi) = ids().fold((u64::MAX, 0), |(lo, hi), id| {
            (lo.min(st(id, 0)), hi.max(st(id, 8)))
        });
        let span = if hi > lo { (hi - lo) as f64 } else { 0.0 };
        let life: f64 = ids().map(|id| d(id, 0, 7)).sum();
        let mut by_sm: std::collections::BTreeMap<u64, usize> = Default::default();
        for id in ids() {
            *by_sm.entry(t.sm[id]).or_default() += 1;
        }
        let mut counts: Vec<usize> = by_sm.into_values().collect();
        counts.sort_unstable();
        let per_sm = match counts.len() {
            0 => [0; 3],
            n => [counts[0], counts[n / 2], counts[n - 1]],
        };
        Summary {
            rows: complete.len(),
            chunks: complete.len() * cpr,
            chunk,
            row,
            span,
            slots_held: if span > 0.0 { life / span } else { f64::NAN },
            per_sm,
        }
    }

    impl std::fmt::Display for Summary {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let us = |ns: f64| ns / 1e3;
            writeln!(
                f,
                "{} rows ({} chunks) traced; µs, mean / median / p90:",
                self.rows, self.chunks
            )?;
            let labels = CHUNK_STEPS.iter().map(|s| s.0);
            for (head, steps) in [
                ("a chunk", labels.zip(&self.chunk).collect::<Vec<_>>()),
                ("a row", ROW_STEPS.into_iter().zip(&self.row).collect()),
            ] {
                writeln!(f, "  {head}:")?;
                for (label, s) in steps {
                    let (a, b, c) = (us(s.mean), us(s.median), us(s.p90));
                    writeln!(f, "    {label:<36}{a:8.2} {b:8.2} {c:8.2}")?;
                }
            }
            writeln!(
                f,
                "  span {:.1} µs; slots held on average {:.0} grid-wide; chunks an SM took: {} / {} / {} (fewest / median / most)",
                us(self.span),
                self.slots_held,
                self.per_sm[0],
                self.per_sm[1],
                self.per_sm[2]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launch of two groups of two CTAs.
    fn meta(pingpong: bool, rows: usize) -> Meta {
        Meta {
            grid: 4,
            g: 2,
            pingpong,
            smpair: false,
            rows,
        }
    }

    /// Stamps for a launch of two groups of two CTAs, two iterations, from a closure
    /// (iteration, CTA) → the five stamps.
    fn stamps(f: impl Fn(usize, usize) -> [u64; STAMPS]) -> Vec<u64> {
        let mut v = vec![0u64; ITERS * CTAS * STAMPS];
        for i in 0..2 {
            for b in 0..4 {
                let s = f(i, b);
                v[(i * CTAS + b) * STAMPS..][..STAMPS].copy_from_slice(&s);
            }
        }
        v
    }

    #[test]
    fn a_row_s_timeline_comes_from_its_own_ctas() {
        let meta = meta(false, 4);
        // CTA b of iteration i starts at 100·i µs; its loads go out 1 µs after the top (the
        // group's second CTA 0.2 µs later), its part is reduced 11 + b µs after the top, the
        // exchange ends 3 µs after the row's last reduce (CTA 1 of a group ends 0.5 µs later)
        // and the stores take 2 µs.
        let v = stamps(|i, b| {
            let t0 = 100_000 * i as u64 + 1_000_000;
            let last = t0 + 1_000 + 10_000 + ((b / 2) * 2 + 1) as u64 * 1_000;
            let t2 = t0 + 1_000 + 10_000 + b as u64 * 1_000;
            let t3 = last + 3_000 + (b % 2) as u64 * 500;
            [t0, t0 + 1_000 + (b % 2) as u64 * 200, t2, t3, t3 + 2_000]
        });
        let r = rows(&meta, &v);
        assert_eq!(r.len(), 4);
        // Group 0 (CTAs 0, 1): loads out at +1 and +1.2 µs, reduces at +11 and +12 µs (loads
        // of 10 and 10.8 µs), exchange done at +15 and +15.5.
        let g0 = r[0];
        assert_eq!(g0.wait_turn, 1_100.0);
        assert_eq!(g0.load, 10_400.0);
        assert_eq!(g0.skew, 1_000.0);
        assert_eq!(g0.start_skew, 200.0);
        assert_eq!(g0.load_spread, 800.0);
        assert_eq!(g0.exchange, 3_000.0);
        assert_eq!(g0.idle, (4_000.0 + 3_500.0) / 2.0);
        assert_eq!(g0.store, 2_000.0);
        assert_eq!(g0.total, (17_000.0 + 17_500.0) / 2.0);
        // Group 1 (CTAs 2, 3) is its own row: reduces at +13 and +14 µs.
        assert_eq!(r[1].load, 12_400.0);
        assert_eq!(r[1].load_spread, 800.0);
        assert_eq!(r[1].exchange, 3_000.0);
        let s = summarize(&r, &v);
        assert_eq!(s.rows, 4);
        assert_eq!(s.median.exchange, 3_000.0);
        assert_eq!(s.median.skew, 1_000.0);
        assert_eq!(s.median.start_skew, 200.0);
        // Idle 3.75 µs a row; totals 17.25 µs (group 0) and 19.25 µs (group 1), twice each.
        assert!((s.idle_share - 15_000.0 / 73_000.0).abs() < 1e-12);
        // From the first top (1 000 000) to the last store: iteration 1's CTA 3, 19.5 µs
        // after its top at 1 100 000.
        assert_eq!(s.span, 119_500.0);
        let text = s.to_string();
        assert!(
            text.contains("4 rows traced") && text.contains("3.00"),
            "{text}"
        );
    }

    #[test]
    fn a_cta_late_in_every_row_shows_in_its_lateness() {
        let meta = meta(false, 4);
        // CTA 1 reduces 3 µs after CTA 0 in both iterations; in group 1 the late one swaps
        // (CTA 3 first, then CTA 2), so each of them is late in one row of two.
        let v = stamps(|i, b| {
            let late = match b {
                1 => 3_000,
                2 if i == 1 => 2_000,
                3 if i == 0 => 2_000,
                _ => 0,
            };
            let t0 = 1_000_000 + 100_000 * i as u64;
            [t0, t0 + 1_000, t0 + 10_000 + late, t0 + 14_000, t0 + 15_000]
        });
        let l = lateness(&meta, &v);
        assert_eq!(l.len(), 4);
        assert_eq!((l[0], l[1]), (0.0, 3_000.0));
        // Two rows each, lateness 0 and 2 µs: median 1 µs.
        assert_eq!((l[2], l[3]), (1_000.0, 1_000.0));
    }

    #[test]
    fn lateness_gathers_by_sm_and_correlates_an_sm_s_two_ctas() {
        // Six CTAs on three SMs, two each; SM 7's are both late, SM 2's both early.
        let late = [1.0, 5.0, 0.0, 6.0, 2.0, f64::NAN];
        let sms = [Some(2), Some(7), Some(2), Some(7), Some(4), Some(4)];
        let by = lateness_by_sm(&late, &sms);
        assert_eq!(by.iter().map(|s| s.sm).collect::<Vec<_>>(), [7, 4, 2]);
        assert_eq!(by[0].ctas, [(1, 5.0), (3, 6.0)]);
        assert_eq!(by[0].mean, 5.5);
        // SM 4 kept only CTA 4 (CTA 5 has no lateness): no pair there, so two pairs: NaN.
        assert_eq!(by[1].ctas, [(4, 2.0)]);
        assert!(sm_pair_correlation(&by).is_nan());
        // Three SMs of two CTAs each, late together: correlation 1; against each other: −1.
        let sms = [Some(2), Some(7), Some(2), Some(7), Some(4), Some(4)];
        let together = [1.0, 5.0, 1.0, 5.0, 3.0, 3.0];
        let c = sm_pair_correlation(&lateness_by_sm(&together, &sms));
        assert!((c - 1.0).abs() < 1e-12, "{c}");
        let against = [1.0, 5.0, 5.0, 1.0, 3.0, 3.0];
        let c = sm_pair_correlation(&lateness_by_sm(&against, &sms));
        assert!((c + 1.0).abs() < 1e-12, "{c}");
    }

    #[test]
    fn pearson_is_one_for_a_line_and_nan_without_spread() {
        let line = [(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)];
        assert!((pearson(&line) - 1.0).abs() < 1e-12);
        let down = [(1.0, 3.0), (2.0, 1.0), (3.0, -1.0)];
        assert!((pearson(&down) + 1.0).abs() < 1e-12);
        assert!(pearson(&[(1.0, 2.0), (1.0, 3.0)]).is_nan());
        assert!(pearson(&[]).is_nan());
    }

    #[test]
    fn neighbouring_sms_correlate_by_their_means() {
        // SMs 0–5, one CTA each: 0 and 1 late together, 2 and 3 early together, 4 and 5
        // apart. Linked as s ^ 1: pairs (0,1), (2,3), (4,5), mostly alike; as s ^ 2: (0,2),
        // (1,3), (4,6 missing) — two pairs, too few.
        let late = [5.0, 5.2, 1.0, 1.1, 2.0, 4.0];
        let sms: Vec<Option<u32>> = (0..6).map(Some).collect();
        let by = lateness_by_sm(&late, &sms);
        let c = sm_link_correlation(&by, |s| s ^ 1);
        assert!(c > 0.7 && c < 1.0, "{c}");
        assert!(sm_link_correlation(&by, |s| s ^ 2).is_nan());
        // Linked to itself or to an SM not there: no pairs.
        assert!(sm_link_correlation(&by, |s| s).is_nan());
        assert!(sm_link_correlation(&by, |s| s + 100).is_nan());
        // Exactly alike pairs: 1.
        let late = [5.0, 5.0, 1.0, 1.0, 3.0, 3.0];
        let c = sm_link_correlation(&lateness_by_sm(&late, &sms), |s| s ^ 1);
        assert!((c - 1.0).abs() < 1e-12, "{c}");
    }

    #[test]
    fn rows_with_a_missing_stamp_are_skipped() {
        let meta = meta(true, 3);
        // Iteration 1 of group 1 never ran (3 rows: group 1 walks one), CTA 3 of it has zeros.
        let v = stamps(|i, b| {
            if i == 1 && b >= 2 {
                [0; STAMPS]
            } else {
                [1, 2, 3, 4, 5].map(|k| k * 1_000 + 10_000 * i as u64 + b as u64)
            }
        });
        let r = rows(&meta, &v);
        assert_eq!(r.len(), 3);
        assert!(summarize(&[], &v).median.exchange.is_nan());
    }
    #[test]
    fn v11_chunk_and_row_steps_come_from_their_own_stamps() {
        use super::v11::*;
        // Two rows of two chunks; chunk id's stamps are 1000·(id + 1) + 10·k (+ 5 at k = 4
        // for chunk 1); row r's state published at 2000·(r + 1) + 60; chunks 0, 2 and 3 on
        // SM 3, chunk 1 on SM 4 (stored + 1).
        let mut t = Trace {
            chunks: vec![0; CHUNKS * STAMPS],
            rows: vec![0; ROWS],
            sm: vec![0; CHUNKS],
        };
        for id in 0..4usize {
            for k in 0..STAMPS {
                t.chunks[id * STAMPS + k] = 1000 * (id as u64 + 1) + 10 * k as u64;
            }
            t.sm[id] = if id % 2 == 0 || id == 3 { 4 } else { 5 };
        }
        t.chunks[STAMPS + 4] += 5;
        t.rows[0] = 2000 + 60;
        t.rows[1] = 4000 + 60;
        let s = summarize(&t, 2, 2);
        assert_eq!((s.rows, s.chunks), (2, 4));
        // Every chunk step is 10 ns a stamp apart, except the add (10, 15) and the ones that span.
        assert_eq!(s.chunk[0].median, 10.0);
        assert_eq!(s.chunk[4].mean, 40.0);
        assert_eq!(s.chunk[8].mean, 70.0);
        assert_eq!(s.chunk[3].mean, (10.0 * 3.0 + 15.0) / 4.0);
        // Row 0: claims at 1000 and 2000; last add 2045 (chunk 1's 2040 + 5); published 2060;
        // the last writer had it at 2060; last store 2080. Row 1: 3000 and 4000; 4040; 4060.
        assert_eq!(s.row[0].mean, 1000.0);
        assert_eq!(s.row[1].mean, (45.0 + 40.0) / 2.0);
        assert_eq!(s.row[2].mean, (15.0 + 20.0) / 2.0);
        assert_eq!(s.row[3].median, 0.0);
        assert_eq!(s.row[4].median, 1080.0);
        assert_eq!(s.span, 4080.0 - 1000.0);
        assert_eq!(s.slots_held, 4.0 * 70.0 / 3080.0);
        assert_eq!(s.per_sm, [1, 3, 3]);
        // A row with a missing stamp is left out.
        t.chunks[2 * STAMPS + 5] = 0;
        assert_eq!(summarize(&t, 2, 2).rows, 1);
    }
}
