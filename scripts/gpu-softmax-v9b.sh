#!/usr/bin/env bash
# GPU batch (seventh session): v9's knobs (KERNLAB_V9: CTAs an SM, sleep between polls,
# stagger of the upper groups' first row) at four wide shapes, the baseline twice (first and
# last, for the noise), then auto's picks with the defaults.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
i=0
for cfg in per_sm=2 per_sm=2,poll_ns=100 per_sm=2,poll_ns=400 per_sm=2,poll_ns=1500 per_sm=2,stagger_ns=3000 per_sm=2,stagger_ns=8000 per_sm=2,poll_ns=400,stagger_ns=3000 per_sm=1,poll_ns=400 per_sm=2; do
  i=$((i+1))
  KERNLAB_V9=$cfg timeout 60 $K sweep softmax --rows 4096 --cols 262144,1048576,4194304 --max-elements 2^28 --dtype f32 --variants v9_gridsync --rep-ms 15 --warmup-ms 10 --csv "$OUT/k$i.csv" > "$OUT/k$i.log" 2>&1
  KERNLAB_V9=$cfg timeout 30 $K sweep softmax --rows 4096 --cols 2097152 --max-elements 2^28 --dtype bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 10 --csv "$OUT/kb$i.csv" > "$OUT/kb$i.log" 2>&1
  python3 - "$cfg" "$OUT/k$i.csv" "$OUT/kb$i.csv" >> "$S" <<'PY'
import csv, sys
out = []
for f in sys.argv[2:]:
    for r in csv.DictReader(open(f)):
        out.append(f'{r["dtype"]}:{r["cols"]}={float(r["gbps"]):.0f}' if r["status"] == "ok" else f'{r["cols"]}=-')
print(f"{sys.argv[1]:38s}", *out)
PY
done
el knobs
timeout 60 $K sweep softmax --rows 4096 --cols 524288,1048576,2097152,4194304 --max-elements 2^28 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 10 --csv "$OUT/auto.csv" > "$OUT/auto.log" 2>&1; echo "auto exit $?" >> "$S"
python3 - "$OUT/auto.csv" >> "$S" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["dtype"], r["cols"], r["status"], f'{float(r["gbps"] or 0):.0f}', r.get("picked", ""))
PY
el auto
cat "$S"
