#!/usr/bin/env bash
# Ran once (fourteenth session). The K = 4 form was then removed (docs/perf-notes.md);
# KERNLAB_V8=k=4 is now ignored, so both halves time the default.
# GPU batch (fourteenth session): v8's K = 4 form (KERNLAB_V8=k=4: rows one CTA holds in
# registers at four packs a thread, on twice the threads at 32 / 40 registers, as v3's K = 4).
# gpu-odd-64 found v8 at 41% achieved occupancy where v3 had 64–69% (bf16 4096, 12288), v8
# 6% slower than v3 at bf16 4096 and the peel 8% more at 4097. The softmax tests with k=4
# first, then `auto` (v8 at these widths) A/B interleaved twice, rotated, validated first.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
KERNLAB_V8=k=4 gpu_tests 200 softmax
el tests
sw() { KERNLAB_V8=$2 timeout "$1" $K sweep softmax --rows 4096 --cols "$3" --dtype "$4" --variants auto --rep-ms 20 --rotate auto --csv "$OUT/$5.csv" > "$OUT/$5.log" 2>&1; echo "$5 exit $? $(tab "$OUT/$5.csv")" >> "$S"; }
F=781,2001,4097,8193,12345,16383
B=781,2001,4097,8193,12345,16385,24577,32767
for i in 1 2; do
  sw 60 k=8 $F f32 f8$i; sw 60 k=4 $F f32 f4$i
  sw 60 k=8 $B bf16 b8$i; sw 60 k=4 $B bf16 b4$i
done
el sweeps
cat "$S"
