"""The functions on torch tensors and their torch custom ops (`torch.ops.kernlab.*`).

Each public function checks its arguments (a TypeError or ValueError naming the argument),
then calls its custom op. The op allocates the output, hands every tensor to the extension
module by address, shape and strides, on torch's current stream of the tensors' device (CUDA)
or to the CPU tier. Layouts, per op:

- gelu, rms_norm, linear, mlp_forward: a non-contiguous input is copied contiguous first;
- softmax, log_softmax: over `dim` (any dimension; a dimension other than the last is moved
  last, and the result moved back, through a contiguous copy).

Backward: gelu, softmax, log_softmax, rms_norm, linear (and matmul) have autograd formulas
written with torch's own ops (kernlab has no backward kernels as ops yet; linear's recomputes
its pre-activation); mlp_forward has none.
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


def _row_major(shape):
    strides, n = [], 1
    for d in reversed(shape):
        strides.append(n)
        n *= d
    return strides[::-1]


def _arg(t):
    """(address, bytes from it to the end of the storage, shape, strides, dtype). A tensor
    torch calls contiguous goes with row-major strides: torch leaves any stride on a dimension
    of size 1 (a batch-1 slice), which kernlab would read as a gap."""
    es = t.element_size()
    left = t.untyped_storage().nbytes() - t.storage_offset() * es
    strides = _row_major(t.shape) if t.is_contiguous() else list(t.stride())
    return (t.data_ptr(), left, list(t.shape), strides, _DTYPES[t.dtype])


def _run(op, variant, flags, inputs, out):
    if out.numel() == 0:  # nothing to compute (torch returns the empty result too)
        return out
    dev = out.device
    if dev.type == "cuda":
        index = dev.index if dev.index is not None else torch.cuda.current_device()
        stream = torch.cuda.current_stream(dev).cuda_stream
    else:
        index, stream = -1, 0
    _kernlab.run(op, variant, [(k, str(v)) for k, v in flags], [_arg(t) for t in inputs],
                 _arg(out), index, stream)
    return out


# ---- the custom ops -------------------------------------------------------------------------

@torch.library.custom_op("kernlab::gelu", mutates_args=())
def _gelu(x: torch.Tensor, approximate: str, variant: str) -> torch.Tensor:
    x = x.contiguous()
    form = "tanh" if approximate == "tanh" else "erf"
    return _run("gelu", variant, [("gelu", form)], [x], torch.empty_like(x))


@_gelu.register_fake
def _(x, approximate, variant):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("kernlab::softmax", mutates_args=())
def _softmax(x: torch.Tensor, dim: int, log: bool, variant: str) -> torch.Tensor:
    last = dim in (-1, x.dim() - 1)
    xs = x.contiguous() if last else x.movedim(dim, -1).contiguous()
    y = torch.empty_like(xs)
    flags = [("log-softmax", "true")] if log else []
    _run("softmax", variant, flags, [xs], y)
    return y if last else y.movedim(-1, dim).contiguous()


@_softmax.register_fake
def _(x, dim, log, variant):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("kernlab::rms_norm", mutates_args=())
def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float, variant: str) -> torch.Tensor:
    x = x.contiguous()
    return _run("rmsnorm", variant, [("eps", repr(float(eps)))], [x, weight.contiguous()],
                torch.empty_like(x))


@_rms_norm.register_fake
def _(x, weight, eps, variant):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


@torch.library.custom_op("kernlab::linear", mutates_args=())
def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, activation: str,
            variant: str) -> torch.Tensor:
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
    _run("linear", variant, [("activation", activation)],
         [x2, weight.contiguous(), bias.contiguous()], y)
    return y.reshape(*lead, weight.shape[0])


@_linear.register_fake
def _(x, weight, bias, activation, variant):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@torch.library.custom_op("kernlab::matmul", mutates_args=())
def _matmul(x: torch.Tensor, weight: torch.Tensor, variant: str) -> torch.Tensor:
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1]).contiguous()
    y = torch.empty((x2.shape[0], weight.shape[0]), dtype=x.dtype, device=x.device)
    _run("matmul", variant, [], [x2, weight.contiguous()], y)
    return y.reshape(*lead, weight.shape[0])


@_matmul.register_fake
def _(x, weight, variant):
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


@torch.library.custom_op("kernlab::mlp_forward", mutates_args=())
def _mlp_forward(x: torch.Tensor, weights: list[torch.Tensor], biases: list[torch.Tensor],
                 gelu: str, variant: str) -> torch.Tensor:
    x = x.contiguous()
    flags = [("layers", len(weights)), ("mode", "forward"),
             ("gelu", "tanh" if gelu == "tanh" else "erf")]
    ins = [x] + [w.contiguous() for w in weights] + [b.contiguous() for b in biases]
    return _run("mlp", variant, flags, ins, torch.empty_like(x))


@_mlp_forward.register_fake
def _(x, weights, biases, gelu, variant):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


# ---- autograd (torch's own formulas; see the module's docstring) ----------------------------

def _gelu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])
    ctx.approximate = inputs[1]


def _gelu_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    with torch.enable_grad():
        xd = x.detach().requires_grad_()
        y = torch.nn.functional.gelu(xd, approximate="tanh" if ctx.approximate == "tanh"
                                     else "none")
        (g,) = torch.autograd.grad(y, xd, grad)
    return g, None, None


_gelu.register_autograd(_gelu_backward, setup_context=_gelu_setup)


def _softmax_setup(ctx, inputs, output):
    ctx.save_for_backward(output)
    ctx.dim, ctx.log = inputs[1], inputs[2]


def _softmax_backward(ctx, grad):
    (y,) = ctx.saved_tensors
    if ctx.log:
        g = grad - torch.exp(y) * grad.sum(dim=ctx.dim, keepdim=True)
    else:
        g = y * (grad - (grad * y).sum(dim=ctx.dim, keepdim=True))
    return g, None, None, None


_softmax.register_autograd(_softmax_backward, setup_context=_softmax_setup)


def _rms_norm_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])
    ctx.eps = inputs[2]


def _rms_norm_backward(ctx, grad):
    x, w = ctx.saved_tensors
    with torch.enable_grad():
        xd = x.detach().requires_grad_(ctx.needs_input_grad[0])
        wd = w.detach().requires_grad_(ctx.needs_input_grad[1])
        y = torch.nn.functional.rms_norm(xd, (x.shape[-1],), wd, ctx.eps)
        wanted = [t for t in (xd, wd) if t.requires_grad]
        got = iter(torch.autograd.grad(y, wanted, grad))
    gx = next(got) if ctx.needs_input_grad[0] else None
    gw = next(got) if ctx.needs_input_grad[1] else None
    return gx, gw, None, None


_rms_norm.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


def _act(z, activation):
    if activation == "none":
        return z
    return torch.nn.functional.gelu(z, approximate="tanh" if activation == "gelu-tanh"
                                    else "none")


def _linear_setup(ctx, inputs, output):
    x, w, b, activation, _ = inputs
    ctx.save_for_backward(x, w, b)
    ctx.activation = activation


def _linear_backward(ctx, grad):
    x, w, b = ctx.saved_tensors
    with torch.enable_grad():
        leaves = [t.detach().requires_grad_(need)
                  for t, need in zip((x, w, b), ctx.needs_input_grad[:3])]
        y = _act(torch.nn.functional.linear(*leaves), ctx.activation)
        wanted = [t for t in leaves if t.requires_grad]
        got = iter(torch.autograd.grad(y, wanted, grad))
    return tuple(next(got) if t.requires_grad else None for t in leaves) + (None, None)


_linear.register_autograd(_linear_backward, setup_context=_linear_setup)


def _matmul_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0], inputs[1])


def _matmul_backward(ctx, grad):
    x, w = ctx.saved_tensors
    gx = grad @ w if ctx.needs_input_grad[0] else None
    gw = (grad.reshape(-1, grad.shape[-1]).t() @ x.reshape(-1, x.shape[-1])
          if ctx.needs_input_grad[1] else None)
    return gx, gw, None


_matmul.register_autograd(_matmul_backward, setup_context=_matmul_setup)


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
