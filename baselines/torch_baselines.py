#!/usr/bin/env python3
"""PyTorch / torch.compile / Triton baselines for kernlab's GeLU, softmax, matmul and linear tables.

kernlab times its own CUDA kernels; this script times the same op, shapes and dtype on the
same GPU through PyTorch, so kernlab can merge the results as extra columns:

  torch_manual   the CS336 lecture's eager compositions (one kernel per primitive op); for
                 linear: y = x @ w.t(), y = y + b, then the lecture's multi-op GeLU (none for
                 matmul, where it would be torch_native again)
  torch_native   torch.nn.functional.gelu / torch.softmax / a @ w.t() /
                 F.gelu(F.linear(x, w, b), approximate=...)
  torch_compile  torch.compile of the torch_manual function (gelu, softmax) or of the
                 torch_native one (matmul, linear), compiled once per shape
  triton         the lecture's Triton kernels (1-D elementwise GeLU, one-row-per-program
                 softmax) and a tiled Triton GEMM (grouped tile order, masked edges, f32
                 accumulation, bias + activation fused in the epilogue, autotuned)

matmul and linear follow kernlab's contract c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]), `w`
stored as nn.Linear stores its weight; matmul has no bias and no activation. Their shapes are
MxNxK. f32 GEMMs run with TF32 off (float32 matmul precision "highest"), recorded in the JSON.

Every variant is first validated against a float64 reference (gelu/softmax: kernlab's
element-wise error measure, see `rel_err_array`; matmul/linear: the relative L2 error of each
checked output row, see `row_rel_l2_array`, on all rows or on a seeded sample of rows for large
outputs), and only a variant that passes is timed, with `triton.testing.do_bench` (median,
p20, p80; L2 flushed before each call by do_bench). With `--rotate N|auto` (as kernlab's
`--rotate`) the timed calls cycle through N copies of the inputs and as many outputs, so
neither side's figure has its calls reuse one buffer while the other's does not. After each
timing of a call under 1 ms, the same loop runs again with every launch queued ahead of the GPU
(`host_check`): where the host fell behind the GPU and do_bench's median is above the queued
one, the GPU waited for launches inside the timed window, and the record's note says
"host-bound" (`host_bound_note`). The queued median goes in the record's `queued_ms`: the call's
GPU time with no host time in it, which kernlab's verdict sets against its own kernels.
Each such call is also timed in the settled form (`settled_check`, kernlab's `CudaTimer::settled`
alike): the stream parked behind each flush until it has finished, then the events and the call
freed as one batch, so that the host's pace is out of the time; its median goes in `settled_ms`,
the time kernlab's verdict judges kernels by where both sides have one.

Exit codes: 0 the run completed (individual records may still be "failed" or "error");
1 an unexpected internal error (JSON with the records so far is still written when --json is
given) or a failed --self-test; 2 bad command line; 3 baselines unavailable (no torch, no
triton or no CUDA device): one line on stderr and, with --json, {"available": false, ...}.

`--self-test` needs neither torch nor a GPU: it checks the shape parsers, the error measures
(pure-Python mirrors, plus the array versions on NumPy / CPU torch where importable), the GEMM
accounting and row sampling, and the JSON writer and contract, then exits 0.
"""

import argparse
import importlib
import json
import math
import os
import random
import sys
import tempfile

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

OPS = ("gelu", "softmax", "matmul", "linear")
# c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]); shapes MxNxK. matmul: no bias, no activation.
GEMM_OPS = ("matmul", "linear")
VARIANTS = ("torch_manual", "torch_native", "torch_compile", "triton")
# kernlab's own kernel (its `auto` pick at a softmax shape), replayed here from the module image
# kernlab loaded (--kernlab-plans: kernel, launch shape, arguments), so that its calls and
# PyTorch's are timed by one harness in one process: at µs-sized calls two processes differ by
# up to 1.2 µs around the same kernel (kernlab's docs/perf-notes.md, twenty-sixth session).
KERNLAB_VARIANT = "kernlab_do_bench"
PLAN_VERSION = 1
GELU_FORMS = ("tanh", "erf")
# linear's --activation, named as kernlab's Activation (kebab-case); the kernel's ACTIVATION code.
ACTIVATIONS = ("gelu-tanh", "gelu-erf", "none")
ACTIVATION_CODES = {"none": 0, "gelu-tanh": 1, "gelu-erf": 2}

# dtype name -> (torch dtype attribute, element size, tolerance, floor = smallest subnormal).
# The tolerances and floors are kernlab's (src/dtype.rs): the output's rounding plus room for
# f32 arithmetic in a different order; an absolute error under the subnormal step is forgiven.
DTYPES = {
    "f32": ("float32", 4, 1e-4, 2.0 ** -149),   # 1.4e-45
    "bf16": ("bfloat16", 2, 8e-3, 2.0 ** -133),  # 9.2e-41
    "f16": ("float16", 2, 2e-3, 2.0 ** -24),     # 5.96e-8
}

MIN_POSITIVE = sys.float_info.min  # f64::MIN_POSITIVE, the denominator's lower bound (as kernlab)
ROW_SCALE = 1e-3                   # |ref| is judged against 1e-3 * (max |ref| of its row)

# Triton limits for the one-block-per-row softmax.
TRITON_SOFTMAX_MAX_BLOCK = 131072
TRITON_GELU_BLOCK = 1024
# Rows handled at once when comparing on the GPU (bounds the float64 temporaries).
MEASURE_CHUNK_ELEMS = 1 << 26

# GEMM validation: every output row when the output is small (M <= GEMM_SAMPLE_ROWS or
# M*N <= GEMM_FULL_CHECK_ELEMS), else GEMM_SAMPLE_ROWS rows (the first, the last and a seeded
# random rest) against all N columns.
GEMM_SAMPLE_ROWS = 64
GEMM_FULL_CHECK_ELEMS = 1 << 22
# The Triton GEMM's autotune list (H100/H200): (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps).
GEMM_CONFIGS = (
    (128, 256, 64, 8, 3, 8),
    (256, 128, 64, 8, 3, 8),
    (128, 128, 64, 8, 4, 4),
    (64, 128, 64, 8, 4, 4),
    (128, 64, 32, 8, 4, 4),
    (64, 64, 32, 8, 4, 4),
)
# Shared memory one block may use on sm_90 (227 KiB); configs whose operand ring would not fit
# for the dtype are dropped before autotuning (f32 keeps the smaller tiles).
GEMM_SMEM_LIMIT = 232448

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)  # PyTorch's kBeta = M_SQRT2 * M_2_SQRTPI * 0.5
SQRT1_2 = math.sqrt(0.5)

PROG = "torch_baselines"


# ---------------------------------------------------------------------------------------------
# Triton kernels. They sit at module level (Triton resolves `tl` through the module's globals),
# defined whether or not Triton imports: without it `_jit` is the identity and `tl` a stub whose
# `constexpr` only lets the annotations evaluate. They are never launched without Triton.
# ---------------------------------------------------------------------------------------------
try:
    import triton  # noqa: E402
    import triton.language as tl  # noqa: E402

    _TRITON_IMPORT_ERROR = None
except Exception as _e:  # ImportError, or a broken install
    triton = None
    _TRITON_IMPORT_ERROR = _e

    class _TlStub:
        constexpr = object

    tl = _TlStub()


def _jit(fn):
    return triton.jit(fn) if triton is not None else fn


@_jit
def _triton_gelu_tanh_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if WIDE:
        block_start = pid.to(tl.int64) * BLOCK_SIZE
    else:
        block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    # tanh(a) = (exp(2a) - 1) / (exp(2a) + 1), as the lecture writes it; 2a is clamped at 80
    # (exp(80) is finite in f32 and the quotient is exactly 1 there) because exp(2a) = inf for
    # x >~ 10 would make it inf/inf = NaN.
    a = 0.79788456 * (x + 0.044715 * x * x * x)
    e = tl.exp(tl.minimum(2.0 * a, 80.0))
    t = (e - 1.0) / (e + 1.0)
    y = 0.5 * x * (1.0 + t)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@_jit
def _triton_gelu_erf_kernel(x_ptr, y_ptr, n_elements, BLOCK_SIZE: tl.constexpr, WIDE: tl.constexpr):
    pid = tl.program_id(axis=0)
    if WIDE:
        block_start = pid.to(tl.int64) * BLOCK_SIZE
    else:
        block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@_jit
def _triton_softmax_kernel(x_ptr, y_ptr, x_row_stride, y_row_stride, num_cols, BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row is loaded once (BLOCK_SIZE >= num_cols).
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < num_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    y = num / den
    tl.store(y_ptr + row * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def gemm_config_fits(cfg, elsize, limit=GEMM_SMEM_LIMIT):
    """Whether a (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, stages, warps) config's ring of operand
    tiles (stages x (a tile + w tile)) fits in one block's shared memory for `elsize`-byte
    elements. An estimate: exact for the 16-bit wgmma path (Triton 3.9, sm_90); the f32 'ieee'
    path keeps one stage fewer, but the f32 tiles this drops (128x128x64 and larger) would
    spill their accumulator heavily anyway (ptxas: ~13 KB of stack per thread). Configs that
    still do not fit are skipped by the autotuner itself (OutOfResources)."""
    bm, bn, bk, _group, stages, _warps = cfg
    return (bm * bk + bk * bn) * elsize * stages <= limit


def gemm_configs_for(configs, elsize):
    """The configs worth compiling for this element size; never none (the smallest ring)."""
    keep = [c for c in configs if gemm_config_fits(c, elsize)]
    if keep:
        return keep
    return [min(configs, key=lambda c: (c[0] * c[2] + c[2] * c[1]) * c[4])]


def _config_tuple(cfg):
    kw = cfg.kwargs
    return (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["GROUP_M"], cfg.num_stages, cfg.num_warps)


def _gemm_prune(configs, named_args, **kwargs):
    """triton.autotune's early_config_prune: drop the configs that cannot fit this dtype."""
    a = named_args.get("a_ptr") if isinstance(named_args, dict) else None
    elsize = a.element_size() if hasattr(a, "element_size") else 4
    by_tuple = {_config_tuple(c): c for c in configs}
    return [by_tuple[t] for t in gemm_configs_for(list(by_tuple), elsize)]


def _gemm_autotuned(fn):
    if triton is None:
        return fn
    configs = [
        triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g},
                      num_stages=st, num_warps=w)
        for bm, bn, bk, g, st, w in GEMM_CONFIGS
    ]
    return triton.autotune(configs=configs, key=["M", "N", "K"],
                           prune_configs_by={"early_config_prune": _gemm_prune})(triton.jit(fn))


@_gemm_autotuned
def _triton_gemm_kernel(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K,
                        stride_am, stride_ak, stride_wn, stride_wk, stride_cm, stride_cn,
                        HAS_BIAS: tl.constexpr, ACTIVATION: tl.constexpr, DOT_MODE: tl.constexpr,
                        WIDE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]), one BLOCK_M x BLOCK_N tile of c per program.

    ACTIVATION: 0 none, 1 GeLU tanh, 2 GeLU erf (kernlab's codes). DOT_MODE: 0 the dtype's
    tensor-core dot (bf16/f16 in, f32 accumulate), 1 f32 with input_precision="ieee", 2 f32
    with allow_tf32=False (Triton before input_precision). WIDE: 64-bit row/column offsets.
    """
    # Tile order: the programs of one band of GROUP_M tile-rows go down the band's column of
    # tiles before moving one tile right, so programs running together share the same few
    # rows of `a` and columns of `w^T` while those are still in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_band = GROUP_M * tiles_n
    first_m = (pid // per_band) * GROUP_M
    band_rows = tl.minimum(tiles_m - first_m, GROUP_M)  # the last band may be shorter
    in_band = pid % per_band
    tile_m = first_m + in_band % band_rows
    tile_n = in_band // band_rows

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if WIDE:
        rows = rows.to(tl.int64)
        cols = cols.to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    row_ok = rows < M
    col_ok = cols < N
    # a's tile is [BLOCK_M, BLOCK_K]; w's is read as w^T, [BLOCK_K, BLOCK_N] (K contiguous in both).
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    w_tile = w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = ks < K - k0  # the last K step may be partial; masked lanes add 0
        a = tl.load(a_tile, mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        b = tl.load(w_tile, mask=k_ok[:, None] & col_ok[None, :], other=0.0)
        if DOT_MODE == 1:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        elif DOT_MODE == 2:
            acc = tl.dot(a, b, acc, allow_tf32=False)
        else:
            acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        w_tile += BLOCK_K * stride_wk

    # Epilogue on the f32 accumulator: bias, activation, one rounding to the output dtype.
    if HAS_BIAS:
        bias = tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        acc = acc + bias[None, :]
    if ACTIVATION == 1:
        # 0.5 x (1 + tanh(u)) = x * sigmoid(2u) = x / (1 + exp(-2u)): no cancellation for
        # x << 0 and no inf/inf (exp(-2u) = inf gives -0, exp(-2u) = 0 gives x).
        u = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc / (1.0 + tl.exp(-2.0 * u))
    elif ACTIVATION == 2:
        acc = 0.5 * acc * (1.0 + tl.math.erf(acc * 0.7071067811865476))
    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=row_ok[:, None] & col_ok[None, :])


def triton_dot_mode(dtype_name):
    """DOT_MODE for the GEMM kernel: exact f32 where the inputs are f32."""
    if dtype_name != "f32":
        return 0
    try:
        import inspect

        if "input_precision" in inspect.signature(tl.dot).parameters:
            return 1
    except (TypeError, ValueError, AttributeError):
        return 1
    return 2


def triton_erf_available():
    return triton is not None and hasattr(tl, "math") and hasattr(tl.math, "erf")


def manual_softmax(torch, x):
    """The lecture's manual softmax over the last dimension: max, subtract, exp, sum, divide,
    one eager op each (torch.compile fuses it). Also used by scripts/ that time compile."""
    x_max = x.max(dim=-1, keepdim=True)[0]
    x = x - x_max
    num = torch.exp(x)
    den = num.sum(dim=-1, keepdim=True)
    return num / den


def load_kernlab_plans(path, op, dtype):
    """{(rows, cols): plan} from kernlab's launch plans (`kernlab_plans.json`, format 1), each
    plan with its module image's bytes (read from beside the JSON) under "image_bytes". Raises
    ValueError where the file breaks the format or is for another op or dtype."""
    def need(cond, what):
        if not cond:
            raise ValueError(f"{path}: {what}")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)

    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {first_line(e)}")
    need(isinstance(doc, dict) and doc.get("version") == PLAN_VERSION,
         f"not a format-{PLAN_VERSION} launch-plan file")
    need(doc.get("op") == op and doc.get("dtype") == dtype,
         f"plans for {doc.get('op')} {doc.get('dtype')}, not {op} {dtype}")
    need(isinstance(doc.get("plans"), list), "'plans' is not a list")
    base = os.path.dirname(os.path.abspath(path))
    images, out = {}, {}
    for i, p in enumerate(doc["plans"]):
        w = f"plan {i}"
        need(isinstance(p, dict), f"{w} is not an object")
        shape = p.get("shape")
        need(isinstance(shape, list) and len(shape) == 2
             and all(is_int(v) and v > 0 for v in shape), f"{w}: bad shape")
        need(isinstance(p.get("kernel"), str) and p["kernel"] != "", f"{w}: bad kernel")
        for k in ("grid", "block"):
            need(isinstance(p.get(k), list) and len(p[k]) == 3
                 and all(is_int(v) and 1 <= v < 2 ** 31 for v in p[k]), f"{w}: bad {k}")
        need(is_int(p.get("smem")) and 0 <= p["smem"] < 2 ** 31, f"{w}: bad smem")
        need(p.get("picked") is None or isinstance(p["picked"], str), f"{w}: bad picked")
        need(p["kernel"].endswith(f"_{dtype}"), f"{w}: kernel {p['kernel']} is not a {dtype} kernel")
        # The row kernels' arguments for this shape, contiguous rows, softmax (not log):
        # (x, y, rows, cols, ldx = cols, ldy = cols, lg = 0), and v8's csize = 1 where it takes it.
        # Anything else would launch on PyTorch's tensors with another layout: refused.
        rows, cols = shape
        want = ["x", "y", {"i32": rows}, {"i32": cols}, {"i64": cols}, {"i64": cols}, {"i32": 0}]
        args = p.get("args")
        need(args in (want, want + [{"i32": 1}]),
             f"{w}: the arguments are not a contiguous {rows}x{cols} softmax row launch's "
             f"(x, y, rows, cols, ldx, ldy, lg[, csize = 1]): {args!r}")
        img = p.get("image")
        need(isinstance(img, str) and img != "" and os.path.basename(img) == img
             and img not in (".", ".."), f"{w}: bad image name {img!r}")
        if img not in images:
            try:
                with open(os.path.join(base, img), "rb") as f:
                    images[img] = f.read()
            except OSError as e:
                raise ValueError(f"{path}: {w}: image {img}: {first_line(e)}")
            need(len(images[img]) > 0, f"{w}: image {img} is empty")
        key = (shape[0], shape[1])
        need(key not in out, f"{w}: shape {shape_str(shape)} planned twice")
        out[key] = dict(p, image_bytes=images[img])
    return out


class DriverKernel:
    """One kernel of a module image (CUBIN or NUL-terminated PTX), loaded and launched through
    the CUDA driver API (ctypes) in PyTorch's context (the device's primary context, current
    once torch has initialised CUDA), on the stream the caller passes."""
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
    _libcuda = None
    _modules = {}  # image bytes -> loaded module: each image is loaded once a process

    def __init__(self, image, name, smem, cu=None):
        """`cu`: the driver's functions (default libcuda.so.1; the self-test passes a fake)."""
        import ctypes
        self.ct = ctypes
        if cu is None and DriverKernel._libcuda is None:
            cu = ctypes.CDLL("libcuda.so.1")
            cu.cuModuleLoadData.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
            cu.cuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p]
            cu.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
            cu.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.c_void_p]
            cu.cuLaunchKernel.argtypes = ([ctypes.c_void_p] + [ctypes.c_uint] * 7
                                          + [ctypes.c_void_p] * 3)
            for f in (cu.cuModuleLoadData, cu.cuModuleGetFunction, cu.cuFuncSetAttribute,
                      cu.cuGetErrorName, cu.cuLaunchKernel):
                f.restype = ctypes.c_int
            DriverKernel._libcuda = cu
        self.cu = DriverKernel._libcuda if cu is None else cu
        self.name = name
        image = bytes(image)
        self.module, self.fn = DriverKernel._modules.get(image), ctypes.c_void_p()
        if self.module is None:
            self.module = ctypes.c_void_p()
            self.check(self.cu.cuModuleLoadData(ctypes.byref(self.module), image),
                       "cuModuleLoadData")
            DriverKernel._modules[image] = self.module
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(self.fn), self.module,
                                               name.encode()), "cuModuleGetFunction")
        if smem > 0:  # as kernlab does: static + dynamic past 48 KB needs the opt-in
            self.check(self.cu.cuFuncSetAttribute(
                self.fn, self.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                "cuFuncSetAttribute (dynamic shared memory)")

    def check(self, rc, what):
        if rc != 0:
            name = self.ct.c_char_p()
            self.cu.cuGetErrorName(rc, self.ct.byref(name))
            raise RuntimeError(f"{what} ({self.name}): "
                               f"{name.value.decode() if name.value else 'CUresult ' + str(rc)}")

    def launch(self, grid, block, smem, stream, values):
        """cuLaunchKernel with `values` (ctypes objects, in the kernel's parameter order)."""
        self.launcher(grid, block, smem, stream, values)()

    def launcher(self, grid, block, smem, stream, values):
        """A call that launches with `values` as they hold at each call: the parameter array
        (pointers to the ctypes objects) is built once, so a timed call costs one ctypes call
        (set a value's `.value` between calls to move a pointer)."""
        ct = self.ct
        params = (ct.c_void_p * len(values))(*[ct.cast(ct.byref(v), ct.c_void_p) for v in values])
        dims = (*grid, *block, smem)
        fn, cu = self.fn, self.cu

        def go():
            rc = cu.cuLaunchKernel(fn, *dims, stream, params, None)
            if rc != 0:
                self.check(rc, "cuLaunchKernel")
        # Required: params holds only addresses, not references, so these objects must live
        # as long as the launcher does.
        go.values = values
        return go


class SettledGate:
    """A word of pinned host memory, mapped for the device, that a stream can be parked on
    (`cuStreamWaitValue32`: go on once the word >= a ticket) until the host writes the ticket:
    the settled form's release (`Runner.settled_check`). Made once a process; it checks that the
    stream does wait there and goes on once the word is written."""
    CU_STREAM_WAIT_VALUE_GEQ = 0

    def __init__(self, torch):
        import ctypes
        import threading
        import time as clock
        self.torch = torch
        self._lock = threading.Lock()  # the main thread and the watchdog both release
        cu = ctypes.CDLL("libcuda.so.1")

        def driver(name, *argtypes):
            for n in (name + "_v2", name):
                f = getattr(cu, n, None)
                if f is not None:
                    f.argtypes, f.restype = list(argtypes), ctypes.c_int
                    return f
            raise RuntimeError(f"libcuda has no {name}")
        self._wait = driver("cuStreamWaitValue32", ctypes.c_void_p, ctypes.c_uint64,
                            ctypes.c_uint32, ctypes.c_uint)
        host_dptr = driver("cuMemHostGetDevicePointer", ctypes.POINTER(ctypes.c_uint64),
                           ctypes.c_void_p, ctypes.c_uint)
        self.ct = ctypes
        self.word = torch.zeros(1, dtype=torch.int64, pin_memory=True)  # its low 32 bits
        self.dptr = ctypes.c_uint64()
        rc = host_dptr(ctypes.byref(self.dptr), ctypes.c_void_p(self.word.data_ptr()), 0)
        if rc != 0:
            raise RuntimeError(f"cuMemHostGetDevicePointer failed: CUresult {rc}")
        self.ticket = 0
        torch.cuda.synchronize()
        # The check polls with a deadline (a synchronize would never return from a stream that
        # stayed parked) and frees the ticket whatever happens.
        t, held = self.park(torch.cuda.current_stream().cuda_stream), torch.cuda.Event()
        try:
            held.record()
            clock.sleep(0.002)
            early = held.query()
        finally:
            self.release(t)
        deadline = clock.monotonic() + 2.0
        while not held.query() and clock.monotonic() < deadline:
            clock.sleep(50e-6)
        if early or not held.query():
            raise RuntimeError("the stream " + ("did not wait on" if early else
                                                "stayed parked for 2 s after the host wrote")
                               + " its gate word (cuStreamWaitValue32 on mapped host memory)")

    def park(self, stream):
        """Park `stream` (a CUstream handle) until the word reaches the ticket returned."""
        if self.ticket >= 2 ** 32 - 1:
            raise RuntimeError("the gate's tickets ran out (2^32 calls)")
        self.ticket += 1
        rc = self._wait(self.ct.c_void_p(stream), self.dptr.value, self.ticket,
                        self.CU_STREAM_WAIT_VALUE_GEQ)
        if rc != 0:
            raise RuntimeError(f"cuStreamWaitValue32 failed: CUresult {rc}")
        return self.ticket

    def release(self, ticket):
        """Free the stream parked for `ticket` and every earlier one: the word is raised to at
        least `ticket`, never lowered, so that a late write of an older ticket (the watchdog's)
        cannot park the stream again behind a newer one."""
        with self._lock:
            if int(self.word[0]) < ticket:
                self.word[0] = ticket


def softmax_num_warps(block_size):
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


# ---------------------------------------------------------------------------------------------
# Small pure helpers (no torch): shapes, the error measure's pure-Python mirror, JSON.
# ---------------------------------------------------------------------------------------------
def parse_shapes(text, ndim=2):
    """'16384x16384,4096x256' -> [(16384, 16384), (4096, 256)] (ndim 2: ROWSxCOLS, gelu and
    softmax); with ndim 3, '8192x8192x8192,127x255x63' -> [(8192, 8192, 8192), (127, 255, 63)]
    (MxNxK, matmul and linear)."""
    form = "ROWSxCOLS" if ndim == 2 else "MxNxK"
    example = "16384x16384,4096x256" if ndim == 2 else "8192x8192x8192,127x255x63"
    if text is None or not text.strip():
        raise ValueError(f"no shapes given (expected e.g. {example})")
    shapes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty shape in '{text}'")
        dims = part.lower().replace("\u00d7", "x").split("x")
        if len(dims) != ndim:
            raise ValueError(f"shape '{part}' is not {form}")
        try:
            vals = tuple(int(d.strip()) for d in dims)
        except ValueError:
            raise ValueError(f"shape '{part}' has a non-integer dimension") from None
        if any(v <= 0 for v in vals):
            raise ValueError(f"shape '{part}' has a dimension <= 0")
        shapes.append(vals)
    return shapes


def shape_ndim(op):
    return 3 if op in GEMM_OPS else 2


def gemm_flops(m, n, k):
    """2*M*N*K: one multiply and one add per term (bias and activation not counted)."""
    return 2 * int(m) * int(n) * int(k)


def gemm_bytes(m, n, k, dtype, bias):
    """The minimum traffic: a and w read once, c written once, the bias read once."""
    m, n, k = int(m), int(n), int(k)
    return (m * k + n * k + m * n + (n if bias else 0)) * DTYPES[dtype][1]


def record_bytes(op, dtype, shape):
    if op in GEMM_OPS:
        m, n, k = shape
        return gemm_bytes(m, n, k, dtype, op == "linear")
    rows, cols = shape
    return 2 * int(rows) * int(cols) * DTYPES[dtype][1]  # input read once, output written once


def sample_rows(m, n, seed, count=GEMM_SAMPLE_ROWS, full_elems=GEMM_FULL_CHECK_ELEMS):
    """The output rows a GEMM is validated on (sorted): all M when M <= count or M*N <=
    full_elems; else the first, the last and count-2 others drawn with `seed`."""
    m, n = int(m), int(n)
    if m <= count or m * n <= full_elems:
        return list(range(m))
    rng = random.Random(int(seed) * 1000003 + m)
    rest = rng.sample(range(1, m - 1), count - 2)
    return sorted([0, m - 1] + rest)


def resolve_variants(op, variants):
    """(variants to run, dropped) for an op: matmul has no torch_manual (it is a @ w.t(),
    which is torch_native)."""
    if op == "matmul":
        return [v for v in variants if v != "torch_manual"], [v for v in variants if v == "torch_manual"]
    return list(variants), []


def parse_variants(text):
    out = []
    for v in text.split(","):
        v = v.strip()
        if not v:
            continue
        if v not in VARIANTS:
            raise ValueError(f"unknown variant '{v}' (use {', '.join(VARIANTS)})")
        if v not in out:
            out.append(v)
    if not out:
        raise ValueError("no variants given")
    return out


# --rotate, as kernlab's `--rotate` (src/bench/harness.rs, Rotate): `auto` makes the copies of a
# call's input and output at least ROTATE_CACHE_MULTIPLE x the L2, at most ROTATE_MAX_COPIES.
ROTATE_CACHE_MULTIPLE = 4
ROTATE_MAX_COPIES = 1024


def parse_rotate(text):
    """--rotate's value: "auto" or a count of at least 1 (returned as an int)."""
    t = str(text).strip()
    if t.lower() == "auto":
        return "auto"
    try:
        n = int(t)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"--rotate takes a count of at least 1 or 'auto' (got {text!r})")
    return n


def rotate_copies(spec, call_bytes, cache_bytes):
    """The copies a point's timed calls cycle through: `spec` itself when it is a count; for
    "auto", ceil(ROTATE_CACHE_MULTIPLE x cache_bytes / call_bytes) within [1, ROTATE_MAX_COPIES]
    (kernlab's Rotate::copies)."""
    if spec != "auto":
        return max(1, int(spec))
    need = ROTATE_CACHE_MULTIPLE * int(cache_bytes)
    n = -(-need // max(1, int(call_bytes)))
    return min(max(n, 1), ROTATE_MAX_COPIES)

HOST_BOUND = "host-bound"  # kernlab's verdict looks for this word in a record's note
HOST_CHECK_CALLS = 50
# The settled form (`settled_check`, kernlab's `CudaTimer::settled`): its calls, the calls it
# times (median under this many ms), and how long the stream may stay parked before the
# watchdog frees it (a call that waits on the GPU from the host would otherwise never end).
SETTLED_CALLS = 200
SETTLED_BELOW_MS = 1.0
SETTLED_WATCHDOG_S = 0.5


def add_note(r, text):
    """Append `text` (when there is one) to record r's note, "; " between notes."""
    if text:
        r["note"] = f"{r['note']}; {text}" if r["note"] else text


def timing_failed(r, e):
    """Record r after its timing raised e: an error, not validated, with every figure the
    timing gives (times, rates, rounds, queued and settled medians, copies; a GEMM's tflops and
    checked rows) cleared, and the reason in its note."""
    r["status"] = "error"
    r["validated"] = False
    for k in ("median_ms", "p20_ms", "p80_ms", "gbps", "tflops", "validated_rows", "queued_ms",
              "settled_ms", "repeat_medians_ms", "spread", "rotate_copies"):
        r[k] = None
    add_note(r, f"timing: {first_line(e)}")


def summarise_rounds(rounds):
    """K rounds' (median, p20, p80), in the order they ran, as kernlab's --repeat summarises
    its repeats: the round whose median is the median of the K (the lower middle one for an
    even K), every round's median, and (max - min) / the kept median (0 for one round)."""
    if not rounds:
        raise ValueError("no rounds timed")
    medians = [m for m, _, _ in rounds]
    order = sorted(rounds, key=lambda t: t[0])
    mid = order[(len(order) - 1) // 2]
    spread = (order[-1][0] - order[0][0]) / mid[0] if mid[0] > 0 else 0.0
    return mid, medians, spread


def host_bound_note(host_us, flush_us, median_us, queued_us):
    """The note for a record whose do_bench time holds host time, or None.

    An iteration of do_bench's loop is, on the host, the flush's launch, the start event, the
    call's Python side up to its launch, and the end event (host_us in all); on the GPU, the
    flush (flush_us), then the call between the two events. Where the host keeps ahead, each
    launch is queued before the GPU reaches it and the events hold the kernel alone: queued_us,
    the median of the same loop with every launch queued ahead (the GPU held back first). Where
    the host does not keep ahead (host_us > flush_us + queued_us) and its launch comes after the
    flush ends, the GPU waits inside the window and do_bench's median (median_us) exceeds
    queued_us. Both must hold, the second by more than 10% + 0.5 µs (the noise of a few-µs
    call)."""
    if None in (host_us, flush_us, median_us, queued_us):
        return None
    if host_us <= flush_us + queued_us or median_us <= 1.1 * queued_us + 0.5:
        return None
    return (f"{HOST_BOUND}: do_bench's median {median_us:.1f} µs against {queued_us:.1f} µs with "
            f"every launch queued ahead; an iteration of its loop took the host {host_us:.0f} µs, "
            f"the GPU {flush_us:.0f} µs of flush and the call, so the GPU waited for the launch "
            f"inside the timed window")


def rel_err_py(out_rows, ref_rows, floor):
    """kernlab's error measure in pure Python, mirroring `rel_err_array` line for line.

    out_rows, ref_rows: lists of rows (lists of floats), the last dim being the row.
    Returns (max_err, mismatches): the max over elements of
        max(0, |out - ref| - floor) / max(|ref| + 1e-3 * rowmax|ref|, MIN_POSITIVE)
    over the elements whose reference is finite and whose NaN/inf status is right, and the
    count of elements whose NaN/inf status differs from the reference (NaN where the reference
    is NaN, the same inf where it is inf, finite elsewhere).
    """
    max_err, mismatches = 0.0, 0
    for o_row, r_row in zip(out_rows, ref_rows):
        fin = [math.isfinite(f) for f in r_row]
        absref = [abs(f) if fi else 0.0 for f, fi in zip(r_row, fin)]
        scale = max(absref) if absref else 0.0
        for o, f, fi, af in zip(o_row, r_row, fin, absref):
            if math.isnan(f):
                ok = math.isnan(o)
            elif math.isinf(f):
                ok = o == f
            else:
                ok = math.isfinite(o)
            if not ok:
                mismatches += 1
            if fi and ok:
                d = abs(o - f)
                num = max(d - floor, 0.0)
                den = max(af + ROW_SCALE * scale, MIN_POSITIVE)
                max_err = max(max_err, num / den)
    return max_err, mismatches


def row_rel_l2_py(out_rows, ref_rows):
    """The GEMM error measure in pure Python, mirroring `row_rel_l2_array`.

    Returns (max_err, mismatches): the max over rows of ||out_r - ref_r||_2 / ||ref_r||_2
    (the norms over the row's elements whose reference is finite and whose NaN/inf status is
    right; the denominator at least MIN_POSITIVE), and the count of elements whose NaN/inf
    status differs from the reference, as in `rel_err_py`.
    """
    max_err, mismatches = 0.0, 0
    for o_row, r_row in zip(out_rows, ref_rows):
        num = den = 0.0
        for o, f in zip(o_row, r_row):
            if math.isnan(f):
                ok = math.isnan(o)
            elif math.isinf(f):
                ok = o == f
            else:
                ok = math.isfinite(o)
            if not ok:
                mismatches += 1
            elif math.isfinite(f):
                num += (o - f) ** 2
                den += f * f
        max_err = max(max_err, math.sqrt(num / max(den, MIN_POSITIVE)))
    return max_err, mismatches


class _TorchOps:
    """The array operations `rel_err_array` needs, on torch tensors (any device)."""

    def __init__(self, torch):
        self.t = torch

    def isfinite(self, a):
        return self.t.isfinite(a)

    def isnan(self, a):
        return self.t.isnan(a)

    def isinf(self, a):
        return self.t.isinf(a)

    def abs(self, a):
        return a.abs()

    def where(self, c, a, b):
        return self.t.where(c, a, b)

    def rowmax(self, a):
        return a.amax(dim=-1, keepdim=True)

    def clamp_min(self, a, v):
        return self.t.clamp(a, min=v)

    def count(self, m):
        return int(m.sum().item())

    def max_all(self, a):
        return float(a.max().item()) if a.numel() else 0.0

    def rowsum(self, a):
        return a.sum(dim=-1, keepdim=True)

    def sqrt(self, a):
        return a.sqrt()


class _NumpyOps:
    """The same operations on NumPy arrays (used by --self-test where NumPy imports)."""

    def __init__(self, np):
        self.np = np

    def isfinite(self, a):
        return self.np.isfinite(a)

    def isnan(self, a):
        return self.np.isnan(a)

    def isinf(self, a):
        return self.np.isinf(a)

    def abs(self, a):
        return self.np.abs(a)

    def where(self, c, a, b):
        return self.np.where(c, a, b)

    def rowmax(self, a):
        return a.max(axis=-1, keepdims=True)

    def clamp_min(self, a, v):
        return self.np.maximum(a, v)

    def count(self, m):
        return int(m.sum())

    def max_all(self, a):
        return float(a.max()) if a.size else 0.0

    def rowsum(self, a):
        return a.sum(axis=-1, keepdims=True)

    def sqrt(self, a):
        return self.np.sqrt(a)


def rel_err_array(ops, out, ref, floor):
    """kernlab's error measure on 2-D float64 arrays (rows on the last dim); see `rel_err_py`.

    Works on torch tensors (on the GPU) through `_TorchOps` and on NumPy through `_NumpyOps`.
    """
    fin = ops.isfinite(ref)
    absref = ops.where(fin, ops.abs(ref), 0.0)
    scale = ops.rowmax(absref)
    ok = ops.where(ops.isnan(ref), ops.isnan(out),
                   ops.where(ops.isinf(ref), out == ref, ops.isfinite(out)))
    mismatches = ops.count(~ok)
    d = ops.abs(out - ref)
    num = ops.clamp_min(d - floor, 0.0)
    den = ops.clamp_min(absref + ROW_SCALE * scale, MIN_POSITIVE)
    e = ops.where(fin & ok, num / den, 0.0)
    return ops.max_all(e), mismatches


def row_rel_l2_array(ops, out, ref):
    """The GEMM error measure on 2-D float64 arrays (one output row per row); see
    `row_rel_l2_py`. Returns (max over rows of the relative L2 error, mismatches)."""
    fin = ops.isfinite(ref)
    ok = ops.where(ops.isnan(ref), ops.isnan(out),
                   ops.where(ops.isinf(ref), out == ref, ops.isfinite(out)))
    mismatches = ops.count(~ok)
    use = fin & ok
    d = ops.where(use, out - ref, 0.0)
    r = ops.where(use, ref, 0.0)
    num = ops.rowsum(d * d)
    den = ops.clamp_min(ops.rowsum(r * r), MIN_POSITIVE)
    return ops.max_all(ops.sqrt(num / den)), mismatches


def _sanitize(obj):
    """Non-finite floats -> None, so the JSON is strict (serde_json rejects NaN/Infinity)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _sanitize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_sanitize(v) for v in obj]
    return obj


def write_json(path, doc):
    """Write `doc` as strict JSON to `path` (atomically: a temporary file, then rename)."""
    doc = _sanitize(doc)
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".torch_baselines.", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def unavailable_doc(reason):
    return {"available": False, "reason": reason, "records": []}


def report_unavailable(reason, json_path):
    """One line on stderr, the {"available": false} JSON where asked; returns exit code 3."""
    reason = " ".join(str(reason).split())
    print(f"{PROG}: baselines unavailable: {reason}", file=sys.stderr)
    if json_path:
        write_json(json_path, unavailable_doc(reason))
    return EXIT_UNAVAILABLE


RECORD_KEYS = ("op", "variant", "tier", "dtype", "shape", "gelu", "status", "validated",
               "max_rel_err", "median_ms", "p20_ms", "p80_ms", "bytes", "gbps", "note")
# Keys every matmul/linear record has besides RECORD_KEYS (gelu/softmax records written by
# this version have them too, as null; older documents lack them).
GEMM_RECORD_KEYS = ("activation", "bias", "flops", "tflops", "error_metric", "validated_rows",
                    "max_elem_rel_err")
ERROR_METRICS = {"elementwise": "elementwise_row_scaled", "gemm": "max_row_rel_l2"}
TOP_KEYS = ("available", "torch_version", "triton_version", "device", "seed", "records")


def check_contract(doc):
    """Raise ValueError where `doc` breaks the JSON contract kernlab parses."""
    def need(cond, what):
        if not cond:
            raise ValueError(what)

    need(isinstance(doc, dict), "top level is not an object")
    need(isinstance(doc.get("available"), bool), "'available' is not a bool")
    need(isinstance(doc.get("records"), list), "'records' is not a list")
    if not doc["available"]:
        need(isinstance(doc.get("reason"), str), "'reason' is not a string")
        need(doc["records"] == [], "unavailable but records not empty")
        return
    for k in TOP_KEYS:
        need(k in doc, f"missing top-level key '{k}'")
    for k in ("torch_version", "triton_version", "device"):
        need(isinstance(doc[k], str), f"'{k}' is not a string")
    need(isinstance(doc["seed"], int) and not isinstance(doc["seed"], bool), "'seed' is not an int")
    num = (int, float)
    for i, r in enumerate(doc["records"]):
        where = f"record {i}"
        need(isinstance(r, dict), f"{where} is not an object")
        for k in RECORD_KEYS:
            need(k in r, f"{where}: missing key '{k}'")
        need(r["op"] in OPS, f"{where}: bad op")
        need(r["variant"] in VARIANTS or (r["variant"] == KERNLAB_VARIANT and r["op"] == "softmax"),
             f"{where}: bad variant")
        need(r.get("picked") is None or isinstance(r["picked"], str), f"{where}: bad picked")
        need(r["tier"] == "torch", f"{where}: tier is not 'torch'")
        need(r["dtype"] in DTYPES, f"{where}: bad dtype")
        gemm = r["op"] in GEMM_OPS
        need(isinstance(r["shape"], list) and len(r["shape"]) == shape_ndim(r["op"])
             and all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in r["shape"]),
             f"{where}: bad shape (want {'[M, N, K]' if gemm else '[rows, cols]'})")
        if r["op"] == "gelu":
            need(r["gelu"] in GELU_FORMS, f"{where}: gelu op without tanh/erf")
        else:
            need(r["gelu"] is None, f"{where}: {r['op']} with a gelu form")
        if gemm:
            for k in GEMM_RECORD_KEYS:
                need(k in r, f"{where}: missing key '{k}'")
            if r["op"] == "matmul":
                need(r["activation"] == "none" and r["bias"] is False,
                     f"{where}: matmul with a bias or an activation")
            else:
                need(r["activation"] in ACTIVATIONS and r["bias"] is True,
                     f"{where}: linear without a bias or with a bad activation")
            need(r["variant"] != "torch_manual" or r["op"] == "linear",
                 f"{where}: matmul has no torch_manual variant")
            m, n, k = r["shape"]
            need(r["flops"] == gemm_flops(m, n, k), f"{where}: flops is not 2*M*N*K")
            need(r["bytes"] == record_bytes(r["op"], r["dtype"], r["shape"]),
                 f"{where}: bytes is not (M*K + N*K + M*N [+ N]) * dtype size")
            need(r["error_metric"] == ERROR_METRICS["gemm"], f"{where}: bad error_metric")
            me = r["max_elem_rel_err"]
            need(me is None or (isinstance(me, (int, float)) and not isinstance(me, bool)
                                and math.isfinite(me)), f"{where}: bad max_elem_rel_err")
            vr = r["validated_rows"]
            need(vr is None or (isinstance(vr, int) and not isinstance(vr, bool) and 0 < vr <= m),
                 f"{where}: bad validated_rows")
            t = r["tflops"]
            need(t is None or (isinstance(t, (int, float)) and not isinstance(t, bool)
                               and math.isfinite(t)), f"{where}: 'tflops' is neither a finite number nor null")
            if r["status"] == "ok":
                need(t is not None, f"{where}: ok but 'tflops' is null")
                need(vr is not None, f"{where}: ok but 'validated_rows' is null")
            else:
                need(t is None, f"{where}: {r['status']} but 'tflops' set")
        need(r["status"] in ("ok", "failed", "error"), f"{where}: bad status")
        rm, sp = r.get("repeat_medians_ms"), r.get("spread")  # optional (older documents lack them)
        need((rm is None) == (sp is None), f"{where}: 'repeat_medians_ms' and 'spread' not set together")
        if rm is not None:
            need(r["status"] == "ok" and isinstance(rm, list) and len(rm) >= 2
                 and all(isinstance(v, num) and not isinstance(v, bool) and math.isfinite(v)
                         and v > 0 for v in rm),
                 f"{where}: 'repeat_medians_ms' is not a list of two or more positive times on an ok record")
            need(isinstance(sp, num) and not isinstance(sp, bool) and math.isfinite(sp) and sp >= 0,
                 f"{where}: 'spread' is not a finite fraction >= 0")
            need(r["median_ms"] in rm, f"{where}: 'median_ms' is none of its rounds' medians")
        q = r.get("queued_ms")  # optional (older documents lack it)
        need(q is None or (isinstance(q, num) and not isinstance(q, bool) and math.isfinite(q)
                           and q > 0 and r["status"] == "ok"),
             f"{where}: 'queued_ms' is neither null nor a positive time on an ok record")
        sm = r.get("settled_ms")  # optional (older documents lack it)
        need(sm is None or (isinstance(sm, num) and not isinstance(sm, bool) and math.isfinite(sm)
                            and sm > 0 and r["status"] == "ok"),
             f"{where}: 'settled_ms' is neither null nor a positive time on an ok record")
        rc = r.get("rotate_copies")  # optional (older documents lack it)
        need(rc is None or (isinstance(rc, int) and not isinstance(rc, bool) and rc >= 2
                            and r["status"] == "ok"),
             f"{where}: 'rotate_copies' is neither null nor a count of at least 2 on an ok record")
        need(isinstance(r["validated"], bool), f"{where}: 'validated' is not a bool")
        need(isinstance(r["bytes"], int) and r["bytes"] > 0, f"{where}: bad bytes")
        for k in ("max_rel_err", "median_ms", "p20_ms", "p80_ms", "gbps"):
            v = r[k]
            need(v is None or (isinstance(v, num) and not isinstance(v, bool) and math.isfinite(v)),
                 f"{where}: '{k}' is neither a finite number nor null")
        need(r["note"] is None or isinstance(r["note"], str), f"{where}: bad note")
        if r["status"] == "ok":
            need(r["validated"] is True, f"{where}: ok but not validated")
            for k in ("max_rel_err", "median_ms", "gbps"):
                need(r[k] is not None, f"{where}: ok but '{k}' is null")
        else:
            need(r["validated"] is False, f"{where}: {r['status']} but validated")
            need(r["median_ms"] is None and r["gbps"] is None, f"{where}: {r['status']} but timed")


def make_record(op, variant, dtype, shape, gelu, activation=None):
    """A record in the "error" state (filled in by the run). `shape` is (rows, cols) for gelu
    and softmax, (M, N, K) for matmul and linear; `activation` is linear's (matmul: none)."""
    gemm = op in GEMM_OPS
    flops = None
    if gemm:
        m, n, k = (int(v) for v in shape)
        flops = gemm_flops(m, n, k)
        activation = "none" if op == "matmul" else activation
    else:
        activation = None
    return {
        "op": op,
        "variant": variant,
        "tier": "torch",
        "dtype": dtype,
        "shape": [int(v) for v in shape],
        "gelu": gelu if op == "gelu" else None,
        "status": "error",
        "validated": False,
        "max_rel_err": None,
        "median_ms": None,
        "p20_ms": None,
        "p80_ms": None,
        "bytes": record_bytes(op, dtype, shape),
        "gbps": None,
        "note": None,
        "tolerance": DTYPES[dtype][2],
        # matmul / linear (null for gelu and softmax):
        "activation": activation,
        "bias": (op == "linear") if gemm else None,
        "flops": flops,
        "tflops": None,
        "error_metric": ERROR_METRICS["gemm" if gemm else "elementwise"],
        "validated_rows": None,
        "max_elem_rel_err": None,
        # under --rotate: the copies the timed calls cycled through (null: one)
        "rotate_copies": None,
        # kernlab_do_bench: the version kernlab's `auto` picked, whose launch this replays
        "picked": None,
        # calls under 1 ms: the median of do_bench's loop run again with every launch queued
        # ahead of the GPU (`host_check`): the call's GPU time with no host time in it
        "queued_ms": None,
        # calls under 1 ms: the median of the settled form (`settled_check`: the stream parked
        # behind each flush until it finished, then the events and the call freed as one batch)
        "settled_ms": None,
        # gelu/softmax under --repeat K > 1: every round's median in the order they ran, and
        # their (max - min) / the kept round's median
        "repeat_medians_ms": None,
        "spread": None,
    }


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def shape_str(shape):
    return "x".join(str(v) for v in shape)


def format_table(records):
    gemm = any(r["op"] in GEMM_OPS for r in records)
    head = ("variant", "shape", "ms", "GB/s") + (("TFLOP/s",) if gemm else ()) + ("err", "status")
    rows = [head]
    for r in records:
        row = (r["variant"], shape_str(r["shape"]), _fmt(r["median_ms"], ".4f"), _fmt(r["gbps"], ".1f"))
        if gemm:
            row += (_fmt(r.get("tflops"), ".1f"),)
        row += (_fmt(r["max_rel_err"], ".2e"), r["status"])
        rows.append(row)
    left = (0, 1, len(head) - 1)
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = []
    for j, row in enumerate(rows):
        cells = [str(c).ljust(w) if i in left else str(c).rjust(w)
                 for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def first_line(exc):
    s = str(exc).strip()
    line = s.splitlines()[0].strip() if s else ""
    name = type(exc).__name__
    return f"{name}: {line}" if line else name


# ---------------------------------------------------------------------------------------------
# The GPU part.
# ---------------------------------------------------------------------------------------------
def probe_environment():
    """(torch, None) when torch, triton and a CUDA device are usable, else (None, reason)."""
    try:
        import torch
    except Exception as e:
        return None, f"torch is not importable ({first_line(e)})"
    if triton is None:
        return None, f"triton is not importable ({first_line(_TRITON_IMPORT_ERROR)})"
    try:
        importlib.import_module("triton.testing")  # (a plain import would make triton local)
    except Exception as e:
        return None, f"triton.testing is not importable ({first_line(e)})"
    try:
        if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
            return None, (f"no CUDA device (torch {torch.__version__}, built for CUDA "
                          f"{torch.version.cuda}; torch.cuda.is_available() is False)")
    except Exception as e:
        return None, f"no CUDA device ({first_line(e)})"
    return torch, None


class Bench:
    """Everything that runs on the GPU, given a usable torch."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.ops = _TorchOps(torch)
        self.dev = torch.device("cuda")
        self.tdtype = getattr(torch, DTYPES[args.dtype][0])
        self.tol = DTYPES[args.dtype][2]
        self.floor = DTYPES[args.dtype][3]
        self._do_bench_kwargs = self._bench_kwargs()
        self.cache_bytes = args.cache_bytes if args.cache_bytes else int(
            getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 0) or (50 << 20))
        self.plans = getattr(args, "plans", None) or {}

    # -- inputs and reference -----------------------------------------------------------------
    def make_input(self, shape):
        torch = self.torch
        g = torch.Generator(device=self.dev)
        g.manual_seed(self.args.seed)
        x64 = torch.randn(shape, generator=g, device=self.dev, dtype=torch.float64)
        if self.args.op == "gelu":
            x64.mul_(2.0)
        else:
            outlier = torch.rand(shape, generator=g, device=self.dev, dtype=torch.float64) < 1e-3
            x64 = torch.where(outlier, x64 * 20.0, x64)
            del outlier
        x = x64.to(self.tdtype).contiguous()
        del x64
        if not bool(torch.isfinite(x).all()) or float(x.abs().max()) == 0.0:
            raise RuntimeError("generated input is non-finite or all zero")
        return self.in_layout(x)

    def in_layout(self, t):
        """`t` (rows x cols) in the run's layout: itself, or with --row-stride a view of rows
        `row_stride` elements apart whose gaps hold NaN (as kernlab's strided inputs), so a
        variant that reads past a row's end shows it."""
        ld = self.args.row_stride
        if ld is None or ld == t.shape[-1]:
            return t
        torch = self.torch
        rows, cols = t.shape
        base = torch.full((rows, ld), float("nan"), dtype=t.dtype, device=t.device)
        base[:, :cols].copy_(t)
        return base[:, :cols]

    def reference(self, x):
        """The float64 reference from the (dtype-rounded) input, computed on the GPU."""
        torch = self.torch
        x = x.to(torch.float64)
        if self.args.op == "gelu":
            if self.args.gelu == "tanh":
                inner = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
                return 0.5 * x * (1.0 + torch.tanh(inner))
            return 0.5 * x * (1.0 + torch.erf(x * SQRT1_2))
        m = x.amax(dim=-1, keepdim=True)
        e = torch.exp(x - m)
        del x
        s = e.sum(dim=-1, keepdim=True)
        return e.div_(s)

    def measure(self, out, ref):
        """(max_rel_err, mismatches) of `out` (any dtype) against the float64 `ref`."""
        torch = self.torch
        rows, cols = ref.shape
        out = out.reshape(rows, cols)
        step = max(1, MEASURE_CHUNK_ELEMS // max(1, cols))
        worst, mism = 0.0, 0
        for r0 in range(0, rows, step):
            o = out[r0:r0 + step].to(torch.float64)
            e, m = rel_err_array(self.ops, o, ref[r0:r0 + step], self.floor)
            del o
            worst = max(worst, e)
            mism += m
        return worst, mism

    # -- the variants -------------------------------------------------------------------------
    def manual_fn(self):
        """The lecture's eager composition. With --manual-precision f32 (the default) a 16-bit
        input is cast to f32 first and the result back at the end, as kernlab's own manual
        tier does; with 'input' every op runs in the input dtype."""
        torch = self.torch
        upcast = self.args.manual_precision == "f32" and self.tdtype != torch.float32
        if self.args.op == "gelu":
            if self.args.gelu == "tanh":
                def core(x):
                    return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))
            else:
                def core(x):
                    return 0.5 * x * (1 + torch.erf(x * 0.7071067811865476))
        else:
            def core(x):
                return manual_softmax(torch, x)

        if not upcast:
            return core

        def manual(x):
            return core(x.float()).to(x.dtype)

        return manual

    def native_fn(self):
        torch = self.torch
        if self.args.op == "gelu":
            approx = "tanh" if self.args.gelu == "tanh" else "none"
            return lambda x: torch.nn.functional.gelu(x, approximate=approx)
        return lambda x: torch.softmax(x, dim=-1)

    def compile_fn(self):
        torch = self.torch
        try:
            torch._dynamo.reset()  # a fresh, shape-specialised compile for every shape
        except Exception:
            pass
        mode = None if self.args.compile_mode == "default" else self.args.compile_mode
        return torch.compile(self.manual_fn(), dynamic=False, mode=mode)

    def kernlab_fn(self, shape):
        """kernlab's launch at this shape (from --kernlab-plans) as (fn(x) -> out, note): the
        same kernel from kernlab's module image, with the same launch shape and arguments, on
        PyTorch's tensors (contiguous, 16-byte aligned, as kernlab's were) and the stream
        current when it is built (the one validation and do_bench run on)."""
        torch = self.torch
        plan = self.plans[tuple(shape)]
        k = DriverKernel(plan["image_bytes"], plan["kernel"], plan["smem"])
        ct = k.ct
        scalars = [ct.c_int32(a["i32"]) if "i32" in a else ct.c_int64(a["i64"])
                   for a in plan["args"][2:]]
        grid, block, smem = tuple(plan["grid"]), tuple(plan["block"]), plan["smem"]
        rows, cols = shape

        # The launch is built once, on the stream timing runs on; a call moves the two pointers
        # and launches, so its Python side stays far below do_bench's flush (a process whose
        # Python is slow would otherwise time our calls' Python, as compile's can be).
        xp, yp = ct.c_void_p(), ct.c_void_p()
        go = k.launcher(grid, block, smem, torch.cuda.current_stream().cuda_stream,
                        [xp, yp] + scalars)
        want, tdtype = (rows, cols), self.tdtype

        def run(x):
            ptr = x.data_ptr()
            if x.shape != want or x.dtype != tdtype or ptr % 16 or not x.is_contiguous():
                raise RuntimeError(f"the plan is for a contiguous, 16-byte aligned {rows}x{cols} "
                                   f"{self.args.dtype} tensor")
            out = torch.empty_like(x)
            xp.value, yp.value = ptr, out.data_ptr()
            go()
            return out

        note = (f"kernlab's auto ({plan.get('picked') or '?'}: {plan['kernel']}, grid "
                f"{'x'.join(map(str, grid))}, block {'x'.join(map(str, block))}"
                f"{f', {smem} B shared' if smem else ''}), launched from kernlab's module image "
                f"in this process")
        return run, note

    def triton_fn(self, shape):
        """(fn(x, out=None), note), or raises where the kernel cannot run this case."""
        torch = self.torch
        rows, cols = shape
        if self.args.op == "gelu":
            if self.args.gelu == "erf":
                if not triton_erf_available():
                    raise RuntimeError("tl.math.erf is not available in this Triton; erf kernel skipped")
                kernel, note = _triton_gelu_erf_kernel, "erf via tl.math.erf, f32 arithmetic"
            else:
                kernel = _triton_gelu_tanh_kernel
                note = ("tanh via exp(2a) as the lecture, 2a clamped at 80 (unclamped, x >~ 10 "
                        "gives inf/inf = NaN); f32 arithmetic")
            block = TRITON_GELU_BLOCK

            def run(x, out=None):
                if not x.is_contiguous():
                    raise RuntimeError("the lecture's 1-D Triton GeLU reads a flat buffer: rows "
                                       "with a stride (--row-stride) are not for it")
                y = torch.empty_like(x) if out is None else out
                n = x.numel()
                grid = (triton.cdiv(n, block),)
                kernel[grid](x, y, n, BLOCK_SIZE=block, WIDE=(n + block >= 2 ** 31))
                return y

            return run, note

        block = triton.next_power_of_2(cols)
        if block > TRITON_SOFTMAX_MAX_BLOCK:
            raise ValueError(f"row too wide for the one-block-per-row Triton softmax: "
                             f"BLOCK_SIZE={block} > {TRITON_SOFTMAX_MAX_BLOCK}")
        warps = softmax_num_warps(block)
        note = f"BLOCK_SIZE={block}, num_warps={warps}, f32 arithmetic"

        def run(x, out=None):
            y = torch.empty_like(x) if out is None else out
            _triton_softmax_kernel[(x.shape[0],)](
                x, y, x.stride(0), y.stride(0), x.shape[1], BLOCK_SIZE=block, num_warps=warps)
            return y

        return run, note

    # -- matmul / linear: inputs, reference, measure, variants --------------------------------
    def make_gemm_inputs(self, shape):
        """a [M,K] ~ N(0,1), w [N,K] ~ N(0,1)/sqrt(K) (so a.w^T is O(1)), bias [N] ~ N(0,1)/2
        for linear; drawn in float64 from --seed, rounded to the dtype, contiguous."""
        torch = self.torch
        m, n, k = shape
        g = torch.Generator(device=self.dev)
        g.manual_seed(self.args.seed)

        def draw(dims, scale):
            t64 = torch.randn(dims, generator=g, device=self.dev, dtype=torch.float64)
            if scale != 1.0:
                t64.mul_(scale)
            t = t64.to(self.tdtype).contiguous()
            del t64
            if not bool(torch.isfinite(t).all()) or float(t.abs().max()) == 0.0:
                raise RuntimeError("generated input is non-finite or all zero")
            return t

        a = draw((m, k), 1.0)
        w = draw((n, k), 1.0 / math.sqrt(k))
        b = draw((n,), 0.5) if self.args.op == "linear" else None
        return a, w, b

    def gemm_reference(self, a, w, b, rows):
        """(row index tensor, float64 reference of those output rows) from the dtype-rounded
        inputs, on the GPU: act(a[rows] . w^T + bias) in float64."""
        torch = self.torch
        idx = torch.tensor(rows, device=self.dev, dtype=torch.long)
        a64 = a.index_select(0, idx).to(torch.float64)
        w64 = w.to(torch.float64)
        y = a64 @ w64.t()
        del a64, w64
        if b is not None:
            y += b.to(torch.float64)
        act = self.args.activation
        if act == "gelu-tanh":
            y = 0.5 * y * (1.0 + torch.tanh(SQRT_2_OVER_PI * (y + 0.044715 * y * y * y)))
        elif act == "gelu-erf":
            y = 0.5 * y * (1.0 + torch.erf(y * SQRT1_2))
        return idx, y

    def gemm_measure(self, out, idx, ref):
        """(max row relative L2 error, mismatches, element-wise max_rel_err) of the checked
        rows of `out` against the float64 `ref`."""
        o = out.index_select(0, idx).to(self.torch.float64)
        err, mism = row_rel_l2_array(self.ops, o, ref)
        elem, _ = rel_err_array(self.ops, o, ref, self.floor)
        return err, mism, elem

    def gemm_manual_fn(self):
        """linear as the lecture composes it eagerly: y = x @ w.t(); y = y + b; the multi-op
        GeLU. The matmul rounds to the input dtype (what `@` returns); with --manual-precision
        f32 (default) a 16-bit y is then cast to f32 for the bias add and GeLU, and the result
        back at the end; with 'input' every op runs in the input dtype."""
        torch = self.torch
        act = self.args.activation
        upcast = self.args.manual_precision == "f32" and self.tdtype != torch.float32

        def gelu_manual(y):
            if act == "gelu-tanh":
                return 0.5 * y * (1 + torch.tanh(0.79788456 * (y + 0.044715 * y * y * y)))
            if act == "gelu-erf":
                return 0.5 * y * (1 + torch.erf(y * 0.7071067811865476))
            return y

        def manual(x, w, b):
            y = x @ w.t()
            if upcast:
                y = y.float()
            y = y + b
            y = gelu_manual(y)
            return y.to(x.dtype) if upcast else y

        return manual

    def gemm_native_fn(self):
        torch = self.torch
        F = torch.nn.functional
        if self.args.op == "matmul":
            def native(x, w, b):
                return x @ w.t()
        else:
            act = self.args.activation
            if act == "none":
                def native(x, w, b):
                    return F.linear(x, w, b)
            else:
                approx = "tanh" if act == "gelu-tanh" else "none"

                def native(x, w, b):
                    return F.gelu(F.linear(x, w, b), approximate=approx)
        return native

    def gemm_native_out_fn(self):
        """torch_native with an out= (matmul only: torch.matmul has one, F.linear has not)."""
        torch = self.torch
        if self.args.op != "matmul":
            return None

        def native_out(x, w, b, out):
            return torch.matmul(x, w.t(), out=out)

        return native_out

    def gemm_compile_fn(self):
        torch = self.torch
        try:
            torch._dynamo.reset()  # a fresh, shape-specialised compile for every shape
        except Exception:
            pass
        mode = None if self.args.compile_mode == "default" else self.args.compile_mode
        return torch.compile(self.gemm_native_fn(), dynamic=False, mode=mode)

    def gemm_triton_fn(self, shape):
        """(fn(x, w, b, out=None), note) for the autotuned Triton GEMM."""
        torch = self.torch
        m, n, k = shape
        act = ACTIVATION_CODES[self.args.activation] if self.args.op == "linear" else 0
        if act == 2 and not triton_erf_available():
            raise RuntimeError("tl.math.erf is not available in this Triton; erf epilogue skipped")
        dot_mode = triton_dot_mode(self.args.dtype)
        wide = max((m + 256) * k, (n + 256) * k, (m + 256) * n) >= 2 ** 31
        kernel = _triton_gemm_kernel

        def grid(meta):
            return (triton.cdiv(m, meta["BLOCK_M"]) * triton.cdiv(n, meta["BLOCK_N"]),)

        def run(x, w, b, out=None):
            c = torch.empty((m, n), device=x.device, dtype=x.dtype) if out is None else out
            kernel[grid](x, w, c if b is None else b, c, m, n, k,
                         x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                         c.stride(0), c.stride(1),
                         HAS_BIAS=b is not None, ACTIVATION=act, DOT_MODE=dot_mode, WIDE=wide)
            return c

        parts = ["tiled GEMM, GROUP_M tile order, masked edges, f32 accumulation"]
        if self.args.op == "linear":
            parts.append(f"bias + {self.args.activation} fused in the epilogue")
        if dot_mode:
            parts.append("f32 inputs: tl.dot input_precision='ieee' (exact f32 on CUDA cores, slow)"
                         if dot_mode == 1 else "f32 inputs: tl.dot allow_tf32=False (exact f32, slow)")
        if wide:
            parts.append("64-bit offsets")
        return run, ", ".join(parts)

    @staticmethod
    def triton_best_config():
        cfg = getattr(_triton_gemm_kernel, "best_config", None)
        if cfg is None:
            return None
        try:
            bm, bn, bk, g, st, w = _config_tuple(cfg)
        except Exception:
            return str(cfg)
        return f"autotuned: BLOCK {bm}x{bn}x{bk}, GROUP_M {g}, {st} stages, {w} warps"

    def run_gemm_shape(self, shape, variants, log):
        torch = self.torch
        a = self.args
        m, n, k = shape
        recs = {v: make_record(a.op, v, a.dtype, shape, None, a.activation) for v in variants}
        try:
            x, w, b = self.make_gemm_inputs(shape)
            rows = sample_rows(m, n, a.seed)
            idx, ref = self.gemm_reference(x, w, b, rows)
        except Exception as e:
            msg = f"input/reference: {first_line(e)}"
            for r in recs.values():
                r["note"] = msg
            torch.cuda.empty_cache()
            return list(recs.values())
        checked = (f"checked all {m} rows" if len(rows) == m else
                   f"checked {len(rows)} sampled rows (first, last, seeded random) x all {n} columns")
        out_bytes = m * n * DTYPES[a.dtype][1]

        fns = {}
        for v in variants:
            r = recs[v]
            notes = []
            try:
                out_fn = None
                if v == "torch_manual":
                    fn = self.gemm_manual_fn()
                    if self.tdtype != torch.float32:
                        notes.append(f"x @ w.t() rounds to {a.dtype}; bias add and GeLU in f32 "
                                     f"(y.float() ... .to(dtype))" if a.manual_precision == "f32"
                                     else f"every op in {a.dtype} (--manual-precision input)")
                elif v == "torch_native":
                    fn = self.gemm_native_fn()
                    out_fn = self.gemm_native_out_fn()
                elif v == "torch_compile":
                    fn = self.gemm_compile_fn()
                    notes.append("torch.compile of the torch_native function, compiled once for "
                                 "this shape (dynamic=False) before timing")
                else:
                    fn, tnote = self.gemm_triton_fn(shape)
                    notes.append(tnote)
                    out_fn = fn
                    warm = torch.empty((m, n), device=self.dev, dtype=self.tdtype)
                    fn(x, w, b, warm)  # the first call autotunes (every config writes c)
                    del warm
                    best = self.triton_best_config()
                    if best:
                        notes.append(best)

                # Validate: a NaN-filled out= where the API has one, then the plain call (the
                # one timed) on a poisoned allocator; the worst of the two counts.
                outs = []
                if out_fn is not None:
                    o = torch.full((m, n), float("nan"), device=self.dev, dtype=self.tdtype)
                    out_fn(x, w, b, o)
                    outs.append(o)
                self.poison_allocator(None, nbytes=out_bytes)
                outs.append(fn(x, w, b))  # torch_compile compiles here, on its first call
                torch.cuda.synchronize()
                err = elem = 0.0
                mism = 0
                for o in outs:
                    if tuple(o.shape) != (m, n) or o.dtype != self.tdtype:
                        raise RuntimeError(f"output is {tuple(o.shape)} {o.dtype}, "
                                           f"want {(m, n)} {self.tdtype}")
                    e1, m1, el1 = self.gemm_measure(o, idx, ref)
                    err, elem, mism = max(err, e1), max(elem, el1), mism + m1
                del outs, o
                notes.append(checked)
                if mism:
                    r["status"] = "failed"
                    notes.append(f"{mism} elements NaN/inf where the reference is not (or the reverse)")
                else:
                    r["max_rel_err"] = err
                    r["max_elem_rel_err"] = elem
                    if err <= self.tol:
                        r["status"] = "ok"
                        r["validated"] = True
                        r["validated_rows"] = len(rows)
                        fns[v] = fn
                    else:
                        r["status"] = "failed"
                        notes.append(f"max row relative L2 error {err:.3e} > tolerance {self.tol:.0e}")
            except Exception as e:
                r["status"] = "error"
                r["validated"] = False
                notes.append(first_line(e))
                fns.pop(v, None)
            r["note"] = "; ".join(notes) if notes else None
            torch.cuda.empty_cache()

        del ref, idx
        torch.cuda.empty_cache()

        xs = None  # the inputs and their copies for --rotate, made before the first timing
        for v in variants:
            r = recs[v]
            if v not in fns:
                log(r)
                continue
            fn = fns[v]
            try:
                if xs is None:
                    xs = self.rotated((x, w, b), r["bytes"])
                med = self.time_record(r, fn, xs)
                if med and med > 0:
                    r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9
                    r["tflops"] = r["flops"] / (med * 1e-3) / 1e12
            except Exception as e:
                timing_failed(r, e)
            torch.cuda.empty_cache()
            log(r)

        del x, w, b, xs, fns
        torch.cuda.empty_cache()
        return [recs[v] for v in variants]

    # -- timing -------------------------------------------------------------------------------
    def _bench_kwargs(self):
        """do_bench's keywords for this Triton. In 3.x: do_bench(fn, warmup=25, rep=100,
        grad_to_none=None, quantiles=None, return_mode="mean"); with `quantiles` given it
        returns those quantiles (a list) and return_mode is ignored. Old 2.0 took
        `percentiles` and returned (median, *percentiles)."""
        import inspect
        import triton.testing as tt

        try:
            params = inspect.signature(tt.do_bench).parameters
        except (TypeError, ValueError):
            params = {}
        kw = {"warmup": self.args.warmup_ms, "rep": self.args.rep_ms}
        if "quantiles" in params or not params:
            kw["quantiles"] = [0.5, 0.2, 0.8]
        elif "percentiles" in params:
            kw["percentiles"] = [0.2, 0.8]
        if "return_mode" in params:
            kw["return_mode"] = "median"
        return kw

    def rotated(self, inputs, call_bytes):
        """The tuple of a call's inputs and its copies for --rotate (a call reads them and
        writes its output: call_bytes in all), so no timed call finds its inputs in L2 or
        reuses the last calls' pages; None (matmul's bias) stays None. The copies are made
        only when there is room for them, their outputs (one more while a ring slot is being
        replaced) and do_bench's flush buffer (256 MiB)."""
        a = self.args
        n = rotate_copies(a.rotate, call_bytes, self.cache_bytes)
        inputs = tuple(inputs)

        def strided(t):  # an input in --row-stride's layout: its copies keep it
            return (t is not None and a.row_stride is not None and t.dim() == 2
                    and not t.is_contiguous())

        if n > 1:
            free, _ = self.torch.cuda.mem_get_info()
            need = (n + 1) * call_bytes + (256 << 20)
            # A strided copy also holds its gaps.
            need += (n - 1) * sum((t.shape[0] * a.row_stride - t.numel()) * t.element_size()
                                  for t in inputs if strided(t))
            if need > free:
                raise RuntimeError(f"--rotate {a.rotate}: {n} copies of {call_bytes} bytes "
                                   f"(inputs and output) and the flush buffer need {need} "
                                   f"bytes; {free} are free")
        # A strided row view's clone would be contiguous: copies keep the run's layout.
        return [inputs] + [tuple(None if t is None else
                                 (self.in_layout(t) if strided(t) else t.clone())
                                 for t in inputs)
                           for _ in range(n - 1)]

    @staticmethod
    def cycling(fn, xs, sync=None):
        """A call of fn on the next tuple of xs, its output kept in a ring slot until that copy
        comes round again, so the outputs move between blocks as well (which block a call
        gets is the caching allocator's choice). With several copies the ring is filled once
        (one call on every copy, then `sync()`) before the closure is returned, so no timed
        call pays for a first allocation (as kernlab warms every copy). With one copy:
        fn(*xs[0]), nothing kept."""
        if len(xs) == 1:
            args = xs[0]
            return lambda: fn(*args)
        ring = [None] * len(xs)
        state = [0]

        def call():
            i = state[0]
            ring[i] = fn(*xs[i])
            state[0] = (i + 1) % len(xs)

        for _ in xs:
            call()
        if sync is not None:
            sync()
        return call

    def time(self, fn):
        """(median_ms, p20_ms, p80_ms) of fn() by triton.testing.do_bench."""
        import gc
        import triton.testing as tt

        # No garbage collection inside the timed loop (as timeit): a collection there holds up
        # the next launch, and the GPU, done with the flush, waits for it inside the events.
        was = gc.isenabled()
        gc.disable()
        try:
            res = tt.do_bench(fn, **self._do_bench_kwargs)
        finally:
            if was:
                gc.enable()
        if isinstance(res, (list, tuple)):
            vals = [float(v) for v in res]
            if len(vals) >= 3:
                return vals[0], vals[1], vals[2]
            if vals:
                return vals[0], None, None
            raise RuntimeError("do_bench returned nothing")
        return float(res), None, None

    def time_round(self, fn, xs):
        """One round: fn over the copies xs (`cycling`, its ring of outputs freed again when the
        round ends), timed by do_bench: (median, p20, p80) in ms."""
        call = self.cycling(fn, xs, self.torch.cuda.synchronize)
        try:
            return self.time(call)
        finally:
            del call

    def time_record(self, r, fn, xs):
        """Time fn over the copies xs into record r, one round (`time_round`, `finish_record`).
        Returns the median, ms."""
        return self.finish_record(r, fn, xs, [self.time_round(fn, xs)])

    def finish_record(self, r, fn, xs, rounds):
        """Record r from the rounds (median, p20, p80) that fn over the copies xs was timed in
        (`summarise_rounds`): its rotate_copies, the kept round's median, p20 and p80, with more
        than one round (each median finite and positive) every round's median and their spread,
        its queued median and a note where the time is host-bound (`host_check`, on a fresh
        ring of outputs; a check that fails keeps the timing and says why), under
        SETTLED_BELOW_MS its settled median (`settled_check`, likewise), and a note where
        do_bench gave no quantiles. Returns the median, ms."""
        (med, p20, p80), medians, spread = summarise_rounds(rounds)
        r["rotate_copies"] = len(xs) if len(xs) > 1 else None
        r["median_ms"], r["p20_ms"], r["p80_ms"] = med, p20, p80
        if len(rounds) > 1 and all(m is not None and math.isfinite(m) and m > 0 for m in medians):
            r["repeat_medians_ms"], r["spread"] = medians, spread
        try:
            call = self.cycling(fn, xs, self.torch.cuda.synchronize)
            note, r["queued_ms"] = self.host_check(call, med)
            del call
            add_note(r, note)
        except Exception as e:
            add_note(r, f"host check: {first_line(e)}")
        if med is not None and 0 < med < SETTLED_BELOW_MS:
            try:
                call = self.cycling(fn, xs, self.torch.cuda.synchronize)
                r["settled_ms"] = self.settled_check(call)
                del call
            except Exception as e:
                add_note(r, f"settled timing: {first_line(e)}")
        if p20 is None:
            add_note(r, "do_bench gave no quantiles")
        return med

    def host_check(self, call, median_ms):
        """(host_bound_note, the queued median in ms) for `call` as do_bench timed it
        (median_ms); (None, None) where it does not run. It measures the GPU's µs for the
        flush alone; then HOST_CHECK_CALLS iterations of do_bench's loop (a 256 MiB flush, two
        event records, the call) issued while the GPU is held back by a sleep kernel, so that
        every launch is queued before the GPU reaches it: the host's µs an iteration, and the
        median µs between the events with no wait in them. None past 1 ms a call (no Python
        side outlasts a flush and such a call) or where torch.cuda._sleep is missing."""
        import gc
        import time as clock
        torch = self.torch
        if not median_ms or median_ms > 1.0 or not hasattr(torch.cuda, "_sleep"):
            return None, None
        cache = torch.empty((256 << 20) // 4, dtype=torch.int, device=self.dev)  # do_bench's
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(6)]
        torch.cuda.synchronize()
        for i in range(5):
            ev[i].record()
            cache.zero_()
        ev[5].record()
        torch.cuda.synchronize()
        flush_us = sorted(ev[i].elapsed_time(ev[i + 1]) for i in range(5))[2] * 1e3

        def loop(n):
            pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                     for _ in range(n)]
            t0 = clock.perf_counter()
            for start, end in pairs:
                cache.zero_()
                start.record()
                call()
                end.record()
            return pairs, (clock.perf_counter() - t0) / n * 1e6

        was = gc.isenabled()
        gc.disable()
        try:
            _, guess_us = loop(3)  # the host's pace, to size the hold
            torch.cuda.synchronize()
            # Hold the GPU for three times the loop's host time (clock rate in kHz; 2 GHz where
            # it is not known; at most 0.5 s).
            khz = getattr(torch.cuda.get_device_properties(self.dev), "clock_rate", 0) or 2_000_000
            hold_us = min(3 * HOST_CHECK_CALLS * max(guess_us, flush_us), 500_000)
            torch.cuda._sleep(int(hold_us * khz / 1000))
            pairs, host_us = loop(HOST_CHECK_CALLS)
        finally:
            if was:
                gc.enable()
        torch.cuda.synchronize()
        queued_us = sorted(s.elapsed_time(e) for s, e in pairs)[len(pairs) // 2] * 1e3
        del cache
        if not queued_us > 0:  # events that measured nothing: no queued median
            return None, None
        return host_bound_note(host_us, flush_us, median_ms * 1e3, queued_us), queued_us / 1e3

    def settled_check(self, call):
        """The settled median of `call`, ms (kernlab's `CudaTimer::settled`, the same form):
        SETTLED_CALLS iterations of do_bench's loop (a 256 MiB flush, the start event, the call,
        the end event), each with the stream parked behind its flush on a word of mapped host
        memory (`cuStreamWaitValue32`) while the host queues the events and the call; once the
        flush has finished the host writes the word. The GPU runs the events and the call as one
        batch, idle before them, and no host time falls between the events, whatever the
        host's pace: a call read 0.5-1.2 µs more with every launch queued ahead than with the GPU
        idle before its events, and do_bench's own loop queues as far ahead as its host keeps up
        (kernlab's docs/perf-notes.md, thirtieth session). A call that waits on the
        GPU from the host while parked is freed by a watchdog and fails the check."""
        import statistics
        import threading
        import time as clock
        torch = self.torch
        gate = self.settled_gate()
        cache = torch.empty((256 << 20) // 4, dtype=torch.int, device=self.dev)  # do_bench's
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                 for _ in range(SETTLED_CALLS)]
        flushed = torch.cuda.Event()
        parked = [None]  # (ticket, since) while the stream is parked
        fired, done = threading.Event(), threading.Event()

        def watch():
            while not done.wait(0.005):
                p = parked[0]
                if p is not None and clock.monotonic() - p[1] > SETTLED_WATCHDOG_S:
                    fired.set()
                    gate.release(p[0])

        dog = threading.Thread(target=watch, daemon=True)
        dog.start()
        try:
            call()
            torch.cuda.synchronize()
            for a, b in pairs:
                cache.zero_()
                flushed.record()
                t = gate.park(torch.cuda.current_stream().cuda_stream)
                parked[0] = (t, clock.monotonic())
                try:
                    a.record()
                    call()
                    b.record()
                finally:
                    try:
                        flushed.synchronize()
                    finally:
                        gate.release(t)
                        parked[0] = None
                if fired.is_set():
                    raise RuntimeError("the stream stayed parked over 0.5 s while the call was "
                                       "being queued: the call waited on the GPU from the host "
                                       "(it synchronises, or its launch blocked), or the host "
                                       "stalled; the form cannot time it")
            torch.cuda.synchronize()
        finally:
            gate.release(gate.ticket)  # whatever ended the loop, no ticket is left parked
            done.set()
            dog.join()
        del cache
        # The median as kernlab's harness takes it (the mean of the two middle ones for an even
        # count), not the upper middle one.
        return statistics.median(a.elapsed_time(b) for a, b in pairs)

    def settled_gate(self):
        """The process's `SettledGate`, made and checked at its first use."""
        if getattr(self, "_gate", None) is None:
            self._gate = SettledGate(self.torch)
        return self._gate

    # -- the copy ceiling, PyTorch's side ----------------------------------------------------------
    def copy_ceiling(self, nbytes):
        """dst.copy_(src) of `nbytes` (a device-to-device memcpy for contiguous same-dtype
        tensors), timed like every variant. kernlab times the same copy (cuMemcpyDtoDAsync of
        1 GiB) for its ceiling, so the two figures compare one kernel under two harnesses."""
        torch = self.torch
        n = nbytes // 4
        src = torch.randn(n, device=self.dev, dtype=torch.float32)
        dst = torch.empty_like(src)
        med, p20, p80 = self.time(lambda: dst.copy_(src))
        if not torch.equal(dst, src):
            raise RuntimeError("copy_ produced a different tensor")
        del src, dst
        torch.cuda.empty_cache()
        return {"bytes": n * 4, "median_ms": med, "p20_ms": p20, "p80_ms": p80,
                "gbps": 2.0 * n * 4 / (med * 1e-3) / 1e9}

    # -- one shape ----------------------------------------------------------------------------
    def poison_allocator(self, like, nbytes=None):
        """Leave a freed, 0xFF-filled block (NaN in f32, bf16 and f16) of the output's size
        (`like`'s, or `nbytes`) in the caching allocator, so an output that lands there and is
        not fully written shows up as NaN. Best effort: the op may be handed another block."""
        torch = self.torch
        if nbytes is None:
            nbytes = like.numel() * like.element_size()
        junk = torch.empty(nbytes, dtype=torch.uint8, device=self.dev)
        junk.fill_(0xFF)
        del junk

    def run_shape(self, shape, variants, log):
        torch = self.torch
        a = self.args
        gelu = a.gelu if a.op == "gelu" else None
        if tuple(shape) in self.plans:
            variants = list(variants) + [KERNLAB_VARIANT]
        recs = {v: make_record(a.op, v, a.dtype, shape, gelu) for v in variants}
        if KERNLAB_VARIANT in recs:
            recs[KERNLAB_VARIANT]["picked"] = self.plans[tuple(shape)].get("picked")
        try:
            x = self.make_input(shape)
            ref = self.reference(x)
        except Exception as e:
            msg = f"input/reference: {first_line(e)}"
            for r in recs.values():
                r["note"] = msg
            torch.cuda.empty_cache()
            return list(recs.values())

        fns = {}
        for v in variants:
            r = recs[v]
            notes = []
            try:
                if v == "torch_manual":
                    fn = self.manual_fn()
                elif v == "torch_native":
                    fn = self.native_fn()
                elif v == "torch_compile":
                    fn = self.compile_fn()
                elif v == KERNLAB_VARIANT:
                    fn, knote = self.kernlab_fn(shape)
                    notes.append(knote)
                else:
                    tfn, tnote = self.triton_fn(shape)
                    notes.append(tnote)
                    fn = tfn
                if v in ("torch_manual", "torch_compile") and self.tdtype != torch.float32:
                    notes.append("f32 intermediates (x.float() in, .to(dtype) out)"
                                 if a.manual_precision == "f32" else
                                 f"every op in {a.dtype} (--manual-precision input)")
                if v == "torch_compile":
                    notes.append("compiled once for this shape (dynamic=False) before timing")
                if v == "torch_native" and a.op == "softmax" and not x.is_contiguous():
                    notes.append("strided rows: ATen's softmax copies them contiguous first "
                                 "(that copy is in its time)")

                # Validate: poisoned output, the float64 comparison.
                self.poison_allocator(x)
                if v == "triton":
                    out = torch.full_like(x, float("nan"))
                    fn(x, out)
                else:
                    out = fn(x)  # torch_compile compiles here, on its first call
                torch.cuda.synchronize()
                if tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype:
                    raise RuntimeError(f"output is {tuple(out.shape)} {out.dtype}, "
                                       f"want {tuple(x.shape)} {x.dtype}")
                err, mism = self.measure(out, ref)
                del out
                if mism:
                    r["status"] = "failed"
                    r["max_rel_err"] = None
                    notes.append(f"{mism} elements NaN/inf where the reference is not (or the reverse)")
                else:
                    r["max_rel_err"] = err
                    if err <= self.tol:
                        r["status"] = "ok"
                        r["validated"] = True
                        fns[v] = fn
                    else:
                        r["status"] = "failed"
                        notes.append(f"max_rel_err {err:.3e} > tolerance {self.tol:.0e}")
            except Exception as e:
                r["status"] = "error"
                r["validated"] = False
                notes.append(first_line(e))
                fns.pop(v, None)
            r["note"] = "; ".join(notes) if notes else None
            torch.cuda.empty_cache()

        del ref
        torch.cuda.empty_cache()

        def failed(r, e):
            timing_failed(r, e)
            fns.pop(r["variant"], None)

        # --repeat K: K rounds, each timing every variant in turn, so that a drift in the GPU's
        # state over the shape's timings falls on every variant alike.
        xs = None  # the input and its copies for --rotate, made before the first timing
        rounds = {}
        for _ in range(a.repeat):
            for v in [v for v in variants if v in fns]:
                r = recs[v]
                try:
                    if xs is None:
                        xs = self.rotated((x,), r["bytes"])
                    rounds.setdefault(v, []).append(self.time_round(fns[v], xs))
                except Exception as e:
                    failed(r, e)
                torch.cuda.empty_cache()
        for v in variants:
            r = recs[v]
            if v in fns:
                try:
                    med = self.finish_record(r, fns[v], xs, rounds[v])
                    r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9 if med and med > 0 else None
                except Exception as e:
                    failed(r, e)
            log(r)

        del x, xs, fns
        torch.cuda.empty_cache()
        return [recs[v] for v in variants]


def configure_matmul_precision(torch):
    """TF32 off, float32 matmul precision "highest" (so f32 GEMMs are exact f32, as kernlab's
    f32 kernels are); returns the settings as torch reports them afterwards, for the JSON. The
    16-bit reduced-precision-reduction flags are left at PyTorch's defaults and recorded."""
    settings = {}
    errors = []
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
    except Exception as e:
        errors.append(f"allow_tf32: {first_line(e)}")
    try:
        torch.set_float32_matmul_precision("highest")
    except Exception as e:
        errors.append(f"set_float32_matmul_precision: {first_line(e)}")
    probes = (
        ("float32_matmul_precision", lambda: str(torch.get_float32_matmul_precision())),
        ("cuda_matmul_allow_tf32", lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        ("cuda_matmul_fp32_precision",  # the newer API's view (torch >= 2.9), else null
         lambda: getattr(torch.backends.cuda.matmul, "fp32_precision", None)),
        ("cudnn_allow_tf32", lambda: bool(torch.backends.cudnn.allow_tf32)),
        ("allow_bf16_reduced_precision_reduction",
         lambda: bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)),
        ("allow_fp16_reduced_precision_reduction",
         lambda: bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction)),
    )
    for key, get in probes:
        try:
            settings[key] = get()
        except Exception as e:
            settings[key] = None
            errors.append(f"{key}: {first_line(e)}")
    if settings.get("cuda_matmul_allow_tf32") or settings.get("float32_matmul_precision") not in (None, "highest"):
        errors.append("TF32 is still allowed: f32 GEMMs are not exact (validation will show it)")
    if errors:
        settings["errors"] = errors
    return settings


def run_benchmarks(torch, args):
    matmul_settings = configure_matmul_precision(torch)
    bench = Bench(torch, args)
    doc = {
        "available": True,
        "torch_version": str(torch.__version__),
        "triton_version": str(getattr(triton, "__version__", "unknown")),
        "device": torch.cuda.get_device_name(torch.cuda.current_device()),
        "seed": int(args.seed),
        "cuda_version": torch.version.cuda,
        "timer": "triton.testing.do_bench, L2 flushed before each call, Python's garbage "
                 "collector off while it runs",
        "rotate": args.rotate,
        "repeat": args.repeat if args.op not in GEMM_OPS else 1,
        "warmup_ms": args.warmup_ms,
        "rep_ms": args.rep_ms,
        "manual_precision": args.manual_precision,
        "compile_mode": args.compile_mode,
        "row_stride": args.row_stride,
        "matmul_settings": matmul_settings,
        "records": [],
    }
    if args.op in GEMM_OPS:
        doc["activation"] = args.activation
        doc["gemm_validation"] = (f"max over checked rows of ||out - ref||_2 / ||ref||_2 against a "
                                  f"float64 reference from the rounded inputs; all rows when "
                                  f"M <= {GEMM_SAMPLE_ROWS} or M*N <= {GEMM_FULL_CHECK_ELEMS}, "
                                  f"else {GEMM_SAMPLE_ROWS} rows")

    def log(r):
        if args.quiet:
            return
        form = r["gelu"] or (r.get("activation") if r["op"] == "linear" else None)
        tflops = f" {_fmt(r.get('tflops'), '.1f')} TFLOP/s" if r["op"] in GEMM_OPS else ""
        print(f"{PROG}: {r['op']}{'/' + form if form else ''} {r['dtype']} "
              f"{shape_str(r['shape'])} {r['variant']}: {r['status']}"
              f" err {_fmt(r['max_rel_err'], '.2e')} median {_fmt(r['median_ms'], '.4f')} ms"
              f" {_fmt(r['gbps'], '.1f')} GB/s{tflops}" + (f" ({r['note']})" if r["note"] else ""),
              file=sys.stderr, flush=True)

    rc = EXIT_OK
    try:
        if args.copy_bytes > 0:
            doc["copy"] = bench.copy_ceiling(args.copy_bytes)
            if not args.quiet:
                c = doc["copy"]
                print(f"{PROG}: copy_ of {c['bytes']} bytes: {c['median_ms']:.4f} ms, "
                      f"{c['gbps']:.0f} GB/s (read + written)", file=sys.stderr, flush=True)
        run_shape = bench.run_gemm_shape if args.op in GEMM_OPS else bench.run_shape
        for shape in args.shape_list:
            doc["records"].extend(run_shape(shape, args.variant_list, log))
    except BaseException as e:  # keep what was measured, say the run is incomplete
        doc["incomplete"] = first_line(e)
        print(f"{PROG}: run stopped early: {first_line(e)}", file=sys.stderr)
        rc = EXIT_INTERNAL
        if not isinstance(e, Exception):
            if args.json:
                write_json(args.json, doc)
            raise
    if args.json:
        write_json(args.json, doc)
    form = args.gelu if args.op == "gelu" else (args.activation if args.op == "linear" else None)
    print(f"{args.op}{' (' + form + ')' if form else ''} {args.dtype} on "
          f"{doc['device']}, torch {doc['torch_version']}, triton {doc['triton_version']}, "
          f"seed {doc['seed']}")
    print(format_table(doc["records"]))
    return rc


# ---------------------------------------------------------------------------------------------
# --self-test
# ---------------------------------------------------------------------------------------------
def self_test():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    def raises(fn, *a):
        try:
            fn(*a)
        except ValueError:
            return True
        return False

    # Shapes and variants.
    check(parse_shapes("16384x16384") == [(16384, 16384)], "single shape")
    check(parse_shapes("16384x16384, 4096X256,1x1") == [(16384, 16384), (4096, 256), (1, 1)],
          "shape list")
    for bad in ("", "16384", "4x4x4", "0x4", "4x-1", "ax4", "4x4,", "4.5x4"):
        check(raises(parse_shapes, bad), f"shape '{bad}' accepted")
    check(parse_variants("triton,torch_native,triton") == ["triton", "torch_native"], "variants")
    check(raises(parse_variants, "torch_eager"), "unknown variant accepted")
    # --rotate, as kernlab's Rotate::copies.
    check(parse_rotate("auto") == "auto" and parse_rotate(" AUTO ") == "auto", "rotate auto")
    check(parse_rotate("3") == 3, "rotate count")
    for bad in ("0", "-2", "x", "", "1.5"):
        check(raises(parse_rotate, bad), f"rotate '{bad}' accepted")
    l2 = 60 << 20
    check(rotate_copies(1, 1 << 20, l2) == 1 and rotate_copies(7, 1, l2) == 7, "rotate counts")
    check(rotate_copies("auto", 1 << 20, l2) == 240, "rotate auto at 1 MiB a call")
    check(rotate_copies("auto", 8 << 20, l2) == 30, "rotate auto at 8 MiB a call")
    check(rotate_copies("auto", (8 << 20) + 1, l2) == 30, "rotate auto rounds up")
    check(rotate_copies("auto", 1 << 30, l2) == 1, "rotate auto past 4x L2")
    check(rotate_copies("auto", 16, l2) == ROTATE_MAX_COPIES, "rotate auto at most 1024")
    seen, synced = [], []
    call = Bench.cycling(lambda a, b: seen.append((a, b)) or [a], [(1, None), (2, None), (3, None)],
                         lambda: synced.append(len(seen)))
    check(seen == [(1, None), (2, None), (3, None)] and synced == [3],
          "cycling fills the ring (one call a copy) and syncs before it returns")
    for _ in range(4):
        call()
    check([a for a, _ in seen[3:]] == [1, 2, 3, 1], "cycling takes the copies in turn")
    one = []
    call = Bench.cycling(lambda a: one.append(a), [(7,)], lambda: one.append("sync"))
    check(one == [] and (call() or one == [7]), "one copy: no warm-up, the plain call")
    check(softmax_num_warps(1024) == 4 and softmax_num_warps(2048) == 8
          and softmax_num_warps(4096) == 16 and softmax_num_warps(131072) == 16, "num_warps")

    # matmul / linear: MxNxK shapes, variants, accounting, row sampling, autotune configs.
    check(parse_shapes("8192x8192x8192, 127X255x63,1x1x1", 3)
          == [(8192, 8192, 8192), (127, 255, 63), (1, 1, 1)], "MxNxK shape list")
    for bad in ("", "64x64", "4x4x4x4", "0x1x1", "1x-1x1", "ax1x1", "1x1x1,", "1.5x1x1"):
        check(raises(parse_shapes, bad, 3), f"MxNxK shape '{bad}' accepted")
    check([shape_ndim(o) for o in OPS] == [2, 2, 3, 3], "shape_ndim")
    check(resolve_variants("matmul", list(VARIANTS))
          == (["torch_native", "torch_compile", "triton"], ["torch_manual"]), "matmul variants")
    check(resolve_variants("linear", list(VARIANTS)) == (list(VARIANTS), []), "linear variants")
    check(resolve_variants("matmul", ["torch_manual"]) == ([], ["torch_manual"]), "matmul manual only")
    check(gemm_flops(8192, 8192, 8192) == 2 * 8192 ** 3 and gemm_flops(127, 255, 63) == 4080510,
          "gemm flops")
    check(gemm_bytes(127, 255, 63, "bf16", True) == (127 * 63 + 255 * 63 + 127 * 255 + 255) * 2
          and gemm_bytes(127, 255, 63, "bf16", False) == (127 * 63 + 255 * 63 + 127 * 255) * 2
          and gemm_bytes(8192, 8192, 8192, "f32", True) == (3 * 8192 * 8192 + 8192) * 4
          and gemm_bytes(1, 1, 1, "f16", False) == 6, "gemm bytes")
    lin = make_record("linear", "triton", "bf16", (127, 255, 63), None, "gelu-erf")
    mm = make_record("matmul", "torch_native", "f32", (8, 16, 32), None, "gelu-tanh")
    check(lin["shape"] == [127, 255, 63] and lin["flops"] == 4080510 and lin["bias"] is True
          and lin["activation"] == "gelu-erf" and lin["gelu"] is None
          and lin["bytes"] == gemm_bytes(127, 255, 63, "bf16", True)
          and lin["error_metric"] == "max_row_rel_l2", "linear record")
    check(mm["activation"] == "none" and mm["bias"] is False and mm["flops"] == 2 * 8 * 16 * 32
          and mm["bytes"] == (8 * 32 + 16 * 32 + 8 * 16) * 4 and mm["tolerance"] == 1e-4, "matmul record")
    el = make_record("softmax", "triton", "f32", (4, 8), None, "gelu-tanh")
    check(el["activation"] is None and el["bias"] is None and el["flops"] is None
          and el["error_metric"] == "elementwise_row_scaled", "softmax record's gemm keys")
    check(sample_rows(64, 1 << 20, 1) == list(range(64)), "small M: all rows")
    check(sample_rows(4096, 1024, 1) == list(range(4096)), "small output: all rows")
    rs = sample_rows(8192, 8192, 7)
    check(len(rs) == GEMM_SAMPLE_ROWS and len(set(rs)) == len(rs) and rs == sorted(rs)
          and rs[0] == 0 and rs[-1] == 8191 and all(0 <= v < 8192 for v in rs), "sampled rows")
    check(sample_rows(8192, 8192, 7) == rs and sample_rows(8192, 8192, 8) != rs, "rows follow the seed")
    check(ACTIVATION_CODES == {"none": 0, "gelu-tanh": 1, "gelu-erf": 2}, "kernlab's activation codes")
    check(4 <= len(GEMM_CONFIGS) <= 6 and all(len(c) == 6 for c in GEMM_CONFIGS), "gemm configs")
    check(gemm_configs_for(GEMM_CONFIGS, 2) == list(GEMM_CONFIGS), "16-bit keeps every config")
    f32_cfgs = gemm_configs_for(GEMM_CONFIGS, 4)
    check(f32_cfgs and all((c[0] * c[2] + c[2] * c[1]) * 4 * c[4] <= GEMM_SMEM_LIMIT for c in f32_cfgs)
          and (128, 256, 64, 8, 3, 8) not in f32_cfgs, "f32 drops the big rings")
    check(gemm_configs_for([(512, 512, 128, 8, 4, 8)], 4) == [(512, 512, 128, 8, 4, 8)],
          "never no config")
    check(triton_dot_mode("bf16") == 0 and triton_dot_mode("f16") == 0, "16-bit dot mode")

    # The GEMM measure: max over rows of ||out - ref|| / ||ref||.
    inf, nan = float("inf"), float("nan")
    row_cases = [
        ("identical", [[1.0, -2.0], [3.0, 4.0]], [[1.0, -2.0], [3.0, 4.0]], 0.0, 0),
        ("3-4-5", [[3.0, 4.5]], [[3.0, 4.0]], 0.1, 0),
        ("worst row", [[3.0, 4.5], [1.0, 0.0]], [[3.0, 4.0], [1.0, 0.0]], 0.1, 0),
        ("small row counts alone", [[1000.0, 0.0], [0.0, 0.011]], [[1000.0, 0.0], [0.0, 0.01]], 0.1, 0),
        ("NaN for finite", [[nan, 1.0]], [[1.0, 1.0]], 0.0, 1),
        ("inf for inf", [[inf, 1.0]], [[inf, 1.0]], 0.0, 0),
        ("finite for inf", [[1.0, 2.0]], [[-inf, 2.0]], 0.0, 1),
        ("zero row", [[0.0, 0.0]], [[0.0, 0.0]], 0.0, 0),
        ("zero ref", [[1e-150, 0.0]], [[0.0, 0.0]], 1e-150 / math.sqrt(MIN_POSITIVE), 0),
    ]

    # The error measure: hand-made cases (out_rows, ref_rows, dtype, want_err, want_mismatches).
    f32, bf16, f16 = (DTYPES[k][3] for k in ("f32", "bf16", "f16"))
    cases = [
        ("identical", [[1.0, -2.0, 3.0, 0.5]], [[1.0, -2.0, 3.0, 0.5]], f32, 0.0, 0),
        ("relative", [[1.0, -2.0, 3.0003, 0.5]], [[1.0, -2.0, 3.0, 0.5]], f32,
         (0.0003 - f32) / (3.0 + 3e-3), 0),
        # a value 9 decades under its row's largest is judged against 1e-3 * rowmax
        ("row floor", [[1000.0, 2e-6]], [[1000.0, 1e-6]], f32, 1e-6 / (1e-6 + 1.0), 0),
        # each row has its own scale: same absolute error, 1000x the measure in the small row
        ("per row", [[1000.0, 1.001], [1.0, 1.001]], [[1000.0, 1.0], [1.0, 1.0]], f32,
         0.001 / (1.0 + 1e-3), 0),
        ("subnormal floor f32", [[1e-45, 0.0]], [[0.0, 0.0]], f32, 0.0, 0),
        ("subnormal floor f16", [[5e-8, 1.0]], [[0.0, 1.0]], f16, 0.0, 0),
        ("over f16 floor", [[1e-7, 1.0]], [[0.0, 1.0]], f16, (1e-7 - f16) / 1e-3, 0),
        ("NaN for finite", [[nan, 1.0]], [[1.0, 1.0]], bf16, 0.0, 1),
        ("inf for finite", [[inf, 1.0]], [[1.0, 1.0]], bf16, 0.0, 1),
        ("finite for NaN", [[0.5, 1.0]], [[nan, 1.0]], f32, 0.0, 1),
        ("NaN for NaN", [[nan, 1.5]], [[nan, 1.0]], f32, 0.5 / (1.0 + 1e-3), 0),
        ("inf for inf", [[inf, -inf, 2.0]], [[inf, -inf, 2.0]], f32, 0.0, 0),
        ("wrong inf sign", [[-inf, 2.0]], [[inf, 2.0]], f32, 0.0, 1),
        ("finite for inf", [[1e30, 2.0]], [[inf, 2.0]], f32, 0.0, 1),
        # rowmax skips the non-finite reference values
        ("rowmax finite only", [[inf, 1.0, 0.002]], [[inf, 1.0, 0.001]], f32,
         0.001 / (0.001 + 1e-3), 0),
        ("all-zero row", [[0.0, 0.0]], [[0.0, 0.0]], bf16, 0.0, 0),
        ("zero ref nonzero out", [[1e-30, 0.0]], [[0.0, 0.0]], f32, (1e-30 - f32) / MIN_POSITIVE, 0),
    ]

    def close(a, b):
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= 1e-12 * max(1.0, abs(b)) or abs(a - b) <= 1e-9 * abs(b)

    for name, o, r, floor, want_e, want_m in cases:
        e, m = rel_err_py(o, r, floor)
        check(close(e, want_e) and m == want_m,
              f"rel_err_py {name}: got ({e!r}, {m}), want ({want_e!r}, {want_m})")
    for name, o, r, want_e, want_m in row_cases:
        e, m = row_rel_l2_py(o, r)
        check(close(e, want_e) and m == want_m,
              f"row_rel_l2_py {name}: got ({e!r}, {m}), want ({want_e!r}, {want_m})")
    # TF32-like input rounding (2^-11 relative) fails the f32 tolerance; f32 rounding passes it.
    rng0 = random.Random(99)
    ref_row = [sum(rng0.gauss(0, 1) * rng0.gauss(0, 1) / 16.0 for _ in range(256)) for _ in range(64)]
    check(row_rel_l2_py([[v * (1 + 2 ** -11 * rng0.choice((-1, 1))) for v in ref_row]], [ref_row])[0]
          > DTYPES["f32"][2], "tf32-sized errors pass f32")
    check(row_rel_l2_py([[v * (1 + 2 ** -24) for v in ref_row]], [ref_row])[0] <= DTYPES["f32"][2],
          "f32 rounding fails f32")

    # Tolerance decisions as kernlab makes them.
    e, m = rel_err_py([[1.0 + 2e-4]], [[1.0]], f32)
    check(m == 0 and e > DTYPES["f32"][2], "2e-4 relative passes f32")
    e, m = rel_err_py([[1.0 + 2 ** -9]], [[1.0]], bf16)
    check(m == 0 and e <= DTYPES["bf16"][2], "half a bf16 ulp fails bf16")

    # Pseudo-random rows for cross-checking the array versions.
    rng = random.Random(12345)
    rand_ref = [[rng.gauss(0.0, 1.0) * 10 ** rng.randint(-8, 2) for _ in range(7)] for _ in range(5)]
    rand_out = [[v * (1 + rng.uniform(-1e-3, 1e-3)) + rng.uniform(-1e-9, 1e-9) for v in row]
                for row in rand_ref]
    rand_ref[2][3] = nan
    rand_out[2][3] = nan
    rand_ref[4][0] = -inf
    rand_out[4][0] = -inf
    rand_out[1][1] = inf  # a mismatch
    array_cases = [(c[0], c[1], c[2], c[3]) for c in cases if len(c[1][0]) == len(c[2][0])]
    array_cases.append(("random", rand_out, rand_ref, bf16))

    backends = []
    try:
        import numpy as np

        backends.append(("numpy", lambda rows: np.array(rows, dtype=np.float64), _NumpyOps(np), np))
    except Exception:
        pass
    try:
        import torch

        backends.append(("torch (cpu)", lambda rows: torch.tensor(rows, dtype=torch.float64),
                         _TorchOps(torch), None))
    except Exception:
        pass
    for bname, make, ops, np_mod in backends:
        for name, o, r, floor in array_cases:
            want = rel_err_py(o, r, floor)
            if np_mod is not None:
                with np_mod.errstate(all="ignore"):
                    got = rel_err_array(ops, make(o), make(r), floor)
            else:
                got = rel_err_array(ops, make(o), make(r), floor)
            check(close(got[0], want[0]) and got[1] == want[1],
                  f"rel_err_array[{bname}] {name}: got {got}, want {want}")
        for name, o, r in [(c[0], c[1], c[2]) for c in row_cases] + [("random", rand_out, rand_ref)]:
            want = row_rel_l2_py(o, r)
            if np_mod is not None:
                with np_mod.errstate(all="ignore"):
                    got = row_rel_l2_array(ops, make(o), make(r))
            else:
                got = row_rel_l2_array(ops, make(o), make(r))
            check(close(got[0], want[0]) and got[1] == want[1],
                  f"row_rel_l2_array[{bname}] {name}: got {got}, want {want}")

    # JSON: the unavailable case, through the same function main uses.
    import contextlib
    import io

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "sub", "baselines.json")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = report_unavailable("torch is not importable (ModuleNotFoundError: No module\n named 'torch')", path)
        check(rc == EXIT_UNAVAILABLE, "unavailable exit code is not 3")
        lines = err.getvalue().splitlines()
        check(len(lines) == 1 and "torch is not importable" in lines[0],
              f"unavailable stderr is not one line: {err.getvalue()!r}")
        with open(path) as f:
            doc = json.load(f)
        check(doc == {"available": False,
                      "reason": "torch is not importable (ModuleNotFoundError: No module named 'torch')",
                      "records": []}, f"unavailable JSON: {doc!r}")
        try:
            check_contract(doc)
        except ValueError as e:
            failures.append(f"unavailable JSON breaks the contract: {e}")

        # An available document with records of each status, non-finite floats made null.
        ok = make_record("softmax", "triton", "f32", (4096, 256), None)
        ok.update(status="ok", validated=True, max_rel_err=3e-7, median_ms=0.01, p20_ms=0.009,
                  p80_ms=0.011, gbps=ok["bytes"] / 1e-5 / 1e9)
        failed = make_record("gelu", "torch_manual", "bf16", (8, 16), "tanh")
        failed.update(status="failed", max_rel_err=float("inf"), note="x")
        errored = make_record("gelu", "triton", "f16", (8, 16), "erf")
        full = {"available": True, "torch_version": "2.11.0+cu130", "triton_version": "3.6.0",
                "device": "NVIDIA H200", "seed": 7, "records": [ok, failed, errored]}
        path2 = os.path.join(d, "full.json")
        write_json(path2, full)
        with open(path2) as f:
            text = f.read()
        check("Infinity" not in text and "NaN" not in text, "non-finite float in JSON")
        doc2 = json.loads(text)
        check(doc2["records"][1]["max_rel_err"] is None, "inf max_rel_err not written as null")
        check(doc2["records"][0]["bytes"] == 2 * 4096 * 256 * 4, "bytes")
        check(doc2["records"][1]["bytes"] == 2 * 8 * 16 * 2, "bytes 16-bit")
        try:
            check_contract(doc2)
        except ValueError as e:
            failures.append(f"available JSON breaks the contract: {e}")
        check("triton" in format_table(doc2["records"]), "table")

        # A matmul/linear document, and records that break its rules.
        g_ok = make_record("linear", "triton", "bf16", (127, 255, 63), None, "gelu-tanh")
        g_ok.update(status="ok", validated=True, max_rel_err=1.1e-3, max_elem_rel_err=3.8e-3,
                    validated_rows=127, median_ms=0.01, p20_ms=0.009, p80_ms=0.011,
                    gbps=g_ok["bytes"] / 1e-5 / 1e9, tflops=g_ok["flops"] / 1e-5 / 1e12)
        g_failed = make_record("matmul", "torch_native", "f32", (8192, 8192, 8192), None, None)
        g_failed.update(status="failed", max_rel_err=4e-4, note="max row relative L2 error")
        g_err = make_record("linear", "torch_manual", "f16", (1, 1, 1), None, "none")
        gdoc = dict(full, records=[g_ok, g_failed, g_err],
                    matmul_settings={"float32_matmul_precision": "highest",
                                     "cuda_matmul_allow_tf32": False})
        try:
            check_contract(json.loads(json.dumps(gdoc)))
        except ValueError as e:
            failures.append(f"gemm JSON breaks the contract: {e}")
        table = format_table(gdoc["records"])
        check("TFLOP/s" in table and "127x255x63" in table and "8192x8192x8192" in table, "gemm table")
        bad_cases = [
            ("matmul torch_manual", dict(g_failed, variant="torch_manual")),
            ("flops", dict(g_ok, flops=1)),
            ("bytes", dict(g_ok, bytes=g_ok["bytes"] - 510)),
            ("2-D gemm shape", dict(g_ok, shape=[127, 255])),
            ("3-D softmax shape", dict(ok, shape=[1, 2, 3])),
            ("matmul with bias", dict(g_failed, bias=True)),
            ("linear without bias", dict(g_ok, bias=False)),
            ("ok without tflops", dict(g_ok, tflops=None)),
            ("failed with tflops", dict(g_failed, tflops=1.0)),
            ("missing activation", {k: v for k, v in g_ok.items() if k != "activation"}),
        ]
        for what, rec in bad_cases:
            check(raises(check_contract, dict(full, records=[rec])), f"contract accepts {what}")

        # kernlab's replayed launch: a softmax record with the version it picked.
        kl = dict(ok, variant=KERNLAB_VARIANT, picked="v2_warp_row")
        try:
            check_contract(dict(full, records=[kl]))
        except ValueError as e:
            failures.append(f"a {KERNLAB_VARIANT} record breaks the contract: {e}")
        check(raises(check_contract, dict(full, records=[dict(kl, op="gelu", gelu="tanh")])),
              f"contract accepts {KERNLAB_VARIANT} for gelu")
        check(raises(check_contract, dict(full, records=[dict(kl, picked=3)])),
              "contract accepts a non-string picked")

        # Rounds (--repeat): the kept round is the median one, the lower middle for an even K;
        # the spread is (max - min) / its median.
        mid, meds, spread = summarise_rounds([(3.0, 2.9, 3.1), (1.0, 0.9, 1.1), (2.0, 1.9, 2.1)])
        check(mid == (2.0, 1.9, 2.1) and meds == [3.0, 1.0, 2.0] and spread == 1.0,
              f"three rounds summarised as {mid}, {meds}, {spread}")
        mid, _, spread = summarise_rounds([(4.0, 3.0, 5.0), (2.0, 1.0, 3.0)])
        check(mid == (2.0, 1.0, 3.0) and spread == 1.0, f"two rounds summarised as {mid}, {spread}")
        check(summarise_rounds([(5.0, None, None)]) == ((5.0, None, None), [5.0], 0.0), "one round")
        check(raises(summarise_rounds, []), "no rounds summarised")
        rounds_ok = dict(ok, repeat_medians_ms=[0.011, 0.01, 0.012], spread=0.2)
        try:
            check_contract(dict(full, records=[rounds_ok]))
        except ValueError as e:
            failures.append(f"a record with its rounds breaks the contract: {e}")
        for what, rec in [("a spread without rounds", dict(ok, spread=0.1)),
                          ("rounds without a spread", dict(ok, repeat_medians_ms=[0.01, 0.011])),
                          ("one round", dict(rounds_ok, repeat_medians_ms=[0.01])),
                          ("a median not among its rounds", dict(rounds_ok, median_ms=0.0105)),
                          ("a negative spread", dict(rounds_ok, spread=-0.1)),
                          ("a zero round", dict(rounds_ok, repeat_medians_ms=[0.01, 0.0]))]:
            check(raises(check_contract, dict(full, records=[rec])), f"contract accepts {what}")

        # The queued median: a positive time on an ok record, null elsewhere.
        try:
            check_contract(dict(full, records=[dict(ok, queued_ms=0.0061)]))
        except ValueError as e:
            failures.append(f"a record with its queued median breaks the contract: {e}")
        for what, rec in [("a zero queued_ms", dict(ok, queued_ms=0.0)),
                          ("a string queued_ms", dict(ok, queued_ms="6 µs")),
                          ("a queued_ms on an error record",
                           dict(make_record("softmax", "torch_native", "f32", (2, 3), None),
                                queued_ms=0.006))]:
            check(raises(check_contract, dict(full, records=[rec])), f"contract accepts {what}")
        # The settled median: the same rule.
        try:
            check_contract(dict(full, records=[dict(ok, settled_ms=0.0047)]))
        except ValueError as e:
            failures.append(f"a record with its settled median breaks the contract: {e}")
        for what, rec in [("a negative settled_ms", dict(ok, settled_ms=-1.0)),
                          ("a NaN settled_ms", dict(ok, settled_ms=float("nan"))),
                          ("a settled_ms on an error record",
                           dict(make_record("softmax", "torch_native", "f32", (2, 3), None),
                                settled_ms=0.005))]:
            check(raises(check_contract, dict(full, records=[rec])), f"contract accepts {what}")

        # A timing that raised: a row record with its rounds, a GEMM record with its rate and
        # checked rows, each with its copies and queued median, keep the contract as errors.
        for what, rec in [("row", dict(rounds_ok, rotate_copies=3, queued_ms=0.006,
                                       settled_ms=0.005)),
                          ("gemm", dict(g_ok, rotate_copies=3, queued_ms=0.006, settled_ms=0.005))]:
            timing_failed(rec, RuntimeError("out of memory"))
            try:
                check_contract(dict(full, records=[rec]))
            except ValueError as e:
                failures.append(f"a {what} record whose timing failed breaks the contract: {e}")
            check(rec["status"] == "error" and rec["note"].endswith("timing: RuntimeError: out of memory"),
                  f"a {what} record whose timing failed: {rec['status']}, {rec['note']}")

        # Launch plans: one good file (two shapes, one image), then files that break the format.
        with open(os.path.join(d, "softmax-sm_90a.cubin"), "wb") as f:
            f.write(b"\x7fELF image")
        plan = {"shape": [4096, 64], "picked": "v2_warp_row", "image": "softmax-sm_90a.cubin",
                "kernel": "softmax_v2_warp_row_vec_w16_f32", "grid": [512, 1, 1],
                "block": [128, 1, 1], "smem": 0,
                "args": ["x", "y", {"i32": 4096}, {"i32": 64}, {"i64": 64}, {"i64": 64},
                         {"i32": 0}]}
        plan2 = dict(plan, shape=[2, 70000], kernel="softmax_v8_packed_f32", smem=120000,
                     args=["x", "y", {"i32": 2}, {"i32": 70000}, {"i64": 70000}, {"i64": 70000},
                           {"i32": 0}, {"i32": 1}])
        good = {"version": 1, "op": "softmax", "dtype": "f32", "plans": [plan, plan2]}

        def plans_file(doc, name="kernlab_plans.json"):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                json.dump(doc, f)
            return path

        try:
            got = load_kernlab_plans(plans_file(good), "softmax", "f32")
            check(sorted(got) == [(2, 70000), (4096, 64)], f"plan shapes {sorted(got)}")
            check(got[(4096, 64)]["image_bytes"] == b"\x7fELF image", "plan image bytes")
            check(got[(2, 70000)]["args"][-1] == {"i32": 1}, "plan csize argument")
        except ValueError as e:
            failures.append(f"a good plan file is refused: {e}")
        bad_plans = [
            ("another dtype", dict(good, dtype="bf16")),
            ("another version", dict(good, version=2)),
            ("a shape twice", dict(good, plans=[plan, plan])),
            ("args not starting x, y", dict(good, plans=[dict(plan, args=["y", "x"] + plan["args"][2:])])),
            ("no scalar arguments", dict(good, plans=[dict(plan, args=["x", "y"])])),
            ("a float argument", dict(good, plans=[dict(plan, args=plan["args"][:6] + [{"f32": 0}])])),
            ("a row stride past the width", dict(good, plans=[dict(plan, args=plan["args"][:4] + [{"i64": 72}] + plan["args"][5:])])),
            ("log_softmax", dict(good, plans=[dict(plan, args=plan["args"][:6] + [{"i32": 1}])])),
            ("rows of another shape", dict(good, plans=[dict(plan, shape=[4095, 64])])),
            ("a csize of 2", dict(good, plans=[dict(plan2, args=plan["args"][:2] + plan2["args"][2:-1] + [{"i32": 2}])])),
            ("a bf16 kernel", dict(good, plans=[dict(plan, kernel="softmax_v2_warp_row_vec_w16_bf16")])),
            ("a zero grid", dict(good, plans=[dict(plan, grid=[0, 1, 1])])),
            ("an image path", dict(good, plans=[dict(plan, image="../x.cubin")])),
            ("a missing image", dict(good, plans=[dict(plan, image="none.cubin")])),
            ("a bool smem", dict(good, plans=[dict(plan, smem=True)])),
        ]
        for what, doc in bad_plans:
            check(raises(load_kernlab_plans, plans_file(doc), "softmax", "f32"),
                  f"plans with {what} accepted")
        check(raises(load_kernlab_plans, os.path.join(d, "no-such.json"), "softmax", "f32"),
              "a missing plan file accepted")

    # DriverKernel's calls into the driver, against a fake one: the module loaded once, the
    # shared-memory opt-in, and cuLaunchKernel's parameters as the kernel reads them.
    import ctypes

    class FakeDriver:
        def __init__(self):
            self.calls, self.fail = [], 0

        def cuModuleLoadData(self, ref, image):
            self.calls.append(("load", image))
            ref._obj.value = 0x5000
            return 0

        def cuModuleGetFunction(self, ref, module, name):
            self.calls.append(("function", module.value, name))
            ref._obj.value = 0x6000
            return 0

        def cuFuncSetAttribute(self, fn, attr, value):
            self.calls.append(("attribute", fn.value, attr, value))
            return 0

        def cuGetErrorName(self, rc, ref):
            ref._obj.value = b"CUDA_ERROR_INVALID_VALUE"
            return 0

        def cuLaunchKernel(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            kinds = [ctypes.c_void_p] * 2 + [ctypes.c_int32] * 2 + [ctypes.c_int64] * 2 \
                + [ctypes.c_int32] * (len(self.expect) - 6)
            got = [ctypes.cast(params[i], ctypes.POINTER(k)).contents.value
                   for i, k in enumerate(kinds)]
            self.calls.append(("launch", fn.value, (gx, gy, gz), (bx, by, bz), smem, stream, got,
                               extra))
            return self.fail

    fake = FakeDriver()
    image = b"\x7fELF self-test image"
    ck = DriverKernel(image, "softmax_v8_packed_f32", 120000, cu=fake)
    DriverKernel(image, "softmax_v8_packed_f32", 0, cu=fake)
    check([c[0] for c in fake.calls] == ["load", "function", "attribute", "function"],
          f"driver calls {fake.calls}")
    check(fake.calls[0][1] == image and fake.calls[1] == ("function", 0x5000, b"softmax_v8_packed_f32"),
          f"module load / function lookup {fake.calls[:2]}")
    check(fake.calls[2] == ("attribute", 0x6000, 8, 120000), f"smem opt-in {fake.calls[2]}")
    fake.expect = [0x1000, 0x2000, 7, 65536, 65536, 65536, 0, 1]
    vals = [ctypes.c_void_p(0x1000), ctypes.c_void_p(0x2000), ctypes.c_int32(7),
            ctypes.c_int32(65536), ctypes.c_int64(65536), ctypes.c_int64(65536),
            ctypes.c_int32(0), ctypes.c_int32(1)]
    ck.launch((7, 1, 1), (1024, 1, 1), 120000, 0, vals)
    check(fake.calls[-1] == ("launch", 0x6000, (7, 1, 1), (1024, 1, 1), 120000, 0, fake.expect,
                             None), f"launch {fake.calls[-1]}")
    # host_bound_note: flagged only where the host fell behind (an iteration longer than the
    # flush and the queued call) and do_bench's median exceeds the queued one beyond the noise.
    check(host_bound_note(20.0, 80.0, 5.0, 5.0) is None, "a host keeping ahead flagged")
    check(host_bound_note(130.0, 80.0, 65.0, 20.0) is not None,
          "a 65 µs median against 20 µs queued, the host behind, not flagged")
    n = host_bound_note(130.0, 80.0, 65.0, 20.0) or ""
    check(n.startswith(HOST_BOUND + ":") and "65.0 µs against 20.0" in n, f"the note: {n}")
    check(host_bound_note(130.0, 80.0, 5.4, 5.0) is None,
          "a host behind but its wait before the flush ends (median at the queued one) flagged")
    check(host_bound_note(84.0, 80.0, 30.0, 5.0) is None,
          "a host keeping ahead of flush + call flagged (whatever the median)")
    check(host_bound_note(None, 80.0, 5.0, 5.0) is None
          and host_bound_note(90.0, 80.0, 30.0, None) is None, "a missing figure flagged")

    # A launcher built once reads its values as they hold at each call (kernlab_fn moves x and
    # y's pointers between timed calls).
    go = ck.launcher((7, 1, 1), (1024, 1, 1), 120000, 0, vals)
    vals[0].value, vals[1].value = 0x3000, 0x4000
    fake.expect = [0x3000, 0x4000] + fake.expect[2:]
    go()
    check(fake.calls[-1][6] == fake.expect, f"a launcher's moved pointers {fake.calls[-1][6]}")
    vals[0].value = 0x1000
    fake.expect = [0x1000] + fake.expect[1:]
    go()
    check(fake.calls[-1][6] == fake.expect, f"a launcher's second call {fake.calls[-1][6]}")
    fake.fail = 1
    try:
        go()
        failures.append("a launcher's failed launch raised nothing")
    except RuntimeError as e:
        check("CUDA_ERROR_INVALID_VALUE" in str(e), f"a launcher's launch error text: {e}")
    try:
        ck.launch((7, 1, 1), (1024, 1, 1), 120000, 0, vals)
        failures.append("a failed launch raised nothing")
    except RuntimeError as e:
        check("CUDA_ERROR_INVALID_VALUE" in str(e) and "softmax_v8_packed_f32" in str(e),
              f"launch error text: {e}")

    # The recorded samples, where the repository has them.
    for name in ("torch_baselines_sample.json", "torch_matmul_sample.json"):
        sample = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                              "tests", "data", name)
        if os.path.exists(sample):
            try:
                with open(sample) as f:
                    check_contract(json.load(f))
            except (ValueError, OSError) as e:
                failures.append(f"{os.path.normpath(sample)} breaks the contract: {e}")

    # The command line: MxNxK for matmul/linear, ROWSxCOLS for gelu/softmax, matmul's
    # torch_manual alone is nothing to run (each of these stops in the parser, exit 2).
    for argv in (["--op", "linear", "--shapes", "64x64", "--dtype", "bf16"],
                 ["--op", "softmax", "--shapes", "64x64x64", "--dtype", "f32"],
                 ["--op", "matmul", "--shapes", "8x8x8", "--dtype", "f16", "--variants", "torch_manual"],
                 ["--op", "linear", "--shapes", "8x8x8", "--dtype", "f16", "--activation", "relu"],
                 ["--op", "softmax", "--shapes", "4x64,4x128", "--dtype", "f32", "--row-stride", "100"],
                 ["--op", "matmul", "--shapes", "8x8x8", "--dtype", "f32", "--row-stride", "16"],
                 ["--op", "softmax", "--shapes", "4x64", "--dtype", "f32", "--row-stride", "72",
                  "--kernlab-plans", "plans.json"]):
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                rc = main(argv)
        except SystemExit as e:
            rc = e.code
        check(rc == EXIT_USAGE, f"{' '.join(argv)}: exit {rc}, want {EXIT_USAGE}")

    for f in failures:
        print(f"self-test FAILED: {f}", file=sys.stderr)
    n_backends = ", ".join(b[0] for b in backends) or "none"
    print(f"{PROG} self-test: {'FAILED' if failures else 'ok'} "
          f"({len(cases)} measure cases; array backends checked: {n_backends})")
    return EXIT_INTERNAL if failures else EXIT_OK


# ---------------------------------------------------------------------------------------------
def build_parser():
    p = argparse.ArgumentParser(
        prog="torch_baselines.py",
        description="Time PyTorch / torch.compile / Triton baselines of GeLU, softmax, matmul or "
                    "linear for kernlab, validated against a float64 reference first.",
        epilog="exit codes: 0 run completed (records may be 'failed'/'error'); 1 internal "
               "error or self-test failure; 2 bad arguments; 3 baselines unavailable (no torch, "
               "no triton or no CUDA device).")
    p.add_argument("--op", choices=OPS, help="the op (required unless --self-test)")
    p.add_argument("--shapes", help="comma-separated ROWSxCOLS list for gelu/softmax, e.g. "
                                    "16384x16384,4096x256 (softmax is over the last dim); MxNxK "
                                    "for matmul/linear, e.g. 8192x8192x8192,127x255x63 "
                                    "(c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]))")
    p.add_argument("--dtype", choices=tuple(DTYPES), help="element type (required unless --self-test)")
    p.add_argument("--gelu", choices=GELU_FORMS, default="tanh",
                   help="GeLU form: tanh approximation or exact erf (default tanh; ignored for softmax)")
    p.add_argument("--activation", choices=ACTIVATIONS, default="gelu-tanh",
                   help="linear's activation after the bias (default gelu-tanh; matmul has none, "
                        "gelu/softmax ignore it)")
    p.add_argument("--variants", default=None,
                   help=f"comma-separated subset of {','.join(VARIANTS)} (default: all; matmul "
                        f"has no torch_manual, which would be torch_native)")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warmup, ms (default 25)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time, ms (default 100)")
    p.add_argument("--json", metavar="PATH", help="write the results (or the unavailable note) here")
    p.add_argument("--seed", type=int, help="input seed (default: random, recorded in the JSON)")
    p.add_argument("--manual-precision", choices=("f32", "input"), default="f32",
                   help="torch_manual/torch_compile on bf16/f16: 'f32' casts the input to f32 and "
                        "the result back (kernlab's manual tier does the same; default), 'input' "
                        "runs every op in the input dtype. linear's torch_manual: the matmul "
                        "always runs in the input dtype; this picks the precision of the bias "
                        "add and GeLU after it")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, max-autotune, ...); "
                        "torch_compile compiles torch_manual for gelu/softmax, torch_native for "
                        "matmul/linear")
    p.add_argument("--rotate", type=str, default="1",
                   help="cycle the timed calls through N copies of the inputs (each call's "
                        "output kept until its copy comes round again), or 'auto': as many "
                        "as make the copies 4x the L2, at most 1024, as kernlab's --rotate "
                        "(default 1: one buffer, do_bench's usual way)")
    p.add_argument("--repeat", type=int, default=1, metavar="K",
                   help="gelu/softmax: time every variant of a shape K times, in K rounds that "
                        "take the variants in turn; the record keeps the round whose median is "
                        "the median of the K (the lower middle one for an even K), every "
                        "round's median and their spread, (max - min) / that median, as "
                        "kernlab's --repeat (default 1; GEMMs run once)")
    p.add_argument("--cache-bytes", type=int, default=None,
                   help="the L2 size --rotate auto counts with (default: the device's, from torch)")
    p.add_argument("--row-stride", type=int, default=None, metavar="N",
                   help="gelu/softmax: rows N elements apart (N >= every shape's width; the gaps "
                        "hold NaN), as kernlab's --row-stride; default contiguous")
    p.add_argument("--kernlab-plans", metavar="PATH",
                   help=f"softmax: kernlab's launch plans (kernlab_plans.json, written by "
                        f"`kernlab bench --torch`): at each planned shape, also time kernlab's own "
                        f"launch here ({KERNLAB_VARIANT}), validated like every variant")
    p.add_argument("--quiet", action="store_true", help="no per-variant progress on stderr")
    p.add_argument("--copy-bytes", type=int, default=1 << 30,
                   help="also time dst.copy_(src) of this many bytes, PyTorch's side of the copy "
                        "ceiling (default 1 GiB; 0 skips it)")
    p.add_argument("--self-test", action="store_true",
                   help="check the parsers, error measures, GEMM accounting and JSON writer "
                        "without torch; exit 0 if ok")
    return p


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    missing = [f"--{k}" for k in ("op", "shapes", "dtype") if getattr(args, k) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")
    try:
        args.shape_list = parse_shapes(args.shapes, shape_ndim(args.op))
        asked = parse_variants(args.variants if args.variants is not None else ",".join(VARIANTS))
    except ValueError as e:
        parser.error(str(e))
    args.variant_list, dropped = resolve_variants(args.op, asked)
    if not args.variant_list:
        parser.error(f"nothing to run: {args.op} has no {', '.join(dropped)} variant "
                     f"(it would be torch_native)")
    if dropped and args.variants is not None and not args.quiet:
        print(f"{PROG}: {args.op} has no {', '.join(dropped)} variant (it would be torch_native); "
              f"skipped", file=sys.stderr)
    if args.warmup_ms <= 0 or args.rep_ms <= 0:
        parser.error("--warmup-ms and --rep-ms must be > 0")
    try:
        args.rotate = parse_rotate(args.rotate)
    except ValueError as e:
        parser.error(str(e))
    if args.cache_bytes is not None and args.cache_bytes < 1:
        parser.error("--cache-bytes must be at least 1")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.row_stride is not None:
        if args.op in GEMM_OPS:
            parser.error(f"--row-stride is for gelu and softmax rows, not {args.op}")
        narrow = [s for s in args.shape_list if s[-1] > args.row_stride]
        if args.row_stride < 1 or narrow:
            parser.error(f"--row-stride {args.row_stride} is less than the width of "
                         f"{shape_str(narrow[0]) if narrow else 'a row'}")
    args.plans = {}
    if args.kernlab_plans is not None:
        if args.op != "softmax":
            parser.error("--kernlab-plans is for softmax")
        if args.row_stride is not None:
            parser.error("--kernlab-plans replays launches on contiguous rows, not with --row-stride")
        if args.dtype is None:
            parser.error("--kernlab-plans needs --dtype")
        try:
            args.plans = load_kernlab_plans(args.kernlab_plans, args.op, args.dtype)
        except ValueError as e:  # the PyTorch columns still run
            print(f"{PROG}: {KERNLAB_VARIANT} left out: {e}", file=sys.stderr)
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 31)
    if args.op != "gelu":
        args.gelu = None
    if args.op == "matmul":
        args.activation = "none"
    elif args.op != "linear":
        args.activation = None

    torch, reason = probe_environment()
    if torch is None:
        return report_unavailable(reason, args.json)
    return run_benchmarks(torch, args)


if __name__ == "__main__":
    sys.exit(main())
