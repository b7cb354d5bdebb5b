//! RMSNorm over the last dimension: `y = x · rsqrt(mean(x²) + eps) · w`, PyTorch's
//! `F.rms_norm(x, (cols,), w, eps)`, f32 arithmetic whatever the storage type. Inputs `[x, w]`,
//! x `ROWSxCOLS` (any rank: the last dimension is the row), w `[COLS]`. Minimum traffic: read
//! x and w once, write y once; ~4 FLOPs an element (square, add, two multiplies).
//!
//! Variants: `reference` (f64), `manual` (the eager composition: square, mean, add eps, rsqrt,
//! two broadcast multiplies, a launch or pass each), `cuda/v1_warp_row`, `cuda/v2_block_regs`,
//! `cuda/v3_two_pass` (softmax's row machinery: rows in registers, 16-byte loads), `cuda/auto`,
//! `cpu/fused`.

use super::cpu_prims::{self as prim, GRAIN};
use super::{
    check_rows_operand, Candidate, Compare, Flag, FlagKind, FlagValues, Grammar, Op, OpDef,
    OpParams, Params, SweepDefault, Tier, TorchCases, Variant,
};
use crate::compiler::{Expr, Graph, Layout};
use crate::runtime::device::triton::{row_block_warps, triton_type, TritonSpec};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::{DType, Element};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::{aligned16, cuda_io};
use crate::runtime::launch::{launch, launch_triton};
use crate::runtime::tensor::{row_strided_layout, CpuData, Init, Tensor};
use cudarc::driver::LaunchConfig;
use rayon::prelude::*;
use serde::Serialize;

/// The op's handle.
pub const OP: Op = Op(&RmsNorm);

/// The CUDA source of every numbered version.
pub static SOURCE: KernelSource = KernelSource {
    file: "rmsnorm.cu",
    src: include_str!("../../kernels/rmsnorm.cu"),
};

/// RMSNorm's parameter: the `eps` added to the mean of squares.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RmsNormParams {
    pub eps: f32,
}

/// F.rms_norm's default `eps` (None): the f32 machine epsilon, its opmath type's for every
/// dtype kernlab runs.
pub const DEFAULT_EPS: f32 = f32::EPSILON;

impl Default for RmsNormParams {
    fn default() -> Self {
        RmsNormParams { eps: DEFAULT_EPS }
    }
}

impl OpParams for RmsNormParams {
    fn form(&self) -> Option<String> {
        Some(format!("eps {:e}", self.eps))
    }
}

struct RmsNorm;

static FLAGS: [Flag; 1] = [Flag {
    name: "eps",
    help: "RMSNorm: the eps added to the mean of squares (the default is f32's machine epsilon, \
           as F.rms_norm's eps=None)",
    kind: FlagKind::Value {
        value_name: "EPS",
        default: "1.1920929e-7",
        values: None,
    },
}];

impl OpDef for RmsNorm {
    fn name(&self) -> &'static str {
        "rmsnorm"
    }
    fn about(&self) -> &'static str {
        "y = x · rsqrt(mean(x²) + eps) · w over the last dimension (F.rms_norm)"
    }
    fn grammar(&self) -> Grammar {
        Grammar::Rows
    }
    fn default_shape(&self, device: DeviceKind) -> Vec<usize> {
        match device {
            DeviceKind::Cuda => vec![4096, 4096],
            DeviceKind::Cpu => vec![2048, 1024],
        }
    }
    fn default_sweep(&self, device: DeviceKind) -> SweepDefault {
        match device {
            DeviceKind::Cuda => SweepDefault::Rows {
                rows: "4096",
                cols: "256..12672:128",
            },
            DeviceKind::Cpu => SweepDefault::Rows {
                rows: "1024",
                cols: "256..4096:256",
            },
        }
    }
    fn flags(&self) -> &'static [Flag] {
        &FLAGS
    }
    fn params(&self, flags: &FlagValues) -> Result<Params> {
        let eps = match flags.get("eps") {
            None => DEFAULT_EPS,
            Some(s) => {
                let eps: f32 = s
                    .trim()
                    .parse()
                    .map_err(|_| Error::Invalid(format!("--eps {s}: not a number (e.g. 1e-6)")))?;
                if !eps.is_finite() || eps < 0.0 {
                    return Err(Error::Invalid(format!(
                        "--eps {s}: must be a finite number ≥ 0"
                    )));
                }
                eps
            }
        };
        Ok(Params::new(RmsNormParams { eps }))
    }
    fn check_shape(&self, shape: &[usize], row_stride: Option<usize>) -> Result<()> {
        row_strided_layout(shape, row_stride).map(|_| ())
    }
    fn input_shapes(&self, shape: &[usize], _: &Params) -> Vec<Vec<usize>> {
        vec![shape.to_vec(), vec![*shape.last().unwrap_or(&1)]]
    }
    /// x ~ N(0, 1); w ~ N(1, 0.25), so every column is scaled differently.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        row_stride: Option<usize>,
        _: &Params,
    ) -> Result<Vec<Tensor>> {
        let cpu = Device::Cpu;
        let cols = *shape.last().unwrap_or(&1);
        let x = Tensor::random(
            shape,
            dtype,
            Init::Normal {
                mean: 0.0,
                std: 1.0,
            },
            seed,
            row_stride,
            &cpu,
        )?;
        let w = Tensor::random(
            &[cols],
            dtype,
            Init::Normal {
                mean: 1.0,
                std: 0.25,
            },
            seed ^ 0x5eed_0003,
            None,
            &cpu,
        )?;
        Ok(vec![x, w])
    }
    fn out_shape(&self, shape: &[usize], _: &Params) -> Vec<usize> {
        shape.to_vec()
    }
    fn reference(
        &self,
        inputs: &[Tensor],
        blocks: Option<&[usize]>,
        p: &Params,
    ) -> Result<Vec<f64>> {
        let eps = p.get::<RmsNormParams>()?.eps as f64;
        let x = &inputs[0];
        let (_, cols, _) = x.rows_cols();
        let x64 = match blocks {
            Some(b) => x.blocks_f64(cols, b)?,
            None => x.to_f64_vec()?,
        };
        let w = inputs[1].to_f64_vec()?;
        Ok(reference(&x64, &w, cols, eps))
    }
    fn compare(&self) -> Compare {
        Compare::Elementwise
    }
    fn min_bytes(&self, shape: &[usize], dtype: DType, _: &Params) -> usize {
        let n: usize = shape.iter().product();
        (2 * n + shape.last().copied().unwrap_or(0)) * dtype.size()
    }
    fn flops(&self, shape: &[usize], _: &Params) -> f64 {
        4.0 * shape.iter().product::<usize>() as f64
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    /// `[x, w]`: x as a row op's input (strided rows where the variant takes them), w `[COLS]`
    /// contiguous, of x's dtype, on x's device.
    fn check_call(&self, v: &Variant, _p: &Params, inputs: &[&Tensor], y: &Tensor) -> Result<()> {
        let [x, w] = inputs else {
            return Err(Error::Invalid(format!(
                "{} takes [x, weight], got {} tensors",
                v.id(),
                inputs.len()
            )));
        };
        check_rows_operand(v, x, y)?;
        let cols = *x.shape().last().unwrap_or(&1);
        v.check_dtype_device(w)?;
        if w.shape() != [cols] || w.dtype() != x.dtype() {
            return Err(Error::ShapeMismatch {
                op: "rmsnorm".into(),
                why: format!(
                    "the weight must be [{cols}] {} (x's last dimension and dtype), got {:?} {}",
                    x.dtype(),
                    w.shape(),
                    w.dtype()
                ),
            });
        }
        if !w.is_contiguous() {
            return Err(v.not_contiguous(w, "weight"));
        }
        Ok(())
    }
    fn tuning(&self) -> Option<super::Tuning> {
        Some(super::Tuning {
            default_dtype: DType::BF16,
            what: "which numbered version `auto` runs, and v2's slots a thread (default, k1..k8)",
            versions: &VERSIONS,
            candidates,
        })
    }
    fn graph<'g>(&self, g: &'g Graph, p: &Params) -> Option<Result<Expr<'g>>> {
        Some(p.get::<RmsNormParams>().and_then(|p| graph(g, p)))
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "rmsnorm",
            args: |p| {
                let eps = p.get::<RmsNormParams>().map_err(|e| e.to_string())?.eps;
                Ok(vec!["--eps".into(), format!("{eps:e}")])
            },
        })
    }
}

/// RMSNorm as an expression graph over inputs `x` (rows × cols) and `w` (a column vector):
/// `x · rsqrt(mean(x·x) + eps) · w`, the eager composition's order.
pub fn graph<'g>(g: &'g Graph, p: &RmsNormParams) -> Result<Expr<'g>> {
    let x = g.input("x", Layout::Full)?;
    let w = g.input("w", Layout::Col)?;
    Ok(x * ((x * x).mean() + p.eps as f64).rsqrt() * w)
}

/// The f64 oracle on rows of `cols`: the mean of squares, then x · w / sqrt(mean + eps).
pub fn reference(x: &[f64], w: &[f64], cols: usize, eps: f64) -> Vec<f64> {
    if cols == 0 {
        return vec![f64::NAN; x.len()];
    }
    let mut out = vec![0.0; x.len()];
    out.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(o, r)| {
            let ms = r.iter().map(|v| v * v).sum::<f64>() / cols as f64;
            let s = 1.0 / (ms + eps).sqrt();
            for ((o, &v), &w) in o.iter_mut().zip(r).zip(w) {
                *o = v * s * w;
            }
        });
    out
}

/// Each row's tensors on the CPU: x's values (rows `ld` apart), w's, and y's, as one type.
trait RowsOfThree {
    fn run<T: Element>(&self, x: &[T], w: &[T], y: &mut [T]);
}

fn with_cpu_rows(
    what: &str,
    x: &Tensor,
    w: &Tensor,
    y: &mut Tensor,
    f: impl RowsOfThree,
) -> Result<()> {
    let needs = || Error::Invalid(format!("{what} needs CPU tensors"));
    let (xd, wd) = (
        x.cpu_data().ok_or_else(needs)?,
        w.cpu_data().ok_or_else(needs)?,
    );
    match (xd, wd, y.cpu_data_mut().ok_or_else(needs)?) {
        (CpuData::F32(x), CpuData::F32(w), CpuData::F32(y)) => f.run(x, w, y),
        (CpuData::BF16(x), CpuData::BF16(w), CpuData::BF16(y)) => f.run(x, w, y),
        (CpuData::F16(x), CpuData::F16(w), CpuData::F16(y)) => f.run(x, w, y),
        _ => {
            return Err(Error::Invalid(
                "x, weight and y must share one dtype".into(),
            ))
        }
    }
    Ok(())
}

// ---- reference --------------------------------------------------------------------------
fn run_reference(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let eps = p.get::<RmsNormParams>()?.eps as f64;
    let (_, cols, _) = x[0].rows_cols();
    let r = reference(&x[0].to_f64_vec()?, &x[1].to_f64_vec()?, cols, eps);
    *y = Tensor::from_f64(&r, x[0].shape(), y.dtype())?;
    Ok(())
}

// ---- manual -----------------------------------------------------------------------------
/// CPU: `xf = x.float()`, `ms = (xf * xf).mean(-1, keepdim=True)`, `r = rsqrt(ms + eps)`,
/// `y = xf * r * w.float()` — one parallel pass each.
fn run_manual_cpu(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let eps = p.get::<RmsNormParams>()?.eps;
    let (_, cols, _) = x[0].rows_cols();
    let xf = prim::to_f32(x[0])?;
    let wf = prim::to_f32(x[1])?;
    let sq = prim::map2(&xf, &xf, |a, b| a * b);
    let ms = prim::map1(&prim::row_sum(&sq, cols), |s| s / cols as f32);
    let t = prim::map1(&ms, |m| m + eps);
    let r = prim::map1(&t, |v| 1.0 / v.sqrt());
    let scaled = prim::broadcast_rows(&xf, &r, cols, |a, r| a * r);
    let out = prim::broadcast_cols(&scaled, &wf, cols, |a, w| a * w);
    prim::store_f32(y, &out)
}

// ---- hand-written CUDA ------------------------------------------------------------------
fn unsupported(variant: &str, why: String) -> Error {
    Error::UnsupportedShape {
        op: "rmsnorm".into(),
        variant: variant.into(),
        why,
    }
}

/// The fewest slots a thread of 1, 2, 4, 8 that hold `slots` in `threads` threads.
fn fewest_slots(slots: usize, threads: usize) -> Option<usize> {
    [1, 2, 4, 8]
        .into_iter()
        .find(|k| slots.div_ceil(*k) <= threads)
}

/// v2's slots a thread for a row of `slots`: softmax v3's block-a-row rule.
pub use super::row_slots::slots_per_thread as v2_slots_per_thread;

/// v2's tuning: K, the slots a thread holds (softmax v3's too).
pub type V2Tuning = super::row_slots::SlotsTuning;

/// v2's named configurations, which `kernlab autotune rmsnorm` measures and caches by name.
pub const V2_CONFIGS: [(&str, V2Tuning); 5] = [
    ("default", V2Tuning::DEFAULT),
    ("k1", V2Tuning { k: Some(1) }),
    ("k2", V2Tuning { k: Some(2) }),
    ("k4", V2Tuning { k: Some(4) }),
    ("k8", V2Tuning { k: Some(8) }),
];

/// The versions `auto` may run, which autotune compares.
const VERSIONS: [&str; 3] = ["v1_warp_row", "v2_block_regs", "v3_two_pass"];

/// v2's configuration by name ("" or "default": the rule).
fn v2_config(name: &str) -> Option<V2Tuning> {
    if name.is_empty() {
        return Some(V2Tuning::DEFAULT);
    }
    V2_CONFIGS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// What a launch runs: `version` in its configuration (the one cached for these inputs' device,
/// dtype and bucket, else the rule); for `auto` (`None`), the cached overall winner where it
/// holds these rows, else the width rule ([`auto_version`]).
fn resolve(
    version: Option<&'static str>,
    x: &Tensor,
    rows: usize,
    cols: usize,
    vec: bool,
) -> Option<Plan> {
    let dt = x.dtype();
    let tuned = |v: &str| {
        OP.tuned(v, x)
            .and_then(|e| v2_config(&e.config))
            .unwrap_or_default()
    };
    match version {
        Some(v) => plan_with(v, dt, rows, cols, vec, tuned(v)),
        None => OP
            .tuned("auto", x)
            .and_then(|e| {
                let v = VERSIONS.into_iter().find(|v| *v == e.variant)?;
                plan_with(v, dt, rows, cols, vec, v2_config(&e.config)?)
            })
            .or_else(|| plan(auto_version(dt, cols, vec), dt, rows, cols, vec)),
    }
}

/// Which numbered version a layout takes, and how: the version's name, packed (16-byte) or
/// scalar, and its launch (grid, threads) with the kernel's symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub version: &'static str,
    pub kernel: String,
    pub grid: u32,
    pub threads: u32,
}

/// The plan of `version` (`v1_warp_row`, `v2_block_regs`, `v3_two_pass`) for `rows` rows of
/// `cols` in `dt`, packed where `vec`; `None` where the version does not hold such rows.
pub fn plan(version: &str, dt: DType, rows: usize, cols: usize, vec: bool) -> Option<Plan> {
    plan_with(version, dt, rows, cols, vec, V2Tuning::DEFAULT)
}

/// [`plan`] with v2's slots a thread forced by `t` where the row then fits (other versions
/// ignore it).
pub fn plan_with(
    version: &str,
    dt: DType,
    rows: usize,
    cols: usize,
    vec: bool,
    t: V2Tuning,
) -> Option<Plan> {
    let width = if vec { 16 / dt.size() } else { 1 };
    let slots = cols.div_ceil(width);
    let form = if vec { "vec" } else { "scalar" };
    let (version, kernel, grid, threads) = match version {
        "v1_warp_row" => {
            let k = fewest_slots(slots, 32)?;
            let grid = (rows as u64).div_ceil(4);
            (
                "v1_warp_row",
                format!("rmsnorm_v1_warp_row_{form}_k{k}_{dt}"),
                grid,
                128,
            )
        }
        "v2_block_regs" => {
            let k = t
                .slots_per_thread(slots)
                .or_else(|| v2_slots_per_thread(slots))?;
            let threads = (slots.div_ceil(k).div_ceil(32) * 32).clamp(32, 1024);
            (
                "v2_block_regs",
                format!("rmsnorm_v2_block_regs_{form}_k{k}_{dt}"),
                rows as u64,
                threads,
            )
        }
        "v3_two_pass" => {
            let threads = (slots.div_ceil(32) * 32).clamp(32, 1024);
            (
                "v3_two_pass",
                format!("rmsnorm_v3_two_pass_{form}_{dt}"),
                rows as u64,
                threads,
            )
        }
        _ => return None,
    };
    let grid = u32::try_from(grid).ok().filter(|g| *g <= i32::MAX as u32)?;
    Some(Plan {
        version,
        kernel,
        grid,
        threads: threads as u32,
    })
}

/// `auto`'s rule: a warp a row while one holds it (up to 256 slots: 1024 f32 / 2048 bf16
/// columns), a block a row in registers up to 8192 slots, else the two-pass form.
pub fn auto_version(dt: DType, cols: usize, vec: bool) -> &'static str {
    ["v1_warp_row", "v2_block_regs"]
        .into_iter()
        .find(|v| plan(v, dt, 1, cols, vec).is_some())
        .unwrap_or("v3_two_pass")
}

/// Launch `version` (`None`: `auto`'s choice for the call's layout) on a checked call, in the
/// configuration the autotune cache holds for it.
fn run_version(
    version: Option<&'static str>,
    p: &Params,
    x: &[&Tensor],
    y: &mut Tensor,
) -> Result<()> {
    run_planned(version.unwrap_or("auto"), p, x, y, |x, rows, cols, vec| {
        resolve(version, x, rows, cols, vec)
    })
}

/// Launch `version` in configuration `t` (autotune's candidates).
fn run_plan(
    version: &'static str,
    t: V2Tuning,
    p: &Params,
    x: &[&Tensor],
    y: &mut Tensor,
) -> Result<()> {
    run_planned(version, p, x, y, |x, rows, cols, vec| {
        plan_with(version, x.dtype(), rows, cols, vec, t)
    })
}

/// Launch the plan `pick` makes for the call's layout (`vec`: packed loads possible).
fn run_planned(
    version: &str,
    p: &Params,
    x: &[&Tensor],
    y: &mut Tensor,
    pick: impl Fn(&Tensor, usize, usize, bool) -> Option<Plan>,
) -> Result<()> {
    let eps = p.get::<RmsNormParams>()?.eps;
    let (xt, wt) = (x[0], x[1]);
    let (rows, cols, ldx) = xt.rows_cols();
    if rows > i32::MAX as usize || cols > (i32::MAX as usize) - 8192 {
        return Err(unsupported(
            version,
            format!("{rows} rows × {cols} columns: rows and columns must be below 2^31"),
        ));
    }
    let w = wt
        .cuda_buf()
        .ok_or_else(|| Error::Invalid("the weight is not on CUDA".into()))?;
    let ldy = cols;
    let pack = 16 / xt.dtype().size();
    let io = cuda_io(xt, y)?;
    let vec = cols.is_multiple_of(pack)
        && ldx.is_multiple_of(pack)
        && aligned16(&io.dev, io.x)
        && aligned16(&io.dev, io.y)
        && aligned16(&io.dev, w);
    let plan = pick(xt, rows, cols, vec).ok_or_else(|| {
        unsupported(
            version,
            format!("rows of {cols} columns are wider than it holds in registers (use v3_two_pass or auto)"),
        )
    })?;
    let cfg = LaunchConfig {
        grid_dim: (plan.grid, 1, 1),
        block_dim: (plan.threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let (rows_i, cols_i, ldx_i, ldy_i) = (rows as i32, cols as i32, ldx as i64, ldy as i64);
    launch!(
        io.dev,
        &SOURCE,
        plan.kernel,
        cfg,
        [io.x, w, io.y, &rows_i, &cols_i, &ldx_i, &ldy_i, &eps]
    );
    Ok(())
}

// ---- Triton -----------------------------------------------------------------------------------
static TRITON: KernelSource = KernelSource {
    file: "rmsnorm.py",
    src: include_str!("../../kernels/triton/rmsnorm.py"),
};
/// The widest row the Triton kernel takes (a row on chip in one power-of-two block, as the
/// softmax tutorial's kernel).
pub const TRITON_MAX_COLS: usize = 1 << 16;

/// The Triton kernel a call compiles for rows of `cols`: a block of the next power of two,
/// with softmax's tutorial warps (4; 8 from 2048 columns; 16 from 4096).
/// `hint(name)`: whether the argument is a multiple of 16 (a pointer: 16-byte aligned), as
/// Triton's own launcher specializes.
pub fn triton_spec(dt: DType, cols: usize, hint: &dyn Fn(&str) -> bool) -> Result<TritonSpec> {
    if cols > TRITON_MAX_COLS {
        return Err(unsupported(
            "triton",
            format!("rows of {cols} columns are wider than the {TRITON_MAX_COLS} it holds on chip (use auto)"),
        ));
    }
    let block = cols.max(1).next_power_of_two();
    let warps = row_block_warps(block);
    let ptr = triton_type(dt, true);
    Ok(TritonSpec::new(&TRITON, "rmsnorm_kernel")
        .arg_hinted("y_ptr", &ptr, hint("y_ptr"))
        .arg_hinted("x_ptr", &ptr, hint("x_ptr"))
        .arg_hinted("w_ptr", &ptr, hint("w_ptr"))
        .arg_hinted("x_stride", "i64", hint("x_stride"))
        .arg_hinted("y_stride", "i64", hint("y_stride"))
        .arg_hinted("cols", "i32", hint("cols"))
        .arg("eps", "fp32")
        .constexpr("BLOCK", block as u64)
        .warps(warps)
        .stages(1))
}

/// triton: RMSNorm in Triton, a program a row held on chip.
fn run_triton(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    let eps = p.get::<RmsNormParams>()?.eps;
    let (xt, wt) = (x[0], x[1]);
    let (rows, cols, ldx) = xt.rows_cols();
    let programs = u32::try_from(rows)
        .ok()
        .filter(|&r| r <= i32::MAX as u32)
        .ok_or_else(|| unsupported("triton", format!("{rows} rows: at most 2^31 − 1")))?;
    let w = wt
        .cuda_buf()
        .ok_or_else(|| Error::Invalid("the weight is not on CUDA".into()))?;
    let io = cuda_io(xt, y)?;
    let d16 = |v: usize| v.is_multiple_of(16);
    let aligned = [
        aligned16(&io.dev, io.y),
        aligned16(&io.dev, io.x),
        aligned16(&io.dev, w),
    ];
    let hint = |n: &str| match n {
        "y_ptr" => aligned[0],
        "x_ptr" => aligned[1],
        "w_ptr" => aligned[2],
        "x_stride" => d16(ldx),
        _ => d16(cols),
    };
    let t = io.dev.triton(&triton_spec(xt.dtype(), cols, &hint)?)?;
    let (ldx, ldy, cols) = (ldx as i64, cols as i64, cols as i32);
    launch_triton!(
        io.dev,
        t,
        (programs.max(1), 1, 1),
        [io.y, io.x, w, &ldx, &ldy, &cols, &eps]
    );
    Ok(())
}

fn run_auto(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    run_version(None, p, x, y)
}

/// `auto`'s pick for these inputs (as its launcher decides packed loads: whole packs a row,
/// rows a whole number of packs apart).
fn auto_label(_p: &Params, x: &[&Tensor]) -> String {
    let (rows, cols, ld) = x[0].rows_cols();
    let pack = 16 / x[0].dtype().size();
    let vec = cols.is_multiple_of(pack) && ld.is_multiple_of(pack);
    resolve(None, x[0], rows, cols, vec).map_or_else(
        || auto_version(x[0].dtype(), cols, vec).to_string(),
        |p| p.version.to_string(),
    )
}

/// Every (version, configuration) `kernlab autotune rmsnorm` measures: v1 and v3 as they
/// are, v2 in each of [`V2_CONFIGS`]; only the versions in `only` where given.
fn candidates(
    _dev: &std::sync::Arc<crate::runtime::device::CudaDevice>,
    _dtype: DType,
    only: Option<&[String]>,
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for v in VERSIONS {
        if only.is_some_and(|o| !o.iter().any(|n| n == v)) {
            continue;
        }
        let configs: Vec<(&'static str, V2Tuning)> = if v == "v2_block_regs" {
            V2_CONFIGS.to_vec()
        } else {
            vec![("", V2Tuning::DEFAULT)]
        };
        for (name, t) in configs {
            out.push(Candidate {
                variant: v,
                config: name.to_string(),
                run: Box::new(move |p, x, y| run_plan(v, t, p, x, y)),
            });
        }
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!(
            "no rmsnorm version to tune among {} (versions: {})",
            only.map_or("all".to_string(), |o| o.join(", ")),
            VERSIONS.join(", ")
        )));
    }
    Ok(out)
}

fn symbols_of(version: &'static str) -> impl Fn(DType) -> Vec<String> {
    move |dt| {
        let ks: &[usize] = if version == "v3_two_pass" {
            &[0]
        } else {
            &[1, 2, 4, 8]
        };
        ["vec", "scalar"]
            .iter()
            .flat_map(|form| {
                ks.iter().map(move |k| match k {
                    0 => format!("rmsnorm_{version}_{form}_{dt}"),
                    k => format!("rmsnorm_{version}_{form}_k{k}_{dt}"),
                })
            })
            .collect()
    }
}

fn symbols_auto(dt: DType) -> Vec<String> {
    ["v1_warp_row", "v2_block_regs", "v3_two_pass"]
        .into_iter()
        .flat_map(|v| symbols_of(v)(dt))
        .collect()
}

// ---- fused CPU ----------------------------------------------------------------------------
/// Σ x² of a row in f32: eight interleaved accumulators, so the loop vectorises.
#[inline(always)]
fn sum_squares<T: Element>(x: &[T]) -> f32 {
    let mut acc = [0.0f32; 8];
    let mut it = x.chunks_exact(8);
    for c in &mut it {
        for (a, &v) in acc.iter_mut().zip(c) {
            let v = v.to_f32();
            *a += v * v;
        }
    }
    let tail: f32 = it.remainder().iter().map(|v| v.to_f32() * v.to_f32()).sum();
    acc.iter().sum::<f32>() + tail
}

/// A row (or a chunk of one) scaled: y = x · s · w.
#[inline(always)]
fn scale_body<T: Element, const FMA: bool>(x: &[T], w: &[T], y: &mut [T], s: f32) {
    for ((o, &v), &w) in y.iter_mut().zip(x).zip(w) {
        *o = T::from_f32(v.to_f32() * s * w.to_f32());
    }
}
prim::avx2_twin!(
    /// [`scale_body`], in AVX-512 or AVX2, and FMA, where the CPU has them.
    fn scale_row<T: Element>(x: &[T], w: &[T], y: &mut [T], s: f32) => scale_body
);

#[inline(always)]
fn squares_body<T: Element, const FMA: bool>(x: &[T]) -> f32 {
    sum_squares(x)
}
prim::avx2_twin!(
    /// [`sum_squares`], in AVX-512 or AVX2 where the CPU has it.
    fn squares<T: Element>(x: &[T]) -> f32 => squares_body
);

/// An f16 row of the row-a-task form, computed in f32: the task widens w once and each row
/// once into these buffers (F16C where the CPU has it), runs the f32 loops there, and rounds
/// the outputs a block at a time. bf16 rows convert in the loops (a shift), which measured
/// faster than the extra passes (docs/perf-notes.md, "16-bit rows on the CPU").
struct F16Row {
    wf: Vec<f32>,
    xf: Vec<f32>,
}

impl F16Row {
    fn new<T: Element>(w: &[T]) -> Self {
        let mut wf = vec![0.0f32; w.len()];
        prim::widen(&mut wf, w);
        F16Row {
            xf: vec![0.0f32; w.len()],
            wf,
        }
    }

    fn run<T: Element>(&mut self, xr: &[T], yr: &mut [T], scale: impl Fn(f32) -> f32) {
        const B: usize = prim::WIDEN_BLOCK;
        let mut out = [0.0f32; B];
        prim::widen(&mut self.xf, xr);
        let s = scale(squares(&self.xf));
        for ((yb, xb), wb) in yr
            .chunks_mut(B)
            .zip(self.xf.chunks(B))
            .zip(self.wf.chunks(B))
        {
            let o = &mut out[..yb.len()];
            scale_row(xb, wb, o, s);
            prim::narrow(yb, o);
        }
    }
}

/// Columns a task of the split form takes: rows too few to give every thread one are cut
/// into chunks of this many, which all threads share.
const CPU_CHUNK: usize = 8192;

/// One parallel pass a row while rows are many (each row's sum and scaling while it is in
/// cache); with fewer rows than threads, two passes over chunks of every row (the sums, then
/// the scaling), so that every core works.
fn run_cpu_fused(p: &Params, x: &[&Tensor], y: &mut Tensor) -> Result<()> {
    struct Fused {
        eps: f32,
        rows: usize,
        cols: usize,
        ld: usize,
    }
    impl RowsOfThree for Fused {
        fn run<T: Element>(&self, x: &[T], w: &[T], y: &mut [T]) {
            let Fused {
                eps,
                rows,
                cols,
                ld,
            } = *self;
            let scale = |ss: f32| 1.0 / (ss / cols as f32 + eps).sqrt();
            let threads = rayon::current_num_threads();
            if rows >= threads || cols <= CPU_CHUNK {
                let per_task = (GRAIN / cols.max(1)).max(1);
                y[..rows * cols]
                    .par_chunks_mut(cols * per_task)
                    .enumerate()
                    .for_each(|(t, ys)| {
                        let mut f16 = (T::DTYPE == DType::F16).then(|| F16Row::new(&w[..cols]));
                        for (i, yr) in ys.chunks_mut(cols).enumerate() {
                            let r = t * per_task + i;
                            let xr = &x[r * ld..r * ld + cols];
                            match &mut f16 {
                                Some(f) => f.run(xr, yr, scale),
                                None => scale_row(xr, w, yr, scale(squares(xr))),
                            }
                        }
                    });
                return;
            }
            let chunks = cols.div_ceil(CPU_CHUNK);
            let partial: Vec<f32> = (0..rows * chunks)
                .into_par_iter()
                .map(|i| {
                    let (r, c) = (i / chunks, (i % chunks) * CPU_CHUNK);
                    let end = (c + CPU_CHUNK).min(cols);
                    squares(&x[r * ld + c..r * ld + end])
                })
                .collect();
            let s: Vec<f32> = partial
                .chunks(chunks)
                .map(|p| scale(p.iter().map(|&v| v as f64).sum::<f64>() as f32))
                .collect();
            y[..rows * cols]
                .par_chunks_mut(cols)
                .enumerate()
                .for_each(|(r, yr)| {
                    yr.par_chunks_mut(CPU_CHUNK)
                        .enumerate()
                        .for_each(|(i, yc)| {
                            let c = i * CPU_CHUNK;
                            let xc = &x[r * ld + c..r * ld + c + yc.len()];
                            scale_row(xc, &w[c..c + yc.len()], yc, s[r]);
                        })
                });
        }
    }
    let eps = p.get::<RmsNormParams>()?.eps;
    let (rows, cols, ld) = x[0].rows_cols();
    with_cpu_rows(
        "rmsnorm cpu/fused",
        x[0],
        x[1],
        y,
        Fused {
            eps,
            rows,
            cols,
            ld,
        },
    )
}

// ---- the registry's rows ------------------------------------------------------------------
static VARIANTS: [Variant; 10] = [
    Variant::new(OP, "reference", Tier::Reference, DeviceKind::Cpu,
        "f64 on the CPU: the mean of squares, then x · w / sqrt(mean + eps): the oracle",
        run_reference).strided(),
    Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cpu,
        "the eager composition: square, mean, add eps, rsqrt, scale, weight, a parallel pass each",
        run_manual_cpu),
    Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cuda,
        "the eager composition, one kernel launch per op (6 for f32, f32 temporaries)",
        |p, x, y| super::compiled::run_eager(OP, p, x, y))
        .generated(|p, dt| super::compiled::eager_kernels(OP, p, dt))
        .strided(),
    Variant::new(OP, "v1_warp_row", Tier::Cuda, DeviceKind::Cuda,
        "a warp per row held in registers, 16-byte loads, shuffles (≤ 1024 f32 columns)",
        |p, x, y| run_version(Some("v1_warp_row"), p, x, y))
        .kernels(&SOURCE, |dt| symbols_of("v1_warp_row")(dt))
        .strided()
        .vec16(),
    Variant::new(OP, "v2_block_regs", Tier::Cuda, DeviceKind::Cuda,
        "a block per row held in registers (softmax v3's layout), 16-byte loads (≤ 32768 f32 columns)",
        |p, x, y| run_version(Some("v2_block_regs"), p, x, y))
        .kernels(&SOURCE, |dt| symbols_of("v2_block_regs")(dt))
        .strided()
        .vec16(),
    Variant::new(OP, "v3_two_pass", Tier::Cuda, DeviceKind::Cuda,
        "any width: a block per row, the sum of squares, then a second read (from L2) scaled and written",
        |p, x, y| run_version(Some("v3_two_pass"), p, x, y))
        .kernels(&SOURCE, |dt| symbols_of("v3_two_pass")(dt))
        .strided()
        .vec16(),
    Variant::new(OP, "auto", Tier::Cuda, DeviceKind::Cuda,
        "the autotuned (version, configuration) for the device, dtype and shape bucket, else by width: v1 while a warp holds the row, v2 while a block does, else v3",
        run_auto)
        .kernels(&SOURCE, symbols_auto)
        .strided()
        .vec16()
        .picks(auto_label),
    Variant::new(OP, "compiled", Tier::Compiled, DeviceKind::Cuda,
        "kernlab's compiler: the eager composition's graph fused into one row kernel, a block a row, the row staged once in shared memory (looped over global memory past it)",
        |p, x, y| super::compiled::run(OP, p, x, y))
        .generated(|p, dt| super::compiled::kernels(OP, p, dt))
        .strided()
        .vec16(),
    Variant::new(OP, "triton", Tier::Triton, DeviceKind::Cuda,
        "RMSNorm in Triton (kernels/triton/rmsnorm.py): a program a row held on chip (≤ 65536 columns)",
        run_triton)
        .triton(|_, dt, shape| {
            let cols = *shape.last().unwrap_or(&1);
            let hint = |n: &str| n.ends_with("_ptr") || cols.is_multiple_of(16);
            Ok(vec![triton_spec(dt, cols, &hint)?])
        })
        .strided(),
    Variant::new(OP, "fused", Tier::Cpu, DeviceKind::Cpu,
        "rows in parallel (rayon), each row's sum of squares and scaling while in cache; few rows split into chunks all cores share",
        run_cpu_fused)
        .strided(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_normalises_each_row_by_its_root_mean_square() {
        // Row (3, 4): mean of squares 12.5; with eps 0 each element is divided by √12.5.
        let y = reference(&[3.0, 4.0, 0.0, 2.0], &[1.0, 2.0], 2, 0.0);
        let s = 12.5f64.sqrt();
        assert!((y[0] - 3.0 / s).abs() < 1e-15 && (y[1] - 8.0 / s).abs() < 1e-15);
        // Row (0, 2): mean 2, the weight scales the second column.
        assert!((y[2] - 0.0).abs() < 1e-15 && (y[3] - 4.0 / 2f64.sqrt()).abs() < 1e-15);
        // eps keeps a row of zeros finite (0), as PyTorch's.
        assert_eq!(reference(&[0.0, 0.0], &[1.0, 1.0], 2, 1e-6), vec![0.0, 0.0]);
        assert!(reference(&[f64::NAN, 1.0], &[1.0, 1.0], 2, 1e-6)
            .iter()
            .all(|v| v.is_nan()));
    }

    #[test]
    fn plans_take_the_widths_each_version_holds() {
        let f = DType::F32;
        // 1024 f32 columns: 256 packs, a warp of 8 slots a lane.
        let p = plan("v1_warp_row", f, 10, 1024, true).unwrap();
        assert_eq!(
            (p.kernel.as_str(), p.grid, p.threads),
            ("rmsnorm_v1_warp_row_vec_k8_f32", 3, 128)
        );
        assert!(plan("v1_warp_row", f, 10, 1028, true).is_none());
        // 4096 bf16: 512 packs, 128 threads of 4.
        let p = plan("v2_block_regs", DType::BF16, 4096, 4096, true).unwrap();
        assert_eq!(
            (p.kernel.as_str(), p.grid, p.threads),
            ("rmsnorm_v2_block_regs_vec_k4_bf16", 4096, 128)
        );
        assert_eq!(v2_slots_per_thread(8192), Some(8));
        assert_eq!(v2_slots_per_thread(8193), None);
        assert!(plan("v3_two_pass", f, 1, 1 << 24, false).is_some());
        assert_eq!(auto_version(f, 1024, true), "v1_warp_row");
        assert_eq!(auto_version(f, 4096, true), "v2_block_regs");
        assert_eq!(auto_version(f, 32769, false), "v3_two_pass");
        // Every kernel a plan names is one the registry lists (CI compiles them).
        for (v, cols, vec) in [
            ("v1_warp_row", 7, false),
            ("v2_block_regs", 5000, true),
            ("v3_two_pass", 9, true),
        ] {
            let k = plan(v, f, 3, cols, vec).unwrap().kernel;
            assert!(symbols_auto(f).contains(&k), "{k}");
        }
    }

    #[test]
    fn v2_configurations_force_the_slots_where_the_row_fits() {
        let bf = DType::BF16;
        // 4096 bf16 columns, 512 packs: K forced to 1 takes 512 threads, to 8 takes 64.
        for (name, k, threads) in [
            ("k1", 1, 512),
            ("k2", 2, 256),
            ("k4", 4, 128),
            ("k8", 8, 64),
        ] {
            let t = v2_config(name).unwrap();
            let p = plan_with("v2_block_regs", bf, 4096, 4096, true, t).unwrap();
            assert_eq!(
                (p.kernel, p.threads),
                (format!("rmsnorm_v2_block_regs_vec_k{k}_bf16"), threads),
                "{name}"
            );
        }
        // K = 1 cannot hold 8192 packs in 1024 threads: the rule's K = 8 instead.
        let p = plan_with(
            "v2_block_regs",
            bf,
            1,
            65536,
            true,
            v2_config("k1").unwrap(),
        )
        .unwrap();
        assert_eq!(
            (p.kernel.as_str(), p.threads),
            ("rmsnorm_v2_block_regs_vec_k8_bf16", 1024)
        );
        // The default and the empty name are the rule; other versions ignore the tuning.
        assert_eq!(v2_config(""), Some(V2Tuning::DEFAULT));
        assert_eq!(v2_config("default"), Some(V2Tuning::DEFAULT));
        assert_eq!(v2_config("k3"), None);
        assert_eq!(
            plan_with("v1_warp_row", bf, 8, 512, true, v2_config("k1").unwrap()),
            plan("v1_warp_row", bf, 8, 512, true)
        );
        // Every configuration names a kernel the registry lists.
        for (_, t) in V2_CONFIGS {
            let k = plan_with("v2_block_regs", bf, 2, 3000, true, t)
                .unwrap()
                .kernel;
            assert!(symbols_auto(bf).contains(&k), "{k}");
        }
    }

    #[test]
    fn eps_is_parsed_with_clear_errors() {
        let mut f = FlagValues::default();
        assert_eq!(
            OP.params(&f).unwrap().get::<RmsNormParams>().unwrap().eps,
            f32::EPSILON
        );
        f.set("eps", "1e-6");
        assert_eq!(
            OP.params(&f).unwrap().get::<RmsNormParams>().unwrap().eps,
            1e-6
        );
        for bad in ["x", "-1", "inf", "NaN"] {
            f.set("eps", bad);
            let e = OP.params(&f).unwrap_err().to_string();
            assert!(e.contains("--eps"), "{e}");
        }
    }
}
