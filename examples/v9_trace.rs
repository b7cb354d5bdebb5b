//! Where a wide row's time goes in v9 (`v9_gridsync`): each CTA's own clock stamps around its
//! loads, the exchange with the row's other CTAs, and its stores (src/ops/softmax_trace.rs).
//!
//! `KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 cargo run --release --example v9_trace -- ROWS COLS [DTYPE] [CALLS]`
//! e.g. `... -- 256 1048576 f32` (on the GPU machine: `.gpu/bin/v9_trace`). The output is first
//! checked against the f64 reference (NaN-poisoned), then CALLS traced launches (default 3) each
//! print their rows' medians. The stamps cost a few instructions a row; the kernels without the
//! macro have none of them. Nothing here flushes the L2: at the widths v9 runs (≥ 1 Mi f32
//! columns by default) a launch reads far more than the L2 holds.
use anyhow::{bail, ensure, Context, Result};
use kernlab::ops::softmax_trace as trace;
use kernlab::{DType, Device, DeviceSpec, Init, Params, Tensor};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 2 {
        bail!("usage: KERNLAB_NVRTC_DEFINES=KL_V9_TRACE=1 v9_trace ROWS COLS [DTYPE] [CALLS]");
    }
    let rows: usize = a[0].parse().context("ROWS")?;
    let cols: usize = a[1].parse().context("COLS")?;
    ensure!(rows >= 1 && cols >= 1, "ROWS and COLS must be at least 1");
    let dtype: DType = a
        .get(2)
        .map_or(Ok(DType::F32), |s| s.parse())
        .map_err(anyhow::Error::msg)?;
    let calls: usize = a.get(3).map_or(Ok(3), |s| s.parse()).context("CALLS")?;
    let (dev, line) = Device::open(DeviceSpec::Auto)?;
    eprintln!("{line}");
    let Some(cuda) = dev.cuda().cloned() else {
        bail!("v9_trace runs a CUDA kernel and needs a GPU");
    };
    // Fails at once, saying what to set, when the kernels were built without the stamps.
    trace::clear(&cuda, dtype)?;
    let p = Params::default();
    let init = Init::Normal {
        mean: 0.0,
        std: 2.0,
    };
    let x = Tensor::random(&[rows, cols], dtype, init, 11, None, &dev)?;
    let mut y = Tensor::empty(&[rows, cols], dtype, &dev)?;
    y.poison_nan()?;
    kernlab::ops::softmax::run_named("v9_gridsync", &p, &x, &mut y)?;
    let reference = kernlab::ops::softmax::reference(&x.to_f64_vec()?, cols, &p);
    let check = kernlab::validate::compare(&y.to_f64_vec()?, &reference, cols, dtype);
    ensure!(
        check.passed,
        "v9 {dtype} {rows}×{cols}: {}",
        check.describe()
    );
    eprintln!(
        "v9 {dtype} {rows}×{cols}: valid (max rel err {:.1e})",
        check.max_rel_err
    );
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
            if meta.pingpong { "ping-pong" } else { "plain" },
            if s.span > 0.0 { bytes / s.span } else { f64::NAN }
        );
        println!("{s}");
        if !meta.pingpong && dtype == DType::F32 {
            println!(
                "  (the plain f32 form spills 20 bytes when traced: its figures may run slow)"
            );
        }
    }
    Ok(())
}
