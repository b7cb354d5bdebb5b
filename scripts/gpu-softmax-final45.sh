#!/usr/bin/env bash
# GPU batch (eleventh session): the softmax GPU tests on the build whose row loads carry the
# L2 evict_last policy (ld16_row), then auto with it (the default) against plain loads
# (KERNLAB_NVRTC_DEFINES=KL_ROW_LOAD_HINT=0) across the widths, f32 and bf16.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
gpu_tests 200 softmax
el tests
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for d in default KL_ROW_LOAD_HINT=0; do
  dd=$d; [ $d = default ] && dd=
  KERNLAB_NVRTC_DEFINES=$dd timeout 150 $K sweep softmax --rows 4096 --cols 256,2048,8192,16384,32768,65537,1048576 --max-elements 2^28 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --csv "$OUT/f.csv" > "$OUT/f.log" 2>&1
  echo "$d: $(tab "$OUT/f.csv")" >> "$S"
done
el sweep
cat "$S"
