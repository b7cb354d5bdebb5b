#!/usr/bin/env bash
# GPU batch (ninth session): (1) the whole GPU suite on this build (v9's ping-pong form on by
# default from 16 CTAs a row; new split-row shapes); (2) the ping-pong threshold: forced off/on
# at f32 524288 (G = 16), bf16 1 Mi (G = 16), f32 2 Mi, bf16 2 Mi; (3) the early turn
# (KERNLAB_V9=early=1: the partner may start once a CTA's shared-memory packs have landed)
# against the ping-pong form, interleaved twice, f32/bf16 1 Mi and 4 Mi.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for rep in 1 2; do
  for e in 0 1; do
    env KERNLAB_V9=early=$e timeout 80 $K sweep softmax --rows 4096 --cols 1048576,4194304 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/early$e.csv" > "$OUT/early$e-$rep.log" 2>&1
    echo "v9 pp early=$e: $(tab "$OUT/early$e.csv")" >> "$S"
  done
done
el early
for pp in 0 1; do
  env KERNLAB_V9=pp=$pp timeout 80 $K sweep softmax --rows 4096 --cols 524288,2097152 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/th$pp.csv" > "$OUT/th$pp.log" 2>&1
  echo "v9 pp=$pp: $(tab "$OUT/th$pp.csv")" >> "$S"
done
el threshold
env KERNLAB_V9=early=1 timeout 90 $K bench softmax --shape 12x1600003 --shape 3x1048577 --shape 61x4194304 --dtype f32,bf16 --variants v9_gridsync --rep-ms 2 --warmup-ms 1 --csv "$OUT/early-odd.csv" > "$OUT/early-odd.log" 2>&1
echo "early=1 odd shapes exit $?: $(python3 -c "import csv; print(*[r['rows']+'x'+r['cols']+':'+r['dtype']+'='+r['status'][:20] for r in csv.DictReader(open('$OUT/early-odd.csv'))])")" >> "$S"
el early-odd
gpu_tests 330
el tests
cat "$S"
