"""RMSNorm over rows in Triton: y = x · rsqrt(mean(x²) + eps) · w, one program a row held on
chip in one block of BLOCK ≥ cols elements, f32 arithmetic."""
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(y_ptr, x_ptr, w_ptr, x_stride, y_stride, cols, eps, BLOCK: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    inside = offs < cols
    x = tl.load(x_ptr + r * x_stride + offs, mask=inside, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=inside, other=0.0).to(tl.float32)
    inv = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + r * y_stride + offs, (x * inv * w).to(y_ptr.dtype.element_ty), mask=inside)
