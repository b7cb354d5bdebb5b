//! Variants: the rows of the registry, one per way an op is computed. Each op module lists its
//! own ([`super::OpDef::variants`]); `kernlab list` prints them all, and bench, inspect, the
//! tests and CI iterate over them, so a new variant is one row plus its kernel.

use super::op::{Op, Params, Tier};
use crate::runtime::device::DeviceKind;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::tensor::Tensor;
use serde::Serialize;

/// How a variant runs a checked call: parameters, inputs, output.
pub type RunFn = fn(&Params, &[&Tensor], &mut Tensor) -> Result<()>;
/// A dispatching variant's choice for these inputs (shown by bench as `picked`).
pub type PickFn = fn(&Params, &[&Tensor]) -> String;
/// Every kernel symbol a CUDA variant may launch for a dtype.
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
    /// CUDA only: the oldest architecture on which all its kernels do real work (80 = sm_80).
    /// CI checks its PTX for that architecture and newer.
    pub min_arch: u32,
    /// Dispatching variants (`auto`): which variant they run for an input, shown by bench.
    pub picks: Option<PickFn>,
    /// PTX instructions the variant claims (CI checks each appears in its kernels' PTX for
    /// `min_arch`), e.g. `mma.sync` for tensor-core versions.
    pub ptx_claims: &'static [&'static str],
    /// A call of one plain launch (x, y, then scalars) that `bench --torch` may replay in the
    /// baselines' process, timed there by the same do_bench as PyTorch's kernels.
    pub replayable: bool,
    pub run: RunFn,
}

/// A variant's row as `kernlab list --json` prints it.
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

/// Every dtype.
pub const ALL_DTYPES: &[DType] = &[DType::F32, DType::BF16, DType::F16];
/// The 16-bit dtypes (tensor-core versions).
pub const HALF_DTYPES: &[DType] = &[DType::BF16, DType::F16];

impl Variant {
    /// A row with the defaults: every dtype, contiguous inputs, no kernels of its own.
    pub const fn new(
        op: Op,
        name: &'static str,
        tier: Tier,
        device: DeviceKind,
        summary: &'static str,
        run: RunFn,
    ) -> Variant {
        Variant {
            op,
            name,
            tier,
            device,
            dtypes: ALL_DTYPES,
            summary,
            strided_rows: false,
            source: None,
            symbols: None,
            vec16: false,
            min_arch: 80,
            picks: None,
            ptx_claims: &[],
            replayable: false,
            run,
        }
    }
    /// The kernels it launches: their source and symbols.
    pub const fn kernels(self, source: &'static KernelSource, symbols: SymbolsFn) -> Variant {
        Variant {
            source: Some(source),
            symbols: Some(symbols),
            ..self
        }
    }
    pub const fn dtypes(self, dtypes: &'static [DType]) -> Variant {
        Variant { dtypes, ..self }
    }
    /// Takes inputs whose rows are strided.
    pub const fn strided(self) -> Variant {
        Variant {
            strided_rows: true,
            ..self
        }
    }
    /// Claims 16-byte loads.
    pub const fn vec16(self) -> Variant {
        Variant {
            vec16: true,
            ..self
        }
    }
    pub const fn min_arch(self, min_arch: u32) -> Variant {
        Variant { min_arch, ..self }
    }
    pub const fn claims(self, ptx_claims: &'static [&'static str]) -> Variant {
        Variant { ptx_claims, ..self }
    }
    pub const fn picks(self, f: PickFn) -> Variant {
        Variant {
            picks: Some(f),
            ..self
        }
    }
    pub const fn replayable(self) -> Variant {
        Variant {
            replayable: true,
            ..self
        }
    }

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

    /// Check the call (see [`super::OpDef::check_call`]) with a clear error, then run it.
    pub fn run(&self, p: &Params, inputs: &[&Tensor], y: &mut Tensor) -> Result<()> {
        self.op.check_call(self, p, inputs, y)?;
        (self.run)(p, inputs, y)
    }

    /// A tensor's dtype and device against what this variant takes.
    pub fn check_dtype_device(&self, t: &Tensor) -> Result<()> {
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

    /// The refusal of operand `t`'s layout.
    pub fn not_contiguous(&self, t: &Tensor, operand: &'static str) -> Error {
        Error::NotContiguous {
            op: self.op.to_string(),
            variant: self.name.to_string(),
            operand,
            shape: t.shape().to_vec(),
            strides: t.strides().to_vec(),
        }
    }
}

/// The default call check ([`super::OpDef::check_call`]): one input `x`, not empty; `y` a
/// contiguous tensor of x's shape and dtype on the same device; x contiguous, or with strided
/// rows where the variant takes them.
pub fn check_unary(v: &Variant, inputs: &[&Tensor], y: &Tensor) -> Result<()> {
    let [x] = inputs else {
        return Err(Error::Invalid(format!(
            "{} takes one input tensor, got {}",
            v.id(),
            inputs.len()
        )));
    };
    check_rows_operand(v, x, y)
}

/// [`check_unary`]'s checks of the row input `x` against the output `y`.
pub fn check_rows_operand(v: &Variant, x: &Tensor, y: &Tensor) -> Result<()> {
    let op = v.op.to_string();
    if x.numel() == 0 {
        return Err(Error::EmptyTensor {
            op,
            shape: x.shape().to_vec(),
        });
    }
    v.check_dtype_device(x)?;
    v.check_dtype_device(y)?;
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
        return Err(v.not_contiguous(y, "output"));
    }
    if !(x.is_contiguous() || (v.strided_rows && x.is_row_strided())) {
        return Err(v.not_contiguous(x, "input"));
    }
    Ok(())
}

/// Every registered variant, op by op in [`super::OPS`]'s order.
pub fn all() -> impl Iterator<Item = &'static Variant> {
    Op::all().iter().flat_map(|op| op.variants().iter())
}

/// The variants of an op on a device (the reference included).
pub fn variants_for(op: Op, device: DeviceKind) -> impl Iterator<Item = &'static Variant> {
    op.variants()
        .iter()
        .filter(move |v| v.device == device || v.tier == Tier::Reference)
}

/// Look a variant up by name (`v2_vec16` or `gelu/v2_vec16`) for an op and device.
pub fn find(op: Op, name: &str, device: DeviceKind) -> Result<&'static Variant> {
    let name = name.trim();
    let name = name.strip_prefix(&format!("{op}/")).unwrap_or(name);
    if let Some(v) = variants_for(op, device).find(|v| v.name == name) {
        return Ok(v);
    }
    let here = || {
        variants_for(op, device)
            .map(|v| v.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    // A variant of the other device: say so, rather than that it does not exist.
    if let Some(v) = op.variants().iter().find(|v| v.name == name) {
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
            here()
        )));
    }
    Err(Error::UnknownVariant {
        op: op.to_string(),
        variant: name.to_string(),
        known: here(),
    })
}

/// The reference variant of an op.
pub fn reference(op: Op) -> &'static Variant {
    op.variants()
        .iter()
        .find(|v| v.tier == Tier::Reference)
        .expect("every op registers a reference")
}

/// Every CUDA source some variant launches from, once each (for CI's compile-everything
/// check and `kernlab inspect`).
pub fn kernel_sources() -> Vec<&'static KernelSource> {
    let mut out: Vec<&'static KernelSource> = Vec::new();
    for s in all().filter_map(|v| v.source) {
        if !out.iter().any(|o| o.file == s.file) {
            out.push(s);
        }
    }
    out
}

/// How a tuning candidate runs: params, inputs, output.
pub type CandidateFn = Box<dyn Fn(&Params, &[&Tensor], &mut Tensor) -> Result<()>>;

/// One candidate `kernlab autotune` measures: a variant in one configuration, and how to run
/// it. The configuration's name is what the tuning cache keeps.
pub struct Candidate {
    pub variant: &'static str,
    pub config: String,
    pub run: CandidateFn,
}
