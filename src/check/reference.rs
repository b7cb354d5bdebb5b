//! The f64 reference a variant's output is judged against, made by the op's descriptor from
//! the inputs rounded to their dtype, and the validation of one call against it.

use super::compare::{compare_groups_l2_within, compare_rows_l2_within, compare_scaled, Check};
use crate::ops::{Compare, Op, Params, Variant};
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::tensor::Tensor;

/// Above this many output elements the reference covers sampled blocks only, at least 16 of
/// them (2^28: 2 GiB of f64 values; a sweep capped by `--max-elements 2^28` is checked in
/// full). GEMMs sample by their own rule (`OpDef::reference_block_count`).
pub const FULL_REFERENCE_ELEMS: usize = 1 << 28;

/// What a variant's output is compared with: f64 values of the whole output, or of sampled
/// blocks of it.
#[derive(Debug, Clone)]
pub struct Reference {
    pub op: Op,
    pub values: Vec<f64>,
    /// The blocks of `cols` logical elements (row-major; rows where `cols` is the output's last
    /// dimension) that `values` holds, sorted; None: the whole output.
    pub rows: Option<Vec<usize>>,
    pub cols: usize,
    /// What a block is, for reports ("rows", or for GeLU "blocks of 4096 elements").
    pub unit: &'static str,
    /// The op's parameters the values were made for (tolerances may depend on them).
    pub params: Params,
    /// The output's shape (the groups of [`Compare::GroupsL2`] depend on it).
    pub out_shape: Vec<usize>,
}

impl Reference {
    /// The oracle for a point's host `inputs` (point shape `shape`), sampled past `full_elems`
    /// output elements.
    pub fn make(
        op: Op,
        shape: &[usize],
        inputs: &[Tensor],
        p: &Params,
        seed: u64,
        full_elems: usize,
    ) -> Result<Reference> {
        let out = op.out_shape(shape, p);
        let (width, unit) = op.check_block(&out);
        let rows = op.reference_blocks(shape, seed, full_elems, p);
        let values = op.reference(inputs, rows.as_deref(), p)?;
        Ok(Reference {
            op,
            values,
            rows,
            cols: width,
            unit,
            params: p.clone(),
            out_shape: out,
        })
    }

    /// Check output `y` against this reference: its values where the reference has them (as
    /// the op's descriptor says: element by element, or by relative L2 a row for a GEMM), and
    /// with sampled blocks every other block for NaN or infinity: such an element fails the
    /// check (a NaN never passes, sampled or not). Element indices in the result are the
    /// output's.
    pub fn check(&self, y: &Tensor) -> Result<Check> {
        let Some(blocks) = &self.rows else {
            let out = y.to_f64_vec()?;
            return Ok(self.compare(&out, y.dtype()));
        };
        let s = y.sample_blocks(self.cols, blocks, true)?;
        let mut check = self.compare(&s.values, y.dtype());
        // compare's indices count the sampled blocks' elements: map them back to the output.
        if let Some(w) = check.worst.as_mut() {
            w.0 = blocks[w.0 / self.cols] * self.cols + w.0 % self.cols;
        }
        if s.nonfinite > 0 {
            check.special_mismatches += s.nonfinite;
            check.passed = false;
            check.max_rel_err = f64::INFINITY;
            check.outside_sample = s.first_bad;
        }
        Ok(check)
    }

    fn compare(&self, out: &[f64], dtype: DType) -> Check {
        let tol = self.op.tolerance(dtype, &self.params);
        match self.op.compare() {
            Compare::RowsL2 => compare_rows_l2_within(out, &self.values, self.cols, dtype, tol),
            Compare::Elementwise => compare_scaled(
                out,
                &self.values,
                self.cols,
                dtype,
                tol,
                self.op.min_check_scale(),
            ),
            Compare::GroupsL2 => {
                let rows = out.len() / self.cols.max(1);
                let groups: Vec<usize> = (0..rows)
                    .map(|i| {
                        let row = self.rows.as_ref().map_or(i, |r| r[i]);
                        self.op.check_group(&self.out_shape, &self.params, row)
                    })
                    .collect();
                compare_groups_l2_within(out, &self.values, self.cols, &groups, dtype, tol)
            }
        }
    }

    /// One line for reports, for an output of `numel` elements: `all 1024 rows`, or `64 sampled
    /// rows of 8192 …`.
    pub fn describe(&self, numel: usize) -> String {
        let total = numel.div_ceil(self.cols.max(1));
        match &self.rows {
            Some(r) if r.len() < total => format!(
                "{} sampled {} of {total} (first and last included; all others checked for NaN/inf)",
                r.len(),
                self.unit
            ),
            // One block of GeLU's: the whole output, however few its elements.
            _ if total == 1 && self.unit != "rows" => "the whole output".into(),
            _ => format!("all {total} {}", self.unit),
        }
    }
}

/// The f64 oracle for a point's host inputs, sampled past [`FULL_REFERENCE_ELEMS`].
pub fn make_reference(
    op: Op,
    shape: &[usize],
    inputs: &[Tensor],
    p: &Params,
    seed: u64,
) -> Result<Reference> {
    Reference::make(op, shape, inputs, p, seed, FULL_REFERENCE_ELEMS)
}

/// The elements a reference of `shape` holds, and the f64 input elements it reads to make
/// them (for host-memory estimates). `None` on overflow.
pub fn reference_elems(
    op: Op,
    shape: &[usize],
    full_elems: usize,
    p: &Params,
) -> Option<(usize, usize)> {
    let out = op.out_shape(shape, p);
    let (width, _) = op.check_block(&out);
    let blocks = op.reference_block_count(shape, full_elems, p);
    let numel = out.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
    Some((
        blocks.checked_mul(width)?.min(numel),
        op.reference_input_elems(shape, blocks, p),
    ))
}

/// Run a variant once on `inputs` into a NaN-poisoned output and compare it with the
/// reference: the check, and the output.
pub fn validate(
    v: &Variant,
    p: &Params,
    inputs: &[&Tensor],
    reference: &Reference,
) -> Result<(Check, Tensor)> {
    let x = inputs[0];
    let call = || -> Result<(Check, Tensor)> {
        let mut y = Tensor::empty(&v.op.call_out_shape(inputs, p), x.dtype(), &x.device())?;
        y.poison_nan()?;
        v.run(p, inputs, &mut y)?;
        if let Some(d) = x.device().cuda() {
            d.sync()?;
        }
        Ok((reference.check(&y)?, y))
    };
    // A kernel that faults is named: the fault surfaces at the next call, whichever it is.
    call().map_err(|e| e.during(v.id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gelu;

    /// GeLU's outputs are judged in blocks of 4096 elements, so a narrow last dimension does
    /// not change the verdict: the lecture's manual f32 GeLU (its 1 + tanh cancels near
    /// x = −5) failed at 4096×8 and 1024×4 and passed at 1-D sizes, on the same values.
    #[test]
    fn gelu_is_judged_alike_whatever_its_shape() {
        let p = gelu::OP.default_params();
        let n = 4096;
        let xs: Vec<f64> = (0..n).map(|i| -6.0 + 12.0 * i as f64 / n as f64).collect();
        for shape in [vec![n], vec![n / 8, 8], vec![n / 4, 4], vec![1, n]] {
            let x = Tensor::from_f64(&xs, &shape, DType::F32).unwrap();
            let r = make_reference(gelu::OP, &shape, &[x], &p, 1).unwrap();
            assert_eq!(
                (r.cols, r.rows.as_ref()),
                (gelu::CHECK_BLOCK, None),
                "{shape:?}"
            );
            assert_eq!(r.describe(n), "the whole output");
            assert_eq!(r.describe(3 * n), "all 3 blocks of 4096 elements");
            // The manual form's error: 1.3% on a −4.9e-6 output among outputs up to ~6.
            let mut out = r.values.clone();
            let i = (0..n)
                .min_by(|&a, &b| out[a].abs().total_cmp(&out[b].abs()))
                .unwrap();
            let tiny = (0..n).find(|&j| (out[j] + 4.9e-6).abs() < 1e-6).unwrap();
            out[tiny] *= 1.013;
            let y = Tensor::from_f64(&out, &shape, DType::F32).unwrap();
            assert!(r.check(&y).unwrap().passed, "{shape:?}");
            // A real error still fails, and a NaN never passes.
            out[tiny] = r.values[tiny];
            out[n - 1] *= 1.01;
            let y = Tensor::from_f64(&out, &shape, DType::F32).unwrap();
            assert!(!r.check(&y).unwrap().passed, "{shape:?}");
            out[n - 1] = r.values[n - 1];
            out[i] = f64::NAN;
            let y = Tensor::from_f64(&out, &shape, DType::F32).unwrap();
            assert!(!r.check(&y).unwrap().passed, "{shape:?}");
        }
    }
}
