"""A stand-in for `triton` and `triton.language` that lets `kernlab_baselines.triton_kernels`
import without Triton and runs its one-dimensional kernels (GeLU, softmax, RMSNorm) in plain
Python, one program at a time, over lists: a check of the kernels' indexing, masking and
arithmetic on a machine with no GPU. It knows only the few `tl` calls those kernels make,
with Python's float64 arithmetic between explicit f32 roundings (`.to(tl.float32)` and the
store); it says nothing about Triton's typing or code generation."""

import contextlib
import importlib
import math
import struct
import sys
import types


def f32(v):
    """v rounded to the nearest float32 (inf past its range)."""
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def bf16(v):
    """v rounded to the nearest bfloat16 (ties to even), through float32."""
    v = f32(v)
    if not math.isfinite(v):
        return v
    b = struct.unpack("<I", struct.pack("<f", v))[0]
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", b))[0]


class DType:
    def __init__(self, name, cast):
        self.name, self.cast = name, cast


FLOAT32 = DType("fp32", f32)
BFLOAT16 = DType("bf16", bf16)
INT64 = DType("int64", int)


class Block:
    """A block of values (tl.arange, loads), element-wise arithmetic with blocks and scalars."""

    def __init__(self, values):
        self.v = list(values)

    def _map(self, other, f):
        if isinstance(other, Block):
            return Block(f(a, b) for a, b in zip(self.v, other.v))
        return Block(f(a, other) for a in self.v)

    def __add__(self, o):
        return self._map(o, lambda a, b: a + b)

    __radd__ = __add__

    def __sub__(self, o):
        return self._map(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._map(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._map(o, lambda a, b: a * b)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return self._map(o, lambda a, b: a / b if b else math.copysign(math.inf, a) if a else math.nan)

    def __rtruediv__(self, o):
        return self._map(o, lambda a, b: b / a)

    def __lt__(self, o):
        return self._map(o, lambda a, b: a < b)

    def to(self, dtype):
        return Block(dtype.cast(a) for a in self.v)


class ProgramId(int):
    def to(self, dtype):
        return ProgramId(int(self))


class Pointer:
    """A tensor's storage (a list) seen from element `base`, with its element type."""

    def __init__(self, store, dtype=FLOAT32, base=0):
        self.store, self.base = store, base
        self.dtype = types.SimpleNamespace(element_ty=dtype)

    def __add__(self, offset):
        if isinstance(offset, Block):
            return Pointers(self, [self.base + o for o in offset.v])
        return Pointer(self.store, self.dtype.element_ty, self.base + offset)

    __radd__ = __add__


class Pointers:
    def __init__(self, ptr, offsets):
        self.ptr, self.offsets = ptr, offsets


def make_language(state):
    tl = types.ModuleType("triton.language")
    tl.constexpr = object
    tl.float32, tl.int64 = FLOAT32, INT64

    def program_id(axis=0):
        return ProgramId(state["pid"])

    def arange(start, end):
        return Block(range(start, end))

    def load(p, mask=None, other=None):
        # A masked lane without `other` is undefined: NaN here, so that it shows if stored.
        other = math.nan if other is None else other
        mask = mask.v if mask is not None else [True] * len(p.offsets)
        return Block(p.ptr.store[o] if m else other for o, m in zip(p.offsets, mask))

    def store(p, values, mask=None):
        mask = mask.v if mask is not None else [True] * len(p.offsets)
        cast = p.ptr.dtype.element_ty.cast
        for o, v, m in zip(p.offsets, values.v, mask):
            if m:
                p.ptr.store[o] = cast(v)

    def each(f):
        return lambda x: Block(f(a) for a in x.v) if isinstance(x, Block) else f(x)

    def minimum(a, b):
        return a._map(b, min) if isinstance(a, Block) else min(a, b)

    def exp(a):
        try:
            return math.exp(a)
        except OverflowError:
            return math.inf

    def rsqrt(a):
        if a > 0:
            return 1.0 / math.sqrt(a)
        return math.inf if a == 0 else math.nan

    tl.program_id, tl.arange, tl.load, tl.store = program_id, arange, load, store
    tl.sum = lambda x, axis=0: math.fsum(x.v)
    tl.max = lambda x, axis=0: max(x.v)
    tl.exp = each(exp)
    tl.rsqrt = each(rsqrt)
    tl.minimum = minimum
    tl.math = types.SimpleNamespace(erf=each(math.erf))
    return tl


class Kernel:
    """What @triton.jit gives: kernel[grid](*args, **meta) runs the function once a program
    (meta's launch options dropped)."""

    def __init__(self, fn, state):
        self.fn, self.state = fn, state

    def __getitem__(self, grid):
        def launch(*args, **meta):
            for opt in ("num_warps", "num_stages"):
                meta.pop(opt, None)
            for pid in range(grid[0]):
                self.state["pid"] = pid
                self.fn(*args, **meta)
        return launch


@contextlib.contextmanager
def fake_triton_kernels():
    """kernlab_baselines.triton_kernels imported against the stand-in (and forgotten after)."""
    import kernlab_baselines

    state = {"pid": 0}
    triton = types.ModuleType("triton")
    triton.jit = lambda fn: Kernel(fn, state)
    triton.Config = lambda kwargs, num_stages=None, num_warps=None: types.SimpleNamespace(
        kwargs=kwargs, num_stages=num_stages, num_warps=num_warps)
    triton.autotune = lambda **kw: (lambda fn: fn)
    triton.next_power_of_2 = lambda n: 1 << max(0, int(n) - 1).bit_length()
    triton.cdiv = lambda a, b: -(-a // b)
    tl = make_language(state)
    triton.language = tl
    name = "kernlab_baselines.triton_kernels"
    saved = {k: sys.modules.get(k) for k in ("triton", "triton.language", name)}
    sys.modules.update({"triton": triton, "triton.language": tl})
    sys.modules.pop(name, None)
    try:
        yield importlib.import_module(name)
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        if saved[name] is None and hasattr(kernlab_baselines, "triton_kernels"):
            del kernlab_baselines.triton_kernels


class Tensor(Pointer):
    """A rows x cols tensor (or a vector) for the kernels: its storage a list, its rows
    `stride` elements apart; what is not written holds `fill`."""

    def __init__(self, shape, stride=None, dtype=FLOAT32, fill=math.nan):
        self.shape = tuple(shape)
        cols = self.shape[-1]
        self._stride = cols if stride is None else stride
        rows = self.shape[0] if len(self.shape) == 2 else 1
        super().__init__([fill] * (rows * self._stride), dtype)

    @classmethod
    def of(cls, rows, stride=None, dtype=FLOAT32):
        """A tensor holding `rows` (a list of lists, or one list: a vector), rounded to dtype."""
        vector = not isinstance(rows[0], list)
        t = cls((len(rows),) if vector else (len(rows), len(rows[0])), stride, dtype)
        for i, row in enumerate([rows] if vector else rows):
            for j, v in enumerate(row):
                t.store[i * t._stride + j] = dtype.cast(v)
        return t

    def stride(self, dim):
        return self._stride if dim == 0 and len(self.shape) == 2 else 1

    def is_contiguous(self):
        return self._stride == self.shape[-1]

    def numel(self):
        return math.prod(self.shape)

    def rows(self):
        """The values as a list of rows (the gaps left out)."""
        n = self.shape[0] if len(self.shape) == 2 else 1
        return [self.store[i * self._stride:i * self._stride + self.shape[-1]] for i in range(n)]

    def gaps(self):
        """The values between the rows."""
        n = self.shape[0] if len(self.shape) == 2 else 1
        return [v for i in range(n) for v in self.store[i * self._stride + self.shape[-1]:
                                                        (i + 1) * self._stride]]
