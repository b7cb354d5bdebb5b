//! The runtime, the bottom layer: devices (the CPU, a CUDA context and stream, the NVRTC module
//! cache), tensors and dtypes, errors, kernel sources and launches, NVTX ranges, and the
//! tuning cache's lookup. Nothing here knows an op.

pub mod comm;
pub mod device;
pub mod dtype;
pub mod error;
pub mod interrupt;
pub mod kernels;
pub mod launch;
pub mod nvtx;
pub mod row_slots;
pub mod simd;
pub mod tensor;
pub mod tuning;
