#!/usr/bin/env bash
# GPU batch (tenth session): v9 with 2, 3 or 4 CTAs an SM (KERNLAB_V9=per_sm=N: 512, 320 or
# 256 threads, each part ~64 KB in registers + shared memory at 2, less at 3 and 4), ping-pong
# by G (default) and forced off at 4. Odd shapes validated first (bench checks before timing),
# then interleaved twice at f32/bf16 524288, 1 Mi, 2 Mi, 4 Mi.
# (Ran on a build whose KERNLAB_V9 took per_sm up to 4; three and four CTAs an SM were slower
# and that build was not kept, so per_sm is 1 or 2 again: docs/perf-notes.md, tenth session.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for n in 3 4; do
  env KERNLAB_V9=per_sm=$n timeout 60 $K bench softmax --shape 12x1600003 --shape 3x1048577 --shape 61x4194304 --shape 200x131072 --dtype f32,bf16 --variants v9_gridsync --rep-ms 2 --warmup-ms 1 --csv "$OUT/odd$n.csv" > "$OUT/odd$n.log" 2>&1
  echo "per_sm=$n odd shapes: $(python3 -c "import csv; print(*[r['rows']+'x'+r['cols']+':'+r['dtype']+'='+r['status'][:20] for r in csv.DictReader(open('$OUT/odd$n.csv'))])")" >> "$S"
done
for rep in 1 2; do
  for cfg in per_sm=2 per_sm=3 per_sm=4 per_sm=4,pp=0; do
    env KERNLAB_V9=$cfg timeout 90 $K sweep softmax --rows 4096 --cols 524288..4194304:x2 --max-elements 2^28 --dtype f32,bf16 --variants v9_gridsync --rep-ms 15 --warmup-ms 5 --csv "$OUT/$cfg.csv" > "$OUT/$cfg-$rep.log" 2>&1
    echo "v9 $cfg: $(tab "$OUT/$cfg.csv")" >> "$S"
  done
  el "rep $rep"
done
el done
cat "$S"
