#!/usr/bin/env bash
# GPU batch (twenty-fourth session; run against 128f47e, whose KERNLAB_V9W was reverted after it): v9's weighted smpair form again (gpu-smw-109.sh measured
# W = 1.3–1.5 slower at f32 4 Mi, and its multi-group launches refused with a bug in the
# largest-part check, since fixed): the smpair GPU test with W = 1.15, then one process a
# setting, unweighted, W = 1.1 and W = 1.2, at f32 64×4 Mi and, with smpair=1, f32 256×1 Mi and
# 128×2 Mi and bf16 128×2 Mi. Every point validated before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
FAST=32-43,78-87,126-127
KERNLAB_V9W=1.15:$FAST gpu_tests 120 smw softmax_v9_smpair
el tests
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 40 env "$@" $K bench softmax --dtype f32 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-4mi.csv" > "$OUT/$n-4mi.log" 2>&1
  timeout 60 env "$@" KERNLAB_V9=smpair=1 $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 40 env "$@" KERNLAB_V9=smpair=1 $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-4mi.csv") $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
b even-1 KERNLAB_V9W=
b w11-1 KERNLAB_V9W=1.1:$FAST
b w12-1 KERNLAB_V9W=1.2:$FAST
el round 1
cat "$S"
