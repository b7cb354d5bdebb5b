"""Does the host's pace move a µs-sized call's time between its events? (written in the
twenty-ninth session, run as run 136 in the thirtieth: every call read 0.5-1.2 µs less in every
idle form and in the sync form than queued, idle 0 as idle 100, and its medians in idle 0 moved
by 0.07 µs at most between rounds; docs/perf-notes.md). At bf16 4096x64 torch.compile's softmax had do_bench medians of 4.42-4.51 µs
where the same loop with every launch queued ahead of the GPU gave 5.12-5.38 (runs 134, 132),
and the SM clock held its maximum through both loops (run 135). Run 129 put a sleep kernel of
0-20 µs between the flush and the start event and moved nothing, but a sleep kernel keeps the
GPU busy. Here the GPU is left truly idle, by the host. Each call (native, compile, and a plain
Triton kernel of the same softmax, to tell a launcher from a kernel) is timed, interleaved over
three rounds, in these forms of do_bench's iteration (a 256 MiB zero_, the start event, the
call, the end event), 200 iterations each, median µs between the events:
  do_bench   triton.testing.do_bench itself (rep 30 ms)
  queued     every launch queued first (the GPU held by a sleep kernel), as the host check
  idle-N     the start event, the call and the end event are queued behind a stream wait
             (cuStreamWaitValue32 on a word of pinned host memory) placed after the flush; the
             host polls an event until the flush has finished, spins N µs, then writes the
             word: the GPU idle (no kernel running, the front end parked on the wait) for N+ µs
             after the flush, and no host time between the events
  sync       a full synchronize before each iteration (the GPU idle before the flush)
Prediction if the idle GPU is the cause: idle-N and sync below queued for every call, by the
0.3-0.9 µs seen; if none moves, the do_bench medians come from something else (the number of
calls, the rotation, the process)."""
import ctypes, itertools, statistics, time, torch, triton, triton.language as tl
from triton.testing import do_bench

dev = torch.device("cuda")
khz = getattr(torch.cuda.get_device_properties(dev), "clock_rate", 0) or 1_980_000
cache = torch.empty((256 << 20) // 4, dtype=torch.int, device=dev)


@triton.jit
def softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x_ptr + row * cols + offs, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(v - tl.max(v, 0))
    tl.store(y_ptr + row * cols + offs, (e / tl.sum(e, 0)).to(y_ptr.dtype.element_ty), mask=mask)


def plain_triton(x, y):
    softmax_rows[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))


N = 200
shapes = [((4096, 64), torch.bfloat16), ((4096, 512), torch.float32)]
compiled = torch.compile(lambda x: torch.softmax(x, -1), dynamic=False)


def calls(x, y):
    return {"native": lambda: torch.softmax(x, -1), "compile": lambda: compiled(x),
            "triton": lambda: plain_triton(x, y)}


_cu = ctypes.CDLL("libcuda.so.1")


def _driver(name, *argtypes):
    for n in (name + "_v2", name):
        f = getattr(_cu, n, None)
        if f is not None:
            f.argtypes, f.restype = list(argtypes), ctypes.c_int
            return f
    raise RuntimeError(f"libcuda has no {name}")


_wait32 = _driver("cuStreamWaitValue32", ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint)
_host_dptr = _driver("cuMemHostGetDevicePointer", ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint)
gate = torch.zeros(1, dtype=torch.int32, pin_memory=True)  # the word the stream waits on
_gate_dptr = ctypes.c_uint64()
_rc = _host_dptr(ctypes.byref(_gate_dptr), ctypes.c_void_p(gate.data_ptr()), 0)
if _rc != 0:
    raise RuntimeError(f"cuMemHostGetDevicePointer failed: CUresult {_rc}")
tickets = itertools.count(1)


def wait_for_gate(value):
    # CU_STREAM_WAIT_VALUE_GEQ (0): the stream goes on once the word is >= value.
    rc = _wait32(ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), _gate_dptr.value, value, 0)
    if rc != 0:
        raise RuntimeError(f"cuStreamWaitValue32 failed: CUresult {rc}")


def check_gate():
    # The wait must hold the stream until the word is written, or idle-N measures nothing new.
    t, held = next(tickets), torch.cuda.Event()
    torch.cuda.synchronize()
    wait_for_gate(t)
    held.record()
    time.sleep(0.002)
    if held.query():
        raise RuntimeError("the stream did not wait on the gate word")
    gate[0] = t
    torch.cuda.synchronize()
    if not held.query():
        raise RuntimeError("the stream stayed held after the gate word was written")


def spin(us):
    t = time.perf_counter() + us * 1e-6
    while time.perf_counter() < t:
        pass


def loop(f, form, idle_us=0):
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(N)]
    done = torch.cuda.Event()
    torch.cuda.synchronize()
    if form == "queued":
        torch.cuda._sleep(int(4 * N * 100 * khz / 1000))  # hold the GPU while the loop queues
    for a, b in pairs:
        if form == "sync":
            torch.cuda.synchronize()
        cache.zero_()
        if form == "idle":
            t = next(tickets)
            done.record()
            wait_for_gate(t)
            a.record(); f(); b.record()
            while not done.query():  # the flush finished: the GPU is parked on the wait
                pass
            spin(idle_us)
            gate[0] = t
        else:
            a.record(); f(); b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in pairs) * 1e3


check_gate()
forms = [("do_bench", 0), ("queued", 0), ("idle", 0), ("idle", 20), ("idle", 100), ("sync", 0)]
data = {s: (torch.randn(*s[0], device=dev).to(s[1]), torch.empty(*s[0], device=dev, dtype=s[1])) for s in shapes}
for s in shapes:
    for f in calls(*data[s]).values():
        f()
torch.cuda.synchronize()
res = {}
for rnd in range(3):
    for s in shapes:
        for name, f in calls(*data[s]).items():
            for form, us in forms:
                v = do_bench(f, rep=30) * 1e3 if form == "do_bench" else loop(f, form, us)
                res.setdefault((s, name, form, us), []).append(v)
print("call shape dtype", *[f + (str(u) if f == "idle" else "") for f, u in forms], "(µs, three rounds)")
for s in shapes:
    for name in ("native", "compile", "triton"):
        print(name, f"{s[0][0]}x{s[0][1]}", str(s[1]).split(".")[-1],
              *["/".join(f"{v:.2f}" for v in res[(s, name, f, u)]) for f, u in forms])
