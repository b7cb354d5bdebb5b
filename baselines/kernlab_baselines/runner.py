"""The run on the GPU: the environment probe, `Bench` (what every op's GPU code is handed), the
two shape loops (row ops: validate each variant, then time them in --repeat rounds; GEMMs:
validate on checked rows, then time once; an op with a loop of its own, the MLP, runs it
through `OpSpec.run_shape`) and the document they fill. torch and triton are
imported here only through `probe_environment` and the modules it leads to."""

import importlib
import sys

from . import ops
from .checking import TorchOps, measure_rows, row_rel_l2_array, rel_err_array, sample_rows
from .common import DTYPES, EXIT_INTERNAL, EXIT_OK, PROG, first_line, fmt, shape_str
from .contract import format_table, make_record, write_json
from .ops.base import row_layout
from .package import KERNLAB_VARIANT, describe as kernlab_describe, load_package
from .triton_plans import NO_PLAN
from .timing import CPU_CACHE_BYTES, CpuTimer, Timer, timing_failed


def probe_environment(device="cuda"):
    """(torch, None) when torch is usable and, for device "cuda", triton and a CUDA device
    too; else (None, reason)."""
    try:
        import torch
    except Exception as e:
        return None, f"torch is not importable ({first_line(e)})"
    if device == "cpu":
        return torch, None
    try:
        importlib.import_module("triton")
        importlib.import_module("triton.language")
    except Exception as e:  # ImportError, or a broken install
        return None, f"triton is not importable ({first_line(e)})"
    try:
        importlib.import_module("triton.testing")
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
    """What the ops' GPU code is handed for one run: torch, the run's args, the device, the
    dtype (torch's, its tolerance and floor), the op's spec, the timer, kernlab's Triton plans
    and (--kernlab) the kernlab package, or why it cannot be used."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.spec = ops.spec(args.op)
        self.ops = TorchOps(torch)
        self.cpu = getattr(args, "device", "cuda") == "cpu"
        self.dev = torch.device("cpu" if self.cpu else "cuda")
        self.tdtype = getattr(torch, DTYPES[args.dtype][0])
        self.tol = DTYPES[args.dtype][2]
        self.floor = DTYPES[args.dtype][3]
        if self.cpu:
            if args.threads is not None:
                torch.set_num_threads(args.threads)
            cache_bytes = args.cache_bytes or CPU_CACHE_BYTES
            self.timer = CpuTimer(torch, args, self.dev, cache_bytes, self.in_layout)
        else:
            cache_bytes = args.cache_bytes if args.cache_bytes else int(
                getattr(torch.cuda.get_device_properties(self.dev), "L2_cache_size", 0)
                or (50 << 20))
            self.timer = Timer(torch, args, self.dev, cache_bytes, self.in_layout)
        self.triton_plans = getattr(args, "triton_plan_map", None) or {}
        self.kernlab, self.kernlab_error = None, None
        if getattr(args, "kernlab", None):
            try:
                self.kernlab = load_package(getattr(args, "kernlab_build", None))
            except RuntimeError as e:
                self.kernlab_error = str(e)

    def with_kernlab(self, variants):
        """`variants`, and the kernlab_do_bench column where --kernlab asks for it."""
        if getattr(self.args, "kernlab", None):
            return list(variants) + [KERNLAB_VARIANT]
        return list(variants)

    def kernlab_fn(self):
        """(fn(*inputs), note) calling the op's kernlab package function in --kernlab's variant;
        raises where the package cannot be used."""
        if self.kernlab is None:
            raise RuntimeError(self.kernlab_error)
        variant = self.args.kernlab
        return (self.spec.kernlab_fn(self, self.kernlab, variant),
                kernlab_describe(self.kernlab, self.spec.kernlab_call, variant))

    def sync(self):
        """Wait for the device (nothing to wait for on the CPU)."""
        if not self.cpu:
            self.torch.cuda.synchronize()

    def empty_cache(self):
        """Give the caching allocator's free blocks back (CUDA only)."""
        if not self.cpu:
            self.torch.cuda.empty_cache()

    def with_out(self, call, shape=None):
        """fn(*inputs) through `call(*inputs, out)`, the out= form, into an output of `shape`
        (default the first input's) kept per input tensor: made NaN-filled at its first call,
        so the validating call finds it poisoned, then reused as PyTorch's `out=` callers do."""
        torch = self.torch
        outs = {}

        def fn(*inputs):
            x = inputs[0]
            o = outs.get(id(x))
            if o is None:
                o = outs[id(x)] = torch.full(tuple(shape or x.shape), float("nan"),
                                             dtype=x.dtype, device=x.device)
            call(*inputs, o)
            return o

        return fn

    def triton_plan(self, shape):
        """kernlab's Triton launch at `shape` (`--triton-plans`); raises where it gave none."""
        plan = self.triton_plans.get(tuple(shape))
        if plan is None:
            raise RuntimeError(NO_PLAN)
        return plan

    @property
    def manual_upcast(self):
        """Whether torch_manual runs in f32 on this dtype (--manual-precision f32, 16-bit in)."""
        return self.args.manual_precision == "f32" and self.tdtype != self.torch.float32

    def generator(self):
        """A generator on the device seeded with --seed (one a shape: every shape's inputs are
        the same draws)."""
        g = self.torch.Generator(device=self.dev)
        g.manual_seed(self.args.seed)
        return g

    def rounded(self, t64):
        """The float64 draw `t64` rounded to the run's dtype, contiguous (the caller drops the
        draw, then `checked` the result)."""
        return t64.to(self.tdtype).contiguous()

    def checked(self, t):
        """`t`, a drawn input; raises where it is non-finite or all zero."""
        if not bool(self.torch.isfinite(t).all()) or float(t.abs().max()) == 0.0:
            raise RuntimeError("generated input is non-finite or all zero")
        return t

    def in_layout(self, t):
        """`t` (rows x cols) in the run's layout (--row-stride; `ops.base.row_layout`)."""
        return row_layout(self.torch, t, self.args.row_stride)

    def reset_compiler(self):
        """Drop everything torch.compile has compiled (torch._dynamo.reset), so the next
        compile is fresh and specialised to its shape."""
        try:
            self.torch._dynamo.reset()
        except Exception:
            pass

    def compile(self, fn, mode=None, reset=True):
        """torch.compile of fn, shape-specialised (dynamic=False), in `mode` (None: the run's
        --compile-mode); fresh (`reset_compiler` first) unless `reset` is False, for a second
        compile of a shape that must not drop the first."""
        if reset:
            self.reset_compiler()
        if mode is None:
            mode = self.args.compile_mode
        return self.torch.compile(fn, dynamic=False, mode=None if mode == "default" else mode)

    def measure(self, out, ref):
        """(max_rel_err, mismatches) of `out` (any dtype) against the float64 `ref`."""
        return measure_rows(self.torch, self.ops, out, ref, self.floor)

    def poison_allocator(self, like, nbytes=None):
        """Leave a freed, 0xFF-filled block (NaN in f32, bf16 and f16) of the output's size
        (`like`'s, or `nbytes`) in the caching allocator, so an output that lands there and is
        not fully written shows up as NaN. Best effort: the op may be handed another block."""
        torch = self.torch
        if self.cpu:  # no caching allocator to poison: the out= outputs start NaN-filled
            return
        if nbytes is None:
            nbytes = like.numel() * like.element_size()
        junk = torch.empty(nbytes, dtype=torch.uint8, device=self.dev)
        junk.fill_(0xFF)
        del junk

    def run_shape(self, shape, variants, log):
        """The records of one shape, every variant validated, then timed."""
        if self.spec.gemm:
            return run_gemm_shape(self, shape, variants, log)
        if self.spec.rows:
            return run_row_shape(self, shape, variants, log)
        return self.spec.run_shape(self, shape, variants, log)

    def record(self, variant, shape):
        """A fresh record of `variant` at `shape` with the run's options (`make_record`)."""
        a = self.args
        return make_record(a.op, variant, a.dtype, shape, a.gelu, a.activation, a.eps,
                           opts=self.spec.opts(a))


def _record(bench, variant, shape):
    return bench.record(variant, shape)


def run_row_shape(bench, shape, variants, log):
    """A row op's shape: each variant validated against the float64 reference (a poisoned
    output; the Triton kernel writes into a NaN-filled one), then the valid ones timed in
    --repeat rounds, each round taking them in turn."""
    torch, spec, a = bench.torch, bench.spec, bench.args
    timer = bench.timer
    variants = bench.with_kernlab(variants)
    recs = {v: _record(bench, v, shape) for v in variants}
    try:
        inputs = spec.make_inputs(bench, shape)
        ref = spec.reference(bench, inputs)
    except Exception as e:
        msg = f"input/reference: {first_line(e)}"
        for r in recs.values():
            r["note"] = msg
        bench.empty_cache()
        return list(recs.values())
    x = inputs[0]

    fns = {}
    for v in variants:
        r = recs[v]
        notes = []
        try:
            if v == "torch_manual":
                fn = spec.manual_fn(bench)
            elif v == "torch_native":
                out_call = spec.native_out(bench) if bench.cpu else None
                if out_call is not None:
                    fn = bench.with_out(out_call)
                    notes.append("out= form, into an output kept per input")
                else:
                    fn = spec.native_fn(bench)
                    if bench.cpu:
                        notes.append("no out= form: a new output each call")
            elif v == "torch_compile":
                fn = spec.compile_fn(bench)
            elif v == KERNLAB_VARIANT:
                fn, knote = bench.kernlab_fn()
                notes.append(knote)
            else:
                fn, tnote = spec.triton_fn(bench, shape)
                notes.append(tnote)
            if v in ("torch_manual", "torch_compile") and bench.tdtype != torch.float32:
                notes.append("f32 intermediates (x.float() in, .to(dtype) out)"
                             if a.manual_precision == "f32" else
                             f"every op in {a.dtype} (--manual-precision input)")
            if v == "torch_compile":
                notes.append("compiled once for this shape (dynamic=False) before timing")
            notes.extend(spec.variant_notes(bench, v, inputs))

            # Validate: poisoned output, the float64 comparison.
            bench.poison_allocator(x)
            if v == "triton":
                out = torch.full_like(x, float("nan"))
                fn(*inputs, out)
            else:
                out = fn(*inputs)  # torch_compile compiles here, on its first call
            bench.sync()
            if tuple(out.shape) != tuple(x.shape) or out.dtype != x.dtype:
                raise RuntimeError(f"output is {tuple(out.shape)} {out.dtype}, "
                                   f"want {tuple(x.shape)} {x.dtype}")
            err, mism = bench.measure(out, ref)
            del out
            if mism:
                r["status"] = "failed"
                r["max_rel_err"] = None
                notes.append(f"{mism} elements NaN/inf where the reference is not (or the reverse)")
            else:
                r["max_rel_err"] = err
                if err <= bench.tol:
                    r["status"] = "ok"
                    r["validated"] = True
                    fns[v] = fn
                else:
                    r["status"] = "failed"
                    notes.append(f"max_rel_err {err:.3e} > tolerance {bench.tol:.0e}")
        except Exception as e:
            r["status"] = "error"
            r["validated"] = False
            notes.append(first_line(e))
            fns.pop(v, None)
        r["note"] = "; ".join(notes) if notes else None
        bench.empty_cache()

    del ref
    bench.empty_cache()

    def failed(r, e):
        timing_failed(r, e)
        fns.pop(r["variant"], None)

    # --repeat K: K rounds, each timing every variant in turn, so that a drift in the GPU's
    # state over the shape's timings falls on every variant alike.
    xs = None  # the inputs and their copies for --rotate, made before the first timing
    rounds = {}
    for _ in range(a.repeat):
        for v in [v for v in variants if v in fns]:
            r = recs[v]
            try:
                if xs is None:
                    xs = timer.rotated(inputs, r["bytes"])
                rounds.setdefault(v, []).append(timer.time_round(fns[v], xs))
            except Exception as e:
                failed(r, e)
            bench.empty_cache()
    for v in variants:
        r = recs[v]
        if v in fns:
            try:
                med = timer.finish_record(r, fns[v], xs, rounds[v])
                r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9 if med and med > 0 else None
            except Exception as e:
                failed(r, e)
        log(r)

    del x, inputs, xs, fns
    bench.empty_cache()
    return [recs[v] for v in variants]


def run_gemm_shape(bench, shape, variants, log):
    """A GEMM's shape: each variant validated on the checked rows (`sample_rows`) against the
    float64 reference (a NaN-filled out= where the API has one, then the plain call on a
    poisoned allocator; the worst counts), then the valid ones timed once."""
    torch, spec, a = bench.torch, bench.spec, bench.args
    m, n, k = shape
    variants = bench.with_kernlab(variants)
    recs = {v: _record(bench, v, shape) for v in variants}
    try:
        x, w, b = spec.make_inputs(bench, shape)
        rows = sample_rows(m, n, a.seed)
        idx, ref = spec.reference(bench, x, w, b, rows)
    except Exception as e:
        msg = f"input/reference: {first_line(e)}"
        for r in recs.values():
            r["note"] = msg
        bench.empty_cache()
        return list(recs.values())
    checked = (f"checked all {m} rows" if len(rows) == m else
               f"checked {len(rows)} sampled rows (first, last, seeded random) x all {n} columns")
    out_bytes = m * n * DTYPES[a.dtype][1]

    def measure(out):
        """(max row relative L2 error, mismatches, element-wise max_rel_err) of the checked
        rows of `out` against the float64 `ref`."""
        o = out.index_select(0, idx).to(torch.float64)
        err, mism = row_rel_l2_array(bench.ops, o, ref)
        elem, _ = rel_err_array(bench.ops, o, ref, bench.floor)
        return err, mism, elem

    fns = {}
    for v in variants:
        r = recs[v]
        notes = []
        try:
            out_fn = None
            if v == "torch_manual":
                fn = spec.manual_fn(bench)
                mnote = spec.manual_note(bench)
                if mnote:
                    notes.append(mnote)
            elif v == "torch_native":
                fn = spec.native_fn(bench)
                out_fn = spec.native_out_fn(bench)
                if bench.cpu and out_fn is not None:
                    # On the CPU the out= form is the one timed, as a caller that preallocates
                    # its output calls it, into an output kept per input copy.
                    fn = bench.with_out(out_fn, (m, n))
                    notes.append("out= form timed, into an output kept per input")
            elif v == "torch_compile":
                fn = spec.compile_fn(bench)
                notes.append("torch.compile of the torch_native function, compiled once for "
                             "this shape (dynamic=False) before timing")
            elif v == KERNLAB_VARIANT:
                fn, knote = bench.kernlab_fn()
                notes.append(knote)
            else:
                fn, tnote = spec.triton_fn(bench, shape)
                notes.append(tnote)
                out_fn = fn
                warm = torch.empty((m, n), device=bench.dev, dtype=bench.tdtype)
                fn(x, w, b, warm)  # the first call compiles the kernel
                del warm

            # Validate: a NaN-filled out= where the API has one, then the plain call (the
            # one timed) on a poisoned allocator; the worst of the two counts.
            outs = []
            if out_fn is not None:
                o = torch.full((m, n), float("nan"), device=bench.dev, dtype=bench.tdtype)
                out_fn(x, w, b, o)
                outs.append(o)
            bench.poison_allocator(None, nbytes=out_bytes)
            outs.append(fn(x, w, b))  # torch_compile compiles here, on its first call
            bench.sync()
            err = elem = 0.0
            mism = 0
            for o in outs:
                if tuple(o.shape) != (m, n) or o.dtype != bench.tdtype:
                    raise RuntimeError(f"output is {tuple(o.shape)} {o.dtype}, "
                                       f"want {(m, n)} {bench.tdtype}")
                e1, m1, el1 = measure(o)
                err, elem, mism = max(err, e1), max(elem, el1), mism + m1
            del outs, o
            notes.append(checked)
            if mism:
                r["status"] = "failed"
                notes.append(f"{mism} elements NaN/inf where the reference is not (or the reverse)")
            else:
                r["max_rel_err"] = err
                r["max_elem_rel_err"] = elem
                if err <= bench.tol:
                    r["status"] = "ok"
                    r["validated"] = True
                    r["validated_rows"] = len(rows)
                    fns[v] = fn
                else:
                    r["status"] = "failed"
                    notes.append(f"max row relative L2 error {err:.3e} > tolerance {bench.tol:.0e}")
        except Exception as e:
            r["status"] = "error"
            r["validated"] = False
            notes.append(first_line(e))
            fns.pop(v, None)
        r["note"] = "; ".join(notes) if notes else None
        bench.empty_cache()

    del ref, idx
    bench.empty_cache()

    xs = None  # the inputs and their copies for --rotate, made before the first timing
    for v in variants:
        r = recs[v]
        if v not in fns:
            log(r)
            continue
        fn = fns[v]
        try:
            if xs is None:
                xs = bench.timer.rotated((x, w, b), r["bytes"])
            med = bench.timer.time_record(r, fn, xs)
            if med and med > 0:
                r["gbps"] = r["bytes"] / (med * 1e-3) / 1e9
                r["tflops"] = r["flops"] / (med * 1e-3) / 1e12
        except Exception as e:
            timing_failed(r, e)
        bench.empty_cache()
        log(r)

    del x, w, b, xs, fns
    bench.empty_cache()
    return [recs[v] for v in variants]


def cpu_name():
    """The CPU's model name (/proc/cpuinfo), or the platform's processor string."""
    import platform

    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    """Every shape of the run, its document written to --json and its table printed; the exit
    code (1 where the run stopped early)."""
    spec = ops.spec(args.op)
    matmul_settings = configure_matmul_precision(torch)
    bench = Bench(torch, args)
    if bench.cpu:
        triton_version = "not used (--device cpu)"
        device = f"CPU ({cpu_name()}), {torch.get_num_threads()} threads"
        timer = ("perf_counter around each call, the cache flushed before it (a write of "
                 f"{2 * bench.timer.cache_bytes} bytes), Python's garbage collector off")
    else:
        import triton

        triton_version = str(getattr(triton, "__version__", "unknown"))
        device = torch.cuda.get_device_name(torch.cuda.current_device())
        timer = ("triton.testing.do_bench, L2 flushed before each call, Python's garbage "
                 "collector off while it runs")
    doc = {
        "available": True,
        "torch_version": str(torch.__version__),
        "triton_version": triton_version,
        "device": device,
        "seed": int(args.seed),
        "cuda_version": torch.version.cuda,
        "threads": torch.get_num_threads() if bench.cpu else None,
        "timer": timer,
        "rotate": args.rotate,
        "repeat": args.repeat if spec.rounds else 1,
        "warmup_ms": args.warmup_ms,
        "rep_ms": args.rep_ms,
        "manual_precision": args.manual_precision,
        "compile_mode": args.compile_mode,
        "row_stride": args.row_stride,
        "matmul_settings": matmul_settings,
        "records": [],
    }
    doc.update(spec.doc_fields(args))

    def log(r):
        if args.quiet:
            return
        form = ops.spec(r["op"]).record_form(r)
        tflops = f" {fmt(r.get('tflops'), '.1f')} TFLOP/s" if r.get("flops") is not None else ""
        print(f"{PROG}: {r['op']}{'/' + form if form else ''} {r['dtype']} "
              f"{shape_str(r['shape'])} {r['variant']}: {r['status']}"
              f" err {fmt(r['max_rel_err'], '.2e')} median {fmt(r['median_ms'], '.4f')} ms"
              f" {fmt(r['gbps'], '.1f')} GB/s{tflops}" + (f" ({r['note']})" if r["note"] else ""),
              file=sys.stderr, flush=True)

    rc = EXIT_OK
    try:
        if args.copy_bytes > 0:
            doc["copy"] = bench.timer.copy_ceiling(args.copy_bytes)
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
    form = spec.form(args)
    print(f"{args.op}{' (' + form + ')' if form else ''} {args.dtype} on "
          f"{doc['device']}, torch {doc['torch_version']}, triton {doc['triton_version']}, "
          f"seed {doc['seed']}")
    print(format_table(doc["records"]))
    return rc
