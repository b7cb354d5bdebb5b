"""The functions on torch tensors and their torch custom ops (`torch.ops.kernlab.*`).

Each public function checks its arguments (a TypeError or ValueError naming the argument),
then runs its op: under torch.compile the custom op, in eager its implementation directly
(through a torch.autograd.Function where a gradient is wanted; see `_op`). The op allocates
the output, hands every tensor to the extension module by address, shape and strides, on
torch's current stream of the tensors' device (CUDA) or to the CPU tier. Layouts, per op:

- gelu, rms_norm, linear, mlp_forward: a non-contiguous input is copied contiguous first;
- softmax, log_softmax: over `dim` (any dimension; a dimension other than the last is moved
  last, and the result moved back, through a contiguous copy).

Backward: gelu, softmax, log_softmax, rms_norm, linear (and matmul) have explicit autograd
formulas run by torch's kernels (GeLU's and softmax's own backward kernels, cuBLAS for the
GEMMs); linear's recomputes its pre-activation with kernlab's GEMM. mlp_forward has none.
"""

import torch

from . import _kernlab

_DTYPES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}
ACTIVATIONS = ("none", "gelu-tanh", "gelu-erf")
GELU_FORMS = ("none", "tanh")


def _tensor(t, name, fn):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"kernlab.{fn}: {name} must be a torch.Tensor, not {type(t).__name__}")
    if t.dtype not in _DTYPES:
        raise TypeError(f"kernlab.{fn}: {name} is {t.dtype}; kernlab takes torch.float32, "
                        "torch.bfloat16 and torch.float16")
    if t.device.type not in ("cuda", "cpu"):
        raise ValueError(f"kernlab.{fn}: {name} is on {t.device}; kernlab runs on CUDA and the "
                         "CPU")
    return t


def _same(fn, first, **others):
    name0, t0 = first
    for name, t in others.items():
        if t.dtype != t0.dtype:
            raise TypeError(f"kernlab.{fn}: {name} is {t.dtype} but {name0} is {t0.dtype}")
        if t.device != t0.device:
            raise ValueError(f"kernlab.{fn}: {name} is on {t.device} but {name0} is on "
                             f"{t0.device}")


def _variant(variant, fn):
    if not isinstance(variant, str) or not variant:
        raise TypeError(f"kernlab.{fn}: variant must be a registry name (a str), e.g. 'auto'")
    return variant


def _arg(t):
    """(address, shape, dtype) of a contiguous tensor: every tensor an op hands over is one
    (row-major, whatever strides torch keeps on its size-1 dimensions)."""
    if not t.is_contiguous():
        raise ValueError("kernlab: internal error: a non-contiguous tensor reached the kernels")
    return (t.data_ptr(), t.shape, _DTYPES[t.dtype])


# torch's current stream of a device as a raw handle (what Inductor's launchers read):
# building a torch.cuda.Stream object a call costs several µs of host time. A torch without
# the private call gets the public, slower form.
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
    lambda index: torch.cuda.current_stream(index).cuda_stream)


def _run(op, variant, flags, inputs, out):
    if out.numel() == 0:  # nothing to compute (torch returns the empty result too)
        return out
    index = out.get_device()  # -1 on the CPU
    stream = _raw_stream(index) if index >= 0 else 0
    _kernlab.run(op, variant, [(k, str(v)) for k, v in flags], [_arg(t) for t in inputs],
                 _arg(out), index, stream)
    return out


# ---- the implementations: what each op runs on real tensors ---------------------------------

def _gelu_impl(x: torch.Tensor, approximate: str, variant: str) -> torch.Tensor:
    x = x.contiguous()
    form = "tanh" if approximate == "tanh" else "erf"
    return _run("gelu", variant, [("gelu", form)], [x], torch.empty_like(x))


def _softmax_impl(x: torch.Tensor, dim: int, log: bool, variant: str) -> torch.Tensor:
    last = dim in (-1, x.dim() - 1)
    xs = x.contiguous() if last else x.movedim(dim, -1).contiguous()
    y = torch.empty_like(xs)
    flags = [("log-softmax", "true")] if log else []
    _run("softmax", variant, flags, [xs], y)
    return y if last else y.movedim(-1, dim).contiguous()


def _rms_norm_impl(x: torch.Tensor, weight: torch.Tensor, eps: float,
                   variant: str) -> torch.Tensor:
    x = x.contiguous()
    return _run("rmsnorm", variant, [("eps", repr(float(eps)))], [x, weight.contiguous()],
                torch.empty_like(x))


def _linear_impl(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, activation: str,
                 variant: str) -> torch.Tensor:
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
    _run("linear", variant, [("activation", activation)],
         [x2, weight.contiguous(), bias.contiguous()], y)
    return y.reshape(*lead, weight.shape[0])


def _matmul_impl(x: torch.Tensor, weight: torch.Tensor, variant: str) -> torch.Tensor:
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
    _run("matmul", variant, [], [x2, weight.contiguous()], y)
    return y.reshape(*lead, weight.shape[0])


def _mlp_forward_impl(x: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor],
                      gelu: str, variant: str) -> torch.Tensor:
    x = x.contiguous()
    flags = [("layers", len(weights)), ("mode", "forward"),
             ("gelu", "tanh" if gelu == "tanh" else "erf")]
    ins = [x] + [w.contiguous() for w in weights] + [b.contiguous() for b in biases]
    return _run("mlp", variant, flags, ins, torch.empty_like(x))


# ---- backward: explicit formulas, one or a few of torch's kernels each ----------------------

_aten = torch.ops.aten


def _approximate(form):
    return "tanh" if form in ("tanh", "gelu-tanh") else "none"


def _gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.approximate = inputs[1]


def _gelu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return _aten.gelu_backward(grad, x, approximate=_approximate(ctx.approximate)), None, None


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.dim, ctx.log = inputs[1], inputs[2]


def _softmax_backward(ctx, grad):
    (y,) = ctx.saved_tensors
    back = _aten._log_softmax_backward_data if ctx.log else _aten._softmax_backward_data
    return back(grad, y, ctx.dim, y.dtype), None, None, None


def _rms_norm_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.eps = inputs[2]


def _rms_norm_backward(ctx, grad):
    x, w = ctx.saved_tensors
    need = ctx.needs_input_grad
    if x.is_cuda:
        # torch's fused backward kernel, with the rows' 1/rms from its fused forward (whose
        # output is dropped): two launches, where the formula below takes a dozen.
        d = [x.shape[-1]]
        _, rstd = _aten._fused_rms_norm(x, d, None, ctx.eps)
        gx, gw = _aten._fused_rms_norm_backward(grad, x, d, rstd, w, [need[0], need[1]])
        return gx, gw, None, None
    # y = x·r·w with r = (mean(x²) + eps)^-½: dx = r·(g·w − x·r²·mean(g·w·x)), dw = Σ g·x·r,
    # in f32 whatever the dtype.
    xf, gf = x.float(), grad.float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + ctx.eps)
    gx = gw = None
    if need[0]:
        g_w = gf * w.float()
        gx = (r * (g_w - xf * r.square() * (g_w * xf).mean(-1, keepdim=True))).to(x.dtype)
    if need[1]:
        gw = (gf * xf * r).reshape(-1, x.shape[-1]).sum(0).to(w.dtype)
    return gx, gw, None, None


def _linear_setup(ctx, inputs, output):
    x, w, b, activation, variant = inputs
    ctx.save_for_backward(x, w, b)
    ctx.activation, ctx.variant = activation, variant


def _linear_backward(ctx, grad):
    # The pre-activation z is recomputed by kernlab's GEMM (the forward kept only the GeLU's
    # output): in eager by the implementation itself, else through the custom op, which a
    # tracer of this formula takes as it is. Then dz = GeLU'(z)·g, dx = dz·W, dW = dzᵀ·x,
    # db = Σ dz.
    x, w, b = ctx.saved_tensors
    g = grad.reshape(-1, w.shape[0])
    if ctx.activation != "none":
        gemm = _linear_impl if getattr(ctx, "eager", False) else _linear.op
        z = gemm(x, w, b, "none", ctx.variant).reshape(-1, w.shape[0])
        g = _aten.gelu_backward(g, z, approximate=_approximate(ctx.activation))
    need = ctx.needs_input_grad
    gx = (g @ w).reshape(x.shape) if need[0] else None
    gw = g.t() @ x.reshape(-1, x.shape[-1]) if need[1] else None
    gb = g.sum(0) if need[2] else None
    return gx, gw, gb, None, None


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


def _matmul_backward(ctx, grad):
    x, w = ctx.saved_tensors
    gx = grad @ w if ctx.needs_input_grad[0] else None
    gw = (grad.reshape(-1, grad.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
          if ctx.needs_input_grad[1] else None)
    return gx, gw, None


# ---- the custom ops, and the eager calls -----------------------------------------------------

def _op(name, impl, fake, setup=None, backward=None):
    """The custom op `kernlab::name` running `impl`, with `fake` and (where given) the autograd
    formula `setup`/`backward`, and the call the public function makes: under torch.compile
    the custom op, so the graph holds it; in eager, `impl` itself, through a
    torch.autograd.Function with the same formula where a gradient is wanted (the custom op's
    dispatch costs several µs of host time a call, as much as a small kernel)."""
    op = torch.library.custom_op(f"kernlab::{name}", mutates_args=())(impl)
    op.register_fake(fake)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup)

        class Eager(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                out = impl(*args)
                setup(ctx, args, out)
                ctx.eager = True  # the formula may call implementations directly
                return out

            @staticmethod
            def backward(ctx, grad):
                return backward(ctx, grad)

        with_grad = Eager.apply
    else:
        with_grad = op  # no formula: torch's own error where a gradient is asked for

    def call(*args):
        if torch.compiler.is_compiling():
            return op(*args)
        if torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return with_grad(*args)
        return impl(*args)

    call.op = op
    return call


def _like(x, *_):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _gemm_like(x, weight, *_):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


_gelu = _op("gelu", _gelu_impl, _like, _gelu_setup, _gelu_backward)
_softmax = _op("softmax", _softmax_impl, _like, _softmax_setup, _softmax_backward)
_rms_norm = _op("rms_norm", _rms_norm_impl, _like, _rms_norm_setup, _rms_norm_backward)
_linear = _op("linear", _linear_impl, _gemm_like, _linear_setup, _linear_backward)
_matmul = _op("matmul", _matmul_impl, _gemm_like, _matmul_setup, _matmul_backward)
_mlp_forward = _op("mlp_forward", _mlp_forward_impl, _like)


# ---- the public functions -------------------------------------------------------------------

def gelu(x, approximate="none", *, variant="auto"):
    """GeLU, as torch.nn.functional.gelu: approximate "none" (erf) or "tanh"."""
    _tensor(x, "x", "gelu")
    if approximate not in GELU_FORMS:
        raise ValueError(f"kernlab.gelu: approximate must be 'none' or 'tanh', not "
                         f"{approximate!r}")
    return _gelu(x, approximate, _variant(variant, "gelu"))


def _dim(x, dim, fn):
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"kernlab.{fn}: dim must be an int, not {type(dim).__name__}")
    if x.dim() == 0 or not -x.dim() <= dim < x.dim():
        raise ValueError(f"kernlab.{fn}: dim {dim} is out of range for a {x.dim()}-d x")
    return dim % x.dim()


def softmax(x, dim=-1, *, variant="auto"):
    """softmax over `dim`, as torch.softmax."""
    _tensor(x, "x", "softmax")
    return _softmax(x, _dim(x, dim, "softmax"), False, _variant(variant, "softmax"))


def log_softmax(x, dim=-1, *, variant="auto"):
    """log_softmax over `dim`, as torch.log_softmax."""
    _tensor(x, "x", "log_softmax")
    return _softmax(x, _dim(x, dim, "log_softmax"), True, _variant(variant, "log_softmax"))


def rms_norm(x, weight, eps=None, *, variant="auto"):
    """RMSNorm over the last dimension, as torch.nn.functional.rms_norm(x, (D,), weight, eps);
    eps None is torch.finfo(x.dtype).eps, as torch's."""
    _tensor(x, "x", "rms_norm")
    _tensor(weight, "weight", "rms_norm")
    _same("rms_norm", ("x", x), weight=weight)
    if x.dim() == 0 or tuple(weight.shape) != (x.shape[-1],):
        raise ValueError(f"kernlab.rms_norm: weight has shape {tuple(weight.shape)}; x's last "
                         f"dimension is {tuple(x.shape[-1:])}")
    if eps is None:
        eps = torch.finfo(x.dtype).eps
    if not isinstance(eps, (int, float)) or not eps >= 0:
        raise ValueError(f"kernlab.rms_norm: eps must be a number >= 0, not {eps!r}")
    return _rms_norm(x, weight, float(eps), _variant(variant, "rms_norm"))


def linear(x, weight, bias=None, activation="none", *, variant="auto"):
    """act(x · weightᵀ + bias), as torch.nn.functional.linear followed by the activation:
    "none", "gelu-tanh" or "gelu-erf", fused in the GEMM's epilogue. x is [..., K], weight
    [N, K], bias [N] or None."""
    _tensor(x, "x", "linear")
    _tensor(weight, "weight", "linear")
    _same("linear", ("x", x), weight=weight)
    if activation not in ACTIVATIONS:
        raise ValueError(f"kernlab.linear: activation must be one of {', '.join(ACTIVATIONS)}, "
                         f"not {activation!r}")
    if x.dim() == 0 or weight.dim() != 2 or weight.shape[1] != x.shape[-1]:
        raise ValueError(f"kernlab.linear: weight has shape {tuple(weight.shape)}; it must be "
                         f"[N, {x.shape[-1] if x.dim() else '?'}] for x of shape "
                         f"{tuple(x.shape)}")
    variant = _variant(variant, "linear")
    # No bias and no activation is kernlab's matmul (CUDA only: the CPU tier is linear's).
    if bias is None and activation == "none" and x.device.type == "cuda":
        return _matmul(x, weight, variant)
    if bias is None:
        bias = x.new_zeros(weight.shape[0])
    _tensor(bias, "bias", "linear")
    _same("linear", ("x", x), bias=bias)
    if tuple(bias.shape) != (weight.shape[0],):
        raise ValueError(f"kernlab.linear: bias has shape {tuple(bias.shape)}; weight has "
                         f"{weight.shape[0]} rows")
    return _linear(x, weight, bias, activation, variant)


def mlp_forward(x, weights, biases, gelu="none", *, variant="auto"):
    """The lecture's MLP forward: for each layer, x = gelu(x · Wᵀ + b), with x [B, D], each W
    [D, D] and b [D]; gelu "none" (erf, F.gelu's default) or "tanh"."""
    _tensor(x, "x", "mlp_forward")
    if x.dim() != 2:
        raise ValueError(f"kernlab.mlp_forward: x must be [B, D], not {tuple(x.shape)}")
    weights, biases = list(weights), list(biases)
    if not weights or len(weights) != len(biases):
        raise ValueError(f"kernlab.mlp_forward: {len(weights)} weights and {len(biases)} "
                         "biases; one of each a layer, at least one layer")
    d = x.shape[1]
    for i, (w, b) in enumerate(zip(weights, biases)):
        _tensor(w, f"weights[{i}]", "mlp_forward")
        _tensor(b, f"biases[{i}]", "mlp_forward")
        _same("mlp_forward", ("x", x), **{f"weights[{i}]": w, f"biases[{i}]": b})
        if tuple(w.shape) != (d, d) or tuple(b.shape) != (d,):
            raise ValueError(f"kernlab.mlp_forward: layer {i} has weights {tuple(w.shape)} and "
                             f"biases {tuple(b.shape)}; they must be ({d}, {d}) and ({d},)")
    if gelu not in GELU_FORMS:
        raise ValueError(f"kernlab.mlp_forward: gelu must be 'none' or 'tanh', not {gelu!r}")
    return _mlp_forward(x, weights, biases, gelu, _variant(variant, "mlp_forward"))
