"""What every module shares and none owns: exit codes, dtypes, variant names, the shape grammar
and small text helpers. No torch, no triton."""

import sys

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

PROG = "torch_baselines"

# The PyTorch columns the row ops and GEMMs may have (an op's module says which it has).
VARIANTS = ("torch_manual", "torch_native", "torch_compile", "triton")
# torch.compile in mode "reduce-overhead" (CUDA graphs): a column of the MLP's alone.
COMPILE_RO = "torch_compile_ro"
# Every column name the command line and the contract know.
KNOWN_VARIANTS = VARIANTS + (COMPILE_RO,)

# dtype name -> (torch dtype attribute, element size, tolerance, floor = smallest subnormal).
# The tolerances and floors are kernlab's (src/dtype.rs): the output's rounding plus room for
# f32 arithmetic in a different order; an absolute error under the subnormal step is forgiven.
DTYPES = {
    "f32": ("float32", 4, 1e-4, 2.0 ** -149),   # 1.4e-45
    "bf16": ("bfloat16", 2, 8e-3, 2.0 ** -133),  # 9.2e-41
    "f16": ("float16", 2, 2e-3, 2.0 ** -24),     # 5.96e-8
}

# The smallest positive normal of each dtype (kernlab's DType::min_normal): the group check's
# floor (`checking.group_floor`) forgives errors of that size, the format's underflow.
MIN_NORMAL = {"f32": 2.0 ** -126, "bf16": 2.0 ** -126, "f16": 2.0 ** -14}

MIN_POSITIVE = sys.float_info.min  # f64::MIN_POSITIVE, the denominator's lower bound (as kernlab)


def parse_shapes(text, ndim=2, form=None, example=None):
    """'16384x16384,4096x256' -> [(16384, 16384), (4096, 256)] (ndim 2: ROWSxCOLS, the row
    ops); with ndim 3, '8192x8192x8192,127x255x63' -> [(8192, 8192, 8192), (127, 255, 63)]
    (MxNxK, matmul and linear). `form` and `example` name the grammar in the messages (the
    MLP's BxD)."""
    form = form or ("ROWSxCOLS" if ndim == 2 else "MxNxK")
    example = example or ("16384x16384,4096x256" if ndim == 2 else "8192x8192x8192,127x255x63")
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


def parse_variants(text):
    """'triton,torch_native,triton' -> ['triton', 'torch_native'] (each of KNOWN_VARIANTS
    once; which of them an op has, its `resolve_variants` says)."""
    out = []
    for v in text.split(","):
        v = v.strip()
        if not v:
            continue
        if v not in KNOWN_VARIANTS:
            raise ValueError(f"unknown variant '{v}' (use {', '.join(KNOWN_VARIANTS)})")
        if v not in out:
            out.append(v)
    if not out:
        raise ValueError("no variants given")
    return out


def shape_str(shape):
    return "x".join(str(v) for v in shape)


def fmt(v, spec):
    """`v` formatted by `spec`, or '-' for None."""
    return "-" if v is None else format(v, spec)


def first_line(exc):
    """'TypeName: the message's first line' (or the type's name alone)."""
    s = str(exc).strip()
    line = s.splitlines()[0].strip() if s else ""
    name = type(exc).__name__
    return f"{name}: {line}" if line else name


def add_note(r, text):
    """Append `text` (when there is one) to record r's note, "; " between notes."""
    if text:
        r["note"] = f"{r['note']}; {text}" if r["note"] else text


def is_int(v):
    """An int that is not a bool."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    """An int or a float that is not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def load_plan_file(path, version, kind, op, dtype):
    """The plans of a plan file kernlab wrote beside other files (format `version`, for `op`
    and `dtype`): (plans, the file's folder, need), `need(cond, what)` raising ValueError
    naming the file. Raises ValueError where the file is unreadable or another kind's."""
    import json
    import os

    def need(cond, what):
        if not cond:
            raise ValueError(f"{path}: {what}")

    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: {first_line(e)}")
    need(isinstance(doc, dict) and doc.get("version") == version,
         f"not a format-{version} {kind} file")
    need(doc.get("op") == op and doc.get("dtype") == dtype,
         f"plans for {doc.get('op')} {doc.get('dtype')}, not {op} {dtype}")
    need(isinstance(doc.get("plans"), list), "'plans' is not a list")
    return doc["plans"], os.path.dirname(os.path.abspath(path)), need
