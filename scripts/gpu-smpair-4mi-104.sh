#!/usr/bin/env bash
# GPU batch (twenty-third session): v9's smpair form by default with two groups only (the rule
# V9Tuning::smpair_for). The done-means sweep's f32 4 Mi point (512 rows) with --torch, both
# sides rotated, as scripts/gpu-done-97.sh runs it; then the same point with plain ping-pong
# (KERNLAB_V9=smpair=0), then the default again. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 200 $K sweep softmax --rows 4096 --cols 4194304 --max-elements 2^31 --dtype f32 --variants auto --torch --rep-ms 30 --rotate auto --csv "$OUT/done-f32-4mi.csv" > "$OUT/done-f32-4mi.log" 2>&1
echo "done f32 4Mi exit $?" >> "$S"; done_table "$OUT/done-f32-4mi.csv" >> "$S"
el torch
for n in pingpong:KERNLAB_V9=smpair=0 default:KERNLAB_V9= ; do
  timeout 90 env "${n#*:}" $K sweep softmax --rows 4096 --cols 4194304 --max-elements 2^31 --dtype f32 --variants auto --rep-ms 30 --rotate auto --csv "$OUT/${n%%:*}.csv" > "$OUT/${n%%:*}.log" 2>&1
  echo "${n%%:*} exit $? $(tab "$OUT/${n%%:*}.csv")" >> "$S"
done
el ab
cat "$S"
