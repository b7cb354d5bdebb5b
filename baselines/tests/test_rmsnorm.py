"""rmsnorm's op module: its shapes, byte count, reference (on hand-computed cases), options on
the command line, and the contract of its records; with torch (CPU), its variants' PyTorch
forms against the float64 reference."""

import math
import unittest

from kernlab_baselines import ops
from kernlab_baselines.checking import TorchOps, rel_err_array
from kernlab_baselines.common import DTYPES, EXIT_USAGE
from kernlab_baselines.contract import check_contract, make_record, record_bytes
from kernlab_baselines.ops.rmsnorm import (F32_EPS, manual_rmsnorm, rmsnorm_py,
                                           rmsnorm_reference)
from kernlab_baselines.timing import rotate_copies

from .support import optional, run_main
from .test_cli import captured_args

SPEC = ops.spec("rmsnorm")
DOC = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
       "device": "NVIDIA H200", "seed": 7}


def ok_record(**kw):
    r = make_record("rmsnorm", "triton", "bf16", (4096, 4096), None, None, 1e-6)
    r.update(status="ok", validated=True, max_rel_err=2e-3, median_ms=0.05, p20_ms=0.049,
             p80_ms=0.051, gbps=r["bytes"] / 5e-5 / 1e9)
    r.update(kw)
    return r


class Table(unittest.TestCase):
    def test_a_row_op_of_its_own(self):
        self.assertIn("rmsnorm", ops.OPS)
        self.assertIn("rmsnorm", ops.ROW_OPS)
        self.assertNotIn("rmsnorm", ops.GEMM_OPS)
        self.assertIn("rmsnorm", ops.KERNLAB_OPS)
        self.assertEqual(SPEC.ndim, 2)
        self.assertIsNone(SPEC.flops((4, 4)))

    def test_shapes(self):
        self.assertEqual(SPEC.parse_shapes("4096x4096,7x1000"), [(4096, 4096), (7, 1000)])
        for bad in ("4096", "4096x4096x2", "0x8"):
            with self.subTest(bad), self.assertRaises(ValueError):
                SPEC.parse_shapes(bad)


class Bytes(unittest.TestCase):
    def test_x_and_y_once_and_the_weight_once(self):
        self.assertEqual(record_bytes("rmsnorm", "bf16", (4096, 4096)),
                         2 * 4096 * 4096 * 2 + 4096 * 2)
        self.assertEqual(record_bytes("rmsnorm", "f32", (3, 5)), 140)
        self.assertEqual(record_bytes("rmsnorm", "f16", [1, 1]), 6)

    def test_rotate_auto_counts_the_weight(self):
        # 4 x 60 MiB over 2*4096*4096*2 + 8192 bytes a call: 3.75, rounded up.
        self.assertEqual(rotate_copies("auto", record_bytes("rmsnorm", "bf16", (4096, 4096)),
                                       60 << 20), 4)
        # One row of 2^20: 12 MiB a call with the weight (20 copies); 8 MiB without it (30).
        self.assertEqual(rotate_copies("auto", record_bytes("rmsnorm", "f32", (1, 1 << 20)),
                                       60 << 20), 20)


class Reference(unittest.TestCase):
    def test_hand_computed(self):
        # mean(9, 16) = 12.5: y = (3, 4 * 2) / sqrt(12.5)
        y = rmsnorm_py([[3.0, 4.0]], [1.0, 2.0], 0.0)
        self.assertAlmostEqual(y[0][0], 3.0 / math.sqrt(12.5), places=15)
        self.assertAlmostEqual(y[0][1], 8.0 / math.sqrt(12.5), places=15)
        self.assertAlmostEqual(y[0][1], 2.2627416997969525, places=15)
        # mean of squares 1, eps 1: every element over sqrt(2), times its weight
        y = rmsnorm_py([[1.0, -1.0, 1.0, -1.0]], [0.5, 1.0, 2.0, 4.0], 1.0)
        s = math.sqrt(2.0)
        for got, want in zip(y[0], [0.5 / s, -1.0 / s, 2.0 / s, -4.0 / s]):
            self.assertAlmostEqual(got, want, places=15)

    def test_rows_are_normalised_apart_and_scale_free(self):
        y = rmsnorm_py([[2.0, 2.0], [0.5, -0.5]], [1.0, 3.0], 0.0)
        self.assertEqual(y, [[1.0, 3.0], [1.0, -3.0]])

    def test_a_zero_row(self):
        self.assertEqual(rmsnorm_py([[0.0, 0.0]], [1.0, 1.0], 1e-6), [[0.0, 0.0]])
        self.assertTrue(all(math.isnan(v) for v in rmsnorm_py([[0.0, 0.0]], [1.0, 1.0], 0.0)[0]))

    def test_default_eps_is_float32_s_machine_epsilon(self):
        self.assertEqual(F32_EPS, 1.1920928955078125e-07)
        self.assertEqual(F32_EPS, 2.0 ** -23)


class CommandLine(unittest.TestCase):
    def test_eps_default_and_given(self):
        a = captured_args(["--op", "rmsnorm", "--shapes", "4096x4096", "--dtype", "bf16"])
        self.assertEqual(a.eps, F32_EPS)
        self.assertEqual((a.gelu, a.activation, a.shape_list), (None, None, [(4096, 4096)]))
        a = captured_args(["--op", "rmsnorm", "--shapes", "4096x4096", "--dtype", "bf16",
                           "--eps", "1e-06"])
        self.assertEqual(a.eps, 1e-6)
        a = captured_args(["--op", "rmsnorm", "--shapes", "8x8", "--dtype", "f32", "--eps", "0"])
        self.assertEqual(a.eps, 0.0)

    def test_other_ops_ignore_eps(self):
        a = captured_args(["--op", "softmax", "--shapes", "8x8", "--dtype", "f32", "--eps", "1e-5"])
        self.assertIsNone(a.eps)

    def test_rows_options_as_softmax(self):
        a = captured_args(["--op", "rmsnorm", "--shapes", "4x64,4x72", "--dtype", "f16",
                           "--row-stride", "80", "--repeat", "3", "--rotate", "auto"])
        self.assertEqual((a.row_stride, a.repeat, a.rotate), (80, 3, "auto"))
        self.assertEqual(a.variant_list, ["torch_manual", "torch_native", "torch_compile"])

    def test_refused(self):
        for argv, why in [
            (["--eps=-1e-6"], "--eps must be a finite number >= 0"),
            (["--eps", "nan"], "--eps must be a finite number >= 0"),
            (["--eps", "inf"], "--eps must be a finite number >= 0"),
            (["--eps", "x"], "invalid float value"),
            (["--kernlab", "auto", "--row-stride", "72"], "not --row-stride"),
            (["--row-stride", "63"], "--row-stride 63 is less than the width of 4x64"),
        ]:
            with self.subTest(" ".join(argv)):
                rc, _, err = run_main(["--op", "rmsnorm", "--shapes", "4x64", "--dtype", "f32"]
                                      + argv)
                self.assertEqual(rc, EXIT_USAGE)
                self.assertIn(why, err)


class Records(unittest.TestCase):
    def test_made_with_their_eps(self):
        r = make_record("rmsnorm", "torch_native", "bf16", (4096, 4096), "tanh", "gelu-erf", 1e-6)
        self.assertEqual(r["eps"], 1e-6)
        self.assertEqual((r["gelu"], r["activation"], r["bias"], r["flops"]), (None, None, None, None))
        self.assertEqual(r["error_metric"], "elementwise_row_scaled")
        self.assertEqual(r["bytes"], 2 * 4096 * 4096 * 2 + 4096 * 2)
        self.assertEqual(make_record("rmsnorm", "triton", "f32", (2, 2), None)["eps"], F32_EPS)

    def test_only_rmsnorm_records_carry_eps(self):
        for op in ops.OPS:
            if op == "rmsnorm":
                continue
            shape = (2, 3, 4) if ops.spec(op).gemm else (2, 3)
            with self.subTest(op):
                self.assertNotIn("eps", make_record(op, "triton", "f32", shape, "tanh", "none", 1e-6))

    def test_keep_the_contract(self):
        check_contract(dict(DOC, records=[
            ok_record(), ok_record(eps=0), ok_record(repeat_medians_ms=[0.05, 0.06], spread=0.2),
            ok_record(rotate_copies=4, queued_ms=0.04, settled_ms=0.045),
            ok_record(variant="kernlab_do_bench", picked="v2_block_row"),
            make_record("rmsnorm", "torch_compile", "f16", (7, 1000), None, None, 1e-5)]))

    def test_break_the_contract(self):
        no_eps = ok_record()
        del no_eps["eps"]
        for what, rec in [
            ("no eps", no_eps),
            ("a null eps", ok_record(eps=None)),
            ("a negative eps", ok_record(eps=-1e-6)),
            ("a NaN eps", ok_record(eps=float("nan"))),
            ("a bool eps", ok_record(eps=True)),
            ("a string eps", ok_record(eps="1e-6")),
            ("bytes without the weight", ok_record(bytes=2 * 4096 * 4096 * 2)),
            ("a gelu form", ok_record(gelu="tanh")),
            ("a 3-D shape", ok_record(shape=[4096, 4096, 1])),
        ]:
            with self.subTest(what), self.assertRaises(ValueError):
                check_contract(dict(DOC, records=[rec]))


class WithTorch(unittest.TestCase):
    """The PyTorch forms on the CPU against the float64 reference (skipped without torch)."""

    def setUp(self):
        self.torch = optional("torch")
        if self.torch is None:
            self.skipTest("torch does not import here")

    def inputs(self, rows, cols, dtype):
        torch = self.torch
        g = torch.Generator().manual_seed(3)
        x = torch.randn((rows, cols), generator=g, dtype=torch.float64).to(dtype)
        w = (1.0 + 0.25 * torch.randn((cols,), generator=g, dtype=torch.float64)).to(dtype)
        return x, w

    def test_reference_is_the_pure_python_one(self):
        torch = self.torch
        x, w = self.inputs(3, 17, torch.float64)
        got = rmsnorm_reference(torch, x, w, 1e-6).tolist()
        want = rmsnorm_py(x.tolist(), w.tolist(), 1e-6)
        for a, b in zip(sum(got, []), sum(want, [])):
            self.assertAlmostEqual(a, b, places=12)
        self.assertEqual(x.tolist(), self.inputs(3, 17, torch.float64)[0].tolist(), "x changed")

    def test_manual_and_native_pass_the_tolerance(self):
        torch = self.torch
        for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16), ("f16", torch.float16)):
            x, w = self.inputs(8, 300, dt)
            ref = rmsnorm_reference(torch, x, w, 1e-6)
            outs = {"manual (f32 inside)": manual_rmsnorm(torch, x.float(), w.float(), 1e-6).to(dt)}
            if hasattr(torch.nn.functional, "rms_norm"):
                outs["native"] = torch.nn.functional.rms_norm(x, (300,), w, 1e-6)
            for what, out in outs.items():
                with self.subTest(dtype=name, variant=what):
                    err, mism = rel_err_array(TorchOps(torch), out.to(torch.float64), ref,
                                              DTYPES[name][3])
                    self.assertEqual(mism, 0)
                    self.assertLessEqual(err, DTYPES[name][2])


if __name__ == "__main__":
    unittest.main()
