#!/usr/bin/env bash
# GPU batch (twenty-eighth session), after gpu-done-128.sh's f32 sweep ran past its 300 s
# (run 125's f32 sweep had 540): the f32 done-means sweep without its four largest points
# other than 1 Mi (300007, 1048577, 2 Mi, 4 Mi columns), for the verdict's lines, kernel against
# kernel where a PyTorch time was host-bound, and f32 1 Mi against native (prediction:
# 1.74-1.81x as in seven runs).
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
DT=f32
timeout 420 $K sweep softmax --rows 4096 --cols 32..1048576:x2,33,255,1000,4097,12345,16385,65537 --max-elements 2^31 --dtype $DT --variants auto --torch --rep-ms 30 --rotate auto --plot "$OUT/softmax-sweep-done-$DT.svg" --csv "$OUT/softmax-sweep-done-$DT.csv" > "$OUT/sweep.log" 2>&1
echo "sweep exit $?" >> "$S"
el sweep
sweep_summary "$DT"
cat "$S"
