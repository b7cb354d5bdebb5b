//! The MLP: its f64 reference against finite differences, every variant against the reference
//! in both modes and every dtype it takes, and the errors a caller can hit.

use crate::common::run_cli;
use crate::test_device;
use kernlab::check::{self, make_inputs, make_reference};
use kernlab::ops::gelu::GeluApprox;
use kernlab::ops::mlp::{MlpParams, Mode, OP};
use kernlab::ops::{self, FlagValues, Variant};
use kernlab::runtime::error::Error;
use kernlab::runtime::tensor::Tensor;
use kernlab::{DType, Device, Params, Tier};

fn params(layers: usize, mode: Mode, gelu: GeluApprox) -> Params {
    Params::new(MlpParams {
        layers,
        mode,
        gelu,
        steps: 1,
        sync_each_step: false,
        recompute: false,
    })
}

/// The reference's forward output for host inputs, in f64.
fn forward(inputs: &[Tensor], p: &Params) -> Vec<f64> {
    OP.reference(inputs, None, p).unwrap()
}

/// The training reference's gradients are the derivatives of mean(model(x)): against central
/// differences of the f64 forward, for x, a bias and a weight of the first and the last layer.
#[test]
fn the_training_reference_is_the_gradient_of_the_mean_output() {
    for gelu in [GeluApprox::Erf, GeluApprox::Tanh] {
        let (b, d, l) = (3, 5, 3);
        let fwd = params(l, Mode::Forward, gelu);
        let train = params(l, Mode::Train, gelu);
        let host = make_inputs(OP, &[b, d], DType::F32, 7, None, &fwd).unwrap();
        let grads = OP.reference(&host, None, &train).unwrap();
        assert_eq!(grads.len(), (b + l + l * d) * d);
        // The f64 forward of the reference agrees with the loss's own forward.
        let y = forward(&host, &fwd);
        let values: Vec<Vec<f64>> = host.iter().map(|x| x.to_f64_vec().unwrap()).collect();
        let mean = y.iter().sum::<f64>() / y.len() as f64;
        assert!((mean - loss_f64(&values, &host, &fwd)).abs() < 1e-12);
        // (input index, element, index of its gradient in the train output)
        let mut probes = vec![(0, 4, 4), (0, b * d - 1, b * d - 1)];
        for layer in [0, l - 1] {
            probes.push((1 + l + layer, 2, (b + layer) * d + 2));
            probes.push((1 + layer, 7, (b + l + layer * d) * d + 7));
        }
        for (t, e, g) in probes {
            let h = 1e-5;
            let mut plus: Vec<Vec<f64>> = host.iter().map(|x| x.to_f64_vec().unwrap()).collect();
            let mut minus = plus.clone();
            plus[t][e] += h;
            minus[t][e] -= h;
            let fd = (loss_f64(&plus, &host, &fwd) - loss_f64(&minus, &host, &fwd)) / (2.0 * h);
            let got = grads[g];
            assert!(
                (got - fd).abs() <= 1e-6 * fd.abs().max(1e-3),
                "{gelu:?}: input {t} element {e}: reference {got:e}, finite difference {fd:e}"
            );
        }
    }
}

/// mean(model(x)) in f64 for f64 input values (the nudged copies of `host`'s tensors).
fn loss_f64(values: &[Vec<f64>], host: &[Tensor], fwd: &Params) -> f64 {
    let mp = *fwd.get::<MlpParams>().unwrap();
    let (b, d) = (host[0].shape()[0], host[0].shape()[1]);
    let l = mp.layers;
    let mut h = values[0].clone();
    for layer in 0..l {
        let (w, bias) = (&values[1 + layer], &values[1 + l + layer]);
        let mut next = vec![0.0; b * d];
        for r in 0..b {
            for o in 0..d {
                let z: f64 = (0..d).map(|k| h[r * d + k] * w[o * d + k]).sum::<f64>() + bias[o];
                next[r * d + o] = kernlab::ops::gelu::reference_f64(z, mp.gelu);
            }
        }
        h = next;
    }
    h.iter().sum::<f64>() / h.len() as f64
}

fn variants(dev: &Device) -> Vec<&'static Variant> {
    ops::variants_for(OP, dev.kind())
        .filter(|v| v.tier != Tier::Reference)
        .collect()
}

/// Every variant in both modes on awkward shapes (batch 1, widths that are not multiples of a
/// tile or of a 16-byte pack), every dtype it takes; f16 training is refused with its reason,
/// and so is a width whose rows are not 16-byte multiples by the compiled tier (its GEMM's TMA
/// tensor maps need them).
fn every_variant_matches_the_reference(dev: &Device) {
    let shapes: &[(usize, usize, usize)] = &[
        (1, 64, 2),
        (5, 24, 3),
        (8, 64, 3),
        (33, 72, 2),
        (9, 37, 2),
        (128, 128, 4),
    ];
    for v in variants(dev) {
        for &(b, d, l) in shapes {
            for mode in [Mode::Forward, Mode::Train] {
                for gelu in [GeluApprox::Erf, GeluApprox::Tanh] {
                    for &dt in v.dtypes {
                        let p = params(l, mode, gelu);
                        let seed = 3 + (b * d + l) as u64;
                        let host = make_inputs(OP, &[b, d], dt, seed, None, &p).unwrap();
                        let reference = make_reference(OP, &[b, d], &host, &p, seed).unwrap();
                        let inputs: Vec<Tensor> =
                            host.iter().map(|t| t.to_device(dev).unwrap()).collect();
                        let x: Vec<&Tensor> = inputs.iter().collect();
                        let what = format!("{} {dt} {b}x{d} L{l} {mode:?} {gelu:?}", v.id());
                        match check::validate(v, &p, &x, &reference) {
                            Ok((c, _)) => assert!(c.passed, "{what}: {}", c.describe()),
                            Err(Error::UnsupportedShape { why, .. }) => assert!(
                                (mode == Mode::Train
                                    && dt == DType::F16
                                    && why.contains("loss scaling"))
                                    || (v.name == "compiled"
                                        && !(d * dt.size()).is_multiple_of(16)
                                        && why.contains("16-byte")),
                                "{what} refused: {why}"
                            ),
                            Err(e) => panic!("{what}: {e}"),
                        }
                    }
                }
            }
        }
    }
}
test_device!(every_variant, super::every_variant_matches_the_reference);

/// The flags: defaults, train as the default mode with --steps, and clear errors.
#[test]
fn flags_parse_and_bad_values_say_why() {
    let get = |pairs: &[(&str, &str)]| {
        let mut f = FlagValues::default();
        for (k, v) in pairs {
            f.set(k, *v);
        }
        OP.params(&f)
    };
    let d = *get(&[]).unwrap().get::<MlpParams>().unwrap();
    assert_eq!(
        (d.layers, d.mode, d.gelu, d.steps),
        (64, Mode::Forward, GeluApprox::Erf, 1)
    );
    let s = *get(&[("steps", "4")]).unwrap().get::<MlpParams>().unwrap();
    assert_eq!((s.mode, s.steps), (Mode::Train, 4));
    let f = *get(&[("steps", "4"), ("mode", "forward")])
        .unwrap()
        .get::<MlpParams>()
        .unwrap();
    assert_eq!(f.mode, Mode::Forward);
    for (flag, value, says) in [
        ("layers", "0", "≥ 1"),
        ("layers", "x", "whole number"),
        ("steps", "-1", "whole number"),
        ("mode", "backward", "forward and train"),
        ("gelu", "relu", "tanh or erf"),
    ] {
        let e = get(&[(flag, value)]).unwrap_err().to_string();
        assert!(e.contains(says), "--{flag} {value}: {e}");
    }
    let e = get(&[("recompute", "")]).unwrap_err().to_string();
    assert!(e.contains("--mode train"), "{e}");
    let r = *get(&[("recompute", ""), ("mode", "train")])
        .unwrap()
        .get::<MlpParams>()
        .unwrap();
    assert!(r.recompute && !d.recompute);
}

/// Shapes: B×D only; the output's rows are dX, then each layer's db, then each layer's dW.
#[test]
fn shapes_and_sizes_follow_the_layers_and_mode() {
    let p = params(3, Mode::Train, GeluApprox::Erf);
    assert_eq!(OP.out_shape(&[4, 8], &p), vec![4 + 3 + 3 * 8, 8]);
    assert_eq!(OP.input_shapes(&[4, 8], &p).len(), 7);
    assert_eq!(OP.flops(&[4, 8], &p), 3.0 * 2.0 * 4.0 * 64.0 * 3.0);
    let f = params(3, Mode::Forward, GeluApprox::Erf);
    assert_eq!(OP.out_shape(&[4, 8], &f), vec![4, 8]);
    assert_eq!(OP.flops(&[4, 8], &f), 2.0 * 4.0 * 64.0 * 3.0);
    for bad in [&[8][..], &[2, 3, 4], &[0, 8]] {
        assert!(OP.check_shape(bad, None).is_err(), "{bad:?}");
    }
    assert!(OP.check_shape(&[4, 8], Some(16)).is_err());
}

/// The command line runs the CPU tier, and refuses a layer count of 0 and a 3-D shape with a
/// clear error before any work.
#[test]
fn the_command_line_runs_it_and_refuses_bad_input() {
    let out = run_cli(&[
        "bench",
        "mlp",
        "--device",
        "cpu",
        "--shape",
        "8x32",
        "--layers",
        "3",
        "--mode",
        "train",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "2",
    ])
    .unwrap();
    assert!(
        out.contains("mlp (3 layers, train, gelu erf)") && out.contains("faer"),
        "{out}"
    );
    let e = run_cli(&[
        "bench", "mlp", "--device", "cpu", "--shape", "8x32", "--layers", "0",
    ])
    .unwrap_err();
    assert!(e.contains("--layers 0"), "{e}");
    let e = run_cli(&["bench", "mlp", "--device", "cpu", "--shape", "8x32x4"]).unwrap_err();
    assert!(e.contains("BATCH×DIM"), "{e}");
}

/// `sweep mlp --layers LIST` varies the depth at one shape: one row a value with its time per
/// call, and one flag swept at a time.
#[test]
fn a_flag_sweep_varies_the_depth_at_one_shape() {
    let out = run_cli(&[
        "sweep",
        "mlp",
        "--device",
        "cpu",
        "--rows",
        "8",
        "--cols",
        "32",
        "--layers",
        "1,16",
        "--warmup-ms",
        "1",
        "--rep-ms",
        "3",
    ])
    .unwrap();
    assert!(
        out.contains("ms per call (median) against --layers"),
        "{out}"
    );
    // One row a depth, in order, each with a time (which is longer is bench's business, not a
    // test's: a loaded machine reorders them).
    let rows: Vec<(String, f64)> = out
        .lines()
        .filter(|l| l.contains("8×32"))
        .map(|l| {
            let cells: Vec<&str> = l.split('┆').map(|c| c.trim_matches(['│', ' '])).collect();
            (cells[0].to_string(), cells[2].parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert_eq!(
        (rows[0].0.as_str(), rows[1].0.as_str()),
        ("1", "16"),
        "{out}"
    );
    assert!(rows.iter().all(|r| r.1 > 0.0 && r.1.is_finite()), "{out}");
    for (args, says) in [
        (
            &["--layers", "1,2", "--steps", "1,2"][..],
            "one flag at a time",
        ),
        (
            &["--layers", "1,2", "--cols", "32..64:x2"][..],
            "one thing at a time",
        ),
        (&["--layers", "0,2"][..], "at least 1"),
    ] {
        let mut argv = vec!["sweep", "mlp", "--device", "cpu"];
        argv.extend_from_slice(args);
        let e = run_cli(&argv).unwrap_err();
        assert!(e.contains(says), "{args:?}: {e}");
    }
}

/// Several steps a call, with and without a read-back each step, give the one step's output;
/// zero layers or steps given programmatically are refused, never an unwritten output.
fn steps_and_read_backs_leave_the_same_output(dev: &Device) {
    for v in variants(dev) {
        let dt = *v.dtypes.last().unwrap();
        for mode in [Mode::Forward, Mode::Train] {
            if mode == Mode::Train && dt == DType::F16 {
                continue;
            }
            for sync_each_step in [false, true] {
                let p = Params::new(MlpParams {
                    layers: 2,
                    mode,
                    gelu: GeluApprox::Erf,
                    steps: 3,
                    sync_each_step,
                    recompute: false,
                });
                let host = make_inputs(OP, &[6, 64], dt, 5, None, &p).unwrap();
                let reference = make_reference(OP, &[6, 64], &host, &p, 5).unwrap();
                let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
                let x: Vec<&Tensor> = inputs.iter().collect();
                let (c, _) = check::validate(v, &p, &x, &reference).unwrap();
                assert!(
                    c.passed,
                    "{} {mode:?} sync {sync_each_step}: {}",
                    v.id(),
                    c.describe()
                );
            }
        }
        for (layers, steps) in [(0, 1), (2, 0)] {
            let p = Params::new(MlpParams {
                layers,
                mode: Mode::Forward,
                gelu: GeluApprox::Erf,
                steps,
                sync_each_step: false,
                recompute: false,
            });
            let x = Tensor::from_f64(&[0.5; 8], &[2, 4], dt)
                .unwrap()
                .to_device(dev)
                .unwrap();
            let mut y = Tensor::empty(&[2, 4], dt, dev).unwrap();
            let e = v.run(&p, &[&x], &mut y).unwrap_err().to_string();
            assert!(
                e.contains("at least one layer and one step"),
                "{}: {e}",
                v.id()
            );
        }
    }
}
test_device!(
    steps_and_read_backs,
    super::steps_and_read_backs_leave_the_same_output
);

/// A training step that keeps no pre-activation (`--recompute`: backward computes each Z again)
/// gives the reference's gradients in every tier, at widths the Hopper backward takes (16-byte
/// rows) and one it does not; `--recompute` without training is refused.
fn recomputed_steps_match_the_reference(dev: &Device) {
    for v in variants(dev) {
        for &(b, d, l) in &[(5, 24, 3), (33, 72, 2), (9, 37, 2)] {
            for &dt in v.dtypes.iter().filter(|&&dt| dt != DType::F16) {
                let p = Params::new(MlpParams {
                    layers: l,
                    mode: Mode::Train,
                    gelu: GeluApprox::Tanh,
                    steps: 1,
                    sync_each_step: false,
                    recompute: true,
                });
                let what = format!("{} {dt} {b}x{d} L{l} recompute", v.id());
                let host = make_inputs(OP, &[b, d], dt, 7, None, &p).unwrap();
                let reference = make_reference(OP, &[b, d], &host, &p, 7).unwrap();
                let inputs: Vec<Tensor> = host.iter().map(|t| t.to_device(dev).unwrap()).collect();
                let x: Vec<&Tensor> = inputs.iter().collect();
                match check::validate(v, &p, &x, &reference) {
                    Ok((c, _)) => assert!(c.passed, "{what}: {}", c.describe()),
                    Err(Error::UnsupportedShape { why, .. }) => assert!(
                        v.name == "compiled" && !(d * dt.size()).is_multiple_of(16),
                        "{what} refused: {why}"
                    ),
                    Err(e) => panic!("{what}: {e}"),
                }
            }
        }
    }
}
test_device!(recompute, super::recomputed_steps_match_the_reference);
