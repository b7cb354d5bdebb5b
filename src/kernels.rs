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
pub static HEADERS: &[KernelSource] = &[
    KernelSource {
        file: "common.cuh",
        src: include_str!("../kernels/common.cuh"),
    },
    KernelSource {
        file: "hopper.cuh",
        src: include_str!("../kernels/hopper.cuh"),
    },
    KernelSource {
        file: "matmul_common.cuh",
        src: include_str!("../kernels/matmul_common.cuh"),
    },
];

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

/// Matmul / linear, numbered SIMT and `mma.sync` versions (v1–v5), one shared epilogue.
pub static MATMUL: KernelSource = KernelSource {
    file: "matmul.cu",
    src: include_str!("../kernels/matmul.cu"),
};

/// Matmul / linear for Hopper (`sm_90a`): `wgmma` fed by TMA through an `mbarrier` pipeline.
pub static MATMUL_SM90: KernelSource = KernelSource {
    file: "matmul_sm90.cu",
    src: include_str!("../kernels/matmul_sm90.cu"),
};

/// Every source file, for CI's compile-everything check and `kernlab inspect`.
pub static ALL: &[&KernelSource] = &[&GELU, &SOFTMAX, &ELEMENTWISE, &MATMUL, &MATMUL_SM90];
