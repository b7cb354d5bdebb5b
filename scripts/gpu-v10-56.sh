#!/usr/bin/env bash
# GPU batch (thirteenth session): v10_l2pass, the first check and times. The softmax GPU tests
# (v10's tilings among them, and the f32 half of the wide-packed dispatch test, not run on the
# GPU before), the autotune test (not run before), then v10 (u=4 default, u=2) against v9 and
# auto at 32768–4 Mi columns, f32 and bf16, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 200 softmax
el tests-softmax
gpu_tests 90 autotune_softmax
el tests-autotune
W=32768,131072,262144,1048576,4194304
timeout 200 $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants auto,v9_gridsync,v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/a.csv" > "$OUT/a.log" 2>&1; echo "sweep a exit $?" >> "$S"
el sweep-a
KERNLAB_V10=u=2 timeout 100 $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/b.csv" > "$OUT/b.log" 2>&1; echo "sweep u2 exit $?" >> "$S"
el sweep-u2
vtab "$OUT/a.csv" >> "$S"
vtab "$OUT/b.csv" u2: >> "$S"
grep -h "picked\|auto ->" "$OUT/a.log" | head -3 >> "$S"
cat "$S"
