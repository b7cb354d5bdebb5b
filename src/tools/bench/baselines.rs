//! The PyTorch baselines' side of a bench run: running `baselines/` for every (op, dtype) of
//! the run, with the Triton variants' launches for its `triton` column, and kernlab's own
//! `auto` called there through the kernlab Python package (its `kernlab_do_bench` column).

use super::{torch, BenchConfig, BenchReport, Event, Point, Progress, Record, Status};
use crate::ops::{Op, Params, Variant};
use crate::runtime::device::Device;
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::launch::{record_triton_launch, TritonLaunch};
use crate::runtime::tensor::Tensor;

/// The Triton variants' launches noted at the run's points, for the baselines' `triton`
/// column.
#[derive(Default)]
pub(super) struct TritonPlans(pub(super) Vec<(Op, DType, torch::TritonPlan)>);

impl TritonPlans {
    fn made_for(&self, op: Op, dtype: DType) -> Vec<torch::TritonPlan> {
        self.0
            .iter()
            .filter(|(o, d, _)| *o == op && *d == dtype)
            .map(|(_, _, p)| p.clone())
            .collect()
    }
}

/// The note under the table for one (op, dtype) whose `kernlab_do_bench` column the script
/// ran: at how many of its `shapes` that column was timed, and where it was not, why (the
/// first such record's note: a package missing or built from other sources says so on each).
fn package_note(op: Op, dtype: DType, shapes: usize, records: &[Record]) -> String {
    let mine: Vec<&Record> = records
        .iter()
        .filter(|r| r.variant == torch::KERNLAB_VARIANT)
        .collect();
    let ok = mine.iter().filter(|r| r.status == Status::Ok).count();
    let mut s = format!(
        "{}: kernlab's `auto` called through the kernlab Python package on PyTorch's tensors and timed by do_bench in PyTorch's process, at {ok} of {shapes} {op} {dtype} shape(s)",
        torch::KERNLAB_VARIANT
    );
    if let Some(bad) = mine.iter().find(|r| r.status != Status::Ok) {
        let n = mine.len() - ok;
        s += &format!(
            "; {n} failed or in error, the first with: {}",
            bad.note.as_deref().unwrap_or("no note")
        );
    }
    if mine.len() < shapes {
        s += &format!(
            "; {} not returned by the script (its log says why)",
            shapes - mine.len()
        );
    }
    s
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

/// The variant the baselines' `kernlab_do_bench` column calls through the kernlab package:
/// `op`'s `auto`, where a Triton plan would go too ([`wants_triton_plan`]: `--torch` on a CUDA
/// device, timed call by call) and rows are contiguous (the package copies strided rows
/// contiguous first, a copy the column would time).
pub(super) fn package_variant(
    cfg: &BenchConfig,
    device: &Device,
    op: Op,
    params: &Params,
) -> Option<&'static str> {
    let auto = op.variants().iter().find(|v| v.name == "auto")?;
    (cfg.row_stride.is_none() && wants_triton_plan(cfg, device, op, params)).then_some(auto.name)
}

/// Each `kernlab_do_bench` record's `picked`: what kernlab's own `auto` record at the same
/// point says it ran (the package runs the same dispatch on the same shape and device).
fn fill_picked(records: &mut [Record], own: &[Record]) {
    for r in records
        .iter_mut()
        .filter(|r| r.variant == torch::KERNLAB_VARIANT)
    {
        r.picked = own
            .iter()
            .find(|a| {
                a.variant == "auto"
                    && a.op == r.op
                    && a.dtype == r.dtype
                    && a.shape == r.shape
                    && a.params == r.params
            })
            .and_then(|a| a.picked.clone());
    }
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
    tritons: &TritonPlans,
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
        let package = package_variant(cfg, device, op, params);
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
            package,
            &tritons.made_for(op, dtype),
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
                let mut records = torch::to_records(&doc, &shapes, params, report.copy_gbps())?;
                if package.is_some() {
                    fill_picked(&mut records, &report.records);
                    report
                        .torch_notes
                        .push(package_note(op, dtype, shapes.len(), &records));
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

    fn record(variant: &str, tier: super::super::RecordTier, rows: usize) -> Record {
        let mut r = Record::blank(
            softmax::OP,
            variant,
            tier,
            crate::runtime::device::DeviceKind::Cuda,
            DType::BF16,
            &[rows, 1000],
            &softmax::OP.default_params(),
            1,
        );
        r.status = Status::Ok;
        r
    }

    #[test]
    fn the_package_column_s_note_counts_it_and_says_why_the_rest_failed() {
        use super::super::RecordTier::Torch;
        let mut bad = record(torch::KERNLAB_VARIANT, Torch, 64);
        bad.status = Status::Error;
        bad.note = Some("the kernlab package here was built from other sources".into());
        let recs = vec![
            record("torch_native", Torch, 8),
            record(torch::KERNLAB_VARIANT, Torch, 8),
            bad.clone(),
            bad,
        ];
        let n = package_note(softmax::OP, DType::BF16, 4, &recs);
        assert!(
            n.starts_with(
                "kernlab_do_bench: kernlab's `auto` called through the kernlab Python package"
            ),
            "{n}"
        );
        assert!(n.contains("at 1 of 4 softmax bf16 shape(s)"), "{n}");
        assert!(n.contains("; 2 failed or in error, the first with: the kernlab package here was built from other sources"), "{n}");
        assert!(
            n.ends_with("; 1 not returned by the script (its log says why)"),
            "{n}"
        );
        let all = package_note(softmax::OP, DType::BF16, 1, &recs[..2]);
        assert!(all.ends_with("at 1 of 1 softmax bf16 shape(s)"), "{all}");
    }

    #[test]
    fn the_package_column_takes_auto_s_pick_at_its_own_point() {
        use super::super::RecordTier::{Kernlab, Torch};
        let mut own = vec![
            record("auto", Kernlab(crate::ops::Tier::Cuda), 8),
            record("auto", Kernlab(crate::ops::Tier::Cuda), 64),
            record("v3_block_regs", Kernlab(crate::ops::Tier::Cuda), 8),
        ];
        own[0].picked = Some("v2_warp_row".into());
        own[1].picked = Some("v3_block_regs".into());
        own[2].picked = Some("not auto".into());
        let mut theirs = vec![
            record(torch::KERNLAB_VARIANT, Torch, 8),
            record(torch::KERNLAB_VARIANT, Torch, 64),
            record(torch::KERNLAB_VARIANT, Torch, 512),
            record("torch_native", Torch, 8),
        ];
        fill_picked(&mut theirs, &own);
        let picked: Vec<_> = theirs.iter().map(|r| r.picked.as_deref()).collect();
        assert_eq!(
            picked,
            [Some("v2_warp_row"), Some("v3_block_regs"), None, None]
        );
    }
}
