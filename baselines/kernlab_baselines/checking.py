"""Checking an output against its float64 reference: kernlab's error measures (the
element-wise one for the row ops, the row relative L2 one for GEMMs, the group-scaled one for
the MLP's outputs and gradients), each in a pure-Python form and an array form that runs on
torch tensors (on the GPU) or NumPy arrays, and the rows a large GEMM is checked on. No torch,
no NumPy at import."""

import math
import random

from .common import MIN_POSITIVE

ROW_SCALE = 1e-3  # |ref| is judged against 1e-3 * (max |ref| of its row)

# Rows handled at once when comparing on the GPU (bounds the float64 temporaries).
MEASURE_CHUNK_ELEMS = 1 << 26

# GEMM validation: every output row when the output is small (M <= GEMM_SAMPLE_ROWS or
# M*N <= GEMM_FULL_CHECK_ELEMS), else GEMM_SAMPLE_ROWS rows (the first, the last and a seeded
# random rest) against all N columns.
GEMM_SAMPLE_ROWS = 64
GEMM_FULL_CHECK_ELEMS = 1 << 22


def group_floor(cols, min_normal, tolerance):
    """The group check's least scale (kernlab's `compare_groups_l2_within`): sqrt(cols) x the
    dtype's smallest normal / the tolerance, so that a row whose elements are off by about the
    format's underflow passes."""
    return math.sqrt(max(1, int(cols))) * min_normal / max(tolerance, MIN_POSITIVE)


def _status_ok(o, f):
    """Whether `o` has the NaN/inf status of the reference `f`: NaN where it is NaN, the same
    inf where it is inf, finite elsewhere."""
    if math.isnan(f):
        return math.isnan(o)
    if math.isinf(f):
        return o == f
    return math.isfinite(o)


def rel_err_py(out_rows, ref_rows, floor):
    """kernlab's error measure in pure Python, mirroring `rel_err_array` line for line.

    out_rows, ref_rows: lists of rows (lists of floats), the last dim being the row.
    Returns (max_err, mismatches): the max over elements of
        max(0, |out - ref| - floor) / max(|ref| + 1e-3 * rowmax|ref|, MIN_POSITIVE)
    over the elements whose reference is finite and whose NaN/inf status is right, and the
    count of elements whose NaN/inf status differs from the reference (NaN where the reference
    is NaN, the same inf where it is inf, finite elsewhere).
    """
    max_err, mismatches = 0.0, 0
    for o_row, r_row in zip(out_rows, ref_rows):
        fin = [math.isfinite(f) for f in r_row]
        absref = [abs(f) if fi else 0.0 for f, fi in zip(r_row, fin)]
        scale = max(absref) if absref else 0.0
        for o, f, fi, af in zip(o_row, r_row, fin, absref):
            ok = _status_ok(o, f)
            if not ok:
                mismatches += 1
            if fi and ok:
                d = abs(o - f)
                num = max(d - floor, 0.0)
                den = max(af + ROW_SCALE * scale, MIN_POSITIVE)
                max_err = max(max_err, num / den)
    return max_err, mismatches


def row_rel_l2_py(out_rows, ref_rows):
    """The GEMM error measure in pure Python, mirroring `row_rel_l2_array`.

    Returns (max_err, mismatches): the max over rows of ||out_r - ref_r||_2 / ||ref_r||_2
    (the norms over the row's elements whose reference is finite and whose NaN/inf status is
    right; the denominator at least MIN_POSITIVE), and the count of elements whose NaN/inf
    status differs from the reference, as in `rel_err_py`.
    """
    nums, dens, mismatches = _row_sums_py(out_rows, ref_rows)
    max_err = 0.0
    for num, den in zip(nums, dens):
        max_err = max(max_err, math.sqrt(num / max(den, MIN_POSITIVE)))
    return max_err, mismatches


def _row_sums_py(out_rows, ref_rows):
    """Each row's sum of squared errors and of squared reference values, over the elements
    whose reference is finite and whose NaN/inf status is right, and the count of elements
    whose status differs (as in `rel_err_py`): (nums, dens, mismatches)."""
    nums, dens, mismatches = [], [], 0
    for o_row, r_row in zip(out_rows, ref_rows):
        num = den = 0.0
        for o, f in zip(o_row, r_row):
            if not _status_ok(o, f):
                mismatches += 1
            elif math.isfinite(f):
                num += (o - f) ** 2
                den += f * f
        nums.append(num)
        dens.append(den)
    return nums, dens, mismatches


def group_rel_l2_py(out_rows, ref_rows, groups, floor):
    """kernlab's group-scaled measure (`Compare::GroupsL2`, `compare_groups_l2_within`) in pure
    Python, mirroring `group_rel_l2_array`: row r belongs to group groups[r]; its error is
    ||out_r - ref_r||_2 over the larger of its group's RMS row norm, sqrt(mean over the
    group's rows of ||ref||_2^2), and `floor` (`group_floor`); the norms over the elements
    whose reference is finite and whose NaN/inf status is right. Returns (max over rows,
    mismatches), the mismatches counted as in `rel_err_py`."""
    nums, dens, mismatches = _row_sums_py(out_rows, ref_rows)
    sums = {}
    for g, den in zip(groups, dens):
        s, n = sums.get(g, (0.0, 0))
        sums[g] = (s + den, n + 1)
    max_err = 0.0
    for g, num in zip(groups, nums):
        s, n = sums[g]
        max_err = max(max_err, math.sqrt(num) / max(math.sqrt(s / n), floor))
    return max_err, mismatches


class TorchOps:
    """The array operations `rel_err_array` needs, on torch tensors (any device)."""

    def __init__(self, torch):
        self.t = torch

    def isfinite(self, a):
        return self.t.isfinite(a)

    def isnan(self, a):
        return self.t.isnan(a)

    def isinf(self, a):
        return self.t.isinf(a)

    def abs(self, a):
        return a.abs()

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def rowmax(self, a):
        return a.amax(dim=-1, keepdim=True)

    def clamp_min(self, a, v):
        return self.t.clamp(a, min=v)

    def count(self, m):
        return int(m.sum().item())

    def max_all(self, a):
        return float(a.max().item()) if a.numel() else 0.0

    def rowsum(self, a):
        return a.sum(dim=-1, keepdim=True)

    def sqrt(self, a):
        return a.sqrt()

    def mean_all(self, a):
        return float(a.mean().item()) if a.numel() else 0.0


class NumpyOps:
    """The same operations on NumPy arrays (used by the unit tests where NumPy imports)."""

    def __init__(self, np):
        self.np = np

    def isfinite(self, a):
        return self.np.isfinite(a)

    def isnan(self, a):
        return self.np.isnan(a)

    def isinf(self, a):
        return self.np.isinf(a)

    def abs(self, a):
        return self.np.abs(a)

    def where(self, c, a, b):
        return self.np.where(c, a, b)

    def rowmax(self, a):
        return a.max(axis=-1, keepdims=True)

    def clamp_min(self, a, v):
        return self.np.maximum(a, v)

    def count(self, m):
        return int(m.sum())

    def max_all(self, a):
        return float(a.max()) if a.size else 0.0

    def rowsum(self, a):
        return a.sum(axis=-1, keepdims=True)

    def sqrt(self, a):
        return self.np.sqrt(a)

    def mean_all(self, a):
        return float(a.mean()) if a.size else 0.0


def rel_err_array(ops, out, ref, floor):
    """kernlab's error measure on 2-D float64 arrays (rows on the last dim); see `rel_err_py`.

    Works on torch tensors (on the GPU) through `TorchOps` and on NumPy through `NumpyOps`.
    """
    fin = ops.isfinite(ref)
    absref = ops.where(fin, ops.abs(ref), 0.0)
    scale = ops.rowmax(absref)
    ok = ops.where(ops.isnan(ref), ops.isnan(out),
                   ops.where(ops.isinf(ref), out == ref, ops.isfinite(out)))
    mismatches = ops.count(~ok)
    d = ops.abs(out - ref)
    num = ops.clamp_min(d - floor, 0.0)
    den = ops.clamp_min(absref + ROW_SCALE * scale, MIN_POSITIVE)
    e = ops.where(fin & ok, num / den, 0.0)
    return ops.max_all(e), mismatches


def row_rel_l2_array(ops, out, ref):
    """The GEMM error measure on 2-D float64 arrays (one output row per row); see
    `row_rel_l2_py`. Returns (max over rows of the relative L2 error, mismatches)."""
    fin = ops.isfinite(ref)
    ok = ops.where(ops.isnan(ref), ops.isnan(out),
                   ops.where(ops.isinf(ref), out == ref, ops.isfinite(out)))
    mismatches = ops.count(~ok)
    use = fin & ok
    d = ops.where(use, out - ref, 0.0)
    r = ops.where(use, ref, 0.0)
    num = ops.rowsum(d * d)
    den = ops.clamp_min(ops.rowsum(r * r), MIN_POSITIVE)
    return ops.max_all(ops.sqrt(num / den)), mismatches


def group_rel_l2_array(ops, out, ref, floor, one_group=True):
    """The group-scaled measure on 2-D float64 arrays (see `group_rel_l2_py`): every row of
    `out` one group (`one_group`: a tensor's gradient), or each row a group of its own (the
    MLP's forward rows). Returns (max over rows, mismatches)."""
    fin = ops.isfinite(ref)
    ok = ops.where(ops.isnan(ref), ops.isnan(out),
                   ops.where(ops.isinf(ref), out == ref, ops.isfinite(out)))
    mismatches = ops.count(~ok)
    use = fin & ok
    d = ops.where(use, out - ref, 0.0)
    r = ops.where(use, ref, 0.0)
    num = ops.sqrt(ops.rowsum(d * d))
    den = ops.rowsum(r * r)
    if one_group:
        e = num / max(math.sqrt(ops.mean_all(den)), floor)
    else:
        e = num / ops.clamp_min(ops.sqrt(den), floor)
    return ops.max_all(e), mismatches


def measure_rows(torch, ops, out, ref, floor, chunk_elems=MEASURE_CHUNK_ELEMS):
    """(max_rel_err, mismatches) of `out` (any dtype, rows x cols in any layout) against the
    float64 `ref` by `rel_err_array`, a chunk of rows at a time (each chunk's float64 copy of
    `out` at most `chunk_elems` elements)."""
    rows, cols = ref.shape
    out = out.reshape(rows, cols)
    step = max(1, chunk_elems // max(1, cols))
    worst, mism = 0.0, 0
    for r0 in range(0, rows, step):
        o = out[r0:r0 + step].to(torch.float64)
        e, m = rel_err_array(ops, o, ref[r0:r0 + step], floor)
        del o
        worst = max(worst, e)
        mism += m
    return worst, mism


def sample_rows(m, n, seed, count=GEMM_SAMPLE_ROWS, full_elems=GEMM_FULL_CHECK_ELEMS):
    """The output rows a GEMM is validated on (sorted): all M when M <= count or M*N <=
    full_elems; else the first, the last and count-2 others drawn with `seed`."""
    m, n = int(m), int(n)
    if m <= count or m * n <= full_elems:
        return list(range(m))
    rng = random.Random(int(seed) * 1000003 + m)
    rest = rng.sample(range(1, m - 1), count - 2)
    return sorted([0, m - 1] + rest)
