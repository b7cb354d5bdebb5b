"""kernlab's kernels as functions on torch tensors, and its tools from Python.

    import kernlab
    y = kernlab.softmax(x)                      # any registry variant: variant="v8_onchip"
    y = kernlab.linear(x, w, b, activation="gelu-tanh")
    kernlab.list_variants("softmax")
    print(kernlab.cli(["bench", "softmax", "--shape", "4096x4096"]))

CUDA tensors run kernlab's CUDA kernels in place, ordered with torch's current stream (on it,
where it is the default stream); CPU tensors run kernlab's CPU tier. Each function is a torch custom op (`torch.ops.kernlab.*`)
with a fake implementation, so torch.compile traces through it. The extension module
(`kernlab._kernlab`) needs no torch: `list_variants` and `cli` work without it.
"""

from ._kernlab import __version__, build_id, cli, list_variants as _list_variants

__all__ = ["__version__", "build_id", "bench", "cli", "inspect", "list_variants", "gelu", "softmax",
           "log_softmax", "rms_norm", "linear", "mlp_forward"]


def list_variants(op=None):
    """Every registered variant as a dict (op, name, tier, device, dtypes, about); only `op`'s
    where given."""
    return [v for v in _list_variants() if op is None or v["op"] == op]


def _flag_args(flags):
    args = []
    for k, v in (flags or {}).items():
        name = "--" + k.replace("_", "-")
        if v is True:
            args.append(name)
        elif v is not False and v is not None:
            args += [name, str(v)]
    return args


def _shapes(shapes):
    if isinstance(shapes, (str, tuple)):
        shapes = [shapes]
    out = []
    for s in shapes:
        out += ["--shape", s if isinstance(s, str) else "x".join(str(int(d)) for d in s)]
    return out


def bench(op, shapes=(), *, dtype="f32", variants=None, device="auto", frame=None, **flags):
    """`kernlab bench` from Python: validate, then time, `op`'s variants (all but the reference,
    or `variants`, a list or comma-separated names) at `shapes` (tuples or "4096x4096"
    strings; none: the op's defaults), dtypes `dtype` ("bf16", "f32,bf16", "all"). Other
    keywords are the command's flags (`gelu="erf"`, `graph=1`, `torch=True`, `rep_ms=200`).

    Returns the records (one a variant, shape and dtype: times, GB/s, TFLOP/s, % of the
    ceilings, the validation) as a pandas DataFrame where pandas is installed and `frame` is
    not False, else as a list of dicts."""
    import json
    import os
    import tempfile

    if not isinstance(variants, (str, type(None))):
        variants = ",".join(variants)
    args = ["bench", op, "--dtype", dtype, "--device", device] + _shapes(shapes)
    if variants:
        args += ["--variants", variants]
    args += _flag_args(flags)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench.json")
        cli(args + ["--json", path])
        with open(path) as f:
            records = json.load(f)["records"]
    if frame is False:
        return records
    try:
        import pandas
    except ImportError:
        if frame:
            raise
        return records
    return pandas.DataFrame.from_records(records)


def inspect(op, variant, *, dtype="f32", arch=None, **flags):
    """`kernlab inspect` from Python: a variant's kernels, their registers, spills, shared
    memory and occupancy, and the PTX/SASS census, as the text the command prints. Other
    keywords are the command's flags (`shape="1024x131072"`, `ir="ttgir"`)."""
    args = ["inspect", op, "--variant", variant, "--dtype", dtype]
    if arch:
        args += ["--arch", arch]
    return cli(args + _flag_args(flags))


_TORCH_FUNCTIONS = ("gelu", "softmax", "log_softmax", "rms_norm", "linear", "mlp_forward")


def _bind_torch_functions():
    """Import the torch side and make its functions this module's own attributes, so a call
    finds them directly (not through `__getattr__` each time)."""
    from . import _torch

    g = globals()
    for name in _TORCH_FUNCTIONS:
        g[name] = getattr(_torch, name)


def __getattr__(name):
    # The torch functions load torch on first use, so `import kernlab` works without it (and
    # registers torch.ops.kernlab at once where torch is already imported, below).
    if name in _TORCH_FUNCTIONS:
        _bind_torch_functions()
        return globals()[name]
    raise AttributeError(f"module 'kernlab' has no attribute '{name}'")


if "torch" in __import__("sys").modules:
    _bind_torch_functions()  # (registers torch.ops.kernlab.*)
