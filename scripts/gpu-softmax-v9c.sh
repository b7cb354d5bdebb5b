#!/usr/bin/env bash
# GPU batch (seventh session, last): every test with KERNLAB_REQUIRE_GPU=1 on the final v9
# (knobs removed, two CTAs an SM) and the heuristic that picks it, then the wide widths with
# the PyTorch columns for docs/softmax.md.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 330 .gpu/run-tests > "$OUT/tests.log" 2>&1; echo "run-tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -16 >> "$S"
el tests
timeout 200 $K sweep softmax --rows 4096 --cols 262144..4194304:x2,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v6_split,v8_onchip,v9_gridsync,auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-v9-wide.svg" --csv "$OUT/softmax-sweep-v9-wide.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/softmax-sweep-v9-wide.csv" >> "$S" <<'PY'
import csv, sys
t, pick = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    k = (r["dtype"], int(r["cols"]), int(r["rows"]))
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else "-"
    if r["variant"] == "auto": pick[k] = r.get("picked", "")
vs = ["auto", "v6_split", "v8_onchip", "v9_gridsync", "torch_native", "torch_compile"]
print("dtype cols rows", *[v[:6] for v in vs], "pick")
for k in sorted(t): print(*k, *[t[k].get(v, "-") for v in vs], pick.get(k, ""))
PY
cat "$S"
