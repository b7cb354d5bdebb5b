//! The primitive kernels the `manual` tier launches besides the compiler's own (its one-launch-
//! a-node interpretation of an op's graph): linear's bias add after cuBLAS's product
//! (`kernels/elementwise.cu`).

use crate::runtime::kernels::KernelSource;

/// The primitive kernels: the bias add in every dtype.
pub static ELEMENTWISE: KernelSource = KernelSource {
    file: "elementwise.cu",
    src: include_str!("../../kernels/elementwise.cu"),
};
