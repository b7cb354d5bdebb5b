//! The lecture's MLP: `L` layers of `x = gelu(x·Wᵀ + b)`, each `W` `[D, D]` and `b` `[D]`
//! (PyTorch's `nn.Linear(D, D)`), on a batch `x` `[B, D]`; shape `B×D` plus `--layers L`.
//!
//! Two modes:
//! - `forward`: the output `[B, D]`;
//! - `train`: one training step, `loss = mean(model(x))`, then backward through every layer
//!   (GeLU's derivative, `dX = dZ·W`, `dW = dZᵀ·X`, `db = Σ dZ`). The output holds every
//!   gradient, rows of `D`: `dX` (B rows), then `db` of each layer (L rows), then `dW` of each
//!   layer (L·D rows).
//!
//! `--steps N` runs N steps a call (forward passes, or training steps writing the same
//! gradients). Inputs: `[x, W_0 … W_{L-1}, b_0 … b_{L-1}]`, the weights drawn as `nn.Linear`
//! draws them, U(±1/√D). The GeLU is `F.gelu`'s default, the exact erf form, or `--gelu tanh`.
//!
//! Tiers: `reference` (f64), `cpu` (faer, f32), and on CUDA `manual` (cuBLAS, a bias-add kernel
//! and the manual GeLU's launches per layer, as eager PyTorch), `cuda` (kernlab's hand GEMMs
//! with the bias and GeLU fused into their epilogue), `compiled` (the GEMMs with the epilogue
//! kernlab's compiler generates) and `vendor` (cuBLASLt's GELU_BIAS epilogue, or its BIAS
//! epilogue and a GeLU kernel for erf; a tanh training step through GELU_AUX_BIAS and
//! DGELU_BGRAD). See docs/mlp.md.

use super::gelu::{self, GeluApprox, GeluParams};
use super::matmul::{self, Activation, GemmParams};
use super::{
    Compare, Flag, FlagKind, FlagValues, Grammar, Op, OpDef, OpParams, Params, SweepDefault, Tier,
    TorchCases, Variant,
};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::{cfg_1d, launch};
use crate::runtime::tensor::{Init, Tensor};
use cudarc::driver::LaunchConfig;
use rayon::prelude::*;
use serde::Serialize;

/// The op's handle.
pub const OP: Op = Op(&Mlp);

/// The training step's kernels besides the GEMMs (the mean's gradient, GeLU's backward, the
/// bias gradient, the transpose).
pub static SOURCE: KernelSource = KernelSource {
    file: "mlp.cu",
    src: include_str!("../../kernels/mlp.cu"),
};

/// What a call computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Forward,
    Train,
}

/// The MLP's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MlpParams {
    pub layers: usize,
    pub mode: Mode,
    pub gelu: GeluApprox,
    /// Steps a call runs.
    pub steps: usize,
    /// Read one value of the output back to the host after each step (a loop that prints
    /// `loss.item()`): the host waits for the GPU each step.
    pub sync_each_step: bool,
    /// Training: keep no pre-activation from the forward pass; backward recomputes each
    /// layer's `Z = H·Wᵀ + b` by the tier's GEMM when it needs it (activation recomputation:
    /// L·B·D fewer values kept, a third more GEMM work).
    pub recompute: bool,
}

impl Default for MlpParams {
    fn default() -> Self {
        MlpParams {
            layers: DEFAULT_LAYERS,
            mode: Mode::Forward,
            gelu: GeluApprox::Erf,
            steps: 1,
            sync_each_step: false,
            recompute: false,
        }
    }
}

/// The lecture's profiled model: 64 layers.
pub const DEFAULT_LAYERS: usize = 64;

impl OpParams for MlpParams {
    fn form(&self) -> Option<String> {
        let mode = match self.mode {
            Mode::Forward => "forward",
            Mode::Train => "train",
        };
        let steps = if self.steps > 1 {
            format!(", {} steps", self.steps)
        } else {
            String::new()
        };
        Some(format!(
            "{} layers, {mode}, gelu {}{steps}{}{}",
            self.layers,
            self.gelu.name(),
            if self.recompute { ", Z recomputed" } else { "" },
            if self.sync_each_step {
                ", a read-back each step"
            } else {
                ""
            }
        ))
    }
}

struct Mlp;

static FLAGS: [Flag; 6] = [
    Flag {
        name: "layers",
        help: "MLP: the number of layers, each Linear(D, D) then GeLU",
        kind: FlagKind::Value {
            value_name: "L",
            default: "64",
            values: None,
        },
    },
    Flag {
        name: "mode",
        help: "MLP: forward (the output), or train (forward, mean, backward: every gradient); \
               train is the default when --steps is given",
        kind: FlagKind::Value {
            value_name: "MODE",
            default: "forward",
            values: Some(&["forward", "train"]),
        },
    },
    Flag {
        name: "steps",
        help: "MLP: steps a timed call runs (forward passes or training steps)",
        kind: FlagKind::Value {
            value_name: "N",
            default: "1",
            values: None,
        },
    },
    Flag {
        name: "sync-each-step",
        help: "MLP: read one output value back to the host after every step, as a training loop \
               that prints loss.item() does (the host then waits for the GPU each step)",
        kind: FlagKind::Switch,
    },
    Flag {
        name: "recompute",
        help: "MLP training: keep no pre-activation Z from the forward pass (each layer's GEMM \
               writes GeLU's output only); backward recomputes each Z = H·Wᵀ + b by the tier's \
               GEMM when it needs it: less memory, a third more GEMM work (TFLOP/s still counts \
               the model's three products a layer)",
        kind: FlagKind::Switch,
    },
    Flag {
        name: "gelu",
        help: "GeLU form: tanh or erf",
        kind: FlagKind::Value {
            value_name: "FORM",
            default: "erf",
            values: Some(&["tanh", "erf"]),
        },
    },
];

/// A count flag's value: a whole number ≥ 1.
fn count(flags: &FlagValues, name: &str, default: usize) -> Result<usize> {
    match flags.get(name) {
        None => Ok(default),
        Some(s) => match s.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(Error::Invalid(format!(
                "--{name} {s}: the MLP takes a whole number ≥ 1"
            ))),
        },
    }
}

/// Layers, batch rows and width of a point (shape `B×D`).
fn dims(shape: &[usize], p: &Params) -> (usize, usize, usize, MlpParams) {
    let mp = p.get::<MlpParams>().copied().unwrap_or_default();
    let (b, d) = match shape {
        [b, d] => (*b, *d),
        _ => (1, 1),
    };
    (b, d, mp.layers, mp)
}

/// Rows of the forward reference: all while `L·D²` multiply-adds a row leave the total under
/// this, else at least 16 sampled rows.
const FORWARD_REFERENCE_MACS: usize = 1 << 32;
/// Sampled rows of each validated gradient (dX, dW of the first and last layer).
const TRAIN_SAMPLE_ROWS: usize = 16;

impl OpDef for Mlp {
    fn name(&self) -> &'static str {
        "mlp"
    }
    fn about(&self) -> &'static str {
        "the lecture's MLP: --layers L of gelu(x·Wᵀ + b), forward or a training step: shape B×D"
    }
    fn grammar(&self) -> Grammar {
        Grammar::Batch
    }
    fn default_shape(&self, device: DeviceKind) -> Vec<usize> {
        match device {
            DeviceKind::Cuda => vec![1024, 2048],
            DeviceKind::Cpu => vec![64, 256],
        }
    }
    fn default_sweep(&self, device: DeviceKind) -> SweepDefault {
        match device {
            DeviceKind::Cuda => SweepDefault::Rows {
                rows: "1024",
                cols: "256..8192:x2",
            },
            DeviceKind::Cpu => SweepDefault::Rows {
                rows: "64",
                cols: "64..512:x2",
            },
        }
    }
    fn flags(&self) -> &'static [Flag] {
        &FLAGS
    }
    fn params(&self, flags: &FlagValues) -> Result<Params> {
        let layers = count(flags, "layers", DEFAULT_LAYERS)?;
        let steps = count(flags, "steps", 1)?;
        let mode = match flags.get("mode") {
            Some(s) => match s.trim().to_ascii_lowercase().as_str() {
                "forward" | "fwd" => Mode::Forward,
                "train" => Mode::Train,
                o => {
                    return Err(Error::Invalid(format!(
                        "--mode {o}: the MLP's modes are forward and train"
                    )))
                }
            },
            None if flags.get("steps").is_some() => Mode::Train,
            None => Mode::Forward,
        };
        let gelu = match flags.get("gelu") {
            Some(s) => s.parse().map_err(Error::Invalid)?,
            None => GeluApprox::Erf,
        };
        let recompute = flags.switch("recompute");
        if recompute && mode != Mode::Train {
            return Err(Error::Invalid(
                "--recompute is a training option (what backward keeps from the forward pass); \
                 add --mode train"
                    .into(),
            ));
        }
        Ok(Params::new(MlpParams {
            layers,
            mode,
            gelu,
            steps,
            sync_each_step: flags.switch("sync-each-step"),
            recompute,
        }))
    }
    fn check_shape(&self, shape: &[usize], row_stride: Option<usize>) -> Result<()> {
        let bad = |why: String| Error::BadShape {
            shape: crate::runtime::tensor::shape_str(shape),
            why,
        };
        match shape {
            [b, d] if *b >= 1 && *d >= 1 => {}
            [_, _] => return Err(bad("the MLP's batch and width must be at least 1".into())),
            _ => {
                return Err(bad(
                    "the MLP takes BATCH×DIM (e.g. 1024x2048), and the depth as --layers".into(),
                ))
            }
        }
        if row_stride.is_some() {
            return Err(bad("--row-stride does not apply to the MLP".into()));
        }
        Ok(())
    }
    fn input_shapes(&self, shape: &[usize], p: &Params) -> Vec<Vec<usize>> {
        let (b, d, l, _) = dims(shape, p);
        let mut v = vec![vec![b, d]];
        v.extend((0..l).map(|_| vec![d, d]));
        v.extend((0..l).map(|_| vec![d]));
        v
    }
    /// x ~ N(0, 1); each W and b ~ U(±1/√D), as `nn.Linear(D, D)` initialises them.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        _: Option<usize>,
        p: &Params,
    ) -> Result<Vec<Tensor>> {
        let (b, d, l, _) = dims(shape, p);
        let cpu = Device::Cpu;
        let bound = 1.0 / (d as f64).sqrt();
        let u = Init::Uniform {
            lo: -bound,
            hi: bound,
        };
        let mut v = vec![Tensor::random(
            &[b, d],
            dtype,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            seed,
            None,
            &cpu,
        )?];
        for i in 0..l as u64 {
            v.push(Tensor::random(
                &[d, d],
                dtype,
                u,
                seed ^ (0x3d1_0000 + i),
                None,
                &cpu,
            )?);
        }
        for i in 0..l as u64 {
            v.push(Tensor::random(
                &[d],
                dtype,
                u,
                seed ^ (0xb1a5_0000 + i),
                None,
                &cpu,
            )?);
        }
        Ok(v)
    }
    fn out_shape(&self, shape: &[usize], p: &Params) -> Vec<usize> {
        let (b, d, l, mp) = dims(shape, p);
        match mp.mode {
            Mode::Forward => vec![b, d],
            Mode::Train => vec![b + l + l * d, d],
        }
    }
    fn call_out_shape(&self, inputs: &[&Tensor], p: &Params) -> Vec<usize> {
        self.out_shape(inputs[0].shape(), p)
    }
    fn reference_block_count(&self, shape: &[usize], full: usize, p: &Params) -> usize {
        self.reference_blocks(shape, 0, full, p)
            .map_or_else(|| self.out_shape(shape, p)[0], |b| b.len())
    }
    /// Forward: sampled rows where a full reference would cost more than
    /// [`FORWARD_REFERENCE_MACS`]. Train: the whole output where it fits `full` elements, else
    /// sampled rows of dX, every layer's bias gradient, and sampled rows of the first and last
    /// layer's weight gradients (the whole output is still read for NaN).
    fn reference_blocks(
        &self,
        shape: &[usize],
        seed: u64,
        full: usize,
        p: &Params,
    ) -> Option<Vec<usize>> {
        let (b, d, l, mp) = dims(shape, p);
        let per_row = l.saturating_mul(d).saturating_mul(d).max(1);
        match mp.mode {
            Mode::Forward => {
                let want = (FORWARD_REFERENCE_MACS / per_row)
                    .max(16)
                    .min(full / d.max(1));
                (want < b).then(|| super::sample_rows(b, want.max(1), seed))
            }
            Mode::Train => {
                let total = b + l + l * d;
                if total.saturating_mul(d) <= full {
                    return None;
                }
                // Sampled dX rows, every layer's db, sampled rows of the first and last dW.
                let mut rows = super::sample_rows(b, TRAIN_SAMPLE_ROWS, seed);
                rows.extend(b..b + l);
                let first = b + l;
                let last = b + l + l.saturating_sub(1) * d;
                let s = super::sample_rows(d, TRAIN_SAMPLE_ROWS, seed ^ 0xd3);
                rows.extend(s.iter().map(|r| first + r));
                if l > 1 {
                    rows.extend(s.iter().map(|r| last + r));
                }
                Some(rows)
            }
        }
    }
    /// The f64 the reference holds besides its output: the sampled rows' activations
    /// (forward), or every layer's pre-activation for the backward pass (train), and a layer's
    /// weights.
    fn reference_input_elems(&self, shape: &[usize], blocks: usize, p: &Params) -> usize {
        let (b, d, l, mp) = dims(shape, p);
        let layer = d.saturating_mul(d);
        match mp.mode {
            Mode::Forward => blocks.saturating_mul(d).saturating_mul(2) + layer,
            Mode::Train => b
                .saturating_mul(d)
                .saturating_mul(l + 4)
                .saturating_add(layer.saturating_mul(3)),
        }
    }
    fn reference(
        &self,
        inputs: &[Tensor],
        blocks: Option<&[usize]>,
        p: &Params,
    ) -> Result<Vec<f64>> {
        let mp = *p.get::<MlpParams>()?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let net = HostNet::<f64>::from_inputs(&refs, mp)?;
        match mp.mode {
            Mode::Forward => {
                let x = match blocks {
                    Some(rows) => inputs[0].blocks_f64(net.d, rows)?,
                    None => inputs[0].to_f64_vec()?,
                };
                net.forward(x)
            }
            Mode::Train => {
                let x = inputs[0].to_f64_vec()?;
                let (l, d, b) = (net.layers, net.d, net.b);
                let wanted = |layer: usize| match blocks {
                    None => true,
                    Some(rows) => rows.iter().any(|&r| {
                        let dw = b + l + layer * d;
                        (dw..dw + d).contains(&r)
                    }),
                };
                let g = net.train(x, &wanted)?;
                Ok(match blocks {
                    None => g.flat(),
                    Some(rows) => {
                        let mut out = Vec::with_capacity(rows.len() * d);
                        for &r in rows {
                            out.extend_from_slice(g.row(r, b, l, d));
                        }
                        out
                    }
                })
            }
        }
    }
    /// Gradients are judged in their tensor's scale: dX, each layer's db, each layer's dW
    /// (forward rows each on their own).
    fn compare(&self) -> Compare {
        Compare::GroupsL2
    }
    fn check_group(&self, out_shape: &[usize], p: &Params, row: usize) -> usize {
        let Ok(mp) = p.get::<MlpParams>() else {
            return row;
        };
        let (l, d) = (mp.layers, *out_shape.last().unwrap_or(&1));
        let b = out_shape[0].saturating_sub(l + l * d);
        match mp.mode {
            Mode::Forward => row,
            Mode::Train if row < b => 0,
            Mode::Train if row < b + l => 1 + (row - b),
            Mode::Train => 1 + l + (row - b - l) / d.max(1),
        }
    }
    /// The dtype's tolerance, widened with the depth: each layer rounds its activations to the
    /// dtype, and the errors add up as √L (a training step's gradients pass 2L roundings: the
    /// forward's and the backward's).
    fn tolerance(&self, dtype: DType, p: &Params) -> f64 {
        let (l, train) = p
            .get::<MlpParams>()
            .map_or((1, false), |m| (m.layers, m.mode == Mode::Train));
        let passes = if train { 2 * l } else { l } as f64;
        dtype.tolerance() * (1.0 + passes.sqrt())
    }
    fn min_bytes(&self, shape: &[usize], dtype: DType, p: &Params) -> usize {
        let (b, d, l, mp) = dims(shape, p);
        let weights = l * (d * d + d);
        let per_step = match mp.mode {
            // x in, weights, y out.
            Mode::Forward => 2 * b * d + weights,
            // x in, weights read, their gradients and dX out.
            Mode::Train => 2 * b * d + 2 * weights,
        };
        per_step * dtype.size() * mp.steps
    }
    fn flops(&self, shape: &[usize], p: &Params) -> f64 {
        let (b, d, l, mp) = dims(shape, p);
        let gemm = 2.0 * b as f64 * d as f64 * d as f64 * l as f64;
        let per_step = match mp.mode {
            Mode::Forward => gemm,
            Mode::Train => 3.0 * gemm,
        };
        per_step * mp.steps as f64
    }
    fn flops_bound(&self) -> bool {
        true
    }
    fn shows_peak_memory(&self) -> bool {
        true
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    /// `[x, W_0 … W_{L-1}, b_0 … b_{L-1}]`: x `[B, D]`, each W `[D, D]`, each b `[D]`, one dtype,
    /// one device, contiguous; y the mode's output shape.
    fn check_call(&self, v: &Variant, p: &Params, inputs: &[&Tensor], y: &Tensor) -> Result<()> {
        let mp = p.get::<MlpParams>()?;
        let l = mp.layers;
        if l == 0 || mp.steps == 0 {
            return Err(Error::Invalid(format!(
                "{}: the MLP needs at least one layer and one step (got {l} layers, {} steps)",
                v.id(),
                mp.steps
            )));
        }
        if mp.mode == Mode::Train && inputs.first().is_some_and(|x| x.dtype() == DType::F16) {
            return Err(Error::UnsupportedShape {
                op: "mlp".into(),
                variant: v.name.into(),
                why: "training in f16 needs loss scaling: the mean's gradient 1/(B·D) and the \
                      gradients after it fall below f16's smallest normal (6.1e-5) and lose \
                      their digits; train in bf16 or f32"
                    .into(),
            });
        }
        if inputs.len() != 1 + 2 * l {
            return Err(Error::Invalid(format!(
                "{} with {l} layers takes [x, W_0 … W_{}, b_0 … b_{}] ({} tensors), got {}",
                v.id(),
                l - 1,
                l - 1,
                1 + 2 * l,
                inputs.len()
            )));
        }
        let x = inputs[0];
        let (b, d) = match *x.shape() {
            [b, d] if b >= 1 && d >= 1 => (b, d),
            _ => {
                return Err(Error::ShapeMismatch {
                    op: "mlp".into(),
                    why: format!("x must be [BATCH, DIM], got {:?}", x.shape()),
                })
            }
        };
        for (i, t) in inputs.iter().enumerate() {
            v.check_dtype_device(t)?;
            let (want, what): (&[usize], String) = match i {
                0 => (&[b, d], "x".into()),
                i if i <= l => (&[d, d], format!("W_{}", i - 1)),
                i => (&[d], format!("b_{}", i - 1 - l)),
            };
            if t.shape() != want || t.dtype() != x.dtype() {
                return Err(Error::ShapeMismatch {
                    op: "mlp".into(),
                    why: format!(
                        "{what} must be {want:?} {} (x is {:?}), got {:?} {}",
                        x.dtype(),
                        x.shape(),
                        t.shape(),
                        t.dtype()
                    ),
                });
            }
            if !t.is_contiguous() {
                return Err(v.not_contiguous(t, "input"));
            }
        }
        v.check_dtype_device(y)?;
        let want = self.out_shape(&[b, d], p);
        if y.shape() != want.as_slice() || y.dtype() != x.dtype() {
            return Err(Error::ShapeMismatch {
                op: "mlp".into(),
                why: format!(
                    "the output must be {want:?} {}, got {:?} {}",
                    x.dtype(),
                    y.shape(),
                    y.dtype()
                ),
            });
        }
        if !y.is_contiguous() {
            return Err(v.not_contiguous(y, "output"));
        }
        Ok(())
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "mlp",
            args: |p| {
                let m = p.get::<MlpParams>().map_err(|e| e.to_string())?;
                let mut args: Vec<String> = Vec::new();
                if m.sync_each_step {
                    args.push("--sync-each-step".into());
                }
                args.extend([
                    "--layers".into(),
                    m.layers.to_string(),
                    "--mode".into(),
                    match m.mode {
                        Mode::Forward => "forward".into(),
                        Mode::Train => "train".into(),
                    },
                    "--gelu".into(),
                    m.gelu.name().into(),
                    "--steps".into(),
                    m.steps.to_string(),
                ]);
                Ok(args)
            },
        })
    }
}

// ---- the host model (the f64 reference and the CPU tier) --------------------------------------

/// A float the host model computes in: f64 (the reference) or f32 (the CPU tier).
trait HostFloat: Copy + Send + Sync + 'static {
    fn of(v: f64) -> Self;
    fn to(self) -> f64;
    /// `c[m,n] = op(a)·op(b)` (row-major; `a` stored `[k,m]` where `at`, `b` stored `[n,k]`
    /// where `bt`), with faer on every core.
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        c: &mut [Self],
        a: &[Self],
        at: bool,
        b: &[Self],
        bt: bool,
        m: usize,
        n: usize,
        k: usize,
    );
}

macro_rules! host_float {
    ($t:ty) => {
        impl HostFloat for $t {
            fn of(v: f64) -> Self {
                v as $t
            }
            fn to(self) -> f64 {
                self as f64
            }
            fn gemm(
                c: &mut [Self],
                a: &[Self],
                at: bool,
                b: &[Self],
                bt: bool,
                m: usize,
                n: usize,
                k: usize,
            ) {
                let av = if at {
                    faer::MatRef::from_row_major_slice(a, k, m).transpose()
                } else {
                    faer::MatRef::from_row_major_slice(a, m, k)
                };
                let bv = if bt {
                    faer::MatRef::from_row_major_slice(b, n, k).transpose()
                } else {
                    faer::MatRef::from_row_major_slice(b, k, n)
                };
                let cv = faer::MatMut::from_row_major_slice_mut(c, m, n);
                faer::linalg::matmul::matmul(
                    cv,
                    faer::Accum::Replace,
                    av,
                    bv,
                    1.0 as $t,
                    faer::Par::rayon(0),
                );
            }
        }
    };
}
host_float!(f64);
host_float!(f32);

/// The MLP's weights on the host, in `T`.
struct HostNet<'a, T> {
    inputs: &'a [&'a Tensor],
    b: usize,
    d: usize,
    layers: usize,
    gelu: GeluApprox,
    _t: std::marker::PhantomData<T>,
}

/// A training step's gradients on the host: dX, then db and dW of each layer (empty for a
/// layer not asked for).
struct Grads<T> {
    dx: Vec<T>,
    db: Vec<Vec<T>>,
    dw: Vec<Vec<T>>,
}

impl<T: HostFloat> Grads<T> {
    /// Row `r` of the train-mode output.
    fn row(&self, r: usize, b: usize, l: usize, d: usize) -> &[T] {
        if r < b {
            &self.dx[r * d..(r + 1) * d]
        } else if r < b + l {
            &self.db[r - b]
        } else {
            let i = r - b - l;
            &self.dw[i / d][(i % d) * d..(i % d + 1) * d]
        }
    }
    /// The whole train-mode output, in f64.
    fn flat(&self) -> Vec<f64> {
        let mut out: Vec<f64> = self.dx.iter().map(|v| v.to()).collect();
        for g in self.db.iter().chain(&self.dw) {
            out.extend(g.iter().map(|v| v.to()));
        }
        out
    }
}

impl<'a, T: HostFloat> HostNet<'a, T> {
    fn from_inputs(inputs: &'a [&'a Tensor], mp: MlpParams) -> Result<Self> {
        let (b, d) = match inputs.first().map(|x| x.shape()) {
            Some(&[b, d]) => (b, d),
            _ => return Err(Error::Invalid("the MLP's x must be [BATCH, DIM]".into())),
        };
        if inputs.len() != 1 + 2 * mp.layers {
            return Err(Error::Invalid(format!(
                "the MLP with {} layers takes {} tensors, got {}",
                mp.layers,
                1 + 2 * mp.layers,
                inputs.len()
            )));
        }
        Ok(HostNet {
            inputs,
            b,
            d,
            layers: mp.layers,
            gelu: mp.gelu,
            _t: std::marker::PhantomData,
        })
    }
    fn load(t: &Tensor) -> Result<Vec<T>> {
        Ok(t.to_f64_vec()?.into_iter().map(T::of).collect())
    }
    /// Layer `l`'s pre-activation of the rows `h`: `h·Wᵀ + b`.
    fn linear(&self, h: &[T], l: usize) -> Result<Vec<T>> {
        let rows = h.len() / self.d;
        let w = Self::load(self.inputs[1 + l])?;
        let bias = Self::load(self.inputs[1 + self.layers + l])?;
        let mut z = vec![T::of(0.0); rows * self.d];
        T::gemm(&mut z, h, false, &w, true, rows, self.d, self.d);
        let d = self.d;
        z.par_chunks_mut(d).for_each(|row| {
            for (v, bb) in row.iter_mut().zip(&bias) {
                *v = T::of(v.to() + bb.to());
            }
        });
        Ok(z)
    }
    fn act(&self, z: &[T]) -> Vec<T> {
        let g = self.gelu;
        z.par_iter()
            .map(|v| T::of(gelu::reference_f64(v.to(), g)))
            .collect()
    }
    /// The output of the rows `x` (f64 values, any number of rows).
    fn forward(&self, x: Vec<f64>) -> Result<Vec<f64>> {
        let mut h: Vec<T> = x.into_iter().map(T::of).collect();
        for l in 0..self.layers {
            h = self.act(&self.linear(&h, l)?);
        }
        Ok(h.into_iter().map(|v| v.to()).collect())
    }
    /// One training step on the whole batch: the gradients of `mean(model(x))`; every layer's
    /// db, and dW only of the layers `wanted` says.
    fn train(&self, x: Vec<f64>, wanted: &dyn Fn(usize) -> bool) -> Result<Grads<T>> {
        let (b, d, nl) = (self.b, self.d, self.layers);
        let x: Vec<T> = x.into_iter().map(T::of).collect();
        // Forward, keeping each layer's input (only where its dW is wanted) and
        // pre-activation.
        let mut zs = Vec::with_capacity(nl);
        let mut hs: Vec<Option<Vec<T>>> = Vec::with_capacity(nl);
        let mut h = x;
        for l in 0..nl {
            let z = self.linear(&h, l)?;
            let next = self.act(&z);
            hs.push(wanted(l).then(|| std::mem::take(&mut h)));
            zs.push(z);
            h = next;
        }
        let g = self.gelu;
        let mut dh = vec![T::of(1.0 / (b as f64 * d as f64)); b * d];
        let mut db = vec![Vec::new(); nl];
        let mut dw = vec![Vec::new(); nl];
        for l in (0..nl).rev() {
            let z = zs.pop().expect("one per layer");
            let dz: Vec<T> = dh
                .par_iter()
                .zip(&z)
                .map(|(g_, z)| T::of(g_.to() * gelu::derivative_f64(z.to(), g)))
                .collect();
            let mut s = vec![0.0f64; d];
            for row in dz.chunks(d) {
                for (a, v) in s.iter_mut().zip(row) {
                    *a += v.to();
                }
            }
            db[l] = s.into_iter().map(T::of).collect();
            if let Some(hl) = hs[l].take() {
                let mut w = vec![T::of(0.0); d * d];
                T::gemm(&mut w, &dz, true, &hl, false, d, d, b);
                dw[l] = w;
            }
            let w = Self::load(self.inputs[1 + l])?;
            let mut next = vec![T::of(0.0); b * d];
            T::gemm(&mut next, &dz, false, &w, false, b, d, d);
            dh = next;
        }
        Ok(Grads { dx: dh, db, dw })
    }
}

/// `reference`: the f64 model on the whole output.
fn run_reference(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let mp = *p.get::<MlpParams>()?;
    let net = HostNet::<f64>::from_inputs(x, mp)?;
    let x0 = x[0].to_f64_vec()?;
    let v = match mp.mode {
        Mode::Forward => net.forward(x0)?,
        Mode::Train => net.train(x0, &|_| true)?.flat(),
    };
    *y = Tensor::from_f64(&v, y.shape(), y.dtype())?;
    Ok(())
}

/// `cpu`: the same model in f32 (faer's GEMMs on every core), stored to the dtype at the end.
fn run_cpu(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let mp = *p.get::<MlpParams>()?;
    let net = HostNet::<f32>::from_inputs(x, mp)?;
    let mut out = Vec::new();
    for _ in 0..mp.steps {
        let x0 = x[0].to_f64_vec()?;
        out = match mp.mode {
            Mode::Forward => net.forward(x0)?,
            Mode::Train => net.train(x0, &|_| true)?.flat(),
        };
    }
    *y = Tensor::from_f64(&out, y.shape(), y.dtype())?;
    Ok(())
}

// ---- CUDA -------------------------------------------------------------------------------------

/// How a CUDA tier runs a layer's pieces.
struct TierPlan {
    /// The registry's name of the tier's GEMM variant (matmul and linear).
    gemm: &'static str,
    /// How it runs a forward layer `act(h·Wᵀ + b)`.
    fused_forward: FwdFn,
    /// The tier's GeLU (after a GEMM + bias, in training).
    gelu: &'static str,
    /// Backward's products through cuBLAS (`dZ·W`, `dZᵀ·H`), or through the tier's own GEMM
    /// on transposed operands.
    blas_backward: bool,
    /// A tanh-GeLU training step through cuBLASLt's GeLU epilogues (GELU_AUX_BIAS forward,
    /// DGELU_BGRAD backward; Lt has no erf GeLU).
    lt_epilogues: bool,
}

/// A forward layer: `out = gelu(h·Wᵀ + b)`.
type FwdFn = fn(&TierPlan, &Tensor, &Tensor, &Tensor, GeluApprox, &mut Tensor) -> Result<()>;

fn act_of(g: GeluApprox) -> Activation {
    match g {
        GeluApprox::Erf => Activation::GeluErf,
        GeluApprox::Tanh => Activation::GeluTanh,
    }
}

fn linear_params(act: Activation) -> Params {
    Params::new(GemmParams { act, bias: true })
}

/// `out = act(h·Wᵀ + b)` by the tier's linear variant (the bias and GeLU in its epilogue).
fn fwd_linear(
    t: &TierPlan,
    h: &Tensor,
    w: &Tensor,
    b: &Tensor,
    g: GeluApprox,
    out: &mut Tensor,
) -> Result<()> {
    let v = super::find(super::linear::OP, t.gemm, DeviceKind::Cuda)?;
    if t.gemm == "cublaslt" && g == GeluApprox::Erf {
        // cuBLASLt's GELU epilogue is the tanh form: its BIAS epilogue, then a GeLU kernel.
        let mut z = Tensor::empty(out.shape(), out.dtype(), &out.device())?;
        v.run(&linear_params(Activation::None), &[h, w, b], &mut z)?;
        let gelu_v = super::find(gelu::OP, t.gelu, DeviceKind::Cuda)?;
        return gelu_v.run(&Params::new(GeluParams { gelu: g }), &[&z], out);
    }
    v.run(&linear_params(act_of(g)), &[h, w, b], out)
}

/// The `manual` layer, as eager PyTorch runs it: cuBLAS's product, a bias-add launch, then the
/// manual GeLU's launches.
fn fwd_manual(
    _: &TierPlan,
    h: &Tensor,
    w: &Tensor,
    b: &Tensor,
    g: GeluApprox,
    out: &mut Tensor,
) -> Result<()> {
    let mut z = Tensor::empty(out.shape(), out.dtype(), &out.device())?;
    manual_pre(h, w, b, &mut z)?;
    super::compiled::run_eager(gelu::OP, &Params::new(GeluParams { gelu: g }), &[&z], out)
}

/// `z = h·Wᵀ + b` as eager PyTorch: cuBLAS, then the bias-add kernel.
fn manual_pre(h: &Tensor, w: &Tensor, b: &Tensor, z: &mut Tensor) -> Result<()> {
    let v = super::find(super::linear::OP, "manual", DeviceKind::Cuda)?;
    v.run(&linear_params(Activation::None), &[h, w, b], z)
}

static MANUAL: TierPlan = TierPlan {
    gemm: "manual",
    fused_forward: fwd_manual,
    gelu: "manual",
    blas_backward: true,
    lt_epilogues: false,
};
static CUDA: TierPlan = TierPlan {
    gemm: "auto",
    fused_forward: fwd_linear,
    gelu: "v3_vec16_ilp",
    blas_backward: false,
    lt_epilogues: false,
};
static COMPILED: TierPlan = TierPlan {
    gemm: "compiled",
    fused_forward: fwd_linear,
    gelu: "compiled",
    blas_backward: false,
    lt_epilogues: false,
};
static VENDOR: TierPlan = TierPlan {
    gemm: "cublaslt",
    fused_forward: fwd_linear,
    gelu: "v3_vec16_ilp",
    blas_backward: true,
    lt_epilogues: true,
};

fn dev_of(t: &Tensor) -> Result<std::sync::Arc<crate::runtime::device::CudaDevice>> {
    t.device()
        .cuda()
        .cloned()
        .ok_or_else(|| Error::Invalid("the MLP's CUDA tiers were handed CPU tensors".into()))
}

fn buf(t: &Tensor) -> Result<&cudarc::driver::CudaSlice<u8>> {
    t.cuda_buf()
        .ok_or_else(|| Error::Invalid("the MLP's CUDA tiers were handed CPU tensors".into()))
}
fn buf_mut(t: &mut Tensor) -> Result<&mut cudarc::driver::CudaSlice<u8>> {
    t.cuda_buf_mut()
        .ok_or_else(|| Error::Invalid("the MLP's CUDA tiers were handed CPU tensors".into()))
}

/// Copy `src`'s first `rows` rows into rows `start..start + rows` of `t` (a gradient into its
/// place in the train output), on the device's stream.
fn rows_of(t: &mut Tensor, start: usize, rows: usize, src: &Tensor) -> Result<()> {
    let es = t.dtype().size();
    let cols = *t.shape().last().unwrap_or(&1);
    let dev = dev_of(src)?;
    let n = rows * cols * es;
    let s = buf(src)?;
    let dst = buf_mut(t)?;
    let mut view = dst.slice_mut(start * cols * es..start * cols * es + n);
    dev.stream
        .memcpy_dtod(&s.slice(0..n), &mut view)
        .map_err(|e| Error::driver("cuMemcpyDtoDAsync (an MLP gradient into the output)", e))
}

/// `y = c` everywhere (the mean's gradient).
fn fill(t: &mut Tensor, v: f32) -> Result<()> {
    let dev = dev_of(t)?;
    let n = t.numel() as i64;
    let name = format!("fill_{}", t.dtype());
    let out = buf_mut(t)?;
    launch!(dev, &SOURCE, name, cfg_1d(n as u64, 256)?, [out, &v, &n]);
    Ok(())
}

fn gelu_backward(dh: &Tensor, z: &Tensor, g: GeluApprox, dz: &mut Tensor) -> Result<()> {
    let dev = dev_of(dz)?;
    let n = dz.numel() as i64;
    let name = format!("gelu_backward_{}_{}", g.name(), dz.dtype());
    let (a, b) = (buf(dh)?, buf(z)?);
    let out = buf_mut(dz)?;
    launch!(dev, &SOURCE, name, cfg_1d(n as u64, 256)?, [a, b, out, &n]);
    Ok(())
}

/// The device address of element `at` of `t` (a row of the train output a kernel writes).
fn addr(t: &mut Tensor, at: usize) -> Result<u64> {
    use cudarc::driver::DevicePtrMut;
    let es = t.dtype().size();
    let dev = dev_of(t)?;
    let b = buf_mut(t)?;
    if (at + 1) * es > b.len() {
        return Err(Error::Invalid(format!(
            "element {at} is past the end of a {}-byte buffer",
            b.len()
        )));
    }
    let (p, _g) = b.device_ptr_mut(&dev.stream);
    Ok(p + (at * es) as u64)
}

/// A device address of `t` (its first element), for kernels handed several views of buffers.
fn addr0(t: &Tensor) -> Result<u64> {
    use cudarc::driver::DevicePtr;
    let dev = dev_of(t)?;
    let (p, _g) = buf(t)?.device_ptr(&dev.stream);
    Ok(p)
}

/// The bias gradient `Σ_rows` into row `db_row` of `y`, in two passes: column sums over row
/// segments (f32), then their sum. With `dgelu = Some((z, form, dz))` the first pass is also
/// GeLU's backward, `dz = dh·gelu'(z)`, summing dz as it stores it; with `None` it sums `dh`
/// itself (eager's separate reduction after GeLU's backward).
fn bias_grad(
    dh: &Tensor,
    dgelu: Option<(&Tensor, GeluApprox, &mut Tensor)>,
    y: &mut Tensor,
    db_row: usize,
) -> Result<()> {
    let dev = dev_of(dh)?;
    let dt = dh.dtype();
    let (rows, cols) = (dh.shape()[0], dh.shape()[1]);
    let pack = 16 / dt.size();
    let (pz, pdz) = match &dgelu {
        Some((z, _, dz)) => (addr0(z)?, addr0(dz)?),
        None => (addr0(dh)?, addr0(dh)?),
    };
    let pdh = addr0(dh)?;
    let vec = cols.is_multiple_of(pack) && [pdh, pz, pdz].iter().all(|p| p % 16 == 0);
    let per_block = 32 * if vec { pack } else { 1 };
    let col_blocks = cols.div_ceil(per_block);
    // Enough row segments for two blocks an SM, each at least 8 rows (one a warp).
    let sms = dev.props.sm_count as usize;
    let segs = (2 * sms)
        .div_ceil(col_blocks)
        .clamp(1, rows.div_ceil(8).max(1));
    let seg = rows.div_ceil(segs);
    let segs = rows.div_ceil(seg);
    let mut part = Tensor::empty(&[segs, cols], DType::F32, &dh.device())?;
    let kind = match &dgelu {
        None => "col_sum".to_string(),
        Some((_, g, _)) => format!("dgelu_db_{}", g.name()),
    };
    let name = format!("{kind}_{}_{dt}", if vec { "vec" } else { "scalar" });
    let cfg = LaunchConfig {
        grid_dim: (col_blocks as u32, segs as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (r, c, s) = (rows as i32, cols as i32, seg as i32);
    {
        let p = buf_mut(&mut part)?;
        launch!(dev, &SOURCE, name, cfg, [&pdh, &pz, &pdz, p, &r, &c, &s]);
    }
    let db = addr(y, db_row * cols)?;
    let n = segs as i32;
    let p = buf(&part)?;
    let name = format!("bias_grad_finish_{dt}");
    launch!(
        dev,
        &SOURCE,
        name,
        cfg_1d(cols as u64, 256)?,
        [p, &db, &n, &c]
    );
    Ok(())
}

fn transpose(x: &Tensor) -> Result<Tensor> {
    let dev = dev_of(x)?;
    let (rows, cols) = (x.shape()[0], x.shape()[1]);
    let mut t = Tensor::empty(&[cols, rows], x.dtype(), &x.device())?;
    let name = format!("transpose_{}", x.dtype());
    // Rows' tiles on x (up to 2^31 − 1), columns' on y (up to 65535: 2 Mi columns).
    let col_tiles = cols.div_ceil(32);
    if col_tiles > 65535 || rows.div_ceil(32) > i32::MAX as usize {
        return Err(Error::UnsupportedShape {
            op: "mlp".into(),
            variant: "cuda".into(),
            why: format!("a {rows}×{cols} transpose is past the grid's limits (2 Mi columns)"),
        });
    }
    let cfg = LaunchConfig {
        grid_dim: (rows.div_ceil(32) as u32, col_tiles as u32, 1),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let (r, c) = (rows as i32, cols as i32);
    let a = buf(x)?;
    let out = buf_mut(&mut t)?;
    launch!(dev, &SOURCE, name, cfg, [a, out, &r, &c]);
    Ok(t)
}

/// `c = a·bᵀ` by kernlab's hand GEMM (the backward products of the cuda and compiled tiers:
/// plain products, with no epilogue for a compiler to generate).
fn hand_matmul(a: &Tensor, b: &Tensor, c: &mut Tensor) -> Result<()> {
    let v = super::find(matmul::OP, "auto", DeviceKind::Cuda)?;
    v.run(&matmul::OP.default_params(), &[a, b], c)
}

/// One call of a CUDA tier: `steps` forward passes or training steps.
fn run_tier(t: &TierPlan, p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let mp = *p.get::<MlpParams>()?;
    let nl = mp.layers;
    let (w, bias) = (&x[1..=nl], &x[1 + nl..]);
    let dev = x[0].device();
    let (b, d) = (x[0].shape()[0], x[0].shape()[1]);
    for _ in 0..mp.steps {
        match mp.mode {
            Mode::Forward => {
                let mut h: Option<Tensor> = None;
                for l in 0..nl {
                    let input = h.as_ref().unwrap_or(x[0]);
                    if l + 1 == nl {
                        (t.fused_forward)(t, input, w[l], bias[l], mp.gelu, y)?;
                    } else {
                        let mut out = Tensor::empty(&[b, d], y.dtype(), &dev)?;
                        (t.fused_forward)(t, input, w[l], bias[l], mp.gelu, &mut out)?;
                        h = Some(out);
                    }
                }
            }
            Mode::Train if t.lt_epilogues && !mp.recompute && lt_trains(mp, y.dtype(), d) => {
                train_step_lt(mp, x[0], w, bias, y)?
            }
            Mode::Train => train_step(t, mp, x[0], w, bias, y)?,
        }
        if mp.sync_each_step {
            // `loss.item()`: one element back to the host, which waits for the step.
            let dev = dev_of(y)?;
            dev.dtoh(buf(y)?, y.dtype().size())?;
        }
    }
    Ok(())
}

/// One training step of a CUDA tier. Forward saves each layer's pre-activation `z` (the GEMM
/// with the bias in its epilogue, then the tier's GeLU), or with `recompute` runs the fused
/// layer (GeLU in the GEMM's epilogue) and keeps only its output; backward runs GeLU's
/// backward, the bias gradient and the two products per layer, writing each gradient into its
/// rows of `y`.
fn train_step(
    t: &TierPlan,
    mp: MlpParams,
    x: &Tensor,
    w: &[&Tensor],
    bias: &[&Tensor],
    y: &mut Tensor,
) -> Result<()> {
    let nl = mp.layers;
    let dev = x.device();
    let dt = x.dtype();
    let (b, d) = (x.shape()[0], x.shape()[1]);
    let gelu_v = super::find(gelu::OP, t.gelu, DeviceKind::Cuda)?;
    let gp = Params::new(GeluParams { gelu: mp.gelu });
    let mut hs: Vec<Tensor> = Vec::with_capacity(nl);
    let mut saved: Vec<Tensor> = Vec::with_capacity(nl);
    // The cuda tier on Hopper: each hidden layer one product writing H and Z (v7's two-output
    // epilogue); elsewhere the GEMM with the bias, then the tier's GeLU.
    let layouts = !t.blas_backward && layouts_fit(x, w, y)?;
    let two_outputs = layouts && t.gemm == "auto" && !mp.recompute;
    for l in 0..nl {
        let input = hs.last().unwrap_or(x);
        if mp.recompute {
            // The last layer's output feeds only the loss, whose gradient is a constant.
            if l + 1 < nl {
                let mut h = Tensor::empty(&[b, d], dt, &dev)?;
                (t.fused_forward)(t, input, w[l], bias[l], mp.gelu, &mut h)?;
                hs.push(h);
            }
            continue;
        }
        let mut z = Tensor::empty(&[b, d], dt, &dev)?;
        if two_outputs && l + 1 < nl {
            let mut h = Tensor::empty(&[b, d], dt, &dev)?;
            matmul::sm90::run_aux(input, w[l], bias[l], act_of(mp.gelu), &mut h, &mut z)?;
            hs.push(h);
            saved.push(z);
            continue;
        }
        pre_activation(t, input, w[l], bias[l], &mut z)?;
        if l + 1 < nl {
            let mut h = Tensor::empty(&[b, d], dt, &dev)?;
            if t.gemm == "manual" {
                super::compiled::run_eager(gelu::OP, &gp, &[&z], &mut h)?;
            } else {
                gelu_v.run(&gp, &[&z], &mut h)?;
            }
            hs.push(h);
        }
        saved.push(z);
    }
    let mut zs = PreActs {
        t,
        x,
        w,
        bias,
        saved,
        scratch: None,
    };
    let mut dh = Tensor::empty(&[b, d], dt, &dev)?;
    fill(&mut dh, 1.0 / (b as f64 * d as f64) as f32)?;
    let mut dz = Tensor::empty(&[b, d], dt, &dev)?;
    if layouts {
        return backward_in_layouts(mp, x, w, &hs, &mut zs, &dh, dz, y);
    }
    for l in (0..nl).rev() {
        if t.gemm == "manual" {
            // Eager: GeLU's backward, then a reduction over dz.
            gelu_backward(&dh, zs.get(l, &hs)?, mp.gelu, &mut dz)?;
            bias_grad(&dz, None, y, b + l)?;
        } else {
            bias_grad(&dh, Some((zs.get(l, &hs)?, mp.gelu, &mut dz)), y, b + l)?;
        }
        let input = if l == 0 { x } else { &hs[l - 1] };
        let dw_row = b + nl + l * d;
        if t.blas_backward {
            // Straight into their rows of y: dW, and dX at the first layer.
            matmul::vendor::run_cublas_rm(&dz, true, input, false, y, dw_row)?;
            if l == 0 {
                matmul::vendor::run_cublas_rm(&dz, false, w[l], false, y, 0)?;
            } else {
                matmul::vendor::run_cublas_rm(&dz, false, w[l], false, &mut dh, 0)?;
            }
        } else {
            // dW = dZᵀ·H as a·wᵀ with a = dZᵀ, w = Hᵀ; dH = dZ·W with w = Wᵀ.
            let dzt = transpose(&dz)?;
            let ht = transpose(input)?;
            // The hand GEMM writes whole tensors: dW through a temporary (cuBLAS writes it
            // straight into y).
            let mut dw = Tensor::empty(&[d, d], dt, &dev)?;
            hand_matmul(&dzt, &ht, &mut dw)?;
            rows_of(y, dw_row, d, &dw)?;
            let wt = transpose(w[l])?;
            hand_matmul(&dz, &wt, &mut dh)?;
            if l == 0 {
                rows_of(y, 0, b, &dh)?;
            }
        }
    }
    Ok(())
}

/// A layer's pre-activation `z = input·Wᵀ + b` by the tier's GEMM (eager's cuBLAS and bias add
/// for `manual`, else the tier's linear variant with the bias in its epilogue).
fn pre_activation(
    t: &TierPlan,
    input: &Tensor,
    w: &Tensor,
    b: &Tensor,
    z: &mut Tensor,
) -> Result<()> {
    if t.gemm == "manual" {
        return manual_pre(input, w, b, z);
    }
    let v = super::find(super::linear::OP, t.gemm, DeviceKind::Cuda)?;
    v.run(&linear_params(Activation::None), &[input, w, b], z)
}

/// Each layer's pre-activation for backward: kept from the forward pass (`saved`, one a layer),
/// or, when nothing was kept (`--recompute`), computed again into one scratch tensor from the
/// layer's input.
struct PreActs<'a> {
    t: &'a TierPlan,
    x: &'a Tensor,
    w: &'a [&'a Tensor],
    bias: &'a [&'a Tensor],
    saved: Vec<Tensor>,
    scratch: Option<Tensor>,
}

impl PreActs<'_> {
    /// Layer `l`'s `z` (`hs`: the forward's kept outputs, layer `l`'s input being `hs[l - 1]`).
    /// A recomputed one lives until the next call.
    fn get(&mut self, l: usize, hs: &[Tensor]) -> Result<&Tensor> {
        if !self.saved.is_empty() {
            return Ok(&self.saved[l]);
        }
        let input = if l == 0 { self.x } else { &hs[l - 1] };
        let z = match &mut self.scratch {
            Some(z) => z,
            s => s.insert(Tensor::empty(
                input.shape(),
                input.dtype(),
                &input.device(),
            )?),
        };
        pre_activation(self.t, input, self.w[l], self.bias[l], z)?;
        Ok(z)
    }
}

/// Whether the hand tiers' backward can run v7's layout kernels (`matmul::sm90::run_rm`): a
/// Hopper GPU, 16-bit operands, rows of a multiple of 16 bytes (D a multiple of 8) and x, every
/// W and y 16-byte aligned (the TMA tensor maps). Elsewhere backward runs the hand GEMM on
/// transposed copies.
fn layouts_fit(x: &Tensor, w: &[&Tensor], y: &Tensor) -> Result<bool> {
    let dev = dev_of(x)?;
    let d = x.shape()[1];
    if dev.props.compute_capability != (9, 0)
        || !matches!(x.dtype(), DType::BF16 | DType::F16)
        || !d.is_multiple_of(8)
    {
        return Ok(false);
    }
    for t in w.iter().copied().chain([x, y]) {
        if !addr0(t)?.is_multiple_of(16) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The hand tiers' backward on Hopper, from the loss's gradient `dh` (the forward's saved `hs`
/// and `zs`): per layer, from the last, `db` by a column sum of dZ (fused with GeLU's backward
/// at the last layer, whose incoming gradient is the loss's), `dW = dZᵀ·H` straight into its
/// rows of `y`, and `dZ_{l-1} = (dZ_l·W_l) ⊙ gelu'(Z_{l-1})` with GeLU's backward in the
/// product's epilogue (at the first layer, `dX = dZ_0·W_0` into y's first rows). Each product
/// reads its operands as they lie (v7's layout kernels: no transposed copies).
#[allow(clippy::too_many_arguments)]
fn backward_in_layouts(
    mp: MlpParams,
    x: &Tensor,
    w: &[&Tensor],
    hs: &[Tensor],
    zs: &mut PreActs,
    dh: &Tensor,
    mut dz: Tensor,
    y: &mut Tensor,
) -> Result<()> {
    let nl = mp.layers;
    let (b, d) = (x.shape()[0], x.shape()[1]);
    let act = act_of(mp.gelu);
    let mut next = Tensor::empty(&[b, d], x.dtype(), &x.device())?;
    for l in (0..nl).rev() {
        if l + 1 == nl {
            bias_grad(dh, Some((zs.get(l, hs)?, mp.gelu, &mut dz)), y, b + l)?;
        } else {
            bias_grad(&dz, None, y, b + l)?;
        }
        let input = if l == 0 { x } else { &hs[l - 1] };
        matmul::sm90::run_rm(&dz, true, input, false, None, y, b + nl + l * d)?;
        if l == 0 {
            matmul::sm90::run_rm(&dz, false, w[l], false, None, y, 0)?;
        } else {
            let z = zs.get(l - 1, hs)?;
            matmul::sm90::run_rm(&dz, false, w[l], false, Some((z, act)), &mut next, 0)?;
            std::mem::swap(&mut dz, &mut next);
        }
    }
    Ok(())
}

/// Whether the vendor tier's step goes through Lt's GeLU epilogues: the tanh GeLU (Lt's only
/// one), bf16 (the training dtype this path is for; f32 keeps the BIAS epilogue and kernlab's
/// kernels), and a width whose rows keep the 16-byte alignment Lt's epilogues ask of the
/// auxiliary matrix and the bias gradient's rows in the output.
fn lt_trains(mp: MlpParams, dt: DType, d: usize) -> bool {
    mp.gelu == GeluApprox::Tanh && dt == DType::BF16 && d.is_multiple_of(8)
}

/// The vendor tier's training step with cuBLASLt's GeLU epilogues. Forward: each hidden layer
/// one GELU_AUX_BIAS product writing `h` and GeLU's input `z`; the last layer's BIAS product
/// writes `z` only (the loss's gradient needs no `h`). Backward: the last layer's `dz` and `db`
/// by the fused GeLU-backward reduction; then per layer `dW` by cuBLAS into its rows of `y`, and
/// `dz_{l-1} = (dz_l·W_l) ⊙ gelu'(z_{l-1})` with `db_{l-1}` by one DGELU_BGRAD product (at the
/// first layer, `dX = dz_0·W_0` by cuBLAS).
fn train_step_lt(
    mp: MlpParams,
    x: &Tensor,
    w: &[&Tensor],
    bias: &[&Tensor],
    y: &mut Tensor,
) -> Result<()> {
    let nl = mp.layers;
    let dev = x.device();
    let dt = x.dtype();
    let (b, d) = (x.shape()[0], x.shape()[1]);
    let mut hs: Vec<Tensor> = Vec::with_capacity(nl);
    let mut zs: Vec<Tensor> = Vec::with_capacity(nl);
    for l in 0..nl {
        let mut z = Tensor::empty(&[b, d], dt, &dev)?;
        let input = hs.last().unwrap_or(x);
        if l + 1 < nl {
            let mut h = Tensor::empty(&[b, d], dt, &dev)?;
            matmul::vendor::linear_gelu_aux(input, w[l], bias[l], &mut h, &mut z)?;
            hs.push(h);
        } else {
            let v = super::find(super::linear::OP, "cublaslt", DeviceKind::Cuda)?;
            v.run(
                &linear_params(Activation::None),
                &[input, w[l], bias[l]],
                &mut z,
            )?;
        }
        zs.push(z);
    }
    let mut dh = Tensor::empty(&[b, d], dt, &dev)?;
    fill(&mut dh, 1.0 / (b as f64 * d as f64) as f32)?;
    let mut dz = Tensor::empty(&[b, d], dt, &dev)?;
    bias_grad(&dh, Some((&zs[nl - 1], mp.gelu, &mut dz)), y, b + nl - 1)?;
    // dh is free from here: it takes turns with dz as the next layer's dz.
    let mut next = dh;
    for l in (0..nl).rev() {
        let input = if l == 0 { x } else { &hs[l - 1] };
        matmul::vendor::run_cublas_rm(&dz, true, input, false, y, b + nl + l * d)?;
        if l == 0 {
            matmul::vendor::run_cublas_rm(&dz, false, w[0], false, y, 0)?;
        } else {
            matmul::vendor::dgrad_dgelu(&dz, w[l], &zs[l - 1], &mut next, y, b + l - 1)?;
            std::mem::swap(&mut dz, &mut next);
        }
    }
    Ok(())
}

fn cuda_symbols(dt: DType) -> Vec<String> {
    let mut v = vec![
        format!("fill_{dt}"),
        format!("transpose_{dt}"),
        format!("bias_grad_finish_{dt}"),
    ];
    for form in ["vec", "scalar"] {
        v.push(format!("col_sum_{form}_{dt}"));
        for g in ["erf", "tanh"] {
            v.push(format!("dgelu_db_{g}_{form}_{dt}"));
        }
    }
    for g in ["erf", "tanh"] {
        v.push(format!("gelu_backward_{g}_{dt}"));
    }
    v
}

// ---- the registry's rows ----------------------------------------------------------------------
static VARIANTS: [Variant; 6] = [
    Variant::new(OP, "reference", Tier::Reference, DeviceKind::Cpu,
        "f64 on the CPU (faer's GEMMs; the forward of sampled rows at large sizes): the oracle",
        run_reference),
    Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cuda,
        "eager PyTorch's launches a layer: cuBLAS, a bias add, the manual GeLU's launches; backward: cuBLAS, GeLU's backward, then a reduction for the bias gradient",
        |p, x, y| run_tier(&MANUAL, p, x, y))
        .kernels(&SOURCE, cuda_symbols),
    Variant::new(OP, "cuda", Tier::Cuda, DeviceKind::Cuda,
        "kernlab's GEMMs (linear/auto) with bias and GeLU fused into the epilogue; training on Hopper: H and Z from one product, backward by v7's transposed layouts with GeLU's derivative in the dgrad epilogue (elsewhere: the hand GEMMs on transposed copies)",
        |p, x, y| run_tier(&CUDA, p, x, y))
        .kernels(&SOURCE, cuda_symbols)
        .also_kernels(&matmul::sm90::MATMUL_SM90_LAYOUTS, matmul::sm90::layout_symbols),
    Variant::new(OP, "compiled", Tier::Compiled, DeviceKind::Cuda,
        "kernlab's compiler: each layer one GEMM with the generated bias + GeLU epilogue",
        |p, x, y| run_tier(&COMPILED, p, x, y))
        .dtypes(super::HALF_DTYPES)
        .kernels(&SOURCE, cuda_symbols)
        .also_kernels(&matmul::sm90::MATMUL_SM90_LAYOUTS, matmul::sm90::layout_symbols),
    Variant::new(OP, "cublaslt", Tier::Vendor, DeviceKind::Cuda,
        "cuBLASLt's epilogues: GELU_BIAS forward; training in bf16 with tanh GeLU, GELU_AUX_BIAS (keeping GeLU's input) and DGELU_BGRAD (dgrad × GeLU's derivative, with the bias gradient); otherwise (erf: Lt has none): its BIAS epilogue and a GeLU kernel, then cuBLAS and GeLU's backward fused with the bias gradient's reduction",
        |p, x, y| run_tier(&VENDOR, p, x, y))
        .kernels(&SOURCE, cuda_symbols),
    Variant::new(OP, "faer", Tier::Cpu, DeviceKind::Cpu,
        "the model in f32 with faer's GEMMs on every core",
        run_cpu),
];
