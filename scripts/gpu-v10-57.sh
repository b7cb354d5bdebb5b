#!/usr/bin/env bash
# GPU batch (thirteenth session): v10_l2pass again, with its row states and counts at fixed
# places in their own workspace (gpu-v10-56 hung: a launch of a new shape found another
# layout's data where its counts were). v10's own test first (stop there if it fails or
# hangs), then every softmax test, then v10 (u=4, u=2) against v9 and auto, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
[ -n "${SKIP_V10:-}" ] || gpu_tests 100 softmax_v10
el tests-v10
[ -n "${SKIP_V10:-}" ] || grep -q "exit 0 [1-9][0-9]* passed 0 failed" "$S" || { cat "$S"; exit 1; }
gpu_tests 200 softmax
el tests-softmax
W=32768,131072,262144,1048576,4194304
timeout 150 $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants auto,v9_gridsync,v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/a.csv" > "$OUT/a.log" 2>&1; echo "sweep a exit $?" >> "$S"
el sweep-a
KERNLAB_V10=u=2 timeout 80 $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants v10_l2pass --rep-ms 20 --rotate auto --csv "$OUT/b.csv" > "$OUT/b.log" 2>&1; echo "sweep u2 exit $?" >> "$S"
el sweep-u2
vtab "$OUT/a.csv" >> "$S"
vtab "$OUT/b.csv" u2: >> "$S"
cat "$S"
