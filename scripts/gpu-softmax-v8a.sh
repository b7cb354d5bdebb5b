#!/usr/bin/env bash
# GPU batch (sixth session): the softmax tests with KERNLAB_REQUIRE_GPU=1 (the fifth session's
# |max| ≤ 1024 fold guard and large-logit test, the peelable refactor, and the new v8_onchip:
# rows in registers + shared memory, clusters past one CTA), then v8 against v3/v5/v6/auto
# over the medium and wide widths.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_REQUIRE_GPU=1 KERNLAB_REQUIRE_NVRTC=1 timeout 200 .gpu/run-tests softmax > "$OUT/tests.log" 2>&1; echo "softmax tests exit $?" >> "$S"
grep -E "^test .*FAILED|panicked|^test result" "$OUT/tests.log" | grep -v " 0 passed" | head -12 >> "$S"
el tests
timeout 240 $K sweep softmax --rows 4096 --cols 32768,65536,65537,98304,131072,262144,1048576 --max-elements 2^28 --dtype f32,bf16 --variants v3_block_regs,v5_cluster,v6_split,v8_onchip,auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/v8.csv" > "$OUT/v8.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT" >> "$S" <<'PY'
import csv, sys, os
p = os.path.join(sys.argv[1], "v8.csv")
t, notes = {}, {}
for r in csv.DictReader(open(p)) if os.path.exists(p) else []:
    k = (r["dtype"], r["shape"])
    t.setdefault(k, {})[r["variant"]] = f'{float(r["gbps"]):.0f}' if r["status"] == "ok" else r["status"][:5]
    if r["variant"] == "auto": notes[k] = r["note"][:30]
vs = ["v3_block_regs", "v5_cluster", "v6_split", "v8_onchip", "auto"]
print("dtype shape", *[v[:6] for v in vs])
for k in sorted(t, key=lambda k: (k[0], int(k[1].split("x")[1]))):
    print(*k, *[t[k].get(v, "-") for v in vs], notes.get(k, ""))
PY
cat "$S"
