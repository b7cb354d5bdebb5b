//! Storage for the CPU GEMMs' packed operands (cache-line-aligned, and kept between calls),
//! the register transpose that fills it, and the output pointer their tasks share.

/// 64 bytes on a 64-byte boundary: the unit of the packed operands' storage, so that each
/// 64-byte row of a packed operand is one cache line (an allocator's 16-byte alignment splits
/// every row in two: a third slower at 2048³ on AMX, docs/perf-notes.md, "CPU tier: bf16 on
/// AMX").
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct Line([u8; 64]);

// SAFETY: 64 bytes, no padding (size 64 = alignment), any bit pattern valid.
unsafe impl bytemuck::Zeroable for Line {}
unsafe impl bytemuck::Pod for Line {}

/// Cache-line-aligned storage, grown as needed.
#[derive(Default)]
pub(super) struct Lines(Vec<Line>);

impl Lines {
    pub(super) const fn new() -> Lines {
        Lines(Vec::new())
    }

    /// The first `len` values of type T (bf16 or f32), growing the storage to hold them.
    pub(super) fn view<T: bytemuck::Pod>(&mut self, len: usize) -> &mut [T] {
        let lines = (len * std::mem::size_of::<T>()).div_ceil(64);
        if self.0.len() < lines {
            self.0.resize(lines, Line([0; 64]));
        }
        &mut bytemuck::cast_slice_mut(&mut self.0[..lines])[..len]
    }

    fn bytes(&self) -> usize {
        self.0.len() * 64
    }
}

/// Two operands' storage kept between calls (a fresh allocation of that size costs page
/// faults and, at each free, a TLB shootdown across the cores), each up to `KEEP` bytes.
pub(super) struct Kept(std::sync::Mutex<(Lines, Lines)>);

const KEEP: usize = 128 << 20;

impl Kept {
    pub(super) const fn new() -> Kept {
        Kept(std::sync::Mutex::new((
            Lines(Vec::new()),
            Lines(Vec::new()),
        )))
    }

    /// Run `f` with the two kept stores; a call that finds them in use by another gets fresh
    /// ones, dropped after.
    pub(super) fn with<R>(&self, f: impl FnOnce(&mut Lines, &mut Lines) -> R) -> R {
        let mut kept = self.0.try_lock().ok();
        let (mut a, mut w) = kept
            .as_mut()
            .map(|p| (std::mem::take(&mut p.0), std::mem::take(&mut p.1)))
            .unwrap_or_default();
        let r = f(&mut a, &mut w);
        if let Some(p) = kept.as_mut() {
            let keep = |v: Lines| {
                if v.bytes() <= KEEP {
                    v
                } else {
                    Lines::default()
                }
            };
            **p = (keep(a), keep(w));
        }
        r
    }
}

/// Sixteen rows of sixteen 32-bit values (f32, or bf16 pairs), transposed: source row r at
/// `src + r·ss` bytes for r < `rows` (the rows past it read as zeros), destination row i at
/// `dst + i·ds` bytes, of which the first `width` values are written. Three rounds of
/// AVX-512 shuffles: 32-bit pairs, then 64-bit halves, then 128-bit lanes twice.
///
/// # Safety
/// AVX-512F is there; rows < `rows` of the source hold 64 bytes each, the 16 destination rows
/// `width` ≤ 16 values each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn transpose16(
    src: *const u8,
    ss: usize,
    rows: usize,
    dst: *mut u8,
    ds: usize,
    width: usize,
) {
    use std::arch::x86_64::*;
    debug_assert!(rows <= 16 && width <= 16);
    let r: [__m512i; 16] = std::array::from_fn(|c| {
        if c < rows {
            // SAFETY: row c < rows holds 64 bytes (the caller's promise).
            unsafe { _mm512_loadu_si512(src.add(c * ss).cast()) }
        } else {
            _mm512_setzero_si512()
        }
    });
    // Pairs of rows interleaved by 32 bits, then by 64 bits: c[4q + j]'s 128-bit lane L holds
    // value 4L + j of rows 4q..4q + 4.
    let b: [__m512i; 16] = std::array::from_fn(|i| {
        let (x, y) = (r[i & !1], r[i | 1]);
        if i % 2 == 0 {
            _mm512_unpacklo_epi32(x, y)
        } else {
            _mm512_unpackhi_epi32(x, y)
        }
    });
    let c: [__m512i; 16] = std::array::from_fn(|i| {
        let (q, j) = (i / 4, i % 4);
        let (x, y) = (b[4 * q + j / 2], b[4 * q + 2 + j / 2]);
        if j % 2 == 0 {
            _mm512_unpacklo_epi64(x, y)
        } else {
            _mm512_unpackhi_epi64(x, y)
        }
    });
    let mask: __mmask16 = if width >= 16 {
        0xffff
    } else {
        (1 << width) - 1
    };
    let put = |i: usize, v: __m512i| {
        // SAFETY: destination row i < 16 holds `width` values (the caller's promise).
        unsafe { _mm512_mask_storeu_epi32(dst.add(i * ds).cast(), mask, v) }
    };
    for j in 0..4 {
        let d = _mm512_shuffle_i32x4::<0x88>(c[j], c[4 + j]);
        let e = _mm512_shuffle_i32x4::<0xdd>(c[j], c[4 + j]);
        let f = _mm512_shuffle_i32x4::<0x88>(c[8 + j], c[12 + j]);
        let g = _mm512_shuffle_i32x4::<0xdd>(c[8 + j], c[12 + j]);
        put(j, _mm512_shuffle_i32x4::<0x88>(d, f));
        put(8 + j, _mm512_shuffle_i32x4::<0xdd>(d, f));
        put(4 + j, _mm512_shuffle_i32x4::<0x88>(e, g));
        put(12 + j, _mm512_shuffle_i32x4::<0xdd>(e, g));
    }
}

/// The output's address, shared by a GEMM's tasks: each writes its own block of rows and
/// columns.
#[derive(Clone, Copy)]
pub(super) struct OutPtr<T>(pub(super) *mut T);
// SAFETY: the tasks that share it write disjoint blocks of the output (the callers' promise,
// at each `slice`).
unsafe impl<T> Send for OutPtr<T> {}
unsafe impl<T> Sync for OutPtr<T> {}

impl<T> OutPtr<T> {
    /// The `len` elements from `at`.
    ///
    /// # Safety
    /// They lie in the output, and no other task reads or writes them meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn slice(&self, at: usize, len: usize) -> &mut [T] {
        std::slice::from_raw_parts_mut(self.0.add(at), len)
    }
}
