#!/usr/bin/env bash
# GPU batch (twelfth session): f32 512–2048, where compile led `auto` (v2, a warp a row) by
# 4–6% in the rotated done sweep and compile's kernel alone is 11% faster at 1024: v3 (a block
# a row) at k = 1, 2 and 4 slots a thread against v2 and auto, --rotate auto, twice.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
for rep in 1 2; do
  timeout 60 $K sweep softmax --rows 4096 --cols 512,1024,2048 --dtype f32,bf16 --variants auto,v2_warp_row,v3_block_regs --rep-ms 15 --warmup-ms 5 --rotate auto --csv "$OUT/m.csv" > "$OUT/m.log" 2>&1
  echo "v3 default: $(python3 -c "
import csv
print(*[r['variant'][:2]+':'+r['dtype']+':'+r['cols']+'='+(str(round(float(r['gbps']))) if r['status']=='ok' else r['status'][:8]) for r in csv.DictReader(open('$OUT/m.csv'))])")" >> "$S"
  for k in 1 2; do
    KERNLAB_V3=k=$k timeout 60 $K sweep softmax --rows 4096 --cols 512,1024,2048 --dtype f32,bf16 --variants v3_block_regs --rep-ms 15 --warmup-ms 5 --rotate auto --csv "$OUT/k.csv" > "$OUT/k$k.log" 2>&1
    echo "v3 k=$k: $(tab "$OUT/k.csv")" >> "$S"
  done
done
el mid
cat "$S"
