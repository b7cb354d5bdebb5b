"""The error measures (kernlab's element-wise one, the GEMMs' row relative L2 one and the
MLP's group-scaled one), their array forms against the pure-Python ones, and the rows a GEMM
is checked on."""

import math
import random
import unittest

from kernlab_baselines.checking import (GEMM_SAMPLE_ROWS, NumpyOps, TorchOps, group_floor,
                                        group_rel_l2_array, group_rel_l2_py, rel_err_array,
                                        rel_err_py, row_rel_l2_array, row_rel_l2_py,
                                        sample_rows)
from kernlab_baselines.common import DTYPES, MIN_NORMAL, MIN_POSITIVE

from .support import close, optional

INF, NAN = float("inf"), float("nan")
F32, BF16, F16 = (DTYPES[k][3] for k in ("f32", "bf16", "f16"))

# (name, out_rows, ref_rows, floor, want_err, want_mismatches)
ELEMENTWISE_CASES = [
    ("identical", [[1.0, -2.0, 3.0, 0.5]], [[1.0, -2.0, 3.0, 0.5]], F32, 0.0, 0),
    ("relative", [[1.0, -2.0, 3.0003, 0.5]], [[1.0, -2.0, 3.0, 0.5]], F32,
     (0.0003 - F32) / (3.0 + 3e-3), 0),
    # a value 9 decades under its row's largest is judged against 1e-3 * rowmax
    ("row floor", [[1000.0, 2e-6]], [[1000.0, 1e-6]], F32, 1e-6 / (1e-6 + 1.0), 0),
    # each row has its own scale: same absolute error, 1000x the measure in the small row
    ("per row", [[1000.0, 1.001], [1.0, 1.001]], [[1000.0, 1.0], [1.0, 1.0]], F32,
     0.001 / (1.0 + 1e-3), 0),
    ("subnormal floor f32", [[1e-45, 0.0]], [[0.0, 0.0]], F32, 0.0, 0),
    ("subnormal floor f16", [[5e-8, 1.0]], [[0.0, 1.0]], F16, 0.0, 0),
    ("over f16 floor", [[1e-7, 1.0]], [[0.0, 1.0]], F16, (1e-7 - F16) / 1e-3, 0),
    ("NaN for finite", [[NAN, 1.0]], [[1.0, 1.0]], BF16, 0.0, 1),
    ("inf for finite", [[INF, 1.0]], [[1.0, 1.0]], BF16, 0.0, 1),
    ("finite for NaN", [[0.5, 1.0]], [[NAN, 1.0]], F32, 0.0, 1),
    ("NaN for NaN", [[NAN, 1.5]], [[NAN, 1.0]], F32, 0.5 / (1.0 + 1e-3), 0),
    ("inf for inf", [[INF, -INF, 2.0]], [[INF, -INF, 2.0]], F32, 0.0, 0),
    ("wrong inf sign", [[-INF, 2.0]], [[INF, 2.0]], F32, 0.0, 1),
    ("finite for inf", [[1e30, 2.0]], [[INF, 2.0]], F32, 0.0, 1),
    # rowmax skips the non-finite reference values
    ("rowmax finite only", [[INF, 1.0, 0.002]], [[INF, 1.0, 0.001]], F32,
     0.001 / (0.001 + 1e-3), 0),
    ("all-zero row", [[0.0, 0.0]], [[0.0, 0.0]], BF16, 0.0, 0),
    ("zero ref nonzero out", [[1e-30, 0.0]], [[0.0, 0.0]], F32, (1e-30 - F32) / MIN_POSITIVE, 0),
]

# (name, out_rows, ref_rows, want_err, want_mismatches)
ROW_L2_CASES = [
    ("identical", [[1.0, -2.0], [3.0, 4.0]], [[1.0, -2.0], [3.0, 4.0]], 0.0, 0),
    ("3-4-5", [[3.0, 4.5]], [[3.0, 4.0]], 0.1, 0),
    ("worst row", [[3.0, 4.5], [1.0, 0.0]], [[3.0, 4.0], [1.0, 0.0]], 0.1, 0),
    ("small row counts alone", [[1000.0, 0.0], [0.0, 0.011]], [[1000.0, 0.0], [0.0, 0.01]], 0.1, 0),
    ("NaN for finite", [[NAN, 1.0]], [[1.0, 1.0]], 0.0, 1),
    ("inf for inf", [[INF, 1.0]], [[INF, 1.0]], 0.0, 0),
    ("finite for inf", [[1.0, 2.0]], [[-INF, 2.0]], 0.0, 1),
    ("zero row", [[0.0, 0.0]], [[0.0, 0.0]], 0.0, 0),
    ("zero ref", [[1e-150, 0.0]], [[0.0, 0.0]], 1e-150 / math.sqrt(MIN_POSITIVE), 0),
]


# (name, out_rows, ref_rows, one group (else a group a row), floor, want_err, want_mismatches)
TINY = group_floor(2, MIN_NORMAL["bf16"], 0.072)
GROUP_CASES = [
    ("identical", [[1.0, -2.0], [3.0, 4.0]], [[1.0, -2.0], [3.0, 4.0]], True, TINY, 0.0, 0),
    # a small row is judged in its tensor's scale: the RMS of its group's row norms
    ("the group's scale", [[3.0, 4.0], [0.0, 0.02]], [[3.0, 4.0], [0.0, 0.01]], True, TINY,
     0.01 / math.sqrt((25.0 + 1e-4) / 2), 0),
    ("rows apart", [[3.0, 4.0], [0.0, 0.02]], [[3.0, 4.0], [0.0, 0.01]], False, TINY, 1.0, 0),
    ("worst row of the group", [[3.0, 4.5], [0.0, 0.0]], [[3.0, 4.0], [0.0, 0.0]], True, TINY,
     0.5 / math.sqrt(12.5), 0),
    # errors the size of the format's underflow are judged against the floor
    ("underflow", [[0.0, 0.0]], [[1e-40, 0.0]], True, TINY, 1e-40 / TINY, 0),
    ("underflow, a row apart", [[0.0, 0.0]], [[1e-40, 0.0]], False, TINY, 1e-40 / TINY, 0),
    ("NaN for finite", [[NAN, 1.0], [1.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]], True, TINY, 0.0, 1),
    ("inf for inf", [[INF, 1.0]], [[INF, 1.0]], True, TINY, 0.0, 0),
    ("finite for inf", [[1.0, 2.0]], [[-INF, 2.0]], False, TINY, 0.0, 1),
    ("zero group", [[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]], True, TINY, 0.0, 0),
]


def groups_of(rows, one):
    return [0] * len(rows) if one else list(range(len(rows)))


def random_rows():
    """Pseudo-random rows of mixed magnitudes, with a NaN, an inf and one mismatch."""
    rng = random.Random(12345)
    ref = [[rng.gauss(0.0, 1.0) * 10 ** rng.randint(-8, 2) for _ in range(7)] for _ in range(5)]
    out = [[v * (1 + rng.uniform(-1e-3, 1e-3)) + rng.uniform(-1e-9, 1e-9) for v in row]
           for row in ref]
    ref[2][3] = out[2][3] = NAN
    ref[4][0] = out[4][0] = -INF
    out[1][1] = INF  # a mismatch
    return out, ref


class ElementwisePure(unittest.TestCase):
    def test_hand_made_cases(self):
        for name, o, r, floor, want_e, want_m in ELEMENTWISE_CASES:
            with self.subTest(name):
                e, m = rel_err_py(o, r, floor)
                self.assertTrue(close(e, want_e), f"got {e!r}, want {want_e!r}")
                self.assertEqual(m, want_m)

    def test_tolerances_decide_as_kernlab(self):
        e, m = rel_err_py([[1.0 + 2e-4]], [[1.0]], F32)
        self.assertEqual(m, 0)
        self.assertGreater(e, DTYPES["f32"][2], "2e-4 relative passes f32")
        e, m = rel_err_py([[1.0 + 2 ** -9]], [[1.0]], BF16)
        self.assertEqual(m, 0)
        self.assertLessEqual(e, DTYPES["bf16"][2], "half a bf16 ulp fails bf16")

    def test_random_rows_count_their_mismatch(self):
        out, ref = random_rows()
        e, m = rel_err_py(out, ref, BF16)
        self.assertEqual(m, 1)
        self.assertTrue(0 < e <= 1.01e-3, e)


class RowL2Pure(unittest.TestCase):
    def test_hand_made_cases(self):
        for name, o, r, want_e, want_m in ROW_L2_CASES:
            with self.subTest(name):
                e, m = row_rel_l2_py(o, r)
                self.assertTrue(close(e, want_e), f"got {e!r}, want {want_e!r}")
                self.assertEqual(m, want_m)

    def test_tf32_sized_errors_fail_f32_and_f32_rounding_passes(self):
        rng = random.Random(99)
        ref = [sum(rng.gauss(0, 1) * rng.gauss(0, 1) / 16.0 for _ in range(256)) for _ in range(64)]
        tf32 = [[v * (1 + 2 ** -11 * rng.choice((-1, 1))) for v in ref]]
        self.assertGreater(row_rel_l2_py(tf32, [ref])[0], DTYPES["f32"][2])
        f32 = [[v * (1 + 2 ** -24) for v in ref]]
        self.assertLessEqual(row_rel_l2_py(f32, [ref])[0], DTYPES["f32"][2])


class GroupL2Pure(unittest.TestCase):
    def test_hand_made_cases(self):
        for name, o, r, one, floor, want_e, want_m in GROUP_CASES:
            with self.subTest(name):
                e, m = group_rel_l2_py(o, r, groups_of(o, one), floor)
                self.assertTrue(close(e, want_e), f"got {e!r}, want {want_e!r}")
                self.assertEqual(m, want_m)

    def test_groups_are_apart(self):
        o = [[3.0, 4.0], [0.0, 0.02], [1.0, 0.0]]
        r = [[3.0, 4.0], [0.0, 0.01], [1.0, 0.0]]
        e, _ = group_rel_l2_py(o, r, [0, 0, 1], TINY)
        self.assertTrue(close(e, 0.01 / math.sqrt((25.0 + 1e-4) / 2)), e)
        e, _ = group_rel_l2_py(o, r, [0, 1, 0], TINY)
        self.assertTrue(close(e, 1.0), e)

    def test_the_floor_is_kernlab_s(self):
        # sqrt(cols) x the smallest normal / the tolerance
        self.assertEqual(group_floor(4, MIN_NORMAL["f16"], 0.5), 2 * 2.0 ** -14 / 0.5)
        self.assertEqual(MIN_NORMAL, {"f32": 2.0 ** -126, "bf16": 2.0 ** -126, "f16": 2.0 ** -14})
        # bf16 underflow in a 2048-wide gradient of 64 layers passes (flushed to zero); a 10%
        # error in the normal range does not
        tol = 8e-3 * 9
        floor = group_floor(2048, MIN_NORMAL["bf16"], tol)
        tiny = [2.0 ** -130 * (1 + i % 3) for i in range(2048)]
        self.assertLessEqual(group_rel_l2_py([[0.0] * 2048], [tiny], [0], floor)[0], tol)
        normal = [1e-3 * (1 + i % 3) for i in range(2048)]
        self.assertTrue(close(group_rel_l2_py([[v * 1.1 for v in normal]], [normal], [0],
                                              floor)[0], 0.1))


class ArrayForms(unittest.TestCase):
    """`rel_err_array`, `row_rel_l2_array` and `group_rel_l2_array` give what the pure-Python
    forms give."""

    def backends(self):
        found = []
        np = optional("numpy")
        if np is not None:
            found.append(("numpy", lambda rows: np.array(rows, dtype=np.float64), NumpyOps(np), np))
        torch = optional("torch")
        if torch is not None:
            found.append(("torch (cpu)", lambda rows: torch.tensor(rows, dtype=torch.float64),
                          TorchOps(torch), None))
        if not found:
            self.skipTest("neither NumPy nor torch imports here")
        return found

    @staticmethod
    def quiet(np_mod):
        import contextlib

        return np_mod.errstate(all="ignore") if np_mod is not None else contextlib.nullcontext()

    def test_elementwise(self):
        out, ref = random_rows()
        cases = [(c[0], c[1], c[2], c[3]) for c in ELEMENTWISE_CASES] + [("random", out, ref, BF16)]
        for bname, make, array_ops, np_mod in self.backends():
            for name, o, r, floor in cases:
                with self.subTest(backend=bname, case=name), self.quiet(np_mod):
                    want = rel_err_py(o, r, floor)
                    got = rel_err_array(array_ops, make(o), make(r), floor)
                    self.assertTrue(close(got[0], want[0]) and got[1] == want[1], (got, want))

    def test_row_l2(self):
        out, ref = random_rows()
        cases = [(c[0], c[1], c[2]) for c in ROW_L2_CASES] + [("random", out, ref)]
        for bname, make, array_ops, np_mod in self.backends():
            for name, o, r in cases:
                with self.subTest(backend=bname, case=name), self.quiet(np_mod):
                    want = row_rel_l2_py(o, r)
                    got = row_rel_l2_array(array_ops, make(o), make(r))
                    self.assertTrue(close(got[0], want[0]) and got[1] == want[1], (got, want))


    def test_group_l2(self):
        out, ref = random_rows()
        cases = ([(c[0], c[1], c[2], c[3], c[4]) for c in GROUP_CASES]
                 + [("random, one group", out, ref, True, TINY),
                    ("random, rows apart", out, ref, False, TINY)])
        for bname, make, array_ops, np_mod in self.backends():
            for name, o, r, one, floor in cases:
                with self.subTest(backend=bname, case=name), self.quiet(np_mod):
                    want = group_rel_l2_py(o, r, groups_of(o, one), floor)
                    got = group_rel_l2_array(array_ops, make(o), make(r), floor, one_group=one)
                    self.assertTrue(close(got[0], want[0]) and got[1] == want[1], (got, want))


class SampledRows(unittest.TestCase):
    def test_small_outputs_check_every_row(self):
        self.assertEqual(sample_rows(64, 1 << 20, 1), list(range(64)))
        self.assertEqual(sample_rows(4096, 1024, 1), list(range(4096)))

    def test_large_outputs_check_a_seeded_sample(self):
        rs = sample_rows(8192, 8192, 7)
        self.assertEqual(len(rs), GEMM_SAMPLE_ROWS)
        self.assertEqual(len(set(rs)), len(rs))
        self.assertEqual(rs, sorted(rs))
        self.assertEqual((rs[0], rs[-1]), (0, 8191))
        self.assertTrue(all(0 <= v < 8192 for v in rs))
        self.assertEqual(sample_rows(8192, 8192, 7), rs)
        self.assertNotEqual(sample_rows(8192, 8192, 8), rs)


if __name__ == "__main__":
    unittest.main()
