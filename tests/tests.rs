//! kernlab's integration tests: one binary (ripgrep's layout), modules by purpose.
//! GPU tests are `#[ignore]`d with the reason (`--include-ignored` runs them, as
//! tools/gpu-suite.sh does; there a missing GPU fails them with KERNLAB_REQUIRE_GPU=1). NVRTC
//! tests skip with one printed line where libnvrtc does not load, and fail instead with
//! KERNLAB_REQUIRE_NVRTC=1 (CI sets it).

mod common;

/// The bench harness and reports: statistics, accounting, JSON/CSV, sweeps and plots.
mod bench;
/// The command line: errors a user can hit, list and bench output.
mod cli;
/// Collectives on the CPU backend: every operation over 1 to 4 ranks, every dtype, and a
/// group that breaks instead of hanging.
mod comm;
/// The compiler's expression graphs against each op's f64 reference.
mod compiler;
mod cutlass;
/// Faults: several processes writing one cache folder.
mod faults;
/// Fuzzing: the parsers, the cache readers and random command lines never panic.
mod fuzz;
/// `kernlab inspect`: the PTX census on real NVRTC output, the SASS census on recorded listings.
mod inspect;
/// Matmul and linear: every variant against f64, every epilogue, odd shapes, bad operands.
mod matmul;
/// The MLP: forward and training step against f64 and finite differences, every tier.
mod mlp;
/// Every op and variant against the f64 reference, one body for the CPU and CUDA.
mod ops;
/// `kernlab profile`: CUPTI record parsing, the key_averages table and the Chrome trace from
/// recorded records; on the GPU, manual GeLU's 9 kernels per call against the fused one's 1.
mod profile;
/// NVRTC compiles every registered kernel for sm_80 and sm_90a; the PTX and ptxas report
/// show what each variant claims.
mod ptx;
/// RMSNorm: every variant against f64, strided rows, special values, bad operands.
mod rmsnorm;
/// The Triton tier: compiled by Triton for sm_90a, cached, refused without Triton; on the GPU,
/// its metadata against Triton's loader.
mod triton;
