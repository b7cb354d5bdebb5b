"""softmax: y = softmax(x) over the last dim.

Shapes ROWSxCOLS; x ~ N(0, 1) with one element in a thousand times 20 (outliers for the row
max to matter); bytes 2 * rows * cols * size. Variants: torch_manual (the lecture's
`manual_softmax`), torch_native (torch.softmax), torch_compile (of torch_manual), triton
(kernlab's Triton kernel, the fused-softmax tutorial's, launched as kernlab launched it:
`triton_plans`), and, where kernlab passes its launch plans, kernlab's own launch replayed here
(`replay`)."""

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


def softmax_reference(torch, x):
    """softmax over the last dim in float64 of the tensor x (any dtype)."""
    x = x.to(torch.float64)
    m = x.amax(dim=-1, keepdim=True)
    e = torch.exp(x - m)
    del x
    s = e.sum(dim=-1, keepdim=True)
    return e.div_(s)


class Softmax(RowOp):
    name = "softmax"
    replays = True
    summary = "y = softmax(x) over the last dim, ROWSxCOLS"

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
        return softmax_reference(bench.torch, inputs[0])

    def core(self, bench):
        torch = bench.torch

        def core(x):
            return manual_softmax(torch, x)

        return core

    def native_fn(self, bench):
        torch = bench.torch
        return lambda x: torch.softmax(x, dim=-1)

    def native_out(self, bench):
        # torch.softmax's kernel (aten::_softmax.out; half_to_float False: out in x's dtype).
        softmax = bench.torch.ops.aten._softmax.out
        return lambda x, out: softmax(x, -1, False, out=out)

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
