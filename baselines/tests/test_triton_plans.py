"""kernlab's Triton launches (`--triton-plans`): the loader on good and broken files, and each
op's `triton` column launching the planned kernel with kernlab's constants, warps, stages and
grid, checked against a stand-in kernel file (no Triton, no GPU)."""

import json
import os
import tempfile
import types
import unittest

from kernlab_baselines import ops
from kernlab_baselines.triton_plans import (NO_PLAN, describe, launch, load_triton_plans,
                                            plan_kernel)

PLAN = {"shape": [4096, 1000], "file": "softmax.py", "kernel": "softmax_kernel",
        "constexprs": {"BLOCK": 1024, "NUM_STAGES": 2, "LOG": False}, "num_warps": 4,
        "num_stages": 1, "grid": [528, 1, 1]}
GOOD = {"version": 1, "op": "softmax", "dtype": "bf16", "plans": [PLAN]}

# A stand-in for a @triton.jit function: `kernel[grid](*args, **kw)` records the call.
STAND_IN = '''
CALLS = []


class _Kernel:
    def __getitem__(self, grid):
        def call(*args, **kw):
            CALLS.append((grid, args, kw))
        return call


{names}
'''


class Plans(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.write_kernel("softmax.py", ["softmax_kernel"])

    def write_kernel(self, file, names):
        with open(os.path.join(self.dir.name, file), "w") as f:
            f.write(STAND_IN.format(names="\n".join(f"{n} = _Kernel()" for n in names)))

    def plans_file(self, doc):
        path = os.path.join(self.dir.name, "triton_plans.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_a_good_file(self):
        got = load_triton_plans(self.plans_file(GOOD), "softmax", "bf16")
        self.assertEqual(sorted(got), [(4096, 1000)])
        p = got[(4096, 1000)]
        self.assertEqual(p["path"], os.path.join(self.dir.name, "softmax.py"))
        note = describe(p)
        for part in ("softmax.py", "softmax_kernel", "BLOCK=1024", "num_warps=4",
                     "num_stages=1", "grid 528x1x1"):
            self.assertIn(part, note)

    def test_broken_files_are_refused(self):
        bad = [
            ("another op", dict(GOOD, op="gelu")),
            ("another dtype", dict(GOOD, dtype="f32")),
            ("another version", dict(GOOD, version=2)),
            ("plans not a list", dict(GOOD, plans={})),
            ("a shape twice", dict(GOOD, plans=[PLAN, PLAN])),
            ("a one-dimensional shape", dict(GOOD, plans=[dict(PLAN, shape=[5])])),
            ("a path for a file", dict(GOOD, plans=[dict(PLAN, file="../softmax.py")])),
            ("a file not beside the plans", dict(GOOD, plans=[dict(PLAN, file="gelu.py")])),
            ("a kernel that is not a name", dict(GOOD, plans=[dict(PLAN, kernel="a b")])),
            ("a constant that is a list",
             dict(GOOD, plans=[dict(PLAN, constexprs={"BLOCK": [1]})])),
            ("3 warps", dict(GOOD, plans=[dict(PLAN, num_warps=3)])),
            ("0 stages", dict(GOOD, plans=[dict(PLAN, num_stages=0)])),
            ("a zero grid", dict(GOOD, plans=[dict(PLAN, grid=[0, 1, 1])])),
            ("a grid of two", dict(GOOD, plans=[dict(PLAN, grid=[1, 1])])),
        ]
        for what, doc in bad:
            with self.subTest(what):
                with self.assertRaises(ValueError):
                    load_triton_plans(self.plans_file(doc), "softmax", "bf16")
        path = os.path.join(self.dir.name, "absent.json")
        with self.assertRaisesRegex(ValueError, "absent.json"):
            load_triton_plans(path, "softmax", "bf16")

    def test_launch_passes_the_plan(self):
        p = load_triton_plans(self.plans_file(GOOD), "softmax", "bf16")[(4096, 1000)]
        launch(p, ("y", "x", 1000, 1000, 4096, 1000))
        mod = self._module_of(p)
        grid, args, kw = mod.CALLS[-1]
        self.assertEqual(grid, (528, 1, 1))
        self.assertEqual(args, ("y", "x", 1000, 1000, 4096, 1000))
        self.assertEqual(kw, {"num_warps": 4, "num_stages": 1, "BLOCK": 1024, "NUM_STAGES": 2,
                              "LOG": False})

    def test_a_kernel_missing_from_its_file_is_an_error(self):
        p = load_triton_plans(self.plans_file(dict(GOOD, plans=[dict(PLAN, kernel="other")])),
                              "softmax", "bf16")[(4096, 1000)]
        with self.assertRaisesRegex(RuntimeError, "softmax.py has no other"):
            plan_kernel(p)

    @staticmethod
    def _module_of(plan):
        from kernlab_baselines import triton_plans
        return triton_plans._MODULES[plan["path"]]


class FakeTensor:
    """What the ops' launchers read of a tensor: its strides, shape and element count."""

    def __init__(self, shape, name):
        self.shape = tuple(shape)
        self.name = name

    def stride(self, d):
        return {0: self.shape[-1], 1: 1}[d]

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def is_contiguous(self):
        return True

    def __repr__(self):
        return self.name


class OpsLaunchTheirKernels(unittest.TestCase):
    """Each op's triton column hands its kernel the arguments in the kernel's order (the
    signatures of kernels/triton/*.py), with kernlab's plan."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def column(self, op, shape, file, kernel, args=None):
        with open(os.path.join(self.dir.name, file), "w") as f:
            f.write(STAND_IN.format(names=f"{kernel} = _Kernel()"))
        plan = dict(PLAN, shape=list(shape), file=file, kernel=kernel, constexprs={"C": 1})
        path = os.path.join(self.dir.name, f"{op}.json")
        with open(path, "w") as f:
            json.dump({"version": 1, "op": op, "dtype": "f32", "plans": [plan]}, f)
        plans = load_triton_plans(path, op, "f32")
        bench = types.SimpleNamespace(torch=None, args=types.SimpleNamespace(**(args or {})),
                                      triton_plan=lambda s: plans[tuple(s)])
        fn, note = ops.spec(op).triton_fn(bench, shape)
        self.assertIn(kernel, note)
        from kernlab_baselines import triton_plans
        plan_kernel(plans[tuple(shape)])  # imports the file
        return fn, triton_plans._MODULES[plans[tuple(shape)]["path"]].CALLS

    def test_each_op(self):
        x, y, w = FakeTensor((6, 10), "x"), FakeTensor((6, 10), "y"), FakeTensor((10,), "w")
        fn, calls = self.column("gelu", (6, 10), "gelu.py", "gelu_kernel")
        self.assertIs(fn(x, y), y)
        self.assertEqual(calls[-1][1], (x, y, 60))
        fn, calls = self.column("softmax", (6, 10), "softmax.py", "softmax_kernel")
        fn(x, y)
        self.assertEqual(calls[-1][1], (y, x, 10, 10, 6, 10))
        fn, calls = self.column("rmsnorm", (6, 10), "rmsnorm.py", "rmsnorm_kernel", {"eps": 1e-6})
        fn(x, w, y)
        self.assertEqual(calls[-1][1], (y, x, w, 10, 10, 10, 1e-6))
        a, wt, c, b = (FakeTensor((6, 8), "a"), FakeTensor((5, 8), "w"), FakeTensor((6, 5), "c"),
                       FakeTensor((5,), "b"))
        for op in ("matmul", "linear"):
            fn, calls = self.column(op, (6, 5, 8), f"{op}_k.py", "matmul_kernel")
            fn(a, wt, b if op == "linear" else None, c)
            bias = b if op == "linear" else c  # unread without a bias (HAS_BIAS is 0)
            self.assertEqual(calls[-1][1], (a, wt, c, bias, 6, 5, 8, 8, 8, 5))
            self.assertEqual(calls[-1][2]["C"], 1)

    def test_no_plan_is_a_clear_error(self):
        from kernlab_baselines.runner import Bench
        bench = types.SimpleNamespace(triton_plans={})
        with self.assertRaisesRegex(RuntimeError, "no launch from kernlab"):
            Bench.triton_plan(bench, (4, 4))
        self.assertIn("kernels/triton", NO_PLAN)


if __name__ == "__main__":
    unittest.main()
