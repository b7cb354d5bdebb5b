#!/usr/bin/env bash
# GPU batch (written in the thirty-first session for the next lease; not yet run), one call
# (~2 min): v2's row-load cache hint at the narrowest widths, judged by kernlab's settled medians
# (two interleaved rounds), the one setting of v2 that run 141 (block sizes, the scalar form)
# left unmeasured in the settled form. The replay trailed compile by 0.13 µs at bf16 4096x32 in
# run 145 (settled; 4.26 against 4.13), the one point of 55 where it trailed. Run 127 compared
# plain loads with evict_last by do_bench medians only, which moved by up to 1 µs either way.
# Prediction: KL_ROW_LOAD_HINT 0 (plain) or 2 (evict_first) moves a 4-5 µs call by under 0.1 µs;
# a move past 0.1 µs at bf16 32 in both rounds is worth a rule for v2.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_start
for round in 1 2; do
  for hint in 1 0 2; do
    for DT in bf16 f32 f16; do
      n="r$round-$DT-hint$hint"
      timeout 60 env KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=$hint $K bench softmax --shape 4096x32 --shape 4096x64 --shape 4096x128 --dtype $DT --variants v2_warp_row --rotate auto --rep-ms 20 --seed 1 --csv "$OUT/$n.csv" > "$OUT/$n.log" 2>&1
      stab "$OUT/$n.csv" "$n" >> "$S"
    done
  done
  el "round $round"
done
cat "$S"
