#!/usr/bin/env bash
# GPU batch (thirty-second session), one call (~4 min): where kernlab's buffers come from, the
# one difference between the two processes that run 140 left open. Run 139: PyTorch's calls
# read 0.5-0.8 µs higher on its cudaMallocAsync backend than on its caching allocator, which
# gets its memory from cudaMalloc in segments of 2 MiB and up. Run 140: kernlab's buffers from
# cuMemAlloc at their own sizes (256 KiB at bf16 4096x32) moved nothing. Here
# KERNLAB_ALLOC=malloc2m (cuMemAlloc rounded up to 2 MiB) and pool2m (the pool, likewise)
# against the default pool, interleaved, both with the replay of the same launch in
# PyTorch's process as the control. Prediction: if the page size of small buffers is the
# cause, malloc2m (and perhaps pool2m) falls to the replay's settled medians (bf16 32 ~4.3,
# 128 ~4.6, 256 ~5.3, 512 ~6.5; f32 32 ~4.2, 128 ~5.15, 256 ~6.2, 512 ~7.9 µs) and the default
# stays 0.2-0.7 above; otherwise all three read alike.
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
    timeout 100 env "$@" $K bench softmax --shape 4096x32 --shape 4096x128 --shape 4096x256 --shape 4096x512 --shape 4096x1024 --dtype $DT --variants auto --torch --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n-$DT.csv" > "$OUT/$n-$DT.log" 2>&1
    echo "$n $DT exit $?" >> "$S"; grep -i "error\|fail" "$OUT/$n-$DT.log" | head -3 >> "$S"
    cmp "$OUT/$n-$DT.csv" "$n" >> "$S"
  done
  el "$n"
}
run M KERNLAB_ALLOC=malloc2m
run P X=1
run Q KERNLAB_ALLOC=pool2m
run M2 KERNLAB_ALLOC=malloc2m
run P2 X=1
cat "$S"
