//! Devices: the CPU (always there) and CUDA GPUs (when the driver loads and a GPU is present).
//!
//! Nothing here panics on a machine without CUDA: every library is probed before first use
//! (cudarc panics on a missing library), and asking for `cuda` where there is none is an error.

pub mod cuda;
pub mod cutlass;
pub mod nvrtc;
pub mod triton;

pub use cuda::{CudaDevice, DeviceProps};

use crate::runtime::error::{Error, Result};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Where a tensor lives and where a variant runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Cpu,
    Cuda,
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DeviceKind::Cpu => "cpu",
            DeviceKind::Cuda => "cuda",
        })
    }
}

/// What the user asked for with `--device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceSpec {
    Auto,
    Cpu,
    Cuda(usize),
}

impl FromStr for DeviceSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim().to_ascii_lowercase();
        match s.as_str() {
            "auto" => Ok(DeviceSpec::Auto),
            "cpu" => Ok(DeviceSpec::Cpu),
            "cuda" | "gpu" => Ok(DeviceSpec::Cuda(0)),
            _ => {
                if let Some(n) = s.strip_prefix("cuda:") {
                    n.parse::<usize>().map(DeviceSpec::Cuda).map_err(|_| {
                        format!("bad device '{s}': the ordinal after 'cuda:' must be a number")
                    })
                } else {
                    Err(format!(
                        "unknown device '{s}' (use auto, cpu, cuda or cuda:N)"
                    ))
                }
            }
        }
    }
}

/// A device kernlab can run on.
#[derive(Clone)]
pub enum Device {
    Cpu,
    Cuda(Arc<CudaDevice>),
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Device {
    pub fn kind(&self) -> DeviceKind {
        match self {
            Device::Cpu => DeviceKind::Cpu,
            Device::Cuda(_) => DeviceKind::Cuda,
        }
    }

    pub fn cuda(&self) -> Option<&Arc<CudaDevice>> {
        match self {
            Device::Cuda(d) => Some(d),
            Device::Cpu => None,
        }
    }

    /// One line naming the device: `cuda:0 (NVIDIA H200, sm_90a, 132 SMs)` or `cpu (…, N threads;
    /// the instruction paths)`.
    pub fn describe(&self) -> String {
        match self {
            Device::Cpu => {
                let n = rayon::current_num_threads();
                let s = if n == 1 { "" } else { "s" };
                format!(
                    "cpu ({}, {n} thread{s}; {})",
                    cpu_model_name(),
                    crate::runtime::simd::describe()
                )
            }
            Device::Cuda(d) => format!(
                "cuda:{} ({}, {}, {} SMs, {:.0} GiB)",
                d.ordinal,
                d.props.name,
                d.arch,
                d.props.sm_count,
                d.props.total_mem as f64 / (1u64 << 30) as f64
            ),
        }
    }

    /// Open the device the spec names. `Auto` picks CUDA when the driver loads and a GPU is
    /// present, else the CPU; the returned string says which, and why, in one line.
    pub fn open(spec: DeviceSpec) -> Result<(Device, String)> {
        match spec {
            DeviceSpec::Cpu => {
                let d = Device::Cpu;
                let line = format!("device: {} (asked for the cpu)", d.describe());
                Ok((d, line))
            }
            DeviceSpec::Cuda(n) => {
                let d = Device::Cuda(CudaDevice::open(n)?);
                let line = format!("device: {}", d.describe());
                Ok((d, line))
            }
            DeviceSpec::Auto => match cuda_probe() {
                Ok(_) => {
                    let d = Device::Cuda(CudaDevice::open(0)?);
                    let line = format!("device: {} (auto: a CUDA GPU was found)", d.describe());
                    Ok((d, line))
                }
                Err(why) => {
                    let d = Device::Cpu;
                    let line = format!("device: {} (auto: no CUDA GPU: {why})", d.describe());
                    Ok((d, line))
                }
            },
        }
    }
}

/// How many CUDA devices there are, or why there are none. Never panics.
pub fn cuda_probe() -> std::result::Result<usize, String> {
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if !present {
        return Err("the CUDA driver library (libcuda.so) is not installed".into());
    }
    match cudarc::driver::CudaContext::device_count() {
        Ok(0) => Err("the CUDA driver loaded but reports no device".into()),
        Ok(n) => Ok(n as usize),
        Err(e) => Err(format!("the CUDA driver loaded but cuInit failed ({e:?})")),
    }
}

/// Require CUDA: a clear error when it is not here.
pub fn require_cuda(ordinal: usize) -> Result<()> {
    match cuda_probe() {
        Ok(n) if ordinal < n => Ok(()),
        Ok(n) => Err(Error::NoCuda(format!(
            "asked for cuda:{ordinal}, but there {} only {n} device{}",
            if n == 1 { "is" } else { "are" },
            if n == 1 { "" } else { "s" }
        ))),
        Err(why) => Err(Error::NoCuda(why)),
    }
}

/// The CPU's model name from /proc/cpuinfo (or "unknown CPU").
pub fn cpu_model_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_device_specs() {
        assert_eq!("auto".parse::<DeviceSpec>(), Ok(DeviceSpec::Auto));
        assert_eq!("CPU".parse::<DeviceSpec>(), Ok(DeviceSpec::Cpu));
        assert_eq!("cuda".parse::<DeviceSpec>(), Ok(DeviceSpec::Cuda(0)));
        assert_eq!("cuda:3".parse::<DeviceSpec>(), Ok(DeviceSpec::Cuda(3)));
        assert!("cuda:x".parse::<DeviceSpec>().is_err());
        assert!("tpu".parse::<DeviceSpec>().is_err());
    }
}
