"""kernlab's v3 softmax kernel (f32, K = 4) timed by triton.testing.do_bench, the harness the
PyTorch columns use, beside torch.compile and torch.softmax in the same process: separates a
kernel's speed from the harness's. The kernel's PTX is a file made on the build machine
(`cargo run --release --example dump_ptx -- softmax.cu sm_90a softmax_v3_block_regs_vec_k4_f32
--module`, the entry cut out), loaded with the driver API through ctypes and launched on
torch's current stream with v3's launch shape (one CTA a row; 512 threads at 8192 columns,
1024 at 16384). Every output is checked against torch.softmax in float64 first.
Usage: python3 scripts/do-bench-v3.py PTX"""
import ctypes
import os
import sys

import torch
import triton.testing as tt
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines"))
from torch_baselines import manual_softmax  # noqa: E402  (the lecture's composition, one copy)

NAME = b"softmax_v3_block_regs_vec_k4_f32"
cuda = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what} failed: CUresult {r}")


def core(x):
    return manual_softmax(torch, x)


torch.zeros(1, device="cuda")  # the primary context, current on this thread
ptx = open(sys.argv[1], "rb").read() + b"\0"
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
check(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
check(cuda.cuModuleGetFunction(ctypes.byref(fn), mod, NAME), "cuModuleGetFunction")

for rows, cols in [(4096, 8192), (4096, 16384)]:
    threads = cols // 4 // 4
    x = torch.randn(rows, cols, device="cuda")
    y = torch.full_like(x, float("nan"))
    args = [ctypes.c_uint64(x.data_ptr()), ctypes.c_uint64(y.data_ptr()), ctypes.c_int32(rows),
            ctypes.c_int32(cols), ctypes.c_int64(cols), ctypes.c_int64(cols), ctypes.c_int32(0)]
    params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])

    def v3():
        s = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        check(cuda.cuLaunchKernel(fn, rows, 1, 1, threads, 1, 1, 0, s, params, None), "cuLaunchKernel")

    torch._dynamo.reset()
    comp = torch.compile(core, dynamic=False)
    ref = torch.softmax(x.double(), -1)
    for name, f in [("v3 (ctypes)", v3), ("compile", lambda: comp(x)), ("native", lambda: torch.softmax(x, -1))]:
        out = f()
        torch.cuda.synchronize()
        out = y if out is None else out
        err = ((out.double() - ref).abs().max() / ref.abs().max()).item()
        ok = err < 1e-5 and not torch.isnan(out).any().item()
        gbs = []
        for _ in range(3):
            ms = tt.do_bench(f, warmup=25, rep=100, return_mode="median")
            gbs.append(2 * rows * cols * 4 / (ms * 1e-3) / 1e9)
        print(f"{rows}x{cols} f32 {name}: {'ok' if ok else 'FAILED'} (rel err {err:.1e}), do_bench median GB/s "
              + " / ".join(f"{g:.0f}" for g in gbs))
