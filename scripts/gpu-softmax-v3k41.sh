#!/usr/bin/env bash
# GPU batch (eleventh session): v3's slots a thread (KERNLAB_V3=k=1|2|4|8: more threads with
# fewer slots each, as the lecture's Triton kernel runs 2048–4096 columns) for f32 without
# and with the kept terms (.gpu-base/kernlab against .gpu), and for bf16; then auto at narrow
# f32 widths (v2), base against new, three more interleaved runs.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
sw() { # bin cache dtype cols variant csv
  KERNLAB_CACHE_DIR=/tmp/kc-$2 timeout 100 $1 sweep softmax --rows 4096 --cols $4 --dtype $3 --variants $5 --rep-ms 10 --warmup-ms 4 --csv "$6" > "$6.log" 2>&1; }
for rep in 1 2; do
  for b in base new; do
    bin=$K; [ $b = base ] && bin=.gpu-base/kernlab
    for k in 1 2 4 8; do
      KERNLAB_V3=k=$k sw $bin $b f32 1024,2048,4096,8192,16384 v3_block_regs "$OUT/f32-$b-k$k.csv"
      echo "f32 $b k$k: $(tab "$OUT/f32-$b-k$k.csv")" >> "$S"
    done
  done
  for k in 1 2 4 8; do
    KERNLAB_V3=k=$k sw $K new bf16 1024,2048,4096,8192,16384 v3_block_regs "$OUT/bf16-k$k.csv"
    echo "bf16 k$k: $(tab "$OUT/bf16-k$k.csv")" >> "$S"
  done
done
el k
for rep in 1 2 3; do
  for b in base new; do
    bin=$K; [ $b = base ] && bin=.gpu-base/kernlab
    sw $bin $b f32 32,64,128,256,384,512 auto "$OUT/narrow-$b.csv"
    echo "narrow $b: $(tab "$OUT/narrow-$b.csv")" >> "$S"
  done
done
el narrow
cat "$S"
