"""The command line (`build_parser`, `main`) and `--self-test` (the unit tests under
baselines/tests, run in this process). No torch until a run passes the command line's checks."""

import argparse
import os
import random
import sys

from . import ops
from .common import (COMPILE_RO, DTYPES, EXIT_INTERNAL, EXIT_OK, PROG, VARIANTS,
                     parse_variants, shape_str)
from .contract import report_unavailable
from .ops.gelu import GELU_FORMS
from .ops.gemm import ACTIVATIONS
from .ops.mlp import DEFAULT_LAYERS, MLP_MODES
from .ops.rmsnorm import F32_EPS
from .package import KERNLAB_VARIANT
from .triton_plans import load_triton_plans
from .timing import parse_rotate

TESTS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")


def build_parser():
    rows = ops.words(ops.ROW_OPS)
    p = argparse.ArgumentParser(
        prog="torch_baselines.py",
        description="Time PyTorch / torch.compile / Triton baselines of "
                    f"{ops.words(ops.OPS).replace(' and ', ' or ')} for kernlab, validated "
                    "against a float64 reference first. Ops: "
                    + "; ".join(f"{name}: {s.summary}" for name, s in ops.TABLE.items()) + ".",
        epilog="exit codes: 0 run completed (records may be 'failed'/'error'); 1 internal "
               "error or self-test failure; 2 bad arguments; 3 baselines unavailable (no torch; "
               "with --device cuda, also no triton or no CUDA device).")
    p.add_argument("--op", choices=ops.OPS, help="the op (required unless --self-test)")
    p.add_argument("--shapes", help=f"comma-separated ROWSxCOLS list for {rows}, e.g. "
                                    "16384x16384,4096x256 (softmax and rmsnorm are over the last "
                                    "dim); MxNxK for matmul/linear, e.g. 8192x8192x8192,127x255x63 "
                                    "(c[M,N] = act(a[M,K] . w[N,K]^T + bias[N])); BxD for mlp "
                                    "(batch x width, e.g. 1024x2048; the depth is --layers)")
    p.add_argument("--dtype", choices=tuple(DTYPES), help="element type (required unless --self-test)")
    p.add_argument("--gelu", choices=GELU_FORMS, default=None,
                   help="GeLU form: tanh approximation or exact erf (default tanh for gelu, erf "
                        "for mlp, F.gelu's default; ignored by the other ops)")
    p.add_argument("--activation", choices=ACTIVATIONS, default="gelu-tanh",
                   help="linear's activation after the bias (default gelu-tanh; matmul has none, "
                        "the row ops ignore it)")
    p.add_argument("--eps", type=float, default=None,
                   help=f"rmsnorm's eps, added to the mean of squares (default float32's machine "
                        f"epsilon, {F32_EPS!r}, as F.rms_norm's eps=None; ignored by the other "
                        f"ops)")
    p.add_argument("--log-softmax", action="store_true",
                   help="softmax: log_softmax instead (torch.log_softmax; the manual form "
                        "x - max - log(sum(exp(x - max)))); ignored by the other ops")
    p.add_argument("--layers", type=int, default=None, metavar="L",
                   help=f"mlp: the number of layers, each nn.Linear(D, D) then GeLU (default "
                        f"{DEFAULT_LAYERS}, kernlab's; ignored by the other ops)")
    p.add_argument("--mode", choices=MLP_MODES, default=None,
                   help="mlp: forward (y = model(x)) or train (zero_grad, model(x).mean(), "
                        "backward: every gradient, dX too) (default forward, or train where "
                        "--steps is given, as kernlab's; ignored by the other ops)")
    p.add_argument("--steps", type=int, default=None, metavar="N",
                   help="mlp: forward passes or training steps one timed call runs (default 1; "
                        "ignored by the other ops)")
    p.add_argument("--sync-each-step", action="store_true",
                   help="mlp: read one value back to the host after every step (loss.item() in "
                        "training), as kernlab's --sync-each-step; ignored by the other ops")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated subset of {','.join(VARIANTS)} (default: all the op "
                        f"has; matmul has no torch_manual, which would be torch_native); mlp's "
                        f"are torch_native, torch_compile and {COMPILE_RO}")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warmup, ms (default 25)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time, ms (default 100)")
    p.add_argument("--json", metavar="PATH", help="write the results (or the unavailable note) here")
    p.add_argument("--seed", type=int, help="input seed (default: random, recorded in the JSON)")
    p.add_argument("--manual-precision", choices=("f32", "input"), default="f32",
                   help="torch_manual/torch_compile on bf16/f16: 'f32' casts the input to f32 and "
                        "the result back (kernlab's manual tier does the same; default), 'input' "
                        "runs every op in the input dtype. linear's torch_manual: the matmul "
                        "always runs in the input dtype; this picks the precision of the bias "
                        "add and GeLU after it")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, max-autotune, ...); "
                        f"torch_compile compiles torch_manual for {rows}, torch_native for "
                        f"matmul/linear, the model for mlp (whose {COMPILE_RO} is always "
                        "reduce-overhead)")
    p.add_argument("--rotate", type=str, default="1",
                   help="cycle the timed calls through N copies of the inputs (each call's "
                        "output kept until its copy comes round again), or 'auto': as many "
                        "as make the copies 4x the L2, at most 1024, as kernlab's --rotate "
                        "(default 1: one buffer, do_bench's usual way; mlp takes it but times "
                        "one model and one x, and says so in its records' notes)")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help=f"{rows} and mlp: time every variant of a shape K times, in K rounds that "
                        "take the variants in turn; the record keeps the round whose median is "
                        "the median of the K (the lower middle one for an even K), every "
                        "round's median and their spread, (max - min) / that median, as "
                        "kernlab's --repeat (default 1; GEMMs run once)")
    p.add_argument("--cache-bytes", type=int, default=None,
                   help="the L2 size --rotate auto counts with (default: the device's, from torch)")
    p.add_argument("--row-stride", type=int, default=None, metavar="N",
                   help=f"{rows}: rows N elements apart (N >= every shape's width; the gaps "
                        "hold NaN), as kernlab's --row-stride; default contiguous")
    p.add_argument("--kernlab", metavar="VARIANT",
                   help=f"{ops.words(ops.KERNLAB_OPS)}: also time kernlab's VARIANT (e.g. auto) "
                        f"here, through the kernlab Python package on the run's tensors "
                        f"({KERNLAB_VARIANT}), validated like every variant; contiguous rows "
                        f"only (the package copies strided rows first)")
    p.add_argument("--kernlab-build", metavar="ID",
                   help="with --kernlab: the build the package must have been built from "
                        "(kernlab's `build_id`); another build's package leaves the column in "
                        "error, saying so")
    p.add_argument("--triton-plans", metavar="PATH",
                   help="kernlab's Triton launches (triton_plans.json, written by `kernlab bench "
                        "--torch` with the kernels' files beside it): the triton column "
                        "launches that kernel at each planned shape, with kernlab's constants, "
                        "warps, stages and grid; without them the column is left out (named in "
                        "--variants, it says why at each shape)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                   help="where torch runs: cuda (default; do_bench's timing) or cpu (PyTorch's "
                        "CPU kernels, torch_native through their out= forms where they have one, "
                        "timed as kernlab times its CPU tier: each call after a flush of twice "
                        "--cache-bytes; no triton or kernlab_do_bench column)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="--device cpu: torch's intra-op threads (torch.set_num_threads), as many "
                        "as kernlab's own run used (default: torch's own choice)")
    p.add_argument("--quiet", action="store_true", help="no per-variant progress on stderr")
    p.add_argument("--copy-bytes", type=int, default=1 << 30,
                   help="also time dst.copy_(src) of this many bytes, PyTorch's side of the copy "
                        "ceiling (default 1 GiB; 0 skips it)")
    p.add_argument("--self-test", action="store_true",
                   help="run the unit tests under baselines/tests (no torch needed); exit 0 if "
                        "they pass")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    missing = [f"--{k}" for k in ("op", "shapes", "dtype") if getattr(args, k) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")
    spec = ops.spec(args.op)
    try:
        args.shape_list = spec.parse_shapes(args.shapes)
        asked = (parse_variants(args.variants) if args.variants is not None
                 else list(spec.variants))
    except ValueError as e:
        parser.error(str(e))
    args.variant_list, dropped = spec.resolve_variants(asked)
    # The triton column launches kernlab's Triton kernel as kernlab did: without kernlab's
    # launches there is nothing to time, unless it was asked for by name.
    if args.triton_plans is None and args.variants is None:
        args.variant_list = [v for v in args.variant_list if v != "triton"]

    def missing():
        why = "; ".join(w for w in (spec.missing_reason(v) for v in dropped) if w)
        return (f"{args.op} has no {', '.join(dropped)} variant"
                + (f" ({why})" if why else ""))

    if not args.variant_list:
        parser.error(f"nothing to run: {missing()}")
    if dropped and not args.quiet:
        print(f"{PROG}: {missing()}; skipped", file=sys.stderr)
    if args.warmup_ms <= 0 or args.rep_ms <= 0:
        parser.error("--warmup-ms and --rep-ms must be > 0")
    try:
        args.rotate = parse_rotate(args.rotate)
    except ValueError as e:
        parser.error(str(e))
    if args.cache_bytes is not None and args.cache_bytes < 1:
        parser.error("--cache-bytes must be at least 1")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.row_stride is not None:
        if not spec.rows:
            parser.error(f"--row-stride is for {ops.words(ops.ROW_OPS)} rows, not {args.op}")
        narrow = [s for s in args.shape_list if s[-1] > args.row_stride]
        if args.row_stride < 1 or narrow:
            parser.error(f"--row-stride {args.row_stride} is less than the width of "
                         f"{shape_str(narrow[0]) if narrow else 'a row'}")
    if args.kernlab is not None:
        if args.op not in ops.KERNLAB_OPS:
            parser.error(f"--kernlab is for {ops.words(ops.KERNLAB_OPS)}")
        if args.row_stride is not None:
            parser.error("--kernlab times contiguous rows, not --row-stride (the package copies "
                         "strided rows contiguous first)")
        if not args.kernlab:
            parser.error("--kernlab takes a variant name, e.g. auto")
    elif args.kernlab_build is not None:
        parser.error("--kernlab-build goes with --kernlab")
    args.triton_plan_map = {}
    if args.triton_plans is not None:
        if "triton" not in spec.variants:
            parser.error(f"--triton-plans: {args.op} has no triton column")
        try:
            args.triton_plan_map = load_triton_plans(args.triton_plans, args.op, args.dtype)
        except ValueError as e:  # the PyTorch columns still run
            print(f"{PROG}: triton left without kernlab's launches: {e}", file=sys.stderr)
    if args.threads is not None and (args.threads < 1 or args.device != "cpu"):
        parser.error("--threads takes a count of at least 1, with --device cpu")
    if args.device == "cpu":
        if not (spec.rows or spec.gemm):
            parser.error(f"--device cpu: {args.op}'s baselines run on CUDA only")
        if args.kernlab is not None or args.triton_plans is not None:
            parser.error("--kernlab and --triton-plans are for GPU runs: not with --device cpu")
        args.variant_list = [v for v in args.variant_list if v != "triton"]
        if not args.variant_list:
            parser.error("nothing to run: the triton column needs --device cuda")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 31)
    spec.normalise_args(args)
    bad = spec.arg_error(args)
    if bad:
        parser.error(bad)

    from .runner import probe_environment, run_benchmarks

    torch, reason = probe_environment(args.device)
    if torch is None:
        return report_unavailable(reason, args.json)
    return run_benchmarks(torch, args)


def self_test(stream=None):
    """Run the unit tests (baselines/tests) in this process: their report on stderr, one line
    on stdout ("... self-test: ok" or "... self-test: FAILED"); exit 0 where all pass."""
    import unittest

    if not os.path.isdir(TESTS_DIR):
        print(f"{PROG} self-test: FAILED (no unit tests at {TESTS_DIR})")
        return EXIT_INTERNAL
    loader = unittest.TestLoader()
    suite = loader.discover(TESTS_DIR, top_level_dir=os.path.dirname(TESTS_DIR))
    result = unittest.TextTestRunner(stream=stream or sys.stderr, verbosity=1).run(suite)
    ok = result.wasSuccessful() and result.testsRun > 0 and not loader.errors
    skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
    print(f"{PROG} self-test: {'ok' if ok else 'FAILED'} ({result.testsRun} unit tests{skipped})")
    return EXIT_OK if ok else EXIT_INTERNAL
