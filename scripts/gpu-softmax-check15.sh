#!/usr/bin/env bash
# GPU batch (sixth session): every test with KERNLAB_REQUIRE_GPU=1 on the v8 build with its
# merged (max, sum) reduction restored, then v3/v6/v8/auto at four widths to confirm the
# restored form's speed (v8b's numbers) before the final sweep.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 330 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -16 >> "$S"
el tests
timeout 120 $K sweep softmax --rows 4096 --cols 4097,32768,65536,131072 --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v6_split,v8_onchip,auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/q.csv" > "$OUT/q.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/q.csv" >> "$S" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
vs = ["v3_block_regs", "v6_split", "v8_onchip", "auto"]
print("dtype cols", *[v[:6] for v in vs])
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
cat "$S"
