#!/usr/bin/env bash
# GPU batch (sixteenth session, last): the softmax GPU tests with the final kernels (v8's
# scalars by cp.async; v9 back to its plain scalar load, its PTX identical to before), and
# `auto` at the odd widths v8 takes.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
gpu_tests 260 softmax
el tests
timeout 120 $K bench softmax --shape 4096x4097 --shape 4096x12345 --shape 4096x16385 --dtype f32,bf16 \
  --variants auto --rep-ms 20 --rotate auto --csv "$OUT/final.csv" > "$OUT/final.txt" 2>&1
ptab "$OUT/final.csv" auto >> "$S"
el bench
cat "$S"
