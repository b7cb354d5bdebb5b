//! RMSNorm: every variant against the f64 reference on awkward shapes, every dtype, strided
//! rows, PyTorch's special values, and the errors a caller can hit. One body per behaviour;
//! `test_device!` makes it a CPU test and a CUDA test.

use crate::test_device;
use kernlab::check::{self, make_inputs, make_reference};
use kernlab::ops::rmsnorm::{self, RmsNormParams, OP};
use kernlab::ops::{self, Variant};
use kernlab::runtime::error::Error;
use kernlab::runtime::tensor::Tensor;
use kernlab::{DType, Device, Params, Tier};

fn variants(dev: &Device) -> Vec<&'static Variant> {
    ops::variants_for(OP, dev.kind())
        .filter(|v| v.tier != Tier::Reference)
        .collect()
}

fn params(eps: f32) -> Params {
    Params::new(RmsNormParams { eps })
}

/// Validate `v` on fresh inputs of `shape` (rows `row_stride` apart where given): it must pass,
/// or (v1 and v2 only) refuse a row wider than it holds in registers.
fn check(dev: &Device, v: &Variant, shape: &[usize], dt: DType, ld: Option<usize>, p: &Params) {
    let seed = 11 + shape.iter().sum::<usize>() as u64;
    let host = make_inputs(OP, shape, dt, seed, ld, &OP.default_params()).unwrap();
    let reference = make_reference(OP, shape, &host, p, seed).unwrap();
    let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
    let x: Vec<&Tensor> = inputs.iter().collect();
    let what = format!("{} {dt} {shape:?} ld {ld:?}", v.id());
    match check::validate(v, p, &x, &reference) {
        Ok((c, _)) => assert!(c.passed, "{what}: {}", c.describe()),
        Err(Error::UnsupportedShape { why, .. }) => {
            let cols = *shape.last().unwrap();
            let pack = 16 / dt.size();
            let vec = cols.is_multiple_of(pack) && ld.unwrap_or(cols).is_multiple_of(pack);
            let holds = rmsnorm::plan(v.name, dt, 1, cols, vec).is_some();
            let triton_wide = v.name == "triton" && cols > rmsnorm::TRITON_MAX_COLS;
            assert!(
                ["v1_warp_row", "v2_block_regs"].contains(&v.name) && !holds || triton_wide,
                "{what} refused: {why}"
            );
        }
        Err(e) if crate::common::tool_missing(v, &e) => {}
        Err(e) => panic!("{what}: {e}"),
    }
}

const SHAPES: &[&[usize]] = &[
    &[1, 1],
    &[1, 5],
    &[3, 31],
    &[2, 33],
    &[4, 256],
    &[7, 1024],
    &[2, 1025],
    &[5, 4096],
    &[3, 8192],
    &[2, 33000],
    &[1, 70001],
    &[1823, 781],
    &[2, 3, 40],
];

fn rmsnorm_matches_reference_on_awkward_shapes(dev: &Device) {
    for v in variants(dev) {
        for dt in DType::ALL {
            for shape in SHAPES {
                check(dev, v, shape, dt, None, &params(rmsnorm::DEFAULT_EPS));
            }
            check(dev, v, &[64, 300], dt, None, &params(1e-5));
        }
    }
}
test_device!(
    rmsnorm_matches_reference_on_awkward_shapes,
    super::rmsnorm_matches_reference_on_awkward_shapes
);

/// Rows apart by more than their width (the gaps NaN: a variant that reads one fails), for
/// the variants that take strided rows.
fn rmsnorm_strided_rows(dev: &Device) {
    for v in variants(dev).into_iter().filter(|v| v.strided_rows) {
        for dt in DType::ALL {
            let pack = 16 / dt.size();
            for (rows, cols, ld) in [(5, 64, 64 + pack), (3, 1000, 1003), (4, 4096, 4096 + 8)] {
                let p = params(rmsnorm::DEFAULT_EPS);
                check(dev, v, &[rows, cols], dt, Some(ld), &p);
            }
        }
    }
}
test_device!(rmsnorm_strided_rows, super::rmsnorm_strided_rows);

/// PyTorch's semantics: a NaN anywhere makes its row NaN; +inf makes the row's scale 0, so the
/// infinite element is NaN (inf · 0) and the others 0; a row of zeros stays 0 with eps > 0 and
/// is NaN with eps = 0 (0 · inf).
fn rmsnorm_special_values_follow_pytorch(dev: &Device) {
    let cols = 8;
    let rows: [[f64; 8]; 4] = [
        [1.0, f64::NAN, 2.0, 3.0, -1.0, 0.5, 4.0, 1.0],
        [1.0, 2.0, f64::INFINITY, 3.0, -1.0, 0.5, 4.0, 1.0],
        [0.0; 8],
        [1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0],
    ];
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    for eps in [1e-6f32, 0.0] {
        let p = params(eps);
        for v in variants(dev) {
            for dt in DType::ALL {
                let x = Tensor::from_f64(&flat, &[4, cols], dt).unwrap();
                let w = Tensor::from_f64(&[1.0; 8], &[cols], dt).unwrap();
                let host = [x, w];
                let reference = OP.reference(&host, None, &p).unwrap();
                let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
                let r = check::Reference {
                    op: OP,
                    values: reference.clone(),
                    rows: None,
                    cols,
                    unit: "rows",
                    params: p.clone(),
                    out_shape: vec![4, cols],
                };
                let (c, y) = check::validate(v, &p, &[&inputs[0], &inputs[1]], &r).unwrap();
                assert!(c.passed, "{} {dt} eps {eps}: {}", v.id(), c.describe());
                let y = y.to_f64_vec().unwrap();
                assert!(y[..cols].iter().all(|v| v.is_nan()), "{}: NaN row", v.id());
                assert!(y[cols + 2].is_nan(), "{}: inf · 0", v.id());
                assert_eq!(y[cols], 0.0, "{}: scale 0", v.id());
                if eps > 0.0 {
                    assert!(
                        y[2 * cols..3 * cols].iter().all(|&v| v == 0.0),
                        "{}",
                        v.id()
                    );
                } else {
                    assert!(
                        y[2 * cols..3 * cols].iter().all(|v| v.is_nan()),
                        "{}",
                        v.id()
                    );
                }
            }
        }
    }
}
test_device!(
    rmsnorm_special_values_follow_pytorch,
    super::rmsnorm_special_values_follow_pytorch
);

/// A weight of another length or dtype, a missing weight, and an output of another shape are
/// clear errors, never a wrong answer.
fn rmsnorm_bad_operands_get_clear_errors(dev: &Device) {
    let p = params(1e-6);
    for v in variants(dev) {
        let host = make_inputs(OP, &[4, 64], DType::F32, 3, None, &OP.default_params()).unwrap();
        let x = host[0].to_device(dev).unwrap();
        let w = host[1].to_device(dev).unwrap();
        let mut y = Tensor::empty(&[4, 64], DType::F32, dev).unwrap();
        let w_short = Tensor::empty(&[63], DType::F32, dev).unwrap();
        let e = v.run(&p, &[&x, &w_short], &mut y).unwrap_err();
        assert!(
            e.to_string().contains("the weight must be [64]"),
            "{}: {e}",
            v.id()
        );
        let w_bf16 = Tensor::empty(&[64], DType::BF16, dev).unwrap();
        let e = v.run(&p, &[&x, &w_bf16], &mut y).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{}: {e}", v.id());
        let e = v.run(&p, &[&x], &mut y).unwrap_err();
        assert!(e.to_string().contains("[x, weight]"), "{}: {e}", v.id());
        let mut y_bad = Tensor::empty(&[4, 32], DType::F32, dev).unwrap();
        let e = v.run(&p, &[&x, &w], &mut y_bad).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{}: {e}", v.id());
        // Another op's parameters are a clear error too.
        let e = v
            .run(&ops::softmax::OP.default_params(), &[&x, &w], &mut y)
            .unwrap_err();
        assert!(e.to_string().contains("another op's"), "{}: {e}", v.id());
    }
}
test_device!(
    rmsnorm_bad_operands_get_clear_errors,
    super::rmsnorm_bad_operands_get_clear_errors
);

/// RMSNorm reads x and the weight once and writes y once: its bytes, and ~4 FLOPs an element.
#[test]
fn rmsnorm_counts_its_bytes_and_flops() {
    assert_eq!(
        OP.min_bytes(&[64, 32], DType::BF16, &OP.default_params()),
        (2 * 64 * 32 + 32) * 2
    );
    assert_eq!(
        OP.min_bytes(&[2, 3, 8], DType::F32, &OP.default_params()),
        (2 * 48 + 8) * 4
    );
    assert_eq!(OP.flops(&[64, 32], &OP.default_params()), 4.0 * 64.0 * 32.0);
}
