"""matmul and linear: FLOP and byte accounting, and their records."""

import unittest

from kernlab_baselines import ops
from kernlab_baselines.contract import make_record, record_bytes
from kernlab_baselines.ops.gemm import gemm_bytes, gemm_flops


class Accounting(unittest.TestCase):
    def test_flops(self):
        self.assertEqual(gemm_flops(8192, 8192, 8192), 2 * 8192 ** 3)
        self.assertEqual(gemm_flops(127, 255, 63), 4080510)
        self.assertEqual(ops.spec("linear").flops((127, 255, 63)), 4080510)

    def test_bytes(self):
        self.assertEqual(gemm_bytes(127, 255, 63, "bf16", True),
                         (127 * 63 + 255 * 63 + 127 * 255 + 255) * 2)
        self.assertEqual(gemm_bytes(127, 255, 63, "bf16", False), (127 * 63 + 255 * 63 + 127 * 255) * 2)
        self.assertEqual(gemm_bytes(8192, 8192, 8192, "f32", True), (3 * 8192 * 8192 + 8192) * 4)
        self.assertEqual(gemm_bytes(1, 1, 1, "f16", False), 6)
        self.assertEqual(record_bytes("linear", "bf16", (127, 255, 63)),
                         gemm_bytes(127, 255, 63, "bf16", True))
        self.assertEqual(record_bytes("matmul", "f32", (8, 16, 32)), (8 * 32 + 16 * 32 + 8 * 16) * 4)


class Records(unittest.TestCase):
    def test_linear(self):
        r = make_record("linear", "triton", "bf16", (127, 255, 63), None, "gelu-erf")
        self.assertEqual(r["shape"], [127, 255, 63])
        self.assertEqual((r["flops"], r["bias"], r["activation"], r["gelu"]),
                         (4080510, True, "gelu-erf", None))
        self.assertEqual(r["bytes"], gemm_bytes(127, 255, 63, "bf16", True))
        self.assertEqual(r["error_metric"], "max_row_rel_l2")

    def test_matmul_has_no_bias_nor_activation(self):
        r = make_record("matmul", "torch_native", "f32", (8, 16, 32), None, "gelu-tanh")
        self.assertEqual((r["activation"], r["bias"], r["flops"]), ("none", False, 2 * 8 * 16 * 32))
        self.assertEqual(r["bytes"], (8 * 32 + 16 * 32 + 8 * 16) * 4)
        self.assertEqual(r["tolerance"], 1e-4)

    def test_row_records_have_the_gemm_keys_as_null(self):
        r = make_record("softmax", "triton", "f32", (4, 8), None, "gelu-tanh")
        self.assertEqual((r["activation"], r["bias"], r["flops"]), (None, None, None))
        self.assertEqual(r["error_metric"], "elementwise_row_scaled")


if __name__ == "__main__":
    unittest.main()
