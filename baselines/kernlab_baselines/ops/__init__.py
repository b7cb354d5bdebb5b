"""The op table: one `OpSpec` an op (`base.py`), each from its own module, that the generic
code (command line, contract, runner) iterates over instead of naming ops."""

from . import gelu, gemm, mlp, rmsnorm, softmax

TABLE = {s.name: s for s in (gelu.SPEC, softmax.SPEC, gemm.MATMUL, gemm.LINEAR, rmsnorm.SPEC,
                             mlp.SPEC)}
OPS = tuple(TABLE)
# c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]); shapes MxNxK. matmul: no bias, no activation.
GEMM_OPS = tuple(name for name, s in TABLE.items() if s.gemm)
ROW_OPS = tuple(name for name, s in TABLE.items() if s.rows)
# Ops with a shape loop of their own (`OpSpec.run_shape`): the MLP.
OWN_LOOP_OPS = tuple(name for name, s in TABLE.items() if not s.rows and not s.gemm)
# Ops with a kernlab package function (--kernlab: the kernlab_do_bench column).
KERNLAB_OPS = tuple(name for name, s in TABLE.items() if s.kernlab_call)


def spec(op):
    """The op's `OpSpec` (KeyError for an op not in the table)."""
    return TABLE[op]


def words(names):
    """'a', 'a and b', 'a, b and c'."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
