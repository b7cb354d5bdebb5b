"""The JSON contract kernlab parses: the writer, the unavailable document, `check_contract` on
documents that keep it and on records that break it, and the recorded samples."""

import contextlib
import io
import json
import os
import tempfile
import unittest

from kernlab_baselines.common import EXIT_UNAVAILABLE
from kernlab_baselines.contract import (RECORD_KEYS, check_contract, format_table, make_record,
                                        report_unavailable, write_json)
from kernlab_baselines.package import KERNLAB_VARIANT

from .support import REPO_DATA

DOC = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
       "device": "NVIDIA H200", "seed": 7}


def ok_row():
    r = make_record("softmax", "triton", "f32", (4096, 256), None)
    r.update(status="ok", validated=True, max_rel_err=3e-7, median_ms=0.01, p20_ms=0.009,
             p80_ms=0.011, gbps=r["bytes"] / 1e-5 / 1e9)
    return r


def ok_gemm():
    r = make_record("linear", "triton", "bf16", (127, 255, 63), None, "gelu-tanh")
    r.update(status="ok", validated=True, max_rel_err=1.1e-3, max_elem_rel_err=3.8e-3,
             validated_rows=127, median_ms=0.01, p20_ms=0.009, p80_ms=0.011,
             gbps=r["bytes"] / 1e-5 / 1e9, tflops=r["flops"] / 1e-5 / 1e12)
    return r


def failed_gemm():
    r = make_record("matmul", "torch_native", "f32", (8192, 8192, 8192), None, None)
    r.update(status="failed", max_rel_err=4e-4, note="max row relative L2 error")
    return r


def doc_of(*records):
    return dict(DOC, records=list(records))


class Writer(unittest.TestCase):
    def test_unavailable_is_one_line_and_a_document(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sub", "baselines.json")
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                rc = report_unavailable("torch is not importable (ModuleNotFoundError: No "
                                        "module\n named 'torch')", path)
            self.assertEqual(rc, EXIT_UNAVAILABLE)
            lines = err.getvalue().splitlines()
            self.assertEqual(len(lines), 1)
            self.assertIn("torch is not importable", lines[0])
            with open(path) as f:
                doc = json.load(f)
        self.assertEqual(doc, {"available": False,
                               "reason": "torch is not importable (ModuleNotFoundError: No "
                                         "module named 'torch')",
                               "records": []})
        check_contract(doc)

    def test_non_finite_floats_are_written_as_null(self):
        failed = make_record("gelu", "torch_manual", "bf16", (8, 16), "tanh")
        failed.update(status="failed", max_rel_err=float("inf"), note="x")
        errored = make_record("gelu", "triton", "f16", (8, 16), "erf")
        errored["p20_ms"] = float("nan")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "full.json")
            write_json(path, doc_of(ok_row(), failed, errored))
            with open(path) as f:
                text = f.read()
            self.assertEqual(os.listdir(d), ["full.json"], "the temporary file is left behind")
        self.assertNotIn("Infinity", text)
        self.assertNotIn("NaN", text)
        doc = json.loads(text)
        self.assertIsNone(doc["records"][1]["max_rel_err"])
        self.assertIsNone(doc["records"][2]["p20_ms"])
        self.assertEqual(doc["records"][0]["bytes"], 2 * 4096 * 256 * 4)
        self.assertEqual(doc["records"][1]["bytes"], 2 * 8 * 16 * 2)
        check_contract(doc)


class Keeps(unittest.TestCase):
    def test_row_and_gemm_documents(self):
        check_contract(json.loads(json.dumps(doc_of(ok_row(), ok_gemm(), failed_gemm(),
                                                     make_record("linear", "torch_manual", "f16",
                                                                 (1, 1, 1), None, "none")))))

    def test_a_record_has_every_key_kernlab_reads(self):
        for r in (ok_row(), ok_gemm()):
            self.assertTrue(set(RECORD_KEYS) <= set(r))

    def test_kernlab_s_column(self):
        check_contract(doc_of(dict(ok_row(), variant=KERNLAB_VARIANT, picked="v2_warp_row")))
        check_contract(doc_of(dict(ok_row(), variant=KERNLAB_VARIANT, op="gelu", gelu="tanh")))
        check_contract(doc_of(dict(ok_gemm(), variant=KERNLAB_VARIANT)))

    def test_rounds_and_the_queued_and_settled_medians(self):
        check_contract(doc_of(dict(ok_row(), repeat_medians_ms=[0.011, 0.01, 0.012], spread=0.2)))
        check_contract(doc_of(dict(ok_row(), queued_ms=0.0061)))
        check_contract(doc_of(dict(ok_row(), settled_ms=0.0047)))
        check_contract(doc_of(dict(ok_row(), rotate_copies=480)))

    def test_older_documents_without_the_optional_keys(self):
        r = ok_row()
        for k in ("repeat_medians_ms", "spread", "queued_ms", "settled_ms", "rotate_copies",
                  "picked"):
            del r[k]
        check_contract(doc_of(r))


class Breaks(unittest.TestCase):
    def assertBreaks(self, doc, what):
        with self.assertRaises(ValueError, msg=f"the contract accepts {what}"):
            check_contract(doc)

    def test_top_level(self):
        for what, doc in [("a list", []), ("no available", {"records": []}),
                          ("unavailable with records", {"available": False, "reason": "x",
                                                        "records": [ok_row()]}),
                          ("unavailable without a reason", {"available": False, "records": []}),
                          ("no device", {k: v for k, v in doc_of().items() if k != "device"}),
                          ("a bool seed", dict(doc_of(), seed=True))]:
            with self.subTest(what):
                self.assertBreaks(doc, what)

    def test_row_records(self):
        err = make_record("softmax", "torch_native", "f32", (2, 3), None)
        for what, rec in [
            ("a 3-D softmax shape", dict(ok_row(), shape=[1, 2, 3])),
            ("an unknown op", dict(ok_row(), op="relu")),
            ("a gelu form on softmax", dict(ok_row(), gelu="tanh")),
            ("gelu without a form", make_record("gelu", "triton", "f32", (2, 2), None)),
            ("another tier", dict(ok_row(), tier="kernlab")),
            ("ok but not validated", dict(ok_row(), validated=False)),
            ("failed but timed", dict(ok_row(), status="failed", validated=False)),
            ("an infinite gbps", dict(ok_row(), gbps=float("inf"))),
            ("a missing note", {k: v for k, v in ok_row().items() if k != "note"}),
            ("a spread without rounds", dict(ok_row(), spread=0.1)),
            ("rounds without a spread", dict(ok_row(), repeat_medians_ms=[0.01, 0.011])),
            ("one round", dict(ok_row(), repeat_medians_ms=[0.01], spread=0.0)),
            ("a median not among its rounds",
             dict(ok_row(), repeat_medians_ms=[0.011, 0.012], spread=0.1)),
            ("a negative spread", dict(ok_row(), repeat_medians_ms=[0.01, 0.011], spread=-0.1)),
            ("a zero round", dict(ok_row(), repeat_medians_ms=[0.01, 0.0], spread=1.0)),
            ("a zero queued_ms", dict(ok_row(), queued_ms=0.0)),
            ("a string queued_ms", dict(ok_row(), queued_ms="6 µs")),
            ("a queued_ms on an error record", dict(err, queued_ms=0.006)),
            ("a negative settled_ms", dict(ok_row(), settled_ms=-1.0)),
            ("a NaN settled_ms", dict(ok_row(), settled_ms=float("nan"))),
            ("a settled_ms on an error record", dict(err, settled_ms=0.005)),
            ("one rotated copy", dict(ok_row(), rotate_copies=1)),
            ("a non-string picked", dict(ok_row(), variant=KERNLAB_VARIANT, picked=3)),
        ]:
            with self.subTest(what):
                self.assertBreaks(doc_of(rec), what)

    def test_gemm_records(self):
        g_ok, g_failed = ok_gemm(), failed_gemm()
        for what, rec in [
            ("matmul torch_manual", dict(g_failed, variant="torch_manual")),
            ("flops", dict(g_ok, flops=1)),
            ("bytes", dict(g_ok, bytes=g_ok["bytes"] - 510)),
            ("a 2-D gemm shape", dict(g_ok, shape=[127, 255])),
            ("matmul with a bias", dict(g_failed, bias=True)),
            ("linear without a bias", dict(g_ok, bias=False)),
            ("linear with a bad activation", dict(g_ok, activation="relu")),
            ("ok without tflops", dict(g_ok, tflops=None)),
            ("ok without validated rows", dict(g_ok, validated_rows=None)),
            ("more validated rows than M", dict(g_ok, validated_rows=128)),
            ("failed with tflops", dict(g_failed, tflops=1.0)),
            ("the element-wise metric", dict(g_ok, error_metric="elementwise_row_scaled")),
            ("a missing activation", {k: v for k, v in g_ok.items() if k != "activation"}),
        ]:
            with self.subTest(what):
                self.assertBreaks(doc_of(rec), what)


class Samples(unittest.TestCase):
    def test_the_recorded_samples_keep_the_contract(self):
        names = ("torch_baselines_sample.json", "torch_matmul_sample.json")
        found = [n for n in names if os.path.exists(os.path.join(REPO_DATA, n))]
        if not found:
            self.skipTest(f"no samples at {REPO_DATA}")
        for name in found:
            with self.subTest(name), open(os.path.join(REPO_DATA, name)) as f:
                doc = json.load(f)
                check_contract(doc)
                self.assertTrue(doc["records"])


class Table(unittest.TestCase):
    def test_rows_and_gemms(self):
        rows = format_table([ok_row()]).splitlines()
        self.assertEqual(rows[0].split(), ["variant", "shape", "ms", "GB/s", "err", "status"])
        self.assertEqual(rows[2].split()[:3], ["triton", "4096x256", "0.0100"])
        table = format_table([ok_gemm(), failed_gemm()])
        self.assertIn("TFLOP/s", table)
        self.assertIn("127x255x63", table)
        self.assertIn("8192x8192x8192", table)
        self.assertEqual(table.splitlines()[3].split()[-1], "failed")


if __name__ == "__main__":
    unittest.main()
