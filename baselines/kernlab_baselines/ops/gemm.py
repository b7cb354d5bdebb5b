"""matmul and linear: c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]), `w` stored as nn.Linear
stores its weight; matmul has no bias and no activation, linear's activation is --activation.

Shapes MxNxK; a ~ N(0, 1), w ~ N(0, 1)/sqrt(K), bias ~ N(0, 1)/2; bytes (M*K + N*K + M*N
[+ N]) * size, FLOPs 2*M*N*K. Judged by the relative L2 error of each checked output row
(`row_rel_l2_array`; all rows of a small output, else a seeded sample). Variants: torch_manual
(linear only: y = x @ w.t(), y = y + b, the lecture's multi-op GeLU), torch_native
(a @ w.t(), F.gelu(F.linear(x, w, b))), torch_compile (of torch_native) and triton (kernlab's
Triton GEMM, kernels/triton/matmul.py, with the bias and activation in its epilogue, launched as
kernlab launched it: `triton_plans`).
f32 GEMMs run with TF32 off."""

import math

from ..common import DTYPES, VARIANTS, is_int, is_number
from .base import ERROR_METRICS, OpSpec
from .gelu import SQRT1_2, SQRT_2_OVER_PI
from ..triton_plans import describe as triton_describe, launch as triton_launch

# linear's --activation, named as kernlab's Activation (kebab-case).
ACTIVATIONS = ("gelu-tanh", "gelu-erf", "none")

# Keys every matmul/linear record has besides the contract's RECORD_KEYS (the row ops' records
# written by this version have them too, as null; older documents lack them).
GEMM_RECORD_KEYS = ("activation", "bias", "flops", "tflops", "error_metric", "validated_rows",
                    "max_elem_rel_err")

def gemm_flops(m, n, k):
    """2*M*N*K: one multiply and one add per term (bias and activation not counted)."""
    return 2 * int(m) * int(n) * int(k)


def gemm_bytes(m, n, k, dtype, bias):
    """The minimum traffic: a and w read once, c written once, the bias read once."""
    m, n, k = int(m), int(n), int(k)
    return (m * k + n * k + m * n + (n if bias else 0)) * DTYPES[dtype][1]


class Gemm(OpSpec):
    ndim = 3
    shape_keys = "[M, N, K]"
    gemm = True
    rows = False
    rounds = False
    kernlab_call = "linear"  # matmul's too: kernlab.linear without bias or activation

    def __init__(self, name, bias):
        self.name = name
        self.bias = bias
        # matmul has no torch_manual: it would be a @ w.t(), which is torch_native.
        self.variants = VARIANTS if bias else tuple(v for v in VARIANTS if v != "torch_manual")
        self.summary = ("c = act(a . w^T + bias) (--activation), MxNxK" if bias
                        else "c = a . w^T, MxNxK")

    def bytes(self, dtype, shape, opts=None):
        m, n, k = shape
        return gemm_bytes(m, n, k, dtype, self.bias)

    def flops(self, shape, opts=None):
        m, n, k = shape
        return gemm_flops(m, n, k)

    def missing_reason(self, variant):
        return "it would be torch_native" if variant == "torch_manual" and not self.bias else None

    def normalise_args(self, args):
        args.gelu = None
        args.eps = None
        if not self.bias:
            args.activation = "none"

    def form(self, args):
        return args.activation if self.bias else None

    def record_form(self, r):
        return r.get("activation") if self.bias else None

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        m, n, k = (int(v) for v in shape)
        return {"gelu": None, "activation": activation if self.bias else "none",
                "bias": self.bias, "flops": gemm_flops(m, n, k),
                "error_metric": ERROR_METRICS["gemm"]}

    record_keys = GEMM_RECORD_KEYS

    def check_record(self, r, need, where):
        if not self.bias:
            need(r["activation"] == "none" and r["bias"] is False,
                 f"{where}: matmul with a bias or an activation")
        else:
            need(r["activation"] in ACTIVATIONS and r["bias"] is True,
                 f"{where}: linear without a bias or with a bad activation")
        need(r["variant"] in self.variants or r["variant"] not in VARIANTS,
             f"{where}: {self.name} has no {r['variant']} variant")
        m, n, k = r["shape"]
        need(r["flops"] == gemm_flops(m, n, k), f"{where}: flops is not 2*M*N*K")
        need(r["bytes"] == self.bytes(r["dtype"], r["shape"]),
             f"{where}: bytes is not (M*K + N*K + M*N [+ N]) * dtype size")
        need(r["error_metric"] == ERROR_METRICS["gemm"], f"{where}: bad error_metric")
        me = r["max_elem_rel_err"]
        need(me is None or (is_number(me) and math.isfinite(me)), f"{where}: bad max_elem_rel_err")
        vr = r["validated_rows"]
        need(vr is None or (is_int(vr) and 0 < vr <= m), f"{where}: bad validated_rows")
        t = r["tflops"]
        need(t is None or (is_number(t) and math.isfinite(t)),
             f"{where}: 'tflops' is neither a finite number nor null")
        if r["status"] == "ok":
            need(t is not None, f"{where}: ok but 'tflops' is null")
            need(vr is not None, f"{where}: ok but 'validated_rows' is null")
        else:
            need(t is None, f"{where}: {r['status']} but 'tflops' set")

    def doc_fields(self, args):
        from ..checking import GEMM_FULL_CHECK_ELEMS, GEMM_SAMPLE_ROWS

        return {"activation": args.activation,
                "gemm_validation": (f"max over checked rows of ||out - ref||_2 / ||ref||_2 "
                                    f"against a float64 reference from the rounded inputs; all "
                                    f"rows when M <= {GEMM_SAMPLE_ROWS} or M*N <= "
                                    f"{GEMM_FULL_CHECK_ELEMS}, else {GEMM_SAMPLE_ROWS} rows")}

    # -- on the GPU ---------------------------------------------------------------------------
    def make_inputs(self, bench, shape):
        """a [M,K] ~ N(0,1), w [N,K] ~ N(0,1)/sqrt(K) (so a.w^T is O(1)), bias [N] ~ N(0,1)/2
        for linear; drawn in float64 from --seed, rounded to the dtype, contiguous."""
        torch = bench.torch
        m, n, k = shape
        g = bench.generator()

        def draw(dims, scale):
            t64 = torch.randn(dims, generator=g, device=bench.dev, dtype=torch.float64)
            if scale != 1.0:
                t64.mul_(scale)
            t = bench.rounded(t64)
            del t64
            return bench.checked(t)

        a = draw((m, k), 1.0)
        w = draw((n, k), 1.0 / math.sqrt(k))
        b = draw((n,), 0.5) if self.bias else None
        return a, w, b

    def reference(self, bench, a, w, b, rows):
        """(row index tensor, float64 reference of those output rows) from the dtype-rounded
        inputs, on the GPU: act(a[rows] . w^T + bias) in float64."""
        torch = bench.torch
        idx = torch.tensor(rows, device=bench.dev, dtype=torch.long)
        a64 = a.index_select(0, idx).to(torch.float64)
        w64 = w.to(torch.float64)
        y = a64 @ w64.t()
        del a64, w64
        if b is not None:
            y += b.to(torch.float64)
        act = bench.args.activation
        if act == "gelu-tanh":
            y = 0.5 * y * (1.0 + torch.tanh(SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)))
        elif act == "gelu-erf":
            y = 0.5 * y * (1.0 + torch.erf(y * SQRT1_2))
        return idx, y

    def manual_fn(self, bench):
        """linear as the lecture composes it eagerly: y = x @ w.t(); y = y + b; the multi-op
        GeLU. The matmul rounds to the input dtype (what `@` returns); with --manual-precision
        f32 (default) a 16-bit y is then cast to f32 for the bias add and GeLU, and the result
        back at the end; with 'input' every op runs in the input dtype."""
        torch = bench.torch
        act = bench.args.activation
        upcast = bench.manual_upcast

        def gelu_manual(y):
            if act == "gelu-tanh":
                return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
            if act == "gelu-erf":
                return 0.5 * y * (1 + torch.erf(y * 0.7071067811865476))
            return y

        def manual(x, w, b):
            y = x @ w.t()
            if upcast:
                y = y.float()
            y = y + b
            y = gelu_manual(y)
            return y.to(x.dtype) if upcast else y

        return manual

    def manual_note(self, bench):
        """torch_manual's note on a 16-bit run (None on f32)."""
        a = bench.args
        if bench.tdtype == bench.torch.float32:
            return None
        return (f"x @ w.t() rounds to {a.dtype}; bias add and GeLU in f32 "
                f"(y.float() ... .to(dtype))" if a.manual_precision == "f32"
                else f"every op in {a.dtype} (--manual-precision input)")

    def native_fn(self, bench):
        F = bench.torch.nn.functional
        if not self.bias:
            def native(x, w, b):
                return x @ w.t()
        else:
            act = bench.args.activation
            if act == "none":
                def native(x, w, b):
                    return F.linear(x, w, b)
            else:
                approx = "tanh" if act == "gelu-tanh" else "none"

                def native(x, w, b):
                    return F.gelu(F.linear(x, w, b), approximate=approx)
        return native

    def native_out_fn(self, bench):
        """torch_native with an out=: torch.matmul's; with a bias (F.linear has no out=),
        torch.addmm's, then the GeLU in place on it (aten::gelu_)."""
        torch = bench.torch
        if not self.bias:
            def native_out(x, w, b, out):
                return torch.matmul(x, w.t(), out=out)

            return native_out
        act = bench.args.activation
        approx = "tanh" if act == "gelu-tanh" else "none"

        def native_out_bias(x, w, b, out):
            torch.addmm(b, x, w.t(), out=out)
            if act != "none":
                torch.ops.aten.gelu_(out, approximate=approx)
            return out

        return native_out_bias

    def kernlab_fn(self, bench, kl, variant):
        if not self.bias:  # kernlab.linear without bias or activation is kernlab's matmul
            return lambda x, w, b: kl.linear(x, w, variant=variant)
        act = bench.args.activation
        return lambda x, w, b: kl.linear(x, w, b, act, variant=variant)

    def compile_fn(self, bench):
        """torch_compile: torch.compile of torch_native, compiled once a shape."""
        return bench.compile(self.native_fn(bench))

    def triton_fn(self, bench, shape):
        """(fn(x, w, b, out=None), note) for kernlab's Triton GEMM, launched as kernlab did."""
        plan = bench.triton_plan(shape)
        torch = bench.torch
        m, n, k = shape

        def run(x, w, b, out=None):
            c = torch.empty((m, n), device=x.device, dtype=x.dtype) if out is None else out
            # Without a bias the kernel never reads its pointer (HAS_BIAS is a constant).
            triton_launch(plan, (x, w, c, c if b is None else b, m, n, k,
                                 x.stride(0), w.stride(0), c.stride(0)))
            return c

        return run, triton_describe(plan)

MATMUL = Gemm("matmul", bias=False)
LINEAR = Gemm("linear", bias=True)
