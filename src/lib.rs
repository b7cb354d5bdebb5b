//! kernlab: a laboratory for GPU kernels — GeLU, softmax, matmul, linear and rmsnorm in every
//! tier of the CS336 kernels lecture, validated against an f64 reference, then timed against
//! ceilings measured on the same device.
//!
//! The layers, from the bottom: [`runtime`] (devices, tensors, kernel sources, launches, the
//! tuning cache's lookup); [`compiler`] (expression graphs); [`ops`] (each op's descriptor, kernels, launchers and registry
//! rows); [`check`] (inputs, the f64 reference, validation); [`tools`] (bench, sweep, profile,
//! inspect, autotune); [`cli`]. Nothing imports a layer above its own.

/// `eprintln!` that lets a closed stderr go (`kernlab … 2>&1 | head`), where `eprintln!`
/// panics: kernlab's notes and progress lines are best-effort.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// The sources this build came from, as a hash (build.rs): equal in the command line and the
/// Python package only where both were built from the same kernels.
pub const BUILD_ID: &str = env!("KERNLAB_BUILD_ID");

pub mod check;
pub mod cli;
pub mod compiler;
pub mod ops;
pub mod runtime;
pub mod tools;

pub use ops::{Op, Params, Tier};
pub use runtime::device::{Device, DeviceKind, DeviceSpec};
pub use runtime::dtype::DType;
pub use runtime::error::{Error, Result};
pub use runtime::tensor::{Init, Tensor};
