//! `kernlab bench collectives`: each collective at each size over a group of ranks, validated
//! first, then timed on every rank, with nccl-tests' algorithm and bus bandwidths
//! ([`Collective::bus_factor`], docs/parallel.md).
//!
//! Every rank must make the same calls, so the number of timed calls is fixed by the size
//! alone (not estimated per rank, as `bench`'s loop does): `warmup` untimed calls, then `iters`
//! timed ones, each between two events on the rank's stream (on the CPU, two clock readings).
//! A row's time is the slowest rank's median: a collective ends when its last rank does.

use crate::runtime::comm::{cpu, nccl, Collective, Communicator};
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use crate::tools::bench::harness::{self, Stats};
use crate::tools::bench::plot::{PlotSpec, Series};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Table};

/// Where the ranks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One rank a GPU, through NCCL.
    Nccl,
    /// Threads of this process exchanging through memory: the test backend. Its times are
    /// those of the threads and the f64 sums, not of any link.
    Cpu,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Nccl => "nccl",
            Backend::Cpu => "cpu",
        }
    }
}

/// One run's plan.
#[derive(Debug, Clone)]
pub struct Plan {
    pub backend: Backend,
    pub ranks: usize,
    pub collectives: Vec<Collective>,
    /// Each collective's size in bytes: the larger buffer, as nccl-tests counts it.
    pub bytes: Vec<usize>,
    pub dtypes: Vec<DType>,
    pub warmup: usize,
    pub iters: usize,
}

impl Plan {
    /// Every (dtype, collective, size) of the plan, in the order the ranks run them.
    fn points(&self) -> impl Iterator<Item = (DType, Collective, usize)> + '_ {
        self.dtypes.iter().flat_map(move |&d| {
            self.collectives
                .iter()
                .flat_map(move |&c| self.bytes.iter().map(move |&b| (d, c, b)))
        })
    }
}

/// One (dtype, collective, size): its time and rates, and the validation's worst error.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub dtype: DType,
    pub collective: &'static str,
    pub bytes: usize,
    /// Elements in the larger buffer.
    pub count: usize,
    /// The slowest rank's median, and the fastest rank's.
    pub ms: f64,
    pub fastest_rank_ms: f64,
    pub calls: usize,
    pub algbw_gbs: f64,
    pub busbw_gbs: f64,
    pub max_rel_err: f64,
}

/// The larger buffer's element count for `bytes` of `dtype` over `world` ranks: a whole number
/// of blocks for the collectives that split it, at least one element a rank.
pub fn count_for(c: Collective, bytes: usize, dtype: DType, world: usize) -> usize {
    let n = (bytes / dtype.size()).max(1);
    match c {
        Collective::ReduceScatter | Collective::AllGather => (n / world).max(1) * world,
        Collective::AllReduce | Collective::Broadcast => n,
    }
}

/// Element `i` of rank `rank`'s input: small multiples of 1/8, exact in every dtype, distinct
/// by rank and element, never all zero.
fn value(rank: usize, i: usize) -> f64 {
    (((i * 7 + rank * 13) % 61) as f64 - 30.0 + 0.5) / 8.0
}

/// Rank `rank`'s input of `n` elements.
fn input(rank: usize, n: usize) -> Vec<f64> {
    (0..n).map(|i| value(rank, i)).collect()
}

/// Element `i` of what `c`'s output (the all-reduce or broadcast buffer, reduce-scatter's
/// block, all-gather's whole) should hold afterwards on rank `rank`, with `n` elements in the
/// larger buffer: worked out element by element, so that no rank holds every rank's inputs.
fn want(c: Collective, n: usize, world: usize, rank: usize, i: usize) -> f64 {
    let block = n / world;
    match c {
        Collective::AllReduce => (0..world).map(|r| value(r, i)).sum(),
        Collective::ReduceScatter => (0..world).map(|r| value(r, rank * block + i)).sum(),
        Collective::AllGather => value(i / block, i % block),
        Collective::Broadcast => value(0, i),
    }
}

/// The length of `c`'s output on a rank, with `n` elements in the larger buffer.
fn out_len(c: Collective, n: usize, world: usize) -> usize {
    match c {
        Collective::ReduceScatter => n / world,
        Collective::AllReduce | Collective::AllGather | Collective::Broadcast => n,
    }
}

/// One rank's work: validate, then time, every (collective, size) of the plan, in order.
fn rank_work(c: &mut dyn Communicator, p: &Plan) -> Result<Vec<(Stats, f64)>> {
    let dev = c.device();
    let (rank, world) = (c.rank(), c.world());
    let mut out = vec![];
    for (dt, coll, bytes) in p.points() {
        let n = count_for(coll, bytes, dt, world);
        let block = n / world;
        let on = |v: &[f64]| Tensor::from_f64(v, &[v.len()], dt)?.to_device(&dev);
        let (mut a, mut b) = match coll {
            Collective::AllReduce | Collective::Broadcast => {
                (on(&input(rank, n))?, Tensor::empty(&[1], dt, &dev)?)
            }
            Collective::ReduceScatter => (on(&input(rank, n))?, Tensor::empty(&[block], dt, &dev)?),
            Collective::AllGather => (on(&input(rank, block))?, Tensor::empty(&[n], dt, &dev)?),
        };
        b.poison_nan()?;
        let mut call = |a: &mut Tensor, b: &mut Tensor| match coll {
            Collective::AllReduce => c.all_reduce(a),
            Collective::Broadcast => c.broadcast(a, 0),
            Collective::ReduceScatter => c.reduce_scatter(a, b),
            Collective::AllGather => c.all_gather(a, b),
        };
        call(&mut a, &mut b)?;
        let got = match coll {
            Collective::AllReduce | Collective::Broadcast => a.to_f64_vec()?,
            _ => b.to_f64_vec()?,
        };
        let mut err = 0.0f64;
        for (i, &g) in got.iter().enumerate() {
            let w = want(coll, n, world, rank, i);
            let e = (g - w).abs() / w.abs().max(1.0);
            // NaN never passes: a NaN's error is infinite.
            err = err.max(if e.is_nan() { f64::INFINITY } else { e });
        }
        // The inputs are multiples of 1/8 below 4: their sums over a few ranks are exact
        // in every dtype, whatever the order, so the dtype's own tolerance is ample.
        let tol = dt.tolerance();
        if got.len() != out_len(coll, n, world) || err > tol {
            return Err(Error::Validation {
                op: format!("{} {}", p.backend.name(), coll.name()),
                variant: format!("rank {rank}"),
                why: format!("{dt} × {n}: max relative error {err:.2e} against {tol:.1e}"),
            });
        }
        for _ in 0..p.warmup {
            call(&mut a, &mut b)?;
        }
        let stats = match &dev {
            Device::Cuda(d) => {
                d.sync()?;
                let pairs = harness::event_pairs(d, p.iters)?;
                for pair in &pairs {
                    harness::between(d, pair, &mut || call(&mut a, &mut b))?;
                }
                d.sync()?;
                harness::pair_stats(&pairs)?
            }
            Device::Cpu => {
                let mut ms = Vec::with_capacity(p.iters);
                for _ in 0..p.iters {
                    let t = std::time::Instant::now();
                    call(&mut a, &mut b)?;
                    ms.push(t.elapsed().as_secs_f64() * 1e3);
                }
                Stats::from_samples(&ms)?
            }
        };
        out.push((stats, err));
    }
    Ok(out)
}

/// Run the plan: every rank on its own thread, then one row per (collective, size).
pub fn run(p: &Plan) -> Result<Vec<Row>> {
    if p.ranks == 0
        || p.iters == 0
        || p.collectives.is_empty()
        || p.bytes.is_empty()
        || p.dtypes.is_empty()
    {
        return Err(Error::Invalid(
            "collectives: at least one rank, one timed call, one collective, one size and one \
             dtype"
                .into(),
        ));
    }
    let per_rank: Vec<Vec<(Stats, f64)>> = match p.backend {
        Backend::Cpu => cpu::run(p.ranks, |c| rank_work(c, p))?,
        Backend::Nccl => nccl::run(p.ranks, |c| rank_work(c, p))?,
    };
    let mut rows = vec![];
    for (i, (dtype, coll, bytes)) in p.points().enumerate() {
        let n = count_for(coll, bytes, dtype, p.ranks);
        let ranks = per_rank.iter().map(|r| &r[i]);
        let ms = ranks.clone().map(|(s, _)| s.median_ms).fold(0.0, f64::max);
        let fastest = ranks
            .clone()
            .map(|(s, _)| s.median_ms)
            .fold(f64::INFINITY, f64::min);
        let err = ranks.clone().map(|(_, e)| *e).fold(0.0, f64::max);
        let size = (n * dtype.size()) as f64;
        let algbw = size / (ms * 1e-3) / 1e9;
        rows.push(Row {
            dtype,
            collective: coll.name(),
            bytes: n * dtype.size(),
            count: n,
            ms,
            fastest_rank_ms: fastest,
            calls: p.iters,
            algbw_gbs: algbw,
            busbw_gbs: algbw * coll.bus_factor(p.ranks),
            max_rel_err: err,
        });
    }
    Ok(rows)
}

/// The rows as one table, a collective after another.
pub fn table(rows: &[Row]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_header(vec![
        "collective",
        "size (B)",
        "elements",
        "µs (slowest rank's median)",
        "fastest rank µs",
        "algbw GB/s",
        "busbw GB/s",
        "max rel err",
    ]);
    for r in rows {
        t.add_row(vec![
            r.collective.to_string(),
            r.bytes.to_string(),
            r.count.to_string(),
            format!("{:.1}", r.ms * 1e3),
            format!("{:.1}", r.fastest_rank_ms * 1e3),
            format!("{:.2}", r.algbw_gbs),
            format!("{:.2}", r.busbw_gbs),
            format!("{:.1e}", r.max_rel_err),
        ]);
    }
    t
}

/// Bus bandwidth against size, one line a (collective, dtype): `runs` holds each dtype's rows.
pub fn plot_spec(runs: &[(String, Vec<Row>)], backend: Backend, ranks: usize) -> PlotSpec {
    let mut series = vec![];
    for (dtype, rows) in runs {
        let mut names: Vec<&str> = rows.iter().map(|r| r.collective).collect();
        names.dedup();
        for name in names {
            series.push(Series {
                label: if runs.len() > 1 {
                    format!("{name} {dtype}")
                } else {
                    name.to_string()
                },
                tier: backend.name().to_string(),
                points: rows
                    .iter()
                    .filter(|r| r.collective == name)
                    .map(|r| (r.bytes as f64, r.busbw_gbs))
                    .collect(),
            });
        }
    }
    PlotSpec {
        title: format!("collectives over {ranks} rank(s), {}", backend.name()),
        x_label: "size (bytes)".into(),
        y_label: "bus bandwidth (GB/s)".into(),
        log_x: true,
        series,
        hlines: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole of what `want` says `c`'s output holds on rank `rank`.
    fn expected(c: Collective, n: usize, world: usize, rank: usize) -> Vec<f64> {
        (0..out_len(c, n, world))
            .map(|i| want(c, n, world, rank, i))
            .collect()
    }

    #[test]
    fn counts_round_the_split_collectives_to_whole_blocks() {
        // 4 KiB of bf16 over 3 ranks: 2048 elements, 2046 for the split ones (682 a rank).
        assert_eq!(count_for(Collective::AllReduce, 4096, DType::BF16, 3), 2048);
        assert_eq!(
            count_for(Collective::ReduceScatter, 4096, DType::BF16, 3),
            2046
        );
        assert_eq!(count_for(Collective::AllGather, 4096, DType::BF16, 3), 2046);
        // Fewer bytes than one element a rank: one element a rank still.
        assert_eq!(count_for(Collective::AllGather, 2, DType::F32, 4), 4);
        assert_eq!(count_for(Collective::Broadcast, 2, DType::F32, 4), 1);
    }

    #[test]
    fn expected_results_follow_each_collectives_definition() {
        let (n, world) = (6, 3);
        let sum: Vec<f64> = (0..n)
            .map(|i| (0..world).map(|r| input(r, n)[i]).sum())
            .collect();
        assert_eq!(expected(Collective::AllReduce, n, world, 1), sum);
        assert_eq!(expected(Collective::ReduceScatter, n, world, 2), sum[4..6]);
        let gathered: Vec<f64> = (0..world).flat_map(|r| input(r, 2)).collect();
        assert_eq!(expected(Collective::AllGather, n, world, 0), gathered);
        assert_eq!(expected(Collective::Broadcast, n, world, 2), input(0, n));
        // The inputs are exact in bf16 and never all zero.
        for r in 0..4 {
            let v = input(r, 64);
            assert!(v.iter().any(|&x| x != 0.0));
            assert!(v.iter().all(|&x| DType::BF16.round(x) == x));
        }
    }
}
