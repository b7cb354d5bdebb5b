//! A point's inputs: checked (shape, row stride, host memory) before any is made, then made on
//! the host from a seed by the op's descriptor.

use super::reference::{reference_elems, FULL_REFERENCE_ELEMS};
use crate::ops::{Op, Params};
use crate::runtime::dtype::DType;
use crate::runtime::error::Result;
use crate::runtime::tensor::{check_host_memory, row_strided_layout, shape_str, Tensor};

/// Check a point before any of its inputs is made: the op's shape rules, the row stride's fit
/// and the host memory the point needs. `bench` checks every point this way before any work
/// starts, so a bad one does not end a run after the others were timed.
pub fn check_point(
    op: Op,
    shape: &[usize],
    dtype: DType,
    row_stride: Option<usize>,
    p: &Params,
) -> Result<()> {
    op.check_shape(shape, row_stride)?;
    check_host_memory(
        host_bytes(op, shape, dtype, row_stride, p).unwrap_or(usize::MAX),
        &format!(
            "{op} {dtype} {} (inputs, output, f64 reference, temporaries)",
            shape_str(shape)
        ),
    )
}

/// What a point holds on the host at once, an upper bound: the inputs (each made in f64, then
/// converted), the output (read back from a device, or a CPU tier's own) with its copy for the
/// check and a CPU tier's f32 temporaries (up to three an element), and the f64 reference with
/// the f64 inputs it reads. Calibrated on measured peaks (docs/benchmarking.md, "Host memory").
/// `None` on overflow.
pub fn host_bytes(
    op: Op,
    shape: &[usize],
    dtype: DType,
    row_stride: Option<usize>,
    p: &Params,
) -> Option<usize> {
    let mut inputs = 0usize;
    for (i, s) in op.input_shapes(shape, p).iter().enumerate() {
        let numel = s.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        // The first input is the one a row stride spreads out.
        let span = match (i, row_stride) {
            (0, Some(_)) => row_strided_layout(s, row_stride).ok()?.1.max(numel),
            _ => numel,
        };
        inputs = inputs.checked_add(span)?;
    }
    let out = op
        .out_shape(shape, p)
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))?;
    let (reference, reference_inputs) = reference_elems(op, shape, FULL_REFERENCE_ELEMS, p)?;
    inputs
        .checked_mul(8 + dtype.size())?
        .checked_add(out.checked_mul(4 * dtype.size() + 12)?)?
        .checked_add(reference.checked_add(reference_inputs)?.checked_mul(8)?)
}

/// The host inputs of one point, made by the op from `seed` (never zeros), after
/// [`check_point`].
pub fn make_inputs(
    op: Op,
    shape: &[usize],
    dtype: DType,
    seed: u64,
    row_stride: Option<usize>,
    p: &Params,
) -> Result<Vec<Tensor>> {
    check_point(op, shape, dtype, row_stride, p)?;
    op.inputs(shape, dtype, seed, row_stride, p)
}

/// A fresh seed from the OS (time and address entropy through a hasher).
pub fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{gelu, linear, matmul, softmax};

    /// Every point is checked before a run starts: a GEMM's rank and row stride, the stride's
    /// fit, the host memory.
    #[test]
    fn points_are_checked_before_any_input_is_made() {
        let f = DType::F32;
        let d = |op: Op| op.default_params();
        assert!(check_point(softmax::OP, &[64, 64], f, None, &d(softmax::OP)).is_ok());
        assert!(check_point(softmax::OP, &[64, 64], f, Some(80), &d(softmax::OP)).is_ok());
        let e = |op, shape: &[usize], ld| {
            check_point(op, shape, f, ld, &d(op))
                .unwrap_err()
                .to_string()
        };
        assert!(e(softmax::OP, &[4, 1 << 36], None).contains("of host memory"));
        assert!(e(softmax::OP, &[64, 64], Some(32)).contains("less than the rows' width"));
        assert!(e(gelu::OP, &[64], Some(80)).contains("needs rows"));
        assert!(e(matmul::OP, &[64, 64], None).contains("M×N×K"));
        assert!(e(linear::OP, &[64, 64, 64], Some(80)).contains("not to linear"));
        assert!(e(matmul::OP, &[1 << 20, 1 << 20, 1], None).contains("of host memory"));
    }

    #[test]
    fn gemm_points_count_their_output_and_reference_on_the_host() {
        const GIB: usize = 1 << 30;
        let p = matmul::OP.default_params();
        let b = |s: &[usize], dt| host_bytes(matmul::OP, s, dt, None, &p);
        // A 100000×100000 output of f32 from 1-wide operands: the output and the sampled
        // reference rows, not the tiny operands, make it too big for most hosts.
        assert!(b(&[100_000, 100_000, 1], DType::F32).unwrap() > 100 * GIB);
        // 8192³ bf16: operands, output and the sampled reference rows, a few GiB.
        let square = b(&[8192, 8192, 8192], DType::BF16).unwrap();
        assert!(square > GIB && square < 4 * GIB, "{square}");
        assert_eq!(b(&[usize::MAX, 2, 2], DType::F32), None);
        // The bound covers the measured peaks of a CPU linear of that shape's kind (21.6 bytes
        // an output element in f32, 17.7 in bf16, faer at 16000×16000×1): 34000×34000×1 f32,
        // killed on a 24 GiB machine under the old estimate, now asks for more than 30 GiB.
        let p = linear::OP.default_params();
        let big = host_bytes(linear::OP, &[34_000, 34_000, 1], DType::F32, None, &p).unwrap();
        assert!(big > 30 * GIB, "{big}");
        for (dt, measured) in [(DType::F32, 21.6), (DType::BF16, 17.7)] {
            let n = 16_000 * 16_000;
            let est = host_bytes(linear::OP, &[16_000, 16_000, 1], dt, None, &p).unwrap();
            assert!(est as f64 >= measured * n as f64, "{dt}: {est}");
        }
    }
}
