//! Matmul and linear: every variant against the f64 reference on square, rectangular, odd,
//! K = 1, tall-skinny and short-wide shapes, every dtype, every (bias, activation) pair; the
//! errors a caller can hit. One body per behaviour; `test_device!` makes a CPU and a CUDA test.

use crate::{test_device, test_gpu};
use kernlab::check;
use kernlab::ops::gelu::{self, GeluApprox};
use kernlab::ops::matmul::{self, Activation, GemmParams};
use kernlab::ops::{self, linear, Variant};
use kernlab::runtime::error::Error;
use kernlab::runtime::tensor::Tensor;
use kernlab::{DType, Device, Init, Op, Params, Tier};

fn variants(op: Op, dev: &Device) -> Vec<&'static Variant> {
    ops::variants_for(op, dev.kind())
        .filter(|v| v.tier != Tier::Reference)
        .collect()
}

/// M×N×K shapes: square, rectangular, odd everywhere (127×255×63), K = 1, tall-skinny,
/// short-wide, sizes just past a tile, and K a multiple of 8 but not of the tile depth.
const SHAPES: &[[usize; 3]] = &[
    [1, 1, 1],
    [64, 64, 64],
    [127, 255, 63],
    [3, 5, 1],
    [129, 257, 136],
    [1000, 24, 40],
    [16, 1000, 72],
    [256, 384, 520],
    [200, 136, 2048],
    [8, 1000, 1024],
    [5, 136, 63],
];

/// A variant may decline an input only for a documented reason: TMA needs K·size to be a
/// multiple of 16 bytes (v6), cuBLASLt has only the tanh GeLU, Hopper kernels need sm_90, and
/// v8 takes at most 8 rows.
fn may_refuse(
    dev: &Device,
    v: &Variant,
    [m, n, k]: [usize; 3],
    dt: DType,
    act: Activation,
    e: &Error,
) -> bool {
    let s = e.to_string();
    // "needs sm_90" is a reason only on a device older than sm_90.
    let pre_hopper = dev.cuda().is_some_and(|d| d.props.compute_capability.0 < 9);
    match (v.name, e) {
        ("v6_wgmma" | "v7_wgmma_tma_store" | "compiled", Error::UnsupportedShape { .. }) => {
            !(k * dt.size()).is_multiple_of(16) || (pre_hopper && s.contains("sm_90"))
        }
        ("cublaslt", _) => act == Activation::GeluErf && s.contains("erf"),
        ("v8_skinny", Error::UnsupportedShape { .. }) => m > matmul::cuda::SKINNY_ROWS,
        // AMX's tiles exist on some x86-64 CPUs only (and not under a lower --cpu-path).
        ("amx", Error::Unavailable { .. }) => !kernlab::runtime::simd::amx_bf16(),
        ("avx512", Error::Unavailable { .. }) => !kernlab::runtime::simd::avx512(),
        // CUTLASS's TMA needs K and N multiples of 8; its GeLU comes with the bias.
        ("cutlass", Error::UnsupportedShape { .. }) => {
            !k.is_multiple_of(8)
                || !n.is_multiple_of(8)
                || (act != Activation::None && s.contains("comes with the bias"))
                || (pre_hopper && s.contains("sm_90"))
        }
        _ => crate::common::tool_missing(v, e),
    }
}

/// Validate `v` on fresh inputs of shape `m×n×k` (bias dropped when `bias` is false).
fn check(dev: &Device, v: &Variant, dt: DType, shape: [usize; 3], act: Activation, bias: bool) {
    let p = Params::new(GemmParams { act, bias });
    let seed = 7 + shape.iter().sum::<usize>() as u64;
    let mut host =
        check::make_inputs(v.op, &shape, dt, seed, None, &v.op.default_params()).unwrap();
    if !bias {
        host.truncate(2);
    }
    let reference = check::make_reference(v.op, &shape, &host, &p, seed).unwrap();
    let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
    let x: Vec<&Tensor> = inputs.iter().collect();
    let what = format!("{} {dt} {:?} act {} bias {bias}", v.id(), shape, act.name());
    match check::validate(v, &p, &x, &reference) {
        Ok((c, _)) => assert!(c.passed, "{what}: {}", c.describe()),
        Err(e) if may_refuse(dev, v, shape, dt, act, &e) => {}
        Err(e) => panic!("{what}: {e}"),
    }
}

fn matmul_matches_reference(dev: &Device) {
    for v in variants(matmul::OP, dev) {
        for &dt in v.dtypes {
            for &s in SHAPES {
                check(dev, v, dt, s, Activation::None, false);
            }
        }
    }
}
test_device!(matmul_matches_reference, super::matmul_matches_reference);

fn linear_matches_reference_for_every_epilogue(dev: &Device) {
    let acts = [Activation::None, Activation::GeluTanh, Activation::GeluErf];
    for v in variants(linear::OP, dev) {
        for &dt in v.dtypes {
            for (i, &s) in SHAPES.iter().enumerate() {
                // Every (bias, activation) pair on a few shapes; one pair on the rest.
                for (j, &act) in acts.iter().enumerate() {
                    for bias in [true, false] {
                        if i < 3 || (j + i) % 3 == 0 && bias == (i % 2 == 0) {
                            check(dev, v, dt, s, act, bias);
                        }
                    }
                }
            }
        }
    }
}
test_device!(
    linear_matches_reference_for_every_epilogue,
    super::linear_matches_reference_for_every_epilogue
);

/// Matmul's CPU variant `name` on fresh 33×40×64 operands of `dt` under `--cpu-path
/// avx2-fma`: its error, `cpu/auto`'s pick there, and the operands. The cap is put back.
fn under_avx2_fma(name: &str, dt: DType) -> (Error, String, Vec<Tensor>) {
    use kernlab::runtime::simd;
    let mm = ops::find(matmul::OP, name, kernlab::DeviceKind::Cpu).unwrap();
    let p = matmul::OP.default_params();
    let host = check::make_inputs(mm.op, &[33, 40, 64], dt, 3, None, &p).unwrap();
    let x: Vec<&Tensor> = host.iter().collect();
    let mut y = Tensor::empty(&[33, 40], dt, &Device::Cpu).unwrap();
    simd::set_cap(simd::CpuPath::Avx2Fma);
    let e = mm.run(&p, &x, &mut y).unwrap_err();
    let pick = matmul::cpu_auto_label(&p, &x);
    simd::set_cap(simd::CpuPath::Best);
    (e, pick, host)
}

/// `amx` where the CPU has AMX's tiles: K past one slice of 2048 (the sums carried from slice to
/// slice in f32), an edge in every direction, the exact GeLU; under a lower `--cpu-path` it
/// refuses and names the switch, and `cpu/auto` picks it for bf16 only, and only without the
/// cap.
#[test]
fn amx_carries_its_sums_across_k_slices_and_follows_the_cpu_path() {
    use kernlab::runtime::simd;
    let _only = crate::common::cpu_path_lock();
    let v = ops::find(linear::OP, "amx", kernlab::DeviceKind::Cpu).unwrap();
    if !simd::amx_bf16() {
        println!("skipped {}: this CPU has no AMX bf16 tiles", v.id());
        return;
    }
    check(
        &Device::Cpu,
        v,
        DType::BF16,
        [161, 290, 4160],
        Activation::GeluErf,
        true,
    );
    let (e, under_cap, host) = under_avx2_fma("amx", DType::BF16);
    // cpu/auto then takes faer, for every dtype.
    assert_eq!(under_cap, "faer");
    let p = matmul::OP.default_params();
    assert_eq!(
        matmul::cpu_auto_label(&p, &host.iter().collect::<Vec<_>>()),
        "amx"
    );
    let f32s: Vec<Tensor> = host
        .iter()
        .map(|t| Tensor::from_f64(&t.to_f64_vec().unwrap(), t.shape(), DType::F32).unwrap())
        .collect();
    assert_eq!(
        matmul::cpu_auto_label(&p, &f32s.iter().collect::<Vec<_>>()),
        if simd::avx512() { "avx512" } else { "faer" }
    );
    assert!(
        matches!(e, Error::Unavailable { .. }) && e.to_string().contains("--cpu-path avx2-fma"),
        "{e}"
    );
}

/// `avx512` where the CPU has AVX-512: K across several slices with a short last one, an edge
/// in every direction (rows past a panel of 14, columns past one of 32), the exact GeLU; under
/// a lower `--cpu-path` it refuses and names the switch, and `cpu/auto` then takes faer for
/// f32.
#[test]
fn avx512_carries_its_sums_across_k_slices_and_follows_the_cpu_path() {
    use kernlab::runtime::simd;
    let _only = crate::common::cpu_path_lock();
    let v = ops::find(linear::OP, "avx512", kernlab::DeviceKind::Cpu).unwrap();
    if !simd::avx512() {
        println!("skipped {}: this CPU has no AVX-512", v.id());
        return;
    }
    check(
        &Device::Cpu,
        v,
        DType::F32,
        [43, 97, 1037],
        Activation::GeluErf,
        true,
    );
    let (e, under_cap, host) = under_avx2_fma("avx512", DType::F32);
    assert_eq!(under_cap, "faer");
    let p = matmul::OP.default_params();
    assert_eq!(
        matmul::cpu_auto_label(&p, &host.iter().collect::<Vec<_>>()),
        "avx512"
    );
    assert!(
        matches!(e, Error::Unavailable { .. }) && e.to_string().contains("--cpu-path avx2-fma"),
        "{e}"
    );
}

/// The tensor-core versions on a shape with many tiles in each direction and a deep K, where
/// a pipeline or tile-order mistake would show; bf16 and f16.
fn tensor_core_versions_on_a_large_shape(dev: &Device) {
    for v in variants(linear::OP, dev) {
        for &dt in v.dtypes {
            check(dev, v, dt, [1024, 768, 2048], Activation::GeluTanh, true);
        }
    }
}
test_gpu!(
    tensor_core_versions_on_a_large_shape,
    super::tensor_core_versions_on_a_large_shape
);

fn rand(shape: &[usize], dt: DType, dev: &Device) -> Tensor {
    Tensor::random(shape, dt, Init::Uniform { lo: -1.0, hi: 1.0 }, 3, None, dev).unwrap()
}

/// Bad operands get a clear error, never a panic or a wrong answer.
fn bad_operands_get_clear_errors(dev: &Device) {
    for op in [matmul::OP, linear::OP] {
        let p = op.default_params();
        for v in variants(op, dev) {
            let dt = v.dtypes[0];
            let a = rand(&[4, 8], dt, dev);
            let w = rand(&[6, 8], dt, dev);
            let b = rand(&[6], dt, dev);
            let mut c = Tensor::empty(&[4, 6], dt, dev).unwrap();
            // K disagrees
            let w_bad = rand(&[6, 7], dt, dev);
            let e = v.run(&p, &[&a, &w_bad], &mut c).unwrap_err();
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{}: {e}", v.id());
            assert!(e.to_string().contains("same K"), "{e}");
            // wrong output shape
            let mut c_bad = Tensor::empty(&[4, 5], dt, dev).unwrap();
            let e = v.run(&p, &[&a, &w], &mut c_bad).unwrap_err();
            assert!(matches!(e, Error::ShapeMismatch { .. }), "{}: {e}", v.id());
            // empty
            let a0 = Tensor::empty(&[0, 8], dt, dev).unwrap();
            let mut c0 = Tensor::empty(&[0, 6], dt, dev).unwrap();
            let e = v.run(&p, &[&a0, &w], &mut c0).unwrap_err();
            assert!(matches!(e, Error::EmptyTensor { .. }), "{}: {e}", v.id());
            // mixed dtypes
            let other = if dt == DType::F32 {
                DType::BF16
            } else {
                DType::F32
            };
            let w_other = rand(&[6, 8], other, dev);
            let e = v.run(&p, &[&a, &w_other], &mut c).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::ShapeMismatch { .. } | Error::UnsupportedDtype { .. }
                ),
                "{}: {e}",
                v.id()
            );
            // the wrong number of operands
            let e = v.run(&p, &[&a], &mut c).unwrap_err();
            assert!(e.to_string().contains("[a, w]"), "{}: {e}", v.id());
            match op == matmul::OP {
                true => {
                    let e = v.run(&p, &[&a, &w, &b], &mut c).unwrap_err();
                    assert!(e.to_string().contains("no bias"), "{}: {e}", v.id());
                }
                false => {
                    let b_bad = rand(&[5], dt, dev);
                    let e = v.run(&p, &[&a, &w, &b_bad], &mut c).unwrap_err();
                    assert!(
                        e.to_string().contains("bias must be [N]"),
                        "{}: {e}",
                        v.id()
                    );
                }
            }
            // an f32-only copy of the row refuses bf16 with both names in the message
            let only_f32 = Variant {
                dtypes: &[DType::F32],
                ..*v
            };
            let (ab, wb) = (
                rand(&[4, 8], DType::BF16, dev),
                rand(&[6, 8], DType::BF16, dev),
            );
            let mut cb = Tensor::empty(&[4, 6], DType::BF16, dev).unwrap();
            let e = only_f32.run(&p, &[&ab, &wb], &mut cb).unwrap_err();
            assert!(matches!(e, Error::UnsupportedDtype { .. }), "{e}");
        }
    }
}
test_device!(
    bad_operands_get_clear_errors,
    super::bad_operands_get_clear_errors
);

#[test]
fn large_shapes_are_validated_on_sampled_rows_including_the_edges() {
    let rows = matmul::reference_rows(8192, 8192, 8192, 42);
    assert_eq!(rows.first(), Some(&0));
    assert_eq!(rows.last(), Some(&8191));
    assert!(rows.len() >= 16 && rows.len() <= 64, "{}", rows.len());
    assert!(rows.windows(2).all(|w| w[0] < w[1]));
    // small problems: every row
    assert_eq!(matmul::reference_rows(127, 255, 63, 1).len(), 127);
    // Fewer rows than the least sample, each of them huge: every row (it used to panic).
    assert_eq!(
        matmul::reference_rows(8, 65536, 65536, 1),
        (0..8).collect::<Vec<_>>()
    );
}

#[test]
fn the_f64_epilogue_is_pytorchs() {
    // gelu(1) tanh form = 0.8411919906; erf form = 0.8413447461
    assert!((matmul::epilogue_f64(1.0, Activation::GeluTanh) - 0.841_191_990_6).abs() < 1e-9);
    assert!((matmul::epilogue_f64(1.0, Activation::GeluErf) - 0.841_344_746_1).abs() < 1e-9);
    assert_eq!(matmul::epilogue_f64(-3.5, Activation::None), -3.5);
    // bias, then activation
    let a = [1.0, 2.0];
    let w = [0.5, 0.25, -1.0, 1.0];
    let r = matmul::reference(&a, &w, Some(&[0.0, -1.0]), (2, 2), &[0], Activation::None);
    assert_eq!(r, vec![1.0, 0.0]);
}

#[test]
fn gemm_accounting() {
    // bytes: a, w, c (and the bias for linear), each once; FLOPs 2·M·N·K
    assert_eq!(
        matmul::OP.min_bytes(&[2, 3, 4], DType::BF16, &matmul::OP.default_params()),
        (2 * 4 + 3 * 4 + 2 * 3) * 2
    );
    assert_eq!(
        linear::OP.min_bytes(&[2, 3, 4], DType::F32, &linear::OP.default_params()),
        (2 * 4 + 3 * 4 + 2 * 3 + 3) * 4
    );
    assert_eq!(
        matmul::OP.flops(&[2, 3, 4], &matmul::OP.default_params()),
        48.0
    );
    assert_eq!(
        linear::OP.out_shape(&[2, 3, 4], &linear::OP.default_params()),
        vec![2, 3]
    );
    let e = match check::make_inputs(
        matmul::OP,
        &[4, 4],
        DType::F32,
        1,
        None,
        &matmul::OP.default_params(),
    ) {
        Err(e) => e,
        Ok(_) => panic!("a 2-D shape for matmul must be refused"),
    };
    assert!(e.to_string().contains("M×N×K"), "{e}");
}

/// Whether `dev` is a Hopper GPU, which the layout kernels need (a printed skip elsewhere).
fn on_hopper(dev: &Device) -> bool {
    let hopper = dev
        .cuda()
        .is_some_and(|d| d.props.compute_capability == (9, 0));
    if dev.cuda().is_some() && !hopper {
        println!("skipped: the layout kernels need compute capability 9.0");
    }
    hopper
}

/// A result's relative L2 error (`err`, `norm`: sums of squared differences and of squared
/// wanted values) within the 16-bit tolerance of the layout tests.
fn assert_rel_l2(what: &str, err: f64, norm: f64, dt: DType) {
    let rel = (err / norm.max(1e-30)).sqrt();
    let tol = if dt == DType::BF16 { 8e-3 } else { 2e-3 };
    assert!(
        rel < tol,
        "{what}: relative L2 error {rel:.2e} (tolerance {tol:.0e})"
    );
}

/// v7's layout kernels (`matmul::sm90::run_rm`): c = op(a)·op(b) for each of the four transpose
/// pairs, plain and with GeLU's derivative (both forms) in the epilogue, bf16 and f16, against
/// f64 on shapes with partial tiles on every edge and one or many k-blocks. The product goes
/// to rows 3.. of a NaN-poisoned c, whose first rows must stay untouched.
fn v7_layouts_match_f64(dev: &Device) {
    if !on_hopper(dev) {
        return;
    }
    let shapes: &[(usize, usize, usize)] = &[(8, 8, 8), (136, 264, 200), (264, 392, 1032)];
    let acts = [
        None,
        Some((Activation::GeluErf, GeluApprox::Erf)),
        Some((Activation::GeluTanh, GeluApprox::Tanh)),
    ];
    for &(m, n, k) in shapes {
        for dt in [DType::BF16, DType::F16] {
            for (ta, tb) in [(false, true), (false, false), (true, false), (true, true)] {
                for act in acts {
                    let what = format!("{m}x{n}x{k} {dt} ta={ta} tb={tb} {act:?}");
                    let a_shape = if ta { [k, m] } else { [m, k] };
                    let b_shape = if tb { [n, k] } else { [k, n] };
                    let a = rand(&a_shape, dt, dev);
                    let b = Tensor::random(
                        &b_shape,
                        dt,
                        Init::Uniform { lo: -1.0, hi: 1.0 },
                        11,
                        None,
                        dev,
                    )
                    .unwrap();
                    let z = Tensor::random(
                        &[m, n],
                        dt,
                        Init::Normal {
                            mean: 0.0,
                            std: 1.0,
                        },
                        5,
                        None,
                        dev,
                    )
                    .unwrap();
                    let off = 3;
                    let mut c = Tensor::from_f64(&vec![f64::NAN; (m + off) * n], &[m + off, n], dt)
                        .unwrap()
                        .to_device(dev)
                        .unwrap();
                    let grad = act.map(|(g, _)| (&z, g));
                    matmul::sm90::run_rm(&a, ta, &b, tb, grad, &mut c, off)
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let (ha, hb, hz) = (
                        a.to_f64_vec().unwrap(),
                        b.to_f64_vec().unwrap(),
                        z.to_f64_vec().unwrap(),
                    );
                    let hc = c.to_f64_vec().unwrap();
                    assert!(
                        hc[..off * n].iter().all(|v| v.is_nan()),
                        "{what}: rows before c_row written"
                    );
                    let (mut err, mut norm) = (0.0f64, 0.0f64);
                    for i in 0..m {
                        for j in 0..n {
                            let mut s = 0.0;
                            for p in 0..k {
                                let av = if ta { ha[p * m + i] } else { ha[i * k + p] };
                                let bv = if tb { hb[j * k + p] } else { hb[p * n + j] };
                                s += av * bv;
                            }
                            if let Some((_, g)) = act {
                                s *= gelu::derivative_f64(hz[i * n + j], g);
                            }
                            let got = hc[(off + i) * n + j];
                            assert!(got.is_finite(), "{what}: c[{i}, {j}] = {got}");
                            err += (got - s) * (got - s);
                            norm += s * s;
                        }
                    }
                    assert_rel_l2(&what, err, norm, dt);
                }
            }
        }
    }
}
test_gpu!(v7_layouts, super::v7_layouts_match_f64);

/// v7's two-output forward (`matmul::sm90::run_aux`): c = act(a·wᵀ + bias) and the
/// pre-activation z = a·wᵀ + bias from one product, every activation, against f64.
fn v7_two_outputs_match_f64(dev: &Device) {
    if !on_hopper(dev) {
        return;
    }
    for &(m, n, k) in &[(8, 8, 8), (1, 136, 72), (136, 264, 200), (300, 392, 1032)] {
        for dt in [DType::BF16, DType::F16] {
            for act in [Activation::None, Activation::GeluErf, Activation::GeluTanh] {
                let what = format!("{m}x{n}x{k} {dt} {act:?}");
                let a = rand(&[m, k], dt, dev);
                let w = Tensor::random(
                    &[n, k],
                    dt,
                    Init::Uniform { lo: -0.2, hi: 0.2 },
                    9,
                    None,
                    dev,
                )
                .unwrap();
                let bias =
                    Tensor::random(&[n], dt, Init::Uniform { lo: -1.0, hi: 1.0 }, 4, None, dev)
                        .unwrap();
                let nan = |r: usize| {
                    Tensor::from_f64(&vec![f64::NAN; r * n], &[r, n], dt)
                        .unwrap()
                        .to_device(dev)
                        .unwrap()
                };
                let (mut c, mut z) = (nan(m), nan(m));
                matmul::sm90::run_aux(&a, &w, &bias, act, &mut c, &mut z)
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                let (ha, hw, hb) = (
                    a.to_f64_vec().unwrap(),
                    w.to_f64_vec().unwrap(),
                    bias.to_f64_vec().unwrap(),
                );
                let (hc, hz) = (c.to_f64_vec().unwrap(), z.to_f64_vec().unwrap());
                let (mut ec, mut nc, mut ez, mut nz) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
                for i in 0..m {
                    for j in 0..n {
                        let v: f64 =
                            (0..k).map(|p| ha[i * k + p] * hw[j * k + p]).sum::<f64>() + hb[j];
                        let (gz, gc) = (hz[i * n + j], hc[i * n + j]);
                        assert!(
                            gz.is_finite() && gc.is_finite(),
                            "{what}: [{i}, {j}] = {gz}, {gc}"
                        );
                        let want = matmul::epilogue_f64(v, act);
                        ez += (gz - v) * (gz - v);
                        nz += v * v;
                        ec += (gc - want) * (gc - want);
                        nc += want * want;
                    }
                }
                assert_rel_l2(&format!("{what}: z"), ez, nz, dt);
                assert_rel_l2(&format!("{what}: c"), ec, nc, dt);
            }
        }
    }
}
test_gpu!(v7_two_outputs, super::v7_two_outputs_match_f64);

/// The layout kernels refuse what their tensor maps cannot take, with the reason.
fn v7_layouts_refuse_clearly(dev: &Device) {
    if !on_hopper(dev) {
        return;
    }
    let bf = DType::BF16;
    let mut c = rand(&[16, 16], bf, dev);
    let mut refused = |a: &[usize], ta: bool, b: &[usize], c_row: usize| {
        let (a, b) = (rand(a, bf, dev), rand(b, bf, dev));
        matmul::sm90::run_rm(&a, ta, &b, false, None, &mut c, c_row)
            .unwrap_err()
            .to_string()
    };
    // a stored [K, M] with M = 12: its rows are 24 bytes.
    let e = refused(&[16, 12], true, &[16, 16], 0);
    assert!(e.contains("16 bytes"), "{e}");
    // Inner dimensions that disagree, and a product past c's rows.
    let e = refused(&[16, 16], false, &[8, 16], 0);
    assert!(e.contains("op(a) 16x16 · op(b) 8x16"), "{e}");
    let e = refused(&[16, 16], false, &[16, 16], 8);
    assert!(e.contains("rows 8.."), "{e}");
    // f32 is not a tensor-core dtype here.
    let f = DType::F32;
    let mut cf = rand(&[16, 16], f, dev);
    let e = matmul::sm90::run_rm(
        &rand(&[16, 16], f, dev),
        false,
        &rand(&[16, 16], f, dev),
        false,
        None,
        &mut cf,
        0,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("bf16, f16"), "{e}");
}
test_gpu!(v7_layouts_errors, super::v7_layouts_refuse_clearly);

/// Every v7 configuration autotune may pick: linear with bias + GeLU erf against f64, bf16 and
/// f16, on shapes with partial tiles, one k-block and many, and more tiles than a wave (the
/// persistent walk).
fn every_v7_configuration_matches_the_reference(dev: &Device) {
    let Some(d) = dev.cuda() else { return };
    if !on_hopper(dev) {
        return;
    }
    let p = Params::new(GemmParams {
        act: Activation::GeluErf,
        bias: true,
    });
    let shapes: &[[usize; 3]] = &[
        [333, 512, 200],
        [1000, 1024, 64],
        [2048, 2048, 1032],
        [256, 384, 520],
    ];
    for &dt in &[DType::BF16, DType::F16] {
        let only = ["v7_wgmma_tma_store".to_string()];
        let candidates = matmul::auto::candidates(linear::OP, dt, d, Some(&only)).unwrap();
        assert_eq!(candidates.len(), matmul::sm90::configs_v7(dt).len());
        for &s in shapes {
            let seed = 5 + s.iter().sum::<usize>() as u64;
            let host = check::make_inputs(linear::OP, &s, dt, seed, None, &p).unwrap();
            let reference = check::make_reference(linear::OP, &s, &host, &p, seed).unwrap();
            let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
            let x: Vec<&Tensor> = inputs.iter().collect();
            for c in &candidates {
                let mut y = Tensor::empty(&[s[0], s[1]], dt, dev).unwrap();
                y.poison_nan().unwrap();
                (c.run)(&p, &x, &mut y)
                    .unwrap_or_else(|e| panic!("v7 {} {dt} {s:?}: {e}", c.config));
                let r = reference.check(&y).unwrap();
                assert!(r.passed, "v7 {} {dt} {s:?}: {}", c.config, r.describe());
            }
        }
    }
}
test_gpu!(
    every_v7_configuration,
    super::every_v7_configuration_matches_the_reference
);
