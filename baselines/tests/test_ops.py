"""The op table: every op's module agrees with the contract and the command line, and the
generic code finds what it needs there."""

import types
import unittest

from kernlab_baselines import ops
from kernlab_baselines.common import DTYPES, KNOWN_VARIANTS
from kernlab_baselines.contract import check_contract, make_record, record_bytes
from kernlab_baselines.ops.base import OpSpec, RowOp

DOC = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
       "device": "NVIDIA H200", "seed": 7}


def shape_of(spec):
    return (3, 5, 7) if spec.gemm else (3, 5)


class TheTable(unittest.TestCase):
    def test_kernlab_s_ops_in_their_order(self):
        self.assertEqual(ops.OPS[:4], ("gelu", "softmax", "matmul", "linear"))
        self.assertEqual(ops.GEMM_OPS, ("matmul", "linear"))
        self.assertEqual(ops.KERNLAB_OPS, ("gelu", "softmax", "matmul", "linear", "rmsnorm"))
        self.assertEqual(ops.OWN_LOOP_OPS, ("mlp",))
        self.assertEqual(set(ops.ROW_OPS) | set(ops.GEMM_OPS) | set(ops.OWN_LOOP_OPS),
                         set(ops.OPS))
        self.assertFalse(set(ops.ROW_OPS) & set(ops.GEMM_OPS))

    def test_every_op_says_what_the_generic_code_asks(self):
        for name, spec in ops.TABLE.items():
            with self.subTest(name):
                self.assertIsInstance(spec, OpSpec)
                self.assertEqual(spec.name, name)
                self.assertEqual(spec.ndim, 3 if spec.gemm else 2)
                self.assertFalse(spec.rows and spec.gemm)
                self.assertEqual(spec.rounds, not spec.gemm)
                self.assertTrue(set(spec.variants) <= set(KNOWN_VARIANTS) and spec.variants)
                self.assertTrue(spec.summary)
                if not spec.rows and not spec.gemm:  # a shape loop of its own
                    self.assertIsNot(type(spec).run_shape, OpSpec.run_shape)
                if spec.rows:  # the GPU side of a row op, each method its own
                    self.assertIsInstance(spec, RowOp)
                    for m in ("make_inputs", "reference", "native_fn", "triton_fn"):
                        self.assertIsNot(getattr(type(spec), m), getattr(RowOp, m), m)
                    self.assertTrue(type(spec).core is not RowOp.core
                                    or type(spec).manual_fn is not RowOp.manual_fn)

    def test_row_bytes(self):
        for name in ("gelu", "softmax"):
            for dt, (_, size, _, _) in DTYPES.items():
                with self.subTest(op=name, dtype=dt):
                    self.assertEqual(record_bytes(name, dt, (4096, 256)), 2 * 4096 * 256 * size)

    def test_each_op_s_fresh_records_keep_the_contract(self):
        for name, spec in ops.TABLE.items():
            for dt in DTYPES:
                for v in spec.variants:
                    with self.subTest(op=name, dtype=dt, variant=v):
                        r = make_record(name, v, dt, shape_of(spec), "erf", "gelu-erf", 1e-5)
                        self.assertEqual(r["bytes"], spec.bytes(dt, shape_of(spec)))
                        self.assertEqual(r["flops"], spec.flops(shape_of(spec)))
                        self.assertTrue(set(spec.record_keys) <= set(r))
                        check_contract(dict(DOC, records=[r]))

    def test_each_op_s_options(self):
        for name, spec in ops.TABLE.items():
            with self.subTest(name):
                a = types.SimpleNamespace(gelu="erf", activation="gelu-erf", eps=None)
                spec.normalise_args(a)
                self.assertEqual(a.gelu, "erf" if name in ("gelu", "mlp") else None)
                self.assertEqual(a.activation, {"matmul": "none", "linear": "gelu-erf"}.get(name))
                self.assertEqual(a.eps is not None, "eps" in spec.record_keys)
                self.assertIsNone(spec.arg_error(a))
                self.assertEqual(spec.form(a), spec.record_form(
                    make_record(name, "triton", "f32", shape_of(spec), a.gelu, a.activation, a.eps)))

    def test_log_softmax_is_softmax_s_option(self):
        from tests.test_cli import captured_args

        spec = ops.spec("softmax")
        for argv, log in [([], False), (["--log-softmax"], True)]:
            with self.subTest(argv=argv):
                a = captured_args(["--op", "softmax", "--shapes", "8x8", "--dtype", "bf16"] + argv)
                self.assertEqual(spec.opts(a), {"log_softmax": log})
                self.assertEqual(spec.form(a), "log_softmax" if log else None)
                self.assertEqual(spec.doc_fields(a), {"log_softmax": log})
                r = make_record("softmax", "torch_native", "bf16", (8, 8), None, None, None,
                                opts=spec.opts(a))
                self.assertIs(r["log_softmax"], log)
                self.assertEqual(spec.record_form(r), spec.form(a))
                check_contract(dict(DOC, records=[r]))
        # A document from before the option (no key) is softmax's; a key that is not a bool fails.
        r = make_record("softmax", "torch_native", "f32", (8, 8), None, None, None)
        del r["log_softmax"]
        check_contract(dict(DOC, records=[r]))
        self.assertIsNone(spec.record_form(r))
        r["log_softmax"] = "yes"
        with self.assertRaisesRegex(ValueError, "'log_softmax' is not true or false"):
            check_contract(dict(DOC, records=[r]))


if __name__ == "__main__":
    unittest.main()
