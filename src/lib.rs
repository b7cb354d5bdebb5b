//! kernlab: a laboratory for GPU kernels — fused GeLU and softmax (and more to come) in every
//! tier of the CS336 kernels lecture, validated against an f64 reference, then timed against
//! ceilings measured on the same device.

/// `eprintln!` that lets a closed stderr go (`kernlab … 2>&1 | head`), where `eprintln!`
/// panics: kernlab's notes and progress lines are best-effort.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod autotune;
pub mod bench;
pub mod cli;
pub mod device;
pub mod dtype;
pub mod error;
pub mod inspect;
pub mod kernels;
pub mod ops;
pub mod profile;
pub mod registry;
pub mod tensor;
pub mod validate;

pub use device::{Device, DeviceKind, DeviceSpec};
pub use dtype::DType;
pub use error::{Error, Result};
pub use ops::{GeluApprox, Op, Params, Tier};
pub use tensor::{Init, Tensor};
