#!/usr/bin/env python3
"""PyTorch / torch.compile / Triton baselines for kernlab (`kernlab bench --torch` runs this):
the command line of the package `kernlab_baselines` beside this file, whose docstring says
what it measures and how, and which names below it re-exports for those who load this file as
a module (kernlab's tests).

  python3 baselines/torch_baselines.py --op softmax --shapes 4096x1024 --dtype bf16 --json out.json
  python3 baselines/torch_baselines.py --self-test      (the unit tests; no torch needed)

Exit codes: 0 the run completed; 1 an internal error or a failed --self-test; 2 bad command
line; 3 baselines unavailable (no torch, no triton or no CUDA device).
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if not any(os.path.abspath(p or os.curdir) == _HERE for p in sys.path):
    sys.path.insert(0, _HERE)  # loaded by path (importlib), not run: find the package beside it

from kernlab_baselines import timing as _timing  # noqa: E402
from kernlab_baselines.checking import (GEMM_FULL_CHECK_ELEMS, GEMM_SAMPLE_ROWS,  # noqa: E402,F401
                                        MEASURE_CHUNK_ELEMS, ROW_SCALE, NumpyOps, TorchOps,
                                        rel_err_array, rel_err_py, row_rel_l2_array,
                                        row_rel_l2_py, sample_rows)
from kernlab_baselines.cli import build_parser, main, self_test  # noqa: E402,F401
from kernlab_baselines.common import (DTYPES, EXIT_INTERNAL, EXIT_OK, EXIT_UNAVAILABLE,  # noqa: E402,F401
                                      EXIT_USAGE, MIN_POSITIVE, PROG, VARIANTS, first_line,
                                      parse_shapes, parse_variants, shape_str)
from kernlab_baselines.contract import (ERROR_METRICS, GEMM_RECORD_KEYS, RECORD_KEYS,  # noqa: E402,F401
                                        TOP_KEYS, check_contract, format_table, make_record,
                                        record_bytes, report_unavailable, unavailable_doc,
                                        write_json)
from kernlab_baselines.ops import GEMM_OPS, OPS  # noqa: E402,F401
from kernlab_baselines.ops.gelu import GELU_FORMS  # noqa: E402,F401
from kernlab_baselines.ops.gemm import ACTIVATIONS, gemm_bytes, gemm_flops  # noqa: E402,F401
from kernlab_baselines.ops.rmsnorm import F32_EPS  # noqa: E402,F401
from kernlab_baselines.ops.softmax import manual_softmax  # noqa: E402,F401
from kernlab_baselines.package import KERNLAB_VARIANT, load_package  # noqa: E402,F401
from kernlab_baselines.triton_plans import load_triton_plans  # noqa: E402,F401
from kernlab_baselines.timing import (host_bound_note, parse_rotate, rotate_copies,  # noqa: E402,F401
                                      summarise_rounds, timing_failed)

# The word kernlab's verdict looks for in a record's note; kernlab's own test
# (src/bench/report.rs) reads this line from this file, so it stays written out here.
HOST_BOUND = "host-bound"
if HOST_BOUND != _timing.HOST_BOUND:
    raise ImportError(f"HOST_BOUND here ({HOST_BOUND!r}) is not the package's "
                      f"({_timing.HOST_BOUND!r})")


def shape_ndim(op):
    """The dimensions of `op`'s shapes on the command line (2: ROWSxCOLS, 3: MxNxK)."""
    from kernlab_baselines import ops
    return ops.spec(op).ndim


def resolve_variants(op, variants):
    """(variants to run, dropped) for an op: matmul has no torch_manual (it is a @ w.t(),
    which is torch_native)."""
    from kernlab_baselines import ops
    return ops.spec(op).resolve_variants(variants)


if __name__ == "__main__":
    sys.exit(main())
