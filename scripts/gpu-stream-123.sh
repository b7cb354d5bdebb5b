#!/usr/bin/env bash
# GPU batch (twenty-sixth session; the commit that adds KERNLAB_STREAM): run 122 had kernlab's
# µs-sized calls 0.5–1 µs longer than PyTorch's for the same work (GeLU bf16 1×64: 4.77 against
# native's 4.26 and Triton's 3.81 µs; 4096×64: 5.47 / 4.74 / 4.58), with kernels that ncu times
# level or faster. Two legs. (1) kernlab's own harness on its created stream against the legacy
# NULL stream PyTorch uses (KERNLAB_STREAM=legacy), unrotated, twice each, interleaved. (2) Our
# GeLU kernel's PTX (kernlab inspect --out) launched from Python by ctypes on PyTorch's stream and
# timed by do_bench beside torch's gelu, on the legacy stream and on a created one: if ours is
# then as fast as torch's, the difference is kernlab's harness or launch path, not the kernel.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
us() { python3 - "$1" "$2" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    ok = r["status"] == "ok"
    f = lambda k: f"{float(r[k])*1000:.2f}" if ok and r[k] else "-"
    print(f"{sys.argv[2]} {r['op']} {r['dtype']} {r['shape']} {r['variant']}: median {f('median_ms')} p20 {f('p20_ms')} p80 {f('p80_ms')}" + ("" if ok else " " + r["status"][:20]))
PY
}
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
[ "${1:-}" = probe ] || for i in 1 2; do
  for st in created legacy; do
    for ov in gelu:v2_vec16 softmax:auto; do
      KERNLAB_STREAM=$st timeout 60 $K bench ${ov%%:*} --shape 1x64 --shape 4096x64 --dtype bf16 --variants ${ov##*:} --rep-ms 30 --csv "$OUT/k-$st-$i-${ov%%:*}.csv" > "$OUT/k-$st-$i-${ov%%:*}.log" 2>&1
      echo "kernlab $st round $i ${ov%%:*} exit $?" >> "$S"; us "$OUT/k-$st-$i-${ov%%:*}.csv" "$st" >> "$S"
    done
  done
done
el kernlab
timeout 60 .gpu/bin/dump_ptx gelu.cu sm_90a gelu_v2_vec16_tanh_bf16 --module > "$OUT/g.ptx" 2> "$OUT/dump.log"; echo "dump_ptx exit $?" >> "$S"
cat > "$OUT/probe.py" <<'PY'
import ctypes, sys, torch
from triton.testing import do_bench
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0: raise SystemExit(f"{what}: CUresult {r}")
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(open(sys.argv[1], "rb").read() + b"\0")), "cuModuleLoadData")
ck(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gelu_v2_vec16_tanh_bf16"), "cuModuleGetFunction")
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
def ours(x, y):
    n = x.numel()
    blocks = (max(n // 8, 8) + 255) // 256
    px, py, pn = ctypes.c_void_p(x.data_ptr()), ctypes.c_void_p(y.data_ptr()), ctypes.c_int64(n)
    args = (ctypes.c_void_p * 3)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in (px, py, pn)])
    ck(cu.cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, torch.cuda.current_stream().cuda_stream, args, None), "cuLaunchKernel")
for shape in [(1, 64), (4096, 64)]:
    x = torch.randn(*shape, device="cuda", dtype=torch.bfloat16); y = torch.full_like(x, float("nan"))
    ours(x, y); torch.cuda.synchronize()
    err = (y.float() - torch.nn.functional.gelu(x.float(), approximate="tanh")).abs().max().item()
    for name, s in [("legacy", None), ("created", torch.cuda.Stream())]:
        for rnd in (1, 2):
            with torch.cuda.stream(s) if s is not None else torch.cuda.stream(torch.cuda.default_stream()):
                t_ours = do_bench(lambda: ours(x, y), warmup=25, rep=100, return_mode="median")
                t_torch = do_bench(lambda: torch.nn.functional.gelu(x, approximate="tanh"), warmup=25, rep=100, return_mode="median")
            print(f"probe {shape[0]}x{shape[1]} {name} r{rnd}: ours {t_ours*1000:.2f} us, torch gelu {t_torch*1000:.2f} us (ours' max abs err {err:.2e})")
    # do_bench's loop by hand, with each flush form: torch's zero_ of 256 MB, or the driver's
    # memset (cuMemsetD8Async) of 256 MiB as kernlab's harness; median of 400 calls each.
    buf = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    cu.cuMemsetD8Async.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t, ctypes.c_void_p]
    def memset(): ck(cu.cuMemsetD8Async(buf.data_ptr(), 1, buf.numel(), torch.cuda.current_stream().cuda_stream), "cuMemsetD8Async")
    flushes = {"zero_": lambda: buf.zero_(), "memset": memset}
    calls = {"ours": lambda: ours(x, y), "torch": lambda: torch.nn.functional.gelu(x, approximate="tanh")}
    for rnd in (1, 2):
        res = []
        for fname, fl in flushes.items():
            for cname, c in calls.items():
                for _ in range(20): fl(); c()
                ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(400)]
                for a, b in ev: fl(); a.record(); c(); b.record()
                torch.cuda.synchronize()
                ts = sorted(a.elapsed_time(b) * 1000 for a, b in ev)
                res.append(f"{cname}/{fname} {ts[len(ts)//2]:.2f}")
        print(f"loop {shape[0]}x{shape[1]} r{rnd}: " + ", ".join(res) + " us")
PY
timeout 200 python3 "$OUT/probe.py" "$OUT/g.ptx" > "$OUT/probe.log" 2>&1; echo "probe exit $?" >> "$S"
tail -16 "$OUT/probe.log" >> "$S"; el probe
cat "$S"
