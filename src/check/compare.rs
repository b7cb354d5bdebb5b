//! Comparing an output with the f64 reference.
//!
//! The error of element i, in row r, is
//!     err_i = max(0, |out_i − ref_i| − floor(dtype)) / (|ref_i| + 1e-3 · max_j∈r |ref_j|)
//! — relative error, except that values three decades below their row's largest are judged
//! against that decade (GeLU(x) ≈ 0 for x ≪ 0, tiny probabilities in wide softmax rows), and
//! the format's own subnormal step is forgiven. GEMMs are judged per row instead
//! ([`compare_rows_l2`]). Special values must match exactly: NaN where
//! the reference has NaN and nowhere else, ±inf where it has ±inf. NaN never passes.

use crate::runtime::dtype::DType;
use rayon::prelude::*;
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub passed: bool,
    pub max_rel_err: f64,
    /// ‖out − ref‖₂ / ‖ref‖₂ over the finite reference values.
    pub rel_l2: f64,
    pub tolerance: f64,
    /// Elements whose NaN/inf status differs from the reference.
    pub special_mismatches: usize,
    /// The worst element: (index, out, ref).
    pub worst: Option<(usize, f64, f64)>,
    /// With a sampled reference: the first NaN/inf output outside the sample (index, out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_sample: Option<(usize, f64)>,
    /// The output's and the reference's lengths, where they differ (nothing else compared).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lengths: Option<(usize, usize)>,
}

impl Check {
    /// One line for a failure report.
    pub fn describe(&self) -> String {
        let mut s = match self.lengths {
            Some((o, r)) => format!("the output has {o} elements, the reference {r}"),
            None => format!(
                "max rel err {:.3e} (tolerance {:.1e}), rel L2 {:.3e}",
                self.max_rel_err, self.tolerance, self.rel_l2
            ),
        };
        if self.special_mismatches > 0 {
            s += &format!(
                ", {} elements NaN/inf where the reference is not (or the reverse)",
                self.special_mismatches
            );
        }
        if let Some((i, o, r)) = self.worst {
            s += &format!(", worst at element {i}: got {o:e}, want {r:e}");
        }
        if let Some((i, o)) = self.outside_sample {
            s += &format!(", element {i} (outside the sampled rows, checked for NaN/inf) is {o}");
        }
        s
    }
}

#[derive(Default, Clone, Copy)]
struct Acc {
    max_err: f64,
    worst: Option<(usize, f64, f64)>,
    special: usize,
    first_special: Option<(usize, f64, f64)>,
    num: f64,
    den: f64,
}

fn merge(a: Acc, b: Acc) -> Acc {
    let (max_err, worst) = if b.max_err > a.max_err {
        (b.max_err, b.worst)
    } else {
        (a.max_err, a.worst)
    };
    Acc {
        max_err,
        worst,
        special: a.special + b.special,
        first_special: a.first_special.or(b.first_special),
        num: a.num + b.num,
        den: a.den + b.den,
    }
}

/// A failed check for an output whose length is not the reference's (nothing compared).
fn length_mismatch(out: &[f64], reference: &[f64], tolerance: f64) -> Check {
    Check {
        passed: false,
        max_rel_err: f64::INFINITY,
        rel_l2: f64::INFINITY,
        tolerance,
        special_mismatches: 0,
        worst: None,
        outside_sample: None,
        lengths: Some((out.len(), reference.len())),
    }
}

/// Compare `out` with `reference` (rows of `cols`), for an output of `dtype`; an output of
/// another length than the reference's fails.
pub fn compare(out: &[f64], reference: &[f64], cols: usize, dtype: DType) -> Check {
    compare_within(out, reference, cols, dtype, dtype.tolerance())
}

/// [`compare`] with the tolerance given (an op's own, `OpDef::tolerance`).
pub fn compare_within(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    dtype: DType,
    tolerance: f64,
) -> Check {
    compare_scaled(out, reference, cols, dtype, tolerance, 0.0)
}

/// [`compare_within`], each block's scale at least `min_scale` (an op whose outputs are of a
/// known order whatever a small block holds: `OpDef::min_check_scale`).
pub fn compare_scaled(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    dtype: DType,
    tolerance: f64,
    min_scale: f64,
) -> Check {
    if out.len() != reference.len() {
        return length_mismatch(out, reference, tolerance);
    }
    let floor = dtype.abs_floor();
    let cols = cols.max(1);
    let acc = out
        .par_chunks(cols)
        .zip(reference.par_chunks(cols))
        .enumerate()
        .map(|(r, (o, f))| {
            // A short last block is judged on the scale of the last `cols` elements: alone, a
            // block of a few near-zero values would be judged element by element.
            let window = if f.len() < cols && reference.len() > f.len() {
                &reference[reference.len().saturating_sub(cols)..]
            } else {
                f
            };
            let scale = window
                .iter()
                .filter(|v| v.is_finite())
                .fold(min_scale, |a, v| a.max(v.abs()));
            let mut acc = Acc::default();
            for (j, (&o, &f)) in o.iter().zip(f).enumerate() {
                let i = r * cols + j;
                let special_ok = if f.is_nan() {
                    o.is_nan()
                } else if f.is_infinite() {
                    o == f
                } else {
                    o.is_finite()
                };
                if !special_ok {
                    acc.special += 1;
                    acc.first_special.get_or_insert((i, o, f));
                    continue;
                }
                if !f.is_finite() {
                    continue;
                }
                let d = (o - f).abs();
                acc.num += d * d;
                acc.den += f * f;
                let e = (d - floor).max(0.0) / (f.abs() + 1e-3 * scale).max(f64::MIN_POSITIVE);
                if e > acc.max_err || acc.worst.is_none() {
                    if e > acc.max_err {
                        acc.max_err = e;
                    }
                    acc.worst = Some((i, o, f));
                }
            }
            acc
        })
        .reduce(Acc::default, merge);
    let rel_l2 = if acc.den > 0.0 {
        (acc.num / acc.den).sqrt()
    } else {
        acc.num.sqrt()
    };
    Check {
        passed: acc.special == 0 && acc.max_err <= tolerance,
        max_rel_err: if acc.special > 0 {
            f64::INFINITY
        } else {
            acc.max_err
        },
        rel_l2,
        tolerance,
        special_mismatches: acc.special,
        worst: if acc.special > 0 {
            acc.first_special
        } else {
            acc.worst
        },
        outside_sample: None,
        lengths: None,
    }
}

/// The GEMM check: each row's ‖out − ref‖₂ / ‖ref‖₂, the largest over the rows against the
/// dtype's tolerance, with special values matched as in [`compare`]. An element-wise measure
/// suits GEMMs badly: an output near zero is a sum of K products that cancel, so its error is
/// the products' rounding (≈ ε·√K·‖a_i‖·‖w_j‖), not a fraction of its own size; exact f32 at
/// K = 8192 reaches 1e-3 element-wise while its row error is ~1e-7 (and TF32's ~3e-4 still fails).
pub fn compare_rows_l2(out: &[f64], reference: &[f64], cols: usize, dtype: DType) -> Check {
    compare_rows_l2_within(out, reference, cols, dtype, dtype.tolerance())
}

/// [`compare_rows_l2`] with the tolerance given (an op's own, `OpDef::tolerance`).
pub fn compare_rows_l2_within(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    dtype: DType,
    tolerance: f64,
) -> Check {
    if out.len() != reference.len() {
        return length_mismatch(out, reference, tolerance);
    }
    let cols = cols.max(1);
    let elementwise = compare(out, reference, cols, dtype);
    let (max_err, worst_row) = row_sums(out, reference, cols)
        .into_iter()
        .enumerate()
        .map(|(r, (num, den))| {
            let e = if den > 0.0 {
                (num / den).sqrt()
            } else {
                num.sqrt()
            };
            (if e.is_nan() { f64::INFINITY } else { e }, r)
        })
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
    row_check(
        out,
        reference,
        cols,
        &elementwise,
        (max_err, worst_row),
        tolerance,
    )
}

/// Each row's `(‖out − ref‖₂², ‖ref‖₂²)` over the elements whose reference is finite.
fn row_sums(out: &[f64], reference: &[f64], cols: usize) -> Vec<(f64, f64)> {
    out.par_chunks(cols)
        .zip(reference.par_chunks(cols))
        .map(|(o, f)| {
            let (mut num, mut den) = (0.0f64, 0.0f64);
            for (&o, &f) in o.iter().zip(f).filter(|(_, f)| f.is_finite()) {
                num += (o - f) * (o - f);
                den += f * f;
            }
            (num, den)
        })
        .collect()
}

/// A row measure's check: the largest row error `worst.0` (at row `worst.1`) against the
/// tolerance, special values as the element-wise check found them.
fn row_check(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    elementwise: &Check,
    (max_err, worst_row): (f64, usize),
    tolerance: f64,
) -> Check {
    let special = elementwise.special_mismatches;
    Check {
        passed: special == 0 && max_err <= tolerance,
        max_rel_err: if special > 0 { f64::INFINITY } else { max_err },
        rel_l2: elementwise.rel_l2,
        tolerance,
        special_mismatches: special,
        worst: if special > 0 {
            elementwise.worst
        } else {
            worst_in_row(out, reference, cols, worst_row)
        },
        outside_sample: None,
        lengths: None,
    }
}

/// The worst row's worst element `(index, out, reference)`, for the report (the last row may
/// be short; an empty output has none).
fn worst_in_row(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    worst_row: usize,
) -> Option<(usize, f64, f64)> {
    let at = (worst_row * cols).min(out.len());
    let end = (at + cols).min(out.len());
    let (row, o) = (&reference[at..end], &out[at..end]);
    (0..end - at)
        .max_by(|&i, &j| (o[i] - row[i]).abs().total_cmp(&(o[j] - row[j]).abs()))
        .map(|j| (at + j, o[j], row[j]))
}

/// The gradients' check ([`crate::ops::Compare::GroupsL2`]): row `r` (of `cols`) belongs to
/// group `groups[r]`; its error is ‖out − ref‖₂ over the larger of its group's RMS row norm
/// ‖ref‖₂ and `√cols · min_normal / tolerance` (so that errors of the size of the dtype's
/// smallest normal, the format's underflow, pass), the largest over the rows against
/// `tolerance`, special values matched as in [`compare`].
pub fn compare_groups_l2_within(
    out: &[f64],
    reference: &[f64],
    cols: usize,
    groups: &[usize],
    dtype: DType,
    tolerance: f64,
) -> Check {
    if out.len() != reference.len() {
        return length_mismatch(out, reference, tolerance);
    }
    let cols = cols.max(1);
    let elementwise = compare(out, reference, cols, dtype);
    let rows = row_sums(out, reference, cols);
    let mut scale: std::collections::HashMap<usize, (f64, usize)> = Default::default();
    for (r, &(_, den)) in rows.iter().enumerate() {
        let e = scale
            .entry(groups.get(r).copied().unwrap_or(r))
            .or_default();
        e.0 += den;
        e.1 += 1;
    }
    let floor = (cols as f64).sqrt() * dtype.min_normal() / tolerance.max(f64::MIN_POSITIVE);
    let (mut max_err, mut worst_row) = (0.0f64, 0usize);
    for (r, &(num, _)) in rows.iter().enumerate() {
        let (sum, n) = scale[&groups.get(r).copied().unwrap_or(r)];
        let e = num.sqrt() / (sum / n as f64).sqrt().max(floor);
        let e = if e.is_nan() { f64::INFINITY } else { e };
        if e > max_err {
            (max_err, worst_row) = (e, r);
        }
    }
    row_check(
        out,
        reference,
        cols,
        &elementwise,
        (max_err, worst_row),
        tolerance,
    )
}

pub use crate::ops::sample_rows;

#[cfg(test)]
mod tests {
    use super::*;

    /// Lengths that differ fail (both checks), a short last row and an empty output do not
    /// panic (they did: the worst row was sliced past the end).
    #[test]
    fn odd_lengths_fail_or_pass_without_panicking() {
        let f = DType::F32;
        let c = compare(&[1.0, 2.0], &[1.0, 2.0, 3.0], 3, f);
        assert!(!c.passed && c.lengths == Some((2, 3)));
        assert_eq!(c.describe(), "the output has 2 elements, the reference 3");
        let c = compare_rows_l2(&[1.0, 2.0, 3.0], &[1.0], 2, f);
        assert!(!c.passed && c.lengths == Some((3, 1)));
        let c = compare_rows_l2(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.5], 2, f);
        assert!(!c.passed);
        assert_eq!(c.worst, Some((2, 3.0, 3.5)));
        let c = compare_rows_l2(&[], &[], 3, f);
        assert!(c.passed && c.worst.is_none());
    }

    #[test]
    fn gradient_rows_are_judged_in_their_groups_scale() {
        let bf = DType::BF16;
        // Group 0: a large row and a small one off by 5% of itself, 0.05% of the group's scale.
        let r = vec![10.0, -10.0, 0.01, 0.01];
        let o = vec![10.0, -10.0, 0.0105, 0.0105];
        assert!(!compare_rows_l2(&o, &r, 2, bf).passed);
        let c = compare_groups_l2_within(&o, &r, 2, &[0, 0], bf, 8e-3);
        assert!(c.passed, "{}", c.describe());
        // The same small row in a group of its own fails.
        assert!(!compare_groups_l2_within(&o, &r, 2, &[0, 1], bf, 8e-3).passed);
        // A row off by 5% of the group's scale fails.
        let o2 = vec![10.5, -10.5, 0.01, 0.01];
        assert!(!compare_groups_l2_within(&o2, &r, 2, &[0, 0], bf, 8e-3).passed);
        // Underflow: values around 1e-39 off by their own size pass; NaN never does.
        let tiny = vec![1e-39, -2e-39];
        let off = vec![3e-39, -1e-40];
        assert!(compare_groups_l2_within(&off, &tiny, 2, &[0], bf, 8e-3).passed);
        let nan = vec![f64::NAN, -2e-39];
        assert!(!compare_groups_l2_within(&nan, &tiny, 2, &[0], bf, 8e-3).passed);
    }

    #[test]
    fn gemm_rows_are_judged_by_their_l2_error() {
        // A row with a near-zero element off by 1e-6: element-wise 1e-3, row L2 ~4e-7.
        let r = vec![1.0, -2.0, 1e-7, 1.5];
        let o = vec![1.0, -2.0, 1.1e-6, 1.5];
        assert!(!compare(&o, &r, 4, DType::F32).passed);
        let c = compare_rows_l2(&o, &r, 4, DType::F32);
        assert!(c.passed, "{}", c.describe());
        // TF32-sized errors (3e-4 of the row) fail f32 but pass bf16.
        let o2: Vec<f64> = r.iter().map(|v| v * (1.0 + 3e-4)).collect();
        assert!(!compare_rows_l2(&o2, &r, 4, DType::F32).passed);
        assert!(compare_rows_l2(&o2, &r, 4, DType::BF16).passed);
        // NaN never passes.
        let mut o3 = r.clone();
        o3[1] = f64::NAN;
        assert!(!compare_rows_l2(&o3, &r, 4, DType::BF16).passed);
    }

    #[test]
    fn identical_outputs_pass_with_zero_error() {
        let r = vec![1.0, -2.0, 3.0, 0.5];
        let c = compare(&r, &r, 2, DType::F32);
        assert!(c.passed);
        assert_eq!(c.max_rel_err, 0.0);
    }

    #[test]
    fn nan_never_passes() {
        let r = vec![1.0, 2.0, 3.0];
        let mut o = r.clone();
        o[1] = f64::NAN;
        let c = compare(&o, &r, 3, DType::BF16);
        assert!(!c.passed);
        assert_eq!(c.special_mismatches, 1);
        assert_eq!(c.worst.unwrap().0, 1);
    }

    #[test]
    fn nan_where_the_reference_has_nan_passes_and_missing_nan_fails() {
        let r = vec![f64::NAN, f64::NAN];
        assert!(compare(&[f64::NAN, f64::NAN], &r, 2, DType::F32).passed);
        assert!(!compare(&[0.5, f64::NAN], &r, 2, DType::F32).passed);
    }

    #[test]
    fn errors_beyond_the_dtype_tolerance_fail() {
        let r = vec![1.0, 2.0];
        assert!(compare(&[1.0 + 1e-6, 2.0], &r, 2, DType::F32).passed);
        assert!(!compare(&[1.001, 2.0], &r, 2, DType::F32).passed);
        assert!(compare(&[1.003, 2.0], &r, 2, DType::BF16).passed);
        assert!(!compare(&[1.02, 2.0], &r, 2, DType::BF16).passed);
    }

    #[test]
    fn tiny_values_are_judged_against_their_row() {
        // 1e-9 next to 1.0: an absolute error of 1e-9 is a relative error of 1e-6 at the
        // row's scale, and passes; the same error where 1e-9 is the row's largest fails.
        let r = vec![1.0, 1e-9];
        assert!(compare(&[1.0, 2e-9], &r, 2, DType::F32).passed);
        let r2 = vec![1e-9, 1e-9];
        assert!(!compare(&[1e-9, 2e-9], &r2, 2, DType::F32).passed);
    }

    #[test]
    fn a_least_scale_judges_a_block_of_near_zero_values_at_that_scale() {
        // One element near zero, computed as 0: element by element a 100% error; against a
        // least scale of 1 an error of 5e-8 / 1e-3.
        let r = vec![-4.97e-8];
        assert!(!compare_within(&[0.0], &r, 4096, DType::BF16, 8e-3).passed);
        assert!(compare_scaled(&[0.0], &r, 4096, DType::BF16, 8e-3, 1.0).passed);
        // An error of that scale still fails.
        assert!(!compare_scaled(&[0.5], &r, 4096, DType::BF16, 8e-3, 1.0).passed);
    }

    #[test]
    fn a_short_last_block_is_judged_on_a_whole_blocks_scale() {
        // Blocks of 4: the last block holds one near-zero element. Its error of 1e-9 is
        // 1e-9 of the scale of the last 4 elements (1.0) and passes; were the element judged
        // alone, the error would be 50% of it.
        let r = vec![1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2e-9];
        let mut o = r.clone();
        o[8] = 3e-9;
        assert!(compare(&o, &r, 4, DType::F32).passed);
        // An error at that scale still fails.
        o[8] = 0.5;
        assert!(!compare(&o, &r, 4, DType::F32).passed);
    }

    #[test]
    fn sampled_rows_hold_the_ends_are_distinct_and_exactly_as_many_as_asked() {
        assert_eq!(sample_rows(0, 16, 1), Vec::<usize>::new());
        assert_eq!(sample_rows(1, 16, 1), [0]);
        assert_eq!(sample_rows(5, 16, 1), [0, 1, 2, 3, 4]);
        assert_eq!(sample_rows(5, 5, 1), [0, 1, 2, 3, 4]);
        assert_eq!(sample_rows(100, 1, 1), [0]);
        assert_eq!(sample_rows(100, 0, 1), Vec::<usize>::new());
        for (m, want) in [
            (17, 16),
            (32, 16),
            (300, 16),
            (1000, 16),
            (1 << 20, 64),
            (3, 2),
        ] {
            let r = sample_rows(m, want, 42);
            assert_eq!(r.len(), want, "{m} {want}");
            assert_eq!((r[0], *r.last().unwrap()), (0, m - 1));
            assert!(r.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(r, sample_rows(m, want, 42), "deterministic for a seed");
        }
        // Neighbouring seeds give different samples.
        assert_ne!(sample_rows(1 << 20, 64, 2), sample_rows(1 << 20, 64, 3));
        assert_ne!(sample_rows(1 << 20, 64, 0), sample_rows(1 << 20, 64, 1));
    }
}
