//! What an op is, said once: [`OpDef`], the descriptor every op module implements, [`Op`],
//! the handle the tools pass around, and [`Variant`], one row of an op's registry (each op
//! module lists its own; `kernlab list` prints them all). The tools (bench, sweep, profile,
//! inspect, autotune, the CLI) ask an op's descriptor for its shapes, flags, inputs,
//! reference, cost model, sweep, variants and PyTorch cases; none of them matches on an op.

use super::params::{Compare, Flag, FlagValues, Grammar, Params, SweepDefault, Tier, TorchCases};
use crate::compiler::{Expr, Graph};
use crate::runtime::device::triton::TritonSpec;
use crate::runtime::device::{CudaDevice, DeviceKind};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::tensor::Tensor;
use serde::{Serialize, Serializer};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

/// Every candidate (a variant in one configuration) for a dtype on a GPU, only the variants
/// named where `only` is given.
pub type CandidatesFn =
    fn(dev: &Arc<CudaDevice>, dtype: DType, only: Option<&[String]>) -> Result<Vec<Candidate>>;

/// What `kernlab autotune` searches for an op.
pub struct Tuning {
    /// The dtype tuned when none is named.
    pub default_dtype: DType,
    /// A few words on what is searched, for `--help` and errors.
    pub what: &'static str,
    /// The variants it compares (each in its configurations), as the registry names them;
    /// `autotune --help` lists them.
    pub versions: &'static [&'static str],
    pub candidates: CandidatesFn,
}

/// An op's descriptor: everything the tools need to know about it, in one place. Every op
/// module defines one and registers it in [`super::OPS`].
pub trait OpDef: Send + Sync + 'static {
    /// The name the CLI and the tables use.
    fn name(&self) -> &'static str;
    /// Other names the CLI takes for it.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// What it computes, in one line.
    fn about(&self) -> &'static str;
    fn grammar(&self) -> Grammar;
    /// The shape `bench` runs when none is given: the lecture's sizes on a GPU; on the CPU,
    /// sizes that keep a whole `kernlab bench` under a minute on two cores.
    fn default_shape(&self, device: DeviceKind) -> Vec<usize>;
    /// The sweep `kernlab sweep` runs when no sizes are given.
    fn default_sweep(&self, device: DeviceKind) -> SweepDefault;

    /// The flags it takes (none by default).
    fn flags(&self) -> &'static [Flag] {
        &[]
    }
    /// Its parameters from the flags given (defaults for the rest); a clear error for a value
    /// it does not take.
    fn params(&self, flags: &FlagValues) -> Result<Params>;
    /// Its default parameters.
    fn default_params(&self) -> Params {
        self.params(&FlagValues::default())
            .expect("every op's defaults are valid parameters")
    }

    /// Check a shape before any work: the grammar, the row stride's fit. The host memory a
    /// point needs is checked by the caller.
    fn check_shape(&self, shape: &[usize], row_stride: Option<usize>) -> Result<()>;
    /// The shapes of the input tensors for `shape`, in order (for memory estimates).
    fn input_shapes(&self, shape: &[usize], p: &Params) -> Vec<Vec<usize>>;
    /// The inputs every variant is validated and timed on, on the host: fresh random values
    /// from `seed`, never zeros; rows `row_stride` apart where given.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        row_stride: Option<usize>,
        p: &Params,
    ) -> Result<Vec<Tensor>>;
    /// The output's shape for the point `shape`.
    fn out_shape(&self, shape: &[usize], p: &Params) -> Vec<usize>;
    /// The output's shape for a call on `inputs` (already checked).
    fn call_out_shape(&self, inputs: &[&Tensor], _p: &Params) -> Vec<usize> {
        inputs[0].shape().to_vec()
    }

    /// The blocks an output is judged in (elements, and what to call them in reports): the
    /// output's rows by default.
    fn check_block(&self, out_shape: &[usize]) -> (usize, &'static str) {
        (out_shape.last().copied().unwrap_or(1).max(1), "rows")
    }
    /// The least scale an element-wise output's block is judged against (see
    /// `check::compare_scaled`): 0 by default, the block's own largest |value| alone.
    fn min_check_scale(&self) -> f64 {
        0.0
    }
    /// How many output blocks the reference covers: every one of an output up to
    /// `full_elems` elements, else at least 16 (as many as `full_elems` elements hold).
    fn reference_block_count(&self, shape: &[usize], full_elems: usize, p: &Params) -> usize {
        let out = self.out_shape(shape, p);
        let numel: usize = out.iter().product();
        let (width, _) = self.check_block(&out);
        let blocks = numel.div_ceil(width);
        if numel > full_elems {
            blocks.min((full_elems / width).max(16))
        } else {
            blocks
        }
    }
    /// Which output blocks the reference covers where it cannot cover all (`None`: all): a
    /// seeded sample of [`OpDef::reference_block_count`] blocks, the first and last among them.
    fn reference_blocks(
        &self,
        shape: &[usize],
        seed: u64,
        full_elems: usize,
        p: &Params,
    ) -> Option<Vec<usize>> {
        let out = self.out_shape(shape, p);
        let (width, _) = self.check_block(&out);
        let blocks = out.iter().product::<usize>().div_ceil(width);
        let want = self.reference_block_count(shape, full_elems, p);
        (want < blocks).then(|| super::sample_rows(blocks, want, seed))
    }
    /// The input elements the reference reads in f64 to make `blocks` output blocks (for the
    /// host-memory estimate): by default the same blocks of the first input.
    fn reference_input_elems(&self, shape: &[usize], blocks: usize, p: &Params) -> usize {
        let (width, _) = self.check_block(&self.out_shape(shape, p));
        blocks.saturating_mul(width)
    }
    /// The f64 oracle: the output's values in `blocks` (all of them where `None`), in order,
    /// from the host `inputs` (the values rounded to the dtype are the oracle's inputs).
    fn reference(
        &self,
        inputs: &[Tensor],
        blocks: Option<&[usize]>,
        p: &Params,
    ) -> Result<Vec<f64>>;
    fn compare(&self) -> Compare {
        Compare::Elementwise
    }
    /// The group output row `row` is judged in ([`Compare::GroupsL2`]): by default each row is
    /// its own.
    fn check_group(&self, _out_shape: &[usize], _p: &Params, row: usize) -> usize {
        row
    }
    /// The largest error (kernlab's measure, see `check`) a correct output may show.
    fn tolerance(&self, dtype: DType, _p: &Params) -> f64 {
        dtype.tolerance()
    }

    /// Minimum bytes a call must move: each input read once, each output written once.
    fn min_bytes(&self, shape: &[usize], dtype: DType, p: &Params) -> usize;
    /// FLOPs of one call, as the usual formula counts them.
    fn flops(&self, shape: &[usize], p: &Params) -> f64;

    /// Whether its rates are FLOP rates (TFLOP/s against the matmul ceiling, as GEMMs), not
    /// bytes moved against the copy ceiling.
    fn flops_bound(&self) -> bool {
        self.grammar() == Grammar::Gemm
    }

    /// Whether bench's table shows each variant's peak device memory (a model's activations
    /// and gradients are part of its story; a kernel's memory is its inputs and output).
    fn shows_peak_memory(&self) -> bool {
        false
    }

    /// Every variant, reference included, in the lecture's order of tiers and versions.
    fn variants(&self) -> &'static [Variant];
    /// Check a call's operands (count, shapes, dtypes, device, layout) with a clear error,
    /// before a variant runs. By default: one input `x` and an output `y` of its shape and
    /// dtype (see [`super::check_unary`]).
    fn check_call(&self, v: &Variant, _p: &Params, inputs: &[&Tensor], y: &Tensor) -> Result<()> {
        super::check_unary(v, inputs, y)
    }
    /// The variant whose time every record's `% of vendor` is against (GEMMs: cuBLAS).
    fn vendor_variant(&self) -> Option<&'static str> {
        None
    }
    /// The op written as an expression graph (the compiler's input), for ops that have one.
    fn graph<'g>(&self, _g: &'g Graph, _p: &Params) -> Option<Result<Expr<'g>>> {
        None
    }
    /// Its cases in the PyTorch baselines, where they have it.
    fn torch(&self) -> Option<TorchCases> {
        None
    }
    /// What `kernlab autotune` searches, where there is anything to tune.
    fn tuning(&self) -> Option<Tuning> {
        None
    }
    /// The shape bucket a tuned choice covers: each size rounded up to a power of two.
    fn bucket(&self, shape: &[usize]) -> String {
        let p2 = |n: usize| n.max(1).next_power_of_two();
        match (self.grammar(), shape) {
            (Grammar::Gemm, &[m, n, k]) => format!("m≤{} n≤{} k≤{}", p2(m), p2(n), p2(k)),
            _ => {
                let cols = *shape.last().unwrap_or(&1);
                let rows: usize = shape[..shape.len().saturating_sub(1)].iter().product();
                format!("rows≤{} cols≤{}", p2(rows), p2(cols))
            }
        }
    }
    /// Whether kernel `symbol` computes these parameters' form (`kernlab inspect` shows only
    /// those: GeLU's tanh kernels, not its erf ones).
    fn kernel_in_form(&self, _symbol: &str, _p: &Params) -> bool {
        true
    }
}

/// An op: a handle on its descriptor. Equal, hashed and ordered by its place in
/// [`super::OPS`].
#[derive(Clone, Copy)]
pub struct Op(pub &'static dyn OpDef);

impl Op {
    pub fn name(self) -> &'static str {
        self.0.name()
    }
    /// Every op, in the lecture's order.
    pub fn all() -> &'static [Op] {
        super::OPS
    }
    fn index(self) -> usize {
        super::OPS
            .iter()
            .position(|o| o.name() == self.name())
            .unwrap_or(usize::MAX)
    }
    /// The op's descriptor.
    pub fn def(self) -> &'static dyn OpDef {
        self.0
    }
    /// The autotune cache's entry for this op's `variant` at `x`'s device, dtype and shape
    /// bucket (none off CUDA).
    pub fn tuned(self, variant: &str, x: &Tensor) -> Option<crate::runtime::tuning::Entry> {
        crate::runtime::tuning::lookup(
            x.device().cuda()?,
            self.name(),
            variant,
            x.dtype(),
            &self.bucket(x.shape()),
        )
    }
}

impl std::ops::Deref for Op {
    type Target = dyn OpDef;
    fn deref(&self) -> &Self::Target {
        self.0
    }
}

impl PartialEq for Op {
    fn eq(&self, other: &Op) -> bool {
        self.name() == other.name()
    }
}
impl Eq for Op {}
impl Hash for Op {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.name().hash(h)
    }
}
impl PartialOrd for Op {
    fn partial_cmp(&self, other: &Op) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Op {
    fn cmp(&self, other: &Op) -> std::cmp::Ordering {
        self.index().cmp(&other.index())
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Op {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl FromStr for Op {
    type Err = Error;
    fn from_str(s: &str) -> Result<Op> {
        let s = s.trim().to_ascii_lowercase();
        Op::all()
            .iter()
            .find(|o| o.name() == s || o.aliases().contains(&s.as_str()))
            .copied()
            .ok_or_else(|| {
                Error::UnknownOp(
                    s.clone(),
                    Op::all()
                        .iter()
                        .map(|o| o.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            })
    }
}

/// How a variant runs a checked call: parameters, inputs, output.
pub type RunFn = fn(&Params, &[&Tensor], &mut Tensor) -> Result<()>;
/// A dispatching variant's choice for these inputs (shown by bench as `picked`).
pub type PickFn = fn(&Params, &[&Tensor]) -> String;
/// Every kernel symbol a CUDA variant may launch for a dtype.
pub type SymbolsFn = fn(DType) -> Vec<String>;
/// A variant's generated kernels for parameters and a dtype (from the op's graph): each
/// source and the symbols in it it may launch.
pub type GeneratedFn = fn(&Params, DType) -> Result<Vec<(&'static KernelSource, Vec<String>)>>;

/// A Triton variant's kernels for parameters, a dtype and a shape: the specs a call compiles.
pub type TritonFn = fn(&Params, DType, &[usize]) -> Result<Vec<TritonSpec>>;

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
    /// CUDA only: a second source it launches kernels of, and those symbols per dtype (the
    /// MLP's tiers: their own kernels, and the GEMM layouts their backward runs).
    pub also: Option<(&'static KernelSource, SymbolsFn)>,
    /// Compiled variants: the kernel kernlab's compiler generates (in place of a source).
    pub generated: Option<GeneratedFn>,
    /// Triton variants: the kernels (`kernels/triton/`) a call compiles.
    pub triton: Option<TritonFn>,
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
            also: None,
            generated: None,
            triton: None,
            vec16: false,
            min_arch: 80,
            picks: None,
            ptx_claims: &[],
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
    /// It also launches kernels of a second source: those symbols.
    pub const fn also_kernels(self, source: &'static KernelSource, symbols: SymbolsFn) -> Variant {
        Variant {
            also: Some((source, symbols)),
            ..self
        }
    }
    /// Its written kernels: each source and its symbols per dtype (the one of `kernels`, then
    /// the one of `also_kernels`).
    pub fn sources(&self) -> Vec<(&'static KernelSource, SymbolsFn)> {
        let own = match (self.source, self.symbols) {
            (Some(src), Some(symbols)) => Some((src, symbols)),
            _ => None,
        };
        own.into_iter().chain(self.also).collect()
    }
    /// Its kernel is generated by kernlab's compiler.
    pub const fn generated(self, f: GeneratedFn) -> Variant {
        Variant {
            generated: Some(f),
            ..self
        }
    }
    /// Its kernels are written in Triton.
    pub const fn triton(self, f: TritonFn) -> Variant {
        Variant {
            triton: Some(f),
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

    /// Whether it has CUDA kernels to inspect (written, generated, or Triton's).
    pub fn has_kernels(&self) -> bool {
        (self.source.is_some() && self.symbols.is_some())
            || self.generated.is_some()
            || self.triton.is_some()
    }

    /// Its kernels for a dtype and parameters: each source and the symbols in it that it may
    /// launch (none for a variant without kernels).
    pub fn kernels_for(
        &self,
        dtype: DType,
        p: &Params,
    ) -> Result<Vec<(&'static KernelSource, Vec<String>)>> {
        let mut out = Vec::new();
        for (src, symbols) in self.sources() {
            out.push((src, symbols(dtype)));
        }
        if let Some(g) = self.generated {
            out.extend(g(p, dtype)?);
        }
        Ok(out)
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
    for (s, _) in all().flat_map(|v| v.sources()) {
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
