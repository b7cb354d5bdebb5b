#!/usr/bin/env bash
# GPU batch (thirteenth session): v10_l2pass, second form. gpu-v10-57 measured the first
# (a per-row count behind a fence and an atomic, loads not issued ahead) at 1.9–2.3 TB/s,
# flat with width: a fixed ~5 µs an iteration. This form publishes tile states in tagged
# slots (no fence, no atomic), merges a row's states in each second pass, and issues the next
# first pass's loads before the writes. v10's tests and the split-row walk first (stop there
# on a failure), then v10 (u=4 with lag +0 and +2, u=2) against auto, rotated.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 150 softmax_v10
gpu_tests 150 softmax_split_rows
el tests
grep -q "exit 0 [1-9][0-9]* passed 0 failed" "$S" || { cat "$S"; exit 1; }
W=12345,16385,32768,131072,262144,1048576,4194304
sw() { timeout "$1" $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants "$2" --rep-ms 20 --rotate auto --csv "$OUT/$3.csv" > "$OUT/$3.log" 2>&1; echo "sweep $3 exit $?" >> "$S"; }
sw 150 auto,v10_l2pass a
KERNLAB_V10=u=4,lag=2 sw 80 v10_l2pass lag2
KERNLAB_V10=u=2 sw 80 v10_l2pass u2
el sweeps
for f in a lag2 u2; do echo "$f $(vtab "$OUT/$f.csv")" >> "$S"; done
cat "$S"
