"""The command line's small parsers: shapes, variants, --rotate and its counts."""

import unittest

from kernlab_baselines import ops
from kernlab_baselines.common import VARIANTS, parse_shapes, parse_variants
from kernlab_baselines.timing import ROTATE_MAX_COPIES, parse_rotate, rotate_copies


class Shapes(unittest.TestCase):
    def test_rows_by_cols(self):
        self.assertEqual(parse_shapes("16384x16384"), [(16384, 16384)])
        self.assertEqual(parse_shapes("16384x16384, 4096X256,1x1"),
                         [(16384, 16384), (4096, 256), (1, 1)])
        self.assertEqual(parse_shapes("3\u00d75"), [(3, 5)])

    def test_bad_rows_by_cols(self):
        for bad in ("", "  ", "16384", "4x4x4", "0x4", "4x-1", "ax4", "4x4,", "4.5x4", None):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                parse_shapes(bad)

    def test_m_n_k(self):
        self.assertEqual(parse_shapes("8192x8192x8192, 127X255x63,1x1x1", 3),
                         [(8192, 8192, 8192), (127, 255, 63), (1, 1, 1)])

    def test_bad_m_n_k(self):
        for bad in ("", "64x64", "4x4x4x4", "0x1x1", "1x-1x1", "ax1x1", "1x1x1,", "1.5x1x1"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                parse_shapes(bad, 3)

    def test_messages_name_the_grammar(self):
        with self.assertRaisesRegex(ValueError, "is not ROWSxCOLS"):
            parse_shapes("1x2x3")
        with self.assertRaisesRegex(ValueError, "is not MxNxK"):
            parse_shapes("1x2", 3)
        with self.assertRaisesRegex(ValueError, "non-integer"):
            parse_shapes("1xb")

    def test_each_op_parses_its_own_grammar(self):
        for name, spec in ops.TABLE.items():
            text = "2x3x4" if spec.gemm else "2x3"
            with self.subTest(op=name):
                self.assertEqual(spec.parse_shapes(text), [(2, 3, 4) if spec.gemm else (2, 3)])
                with self.assertRaises(ValueError):
                    spec.parse_shapes("2x3" if spec.gemm else "2x3x4")


class Variants(unittest.TestCase):
    def test_order_kept_and_repeats_dropped(self):
        self.assertEqual(parse_variants("triton,torch_native,triton"), ["triton", "torch_native"])
        self.assertEqual(parse_variants(" torch_manual , ,torch_compile"),
                         ["torch_manual", "torch_compile"])

    def test_unknown_or_none(self):
        with self.assertRaisesRegex(ValueError, "unknown variant 'torch_eager'"):
            parse_variants("torch_eager")
        with self.assertRaisesRegex(ValueError, "no variants given"):
            parse_variants(" , ")

    def test_matmul_has_no_torch_manual(self):
        self.assertEqual(ops.spec("matmul").resolve_variants(list(VARIANTS)),
                         (["torch_native", "torch_compile", "triton"], ["torch_manual"]))
        self.assertEqual(ops.spec("matmul").resolve_variants(["torch_manual"]),
                         ([], ["torch_manual"]))

    def test_the_other_row_and_gemm_ops_have_every_variant(self):
        for name in [n for n in ops.ROW_OPS + ops.GEMM_OPS if n != "matmul"]:
            with self.subTest(op=name):
                self.assertEqual(ops.spec(name).resolve_variants(list(VARIANTS)),
                                 (list(VARIANTS), []))


class Rotate(unittest.TestCase):
    L2 = 60 << 20

    def test_parse(self):
        self.assertEqual(parse_rotate("auto"), "auto")
        self.assertEqual(parse_rotate(" AUTO "), "auto")
        self.assertEqual(parse_rotate("3"), 3)
        self.assertEqual(parse_rotate(" 7 "), 7)
        for bad in ("0", "-2", "x", "", "1.5"):
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                parse_rotate(bad)

    def test_a_count_is_itself(self):
        self.assertEqual(rotate_copies(1, 1 << 20, self.L2), 1)
        self.assertEqual(rotate_copies(7, 1, self.L2), 7)

    def test_auto_as_kernlab(self):
        # ceil(4 x L2 / bytes a call), within [1, 1024]
        self.assertEqual(rotate_copies("auto", 1 << 20, self.L2), 240)
        self.assertEqual(rotate_copies("auto", 8 << 20, self.L2), 30)
        self.assertEqual(rotate_copies("auto", (8 << 20) + 1, self.L2), 30)
        self.assertEqual(rotate_copies("auto", (8 << 20) - 1, self.L2), 31)
        self.assertEqual(rotate_copies("auto", 1 << 30, self.L2), 1)
        self.assertEqual(rotate_copies("auto", 16, self.L2), ROTATE_MAX_COPIES)
        self.assertEqual(rotate_copies("auto", 0, self.L2), ROTATE_MAX_COPIES)


if __name__ == "__main__":
    unittest.main()
