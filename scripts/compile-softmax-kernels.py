"""Kernel-only times of torch.compile's softmax (the lecture's manual composition compiled, as
baselines/torch_baselines.py does), from torch.profiler (CUPTI), 20 back-to-back calls after
the compile and its autotuning; for comparison with `kernlab profile softmax` on the same
shapes. Each shape gets its own static compile (dynamic=False): with one compiled function for
all shapes, the second shape is recompiled with symbolic sizes, into a slower kernel.
(The ninth session's run had that fault: its 4096x16384 figure, 207 us, is not comparable.)
Usage: python3 scripts/compile-softmax-kernels.py 4096x8192 4096x16384"""
import os
import statistics
import sys

import torch
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines"))
from torch_baselines import manual_softmax  # noqa: E402  (the lecture's composition, one copy)


def core(x):
    return manual_softmax(torch, x)


for spec in sys.argv[1:]:
    rows, cols = (int(v) for v in spec.split("x"))
    x = torch.randn(rows, cols, device="cuda", dtype=torch.float32)
    torch._dynamo.reset()
    f = torch.compile(core, dynamic=False)
    for _ in range(5):
        f(x)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            f(x)
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(e.name, []).append(e.device_time)
    gb = 2 * rows * cols * 4 / 1e9
    for name, t in times.items():
        med = statistics.median(t)
        print(f"{spec} f32 compile kernel {name[:60]}: {len(t)} calls, median {med:.1f} us ({gb / (med * 1e-6):.0f} GB/s)")
