//! Shared pieces of the CUDA launchers: getting at the device buffers of an (input, output)
//! pair, grid sizing, and the per-launch error check.

use crate::runtime::device::CudaDevice;
use crate::runtime::error::{Error, Result};
use crate::runtime::tensor::Tensor;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};
use std::sync::Arc;

/// The device and buffers of a CUDA (input, output) pair.
pub struct CudaIo<'a> {
    pub dev: Arc<CudaDevice>,
    pub x: &'a CudaSlice<u8>,
    pub y: &'a mut CudaSlice<u8>,
}

pub fn cuda_io<'a>(x: &'a Tensor, y: &'a mut Tensor) -> Result<CudaIo<'a>> {
    let dev = x
        .device()
        .cuda()
        .cloned()
        .ok_or_else(|| Error::Invalid("a CUDA launcher was handed a CPU tensor".into()))?;
    // The public launchers are safe functions: a y of another dtype, size or device would be
    // written out of bounds (or in part), so they are refused here, not only by the registry.
    if x.numel() == 0 {
        return Err(Error::EmptyTensor {
            op: "cuda".into(),
            shape: x.shape().to_vec(),
        });
    }
    if y.dtype() != x.dtype() || y.numel() != x.numel() {
        return Err(Error::ShapeMismatch {
            op: "cuda".into(),
            why: format!(
                "the output ({} {:?}) must have the input's dtype and size ({} {:?})",
                y.dtype(),
                y.shape(),
                x.dtype(),
                x.shape()
            ),
        });
    }
    if y.device().cuda().map(|d| d.ordinal) != Some(dev.ordinal) {
        return Err(Error::Invalid(format!(
            "the output is on {}, the input on cuda:{}",
            y.device().describe(),
            dev.ordinal
        )));
    }
    let xb = x
        .cuda_buf()
        .ok_or_else(|| Error::Invalid("input is not on CUDA".into()))?;
    let yb = y
        .cuda_buf_mut()
        .ok_or_else(|| Error::Invalid("output is not on CUDA".into()))?;
    Ok(CudaIo { dev, x: xb, y: yb })
}

/// Whether a buffer's device address is 16-byte aligned (cuMemAlloc gives 256).
pub fn aligned16(dev: &CudaDevice, b: &CudaSlice<u8>) -> bool {
    let (p, _g) = b.device_ptr(&dev.stream);
    p % 16 == 0
}

/// Let kernel `f` (named `name`) launch with up to `bytes` of dynamic shared memory a block
/// (past 48 KB a block must opt in), with the device's context made current (it stays so for
/// the caller's launch). The attribute lives on the CUfunction, which the
/// device's function cache shares, so it holds for every later launch of that kernel.
/// The attribute is only ever raised (under a lock), so a call on another thread that needs
/// less cannot lower it between this call and its launch.
pub fn allow_dynamic_smem(
    dev: &CudaDevice,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    bytes: usize,
) -> Result<()> {
    use cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as MAX_DYN;
    static RAISE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    dev.ctx
        .bind_to_thread()
        .map_err(crate::runtime::device::cuda::launch_err(name))?;
    let _g = RAISE.lock().unwrap_or_else(|e| e.into_inner());
    let now = f
        .get_attribute(MAX_DYN)
        .map_err(crate::runtime::device::cuda::launch_err(name))?;
    if (bytes as i64) <= now as i64 {
        return Ok(());
    }
    f.set_attribute(MAX_DYN, bytes as i32)
        .map_err(crate::runtime::device::cuda::launch_err(name))
}

/// A 1-D launch covering `work` items with `block` threads each.
pub fn cfg_1d(work: u64, block: u32) -> Result<LaunchConfig> {
    let blocks = work.div_ceil(block as u64).max(1);
    if blocks > i32::MAX as u64 {
        return Err(Error::Invalid(format!(
            "{work} work items need {blocks} blocks of {block}: over the grid limit"
        )));
    }
    Ok(LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: 0,
    })
}

/// Launch a kernel and map a failure to an error naming it. Every kernlab launch goes
/// through here (or `launch_cooperative!`), so no launch result is ever dropped.
macro_rules! launch {
    (@with $method:ident, $dev:expr, $src:expr, $name:expr, $cfg:expr, [$($arg:expr),* $(,)?]) => {{
        use cudarc::driver::PushKernelArg;
        let name: &str = &$name;
        let f = $dev.function($src, name)?;
        let mut b = $dev.stream.launch_builder(&f);
        $( b.arg($arg); )*
        let cfg: cudarc::driver::LaunchConfig = $cfg;
        // SAFETY: the arguments match the kernel's signature in kernels/*.cu; every buffer is
        // valid when the launch is enqueued, and a buffer dropped afterwards is freed
        // stream-ordered (cuMemFreeAsync on the same stream), after the kernel ran.
        unsafe { b.$method(cfg) }.map_err($crate::runtime::device::cuda::launch_err(name))?;
        $dev.after_launch(name)?;
    }};
    ($dev:expr, $src:expr, $name:expr, $cfg:expr, [$($arg:expr),* $(,)?]) => {
        $crate::runtime::launch::launch!(@with launch, $dev, $src, $name, $cfg, [$($arg),*])
    };
}

/// Launch a kernel cooperatively (cuLaunchCooperativeKernel): the driver refuses a grid whose
/// blocks cannot all be resident at once, so blocks may wait on one another.
macro_rules! launch_cooperative {
    ($dev:expr, $src:expr, $name:expr, $cfg:expr, [$($arg:expr),* $(,)?]) => {
        $crate::runtime::launch::launch!(@with launch_cooperative, $dev, $src, $name, $cfg, [$($arg),*])
    };
}
/// Launch a Triton kernel (a [`crate::runtime::device::cuda::LoadedTriton`]) on a grid of
/// `$grid` programs: its launch arguments in its signature's order, then the global and the
/// profile scratch pointers Triton's ABI appends (null: kernlab launches only kernels that
/// need neither), with its warps and its shared memory.
macro_rules! launch_triton {
    ($dev:expr, $t:expr, $grid:expr, [$($arg:expr),* $(,)?]) => {{
        use cudarc::driver::PushKernelArg;
        let t: &$crate::runtime::device::cuda::LoadedTriton = &$t;
        let name: &str = &t.kernel.meta.name;
        let mut b = $dev.stream.launch_builder(&t.f);
        $( b.arg($arg); )*
        let scratch: [u64; 2] = [0, 0];
        b.arg(&scratch[0]);
        b.arg(&scratch[1]);
        let grid: (u32, u32, u32) = $grid;
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: grid,
            block_dim: (t.kernel.meta.num_warps * 32, 1, 1),
            shared_mem_bytes: t.kernel.meta.shared,
        };
        // SAFETY: the arguments match the kernel's signature (its TritonSpec, checked by the
        // caller against kernels/triton/*.py); every buffer is valid when the launch is
        // enqueued and freed stream-ordered after it.
        unsafe { b.launch(cfg) }.map_err($crate::runtime::device::cuda::launch_err(name))?;
        $dev.after_launch(name)?;
        $crate::runtime::launch::note_triton_launch(|| {
            $crate::runtime::launch::TritonLaunch::new(&t.spec, grid)
        });
    }};
}
pub(crate) use {launch, launch_cooperative, launch_triton};

/// Run `f` with the launch configuration for clusters of `cluster` CTAs along x (Hopper and
/// later), as cuLaunchKernelEx and cuOccupancyMaxActiveClusters take it.
fn with_cluster_config<R>(
    dev: &CudaDevice,
    func: &cudarc::driver::CudaFunction,
    name: &str,
    cfg: LaunchConfig,
    cluster: u32,
    f: impl FnOnce(&cudarc::driver::sys::CUlaunchConfig) -> R,
) -> Result<R> {
    use cudarc::driver::sys;
    if cluster > 8 {
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
            1,
        )
        .map_err(crate::runtime::device::cuda::launch_err(name))?;
    }
    // SAFETY: a zeroed attribute value is valid plain data; only clusterDim is read.
    let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
    value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
        x: cluster,
        y: 1,
        z: 1,
    };
    let mut attr = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        pad: [0; 4],
        value,
    };
    let lc = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: dev.stream.cu_stream(),
        attrs: &mut attr,
        numAttrs: 1,
    };
    dev.ctx
        .bind_to_thread()
        .map_err(|e| Error::driver("cuCtxSetCurrent", e))?;
    Ok(f(&lc))
}

/// Launch a kernel in thread-block clusters of `cluster` CTAs along x (Hopper and later),
/// through cuLaunchKernelEx. `args` are pointers to each kernel argument's value.
pub fn launch_cluster(
    dev: &CudaDevice,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    cfg: LaunchConfig,
    cluster: u32,
    args: &mut [*mut std::ffi::c_void],
) -> Result<()> {
    with_cluster_config(dev, f, name, cfg, cluster, |lc| {
        // SAFETY: `args` point at live values matching the kernel's parameters; the buffers
        // they name are valid on this stream (see `launch!`).
        unsafe {
            cudarc::driver::sys::cuLaunchKernelEx(
                lc,
                f.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(crate::runtime::device::cuda::launch_err(name))
    })??;
    dev.after_launch(name)
}

/// How many clusters of `cluster` CTAs shaped as `cfg` (threads, dynamic shared memory) the
/// GPU runs at once (cuOccupancyMaxActiveClusters); 0 when none can be placed.
pub fn max_active_clusters(
    dev: &CudaDevice,
    f: &cudarc::driver::CudaFunction,
    name: &str,
    cfg: LaunchConfig,
    cluster: u32,
) -> Result<usize> {
    let mut n: std::ffi::c_int = 0;
    with_cluster_config(dev, f, name, cfg, cluster, |lc| {
        // SAFETY: `n` is a live out-parameter; `lc` and its attribute outlive the call.
        unsafe { cudarc::driver::sys::cuOccupancyMaxActiveClusters(&mut n, f.cu_function(), lc) }
            .result()
            .map_err(|e| Error::driver("cuOccupancyMaxActiveClusters", e))
    })??;
    Ok(n.max(0) as usize)
}

/// A Triton launch as Triton's own launcher is asked for it: the kernel's file under
/// `kernels/triton/` and its name, the compile-time constants, warps, stages and grid.
/// `bench --torch` hands these to the baselines' process, whose `triton` column then launches
/// the same kernel the same way through Triton, timed by do_bench (docs/triton.md).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TritonLaunch {
    pub file: &'static str,
    /// The file's text (written beside the plans for the other process to import).
    #[serde(skip)]
    pub src: &'static str,
    pub kernel: &'static str,
    pub constexprs: serde_json::Map<String, serde_json::Value>,
    pub num_warps: u32,
    pub num_stages: u32,
    pub grid: [u32; 3],
}

impl TritonLaunch {
    pub fn new(
        spec: &crate::runtime::device::triton::TritonSpec,
        grid: (u32, u32, u32),
    ) -> TritonLaunch {
        TritonLaunch {
            file: spec.source.file,
            src: spec.source.src,
            kernel: spec.kernel,
            constexprs: spec.constexprs.iter().cloned().collect(),
            num_warps: spec.num_warps,
            num_stages: spec.num_stages,
            grid: [grid.0, grid.1, grid.2],
        }
    }
}

thread_local! {
    /// While [`record_triton_launch`] runs: the Triton launches noted so far on this thread.
    static TRITON_RECORDING: std::cell::RefCell<Option<Vec<TritonLaunch>>> =
        const { std::cell::RefCell::new(None) };
}

/// Note a Triton launch for [`record_triton_launch`] (made only while a recording runs);
/// `launch_triton!` calls it after each launch.
pub fn note_triton_launch(l: impl FnOnce() -> TritonLaunch) {
    TRITON_RECORDING.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push(l());
        }
    });
}

/// Run `f` (one call of a Triton variant on this thread) and say how it launched:
/// `Ok(Ok(launch))` when it made exactly one launch, a Triton one; `Ok(Err(why))` otherwise;
/// `Err` when `f` fails. The recording ends with the call even if `f` fails or panics
/// (nothing is noted after it).
pub fn record_triton_launch(
    f: impl FnOnce() -> Result<()>,
) -> Result<std::result::Result<TritonLaunch, String>> {
    struct Stop;
    impl Drop for Stop {
        fn drop(&mut self) {
            TRITON_RECORDING.with(|c| c.borrow_mut().take());
        }
    }
    let before = crate::runtime::device::cuda::launches_on_this_thread();
    TRITON_RECORDING.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let stop = Stop;
    let ran = f();
    let mut noted = TRITON_RECORDING
        .with(|c| c.borrow_mut().take())
        .unwrap_or_default();
    drop(stop);
    ran?;
    let launches = crate::runtime::device::cuda::launches_on_this_thread() - before;
    Ok(match (launches, noted.len()) {
        (1, 1) => Ok(noted.remove(0)),
        (n, t) => Err(format!(
            "{n} launch(es), {t} of them Triton's (PyTorch's process repeats one Triton launch)"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_launch(kernel: &'static str) -> TritonLaunch {
        TritonLaunch {
            file: "gelu.py",
            src: "",
            kernel,
            constexprs: serde_json::Map::new(),
            num_warps: 4,
            num_stages: 1,
            grid: [1, 1, 1],
        }
    }

    #[test]
    fn the_triton_recording_is_off_outside_record_triton_launch() {
        let noted = || {
            TRITON_RECORDING.with(|c| {
                c.borrow()
                    .as_ref()
                    .map(|v| v.iter().map(|l| l.kernel).collect::<Vec<_>>())
            })
        };
        // Noted outside a recording: nothing is kept for the next one.
        note_triton_launch(|| a_launch("outside"));
        assert_eq!(noted(), None);
        let got = record_triton_launch(|| {
            note_triton_launch(|| a_launch("inside"));
            assert_eq!(noted(), Some(vec!["inside"]));
            Ok(())
        })
        .unwrap();
        // Noted without a launch: not one Triton launch, and "outside" is gone.
        assert_eq!(
            got.unwrap_err(),
            "0 launch(es), 1 of them Triton's (PyTorch's process repeats one Triton launch)"
        );
        assert_eq!(noted(), None);
        // A failing call is an error, and the recording ends with it.
        let e = record_triton_launch(|| Err(Error::Invalid("boom".into()))).unwrap_err();
        assert!(e.to_string().contains("boom"));
        assert_eq!(noted(), None);
        // So does a panicking one.
        let caught = std::panic::catch_unwind(|| {
            let _ = record_triton_launch(|| panic!("inside the call"));
        });
        assert!(caught.is_err());
        assert_eq!(noted(), None);
    }
}
