#!/usr/bin/env bash
# GPU batch (eighth session, first): every test with KERNLAB_REQUIRE_GPU=1 on the build with v8/v9's
# shared OnchipPart (2721564), the shared launcher helpers (de3233e) and v9's half-part default
# (b1b5363), none of which had run the full suite on the GPU; then v6/v8/v9/auto re-timed on
# the wide rows, f32 and bf16.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 330 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -16 >> "$S"
el tests
timeout 200 $K sweep softmax --rows 4096 --cols 262144..4194304:x2 --max-elements 2^28 --dtype f32,bf16 --variants v6_split,v8_onchip,v9_gridsync,auto --rep-ms 15 --warmup-ms 5 --csv "$OUT/w.csv" > "$OUT/w.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/w.csv" >> "$S" <<'PY'
import csv, sys
t = {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], int(r["cols"]))
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
    if r["variant"] == "auto": t[k]["pick"] = r.get("picked", "")
vs = ["v6_split", "v8_onchip", "v9_gridsync", "auto", "pick"]
print("dtype cols", *[v[:6] for v in vs])
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs])
PY
cat "$S"
