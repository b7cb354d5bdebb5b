//! kernlab's error type: one enum with domain variants, so a user always reads what went
//! wrong in their own terms (which op, which dtype, which kernel), never a bare driver code.

use crate::runtime::dtype::DType;

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
