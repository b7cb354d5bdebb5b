"""kernlab's launch plans (the loader, on good and broken files) and `DriverKernel`'s calls into
the CUDA driver, against a fake driver."""

import ctypes
import json
import os
import tempfile
import unittest

from kernlab_baselines.replay import DriverKernel, load_kernlab_plans

PLAN = {"shape": [4096, 64], "picked": "v2_warp_row", "image": "softmax-sm_90a.cubin",
        "kernel": "softmax_v2_warp_row_vec_w16_f32", "grid": [512, 1, 1], "block": [128, 1, 1],
        "smem": 0,
        "args": ["x", "y", {"i32": 4096}, {"i32": 64}, {"i64": 64}, {"i64": 64}, {"i32": 0}]}
PLAN2 = dict(PLAN, shape=[2, 70000], kernel="softmax_v8_packed_f32", smem=120000,
             args=["x", "y", {"i32": 2}, {"i32": 70000}, {"i64": 70000}, {"i64": 70000},
                   {"i32": 0}, {"i32": 1}])
GOOD = {"version": 1, "op": "softmax", "dtype": "f32", "plans": [PLAN, PLAN2]}


class Plans(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        with open(os.path.join(self.dir.name, "softmax-sm_90a.cubin"), "wb") as f:
            f.write(b"\x7fELF image")

    def plans_file(self, doc):
        path = os.path.join(self.dir.name, "kernlab_plans.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_a_good_file(self):
        got = load_kernlab_plans(self.plans_file(GOOD), "softmax", "f32")
        self.assertEqual(sorted(got), [(2, 70000), (4096, 64)])
        self.assertEqual(got[(4096, 64)]["image_bytes"], b"\x7fELF image")
        self.assertEqual(got[(2, 70000)]["args"][-1], {"i32": 1})
        self.assertEqual(got[(4096, 64)]["picked"], "v2_warp_row")

    def test_broken_files_are_refused(self):
        a = PLAN["args"]
        bad = [
            ("another dtype", dict(GOOD, dtype="bf16")),
            ("another version", dict(GOOD, version=2)),
            ("plans not a list", dict(GOOD, plans={})),
            ("a shape twice", dict(GOOD, plans=[PLAN, PLAN])),
            ("args not starting x, y", dict(GOOD, plans=[dict(PLAN, args=["y", "x"] + a[2:])])),
            ("no scalar arguments", dict(GOOD, plans=[dict(PLAN, args=["x", "y"])])),
            ("a float argument", dict(GOOD, plans=[dict(PLAN, args=a[:6] + [{"f32": 0}])])),
            ("a row stride past the width",
             dict(GOOD, plans=[dict(PLAN, args=a[:4] + [{"i64": 72}] + a[5:])])),
            ("log_softmax", dict(GOOD, plans=[dict(PLAN, args=a[:6] + [{"i32": 1}])])),
            ("rows of another shape", dict(GOOD, plans=[dict(PLAN, shape=[4095, 64])])),
            ("a csize of 2",
             dict(GOOD, plans=[dict(PLAN2, args=a[:2] + PLAN2["args"][2:-1] + [{"i32": 2}])])),
            ("a bf16 kernel",
             dict(GOOD, plans=[dict(PLAN, kernel="softmax_v2_warp_row_vec_w16_bf16")])),
            ("a zero grid", dict(GOOD, plans=[dict(PLAN, grid=[0, 1, 1])])),
            ("an image path", dict(GOOD, plans=[dict(PLAN, image="../x.cubin")])),
            ("a missing image", dict(GOOD, plans=[dict(PLAN, image="none.cubin")])),
            ("a bool smem", dict(GOOD, plans=[dict(PLAN, smem=True)])),
        ]
        for what, doc in bad:
            with self.subTest(what), self.assertRaises(ValueError):
                load_kernlab_plans(self.plans_file(doc), "softmax", "f32")

    def test_an_empty_image_or_no_file(self):
        with open(os.path.join(self.dir.name, "empty.cubin"), "wb"):
            pass
        with self.assertRaisesRegex(ValueError, "is empty"):
            load_kernlab_plans(self.plans_file(dict(GOOD, plans=[dict(PLAN, image="empty.cubin")])),
                               "softmax", "f32")
        with self.assertRaises(ValueError):
            load_kernlab_plans(os.path.join(self.dir.name, "no-such.json"), "softmax", "f32")

    def test_another_op_is_named(self):
        with self.assertRaisesRegex(ValueError, "plans for softmax f32, not gelu f32"):
            load_kernlab_plans(self.plans_file(GOOD), "gelu", "f32")


class FakeDriver:
    """The five driver functions DriverKernel calls, recording their arguments; the kernel's
    parameters read back as (2 pointers, 2 i32, 2 i64, then i32s)."""

    def __init__(self):
        self.calls, self.fail, self.expect = [], 0, []

    def cuModuleLoadData(self, ref, image):
        self.calls.append(("load", image))
        ref._obj.value = 0x5000
        return 0

    def cuModuleGetFunction(self, ref, module, name):
        self.calls.append(("function", module.value, name))
        ref._obj.value = 0x6000
        return 0

    def cuFuncSetAttribute(self, fn, attr, value):
        self.calls.append(("attribute", fn.value, attr, value))
        return 0

    def cuGetErrorName(self, rc, ref):
        ref._obj.value = b"CUDA_ERROR_INVALID_VALUE"
        return 0

    def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        kinds = [ctypes.c_void_p] * 2 + [ctypes.c_int32] * 2 + [ctypes.c_int64] * 2 \
            + [ctypes.c_int32] * (len(self.expect) - 6)
        got = [ctypes.cast(params[i], ctypes.POINTER(k)).contents.value
               for i, k in enumerate(kinds)]
        self.calls.append(("launch", fn.value, (gx, gy, gz), (bx, by, bz), smem, stream, got, extra))
        return self.fail


class Driver(unittest.TestCase):
    def setUp(self):
        # Each test its own image: DriverKernel loads an image once a process.
        self.image = f"\x7fELF {self.id()}".encode()
        self.fake = FakeDriver()
        self.expect = [0x1000, 0x2000, 7, 65536, 65536, 65536, 0, 1]
        self.vals = [ctypes.c_void_p(0x1000), ctypes.c_void_p(0x2000), ctypes.c_int32(7),
                     ctypes.c_int32(65536), ctypes.c_int64(65536), ctypes.c_int64(65536),
                     ctypes.c_int32(0), ctypes.c_int32(1)]

    def kernel(self, smem=120000):
        return DriverKernel(self.image, "softmax_v8_packed_f32", smem, cu=self.fake)

    def test_the_module_is_loaded_once_and_shared_memory_opted_in(self):
        self.kernel()
        self.kernel(smem=0)
        f = self.fake.calls
        self.assertEqual([c[0] for c in f], ["load", "function", "attribute", "function"])
        self.assertEqual(f[0][1], self.image)
        self.assertEqual(f[1], ("function", 0x5000, b"softmax_v8_packed_f32"))
        self.assertEqual(f[2], ("attribute", 0x6000, 8, 120000))

    def test_a_launch_passes_the_parameters_as_the_kernel_reads_them(self):
        k = self.kernel()
        self.fake.expect = self.expect
        k.launch((7, 1, 1), (1024, 1, 1), 120000, 0, self.vals)
        self.assertEqual(self.fake.calls[-1], ("launch", 0x6000, (7, 1, 1), (1024, 1, 1), 120000,
                                               0, self.expect, None))

    def test_a_launcher_reads_its_values_at_each_call(self):
        k = self.kernel()
        go = k.launcher((7, 1, 1), (1024, 1, 1), 120000, 0, self.vals)
        self.vals[0].value, self.vals[1].value = 0x3000, 0x4000
        self.fake.expect = [0x3000, 0x4000] + self.expect[2:]
        go()
        self.assertEqual(self.fake.calls[-1][6], self.fake.expect)
        self.vals[0].value = 0x1000
        self.fake.expect = [0x1000, 0x4000] + self.expect[2:]
        go()
        self.assertEqual(self.fake.calls[-1][6], self.fake.expect)

    def test_a_failed_launch_raises_with_the_driver_s_name(self):
        k = self.kernel()
        go = k.launcher((7, 1, 1), (1024, 1, 1), 120000, 0, self.vals)
        self.fake.expect, self.fake.fail = self.expect, 1
        with self.assertRaisesRegex(RuntimeError, "CUDA_ERROR_INVALID_VALUE"):
            go()
        with self.assertRaisesRegex(RuntimeError, "softmax_v8_packed_f32.*CUDA_ERROR_INVALID_VALUE"):
            k.launch((7, 1, 1), (1024, 1, 1), 120000, 0, self.vals)


if __name__ == "__main__":
    unittest.main()
