//! Element types: f32, bf16 and f16 in memory, f32 arithmetic in every kernel.

use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    BF16,
    F16,
}

impl DType {
    pub const ALL: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

    pub fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::BF16 | DType::F16 => 2,
        }
    }

    /// The suffix the CUDA kernels carry for this dtype (`gelu_v1_tanh_bf16`).
    pub fn suffix(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
        }
    }

    /// Validation tolerance on kernlab's error measure (see `validate`): the output's rounding
    /// (2^-24, 2^-9, 2^-11 relative) plus room for f32 arithmetic in a different order.
    pub fn tolerance(self) -> f64 {
        match self {
            DType::F32 => 1e-4,
            DType::BF16 => 8e-3,
            DType::F16 => 2e-3,
        }
    }

    /// The smallest spacing the format has near zero (its subnormal step): an absolute
    /// error below this is rounding, not a fault.
    pub fn abs_floor(self) -> f64 {
        match self {
            DType::F32 => f32::from_bits(1) as f64,
            DType::BF16 => bf16::from_bits(1).to_f64(),
            DType::F16 => f16::from_bits(1).to_f64(),
        }
    }

    /// Round an f64 through this dtype and back (what storing it would give).
    pub fn round(self, v: f64) -> f64 {
        match self {
            DType::F32 => v as f32 as f64,
            DType::BF16 => bf16::from_f64(v).to_f64(),
            DType::F16 => f16::from_f64(v).to_f64(),
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.suffix())
    }
}

impl FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "f32" | "float32" | "float" => Ok(DType::F32),
            "bf16" | "bfloat16" => Ok(DType::BF16),
            "f16" | "float16" | "half" => Ok(DType::F16),
            other => Err(format!("unknown dtype '{other}' (use f32, bf16 or f16)")),
        }
    }
}

/// A scalar kernlab stores: converts to and from f32 (arithmetic) and f64 (reference).
pub trait Element: Copy + Send + Sync + 'static + bytemuck::Pod {
    const DTYPE: DType;
    fn to_f32(self) -> f32;
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Element for bf16 {
    const DTYPE: DType = DType::BF16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        bf16::from_f32(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
}

impl Element for f16 {
    const DTYPE: DType = DType::F16;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
}
