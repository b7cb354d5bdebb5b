//! The verdict under a table with PyTorch columns: where kernlab's `auto` (and the same `auto`
//! called in PyTorch's process) stands against PyTorch native and torch.compile, point by point.

use super::*;

/// The PyTorch columns kernlab's dispatch is set against (issue 5's "never slower than PyTorch
/// native or torch.compile"): at each point, the faster of the two that was timed.
pub const PYTORCH_RIVALS: [&str; 2] = ["torch_native", "torch_compile"];

/// The word the baselines script puts in a record's note (`HOST_BOUND` there) where an
/// iteration of do_bench's loop took the host as long as the flush and the call took the GPU:
/// its time then holds host time, not only the GPU's.
pub const HOST_BOUND: &str = "host-bound";

fn host_bound(r: &Record) -> bool {
    r.note.as_deref().is_some_and(|n| n.contains(HOST_BOUND))
}

/// Where `auto` and its call in PyTorch's process (`kernlab_do_bench`) stand against
/// [`PYTORCH_RIVALS`], point by point, in µs a call: one line for each of the two that was
/// timed beside a rival, listing the points where it was slower (by how much, and against
/// which), and saying at how many of the points it was judged the time on either side was
/// [`HOST_BOUND`]. A gap under 0.005 µs is level. Where kernlab's own calls were not timed as
/// do_bench times PyTorch's (`timing`: without the flush, or as CUDA graphs), `auto`'s line says
/// so. Where both sides were timed in rounds (`--repeat`: kernlab's repeats, the script's
/// rounds), a gap within the larger of their spreads counts as level, and the line says how
/// many. Where the script timed a call again with every launch queued ahead
/// (`Record::queued_ms`: the call's GPU time, no host time in it), a second line judges the
/// same points with those queued medians in place of do_bench's: kernel against kernel, as
/// kernlab's harness, which queues its calls, times its own. Where both sides have settled
/// medians (`Record::settled_ms`: calls under 1 ms, timed with the stream parked behind each
/// flush, so that the host's pace is out of the time), a third line judges by those alone, a
/// point only where every rival timed there has one; a gap under [`SETTLED_LEVEL_US`] is level.
/// Empty when no rival was timed (no `--torch`, or PyTorch missing).
pub fn against_pytorch(
    records: &[Record],
    timing: &crate::tools::bench::harness::TimingOpts,
) -> Vec<String> {
    let us = |r: &Record| match (r.status, r.median_ms) {
        (Status::Ok, Some(ms)) if ms > 0.0 => Some(ms * 1e3),
        _ => None,
    };
    // The time a record stands at: do_bench's median (`gpu` false), or, where the baselines
    // script also timed the call with every launch queued ahead, that queued median; and
    // whether it was swapped. kernlab's own calls have no queued median: its harness queues
    // them already (a few µs of host work a call against the flush's ~60 µs of GPU time).
    // In the settled form every call stands at its settled median, or is not judged.
    let at = |r: &Record, form: Form| -> Option<(f64, bool)> {
        let t = us(r)?;
        match (form, r.queued_ms, r.settled_ms) {
            (Form::Settled, _, Some(q)) if q > 0.0 => Some((q * 1e3, true)),
            (Form::Settled, _, _) => None,
            (Form::Queued, Some(q), _) if q > 0.0 => Some((q * 1e3, true)),
            _ => Some((t, false)),
        }
    };
    // The same op, dtype and shape, computing the same thing (`form`: the GeLU form, log_softmax,
    // linear's epilogue; parameters an op ignores, such as matmul's activation, do not count).
    let same_point = |a: &Record, b: &Record| {
        a.op == b.op
            && a.dtype == b.dtype
            && a.shape == b.shape
            && a.params.form() == b.params.form()
    };
    let unlike = match (timing.flush, timing.graph) {
        (_, Some(_)) => Some("kernlab's calls were timed as CUDA graphs (--graph)"),
        (false, None) => Some("kernlab's calls were timed without the L2 flush (--no-flush)"),
        (true, None) => None,
    };
    let several_ops = records.iter().any(|r| r.op != records[0].op);
    let points = |n: usize| {
        if n == 1 {
            "1 point".to_string()
        } else {
            format!("{n} points")
        }
    };
    let mut lines = Vec::new();
    // (variant, whether it is a record of the PyTorch script, how the line names it)
    for (mine, in_torch, what) in [
        ("auto", false, "`auto`"),
        (
            crate::tools::bench::torch::KERNLAB_VARIANT,
            true,
            "`kernlab_do_bench` (auto through the kernlab package, timed in PyTorch's process)",
        ),
    ] {
        // The points judged, those slower, those with a host-bound time on either side, those
        // where a queued median stood in for one, and those slower by less than the spread of
        // both sides' rounds (`--repeat`), which count as level.
        let judge = |form: Form| {
            let (mut judged, mut behind, mut hosted, mut swapped, mut noise) =
                (0, Vec::new(), 0, 0, 0);
            for r in records
                .iter()
                .filter(|r| r.variant == mine && (r.tier == RecordTier::Torch) == in_torch)
            {
                let Some((t, mine_swapped)) = at(r, form) else {
                    continue;
                };
                let timed: Vec<_> = records
                    .iter()
                    .filter(|o| {
                        o.tier == RecordTier::Torch
                            && PYTORCH_RIVALS.contains(&o.variant.as_str())
                            && same_point(o, r)
                            && us(o).is_some()
                    })
                    .collect();
                let rivals: Vec<_> = timed
                    .iter()
                    .filter_map(|&o| at(o, form).map(|(u, sw)| (u, sw, o)))
                    .collect();
                // The settled form judges a point only where every rival has its settled time.
                if form == Form::Settled && rivals.len() < timed.len() {
                    continue;
                }
                let Some(&(best, best_swapped, o)) =
                    rivals.iter().min_by(|a, b| a.0.total_cmp(&b.0))
                else {
                    continue;
                };
                judged += 1;
                let hb = host_bound(r) || host_bound(o);
                hosted += hb as usize;
                swapped += (mine_swapped || best_swapped) as usize;
                // Both sides timed in rounds, and neither time a queued median (the spread is
                // the do_bench medians'): a gap within the larger spread is noise.
                let within = match (r.spread, o.spread, mine_swapped || best_swapped) {
                    _ if form == Form::Settled => t - best < SETTLED_LEVEL_US,
                    (Some(a), Some(b), false) => {
                        crate::tools::bench::harness::within_noise(t, a, best, b)
                    }
                    _ => false,
                };
                if t - best < 0.005 {
                    continue;
                }
                if within {
                    noise += 1;
                    continue;
                }
                let name = o.variant.strip_prefix("torch_").unwrap_or(&o.variant);
                let at = if several_ops {
                    format!("{} {} {}", r.op, r.dtype, shape_str(&r.shape))
                } else {
                    format!("{} {}", r.dtype, shape_str(&r.shape))
                };
                let mark = if hb && form == Form::DoBench {
                    format!("; {HOST_BOUND}")
                } else {
                    String::new()
                };
                behind.push(format!(
                    "{at} ({} against {name}'s {}, +{}{mark})",
                    fmt_us(t),
                    fmt_us(best),
                    fmt_us(t - best),
                ));
            }
            (judged, behind, hosted, swapped, noise)
        };
        let tally = |judged: usize, behind: &[String]| {
            if behind.is_empty() {
                if judged == 1 {
                    "the one point".to_string()
                } else {
                    format!("all {judged} points")
                }
            } else {
                format!("{} of {}", judged - behind.len(), points(judged))
            }
        };
        let slower = |behind: &[String]| {
            if behind.is_empty() {
                String::new()
            } else {
                format!("; slower, in µs a call, at {}", behind.join(", "))
            }
        };
        let (judged, behind, hosted, _, noise) = judge(Form::DoBench);
        if judged == 0 {
            continue;
        }
        let noise_note = |noise: usize| {
            format!(
                "{noise} of them behind by less than the spread of both sides' rounds (--repeat), \
                 counted level"
            )
        };
        let mut notes = Vec::new();
        if noise > 0 {
            notes.push(noise_note(noise));
        }
        if hosted > 0 {
            notes.push(format!(
                "{hosted} of them with a {HOST_BOUND} time on one side or both: see its note"
            ));
        }
        if let (false, Some(u)) = (in_torch, unlike) {
            notes.push(format!(
                "{u}, PyTorch's by do_bench with its flush: not like for like"
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        lines.push(format!(
            "{what} against PyTorch native and torch.compile: at or ahead at {}{notes}{}",
            tally(judged, &behind),
            slower(&behind)
        ));
        let (kjudged, kbehind, _, swapped, knoise) = judge(Form::Queued);
        if swapped > 0 {
            let mut knotes = vec![format!(
                "at {}, {}",
                points(swapped),
                if in_torch {
                    "both sides' calls timed again with every launch queued ahead of the GPU"
                } else {
                    "PyTorch's calls timed again with every launch queued ahead of the GPU, as \
                     kernlab's harness queues its own"
                }
            )];
            if knoise > 0 {
                knotes.push(noise_note(knoise));
            }
            if let (false, Some(u)) = (in_torch, unlike) {
                knotes.push(format!("{u}: not like for like"));
            }
            lines.push(format!(
                "{what} against their queued times: at or ahead at {} ({}){}",
                tally(kjudged, &kbehind),
                knotes.join("; "),
                slower(&kbehind)
            ));
        }
        let (sjudged, sbehind, _, _, snoise) = judge(Form::Settled);
        if sjudged > 0 {
            let mut snotes = vec![format!(
                "{} timed again in the settled form, the stream parked behind each flush until it \
                 finished: no host pace in the time",
                if in_torch {
                    "both sides' calls"
                } else {
                    "kernlab's calls and PyTorch's"
                }
            )];
            if snoise > 0 {
                snotes.push(format!(
                    "{snoise} of them behind by less than {SETTLED_LEVEL_US} µs, the settled \
                     form's reach, counted level"
                ));
            }
            // (kernlab takes settled medians only flushed call by call, never with --graph or
            // --no-flush, so `unlike` has nothing to add here.)
            if !in_torch {
                snotes.push(
                    "kernlab's process against PyTorch's, where the same kernel has read up to \
                     0.7 µs apart: `kernlab_do_bench`'s line is kernel against kernel"
                        .into(),
                );
            }
            lines.push(format!(
                "{what} against their settled times: at or ahead at {} ({}){}",
                tally(sjudged, &sbehind),
                snotes.join("; "),
                slower(&sbehind)
            ));
        }
    }
    lines
}

/// Which time of a call the verdict judges by: do_bench's median; the queued median where the
/// script took one (do_bench's elsewhere); the settled median (calls without one not judged).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    DoBench,
    Queued,
    Settled,
}

/// A settled time behind a rival's by less than this (µs) counts as level: within one process
/// the settled form's medians of one call move by less than that between rounds
/// (docs/perf-notes.md, "timing").
pub const SETTLED_LEVEL_US: f64 = 0.1;

/// µs with two decimals below 100, whole µs above.
fn fmt_us(v: f64) -> String {
    if v.abs() < 100.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{gelu, linear, matmul, softmax, Params, Tier};
    use crate::runtime::device::DeviceKind;
    use crate::runtime::dtype::DType;

    fn timed(
        op: Op,
        variant: &str,
        tier: RecordTier,
        shape: &[usize],
        p: &Params,
        us: Option<f64>,
    ) -> Record {
        let mut r = Record::blank(op, variant, tier, DeviceKind::Cuda, DType::F32, shape, p, 1);
        r.median_ms = us.map(|u| u / 1e3);
        r.status = if us.is_some() {
            Status::Ok
        } else {
            Status::Failed
        };
        r
    }

    /// The verdict against PyTorch counts only points where `auto` (or its package call) and a rival
    /// (native or compile, not Triton) were both timed, at the same op, dtype, shape and
    /// params, and names the faster rival and the gap where kernlab was slower.
    #[test]
    fn the_verdict_against_pytorch_takes_the_faster_rival_at_the_same_point() {
        let p = softmax::OP.default_params();
        let lsm = Params::new(softmax::SoftmaxParams { log_softmax: true });
        let k = RecordTier::Kernlab(Tier::Cuda);
        let t = RecordTier::Torch;
        let s = softmax::OP;
        let mut recs = vec![
            // 4096×256: compile the faster rival and ahead of auto by 0.33 µs; Triton faster
            // still, but not a rival.
            timed(s, "auto", k, &[4096, 256], &p, Some(6.94)),
            timed(s, "torch_native", t, &[4096, 256], &p, Some(7.2)),
            timed(s, "torch_compile", t, &[4096, 256], &p, Some(6.61)),
            timed(s, "triton", t, &[4096, 256], &p, Some(5.0)),
            timed(s, "kernlab_do_bench", t, &[4096, 256], &p, Some(7.31)),
            // 4096×512: compile failed, so native is the rival, and auto is ahead of it.
            timed(s, "auto", k, &[4096, 512], &p, Some(8.0)),
            timed(s, "torch_native", t, &[4096, 512], &p, Some(9.0)),
            timed(s, "torch_compile", t, &[4096, 512], &p, None),
            timed(s, "kernlab_do_bench", t, &[4096, 512], &p, Some(8.5)),
            // 4096×1024: no rival timed; not judged.
            timed(s, "auto", k, &[4096, 1024], &p, Some(12.0)),
            timed(s, "torch_native", t, &[4096, 1024], &p, None),
            // 4096×2048: auto failed; not judged, though native was timed.
            timed(s, "auto", k, &[4096, 2048], &p, None),
            timed(s, "torch_native", t, &[4096, 2048], &p, Some(1.0)),
            // log_softmax at 4096×4096: native's plain softmax there is not its rival.
            timed(s, "auto", k, &[4096, 4096], &lsm, Some(30.0)),
            timed(s, "torch_native", t, &[4096, 4096], &p, Some(20.0)),
            // A kernlab variant named like the package's column is not that column.
            timed(s, "kernlab_do_bench", k, &[4096, 512], &p, Some(99.0)),
        ];
        let flushed = crate::tools::bench::harness::TimingOpts::default();
        let verdict = |recs: &[Record]| against_pytorch(recs, &flushed);
        let v = verdict(&recs);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(
            v[0],
            "`auto` against PyTorch native and torch.compile: at or ahead at 1 of 2 points; \
             slower, in µs a call, at f32 4096×256 (6.94 against compile's 6.61, +0.33)"
        );
        assert!(
            v[1].starts_with("`kernlab_do_bench` (auto through the kernlab package"),
            "{}",
            v[1]
        );
        // The package column's line where it is behind compile at 4096×256 (here and with rounds below).
        let package_behind = "at or ahead at 1 of 2 points; slower, in µs a call, at f32 4096×256 \
                             (7.31 against compile's 6.61, +0.70)";
        assert!(v[1].ends_with(package_behind), "{}", v[1]);

        // A host-bound time on either side is counted, and marked where kernlab was slower.
        let mut hb = recs.clone();
        for r in hb
            .iter_mut()
            .filter(|r| r.variant == "kernlab_do_bench" && r.shape == [4096, 256])
        {
            r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."));
        }
        let v = verdict(&hb);
        assert_eq!(v[0], verdict(&recs)[0], "auto's line moved");
        assert!(
            v[1].contains(
                "1 of 2 points (1 of them with a host-bound time on one side or both: see its \
                 note); slower"
            ) && v[1].ends_with("(7.31 against compile's 6.61, +0.70; host-bound)"),
            "{}",
            v[1]
        );
        assert_eq!(v.len(), 2, "no queued median, no second line: {v:?}");

        // With queued medians, a second line judges kernel against kernel, each PyTorch-side
        // call at its queued median where it has one (kernlab's own at its median). At 256 the
        // package column's host-bound 7.31 µs stands at its queued 6.50, ahead of compile's queued 6.70;
        // auto's 6.94 is behind that 6.70. At 512 native's host-bound 9.00 stands at its queued
        // 7.90, ahead of auto's 8.00 and the package column's queued 8.40. Native's host-bound 7.20 at
        // 256, not the faster rival there, marks nothing in the first lines.
        let mut q = hb.clone();
        for r in q.iter_mut() {
            match (r.variant.as_str(), r.shape[1]) {
                ("kernlab_do_bench", 256) => r.queued_ms = Some(6.5e-3),
                ("kernlab_do_bench", 512) => r.queued_ms = Some(8.4e-3),
                ("torch_compile", 256) => r.queued_ms = Some(6.7e-3),
                ("torch_native", 256) => {
                    r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."))
                }
                ("torch_native", 512) => {
                    r.note = Some(format!("{HOST_BOUND}: do_bench's median ..."));
                    r.queued_ms = Some(7.9e-3);
                }
                _ => {}
            }
        }
        let v = verdict(&q);
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(
            v[0].contains("at or ahead at 1 of 2 points (1 of them with a host-bound time")
                && v[0].ends_with("at f32 4096×256 (6.94 against compile's 6.61, +0.33)"),
            "{}",
            v[0]
        );
        assert!(
            v[2].contains("at or ahead at 1 of 2 points (2 of them with a host-bound time")
                && v[2].ends_with("(7.31 against compile's 6.61, +0.70; host-bound)"),
            "{}",
            v[2]
        );
        assert_eq!(
            v[1],
            "`auto` against their queued times: at or ahead at 0 of 2 points (at 2 points, \
             PyTorch's calls timed again with every launch queued ahead of the GPU, as kernlab's \
             harness queues its own); slower, in µs a call, at f32 4096×256 (6.94 against \
             compile's 6.70, +0.24), f32 4096×512 (8.00 against native's 7.90, +0.10)"
        );
        assert_eq!(
            v[3],
            "`kernlab_do_bench` (auto through the kernlab package, timed in PyTorch's process) against their queued \
             times: at or ahead at 1 of 2 points (at 2 points, both sides' calls timed again \
             with every launch queued ahead of the GPU); slower, in µs a call, at f32 4096×512 \
             (8.40 against native's 7.90, +0.50)"
        );
        // Timed as graphs, auto's second line says it too.
        let graphs = crate::tools::bench::harness::TimingOpts {
            graph: Some(10),
            ..Default::default()
        };
        let v = against_pytorch(&q, &graphs);
        assert!(v[1].contains("(--graph): not like for like)"), "{}", v[1]);

        // The settled form: a line for each side wherever it and every rival timed at a point
        // have settled medians (no mixing with other times). At 256 auto's settled 6.10 is
        // behind compile's 6.05 by less than SETTLED_LEVEL_US (level); the package column's 6.30 is
        // behind by 0.25. At 512 compile failed and native settled at 8.20: auto's 8.10 is
        // ahead; the package column has no settled median there, so it is not judged.
        let mut st = q.clone();
        for r in st.iter_mut() {
            r.settled_ms = match (r.variant.as_str(), r.shape[1], r.tier) {
                ("auto", 256, RecordTier::Kernlab(_)) => Some(6.10e-3),
                ("auto", 512, RecordTier::Kernlab(_)) => Some(8.10e-3),
                ("torch_compile", 256, _) => Some(6.05e-3),
                ("torch_native", 256, _) => Some(6.60e-3),
                ("torch_native", 512, _) => Some(8.20e-3),
                ("kernlab_do_bench", 256, RecordTier::Torch) => Some(6.30e-3),
                _ => None,
            };
        }
        let v = verdict(&st);
        assert_eq!(v.len(), 6, "{v:?}");
        assert_eq!(
            v[2],
            "`auto` against their settled times: at or ahead at all 2 points (kernlab's calls \
             and PyTorch's timed again in the settled form, the stream parked behind each flush \
             until it finished: no host pace in the time; 1 of them behind by less than 0.1 µs, \
             the settled form's reach, counted level; kernlab's process against PyTorch's, where \
             the same kernel has read up to 0.7 µs apart: `kernlab_do_bench`'s line is kernel against \
             kernel)"
        );
        // `auto` without its settled time at a point is not judged there, though its rivals
        // have theirs.
        let mut no_auto = st.clone();
        no_auto
            .iter_mut()
            .filter(|r| r.variant == "auto" && r.shape[1] == 512)
            .for_each(|r| r.settled_ms = None);
        let v = verdict(&no_auto);
        assert!(
            v[2].starts_with("`auto` against their settled times: at or ahead at the one point"),
            "{}",
            v[2]
        );
        assert_eq!(
            v[5],
            "`kernlab_do_bench` (auto through the kernlab package, timed in PyTorch's process) against their \
             settled times: at or ahead at 0 of 1 point (both sides' calls timed again in the \
             settled form, the stream parked behind each flush until it finished: no host pace \
             in the time); slower, in µs a call, at f32 4096×256 (6.30 against compile's 6.05, \
             +0.25)"
        );
        // A rival without its settled time keeps the point out of the settled line: native at
        // 256 is slower, but compile's settled time is missing, so only 512 is judged.
        st.iter_mut()
            .filter(|r| r.variant == "torch_compile")
            .for_each(|r| r.settled_ms = None);
        let v = verdict(&st);
        assert!(
            v[2].starts_with("`auto` against their settled times: at or ahead at the one point"),
            "{}",
            v[2]
        );

        // Both sides in rounds: auto's 0.33 µs behind compile is within auto's 10% spread
        // (0.69 µs) and counts as level; the package column's 0.70 is not (band 0.33 µs).
        let mut rounds = recs.clone();
        for r in rounds.iter_mut() {
            match (r.variant.as_str(), r.shape[1]) {
                ("auto", 256) => r.spread = Some(0.1),
                ("torch_compile", 256) => r.spread = Some(0.05),
                ("kernlab_do_bench", 256) => r.spread = Some(0.01),
                _ => {}
            }
        }
        let v = verdict(&rounds);
        assert_eq!(
            v[0],
            "`auto` against PyTorch native and torch.compile: at or ahead at all 2 points (1 of \
             them behind by less than the spread of both sides' rounds (--repeat), counted level)"
        );
        assert!(v[1].ends_with(package_behind), "{}", v[1]);
        // One side without rounds: no noise band.
        rounds[2].spread = None;
        assert!(verdict(&rounds)[0].contains("at or ahead at 1 of 2 points;"));

        // Timed as graphs or unflushed, kernlab's side is not like for like: `auto`'s line says
        // so; the package column, timed by do_bench, does not.
        let v = against_pytorch(&recs, &graphs);
        assert!(v[0].contains("(kernlab's calls were timed as CUDA graphs (--graph), PyTorch's by do_bench with its flush: not like for like)"), "{}", v[0]);
        assert!(!v[1].contains("like for like"), "{}", v[1]);
        let unflushed = crate::tools::bench::harness::TimingOpts {
            flush: false,
            ..Default::default()
        };
        assert!(against_pytorch(&recs, &unflushed)[0].contains("without the L2 flush"));

        // With another op in the report, a point names its op; level (or within 0.005 µs) is
        // not slower.
        recs.push(timed(gelu::OP, "auto", k, &[8, 8], &p, Some(3.0)));
        recs.push(timed(gelu::OP, "torch_compile", t, &[8, 8], &p, Some(3.0)));
        recs.push(timed(gelu::OP, "auto", k, &[8, 16], &p, Some(3.004)));
        recs.push(timed(gelu::OP, "torch_compile", t, &[8, 16], &p, Some(3.0)));
        let v = verdict(&recs);
        assert!(v[0].contains("at or ahead at 3 of 4 points"), "{}", v[0]);
        assert!(v[0].contains("at softmax f32 4096×256 (6.94"), "{}", v[0]);

        // matmul is one point; linear's epilogue is its form, so a record of another
        // activation is another point.
        let gelu_act = linear::OP.default_params();
        let no_act = Params::new(matmul::GemmParams {
            act: matmul::Activation::None,
            bias: true,
        });
        assert_ne!(gelu_act, no_act, "the test needs two different activations");
        let mm_p = matmul::OP.default_params();
        let mm = [
            timed(matmul::OP, "auto", k, &[64, 64, 64], &mm_p, Some(10.0)),
            timed(
                matmul::OP,
                "torch_native",
                t,
                &[64, 64, 64],
                &mm_p,
                Some(9.0),
            ),
            timed(linear::OP, "auto", k, &[64, 64, 64], &gelu_act, Some(10.0)),
            timed(
                linear::OP,
                "torch_native",
                t,
                &[64, 64, 64],
                &no_act,
                Some(9.0),
            ),
        ];
        let v = verdict(&mm);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(
            v[0].contains("at or ahead at 0 of 1 point;")
                && v[0].contains("matmul f32 64×64×64 (10.00 against native's 9.00"),
            "{}",
            v[0]
        );

        // Ahead everywhere: one short line; no rival at all: nothing.
        let ahead = [
            timed(s, "auto", k, &[1, 32], &p, Some(4.0)),
            timed(s, "torch_native", t, &[1, 32], &p, Some(4.5)),
        ];
        assert_eq!(
            verdict(&ahead),
            ["`auto` against PyTorch native and torch.compile: at or ahead at the one point"]
        );
        assert!(verdict(&ahead[..1]).is_empty());
        assert!(verdict(&[]).is_empty());
    }

    /// The word the verdict looks for is the one the baselines script writes.
    #[test]
    fn the_host_bound_word_is_the_baselines_script_s() {
        let script = include_str!("../../../../baselines/torch_baselines.py");
        assert!(
            script.contains(&format!("HOST_BOUND = \"{HOST_BOUND}\"")),
            "baselines/torch_baselines.py no longer defines HOST_BOUND = \"{HOST_BOUND}\""
        );
    }
}
