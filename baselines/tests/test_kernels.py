"""The one-dimensional Triton kernels (GeLU, softmax), launched as their ops' `triton`
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

from .fake_triton import Tensor, fake_triton_kernels

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
