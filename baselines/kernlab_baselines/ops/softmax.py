"""softmax: y = softmax(x) over the last dim, or log_softmax (--log-softmax).

Shapes ROWSxCOLS; x ~ N(0, 1) with one element in a thousand times 20 (outliers for the row
max to matter); bytes 2 * rows * cols * size. Variants: torch_manual (the lecture's
`manual_softmax`), torch_native (torch.softmax), torch_compile (of torch_manual), triton
(kernlab's Triton kernel, the fused-softmax tutorial's, launched as kernlab launched it:
`triton_plans`), and, with --kernlab, kernlab's own variant through its Python package
(`package`)."""

from ..triton_plans import describe as triton_describe, launch as triton_launch
from .base import RowOp

def manual_softmax(torch, x):
    """The lecture's manual softmax over the last dimension: max, subtract, exp, sum, divide,
    one eager op each (torch.compile fuses it)."""
    x_max = x.max(dim=-1, keepdim=True)[0]
    x = x - x_max
    num = torch.exp(x)
    den = num.sum(dim=-1, keepdim=True)
    return num / den


def manual_log_softmax(torch, x):
    """log_softmax as the same eager ops: max, subtract, exp, sum, log, subtract."""
    x_max = x.max(dim=-1, keepdim=True)[0]
    x = x - x_max
    return x - torch.log(torch.exp(x).sum(dim=-1, keepdim=True))


def softmax_reference(torch, x, log=False):
    """softmax (or log_softmax) over the last dim in float64 of the tensor x (any dtype)."""
    x = x.to(torch.float64)
    m = x.amax(dim=-1, keepdim=True)
    x = x - m
    e = torch.exp(x)
    s = e.sum(dim=-1, keepdim=True)
    if log:
        return x.sub_(torch.log(s))
    del x
    return e.div_(s)


def is_log(args):
    return bool(getattr(args, "log_softmax", False))


class Softmax(RowOp):
    name = "softmax"
    kernlab_call = "softmax"
    summary = "y = softmax(x) (or log_softmax: --log-softmax) over the last dim, ROWSxCOLS"

    def opts(self, args):
        return {"log_softmax": is_log(args)}

    def form(self, args):
        return "log_softmax" if is_log(args) else None

    def record_form(self, r):
        return "log_softmax" if r.get("log_softmax") else None

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        fields = super().record_fields(shape, gelu, activation, eps, opts)
        fields["log_softmax"] = bool((opts or {}).get("log_softmax", False))
        return fields

    def check_record(self, r, need, where):
        # Absent in documents from before --log-softmax: softmax then.
        need(isinstance(r.get("log_softmax", False), bool),
             f"{where}: 'log_softmax' is not true or false")

    def doc_fields(self, args):
        return self.opts(args)

    # -- on the GPU ---------------------------------------------------------------------------
    def make_inputs(self, bench, shape):
        torch = bench.torch
        g = bench.generator()
        x64 = torch.randn(shape, generator=g, device=bench.dev, dtype=torch.float64)
        outlier = torch.rand(shape, generator=g, device=bench.dev, dtype=torch.float64) < 1e-3
        x64 = torch.where(outlier, x64 * 20.0, x64)
        del outlier
        x = bench.rounded(x64)
        del x64
        return (bench.in_layout(bench.checked(x)),)

    def reference(self, bench, inputs):
        return softmax_reference(bench.torch, inputs[0], is_log(bench.args))

    def core(self, bench):
        torch = bench.torch
        manual = manual_log_softmax if is_log(bench.args) else manual_softmax

        def core(x):
            return manual(torch, x)

        return core

    def native_fn(self, bench):
        torch = bench.torch
        if is_log(bench.args):
            return lambda x: torch.log_softmax(x, dim=-1)
        return lambda x: torch.softmax(x, dim=-1)

    def native_out(self, bench):
        # torch.softmax's kernel (aten::_softmax.out; half_to_float False: out in x's dtype),
        # or torch.log_softmax's (aten::_log_softmax.out).
        aten = bench.torch.ops.aten
        kernel = aten._log_softmax.out if is_log(bench.args) else aten._softmax.out
        return lambda x, out: kernel(x, -1, False, out=out)

    def kernlab_fn(self, bench, kl, variant):
        call = kl.log_softmax if is_log(bench.args) else kl.softmax
        return lambda x: call(x, -1, variant=variant)

    def triton_fn(self, bench, shape):
        plan = bench.triton_plan(shape)
        torch = bench.torch

        def run(x, out=None):
            y = torch.empty_like(x) if out is None else out
            triton_launch(plan, (y, x, x.stride(0), y.stride(0), x.shape[0], x.shape[1]))
            return y

        return run, triton_describe(plan)

    def variant_notes(self, bench, variant, inputs):
        if variant == "torch_native" and not inputs[0].is_contiguous():
            return ["strided rows: ATen's softmax copies them contiguous first "
                    "(that copy is in its time)"]
        return []


SPEC = Softmax()
