//! The hand-written CUDA matmul versions v1–v5 (kernels/matmul.cu), the CS336 kernels
//! lecture's story: `c[M,N] = act(a[M,K] · w[N,K]ᵀ + bias[N])`.
//!
//! * `v1_naive`: one thread per output, a dot product from global memory.
//! * `v2_smem`: 32×32 shared-memory tiles, one output per thread.
//! * `v3_regs`: 2-D register blocking (a TM×TN micro-tile per thread), 16-byte loads,
//!   row-major tile order.
//! * `v4_grouped`: v3's kernel in the grouped (L2-friendly) tile order, GROUP_M tile rows per
//!   group.
//! * `v5_mma`: tensor cores (`mma.sync` m16n8k16, `ldmatrix`, a `cp.async` multi-stage
//!   pipeline), grouped order; bf16 and f16, sm_80+.
//!
//! v3, v4 and v5 have a configuration space ([`configs`]) for the autotuner; their plain
//! launchers ([`run_v3`], …) pick one with [`default_config`]. Every launch is 1-D: the block
//! index is the linear output-tile id, which the kernel maps to a (row, column) tile.

use super::{gemm_bufs, Activation, Gemm, GemmBufs};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::aligned16;
use crate::runtime::launch::launch;
use crate::runtime::tensor::Tensor;
use cudarc::driver::LaunchConfig;

/// Matmul / linear, numbered SIMT and `mma.sync` versions (v1–v5), one shared epilogue.
pub static MATMUL: KernelSource = KernelSource {
    file: "matmul.cu",
    src: include_str!("../../../kernels/matmul.cu"),
};

/// One launchable configuration of v3, v4 or v5.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulConfig {
    /// Unique within the version: the tile tag, plus `_g{GROUP_M}` for v4 and v5.
    pub name: &'static str,
    /// The tile part of the kernel symbol: `BMxBNxBK_TMxTN` (v3/v4, TM×TN the per-thread
    /// micro-tile) or `BMxBNxBK_wWMxWN_sS` (v5: WM×WN per warp, S pipeline stages).
    pub tile: &'static str,
    pub bm: usize,
    pub bn: usize,
    pub bk: usize,
    /// Threads per block.
    pub threads: u32,
    /// Shared-memory buffers along K: 2 (v3/v4's register-staged double buffer) or v5's
    /// cp.async pipeline depth.
    pub stages: usize,
    /// Tile rows per group of the tile order (1 = row-major; v3 is always 1).
    pub group_m: i32,
    /// Dynamic shared memory per block: v5's `stages` × (BM + BN) rows of 64 bytes (the
    /// output slab of the store reuses it); 0 for v3/v4 (static shared memory).
    pub dynamic_smem: usize,
}

macro_rules! mm_cfg {
    ($name:expr, $tile:literal, $bm:literal, $bn:literal, $bk:literal, $threads:literal,
     $stages:literal, $g:literal, $smem:expr) => {
        MatmulConfig {
            name: $name,
            tile: $tile,
            bm: $bm,
            bn: $bn,
            bk: $bk,
            threads: $threads,
            stages: $stages,
            group_m: $g,
            dynamic_smem: $smem,
        }
    };
}

/// One tile shape in the four GROUP_M values the tuner tries (1, 4, 8, 16).
macro_rules! grouped {
    ($tile:literal, $bm:literal, $bn:literal, $bk:literal, $threads:literal, $stages:literal,
     $smem:expr) => {
        [
            mm_cfg!(
                concat!($tile, "_g1"),
                $tile,
                $bm,
                $bn,
                $bk,
                $threads,
                $stages,
                1,
                $smem
            ),
            mm_cfg!(
                concat!($tile, "_g4"),
                $tile,
                $bm,
                $bn,
                $bk,
                $threads,
                $stages,
                4,
                $smem
            ),
            mm_cfg!(
                concat!($tile, "_g8"),
                $tile,
                $bm,
                $bn,
                $bk,
                $threads,
                $stages,
                8,
                $smem
            ),
            mm_cfg!(
                concat!($tile, "_g16"),
                $tile,
                $bm,
                $bn,
                $bk,
                $threads,
                $stages,
                16,
                $smem
            ),
        ]
    };
}

/// v5's dynamic shared memory: `stages` buffers of (BM + BN) rows × 32 16-bit elements.
const fn v5_smem(bm: usize, bn: usize, stages: usize) -> usize {
    stages * (bm + bn) * 64
}

/// v3's tile shapes (row-major order). 256 threads each: 8×8 per thread on 128×128, 8×4 on
/// 128×64, 4×4 on 64×64 (for problems with few tiles).
static V3: [MatmulConfig; 3] = [
    mm_cfg!("128x128x8_8x8", "128x128x8_8x8", 128, 128, 8, 256, 2, 1, 0),
    mm_cfg!("128x64x8_8x4", "128x64x8_8x4", 128, 64, 8, 256, 2, 1, 0),
    mm_cfg!("64x64x8_4x4", "64x64x8_4x4", 64, 64, 8, 256, 2, 1, 0),
];

/// v4: v3's shapes × GROUP_M ∈ {1, 4, 8, 16} (g1 is v3's order: the L2 effect alone).
static V4: [[MatmulConfig; 4]; 3] = [
    grouped!("128x128x8_8x8", 128, 128, 8, 256, 2, 0),
    grouped!("128x64x8_8x4", 128, 64, 8, 256, 2, 0),
    grouped!("64x64x8_4x4", 64, 64, 8, 256, 2, 0),
];

/// v5's shapes × GROUP_M: 8 warps of 64×32 on 128×128 (4 or 3 stages, 64 / 48 KB), 8 warps
/// of 64×64 on 128×256 (96 KB, one block per SM: large problems), 4 warps of 64×32 on
/// 128×64 and of 32×32 on 64×64 (small problems).
static V5: [[MatmulConfig; 4]; 5] = [
    grouped!(
        "128x128x32_w64x32_s4",
        128,
        128,
        32,
        256,
        4,
        v5_smem(128, 128, 4)
    ),
    grouped!(
        "128x128x32_w64x32_s3",
        128,
        128,
        32,
        256,
        3,
        v5_smem(128, 128, 3)
    ),
    grouped!(
        "128x256x32_w64x64_s4",
        128,
        256,
        32,
        256,
        4,
        v5_smem(128, 256, 4)
    ),
    grouped!(
        "128x64x32_w64x32_s4",
        128,
        64,
        32,
        128,
        4,
        v5_smem(128, 64, 4)
    ),
    grouped!("64x64x32_w32x32_s4", 64, 64, 32, 128, 4, v5_smem(64, 64, 4)),
];

/// The tile v3/v4 run when 16-byte loads do not apply (K not a multiple of the 16-byte pack,
/// or an unaligned base): the only shape compiled with scalar loads, whatever was asked for.
const SCALAR_TILE: &str = "64x64x8_4x4";

/// v4's configuration of the scalar-load shape with GROUP_M `group` (1 = v3's order).
fn scalar_config(group: i32) -> MatmulConfig {
    V4.as_flattened()
        .iter()
        .find(|c| c.tile == SCALAR_TILE && c.group_m == group)
        .copied()
        .unwrap_or(V4[2][0])
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum V {
    V1,
    V2,
    V3,
    V4,
    V5,
    V8,
}

const KNOWN: &str = "v1_naive, v2_smem, v3_regs, v4_grouped, v5_mma, v8_skinny";

/// A version by name: `v3_regs`, `v3` or `cuda/v3_regs`.
fn parse(variant: &str) -> Result<V> {
    let v = variant.strip_prefix("cuda/").unwrap_or(variant);
    Ok(match v {
        "v1_naive" | "v1" => V::V1,
        "v2_smem" | "v2" => V::V2,
        "v3_regs" | "v3" => V::V3,
        "v4_grouped" | "v4" => V::V4,
        "v5_mma" | "v5" => V::V5,
        "v8_skinny" | "v8" => V::V8,
        _ => {
            return Err(Error::UnknownVariant {
                op: "matmul".into(),
                variant: variant.into(),
                known: KNOWN.into(),
            })
        }
    })
}

fn version_name(v: V) -> &'static str {
    match v {
        V::V1 => "v1_naive",
        V::V2 => "v2_smem",
        V::V3 => "v3_regs",
        V::V4 => "v4_grouped",
        V::V5 => "v5_mma",
        V::V8 => "v8_skinny",
    }
}

/// The configuration space of a version for a dtype (empty for v1/v2, which have none, for
/// v5 with f32, and for unknown names).
pub fn configs(variant: &str, dt: DType) -> Vec<MatmulConfig> {
    match parse(variant) {
        Ok(V::V3) => V3.to_vec(),
        Ok(V::V4) => V4.iter().flatten().copied().collect(),
        Ok(V::V5) if dt != DType::F32 => V5.iter().flatten().copied().collect(),
        _ => Vec::new(),
    }
}

/// Every kernel symbol a version may launch for a dtype (empty for unknown names and for v5
/// with f32). v5 includes v4's scalar-load kernels, its fallback for K % 8 ≠ 0.
pub fn symbols(variant: &str, dt: DType) -> Vec<String> {
    let simt = |prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = V3
            .iter()
            .map(|c| format!("matmul_{prefix}_{}_vec_{dt}", c.tile))
            .collect();
        v.push(format!("matmul_{prefix}_{SCALAR_TILE}_scalar_{dt}"));
        v
    };
    match parse(variant) {
        Ok(V::V1) => vec![format!("matmul_v1_naive_{dt}")],
        Ok(V::V2) => vec![format!("matmul_v2_smem_{dt}")],
        Ok(V::V8) => vec![format!("matmul_v8_skinny_{dt}")],
        Ok(V::V3) => simt("v3_regs"),
        Ok(V::V4) => simt("v4_grouped"),
        Ok(V::V5) if dt != DType::F32 => {
            let mut v: Vec<String> = V5
                .iter()
                .map(|g| format!("matmul_v5_mma_{}_{dt}", g[0].tile))
                .collect();
            v.push(format!("matmul_v4_grouped_{SCALAR_TILE}_scalar_{dt}"));
            v
        }
        _ => Vec::new(),
    }
}

/// The configuration a version's plain launcher runs: the largest tile that still gives
/// every SM a block (v5: 128×256 once there are four blocks per SM of it), GROUP_M 8 for the
/// grouped versions. v1/v2 have no configurations; for them (and unknown names) this is v4's
/// choice.
pub fn default_config(variant: &str, g: &Gemm) -> MatmulConfig {
    let sms =
        g.a.device()
            .cuda()
            .map(|d| d.props.sm_count as usize)
            .unwrap_or(132);
    let tiles = |bm: usize, bn: usize| g.m.div_ceil(bm) * g.n.div_ceil(bn);
    let find = |list: &[MatmulConfig], tile: &str, group: i32| -> MatmulConfig {
        *list
            .iter()
            .find(|c| c.tile == tile && c.group_m == group)
            .unwrap_or(&list[0])
    };
    let simt_tile = if tiles(128, 128) >= sms {
        "128x128x8_8x8"
    } else if tiles(128, 64) >= sms {
        "128x64x8_8x4"
    } else {
        "64x64x8_4x4"
    };
    match parse(variant) {
        Ok(V::V3) => find(&V3, simt_tile, 1),
        Ok(V::V5) => {
            let tile = if tiles(128, 256) >= 4 * sms {
                "128x256x32_w64x64_s4"
            } else if tiles(128, 128) >= sms {
                "128x128x32_w64x32_s4"
            } else if tiles(128, 64) >= sms {
                "128x64x32_w64x32_s4"
            } else {
                "64x64x32_w32x32_s4"
            };
            find(V5.as_flattened(), tile, 8)
        }
        _ => find(V4.as_flattened(), simt_tile, 8),
    }
}

// ---- launching ---------------------------------------------------------------------------------

fn op_name(g: &Gemm) -> &'static str {
    if g.bias.is_some() || g.act != Activation::None {
        "linear"
    } else {
        "matmul"
    }
}

fn unsupported(g: &Gemm, v: V, why: String) -> Error {
    Error::UnsupportedShape {
        op: op_name(g).into(),
        variant: version_name(v).into(),
        why,
    }
}

/// M, N, K as the kernels' `int`s, and a grid of `blocks` within the x limit.
fn check_dims(g: &Gemm, v: V, blocks: usize) -> Result<()> {
    let lim = i32::MAX as usize;
    if g.m == 0 || g.n == 0 || g.k == 0 {
        return Err(unsupported(
            g,
            v,
            format!(
                "M = {}, N = {}, K = {}: each must be at least 1",
                g.m, g.n, g.k
            ),
        ));
    }
    if g.m > lim || g.n > lim || g.k > lim {
        return Err(unsupported(
            g,
            v,
            format!(
                "M = {}, N = {}, K = {}: each must be below 2^31",
                g.m, g.n, g.k
            ),
        ));
    }
    if blocks > lim {
        return Err(unsupported(
            g,
            v,
            format!(
                "{}×{} needs {blocks} blocks: over the grid limit of 2^31 − 1",
                g.m, g.n
            ),
        ));
    }
    Ok(())
}

/// Launch one matmul kernel: `(a, w, bias or null, c, M, N, K, act)`, then `group_m` for the
/// versions that take it.
fn launch_gemm(
    io: GemmBufs,
    g: &Gemm,
    name: &str,
    cfg: LaunchConfig,
    group_m: Option<i32>,
) -> Result<()> {
    let (m, n, k, act) = (g.m as i32, g.n as i32, g.k as i32, g.act.code());
    let null = 0u64; // a null `const T*` (CUdeviceptr)
    let GemmBufs { dev, a, w, bias, c } = io;
    match (bias, group_m) {
        (Some(b), None) => launch!(dev, &MATMUL, name, cfg, [a, w, b, c, &m, &n, &k, &act]),
        (None, None) => launch!(dev, &MATMUL, name, cfg, [a, w, &null, c, &m, &n, &k, &act]),
        (Some(b), Some(gm)) => {
            launch!(dev, &MATMUL, name, cfg, [a, w, b, c, &m, &n, &k, &act, &gm])
        }
        (None, Some(gm)) => {
            launch!(
                dev,
                &MATMUL,
                name,
                cfg,
                [a, w, &null, c, &m, &n, &k, &act, &gm]
            )
        }
    }
    Ok(())
}

fn cfg_1d(blocks: usize, threads: u32, smem: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem as u32,
    }
}

/// v1: one thread per output; blocks of 256 threads cover 8 rows × 32 columns.
pub fn run_v1(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let blocks = g.m.div_ceil(8) * g.n.div_ceil(32);
    check_dims(g, V::V1, blocks)?;
    let io = gemm_bufs(version_name(V::V1), g, c)?;
    let name = format!("matmul_v1_naive_{}", g.dtype());
    launch_gemm(io, g, &name, cfg_1d(blocks, 256, 0), None)
}

/// The rows v8 takes: its warps keep this many accumulators.
pub const SKINNY_ROWS: usize = 8;

/// v8: a warp per output column for all M ≤ [`SKINNY_ROWS`] rows, w streamed once in 16-byte
/// packs (scalar loads where K is not a multiple of the pack or a base is unaligned).
pub fn run_v8(g: &Gemm, c: &mut Tensor) -> Result<()> {
    if g.m > SKINNY_ROWS {
        return Err(unsupported(
            g,
            V::V8,
            format!(
                "M = {}: v8 is for products of at most {SKINNY_ROWS} rows (batch-1 inference); \
                 a tiled version runs more",
                g.m
            ),
        ));
    }
    let blocks = g.n.div_ceil(8);
    check_dims(g, V::V8, blocks)?;
    let io = gemm_bufs(version_name(V::V8), g, c)?;
    let pack = 16 / g.dtype().size();
    let vec = g.k.is_multiple_of(pack) && aligned16(&io.dev, io.a) && aligned16(&io.dev, io.w);
    let name = format!("matmul_v8_skinny_{}", g.dtype());
    launch_gemm(io, g, &name, cfg_1d(blocks, 256, 0), Some(vec as i32))
}

/// v2: 32×32 shared-memory tiles, 1024 threads (one output each) per block.
pub fn run_v2(g: &Gemm, c: &mut Tensor) -> Result<()> {
    let blocks = g.m.div_ceil(32) * g.n.div_ceil(32);
    check_dims(g, V::V2, blocks)?;
    let io = gemm_bufs(version_name(V::V2), g, c)?;
    let name = format!("matmul_v2_smem_{}", g.dtype());
    launch_gemm(io, g, &name, cfg_1d(blocks, 1024, 0), None)
}

/// v3: register blocking, row-major tile order, in [`default_config`]'s shape.
pub fn run_v3(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_simt(V::V3, &default_config("v3_regs", g), g, c)
}

/// v4: v3's kernel in the grouped tile order (GROUP_M 8), in [`default_config`]'s shape.
pub fn run_v4(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_simt(V::V4, &default_config("v4_grouped", g), g, c)
}

/// v5: tensor cores, in [`default_config`]'s shape. bf16/f16 on sm_80+. When K is not a
/// multiple of 8 (16-byte cp.async rows) or a base is not 16-byte aligned it runs v4's
/// scalar-load kernel instead (GROUP_M 8): correct for any K, SIMT speed.
pub fn run_v5(g: &Gemm, c: &mut Tensor) -> Result<()> {
    run_mma(&default_config("v5_mma", g), g, c)
}

/// Run a version (`v3_regs`, `v4_grouped`, `v5_mma`) in a configuration from [`configs`].
/// v3/v4 run the 16-byte-load kernel of the configuration's shape when K is a multiple of
/// the pack and the bases are aligned, else the 64×64 scalar-load kernel; v5 falls back as
/// [`run_v5`] says.
pub fn run_with(variant: &str, cfg: &MatmulConfig, g: &Gemm, c: &mut Tensor) -> Result<()> {
    match parse(variant)? {
        v @ (V::V3 | V::V4) => run_simt(v, cfg, g, c),
        V::V5 => run_mma(cfg, g, c),
        v => Err(unsupported(
            g,
            v,
            "has no configurations (run_with takes v3_regs, v4_grouped or v5_mma)".into(),
        )),
    }
}

fn run_simt(v: V, cfg: &MatmulConfig, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dt = g.dtype();
    let io = gemm_bufs(version_name(v), g, c)?;
    let pack = 16 / dt.size();
    let vec = g.k.is_multiple_of(pack) && aligned16(&io.dev, io.a) && aligned16(&io.dev, io.w);
    // The scalar-load kernel exists in one shape only (see SCALAR_TILE).
    let (tile, bm, bn, threads) = if vec {
        (cfg.tile, cfg.bm, cfg.bn, cfg.threads)
    } else {
        let s = scalar_config(1);
        (s.tile, s.bm, s.bn, s.threads)
    };
    let (tiles_m, tiles_n) = (g.m.div_ceil(bm), g.n.div_ceil(bn));
    check_dims(g, v, tiles_m * tiles_n)?;
    let kind = if vec { "vec" } else { "scalar" };
    let launch_cfg = cfg_1d(tiles_m * tiles_n, threads, 0);
    if v == V::V3 {
        let name = format!("matmul_v3_regs_{tile}_{kind}_{dt}");
        launch_gemm(io, g, &name, launch_cfg, None)
    } else {
        let group = cfg
            .group_m
            .clamp(1, tiles_m.clamp(1, i32::MAX as usize) as i32);
        let name = format!("matmul_v4_grouped_{tile}_{kind}_{dt}");
        launch_gemm(io, g, &name, launch_cfg, Some(group))
    }
}

fn run_mma(cfg: &MatmulConfig, g: &Gemm, c: &mut Tensor) -> Result<()> {
    let dt = g.dtype();
    if dt == DType::F32 {
        return Err(Error::UnsupportedDtype {
            op: op_name(g).into(),
            variant: "v5_mma".into(),
            dtype: dt,
            supported: "bf16, f16".into(),
        });
    }
    let io = gemm_bufs(version_name(V::V5), g, c)?;
    let cc = io.dev.props.compute_capability;
    if cc.0 < 8 {
        return Err(unsupported(
            g,
            V::V5,
            format!(
                "mma.sync on bf16/f16 and cp.async need sm_80 or newer (this is {})",
                io.dev.arch
            ),
        ));
    }
    let cp_async_ok = g.k.is_multiple_of(8) && aligned16(&io.dev, io.a) && aligned16(&io.dev, io.w);
    if !cp_async_ok {
        // 16-byte cp.async cannot copy these rows: v4's scalar-load kernel, any K.
        drop(io);
        return run_simt(V::V4, &scalar_config(8), g, c);
    }
    let (tiles_m, tiles_n) = (g.m.div_ceil(cfg.bm), g.n.div_ceil(cfg.bn));
    check_dims(g, V::V5, tiles_m * tiles_n)?;
    let smem = cfg.dynamic_smem;
    if smem > io.dev.props.max_smem_per_block_optin {
        return Err(unsupported(
            g,
            V::V5,
            format!(
                "configuration {} needs {smem} bytes of shared memory per block; this GPU allows {}",
                cfg.name, io.dev.props.max_smem_per_block_optin
            ),
        ));
    }
    let name = format!("matmul_v5_mma_{}_{dt}", cfg.tile);
    if smem > 48 * 1024 {
        // The attribute holds for the launch! below (the same cached CUfunction).
        let f = io.dev.function(&MATMUL, &name)?;
        crate::runtime::launch::allow_dynamic_smem(&io.dev, &f, &name, smem)?;
    }
    let group = cfg
        .group_m
        .clamp(1, tiles_m.clamp(1, i32::MAX as usize) as i32);
    let launch_cfg = cfg_1d(tiles_m * tiles_n, cfg.threads, smem);
    launch_gemm(io, g, &name, launch_cfg, Some(group))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::device::Device;

    fn gemm_shape<R>(m: usize, n: usize, k: usize, f: impl FnOnce(&Gemm) -> R) -> R {
        // Only the dimensions and the device matter here: tiny CPU operands stand in.
        let a = Tensor::empty(&[1, 1], DType::BF16, &Device::Cpu).unwrap();
        let w = Tensor::empty(&[1, 1], DType::BF16, &Device::Cpu).unwrap();
        let g = Gemm {
            a: &a,
            w: &w,
            bias: None,
            act: Activation::None,
            m,
            n,
            k,
        };
        f(&g)
    }

    #[test]
    fn config_names_are_unique_and_grouped_versions_cover_1_4_8_16() {
        for v in ["v3_regs", "v4_grouped", "v5_mma"] {
            let cs = configs(v, DType::BF16);
            let mut names: Vec<&str> = cs.iter().map(|c| c.name).collect();
            names.sort();
            names.dedup();
            assert_eq!(names.len(), cs.len(), "{v}");
        }
        let groups: Vec<i32> = configs("v4_grouped", DType::F32)
            .iter()
            .filter(|c| c.tile == "128x128x8_8x8")
            .map(|c| c.group_m)
            .collect();
        assert_eq!(groups, [1, 4, 8, 16]);
        assert_eq!(configs("v5_mma", DType::BF16).len(), 20);
        assert!(configs("v5_mma", DType::F32).is_empty());
        assert!(configs("v1_naive", DType::F32).is_empty());
    }

    #[test]
    fn every_config_has_its_kernel_symbol() {
        for dt in DType::ALL {
            for v in ["v3_regs", "v4_grouped", "v5_mma"] {
                let syms = symbols(v, dt);
                let prefix = match v {
                    "v3_regs" => "matmul_v3_regs",
                    "v4_grouped" => "matmul_v4_grouped",
                    _ => "matmul_v5_mma",
                };
                for c in configs(v, dt) {
                    let kind = if v == "v5_mma" { "" } else { "_vec" };
                    let s = format!("{prefix}_{}{kind}_{dt}", c.tile);
                    assert!(syms.contains(&s), "{s} missing from symbols({v}, {dt})");
                }
            }
        }
        assert_eq!(symbols("v1_naive", DType::F16), ["matmul_v1_naive_f16"]);
        assert!(symbols("v4_grouped", DType::F32)
            .contains(&"matmul_v4_grouped_64x64x8_4x4_scalar_f32".to_string()));
        assert!(symbols("v5_mma", DType::BF16)
            .contains(&"matmul_v4_grouped_64x64x8_4x4_scalar_bf16".to_string()));
    }

    #[test]
    fn v5_smem_fits_hopper_and_two_128x128_blocks_per_sm() {
        let c = configs("v5_mma", DType::BF16);
        let smem = |tile: &str| c.iter().find(|x| x.tile == tile).unwrap().dynamic_smem;
        assert_eq!(smem("128x128x32_w64x32_s4"), 64 * 1024);
        assert_eq!(smem("128x128x32_w64x32_s3"), 48 * 1024);
        assert_eq!(smem("128x256x32_w64x64_s4"), 96 * 1024);
        assert_eq!(smem("64x64x32_w32x32_s4"), 32 * 1024);
        assert!(c.iter().all(|x| x.dynamic_smem <= 227 * 1024));
        assert!(configs("v4_grouped", DType::F32)
            .iter()
            .all(|x| x.dynamic_smem == 0));
        assert_eq!(scalar_config(8).name, "64x64x8_4x4_g8");
    }

    #[test]
    fn default_tiles_shrink_with_the_problem() {
        gemm_shape(8192, 8192, 8192, |g| {
            assert_eq!(default_config("v5_mma", g).name, "128x256x32_w64x64_s4_g8");
            assert_eq!(default_config("v4_grouped", g).name, "128x128x8_8x8_g8");
            assert_eq!(default_config("v3_regs", g).name, "128x128x8_8x8");
        });
        gemm_shape(2048, 2048, 2048, |g| {
            assert_eq!(default_config("v5_mma", g).name, "128x128x32_w64x32_s4_g8");
        });
        gemm_shape(128, 255, 63, |g| {
            assert_eq!(default_config("v5_mma", g).name, "64x64x32_w32x32_s4_g8");
            assert_eq!(default_config("v3_regs", g).name, "64x64x8_4x4");
        });
    }

    #[test]
    fn version_names_parse_with_or_without_the_tier() {
        assert_eq!(parse("cuda/v4_grouped").unwrap(), V::V4);
        assert_eq!(parse("v5").unwrap(), V::V5);
        assert!(parse("v9_magic").is_err());
        assert!(symbols("v9_magic", DType::F32).is_empty());
    }
}
