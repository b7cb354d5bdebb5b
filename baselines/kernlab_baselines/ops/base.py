"""What an op's module gives the generic code (`OpSpec`), and the common form of the row ops
(`RowOp`: gelu, softmax, rmsnorm; one ROWSxCOLS input, rows on the last dim, judged element by
element). An op that is neither a row op nor a GEMM (mlp) runs its shapes itself
(`OpSpec.run_shape`). The methods that take `bench` run on the GPU with the run's torch
(`runner.Bench`: its torch, args, device and dtype, `generator()`, `rounded()`, `checked()`,
`in_layout()`, `compile()`, `record()`); the others need no torch."""

from ..common import DTYPES, VARIANTS, parse_shapes

ERROR_METRICS = {"elementwise": "elementwise_row_scaled", "gemm": "max_row_rel_l2",
                 # the MLP: each row's L2 error over its group's RMS row norm (kernlab's GroupsL2)
                 "groups": "max_row_l2_over_group_rms"}


def row_layout(torch, t, row_stride):
    """`t` (rows x cols) in the run's layout: itself, or with a row stride a view of rows
    `row_stride` elements apart whose gaps hold NaN (as kernlab's strided inputs), so a
    variant that reads past a row's end shows it."""
    if row_stride is None or row_stride == t.shape[-1]:
        return t
    rows, cols = t.shape
    base = torch.full((rows, row_stride), float("nan"), dtype=t.dtype, device=t.device)
    base[:, :cols].copy_(t)
    return base[:, :cols]


class OpSpec:
    """One op of the table (`ops.TABLE`): its name, shape grammar, byte and FLOP counts, the
    variants it has, the options of the command line it reads, the keys and rules of its
    records, and (on the GPU) its inputs, reference and variants."""

    name = None
    ndim = 2                      # dimensions of a shape on the command line
    shape_keys = "[rows, cols]"   # a record's shape, as the contract's message names it
    gemm = False                  # judged by rows' relative L2 error, flops and tflops kept
    kernlab_call = None           # its kernlab package function (the kernlab_do_bench column)
    rows = True                   # ROWSxCOLS rows: takes --row-stride
    rounds = True                 # timed in --repeat rounds (the GEMMs are timed once)
    variants = VARIANTS           # the PyTorch columns it has
    statuses = ("ok", "failed", "error")  # a record's status
    summary = ""                  # one line for --help

    def parse_shapes(self, text):
        return parse_shapes(text, self.ndim)

    def resolve_variants(self, asked):
        """(variants to run, dropped) of those asked for."""
        return ([v for v in asked if v in self.variants],
                [v for v in asked if v not in self.variants])

    def missing_reason(self, variant):
        """Why the op has no `variant`, in a few words, where there is more to say than that it
        has none (None)."""
        return None

    def opts(self, args):
        """The run's options of the op's own that its byte and FLOP counts and its records
        depend on, as `make_record` takes them (a dict; None where it has none)."""
        return None

    def bytes(self, dtype, shape, opts=None):
        raise NotImplementedError

    def flops(self, shape, opts=None):
        return None

    def tolerance(self, dtype, opts=None):
        """The largest error a correct output may show (kernlab's: the dtype's)."""
        return DTYPES[dtype][2]

    def normalise_args(self, args):
        """Set the run's op options (args.gelu, args.activation, args.eps) to what this op
        takes: None where it takes none."""
        args.gelu = None
        args.activation = None
        args.eps = None

    def arg_error(self, args):
        """A message where the op's options are out of range, else None."""
        return None

    def form(self, args):
        """The run's op option in a word, for the lines printed (None where it has none)."""
        return None

    def record_form(self, r):
        """A record's op option in a word, for its progress line (None where it has none)."""
        return None

    def record_fields(self, shape, gelu=None, activation=None, eps=None, opts=None):
        """The op's values of a record's keys gelu, activation, bias, flops and error_metric,
        and any keys of its own after them (`opts`: the op's own options, `OpSpec.opts`)."""
        return {"gelu": None, "activation": None, "bias": None, "flops": None,
                "error_metric": ERROR_METRICS["elementwise"]}

    # Keys a record of this op has besides the contract's RECORD_KEYS.
    record_keys = ()

    def check_gelu(self, r, need, where):
        """The rule for a record's gelu key (`need(cond, message)` raises where cond fails)."""
        need(r["gelu"] is None, f"{where}: {r['op']} with a gelu form")

    def check_record(self, r, need, where):
        """The op's own rules for record r, once its keys are there (`need` as above)."""

    def doc_fields(self, args):
        """Top-level keys of the JSON the op adds."""
        return {}

    def run_shape(self, bench, shape, variants, log):
        """The records of one shape, for an op that is neither a row op nor a GEMM (those run
        through the runner's own loops)."""
        raise NotImplementedError

    def kernlab_fn(self, bench, kl, variant):
        """fn(*inputs) calling `kernlab_call` of the kernlab package `kl` in `variant` with the
        run's options, as PyTorch's columns are called (ops with `kernlab_call` only)."""
        raise NotImplementedError


class RowOp(OpSpec):
    """A row op: x of shape ROWSxCOLS (with --row-stride, rows that far apart, the gaps NaN),
    out of the same shape and dtype, judged element by element (`rel_err_array`) against a
    float64 reference; the variants take the inputs (`make_inputs`) in order, the Triton one
    an `out` after them."""

    def bytes(self, dtype, shape, opts=None):
        rows, cols = shape
        return 2 * int(rows) * int(cols) * DTYPES[dtype][1]  # input read once, output written once

    # -- on the GPU ---------------------------------------------------------------------------
    def make_inputs(self, bench, shape):
        """The inputs as a tuple, x first (in the run's layout), drawn from --seed."""
        raise NotImplementedError

    def reference(self, bench, inputs):
        """The float64 reference (rows x cols, contiguous) from the dtype-rounded inputs."""
        raise NotImplementedError

    def core(self, bench):
        """The lecture's eager composition, in the dtype it is given."""
        raise NotImplementedError

    def manual_fn(self, bench):
        """torch_manual: `core`, with --manual-precision f32 (the default) on a 16-bit input
        cast to f32 first and the result back at the end, as kernlab's own manual tier does;
        with 'input' every op runs in the input dtype."""
        core = self.core(bench)
        if not bench.manual_upcast:
            return core

        def manual(x):
            return core(x.float()).to(x.dtype)

        return manual

    def native_fn(self, bench):
        raise NotImplementedError

    def native_out(self, bench):
        """torch_native's out= form, call(*inputs, out), or None where PyTorch has none (the CPU
        times this form where it exists)."""
        return None

    def compile_fn(self, bench):
        """torch_compile: torch.compile of torch_manual, compiled once a shape."""
        return bench.compile(self.manual_fn(bench))

    def triton_fn(self, bench, shape):
        """(fn(*inputs, out=None), note), or raises where the kernel cannot run this case."""
        raise NotImplementedError

    def variant_notes(self, bench, variant, inputs):
        """Notes of the op's own on a variant's record."""
        return []
