#!/usr/bin/env bash
# GPU batch (twenty-fourth session; run against the weighted form before 128f47e, whose
# multi-group launches then refused with a bound bug, fixed in 128f47e; reverted after it): v9's smpair form with parts weighted by SM
# (KERNLAB_V9W=W:SMS, an experiment): examples/sm_rates.rs found 24 SMs of the H200 (32–43,
# 78–87, 126, 127) streaming 37–39% faster than the other 108 with every SM busy, so an even
# split leaves them idle for part of each row. The smpair GPU test with the weights on (every
# smpair launch then weighted), then one process a setting: smpair unweighted, W = 1.3, 1.4 and
# 1.5, at f32 64×4 Mi (smpair by default) and, with smpair=1, f32 256×1 Mi and 128×2 Mi and
# bf16 128×2 Mi; a second round of the unweighted form and W = 1.4. Every point validated
# before it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
FAST=32-43,78-87,126-127
KERNLAB_V9W=1.4:$FAST gpu_tests 120 smw softmax_v9_smpair
el tests
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 40 env "$@" $K bench softmax --dtype f32 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-4mi.csv" > "$OUT/$n-4mi.log" 2>&1
  timeout 60 env "$@" KERNLAB_V9=smpair=1 $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 40 env "$@" KERNLAB_V9=smpair=1 $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-4mi.csv") $(tab "$OUT/$n-f32.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
b even-1 KERNLAB_V9W=
b w13-1 KERNLAB_V9W=1.3:$FAST
b w14-1 KERNLAB_V9W=1.4:$FAST
b w15-1 KERNLAB_V9W=1.5:$FAST
el round 1
b even-2 KERNLAB_V9W=
b w14-2 KERNLAB_V9W=1.4:$FAST
el round 2
cat "$S"
