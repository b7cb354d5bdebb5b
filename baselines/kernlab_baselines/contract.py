"""The JSON contract kernlab parses (src/tools/bench/torch.rs): records (`make_record`), their
byte count (`record_bytes`, kernlab's), the strict JSON writer, the unavailable document and
`check_contract`, which every document this program writes keeps. A record's status is ok,
failed or error, or, for an op whose `OpSpec.statuses` has it, unsupported (the MLP's f16
training, which kernlab refuses too: not run, not timed); an op's records may carry keys of
their own (`OpSpec.record_keys`: rmsnorm's eps; the MLP's layers, mode, steps and peak memory),
which kernlab's parser ignores where it does not read them. No torch."""

import json
import math
import os
import sys
import tempfile

from . import ops
from .common import DTYPES, EXIT_UNAVAILABLE, PROG, fmt, is_int, is_number, shape_str
from .ops.base import ERROR_METRICS
from .ops.gemm import GEMM_RECORD_KEYS
from .package import KERNLAB_VARIANT

RECORD_KEYS = ("op", "variant", "tier", "dtype", "shape", "gelu", "status", "validated",
               "max_rel_err", "median_ms", "p20_ms", "p80_ms", "bytes", "gbps", "note")
TOP_KEYS = ("available", "torch_version", "triton_version", "device", "seed", "records")

__all__ = ["RECORD_KEYS", "GEMM_RECORD_KEYS", "ERROR_METRICS", "TOP_KEYS", "record_bytes",
           "make_record", "check_contract", "write_json", "unavailable_doc", "report_unavailable",
           "format_table"]


def record_bytes(op, dtype, shape, opts=None):
    """The bytes a call of `op` moves at least (kernlab's count, which GB/s divides); `opts`:
    the op's own options (`OpSpec.opts`; the MLP's layers, mode and steps, kernlab's defaults
    where None)."""
    return ops.spec(op).bytes(dtype, shape, opts)


def make_record(op, variant, dtype, shape, gelu, activation=None, eps=None, opts=None):
    """A record in the "error" state (filled in by the run). `shape` is (rows, cols) for the
    row ops, (M, N, K) for matmul and linear, (B, D) for mlp; `gelu` is gelu's and mlp's form,
    `activation` linear's (matmul: none), `eps` rmsnorm's, `opts` the op's own options
    (`OpSpec.opts`: mlp's layers, mode and steps); each op ignores the ones that are not
    its own."""
    spec = ops.spec(op)
    f = spec.record_fields(shape, gelu=gelu, activation=activation, eps=eps, opts=opts)
    r = {
        "op": op,
        "variant": variant,
        "tier": "torch",
        "dtype": dtype,
        "shape": [int(v) for v in shape],
        "gelu": f.pop("gelu"),
        "status": "error",
        "validated": False,
        "max_rel_err": None,
        "median_ms": None,
        "p20_ms": None,
        "p80_ms": None,
        "bytes": spec.bytes(dtype, shape, opts),
        "gbps": None,
        "note": None,
        "tolerance": spec.tolerance(dtype, opts),
        # matmul / linear (null for the row ops):
        "activation": f.pop("activation"),
        "bias": f.pop("bias"),
        "flops": f.pop("flops"),
        "tflops": None,
        "error_metric": f.pop("error_metric"),
        "validated_rows": None,
        "max_elem_rel_err": None,
        # under --rotate: the copies the timed calls cycled through (null: one)
        "rotate_copies": None,
        # kernlab_do_bench: the version kernlab's `auto` picked there (kernlab fills it in)
        "picked": None,
        # calls under 1 ms: the median of do_bench's loop run again with every launch queued
        # ahead of the GPU (`host_check`): the call's GPU time with no host time in it
        "queued_ms": None,
        # calls under 1 ms: the median of the settled form (`settled_check`: the stream parked
        # behind each flush until it finished, then the events and the call freed as one batch)
        "settled_ms": None,
        # row ops under --repeat K > 1: every round's median in the order they ran, and their
        # (max - min) / the kept round's median
        "repeat_medians_ms": None,
        "spread": None,
    }
    r.update(f)  # the op's own keys (rmsnorm: eps; mlp: layers, mode, steps, its tolerance, ...)
    return r


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
    need(is_int(doc["seed"]), "'seed' is not an int")
    for i, r in enumerate(doc["records"]):
        where = f"record {i}"
        need(isinstance(r, dict), f"{where} is not an object")
        for k in RECORD_KEYS:
            need(k in r, f"{where}: missing key '{k}'")
        need(r["op"] in ops.OPS, f"{where}: bad op")
        spec = ops.spec(r["op"])
        need(r["variant"] in spec.variants or (r["variant"] == KERNLAB_VARIANT and spec.kernlab_call),
             f"{where}: bad variant (not one of {r['op']}'s)")
        need(r.get("picked") is None or isinstance(r["picked"], str), f"{where}: bad picked")
        need(r["tier"] == "torch", f"{where}: tier is not 'torch'")
        need(r["dtype"] in DTYPES, f"{where}: bad dtype")
        need(isinstance(r["shape"], list) and len(r["shape"]) == spec.ndim
             and all(is_int(v) and v > 0 for v in r["shape"]),
             f"{where}: bad shape (want {spec.shape_keys})")
        spec.check_gelu(r, need, where)
        for k in spec.record_keys:
            need(k in r, f"{where}: missing key '{k}'")
        spec.check_record(r, need, where)
        need(r["status"] in spec.statuses, f"{where}: bad status")
        rm, sp = r.get("repeat_medians_ms"), r.get("spread")  # optional (older documents lack them)
        need((rm is None) == (sp is None), f"{where}: 'repeat_medians_ms' and 'spread' not set together")
        if rm is not None:
            need(r["status"] == "ok" and isinstance(rm, list) and len(rm) >= 2
                 and all(is_number(v) and math.isfinite(v) and v > 0 for v in rm),
                 f"{where}: 'repeat_medians_ms' is not a list of two or more positive times on an ok record")
            need(is_number(sp) and math.isfinite(sp) and sp >= 0,
                 f"{where}: 'spread' is not a finite fraction >= 0")
            need(r["median_ms"] in rm, f"{where}: 'median_ms' is none of its rounds' medians")
        q = r.get("queued_ms")  # optional (older documents lack it)
        need(q is None or (is_number(q) and math.isfinite(q) and q > 0 and r["status"] == "ok"),
             f"{where}: 'queued_ms' is neither null nor a positive time on an ok record")
        sm = r.get("settled_ms")  # optional (older documents lack it)
        need(sm is None or (is_number(sm) and math.isfinite(sm) and sm > 0 and r["status"] == "ok"),
             f"{where}: 'settled_ms' is neither null nor a positive time on an ok record")
        rc = r.get("rotate_copies")  # optional (older documents lack it)
        need(rc is None or (is_int(rc) and rc >= 2 and r["status"] == "ok"),
             f"{where}: 'rotate_copies' is neither null nor a count of at least 2 on an ok record")
        need(isinstance(r["validated"], bool), f"{where}: 'validated' is not a bool")
        need(isinstance(r["bytes"], int) and r["bytes"] > 0, f"{where}: bad bytes")
        for k in ("max_rel_err", "median_ms", "p20_ms", "p80_ms", "gbps"):
            v = r[k]
            need(v is None or (is_number(v) and math.isfinite(v)),
                 f"{where}: '{k}' is neither a finite number nor null")
        need(r["note"] is None or isinstance(r["note"], str), f"{where}: bad note")
        if r["status"] == "ok":
            need(r["validated"] is True, f"{where}: ok but not validated")
            for k in ("max_rel_err", "median_ms", "gbps"):
                need(r[k] is not None, f"{where}: ok but '{k}' is null")
        else:
            need(r["validated"] is False, f"{where}: {r['status']} but validated")
            need(r["median_ms"] is None and r["gbps"] is None, f"{where}: {r['status']} but timed")


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


def format_table(records):
    """The records as a text table (a TFLOP/s column where one of them counts FLOPs: a GEMM's
    or the MLP's)."""
    gemm = any(r.get("flops") is not None for r in records)
    head = ("variant", "shape", "ms", "GB/s") + (("TFLOP/s",) if gemm else ()) + ("err", "status")
    rows = [head]
    for r in records:
        row = (r["variant"], shape_str(r["shape"]), fmt(r["median_ms"], ".4f"), fmt(r["gbps"], ".1f"))
        if gemm:
            row += (fmt(r.get("tflops"), ".1f"),)
        row += (fmt(r["max_rel_err"], ".2e"), r["status"])
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
