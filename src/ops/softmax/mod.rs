//! Softmax over the last dimension. Minimum traffic: read rows·cols and write rows·cols
//! elements; FLOPs ≈ 5 per element. Semantics as PyTorch: a row of all −inf, or one holding
//! NaN or +inf, gives NaN outputs.
//!
//! Variants: `reference` (f64), `manual` (the lecture's `manual_softmax`: row max, subtract,
//! exp, row sum, divide — one launch or pass each), `cuda/v1_block_row` … `cuda/v11_deal`,
//! `cuda/auto` (the autotuned (version, configuration) where `kernlab autotune softmax` cached
//! one, else the width heuristic, [`heuristic_choice`]), `cpu/fused`. v3, v8, v9 and v11 have
//! named launch configurations ([`configs`]) that autotune measures.

use super::cpu_prims::{self as prim};
use super::{
    Flag, FlagKind, FlagValues, Grammar, Op, OpDef, OpParams, Params, SweepDefault, Tier,
    TorchCases, Variant,
};
use crate::compiler::{Expr, Graph, Layout};
use crate::runtime::device::{Device, DeviceKind};
use crate::runtime::dtype::{DType, Element};
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::launch;
use crate::runtime::launch::{aligned16, cfg_1d, cuda_io, CudaIo};
use crate::runtime::tensor::{row_strided_layout, Init, Tensor};
use cudarc::driver::{CudaView, LaunchConfig};
use rayon::prelude::*;
use serde::Serialize;

mod auto;
mod cpu;
mod deal;
mod manual;
mod onchip;
mod rows;
mod triton;
mod tune;
pub use auto::*;
pub use cpu::*;
pub use deal::*;
pub(crate) use manual::*;
pub use onchip::*;
pub use rows::*;
pub use triton::*;
pub use tune::*;

/// The op's handle.
pub const OP: Op = Op(&Softmax);

/// The CUDA source of every numbered version.
pub static SOURCE: KernelSource = KernelSource {
    file: "softmax.cu",
    src: include_str!("../../../kernels/softmax.cu"),
};

/// Softmax's parameter: write log_softmax (x − max − log Σ e^(x−max)) instead, from the same
/// kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SoftmaxParams {
    pub log_softmax: bool,
}

impl OpParams for SoftmaxParams {
    fn form(&self) -> Option<String> {
        self.log_softmax.then(|| "log_softmax".to_string())
    }
    fn form_column(&self) -> String {
        self.form().unwrap_or_else(|| "softmax".into())
    }
}

struct Softmax;

static FLAGS: [Flag; 1] = [Flag {
    name: "log-softmax",
    help: "Softmax: log_softmax (x − max − log Σ e^(x−max)) instead, from the same kernels",
    kind: FlagKind::Switch,
}];

impl OpDef for Softmax {
    fn name(&self) -> &'static str {
        "softmax"
    }
    fn about(&self) -> &'static str {
        "softmax (or log_softmax) over the last dimension, PyTorch's semantics"
    }
    fn grammar(&self) -> Grammar {
        Grammar::Rows
    }
    fn default_shape(&self, device: DeviceKind) -> Vec<usize> {
        match device {
            DeviceKind::Cuda => vec![8192, 4096],
            DeviceKind::Cpu => vec![2048, 1024],
        }
    }
    /// Triton's fused-softmax tutorial's sweep on a GPU; a smaller one on the CPU.
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
        Ok(Params::new(SoftmaxParams {
            log_softmax: flags.switch("log-softmax"),
        }))
    }
    fn check_shape(&self, shape: &[usize], row_stride: Option<usize>) -> Result<()> {
        row_strided_layout(shape, row_stride).map(|_| ())
    }
    fn input_shapes(&self, shape: &[usize], _: &Params) -> Vec<Vec<usize>> {
        vec![shape.to_vec()]
    }
    /// N(0, 1) with an outlier ×20 every thousand elements or so, as llm.c plants them.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        row_stride: Option<usize>,
        _: &Params,
    ) -> Result<Vec<Tensor>> {
        let init = Init::NormalWithOutliers {
            std: 1.0,
            every: 1000,
            scale: 20.0,
        };
        Ok(vec![Tensor::random(
            shape,
            dtype,
            init,
            seed,
            row_stride,
            &Device::Cpu,
        )?])
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
        let x = &inputs[0];
        let (_, cols, _) = x.rows_cols();
        let x64 = match blocks {
            Some(b) => x.blocks_f64(cols.max(1), b)?,
            None => x.to_f64_vec()?,
        };
        Ok(reference(&x64, cols, p.get()?))
    }
    fn min_bytes(&self, shape: &[usize], dtype: DType, _: &Params) -> usize {
        2 * shape.iter().product::<usize>() * dtype.size()
    }
    /// max, subtract, exp, sum, divide.
    fn flops(&self, shape: &[usize], _: &Params) -> f64 {
        5.0 * shape.iter().product::<usize>() as f64
    }
    fn variants(&self) -> &'static [Variant] {
        &VARIANTS
    }
    fn graph<'g>(&self, g: &'g Graph, p: &Params) -> Option<Result<Expr<'g>>> {
        Some(p.get::<SoftmaxParams>().and_then(|p| graph(g, p)))
    }
    fn torch(&self) -> Option<TorchCases> {
        Some(TorchCases {
            op: "softmax",
            args: |p| match p.get::<SoftmaxParams>() {
                Ok(s) if s.log_softmax => Ok(vec!["--log-softmax".into()]),
                Ok(_) => Ok(Vec::new()),
                Err(e) => Err(e.to_string()),
            },
        })
    }
    fn tuning(&self) -> Option<crate::ops::Tuning> {
        Some(crate::ops::Tuning {
            default_dtype: DType::F32,
            what: "which numbered version `auto` runs, each in its named configurations (v3: \
                   k1..k8; v8: fill, cluster4, ...; v9: pingpong, smpair, ...; v11: chunk8k, ...; \
                   v11 on sm_90)",
            versions: &auto::AUTO_CANDIDATES,
            candidates,
        })
    }
}

/// The oracle: softmax (or log_softmax) of one row in f64, three passes exactly as the
/// definition reads: m = max, s = Σ e^(x−m), then e^(x−m)/s or (x − m) − ln s.
pub fn reference_row(x: &[f64], out: &mut [f64], log: bool) {
    let m = x.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
    let s: f64 = x.iter().map(|&v| (v - m).exp()).sum();
    let ln_s = s.ln();
    for (o, &v) in out.iter_mut().zip(x) {
        *o = if log {
            (v - m) - ln_s
        } else {
            (v - m).exp() / s
        };
    }
}

/// The f64 softmax of `x`'s rows of `cols` (a short last row is a row too); with `cols` = 0
/// there are no rows, and any values given are answered with NaN, which never passes.
/// The lecture's `manual_softmax` as an expression graph over input `x`: the row's max
/// subtracted, exponentiated, divided by the row's sum; log_softmax as `x − max − log Σ e^(x−max)`.
pub fn graph<'g>(g: &'g Graph, p: &SoftmaxParams) -> Result<Expr<'g>> {
    let x = g.input("x", Layout::Full)?;
    let shifted = x - x.row_max();
    Ok(if p.log_softmax {
        shifted - shifted.exp().sum().log()
    } else {
        let e = shifted.exp();
        e / e.sum()
    })
}

pub fn reference(x: &[f64], cols: usize, p: &SoftmaxParams) -> Vec<f64> {
    if cols == 0 {
        return vec![f64::NAN; x.len()];
    }
    let mut out = vec![0.0; x.len()];
    out.par_chunks_mut(cols)
        .zip(x.par_chunks(cols))
        .for_each(|(o, r)| reference_row(r, o, p.log_softmax));
    out
}

fn run_reference(p: &SoftmaxParams, x: &Tensor, y: &mut Tensor) -> Result<()> {
    let (_, cols, _) = x.rows_cols();
    let r = reference(&x.to_f64_vec()?, cols, p);
    *y = Tensor::from_f64(&r, x.shape(), y.dtype())?;
    Ok(())
}

// ---- the registry's rows ------------------------------------------------------------------
/// A registry row's run of a launcher taking softmax's parameters and one input.
macro_rules! unary {
    ($f:path) => {
        |p, x, y| $f(p.get()?, x[0], y)
    };
}

static VARIANTS: [Variant; 15] = [
    Variant::new(OP, "reference", Tier::Reference, DeviceKind::Cpu,
        "f64 on the CPU, three passes per row: the oracle",
        unary!(run_reference))
        .strided(),
    Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cpu,
        "the lecture's manual_softmax: max, subtract, exp, sum, divide, a pass each",
        unary!(run_manual_cpu)),
    Variant::new(OP, "manual", Tier::Manual, DeviceKind::Cuda,
        "the lecture's manual_softmax: 5 kernel launches (row max, sub, exp, row sum, div)",
        |p, x, y| super::compiled::run_eager(OP, p, x, y))
        .generated(|p, dt| super::compiled::eager_kernels(OP, p, dt))
        .strided(),
    Variant::new(OP, "v1_block_row", Tier::Cuda, DeviceKind::Cuda,
        "the seeds' kernel: a block per row, three passes, scalar loads",
        unary!(run_v1_block_row))
        .kernels(&SOURCE, symbols_v1)
        .strided(),
    Variant::new(OP, "v2_warp_row", Tier::Cuda, DeviceKind::Cuda,
        "a warp per row held in registers, 16-byte loads, shuffles (≤ 1024 f32 columns)",
        unary!(run_v2_warp_row))
        .kernels(&SOURCE, symbols_v2)
        .strided()
        .vec16(),
    Variant::new(OP, "v3_block_regs", Tier::Cuda, DeviceKind::Cuda,
        "a block per row held in registers, 16-byte loads (≤ 32768 f32 columns)",
        unary!(run_v3_block_regs))
        .kernels(&SOURCE, symbols_v3)
        .strided()
        .vec16(),
    Variant::new(OP, "v4_online", Tier::Cuda, DeviceKind::Cuda,
        "any width: a block per row, online max/sum pass then a write pass",
        unary!(run_v4_online))
        .kernels(&SOURCE, symbols_v4)
        .strided()
        .vec16(),
    Variant::new(OP, "v6_split", Tier::Cuda, DeviceKind::Cuda,
        "a row split across co-resident CTAs (cooperative launch): the row in their registers, (max, sum) exchanged through global memory; one read, one write up to 4 Mi f32",
        unary!(run_v6_split))
        .kernels(&SOURCE, symbols_v6)
        .strided()
        .vec16()
        .claims(&["st.relaxed.gpu.global.v2.u64", "ld.relaxed.gpu.global.v2.u64"]),
    Variant::new(OP, "v8_onchip", Tier::Cuda, DeviceKind::Cuda,
        "a row per CTA in registers and shared memory (cp.async), up to ~350 KB a CTA; wider rows in a cluster of 2–16 such CTAs merging (max, sum) through DSMEM (sm_90)",
        unary!(run_v8_onchip))
        .kernels(&SOURCE, symbols_v8)
        .strided()
        .vec16()
        .claims(&["cp.async.cg.shared.global"]),
    Variant::new(OP, "v9_gridsync", Tier::Cuda, DeviceKind::Cuda,
        "v8's on-chip row parts (registers and cp.async shared memory) split across co-resident CTAs (cooperative launch), (max, sum) exchanged through global memory as v6; one read, one write up to ~45 MB rows",
        unary!(run_v9_gridsync))
        .kernels(&SOURCE, symbols_v9)
        .strided()
        .vec16()
        .claims(&["cp.async.cg.shared.global", "st.relaxed.gpu.global.v2.u64"]),
    Variant::new(OP, "v11_deal", Tier::Cuda, DeviceKind::Cuda,
        "rows cut into 16 KB chunks dealt on demand to one CTA an SM (an SM that streams faster takes more), each read once into shared memory by a TMA bulk copy, reduced and published, and written once its row is done (sm_90)",
        unary!(run_v11_deal))
        .kernels(&SOURCE, symbols_v11)
        .strided()
        .vec16()
        .min_arch(90)
        .claims(&[
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity",
            "st.relaxed.gpu.global.v2.u64",
            "atom.global.add.u32",
        ]),
    Variant::new(OP, "auto", Tier::Cuda, DeviceKind::Cuda,
        "the autotuned (version, configuration) for the device, dtype and shape bucket, else the width dispatch: v2 narrow, v3 medium; odd and wide: v8 (sm_90, ≤ 8 CTAs a row), v11 (sm_90, rows of whole packs to 8 MB, chunks dealt on demand), v9 (sm_90, split rows on chip), v6 (split rows), v4",
        unary!(run_auto))
        .kernels(&SOURCE, symbols_auto)
        .strided()
        .vec16()
        .min_arch(90)
        .picks(|_, x| auto_label(x[0])),
    Variant::new(OP, "compiled", Tier::Compiled, DeviceKind::Cuda,
        "kernlab's compiler: manual_softmax's graph fused into one row kernel, a block a row, the row staged once in shared memory (looped over global memory past it)",
        |p, x, y| super::compiled::run(OP, p, x, y))
        .generated(|p, dt| super::compiled::kernels(OP, p, dt))
        .strided()
        .vec16(),
    Variant::new(OP, "triton", Tier::Triton, DeviceKind::Cuda,
        "the fused-softmax tutorial's kernel in Triton (kernels/triton/softmax.py): a row a block on chip, a persistent grid sized by occupancy (≤ 131072 columns)",
        unary!(run_triton))
        .triton(|p, dt, shape| {
            let cols = *shape.last().unwrap_or(&1);
            let rows = shape.iter().product::<usize>() / cols.max(1);
            let hint = |n: &str| match n {
                "rows" => rows.is_multiple_of(16),
                "x_ptr" | "y_ptr" => true,
                _ => cols.is_multiple_of(16),
            };
            Ok(vec![triton_spec(p.get()?, dt, cols, &hint)?])
        })
        .strided(),
    Variant::new(OP, "fused", Tier::Cpu, DeviceKind::Cpu,
        "rows in parallel (rayon), each row max / exp-sum / scale while in cache; rows past 512 Ki columns, or too few for the threads, split into 4096-column chunks that all cores share",
        unary!(run_cpu_fused))
        .strided(),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v3_keeps_four_loads_in_flight_where_it_can() {
        assert_eq!(v3_slots_per_thread(1), Some(1));
        assert_eq!(v3_slots_per_thread(33), Some(2));
        assert_eq!(v3_slots_per_thread(1024), Some(4)); // 4096 f32: 256 threads × 4
        assert_eq!(v3_slots_per_thread(4096), Some(4)); // 1024 threads × 4
        assert_eq!(v3_slots_per_thread(4097), Some(8));
        assert_eq!(v3_slots_per_thread(8192), Some(8));
        assert_eq!(v3_slots_per_thread(8193), None);
    }

    /// The shifted form's packs cover a row that starts pack − 1 elements in (the worst
    /// start); V3_SHIFT_16_UPTO is the widest 16-bit row whose packs fill one warp at four a
    /// thread (the rule's premise); v3_max_cols_shift is the widest row eight packs a thread
    /// of 1024 threads hold.
    #[test]
    fn v3_shift_takes_the_packs_of_the_worst_start() {
        assert_eq!(v3_shift_slots(4097, 8), 513); // 4096 + 1: its last element a pack alone
        assert_eq!(v3_shift_slots(4089, 8), 512); // a start at most 7 in still ends by 4096
        assert_eq!(v3_shift_slots(4095, 8), 513); // one that starts 7 in ends at 4102
        assert_eq!(v3_shift_slots(33, 4), 9);
        assert_eq!(v3_shift_slots(1, 8), 1);
        let upto = V3_SHIFT_16_UPTO;
        assert_eq!(v3_shift_slots(upto, 8), 128);
        assert_eq!(v3_slots_per_thread(128), Some(4)); // one warp of four
        assert_eq!(v3_shift_slots(upto + 2, 8), 129);
        let most = v3_max_cols_shift(DType::BF16);
        assert_eq!(v3_slots_per_thread(v3_shift_slots(most, 8)), Some(8));
        assert_eq!(v3_slots_per_thread(v3_shift_slots(most + 1, 8)), None);
        assert_eq!(v3_max_cols_shift(DType::F32), 32768 - 3);
    }

    /// 16-bit shifted rows wider than one warp holds at four packs a thread take the split
    /// kernels, which only 16-bit dtypes have; `auto`'s band for them lies past that and below
    /// the aligned 4096 columns where v8's rule was measured.
    #[test]
    fn v3_splits_only_16_bit_rows_past_one_warp() {
        for dt in [DType::BF16, DType::F16] {
            assert!(!v3_split_16(dt, V3_SHIFT_16_UPTO));
            assert!(v3_split_16(dt, V3_SPLIT_16_FROM));
            assert!(v3_split_16(dt, v3_max_cols_shift(dt)));
            let split = symbols_v3(dt);
            assert!(split.contains(&format!("softmax_v3_block_regs_shiftsplit_k4_{dt}")));
            assert_eq!(
                split.iter().filter(|s| s.contains("shiftsplit")).count(),
                KS.len()
            );
        }
        assert!(!v3_split_16(DType::F32, 4097));
        assert!(!symbols_v3(DType::F32)
            .iter()
            .any(|s| s.contains("shiftsplit")));
        let (lo, hi) = (*V3_SPLIT_16_BAND.start(), *V3_SPLIT_16_BAND.end());
        assert!(V3_SPLIT_16_FROM < lo && lo <= hi && hi < 4096);
        assert!(v3_shift_16(DType::BF16, lo) && v3_shift_16(DType::F16, hi));
        assert!(!v3_shift_16(DType::BF16, lo - 2) && !v3_shift_16(DType::BF16, hi + 2));
        assert!(!v3_shift_16(DType::F32, lo));
    }

    #[test]
    fn v2_gives_narrow_rows_several_to_a_warp() {
        assert_eq!(v2_shape(1), Some((4, "w4".into()))); // 1–4 slots: 8 rows a warp
        assert_eq!(v2_shape(4), Some((4, "w4".into()))); // 32 bf16 columns
        assert_eq!(v2_shape(5), Some((8, "w8".into())));
        assert_eq!(v2_shape(16), Some((16, "w16".into()))); // 64 f32 columns
        assert_eq!(v2_shape(17), Some((32, "k1".into())));
        assert_eq!(v2_shape(33), Some((32, "k2".into())));
        assert_eq!(v2_shape(256), Some((32, "k8".into())));
        assert_eq!(v2_shape(257), None);
    }

    #[test]
    fn auto_dispatch_follows_the_register_limits() {
        assert_eq!(dispatch(DType::F32, 1024, true), "v2_warp_row");
        assert_eq!(dispatch(DType::F32, 1025, false), "v3_block_regs");
        assert_eq!(dispatch(DType::F32, 32768, true), "v3_block_regs");
        assert_eq!(dispatch(DType::BF16, 65536, true), "v3_block_regs");
        assert_eq!(dispatch(DType::F32, 32769, false), "v4_online");
    }

    #[test]
    fn auto_reports_the_version_it_runs() {
        let t = |cols: usize, dt: DType| {
            Tensor::empty(&[2, cols], dt, &crate::runtime::device::Device::Cpu).unwrap()
        };
        assert_eq!(auto_choice(&t(512, DType::F32)), "v2_warp_row");
        assert_eq!(auto_choice(&t(4096, DType::F32)), "v3_block_regs");
        assert_eq!(auto_choice(&t(65536, DType::BF16)), "v3_block_regs");
        // Without a Hopper GPU (here: a CPU tensor) wide rows go to v4.
        assert_eq!(auto_choice(&t(100_000, DType::BF16)), "v4_online");
        // Odd: the scalar v2 holds 256 columns.
        assert_eq!(auto_choice(&t(1001, DType::F32)), "v3_block_regs");
        // Nothing ran on these layouts: the label is the first choice.
        assert_eq!(auto_label(&t(4096, DType::F32)), "v3_block_regs");
    }

    #[test]
    fn auto_labels_what_ran_and_who_chose_it() {
        assert_eq!(pick_label("v8_onchip", "", false, None), "v8_onchip");
        assert_eq!(
            pick_label("v8_onchip", "", false, Some("v8_onchip")),
            "v8_onchip"
        );
        assert_eq!(
            pick_label("v8_onchip", "fill", true, Some("v8_onchip")),
            "v8_onchip fill (autotuned)"
        );
        assert_eq!(
            pick_label("v6_split", "", true, None),
            "v6_split (autotuned)"
        );
        // A choice that refused the shape: the fallback that ran is named first.
        assert_eq!(
            pick_label("v9_gridsync", "pingpong", true, Some("v4_online")),
            "v4_online (v9_gridsync pingpong, autotuned, refused the shape)"
        );
        assert_eq!(
            pick_label("v8_onchip", "", false, Some("v6_split")),
            "v6_split (v8_onchip refused the shape)"
        );
    }

    #[test]
    fn v6_holds_rows_in_the_fewest_ctas_and_fills_the_gpu() {
        // 264 resident CTAs: the H200's 132 SMs × 2 CTAs of 512 threads.
        assert_eq!(v6_config(1024, 4096, 264), Some((1, 128))); // 4096 f32, many rows
        assert_eq!(v6_config(32768, 2048, 264), Some((8, 512))); // 131072 f32
        assert_eq!(v6_config(262145, 255, 264), Some((65, 512))); // 1048577 f32, peeled
        assert_eq!(v6_config(1 << 20, 64, 264), Some((256, 512))); // 4 Mi f32: 256 CTAs
        assert_eq!(v6_config(2 << 20, 64, 264), None); // 8 Mi f32: more than the GPU holds

        // One row of 131072 f32: split over 128 one-warp CTAs instead of 8 of 512 threads.
        assert_eq!(v6_config(32768, 1, 264), Some((128, 32)));
        // A short row is never split below one warp's slots.
        assert_eq!(v6_config(100, 1, 264), Some((1, 32)));
    }
}
