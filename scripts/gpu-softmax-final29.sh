#!/usr/bin/env bash
# GPU batch (ninth session), on the committed build with v9's ping-pong form on from 16 CTAs a
# row: (1) the softmax tests; (2) v9's shared-memory preference with ping-pong (smem_kb 0 =
# all, 48, default 64) at 1/2/4 Mi; (3) the wide sweep with the PyTorch columns, for
# docs/softmax.md.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
gpu_tests 150 softmax
el tests
for kb in 0 48; do
  env KERNLAB_V9=smem_kb=$kb timeout 80 $K sweep softmax --rows 4096 --cols 1048576,2097152,4194304 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/kb$kb.csv" > "$OUT/kb$kb.log" 2>&1
  echo "v9 smem_kb=$kb: $(tab "$OUT/kb$kb.csv")" >> "$S"
done
el smem
timeout 240 $K sweep softmax --rows 4096 --cols 262144..4194304:x2,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v8_onchip,v9_gridsync,auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-v9pp-wide.svg" --csv "$OUT/softmax-sweep-v9pp-wide.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/softmax-sweep-v9pp-wide.csv" >> "$S" <<'PY'
import csv, sys
t, pick = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], int(r["cols"]), int(r["rows"]))
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
    if r["variant"] == "auto": pick[k] = r.get("picked", "")
vs = ["auto", "v8_onchip", "v9_gridsync", "torch_native", "torch_compile"]
print("dtype cols rows", *[v[:6] for v in vs], "pick")
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs], pick.get(k, ""))
PY
cat "$S"
