#!/usr/bin/env python3
"""PyTorch / torch.compile / Triton baselines for kernlab's GeLU and softmax tables.

kernlab times its own CUDA kernels; this script times the same op, shapes and dtype on the
same GPU through PyTorch, so kernlab can merge the results as extra columns:

  torch_manual   the CS336 lecture's eager compositions (one kernel per primitive op)
  torch_native   torch.nn.functional.gelu / torch.softmax
  torch_compile  torch.compile of the torch_manual function (compiled once per shape)
  triton         the lecture's Triton kernels (1-D elementwise GeLU, one-row-per-program softmax)

Every variant is first validated against a float64 reference (kernlab's error measure, see
`rel_err_array`), and only a variant that passes is timed, with
`triton.testing.do_bench` (median, p20, p80; L2 flushed before each call by do_bench).

Exit codes: 0 the run completed (individual records may still be "failed" or "error");
1 an unexpected internal error (JSON with the records so far is still written when --json is
given) or a failed --self-test; 2 bad command line; 3 baselines unavailable (no torch, no
triton or no CUDA device): one line on stderr and, with --json, {"available": false, ...}.

`--self-test` needs neither torch nor a GPU: it checks the shape parser, the error measure
(a pure-Python mirror, plus the array version on NumPy / CPU torch where importable) and the
JSON writer, then exits 0.
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

OPS = ("gelu", "softmax")
VARIANTS = ("torch_manual", "torch_native", "torch_compile", "triton")
GELU_FORMS = ("tanh", "erf")

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


def triton_erf_available():
    return triton is not None and hasattr(tl, "math") and hasattr(tl.math, "erf")


def softmax_num_warps(block_size):
    if block_size >= 4096:
        return 16
    if block_size >= 2048:
        return 8
    return 4


# ---------------------------------------------------------------------------------------------
# Small pure helpers (no torch): shapes, the error measure's pure-Python mirror, JSON.
# ---------------------------------------------------------------------------------------------
def parse_shapes(text):
    """'16384x16384,4096x256' -> [(16384, 16384), (4096, 256)]. Shapes are 2-D: rows x cols."""
    if text is None or not text.strip():
        raise ValueError("no shapes given (expected e.g. 16384x16384,4096x256)")
    shapes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ValueError(f"empty shape in '{text}'")
        dims = part.lower().replace("\u00d7", "x").split("x")
        if len(dims) != 2:
            raise ValueError(f"shape '{part}' is not ROWSxCOLS")
        try:
            r, c = (int(d.strip()) for d in dims)
        except ValueError:
            raise ValueError(f"shape '{part}' has a non-integer dimension") from None
        if r <= 0 or c <= 0:
            raise ValueError(f"shape '{part}' has a dimension <= 0")
        shapes.append((r, c))
    return shapes


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
        need(r["variant"] in VARIANTS, f"{where}: bad variant")
        need(r["tier"] == "torch", f"{where}: tier is not 'torch'")
        need(r["dtype"] in DTYPES, f"{where}: bad dtype")
        need(isinstance(r["shape"], list) and len(r["shape"]) == 2
             and all(isinstance(v, int) and v > 0 for v in r["shape"]), f"{where}: bad shape")
        if r["op"] == "gelu":
            need(r["gelu"] in GELU_FORMS, f"{where}: gelu op without tanh/erf")
        else:
            need(r["gelu"] is None, f"{where}: softmax with a gelu form")
        need(r["status"] in ("ok", "failed", "error"), f"{where}: bad status")
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


def make_record(op, variant, dtype, shape, gelu):
    rows, cols = shape
    return {
        "op": op,
        "variant": variant,
        "tier": "torch",
        "dtype": dtype,
        "shape": [int(rows), int(cols)],
        "gelu": gelu if op == "gelu" else None,
        "status": "error",
        "validated": False,
        "max_rel_err": None,
        "median_ms": None,
        "p20_ms": None,
        "p80_ms": None,
        # input read once, output written once
        "bytes": 2 * int(rows) * int(cols) * DTYPES[dtype][1],
        "gbps": None,
        "note": None,
        "tolerance": DTYPES[dtype][2],
    }


def _fmt(v, spec):
    return "-" if v is None else format(v, spec)


def format_table(records):
    head = ("variant", "shape", "ms", "GB/s", "err", "status")
    rows = [head]
    for r in records:
        tag = r["variant"]
        rows.append((
            tag,
            f"{r['shape'][0]}x{r['shape'][1]}",
            _fmt(r["median_ms"], ".4f"),
            _fmt(r["gbps"], ".1f"),
            _fmt(r["max_rel_err"], ".2e"),
            r["status"],
        ))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = []
    for j, row in enumerate(rows):
        cells = [str(c).ljust(w) if i in (0, 1, 5) else str(c).rjust(w)
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
        return x

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
                x_max = x.max(dim=-1, keepdim=True)[0]
                x = x - x_max
                num = torch.exp(x)
                den = num.sum(dim=-1, keepdim=True)
                y = num / den
                return y

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

    def time(self, fn):
        """(median_ms, p20_ms, p80_ms) of fn() by triton.testing.do_bench."""
        import triton.testing as tt

        res = tt.do_bench(fn, **self._do_bench_kwargs)
        if isinstance(res, (list, tuple)):
            vals = [float(v) for v in res]
            if len(vals) >= 3:
                return vals[0], vals[1], vals[2]
            if vals:
                return vals[0], None, None
            raise RuntimeError("do_bench returned nothing")
        return float(res), None, None

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
    def poison_allocator(self, like):
        """Leave a freed, 0xFF-filled block (NaN in f32, bf16 and f16) of the output's size in
        the caching allocator, so an output that lands there and is not fully written shows
        up as NaN. Best effort: the op may be handed another block."""
        torch = self.torch
        nbytes = like.numel() * like.element_size()
        junk = torch.empty(nbytes, dtype=torch.uint8, device=self.dev)
        junk.fill_(0xFF)
        del junk

    def run_shape(self, shape, variants, log):
        torch = self.torch
        a = self.args
        gelu = a.gelu if a.op == "gelu" else None
        recs = {v: make_record(a.op, v, a.dtype, shape, gelu) for v in variants}
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

        for v in variants:
            r = recs[v]
            if v not in fns:
                log(r)
                continue
            fn = fns[v]
            try:
                med, p20, p80 = self.time(lambda: fn(x))
                r["median_ms"], r["p20_ms"], r["p80_ms"] = med, p20, p80
                r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9 if med and med > 0 else None
                if p20 is None:
                    extra = "do_bench gave no quantiles"
                    r["note"] = f"{r['note']}; {extra}" if r["note"] else extra
            except Exception as e:
                r["status"] = "error"
                r["validated"] = False
                r["median_ms"] = r["p20_ms"] = r["p80_ms"] = r["gbps"] = None
                extra = f"timing: {first_line(e)}"
                r["note"] = f"{r['note']}; {extra}" if r["note"] else extra
            torch.cuda.empty_cache()
            log(r)

        del x, fns
        torch.cuda.empty_cache()
        return [recs[v] for v in variants]


def run_benchmarks(torch, args):
    bench = Bench(torch, args)
    doc = {
        "available": True,
        "torch_version": str(torch.__version__),
        "triton_version": str(getattr(triton, "__version__", "unknown")),
        "device": torch.cuda.get_device_name(torch.cuda.current_device()),
        "seed": int(args.seed),
        "cuda_version": torch.version.cuda,
        "timer": "triton.testing.do_bench, L2 flushed before each call",
        "warmup_ms": args.warmup_ms,
        "rep_ms": args.rep_ms,
        "manual_precision": args.manual_precision,
        "records": [],
    }

    def log(r):
        if args.quiet:
            return
        print(f"{PROG}: {r['op']}{'/' + r['gelu'] if r['gelu'] else ''} {r['dtype']} "
              f"{r['shape'][0]}x{r['shape'][1]} {r['variant']}: {r['status']}"
              f" err {_fmt(r['max_rel_err'], '.2e')} median {_fmt(r['median_ms'], '.4f')} ms"
              f" {_fmt(r['gbps'], '.1f')} GB/s" + (f" ({r['note']})" if r["note"] else ""),
              file=sys.stderr, flush=True)

    rc = EXIT_OK
    try:
        if args.copy_bytes > 0:
            doc["copy"] = bench.copy_ceiling(args.copy_bytes)
            if not args.quiet:
                c = doc["copy"]
                print(f"{PROG}: copy_ of {c['bytes']} bytes: {c['median_ms']:.4f} ms, "
                      f"{c['gbps']:.0f} GB/s (read + written)", file=sys.stderr, flush=True)
        for shape in args.shape_list:
            doc["records"].extend(bench.run_shape(shape, args.variant_list, log))
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
    print(f"{args.op}{' (' + args.gelu + ')' if args.op == 'gelu' else ''} {args.dtype} on "
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
    check(softmax_num_warps(1024) == 4 and softmax_num_warps(2048) == 8
          and softmax_num_warps(4096) == 16 and softmax_num_warps(131072) == 16, "num_warps")

    # The error measure: hand-made cases (out_rows, ref_rows, dtype, want_err, want_mismatches).
    inf, nan = float("inf"), float("nan")
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

    # The recorded sample, where the repository has it.
    sample = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                          "tests", "data", "torch_baselines_sample.json")
    if os.path.exists(sample):
        try:
            with open(sample) as f:
                check_contract(json.load(f))
        except (ValueError, OSError) as e:
            failures.append(f"{os.path.normpath(sample)} breaks the contract: {e}")

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
        description="Time PyTorch / torch.compile / Triton baselines of GeLU or softmax for "
                    "kernlab, validated against a float64 reference first.",
        epilog="exit codes: 0 run completed (records may be 'failed'/'error'); 1 internal "
               "error or self-test failure; 2 bad arguments; 3 baselines unavailable (no torch, "
               "no triton or no CUDA device).")
    p.add_argument("--op", choices=OPS, help="the op (required unless --self-test)")
    p.add_argument("--shapes", help="comma-separated ROWSxCOLS list, e.g. 16384x16384,4096x256 "
                                    "(softmax is over the last dim)")
    p.add_argument("--dtype", choices=tuple(DTYPES), help="element type (required unless --self-test)")
    p.add_argument("--gelu", choices=GELU_FORMS, default="tanh",
                   help="GeLU form: tanh approximation or exact erf (default tanh; ignored for softmax)")
    p.add_argument("--variants", default=",".join(VARIANTS),
                   help=f"comma-separated subset of {','.join(VARIANTS)} (default: all)")
    p.add_argument("--warmup-ms", type=float, default=25.0, help="do_bench warmup, ms (default 25)")
    p.add_argument("--rep-ms", type=float, default=100.0, help="do_bench repetition time, ms (default 100)")
    p.add_argument("--json", metavar="PATH", help="write the results (or the unavailable note) here")
    p.add_argument("--seed", type=int, help="input seed (default: random, recorded in the JSON)")
    p.add_argument("--manual-precision", choices=("f32", "input"), default="f32",
                   help="torch_manual/torch_compile on bf16/f16: 'f32' casts the input to f32 and "
                        "the result back (kernlab's manual tier does the same; default), 'input' "
                        "runs every op in the input dtype")
    p.add_argument("--compile-mode", default="default",
                   help="torch.compile mode (default, reduce-overhead, max-autotune, ...)")
    p.add_argument("--quiet", action="store_true", help="no per-variant progress on stderr")
    p.add_argument("--copy-bytes", type=int, default=1 << 30,
                   help="also time dst.copy_(src) of this many bytes, PyTorch's side of the copy "
                        "ceiling (default 1 GiB; 0 skips it)")
    p.add_argument("--self-test", action="store_true",
                   help="check the parser, error measure and JSON writer without torch; exit 0 if ok")
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
        args.shape_list = parse_shapes(args.shapes)
        args.variant_list = parse_variants(args.variants)
    except ValueError as e:
        parser.error(str(e))
    if args.warmup_ms <= 0 or args.rep_ms <= 0:
        parser.error("--warmup-ms and --rep-ms must be > 0")
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(2 ** 31)
    if args.op != "gelu":
        args.gelu = None

    torch, reason = probe_environment()
    if torch is None:
        return report_unavailable(reason, args.json)
    return run_benchmarks(torch, args)


if __name__ == "__main__":
    sys.exit(main())
