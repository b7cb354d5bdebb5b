#!/usr/bin/env bash
# GPU batch (twenty-seventh session, at the commit "baselines: kernlab_do_bench's launch built
# once"): run 126 (gpu-done-120.sh bf16) gave kernlab_do_bench 28-69 GB/s at 32-128 columns
# (Python-bound calls, in a process where compile's and manual's were Python-bound too); its
# launch is now one ctypes call. The µs-sized widths with --torch under three settings of v2,
# one process each, µs a call (the device budget left no room for the bf16 sweep again).
# Prediction: kernlab_do_bench within ~0.5 µs of auto at every point, never tens of µs.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
us() { python3 - "$1" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], r["shape"])
    t.setdefault(k, {})[r["variant"]] = (f"{float(r['median_ms'])*1000:.2f}" if r["status"] == "ok" else r["status"][:8])
vs = ["auto", "kernlab_do_bench", "torch_native", "torch_compile", "triton"]
print("dtype shape", *vs)
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
}
# (2) compile led kernlab_do_bench in one process at f32 256 and 512 (runs 124 r2 and 125)
# while ncu (caches invalidated, not dirtied) had our kernel faster: is it v2's evict_last row
# loads (their lines outlive do_bench's flush) or its 128-thread CTAs (Inductor's are one warp)?
# One process a setting, µs a call.
for cfg in "1 128" "0 128" "1 32"; do
  set -- $cfg
  KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=$1 KERNLAB_V2=threads=$2 timeout 90 $K bench softmax --shape 4096x32 --shape 4096x64 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype f32,bf16 --variants auto --torch --rotate auto --rep-ms 30 --csv "$OUT/hint$1-t$2.csv" > "$OUT/hint$1-t$2.log" 2>&1
  echo "hint $1 threads $2 exit $?" >> "$S"; us "$OUT/hint$1-t$2.csv" >> "$S"; el "hint $1 threads $2"
done
cat "$S"
