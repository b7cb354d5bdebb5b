"""rmsnorm: y = x * rsqrt(mean(x^2 over the last dim) + eps) * weight, as
torch.nn.functional.rms_norm(x, (cols,), weight, eps); f32 arithmetic inside for every dtype.

Shapes ROWSxCOLS (normalised over COLS), weight of shape [COLS]; --eps (kernlab always passes
it; without it float32's machine epsilon, 2^-23 = 1.1920928955078125e-07, what rms_norm's
eps=None takes for these dtypes). Inputs drawn from --seed in float64, then rounded to the
dtype: x ~ N(0, 1), weight = 1 + 0.25 N(0, 1) (mean 1, standard deviation 0.25). Bytes
2 * rows * cols * size + cols * size: x read once, y written once, the weight read once.
Judged element by element (`rel_err_array`) against a float64 reference from the rounded
inputs. Variants:

  torch_manual   the eager composition, one kernel per primitive: x*x, mean, + eps, rsqrt,
                 x * r, * w (in f32 for 16-bit inputs, --manual-precision)
  torch_native   torch.nn.functional.rms_norm(x, (cols,), w, eps)
  torch_compile  torch.compile of torch_manual
  triton         kernlab's Triton RMSNorm (kernels/triton/rmsnorm.py: one program a row, the
                 row loaded once, its sum of squares in f32), launched as kernlab launched it
                 (`triton_plans`)
"""

import math

from ..common import DTYPES, is_number
from ..triton_plans import describe as triton_describe, launch as triton_launch
from .base import RowOp

F32_EPS = 2.0 ** -23  # torch.finfo(torch.float32).eps, rms_norm's eps where it is None
WEIGHT_MEAN = 1.0
WEIGHT_STD = 0.25


def rmsnorm_bytes(rows, cols, dtype):
    """2 * rows * cols * size + cols * size: x read once, y written once, the weight once."""
    size = DTYPES[dtype][1]
    return 2 * int(rows) * int(cols) * size + int(cols) * size


def rmsnorm_py(rows, weight, eps):
    """The reference in pure Python (float64), for lists of rows: each row times
    1/sqrt(mean(row^2) + eps), times the weight element-wise. A zero row with eps = 0 gives
    NaN (0 * inf), as the float64 reference does."""
    out = []
    for row in rows:
        s = sum(v * v for v in row) / len(row) + eps
        r = 1.0 / math.sqrt(s) if s > 0 else math.inf
        out.append([v * r * w for v, w in zip(row, weight)])
    return out


def rmsnorm_reference(torch, x, w, eps):
    """The float64 reference of x (rows x cols, any dtype and layout) and w ([cols])."""
    y = x.to(torch.float64, copy=True)
    r = torch.rsqrt((y * y).mean(dim=-1, keepdim=True) + eps)
    return y.mul_(r).mul_(w.to(torch.float64))


def manual_rmsnorm(torch, x, w, eps):
    """The eager composition, one kernel per primitive op, in the dtype it is given."""
    ms = (x * x).mean(dim=-1, keepdim=True)
    r = torch.rsqrt(ms + eps)
    return x * r * w


class RmsNorm(RowOp):
    name = "rmsnorm"
    kernlab_call = "rms_norm"
    record_keys = ("eps",)
    summary = "y = x * rsqrt(mean(x^2) + eps) * weight over the last dim (--eps), ROWSxCOLS"

    def bytes(self, dtype, shape, opts=None):
        rows, cols = shape
        return rmsnorm_bytes(rows, cols, dtype)

    def normalise_args(self, args):
        args.gelu = None
        args.activation = None
        if args.eps is None:
            args.eps = F32_EPS

    def arg_error(self, args):
        if not (math.isfinite(args.eps) and args.eps >= 0):
            return f"--eps must be a finite number >= 0 (got {args.eps!r})"
        return None

    def form(self, args):
        return f"eps {args.eps:g}"

    def record_form(self, r):
        eps = r.get("eps")
        return None if eps is None else f"eps {eps:g}"

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        fields = super().record_fields(shape)
        fields["eps"] = float(F32_EPS if eps is None else eps)
        return fields

    def check_record(self, r, need, where):
        eps = r["eps"]
        need(is_number(eps) and math.isfinite(eps) and eps >= 0,
             f"{where}: 'eps' is not a finite number >= 0")
        need(r["bytes"] == self.bytes(r["dtype"], r["shape"]),
             f"{where}: bytes is not (2*rows*cols + cols) * dtype size")

    def doc_fields(self, args):
        return {"eps": args.eps}

    # -- on the GPU ---------------------------------------------------------------------------
    def make_inputs(self, bench, shape):
        torch = bench.torch
        rows, cols = shape
        g = bench.generator()
        x64 = torch.randn(shape, generator=g, device=bench.dev, dtype=torch.float64)
        x = bench.rounded(x64)
        del x64
        bench.checked(x)
        w64 = torch.randn((cols,), generator=g, device=bench.dev, dtype=torch.float64)
        w64.mul_(WEIGHT_STD).add_(WEIGHT_MEAN)
        w = bench.rounded(w64)
        del w64
        return bench.in_layout(x), bench.checked(w)

    def reference(self, bench, inputs):
        x, w = inputs
        return rmsnorm_reference(bench.torch, x, w, bench.args.eps)

    def manual_fn(self, bench):
        torch = bench.torch
        eps = bench.args.eps
        if not bench.manual_upcast:
            def manual(x, w):
                return manual_rmsnorm(torch, x, w, eps)
        else:
            def manual(x, w):
                return manual_rmsnorm(torch, x.float(), w.float(), eps).to(x.dtype)
        return manual

    def native_fn(self, bench):
        F = bench.torch.nn.functional
        eps = bench.args.eps

        def native(x, w):
            return F.rms_norm(x, (x.shape[-1],), w, eps)

        return native

    def kernlab_fn(self, bench, kl, variant):
        eps = float(bench.args.eps)
        return lambda x, w: kl.rms_norm(x, w, eps, variant=variant)

    def triton_fn(self, bench, shape):
        plan = bench.triton_plan(shape)
        torch = bench.torch
        eps = float(bench.args.eps)

        def run(x, w, out=None):
            y = torch.empty_like(x) if out is None else out
            triton_launch(plan, (y, x, w, x.stride(0), y.stride(0), x.shape[1], eps))
            return y

        return run, triton_describe(plan)

SPEC = RmsNorm()
