//! The variant registry: the one table of every (op, variant, tier, device, dtypes, summary,
//! launcher). `kernlab list` prints it; bench, tests and CI iterate over it, so a new variant
//! is one row here plus its kernel, and no list elsewhere can drift from the code.

use crate::device::DeviceKind;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::{KernelSource, ELEMENTWISE, GELU, SOFTMAX};
use crate::ops::{gelu, softmax, Op, Params, Tier};
use crate::tensor::Tensor;
use serde::Serialize;

pub type RunFn = fn(&Params, &Tensor, &mut Tensor) -> Result<()>;
pub type SymbolsFn = fn(DType) -> Vec<String>;

/// One row of the registry.
#[derive(Clone, Copy)]
pub struct Variant {
    pub op: Op,
    pub name: &'static str,
    pub tier: Tier,
    pub device: DeviceKind,
    pub dtypes: &'static [DType],
    pub summary: &'static str,
    /// Accepts inputs whose rows are strided (row stride > width); else needs contiguous.
    pub strided_rows: bool,
    /// CUDA only: the source its kernels live in, and every symbol it may launch per dtype.
    pub source: Option<&'static KernelSource>,
    pub symbols: Option<SymbolsFn>,
    /// Claims 16-byte global loads (CI checks the PTX for `ld.global*.v4`).
    pub vec16: bool,
    /// CUDA only: the oldest architecture on which all its kernels do real work (80 = sm_80;
    /// 90 for v5's clusters, and for `auto`, which dispatches to them on sm_90+). CI checks
    /// its PTX for that architecture and newer.
    pub min_arch: u32,
    /// Dispatching variants (`auto`): which variant they run for an input, shown by bench.
    pub picks: Option<fn(&Tensor) -> &'static str>,
    pub run: RunFn,
}

#[derive(Serialize)]
pub struct VariantInfo {
    pub op: Op,
    pub variant: &'static str,
    pub tier: Tier,
    pub device: DeviceKind,
    pub dtypes: Vec<DType>,
    pub strided_rows: bool,
    pub summary: &'static str,
}

impl Variant {
    /// `op/variant`, the name the CLI and the tables use.
    pub fn id(&self) -> String {
        format!("{}/{}", self.op, self.name)
    }

    pub fn info(&self) -> VariantInfo {
        VariantInfo {
            op: self.op,
            variant: self.name,
            tier: self.tier,
            device: self.device,
            dtypes: self.dtypes.to_vec(),
            strided_rows: self.strided_rows,
            summary: self.summary,
        }
    }

    /// Check the inputs (device, dtype, shape, layout) with a clear error, then run.
    /// `y` must be a contiguous tensor of x's shape and dtype on the same device.
    pub fn run(&self, p: &Params, x: &Tensor, y: &mut Tensor) -> Result<()> {
        let (op, var) = (self.op.to_string(), self.name.to_string());
        if x.numel() == 0 {
            return Err(Error::EmptyTensor {
                op,
                shape: x.shape().to_vec(),
            });
        }
        if !self.dtypes.contains(&x.dtype()) {
            return Err(Error::UnsupportedDtype {
                op,
                variant: var,
                dtype: x.dtype(),
                supported: self
                    .dtypes
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        for t in [x, &*y] {
            if t.device_kind() != self.device {
                return Err(Error::WrongDevice {
                    op,
                    variant: var,
                    wants: self.device.to_string(),
                    got: t.device_kind().to_string(),
                });
            }
        }
        if x.shape() != y.shape() || x.dtype() != y.dtype() {
            return Err(Error::ShapeMismatch {
                op,
                why: format!(
                    "input is {:?} {}, output is {:?} {}",
                    x.shape(),
                    x.dtype(),
                    y.shape(),
                    y.dtype()
                ),
            });
        }
        if !y.is_contiguous() {
            return Err(Error::NotContiguous {
                op,
                variant: var,
                shape: y.shape().to_vec(),
                strides: y.strides().to_vec(),
            });
        }
        let layout_ok = x.is_contiguous() || (self.strided_rows && x.is_row_strided());
        if !layout_ok {
            return Err(Error::NotContiguous {
                op,
                variant: var,
                shape: x.shape().to_vec(),
                strides: x.strides().to_vec(),
            });
        }
        (self.run)(p, x, y)
    }
}

const ALL_DTYPES: &[DType] = &[DType::F32, DType::BF16, DType::F16];

/// Every variant kernlab has. Order: op, then the lecture's order of tiers and versions.
pub static VARIANTS: &[Variant] = &[
    // ---------------------------------------------------------------- gelu
    Variant {
        op: Op::Gelu,
        name: "reference",
        tier: Tier::Reference,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "f64 on the CPU, PyTorch's formula: the oracle",
        strided_rows: true,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: gelu::run_reference,
    },
    Variant {
        op: Op::Gelu,
        name: "manual",
        tier: Tier::Manual,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "the lecture's manual_gelu: one parallel pass per primitive op, f32 temporaries",
        strided_rows: false,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: gelu::run_manual_cpu,
    },
    Variant {
        op: Op::Gelu,
        name: "manual",
        tier: Tier::Manual,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "the lecture's manual_gelu: one kernel launch per primitive op (9 for tanh)",
        strided_rows: false,
        source: Some(&ELEMENTWISE),
        symbols: Some(gelu::manual_symbols),
        vec16: false,
        min_arch: 80,
        picks: None,
        run: gelu::run_manual_cuda,
    },
    Variant {
        op: Op::Gelu,
        name: "v1_naive",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "the lecture's kernel: one thread per element, scalar loads",
        strided_rows: false,
        source: Some(&GELU),
        symbols: Some(|dt| gelu::cuda_symbols("v1_naive")(dt)),
        vec16: false,
        min_arch: 80,
        picks: None,
        run: gelu::run_v1_naive,
    },
    Variant {
        op: Op::Gelu,
        name: "v2_vec16",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "one 16-byte pack per thread (ld/st.global.v4)",
        strided_rows: false,
        source: Some(&GELU),
        symbols: Some(|dt| gelu::cuda_symbols("v2_vec16")(dt)),
        vec16: true,
        min_arch: 80,
        picks: None,
        run: gelu::run_v2_vec16,
    },
    Variant {
        op: Op::Gelu,
        name: "v3_vec16_ilp",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary:
            "a contiguous tile of 4 packs per thread, all loads in flight first, streaming hints",
        strided_rows: false,
        source: Some(&GELU),
        symbols: Some(|dt| gelu::cuda_symbols("v3_vec16_ilp")(dt)),
        vec16: true,
        min_arch: 80,
        picks: None,
        run: gelu::run_v3_vec16_ilp,
    },
    Variant {
        op: Op::Gelu,
        name: "fused",
        tier: Tier::Cpu,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "one multi-threaded pass (rayon), f32 arithmetic",
        strided_rows: false,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: gelu::run_cpu_fused,
    },
    // ---------------------------------------------------------------- softmax
    Variant {
        op: Op::Softmax,
        name: "reference",
        tier: Tier::Reference,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "f64 on the CPU, three passes per row: the oracle",
        strided_rows: true,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: softmax::run_reference,
    },
    Variant {
        op: Op::Softmax,
        name: "manual",
        tier: Tier::Manual,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "the lecture's manual_softmax: max, subtract, exp, sum, divide, a pass each",
        strided_rows: false,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: softmax::run_manual_cpu,
    },
    Variant {
        op: Op::Softmax,
        name: "manual",
        tier: Tier::Manual,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary:
            "the lecture's manual_softmax: 5 kernel launches (row max, sub, exp, row sum, div)",
        strided_rows: false,
        source: Some(&ELEMENTWISE),
        symbols: Some(softmax::manual_symbols),
        vec16: false,
        min_arch: 80,
        picks: None,
        run: softmax::run_manual_cuda,
    },
    Variant {
        op: Op::Softmax,
        name: "v1_block_row",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "the seeds' kernel: a block per row, three passes, scalar loads",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v1),
        vec16: false,
        min_arch: 80,
        picks: None,
        run: softmax::run_v1_block_row,
    },
    Variant {
        op: Op::Softmax,
        name: "v2_warp_row",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "a warp per row held in registers, 16-byte loads, shuffles (≤ 1024 f32 columns)",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v2),
        vec16: true,
        min_arch: 80,
        picks: None,
        run: softmax::run_v2_warp_row,
    },
    Variant {
        op: Op::Softmax,
        name: "v3_block_regs",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "a block per row held in registers, 16-byte loads (≤ 32768 f32 columns)",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v3),
        vec16: true,
        min_arch: 80,
        picks: None,
        run: softmax::run_v3_block_regs,
    },
    Variant {
        op: Op::Softmax,
        name: "v4_online",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "any width: a block per row, online max/sum pass then a write pass",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v4),
        vec16: true,
        min_arch: 80,
        picks: None,
        run: softmax::run_v4_online,
    },
    Variant {
        op: Op::Softmax,
        name: "v5_cluster",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "a thread-block cluster per row (sm_90): the row in registers across ≤ 16 CTAs, (max, sum) merged through DSMEM",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v5),
        vec16: true,
        min_arch: 90,
        picks: None,
        run: softmax::run_v5_cluster,
    },
    Variant {
        op: Op::Softmax,
        name: "auto",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "width dispatch: v2 for narrow rows, v3 for medium, v5 (sm_90) then v4 for wide",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_auto),
        vec16: true,
        min_arch: 90,
        picks: Some(softmax::auto_choice),
        run: softmax::run_auto,
    },
    Variant {
        op: Op::Softmax,
        name: "fused",
        tier: Tier::Cpu,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "rows in parallel (rayon), each row max / exp-sum / scale while in cache",
        strided_rows: true,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        run: softmax::run_cpu_fused,
    },
];

/// The variants of an op on a device (the reference included).
pub fn variants_for(op: Op, device: DeviceKind) -> impl Iterator<Item = &'static Variant> {
    VARIANTS
        .iter()
        .filter(move |v| v.op == op && (v.device == device || v.tier == Tier::Reference))
}

/// Look a variant up by name for an op and device.
pub fn find(op: Op, name: &str, device: DeviceKind) -> Result<&'static Variant> {
    let name = name.trim();
    let name = name.strip_prefix(&format!("{op}/")).unwrap_or(name);
    variants_for(op, device)
        .find(|v| v.name == name)
        .ok_or_else(|| Error::UnknownVariant {
            op: op.to_string(),
            variant: name.to_string(),
            known: variants_for(op, device)
                .map(|v| v.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The reference variant of an op.
pub fn reference(op: Op) -> &'static Variant {
    VARIANTS
        .iter()
        .find(|v| v.op == op && v.tier == Tier::Reference)
        .expect("every op registers a reference")
}
