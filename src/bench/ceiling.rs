//! Ceilings measured on the device in hand, in the same process as the measurements they
//! judge: the copy bandwidth (bytes read + bytes written per second).

use super::harness::{CpuTimer, CudaTimer, Stats, TimingOpts};
use crate::device::{CudaDevice, Device};
use crate::error::Result;
use rayon::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct CopyCeiling {
    /// Bytes copied per call (each is read once and written once).
    pub bytes: usize,
    pub stats: Stats,
    /// (read + written) / median time.
    pub gbps: f64,
    pub how: &'static str,
}

/// Device-to-device copy of 1 GiB (less if memory is short), timed like any kernel.
pub fn cuda_copy(
    dev: &CudaDevice,
    timer: &mut CudaTimer,
    opts: &TimingOpts,
) -> Result<CopyCeiling> {
    let (free, _) = dev.ctx.mem_get_info().unwrap_or((1 << 32, 0));
    let bytes = (1usize << 30).min(free / 4).max(1 << 20);
    let src = dev.alloc_bytes(bytes, "the copy-ceiling source")?;
    let mut dst = dev.alloc_bytes(bytes, "the copy-ceiling destination")?;
    let stats = timer.time(opts, &mut || dev.copy_dtod(&src, &mut dst, bytes))?;
    Ok(CopyCeiling {
        bytes,
        gbps: 2.0 * bytes as f64 / (stats.median_ms * 1e-3) / 1e9,
        stats,
        how: "cuMemcpyDtoDAsync, 1 GiB",
    })
}

/// A parallel memcpy of 256 MiB (rayon chunks), timed like any CPU variant.
pub fn cpu_copy(timer: &mut CpuTimer, opts: &TimingOpts) -> Result<CopyCeiling> {
    let bytes = 256usize << 20;
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let stats = timer.time(opts, &mut || {
        dst.par_chunks_mut(1 << 20)
            .zip(src.par_chunks(1 << 20))
            .for_each(|(d, s)| d.copy_from_slice(s));
        std::hint::black_box(&dst);
        Ok(())
    })?;
    Ok(CopyCeiling {
        bytes,
        gbps: 2.0 * bytes as f64 / (stats.median_ms * 1e-3) / 1e9,
        stats,
        how: "parallel memcpy (rayon), 256 MiB",
    })
}

/// The copy ceiling of a device.
pub fn copy_ceiling(device: &Device, opts: &TimingOpts) -> Result<CopyCeiling> {
    match device {
        Device::Cpu => cpu_copy(&mut CpuTimer::new(), opts),
        Device::Cuda(d) => cuda_copy(d, &mut CudaTimer::new(d)?, opts),
    }
}
