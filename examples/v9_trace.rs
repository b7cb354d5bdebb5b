//! Where a wide row's time goes in v9 (`v9_gridsync`): each CTA's own clock stamps around its
//! loads, the exchange with the row's other CTAs, and its stores (src/ops/softmax_trace.rs).
//!
//! `KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 cargo run --release --example v9_trace -- ROWS COLS [DTYPE] [CALLS]`
//! e.g. `... -- 256 1048576 f32` (on the GPU machine: `.gpu/bin/v9_trace`). The output is first
//! checked against the f64 reference (NaN-poisoned), then CALLS traced launches (default 3) each
//! print their rows' medians. The stamps cost a few instructions a row; the kernels without the
//! macro have none of them. Nothing here flushes the L2: at the widths v9 runs (≥ 1 Mi f32
//! columns by default) a launch reads far more than the L2 holds. v9 runs as `auto` would run
//! it, so `KERNLAB_V9` settings apply (`KERNLAB_V9=smpair=1` traces the smpair form wherever it runs, `smpair=0` never). Each call
//! also prints each CTA's lateness at its reduce and the SMs the CTAs ran on (`%smid`), how
//! alike neighbouring SMs' lateness is (SM s against s^1, s^2, s^4 and s^64), and for every SM
//! its lateness, when its loads went out, its load time and its stores.
use anyhow::Result;
use kernlab::ops::softmax_trace as trace;
use kernlab::DType;

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let trace::TraceRun {
        rows,
        cols,
        dtype,
        calls,
        cuda,
        p,
        x,
        mut y,
    } = trace::trace_run(
        &a,
        "KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 v9_trace ROWS COLS [DTYPE] [CALLS]",
        "v9_gridsync",
        trace::clear,
    )?;
    let bytes = 2.0 * (rows * cols * dtype.size()) as f64;
    for call in 1..=calls {
        trace::clear(&cuda, dtype)?;
        kernlab::ops::softmax::run_named("v9_gridsync", &p, &x, &mut y)?;
        cuda.sync()?;
        let (meta, stamps) = trace::read(&cuda, dtype)?;
        let rows_t = trace::rows(&meta, &stamps);
        let s = trace::summarize(&rows_t, &stamps);
        println!(
            "call {call}: grid {} CTAs, G = {} a row, {} groups, {}; {:.0} GB/s over the stamps' span",
            meta.grid,
            meta.g,
            meta.groups(),
            if meta.smpair {
                "smpair"
            } else if meta.pingpong {
                "ping-pong"
            } else {
                "plain"
            },
            if s.span > 0.0 { bytes / s.span } else { f64::NAN }
        );
        println!("{s}");
        // Are the late CTAs the same ones row after row?
        let per_cta = trace::lateness(&meta, &stamps);
        let mut late: Vec<(usize, f64)> = per_cta
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, l)| l.is_finite())
            .collect();
        late.sort_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(first), Some(last)) = (late.first(), late.last()) {
            let q = |f: f64| late[((late.len() - 1) as f64 * f).round() as usize].1 / 1e3;
            println!(
                "  CTAs' median lateness at reduce, µs: min {:.2}, p25 {:.2}, median {:.2}, \
                 p75 {:.2}, max {:.2} (CTA {} {:.2}, CTA {} {:.2})",
                first.1 / 1e3,
                q(0.25),
                q(0.5),
                q(0.75),
                last.1 / 1e3,
                first.0,
                first.1 / 1e3,
                last.0,
                last.1 / 1e3
            );
            let slow: Vec<String> = late
                .iter()
                .rev()
                .take(8)
                .map(|(b, l)| format!("{b}:{:.1}", l / 1e3))
                .collect();
            println!("  latest CTAs (CTA:µs): {}", slow.join(" "));
        }
        // The same by SM: does a slow SM make both its CTAs late?
        let sms = trace::sm_ids(&cuda, dtype)?;
        let half = meta.grid / 2;
        let shared = (0..half.min(sms.len()))
            .filter(|&b| b + half < sms.len() && sms[b].is_some() && sms[b] == sms[b + half])
            .count();
        let by = trace::lateness_by_sm(&per_cta, &sms);
        let show = |s: &trace::SmLate| {
            let c: Vec<String> = s
                .ctas
                .iter()
                .map(|(b, l)| format!("{b}:{:.1}", l / 1e3))
                .collect();
            format!("SM {} [{}]", s.sm, c.join(" "))
        };
        println!(
            "  {} SMs; CTAs b and b + {half} share an SM in {shared} of {half} pairs; \
             correlation of an SM's two CTAs' lateness {} (SMs of two CTAs)",
            by.len(),
            match trace::sm_pair_correlation(&by) {
                r if r.is_nan() => "– (too few)".to_string(),
                r => format!("{r:.2}"),
            }
        );
        // Neighbouring SM indices (2k and 2k + 1 may share a TPC; 4k … 4k + 3 more) against
        // indices apart.
        let link = |f: fn(u32) -> u32| match trace::sm_link_correlation(&by, f) {
            r if r.is_nan() => "–".to_string(),
            r => format!("{r:.2}"),
        };
        println!(
            "  correlation of SMs' lateness: s with s^1 {}, s^2 {}, s^4 {}, s^64 {}",
            link(|s| s ^ 1),
            link(|s| s ^ 2),
            link(|s| s ^ 4),
            link(|s| s ^ 64)
        );
        // Every SM: its lateness at reduce, how late its loads went out (after its row's
        // first), how long they took to land and be reduced, and its stores; means over its
        // CTAs of their medians, µs.
        let by_sm = |v: Vec<f64>| -> std::collections::BTreeMap<u32, f64> {
            trace::lateness_by_sm(&v, &sms)
                .into_iter()
                .map(|s| (s.sm, s.mean / 1e3))
                .collect()
        };
        let start = by_sm(trace::per_cta(&meta, &stamps, |c, row| {
            (c[1] - row.iter().map(|c| c[1]).min().unwrap_or(0)) as f64
        }));
        let load = by_sm(trace::per_cta(&meta, &stamps, |c, _| (c[2] - c[1]) as f64));
        let store = by_sm(trace::per_cta(&meta, &stamps, |c, _| (c[4] - c[3]) as f64));
        let mut in_order: Vec<&trace::SmLate> = by.iter().collect();
        in_order.sort_by_key(|s| s.sm);
        let all: Vec<String> = in_order
            .iter()
            .map(|s| {
                let g = |m: &std::collections::BTreeMap<u32, f64>| m.get(&s.sm).copied();
                format!(
                    "{}:{:.1}/{:.1}/{:.1}/{:.1}",
                    s.sm,
                    s.mean / 1e3,
                    g(&start).unwrap_or(f64::NAN),
                    g(&load).unwrap_or(f64::NAN),
                    g(&store).unwrap_or(f64::NAN)
                )
            })
            .collect();
        println!(
            "  every SM (SM:late/loads out/load/stores, µs): {}",
            all.join(" ")
        );
        let top: Vec<String> = by.iter().take(6).map(show).collect();
        let bottom: Vec<String> = by.iter().rev().take(3).map(show).collect();
        println!("  latest SMs: {}", top.join(", "));
        println!("  earliest SMs: {}", bottom.join(", "));
        if !meta.pingpong && dtype == DType::F32 {
            println!(
                "  (the plain f32 form spills 20 bytes when traced: its figures may run slow)"
            );
        }
    }
    Ok(())
}
