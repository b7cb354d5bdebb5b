//! Softmax with the input and the output laid out alike at a chosen row stride, which `kernlab
//! bench` cannot do (its `--row-stride` strides the input only; the output is contiguous, as
//! PyTorch's). For experiments on how a row's placement costs: an odd width at its own
//! stride (rows that start anywhere in a 32-byte sector, a sector shared by two rows) against
//! the same width at a stride that starts every row on a 16- or 32-byte boundary.
//!
//! `cargo run --release --example softmax_layout -- VARIANT DTYPE ROWS COLS LD[,LD…] [REP_MS]`
//! e.g. `softmax_layout v8_onchip bf16 4096 4097 4097,4104,4112`. Each layout is validated
//! against f64 (NaN-poisoned output, gaps between rows left NaN and checked to stay so), then
//! timed as `kernlab bench` does (L2 flushed before each call); the layouts are timed in turn,
//! three rounds, and each round's median printed.
use anyhow::{bail, ensure, Context, Result};
use kernlab::bench::harness::{CudaTimer, TimingOpts};
use kernlab::{DType, Device, DeviceSpec, Init, Params, Tensor};

fn main() -> Result<()> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if a.len() < 5 {
        bail!("usage: softmax_layout VARIANT DTYPE ROWS COLS LD[,LD…] [REP_MS]");
    }
    let variant = a[0].as_str();
    let dtype: DType = a[1].parse().map_err(anyhow::Error::msg)?;
    let rows: usize = a[2].parse().context("ROWS")?;
    let cols: usize = a[3].parse().context("COLS")?;
    ensure!(rows >= 1 && cols >= 1, "ROWS and COLS must be at least 1");
    let lds = a[4]
        .split(',')
        .map(|s| s.parse::<usize>().context("LD"))
        .collect::<Result<Vec<_>>>()?;
    let rep_ms: f64 = a.get(5).map_or(Ok(50.0), |s| s.parse()).context("REP_MS")?;
    let (dev, line) = Device::open(DeviceSpec::Auto)?;
    eprintln!("{line}");
    let Some(cuda) = dev.cuda().cloned() else {
        bail!("softmax_layout times CUDA kernels and needs a GPU");
    };
    let p = Params::default();
    let mut layouts = Vec::new();
    for &ld in &lds {
        ensure!(
            ld >= cols,
            "a row stride of {ld} is less than {cols} columns"
        );
        let init = Init::Normal {
            mean: 0.0,
            std: 2.0,
        };
        let x = Tensor::random(&[rows, cols], dtype, init, 7 + ld as u64, Some(ld), &dev)?;
        let mut y = Tensor::empty_strided(&[rows, cols], &[ld, 1], dtype, &dev)?;
        y.poison_nan()?;
        kernlab::ops::softmax::run_named(variant, &p, &x, &mut y)?;
        let reference = kernlab::ops::softmax::reference(&x.to_f64_vec()?, cols, &p);
        let check = kernlab::validate::compare(&y.to_f64_vec()?, &reference, cols, dtype);
        ensure!(
            check.passed,
            "{variant} {dtype} {rows}×{cols} at stride {ld}: {}",
            check.describe()
        );
        // The gaps between rows were NaN-poisoned and must not be written.
        let host = y.to_cpu()?;
        let data = host.cpu_data().context("host copy")?.clone();
        let flat = Tensor::from_cpu(data, &[(rows - 1) * ld + cols], &[1])?.to_f64_vec()?;
        for r in 0..rows.saturating_sub(1) {
            for c in cols..ld {
                ensure!(
                    flat[r * ld + c].is_nan(),
                    "stride {ld}: row {r} wrote past its width at column {c}"
                );
            }
        }
        eprintln!(
            "{variant} {dtype} {rows}×{cols} stride {ld}: valid (max rel err {:.1e})",
            check.max_rel_err
        );
        layouts.push((ld, x, y));
    }
    let opts = TimingOpts {
        warmup_ms: 10.0,
        rep_ms,
        ..TimingOpts::default()
    };
    let mut timer = CudaTimer::new(&cuda)?;
    let bytes = 2.0 * (rows * cols * dtype.size()) as f64;
    for round in 1..=3 {
        for (ld, x, y) in layouts.iter_mut() {
            let s = timer.time(&opts, &mut || {
                kernlab::ops::softmax::run_named(variant, &p, x, y)
            })?;
            println!(
                "round {round} stride {ld}: {:.2} µs, {:.0} GB/s ({} calls)",
                s.median_ms * 1e3,
                bytes / s.median_ms / 1e6,
                s.calls
            );
        }
    }
    Ok(())
}
