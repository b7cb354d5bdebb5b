#!/usr/bin/env bash
# GPU batch (written in the twenty-second session; not yet run): after scripts/gpu-smpair-100.sh,
# if the smpair form won its A/B, the done-means sweep's v9 widths (1 Mi, 2 Mi and 4 Mi
# columns at 2048, 1024 and 512 rows; 1048577 stays on ping-pong: odd widths peel) with
# `auto` taking smpair (KERNLAB_V9=smpair=1) against PyTorch, both sides rotated as in
# scripts/gpu-done-97.sh, one dtype a process; then the same without it, for the A/B under the
# sweep's own settings. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for dt in f32 bf16; do
  KERNLAB_V9=smpair=1 timeout 200 $K sweep softmax --rows 4096 --cols 1048576,1048577,2097152,4194304 --max-elements 2^31 --dtype $dt --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/smpair-$dt.csv" > "$OUT/smpair-$dt.log" 2>&1
  echo "smpair $dt exit $?" >> "$S"; done_table "$OUT/smpair-$dt.csv" >> "$S"
  timeout 120 $K sweep softmax --rows 4096 --cols 1048576,1048577,2097152,4194304 --max-elements 2^31 --dtype $dt --variants auto --rep-ms 30 --rotate auto --csv "$OUT/default-$dt.csv" > "$OUT/default-$dt.log" 2>&1
  echo "default $dt exit $?" >> "$S"; ptab "$OUT/default-$dt.csv" "default $dt" >> "$S"
  el $dt
done
cat "$S"
