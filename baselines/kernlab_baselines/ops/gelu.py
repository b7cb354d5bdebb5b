"""gelu: y = GeLU(x), element-wise, in its tanh approximation or exact (erf) form (--gelu).

Shapes ROWSxCOLS; x ~ 2 N(0, 1); bytes 2 * rows * cols * size (x read once, y written once).
Variants: torch_manual (the lecture's multi-op composition), torch_native
(F.gelu(approximate=...)), torch_compile (of torch_manual) and triton (kernlab's Triton GeLU,
kernels/triton/gelu.py, launched as kernlab launched it: `triton_plans`)."""

import math

from ..triton_plans import describe as triton_describe, launch as triton_launch
from .base import RowOp, ERROR_METRICS

GELU_FORMS = ("tanh", "erf")

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)  # PyTorch's kBeta = M_SQRT2 * M_2_SQRTPI * 0.5
SQRT1_2 = math.sqrt(0.5)


def gelu_py(x, form):
    """GeLU of one float in float64, as the reference computes it."""
    if form == "tanh":
        return 0.5 * x * (1.0 + math.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + math.erf(x * SQRT1_2))


def gelu_reference(torch, x, form):
    """GeLU in float64 of the tensor x (any dtype)."""
    x = x.to(torch.float64)
    if form == "tanh":
        inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + torch.tanh(inner))
    return 0.5 * x * (1.0 + torch.erf(x * SQRT1_2))


class Gelu(RowOp):
    name = "gelu"
    kernlab_call = "gelu"
    summary = "y = GeLU(x) (--gelu tanh|erf), ROWSxCOLS"

    def normalise_args(self, args):
        if args.gelu is None:
            args.gelu = "tanh"
        args.activation = None
        args.eps = None

    def form(self, args):
        return args.gelu

    def record_form(self, r):
        return r["gelu"]

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        return {"gelu": gelu, "activation": None, "bias": None, "flops": None,
                "error_metric": ERROR_METRICS["elementwise"]}

    def check_gelu(self, r, need, where):
        need(r["gelu"] in GELU_FORMS, f"{where}: gelu op without tanh/erf")

    # -- on the GPU ---------------------------------------------------------------------------
    def make_inputs(self, bench, shape):
        torch = bench.torch
        x64 = torch.randn(shape, generator=bench.generator(), device=bench.dev,
                          dtype=torch.float64)
        x64.mul_(2.0)
        x = bench.rounded(x64)
        del x64
        return (bench.in_layout(bench.checked(x)),)

    def reference(self, bench, inputs):
        return gelu_reference(bench.torch, inputs[0], bench.args.gelu)

    def core(self, bench):
        torch = bench.torch
        if bench.args.gelu == "tanh":
            def core(x):
                return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))
        else:
            def core(x):
                return 0.5 * x * (1 + torch.erf(x * 0.7071067811865476))
        return core

    def native_fn(self, bench):
        torch = bench.torch
        approx = "tanh" if bench.args.gelu == "tanh" else "none"
        return lambda x: torch.nn.functional.gelu(x, approximate=approx)

    def kernlab_fn(self, bench, kl, variant):
        approx = "tanh" if bench.args.gelu == "tanh" else "none"
        return lambda x: kl.gelu(x, approximate=approx, variant=variant)

    def native_out(self, bench):
        # F.gelu's own kernel (aten::gelu.out).
        gelu = bench.torch.ops.aten.gelu.out
        approx = "tanh" if bench.args.gelu == "tanh" else "none"
        return lambda x, out: gelu(x, approximate=approx, out=out)

    def triton_fn(self, bench, shape):
        plan = bench.triton_plan(shape)
        torch = bench.torch

        def run(x, out=None):
            if not x.is_contiguous():
                raise RuntimeError("the Triton GeLU reads a flat buffer: rows with a stride "
                                   "(--row-stride) are not for it")
            y = torch.empty_like(x) if out is None else out
            triton_launch(plan, (x, y, x.numel()))
            return y

        return run, triton_describe(plan)

SPEC = Gelu()
