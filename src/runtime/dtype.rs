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

    /// The smallest positive normal value: below it the format underflows (subnormals keep
    /// fewer digits).
    pub fn min_normal(self) -> f64 {
        match self {
            DType::F32 | DType::BF16 => f32::MIN_POSITIVE as f64,
            DType::F16 => f16::MIN_POSITIVE.to_f64(),
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
    // The conversions `half` does (a NaN stays a NaN with its quiet bit set, rounding to
    // nearest even), as selects rather than branches, so the CPU loops vectorise (the fused
    // bf16 softmax ran ~1.4× slower with half's). The tests check them against half's.
    #[inline(always)]
    fn to_f32(self) -> f32 {
        let b = self.to_bits() as u32;
        let nan = b & 0x7FFF > 0x7F80;
        f32::from_bits(if nan { b | 0x40 } else { b } << 16)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        let b = v.to_bits();
        let rounded = b.wrapping_add(0x7FFF + ((b >> 16) & 1)) >> 16;
        let nan = (b >> 16) | 0x40;
        bf16::from_bits(if v.is_nan() { nan } else { rounded } as u16)
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
    // The conversions `half` does (round to nearest even; a NaN keeps its top payload bits
    // with the quiet bit set), as arithmetic and selects rather than branches (or `half`'s
    // check for F16C at each call), so the CPU loops vectorise: the fused f16 softmax and
    // GeLU ran 5–10× slower than bf16's with `half`'s. The tests check them against half's.
    #[inline(always)]
    fn to_f32(self) -> f32 {
        let h = self.to_bits() as u32;
        let sign = (h & 0x8000) << 16;
        let em = h & 0x7FFF;
        // Normals: exponent and mantissa moved into f32's places, rebiased. Subnormals: the
        // mantissa, an integer, times 2^-24 (exact, with no subnormal f32 operand, so a
        // denormals-are-zero mode cannot flush it).
        let normal = (em << 13) + ((127 - 15) << 23);
        let sub = (em as f32 * f32::from_bits((127 - 24) << 23)).to_bits();
        let finite = if em < 0x400 { sub } else { normal };
        let special = (em << 13) | 0x7F80_0000 | if em > 0x7C00 { 0x0040_0000 } else { 0 };
        f32::from_bits(sign | if em >= 0x7C00 { special } else { finite })
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        let x = v.to_bits();
        let sign = (x >> 16) & 0x8000;
        let a = x & 0x7FFF_FFFF;
        // |v| below 2^-14 (f16's subnormals and zero): adding 0.5 lets the FPU round the
        // mantissa at f16's subnormal step (2^-24), to nearest even.
        let sub = (f32::from_bits(a) + 0.5)
            .to_bits()
            .wrapping_sub(0.5f32.to_bits());
        // Normal: rebias the exponent, round to nearest even at bit 13 (a carry moves the
        // exponent up, to inf past 65504).
        let odd = (a >> 13) & 1;
        let norm = a.wrapping_sub((127 - 15) << 23).wrapping_add(0xFFF + odd) >> 13;
        let finite = if a < (127 - 14) << 23 {
            sub
        } else {
            norm.min(0x7C00)
        };
        let nan = 0x7E00 | ((a & 0x007F_FFFF) >> 13);
        let h = if a > 0x7F80_0000 {
            nan
        } else if a >= (127 + 16) << 23 {
            0x7C00
        } else {
            finite
        };
        f16::from_bits((sign | h) as u16)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `T`'s conversions against `half`'s (`of_bits`, `bits`, `to_f32`, `from_f32`), bit for
    /// bit: to_f32 of every bit pattern; from_f32 of every f32 in `probes` and of a sweep of
    /// the rest.
    fn check_against_half<T: Element>(
        of_bits: fn(u16) -> T,
        bits: fn(T) -> u16,
        to_f32: fn(T) -> f32,
        from_f32: fn(f32) -> T,
        probes: impl Iterator<Item = u32>,
    ) {
        for b in 0..=u16::MAX {
            let v = of_bits(b);
            assert_eq!(
                <T as Element>::to_f32(v).to_bits(),
                to_f32(v).to_bits(),
                "to_f32 of {b:#06x}"
            );
        }
        for x in probes.chain((0..=u32::MAX).step_by(65_521)) {
            let v = f32::from_bits(x);
            assert_eq!(
                bits(<T as Element>::from_f32(v)),
                bits(from_f32(v)),
                "from_f32 of {x:#010x} ({v:e})"
            );
        }
    }

    #[test]
    fn bf16_conversions_match_half_bit_for_bit() {
        // Every bf16 value's neighbourhood in f32: exact, just under, at and just over the
        // rounding tie, the largest below the next.
        let lows = [0u32, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF];
        let hi = (0..=0xFFFFu32).flat_map(|h| lows.iter().map(move |l| (h << 16) | l));
        check_against_half(
            bf16::from_bits,
            bf16::to_bits,
            bf16::to_f32,
            bf16::from_f32,
            hi,
        );
    }

    #[test]
    fn f16_conversions_match_half_bit_for_bit() {
        // Around every f16 value (exact, ties, just off them), in f32, for every rounding
        // position f16's normals and subnormals have.
        let near = (0..=u16::MAX).flat_map(|b| {
            let c = f16::from_bits(b).to_f32().to_bits();
            (0..=14u32).flat_map(move |s| {
                let t = 1u32 << s;
                [
                    c,
                    c.wrapping_add(t),
                    c.wrapping_add(t - 1),
                    c.wrapping_sub(t),
                    c | 0xFFF,
                ]
            })
        });
        // The midpoint between each f16 value and the next (exact in f32: 12 significant
        // bits at most) and the f32 values either side of it: every tie, at every exponent.
        let ties = (0..0x7C00u16).flat_map(|b| {
            let lo = f16::from_bits(b).to_f32() as f64;
            let hi = f16::from_bits(b + 1).to_f32() as f64;
            let m = ((lo + hi) / 2.0) as f32;
            let mb = m.to_bits();
            [mb, mb + 1, mb - 1, mb | 0x8000_0000, (mb + 1) | 0x8000_0000]
        });
        let probes = near.chain(ties);
        check_against_half(
            f16::from_bits,
            f16::to_bits,
            f16::to_f32,
            f16::from_f32,
            probes,
        );
    }
}
