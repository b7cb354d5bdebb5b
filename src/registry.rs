//! The variant registry: the one table of every (op, variant, tier, device, dtypes, summary,
//! launcher). `kernlab list` prints it; bench, tests and CI iterate over it, so a new variant
//! is one row here plus its kernel, and no list elsewhere can drift from the code.

use crate::device::DeviceKind;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::{KernelSource, ELEMENTWISE, GELU, MATMUL, MATMUL_SM90, SOFTMAX};
use crate::ops::matmul::{self, Gemm, GemmFn};
use crate::ops::{gelu, softmax, Op, Params, Tier};
use crate::ops::{matmul_auto, matmul_cuda, matmul_sm90, matmul_vendor};
use crate::tensor::Tensor;
use serde::Serialize;

pub type RunFn = fn(&Params, &Tensor, &mut Tensor) -> Result<()>;
/// A dispatching variant's choice for these inputs (shown by bench as `picked`).
pub type PickFn = fn(&Params, &[&Tensor]) -> String;

/// How a variant computes: an elementwise / row op `y = f(x)`, or a GEMM
/// `c = act(a·wᵀ + bias)` (matmul, linear).
#[derive(Clone, Copy)]
pub enum Kernel {
    Unary(RunFn),
    Gemm(GemmFn),
}
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
    /// 90 for v11's bulk copies, and for `auto`, which dispatches to them on sm_90+). CI checks
    /// its PTX for that architecture and newer.
    pub min_arch: u32,
    /// Dispatching variants (`auto`): which variant they run for an input, shown by bench.
    pub picks: Option<PickFn>,
    /// PTX instructions the variant claims (CI checks each appears in its kernels' PTX for
    /// `min_arch`), e.g. `mma.sync` for tensor-core versions.
    pub ptx_claims: &'static [&'static str],
    pub run: Kernel,
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
    /// Unary ops take one input `x` and write `y`, a contiguous tensor of x's shape and dtype
    /// on the same device. GEMMs take `[a, w]` or `[a, w, bias]` and write `y` `[M, N]`.
    pub fn run(&self, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
        match self.run {
            Kernel::Unary(f) => {
                let [x] = inputs else {
                    return Err(Error::Invalid(format!(
                        "{} takes one input tensor, got {}",
                        self.id(),
                        inputs.len()
                    )));
                };
                self.check_unary(x, y)?;
                f(p, x, y)
            }
            Kernel::Gemm(f) => {
                let g = self.gemm_args(p, inputs, y)?;
                f(&g, y)
            }
        }
    }

    fn check_dtype_device(&self, t: &Tensor) -> Result<()> {
        let (op, var) = (self.op.to_string(), self.name.to_string());
        if !self.dtypes.contains(&t.dtype()) {
            return Err(Error::UnsupportedDtype {
                op,
                variant: var,
                dtype: t.dtype(),
                supported: self
                    .dtypes
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        if t.device_kind() != self.device {
            return Err(Error::WrongDevice {
                op,
                variant: var,
                wants: self.device.to_string(),
                got: t.device_kind().to_string(),
            });
        }
        Ok(())
    }

    fn not_contiguous(&self, t: &Tensor, operand: &'static str) -> Error {
        Error::NotContiguous {
            op: self.op.to_string(),
            variant: self.name.to_string(),
            operand,
            shape: t.shape().to_vec(),
            strides: t.strides().to_vec(),
        }
    }

    fn check_unary(&self, x: &Tensor, y: &Tensor) -> Result<()> {
        let op = self.op.to_string();
        if x.numel() == 0 {
            return Err(Error::EmptyTensor {
                op,
                shape: x.shape().to_vec(),
            });
        }
        self.check_dtype_device(x)?;
        self.check_dtype_device(y)?;
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
            return Err(self.not_contiguous(y, "output"));
        }
        let layout_ok = x.is_contiguous() || (self.strided_rows && x.is_row_strided());
        if !layout_ok {
            return Err(self.not_contiguous(x, "input"));
        }
        Ok(())
    }

    /// The checked GEMM operands of a call (see `run`):
    /// `[a, w]` or `[a, w, bias]`: a `[M, K]`, w `[N, K]` (a Linear weight), bias `[N]`,
    /// y `[M, N]`, one dtype, one device, all contiguous; matmul takes no bias and no
    /// activation.
    pub fn gemm_args<'a>(&self, p: &Params, inputs: &[&'a Tensor], y: &Tensor) -> Result<Gemm<'a>> {
        let op = self.op.to_string();
        let (a, w, bias) = match inputs {
            [a, w] => (*a, *w, None),
            [a, w, b] => (*a, *w, Some(*b)),
            _ => {
                return Err(Error::Invalid(format!(
                    "{} takes [a, w] or [a, w, bias], got {} tensors",
                    self.id(),
                    inputs.len()
                )))
            }
        };
        let act = match self.op {
            Op::Linear => p.act,
            _ => matmul::Activation::None,
        };
        if self.op == Op::Matmul && bias.is_some() {
            return Err(Error::Invalid(
                "matmul takes no bias; use linear for a fused bias (and activation)".into(),
            ));
        }
        let (m, n, k) = matmul::dims(&op, a, w)?;
        if let Some(b) = bias {
            if b.shape() != [n] {
                return Err(Error::ShapeMismatch {
                    op,
                    why: format!("bias must be [N] = [{n}], got {:?}", b.shape()),
                });
            }
        }
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::EmptyTensor {
                op,
                shape: vec![m, n, k],
            });
        }
        let operands = [
            ("operand a", Some(a)),
            ("operand w", Some(w)),
            ("bias", bias),
            ("output", Some(y)),
        ];
        for (name, t) in operands.into_iter().filter_map(|(n, t)| Some((n, t?))) {
            self.check_dtype_device(t)?;
            if t.dtype() != a.dtype() {
                return Err(Error::ShapeMismatch {
                    op,
                    why: format!(
                        "every operand must have one dtype: a is {}, {name} is {}",
                        a.dtype(),
                        t.dtype()
                    ),
                });
            }
            if !t.is_contiguous() {
                return Err(self.not_contiguous(t, name));
            }
        }
        if y.shape() != [m, n] {
            return Err(Error::ShapeMismatch {
                op,
                why: format!("output must be [M, N] = [{m}, {n}], got {:?}", y.shape()),
            });
        }
        Ok(Gemm {
            a,
            w,
            bias,
            act,
            m,
            n,
            k,
        })
    }
}

const ALL_DTYPES: &[DType] = &[DType::F32, DType::BF16, DType::F16];
const HALF_DTYPES: &[DType] = &[DType::BF16, DType::F16];

/// A matmul or linear row (both ops share every kernel; linear adds the epilogue).
#[allow(clippy::too_many_arguments)]
const fn gemm(
    op: Op,
    name: &'static str,
    tier: Tier,
    device: DeviceKind,
    dtypes: &'static [DType],
    summary: &'static str,
    source: Option<&'static KernelSource>,
    symbols: Option<SymbolsFn>,
    min_arch: u32,
    ptx_claims: &'static [&'static str],
    run: GemmFn,
) -> Variant {
    Variant {
        op,
        name,
        tier,
        device,
        dtypes,
        summary,
        strided_rows: false,
        source,
        symbols,
        vec16: false,
        min_arch,
        picks: None,
        ptx_claims,
        run: Kernel::Gemm(run),
    }
}

/// Every kernel `auto` may launch from kernels/matmul.cu (v6's live in matmul_sm90.cu, which
/// CI checks under v6's own row).
fn matmul_auto_symbols(dt: DType) -> Vec<String> {
    let mut v = matmul_cuda::symbols("v4_grouped", dt);
    if dt != DType::F32 {
        v.extend(matmul_cuda::symbols("v5_mma", dt));
    }
    v
}

/// The rows every GEMM op has, in the lecture's order.
macro_rules! gemm_rows {
    ($op:expr) => {
        [
            gemm($op, "reference", Tier::Reference, DeviceKind::Cpu, ALL_DTYPES,
                "f64 dot products on the CPU (sampled rows for large shapes): the oracle",
                None, None, 80, &[], matmul::run_reference),
            gemm($op, "v1_naive", Tier::Cuda, DeviceKind::Cuda, ALL_DTYPES,
                "the lecture's kernel: one thread per output, dot product from global memory",
                Some(&MATMUL), Some(|dt| matmul_cuda::symbols("v1_naive", dt)), 80, &[],
                matmul_cuda::run_v1),
            gemm($op, "v2_smem", Tier::Cuda, DeviceKind::Cuda, ALL_DTYPES,
                "shared-memory tiles: each input element loaded once per tile, reused by a tile row/column",
                Some(&MATMUL), Some(|dt| matmul_cuda::symbols("v2_smem", dt)), 80, &[],
                matmul_cuda::run_v2),
            gemm($op, "v3_regs", Tier::Cuda, DeviceKind::Cuda, ALL_DTYPES,
                "2-D register blocking (a micro-tile per thread), 16-byte loads, row-major tile order",
                Some(&MATMUL), Some(|dt| matmul_cuda::symbols("v3_regs", dt)), 80, &[],
                matmul_auto::run_v3),
            gemm($op, "v4_grouped", Tier::Cuda, DeviceKind::Cuda, ALL_DTYPES,
                "v3 with the grouped (L2-friendly) tile order, GROUP_M tile rows per group",
                Some(&MATMUL), Some(|dt| matmul_cuda::symbols("v4_grouped", dt)), 80, &[],
                matmul_auto::run_v4),
            gemm($op, "v5_mma", Tier::Cuda, DeviceKind::Cuda, HALF_DTYPES,
                "tensor cores: mma.sync m16n8k16, ldmatrix, a cp.async multi-stage pipeline (sm_80+)",
                Some(&MATMUL), Some(|dt| matmul_cuda::symbols("v5_mma", dt)), 80,
                &["mma.sync", "ldmatrix", "cp.async"], matmul_auto::run_v5),
            gemm($op, "v6_wgmma", Tier::Cuda, DeviceKind::Cuda, HALF_DTYPES,
                "Hopper: wgmma fed by TMA into swizzled shared memory, mbarrier pipeline, warp-specialised (sm_90a)",
                Some(&MATMUL_SM90), Some(matmul_sm90::symbols), 90,
                &["wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier"], matmul_auto::run_v6),
            gemm($op, "v7_wgmma_tma_store", Tier::Cuda, DeviceKind::Cuda, HALF_DTYPES,
                "v6 with an asynchronous epilogue: the tile goes through shared memory and leaves by TMA store while the next tile computes (sm_90a)",
                Some(&MATMUL_SM90), Some(matmul_sm90::symbols_v7), 90,
                &["wgmma.mma_async", "cp.async.bulk.tensor", "cp.async.bulk.commit_group"], matmul_auto::run_v7),
            Variant {
                picks: Some(|p, x| matmul_auto::label_inputs($op, p, x)),
                ..gemm($op, "auto", Tier::Cuda, DeviceKind::Cuda, ALL_DTYPES,
                "the autotuned (version, configuration) for the device, dtype and shape bucket, else v6 on sm_90 / v5 / v4 (f32)",
                Some(&MATMUL), Some(matmul_auto_symbols), 80, &[], matmul_auto::run_auto)
            },
            gemm($op, "cublaslt", Tier::Vendor, DeviceKind::Cuda, ALL_DTYPES,
                "cuBLASLt matmul with its fused epilogue (bias, GELU), heuristic algorithm cached",
                None, None, 80, &[], matmul_vendor::run_cublaslt),
            gemm($op, "faer", Tier::Cpu, DeviceKind::Cpu, ALL_DTYPES,
                "faer's f32 matmul (rayon, cache-blocked SIMD), then the epilogue in one pass",
                None, None, 80, &[], matmul::run_cpu_faer),
        ]
    };
}

static GEMM_MATMUL: [Variant; 11] = gemm_rows!(Op::Matmul);
static GEMM_LINEAR: [Variant; 11] = gemm_rows!(Op::Linear);

/// Rows only one GEMM op has: cuBLAS (no epilogue) for matmul; the manual composition for
/// linear.
static GEMM_EXTRA: &[Variant] = &[
    gemm(
        Op::Matmul,
        "cublas",
        Tier::Vendor,
        DeviceKind::Cuda,
        ALL_DTYPES,
        "cuBLAS: exact-f32 sgemm, bf16/f16 GemmEx with f32 accumulation",
        None,
        None,
        80,
        &[],
        matmul_vendor::run_cublas,
    ),
    gemm(
        Op::Linear,
        "manual",
        Tier::Manual,
        DeviceKind::Cpu,
        ALL_DTYPES,
        "eager composition: faer product, then the bias add, then the manual GeLU, one pass each",
        None,
        None,
        80,
        &[],
        matmul::run_manual_cpu,
    ),
    gemm(
        Op::Linear,
        "manual",
        Tier::Manual,
        DeviceKind::Cuda,
        ALL_DTYPES,
        "eager composition: cuBLAS product, bias-add kernel, then the manual GeLU's launches",
        Some(&ELEMENTWISE),
        Some(matmul::manual_symbols),
        80,
        &[],
        matmul::run_manual_cuda,
    ),
];

/// Every registered variant, GEMMs included, in the registry's order.
pub fn all() -> impl Iterator<Item = &'static Variant> {
    VARIANTS
        .iter()
        .chain(GEMM_MATMUL.iter())
        .chain(GEMM_EXTRA.iter().filter(|v| v.op == Op::Matmul))
        .chain(
            GEMM_EXTRA
                .iter()
                .filter(|v| v.op == Op::Linear && v.tier == Tier::Manual),
        )
        .chain(GEMM_LINEAR.iter())
}

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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_reference),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_manual_cpu),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_manual_cuda),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_v1_naive),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_v2_vec16),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_v3_vec16_ilp),
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
        ptx_claims: &[],
        run: Kernel::Unary(gelu::run_cpu_fused),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_reference),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_manual_cpu),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_manual_cuda),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_v1_block_row),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_v2_warp_row),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_v3_block_regs),
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
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_v4_online),
    },
    Variant {
        op: Op::Softmax,
        name: "v6_split",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "a row split across co-resident CTAs (cooperative launch): the row in their registers, (max, sum) exchanged through global memory; one read, one write up to 4 Mi f32",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v6),
        vec16: true,
        min_arch: 80,
        picks: None,
        ptx_claims: &["st.relaxed.gpu.global.v2.u64", "ld.relaxed.gpu.global.v2.u64"],
        run: Kernel::Unary(softmax::run_v6_split),
    },
    Variant {
        op: Op::Softmax,
        name: "v8_onchip",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "a row per CTA in registers and shared memory (cp.async), up to ~350 KB a CTA; wider rows in a cluster of 2–16 such CTAs merging (max, sum) through DSMEM (sm_90)",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v8),
        vec16: true,
        min_arch: 80,
        picks: None,
        ptx_claims: &["cp.async.cg.shared.global"],
        run: Kernel::Unary(softmax::run_v8_onchip),
    },
    Variant {
        op: Op::Softmax,
        name: "v9_gridsync",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "v8's on-chip row parts (registers and cp.async shared memory) split across co-resident CTAs (cooperative launch), (max, sum) exchanged through global memory as v6; one read, one write up to ~45 MB rows",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v9),
        vec16: true,
        min_arch: 80,
        picks: None,
        ptx_claims: &["cp.async.cg.shared.global", "st.relaxed.gpu.global.v2.u64"],
        run: Kernel::Unary(softmax::run_v9_gridsync),
    },
    Variant {
        op: Op::Softmax,
        name: "v11_deal",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "rows cut into 16 KB chunks dealt on demand to one CTA an SM (an SM that streams faster takes more), each read once into shared memory by a TMA bulk copy, reduced and published, and written once its row is done (sm_90)",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_v11),
        vec16: true,
        min_arch: 90,
        picks: None,
        ptx_claims: &[
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity",
            "st.relaxed.gpu.global.v2.u64",
            "atom.global.add.u32",
        ],
        run: Kernel::Unary(softmax::run_v11_deal),
    },
    Variant {
        op: Op::Softmax,
        name: "auto",
        tier: Tier::Cuda,
        device: DeviceKind::Cuda,
        dtypes: ALL_DTYPES,
        summary: "the autotuned choice for the device, dtype and shape bucket, else the width dispatch: v2 narrow, v3 medium; odd and wide: v8 (sm_90, ≤ 8 CTAs a row), v11 (sm_90, rows of whole packs to 8 MB, chunks dealt on demand), v9 (sm_90, split rows on chip), v6 (split rows), v4",
        strided_rows: true,
        source: Some(&SOFTMAX),
        symbols: Some(softmax::symbols_auto),
        vec16: true,
        min_arch: 90,
        picks: Some(|_, x| softmax::auto_label(x[0])),
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_auto),
    },
    Variant {
        op: Op::Softmax,
        name: "fused",
        tier: Tier::Cpu,
        device: DeviceKind::Cpu,
        dtypes: ALL_DTYPES,
        summary: "rows in parallel (rayon), each row max / exp-sum / scale while in cache; rows past 512 Ki columns, or too few for the threads, split into 4096-column chunks that all cores share",
        strided_rows: true,
        source: None,
        symbols: None,
        vec16: false,
        min_arch: 80,
        picks: None,
        ptx_claims: &[],
        run: Kernel::Unary(softmax::run_cpu_fused),
    },
];

/// The variants of an op on a device (the reference included).
pub fn variants_for(op: Op, device: DeviceKind) -> impl Iterator<Item = &'static Variant> {
    all().filter(move |v| v.op == op && (v.device == device || v.tier == Tier::Reference))
}

/// Look a variant up by name for an op and device.
pub fn find(op: Op, name: &str, device: DeviceKind) -> Result<&'static Variant> {
    let name = name.trim();
    let name = name.strip_prefix(&format!("{op}/")).unwrap_or(name);
    if let Some(v) = variants_for(op, device).find(|v| v.name == name) {
        return Ok(v);
    }
    // A variant of the other device: say so, rather than that it does not exist.
    if let Some(v) = all().find(|v| v.op == op && v.name == name) {
        let (has, run) = match device {
            DeviceKind::Cpu => (
                "a CUDA variant",
                "this run is on the CPU (no CUDA GPU, or --device cpu)",
            ),
            DeviceKind::Cuda => (
                "a CPU variant",
                "this run is on a CUDA GPU (use --device cpu for it)",
            ),
        };
        return Err(Error::Invalid(format!(
            "{op}/{} is {has}; {run}. Variants here: {}",
            v.name,
            variants_for(op, device)
                .map(|v| v.name)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Err(Error::UnknownVariant {
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
    all()
        .find(|v| v.op == op && v.tier == Tier::Reference)
        .expect("every op registers a reference")
}
