//! The CPU tier's instruction paths, and the cap that forces a lower one (`--cpu-path`), so
//! that every path the machine has can be run and tested. The hot loops ask here which
//! instructions they may use ([`avx2`], [`avx2_fma`], [`avx512`], [`f16c`]); each answer is the
//! CPU's feature (detected at run time) and the cap's.

use std::sync::atomic::{AtomicU8, Ordering};

/// How far up the CPU tier's loops may go, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CpuPath {
    /// The build's baseline (SSE2 on x86-64; NEON on aarch64): no run-time dispatch.
    Portable,
    /// AVX2 without FMA or F16C: the AVX2-only loops run, the FMA loops take the baseline.
    Avx2,
    /// AVX2 with FMA and F16C, no AVX-512.
    Avx2Fma,
    /// Everything the CPU has (AVX-512 where it has AVX-512F, BW and VL; else AVX2 + FMA,
    /// F16C): the default.
    Best,
}

impl CpuPath {
    pub fn name(self) -> &'static str {
        match self {
            CpuPath::Portable => "portable",
            CpuPath::Avx2 => "avx2",
            CpuPath::Avx2Fma => "avx2-fma",
            CpuPath::Best => "best",
        }
    }
}

static CAP: AtomicU8 = AtomicU8::new(CpuPath::Best as u8);

/// Cap the CPU tier's paths at `p` for the rest of the process (every thread).
pub fn set_cap(p: CpuPath) {
    CAP.store(p as u8, Ordering::Relaxed);
}

/// The current cap.
pub fn cap() -> CpuPath {
    match CAP.load(Ordering::Relaxed) {
        0 => CpuPath::Portable,
        1 => CpuPath::Avx2,
        2 => CpuPath::Avx2Fma,
        _ => CpuPath::Best,
    }
}

/// Whether the CPU has every x86-64 feature named (detected at run time, cached by std);
/// false on other architectures.
macro_rules! has {
    ($($f:tt),+) => {{
        #[cfg(target_arch = "x86_64")]
        let yes = true $(&& std::arch::is_x86_feature_detected!($f))+;
        #[cfg(not(target_arch = "x86_64"))]
        let yes = false;
        yes
    }};
}

/// The paths this machine can run, lowest first (`Portable` always; `Avx2` where the CPU has
/// AVX2; `Avx2Fma` where it also has FMA and AVX-512 is what `Best` adds; `Best`).
pub fn available() -> Vec<CpuPath> {
    let mut v = vec![CpuPath::Portable];
    if has!("avx2") {
        v.push(CpuPath::Avx2);
        if has!("fma") && has_avx512() {
            v.push(CpuPath::Avx2Fma);
        }
    }
    v.push(CpuPath::Best);
    v
}

fn has_avx512() -> bool {
    has!("avx512f", "avx512bw", "avx512vl")
}

/// Whether the loops may use AVX2 (the CPU has it, the cap allows it).
pub fn avx2() -> bool {
    cap() >= CpuPath::Avx2 && has!("avx2")
}

/// Whether the loops may use AVX2 and FMA together.
pub fn avx2_fma() -> bool {
    cap() >= CpuPath::Avx2Fma && avx2() && has!("fma")
}

/// Whether the FMA loops may take AVX-512 (F, BW and VL, with FMA): 16 lanes a vector.
pub fn avx512() -> bool {
    cap() == CpuPath::Best && avx2_fma() && has_avx512()
}

/// Whether the CPU tier may use AMX's bf16 tiles (`TDPBF16PS`): the CPU has AMX-TILE and
/// AMX-BF16, the kernel granted this process the tile data state (Linux asks each process to
/// request it, `ARCH_REQ_XCOMP_PERM`; asked once, on the first call), and the cap is `best`.
/// std's detection of the AMX features is unstable, so CPUID is read here.
pub fn amx_bf16() -> bool {
    cap() == CpuPath::Best && amx_granted()
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn amx_granted() -> bool {
    static GRANTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *GRANTED.get_or_init(|| {
        // CPUID leaf 7, sub-leaf 0: EDX bit 22 is AMX-BF16, bit 24 AMX-TILE.
        let id = std::arch::x86_64::__cpuid_count(7, 0);
        let has = (id.edx >> 22) & 1 == 1 && (id.edx >> 24) & 1 == 1;
        const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
        const XFEATURE_XTILEDATA: libc::c_long = 18;
        // SAFETY: arch_prctl with this request only changes which xsave state the process may
        // use; a kernel without it answers an error, which leaves AMX off.
        has && unsafe {
            libc::syscall(
                libc::SYS_arch_prctl,
                ARCH_REQ_XCOMP_PERM,
                XFEATURE_XTILEDATA,
            )
        } == 0
    })
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn amx_granted() -> bool {
    false
}

/// Whether the conversions may use F16C (with AVX2).
pub fn f16c() -> bool {
    cap() >= CpuPath::Avx2Fma && avx2() && has!("f16c")
}

/// The paths the loops take now, in words: `AVX-512 + FMA, F16C`, `AVX2 + FMA, F16C`, or
/// `portable (--cpu-path portable)`.
pub fn describe() -> String {
    let mut v = Vec::new();
    if avx512() {
        v.push("AVX-512 + FMA");
    } else if avx2_fma() {
        v.push("AVX2 + FMA");
    } else if avx2() {
        v.push("AVX2");
    }
    if f16c() {
        v.push("F16C");
    }
    if amx_bf16() {
        v.push("AMX-BF16");
    }
    let what = if v.is_empty() {
        "portable".to_string()
    } else {
        v.join(", ")
    };
    if cap() == CpuPath::Best {
        what
    } else {
        format!("{what} (--cpu-path {})", cap().name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_orders_the_paths_and_portable_is_always_there() {
        assert!(CpuPath::Portable < CpuPath::Avx2 && CpuPath::Avx2 < CpuPath::Avx2Fma);
        assert!(CpuPath::Avx2Fma < CpuPath::Best);
        let here = available();
        assert_eq!(here.first(), Some(&CpuPath::Portable));
        assert_eq!(here.last(), Some(&CpuPath::Best));
        // avx2-fma is a path of its own only where best adds AVX-512 to it, and the report
        // then says so (the lib's tests leave the cap at best).
        let wide = has!("avx2", "fma") && has_avx512();
        assert_eq!(here.contains(&CpuPath::Avx2Fma), wide);
        assert_eq!(
            describe().starts_with("AVX-512 + FMA"),
            wide,
            "{}",
            describe()
        );
    }
}
