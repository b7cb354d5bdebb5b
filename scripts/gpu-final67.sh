#!/usr/bin/env bash
# GPU batch (fourteenth session, last): the bench and autotune tests (their rotation now one
# `Rotation`), then two checks. (1) The done-means asks for 4096 rows where memory allows;
# the sweeps capped problems at 2^28 elements (2048 rows at 131072 columns, 1024 at 262144),
# so a wave of one-CTA / cluster rows has a larger tail share. `auto` at both row counts,
# interleaved. (2) bf16 524288 at clusters of 8 sized two an SM (+3.7% in gpu-v8c-62's one
# run) against `auto`, twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 150 bench autotune workspaces
el tests
sw() { timeout "$1" $K sweep softmax --rows 4096 --cols "$2" --dtype f32,bf16 --variants auto --rep-ms 20 --rotate auto $3 --csv "$OUT/$4.csv" > "$OUT/$4.log" 2>&1; echo "$4 exit $? $(tab "$OUT/$4.csv")" >> "$S"; }
sw 40 131072 "--max-elements 2^28" cap1
sw 90 131072 "" full1
sw 40 131072 "--max-elements 2^28" cap2
sw 90 131072 "" full2
el rows
c8() { KERNLAB_V8=$1 timeout 40 $K bench softmax --shape 512x524288 --dtype bf16 --variants $2 --rep-ms 20 --rotate auto --csv "$OUT/$3.csv" > "$OUT/$3.log" 2>&1; echo "$3 exit $? $(vtab "$OUT/$3.csv")" >> "$S"; }
c8 "" auto,v8_onchip a1; c8 cluster=8,fill=1 v8_onchip c1; c8 "" auto,v8_onchip a2; c8 cluster=8,fill=1 v8_onchip c2
el c8
cat "$S"
