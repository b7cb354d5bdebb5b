//! Matmul v6 for Hopper (`sm_90a`): `wgmma.mma_async` fed by TMA through an `mbarrier`
//! pipeline, warp-specialised (one producer warpgroup, two consumer warpgroups), persistent
//! over the output tiles in a grouped (L2-friendly) order, with the shared fused epilogue.
//! The kernels are in `kernels/matmul_sm90.cu`; the design is described at its top.
//!
//! The host side builds the two TMA tensor maps (`cuTensorMapEncodeTiled`: a as `[M, K]`,
//! w as `[N, K]`, 128-byte swizzle, zero fill out of range) and launches through the raw
//! driver, since the maps are 128-byte `__grid_constant__` parameters.
//!
//! Limits, each reported as a clear error so that a caller can fall back to v5:
//! compute capability 9.0 only (wgmma is an `sm_90a` feature), bf16 and f16 only (f32 would
//! be tf32 on the tensor cores, a different precision), K a multiple of 8 (TMA needs a
//! 16-byte row pitch) and 16-byte aligned operand buffers.

use super::{
    bias_of_product, device_of as device_of_tensor, gemm_bufs, like_product, read_ptr,
    row_major_dims, write_ptr, Activation, Gemm, GemmBufs,
};
use crate::compiler::gemm::{GemmKernel, Tile};
use crate::runtime::device::cuda::launch_err;
use crate::runtime::device::CudaDevice;
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::tensor::Tensor;
use cudarc::driver::{sys, DevicePtr, DevicePtrMut};
use serde::Serialize;
use std::ffi::c_void;

/// Matmul / linear for Hopper (`sm_90a`): `wgmma` fed by TMA through an `mbarrier` pipeline.
pub static MATMUL_SM90: KernelSource = KernelSource {
    file: "matmul_sm90.cu",
    src: include_str!("../../../kernels/matmul_sm90.cu"),
};

/// The variant name used in error messages.
const VARIANT: &str = "v6_wgmma";

/// Threads per CTA: one producer warpgroup and two consumer warpgroups.
pub const THREADS: u32 = 384;

/// One compiled tile shape plus the run-time tile order, for autotuning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Config {
    pub name: &'static str,
    /// Block tile (BM is fixed at 128: two consumer warpgroups of 64 rows).
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    /// Shared-memory pipeline depth.
    pub stages: u32,
    /// Tile rows per band of the grouped tile order (a run-time argument).
    pub group_m: u32,
}

impl Config {
    /// The kernel this configuration launches for `dt` (bf16 or f16).
    pub fn symbol(&self, dt: DType) -> String {
        format!(
            "matmul_v6_{}x{}x{}_s{}_{}",
            self.bm, self.bn, self.bk, self.stages, dt
        )
    }

    /// Dynamic shared memory, as the kernel lays it out (`V6Smem` in the .cu): the stages,
    /// 1 KiB of alignment slack and 2 × stages mbarriers.
    pub fn smem_bytes(&self) -> u32 {
        self.stages * (self.bm + self.bn) * self.bk * 2 + 1024 + 2 * self.stages * 8
    }

    /// Output tiles of an M × N product.
    pub fn tiles(&self, m: usize, n: usize) -> usize {
        m.div_ceil(self.bm as usize) * n.div_ceil(self.bn as usize)
    }
}

const fn cfg(name: &'static str, bn: u32, stages: u32, group_m: u32) -> Config {
    Config {
        name,
        bm: 128,
        bn,
        bk: 64,
        stages,
        group_m,
    }
}

/// Every configuration, the default first. The (bm, bn, bk, stages) shapes must match the
/// `KL_V6_KERNEL` instantiations at the bottom of `kernels/matmul_sm90.cu`.
pub const CONFIGS: &[Config] = &[
    cfg("128x256x64_s4_g8", 256, 4, 8),
    cfg("128x256x64_s4_g4", 256, 4, 4),
    cfg("128x256x64_s4_g16", 256, 4, 16),
    cfg("128x128x64_s6_g8", 128, 6, 8),
    cfg("128x128x64_s6_g4", 128, 6, 4),
    cfg("128x128x64_s6_g16", 128, 6, 16),
];

fn supports(dt: DType) -> bool {
    matches!(dt, DType::BF16 | DType::F16)
}

/// `list` for a 16-bit `dt`, nothing for f32.
fn for_dtype(list: &[Config], dt: DType) -> Vec<Config> {
    if supports(dt) {
        list.to_vec()
    } else {
        Vec::new()
    }
}

/// `names` in order, each once (configurations differing only in GROUP_M share a kernel).
fn unique(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in names {
        if !v.contains(&s) {
            v.push(s);
        }
    }
    v
}

/// The default of a configuration list (big tile first, the 128×128 tile at index 3): the
/// 128×256 tile when it fills every SM at least once, else the 128×128 tile (twice the CTAs
/// for small products).
fn default_in(list: &[Config], m: usize, n: usize, sm_count: u32) -> Config {
    let big = list[0];
    if big.tiles(m, n) >= sm_count as usize {
        big
    } else {
        list[3]
    }
}

/// The configurations `run_with` accepts for `dt` (none for f32).
pub fn configs(dt: DType) -> Vec<Config> {
    for_dtype(CONFIGS, dt)
}

/// Every kernel `run_v6` or `run_with` may launch for `dt`.
pub fn symbols(dt: DType) -> Vec<String> {
    unique(configs(dt).iter().map(|c| c.symbol(dt)))
}

/// The configuration `run_v6` uses (see `default_in`).
pub fn default_config(m: usize, n: usize, sm_count: u32) -> Config {
    default_in(CONFIGS, m, n, sm_count)
}

/// v6 with the default configuration (a `GemmFn`).
pub fn run_v6(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dev = device_of(g)?;
    let cfg = default_config(g.m, g.n, dev.props.sm_count);
    run_with(&cfg, g, c)
}

/// What tells v6 and v7 apart on the host: the name in errors, the compiled tile shapes, and
/// whether c leaves through a TMA store (a third tensor map, a C buffer in shared memory).
#[derive(Clone, Copy)]
struct Version {
    variant: &'static str,
    configs: &'static [Config],
    tma_store: bool,
}

const V6: Version = Version {
    variant: VARIANT,
    configs: CONFIGS,
    tma_store: false,
};

impl Version {
    fn unsupported(&self, why: String) -> Error {
        Error::UnsupportedShape {
            op: "matmul".into(),
            variant: self.variant.into(),
            why,
        }
    }
    fn symbol(&self, cfg: &Config, dt: DType) -> String {
        if self.tma_store {
            cfg.symbol_v7(dt)
        } else {
            cfg.symbol(dt)
        }
    }
    fn smem_bytes(&self, cfg: &Config) -> u32 {
        if self.tma_store {
            cfg.smem_bytes_v7()
        } else {
            cfg.smem_bytes()
        }
    }
}

fn device_of(g: &Gemm) -> Result<std::sync::Arc<CudaDevice>> {
    g.a.device()
        .cuda()
        .cloned()
        .ok_or_else(|| Error::Invalid("matmul v6/v7 (wgmma) was handed a CPU tensor".into()))
}

/// Everything v6 or v7 needs that the registry's checks do not cover, as one clear error.
fn check(ver: Version, cfg: &Config, dev: &CudaDevice, g: &Gemm) -> Result<()> {
    check_hopper(ver, dev, g.dtype(), " (use v5)")?;
    if !ver
        .configs
        .iter()
        .any(|c| (c.bm, c.bn, c.bk, c.stages) == (cfg.bm, cfg.bn, cfg.bk, cfg.stages))
        || cfg.group_m == 0
    {
        return Err(Error::Invalid(format!(
            "matmul {}: configuration {cfg:?} is not one of the compiled tile shapes",
            ver.variant
        )));
    }
    check_size(ver, cfg, dev, g.m, g.n, g.k)?;
    if !g.k.is_multiple_of(8) {
        return Err(ver.unsupported(format!(
            "K = {} is not a multiple of 8: the TMA tensor maps need rows of a and w to start \
             on 16-byte boundaries (K·2 bytes a multiple of 16); use v5 for this shape",
            g.k
        )));
    }
    Ok(())
}

/// A 16-bit dtype and a Hopper GPU, what every wgmma kernel here needs; `instead` ends the
/// error with what to use elsewhere.
fn check_hopper(ver: Version, dev: &CudaDevice, dt: DType, instead: &str) -> Result<()> {
    if !supports(dt) {
        return Err(Error::UnsupportedDtype {
            op: "matmul".into(),
            variant: ver.variant.into(),
            dtype: dt,
            supported: "bf16, f16".into(),
        });
    }
    if dev.props.compute_capability != (9, 0) {
        let (ma, mi) = dev.props.compute_capability;
        return Err(ver.unsupported(format!(
            "needs a Hopper GPU (compute capability 9.0, sm_90a: wgmma, TMA, setmaxnreg); \
             {} is compute capability {ma}.{mi}{instead}",
            dev.props.name
        )));
    }
    Ok(())
}

/// M, N and K from 1 and below 2^31 (the kernels' int arguments), as is the tile count, and
/// the configuration's shared memory within the device's opt-in limit.
fn check_size(
    ver: Version,
    cfg: &Config,
    dev: &CudaDevice,
    m: usize,
    n: usize,
    k: usize,
) -> Result<()> {
    if m == 0 || n == 0 || k == 0 {
        return Err(ver.unsupported(format!("{m}×{n}×{k}: every dimension must be at least 1")));
    }
    let lim = i32::MAX as usize;
    if m > lim || n > lim || k > lim || cfg.tiles(m, n) > lim {
        return Err(ver.unsupported(format!(
            "{m}×{n}×{k}: M, N, K and the tile count must each be below 2^31"
        )));
    }
    let smem = ver.smem_bytes(cfg) as usize;
    if smem > dev.props.max_smem_per_block_optin {
        return Err(ver.unsupported(format!(
            "configuration {} needs {smem} bytes of shared memory per block; {} allows {}",
            cfg.name, dev.props.name, dev.props.max_smem_per_block_optin
        )));
    }
    Ok(())
}

/// A 2-D tensor map over a row-major `[rows, k]` bf16/f16 matrix, read in boxes of
/// `box_rows` rows × 64 elements (128 bytes, the 128-byte swizzle span); out-of-range rows
/// and columns read as zero.
fn tensor_map(
    ptr: u64,
    rows: usize,
    k: usize,
    box_rows: u32,
    dt: DType,
    what: &str,
) -> Result<sys::CUtensorMap> {
    use sys::CUtensorMapDataType as Ty;
    let ty = match dt {
        DType::BF16 => Ty::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => Ty::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let dims: [u64; 2] = [k as u64, rows as u64];
    let strides: [u64; 1] = [(k * dt.size()) as u64];
    let boxes: [u32; 2] = [64, box_rows];
    let elem_strides: [u32; 2] = [1, 1];
    // SAFETY: a zeroed tensor map is plain data; the driver overwrites all of it.
    let mut map: sys::CUtensorMap = unsafe { std::mem::zeroed() };
    // SAFETY: every pointer names a live local array of the length rank 2 requires; `ptr`
    // is a device allocation of at least rows·k elements.
    unsafe {
        sys::cuTensorMapEncodeTiled(
            &mut map,
            ty,
            2,
            ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem_strides.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .map_err(|e| {
        Error::driver(
            format!("cuTensorMapEncodeTiled ({what}: [{rows}, {k}] {dt}, box {box_rows}×64)"),
            e,
        )
    })?;
    Ok(map)
}

/// v6 with an explicit configuration (for autotuning).
pub fn run_with(cfg: &Config, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dev = device_of(g)?;
    check(V6, cfg, &dev, g)?;
    launch(V6, cfg, &dev, g, c, Target::Hand)
}

/// Which kernel a launch runs and what its epilogue parameters are: a hand kernel of
/// `MATMUL_SM90` (bias pointer and activation code), or a generated one (its source, symbol,
/// and the functor's parameters: a pointer an input, a full input's row stride after it).
enum Target<'a> {
    Hand,
    Generated {
        source: &'static KernelSource,
        symbol: String,
        epilogue: &'a [u64],
    },
}

/// Build the tensor maps and launch a checked configuration of v6 or v7. v6's third
/// parameter is c's pointer, v7's is c's tensor map (boxes of 64 rows × 64 columns, the
/// 128-byte swizzle span: one box per 64-column chunk of a consumer's 64 × bn sub-tile; the
/// store clips rows ≥ M and columns ≥ N).
fn launch(
    ver: Version,
    cfg: &Config,
    dev: &CudaDevice,
    g: &Gemm,
    c: &mut Tensor,
    target: Target,
) -> Result<()> {
    let dt = g.dtype();
    let (source, name) = match &target {
        Target::Hand => (&MATMUL_SM90, ver.symbol(cfg, dt)),
        Target::Generated { source, symbol, .. } => (*source, symbol.clone()),
    };
    let GemmBufs {
        a: a_buf,
        w: w_buf,
        bias: bias_buf,
        c: c_buf,
        ..
    } = gemm_bufs(ver.variant, g, c)?;

    let (a_ptr, _ga) = a_buf.device_ptr(&dev.stream);
    let (w_ptr, _gw) = w_buf.device_ptr(&dev.stream);
    let bias = bias_buf.map(|b| b.device_ptr(&dev.stream));
    let mut bias_ptr: u64 = bias.as_ref().map_or(0, |(p, _)| *p);
    let (c_ptr, _gc) = c_buf.device_ptr_mut(&dev.stream);
    let (c_align, align_why) = if ver.tma_store {
        (
            16,
            "a, w and c must start on 16-byte boundaries (TMA); use v5 for these buffers",
        )
    } else {
        (
            4,
            "a and w must start on 16-byte boundaries (TMA) and c on a 4-byte boundary; \
             use v5 for these buffers",
        )
    };
    if !a_ptr.is_multiple_of(16) || !w_ptr.is_multiple_of(16) || !c_ptr.is_multiple_of(c_align) {
        return Err(ver.unsupported(align_why.into()));
    }

    let mut ta = tensor_map(a_ptr, g.m, g.k, cfg.bm, dt, "a")?;
    let mut tw = tensor_map(w_ptr, g.n, g.k, cfg.bn, dt, "w")?;
    let mut c_arg: u64 = c_ptr;
    let mut tc = if ver.tma_store {
        Some(tensor_map(c_ptr, g.m, g.n, 64, dt, "c")?)
    } else {
        None
    };
    let c_param: *mut c_void = match tc.as_mut() {
        Some(map) => map as *mut sys::CUtensorMap as *mut c_void,
        None => &mut c_arg as *mut u64 as *mut c_void,
    };
    let (mut m, mut n, mut k) = (g.m as i32, g.n as i32, g.k as i32);
    let mut act = g.act.code();
    let mut group_m = cfg.group_m as i32;

    let tiles = cfg.tiles(g.m, g.n);
    let grid = tiles.min(dev.props.sm_count.max(1) as usize) as u32;
    let smem = ver.smem_bytes(cfg);

    // The kernel's parameters, in order: (ta, tw, c or tc, bias, M, N, K, act, group_m) for a
    // hand kernel; (ta, tw, c or tc, the epilogue's parameters, M, N, K, group_m) for a
    // generated one.
    let mut epilogue: Vec<u64> = match &target {
        Target::Hand => Vec::new(),
        Target::Generated { epilogue, .. } => epilogue.to_vec(),
    };
    let mut args: Vec<*mut c_void> = vec![
        &mut ta as *mut sys::CUtensorMap as *mut c_void,
        &mut tw as *mut sys::CUtensorMap as *mut c_void,
        c_param,
    ];
    match target {
        Target::Hand => args.push(&mut bias_ptr as *mut u64 as *mut c_void),
        Target::Generated { .. } => {
            args.extend(epilogue.iter_mut().map(|p| p as *mut u64 as *mut c_void))
        }
    }
    args.extend([
        &mut m as *mut i32 as *mut c_void,
        &mut n as *mut i32 as *mut c_void,
        &mut k as *mut i32 as *mut c_void,
    ]);
    if matches!(target, Target::Hand) {
        args.push(&mut act as *mut i32 as *mut c_void);
    }
    args.push(&mut group_m as *mut i32 as *mut c_void);
    // `args` point at live values whose types match the kernel's parameters (CUtensorMap ×2,
    // then c as a u64 pointer (v6) or a third CUtensorMap (v7), the bias pointer as u64 or the
    // generated epilogue's 8-byte pointers and strides, then the ints); the buffers they name
    // stay valid on this stream until the kernel has run (see `launch!`), and the guards above
    // (and the caller's, for the epilogue's inputs) are held until the launch is enqueued.
    launch_raw(dev, source, &name, grid, smem, &mut args)
}

/// Launch `name` of `source` on `grid` persistent CTAs of `THREADS` threads with `smem` bytes
/// of dynamic shared memory. `args` must point at live values matching the kernel's
/// parameters, naming buffers that stay valid on the device's stream until the kernel has run.
fn launch_raw(
    dev: &CudaDevice,
    source: &'static KernelSource,
    name: &str,
    grid: u32,
    smem: u32,
    args: &mut [*mut c_void],
) -> Result<()> {
    let f = dev.function(source, name)?;
    // This also makes the device's context current for the launch below.
    crate::runtime::launch::allow_dynamic_smem(dev, &f, name, smem as usize)?;
    // SAFETY: the caller's contract on `args`; the function and the stream are live, and the
    // callers check the shared memory against the device's opt-in limit.
    unsafe {
        sys::cuLaunchKernel(
            f.cu_function(),
            grid,
            1,
            1,
            THREADS,
            1,
            1,
            smem,
            dev.stream.cu_stream(),
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
    .map_err(launch_err(name))?;
    dev.after_launch(name)?;
    Ok(())
}

// ---- v7: v6 with an asynchronous (TMA store) epilogue -----------------------------------

/// The v7 variant's name (its autotune entries, error messages).
pub const VARIANT_V7: &str = "v7_wgmma_tma_store";

const V7: Version = Version {
    variant: VARIANT_V7,
    configs: CONFIGS_V7,
    tma_store: true,
};

impl Config {
    /// The v7 kernel this configuration launches for `dt` (bf16 or f16).
    pub fn symbol_v7(&self, dt: DType) -> String {
        format!(
            "matmul_v7_{}x{}x{}_s{}_{}",
            self.bm, self.bn, self.bk, self.stages, dt
        )
    }

    /// Dynamic shared memory of the v7 kernel (`V7Smem` in the .cu): the stages, two C
    /// buffers of 64 × bn 16-bit values (one per consumer warpgroup), 1 KiB of alignment
    /// slack and 2 × stages mbarriers.
    pub fn smem_bytes_v7(&self) -> u32 {
        self.stages * (self.bm + self.bn) * self.bk * 2
            + 2 * 64 * self.bn * 2
            + 1024
            + 2 * self.stages * 8
    }
}

/// Every v7 configuration, the default first. The (bm, bn, bk, stages) shapes must match the
/// `KL_V7_KERNEL` instantiations in `kernels/matmul_sm90.cu`. The 128×256 tile has one stage
/// fewer than v6's (3 × 48 KiB + 64 KiB of C buffers = 208 KiB), the 128×128 tile 5 stages
/// (160 KiB + 32 KiB).
pub const CONFIGS_V7: &[Config] = &[
    cfg("128x256x64_s3_g8", 256, 3, 8),
    cfg("128x256x64_s3_g4", 256, 3, 4),
    cfg("128x256x64_s3_g16", 256, 3, 16),
    cfg("128x128x64_s5_g8", 128, 5, 8),
    cfg("128x128x64_s5_g4", 128, 5, 4),
    cfg("128x128x64_s5_g16", 128, 5, 16),
];

/// The configurations `run_with_v7` accepts for `dt` (none for f32).
pub fn configs_v7(dt: DType) -> Vec<Config> {
    for_dtype(CONFIGS_V7, dt)
}

/// The v7 configuration named `name` for `dt` (an autotune entry's), if there is one.
pub fn config_v7(dt: DType, name: &str) -> Option<Config> {
    configs_v7(dt).into_iter().find(|c| c.name == name)
}

/// Every kernel `run_v7` or `run_with_v7` may launch for `dt`: the v7 kernels, plus v6's
/// default kernels, which they fall back to when c cannot take a TMA store.
pub fn symbols_v7(dt: DType) -> Vec<String> {
    let fallback = [CONFIGS[0], CONFIGS[3]];
    unique(
        configs_v7(dt)
            .iter()
            .map(|c| c.symbol_v7(dt))
            .chain(for_dtype(&fallback, dt).iter().map(|c| c.symbol(dt))),
    )
}

/// The configuration `run_v7` uses (see `default_in`).
pub fn default_config_v7(m: usize, n: usize, sm_count: u32) -> Config {
    default_in(CONFIGS_V7, m, n, sm_count)
}

/// v7 with the default configuration (a `GemmFn`). Falls back to v6 when c's rows are not
/// a multiple of 16 bytes (N not a multiple of 8) or c is not 16-byte aligned.
pub fn run_v7(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dev = device_of(g)?;
    let cfg = default_config_v7(g.m, g.n, dev.props.sm_count);
    run_with_v7(&cfg, g, c)
}

/// Whether c can be written by the TMA store: its row pitch N·size a multiple of 16 bytes
/// and its buffer 16-byte aligned (what `cuTensorMapEncodeTiled` requires).
fn c_fits_tma(g: &Gemm, c: &Tensor) -> Result<bool> {
    let dev = device_of(g)?;
    let buf = c
        .cuda_buf()
        .ok_or_else(|| Error::Invalid("matmul v7: c is not on CUDA".into()))?;
    let (ptr, _guard) = buf.device_ptr(&dev.stream);
    Ok((g.n * g.dtype().size()).is_multiple_of(16) && ptr.is_multiple_of(16))
}

/// v7 with an explicit configuration (for autotuning). Where c cannot take a TMA store
/// (N·size not a multiple of 16 bytes, or c not 16-byte aligned) it runs v6's default
/// configuration instead, so every shape v6 accepts gives a correct result.
pub fn run_with_v7(cfg: &Config, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dev = device_of(g)?;
    check(V7, cfg, &dev, g)?;
    if !c_fits_tma(g, c)? {
        return run_v6(g, c);
    }
    launch(V7, cfg, &dev, g, c, Target::Hand)
}

// ---- v7 with transposed operands: c = op(a)·op(b) ---------------------------------------------

/// v7's body with either operand read MN-major (wgmma's transpose bits), and an epilogue that
/// stores the product or multiplies it by GeLU's derivative (`kernels/matmul_sm90_layouts.cu`).
pub static MATMUL_SM90_LAYOUTS: KernelSource = KernelSource {
    file: "matmul_sm90_layouts.cu",
    src: include_str!("../../../kernels/matmul_sm90_layouts.cu"),
};

/// The layouts the layout kernels are compiled for, as BLAS's row-major names read ("nt" is
/// v7's own c = a·bᵀ), and each one's name in errors.
const LAYOUTS: [(&str, &str); 4] = [
    ("nt", "v7_wgmma_tma_store (nt)"),
    ("nn", "v7_wgmma_tma_store (nn)"),
    ("tn", "v7_wgmma_tma_store (tn)"),
    ("tt", "v7_wgmma_tma_store (tt)"),
];

/// The layout of `op(a)·op(b)` (a transposed, b transposed): its name and its name in errors.
fn layout_of(ta: bool, tb: bool) -> (&'static str, &'static str) {
    LAYOUTS[match (ta, tb) {
        (false, true) => 0,
        (false, false) => 1,
        (true, false) => 2,
        (true, true) => 3,
    }]
}

fn layout_symbol(layout: &str, c: &Config, dt: DType) -> String {
    format!(
        "matmul_v7_{layout}_{}x{}x{}_s{}_{dt}",
        c.bm, c.bn, c.bk, c.stages
    )
}

fn aux_symbol(c: &Config, dt: DType) -> String {
    format!(
        "matmul_v7_aux_{}x{}x{}_s{}_{dt}",
        c.bm, c.bn, c.bk, c.stages
    )
}

/// Every kernel [`run_rm`] and [`run_aux`] may launch for `dt`: each layout, and the
/// two-output forward, in v7's two default tiles.
pub fn layout_symbols(dt: DType) -> Vec<String> {
    if !supports(dt) {
        return Vec::new();
    }
    let tiles = [CONFIGS_V7[0], CONFIGS_V7[3]];
    LAYOUTS
        .iter()
        .flat_map(|l| tiles.map(|c| layout_symbol(l.0, &c, dt)))
        .chain(tiles.map(|c| aux_symbol(&c, dt)))
        .collect()
}

/// `c[c_row .. c_row + M] = op(a)·op(b)` on Hopper's tensor cores, where `op(x)` is `xᵀ` when
/// its flag is set: a is `[M, K]` (or `[K, M]` with `ta`), b `[K, N]` (or `[N, K]` with `tb`), c
/// has N columns and at least `c_row + M` rows. Each operand is read as it lies, K-major or
/// MN-major, with no transposed copy: the products a layer's backward needs, `dX = dZ·W`
/// (`ta = tb = false`) and `dW = dZᵀ·H` (`ta = true`), in one kernel each. With
/// `grad = Some((z, act))`, the epilogue multiplies the product by the derivative of `act` (a
/// GeLU) at `z` (`[M, N]`, contiguous): GeLU's backward fused into the product that gives its
/// incoming gradient. bf16 or f16, compute capability 9.0; every row pitch (of a, b and c) a
/// multiple of 16 bytes and a, b and c's rows 16-byte aligned (the TMA tensor maps); M, N, K
/// any size from 1.
pub fn run_rm(
    a: &Tensor,
    ta: bool,
    b: &Tensor,
    tb: bool,
    grad: Option<(&Tensor, Activation)>,
    c: &mut Tensor,
    c_row: usize,
) -> Result<()> {
    let who = format!("matmul v7 ({})", layout_of(ta, tb).0);
    let dims = row_major_dims(&who, a, ta, b, tb, c, c_row)?;
    let dev = device_of_tensor(&who, a)?;
    let tail = match grad {
        None => Tail::Grad {
            z: 0,
            act: Activation::None.code(),
        },
        Some((z, g)) => {
            like_product(&who, z, "z", dims.0, dims.2, a.dtype())?;
            Tail::Grad {
                z: read_ptr(&who, z, "z", &dev)?,
                act: g.code(),
            }
        }
    };
    layout_launch(&who, &dev, (a, ta), (b, tb), c, c_row, dims, tail)
}

/// A Linear layer's training forward in one product: `c = act(a·wᵀ + bias)` and the
/// pre-activation `z = a·wᵀ + bias` (what GeLU's backward needs), as cuBLASLt's GELU_AUX_BIAS.
/// a `[M, K]`, w `[N, K]`, bias `[N]`, c and z `[M, N]`; the limits of [`run_rm`], and z 4-byte
/// aligned (it is written in pairs).
pub fn run_aux(
    a: &Tensor,
    w: &Tensor,
    bias: &Tensor,
    act: Activation,
    c: &mut Tensor,
    z: &mut Tensor,
) -> Result<()> {
    let who = "matmul v7 (bias + activation, keeping the pre-activation)".to_string();
    let dims = row_major_dims(&who, a, false, w, true, c, 0)?;
    let (m, n) = (dims.0, dims.2);
    like_product(&who, z, "z", m, n, a.dtype())?;
    bias_of_product(&who, bias, n, a.dtype())?;
    let dev = device_of_tensor(&who, a)?;
    let pz = write_ptr(&who, z, "z", &dev)?;
    if !pz.is_multiple_of(4) {
        return Err(Error::Invalid(format!("{who}: z must be 4-byte aligned")));
    }
    let tail = Tail::Aux {
        bias: read_ptr(&who, bias, "bias", &dev)?,
        z: pz,
        act: act.code(),
    };
    layout_launch(&who, &dev, (a, false), (w, true), c, 0, dims, tail)
}

/// The epilogue of a layout kernel and its parameters: the product, or times GeLU's derivative
/// at `z` (`act` none: z unused); or bias + activation, the pre-activation written to `z`.
enum Tail {
    Grad { z: u64, act: i32 },
    Aux { bias: u64, z: u64, act: i32 },
}

/// Check and launch a layout kernel for `c[c_row..] = op(a)·op(b)` of `dims` (M, K, N, as
/// [`row_major_dims`] gave them; see [`run_rm`] for the operands and their limits).
#[allow(clippy::too_many_arguments)]
fn layout_launch(
    who: &str,
    dev: &CudaDevice,
    (a, ta): (&Tensor, bool),
    (b, tb): (&Tensor, bool),
    c: &mut Tensor,
    c_row: usize,
    (m, k, n): (usize, usize, usize),
    tail: Tail,
) -> Result<()> {
    let (layout, variant) = layout_of(ta, tb);
    let ver = Version { variant, ..V7 };
    let dt = a.dtype();
    check_hopper(ver, dev, dt, "")?;
    let cfg = default_config_v7(m, n, dev.props.sm_count);
    check_size(ver, &cfg, dev, m, n, k)?;
    // Every row pitch a multiple of 16 bytes: what each TMA tensor map needs.
    let stored_cols = [("a", a.shape()[1]), ("b", b.shape()[1]), ("c", n)];
    for (what, cols) in stored_cols {
        if !cols.is_multiple_of(8) {
            return Err(ver.unsupported(format!(
                "{what} has {cols} columns: TMA needs rows of a multiple of 16 bytes (8 elements)"
            )));
        }
    }
    let (pa, pb) = (read_ptr(who, a, "a", dev)?, read_ptr(who, b, "b", dev)?);
    let pc = write_ptr(who, c, "c", dev)? + (c_row * n * dt.size()) as u64;
    if [pa, pb, pc].iter().any(|p| !p.is_multiple_of(16)) {
        return Err(
            ver.unsupported("a, b and c's first row must start on 16-byte boundaries (TMA)".into())
        );
    }
    let smem = ver.smem_bytes(&cfg);
    // K-major operands are read in boxes of (tile rows × 64 K-columns), MN-major ones in boxes
    // of 64 K-rows × 64 columns (see `tma_load_operand` in the .cu).
    let mut tmap_a = if ta {
        tensor_map(pa, k, m, 64, dt, "a (MN-major)")?
    } else {
        tensor_map(pa, m, k, cfg.bm, dt, "a")?
    };
    let mut tmap_b = if tb {
        tensor_map(pb, n, k, cfg.bn, dt, "b")?
    } else {
        tensor_map(pb, k, n, 64, dt, "b (MN-major)")?
    };
    let mut tmap_c = tensor_map(pc, m, n, 64, dt, "c")?;
    let (mut mi, mut ni, mut ki) = (m as i32, n as i32, k as i32);
    let mut group_m = cfg.group_m as i32;
    let grid = cfg.tiles(m, n).min(dev.props.sm_count.max(1) as usize) as u32;
    let mut args: Vec<*mut c_void> = vec![
        &mut tmap_a as *mut sys::CUtensorMap as *mut c_void,
        &mut tmap_b as *mut sys::CUtensorMap as *mut c_void,
        &mut tmap_c as *mut sys::CUtensorMap as *mut c_void,
    ];
    let (name, mut ptrs, mut act) = match tail {
        Tail::Grad { z, act } => (layout_symbol(layout, &cfg, dt), vec![z], act),
        Tail::Aux { bias, z, act } => (aux_symbol(&cfg, dt), vec![bias, z], act),
    };
    args.extend(ptrs.iter_mut().map(|p| p as *mut u64 as *mut c_void));
    args.extend([
        &mut mi as *mut i32 as *mut c_void,
        &mut ni as *mut i32 as *mut c_void,
        &mut ki as *mut i32 as *mut c_void,
        &mut act as *mut i32 as *mut c_void,
        &mut group_m as *mut i32 as *mut c_void,
    ]);
    // `args` match the kernel's parameters (three CUtensorMaps, the epilogue's pointers as u64,
    // five ints); the tensors stay borrowed until the launch is enqueued, and the stream orders
    // their later use after it.
    launch_raw(dev, &MATMUL_SM90_LAYOUTS, &name, grid, smem, &mut args)
}

// ---- generated epilogues --------------------------------------------------------------------

/// The tiles a generated GEMM instantiates: every tile shape of v7's configurations (so that
/// the configuration autotune kept for v7 at a shape has its kernel), then v6's two defaults
/// (for outputs a TMA store cannot take).
pub fn generated_tiles() -> Vec<Tile> {
    let tile = |c: &Config, tma_store: bool| Tile {
        tma_store,
        bn: c.bn,
        stages: c.stages,
    };
    let mut v: Vec<Tile> = Vec::new();
    for t in CONFIGS_V7
        .iter()
        .map(|c| tile(c, true))
        .chain([tile(&CONFIGS[0], false), tile(&CONFIGS[3], false)])
    {
        if !v.contains(&t) {
            v.push(t);
        }
    }
    v
}

/// Run a GEMM whose epilogue kernlab's compiler generated ([`GemmKernel`], built with
/// [`generated_tiles`]): `c = epi(a·wᵀ)`, the epilogue's inputs by name in `epilogue`. The
/// configuration is `tuned` (v7's autotuned one for the shape, where there is one), else v7's
/// default for the shape, or v6's where c cannot take a TMA store; the checks are v6's and
/// v7's, plus each epilogue input's dtype, device and extent.
pub fn run_generated(
    k: &GemmKernel,
    g: &Gemm,
    epilogue: &[(&str, &Tensor)],
    tuned: Option<Config>,
    c: &mut Tensor,
) -> Result<()> {
    let dev = device_of(g)?;
    let what = "compiled";
    let tma = c_fits_tma(g, c)?;
    let (ver, cfg) = match tuned {
        Some(t) if tma => (V7, t),
        _ if tma => (V7, default_config_v7(g.m, g.n, dev.props.sm_count)),
        _ => (V6, default_config(g.m, g.n, dev.props.sm_count)),
    };
    let ver = Version {
        variant: what,
        ..ver
    };
    check(ver, &cfg, &dev, g)?;
    if g.dtype() != k.dtype {
        return Err(Error::Invalid(format!(
            "matmul/{what}: the kernel was generated for {}, the operands are {}",
            k.dtype,
            g.dtype()
        )));
    }
    let index = k
        .tiles
        .iter()
        .position(|t| (t.tma_store, t.bn, t.stages) == (tma, cfg.bn, cfg.stages))
        .ok_or_else(|| {
            Error::Invalid(format!(
                "matmul/{what}: the generated kernel has no {} tile 128x{}x64_s{}",
                if tma { "v7" } else { "v6" },
                cfg.bn,
                cfg.stages
            ))
        })?;
    let mut guards = Vec::new();
    let mut params: Vec<u64> = Vec::new();
    for (name, layout) in &k.inputs {
        let (buf, ld) = crate::compiler::kernel::operand(
            &format!("matmul/{what}"),
            epilogue,
            name,
            *layout,
            g.dtype(),
            dev.ordinal,
            (g.m, g.n),
            false,
        )?;
        let (ptr, guard) = buf.device_ptr(&dev.stream);
        guards.push(guard);
        params.push(ptr);
        params.extend(ld.map(|l| l as u64));
    }
    launch(
        ver,
        &cfg,
        &dev,
        g,
        c,
        Target::Generated {
            source: k.source,
            symbol: k.symbols[index].clone(),
            epilogue: &params,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbols_are_exact_and_dtype_specific() {
        assert!(symbols(DType::F32).is_empty());
        assert_eq!(
            symbols(DType::BF16),
            vec![
                "matmul_v6_128x256x64_s4_bf16",
                "matmul_v6_128x128x64_s6_bf16"
            ]
        );
        assert_eq!(symbols(DType::F16).len(), 2);
    }

    #[test]
    fn smem_fits_hopper() {
        for c in CONFIGS {
            assert!(
                c.smem_bytes() <= 232_448,
                "{} needs {}",
                c.name,
                c.smem_bytes()
            );
        }
        assert_eq!(CONFIGS[0].smem_bytes(), 4 * 49_152 + 1024 + 64);
    }

    #[test]
    fn default_config_by_size() {
        assert_eq!(default_config(8192, 8192, 132).name, "128x256x64_s4_g8");
        assert_eq!(default_config(512, 512, 132).name, "128x128x64_s6_g8");
    }

    #[test]
    fn v7_symbols_configs_and_smem() {
        assert!(symbols_v7(DType::F32).is_empty());
        assert!(configs_v7(DType::F32).is_empty());
        assert_eq!(
            symbols_v7(DType::BF16),
            vec![
                "matmul_v7_128x256x64_s3_bf16",
                "matmul_v7_128x128x64_s5_bf16",
                "matmul_v6_128x256x64_s4_bf16",
                "matmul_v6_128x128x64_s6_bf16"
            ]
        );
        assert_eq!(symbols_v7(DType::F16).len(), 4);
        assert_eq!(configs_v7(DType::F16).len(), CONFIGS_V7.len());
        for c in CONFIGS_V7 {
            assert!(
                c.smem_bytes_v7() <= 232_448,
                "{} needs {}",
                c.name,
                c.smem_bytes_v7()
            );
        }
        assert_eq!(
            CONFIGS_V7[0].smem_bytes_v7(),
            3 * 49_152 + 65_536 + 1024 + 48
        );
        assert_eq!(
            CONFIGS_V7[3].smem_bytes_v7(),
            5 * 32_768 + 32_768 + 1024 + 80
        );
        assert_eq!(default_config_v7(8192, 8192, 132).name, "128x256x64_s3_g8");
        assert_eq!(default_config_v7(512, 512, 132).name, "128x128x64_s5_g8");
    }
}
