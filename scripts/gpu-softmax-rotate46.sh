#!/usr/bin/env bash
# GPU batch (eleventh session): is the evict_last gain a benchmark artifact? If lines loaded
# evict_last outlive the L2 flush (a normal-priority write), the next call finds part of its x
# in L2. With --rotate 32 each call reads an input 32 calls old (32 copies ≥ 128 MB even at
# 4096×256 f32), so surviving lines cannot serve it. Evict_last (default) against plain loads
# (KL_ROW_LOAD_HINT=0), without and with rotation.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
for r in 1 32; do
  for d in default KL_ROW_LOAD_HINT=0; do
    dd=$d; [ $d = default ] && dd=
    KERNLAB_NVRTC_DEFINES=$dd timeout 120 $K sweep softmax --rows 4096 --cols 256,2048,16384 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --rotate $r --csv "$OUT/r.csv" > "$OUT/r$r.log" 2>&1
    echo "rotate $r $d: $(tab "$OUT/r.csv")" >> "$S"
  done
done
el rotate
cat "$S"
