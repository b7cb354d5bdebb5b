"""The command line: what it refuses (exit 2), what it does without torch (exit 3 and the
unavailable document), what it hands the run, and the entry script kernlab loads by path."""

import json
import os
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from kernlab_baselines import runner
from kernlab_baselines.common import EXIT_UNAVAILABLE, EXIT_USAGE

from .support import BASELINES, ENTRY, load_entry, run_main


def captured_args(argv):
    """The args the run would get from `argv` (the environment probe and the run replaced)."""
    got = {}

    def run(torch, args):
        got["args"] = args
        return 0

    with mock.patch.object(runner, "probe_environment", return_value=("torch", None)), \
            mock.patch.object(runner, "run_benchmarks", side_effect=run):
        rc, _, err = run_main(argv)
    if rc != 0:
        raise AssertionError(f"{argv}: exit {rc}: {err}")
    return got["args"]


class Refused(unittest.TestCase):
    """Each of these stops in the parser with exit 2 and says why on stderr."""

    CASES = [
        (["--op", "softmax"], "required: --shapes, --dtype"),
        (["--op", "mlp", "--shapes", "8x64", "--dtype", "f32", "--device", "cpu"],
         "--device cpu: mlp's baselines run on CUDA only"),
        (["--op", "gelu", "--shapes", "8x64", "--dtype", "f32", "--threads", "2"],
         "--threads takes a count of at least 1, with --device cpu"),
        (["--op", "gelu", "--shapes", "8x64", "--dtype", "f32", "--device", "cpu",
          "--threads", "0"], "--threads takes a count of at least 1"),
        (["--op", "gelu", "--shapes", "8x64", "--dtype", "f32", "--device", "cpu",
          "--variants", "triton"], "nothing to run: the triton column needs --device cuda"),
        (["--op", "softmax", "--shapes", "8x64", "--dtype", "f32", "--device", "cpu",
          "--kernlab", "auto"], "not with --device cpu"),
        (["--op", "linear", "--shapes", "64x64", "--dtype", "bf16"], "is not MxNxK"),
        (["--op", "softmax", "--shapes", "64x64x64", "--dtype", "f32"], "is not ROWSxCOLS"),
        (["--op", "matmul", "--shapes", "8x8x8", "--dtype", "f16", "--variants", "torch_manual"],
         "nothing to run: matmul has no torch_manual variant"),
        (["--op", "linear", "--shapes", "8x8x8", "--dtype", "f16", "--activation", "relu"],
         "invalid choice: 'relu'"),
        (["--op", "softmax", "--shapes", "4x64,4x128", "--dtype", "f32", "--row-stride", "100"],
         "--row-stride 100 is less than the width of 4x128"),
        (["--op", "matmul", "--shapes", "8x8x8", "--dtype", "f32", "--row-stride", "16"],
         "--row-stride is for"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--row-stride", "72",
          "--kernlab", "auto"], "not --row-stride"),
        (["--op", "mlp", "--shapes", "4x64", "--dtype", "f32", "--kernlab", "auto"],
         "--kernlab is for gelu, softmax, matmul, linear and rmsnorm"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--kernlab", ""],
         "--kernlab takes a variant name"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--kernlab-build", "abc"],
         "--kernlab-build goes with --kernlab"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--rotate", "0"],
         "--rotate takes a count"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--cache-bytes", "0"],
         "--cache-bytes must be at least 1"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--repeat", "0"],
         "--repeat must be at least 1"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--warmup-ms", "0"],
         "--warmup-ms and --rep-ms must be > 0"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--variants", "eager"],
         "unknown variant 'eager'"),
        (["--op", "softmax", "--shapes", "4x64", "--dtype", "f64"], "invalid choice: 'f64'"),
        (["--op", "relu", "--shapes", "4x64", "--dtype", "f32"], "invalid choice: 'relu'"),
    ]

    def test_bad_command_lines(self):
        for argv, why in self.CASES:
            with self.subTest(" ".join(argv)):
                rc, out, err = run_main(argv)
                self.assertEqual(rc, EXIT_USAGE)
                self.assertIn(why, err)
                self.assertEqual(out, "")


class HandedToTheRun(unittest.TestCase):
    def test_row_op_options(self):
        a = captured_args(["--op", "gelu", "--shapes", "4x8,2x3", "--dtype", "bf16", "--gelu",
                           "erf", "--activation", "none", "--rotate", "auto", "--repeat", "3",
                           "--row-stride", "9", "--seed", "5"])
        self.assertEqual((a.shape_list, a.gelu, a.activation, a.rotate, a.repeat, a.row_stride),
                         ([(4, 8), (2, 3)], "erf", None, "auto", 3, 9))
        # Without kernlab's Triton launches there is no triton column, unless asked for.
        self.assertEqual(a.variant_list, ["torch_manual", "torch_native", "torch_compile"])
        self.assertEqual((a.seed, a.kernlab), (5, None))

    def test_other_ops_drop_the_gelu_form(self):
        a = captured_args(["--op", "softmax", "--shapes", "4x8", "--dtype", "f32", "--gelu", "erf"])
        self.assertIsNone(a.gelu)
        self.assertIsNone(a.activation)
        self.assertTrue(0 <= a.seed < 2 ** 31)

    def test_gemm_activation(self):
        a = captured_args(["--op", "matmul", "--shapes", "8x8x8", "--dtype", "f16",
                           "--activation", "gelu-erf", "--variants", "torch_manual,triton"])
        self.assertEqual((a.activation, a.variant_list, a.rotate), ("none", ["triton"], 1))
        a = captured_args(["--op", "linear", "--shapes", "8x8x8", "--dtype", "f16"])
        self.assertEqual(a.activation, "gelu-tanh")

    def test_kernlab_s_column(self):
        a = captured_args(["--op", "linear", "--shapes", "8x8x8", "--dtype", "bf16",
                           "--kernlab", "auto", "--kernlab-build", "0123abcd"])
        self.assertEqual((a.kernlab, a.kernlab_build), ("auto", "0123abcd"))
        # The column is the runner's to add: the PyTorch columns are as asked.
        self.assertEqual(a.variant_list, ["torch_manual", "torch_native", "torch_compile"])


class WithoutTorch(unittest.TestCase):
    def test_unavailable_writes_its_document_and_exits_3(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            with mock.patch.object(runner, "probe_environment",
                                   return_value=(None, "no CUDA device (here)")):
                rc, out, err = run_main(["--op", "softmax", "--shapes", "64x64", "--dtype", "f32",
                                         "--json", path])
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(rc, EXIT_UNAVAILABLE)
        self.assertEqual(doc, {"available": False, "reason": "no CUDA device (here)", "records": []})
        self.assertEqual(err.strip(), "torch_baselines: baselines unavailable: no CUDA device (here)")

    def test_the_probe_names_what_is_missing(self):
        torch, why = runner.probe_environment()
        if torch is not None:
            self.skipTest("torch, triton and a CUDA device are here")
        self.assertTrue(why.startswith(("torch is not importable (", "triton is not importable (",
                                        "triton.testing is not importable (", "no CUDA device (")),
                        why)

    def test_the_package_imports_neither_torch_nor_triton(self):
        code = ("import sys; import kernlab_baselines.cli, kernlab_baselines.contract, "
                "kernlab_baselines.runner, kernlab_baselines.timing, kernlab_baselines.package; "
                "print(sorted(m for m in ('torch', 'triton', 'numpy') if m in sys.modules))")
        out = subprocess.run([sys.executable, "-c", code], cwd=BASELINES, capture_output=True,
                             text=True, check=True).stdout
        self.assertEqual(out.strip(), "[]")


class Entry(unittest.TestCase):
    """baselines/torch_baselines.py, loaded by path as kernlab's tests load it."""

    @classmethod
    def setUpClass(cls):
        cls.m = load_entry()

    def test_kernlab_s_names(self):
        m = self.m
        self.assertEqual(m.rotate_copies("auto", m.record_bytes("softmax", "bf16", (4096, 32)),
                                         60 << 20), 480)
        self.assertEqual(m.record_bytes("linear", "f32", (1000, 300, 77)),
                         (1000 * 77 + 300 * 77 + 1000 * 300 + 300) * 4)
        self.assertTrue(callable(m.load_package))
        self.assertTrue(callable(m.main))
        self.assertTrue(callable(m.manual_softmax))  # re-exported for those who load the file
        self.assertEqual(m.resolve_variants("matmul", ["torch_manual", "triton"]),
                         (["triton"], ["torch_manual"]))
        self.assertEqual([m.shape_ndim(o) for o in ("gelu", "softmax", "matmul", "linear")],
                         [2, 2, 3, 3])

    def test_the_host_bound_line_kernlab_reads(self):
        from kernlab_baselines.timing import HOST_BOUND

        with open(ENTRY, encoding="utf-8") as f:
            self.assertIn(f'HOST_BOUND = "{HOST_BOUND}"', f.read())
        self.assertEqual(self.m.HOST_BOUND, HOST_BOUND)

    def test_run_as_a_script_without_torch(self):
        probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
        if probe.returncode == 0:
            self.skipTest("torch imports here")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.json")
            p = subprocess.run([sys.executable, ENTRY, "--op", "softmax", "--shapes", "64x64",
                                "--dtype", "f32", "--json", path], cwd=d, capture_output=True,
                               text=True)
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(p.returncode, EXIT_UNAVAILABLE, p.stderr)
        self.assertFalse(doc["available"])
        self.assertIn("torch is not importable", doc["reason"])


if __name__ == "__main__":
    unittest.main()


class OnTheCpu(unittest.TestCase):
    """--device cpu: the run gets the device and threads, and no triton column."""

    def test_the_cpu_run_keeps_its_threads_and_drops_triton(self):
        args = captured_args(["--op", "gelu", "--shapes", "8x64", "--dtype", "bf16",
                              "--device", "cpu", "--threads", "3"])
        self.assertEqual((args.device, args.threads), ("cpu", 3))
        self.assertNotIn("triton", args.variant_list)
        self.assertIn("torch_native", args.variant_list)

    def test_the_gpu_run_is_the_default(self):
        args = captured_args(["--op", "gelu", "--shapes", "8x64", "--dtype", "bf16"])
        self.assertEqual((args.device, args.threads), ("cuda", None))

