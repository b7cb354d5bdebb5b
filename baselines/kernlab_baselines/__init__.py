"""PyTorch / torch.compile / Triton baselines for kernlab's GeLU, softmax, RMSNorm, matmul,
linear and MLP tables; `baselines/torch_baselines.py` is its command line.

Unit tests (no torch, no NumPy, no GPU needed), from the repository's root:
    python3 -m unittest discover -s baselines/tests -t baselines
(`python3 baselines/torch_baselines.py --self-test` runs the same tests.)

kernlab times its own CUDA kernels; this program times the same op, shapes and dtype on the
same GPU through PyTorch, so kernlab can merge the results as extra columns:

  torch_manual   the CS336 lecture's eager compositions (one kernel per primitive op); for
                 linear: y = x @ w.t(), y = y + b, then the lecture's multi-op GeLU (none for
                 matmul, where it would be torch_native again)
  torch_native   torch.nn.functional.gelu / torch.softmax / F.rms_norm / a @ w.t() /
                 F.gelu(F.linear(x, w, b), approximate=...)
  torch_compile  torch.compile of the torch_manual function (the row ops) or of the
                 torch_native one (matmul, linear), compiled once per shape
  triton         the lecture's Triton kernels (1-D elementwise GeLU, one-row-per-program
                 softmax and RMSNorm) and a tiled Triton GEMM (grouped tile order, masked
                 edges, f32 accumulation, bias + activation fused in the epilogue, autotuned)

The MLP (the lecture's `L` layers of x = gelu(nn.Linear(D, D)(x)), --layers, --mode forward or
train, --steps; shapes BxD) has columns of its own: torch_native (the eager model),
torch_compile (torch.compile of it) and torch_compile_ro (mode "reduce-overhead": CUDA
graphs); train mode times whole training steps (zero_grad, forward, mean, backward), and its
records carry the peak device memory of a call. `ops/mlp.py` says how it is run and judged.

matmul and linear follow kernlab's contract c[M,N] = act(a[M,K] . w[N,K]^T + bias[N]), `w`
stored as nn.Linear stores its weight; matmul has no bias and no activation. Their shapes are
MxNxK. f32 GEMMs run with TF32 off (float32 matmul precision "highest"), recorded in the JSON.
rmsnorm is y = x * rsqrt(mean(x^2, last dim) + eps) * weight (F.rms_norm), shapes ROWSxCOLS.
f32 runs with TF32 off for every op.

Every variant is first validated against a float64 reference (the row ops: kernlab's
element-wise error measure, see `checking.rel_err_array`; matmul/linear: the relative L2 error
of each checked output row, see `checking.row_rel_l2_array`, on all rows or on a seeded sample
of rows for large outputs; mlp: kernlab's group-scaled row L2 error on sampled output rows or
on its gradients, see `checking.group_rel_l2_array`), and only a variant that passes is
timed, with
`triton.testing.do_bench` (median, p20, p80; L2 flushed before each call by do_bench). With
`--rotate N|auto` (as kernlab's `--rotate`) the timed calls cycle through N copies of the inputs
and as many outputs, so neither side's figure has its calls reuse one buffer while the other's
does not. After each timing of a call under 1 ms, the same loop runs again with every launch
queued ahead of the GPU (`timing.Timer.host_check`): where the host fell behind the GPU and
do_bench's median is above the queued one, the GPU waited for launches inside the timed window,
and the record's note says "host-bound" (`timing.host_bound_note`). The queued median goes in
the record's `queued_ms`: the call's GPU time with no host time in it, which kernlab's verdict
sets against its own kernels. Each such call is also timed in the settled form
(`timing.Timer.settled_check`, kernlab's `CudaTimer::settled` alike): the stream parked behind
each flush until it has finished, then the events and the call freed as one batch, so that the
host's pace is out of the time; its median goes in `settled_ms`, the time kernlab's verdict
judges kernels by where both sides have one.

Exit codes: 0 the run completed (individual records may still be "failed" or "error", or, for
what kernlab refuses too, "unsupported": the MLP's f16 training);
1 an unexpected internal error (JSON with the records so far is still written when --json is
given) or a failed --self-test; 2 bad command line; 3 baselines unavailable (no torch, no
triton or no CUDA device): one line on stderr and, with --json, {"available": false, ...}.

Modules:
  common          exit codes, dtypes, variant names, the shape grammar, text helpers
  ops/            the op table (`ops.TABLE`); one module an op: gelu, softmax, rmsnorm, gemm
                  (matmul and linear), mlp, each with its shapes, inputs, f64 reference, byte
                  and FLOP counts, record keys and variants; `ops/base.py` the common form
  checking        the error measures (pure Python and array forms), GEMM row sampling
  contract        records, the JSON writer, `check_contract`, the table printed
  timing          do_bench, --rotate, --repeat rounds, the host and settled checks
  package         kernlab's own kernels through its Python package (--kernlab): the
                  kernlab_do_bench column
  triton_plans    kernlab's Triton launches (--triton-plans): the triton column launches
                  kernlab's own kernels/triton/ kernels as kernlab did
  runner          the GPU run: environment probe, `Bench`, the shape loops (the MLP's is its
                  own, `OpSpec.run_shape`), the document
  cli             the command line and --self-test

Nothing here imports torch or triton at import time: they are imported by the run, once the
command line has passed its checks.
"""
