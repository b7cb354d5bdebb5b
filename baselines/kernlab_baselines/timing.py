"""Timing: triton.testing.do_bench around a call, `--rotate` (the calls cycle through copies of
their inputs and outputs, as kernlab's `--rotate`), `--repeat` rounds and their summary, the
queued median and host-bound note (`Timer.host_check`) and the settled median
(`Timer.settled_check`, on a `SettledGate`). The pure parts (counts, summaries, notes) need
no torch; `Timer` and `SettledGate` take a usable torch."""

import math

from .common import add_note, first_line

# --rotate, as kernlab's `--rotate` (src/bench/harness.rs, Rotate): `auto` makes the copies of a
# call's input and output at least ROTATE_CACHE_MULTIPLE x the L2, at most ROTATE_MAX_COPIES.
ROTATE_CACHE_MULTIPLE = 4
ROTATE_MAX_COPIES = 1024

HOST_BOUND = "host-bound"  # kernlab's verdict looks for this word in a record's note
HOST_CHECK_CALLS = 50
# The settled form (`settled_check`, kernlab's `CudaTimer::settled`): its calls, the calls it
# times (median under this many ms), and how long the stream may stay parked before the
# watchdog frees it (a call that waits on the GPU from the host would otherwise never end).
SETTLED_CALLS = 200
SETTLED_BELOW_MS = 1.0
SETTLED_WATCHDOG_S = 0.5
# do_bench's L2 flush buffer, bytes (the host and settled checks flush with one of this size).
FLUSH_BYTES = 256 << 20


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


def do_bench_kwargs(params, warmup_ms, rep_ms):
    """do_bench's keywords for a do_bench whose parameters are `params` (names; empty where
    its signature could not be read). In Triton 3.x: do_bench(fn, warmup=25, rep=100,
    grad_to_none=None, quantiles=None, return_mode="mean"); with `quantiles` given it returns
    those quantiles (a list) and return_mode is ignored. Old 2.0 took `percentiles` and
    returned (median, *percentiles)."""
    kw = {"warmup": warmup_ms, "rep": rep_ms}
    if "quantiles" in params or not params:
        kw["quantiles"] = [0.5, 0.2, 0.8]
    elif "percentiles" in params:
        kw["percentiles"] = [0.2, 0.8]
    if "return_mode" in params:
        kw["return_mode"] = "median"
    return kw


class SettledGate:
    """A word of pinned host memory, mapped for the device, that a stream can be parked on
    (`cuStreamWaitValue32`: go on once the word >= a ticket) until the host writes the ticket:
    the settled form's release (`Timer.settled_check`). Made once a process; it checks that the
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


class Timer:
    """do_bench and the checks around it, for one run (`args`: its --rotate, --row-stride,
    --warmup-ms and --rep-ms), on CUDA device `dev`. `cache_bytes`: the L2 --rotate auto counts
    with; `relayout(t)`: a fresh copy of the 2-D tensor `t` in --row-stride's layout (the
    copies of a strided input keep it)."""

    def __init__(self, torch, args, dev, cache_bytes, relayout):
        self.torch = torch
        self.args = args
        self.dev = dev
        self.cache_bytes = cache_bytes
        self.relayout = relayout
        self.setup()

    def setup(self):
        """What the timing itself needs: do_bench's keywords (Triton imported here)."""
        import inspect
        import triton.testing as tt

        args = self.args
        try:
            params = inspect.signature(tt.do_bench).parameters
        except (TypeError, ValueError):
            params = {}
        self._do_bench_kwargs = do_bench_kwargs(params, args.warmup_ms, args.rep_ms)
        self._gate = None

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
            free = self.free_bytes()
            need = (n + 1) * call_bytes + FLUSH_BYTES
            # A strided copy also holds its gaps.
            need += (n - 1) * sum((t.shape[0] * a.row_stride - t.numel()) * t.element_size()
                                  for t in inputs if strided(t))
            if need > free:
                raise RuntimeError(f"--rotate {a.rotate}: {n} copies of {call_bytes} bytes "
                                   f"(inputs and output) and the flush buffer need {need} "
                                   f"bytes; {free} are free")
        # A strided row view's clone would be contiguous: copies keep the run's layout.
        return [inputs] + [tuple(None if t is None else
                                 (self.relayout(t) if strided(t) else t.clone())
                                 for t in inputs)
                           for _ in range(n - 1)]

    cycling = staticmethod(cycling)

    def free_bytes(self):
        """The device memory free for --rotate's copies."""
        return self.torch.cuda.mem_get_info()[0]

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
        call = cycling(fn, xs, self.sync)
        try:
            return self.time(call)
        finally:
            del call

    def sync(self):
        """Wait for the device (the ring's first calls, before timing)."""
        self.torch.cuda.synchronize()

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
        self.check_record(r, fn, xs, med, p20)
        return med

    def check_record(self, r, fn, xs, med, p20):
        """The checks `finish_record` adds on the GPU: the host-bound check, the settled median
        and the quantiles note."""
        try:
            call = cycling(fn, xs, self.sync)
            note, r["queued_ms"] = self.host_check(call, med)
            del call
            add_note(r, note)
        except Exception as e:
            add_note(r, f"host check: {first_line(e)}")
        if med is not None and 0 < med < SETTLED_BELOW_MS:
            try:
                call = cycling(fn, xs, self.sync)
                r["settled_ms"] = self.settled_check(call)
                del call
            except Exception as e:
                add_note(r, f"settled timing: {first_line(e)}")
        if p20 is None:
            add_note(r, "do_bench gave no quantiles")

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
        cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device=self.dev)  # do_bench's
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
        (kernlab's docs/perf-notes.md). A call that waits on the GPU from the host while parked
        is freed by a watchdog and fails the check."""
        import statistics
        import threading
        import time as clock
        torch = self.torch
        gate = self.settled_gate()
        cache = torch.empty(FLUSH_BYTES // 4, dtype=torch.int, device=self.dev)  # do_bench's
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
        if self._gate is None:
            self._gate = SettledGate(self.torch)
        return self._gate

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


# The last-level cache a CPU run flushes and rotates against where --cache-bytes is not given
# (kernlab passes its own reading of the CPU's).
CPU_CACHE_BYTES = 32 << 20
# A CPU timing's least number of timed calls (kernlab's own least, TimingOpts::min_calls).
CPU_MIN_CALLS = 5


def quantile(sorted_vals, q):
    """The q-quantile of sorted values with linear interpolation (numpy's default, kernlab's
    `quantile`)."""
    if not sorted_vals:
        raise ValueError("no samples")
    pos = q * (len(sorted_vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def cpu_call_counts(warmup_ms, rep_ms, estimate_ms, cycle_ms, min_calls=CPU_MIN_CALLS):
    """(warm-up calls, timed calls) as kernlab's CPU timer counts them: warm-up calls filling
    warmup_ms at the call's estimate, timed calls filling rep_ms at a cycle's time (the flush
    included), at least `min_calls`, each count within [1, 10000]."""
    def fill(ms, per):
        return int(min(max(ms / per if per > 0 else 10000, 1), 10000))
    return fill(warmup_ms, estimate_ms), max(fill(rep_ms, cycle_ms), min_calls)


class CpuTimer(Timer):
    """The CPU's timing, in the form kernlab's CPU timer (src/tools/bench/harness.rs,
    `CpuTimer`) has: one call, three calls after a flush to estimate a call and a cycle,
    warm-up calls for --warmup-ms, then calls for --rep-ms, each after a flush of the cache
    (a write of 2 x cache_bytes), timed with perf_counter; the median, p20 and p80. No queued
    or settled medians: nothing is asynchronous here."""

    def setup(self):
        """The flush buffer (no Triton on the CPU)."""
        self._flush = self.torch.zeros(2 * int(self.cache_bytes), dtype=self.torch.uint8)

    def free_bytes(self):
        """Available memory, from /proc/meminfo (unbounded where it cannot be read)."""
        try:
            with open("/proc/meminfo") as f:
                for line in f:
                    if line.startswith("MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return float("inf")

    def flush(self):
        self._flush.add_(1)

    def time(self, fn):
        import gc
        import time as clock

        was = gc.isenabled()
        gc.disable()
        try:
            fn()
            est, cyc = [], []
            for _ in range(3):
                t0 = clock.perf_counter()
                self.flush()
                t1 = clock.perf_counter()
                fn()
                t2 = clock.perf_counter()
                est.append((t2 - t1) * 1e3)
                cyc.append((t2 - t0) * 1e3)
            warm, n = cpu_call_counts(self.args.warmup_ms, self.args.rep_ms,
                                      sorted(est)[1], sorted(cyc)[1])
            for _ in range(warm):
                fn()
            samples = []
            for _ in range(n):
                self.flush()
                t0 = clock.perf_counter()
                fn()
                samples.append((clock.perf_counter() - t0) * 1e3)
        finally:
            if was:
                gc.enable()
        samples.sort()
        return quantile(samples, 0.5), quantile(samples, 0.2), quantile(samples, 0.8)

    def sync(self):
        """Nothing to wait for on the CPU."""

    def check_record(self, r, fn, xs, med, p20):
        """No queued or settled medians on the CPU: nothing is asynchronous."""

    def copy_ceiling(self, nbytes):
        """dst.copy_(src) of `nbytes` (at most 8 x the flush, so a CPU run stays quick), timed
        like every variant."""
        torch = self.torch
        n = min(nbytes, 16 * int(self.cache_bytes)) // 4
        src = torch.randn(n, dtype=torch.float32)
        dst = torch.empty_like(src)
        med, p20, p80 = self.time(lambda: dst.copy_(src))
        if not torch.equal(dst, src):
            raise RuntimeError("copy_ produced a different tensor")
        return {"bytes": n * 4, "median_ms": med, "p20_ms": p20, "p80_ms": p80,
                "gbps": 2.0 * n * 4 / (med * 1e-3) / 1e9}
