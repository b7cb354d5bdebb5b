#!/usr/bin/env bash
# GPU batch (seventh session): v9_gridsync (v8's on-chip parts across co-resident CTAs,
# exchanging (max, sum) as v6) — the softmax tests with one CTA an SM (the default) and the
# split-row tests with two (KERNLAB_V9=per_sm=2), then v6/v8/v9 on wide rows both ways.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "run-tests softmax exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -12 >> "$S"
el tests
KERNLAB_V9=per_sm=2 KERNLAB_REQUIRE_GPU=1 timeout 120 .gpu/run-tests softmax_split_rows > "$OUT/tests2.log" 2>&1; echo "run-tests split per_sm=2 exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests2.log" | grep -v " 0 passed" | head -8 >> "$S"
el tests2
for ps in 1 2; do
  KERNLAB_V9=per_sm=$ps timeout 100 $K sweep softmax --rows 4096 --cols 262144,524288,1048576,2097152,4194304,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v6_split,v8_onchip,v9_gridsync --rep-ms 15 --warmup-ms 10 --csv "$OUT/w$ps.csv" > "$OUT/w$ps.log" 2>&1; echo "sweep per_sm=$ps exit $?" >> "$S"
  el "sweep $ps"
done
python3 - "$OUT/w1.csv" "$OUT/w2.csv" >> "$S" <<'PY'
import csv, sys
t = {}
for i, f in enumerate(sys.argv[1:]):
    for r in csv.DictReader(open(f)):
        v = r["variant"] + ("" if i == 0 else "@2")
        t.setdefault((r["dtype"], int(r["cols"]), int(r["rows"])), {})[v] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
vs = ["v6_split", "v8_onchip", "v9_gridsync", "v6_split@2", "v9_gridsync@2"]
print("dtype cols rows", *[v[:5] + v[-2:] for v in vs])
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
cat "$S"
