//! Every variant of every op against the f64 reference, on awkward shapes, every dtype,
//! special values and strided rows. One body per behaviour; `test_device!` makes it a CPU
//! test and a CUDA test.

use crate::{test_device, test_gpu};
use kernlab::check::{self, Reference};
use kernlab::ops::gelu::{GeluApprox, GeluParams};
use kernlab::ops::softmax::SoftmaxParams;
use kernlab::ops::{self, gelu, softmax, Variant};
use kernlab::runtime::error::Error;
use kernlab::runtime::tensor::Tensor;
use kernlab::{DType, Device, Init, Op, Params, Tier};

fn variants(op: Op, dev: &Device) -> Vec<&'static Variant> {
    ops::variants_for(op, dev.kind())
        .filter(|v| v.tier != Tier::Reference)
        .collect()
}

/// The op's f64 oracle on all of `x` (a one-input op).
fn reference(op: Op, p: &Params, x: &Tensor) -> Vec<f64> {
    let host = x.to_cpu().unwrap();
    op.reference(std::slice::from_ref(&host), None, p).unwrap()
}

/// A softmax launcher (taking softmax's own parameters and one input) as a registry row's run.
macro_rules! as_run {
    ($f:path) => {
        (|p: &Params, x: &[&Tensor], y: &mut Tensor| $f(p.get()?, x[0], y)) as kernlab::ops::RunFn
    };
}

/// Softmax's parameters, erased as the registry takes them.
fn softmax_params(log_softmax: bool) -> Params {
    Params::new(SoftmaxParams { log_softmax })
}

/// Run a one-input variant once into a NaN-poisoned output and compare it, row by row, with
/// `reference`.
fn validate_variant(
    v: &Variant,
    p: &Params,
    x: &Tensor,
    reference: &[f64],
) -> kernlab::Result<(kernlab::check::Check, Tensor)> {
    let (_, cols, _) = x.rows_cols();
    let r = Reference {
        op: v.op,
        values: reference.to_vec(),
        rows: None,
        cols,
        unit: "rows",
        params: p.clone(),
        out_shape: x.shape().to_vec(),
    };
    check::validate(v, p, &[x], &r)
}

/// Widest row a register-resident softmax version holds, if it has a limit: with 16-byte packs
/// where `vec` (rows whose width and stride are pack multiples), else one element a slot, or
/// for v3 its shifted packs where `shift` (rows misaligned alike in x and y).
fn width_limit(v: &Variant, dt: DType, vec: bool, shift: bool) -> Option<usize> {
    if v.op != softmax::OP {
        return None;
    }
    match v.name {
        "v2_warp_row" => Some(softmax::v2_max_cols(dt, vec)),
        "v3_block_regs" if !vec && shift => Some(softmax::v3_max_cols_shift(dt)),
        "v3_block_regs" => Some(softmax::v3_max_cols(dt, vec)),
        "triton" => Some(softmax::TRITON_MAX_COLS),
        _ => None,
    }
}

/// Run `v` on `x` (a CPU tensor, copied to `dev`) and require agreement with the reference.
/// Returns the output as f64. A register-resident variant may refuse a row wider than it
/// holds, with UnsupportedShape — and only then (returns None).
fn check(dev: &Device, v: &Variant, p: &Params, x_host: &Tensor, what: &str) -> Option<Vec<f64>> {
    let reference = reference(v.op, p, x_host);
    let x = x_host.to_device(dev).unwrap();
    match validate_variant(v, p, &x, &reference) {
        Ok((c, y)) => {
            assert!(
                c.passed,
                "{} {} {what} {:?}: {}",
                v.id(),
                x.dtype(),
                x.shape(),
                c.describe()
            );
            Some(y.to_f64_vec().unwrap())
        }
        Err(Error::UnsupportedShape { why, .. }) => {
            // The limit of the form the row takes: packed where its width and stride are pack
            // multiples (fresh allocations are 256-byte aligned), else scalar.
            let (_, cols, ldx) = x.rows_cols();
            let pack = 16 / x.dtype().size();
            let reg_limit = width_limit(
                v,
                x.dtype(),
                cols % pack == 0 && ldx % pack == 0,
                softmax::packs_layout_ok(&x),
            );
            // v8, v9 and v11 move only 16-byte packs: they refuse rows x and y cannot both
            // peel.
            let packs_only = ["v8_onchip", "v9_gridsync", "v11_deal"].contains(&v.name);
            // v8 holds a row in at most 16 CTAs' registers and shared memory (one CTA's
            // before sm_90).
            let v8_limit = (v.name == "v8_onchip")
                .then(|| {
                    dev.cuda()
                        .map(|d| softmax::v8_max_cols(x.dtype(), &d.props))
                })
                .flatten();
            // v9 holds a row in every resident CTA's registers and shared memory.
            let v9_limit = (v.name == "v9_gridsync")
                .then(|| dev.cuda().and_then(|d| softmax::v9_max_cols(d, x.dtype())))
                .flatten();
            // A version for a newer architecture than the device's (v11: sm_90).
            let too_new = dev
                .cuda()
                .is_some_and(|d| v.min_arch / 10 > d.props.compute_capability.0 as u32);
            assert!(
                (packs_only && !softmax::packs_layout_ok(&x))
                    || reg_limit.is_some_and(|l| cols > l)
                    || v8_limit.is_some_and(|l| cols > l)
                    || v9_limit.is_some_and(|l| cols > l)
                    || (too_new && v.name != "auto"),
                "{} refused {:?} {what}: {why}",
                v.id(),
                x.shape()
            );
            None
        }
        Err(e) if crate::common::tool_missing(v, &e) => None,
        Err(e) => panic!("{} {} {what} {:?}: {e}", v.id(), x.dtype(), x.shape()),
    }
}

/// `v` run on `x` (a CPU tensor, copied to `dev`) into an output that starts finite (0.25
/// everywhere), as f64: rows a kernel must make NaN cannot pass by keeping the NaN that
/// `check`'s poisoned output starts with.
fn run_into_finite(dev: &Device, v: &Variant, p: &Params, x_host: &Tensor) -> Vec<f64> {
    let x = x_host.to_device(dev).unwrap();
    let mut y = Tensor::from_f64(&vec![0.25; x.numel()], x.shape(), x.dtype())
        .unwrap()
        .to_device(dev)
        .unwrap();
    v.run(p, &[&x], &mut y)
        .unwrap_or_else(|e| panic!("{} {:?}: {e}", v.id(), x.shape()));
    if let Some(d) = dev.cuda() {
        d.sync().unwrap();
    }
    y.to_f64_vec().unwrap()
}

fn rand(shape: &[usize], dt: DType, init: Init, seed: u64) -> Tensor {
    Tensor::random(shape, dt, init, seed, None, &Device::Cpu).unwrap()
}

const GELU_SHAPES: &[&[usize]] = &[
    &[1, 1],
    &[1, 5],
    &[1, 8],
    &[1, 9],
    &[3, 31],
    &[2, 33],
    &[2, 1025],
    &[1, 65537],
    &[1823, 781],
    &[2, 3, 5],
    &[4097],
];

fn gelu_matches_reference_on_awkward_shapes(dev: &Device) {
    for approx in [GeluApprox::Tanh, GeluApprox::Erf] {
        let p = Params::new(GeluParams { gelu: approx });
        for v in variants(gelu::OP, dev) {
            for dt in DType::ALL {
                for (i, shape) in GELU_SHAPES.iter().enumerate() {
                    let x = rand(
                        shape,
                        dt,
                        Init::Normal {
                            mean: 0.0,
                            std: 3.0,
                        },
                        100 + i as u64,
                    );
                    check(dev, v, &p, &x, approx.name());
                }
            }
        }
    }
}
test_device!(
    gelu_matches_reference_on_awkward_shapes,
    super::gelu_matches_reference_on_awkward_shapes
);

fn gelu_handles_extreme_and_special_inputs(dev: &Device) {
    let vals = [
        -1e30,
        -100.0,
        -10.0,
        -5.0,
        -1e-30,
        -0.0,
        0.0,
        1e-30,
        5.0,
        10.0,
        100.0,
        1e30,
        f64::INFINITY,
        f64::NAN,
        0.5,
        -0.5,
        3.0,
    ];
    for approx in [GeluApprox::Tanh, GeluApprox::Erf] {
        let p = Params::new(GeluParams { gelu: approx });
        for v in variants(gelu::OP, dev) {
            for dt in DType::ALL {
                let x = Tensor::from_f64(&vals, &[1, vals.len()], dt).unwrap();
                let y = check(dev, v, &p, &x, "special values").unwrap();
                assert!(y[13].is_nan(), "{}: NaN in must give NaN out", v.id());
                assert_eq!(y[12], f64::INFINITY, "{}: gelu(+inf) = +inf", v.id());
            }
        }
    }
}
test_device!(
    gelu_handles_extreme_and_special_inputs,
    super::gelu_handles_extreme_and_special_inputs
);

fn softmax_shapes() -> Vec<Vec<usize>> {
    let mut s = Vec::new();
    for cols in [
        1, 2, 4, 8, 31, 32, 33, 255, 256, 781, 1024, 1025, 2048, 4097, 8192, 65537, 70000,
    ] {
        for rows in [1, 3] {
            s.push(vec![rows, cols]);
        }
    }
    s.push(vec![4096, 33]);
    s.push(vec![4096, 256]);
    // The wide rows issue 5 names: the split-row and online versions' territory.
    s.push(vec![3, 131072]);
    s.push(vec![1, 1048577]);
    s.push(vec![1823, 781]);
    s.push(vec![2, 3, 40]);
    s
}

fn softmax_matches_reference_on_awkward_shapes(dev: &Device) {
    let p = softmax::OP.default_params();
    let init = Init::NormalWithOutliers {
        std: 2.0,
        every: 50,
        scale: 20.0,
    };
    for v in variants(softmax::OP, dev) {
        for dt in DType::ALL {
            for (i, shape) in softmax_shapes().iter().enumerate() {
                let x = rand(shape, dt, init, 7 + i as u64);
                let Some(y) = check(dev, v, &p, &x, "random") else {
                    continue;
                };
                // Properties: every output in [0, 1], every row sums to 1.
                let cols = *shape.last().unwrap();
                for (r, row) in y.chunks(cols).enumerate() {
                    assert!(
                        row.iter().all(|&p| (0.0..=1.0).contains(&p)),
                        "{} row {r} leaves [0,1]",
                        v.id()
                    );
                    let s: f64 = row.iter().sum();
                    assert!(
                        (s - 1.0).abs() <= 2.0 * dt.tolerance(),
                        "{} {dt} {shape:?} row {r} sums to {s}",
                        v.id()
                    );
                }
            }
        }
    }
}
test_device!(
    softmax_matches_reference_on_awkward_shapes,
    super::softmax_matches_reference_on_awkward_shapes
);

/// Rows with −inf entries, all −inf, a NaN, +inf, huge outliers, and a first half of −inf (a
/// split row's parts that hold only −inf), at widths that take each kernel path (warp row
/// with packs, scalar, block row, online, split).
fn softmax_special_values_follow_pytorch(dev: &Device) {
    let p = softmax::OP.default_params();
    let ninf = f64::NEG_INFINITY;
    for cols in [4usize, 33, 2048, 70000] {
        let mut vals = Vec::new();
        let mut row = |f: &dyn Fn(usize) -> f64| vals.extend((0..cols).map(f));
        row(&|c| if c % 3 == 0 { ninf } else { (c % 7) as f64 }); // some −inf
        row(&|_| ninf); // all −inf → NaN row
        row(&|c| if c == cols / 2 { f64::NAN } else { 1.0 }); // a NaN → NaN row
        row(&|c| if c == cols - 1 { f64::INFINITY } else { 0.5 }); // +inf → NaN row
        row(&|c| if c == 1.min(cols - 1) { 80.0 } else { -80.0 }); // one dominant element
        row(&|c| (c as f64 * 0.37).sin() * 5.0); // ordinary
        row(&|c| if c < cols / 2 { ninf } else { (c % 5) as f64 }); // split rows: parts of −inf
        let x64 = vals;
        for v in variants(softmax::OP, dev) {
            for dt in DType::ALL {
                let x = Tensor::from_f64(&x64, &[7, cols], dt).unwrap();
                if check(dev, v, &p, &x, "special values").is_none() {
                    continue;
                }
                // The properties below on an output that starts finite, not NaN-poisoned.
                let y = run_into_finite(dev, v, &p, &x);
                let r = |i: usize| &y[i * cols..(i + 1) * cols];
                assert!(r(0).iter().enumerate().all(|(c, &p)| if c % 3 == 0 {
                    p == 0.0
                } else {
                    p > 0.0
                }));
                assert!(
                    r(1).iter().all(|p| p.is_nan()),
                    "{}: a row of all −inf gives NaN",
                    v.id()
                );
                assert!(
                    r(2).iter().all(|p| p.is_nan()),
                    "{}: a NaN poisons its row",
                    v.id()
                );
                assert!(
                    r(3).iter().all(|p| p.is_nan()),
                    "{}: +inf gives NaN (inf − inf)",
                    v.id()
                );
                assert!((r(4)[1.min(cols - 1)] - 1.0).abs() < 1e-2);
                // A row whose first half is −inf: zeros there, the rest positive, summing to 1
                // (a part of a split row holding only −inf adds nothing, rather than NaN).
                assert!(
                    r(6).iter().enumerate().all(|(c, &p)| if c < cols / 2 {
                        p == 0.0
                    } else {
                        p > 0.0
                    }),
                    "{}: a row half −inf",
                    v.id()
                );
                let s: f64 = r(6).iter().sum();
                assert!(
                    (s - 1.0).abs() <= 2.0 * dt.tolerance(),
                    "{}: sums to {s}",
                    v.id()
                );
            }
        }
    }
}
test_device!(
    softmax_special_values_follow_pytorch,
    super::softmax_special_values_follow_pytorch
);

/// Logits near the top of each dtype's range (bf16 and f32 past 2.3e38, where a folded
/// exponent's m·log2e would overflow f32 and give NaN rows; f16 near 65504), of ±3000 (past
/// the fold, the exact form) and of 1000 (just inside it): every variant matches the f64
/// reference, with no NaN. (The fold's rounding at ±3000 would stay within the 16-bit
/// tolerances; the rows past 2.3e38 are what a missing guard fails.)
fn softmax_large_logits_match_the_reference(dev: &Device) {
    let p = softmax::OP.default_params();
    for cols in [4usize, 33, 2048, 70000] {
        for v in variants(softmax::OP, dev) {
            for dt in DType::ALL {
                let top = if dt == DType::F16 { 60000.0 } else { 3.0e38 };
                let mut vals = Vec::new();
                // Ties at the top (each gets 1/count), the rest far below.
                vals.extend((0..cols).map(|c| match c % 3 {
                    0 => top,
                    1 => top / 2.0,
                    _ => -top / 4.0,
                }));
                // Around 3000: distinct values a few units apart.
                vals.extend((0..cols).map(|c| 3000.0 + ((c * 7) % 13) as f64 * 0.75));
                // Around −3000.
                vals.extend((0..cols).map(|c| -3000.0 - ((c * 5) % 11) as f64 * 0.5));
                // Around 1000, just inside the 16-bit kernels' folded exponent (|max| ≤ 1024).
                vals.extend((0..cols).map(|c| 1000.0 + ((c * 3) % 17) as f64 * 0.5));
                let x = Tensor::from_f64(&vals, &[4, cols], dt).unwrap();
                check(dev, v, &p, &x, "large logits");
            }
        }
    }
}
test_device!(
    softmax_large_logits_match_the_reference,
    super::softmax_large_logits_match_the_reference
);

/// Rows with a stride larger than the width (the gap holds NaN): variants that accept strided
/// rows must read only the row; the others must refuse with a clear error.
fn softmax_strided_rows(dev: &Device) {
    let p = softmax::OP.default_params();
    for v in variants(softmax::OP, dev) {
        for dt in DType::ALL {
            for (rows, cols, ld) in [(5, 31, 40), (4, 64, 72), (3, 1000, 1008), (2, 5000, 5003)] {
                let xh = Tensor::random(
                    &[rows, cols],
                    dt,
                    Init::Normal {
                        mean: 0.0,
                        std: 2.0,
                    },
                    3,
                    Some(ld),
                    &Device::Cpu,
                )
                .unwrap();
                if v.strided_rows {
                    check(dev, v, &p, &xh, "strided rows");
                } else {
                    let x = xh.to_device(dev).unwrap();
                    let mut y = Tensor::empty(x.shape(), dt, dev).unwrap();
                    let e = v.run(&p, &[&x], &mut y).unwrap_err();
                    assert!(
                        matches!(
                            e,
                            Error::NotContiguous {
                                operand: "input",
                                ..
                            }
                        ),
                        "{}: {e}",
                        v.id()
                    );
                }
                // A strided output is refused by every variant, and named as the output.
                let x = xh.to_device(dev).unwrap();
                let mut y = Tensor::empty_strided(&[rows, cols], &[ld, 1], dt, dev).unwrap();
                let e = v.run(&p, &[&x], &mut y).unwrap_err();
                assert!(
                    e.to_string().contains("needs a contiguous output"),
                    "{}: {e}",
                    v.id()
                );
            }
        }
    }
}
test_device!(softmax_strided_rows, super::softmax_strided_rows);

/// v3 moves 16-byte packs on rows that start off a 16-byte boundary alike in x and y (odd
/// widths of contiguous rows): its shifted kernels, K = 4 and K = 8, validated against the
/// reference, up to the widest row they hold ([`softmax::v3_max_cols_shift`]: one more column
/// is refused), 16-bit rows from [`softmax::V3_SPLIT_16_FROM`] columns on the split kernels
/// (f32 rows never), and its scalar path where x's rows are misaligned unlike y's.
fn softmax_v3_shifts_odd_rows(dev: &Device) {
    let p = softmax::OP.default_params();
    let v3 = ops::find(softmax::OP, "v3_block_regs", dev.kind()).unwrap();
    let init = Init::Normal {
        mean: 0.0,
        std: 2.0,
    };
    for dt in DType::ALL {
        let pack = 16 / dt.size();
        let most = softmax::v3_max_cols_shift(dt);
        let split = if dt == DType::F32 {
            "shift"
        } else {
            "shiftsplit"
        };
        let (last, first) = (softmax::V3_SHIFT_16_UPTO, softmax::V3_SPLIT_16_FROM + 1);
        // (rows, cols, x's row stride, the kernel's form and K)
        // 16 rows of an odd width start at every offset in a pack (rows r·cols), so their
        // partial first and last packs take every range of lanes.
        let cases = [
            (16, 4097, 4097, format!("{split}_k4")),
            (16, 1001, 1001, "shift_k4".to_string()),
            (3, 1001, 1001 + pack, "shift_k4".to_string()),
            (3, last, last, "shift_k4".to_string()),
            (3, first, first + pack, format!("{split}_k4")),
            (2, most, most, format!("{split}_k8")),
            (3, most / 2 + 3, most / 2 + 3, format!("{split}_k8")),
            (3, 1001, 1002, "scalar_k4".to_string()),
        ];
        assert!(
            cases.iter().all(|c| c.1 % pack != 0),
            "{dt}: every case is an odd width"
        );
        for (rows, cols, ld, form) in cases {
            let what = format!("{dt} {rows}x{cols} (row stride {ld})");
            let xh = Tensor::random(&[rows, cols], dt, init, 11, Some(ld), &Device::Cpu).unwrap();
            check(dev, v3, &p, &xh, &what).unwrap_or_else(|| panic!("{what}: refused"));
            let x = xh.to_device(dev).unwrap();
            let mut y = Tensor::empty(&[rows, cols], dt, dev).unwrap();
            let kernel = softmax::v3_kernel(&x, &mut y, softmax::V3Tuning::DEFAULT)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(
                kernel,
                format!("softmax_v3_block_regs_{form}_{dt}"),
                "{what}"
            );
        }
        let x = Tensor::random(&[2, most + 1], dt, init, 11, None, dev).unwrap();
        let mut y = Tensor::empty(&[2, most + 1], dt, dev).unwrap();
        let e = v3.run(&p, &[&x], &mut y).unwrap_err();
        assert!(
            matches!(e, Error::UnsupportedShape { .. }),
            "{dt} {}: {e}",
            most + 1
        );
    }
}
test_gpu!(
    softmax_v3_shifts_odd_rows,
    super::softmax_v3_shifts_odd_rows
);

type UnaryFn = kernlab::ops::RunFn;

/// The CUDA launchers (the library's unchecked entry points, the registry's `run` functions) write each
/// row at y's own row stride and nothing in the gaps: an output laid out as rows apart by more
/// than their width (NaN-poisoned, gaps included) gets every row right, and its gaps stay NaN.
/// Strides alike in x and y (a peeled odd width at 32-byte-aligned rows), unlike in a pack
/// multiple, and unlike otherwise. A version may refuse a layout it does not take
/// (UnsupportedShape), never write it wrong; an output of another shape is refused.
fn softmax_cuda_writes_rows_at_the_output_stride(dev: &Device) {
    let p = softmax::OP.default_params();
    let cuda: Vec<(&str, UnaryFn)> = variants(softmax::OP, dev)
        .iter()
        .filter(|v| v.device == kernlab::DeviceKind::Cuda && v.name != "manual")
        .map(|v| (v.name, v.run))
        .collect();
    let names: Vec<&str> = cuda.iter().map(|c| c.0).collect();
    assert!(
        names.contains(&"v8_onchip") && names.contains(&"auto"),
        "{names:?}"
    );
    let mut written = std::collections::HashMap::new();
    for dt in DType::ALL {
        let pack = 16 / dt.size();
        for (rows, cols, ldx, ldy) in [
            (5, 31, 40, 48),
            (4, 4097, 4097 + 15 * pack, 4097 + 15 * pack),
            (3, 4097, 4097, 4097 + 2 * pack),
            (3, 1000, 1000, 1003),
            (2, 70000, 70001, 70010),
            // Rows of whole packs at padded strides, x's and y's apart: v8's packed kernel on
            // one CTA a row, then in a cluster.
            (3, 1024, 1024 + pack, 1024 + 2 * pack),
            (2, 65536, 65536 + 4 * pack, 65536),
            (2, 262144, 262144 + pack, 262144 + 3 * pack),
        ] {
            let init = Init::Normal {
                mean: 0.0,
                std: 2.0,
            };
            let x = Tensor::random(&[rows, cols], dt, init, 5, Some(ldx), dev).unwrap();
            let want = reference(softmax::OP, &p, &x);
            for &(name, run) in &cuda {
                let mut y = Tensor::empty_strided(&[rows, cols], &[ldy, 1], dt, dev).unwrap();
                y.poison_nan().unwrap();
                match run(&p, &[&x], &mut y) {
                    Ok(()) => {}
                    Err(Error::UnsupportedShape { .. }) => continue,
                    Err(e) => panic!("{name} {dt} {rows}×{cols} ld {ldx}/{ldy}: {e}"),
                }
                let got = y.to_f64_vec().unwrap();
                let c = kernlab::check::compare::compare(&got, &want, cols, dt);
                assert!(
                    c.passed,
                    "{name} {dt} {rows}×{cols} ld {ldx}/{ldy}: {}",
                    c.describe()
                );
                let host = y.to_cpu().unwrap();
                let flat = Tensor::from_cpu(
                    host.cpu_data().unwrap().clone(),
                    &[(rows - 1) * ldy + cols],
                    &[1],
                )
                .unwrap()
                .to_f64_vec()
                .unwrap();
                for r in 0..rows - 1 {
                    let gap = &flat[r * ldy + cols..(r + 1) * ldy];
                    assert!(
                        gap.iter().all(|v| v.is_nan()),
                        "{name} {dt} {rows}×{cols} ld {ldx}/{ldy}: row {r} wrote past its width"
                    );
                }
                *written.entry(name).or_insert(0) += 1;
            }
        }
    }
    // Every version writes the narrow rows at every dtype; v8 also the odd widths laid out
    // alike (peeled), and auto every layout (what it picks refuses, v4 takes).
    for name in names {
        let n = written.get(name).copied().unwrap_or(0);
        let want = match name {
            "auto" => 15,
            "v8_onchip" => 9,
            _ => 3,
        };
        assert!(n >= want, "{name} wrote {n} of the 15 layouts and dtypes");
    }
    let x = Tensor::random(
        &[4, 64],
        DType::F32,
        Init::Uniform { lo: -1.0, hi: 1.0 },
        1,
        None,
        dev,
    )
    .unwrap();
    let mut y = Tensor::empty(&[4, 32], DType::F32, dev).unwrap();
    let e = softmax::run_named("v3_block_regs", &SoftmaxParams::default(), &x, &mut y).unwrap_err();
    assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
}
test_gpu!(
    softmax_cuda_writes_rows_at_the_output_stride,
    super::softmax_cuda_writes_rows_at_the_output_stride
);

/// The CUDA launchers are public safe functions: called directly, past the registry's checks,
/// with an output of another dtype or size, each refuses it (a kernel would write out of
/// bounds, or only part of it) and leaves the output as it was; an empty input is refused.
fn cuda_launchers_refuse_an_output_of_another_dtype_or_size(dev: &Device) {
    for op in [gelu::OP, softmax::OP] {
        let p = op.default_params();
        for v in variants(op, dev) {
            let run = v.run;
            let x = small_input(DType::F32, dev);
            for (dt, shape) in [
                (DType::BF16, [2, 8]),
                (DType::F16, [2, 8]),
                (DType::F32, [2, 4]),
            ] {
                let mut y = Tensor::from_f64(&vec![f64::NAN; shape[0] * shape[1]], &shape, dt)
                    .unwrap()
                    .to_device(dev)
                    .unwrap();
                let e = run(&p, &[&x], &mut y).expect_err(&format!("{}: {dt} {shape:?}", v.id()));
                assert!(matches!(e, Error::ShapeMismatch { .. }), "{}: {e}", v.id());
                let back = y.to_f64_vec().unwrap();
                assert!(
                    back.iter().all(|v| v.is_nan()),
                    "{}: the output was written",
                    v.id()
                );
            }
            // An empty tensor is refused, not launched with an empty grid.
            let x0 = Tensor::empty(&[0, 64], DType::F32, dev).unwrap();
            let mut y0 = Tensor::empty(&[0, 64], DType::F32, dev).unwrap();
            let e = run(&p, &[&x0], &mut y0).unwrap_err();
            assert!(matches!(e, Error::EmptyTensor { .. }), "{}: {e}", v.id());
        }
    }
}
test_gpu!(
    cuda_launchers_refuse_an_output_of_another_dtype_or_size,
    super::cuda_launchers_refuse_an_output_of_another_dtype_or_size
);

/// The versions that split rows across CTAs: v6 (in registers), v8 (clusters of CTAs holding a
/// row in registers and shared memory), v9 (v8's parts across co-resident CTAs, exchanging as
/// v6) and v11 (chunks dealt on demand). The persistent ones (v6, v9, v11) walk many rows per
/// CTA or group, reuse their exchange slots row after row (each state tagged with its row's
/// number in the launch), and leave the slots zeroed for the next launch. Shapes with more
/// rows than groups, odd widths (a scalar head and tail, different in every row), rows split
/// over many CTAs (v8: clusters of 4 and 8, and its 16-bit and f32 cluster rules), and a second
/// launch (stale states from the first must not pass for new ones) must all match the
/// reference. v9's plain and ping-pong forms are also run forced, where rows take many CTAs
/// and groups walk several rows each. GPU only.
fn softmax_split_rows_walk_many_rows(dev: &Device) {
    let p = softmax::OP.default_params();
    let init = Init::Normal {
        mean: 0.0,
        std: 3.0,
    };
    let shapes: &[(&[usize], &[DType])] = &[
        // Many rows a group (f32 and a 16-bit dtype); an odd width; narrow odd rows.
        (&[300, 40000], &[DType::F32, DType::BF16]),
        (&[2000, 4099], &[DType::F32]),
        (&[1001, 777], &[DType::F16]),
        // Wide rows: v8 in clusters, v9 and v11 across the grid.
        (&[5, 1048576], &[DType::F32]),
        // v8: clusters of 4 CTAs, each holding part of its share in shared memory (odd).
        (&[40, 300001], &[DType::F32]),
        // v8's 16-bit rule (an odd width, peeled) and its f32 rule (packed).
        (&[9, 262147], &[DType::BF16]),
        (&[8, 131072], &[DType::F32]),
        // v9's ping-pong form (from 16 CTAs a row) with groups walking two or three rows.
        (&[12, 1600003], &[DType::F32]),
    ];
    let split = ["v6_split", "v8_onchip", "v9_gridsync", "v11_deal"];
    let found: Vec<_> = variants(softmax::OP, dev)
        .into_iter()
        .filter(|v| split.contains(&v.name))
        .collect();
    assert_eq!(
        found.len(),
        split.len(),
        "the split-row versions registered"
    );
    for v in found {
        for (i, (shape, dts)) in shapes.iter().enumerate() {
            for &dt in *dts {
                let x = rand(shape, dt, init, 90 + i as u64);
                for launch in 0..2 {
                    check(dev, v, &p, &x, &format!("split rows, launch {launch}"));
                }
            }
        }
    }
    // v9's two forms, each forced wherever it can run (its named configurations): the plain
    // one where the ping-pong form is the default, and the ping-pong one at small G with many
    // groups (the default there is plain).
    fn plain(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> kernlab::Result<()> {
        softmax::run_config("v9_gridsync", "no_pingpong", p, x, y)
    }
    fn pingpong(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> kernlab::Result<()> {
        softmax::run_config("v9_gridsync", "pingpong", p, x, y)
    }
    for (form, run) in [("plain", as_run!(plain)), ("ping-pong", as_run!(pingpong))] {
        let forced = forced_version(dev, "v9_gridsync", run);
        for (i, (shape, dts)) in shapes
            .iter()
            .enumerate()
            .filter(|(i, _)| [0, 3, 7].contains(i))
        {
            for &dt in *dts {
                let x = rand(shape, dt, init, 190 + i as u64);
                for launch in 0..2 {
                    check(dev, &forced, &p, &x, &format!("v9 {form}, launch {launch}"));
                }
            }
        }
    }
}
test_gpu!(
    softmax_split_rows_walk_many_rows,
    super::softmax_split_rows_walk_many_rows
);

/// v9's smpair form (each CTA's group and rank from its SM, so an SM's two CTAs are ping-pong
/// partners) against f64, wherever v9's own plan on this device says it runs: it takes a shape
/// exactly when [`softmax::v9_plan`] gives the smpair form, and refuses the others saying why
/// in smpair's terms (an odd width: built without the peel; before sm_90: the compute
/// capability). Each shape it takes runs three times (once unchecked, then twice on fresh
/// inputs against f64, with a ping-pong launch between), so later launches find the places the
/// earlier ones took cleared (a ticket left over would trap or misplace). Two f32 rows of 4096
/// packs for every SM give two groups of one 512-thread part an SM each, the form's home (two
/// CTAs on every SM), on any GPU where the driver fits two such CTAs an SM. GPU only.
fn softmax_v9_smpair_places_match(dev: &Device) {
    let cuda = dev.cuda().expect("a CUDA device");
    let init = Init::Normal {
        mean: 0.0,
        std: 3.0,
    };
    let smpair_tuning = softmax::V9Tuning {
        pingpong: Some(true),
        smpair: Some(true),
        ..softmax::V9Tuning::DEFAULT
    };
    // Whether smpair takes this shape here; a refusal names the form and `because`.
    let takes = |shape: &[usize], dt: DType, because: &str| -> bool {
        let x = rand(shape, dt, init, 7).to_device(dev).unwrap();
        let mut y = Tensor::empty(shape, dt, dev).unwrap();
        match softmax::run_v9_smpair(&SoftmaxParams::default(), &x, &mut y) {
            Ok(()) => true,
            Err(Error::UnsupportedShape { why, .. }) => {
                assert!(why.contains("smpair") && why.contains(because), "{why}");
                false
            }
            Err(e) => panic!("v9 smpair on {shape:?} {dt}: {e}"),
        }
    };
    // An odd width never runs it (built without the peel), whatever the device.
    assert!(!takes(&[8, 1048577], DType::F32, "scalars to peel"));
    if cuda.props.compute_capability.0 < 9 {
        assert!(!takes(&[8, 1048576], DType::F32, "compute capability"));
        println!(
            "skipped: v9's smpair form needs sm_90 (this device is {}); it refused, as it must",
            cuda.arch
        );
        return;
    }
    let smpair = forced_version(dev, "v9_gridsync", as_run!(softmax::run_v9_smpair));
    fn pingpong(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> kernlab::Result<()> {
        softmax::run_config("v9_gridsync", "pingpong", p, x, y)
    }
    let pingpong = forced_version(dev, "v9_gridsync", as_run!(pingpong));
    let home = 4 * 4096 * cuda.props.sm_count as usize;
    let shapes: &[(&[usize], DType, bool)] = &[
        (&[2, home], DType::F32, false),
        (&[8, 1048576], DType::F32, false),
        (&[3, 1048576], DType::F32, false),
        (&[4, 2097152], DType::F16, true),
    ];
    let mut ran = 0;
    for (i, &(shape, dt, log)) in shapes.iter().enumerate() {
        let plan = softmax::v9_plan(cuda, dt, shape[0], shape[1], true, smpair_tuning).unwrap();
        let c = plan.config;
        let took = takes(shape, dt, "groups");
        assert_eq!(
            took,
            plan.form == "smpair",
            "{shape:?} {dt}: {} groups of {} CTAs on {} SMs, the plan's form {}",
            c.groups,
            c.g,
            cuda.props.sm_count,
            plan.form
        );
        if !took {
            continue;
        }
        ran += 1;
        let p = softmax_params(log);
        let x = rand(shape, dt, init, 390 + i as u64);
        check(dev, &smpair, &p, &x, "v9 smpair, launch 0");
        check(
            dev,
            &pingpong,
            &p,
            &x,
            "v9 ping-pong between smpair launches",
        );
        let x = rand(shape, dt, init, 490 + i as u64);
        check(dev, &smpair, &p, &x, "v9 smpair, launch 1");
    }
    // Two of its CTAs on every SM is the smpair form's condition; where the driver says so,
    // the two-group shape is its home.
    let home_plan = softmax::v9_plan(cuda, DType::F32, 2, home, true, smpair_tuning).unwrap();
    if home_plan.smpair_per_sm == Some(2) {
        assert_eq!(home_plan.form, "smpair", "{home_plan:?}");
    }
    println!(
        "v9 smpair ran {ran} of {} shapes on {} SMs",
        shapes.len(),
        cuda.props.sm_count
    );
}
test_gpu!(
    softmax_v9_smpair_places_match,
    super::softmax_v9_smpair_places_match
);

/// Two launches of `v` on fresh inputs of `shape` (seeds `seed` and `seed` + 1, spread as
/// [`DEALT_INIT`]), the second as log_softmax, each checked against the reference: a state a
/// launch leaves behind for the next (a count, a tag, a claim counter) shows as a wrong output.
fn check_two_launches(
    dev: &Device,
    v: &Variant,
    shape: &[usize],
    dt: DType,
    seed: u64,
    what: &str,
) {
    for (launch, log) in [(0, false), (1, true)] {
        let x = rand(shape, dt, DEALT_INIT, seed + launch);
        let p = softmax_params(log);
        check(
            dev,
            v,
            &p,
            &x,
            &format!("{what}, launch {launch}, log {log}"),
        );
    }
}

/// The registered softmax version `name` with its launch replaced by `run` (one of its
/// forms or settings, forced).
fn forced_version(dev: &Device, name: &str, run: kernlab::ops::RunFn) -> Variant {
    let v = variants(softmax::OP, dev)
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("{name} is registered"));
    Variant { run, ..*v }
}

/// The shapes the v11 test deals out (rows of one chunk, partial and empty last ones, odd
/// widths that peel, very wide rows, more rows than CTAs each of many chunks; every dtype),
/// and their inputs' spread.
const DEALT_SHAPES: &[(&[usize], DType)] = &[
    (&[4096, 1025], DType::F32),
    (&[4, 8197], DType::F32),
    (&[333, 65537], DType::BF16),
    (&[9, 1_000_003], DType::F16),
    (&[3, 4_194_305], DType::F32),
    (&[150, 65536], DType::F32),
];
const DEALT_INIT: Init = Init::Normal {
    mean: 0.0,
    std: 3.0,
};

/// v11 in each of its chunk sizes (its named configurations), and with two or three slots a
/// CTA (so the slot ring wraps many times, a consumer warp's claims land in every slot, and a
/// row of many chunks fills most of the grid's slots, near the launcher's deadlock rule; rows
/// past the rule must be refused by it), over shapes whose rows take one chunk, a partial last
/// chunk, an empty last chunk (odd widths whose misaligned rows peel a head and fill one pack
/// fewer), many chunks (f32 4194305 at 8 KB: 2049 a row), and more rows than CTAs, each of many
/// chunks. Each shape runs two launches on different inputs (a claim counter, row count or
/// state left by the first would give wrong outputs or hang), the second as log_softmax. GPU
/// only (sm_90).
fn softmax_v11_chunkings_all_match(dev: &Device) {
    use softmax::{run_v11_tuned, V11Tuning};
    fn tuned<const CHUNK: usize, const SLOTS: usize>(
        p: &Params,
        x: &[&Tensor],
        y: &mut Tensor,
    ) -> kernlab::runtime::error::Result<()> {
        let t = V11Tuning {
            chunk: CHUNK,
            max_slots: SLOTS,
        };
        run_v11_tuned(p.get()?, x[0], y, t)
    }
    let cuda = dev.cuda().expect("a CUDA device");
    if cuda.props.compute_capability.0 < 9 {
        println!(
            "skipped: v11_deal needs sm_90, this device is {}",
            cuda.arch
        );
        return;
    }
    // (label, the tuning, the run with those settings)
    let mut cases: Vec<(String, V11Tuning, kernlab::ops::RunFn)> = Vec::new();
    for c in softmax::V11_CONFIGS {
        let softmax::Tuning::V11(t) = c.tuning else {
            unreachable!("v11's configurations are v11 tunings")
        };
        let run = match (t.chunk, t.max_slots) {
            (512, 24) => tuned::<512, 24> as kernlab::ops::RunFn,
            (1024, 24) => tuned::<1024, 24>,
            (2048, 24) => tuned::<2048, 24>,
            (1024, 8) => tuned::<1024, 8>,
            other => panic!("{}: no run for {other:?}; add one here", c.name),
        };
        cases.push((c.name.to_string(), t, run));
    }
    for (chunk, slots, run) in [
        (2048, 3, tuned::<2048, 3> as kernlab::ops::RunFn),
        (512, 2, tuned::<512, 2>),
    ] {
        let t = V11Tuning {
            chunk,
            max_slots: slots,
        };
        cases.push((format!("chunk {chunk} packs, {slots} slots"), t, run));
    }
    for (label, t, run) in cases {
        let forced = forced_version(dev, "v11_deal", run);
        for (i, &(shape, dt)) in DEALT_SHAPES.iter().enumerate() {
            // A row of more chunks than the grid's slots hold is refused (the deadlock rule):
            // check the refusal names it, and skip the shape for this setting.
            let name = softmax::v11_kernel(t.chunk, dt);
            let packs = shape[1] / (16 / dt.size());
            if let Err(e) = softmax::v11_plan(cuda, &name, packs, shape[0], t) {
                assert!(
                    e.to_string().contains("more than all"),
                    "{label} {shape:?}: {e}"
                );
                continue;
            }
            let seed = 390 + 10 * i as u64;
            check_two_launches(dev, &forced, shape, dt, seed, &format!("v11 {label}"));
        }
    }
}
test_gpu!(
    softmax_v11_chunkings_all_match,
    super::softmax_v11_chunkings_all_match
);

/// Every named configuration of every tunable version (the candidates `kernlab autotune
/// softmax` measures, and what `auto` runs once the cache names one) against f64, on a few
/// shapes where the configurations differ: each validates, or refuses the shape
/// (UnsupportedShape) where its version's own limits say so. An unknown name is an error.
/// GPU only.
fn softmax_named_configurations_match(dev: &Device) {
    let p = softmax::OP.default_params();
    let cases: &[(&str, &[usize], DType)] = &[
        ("v3_block_regs", &[64, 4096], DType::F32),
        ("v3_block_regs", &[33, 1001], DType::BF16),
        ("v8_onchip", &[6, 131072], DType::F32),
        ("v8_onchip", &[4, 262147], DType::BF16),
        ("v9_gridsync", &[6, 1048576], DType::F32),
        ("v11_deal", &[20, 262144], DType::F32),
    ];
    let hopper = dev.cuda().unwrap().props.compute_capability.0 >= 9;
    for (i, &(version, shape, dt)) in cases.iter().enumerate() {
        let x = rand(shape, dt, DEALT_INIT, 600 + i as u64);
        let x_dev = x.to_device(dev).unwrap();
        let reference = reference(softmax::OP, &p, &x);
        for name in softmax::config_names(version) {
            let mut y = Tensor::empty(shape, dt, dev).unwrap();
            y.poison_nan().unwrap();
            match softmax::run_config(version, name, &SoftmaxParams::default(), &x_dev, &mut y) {
                Ok(()) => {
                    let got = y.to_f64_vec().unwrap();
                    let c = kernlab::check::compare::compare(&got, &reference, shape[1], dt);
                    assert!(
                        c.passed,
                        "{version} {name} {dt} {shape:?}: {}",
                        c.describe()
                    );
                }
                // v11 needs sm_90 (bulk copies); the others take these shapes anywhere.
                // v11 needs sm_90 (bulk copies), v8 clusters for rows past one CTA; the
                // others take these shapes anywhere.
                Err(Error::UnsupportedShape { why, .. })
                    if !hopper && ["v8_onchip", "v11_deal"].contains(&version) =>
                {
                    assert!(why.contains("sm_90") || why.contains("clusters"), "{why}")
                }
                Err(e) => panic!("{version} {name} {dt} {shape:?}: {e}"),
            }
        }
    }
    let x = rand(&[2, 64], DType::F32, DEALT_INIT, 1)
        .to_device(dev)
        .unwrap();
    let mut y = Tensor::empty(&[2, 64], DType::F32, dev).unwrap();
    let e = softmax::run_config("v3_block_regs", "k3", &SoftmaxParams::default(), &x, &mut y)
        .unwrap_err();
    assert!(e.to_string().contains("no configuration 'k3'"), "{e}");
}
test_gpu!(
    softmax_named_configurations_match,
    super::softmax_named_configurations_match
);

/// A 2×8 input of `dt` on `dev`, uniform on [−1, 1).
fn small_input(dt: DType, dev: &Device) -> Tensor {
    Tensor::random(
        &[2, 8],
        dt,
        Init::Uniform { lo: -1.0, hi: 1.0 },
        1,
        None,
        dev,
    )
    .unwrap()
}

/// Bad input gets a clear error, never a panic or a silent wrong answer.
fn bad_inputs_get_clear_errors(dev: &Device) {
    let p = softmax::OP.default_params();
    for op in [gelu::OP, softmax::OP] {
        for v in variants(op, dev) {
            // empty tensor
            let x = Tensor::empty(&[0, 4], DType::F32, dev).unwrap();
            let mut y = Tensor::empty(&[0, 4], DType::F32, dev).unwrap();
            assert!(
                matches!(v.run(&p, &[&x], &mut y), Err(Error::EmptyTensor { .. })),
                "{}",
                v.id()
            );
            // shape and dtype mismatch
            let x = small_input(DType::F32, dev);
            let mut y = Tensor::empty(&[2, 9], DType::F32, dev).unwrap();
            assert!(
                matches!(v.run(&p, &[&x], &mut y), Err(Error::ShapeMismatch { .. })),
                "{}",
                v.id()
            );
            let mut y = Tensor::empty(&[2, 8], DType::BF16, dev).unwrap();
            assert!(
                matches!(v.run(&p, &[&x], &mut y), Err(Error::ShapeMismatch { .. })),
                "{}",
                v.id()
            );
            // a dtype the variant does not support (a copy of the row restricted to f32)
            let only_f32 = Variant {
                dtypes: &[DType::F32],
                ..*v
            };
            let xb = small_input(DType::BF16, dev);
            let mut yb = Tensor::empty(&[2, 8], DType::BF16, dev).unwrap();
            let e = only_f32.run(&p, &[&xb], &mut yb).unwrap_err();
            assert!(matches!(e, Error::UnsupportedDtype { .. }), "{e}");
            assert!(
                e.to_string().contains("bf16") && e.to_string().contains("f32"),
                "{e}"
            );
        }
    }
    // A variant for the other device refuses these tensors.
    for v in ops::all().filter(|v| {
        v.device != dev.kind()
            && v.tier != Tier::Reference
            && [gelu::OP, softmax::OP].contains(&v.op)
    }) {
        let x = small_input(DType::F32, dev);
        let mut y = Tensor::empty(&[2, 8], DType::F32, dev).unwrap();
        let e = v.run(&p, &[&x], &mut y).unwrap_err();
        assert!(matches!(e, Error::WrongDevice { .. }), "{}: {e}", v.id());
    }
}
test_device!(
    bad_inputs_get_clear_errors,
    super::bad_inputs_get_clear_errors
);

#[test]
fn asking_for_a_missing_cuda_device_is_a_clear_error() {
    use kernlab::runtime::device::DeviceSpec;
    let e = Device::open(DeviceSpec::Cuda(99)).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::NoCuda(_)), "{msg}");
    assert!(msg.contains("CUDA"), "{msg}");
    // auto never fails: it falls back to the CPU and says why.
    let (d, line) = Device::open(DeviceSpec::Auto).unwrap();
    assert!(line.starts_with("device: "), "{line}");
    if kernlab::runtime::device::cuda_probe().is_err() {
        assert_eq!(d.kind(), kernlab::DeviceKind::Cpu);
        assert!(line.contains("no CUDA GPU"), "{line}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn out_of_device_memory_is_a_clear_error() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let e = Tensor::empty(&[1 << 22, 1 << 22], DType::F32, &dev)
        .err()
        .expect("64 TiB must not fit");
    assert!(matches!(e, Error::OutOfDeviceMemory { .. }), "{e}");
    assert!(e.to_string().contains("out of device memory"), "{e}");
}

/// Workspaces: distinct names in one call, a buffer kept while it is large enough, a larger
/// one made when asked for, and no new one made while the stream captures a CUDA graph.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn workspaces_are_kept_grown_and_refused_where_they_must_be() {
    use cudarc::driver::{sys, DevicePtr};
    if crate::common::cuda().is_none() {
        return;
    }
    // A device of its own: the capture below must not catch other tests' work on a shared
    // stream.
    let dev = kernlab::runtime::device::CudaDevice::open(0).unwrap();
    let ptr = |b: &cudarc::driver::CudaSlice<u8>| b.device_ptr(&dev.stream).0;
    let e = dev
        .with_workspaces([("test ws a", 64), ("test ws a", 64)], |_| Ok(()))
        .unwrap_err();
    assert!(e.to_string().contains("asked for twice"), "{e}");
    let (a0, b0) = dev
        .with_workspaces([("test ws a", 256), ("test ws b", 1024)], |[a, b]| {
            assert!(a.len() >= 256 && b.len() >= 1024);
            Ok((ptr(a), ptr(b)))
        })
        .unwrap();
    assert_ne!(a0, b0);
    // As large or smaller: the same buffer.
    let a1 = dev
        .with_workspace("test ws a", 100, |a| Ok(ptr(a)))
        .unwrap();
    assert_eq!(a1, a0);
    // Larger: a new one.
    let a2 = dev
        .with_workspace("test ws a", 1 << 20, |a| {
            assert!(a.len() >= 1 << 20);
            Ok(ptr(a))
        })
        .unwrap();
    assert_ne!(a2, a0);
    dev.stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    let grow = dev.with_workspace("test ws a", 2 << 20, |_| Ok(()));
    let keep = dev.with_workspace("test ws a", 4096, |a| Ok(ptr(a)));
    let fresh = dev.with_workspace("test ws c", 16, |_| Ok(()));
    let _ = dev.stream.end_capture(sys::CUgraphInstantiate_flags(0));
    let e = grow.unwrap_err().to_string();
    assert!(
        e.contains("CUDA-graph capture") && e.contains("test ws a"),
        "{e}"
    );
    assert_eq!(
        keep.unwrap(),
        a2,
        "a buffer large enough is used during a capture"
    );
    let e = fresh.unwrap_err().to_string();
    assert!(
        e.contains("CUDA-graph capture") && e.contains("test ws c"),
        "{e}"
    );
    // After the capture, growth works again.
    dev.with_workspace("test ws a", 2 << 20, |a| {
        assert!(a.len() >= 2 << 20);
        Ok(())
    })
    .unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn tensors_round_trip_through_the_device() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    for dt in DType::ALL {
        let x = rand(
            &[3, 1001],
            dt,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            9,
        );
        let back = x.to_device(&dev).unwrap().to_cpu().unwrap();
        assert_eq!(x.to_f64_vec().unwrap(), back.to_f64_vec().unwrap());
    }
}

/// A kernel that skips its last element must fail validation (NaN poison), not pass.
#[test]
fn an_unwritten_element_fails_validation() {
    fn skip_last(p: &Params, x: &[&Tensor], y: &mut Tensor) -> kernlab::runtime::error::Result<()> {
        let x = x[0];
        let mut vals = gelu::reference(&x.to_f64_vec()?, p.get()?);
        let mut full = y.to_f64_vec()?;
        let n = vals.len();
        full[..n - 1].copy_from_slice(&vals[..n - 1]);
        vals.clear();
        *y = Tensor::from_f64(&full, x.shape(), x.dtype())?;
        Ok(())
    }
    let base = ops::find(gelu::OP, "fused", kernlab::DeviceKind::Cpu).unwrap();
    let v = Variant {
        run: skip_last,
        ..*base
    };
    let p = gelu::OP.default_params();
    let x = rand(
        &[4, 10],
        DType::F32,
        Init::Normal {
            mean: 0.0,
            std: 1.0,
        },
        5,
    );
    let r = reference(gelu::OP, &p, &x);
    let (c, _) = validate_variant(&v, &p, &x, &r).unwrap();
    assert!(!c.passed && c.special_mismatches == 1, "{}", c.describe());
}

/// Every instruction path of the CPU tier this machine has (`--cpu-path`: portable, avx2,
/// avx2-fma and best): the fused GeLU (both forms), softmax, log_softmax and RMSNorm against f64 in every
/// dtype, on odd widths (one element past a vector, a block, a chunk: the split softmax at
/// 65537), then the special-value and extreme-input cases of every CPU variant.
#[test]
fn the_cpu_tier_matches_the_reference_on_every_instruction_path() {
    use kernlab::runtime::simd;
    let _only = crate::common::cpu_path_lock();
    let cases = [
        (
            gelu::OP,
            Params::new(GeluParams {
                gelu: GeluApprox::Tanh,
            }),
        ),
        (
            gelu::OP,
            Params::new(GeluParams {
                gelu: GeluApprox::Erf,
            }),
        ),
        (softmax::OP, softmax_params(false)),
        (softmax::OP, softmax_params(true)),
        (
            kernlab::ops::rmsnorm::OP,
            kernlab::ops::rmsnorm::OP.default_params(),
        ),
    ];
    let paths = simd::available();
    for &path in &paths {
        simd::set_cap(path);
        for (op, p) in &cases {
            let v = ops::find(*op, "fused", kernlab::DeviceKind::Cpu).unwrap();
            for dt in DType::ALL {
                for (i, w) in [1usize, 7, 15, 17, 31, 513, 4097, 65537]
                    .into_iter()
                    .enumerate()
                {
                    let shape = [if w > 4097 { 1 } else { 3 }, w];
                    let seed = 40 + i as u64;
                    let host = check::make_inputs(*op, &shape, dt, seed, None, p).unwrap();
                    let r = check::make_reference(*op, &shape, &host, p, seed).unwrap();
                    let x: Vec<&Tensor> = host.iter().collect();
                    let (c, _) = check::validate(v, p, &x, &r).unwrap();
                    assert!(
                        c.passed,
                        "{op}{} {dt} {shape:?} on the {} path: {}",
                        p.form_suffix(),
                        path.name(),
                        c.describe()
                    );
                }
            }
        }
        gelu_handles_extreme_and_special_inputs(&Device::Cpu);
        softmax_special_values_follow_pytorch(&Device::Cpu);
    }
    simd::set_cap(simd::CpuPath::Best);
    assert!(paths.contains(&simd::CpuPath::Portable) && paths.contains(&simd::CpuPath::Best));
}

/// log_softmax from the same kernels: every variant against the f64 reference, the
/// properties (logsumexp of each output row is 0, every output ≤ 0), and the special values
/// (−inf entries stay −inf, a row of all −inf or holding NaN gives NaN).
fn log_softmax_matches_reference(dev: &Device) {
    let p = softmax_params(true);
    let init = Init::NormalWithOutliers {
        std: 2.0,
        every: 50,
        scale: 20.0,
    };
    let shapes: &[&[usize]] = &[
        &[1, 1],
        &[3, 33],
        &[4096, 256],
        &[3, 1025],
        &[2, 4097],
        &[2, 70000],
        &[1823, 781],
    ];
    for v in variants(softmax::OP, dev) {
        for dt in DType::ALL {
            for (i, shape) in shapes.iter().enumerate() {
                let x = rand(shape, dt, init, 50 + i as u64);
                let Some(y) = check(dev, v, &p, &x, "log_softmax") else {
                    continue;
                };
                let cols = *shape.last().unwrap();
                for row in y.chunks(cols) {
                    assert!(
                        row.iter().all(|&l| l <= 1e-6),
                        "{}: log-probabilities must be ≤ 0",
                        v.id()
                    );
                    let lse = row.iter().map(|&l| l.exp()).sum::<f64>().ln();
                    assert!(
                        lse.abs() <= 4.0 * dt.tolerance(),
                        "{} {dt} {shape:?}: logsumexp {lse}",
                        v.id()
                    );
                }
            }
            let ninf = f64::NEG_INFINITY;
            let cols = 40;
            let mut vals: Vec<f64> = (0..cols)
                .map(|c| if c % 4 == 0 { ninf } else { c as f64 * 0.1 })
                .collect();
            vals.extend((0..cols).map(|_| ninf));
            vals.extend((0..cols).map(|c| if c == 7 { f64::NAN } else { 1.0 }));
            let x = Tensor::from_f64(&vals, &[3, cols], dt).unwrap();
            if check(dev, v, &p, &x, "log_softmax special values").is_none() {
                continue;
            }
            let y = run_into_finite(dev, v, &p, &x);
            assert!(y[..cols]
                .iter()
                .enumerate()
                .all(|(c, &l)| (c % 4 == 0) == (l == ninf)));
            assert!(y[cols..].iter().all(|l| l.is_nan()), "{}", v.id());
        }
    }
}
test_device!(
    log_softmax_matches_reference,
    super::log_softmax_matches_reference
);

/// `auto`'s width heuristic for packed rows past 16384 columns, computed from the device's own
/// limits through the versions' public planning functions: on sm_90, v8 for 16-bit rows up to
/// v3's reach (65536) and f32 rows below `V8_F32_PACKED_BELOW`, where it led v3; v3 (four or
/// eight slots a thread) for the f32 rows from there to 32768, and before sm_90; past one
/// block's reach, on sm_90: v8 where its clusters hold the row (eight CTAs at f32, two at
/// 16-bit, four or eight by its 16-bit rule), then v11 for rows to `V11_ROW_BYTES` that v9 and
/// v11 hold, then v9, v6 and v4.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn softmax_auto_sends_wide_packed_rows_to_v8_on_hopper() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let cuda = dev.cuda().unwrap();
    let hopper = cuda.props.compute_capability.0 >= 9;
    let optin = cuda.props.max_smem_per_block_optin;
    let pick = |cols: usize, dt: DType| {
        let x = Tensor::empty(&[4, cols], dt, &dev).unwrap();
        softmax::heuristic_choice(&x)
    };
    let v8_if_hopper = if hopper { "v8_onchip" } else { "v3_block_regs" };
    for dt in [DType::BF16, DType::F16] {
        assert_eq!(pick(16_384, dt), "v3_block_regs", "{dt} 16384");
        for cols in [16_392, 32_768, 40_960, 65_536] {
            assert_eq!(pick(cols, dt), v8_if_hopper, "{dt} {cols}");
        }
    }
    let below = softmax::V8_F32_PACKED_BELOW;
    assert_eq!(pick(16_384, DType::F32), "v3_block_regs", "f32 16384");
    for cols in [16_388, 24_576, below - 4] {
        assert_eq!(pick(cols, DType::F32), v8_if_hopper, "f32 {cols}");
    }
    for cols in [below, 32_768] {
        assert_eq!(pick(cols, DType::F32), "v3_block_regs", "f32 {cols}");
    }
    // Past one block's reach: the order of the rules, each asked with this device's limits.
    let expect = |cols: usize, dt: DType| -> &'static str {
        let pack = 16 / dt.size();
        let packs = cols / pack;
        let v8_takes = hopper
            && (softmax::v8_config(packs, optin, if dt == DType::F32 { 8 } else { 2 }).is_some()
                || (dt != DType::F32
                    && softmax::v8_config(packs, optin, 16)
                        .and_then(|(c, _, _)| softmax::v8_wide16_cluster(packs, c))
                        .is_some()));
        let v9_holds = hopper && softmax::v9_max_cols(cuda, dt).is_some_and(|m| cols <= m);
        let t = softmax::V11Tuning::DEFAULT;
        let v11_holds = hopper
            && softmax::v11_plan(cuda, &softmax::v11_kernel(t.chunk, dt), packs, 4, t).is_ok();
        let v6_fits = softmax::v6_max_cols(cuda, dt, true).is_some_and(|m| cols <= m);
        if v8_takes {
            "v8_onchip"
        } else if cols * dt.size() <= softmax::V11_ROW_BYTES && v9_holds && v11_holds {
            "v11_deal"
        } else if v9_holds {
            "v9_gridsync"
        } else if v6_fits
            && (hopper || cols * dt.size() <= 2 << 20 || 4 < cuda.props.sm_count as usize)
        {
            "v6_split"
        } else {
            "v4_online"
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    for (cols, dt) in [
        (262_144, DType::F32),
        (524_288, DType::F32),
        (1_048_576, DType::F32),
        (2_097_156, DType::F32),
        (4_194_304, DType::F32),
        (262_144, DType::BF16),
        (393_216, DType::F16),
        (786_432, DType::BF16),
        (4_194_312, DType::F16),
    ] {
        let want = expect(cols, dt);
        assert_eq!(pick(cols, dt), want, "{dt} {cols}");
        seen.insert(want);
    }
    // On sm_90 the wide rows reach v8, v11 and v9 each (every sm_90 GPU's limits hold these
    // widths so); before it none of them.
    let hopper_versions = ["v8_onchip", "v9_gridsync", "v11_deal"];
    if hopper {
        assert!(hopper_versions.iter().all(|v| seen.contains(v)), "{seen:?}");
    } else {
        assert!(
            !hopper_versions.iter().any(|v| seen.contains(v)),
            "{seen:?}"
        );
    }
}

/// `auto`'s width heuristic on this GPU for odd widths (rows that cannot move 16-byte packs
/// from their start): on sm_90, v8 (which peels a scalar head and tail) from
/// `V8_ODD_FROM` columns, where it led v3 on the H200, except 16-bit rows to
/// `V3_SHIFT_16_UPTO` or in `V3_SPLIT_16_BAND`, which v3's shifted packs held faster; v3
/// below that (shifted) and for
/// rows that do not peel alike in x and y (its scalar path). Before sm_90, v3 to 4096 columns
/// and v6 (peeled, where its resident CTAs hold the row) past that.
#[test]
#[ignore = "needs a CUDA GPU: tools/gpu-suite.sh runs it (--include-ignored)"]
fn softmax_auto_sends_odd_widths_to_v8_on_hopper() {
    let Some(dev) = crate::common::cuda() else {
        return;
    };
    let hopper = dev.cuda().unwrap().props.compute_capability.0 >= 9;
    let from = softmax::V8_ODD_FROM;
    assert!(from % 2 == 1, "an odd width");
    let pick = |cols: usize, ld: usize, dt: DType| {
        let x = Tensor::empty_strided(&[4, cols], &[ld, 1], dt, &dev).unwrap();
        softmax::heuristic_choice(&x)
    };
    let v8_if_hopper = if hopper { "v8_onchip" } else { "v3_block_regs" };
    for dt in DType::ALL {
        assert_eq!(
            pick(from - 2, from - 2, dt),
            "v3_block_regs",
            "{dt} {}",
            from - 2
        );
        // 16-bit odd rows that v3's shifted packs hold in one warp, and those of the band
        // where its split kernels led v8, stay on v3.
        let band = softmax::V3_SPLIT_16_BAND;
        let v8_past_shift = |cols: usize| {
            if dt != DType::F32 && (cols <= softmax::V3_SHIFT_16_UPTO || band.contains(&cols)) {
                "v3_block_regs"
            } else {
                v8_if_hopper
            }
        };
        assert_eq!(pick(from, from, dt), v8_past_shift(from), "{dt} {from}");
        let upto = softmax::V3_SHIFT_16_UPTO;
        assert!(upto % 2 == 1 && upto > from, "an odd width past {from}");
        assert_eq!(pick(upto, upto, dt), v8_past_shift(upto), "{dt} {upto}");
        assert_eq!(
            pick(upto + 2, upto + 2, dt),
            v8_if_hopper,
            "{dt} {}",
            upto + 2
        );
        assert_eq!(pick(4095, 4095, dt), v8_if_hopper, "{dt} 4095");
        let (lo, hi) = (*band.start(), *band.end());
        assert!(
            lo % 2 == 1 && hi % 2 == 1 && lo > upto + 2,
            "odd widths past {upto}"
        );
        for cols in [lo - 2, lo, ((lo + hi) / 2) | 1, hi, hi + 2] {
            assert_eq!(pick(cols, cols, dt), v8_past_shift(cols), "{dt} {cols}");
        }
        let past_4096 = if hopper {
            "v8_onchip"
        } else if softmax::v6_max_cols(dev.cuda().unwrap(), dt, true).is_some_and(|m| m >= 4097) {
            "v6_split"
        } else {
            "v3_block_regs"
        };
        assert_eq!(pick(4097, 4097, dt), past_4096, "{dt} 4097");
        // A row stride 8 elements past the width (a pack multiple for every dtype): x's rows
        // are misaligned alike with y's, so v8 still peels them.
        assert_eq!(
            pick(from, from + 8, dt),
            v8_past_shift(from),
            "{dt} {from} stride +8"
        );
        assert_eq!(
            pick(upto + 2, upto + 10, dt),
            v8_if_hopper,
            "{dt} {} stride +8",
            upto + 2
        );
        // Row stride one more than the width: x's rows are misaligned unlike y's (contiguous),
        // so nothing peels, and v3's scalar path runs.
        assert_eq!(
            pick(from, from + 1, dt),
            "v3_block_regs",
            "{dt} {from} strided"
        );
    }
}

/// The device's buffers (the stream-ordered pool's, at the size asked) have the length asked
/// for, round-trip through the host, and kernels on them pass the reference (GeLU and
/// softmax, an odd width).
fn device_buffers_have_the_length_asked(dev: &Device) {
    let Device::Cuda(d) = dev else {
        unreachable!("test_gpu! runs on CUDA only")
    };
    let init = Init::Normal {
        mean: 0.0,
        std: 2.0,
    };
    let x = Tensor::random(&[3, 1001], DType::BF16, init, 5, None, &Device::Cpu).unwrap();
    for n in [1usize, 3001, (2 << 20) + 16] {
        let b = d.alloc_bytes(n, "a test buffer").unwrap();
        assert_eq!(b.len(), n, "a buffer of {n} bytes");
    }
    let bytes: Vec<u8> = (0..5000u32).map(|i| (i * 7 % 251) as u8).collect();
    let back = d.dtoh(&d.htod(&bytes, "a test copy").unwrap(), bytes.len());
    assert_eq!(back.unwrap(), bytes, "a round trip");
    for (op, name) in [(softmax::OP, "v3_block_regs"), (gelu::OP, "v2_vec16")] {
        let v = ops::find(op, name, dev.kind()).unwrap();
        let p = op.default_params();
        check(dev, v, &p, &x, "device buffers").unwrap_or_else(|| panic!("{name} refused 3x1001"));
    }
}
test_gpu!(
    device_buffers_have_the_length_asked,
    super::device_buffers_have_the_length_asked
);
