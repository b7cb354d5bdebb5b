#!/usr/bin/env bash
# GPU batch (written in the twenty-eighth session for the next lease): the f32 done-means sweep
# whole (run 128's was cut off at 300 s; run 125's command with the 540 s it needs), now with
# the host check's queued medians in the CSV (`queued_ms`) and the verdict's lines under the
# table, kernel against kernel where a PyTorch time is host-bound. The CSV is rewritten after
# each point, so a cut-off run still returns kernlab's points. Prediction: f32 1 Mi at
# 1.74-1.81x native (eight runs); at 32-1024 columns a few points behind compile by under 1 us,
# not the same ones as in runs 125 and 128b.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
DT=f32
done_sweep "$DT" 540
el sweep
grep -m1 -i "copy ceiling" "$OUT/sweep.log" | cut -c1-200 >> "$S"
grep "against PyTorch native\|against their GPU times" "$OUT/sweep.log" | cut -c1-900 >> "$S"
done_table "$OUT/softmax-sweep-done-$DT.csv" >> "$S"
cat "$S"
