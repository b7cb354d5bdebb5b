"""softmax: y = softmax(x) over the last dim.

Shapes ROWSxCOLS; x ~ N(0, 1) with one element in a thousand times 20 (outliers for the row
max to matter); bytes 2 * rows * cols * size. Variants: torch_manual (the lecture's
`manual_softmax`), torch_native (torch.softmax), torch_compile (of torch_manual), triton (the
lecture's one-row-per-program kernel, `triton_kernels.softmax_kernel`), and, where kernlab
passes its launch plans, kernlab's own launch replayed here (`replay`)."""

from .base import RowOp

# Triton limits for the one-block-per-row kernels (softmax, rmsnorm).
TRITON_SOFTMAX_MAX_BLOCK = 131072


def softmax_num_warps(block_size):
    """num_warps for a one-row-per-program kernel of BLOCK_SIZE `block_size`."""
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


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

    def triton_fn(self, bench, shape):
        from .. import triton_kernels as tk

        torch = bench.torch
        rows, cols = shape
        block = tk.triton.next_power_of_2(cols)
        if block > TRITON_SOFTMAX_MAX_BLOCK:
            raise ValueError(f"row too wide for the one-block-per-row Triton softmax: "
                             f"BLOCK_SIZE={block} > {TRITON_SOFTMAX_MAX_BLOCK}")
        warps = softmax_num_warps(block)
        note = f"BLOCK_SIZE={block}, num_warps={warps}, f32 arithmetic"
        kernel = tk.softmax_kernel

        def run(x, out=None):
            y = torch.empty_like(x) if out is None else out
            kernel[(x.shape[0],)](
                x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=block, num_warps=warps)
            return y

        return run, note

    def variant_notes(self, bench, variant, inputs):
        if variant == "torch_native" and not inputs[0].is_contiguous():
            return ["strided rows: ATen's softmax copies them contiguous first "
                    "(that copy is in its time)"]
        return []


SPEC = Softmax()
