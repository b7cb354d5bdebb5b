"""mlp: the CS336 lecture's MLP, kernlab's `mlp` op (src/ops/mlp.rs): `L` layers of
x = gelu(linear(x)), each nn.Linear(D, D) with its bias, the GeLU F.gelu(x, approximate=
'none' | 'tanh') (--gelu erf | tanh; erf, F.gelu's default, where not given), on a batch x of
shape BxD. kernlab passes `--layers L --mode forward|train --gelu erf|tanh --steps N` and its
shapes as BxD.

What one call (the call timed) runs:
  forward  --steps N forward passes y = model(x). The parameters do not require grad: no
           autograd graph, no activations kept (what kernlab's forward computes).
  train    N training steps, each model.zero_grad(set_to_none=True) and x.grad = None (the
           gradients are written, not accumulated, as kernlab writes them), loss =
           model(x).mean(), loss.backward(); x requires grad, so dX is computed too.
           Parameters in the dtype: no autocast, no loss scaling. f16 training is not run: its
           records are 'unsupported', as kernlab refuses it (`F16_TRAIN`).

Inputs from --seed (`Bench.generator`), drawn in float64 and rounded to the dtype, in kernlab's
order: x ~ N(0, 1) [B, D], then each W [D, D], then each b [D], W and b ~ U(-1/sqrt(D),
1/sqrt(D)) (nn.Linear's default init). f32 runs exact f32: TF32 off, as for every op here.

Variants, in this order (one model a shape, its rounded weights shared by all three):
  torch_native      the eager PyTorch model (nn.Linear, F.gelu): cuBLAS and one kernel a
                    primitive, autograd's kernels in train mode
  torch_compile     torch.compile in --compile-mode (default "default"), dynamic=False
  torch_compile_ro  torch.compile(mode="reduce-overhead"): Inductor's kernels replayed as CUDA
                    graphs, torch.compiler.cudagraph_mark_step_begin() before every pass or step
In train mode the compiled variants compile the forward and the mean as one function
(`model(x).mean()`): AOTAutograd traces the backward with it and Inductor compiles both graphs;
loss.backward() outside runs that compiled backward, and zero_grad (set_to_none: no kernel)
stays outside. That is what compiling the whole step function would give too: Dynamo breaks
the graph at loss.backward() and compiles the same two graphs.

Validation, before timing, against the float64 model: the same rounded weights in float64 on
the GPU, each layer's made as it is reached (`forward_reference`, `train_reference`).
  forward  the output's sampled rows (all of a batch up to 16, else 16: the first, the last and
           seeded others, `checking.sample_rows`) against the float64 forward of those rows
  train    dX's sampled rows, and db and dW (every row) of the first and the last layer,
           against the float64 model's gradients (its forward keeping each layer's input, then
           each layer run again under autograd, the last first)
The measure is kernlab's for the op (`Compare::GroupsL2`; `checking.group_rel_l2_array`): a
row's L2 error over the larger of its group's RMS row norm and sqrt(D) x the dtype's smallest
normal / the tolerance (errors the size of the format's underflow pass: a deep layer's
gradients fall below the normal range), the max over rows. Groups: each forward row its own;
dX, each db and each dW one group each. The tolerance is the dtype's times (1 + sqrt(L)), to
train (1 + sqrt(2L)): kernlab's for the op (`mlp_tolerance`). NaN never passes: the whole output, and every
gradient of every layer, must be finite. A compiled variant is called twice first (its
compile; for CUDA graphs their warm-up and capture) and its third call is the one checked.

Counts (kernlab's `flops` and `min_bytes` for the op): FLOPs a call 2*B*D*D*L a forward pass,
3x that a training step, times N (bias, GeLU and mean not counted); bytes a call at least
(2*B*D + L*(D*D + D)) * size * N forward (x in, the weights and biases read, y out), (2*B*D +
2*L*(D*D + D)) * size * N train (x in and dX out, the weights and biases read and their
gradients written).

Memory: `peak_mem_bytes` is torch.cuda.max_memory_allocated over one untimed call of a variant
right after its validation (reset_peak_memory_stats first), every tensor allocated at the time
counted: the model's weights and x (`model_bytes`), the call's activations, gradients and
workspaces. `peak_reserved_bytes` is max_memory_reserved over the same call after empty_cache:
the allocator's segments, the CUDA graphs' private pool of torch_compile_ro included (its
replayed intermediates live in that pool and are not counted as allocated). The variants are
validated and measured in the order above, so there is no CUDA graph pool yet when the others
are measured; the references wait on the host meanwhile. do_bench's loop is not what is
measured: its 256 MB L2 flush buffer would count.

Timing as the row ops': do_bench, --repeat rounds taking the variants in turn, the host and
settled checks. --rotate is taken but not applied: every call uses the one model and x (the
compiled variants are specialised to that model's parameters; copies of it would each be
compiled anew), and the records' notes say so.
"""

import math

from ..checking import group_floor, group_rel_l2_array, sample_rows
from ..common import (COMPILE_RO, DTYPES, MIN_NORMAL, add_note, first_line, is_int, is_number,
                      parse_shapes)
from .base import ERROR_METRICS, OpSpec
from .gelu import GELU_FORMS

MLP_MODES = ("forward", "train")
DEFAULT_LAYERS = 64   # kernlab's DEFAULT_LAYERS: the lecture's profiled model
SAMPLE_ROWS = 16      # rows of the output (forward) or of dX (train) checked
COMPILE_WARM_CALLS = 2  # a compiled variant's calls before the checked one
MLP_VARIANTS = ("torch_native", "torch_compile", COMPILE_RO)
# Keys an mlp record has besides the contract's RECORD_KEYS.
MLP_RECORD_KEYS = ("layers", "mode", "steps", "flops", "tflops", "validated_rows",
                   "peak_mem_bytes", "peak_reserved_bytes")
# kernlab's refusal (src/ops/mlp.rs, check_call), the note of an f16 train record.
F16_TRAIN = ("training in f16 needs loss scaling: the mean's gradient 1/(B*D) and the gradients "
             "after it fall below f16's smallest normal (6.1e-5) and lose their digits; train "
             "in bf16 or f32")


# -- the pure parts: options, counts, tolerance ---------------------------------------------------
def mlp_opts(layers=None, mode=None, steps=None):
    """{layers, mode, steps} with kernlab's defaults where None: 64 layers, 1 step, forward
    (train where steps is given, as kernlab's --mode)."""
    return {"layers": DEFAULT_LAYERS if layers is None else int(layers),
            "mode": mode if mode is not None else ("forward" if steps is None else "train"),
            "steps": 1 if steps is None else int(steps)}


def _opts(opts):
    return mlp_opts(**(opts or {}))


def mlp_flops(b, d, layers, mode, steps):
    """2*B*D*D*L a forward pass (one multiply-add a weight a row), 3x that a training step
    (dX and dW as well), times the steps: kernlab's count."""
    gemm = 2 * int(b) * int(d) * int(d) * int(layers)
    return (gemm if mode == "forward" else 3 * gemm) * int(steps)


def mlp_bytes(b, d, dtype, layers, mode, steps):
    """The least traffic of a call (kernlab's min_bytes): a forward pass reads x, the weights
    and biases and writes y; a training step reads x and the weights and biases and writes dX
    and the weights' and biases' gradients; times the steps."""
    b, d, layers = int(b), int(d), int(layers)
    weights = layers * (d * d + d)
    per_step = 2 * b * d + (weights if mode == "forward" else 2 * weights)
    return per_step * DTYPES[dtype][1] * int(steps)


def mlp_tolerance(dtype, layers, mode="forward"):
    """The dtype's tolerance times (1 + sqrt(L)) for the forward, (1 + sqrt(2L)) for a training
    step: kernlab's for the op (each layer rounds its activations to the dtype; a step's
    gradients pass the forward's and the backward's roundings)."""
    passes = int(layers) * (2 if mode == "train" else 1)
    return DTYPES[dtype][2] * (1.0 + math.sqrt(passes))


def model_bytes(b, d, dtype, layers):
    """The bytes of the model's weights and biases and of x: what every call finds resident."""
    b, d, layers = int(b), int(d), int(layers)
    return (b * d + layers * (d * d + d)) * DTYPES[dtype][1]


def checked_layers(layers):
    """The layers whose db and dW a training step is checked on: the first and the last."""
    return sorted({0, int(layers) - 1})


def validated_row_count(b, d, layers, mode):
    """The rows a check compares: the sampled output rows (forward); the sampled dX rows, then
    each checked layer's db (one row) and dW (D rows) (train)."""
    rows = min(int(b), SAMPLE_ROWS)
    if mode == "forward":
        return rows
    return rows + len(checked_layers(layers)) * (1 + int(d))


def arg_error(layers, steps):
    """The message for --layers or --steps out of range (None where both are whole numbers
    >= 1)."""
    for flag, v in (("--layers", layers), ("--steps", steps)):
        if not is_int(v) or v < 1:
            return f"{flag} must be a whole number >= 1 (got {v!r})"
    return None


def mib(n):
    """Bytes in words: '512.0 MiB', '1.50 GiB'."""
    return f"{n / 2 ** 30:.2f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.1f} MiB"


# -- on the GPU (device-agnostic: the unit tests run these on the CPU where torch is) --------------
def gelu_approx(form):
    """F.gelu's `approximate` for --gelu."""
    return "tanh" if form == "tanh" else "none"


def make_model(torch, layers, d, dtype, device, form):
    """The lecture's MLP: `layers` nn.Linear(d, d) in an nn.ModuleList, each followed by
    F.gelu; parameters made uninitialised (nn.utils.skip_init), for `fill_inputs`."""
    nn, F = torch.nn, torch.nn.functional
    approx = gelu_approx(form)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList(
                nn.utils.skip_init(nn.Linear, d, d, device=device, dtype=dtype)
                for _ in range(layers))

        def forward(self, x):
            for layer in self.layers:
                x = F.gelu(layer(x), approximate=approx)
            return x

    return MLP()


def fill_inputs(torch, model, shape, generator, rounded, checked):
    """x [B, D] ~ N(0, 1), then each layer's weight, then each layer's bias ~ U(-1/sqrt(D),
    1/sqrt(D)), drawn in float64 from `generator` on the model's device and rounded to its
    dtype (`rounded`), each `checked` (finite, not all zero); the weights and biases copied
    into the model. Returns x."""
    b, d = (int(v) for v in shape)
    dev = model.layers[0].weight.device
    f64 = torch.float64
    x64 = torch.randn((b, d), generator=generator, device=dev, dtype=f64)
    x = checked(rounded(x64))
    del x64
    bound = 1.0 / math.sqrt(d)

    def uniform(dims):
        t = torch.rand(dims, generator=generator, device=dev, dtype=f64)
        return checked(rounded(t.mul_(2.0 * bound).sub_(bound)))

    with torch.no_grad():
        for lin in model.layers:
            lin.weight.copy_(uniform((d, d)))
        for lin in model.layers:
            lin.bias.copy_(uniform((d,)))
    return x


def model_params(model):
    """([W_0 ... W_{L-1}], [b_0 ... b_{L-1}]), detached."""
    return ([lin.weight.detach() for lin in model.layers],
            [lin.bias.detach() for lin in model.layers])


def forward_reference(torch, x_rows, weights, biases, form):
    """The float64 forward of the rows `x_rows` (any dtype): each layer's weights and bias
    taken to float64 as it is reached."""
    F = torch.nn.functional
    f64 = torch.float64
    approx = gelu_approx(form)
    with torch.no_grad():
        h = x_rows.detach().to(f64)
        for w, b in zip(weights, biases):
            h = F.gelu(F.linear(h, w.detach().to(f64), b.detach().to(f64)), approximate=approx)
    return h


def train_reference(torch, x, weights, biases, form, idx, layers_checked):
    """The float64 gradients of mean(model(x)) over the whole batch x: {"dx": dX's rows `idx`
    (a long tensor), "db": {layer: db}, "dw": {layer: dW}} for the layers in
    `layers_checked`. The forward keeps each layer's input (float64, no graph); then each
    layer, the last first, is run again under autograd from its input and the gradient of its
    output (mean's: 1/(B*D) everywhere, for the last), giving its input's gradient and, where
    checked, its weight's and bias's: the float64 model's autograd, one layer held at a
    time."""
    F = torch.nn.functional
    f64 = torch.float64
    approx = gelu_approx(form)
    b, d = x.shape
    inputs = []
    with torch.no_grad():
        h = x.detach().to(f64)
        for w, bias in zip(weights, biases):
            inputs.append(h)
            h = F.gelu(F.linear(h, w.detach().to(f64), bias.detach().to(f64)), approximate=approx)
    del h
    grad = torch.full((b, d), 1.0 / (b * d), dtype=f64, device=x.device)
    out = {"db": {}, "dw": {}}
    for layer in reversed(range(len(weights))):
        keep = layer in layers_checked
        h = inputs[layer].requires_grad_(True)
        inputs[layer] = None
        w = weights[layer].detach().to(f64).requires_grad_(keep)
        bias = biases[layer].detach().to(f64).requires_grad_(keep)
        with torch.enable_grad():
            y = F.gelu(F.linear(h, w, bias), approximate=approx)
            grads = torch.autograd.grad(y, [h, w, bias] if keep else [h], grad)
        grad = grads[0]
        if keep:
            out["dw"][layer], out["db"][layer] = grads[1], grads[2]
        del y, grads, h, w, bias
    out["dx"] = grad.index_select(0, idx)
    return out


def forward_call(fwd, steps, mark=None, sync_each_step=False):
    """A call: `steps` forward passes y = fwd(x) (`mark()` before each: CUDA graphs' step
    begins; with `sync_each_step`, one value of y read back after each, as kernlab's
    --sync-each-step); returns the last y."""
    def call(x):
        y = None
        for _ in range(steps):
            y = None  # the last pass's output is not kept through the next
            if mark is not None:
                mark()
            y = fwd(x)
            if sync_each_step:
                y[0, 0].item()
        return y

    return call


def train_call(model, loss_fn, steps, mark=None, sync_each_step=False):
    """A call: `steps` training steps, each zero_grad(set_to_none=True) and x.grad = None (the
    gradients written, not accumulated), loss = loss_fn(x) (model(x).mean()), loss.backward()
    (`mark()` first: CUDA graphs' step begins; with `sync_each_step`, loss.item() after each,
    the lecture's print(loss.item())); returns the last loss."""
    def call(x):
        loss = None
        for _ in range(steps):
            if mark is not None:
                mark()
            model.zero_grad(set_to_none=True)
            x.grad = None
            loss = loss_fn(x)
            loss.backward()
            if sync_each_step:
                loss.item()
        return loss

    return call


def eager_fns(model):
    """torch_native's (forward, loss) of x."""
    def eager_forward(x):
        return model(x)

    def eager_loss(x):
        return model(x).mean()

    return eager_forward, eager_loss


# torch.compile keeps what it compiled with the code object of the function it was handed, so
# each compiled variant is handed functions of its own (two compiles of one function in two
# modes could otherwise find each other's code).
def compile_fns(model):
    """torch_compile's (forward, loss) of x, to be compiled."""
    def compiled_forward(x):
        return model(x)

    def compiled_loss(x):
        return model(x).mean()

    return compiled_forward, compiled_loss


def compile_ro_fns(model):
    """torch_compile_ro's (forward, loss) of x, to be compiled."""
    def compiled_ro_forward(x):
        return model(x)

    def compiled_ro_loss(x):
        return model(x).mean()

    return compiled_ro_forward, compiled_ro_loss


def cudagraph_mark(torch):
    """torch.compiler.cudagraph_mark_step_begin (or its older home), None where this torch has
    neither."""
    f = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    if f is None:
        try:
            from torch._inductor.cudagraph_trees import mark_step_begin as f
        except Exception:
            f = None
    return f


def cudagraph_skips(torch):
    """Inductor's count of graphs it ran without CUDA graphs (None where it keeps none)."""
    try:
        from torch._dynamo.utils import counters
        return int(counters["inductor"]["cudagraph_skips"])
    except Exception:
        return None


class Mlp(OpSpec):
    name = "mlp"
    ndim = 2
    shape_keys = "[B, D]"
    rows = False      # no --row-stride (kernlab refuses it too)
    rounds = True     # --repeat rounds, as the row ops
    variants = MLP_VARIANTS
    statuses = ("ok", "failed", "error", "unsupported")
    record_keys = MLP_RECORD_KEYS
    summary = ("--layers L of x = gelu(nn.Linear(D, D)(x)), --mode forward or train (zero_grad, "
               "mean, backward), --steps N a call, BxD")

    def parse_shapes(self, text):
        return parse_shapes(text, 2, form="BxD (batch x width; the depth is --layers)",
                            example="1024x2048,4096x512")

    def resolve_variants(self, asked):
        """(variants to run, dropped), those run in this op's order: validated and measured
        torch_native, torch_compile, then torch_compile_ro, whose CUDA graph pool stays."""
        return ([v for v in self.variants if v in asked],
                [v for v in asked if v not in self.variants])

    def missing_reason(self, variant):
        if variant == "torch_manual":
            return "the eager model is torch_native"
        return None

    def opts(self, args):
        return {"layers": args.layers, "mode": args.mode, "steps": args.steps}

    def bytes(self, dtype, shape, opts=None):
        o = _opts(opts)
        b, d = shape
        return mlp_bytes(b, d, dtype, o["layers"], o["mode"], o["steps"])

    def flops(self, shape, opts=None):
        o = _opts(opts)
        b, d = shape
        return mlp_flops(b, d, o["layers"], o["mode"], o["steps"])

    def tolerance(self, dtype, opts=None):
        o = _opts(opts)
        return mlp_tolerance(dtype, o["layers"], o["mode"])

    def normalise_args(self, args):
        """--gelu erf, --layers 64, --steps 1 and --mode forward (train where --steps is given)
        where not given, as kernlab's."""
        args.activation = None
        args.eps = None
        if args.gelu is None:
            args.gelu = "erf"
        o = mlp_opts(getattr(args, "layers", None), getattr(args, "mode", None),
                     getattr(args, "steps", None))
        args.layers, args.mode, args.steps = o["layers"], o["mode"], o["steps"]

    def arg_error(self, args):
        return arg_error(args.layers, args.steps)

    @staticmethod
    def _form(layers, mode, gelu, steps):
        """kernlab's words for the parameters (MlpParams::form)."""
        more = f", {steps} steps" if steps > 1 else ""
        return f"{layers} layers, {mode}, gelu {gelu}{more}"

    def form(self, args):
        return self._form(args.layers, args.mode, args.gelu, args.steps)

    def record_form(self, r):
        try:
            return self._form(r["layers"], r["mode"], r["gelu"], r["steps"])
        except (KeyError, TypeError):
            return None

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        o = _opts(opts)
        b, d = shape
        return {"gelu": gelu if gelu is not None else "erf", "activation": None, "bias": None,
                "flops": mlp_flops(b, d, o["layers"], o["mode"], o["steps"]),
                "error_metric": ERROR_METRICS["groups"],
                "layers": o["layers"], "mode": o["mode"], "steps": o["steps"],
                "peak_mem_bytes": None, "peak_reserved_bytes": None}

    def check_gelu(self, r, need, where):
        need(r["gelu"] in GELU_FORMS, f"{where}: mlp without a tanh/erf GeLU")

    def check_record(self, r, need, where):
        layers, mode, steps = r["layers"], r["mode"], r["steps"]
        need(is_int(layers) and layers >= 1, f"{where}: 'layers' is not a whole number >= 1")
        need(mode in MLP_MODES, f"{where}: 'mode' is neither forward nor train")
        need(is_int(steps) and steps >= 1, f"{where}: 'steps' is not a whole number >= 1")
        b, d = r["shape"]
        dt = r["dtype"]
        need(r["flops"] == mlp_flops(b, d, layers, mode, steps),
             f"{where}: flops is not 2*B*D*D*L (x3 to train) x steps")
        need(r["bytes"] == mlp_bytes(b, d, dt, layers, mode, steps),
             f"{where}: bytes is not kernlab's least traffic of the MLP")
        need(r.get("tolerance") == mlp_tolerance(dt, layers, mode),
             f"{where}: tolerance is not the dtype's x (1 + sqrt(L)), sqrt(2L) to train")
        need(r["activation"] is None and r["bias"] is None,
             f"{where}: mlp with linear's activation or bias keys set")
        need(r["error_metric"] == ERROR_METRICS["groups"], f"{where}: bad error_metric")
        f16_train = dt == "f16" and mode == "train"
        need(r["status"] != "unsupported" or f16_train,
             f"{where}: unsupported, but not f16 training")
        need(not (f16_train and r["status"] == "ok"), f"{where}: f16 training timed")
        t, vr = r["tflops"], r["validated_rows"]
        need(t is None or (is_number(t) and math.isfinite(t) and t > 0),
             f"{where}: 'tflops' is neither a positive number nor null")
        need(vr is None or (is_int(vr) and vr > 0), f"{where}: bad validated_rows")
        for k in ("peak_mem_bytes", "peak_reserved_bytes"):
            v = r[k]
            need(v is None or (is_int(v) and v > 0 and r["status"] == "ok"),
                 f"{where}: '{k}' is neither null nor a positive count on an ok record")
        if r["status"] == "ok":
            need(t is not None, f"{where}: ok but 'tflops' is null")
            need(vr is not None, f"{where}: ok but 'validated_rows' is null")
        else:
            need(t is None, f"{where}: {r['status']} but 'tflops' set")

    def doc_fields(self, args):
        return {"layers": args.layers, "mode": args.mode, "gelu": args.gelu, "steps": args.steps,
                "mlp_validation": (
                    "kernlab's GroupsL2: each checked row's L2 error over the larger of its "
                    "group's RMS row norm and sqrt(D) x the dtype's smallest normal / the "
                    "tolerance, max over rows, against the float64 model (the same rounded "
                    f"weights); forward: {SAMPLE_ROWS} sampled output rows (all up to "
                    f"{SAMPLE_ROWS}), each its own group; train: {SAMPLE_ROWS} sampled rows of "
                    "dX, and db and every row of dW of the first and last layer (each tensor "
                    "one group); tolerance the dtype's x (1 + sqrt(L)); everything written "
                    "must be finite"),
                "mlp_compile": (
                    "torch_compile: torch.compile(--compile-mode); torch_compile_ro: "
                    "mode='reduce-overhead' (CUDA graphs); train: forward + mean compiled as "
                    "one function (AOTAutograd compiles its backward), loss.backward() and "
                    "zero_grad(set_to_none=True) outside")}

    # -- on the GPU ---------------------------------------------------------------------------
    def variant_call(self, bench, variant, model):
        """(call(x), notes, calls before the checked one) of `variant` on `model`."""
        torch, a = bench.torch, bench.args
        train = a.mode == "train"
        notes = []
        mark = None
        if variant == "torch_native":
            fwd, loss = eager_fns(model)
            warm = 0
        else:
            ro = variant == COMPILE_RO
            fwd, loss = (compile_ro_fns if ro else compile_fns)(model)
            mode = "reduce-overhead" if ro else a.compile_mode
            fn = bench.compile(loss if train else fwd, mode=mode, reset=False)
            if train:
                loss = fn
            else:
                fwd = fn
            warm = COMPILE_WARM_CALLS
            if ro:
                mark = cudagraph_mark(torch)
                if mark is None:
                    notes.append("this torch has no cudagraph_mark_step_begin: steps not marked")
            what = ("forward + mean compiled as one function (AOTAutograd compiles its "
                    "backward); zero_grad and loss.backward() outside" if train else
                    "the model compiled")
            notes.append(f"torch.compile mode {mode!r}: {what}; compiled once for this shape "
                         f"(dynamic=False) before timing")
        sync = bool(getattr(a, "sync_each_step", False))
        call = (train_call(model, loss, a.steps, mark, sync) if train
                else forward_call(fwd, a.steps, mark, sync))
        return call, notes, warm

    def reference(self, bench, model, x, idx):
        """The float64 reference the checks need, on the host: {"y": the sampled rows'
        forward} or `train_reference`'s gradients."""
        torch, a = bench.torch, bench.args
        ws, bs = model_params(model)
        if a.mode == "forward":
            ref = {"y": forward_reference(torch, x.index_select(0, idx), ws, bs, a.gelu)}
        else:
            ref = train_reference(torch, x, ws, bs, a.gelu, idx, checked_layers(a.layers))
        host = {k: (v.cpu() if not isinstance(v, dict) else {i: t.cpu() for i, t in v.items()})
                for k, v in ref.items()}
        del ref
        return host

    def check(self, bench, call, model, x, idx, ref, warm, floor):
        """Run `warm` calls, then the checked one (on a poisoned allocator); (max error, the
        worst piece's name, mismatches, non-finite elements written)."""
        torch, a = bench.torch, bench.args
        b, d = x.shape
        dev = bench.dev
        f64 = torch.float64
        for _ in range(warm):
            call(x)
        torch.cuda.synchronize()
        bench.poison_allocator(None, nbytes=max(b, d) * d * x.element_size())
        out = call(x)
        torch.cuda.synchronize()
        pieces = []  # (name, out rows, ref rows on the host, one group)
        if a.mode == "forward":
            if tuple(out.shape) != (b, d) or out.dtype != x.dtype:
                raise RuntimeError(f"output is {tuple(out.shape)} {out.dtype}, "
                                   f"want {(b, d)} {x.dtype}")
            written = [out]
            pieces.append(("output", out.index_select(0, idx), ref["y"], False))
        else:
            grads = {"dX": x.grad}
            for i, lin in enumerate(model.layers):
                grads[f"db_{i}"], grads[f"dW_{i}"] = lin.bias.grad, lin.weight.grad
            none = [k for k, g in grads.items() if g is None]
            if none:
                raise RuntimeError(f"no gradient for {', '.join(none[:4])}"
                                   + (f" and {len(none) - 4} more" if len(none) > 4 else ""))
            written = list(grads.values())
            pieces.append(("dX", grads["dX"].index_select(0, idx), ref["dx"], True))
            for i in checked_layers(a.layers):
                pieces.append((f"db of layer {i}", grads[f"db_{i}"].view(1, d),
                               ref["db"][i].view(1, d), True))
                pieces.append((f"dW of layer {i}", grads[f"dW_{i}"], ref["dw"][i], True))
        nonfinite = int(torch.stack([(~torch.isfinite(t)).sum() for t in written]).sum().item())
        worst, worst_name, mism = 0.0, None, 0
        for name, o, f, one in pieces:
            e, m = group_rel_l2_array(bench.ops, o.to(f64), f.to(dev), floor, one_group=one)
            mism += m
            if e > worst or worst_name is None:
                worst, worst_name = e, name
        del out, written, pieces
        return worst, worst_name, mism, nonfinite

    def peak_memory(self, bench, call, model, x):
        """(max_memory_allocated, max_memory_reserved) over one call of `call`, after its
        gradients and the allocator's free blocks are dropped."""
        torch = bench.torch
        model.zero_grad(set_to_none=True)
        x.grad = None
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(bench.dev)
        out = call(x)
        torch.cuda.synchronize()
        alloc = int(torch.cuda.max_memory_allocated(bench.dev))
        reserved = int(torch.cuda.max_memory_reserved(bench.dev))
        del out
        return alloc, reserved

    def run_shape(self, bench, shape, variants, log):
        """One shape: f16 training refused (records 'unsupported'); else the model and x drawn,
        the float64 reference made, each variant validated and its peak memory measured in
        turn, then the valid ones timed in --repeat rounds (each round takes them in turn)."""
        from ..timing import timing_failed

        torch, a = bench.torch, bench.args
        recs = {v: bench.record(v, shape) for v in variants}
        if a.mode == "train" and a.dtype == "f16":
            for r in recs.values():
                r["status"] = "unsupported"
                r["note"] = F16_TRAIN
                log(r)
            return [recs[v] for v in variants]

        b, d = (int(v) for v in shape)
        train = a.mode == "train"
        tol = mlp_tolerance(a.dtype, a.layers, a.mode)
        floor = group_floor(d, MIN_NORMAL[a.dtype], tol)
        rows = sample_rows(b, d, a.seed, count=SAMPLE_ROWS, full_elems=0)
        n_checked = validated_row_count(b, d, a.layers, a.mode)
        checked = (f"checked {len(rows)} of {b} output rows" if not train else
                   f"checked {len(rows)} of {b} dX rows, db and every dW row of layer"
                   + (f"s 0 and {a.layers - 1}" if a.layers > 1 else " 0"))
        resident = model_bytes(b, d, a.dtype, a.layers)
        timer = bench.timer
        model = x = idx = ref = call = xs = None
        fns = {}
        bench.reset_compiler()  # a fresh compile for every shape
        try:
            try:
                model = make_model(torch, a.layers, d, bench.tdtype, bench.dev, a.gelu)
                x = fill_inputs(torch, model, shape, bench.generator(), bench.rounded,
                                bench.checked)
                model.requires_grad_(train)
                idx = torch.tensor(rows, device=bench.dev, dtype=torch.long)
                ref = self.reference(bench, model, x, idx)
                x.requires_grad_(train)
            except Exception as e:
                msg = f"input/reference: {first_line(e)}"
                for r in recs.values():
                    r["note"] = msg
                    log(r)
                return [recs[v] for v in variants]
            torch.cuda.empty_cache()

            for v in variants:
                r = recs[v]
                notes = []
                try:
                    call, vnotes, warm = self.variant_call(bench, v, model)
                    notes.extend(vnotes)
                    skips = cudagraph_skips(torch) if v == COMPILE_RO else None
                    err, worst, mism, nonfinite = self.check(bench, call, model, x, idx, ref,
                                                             warm, floor)
                    if skips is not None and (cudagraph_skips(torch) or 0) > skips:
                        notes.append("Inductor ran a graph of it without CUDA graphs "
                                     "(TORCH_LOGS=perf_hints says why)")
                    notes.append(checked)
                    if mism or nonfinite:
                        r["status"] = "failed"
                        notes.append(f"{nonfinite} non-finite elements written"
                                     if nonfinite else
                                     f"{mism} elements NaN/inf where the reference is not "
                                     f"(or the reverse)")
                    else:
                        r["max_rel_err"] = err
                        if err <= tol:
                            r["status"] = "ok"
                            r["validated"] = True
                            r["validated_rows"] = n_checked
                            fns[v] = call
                        else:
                            r["status"] = "failed"
                            notes.append(f"max error {err:.3e} > tolerance {tol:.1e} "
                                         f"(worst: {worst})")
                except Exception as e:
                    r["status"] = "error"
                    r["validated"] = False
                    notes.append(first_line(e))
                    fns.pop(v, None)
                if v in fns:
                    try:
                        alloc, reserved = self.peak_memory(bench, fns[v], model, x)
                        r["peak_mem_bytes"], r["peak_reserved_bytes"] = alloc, reserved
                        notes.append(f"peak memory over a call {mib(alloc)} allocated "
                                     f"({mib(resident)} of it the model and x), "
                                     f"{mib(reserved)} reserved")
                    except Exception as e:
                        notes.append(f"peak memory: {first_line(e)}")
                r["note"] = "; ".join(notes) if notes else None
                model.zero_grad(set_to_none=True)
                x.grad = None
                torch.cuda.empty_cache()
            ref = None

            def failed(r, e):
                timing_failed(r, e)
                r["peak_mem_bytes"] = r["peak_reserved_bytes"] = None
                fns.pop(r["variant"], None)

            xs = [(x,)]  # one model, one x: --rotate is not applied (the notes say so)
            rounds = {}
            for _ in range(a.repeat):
                for v in [v for v in variants if v in fns]:
                    try:
                        rounds.setdefault(v, []).append(timer.time_round(fns[v], xs))
                    except Exception as e:
                        failed(recs[v], e)
                    torch.cuda.empty_cache()
            for v in variants:
                r = recs[v]
                if v in fns:
                    try:
                        med = timer.finish_record(r, fns[v], xs, rounds[v])
                        if med and med > 0:
                            r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9
                            r["tflops"] = r["flops"] / (med * 1e-3) / 1e12
                    except Exception as e:
                        failed(r, e)
                    if r["status"] == "ok" and a.rotate != 1:
                        add_note(r, f"--rotate {a.rotate} not applied: every call uses the one "
                                    f"model and x (the compiled variants are specialised to "
                                    f"its parameters)")
                log(r)
            return [recs[v] for v in variants]
        finally:
            fns.clear()
            del model, x, idx, ref, call, xs
            bench.reset_compiler()  # drops the compiled graphs and their CUDA graph pools
            try:
                from torch._inductor import cudagraph_trees
                cudagraph_trees.reset_cudagraph_trees()
            except Exception:
                pass
            torch.cuda.empty_cache()


SPEC = Mlp()
