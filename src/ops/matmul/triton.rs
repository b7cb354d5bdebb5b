//! The Triton tier of the GEMM ops: the lecture's tiled matmul written in Triton
//! (`kernels/triton/matmul.py`), with linear's bias + GeLU epilogue, compiled by Triton's
//! compiler and launched by kernlab. Its configurations (tiles, GROUP_M, warps, stages) are
//! searched by `kernlab autotune` like the hand versions', keyed on the M×N×K bucket.

use super::{gemm_bufs, Gemm};
use crate::runtime::device::triton::{triton_type, TritonSpec};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};
use crate::runtime::kernels::KernelSource;
use crate::runtime::launch::{aligned16, launch_triton};
use crate::runtime::tensor::Tensor;

static TRITON: KernelSource = KernelSource {
    file: "matmul.py",
    src: include_str!("../../../kernels/triton/matmul.py"),
};

/// The registry's (and the tuning cache's) name of the Triton version.
pub const VARIANT: &str = "triton";

/// One configuration of the Triton GEMM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub bm: u32,
    pub bn: u32,
    pub bk: u32,
    pub group_m: u32,
    pub warps: u32,
    pub stages: u32,
}

impl Config {
    pub fn name(&self) -> String {
        format!(
            "{}x{}x{}_g{}_w{}_s{}",
            self.bm, self.bn, self.bk, self.group_m, self.warps, self.stages
        )
    }
}

const fn cfg(bm: u32, bn: u32, bk: u32, warps: u32, stages: u32) -> Config {
    Config {
        bm,
        bn,
        bk,
        group_m: 8,
        warps,
        stages,
    }
}

/// The configurations `autotune` measures, the first the default: for 16-bit inputs the
/// tensor-core tiles of Triton's matmul tutorial's space; for f32 (exact f32 products, no TF32)
/// smaller tiles.
pub fn configs(dt: DType) -> Vec<Config> {
    match dt {
        DType::F32 => vec![
            cfg(64, 64, 32, 4, 3),
            cfg(128, 64, 32, 4, 3),
            cfg(64, 128, 32, 4, 3),
            cfg(128, 128, 32, 8, 3),
            cfg(32, 64, 32, 4, 2),
        ],
        _ => vec![
            cfg(128, 128, 64, 8, 4),
            cfg(128, 256, 64, 8, 3),
            cfg(256, 128, 64, 8, 3),
            cfg(128, 128, 64, 4, 4),
            cfg(128, 64, 64, 4, 4),
            cfg(64, 128, 64, 4, 4),
            cfg(128, 128, 32, 4, 4),
            cfg(64, 64, 64, 4, 4),
        ],
    }
}

/// Every configuration's name for a dtype.
pub fn config_names(dt: DType) -> Vec<String> {
    configs(dt).iter().map(Config::name).collect()
}

/// The kernel a GEMM compiles in configuration `c`: its operands' dtype, the epilogue, and
/// which arguments are multiples of 16 (Triton's own launcher's specialization).
pub fn spec(c: &Config, dt: DType, bias: bool, act: i32, divisible: &[(&str, bool)]) -> TritonSpec {
    let ptr = triton_type(dt, true);
    let hinted = |n: &str| divisible.iter().any(|(d, yes)| *d == n && *yes);
    let mut s = TritonSpec::new(&TRITON, "matmul_kernel");
    for n in ["a_ptr", "w_ptr", "c_ptr", "bias_ptr"] {
        s = s.arg_hinted(n, &ptr, hinted(n));
    }
    // i32 as Triton's own launcher types a Python int below 2^31 (the strides are K and N,
    // which run_with keeps below it), so that both launchers run the same compiled kernel; the
    // kernel widens the row index to i64 before it multiplies by a stride.
    for n in ["M", "N", "K", "lda", "ldw", "ldc"] {
        s = s.arg_hinted(n, "i32", hinted(n));
    }
    s.constexpr("BLOCK_M", c.bm)
        .constexpr("BLOCK_N", c.bn)
        .constexpr("BLOCK_K", c.bk)
        .constexpr("GROUP_M", c.group_m)
        .constexpr("HAS_BIAS", bias)
        .constexpr("ACT", act)
        .warps(c.warps)
        .stages(c.stages)
}

/// Which arguments of an M×N×K GEMM are multiples of 16: the four pointers as `aligned` says
/// (a, w, c, bias), the dimensions and the row strides (K for a and w, N for c) by value.
fn divisible([m, n, k]: [usize; 3], aligned: [bool; 4]) -> [(&'static str, bool); 10] {
    let d16 = |v: usize| v.is_multiple_of(16);
    [
        ("a_ptr", aligned[0]),
        ("w_ptr", aligned[1]),
        ("c_ptr", aligned[2]),
        ("bias_ptr", aligned[3]),
        ("M", d16(m)),
        ("N", d16(n)),
        ("K", d16(k)),
        ("lda", d16(k)),
        ("ldw", d16(k)),
        ("ldc", d16(n)),
    ]
}

/// The specs [`run_with`] would compile for a GEMM of this dtype and epilogue with aligned
/// operands (for `inspect`), in the default configuration.
pub fn default_spec(dt: DType, bias: bool, act: i32, shape: &[usize]) -> TritonSpec {
    let div = divisible([shape[0], shape[1], shape[2]], [true, true, true, bias]);
    spec(&configs(dt)[0], dt, bias, act, &div)
}

/// The GEMM in configuration `c`.
pub fn run_with(c: &Config, g: &Gemm, out: &mut Tensor) -> Result<()> {
    let dt = g.dtype();
    let too_big = |what: &str, v: usize| -> Result<i32> {
        i32::try_from(v).map_err(|_| Error::UnsupportedShape {
            op: g.op_name().into(),
            variant: VARIANT.into(),
            why: format!("{what} = {v}: the Triton kernel takes dimensions below 2^31"),
        })
    };
    let (m, n, k) = (too_big("M", g.m)?, too_big("N", g.n)?, too_big("K", g.k)?);
    let tiles = (g.m.div_ceil(c.bm as usize) as u64) * (g.n.div_ceil(c.bn as usize) as u64);
    let programs = u32::try_from(tiles)
        .ok()
        .filter(|&t| t <= i32::MAX as u32)
        .ok_or_else(|| Error::UnsupportedShape {
            op: g.op_name().into(),
            variant: VARIANT.into(),
            why: format!("{tiles} tiles of {}×{}: over the grid limit", c.bm, c.bn),
        })?;
    let io = gemm_bufs(VARIANT, g, out)?;
    let div = divisible(
        [g.m, g.n, g.k],
        [
            aligned16(&io.dev, io.a),
            aligned16(&io.dev, io.w),
            aligned16(&io.dev, io.c),
            io.bias.is_some_and(|b| aligned16(&io.dev, b)),
        ],
    );
    let t = io
        .dev
        .triton(&spec(c, dt, io.bias.is_some(), g.act.code(), &div))?;
    let (lda, ldw, ldc) = (k, k, n);
    let null = 0u64;
    match io.bias {
        Some(b) => launch_triton!(
            io.dev,
            t,
            (programs, 1, 1),
            [io.a, io.w, io.c, b, &m, &n, &k, &lda, &ldw, &ldc]
        ),
        None => launch_triton!(
            io.dev,
            t,
            (programs, 1, 1),
            [io.a, io.w, io.c, &null, &m, &n, &k, &lda, &ldw, &ldc]
        ),
    }
    Ok(())
}

/// The GEMM in the named configuration.
pub fn run_config(name: &str, g: &Gemm, out: &mut Tensor) -> Result<()> {
    let c = configs(g.dtype())
        .into_iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{VARIANT} has no configuration '{name}' for {} (known: {})",
                g.dtype(),
                config_names(g.dtype()).join(", ")
            ))
        })?;
    run_with(&c, g, out)
}

/// The default configuration (the first; `auto::run_triton` runs the cached one first).
pub fn run_default(g: &Gemm, out: &mut Tensor) -> Result<()> {
    run_with(&configs(g.dtype())[0], g, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_names_are_distinct_and_the_spec_counts_ten_launch_arguments() {
        for dt in [DType::F32, DType::BF16] {
            let names = config_names(dt);
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted.len(), names.len(), "{names:?}");
        }
        let s = default_spec(DType::BF16, true, 1, &[4096, 4096, 4096]);
        assert_eq!(s.launch_args(), 10);
        assert_eq!(s.divisible.len(), 10);
        let s = default_spec(DType::BF16, false, 0, &[4095, 4097, 4093]);
        assert_eq!(s.divisible, ["a_ptr", "w_ptr", "c_ptr"]);
    }
}
