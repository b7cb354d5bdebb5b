"""kernlab's kernels as functions on torch tensors, and its tools from Python.

    import kernlab
    y = kernlab.softmax(x)                      # any registry variant: variant="v8_onchip"
    y = kernlab.linear(x, w, b, activation="gelu-tanh")
    kernlab.list_variants("softmax")
    print(kernlab.cli(["bench", "softmax", "--shape", "4096x4096"]))

CUDA tensors run kernlab's CUDA kernels in place, on torch's current stream of their device;
CPU tensors run kernlab's CPU tier. Each function is a torch custom op (`torch.ops.kernlab.*`)
with a fake implementation, so torch.compile traces through it. The extension module
(`kernlab._kernlab`) needs no torch: `list_variants` and `cli` work without it.
"""

from ._kernlab import __version__, cli, list_variants as _list_variants

__all__ = ["__version__", "cli", "list_variants", "gelu", "softmax", "log_softmax", "rms_norm",
           "linear", "mlp_forward"]


def list_variants(op=None):
    """Every registered variant as a dict (op, name, tier, device, dtypes, about); only `op`'s
    where given."""
    return [v for v in _list_variants() if op is None or v["op"] == op]


def __getattr__(name):
    # The torch functions load torch on first use, so `import kernlab` works without it.
    if name in ("gelu", "softmax", "log_softmax", "rms_norm", "linear", "mlp_forward"):
        from . import _torch

        return getattr(_torch, name)
    raise AttributeError(f"module 'kernlab' has no attribute '{name}'")
