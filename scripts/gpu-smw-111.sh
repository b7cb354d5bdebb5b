#!/usr/bin/env bash
# GPU batch (twenty-fourth session; run against 128f47e, whose KERNLAB_V9W was reverted after it): in gpu-smw-110.sh the weighted smpair form gained at f32
# 1 Mi and 2 Mi (8 and 4 groups, W = 1.2: +2.4% and +1.7%) and lost at 4 Mi. Is it the weights
# or the table's placement (fast SMs dealt over the groups, places by SM index, not by
# arrival)? One process a setting at f32 256×1 Mi and 128×2 Mi with smpair=1: tickets
# (unweighted), the table at W = 1.0, W = 1.2 and W = 1.3.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
FAST=32-43,78-87,126-127
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 60 env "$@" KERNLAB_V9=smpair=1 $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv")" >> "$S"
}
b tickets KERNLAB_V9W=
b w10 KERNLAB_V9W=1.0:$FAST
b w12 KERNLAB_V9W=1.2:$FAST
b w13 KERNLAB_V9W=1.3:$FAST
el round 1
cat "$S"
