#!/usr/bin/env bash
# GPU batch (twenty-fourth session; run against 128f47e, whose KERNLAB_V9W was reverted after it): the weighted-form runs (gpu-smw-109 to 111) had smpair
# forced at 8 and 4 groups running 3593–3628 GB/s at f32 256×1 Mi, where the default
# (plain ping-pong there) ran 3472–3515 in this session's earlier runs; the twenty-third session
# measured the two level. Interleaved, one process a setting, two rounds: the default,
# smpair=1, and smpair=1 with the weights at W = 1.2, at f32 256×1 Mi and 128×2 Mi and bf16
# 128×2 Mi. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
FAST=32-43,78-87,126-127
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 60 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 40 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
for i in 1 2; do
  b default-$i KERNLAB_V9W=
  b smpair-$i KERNLAB_V9=smpair=1 KERNLAB_V9W=
  b w12-$i KERNLAB_V9=smpair=1 KERNLAB_V9W=1.2:$FAST
  el round $i
done
cat "$S"
