//! kernlab's error type: one enum with domain variants, so a user always reads what went
//! wrong in their own terms (which op, which dtype, which kernel), never a bare driver code.

use crate::dtype::DType;

/// Every failure kernlab's library can report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bad shape {shape:?}: {why}")]
    BadShape { shape: String, why: String },

    /// Operands whose shapes or dtypes do not go together (`why` says which).
    #[error("operands of {op} do not match: {why}")]
    ShapeMismatch { op: String, why: String },

    #[error("empty tensor: {op} needs at least one element (shape {shape:?})")]
    EmptyTensor { op: String, shape: Vec<usize> },

    #[error("{op}/{variant} does not support dtype {dtype} (it supports: {supported})")]
    UnsupportedDtype {
        op: String,
        variant: String,
        dtype: DType,
        supported: String,
    },

    #[error(
        "{op}/{variant} needs a contiguous {operand} (got shape {shape:?}, strides {strides:?})"
    )]
    NotContiguous {
        op: String,
        variant: String,
        /// Which tensor: "input", "output", "operand a", "operand w", "bias".
        operand: &'static str,
        shape: Vec<usize>,
        strides: Vec<usize>,
    },

    #[error("{op}/{variant}: {why}")]
    UnsupportedShape {
        op: String,
        variant: String,
        why: String,
    },

    #[error("unknown op '{0}' (known: {1})")]
    UnknownOp(String, String),

    #[error("unknown variant '{variant}' for op {op} (known: {known})")]
    UnknownVariant {
        op: String,
        variant: String,
        known: String,
    },

    #[error("{op}/{variant} runs on {wants}, but the tensors are on {got}")]
    WrongDevice {
        op: String,
        variant: String,
        wants: String,
        got: String,
    },

    #[error("no CUDA device: {0}")]
    NoCuda(String),

    #[error("CUDA library {lib} could not be loaded ({why})")]
    MissingLibrary { lib: &'static str, why: String },

    #[error(
        "out of device memory: asked for {requested} bytes with {free} of {total} free ({what})"
    )]
    OutOfDeviceMemory {
        requested: usize,
        free: usize,
        total: usize,
        what: String,
    },

    #[error("CUDA driver error in {call}: {err}")]
    Driver { call: String, err: String },

    #[error("launching kernel {kernel} failed: {err}")]
    Launch { kernel: String, err: String },

    #[error("NVRTC could not compile {file} (kernel {kernel}, options {options}):\n{log}")]
    Compile {
        file: String,
        kernel: String,
        options: String,
        log: String,
    },

    #[error("NVRTC error in {call}: {err}")]
    Nvrtc { call: String, err: String },

    #[error("kernel {kernel} is not in the compiled module of {file}")]
    MissingSymbol { file: String, kernel: String },

    #[error("validation failed for {op}/{variant}: {why}")]
    Validation {
        op: String,
        variant: String,
        why: String,
    },

    #[error("{0}")]
    Invalid(String),

    #[error("I/O error on {path}: {err}")]
    Io { path: String, err: std::io::Error },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn driver(call: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        Error::Driver {
            call: call.into(),
            err: format!("{err:?}"),
        }
    }
    pub fn io(path: impl AsRef<std::path::Path>, err: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            err,
        }
    }
}

/// An experiment knob read from one environment variable, as one of a few named choices
/// ([`knob_choice`]): `KERNLAB_FLUSH`, `KERNLAB_STREAM`, `KERNLAB_ALLOC`.
pub trait Knob: Copy + 'static {
    /// The environment variable.
    const VAR: &'static str;
    /// (name, value) pairs; the first is the default (unset or empty).
    const CHOICES: &'static [(&'static str, Self)];

    /// `spec` among [`Knob::CHOICES`]; anything else an error naming the choices.
    fn parse(spec: &str) -> Result<Self> {
        knob_choice(Self::VAR, spec, Self::CHOICES)
    }

    /// The knob's value from [`Knob::VAR`] (unset or empty: the default).
    fn from_env() -> Result<Self> {
        Self::parse(&std::env::var(Self::VAR).unwrap_or_default())
    }
}

/// An experiment knob's value: `spec` (from environment variable `var`, trimmed) among
/// `choices` (name, value), the first also for an empty value; anything else an error that
/// names the variable, the value and the choices.
pub fn knob_choice<T: Copy>(var: &str, spec: &str, choices: &[(&str, T)]) -> Result<T> {
    let spec = spec.trim();
    if spec.is_empty() {
        return Ok(choices[0].1);
    }
    if let Some((_, v)) = choices.iter().find(|(name, _)| *name == spec) {
        return Ok(*v);
    }
    let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
    Err(Error::Invalid(format!(
        "{var}={spec}: expected {} (the default) or {}",
        names[0],
        names[1..].join(" or ")
    )))
}
