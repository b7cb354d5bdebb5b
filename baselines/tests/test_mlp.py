"""mlp's op module: its place in the table, shapes, FLOP and byte counts (kernlab's), tolerance,
options on the command line (kernlab's own command line among them), records and their
contract, and f16 training refused; with torch (CPU), the float64 references against the
whole float64 model's autograd, and the eager calls against those references."""

import math
import types
import unittest

from kernlab_baselines import ops
from kernlab_baselines.checking import group_floor, group_rel_l2_array
from kernlab_baselines.common import COMPILE_RO, DTYPES, EXIT_USAGE, MIN_NORMAL, VARIANTS
from kernlab_baselines.contract import check_contract, format_table, make_record, record_bytes
from kernlab_baselines.ops.mlp import (DEFAULT_LAYERS, F16_TRAIN, MLP_RECORD_KEYS, SAMPLE_ROWS,
                                       checked_layers, mlp_bytes, mlp_flops, mlp_opts,
                                       mlp_tolerance, model_bytes, validated_row_count)
from kernlab_baselines.timing import rotate_copies

from .support import optional, run_main
from .test_cli import captured_args

SPEC = ops.spec("mlp")
DOC = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
       "device": "NVIDIA H200", "seed": 7}
TRAIN = {"layers": 4, "mode": "train", "steps": 2}


def record(variant="torch_compile", dtype="bf16", shape=(1024, 2048), opts=None, **kw):
    r = make_record("mlp", variant, dtype, shape, "erf", opts=opts)
    r.update(kw)
    return r


def ok_record(**kw):
    r = record(opts=TRAIN)
    r.update(status="ok", validated=True, max_rel_err=2e-2, median_ms=1.5, p20_ms=1.4,
             p80_ms=1.6, gbps=r["bytes"] / 1.5e-3 / 1e9, tflops=r["flops"] / 1.5e-3 / 1e12,
             validated_rows=validated_row_count(1024, 2048, 4, "train"),
             peak_mem_bytes=300 << 20, peak_reserved_bytes=320 << 20)
    r.update(kw)
    return r


class Table(unittest.TestCase):
    def test_an_op_with_its_own_loop(self):
        self.assertIn("mlp", ops.OPS)
        self.assertEqual(ops.OWN_LOOP_OPS, ("mlp",))
        for group in (ops.ROW_OPS, ops.GEMM_OPS, ops.KERNLAB_OPS):
            self.assertNotIn("mlp", group)
        self.assertEqual((SPEC.ndim, SPEC.rows, SPEC.gemm, SPEC.rounds), (2, False, False, True))
        self.assertEqual(SPEC.variants, ("torch_native", "torch_compile", COMPILE_RO))
        self.assertEqual(COMPILE_RO, "torch_compile_ro")
        self.assertIn("unsupported", SPEC.statuses)

    def test_variants_run_in_the_op_s_order(self):
        # torch_compile_ro last whatever the order asked: its CUDA graph pool stays.
        self.assertEqual(SPEC.resolve_variants([COMPILE_RO, "torch_native", "triton"]),
                         (["torch_native", COMPILE_RO], ["triton"]))
        self.assertEqual(SPEC.resolve_variants(list(VARIANTS)),
                         (["torch_native", "torch_compile"], ["torch_manual", "triton"]))
        # the row ops and GEMMs have no torch_compile_ro
        self.assertEqual(ops.spec("softmax").resolve_variants([COMPILE_RO, "triton"]),
                         (["triton"], [COMPILE_RO]))

    def test_shapes(self):
        self.assertEqual(SPEC.parse_shapes("1024x2048, 7x33"), [(1024, 2048), (7, 33)])
        with self.assertRaisesRegex(ValueError, r"is not BxD \(batch x width; the depth is "
                                                r"--layers\)"):
            SPEC.parse_shapes("1024x2048x64")
        for bad in ("1024", "0x8", "8x-1", "", "8x8,"):
            with self.subTest(bad), self.assertRaises(ValueError):
                SPEC.parse_shapes(bad)


class Accounting(unittest.TestCase):
    def test_flops(self):
        self.assertEqual(mlp_flops(1024, 2048, 64, "forward", 1), 2 * 1024 * 2048 * 2048 * 64)
        self.assertEqual(mlp_flops(1024, 2048, 64, "train", 1), 3 * 2 * 1024 * 2048 * 2048 * 64)
        self.assertEqual(mlp_flops(3, 5, 2, "train", 4), 3 * 2 * 3 * 5 * 5 * 2 * 4)
        self.assertEqual(SPEC.flops((3, 5), {"layers": 2, "mode": "train", "steps": 4}), 3600)

    def test_bytes_as_kernlab_s_min_bytes(self):
        # forward: x in, y out, the weights and biases read
        self.assertEqual(mlp_bytes(1024, 2048, "bf16", 64, "forward", 1),
                         (2 * 1024 * 2048 + 64 * (2048 * 2048 + 2048)) * 2)
        # train: and the weights' and biases' gradients written
        self.assertEqual(mlp_bytes(1024, 2048, "f32", 64, "train", 1),
                         (2 * 1024 * 2048 + 2 * 64 * (2048 * 2048 + 2048)) * 4)
        self.assertEqual(mlp_bytes(3, 5, "f16", 2, "train", 3), (2 * 15 + 2 * 2 * 30) * 2 * 3)
        self.assertEqual(record_bytes("mlp", "bf16", (3, 5), {"layers": 2, "mode": "forward",
                                                              "steps": 2}),
                         (2 * 15 + 2 * 30) * 2 * 2)

    def test_kernlab_s_defaults_without_options(self):
        # What kernlab's default parameters give: 64 layers, forward, one step.
        self.assertEqual(mlp_opts(), {"layers": DEFAULT_LAYERS, "mode": "forward", "steps": 1})
        self.assertEqual(DEFAULT_LAYERS, 64)
        self.assertEqual(record_bytes("mlp", "bf16", (1024, 2048)),
                         mlp_bytes(1024, 2048, "bf16", 64, "forward", 1))
        self.assertEqual(SPEC.flops((1024, 2048)), mlp_flops(1024, 2048, 64, "forward", 1))
        # steps given, no mode: train, as kernlab's --mode
        self.assertEqual(mlp_opts(steps=3)["mode"], "train")
        self.assertEqual(mlp_opts(mode="forward", steps=3)["mode"], "forward")

    def test_rotate_auto_counts_the_weights(self):
        # 64 layers of 2048^2 bf16 weights (512 MiB) are far past 4x a 60 MiB L2: one copy.
        self.assertEqual(rotate_copies("auto", record_bytes("mlp", "bf16", (1024, 2048)),
                                       60 << 20), 1)

    def test_tolerance_widens_with_the_depth(self):
        self.assertAlmostEqual(mlp_tolerance("bf16", 64), 8e-3 * 9)
        self.assertAlmostEqual(mlp_tolerance("f32", 1), 2e-4)
        self.assertAlmostEqual(mlp_tolerance("f16", 4), 2e-3 * 3)
        self.assertAlmostEqual(mlp_tolerance("bf16", 2, "train"), 8e-3 * 3)
        self.assertEqual(SPEC.tolerance("bf16", {"layers": 16}), mlp_tolerance("bf16", 16))

    def test_what_is_resident_and_what_is_checked(self):
        self.assertEqual(model_bytes(1024, 2048, "bf16", 64),
                         (1024 * 2048 + 64 * (2048 * 2048 + 2048)) * 2)
        self.assertEqual(checked_layers(64), [0, 63])
        self.assertEqual(checked_layers(1), [0])
        self.assertEqual(validated_row_count(1024, 2048, 64, "forward"), SAMPLE_ROWS)
        self.assertEqual(validated_row_count(5, 8, 64, "forward"), 5)
        self.assertEqual(validated_row_count(1024, 2048, 64, "train"), 16 + 2 * 2049)
        self.assertEqual(validated_row_count(3, 8, 1, "train"), 3 + 9)


class CommandLine(unittest.TestCase):
    BASE = ["--op", "mlp", "--shapes", "1024x2048", "--dtype", "bf16"]

    def test_defaults_are_kernlab_s(self):
        a = captured_args(self.BASE)
        self.assertEqual((a.layers, a.mode, a.gelu, a.steps), (64, "forward", "erf", 1))
        self.assertEqual((a.activation, a.eps, a.row_stride), (None, None, None))
        self.assertEqual(a.variant_list, ["torch_native", "torch_compile", COMPILE_RO])
        self.assertEqual(SPEC.form(a), "64 layers, forward, gelu erf")

    def test_steps_given_mean_train(self):
        a = captured_args(self.BASE + ["--steps", "3"])
        self.assertEqual((a.mode, a.steps), ("train", 3))
        self.assertEqual(SPEC.form(a), "64 layers, train, gelu erf, 3 steps")
        a = captured_args(self.BASE + ["--steps", "3", "--mode", "forward"])
        self.assertEqual((a.mode, a.steps), ("forward", 3))

    def test_kernlab_s_command_line(self):
        # What src/tools/bench/torch.rs's run_script passes, with mlp's torch() arguments.
        a = captured_args(["--op", "mlp", "--dtype", "bf16", "--shapes", "1024x2048,7x33",
                           "--warmup-ms", "25", "--rep-ms", "100", "--seed", "12345",
                           "--json", "/tmp/x.json", "--quiet", "--repeat", "3",
                           "--rotate", "auto", "--cache-bytes", "62914560",
                           "--layers", "8", "--mode", "train", "--gelu", "tanh", "--steps", "2"])
        self.assertEqual((a.shape_list, a.layers, a.mode, a.gelu, a.steps),
                         ([(1024, 2048), (7, 33)], 8, "train", "tanh", 2))
        self.assertEqual((a.repeat, a.rotate, a.seed, a.quiet), (3, "auto", 12345, True))
        self.assertEqual(SPEC.opts(a), {"layers": 8, "mode": "train", "steps": 2})

    def test_chosen_variants(self):
        from unittest import mock

        from kernlab_baselines import runner

        a = captured_args(self.BASE + ["--variants", f"{COMPILE_RO},torch_native"])
        self.assertEqual(a.variant_list, ["torch_native", COMPILE_RO])
        with mock.patch.object(runner, "probe_environment", return_value=("torch", None)), \
                mock.patch.object(runner, "run_benchmarks", return_value=0):
            rc, _, err = run_main(self.BASE + ["--variants", "torch_native,triton"])
        self.assertEqual(rc, 0)
        self.assertIn("mlp has no triton variant; skipped", err)

    def test_other_ops_ignore_the_mlp_s_options(self):
        a = captured_args(["--op", "softmax", "--shapes", "8x8", "--dtype", "f32",
                           "--layers", "3", "--steps", "2"])
        self.assertEqual(ops.spec("softmax").opts(a), {"log_softmax": False})
        a = captured_args(["--op", "gelu", "--shapes", "8x8", "--dtype", "f32"])
        self.assertEqual(a.gelu, "tanh")  # gelu's default is still tanh

    def test_refused(self):
        for argv, why in [
            (["--layers", "0"], "--layers must be a whole number >= 1 (got 0)"),
            (["--layers", "-2"], "--layers must be a whole number >= 1 (got -2)"),
            (["--steps", "0"], "--steps must be a whole number >= 1 (got 0)"),
            (["--layers", "x"], "invalid int value: 'x'"),
            (["--steps", "1.5"], "invalid int value: '1.5'"),
            (["--mode", "backward"], "invalid choice: 'backward'"),
            (["--gelu", "relu"], "invalid choice: 'relu'"),
            (["--shapes", "1024x2048x64"], "shape '1024x2048x64' is not BxD"),
            (["--shapes", "0x8"], "has a dimension <= 0"),
            (["--row-stride", "4096"], "--row-stride is for gelu, softmax and rmsnorm rows, "
                                       "not mlp"),
            (["--kernlab", "auto"], "--kernlab is for gelu, softmax, matmul, linear and "
                                    "rmsnorm"),
            (["--variants", "triton"], "nothing to run: mlp has no triton variant"),
            (["--variants", "torch_manual"], "nothing to run: mlp has no torch_manual variant "
                                             "(the eager model is torch_native)"),
            (["--variants", "torch_eager"], "unknown variant 'torch_eager'"),
        ]:
            with self.subTest(" ".join(argv)):
                rc, out, err = run_main(self.BASE + argv)
                self.assertEqual(rc, EXIT_USAGE)
                self.assertIn(why, err)
                self.assertEqual(out, "")

    def test_help_names_the_options(self):
        from kernlab_baselines.cli import build_parser

        text = build_parser().format_help()
        for word in ("--layers", "--mode", "--steps", "BxD", COMPILE_RO, "mlp:"):
            self.assertIn(word, text)


class Records(unittest.TestCase):
    def test_made_with_the_run_s_options(self):
        r = record(opts=TRAIN, dtype="f32", shape=(8, 16))
        self.assertEqual((r["layers"], r["mode"], r["steps"], r["gelu"]), (4, "train", 2, "erf"))
        self.assertEqual(r["flops"], mlp_flops(8, 16, 4, "train", 2))
        self.assertEqual(r["bytes"], mlp_bytes(8, 16, "f32", 4, "train", 2))
        self.assertEqual(r["tolerance"], mlp_tolerance("f32", 4, "train"))
        self.assertEqual(r["error_metric"], "max_row_l2_over_group_rms")
        self.assertEqual((r["activation"], r["bias"], r["tflops"], r["peak_mem_bytes"]),
                         (None, None, None, None))
        self.assertTrue(set(MLP_RECORD_KEYS) <= set(r))
        self.assertEqual(SPEC.record_form(r), "4 layers, train, gelu erf, 2 steps")
        self.assertEqual(record(shape=(2, 3))["gelu"], "erf")  # F.gelu's default

    def test_only_mlp_records_carry_its_keys(self):
        for op in ops.OPS:
            if op == "mlp":
                continue
            shape = (2, 3, 4) if ops.spec(op).gemm else (2, 3)
            with self.subTest(op):
                r = make_record(op, "triton", "f32", shape, "tanh", "none", 1e-6, opts=TRAIN)
                self.assertFalse({"layers", "mode", "steps", "peak_mem_bytes"} & set(r))

    def test_keep_the_contract(self):
        unsupported = record("torch_native", "f16", opts=TRAIN, status="unsupported",
                             note=F16_TRAIN)
        check_contract(dict(DOC, records=[
            ok_record(), ok_record(peak_mem_bytes=None, peak_reserved_bytes=None),
            ok_record(repeat_medians_ms=[1.5, 1.6], spread=0.1, queued_ms=1.4, settled_ms=1.45),
            record(status="failed", max_rel_err=0.5, note="max error"),
            record(COMPILE_RO, "f32", (7, 33), {"layers": 1, "mode": "forward", "steps": 1}),
            unsupported]))

    def test_break_the_contract(self):
        for what, rec in [
            ("no layers", {k: v for k, v in ok_record().items() if k != "layers"}),
            ("zero layers", ok_record(layers=0)),
            ("a bad mode", ok_record(mode="backward")),
            ("a float steps", ok_record(steps=2.0)),
            ("forward's bytes on train", ok_record(bytes=mlp_bytes(1024, 2048, "bf16", 4,
                                                                    "forward", 2))),
            ("forward's flops on train", ok_record(flops=mlp_flops(1024, 2048, 4, "forward",
                                                                   2))),
            ("the dtype's tolerance", ok_record(tolerance=DTYPES["bf16"][2])),
            ("no gelu form", ok_record(gelu=None)),
            ("linear's activation", ok_record(activation="gelu-erf")),
            ("the GEMM metric", ok_record(error_metric="max_row_rel_l2")),
            ("ok without tflops", ok_record(tflops=None)),
            ("ok without validated rows", ok_record(validated_rows=None)),
            ("a zero peak", ok_record(peak_mem_bytes=0)),
            ("a float peak", ok_record(peak_reserved_bytes=1.5e9)),
            ("a peak on a failed record", record(status="failed", peak_mem_bytes=1 << 30)),
            ("tflops on an error record", record(tflops=1.0)),
            ("unsupported bf16", record(opts=TRAIN, status="unsupported")),
            ("unsupported f16 forward", record(dtype="f16", status="unsupported")),
            ("f16 training timed", ok_record(dtype="f16", bytes=mlp_bytes(1024, 2048, "f16", 4,
                                                                          "train", 2),
                                             tolerance=mlp_tolerance("f16", 4))),
            ("a variant of the row ops", ok_record(variant="triton")),
            ("a 3-D shape", ok_record(shape=[1024, 2048, 4])),
            ("kernlab's package column", ok_record(variant="kernlab_do_bench")),
        ]:
            with self.subTest(what), self.assertRaises(ValueError):
                check_contract(dict(DOC, records=[rec]))

    def test_the_table_has_tflops(self):
        table = format_table([ok_record(), record(status="failed")])
        self.assertIn("TFLOP/s", table)
        self.assertIn("torch_compile", table)
        self.assertEqual(table.splitlines()[3].split()[-1], "failed")


class F16Training(unittest.TestCase):
    """Refused before any GPU work, as kernlab refuses it: every variant 'unsupported'."""

    def test_records_say_why(self):
        args = types.SimpleNamespace(op="mlp", dtype="f16", gelu="erf", activation=None,
                                     eps=None, layers=8, mode="train", steps=1)
        logged = []
        bench = types.SimpleNamespace(
            torch=None, args=args,
            record=lambda v, shape: make_record("mlp", v, "f16", shape, "erf",
                                                opts=SPEC.opts(args)))
        recs = SPEC.run_shape(bench, (1024, 2048), list(SPEC.variants), logged.append)
        self.assertEqual([r["variant"] for r in recs], list(SPEC.variants))
        self.assertEqual(logged, recs)
        for r in recs:
            self.assertEqual((r["status"], r["validated"], r["median_ms"]),
                             ("unsupported", False, None))
            self.assertIn("needs loss scaling", r["note"])
        check_contract(dict(DOC, records=recs))


class WithTorch(unittest.TestCase):
    """The float64 references and the eager calls on the CPU (skipped without torch)."""

    def setUp(self):
        self.torch = optional("torch")
        if self.torch is None:
            self.skipTest("torch does not import here")

    def model(self, shape, layers, dtype, form="erf", seed=5):
        from kernlab_baselines.ops.mlp import fill_inputs, make_model

        torch = self.torch
        m = make_model(torch, layers, shape[1], dtype, torch.device("cpu"), form)
        g = torch.Generator().manual_seed(seed)
        x = fill_inputs(torch, m, shape, g, lambda t: t.to(dtype).contiguous(), lambda t: t)
        return m, x

    def full_f64(self, m, x, form):
        """The whole float64 model's forward and autograd gradients (what the references
        must give)."""
        import copy

        torch = self.torch
        m64 = copy.deepcopy(m).to(torch.float64).requires_grad_(True)
        x64 = x.detach().to(torch.float64).requires_grad_(True)
        y = m64(x64)
        y.mean().backward()
        return y.detach(), x64.grad, m64

    def test_inputs_as_nn_linear_draws_them(self):
        from kernlab_baselines.ops.mlp import model_params

        torch = self.torch
        m, x = self.model((64, 32), 3, torch.float32)
        bound = 1 / math.sqrt(32)
        for w, b in zip(*model_params(m)):
            self.assertTrue(bool((w.abs() <= bound).all()))
            self.assertTrue(bool((b.abs() <= bound).all()))
            self.assertGreater(float(w.abs().max()), 0.9 * bound)
        self.assertAlmostEqual(float(x.std()), 1.0, delta=0.1)
        m2, x2 = self.model((64, 32), 3, torch.float32)
        self.assertTrue(torch.equal(x, x2) and torch.equal(m.layers[2].bias, m2.layers[2].bias))

    def test_references_are_the_float64_model(self):
        from kernlab_baselines.ops.mlp import (forward_reference, model_params,
                                               train_reference)

        torch = self.torch
        for form, layers in (("erf", 3), ("tanh", 1)):
            with self.subTest(form=form, layers=layers):
                m, x = self.model((6, 8), layers, torch.float32, form)
                y, dx, m64 = self.full_f64(m, x, form)
                ws, bs = model_params(m)
                idx = torch.tensor([0, 2, 5])
                fwd = forward_reference(torch, x.index_select(0, idx), ws, bs, form)
                self.assertTrue(torch.allclose(fwd, y.index_select(0, idx), rtol=1e-12,
                                               atol=0))
                ref = train_reference(torch, x, ws, bs, form, idx, checked_layers(layers))
                self.assertTrue(torch.allclose(ref["dx"], dx.index_select(0, idx), rtol=1e-10,
                                               atol=1e-300))
                for i in checked_layers(layers):
                    self.assertTrue(torch.allclose(ref["dw"][i], m64.layers[i].weight.grad,
                                                   rtol=1e-10, atol=1e-300))
                    self.assertTrue(torch.allclose(ref["db"][i], m64.layers[i].bias.grad,
                                                   rtol=1e-10, atol=1e-300))
                self.assertEqual(sorted(ref["dw"]), checked_layers(layers))

    def test_eager_calls_pass_against_the_references(self):
        from kernlab_baselines.ops.mlp import (eager_fns, forward_call, forward_reference,
                                               model_params, train_call, train_reference)

        torch = self.torch
        for name, dt in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            with self.subTest(dtype=name):
                layers = 4
                m, x = self.model((32, 64), layers, dt)
                ws, bs = model_params(m)
                idx = torch.arange(32)
                tol = mlp_tolerance(name, layers)
                floor = group_floor(64, MIN_NORMAL[name], tol)
                from kernlab_baselines.checking import TorchOps
                tops = TorchOps(torch)
                fwd, loss = eager_fns(m)
                # forward: no graph, the last of the steps returned
                m.requires_grad_(False)
                y = forward_call(fwd, 3)(x)
                self.assertFalse(y.requires_grad)
                ref = forward_reference(torch, x, ws, bs, "erf")
                e, mism = group_rel_l2_array(tops, y.to(torch.float64), ref, floor,
                                             one_group=False)
                self.assertEqual(mism, 0)
                self.assertLessEqual(e, tol)
                # train: gradients written, not accumulated, over the steps
                m.requires_grad_(True)
                x.requires_grad_(True)
                ref = train_reference(torch, x, ws, bs, "erf", idx, checked_layers(layers))
                call = train_call(m, loss, 3)
                call(x)
                got = (x.grad.clone(), m.layers[0].weight.grad.clone())
                call(x)
                self.assertTrue(torch.equal(x.grad, got[0]), "dX accumulated over the calls")
                self.assertTrue(torch.equal(m.layers[0].weight.grad, got[1]),
                                "dW accumulated over the calls")
                for o, f in ((x.grad, ref["dx"]), (m.layers[0].weight.grad, ref["dw"][0]),
                             (m.layers[-1].bias.grad.view(1, -1), ref["db"][3].view(1, -1))):
                    e, mism = group_rel_l2_array(tops, o.to(torch.float64), f, floor)
                    self.assertEqual(mism, 0)
                    self.assertLessEqual(e, tol)
                x.requires_grad_(False)
                x.grad = None


if __name__ == "__main__":
    unittest.main()
