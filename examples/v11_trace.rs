//! Where a chunk's time goes in v11 (`v11_deal`): the stamps of every step of a chunk's life
//! and each row's merge on the GPU's own clock (src/ops/softmax_trace.rs, `v11`).
//!
//! `KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 cargo run --release --example v11_trace -- ROWS COLS [DTYPE] [CALLS]`
//! e.g. `... -- 256 1048576 f32` (on the GPU machine: `.gpu/bin/v11_trace`). The output is
//! first checked against the f64 reference (NaN-poisoned), then CALLS traced launches (default
//! 3) each print their chunks' and rows' steps. v11 runs with `KERNLAB_V11`'s settings. The
//! stamps cost a few instructions and stores a chunk; kernels built without the macro have
//! none of them. Only the first `v11::CHUNKS` chunks (and `v11::ROWS` rows) are traced.
use anyhow::{bail, ensure, Context, Result};
use kernlab::ops::softmax_trace::v11 as trace;
use kernlab::{DType, Device, DeviceSpec, Init, Params, Tensor};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 2 {
        bail!("usage: KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 v11_trace ROWS COLS [DTYPE] [CALLS]");
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
        bail!("v11_trace runs a CUDA kernel and needs a GPU");
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
    kernlab::ops::softmax::run_named("v11_deal", &p, &x, &mut y)?;
    let reference = kernlab::ops::softmax::reference(&x.to_f64_vec()?, cols, &p);
    let check = kernlab::validate::compare(&y.to_f64_vec()?, &reference, cols, dtype);
    ensure!(
        check.passed,
        "v11 {dtype} {rows}×{cols}: {}",
        check.describe()
    );
    eprintln!(
        "v11 {dtype} {rows}×{cols}: valid (max rel err {:.1e})",
        check.max_rel_err
    );
    let tuning = kernlab::ops::softmax::V11Tuning::from_env();
    let pack = 16 / dtype.size();
    let cpr = (cols / pack).div_ceil(tuning.chunk).max(1);
    for call in 1..=calls {
        trace::clear(&cuda, dtype)?;
        kernlab::ops::softmax::run_named("v11_deal", &p, &x, &mut y)?;
        cuda.sync()?;
        let t = trace::read(&cuda, dtype)?;
        let s = trace::summarize(&t, rows, cpr);
        let traced = 2.0 * (s.chunks * tuning.chunk * 16) as f64;
        println!(
            "call {call}: {cpr} chunks of {} KB a row; {:.0} GB/s over the traced chunks' span",
            tuning.chunk * 16 / 1024,
            if s.span > 0.0 {
                traced / s.span
            } else {
                f64::NAN
            },
        );
        println!("{s}");
    }
    Ok(())
}
