//! The CUDA sources, embedded in the binary (`include_str!`) so that it runs anywhere and
//! NVRTC compiles them for the device in hand. One file per op family, every numbered
//! version in it; `common.cuh` holds what they share (dtype conversions, GeLU, reductions).

/// One CUDA source file as NVRTC sees it.
#[derive(Debug)]
pub struct KernelSource {
    pub file: &'static str,
    pub src: &'static str,
}

/// Headers every source may `#include "..."` (handed to NVRTC by name).
pub static HEADERS: &[KernelSource] = &[KernelSource {
    file: "common.cuh",
    src: include_str!("../kernels/common.cuh"),
}];

pub static GELU: KernelSource = KernelSource {
    file: "gelu.cu",
    src: include_str!("../kernels/gelu.cu"),
};

pub static SOFTMAX: KernelSource = KernelSource {
    file: "softmax.cu",
    src: include_str!("../kernels/softmax.cu"),
};

/// The primitive kernels the `manual` tier composes (one launch per PyTorch-style op).
pub static ELEMENTWISE: KernelSource = KernelSource {
    file: "elementwise.cu",
    src: include_str!("../kernels/elementwise.cu"),
};

/// Every source file, for CI's compile-everything check and `kernlab inspect`.
pub static ALL: &[&KernelSource] = &[&GELU, &SOFTMAX, &ELEMENTWISE];
