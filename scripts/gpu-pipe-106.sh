#!/usr/bin/env bash
# GPU batch (twenty-fourth session; run against 6b58f78, whose KL_V9_PIPE was reverted after it): v9's ping-pong rows software-pipelined in each CTA
# (KERNLAB_NVRTC_DEFINES=KL_V9_PIPE=1: the register packs written first, the next row's register
# loads out at once, then the shared packs written and the next copies out). The softmax GPU
# tests with it compiled in, then one process a setting, default against pipelined,
# interleaved twice: f32 256×1 Mi (8 groups, ping-pong), 128×2 Mi (4 groups), 64×4 Mi (2
# groups: smpair; and smpair=0, plain ping-pong), bf16 128×2 Mi. Every point validated before
# it is timed.
source "$(dirname "${BASH_SOURCE[0]}")/gpu-lib.sh"
KERNLAB_NVRTC_DEFINES=KL_V9_PIPE=1 gpu_tests 200 pipe softmax
el tests
b() {  # b NAME [env...]
  local n=$1; shift
  timeout 60 env "$@" $K bench softmax --dtype f32 --shape 256x1048576 --shape 128x2097152 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-f32.csv" > "$OUT/$n-f32.log" 2>&1
  timeout 30 env "$@" KERNLAB_V9=smpair=0 $K bench softmax --dtype f32 --shape 64x4194304 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-pp.csv" > "$OUT/$n-pp.log" 2>&1
  timeout 30 env "$@" $K bench softmax --dtype bf16 --shape 128x2097152 --variants v9_gridsync --rep-ms 30 --rotate auto --seed 1 --csv "$OUT/$n-bf16.csv" > "$OUT/$n-bf16.log" 2>&1
  echo "$n $(tab "$OUT/$n-f32.csv") pp:$(tab "$OUT/$n-pp.csv") $(tab "$OUT/$n-bf16.csv")" >> "$S"
}
b default-1 KERNLAB_NVRTC_DEFINES=
b pipe-1 KERNLAB_NVRTC_DEFINES=KL_V9_PIPE=1
el round 1
b default-2 KERNLAB_NVRTC_DEFINES=
b pipe-2 KERNLAB_NVRTC_DEFINES=KL_V9_PIPE=1
el round 2
cat "$S"
