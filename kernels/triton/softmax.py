"""Softmax over rows in Triton, in the fused-softmax tutorial's form: a row is one block of
BLOCK ≥ cols elements held on chip (read once, written once); a fixed number of programs walk
the rows (the launcher sizes the grid from the kernel's occupancy), NUM_STAGES rows in flight.
LOG writes log_softmax instead."""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(y_ptr, x_ptr, x_stride, y_stride, rows, cols,
                   BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, LOG: tl.constexpr):
    first = tl.program_id(0)
    step = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    inside = offs < cols
    for row in tl.range(first, rows, step, num_stages=NUM_STAGES):
        r = row.to(tl.int64)
        x = tl.load(x_ptr + r * x_stride + offs, mask=inside, other=-float("inf")).to(tl.float32)
        shifted = x - tl.max(x, axis=0)
        e = tl.exp(shifted)
        total = tl.sum(e, axis=0)
        if LOG:
            y = shifted - tl.log(total)
        else:
            y = e / total
        tl.store(y_ptr + r * y_stride + offs, y.to(y_ptr.dtype.element_ty), mask=inside)
