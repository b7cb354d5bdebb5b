//! The primitive kernels the `manual` tier composes, one launch per PyTorch-style op
//! (`kernels/elementwise.cu`), and the helpers every manual composition shares.

use crate::runtime::device::CudaDevice;
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::launch;
use cudarc::driver::{CudaSlice, LaunchConfig};

/// The primitive kernels: casts, element-wise maps, row reductions, broadcasts.
pub static ELEMENTWISE: KernelSource = KernelSource {
    file: "elementwise.cu",
    src: include_str!("../../kernels/elementwise.cu"),
};

/// The `manual` tier's kernel names, plus the casts in and out of f32 a 16-bit input needs.
pub fn with_casts(names: &[&str], dt: DType) -> Vec<String> {
    let mut v: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    if dt != DType::F32 {
        v.push(format!("cast_to_f32_{dt}"));
        v.push(format!("cast_from_f32_{dt}"));
    }
    v
}

/// The `manual` tier's x as f32, as `.float()` makes it: for a 16-bit x, a copy written by
/// `cast_to_f32_{dt}` (one of [`with_casts`]; `what` names it in an out-of-memory error);
/// `None` for an f32 x, which the caller reads as it is.
pub fn manual_x_f32(
    dev: &CudaDevice,
    x: &CudaSlice<u8>,
    dt: DType,
    n: i64,
    cfg: LaunchConfig,
    what: &str,
) -> Result<Option<CudaSlice<u8>>> {
    if dt == DType::F32 {
        return Ok(None);
    }
    let xf = dev.alloc_bytes(n as usize * 4, what)?;
    launch!(
        dev,
        &ELEMENTWISE,
        format!("cast_to_f32_{dt}"),
        cfg,
        [x, &xf, &n]
    );
    Ok(Some(xf))
}
