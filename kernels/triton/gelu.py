"""GeLU in Triton: one program a block of BLOCK elements, f32 arithmetic, the tensors' dtype
in and out. TANH picks the form: PyTorch's approximate="tanh", else the exact erf."""
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, TANH: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside).to(tl.float32)
    if TANH:
        inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
        y = 0.5 * x * (1.0 + libdevice.tanh(inner))
    else:
        y = 0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=inside)
