//! Where a chunk's time goes in v11 (`v11_deal`): the stamps of every step of a chunk's life
//! and each row's merge on the GPU's own clock (src/ops/softmax_trace.rs, `v11`).
//!
//! `KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 cargo run --release --example v11_trace -- ROWS COLS [DTYPE] [CALLS]`
//! e.g. `... -- 256 1048576 f32` (on the GPU machine: `.gpu/bin/v11_trace`). The output is
//! first checked against the f64 reference (NaN-poisoned), then CALLS traced launches (default
//! 3) each print their chunks' and rows' steps. v11 runs with `KERNLAB_V11`'s settings. The
//! stamps cost a few instructions and stores a chunk; kernels built without the macro have
//! none of them. Only the first `v11::CHUNKS` chunks (and `v11::ROWS` rows) are traced.
use anyhow::Result;
use kernlab::ops::softmax;
use kernlab::ops::softmax_trace::v11 as trace;

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let kernlab::ops::softmax_trace::TraceRun {
        rows,
        cols,
        dtype,
        calls,
        cuda,
        p,
        x,
        mut y,
    } = kernlab::ops::softmax_trace::trace_run(
        &a,
        "KERNLAB_NVRTC_DEFINES=KL_V11_TRACE=1 v11_trace ROWS COLS [DTYPE] [CALLS]",
        "v11_deal",
        trace::clear,
    )?;
    let tuning = softmax::V11Tuning::from_env();
    // The launch's own plan (chunks a row) for the shape just run.
    let name = softmax::v11_kernel(tuning.chunk, dtype);
    let cpr = softmax::v11_plan(&cuda, &name, cols / (16 / dtype.size()), rows, tuning)?.cpr;
    for call in 1..=calls {
        trace::clear(&cuda, dtype)?;
        softmax::run_named("v11_deal", &p, &x, &mut y)?;
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
