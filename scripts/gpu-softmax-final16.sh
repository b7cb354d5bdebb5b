#!/usr/bin/env bash
# GPU batch (sixth session, last): the full width sweep 32…4 Mi with the PyTorch columns on
# the final v8 (merged (max, sum) reduction) and the heuristic that picks it, for
# docs/softmax.md (every test passed on this binary just before: gpu-softmax-check15.sh).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 420 $K sweep softmax --rows 4096 --cols 32..4194304:x2,33,255,1000,4097,16385,65537,1048577 --max-elements 2^28 --dtype f32,bf16 --variants v2_warp_row,v3_block_regs,v6_split,v8_onchip,auto --torch --rep-ms 30 --plot "$OUT/softmax-sweep-v8-final.svg" --csv "$OUT/softmax-sweep-v8-final.csv" > "$OUT/sweep.log" 2>&1; echo "sweep exit $?" >> "$S"
el sweep
python3 - "$OUT/softmax-sweep-v8-final.csv" >> "$S" <<'PY'
import csv, sys
t, note = {}, {}
for r in csv.DictReader(open(sys.argv[1])):
    if r["status"] == "ok":
        t.setdefault((r["dtype"], int(r["cols"])), {})[r["variant"]] = float(r["gbps"])
        if r["variant"] == "auto": note[(r["dtype"], int(r["cols"]))] = r["note"][:22]
vs = ["auto", "v3_block_regs", "v6_split", "v8_onchip", "torch_native", "torch_compile"]
print("dtype cols", *[v[:6] for v in vs], "pick")
for k in sorted(t):
    print(*k, *[f"{t[k].get(v, 0):.0f}" for v in vs], note.get(k, ""))
PY
cat "$S"
