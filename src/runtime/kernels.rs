//! CUDA sources as NVRTC sees them, embedded in the binary (`include_str!`) so that it runs
//! anywhere and NVRTC compiles them for the device in hand. Each op module holds its own
//! source (one `.cu` per op family, every numbered version in it); the headers they share are
//! here.

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
        src: include_str!("../../kernels/common.cuh"),
    },
    KernelSource {
        file: "rows.cuh",
        src: include_str!("../../kernels/rows.cuh"),
    },
    KernelSource {
        file: "hopper.cuh",
        src: include_str!("../../kernels/hopper.cuh"),
    },
    KernelSource {
        file: "matmul_common.cuh",
        src: include_str!("../../kernels/matmul_common.cuh"),
    },
    KernelSource {
        file: "matmul_sm90.cuh",
        src: include_str!("../../kernels/matmul_sm90.cuh"),
    },
];
