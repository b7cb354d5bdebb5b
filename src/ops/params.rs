//! The plain facts an op descriptor is made of: the tiers, shape grammars, comparisons, default
//! sweeps, command-line flags, the type-erased parameters ([`Params`]) each op defines its own
//! of, and the PyTorch baselines' cases.

use crate::runtime::error::{Error, Result};
use serde::{Serialize, Serializer};
use std::any::Any;
use std::fmt;
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
