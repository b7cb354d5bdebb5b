#!/usr/bin/env bash
# GPU batch (eleventh session): evict_last loads (KERNLAB_NVRTC_DEFINES=KL_LD_HINT=1, every
# ld16) against none over the sweep's widths, f32 and bf16, interleaved twice, to see which
# versions gain (v2 narrow, v3 medium, v8 one CTA and clusters, v9 widest); then both without
# the L2 flush at the widths where it gained with it.
# (Ran with KL_LD_HINT, which hinted every ld16; the kept form, ld16_row, hints the on-chip
# rows' loads and is on by default: KL_ROW_LOAD_HINT=0 turns it off.)
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
W=256,1000,2048,8192,4097,12345,65536,65537,262144,300007,1048576,4194304
for rep in 1 2; do
  for d in none KL_LD_HINT=1; do
    dd=$d; [ $d = none ] && dd=
    KERNLAB_NVRTC_DEFINES=$dd timeout 200 $K sweep softmax --rows 4096 --cols $W --max-elements 2^28 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --csv "$OUT/w-$d-$rep.csv" > "$OUT/w.log" 2>&1
    echo "$d: $(tab "$OUT/w-$d-$rep.csv")" >> "$S"
  done
done
el sweep
for d in none KL_LD_HINT=1; do
  dd=$d; [ $d = none ] && dd=
  KERNLAB_NVRTC_DEFINES=$dd timeout 100 $K sweep softmax --rows 4096 --cols 8192,16384,32768 --dtype f32,bf16 --variants auto --rep-ms 15 --warmup-ms 5 --no-flush --csv "$OUT/nf.csv" > "$OUT/nf.log" 2>&1
  echo "no flush $d: $(tab "$OUT/nf.csv")" >> "$S"
done
el noflush
cat "$S"
