//! What an op is, said once: [`OpDef`], the descriptor every op module implements, and [`Op`],
//! the handle the tools pass around. The tools (bench, sweep, profile, inspect, autotune, the
//! CLI) ask an op's descriptor for its shapes, flags, inputs, reference, cost model, sweep,
//! variants and PyTorch cases; none of them matches on an op.

use super::variant::{Candidate, Variant};
use crate::runtime::device::{CudaDevice, DeviceKind};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use serde::{Serialize, Serializer};
use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

/// The lecture's tiers: ways to write one function (plus the f64 oracle and the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// f64 on the CPU: the oracle every test and bench run compares against.
    Reference,
    /// Composed from primitive kernels, one launch (or pass) per op, as eager PyTorch runs.
    Manual,
    /// Hand-written CUDA C, numbered versions.
    Cuda,
    /// The vendor's library (cuBLAS, cuBLASLt).
    Vendor,
    /// Fused, multi-threaded CPU loops.
    Cpu,
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tier::Reference => "reference",
            Tier::Manual => "manual",
            Tier::Cuda => "cuda",
            Tier::Vendor => "vendor",
            Tier::Cpu => "cpu",
        })
    }
}

/// How an op's shapes read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grammar {
    /// A tensor of any rank whose last dimension is a row (`ROWSxCOLS`, or `N` for one row):
    /// element-wise and row ops. Inputs may have strided rows (`--row-stride`).
    Rows,
    /// `M×N×K`: a GEMM `a[M,K] · w[N,K]ᵀ`.
    Gemm,
}

impl Grammar {
    /// Whether `shape` is one of this grammar's shapes (its rank).
    pub fn fits(self, shape: &[usize]) -> bool {
        match self {
            Grammar::Rows => !shape.is_empty(),
            Grammar::Gemm => shape.len() == 3,
        }
    }
    /// How a shape is written, for help and errors.
    pub fn spelling(self) -> &'static str {
        match self {
            Grammar::Rows => "ROWS×COLS (e.g. 4096x4096; the last dimension is the row)",
            Grammar::Gemm => "M×N×K (e.g. 8192x8192x8192: a[M,K] · w[N,K]ᵀ)",
        }
    }
}

/// How an output is judged against the f64 reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Element by element, relative to each element and its row's largest (see `check`).
    Elementwise,
    /// The relative L2 error of each output row: a GEMM's accumulation order moves single
    /// elements near zero far more than the row.
    RowsL2,
}

/// An op's default sweep, as the size lists `kernlab sweep` takes (`4096`, `256..12672:128`,
/// `2^20..2^28:x2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepDefault {
    /// `--rows R --cols C`: rows of a growing width.
    Rows {
        rows: &'static str,
        cols: &'static str,
    },
    /// `--numel N`: 1-D inputs of a growing length.
    Numel(&'static str),
    /// `--square S`: M = N = K.
    Square(&'static str),
}

/// One command-line flag an op takes (`--gelu erf`, `--log-softmax`), declared by the op and
/// added to every command that runs ops.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// The flag without its dashes: `gelu` is `--gelu`.
    pub name: &'static str,
    pub help: &'static str,
    pub kind: FlagKind,
}

#[derive(Debug, Clone, Copy)]
pub enum FlagKind {
    /// Present or not.
    Switch,
    /// Takes a value; `values` lists the accepted ones where they are a closed set.
    Value {
        value_name: &'static str,
        default: &'static str,
        values: Option<&'static [&'static str]>,
    },
}

/// The op flags a command line gave (only those given; the op supplies its defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlagValues {
    given: Vec<(String, String)>,
}

impl FlagValues {
    /// Record flag `name` as given with `value` (`"true"` for a switch).
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.given.retain(|(n, _)| n != name);
        self.given.push((name.to_string(), value.into()));
    }
    /// The value given for `name`, if it was given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.given
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
    /// Whether switch `name` was given.
    pub fn switch(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
    /// The names of the flags given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.given.iter().map(|(n, _)| n.as_str())
    }
    /// Only the flags among `names`.
    pub fn only(&self, names: &[&str]) -> FlagValues {
        FlagValues {
            given: self
                .given
                .iter()
                .filter(|(n, _)| names.contains(&n.as_str()))
                .cloned()
                .collect(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }
}

/// An op's parameters that are not tensors, as the op types them (`GeluApprox`, softmax's
/// `log`, linear's activation, rmsnorm's `eps`).
pub trait OpParams: fmt::Debug + Serialize + PartialEq + Send + Sync + 'static {
    /// What the op computes beyond its name, for titles: `tanh`, `log_softmax`,
    /// `bias + gelu-tanh`; `None` where the name says it all.
    fn form(&self) -> Option<String> {
        None
    }
    /// The CSV's `form` column: [`OpParams::form`], or what the op computes by default.
    fn form_column(&self) -> String {
        self.form().unwrap_or_default()
    }
}

/// [`OpParams`] behind a pointer, for code that does not know the op.
trait ErasedParams: fmt::Debug + Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn form(&self) -> Option<String>;
    fn form_column(&self) -> String;
    fn to_json(&self) -> serde_json::Value;
    fn same(&self, other: &dyn ErasedParams) -> bool;
}

impl<P: OpParams> ErasedParams for P {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn form(&self) -> Option<String> {
        OpParams::form(self)
    }
    fn form_column(&self) -> String {
        OpParams::form_column(self)
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    fn same(&self, other: &dyn ErasedParams) -> bool {
        other.as_any().downcast_ref::<P>() == Some(self)
    }
}

/// One op's parameters, typed by the op and carried through the tools unopened.
#[derive(Clone)]
pub struct Params(Arc<dyn ErasedParams>);

impl Params {
    pub fn new<P: OpParams>(p: P) -> Params {
        Params(Arc::new(p))
    }
    /// The parameters as the op's own type; an error (a bug: another op's parameters) where
    /// they are not.
    pub fn get<P: OpParams>(&self) -> Result<&P> {
        self.0.as_any().downcast_ref::<P>().ok_or_else(|| {
            Error::Invalid(format!(
                "parameters {:?} are not {}: another op's",
                self.0,
                std::any::type_name::<P>()
            ))
        })
    }
    /// See [`OpParams::form`].
    pub fn form(&self) -> Option<String> {
        self.0.form()
    }
    /// See [`OpParams::form_column`].
    pub fn form_column(&self) -> String {
        self.0.form_column()
    }
    /// ` (form)` for a title, or nothing.
    pub fn form_suffix(&self) -> String {
        self.form().map(|f| format!(" ({f})")).unwrap_or_default()
    }
}

impl fmt::Debug for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for Params {
    fn eq(&self, other: &Params) -> bool {
        self.0.same(&*other.0)
    }
}

impl Serialize for Params {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.to_json().serialize(s)
    }
}

/// Parameters of an op that takes none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct NoParams;
impl OpParams for NoParams {}

/// The PyTorch baselines' side of an op (`baselines/`): its name there and the arguments its
/// parameters add.
#[derive(Debug, Clone, Copy)]
pub struct TorchCases {
    /// `--op` for the baselines' command line.
    pub op: &'static str,
    /// The arguments that carry `params` (`--gelu erf`), or why the baselines cannot run
    /// these parameters.
    pub args: fn(&Params) -> std::result::Result<Vec<String>, String>,
}

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
    fn input_shapes(&self, shape: &[usize]) -> Vec<Vec<usize>>;
    /// The inputs every variant is validated and timed on, on the host: fresh random values
    /// from `seed`, never zeros; rows `row_stride` apart where given.
    fn inputs(
        &self,
        shape: &[usize],
        dtype: DType,
        seed: u64,
        row_stride: Option<usize>,
    ) -> Result<Vec<Tensor>>;
    /// The output's shape for the point `shape`.
    fn out_shape(&self, shape: &[usize]) -> Vec<usize>;
    /// The output's shape for a call on `inputs` (already checked).
    fn call_out_shape(&self, inputs: &[&Tensor]) -> Vec<usize> {
        inputs[0].shape().to_vec()
    }

    /// The blocks an output is judged in (elements, and what to call them in reports): the
    /// output's rows by default.
    fn check_block(&self, out_shape: &[usize]) -> (usize, &'static str) {
        (out_shape.last().copied().unwrap_or(1).max(1), "rows")
    }
    /// How many output blocks the reference covers: every one of an output up to
    /// `full_elems` elements, else at least 16 (as many as `full_elems` elements hold).
    fn reference_block_count(&self, shape: &[usize], full_elems: usize) -> usize {
        let out = self.out_shape(shape);
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
    ) -> Option<Vec<usize>> {
        let out = self.out_shape(shape);
        let (width, _) = self.check_block(&out);
        let blocks = out.iter().product::<usize>().div_ceil(width);
        let want = self.reference_block_count(shape, full_elems);
        (want < blocks).then(|| super::sample_rows(blocks, want, seed))
    }
    /// The input elements the reference reads in f64 to make `blocks` output blocks (for the
    /// host-memory estimate): by default the same blocks of the first input.
    fn reference_input_elems(&self, shape: &[usize], blocks: usize) -> usize {
        let (width, _) = self.check_block(&self.out_shape(shape));
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
    /// The largest error (kernlab's measure, see `check`) a correct output may show.
    fn tolerance(&self, dtype: DType) -> f64 {
        dtype.tolerance()
    }

    /// Minimum bytes a call must move: each input read once, each output written once.
    fn min_bytes(&self, shape: &[usize], dtype: DType) -> usize;
    /// FLOPs of one call, as the usual formula counts them.
    fn flops(&self, shape: &[usize]) -> f64;

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
