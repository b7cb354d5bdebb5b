"""The one-dimensional Triton kernels (GeLU, softmax, RMSNorm), launched as their ops' `triton`
variant launches them, run by the stand-in for Triton in `fake_triton` (plain Python, one
program at a time): their indexing, masking, row strides and arithmetic, against the float64
references, on a machine with no GPU and no Triton."""

import math
import random
import types
import unittest

from kernlab_baselines import ops
from kernlab_baselines.checking import rel_err_py
from kernlab_baselines.common import DTYPES
from kernlab_baselines.ops.gelu import gelu_py
from kernlab_baselines.ops.rmsnorm import rmsnorm_py

from .fake_triton import BFLOAT16, FLOAT32, Tensor, fake_triton_kernels

TOL, FLOOR = DTYPES["f32"][2], DTYPES["f32"][3]


def softmax_py(rows):
    out = []
    for row in rows:
        m = max(row)
        e = [math.exp(v - m) for v in row]
        s = math.fsum(e)
        out.append([v / s for v in e])
    return out


def bench(**args):
    """What a Triton variant reads of the run (no torch: every call passes its output)."""
    return types.SimpleNamespace(torch=None, args=types.SimpleNamespace(**args))


def draw(rows, cols, seed, scale=1.0):
    rng = random.Random(seed)
    return [[rng.gauss(0.0, scale) for _ in range(cols)] for _ in range(rows)]


class Kernels(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ctx = fake_triton_kernels()
        cls.tk = cls.ctx.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.ctx.__exit__(None, None, None)

    def assertClose(self, out, ref, tol=TOL, floor=FLOOR):
        err, mism = rel_err_py(out, ref, floor)
        self.assertEqual(mism, 0, "NaN/inf where the reference has none (or the reverse)")
        self.assertLessEqual(err, tol)

    # -- rmsnorm ------------------------------------------------------------------------------
    def rmsnorm(self, rows, cols, stride=None, eps=1e-6, dtype=FLOAT32, seed=1):
        x = Tensor.of(draw(rows, cols, seed), stride, dtype)
        w = Tensor.of([1.0 + 0.25 * v for v in draw(1, cols, seed + 1)[0]], None, dtype)
        y = Tensor((rows, cols), dtype=dtype)
        fn, note = ops.spec("rmsnorm").triton_fn(bench(eps=eps), (rows, cols))
        self.assertIs(fn(x, w, y), y)
        return x, w, y, note

    def test_rmsnorm_rows_of_every_width(self):
        for rows, cols in ((3, 1), (2, 5), (4, 64), (2, 100), (1, 1000)):
            with self.subTest(f"{rows}x{cols}"):
                x, w, y, note = self.rmsnorm(rows, cols)
                self.assertClose(y.rows(), rmsnorm_py(x.rows(), w.rows()[0], 1e-6))
        block = 1 << (1000 - 1).bit_length()
        self.assertEqual(note, f"BLOCK_SIZE={block}, num_warps=4, f32 arithmetic")

    def test_rmsnorm_strided_rows_read_no_gap(self):
        x, w, y, _ = self.rmsnorm(4, 100, stride=112)
        self.assertTrue(all(math.isnan(v) for v in x.gaps()))  # NaN would spread if read
        self.assertClose(y.rows(), rmsnorm_py(x.rows(), w.rows()[0], 1e-6))

    def test_rmsnorm_eps_counts(self):
        # A row of tiny values: eps dominates the mean of squares.
        x = Tensor.of([[1e-4, -2e-4, 3e-4]])
        w = Tensor.of([1.0, 2.0, 0.5])
        y = Tensor((1, 3))
        fn, _ = ops.spec("rmsnorm").triton_fn(bench(eps=1e-2), (1, 3))
        fn(x, w, y)
        self.assertClose(y.rows(), rmsnorm_py(x.rows(), [1.0, 2.0, 0.5], 1e-2))
        self.assertAlmostEqual(y.rows()[0][0], 1e-4 / math.sqrt(1e-2 + 14e-8 / 3), delta=1e-9)

    def test_rmsnorm_stores_the_output_dtype(self):
        x, w, y, _ = self.rmsnorm(2, 48, dtype=BFLOAT16)
        self.assertTrue(all(BFLOAT16.cast(v) == v for row in y.rows() for v in row))
        self.assertClose(y.rows(), rmsnorm_py(x.rows(), w.rows()[0], 1e-6),
                         tol=DTYPES["bf16"][2], floor=DTYPES["bf16"][3])

    def test_rmsnorm_too_wide_for_one_block(self):
        with self.assertRaisesRegex(ValueError, "row too wide for the one-block-per-row Triton "
                                                "RMSNorm: BLOCK_SIZE=262144 > 131072"):
            ops.spec("rmsnorm").triton_fn(bench(eps=1e-6), (1, 131073))

    # -- softmax ------------------------------------------------------------------------------
    def test_softmax(self):
        for rows, cols, stride in ((3, 1, None), (2, 7, None), (4, 100, 104)):
            with self.subTest(f"{rows}x{cols}/{stride}"):
                x = Tensor.of(draw(rows, cols, 3, 4.0), stride)
                y = Tensor((rows, cols))
                fn, _ = ops.spec("softmax").triton_fn(bench(), (rows, cols))
                fn(x, y)
                self.assertClose(y.rows(), softmax_py(x.rows()))

    # -- gelu ---------------------------------------------------------------------------------
    def test_gelu_both_forms_and_a_partial_last_block(self):
        for form in ("tanh", "erf"):
            with self.subTest(form):
                x = Tensor.of(draw(3, 700, 4, 2.0) + [[-30.0, 30.0] + [0.0] * 698])
                y = Tensor((4, 700))
                fn, _ = ops.spec("gelu").triton_fn(bench(gelu=form), (4, 700))
                fn(x, y)
                ref = [[gelu_py(v, form) for v in row] for row in x.rows()]
                self.assertClose(y.rows(), ref)

    def test_gelu_refuses_strided_rows(self):
        fn, _ = ops.spec("gelu").triton_fn(bench(gelu="tanh"), (2, 3))
        with self.assertRaisesRegex(RuntimeError, "--row-stride"):
            fn(Tensor.of([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 4), Tensor((2, 3)))


if __name__ == "__main__":
    unittest.main()
