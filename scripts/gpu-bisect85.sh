#!/usr/bin/env bash
# GPU batch (nineteenth session): which commit since the fifteenth session's sweep slowed
# `auto` (v8) at bf16 aligned wide rows by 2–3% (gpu-ab84)? Binaries built here from each
# commit that touched v8 or its launch, old = 9bc3dae (fifteenth session), then eab58e7
# (before v8's cp.async scalars), 68f539c (with them), 253c5cf and 3c70101 (v8's prologue
# without divisions), new = HEAD; bf16 4096×65536 and 4096×131072, rotated, interleaved twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader >> "$S"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1
for r in 1 2; do
  for b in old eab58e7 68f539c 253c5cf 3c70101 new; do
    bin=.gpu/bin/kernlab-$b; [ $b = new ] && bin=$K
    timeout 40 $bin bench softmax --dtype bf16 --shape 4096x65536 --shape 4096x131072 --variants auto --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/b-$b-$r.csv" > "$OUT/b-$b-$r.log" 2>&1
    echo "$b r$r $(ptab "$OUT/b-$b-$r.csv")" >> "$S"
  done
done
el bisect
cat "$S"
