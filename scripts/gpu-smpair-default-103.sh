#!/usr/bin/env bash
# GPU batch (twenty-third session): v9's smpair form made the default where it runs. The v9 GPU
# tests under the new default, then `auto` at the done-means sweep's v9 widths (1 Mi, 1048577,
# 2 Mi and 4 Mi columns; at most 2^28 elements a point: 256, 255, 128 and 64 rows) with the
# default against KERNLAB_V9=smpair=0 (plain ping-pong), one setting a process, two rounds
# interleaved, f32 and bf16. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 150 v9 v9
el tests
sw() {  # sw NAME DTYPE [env...]
  local n=$1 dt=$2; shift 2
  timeout 70 env "$@" $K sweep softmax --rows 4096 --cols 1048576,1048577,2097152,4194304 --max-elements 2^28 --dtype $dt --variants auto --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-$dt.csv" > "$OUT/$n-$dt.log" 2>&1
  echo "$n $dt exit $? $(tab "$OUT/$n-$dt.csv")" >> "$S"
}
for r in 1 2; do
  for dt in f32 bf16; do
    sw smpair-$r $dt
    sw pingpong-$r $dt KERNLAB_V9=smpair=0
  done
  el round $r
done
cat "$S"
