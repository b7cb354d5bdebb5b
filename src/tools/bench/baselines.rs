//! The PyTorch baselines' side of a bench run: running `baselines/` for every (op, dtype) of
//! the run, and the launches of kernlab's own replayable variant that go with them to be timed
//! in PyTorch's process.

use super::{torch, BenchConfig, BenchReport, Event, Point, Progress, Status};
use crate::ops::{Op, Params, Variant};
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::launch::{record_launch, record_triton_launch, RecordedLaunch, TritonLaunch};
use crate::runtime::tensor::Tensor;

type ReplayLaunch = (
    RecordedLaunch,
    std::sync::Arc<crate::runtime::device::nvrtc::Compiled>,
);

/// `auto`'s launches noted at the run's points for the baselines' replay, and at the points
/// where none could be, why.
#[derive(Default)]
pub(super) struct Replays {
    pub(super) made: Vec<(Op, DType, torch::Replay)>,
    pub(super) skipped: Vec<(Op, DType, String)>,
    /// The Triton variant's launches, for the baselines' `triton` column.
    pub(super) triton: Vec<(Op, DType, torch::TritonPlan)>,
}

impl Replays {
    fn made_for(&self, op: Op, dtype: DType) -> impl Iterator<Item = &torch::Replay> {
        self.made
            .iter()
            .filter(move |(o, d, _)| *o == op && *d == dtype)
            .map(|(_, _, r)| r)
    }

    fn skipped_for(&self, op: Op, dtype: DType) -> impl Iterator<Item = &str> {
        self.skipped
            .iter()
            .filter(move |(o, d, _)| *o == op && *d == dtype)
            .map(|(_, _, why)| why.as_str())
    }

    /// The note under the table for one (op, dtype) the script ran: at how many of its `shapes`
    /// `kernlab_do_bench` was timed (`ok`), came back failed or in error (`bad`), and why the
    /// others have none.
    fn note(&self, op: Op, dtype: DType, shapes: usize, ok: usize, bad: usize) -> String {
        let mut s = format!(
            "{}: kernlab's `auto`, its one launch replayed and timed by do_bench in PyTorch's process, at {ok} of {shapes} {op} {dtype} shape(s)",
            torch::REPLAY_VARIANT
        );
        if bad > 0 {
            s += &format!("; {bad} replayed but failed or in error (their notes say why)");
        }
        let returned = ok + bad;
        // Each reason once, with how many points gave it, in the order first met.
        let mut why: Vec<(&str, usize)> = Vec::new();
        for r in self.skipped_for(op, dtype) {
            match why.iter_mut().find(|(w, _)| *w == r) {
                Some(e) => e.1 += 1,
                None => why.push((r, 1)),
            }
        }
        let skipped: usize = why.iter().map(|(_, n)| n).sum();
        let planned = self.made_for(op, dtype).count();
        for (w, n) in why {
            s += &format!("; not at {n}: {w}");
        }
        let unplanned = shapes.saturating_sub(planned + skipped);
        if unplanned > 0 {
            s += &format!("; not at {unplanned}: no validated `auto` there to take it from");
        }
        if returned < planned {
            s += &format!(
                "; {} planned but not returned by the script (its log says why)",
                planned - returned
            );
        }
        s
    }
}

/// `v`'s launch for one call on `x` into `y`, with the module it is in, where that call is one
/// plain launch (see `runtime::launch::record_launch`); else why not (not on a GPU, or the
/// call launched otherwise).
pub(super) fn replay_of(
    device: &Device,
    p: &Params,
    v: &Variant,
    x: &[&Tensor],
    y: &mut Tensor,
) -> Result<std::result::Result<ReplayLaunch, String>> {
    let Some(d) = device.cuda() else {
        return Ok(Err("not on a GPU".into()));
    };
    let launch = match record_launch(|| v.run(p, x, y))? {
        Ok(l) => l,
        Err(why) => return Ok(Err(why)),
    };
    let (_, module) = d.module(launch.source, &launch.kernel)?;
    Ok(Ok((launch, module)))
}

/// The Triton variant `v`'s launch for one call on `x` into `y` (see
/// `runtime::launch::record_triton_launch`), or why there is none.
pub(super) fn triton_plan_of(
    p: &Params,
    v: &Variant,
    x: &[&Tensor],
    y: &mut Tensor,
) -> Result<std::result::Result<TritonLaunch, String>> {
    record_triton_launch(|| v.run(p, x, y))
}

/// Whether a Triton variant's launches go to the baselines' process, whose `triton` column
/// launches the same kernels with them: with `--torch` on a CUDA device, where the baselines
/// take these parameters, timed call by call.
pub(super) fn wants_triton_plan(
    cfg: &BenchConfig,
    device: &Device,
    op: Op,
    params: &Params,
) -> bool {
    cfg.torch.is_some()
        && device.cuda().is_some()
        && op.torch().is_some_and(|t| (t.args)(params).is_ok())
        && cfg.timing.graph.is_none()
}

/// Whether the launches of `op`'s replayable variant (softmax's `auto`) go to the baselines'
/// process to be replayed there (`torch::REPLAY_VARIANT`): where a Triton plan would
/// ([`wants_triton_plan`]), on contiguous rows (a replayed launch's arguments are for
/// contiguous rows, and the script refuses plans with `--row-stride`).
pub(super) fn wants_replay(cfg: &BenchConfig, device: &Device, op: Op, params: &Params) -> bool {
    op.variants().iter().any(|v| v.replayable)
        && cfg.row_stride.is_none()
        && wants_triton_plan(cfg, device, op, params)
}

/// The baselines script's runs for `points`: one per op, dtype and parameter set, with that
/// group's shapes in order. A flag sweep (`--layers 1,4,16`) has a parameter set a point, each
/// its own model for PyTorch.
type ScriptRun<'a> = (Op, DType, &'a Params, Vec<Vec<usize>>);
fn script_runs(points: &[Point]) -> Vec<ScriptRun<'_>> {
    let mut runs: Vec<ScriptRun<'_>> = Vec::new();
    for p in points {
        match runs
            .iter_mut()
            .find(|g| g.0 == p.op && g.1 == p.dtype && *g.2 == p.params)
        {
            Some(g) => g.3.push(p.shape.clone()),
            None => runs.push((p.op, p.dtype, &p.params, vec![p.shape.clone()])),
        }
    }
    runs
}

/// Run the PyTorch baselines for every op, dtype and parameter set of the run, over its shapes, and
/// merge their records; where they cannot run, one note says why and the run goes on.
#[allow(clippy::too_many_arguments)]
pub(super) fn add_torch_baselines(
    cfg: &BenchConfig,
    t: &torch::TorchConfig,
    device: &Device,
    points: &[Point],
    seed: u64,
    replays: &Replays,
    report: &mut BenchReport,
    progress: Progress,
) -> Result<()> {
    let target = match device.cuda() {
        Some(d) => torch::ScriptTarget::Cuda {
            ordinal: d.ordinal,
            l2_bytes: d.props.l2_bytes,
        },
        None => torch::ScriptTarget::Cpu {
            threads: rayon::current_num_threads(),
            llc_bytes: super::harness::cpu_llc_bytes(),
        },
    };
    for (op, dtype, params, shapes) in script_runs(points) {
        let Some(cases) = op.torch() else {
            report
                .torch_notes
                .push(format!("PyTorch baselines: {op} has none"));
            continue;
        };
        let args = match (cases.args)(params) {
            Ok(a) => a,
            Err(why) => {
                let line = format!(
                    "PyTorch baselines: {op}{}: skipped: {why}",
                    params.form_suffix()
                );
                if !report.torch_notes.contains(&line) {
                    report.torch_notes.push(line);
                }
                continue;
            }
        };
        progress(Event::Note(&format!(
            "PyTorch baselines: {op} {dtype}, {} shape(s)",
            shapes.len()
        )));
        let mine: Vec<torch::Replay> = replays.made_for(op, dtype).cloned().collect();
        let tritons: Vec<torch::TritonPlan> = replays
            .triton
            .iter()
            .filter(|(o, d, _)| *o == op && *d == dtype)
            .map(|(_, _, p)| p.clone())
            .collect();
        match torch::run_script(
            t,
            op,
            &args,
            dtype,
            &shapes,
            &cfg.timing,
            seed,
            target,
            cfg.row_stride,
            &mine,
            &tritons,
        ) {
            torch::Outcome::Ran(doc) => {
                let rotate = if op.grammar() == crate::ops::Grammar::Batch {
                    super::harness::Rotate::Copies(1)
                } else {
                    cfg.timing.rotate
                };
                let line = torch::describe(&doc, &t.script, rotate, cfg.timing.repeat);
                if !report.torch_notes.contains(&line) {
                    report.torch_notes.push(line);
                }
                if let Some(copy) = torch::copy_comparison(&doc, report.copy_gbps()) {
                    if !report
                        .torch_notes
                        .iter()
                        .any(|l| l.starts_with("copy, same "))
                    {
                        report.torch_notes.push(copy);
                    }
                }
                let records = torch::to_records(&doc, &shapes, params, report.copy_gbps())?;
                if wants_replay(cfg, device, op, params) {
                    let mine = || {
                        records
                            .iter()
                            .filter(|r| r.variant == torch::REPLAY_VARIANT)
                    };
                    let ok = mine().filter(|r| r.status == Status::Ok).count();
                    let bad = mine().count() - ok;
                    report
                        .torch_notes
                        .push(replays.note(op, dtype, shapes.len(), ok, bad));
                }
                report.records.extend(records);
            }
            torch::Outcome::Unavailable(why) => {
                report
                    .torch_notes
                    .push(format!("PyTorch baselines: unavailable: {why}"));
                return Ok(());
            }
            torch::Outcome::Failed(why) => report
                .torch_notes
                .push(format!("PyTorch baselines: {op} {dtype} failed: {why}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::softmax;

    #[test]
    fn each_swept_flag_value_is_its_own_script_run() {
        use crate::ops::{mlp, FlagValues};
        let params = |layers: usize| {
            let mut f = FlagValues::default();
            f.set("layers", layers.to_string());
            mlp::OP.params(&f).unwrap()
        };
        let point = |p: &Params, dtype, rows| Point {
            op: mlp::OP,
            shape: vec![rows, 256],
            dtype,
            params: p.clone(),
            op_index: 0,
            shape_index: 0,
        };
        let (one, four) = (params(1), params(4));
        let points = [
            point(&one, DType::BF16, 8),
            point(&one, DType::F32, 8),
            point(&four, DType::BF16, 8),
            point(&one, DType::BF16, 16),
            point(&four, DType::BF16, 16),
        ];
        let runs = script_runs(&points);
        let got: Vec<(String, DType, Vec<Vec<usize>>)> = runs
            .iter()
            .map(|(_, d, p, s)| (p.form_suffix(), *d, s.clone()))
            .collect();
        let want = |p: &Params, d, rows: &[usize]| {
            let shapes = rows.iter().map(|&r| vec![r, 256]).collect();
            (p.form_suffix(), d, shapes)
        };
        assert_eq!(
            got,
            vec![
                want(&one, DType::BF16, &[8, 16]),
                want(&one, DType::F32, &[8]),
                want(&four, DType::BF16, &[8, 16]),
            ]
        );
    }

    #[test]
    fn the_replay_note_counts_what_came_back_and_says_why_the_rest_did_not() {
        let module = std::sync::Arc::new(crate::runtime::device::nvrtc::Compiled {
            file: "softmax.cu".into(),
            arch: "sm_90a".into(),
            options: vec![],
            ptx: String::new(),
            cubin: vec![1],
            log: String::new(),
            from_cache: false,
        });
        let launch = RecordedLaunch::new(
            &crate::ops::softmax::SOURCE,
            "k_f32",
            crate::runtime::launch::cfg_1d(32, 32).unwrap(),
            vec![],
        );
        let replay = torch::Replay {
            shape: (1, 64),
            picked: Some("v2_warp_row".into()),
            launch,
            module,
        };
        let cluster = "1 launch(es), 0 of them a row kernel's plain launch (…)".to_string();
        let r = Replays {
            made: vec![
                (softmax::OP, DType::F32, replay.clone()),
                (softmax::OP, DType::F32, replay.clone()),
                (softmax::OP, DType::BF16, replay),
            ],
            skipped: vec![
                (softmax::OP, DType::F32, cluster.clone()),
                (softmax::OP, DType::F32, cluster.clone()),
                (softmax::OP, DType::BF16, "no kernel launched".into()),
            ],
            triton: vec![],
        };
        // f32: 2 planned, 2 skipped for one reason, 1 without auto; 1 came back.
        let n = r.note(softmax::OP, DType::F32, 5, 1, 0);
        assert!(n.starts_with("kernlab_do_bench: "), "{n}");
        assert!(n.contains("at 1 of 5 softmax f32 shape(s)"), "{n}");
        assert!(n.contains(&format!("; not at 2: {cluster}")), "{n}");
        assert!(n.contains("; not at 1: no validated `auto` there"), "{n}");
        assert!(n.contains("; 1 planned but not returned"), "{n}");
        // bf16: every shape accounted for, all planned ones back.
        let n = r.note(softmax::OP, DType::BF16, 2, 1, 0);
        assert!(n.contains("at 1 of 2 softmax bf16"), "{n}");
        assert!(n.contains("; not at 1: no kernel launched"), "{n}");
        assert!(
            !n.contains("no validated") && !n.contains("not returned"),
            "{n}"
        );
        assert!(!n.contains("failed"), "{n}");
        // One came back failed: counted apart, and not as missing.
        let n = r.note(softmax::OP, DType::BF16, 2, 0, 1);
        assert!(
            n.contains("at 0 of 2") && n.contains("; 1 replayed but failed"),
            "{n}"
        );
        assert!(!n.contains("not returned"), "{n}");
    }
}
