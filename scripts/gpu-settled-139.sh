#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~3 min): the same kernel reads 0.1-0.7 µs slower in
# kernlab's harness than in its replay in PyTorch's process, both settled (run 137); neither the
# flush's form nor the stream moved it (run 138). Left: where the buffers live. kernlab's come
# from the stream-ordered pool (cuMemAllocAsync), PyTorch's from its caching allocator (cudaMalloc
# segments). A: as run 137 (bf16 and f32, 4096 x 32..512). B: the same with PyTorch on the
# cudaMallocAsync backend (its buffers from the same kind of pool as kernlab's). C: both sides
# unrotated (one buffer each, reused call after call).
# Prediction: if the pool is the cause, B's replay rises to kernlab's settled times; if the
# rotation's copies are (pages missing from the TLB after the flush), C closes the gap.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
cmp() { python3 - "$1" "$2" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok" and r.get("settled_ms"):
        t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"].replace("torch_", "")[:8]] = float(r["settled_ms"]) * 1e3
print(sys.argv[2], *[f"{d}:{c} " + "/".join(f"{v}={t[(d,c)][v]:.2f}" for v in ("auto", "kernlab_", "native", "compile") if v in t[(d,c)]) for d, c in sorted(t)])
PY
}
run() { local n=$1 rot=$2; shift 2
  for DT in bf16 f32; do
    timeout 100 env "$@" $K bench softmax --shape 4096x32 --shape 4096x128 --shape 4096x256 --shape 4096x512 --dtype $DT --variants auto --torch --rotate $rot --rep-ms 20 --seed 1 --csv "$OUT/$n-$DT.csv" > "$OUT/$n-$DT.log" 2>&1
    cmp "$OUT/$n-$DT.csv" "$n" >> "$S"
  done
  el "$n"
}
run A auto X=1
run B auto PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
run C 1 X=1
run A2 auto X=1
cat "$S"
