#!/usr/bin/env bash
# GPU batch (thirtieth session), one call (~2 min): run 139 put the gap on the allocator (PyTorch
# on cudaMallocAsync read 0.4-0.8 µs slower for every call, kernlab's unchanged). Here kernlab's
# buffers come from cuMemAlloc instead of the stream-ordered pool (KERNLAB_ALLOC=malloc, an
# experiment: a branch in CudaDevice::alloc_bytes for this one run, removed after it moved
# nothing; docs/perf-notes.md). Prediction: `auto`'s settled medians fall to its replay's (bf16 32 ~4.3, 128 ~4.6,
# 256 ~5.3, 512 ~6.5; f32 32 ~4.2, 128 ~5.15, 256 ~6.2, 512 ~7.9 µs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
cmp() { python3 - "$1" "$2" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok" and r.get("settled_ms"):
        t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"].replace("torch_", "")[:8]] = f'{float(r["median_ms"])*1e3:.2f}/{float(r["settled_ms"]) * 1e3:.2f}'
    elif r["status"] != "ok": print("not ok:", r["variant"], r["cols"], r["status"], r["note"][:200])
print(sys.argv[2], *[f"{d}:{c} " + " ".join(f"{v}={t[(d,c)][v]}" for v in ("auto", "kernlab_", "native", "compile") if v in t[(d,c)]) for d, c in sorted(t)])
PY
}
run() { local n=$1; shift
  for DT in bf16 f32; do
    timeout 100 env "$@" $K bench softmax --shape 4096x32 --shape 4096x128 --shape 4096x256 --shape 4096x512 --shape 8192x4096 --dtype $DT --variants auto --torch --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n-$DT.csv" > "$OUT/$n-$DT.log" 2>&1
    echo "$n $DT exit $?" >> "$S"; grep -i "error\|fail" "$OUT/$n-$DT.log" | head -3 >> "$S"
    cmp "$OUT/$n-$DT.csv" "$n" >> "$S"
  done
  el "$n"
}
run M KERNLAB_ALLOC=malloc
run P X=1
run M2 KERNLAB_ALLOC=malloc
cat "$S"
