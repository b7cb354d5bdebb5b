//! The CUTLASS tier of the GEMM ops: a CUTLASS 3.x Hopper GEMM (TMA, wgmma, warp-specialised,
//! persistent; `kernels/cutlass/gemm.cu`) with linear's bias + GeLU in CUTLASS's fused
//! epilogue, built at first use into a cached shared object (`runtime::device::cutlass`) and
//! run on kernlab's stream.

use super::{gemm_bufs, Activation, Gemm};
use crate::runtime::device::cutlass::{self, Config};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use cudarc::driver::{DevicePtr, DevicePtrMut};

/// The registry's name of the CUTLASS version.
pub const VARIANT: &str = "cutlass";

fn refuse(g: &Gemm, why: String) -> Error {
    Error::UnsupportedShape {
        op: g.op_name().into(),
        variant: VARIANT.into(),
        why,
    }
}

/// A configuration autotune can pick: the library's kernel (an index into
/// [`cutlass::KERNELS`]: schedule, tile, cluster) and the tile scheduler's raster order (0
/// CUTLASS's heuristic, 1 along M, 2 along N) and swizzle (tiles a band), the last two
/// run-time arguments of the same library.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    pub kernel: u8,
    pub raster: i32,
    pub swizzle: i32,
}

impl Tuning {
    /// `coop_128x256_2x1_rh_s1`: the kernel, the raster order (h, m, n), the swizzle.
    pub fn name(&self) -> String {
        format!(
            "{}_r{}_s{}",
            cutlass::KERNELS[self.kernel as usize],
            ["h", "m", "n"][self.raster as usize],
            self.swizzle
        )
    }
}

/// Every configuration, the default (CUTLASS's own choices for the first kernel) first.
pub fn configs() -> Vec<Tuning> {
    let mut v = Vec::new();
    for kernel in 0..cutlass::KERNELS.len() as u8 {
        for (raster, swizzle) in [(0, 1), (1, 1), (2, 1), (1, 4), (2, 4)] {
            v.push(Tuning {
                kernel,
                raster,
                swizzle,
            });
        }
    }
    v
}

/// Every configuration's name.
pub fn config_names() -> Vec<String> {
    configs().iter().map(Tuning::name).collect()
}

/// The names of the configurations whose kernel's library for `dt` can be had on `arch` (see
/// [`cutlass::obtainable_kernels`]).
pub fn obtainable_names(dt: DType, arch: &str) -> Vec<String> {
    let kernels = cutlass::obtainable_kernels(element(dt), arch);
    configs()
        .iter()
        .filter(|t| kernels.contains(&t.kernel))
        .map(Tuning::name)
        .collect()
}

/// The library a GEMM runs in kernel `kernel`: its dtype and epilogue.
pub fn config(g: &Gemm, kernel: u8) -> Config {
    let epilogue = match (g.bias.is_some(), g.act) {
        (_, Activation::GeluTanh) => 2,
        (_, Activation::GeluErf) => 3,
        (true, Activation::None) => 1,
        (false, Activation::None) => 0,
    };
    Config {
        element: element(g.dtype()),
        epilogue,
        kernel,
    }
}

/// The libraries' element type for `dt` (f32 has none: the tier refuses it).
fn element(dt: DType) -> &'static str {
    if dt == DType::F16 {
        "f16"
    } else {
        "bf16"
    }
}

/// c = epi(a · wᵀ) by CUTLASS in the default configuration.
pub fn run(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_with(&configs()[0], g, c)
}

/// The GEMM in the named configuration.
pub fn run_config(name: &str, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let t = configs()
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{VARIANT} has no configuration '{name}' (known: {})",
                config_names().join(", ")
            ))
        })?;
    run_with(&t, g, c)
}

/// c = epi(a · wᵀ) by CUTLASS in configuration `t`.
pub fn run_with(t: &Tuning, g: &Gemm, c: &mut Tensor) -> Result<()> {
    if g.act != Activation::None && g.bias.is_none() {
        return Err(refuse(
            g,
            "its GeLU epilogue comes with the bias (linear's)".into(),
        ));
    }
    // TMA needs 16-byte rows: K and N multiples of 8 elements.
    if !g.k.is_multiple_of(8) || !g.n.is_multiple_of(8) {
        return Err(refuse(
            g,
            format!(
                "K = {} and N = {} must be multiples of 8: the TMA descriptors need rows of a, w \
                 and c on 16-byte boundaries",
                g.k, g.n
            ),
        ));
    }
    let dims = |v: usize, what: &str| {
        i32::try_from(v).map_err(|_| refuse(g, format!("{what} = {v}: at most 2^31 − 1")))
    };
    let (m, n, k) = (dims(g.m, "M")?, dims(g.n, "N")?, dims(g.k, "K")?);
    let io = gemm_bufs(VARIANT, g, c)?;
    let dev = io.dev.clone();
    if dev.props.compute_capability.0 != 9 {
        let (a, b) = dev.props.compute_capability;
        return Err(refuse(
            g,
            format!("the Hopper GEMM runs on sm_90; this device is sm_{a}{b}"),
        ));
    }
    let lib = cutlass::load(&config(g, t.kernel), &dev.arch)?;
    // SAFETY: a pure size query of the library's C ABI.
    let ws_bytes = unsafe { (lib.workspace_bytes)(m, n, k, t.raster, t.swizzle) }.max(16);
    let (a, _ga) = io.a.device_ptr(&dev.stream);
    let (w, _gw) = io.w.device_ptr(&dev.stream);
    let bias = io.bias.map(|b| b.device_ptr(&dev.stream));
    let bias_ptr = bias.as_ref().map_or(0, |(p, _)| *p);
    let (cp, _gc) = io.c.device_ptr_mut(&dev.stream);
    let mut err = [0 as std::ffi::c_char; 256];
    let rc = dev.with_workspace("cutlass", ws_bytes, |ws| {
        let (wp, _gws) = ws.device_ptr_mut(&dev.stream);
        // SAFETY: every pointer is a live device buffer checked by gemm_bufs to hold what the
        // GEMM reads or writes (the workspace as large as the library asked); the stream is
        // kernlab's, in the primary context CUTLASS's runtime calls also use.
        Ok(unsafe {
            (lib.gemm)(
                a as *const _,
                w as *const _,
                bias_ptr as *const _,
                cp as *mut _,
                m,
                n,
                k,
                t.raster,
                t.swizzle,
                wp as *mut _,
                dev.stream.cu_stream() as *mut _,
                err.as_mut_ptr(),
                err.len() as i32,
            )
        })
    })?;
    if rc != 0 {
        // SAFETY: the library wrote a NUL-terminated message into err (snprintf).
        let why = unsafe { std::ffi::CStr::from_ptr(err.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        return Err(Error::Launch {
            kernel: format!(
                "CUTLASS GEMM {} {}",
                cutlass::library_name(&config(g, t.kernel)),
                t.name()
            ),
            err: why,
        });
    }
    dev.after_launch("cutlass gemm")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_are_named_apart_and_the_default_is_cutlass_own_choice() {
        let names = config_names();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "{names:?}");
        assert_eq!(names[0], "coop_128x256_2x1_rh_s1");
        assert!(names.iter().any(|n| n.starts_with("pingpong_64x256_2x1_")));
        for t in configs() {
            assert!(cutlass::KERNELS.get(t.kernel as usize).is_some());
            assert!((0..3).contains(&t.raster) && [1, 2, 4, 8].contains(&t.swizzle));
        }
    }
}
