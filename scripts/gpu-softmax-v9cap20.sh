#!/usr/bin/env bash
# GPU batch (seventh session, experiment): ncu showed v9 stalled more than v8 on shared memory
# (MIO throttle, short scoreboard) where its parts hold 62% of their packs there (v8: 50%).
# Cap v9's shared memory a CTA (more CTAs a row) and compare. (Run with a build that read the
# cap from KERNLAB_V9_SMEM_KB; it is now KERNLAB_V9=smem_kb=N, 0 for no cap, as below.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
for cfg in "per_sm=1 0" "per_sm=1 128" "per_sm=2 0" "per_sm=2 64" "per_sm=2 32"; do
  set -- $cfg
  env KERNLAB_V9=$1,smem_kb=$2 timeout 45 $K sweep softmax --rows 4096 --cols 262144,1048576,4194304 --max-elements 2^28 --dtype f32 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/c.csv" > "$OUT/c.log" 2>&1
  echo "$1 smem_kb=$2 $(python3 -c "
import csv
print(*[r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else '-') for r in csv.DictReader(open('$OUT/c.csv'))])")" >> "$S"
done
el cap
cat "$S"
