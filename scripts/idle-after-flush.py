"""Does a GPU idle gap between do_bench's L2 flush and the timed call make the call faster?
(twenty-eighth session). torch.compile's softmax at f32 4096x256/512 had do_bench medians
0.2-0.9 us below its own median with every launch queued ahead (run 128b), native's and
kernlab's replay did not. Hypothesis: compile's slow Python side leaves the GPU idle after the
flush, and in that gap the L2 writes back the flush's dirty lines, which a call queued right
behind the flush must evict itself. Here every launch is queued (the GPU held by a sleep
kernel first); each iteration is: flush (256 MiB zero_, as do_bench), a sleep kernel of G us
(none for '-'), the start event, the call, the end event. Prints the median us between the
events for each call, shape and G, interleaved over three rounds."""
import statistics, sys, torch
from triton.testing import do_bench
dev = torch.device("cuda")
khz = getattr(torch.cuda.get_device_properties(dev), "clock_rate", 0) or 1_980_000
cache = torch.empty((256 << 20) // 4, dtype=torch.int, device=dev)
fns = {"native": lambda x: torch.softmax(x, -1),
       "compile": torch.compile(lambda x: torch.softmax(x, -1), dynamic=False)}
gaps = [None, 0, 2, 5, 10, 20]
shapes = [(4096, 256), (4096, 512), (4096, 1024)]
xs = {s: torch.randn(*s, device=dev) for s in shapes}
for s in shapes:
    for f in fns.values():
        f(xs[s])
torch.cuda.synchronize()
res = {}
for rnd in range(3):
    for s in shapes:
        x = xs[s]
        for name, f in fns.items():
            res.setdefault((name, s, "do_bench"), []).append(do_bench(lambda: f(x), rep=30) * 1e3)
            for g in gaps:
                n = 50
                pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
                torch.cuda.synchronize()
                torch.cuda._sleep(int(3000 * khz / 1000))  # hold the GPU 3 ms while the loop queues
                for a, b in pairs:
                    cache.zero_()
                    if g is not None:
                        torch.cuda._sleep(int(g * khz / 1000))
                    a.record(); f(x); b.record()
                torch.cuda.synchronize()
                res.setdefault((name, s, g), []).append(statistics.median(a.elapsed_time(b) for a, b in pairs) * 1e3)
print("call shape", "do_bench", *[f"gap{g}" if g is not None else "queued" for g in gaps])
for s in shapes:
    for name in fns:
        row = [res[(name, s, "do_bench")]] + [res[(name, s, g)] for g in gaps]
        print(name, f"{s[0]}x{s[1]}", *["/".join(f"{v:.2f}" for v in r) for r in row])
