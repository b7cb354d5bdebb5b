#!/usr/bin/env bash
# GPU batch (fourteenth session). First the softmax GPU tests (the thirteenth session's last
# review fixes and refactors were never run on the GPU). Then v8's clusters at two or more
# CTAs an SM: wide rows run one 1024-thread CTA an SM (clusters of the fewest CTAs), so an SM
# idles between its row's read and write. `KERNLAB_V8=cluster=N,fill=1` forces clusters of N
# CTAs sized for the most CTAs an SM. Each point validated before it is timed, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 220 softmax
el tests
W=131072,262144,524288,1048576
sw() { timeout "$1" $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants "$2" --rep-ms 20 --rotate auto --csv "$OUT/$3.csv" > "$OUT/$3.log" 2>&1; echo "sweep $3 exit $? $(tail -c 300 "$OUT/$3.log" | grep -i error | head -2)" >> "$S"; }
sw 120 auto,v8_onchip base
KERNLAB_V8=cluster=4,fill=1 sw 60 v8_onchip c4
KERNLAB_V8=cluster=8,fill=1 sw 60 v8_onchip c8
KERNLAB_V8=cluster=16,fill=1 sw 60 v8_onchip c16
sw 60 v8_onchip base2
el sweeps
for f in base c4 c8 c16 base2; do echo "$f $(vtab "$OUT/$f.csv")" >> "$S"; done
cat "$S"
