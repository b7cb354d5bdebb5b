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

    #[error(
        "{what} needs {:.1} GiB of host memory to build; {:.1} GiB is available, and a tenth of \
         it is kept free",
        *requested as f64 / (1u64 << 30) as f64,
        *available as f64 / (1u64 << 30) as f64
    )]
    OutOfHostMemory {
        requested: usize,
        available: usize,
        what: String,
    },

    #[error("CUDA driver error in {call}: {err}")]
    Driver { call: String, err: String },

    /// A kernel faulted on the device (an illegal or misaligned address, a trap): one of CUDA's
    /// sticky errors, after which the process's context runs nothing more.
    #[error(
        "{during} faulted on the GPU: {err} (reported by {call}). A fault like this is sticky: \
         the CUDA context is lost and this process can run nothing more on the GPU. \
         tools/sanitize.sh runs compute-sanitizer, which names the access"
    )]
    DeviceFault {
        /// What was running: `op/variant` where the caller knows it, else "a kernel".
        during: String,
        call: String,
        err: String,
    },

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

    /// A tier whose tools this machine lacks (Python, Triton, nvcc): its variants refuse.
    #[error("{what} is not available here: {why}")]
    Unavailable { what: String, why: String },

    #[error("{0}")]
    Invalid(String),

    /// A collective or a point-to-point transfer that failed on one rank of a group.
    #[error("{backend} rank {rank}, {what}: {why}")]
    Comm {
        backend: &'static str,
        rank: usize,
        what: String,
        why: String,
    },

    #[error("I/O error on {path}: {err}")]
    Io { path: String, err: std::io::Error },
}

/// A device fault's culprit before the caller names it.
pub const UNNAMED_FAULT: &str = "a kernel";

/// CUDA's sticky errors: a kernel faulted, the context is lost, and every later call returns
/// the same error.
const STICKY_ERRORS: [&str; 9] = [
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
];

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A failed driver call; one that returns a sticky error (a kernel faulted earlier) is a
    /// [`Error::DeviceFault`], whichever call met it.
    pub fn driver(call: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        let err = format!("{err:?}");
        if STICKY_ERRORS.iter().any(|name| err.contains(name)) {
            return Error::DeviceFault {
                during: UNNAMED_FAULT.into(),
                call: call.into(),
                err,
            };
        }
        Error::Driver {
            call: call.into(),
            err,
        }
    }
    /// A device fault's culprit, where it is not named yet (other errors pass unchanged).
    pub fn during(self, what: impl Into<String>) -> Self {
        match self {
            Error::DeviceFault { during, call, err } if during == UNNAMED_FAULT => {
                Error::DeviceFault {
                    during: what.into(),
                    call,
                    err,
                }
            }
            e => e,
        }
    }

    /// Memory ran short (the device's, or the host's estimate): one point's problem, after
    /// which a run can go on with smaller ones.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            Error::OutOfDeviceMemory { .. } | Error::OutOfHostMemory { .. }
        )
    }

    /// A kernel faulted and the context is lost: nothing more can run on the device.
    pub fn is_device_fault(&self) -> bool {
        matches!(self, Error::DeviceFault { .. })
    }

    pub fn io(path: impl AsRef<std::path::Path>, err: std::io::Error) -> Self {
        Error::Io {
            path: path.as_ref().display().to_string(),
            err,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sticky_driver_error_is_a_device_fault_whichever_call_met_it() {
        let e = Error::driver(
            "cuMemAlloc",
            "DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \"x\")",
        );
        assert!(e.is_device_fault(), "{e}");
        let named = e.during("gelu/v1_naive");
        assert!(matches!(&named, Error::DeviceFault { during, .. } if during == "gelu/v1_naive"));
        // Named once: a later name does not replace the first.
        let again = named.during("softmax/v2_warp_row");
        assert!(matches!(&again, Error::DeviceFault { during, .. } if during == "gelu/v1_naive"));
        let other = Error::driver("cuMemAlloc", "DriverError(CUDA_ERROR_INVALID_VALUE, \"x\")");
        assert!(!other.is_device_fault(), "{other}");
    }
}
