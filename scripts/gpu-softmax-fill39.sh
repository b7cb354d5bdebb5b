#!/usr/bin/env bash
# GPU batch (tenth session): v8 with one CTA a row, sized for the most rows an SM at once
# (KERNLAB_V8=fill=1: fewer threads, up to half the row in shared memory) against the fewest
# threads that hold the row in registers (fill=0, the committed form); interleaved twice,
# f32 and bf16, odd and 16-bit widths where auto runs v8 with one CTA a row; then the softmax
# GPU tests with fill=1.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
timeout 30 $K bench softmax --shape 64x64 --variants v2_warp_row --rep-ms 1 > /dev/null 2>&1  # caches the ceilings
W=2001,3001,4097,6007,8193,12345,16385,24577,32768,32769,40001
for rep in 1 2; do
  for f in 0 1; do
    env KERNLAB_V8=fill=$f timeout 100 $K sweep softmax --rows 4096 --cols $W --dtype f32,bf16 --variants v8_onchip --rep-ms 10 --warmup-ms 4 --csv "$OUT/fill$f.csv" > "$OUT/fill$f-$rep.log" 2>&1
    echo "v8 fill=$f: $(tab "$OUT/fill$f.csv")" >> "$S"
  done
done
el ab
KERNLAB_V8=fill=1 gpu_tests 200 softmax
el tests
cat "$S"
