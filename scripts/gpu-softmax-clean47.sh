#!/usr/bin/env bash
# GPU batch (eleventh session): the evict_last loads with neither artifact seen in
# gpu-softmax-rotate46.sh: no L2 flush (its dirty lines cannot be kept out of L2 by surviving
# evict_last lines) and --rotate 32 (no call finds its input left in L2 by an earlier one).
# Default (evict_last) against plain loads (KL_ROW_LOAD_HINT=0), interleaved twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for rep in 1 2; do
  for d in default KL_ROW_LOAD_HINT=0; do
    dd=$d; [ $d = default ] && dd=
    KERNLAB_NVRTC_DEFINES=$dd timeout 100 $K sweep softmax --rows 4096 --cols 2048,16384 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --rotate 32 --no-flush --csv "$OUT/c.csv" > "$OUT/c.log" 2>&1
    echo "no flush, rotate 32, $d: $(tab "$OUT/c.csv")" >> "$S"
  done
done
el clean
cat "$S"
